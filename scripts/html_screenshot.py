"""A PNG of the HTML report opened on one instance of its agreement section (issue 44).

    .venv/bin/python scripts/html_screenshot.py --results R --out PNG [--probe P] [--model M]
        [--open ranked-not-said|said-not-ranked]

Writes the HTML page of ``kgprobe report --html`` for the results file (only the chosen probes
and models, glob patterns as ``kgprobe report``'s), opens it in headless Chromium (Debian's
``chromium`` and ``chromium-driver``, driven by selenium, as tests/test_html_browser.py), clicks
the first instance of the chosen list ("ranked first but not said" by default) with the pointer
and saves the window, scrolled to that instance and grown to show its view (prompt, candidates'
scores, generated answers, triples), as a PNG. A results file without such an instance, a
missing file or a missing browser: one line naming it and what to do, status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import io
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KINDS = {"ranked-not-said": "ranked first but not said",
         "said-not-ranked": "said but not ranked first"}


class Refused(Exception):
    """One line for the user."""


def _matches(value: Any, patterns: Sequence[str] | None) -> bool:
    return not patterns or any(fnmatch.fnmatch(str(value), p) for p in patterns)


def disagreements(results: Path, kind: str, probes: Sequence[str] | None,
                  models: Sequence[str] | None) -> list[dict[str, Any]]:
    """The format_disagreements rows of ``kind`` (its words) of the chosen probes and models."""
    import duckdb

    from eval.sqlfile import MetricError, discover_metrics, run_metric
    from probes.results import connect

    if not results.is_file():
        raise Refused(f"results file {results} does not exist: give the DuckDB file a run "
                      "wrote (--results)")
    try:
        con = connect(results, read_only=True)
    except duckdb.Error as e:
        raise Refused(f"results file {results} cannot be read as DuckDB ({e}); give the file "
                      "a run wrote") from None
    try:
        (metric,) = [m for m in discover_metrics() if m.name == "format_disagreements"]
        cols, rows = run_metric(con, metric)
    except (MetricError, duckdb.Error) as e:  # a file before generate, say
        raise Refused(f"the agreement of {results} cannot be read: {str(e).splitlines()[0]}"
                      ) from None
    finally:
        con.close()
    found = [dict(zip(cols, r, strict=True)) for r in rows]
    return [d for d in found if d["kind"] == kind and _matches(d["probe"], probes)
            and _matches(d["model"], models)]


def chromium() -> Any:
    """Headless Chromium through selenium, or :class:`Refused` saying what is missing."""
    absent = [p for p in ("chromium", "chromedriver") if shutil.which(p) is None]
    if absent:
        raise Refused(f"{' and '.join(absent)} not on PATH: install Debian's chromium and "
                      "chromium-driver (scripts/setup.sh does)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise Refused("selenium is not installed in this environment: install the dev "
                      "dependencies (scripts/setup.sh)") from None
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or ""
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def pointer_click(driver: Any, selector: str) -> str:
    """Click ``selector`` as Playwright does (``DOM.scrollIntoViewIfNeeded``, then the pointer
    at its centre); returns the tag name of what was under the pointer."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    obj = driver.execute_cdp_cmd("Runtime.evaluate", {
        "expression": f"document.querySelector({selector!r})"})["result"]["objectId"]
    driver.execute_cdp_cmd("DOM.scrollIntoViewIfNeeded", {"objectId": obj})
    x, y = driver.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return [r.left + r.width / 2, r.top + r.height / 2]", selector)
    hit = driver.execute_script(
        "return document.elementFromPoint(arguments[0], arguments[1]).tagName", x, y)
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y))
    actions.pointer_action.click()
    actions.perform()
    return str(hit)


def write_page(results: Path, html: Path, probes: Sequence[str] | None,
               models: Sequence[str] | None) -> None:
    from eval.report import main as report_main

    argv = ["--results", str(results), "--out", str(html.parent / "md"), "--html", str(html),
            "--no-plots"]
    for p in probes or []:
        argv += ["--probe", p]
    for m in models or []:
        argv += ["--model", m]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = report_main(argv)
    if status != 0 or not html.is_file():
        lines = (err.getvalue() or out.getvalue()).strip().splitlines()
        raise Refused(f"the HTML report of {results} could not be written: "
                      f"{lines[-1] if lines else f'status {status}'}")


def screenshot(results: Path, png: Path, kind: str, probes: Sequence[str] | None,
               models: Sequence[str] | None) -> dict[str, Any]:
    """Write the PNG; returns the opened instance's format_disagreements row."""
    found = disagreements(results, KINDS[kind], probes, models)
    if not found:
        chosen = "".join([f", probe {' '.join(probes)}" if probes else "",
                          f", model {' '.join(models)}" if models else ""])
        raise Refused(f"no '{KINDS[kind]}' instance in {results}{chosen}: it needs a probe "
                      "with `formats: {generate: ...}` run by a model that generates "
                      "(docs/generate.md), and one instance the two readings disagree on")
    first = found[0]
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    with tempfile.TemporaryDirectory(prefix="kgprobe-shot-") as tmp:
        html = Path(tmp) / "report.html"
        write_page(results, html, probes, models)
        try:
            driver = chromium()
        except WebDriverException as e:
            raise Refused(f"Chromium did not start: {str(e.msg or e).splitlines()[0]}") from None
        try:
            driver.get(html.as_uri())
            WebDriverWait(driver, 60).until(
                lambda d: d.execute_script("return document.body.dataset.ready"))
            index = driver.execute_script(
                "return [...document.querySelectorAll('tr.agree-row')].findIndex(t => "
                "t.dataset.kind === arguments[0] && t.closest('.agree').dataset.model === "
                "arguments[1] && t.closest('.agree').dataset.probe === arguments[2] && "
                "t.dataset.inst === arguments[3])",
                kind, str(first["model"]), str(first["probe"]), str(first["instance_id"]))
            if index < 0:
                raise Refused(f"the page of {results} does not list instance "
                              f"{first['instance_id']} of {first['probe']} (its runs may not "
                              "be finished)")
            driver.execute_script(
                "document.querySelectorAll('tr.agree-row')[arguments[0]].id = 'kgp-shot'",
                index)
            hit = pointer_click(driver, "#kgp-shot")
            box = "document.getElementById('kgp-shot').closest('.agree')"
            opened = driver.execute_script(f"const b = {box}.querySelector('.agree-detail');"
                                           "return !b.hidden && b.textContent.length > 0")
            if hit not in ("TD", "TR") or not opened:
                raise Refused(f"clicking instance {first['instance_id']} did not open its view "
                              f"(the pointer landed on {hit}); report it with the page")
            # grow the window to hold the block from its heading to the end of the view
            height = driver.execute_script(
                f"const a = {box}; a.scrollIntoView({{block: 'start'}});"
                "return Math.ceil(a.getBoundingClientRect().height + 80"
                " + window.outerHeight - window.innerHeight)")
            driver.set_window_size(1400, max(700, min(int(height), 4000)))
            driver.execute_script(f"{box}.scrollIntoView({{block: 'start'}})")
            png.parent.mkdir(parents=True, exist_ok=True)
            if not driver.save_screenshot(str(png)):
                raise Refused(f"Chromium could not write {png}")
        except WebDriverException as e:  # a page that never became ready, a lost browser
            raise Refused(f"Chromium failed on the page of {results}: "
                          f"{str(e.msg or type(e).__name__).splitlines()[0]}") from None
        finally:
            driver.quit()
    return first


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--results", type=Path, required=True, help="results DuckDB file")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    parser.add_argument("--probe", action="append", help="probe name or glob (repeatable)")
    parser.add_argument("--model", action="append", help="model name or glob (repeatable)")
    parser.add_argument("--open", choices=sorted(KINDS), default="ranked-not-said",
                        help="which list's first instance to open (default: ranked-not-said)")
    args = parser.parse_args(argv)
    try:
        row = screenshot(args.results, args.out, args.open, args.probe, args.model)
    except Refused as e:
        print(f"html_screenshot: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {row['model']} on {row['probe']}, instance {row['instance_id']} "
          f"({KINDS[args.open]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
