"""The HTML report's data and page without a browser (tests/test_html_browser.py clicks
through it in Chromium): the predictions of scored and relatum runs, and a page that fetches
nothing."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

from eval.html_data import browser_data
from eval.report import main as report_main
from probes.results import connect


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "r.duckdb"
    con = connect(path)
    con.execute("INSERT INTO instances VALUES ('t/c', 'test', 'i1', 'dog', ['animal'], "
                "['animal', 'plant'], '{}', now()), ('t/r', 'test', 'w1', 'hand', "
                "['finger'], [], '{}', now())")
    con.execute("INSERT INTO gold_forms VALUES ('t/r', 'test', 'w1', 'fingers', 'finger')")
    con.execute("INSERT INTO runs (run_id, model, probe, status, task, config) VALUES "
                "('rc', 'm', 't/c', 'done', 'choice', '{\"prompts\": [\"A [W] is [V].\"]}'), "
                "('rr', 'm', 't/r', 'done', 'relatum', NULL), "
                "('rx', 'm', 't/c', 'failed', 'choice', NULL)")
    # choice: prompt 0 ranks animal first (right), prompt 1 ties them (a tie is wrong)
    for prompt, plant in ((0, -3.0), (1, -1.0)):
        for cand, score in (("animal", -1.0), ("plant", plant)):
            con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                        "candidate, prompt, score, label) VALUES ('rc', 't/c', 'test', 'i1', "
                        "?, ?, ?, ?, ?)", [prompt, cand, f"A dog is {cand}.", score, cand])
    # relatum: prompt 0 answers "fingers" (a gold form: right), prompt 1 "arm" (wrong)
    for prompt, tokens in ((0, ["fingers", "arm"]), (1, ["arm", "finger"])):
        for rank, token in enumerate(tokens, start=1):
            con.execute("INSERT INTO responses VALUES ('rr', 't/r', 'test', 'w1', ?, ?, ?, ?, "
                        "'A hand has [MASK].')", [prompt, rank, token, 0.5 / rank])
    con.close()
    return path


def test_predictions_of_scored_and_relatum_runs(tmp_path: Path) -> None:
    con = connect(_file(tmp_path), read_only=True)
    runs = {"rc": {"model": "m"}, "rr": {"model": "m"}}
    try:
        data = browser_data(con, runs)
    finally:
        con.close()
    s, rows, inst = data["strings"], data["rows"], data["instances"]
    got = sorted((data["runs"][r]["id"], inst["id"][i], p, s[a], ok, [s[c] for c in cands])
                 for r, i, p, a, ok, cands in zip(rows["run"], rows["inst"], rows["prompt"],
                                                  rows["answer"], rows["right"], rows["cands"],
                                                  strict=True))
    assert got == [("rc", "i1", 0, "animal", 1, ["animal", "plant"]),
                   ("rc", "i1", 1, "animal", 0, ["animal", "plant"]),
                   ("rr", "w1", 0, "fingers", 1, ["fingers", "arm"]),
                   ("rr", "w1", 1, "arm", 0, ["arm", "finger"])]
    # no provenance exported for these hand-made instances: the browser says so
    assert inst["bindings"] == [None, None]


def test_the_page_is_one_file_that_fetches_nothing(tmp_path: Path) -> None:
    html = tmp_path / "out" / "r.html"
    assert report_main(["--results", str(_file(tmp_path)), "--out", str(tmp_path / "md"),
                        "--html", str(html), "--no-plots"]) == 0
    text = html.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert not re.search(r"""@import|url\(\s*["']?https?:|fetch\(|XMLHttpRequest""", text)
    packed = re.search(r'<script id="kgp-data" type="application/octet-stream">([^<]*)<',
                       text)
    assert packed is not None
    data = json.loads(gzip.decompress(base64.b64decode(packed.group(1))))
    assert sorted(r["id"] for r in data["runs"]) == ["rc", "rr"]  # the failed run is left out
