"""Size and speed of the HTML report in a real browser (Debian's headless Chromium through
selenium): builds a synthetic results file (scripts/html_bench_data.py), writes the report
with ``python -m eval.report --html``, opens it from disk and prints

- the file's size (the issue's bound: 5 MB),
- the time from navigation start until the instance browser is usable (its data decoded,
  filters filled, the first page of predictions drawn: the page sets ``data-ready``), over
  ``--repeat`` fresh loads (the issue's bound: 2 s),
- the time one filter change takes to redraw the list.

    .venv/bin/python scripts/bench_html.py --instances 10000 --prompts 3 --models 2 [--generate]

A benchmark, not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def browser() -> object:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def ready_ms(driver: object, url: str, timeout_s: float = 60.0) -> float:
    driver.get(url)  # type: ignore[attr-defined]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        ready = driver.execute_script(  # type: ignore[attr-defined]
            "return document.body && document.body.dataset.ready")
        if ready:
            return float(ready)
        time.sleep(0.01)
    raise TimeoutError("the page never became ready")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--generate", action="store_true",
                        help="also a generate run per model (the agreement section)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kgprobe-html-bench-"))
    results, html = work / "bench.duckdb", work / "report.html"
    py = sys.executable
    subprocess.run([py, str(ROOT / "scripts" / "html_bench_data.py"), str(results),
                    "--instances", str(args.instances), "--prompts", str(args.prompts),
                    "--models", str(args.models), *(["--generate"] if args.generate else [])],
                   check=True)
    t0 = time.monotonic()
    subprocess.run([py, "-m", "eval.report", "--results", str(results), "--out",
                    str(work / "md"), "--html", str(html)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    build_s = time.monotonic() - t0
    size = html.stat().st_size
    driver = browser()
    try:
        times = [ready_ms(driver, html.as_uri()) for _ in range(args.repeat)]
        rows = driver.execute_script(  # type: ignore[attr-defined]
            "return document.querySelectorAll('#kgp-list tbody tr').length")
        filter_ms = driver.execute_script(  # type: ignore[attr-defined]
            "const t = performance.now(); const s = document.getElementById('f-outcome');"
            "s.value = 'wrong'; s.dispatchEvent(new Event('change'));"
            "return performance.now() - t;")
        count = driver.execute_script(  # type: ignore[attr-defined]
            "return document.getElementById('kgp-count').textContent")
        version = driver.capabilities.get("browserVersion")  # type: ignore[attr-defined]
    finally:
        driver.quit()  # type: ignore[attr-defined]
    print(f"{args.instances:,} instances x {args.prompts} prompts x {args.models} models "
          f"({args.instances * args.prompts * args.models:,} predictions"
          + (", each also generated" if args.generate else "") + f"), Chromium {version}")
    print(f"report built in {build_s:.1f} s")
    print(f"file size: {size / 1e6:.2f} MB (bound 5 MB)")
    print(f"open until usable (navigation start to first page drawn), {args.repeat} loads: "
          f"median {statistics.median(times):.0f} ms, max {max(times):.0f} ms (bound 2000 ms)")
    print(f"first page: {rows} rows; filter 'wrong': {filter_ms:.0f} ms -> {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
