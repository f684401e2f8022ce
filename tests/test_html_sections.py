"""The HTML report's sections of issues 44, 47 and 48, in a real Chromium: the agreement of the
formats (2 x 2 table, kappa with interval and n, the two lists, an instance opening to its
prompt, candidates' scores, generated answers and triples), the per-layer chart and table, and a
ParaRel fact opening to its answer under every pattern. Expected values are worked out here
from the stored rows or by hand, never read from the code under test. Marked slow (a browser).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from eval.report import main as report_main
from kg.store import LocalStore
from kg.vocab import graph
from probes.results import connect
from probes.results.writers import LayerPredictionRow, LayerProbeRow, write_layer_probes
from tests.html_fixtures import kinds_formats_results
from tests.test_html_browser import EX, SUBCLASS, driver, pointer_click  # noqa: F401
from tests.test_run import query


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval, written out (z = 1.959964)."""
    z, p = 1.959964, k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


def open_page(driver: Any, results: Path, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.support.ui import WebDriverWait

    html = tmp_path / "report.html"
    assert report_main(["--results", str(results), "--out", str(tmp_path / "md"), "--html",
                        str(html), "--no-plots"]) == 0
    driver.get(html.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.body.dataset.ready"))


def cells(element: Any, selector: str) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    return [[td.text for td in tr.find_elements(By.CSS_SELECTOR, "th, td")]
            for tr in element.find_elements(By.CSS_SELECTOR, selector)]


@pytest.mark.slow  # starts a browser
def test_agreement_of_the_formats(tiny_store: LocalStore, tmp_path: Path,
                                  driver: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    results = kinds_formats_results(tmp_path, tiny_store)
    runs = dict(query(results, "SELECT task, run_id FROM runs WHERE status = 'done'"))
    # ranked, from the stored scores: the gold's mean over the prompts beats every other's;
    # said: the speaker answers "an animal" everywhere, so exactly the parents "animal"
    ranked, said, ids = {}, {}, {}
    for iid, child, gold in query(results, "SELECT instance_id, target, gold[1] FROM instances"):
        means = dict(query(results, "SELECT candidate, avg(score) FROM scores WHERE run_id = ? "
                           "AND instance_id = ? GROUP BY candidate", [runs["choice"], iid]))
        ranked[iid] = all(means[gold] > v for c, v in means.items() if c != gold)
        said[iid] = gold == "animal"
        ids[iid] = (child, gold)
    cell = {(r, s): sum(ranked[i] == r and said[i] == s for i in ids)
            for r in (True, False) for s in (True, False)}
    n = len(ids)
    po = (cell[True, True] + cell[False, False]) / n
    pe = ((cell[True, True] + cell[True, False]) * (cell[True, True] + cell[False, True])
          + (cell[False, True] + cell[False, False]) * (cell[True, False] + cell[False, False])
          ) / n ** 2
    kappa = (po - pe) / (1 - pe)
    # the Wilson interval of the observed agreement (scipy), through kappa's line in po
    wilson = binomtest(cell[True, True] + cell[False, False], n).proportion_ci(method="wilson")
    not_said = sorted(i for i in ids if ranked[i] and not said[i])
    assert not_said, "the fixture must hold a 'ranked first but not said' instance"

    open_page(driver, results, tmp_path)
    block = driver.find_element(By.CSS_SELECTOR, "#agreement .agree")
    table = cells(block, "table.agree2x2 tbody tr")
    assert table[0] == ["ranked first", str(cell[True, True]), str(cell[True, False]),
                        str(cell[True, True] + cell[True, False])]
    assert table[1] == ["not ranked first", str(cell[False, True]), str(cell[False, False]),
                        str(cell[False, True] + cell[False, False])]
    assert table[2][-1] == str(n)
    text = block.text.replace("−", "-")
    low = max(-1.0, (wilson.low - pe) / (1 - pe))  # clipped to kappa's range
    high = min(1.0, (wilson.high - pe) / (1 - pe))
    assert f"kappa = {kappa:.3f}, 95% CI {low:.3f} to {high:.3f}, n = {n}" in text
    lists: dict[str, list[str]] = {}
    for r in block.find_elements(By.CSS_SELECTOR, "tr.agree-row"):
        lists.setdefault(r.get_attribute("data-kind"), []).append(r.get_attribute("data-inst"))
    assert sorted(lists.get("ranked-not-said", [])) == not_said
    assert sorted(lists.get("said-not-ranked", [])) == sorted(
        i for i in ids if said[i] and not ranked[i])

    iid = lists["ranked-not-said"][0]
    child, parent = ids[iid]
    assert pointer_click(driver, f'tr.agree-row[data-inst="{iid}"]') == "TD"
    detail = block.find_element(By.CSS_SELECTOR, ".agree-detail")
    assert detail.is_displayed() and iid in detail.find_element(By.TAG_NAME, "h3").text
    # the prompt and the candidates' scores under prompt 0 of the choice run, best first
    stored = query(results, "SELECT candidate, score, prompt FROM scores WHERE run_id = ? AND "
                   "instance_id = ? AND prompt_id = 0 ORDER BY score DESC", [runs["choice"], iid])
    got = cells(detail, "table.cands tbody tr")
    assert [(c, float(s)) for _, c, s in got] == [(c, float(f"{s:.4g}")) for c, s, _ in stored]
    assert stored[0][2] in detail.find_element(By.CSS_SELECTOR, ".prompt").text
    # the generated answers, one per prompt, each not said
    gens = query(results, "SELECT prompt_id, prompt, generation FROM generations WHERE "
                 "run_id = ? AND instance_id = ? ORDER BY prompt_id", [runs["generate"], iid])
    shown = cells(detail, "table.gens tbody tr")
    assert [(int(r[1]), r[2], r[3], r[-1]) for r in shown] == [
        (p, t, g.strip(), "not said") for p, t, g in gens]
    # and its triples, with their named graph
    assert [EX + child, SUBCLASS, EX + parent, graph("animals").value] in cells(
        detail, "table.triples tbody tr")


def add_layer_run(results: Path) -> dict[int, tuple[int, int, float]]:
    """A layer-probing run of three layers over 10 test instances, written by hand: per layer
    (right of 10, control right of 10, dev accuracy). Gold: 6 "true", 4 "false"."""
    plan = {0: (6, 5, 0.5), 1: (9, 4, 0.8), 2: (7, 6, 0.8)}
    gold = ["true"] * 6 + ["false"] * 4
    con = connect(results)
    con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, finished_at) "
                "VALUES ('L1', 'fake/model', 't/truth', '{}', 'done', 'probing', now())")
    probes, preds = [], []
    for layer, (right, control, dev) in plan.items():
        for is_control, k in ((False, right), (True, control)):
            probes.append(LayerProbeRow("L1", "t/truth", layer, "last", is_control, 1.0,
                                        dev if not is_control else 0.5, 1.0, 20, 10))
            for i, g in enumerate(gold):
                other = "false" if g == "true" else "true"
                preds.append(LayerPredictionRow("L1", "t/truth", "test", f"i{i}", layer, "last",
                                                is_control, g, g if i < k else other))
    write_layer_probes(con, probes, preds)
    con.close()
    return plan


@pytest.mark.slow  # starts a browser
def test_per_layer_chart_and_table(tiny_store: LocalStore, tmp_path: Path,
                                   driver: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    results = kinds_formats_results(tmp_path, tiny_store)
    plan = add_layer_run(results)
    open_page(driver, results, tmp_path)
    section = driver.find_element(By.ID, "layers")
    assert "fake/model on t/truth, position last (chance 0.600)" in section.text
    rows = cells(section, "table.layers tbody tr")
    assert len(rows) == 3
    for (layer, (right, control, dev)), row in zip(sorted(plan.items()), rows, strict=True):
        lo, hi = wilson(right, 10)
        clo, chi = wilson(control, 10)
        assert row[0].split()[0] == str(layer)
        assert row[1:] == ["10", f"{right / 10:.3f} [{lo:.3f}, {hi:.3f}]",
                           f"{control / 10:.3f} [{clo:.3f}, {chi:.3f}]",
                           f"{(right - control) / 10:+.3f}", f"{dev:.3f}"]
    # layers 1 and 2 tie on dev: the lower one is chosen, and marked
    assert rows[1][0] == "1 ✓ chosen on dev" and rows[0][0] == "0" and rows[2][0] == "2"
    chosen = section.find_elements(By.CSS_SELECTOR, "table.layers tr.chosen")
    assert len(chosen) == 1
    # the chart is drawn: two series of three points, the bands, chance and the chosen layer
    svg = section.find_element(By.CSS_SELECTOR, "svg.layer-chart")
    assert svg.size["width"] > 300 and svg.size["height"] > 150
    assert len(svg.find_elements(By.CSS_SELECTOR, "polyline.series")) == 2
    assert len(svg.find_elements(By.CSS_SELECTOR, "polygon.band")) == 2
    ys = driver.execute_script(
        "return [...arguments[0].querySelectorAll('circle')].map(c => c.cy.baseVal.value)", svg)
    # higher accuracy is drawn higher (smaller y): the probe's layer 1 (0.9) above its layer 0
    assert ys[1] < ys[2] < ys[0]
    chance = driver.execute_script("return arguments[0].querySelector('line.chance')"
                                   ".y1.baseVal.value", svg)
    # chance 0.6 lies between the control task's 0.5 (layer 0) and the probe's 0.7 (layer 2)
    assert ys[2] < chance < ys[3]
    xs = driver.execute_script(
        "return [...arguments[0].querySelectorAll('circle')].map(c => c.cx.baseVal.value)", svg)
    line = driver.execute_script("return arguments[0].querySelector('line.chosen')"
                                 ".x1.baseVal.value", svg)
    assert line == pytest.approx(xs[1])


PARAREL = "pararel/t"
PATTERNS = ["[W] was born in [V].", "[W] is a native of [V].", "[W] is from an [V]."]


def add_pararel_run(results: Path) -> None:
    """One ParaRel relation, two facts, three patterns and three graph edges, scored by hand:
    fact 0 (gold Paris) answers Paris, Paris, Rome; fact 1 (gold Rome) Rome, Oslo, Oslo."""
    con = connect(results)
    answers = {"0": ("Paris", ["Paris", "Paris", "Rome"]), "1": ("Rome", ["Rome", "Oslo", "Oslo"])}
    cands = ["Paris", "Rome", "Oslo"]
    for iid, (gold, _) in answers.items():
        fields = {"relation": "P19", "index": int(iid), "template": PATTERNS,
                  "pindex": [0, 1, 2], "edge": ["0 1 lexical", "1 2 syntactic", "0 2 both"],
                  "majority": ["Paris"]}
        con.execute("INSERT INTO instances (probe, split, instance_id, target, gold, candidates, "
                    "fields, exported_at) VALUES (?, 'test', ?, ?, [?], ?, ?::JSON, now())",
                    [PARAREL, iid, f"person {iid}", gold, cands, json.dumps(fields)])
    con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, finished_at) "
                "VALUES ('P1', 'fake/model', ?, '{}', 'done', 'choice', now())", [PARAREL])
    for iid, (_, picks) in answers.items():
        for pid, pick in enumerate(picks):
            for c in cands:
                con.execute("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, "
                            "candidate, label, prompt, score, n_tokens) VALUES ('P1', ?, 'test', "
                            "?, ?, ?, ?, ?, ?, 1)", [PARAREL, iid, pid, c, c, PATTERNS[pid]
                                                     .replace("[V]", c),
                                                     -1.0 if c == pick else -3.0])
    con.close()


@pytest.mark.slow  # starts a browser
def test_pararel_fact_under_every_pattern(tiny_store: LocalStore, tmp_path: Path,
                                          driver: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    results = kinds_formats_results(tmp_path, tiny_store)
    add_pararel_run(results)
    open_page(driver, results, tmp_path)
    Select(driver.find_element(By.ID, "f-probe")).select_by_value(PARAREL)
    detail = driver.find_element(By.ID, "kgp-detail")
    want = {
        # fact 0: majority Paris; "is from an [V]" with Paris (a consonant) fails the a/an
        # filter, so only edge 0-1 counts: it agrees -> 1.000 over 1 pair
        "person 0": ("Paris", "1.000 over 1 graph-edge pair ",
                     [["0", PATTERNS[0], "Paris", "right", "yes", ""],
                      ["1", PATTERNS[1], "Paris", "right", "yes", ""],
                      ["2", PATTERNS[2], "Rome", "wrong", "no", "skipped (a/an)"]]),
        # fact 1: Rome (a consonant) skips pattern 2 too: edge 0-1, Rome vs Oslo -> 0.000;
        # majority: Oslo (2 of 3)
        "person 1": ("Oslo", "0.000 over 1 graph-edge pair ",
                     [["0", PATTERNS[0], "Rome", "right", "no", ""],
                      ["1", PATTERNS[1], "Oslo", "wrong", "yes", ""],
                      ["2", PATTERNS[2], "Oslo", "wrong", "yes", "skipped (a/an)"]])}
    for target, (top, consistency, table) in want.items():
        rows = driver.find_elements(By.CSS_SELECTOR, "#kgp-list tbody tr")
        (row,) = [r for r in rows if r.find_elements(By.TAG_NAME, "td")[2].text == target
                  and r.find_elements(By.TAG_NAME, "td")[4].text == "0"]
        k = row.get_attribute("data-row")
        assert pointer_click(driver, f'#kgp-list tbody tr[data-row="{k}"]') == "TD"
        assert f"majority answer: {top}" in detail.text
        assert f"Consistency of this fact: {consistency}" in detail.text
        assert cells(detail, "table.patterns tbody tr") == table
