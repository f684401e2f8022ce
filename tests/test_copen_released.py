"""The released-format loader (probes.benchmarks.copen.released) on the fixture built from the KoLA
samples.

Expected values come from the KoLA sample files themselves (read here with plain regular
expressions) and from ../shared/data/copen/README.md: 5 instances per task, CSJ with 21
candidates, test labels hidden in the fixture's test.json (one instance per task).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kg import config
from probes.benchmarks.copen.released import (
    ReleasedFormatError,
    cic_row,
    cpj_row,
    csj_row,
    find_files,
    format_reports,
    load,
    read_items,
)
from tests.data import require

FIXTURE = Path(__file__).parent / "fixtures" / "copen"
RELEASED = FIXTURE / "released"


def kola(name: str) -> list[tuple[str, str]]:
    path = config.data_dir() / "copen" / "kola_samples" / name
    require(path, f"the KoLA sample file {name}")
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [(s["instance"]["input"]["text"], s["instance"]["references"][0]["output"]["text"])
            for s in doc["request_states"]]


def items(task_dir: str, split: str) -> list[dict[str, Any]]:
    return json.loads((RELEASED / task_dir / "data" / f"{split}.json").read_text())


@pytest.fixture
def loaded(tmp_path: Path) -> tuple[duckdb.DuckDBPyConnection, list]:
    reports = load(RELEASED, tmp_path / "r.duckdb")
    return duckdb.connect(str(tmp_path / "r.duckdb")), reports


def test_fixture_is_what_the_script_derives_from_the_kola_samples(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_fixture", FIXTURE / "make_fixture.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    kola("2-1_COPEN++csj_sample.json")  # skip without the data
    module.HERE = tmp_path
    module.main(config.data_dir())
    for path in sorted(RELEASED.rglob("*.json")):
        again = tmp_path / path.relative_to(FIXTURE)
        assert json.loads(again.read_text()) == json.loads(path.read_text()), path
    assert (tmp_path / "wikidata.ttl").read_text() == (FIXTURE / "wikidata.ttl").read_text()


def test_fixture_keeps_every_kola_answer_and_candidate() -> None:
    csj = items("task1", "train") + items("task1", "dev") + items("task1", "test")
    for (text, answer), item in zip(kola("2-1_COPEN++csj_sample.json"), csj, strict=True):
        names = [c["name"] for c in item["candidates"]]
        assert len(names) == 21
        assert text == (f"Among {', '.join(names)}, which one is the most conceptually similar "
                        f"with {item['query']['name']}?")
        if item["label"] != -1:
            assert names[[c["id"] for c in item["candidates"]].index(item["label"])] == answer
    cic = items("task3", "train") + items("task3", "dev")
    for (text, answer), item in zip(kola("2-3_COPEN++cic_sample.json"), cic, strict=False):
        assert item["label"].rsplit("_", 1)[1] == answer
        assert f"'{item['sentence']}'" in text
        tokens = item["sentence"].split()
        start, end = item["entity"]["pos"]
        assert " ".join(tokens[start:end]) == item["entity"]["name"]


def test_load_counts_and_hidden_labels(loaded: tuple) -> None:
    con, reports = loaded
    counts = {(r.probe, r.split): (r.instances, r.hidden) for r in reports}
    for probe in ("copen/csj", "copen/cpj", "copen/cic"):
        assert counts[(probe, "train")] == (3, 0)
        assert counts[(probe, "dev")] == (1, 0)
        assert counts[(probe, "test")] == (1, 1)
    rows = con.execute("""SELECT probe, split, len(gold), len(candidates) FROM instances
                          ORDER BY ALL""").fetchall()
    assert len(rows) == 15
    assert {(p, s, g) for p, s, g, _ in rows if s == "test"} == {
        ("copen/csj", "test", 0), ("copen/cpj", "test", 0), ("copen/cic", "test", 0)}
    assert {n for p, _, _, n in rows if p == "copen/csj"} == {21}
    assert {n for p, _, _, n in rows if p == "copen/cpj"} == {2}
    text = format_reports(reports)
    assert "3 instance(s) have hidden labels" in text and "leaves them out" in text


def test_loaded_instances_match_the_samples(loaded: tuple) -> None:
    con, _ = loaded
    gold = dict(con.execute("""SELECT target, gold[1] FROM instances WHERE probe = 'copen/csj'
                               AND len(gold) > 0""").fetchall())
    for text, answer in kola("2-1_COPEN++csj_sample.json")[:4]:
        query = re.search(r"similar with (.*)\?$", text).group(1)  # type: ignore[union-attr]
        assert gold[query] == answer
    cpj = dict(con.execute("""SELECT target, gold[1] FROM instances WHERE probe = 'copen/cpj'
                              AND len(gold) > 0""").fetchall())
    for text, answer in kola("2-2_COPEN++cpj_sample.json")[:4]:
        statement = re.search(r"'(.*)'", text).group(1)  # type: ignore[union-attr]
        assert cpj[statement] == answer
    cic = con.execute("""SELECT gold[1], candidates, fields->>'$.gold_concept' FROM instances
                         WHERE probe = 'copen/cic' AND target = 'Times Higher Education'"""
                      ).fetchone()
    assert cic == ("magazine", ["magazine", "periodical literature", "written work", "work",
                                "document"], "Magazine")


def test_reload_replaces_the_probe_rows(tmp_path: Path) -> None:
    load(RELEASED, tmp_path / "r.duckdb")
    load(RELEASED, tmp_path / "r.duckdb", tasks=["csj"])
    con = duckdb.connect(str(tmp_path / "r.duckdb"))
    assert con.execute("SELECT count(*) FROM instances").fetchone() == (15,)


# --- bad input --------------------------------------------------------------------------------

CSJ_ITEM = items("task1", "train")[0]


def test_csj_wrong_candidate_count_names_file_and_item() -> None:
    item = copy.deepcopy(CSJ_ITEM)
    item["candidates"] = item["candidates"][:20]
    with pytest.raises(ReleasedFormatError, match=r"dev\.json: item 7: has 20 candidates; a CSJ "
                       r"instance has 21"):
        csj_row(item, "dev.json", 7)


def test_csj_label_not_among_candidates() -> None:
    item = {**copy.deepcopy(CSJ_ITEM), "label": "c99"}
    with pytest.raises(ReleasedFormatError, match=r"item 2: label 'c99' is not the id of any"):
        csj_row(item, "train.json", 2)


def test_hidden_labels_keep_the_instance_without_gold() -> None:
    for label in (-1, "-1", None):
        row = csj_row({**CSJ_ITEM, "label": label}, "test.json", 0)
        assert row["gold"] == [] and row["fields"]["hidden"] and len(row["candidates"]) == 21
    cpj = cpj_row({"text": "owls fly .", "concept": {"pos": [0, 1]}, "label": -1}, "t", 0)
    assert cpj["gold"] == [] and cpj["candidates"] == ["true", "false"]


def test_csj_older_shape_and_duplicate_names() -> None:
    names = [c["name"] for c in CSJ_ITEM["candidates"]]
    answer = CSJ_ITEM["candidates"][6]
    old = {"query": CSJ_ITEM["query"], "y": answer,
           "n": [c for c in CSJ_ITEM["candidates"] if c is not answer]}
    row = csj_row(old, "f", 0)
    assert row["gold"] == [answer["name"]] and sorted(row["candidates"]) == sorted(names)
    dup = copy.deepcopy(CSJ_ITEM)
    dup["candidates"][0]["name"] = dup["candidates"][1]["name"]
    row = csj_row(dup, "f", 0)
    assert len(row["candidates"]) == 20 and row["fields"]["duplicates"] == 1


def test_csj_distractor_kinds_are_read() -> None:
    item = copy.deepcopy(CSJ_ITEM)
    item["candidates"][0]["type"] = "hard"
    item["candidates"][1]["hard"] = False
    row = csj_row(item, "f", 0)
    assert row["fields"]["hard"] == [item["candidates"][0]["name"]]
    assert row["fields"]["easy"] == [item["candidates"][1]["name"]]


def test_cpj_span_and_label_errors() -> None:
    with pytest.raises(ReleasedFormatError, match=r"x\.json: item 3: concept\.pos \[2, 9\] is "
                       r"outside the text's 4 tokens"):
        cpj_row({"text": "bus companies are hose.", "concept": {"pos": [2, 9]}, "label": 0},
                "x.json", 3)
    with pytest.raises(ReleasedFormatError, match=r"label 2 must be 1 \(true\), 0"):
        cpj_row({"text": "a b", "concept": {"pos": [0, 1]}, "label": 2}, "x.json", 0)
    row = cpj_row({"text": "a  member of parliament is Order", "pos": [1, 4], "label": 0,
                   "chain_id": 5}, "x.json", 0)
    assert (row["fields"]["pre"], row["fields"]["concept"], row["fields"]["post"]) == (
        "a ", "member of parliament", " is Order")
    assert row["fields"]["chain_id"] == 5


def test_cic_errors() -> None:
    item = items("task3", "train")[0]
    with pytest.raises(ReleasedFormatError, match=r"item 0: label 'Q1_Newspaper' is not among"):
        cic_row({**item, "label": "Q1_Newspaper"}, "f", 0)
    with pytest.raises(ReleasedFormatError, match=r"extra: \['Newspaper'\]"):
        cic_row({**item, "candidates": [*item["candidates"], "Newspaper"]}, "f", 0)
    with pytest.raises(ReleasedFormatError, match="concept_chains"):
        cic_row({k: v for k, v in item.items() if k != "concept_chains"}, "f", 0)
    older = {**{k: v for k, v in item.items() if k not in ("concept_chains", "label")},
             "label": item["concept_chains"], "my_label": item["label"]}
    assert cic_row(older, "f", 0)["gold"] == ["magazine"]


def test_file_level_errors(tmp_path: Path) -> None:
    bad = tmp_path / "task2" / "data" / "train.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('[{"text": "a b", "concept": {"pos": [0, 1]}, "label": 1},')
    with pytest.raises(ReleasedFormatError, match=r"train\.json: not valid JSON"):
        read_items(bad)
    with pytest.raises(ReleasedFormatError, match="no COPEN files found"):
        find_files(tmp_path / "nothing")
    bad.write_text(json.dumps([{"text": "a b", "concept": {"pos": [0, 1]}, "label": 1},
                               {"text": "a b", "concept": {"pos": [0, 5]}, "label": 1}]))
    results = tmp_path / "r.duckdb"
    (report,) = load(tmp_path, results)  # a malformed item is reported and skipped
    assert report.instances == 1 and len(report.skipped) == 1
    assert re.search(r"train\.json: item 1: concept\.pos \[0, 5\] is outside", report.skipped[0])
    assert "1 malformed item(s) skipped" in format_reports([report])
    con = duckdb.connect(str(results))
    assert con.execute("SELECT count(*) FROM instances").fetchone() == (1,)
    con.close()
    bad.write_text("{}")  # not a list: the whole load stops before anything is written
    with pytest.raises(ReleasedFormatError, match="expected a JSON list"):
        load(tmp_path, tmp_path / "other.duckdb")
    assert not (tmp_path / "other.duckdb").exists()


def test_ids_and_concepts_are_kept_and_kinds_come_from_the_taxonomy(tmp_path: Path) -> None:
    """Item ids (32 hex digits in the released test files) and entity concepts are kept; with
    the taxonomy a distractor sharing the query concept's top-level concept is hard."""
    father = tmp_path / "father.txt"
    father.write_text("Animal\t\tRoot\nMammal\t\tAnimal\nBird\t\tAnimal\n"
                      "Place\t\tRoot\nCountry\t\tPlace\n")
    item = copy.deepcopy(CSJ_ITEM)
    item["id"] = "0123456789abcdef0123456789abcdef"
    item["query"]["concept"] = "Mammal"
    others = [c for c in item["candidates"] if c["id"] != item["label"]]
    for c in item["candidates"]:
        c["concept"] = ("Mammal" if c["id"] == item["label"] else
                        "Bird" if c is others[0] else "Country")
    from kg.copen import read_taxonomy, top_concepts

    row = csj_row(item, "f", 0, top=top_concepts(read_taxonomy(father)[0]))
    f = row["fields"]
    assert f["id"] == item["id"] and f["query_concept"] == "Mammal"
    assert f["candidate_concepts"][others[0]["name"]] == "Bird"
    # the Bird shares the superordinate Animal with Mammal: hard; the 19 Countries: easy
    assert f["hard"] == [others[0]["name"]]
    assert f["easy"] == [c["name"] for c in others[1:]]
