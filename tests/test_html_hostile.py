"""A results file is data (issue 45 point 1): hostile text in every text column of every table
the HTML report reads reaches Chromium as text, never as markup or script.

Each value carries three attacks (an ``<img onerror>``, a ``</script><script>`` and an
attribute break-out ``"><svg onload>``), each of which, if it ran, would change the page's
title and ask a beacon server on 127.0.0.1 for a path naming the column. The page is opened
from disk, every filter is used, a prediction of each run and the agreement section's instance
are opened (the results hold a generate reading, a layer-probing run and, in a second test, a
ParaRel fact, so the sections of issues 44, 47 and 48 meet the same text); then the beacon must
have received nothing, the title must be the report's own, the page must hold no element with
an event handler, and the hostile text must be on the page as text. Marked slow (a browser).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eval.report import main as report_main
from probes.results import connect
from tests.test_html_browser import driver  # noqa: F401  (the Chromium fixture)


@contextlib.contextmanager
def beacon() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that records the path of every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def evil(column: str, url: str) -> str:
    """Text that runs script (title change + a request to ``url``) wherever it becomes markup."""
    act = f"document.title='pwned {column}';new Image().src='{url}/{column}'"
    return (f'{column}<img src=x onerror="{act}">'
            f"</script><script>{act}</script>"
            f'"><svg onload="{act}">\'<b>')


def hostile_results(path: Path, url: str) -> dict[str, str]:
    """A results file whose every text column the report reads holds :func:`evil` text: a
    choice run and a relatum run of two models over one probe each, with provenance, prompts
    and gold forms. Returns the values by column."""
    v = {c: evil(c, url) for c in (
        "probe", "rprobe", "split", "iid", "target", "gold", "cand", "field", "model", "model2",
        "template", "label", "prompt", "token", "rprompt", "form", "var", "value", "blabel",
        "graph", "subject", "predicate", "object", "tgraph", "run", "run2", "ptext", "pname",
        "words", "gprompt", "generation", "finish", "position", "lgold", "lpred")}
    con = connect(path)
    cands = [v["gold"], v["cand"]]
    con.execute("INSERT INTO instances VALUES (?, ?, ?, ?, [?], ?, ?::JSON, now()), "
                "(?, ?, ?, ?, [?], [], '{}', now())",
                [v["probe"], v["split"], v["iid"], v["target"], v["gold"], cands,
                 json.dumps({"x": v["field"]}), v["rprobe"], v["split"], v["iid"], v["target"],
                 v["gold"]])
    con.execute("INSERT INTO gold_forms VALUES (?, ?, ?, ?, ?)",
                [v["rprobe"], v["split"], v["iid"], v["form"], v["gold"]])
    con.execute("INSERT INTO instance_provenance VALUES (?, ?, ?, ?::JSON, ?::JSON), "
                "(?, ?, ?, ?::JSON, ?::JSON)",
                [p for probe in (v["probe"], v["rprobe"]) for p in (
                    probe, v["split"], v["iid"],
                    json.dumps([{"var": v["var"], "value": v["value"], "iri": True,
                                 "label": v["blabel"], "graphs": [v["graph"]]}]),
                    json.dumps([[v["subject"], v["predicate"], v["object"], v["tgraph"]]]))])
    config = json.dumps({"prompts": [v["template"], v["template"] + "2"], "limit": v["label"],
                         "splits": [v["split"]]})
    for run, model, probe, task in ((v["run"], v["model"], v["probe"], "choice"),
                                    (v["run2"], v["model2"], v["probe"], "choice"),
                                    (v["run"] + "r", v["model"], v["rprobe"], "relatum")):
        con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, finished_at) "
                    "VALUES (?, ?, ?, ?::JSON, 'done', ?, now())",
                    [run, model, probe, config, task])
        con.execute("INSERT INTO prompts VALUES (?, 0, ?, ?, ?, ?::JSON)",
                    [run, v["pname"], v["ptext"], v["pname"], json.dumps({v["gold"]:
                                                                           [v["words"]]})])
    for run, best in ((v["run"], v["gold"]), (v["run2"], v["cand"])):
        for prompt in (0, 1):
            for cand in cands:
                con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                            "candidate, prompt, score, n_tokens, label) VALUES "
                            "(?, ?, ?, ?, ?, ?, ?, ?, 2, ?)",
                            [run, v["probe"], v["split"], v["iid"], prompt, cand, v["prompt"],
                             -1.0 if cand == best else -2.0, cand])
    # a generate reading of the choice probe by the first model (the agreement section): the
    # gold ranks first, the answer holds no accepted form, so "ranked first but not said"
    con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, finished_at) "
                "VALUES (?, ?, ?, ?::JSON, 'done', 'generate', now())",
                [v["run"] + "g", v["model"], v["probe"], config])
    for prompt in (0, 1):
        con.execute("INSERT INTO generations VALUES (?, ?, ?, ?, ?, ?, ?, 3, ?, [?])",
                    [v["run"] + "g", v["probe"], v["split"], v["iid"], prompt, v["gprompt"],
                     v["generation"], v["finish"], v["gold"]])
    # a layer-probing run (the per-layer section): hostile position and labels
    con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, finished_at) "
                "VALUES (?, ?, ?, ?::JSON, 'done', 'probing', now())",
                [v["run"] + "l", v["model"], v["probe"], config])
    for layer in (0, 1):
        for control in (False, True):
            con.execute("INSERT INTO layer_probes VALUES (?, ?, ?, ?, ?, 1.0, 0.5, 1.0, 4, 2)",
                        [v["run"] + "l", v["probe"], layer, v["position"], control])
            con.execute("INSERT INTO layer_predictions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [v["run"] + "l", v["probe"], v["split"], v["iid"], layer,
                         v["position"], control, v["lgold"], v["lpred"]])
    for rank, token in enumerate((v["token"], v["form"]), start=1):
        con.execute("INSERT INTO responses VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?)",
                    [v["run"] + "r", v["rprobe"], v["split"], v["iid"], rank, token, 0.5 / rank,
                     v["rprompt"]])
    con.close()
    return v


@pytest.mark.slow  # starts a browser
def test_hostile_text_in_every_column_stays_text(tmp_path: Path, driver: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    with beacon() as (url, hits):
        values = hostile_results(tmp_path / "r.duckdb", url)
        html = tmp_path / "report.html"
        assert report_main(["--results", str(tmp_path / "r.duckdb"), "--out",
                            str(tmp_path / "md"), "--html", str(html), "--no-plots"]) == 0
        driver.get(html.as_uri())
        WebDriverWait(driver, 20).until(lambda d: d.execute_script(
            "return document.body.dataset.ready"))
        for sel in ("f-probe", "f-model", "f-prompt", "f-outcome"):
            options = Select(driver.find_element(By.ID, sel)).options
            for i in range(len(options)):
                Select(driver.find_element(By.ID, sel)).select_by_index(i)
            Select(driver.find_element(By.ID, sel)).select_by_index(0)
        rows = driver.find_elements(By.CSS_SELECTOR, "#kgp-list tbody tr")
        assert len(rows) == 5  # 2 choice runs x 2 prompts, 1 relatum run x 1 prompt
        text = driver.execute_script("return document.body.innerText")
        for k in range(len(rows)):  # open every prediction (through the page's own handler)
            driver.execute_script("document.querySelectorAll('#kgp-list tbody tr')"
                                  f"[{k}].click()")
            text += driver.execute_script("return document.body.innerText")
        agree = driver.find_elements(By.CSS_SELECTOR, "tr.agree-row")
        assert len(agree) == 1  # the choice run's one instance, ranked first but not said
        driver.execute_script("document.querySelector('tr.agree-row').click()")
        text += driver.execute_script("return document.body.innerText")
        handlers = driver.execute_script(
            "return [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
            ".some(a => a.name.startsWith('on'))).map(e => e.outerHTML.slice(0, 80))")
        title = driver.title
        import time

        time.sleep(0.5)  # let any image request that was started arrive
    assert hits == [], f"the page ran script from the results file: {hits}"
    assert title == "kgprobe report"
    assert handlers == []
    # the hostile text is shown as text: in the page's tables and in the opened prediction
    shown = {c for c, value in values.items() if value in text}
    for column in ("probe", "split", "model", "model2", "target", "gold", "cand", "prompt",
                   "token", "rprompt", "value", "blabel", "graph", "subject", "predicate",
                   "object", "tgraph", "var", "template", "gprompt", "generation", "finish",
                   "position"):
        assert column in shown, (column, sorted(shown))


@pytest.mark.slow  # starts a browser
def test_hostile_text_in_a_pararel_fact_stays_text(tmp_path: Path, driver: Any) -> None:  # noqa: F811
    """A ParaRel fact (issue 47's view: its answer under every pattern) whose probe name,
    patterns, candidates, relation and subject are hostile."""
    from selenium.webdriver.support.ui import WebDriverWait

    with beacon() as (url, hits):
        v = {c: evil(c, url) for c in ("pprobe", "pattern", "pattern2", "pcand", "pgold",
                                       "relation", "subject", "iid")}
        probe = "pararel/" + v["pprobe"]
        cands = [v["pgold"], v["pcand"]]
        con = connect(tmp_path / "r.duckdb")
        fields = {"relation": v["relation"], "index": 0, "pindex": [0, 1], "edge": ["0 1 both"],
                  "template": [v["pattern"] + " [V]", v["pattern2"] + " [V]"],
                  "majority": [v["pgold"]]}
        con.execute("INSERT INTO instances VALUES (?, 'test', ?, ?, [?], ?, ?::JSON, now())",
                    [probe, v["iid"], v["subject"], v["pgold"], cands, json.dumps(fields)])
        con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, finished_at) "
                    "VALUES ('P', 'm', ?, '{}', 'done', 'choice', now())", [probe])
        for prompt, best in ((0, v["pgold"]), (1, v["pcand"])):
            for cand in cands:
                con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                            "candidate, prompt, score, n_tokens, label) VALUES "
                            "('P', ?, 'test', ?, ?, ?, ?, ?, 1, ?)",
                            [probe, v["iid"], prompt, cand, v["pattern"],
                             -1.0 if cand == best else -2.0, cand])
        con.close()
        html = tmp_path / "report.html"
        assert report_main(["--results", str(tmp_path / "r.duckdb"), "--out",
                            str(tmp_path / "md"), "--html", str(html), "--no-plots"]) == 0
        driver.get(html.as_uri())
        WebDriverWait(driver, 20).until(lambda d: d.execute_script(
            "return document.body.dataset.ready"))
        driver.execute_script("document.querySelector('#kgp-list tbody tr').click()")
        text = driver.execute_script("return document.body.innerText")
        tables = driver.execute_script("return document.querySelectorAll('table.patterns')"
                                       ".length")
        handlers = driver.execute_script(
            "return [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
            ".some(a => a.name.startsWith('on'))).map(e => e.outerHTML.slice(0, 80))")
        title = driver.title
        import time

        time.sleep(0.5)
    assert hits == [], f"the page ran script from the results file: {hits}"
    assert title == "kgprobe report" and handlers == [] and tables == 1
    for column in ("pattern", "pattern2", "pcand", "pgold", "pprobe"):
        assert v[column] in text, column
