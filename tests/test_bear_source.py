"""BEAR as a source (kg/bear.py) and its probe files (queries/bear/*.rq): a two-relation dataset
in lm-pub-quiz's format, loaded into a store and exported by the real probe file, then turned
into scoring requests by the choice task. Expected values are read off the fixture by hand."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kg.build import load_source
from kg.errors import SourceError
from kg.manifest import Source, SourceFile, load_manifest, pick
from kg.store import LocalStore
from probes.backends.protocol import CAUSAL_LM, MASKED_LM
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.export import instances_for
from probes.engine.spec import load_probe, parse_probe
from probes.engine.tasks import Instance, TaskContext
from probes.engine.tasks.choice import TASK as CHOICE

QUERIES = Path(__file__).parents[1] / "queries" / "bear"

METADATA = {
    # answer space given (BEAR): its order is not the instances' order
    "P19": {"templates": ["[X] was born in [Y].", "The birthplace of [X] is [Y]."],
            "answer_space_ids": ["Q90", "Q64", "Q220"],
            "answer_space_labels": ["Paris", "Berlin", "Rome"]},
    # no answer space (BEAR-big): derived from the instances; template 2 repeats template 0
    "P103": {"templates": ["the native language of [X] is [Y].", "[Y] is spoken by [X].",
                           "the native language of [X] is [Y]."]},
    "P414": {"templates": ["[X] is listed on [Y]."]},   # no instance file: no relation
}
P19 = [{"sub_id": "Q1", "sub_label": "ann", "sub_aliases": ["Anna"], "obj_id": "Q64",
        "obj_label": "Berlin", "answer_idx": 1},
       {"sub_id": "Q2", "sub_label": "Bob", "sub_aliases": [], "obj_id": "Q220",
        "obj_label": "Rome", "answer_idx": 2}]
P103 = [{"sub_id": "Q3", "sub_label": "Carl", "sub_aliases": [], "obj_id": "Q188",
         "obj_label": "German"},
        {"sub_id": "Q4", "sub_label": "Dora", "sub_aliases": [], "obj_id": "Q150",
         "obj_label": "French"},
        {"sub_id": "Q5", "sub_label": "Emil", "sub_aliases": [], "obj_id": "Q188",
         "obj_label": "Deutsch"}]   # a second label of Q188: the first one (German) counts
INFO = {"P19": {"domains": ["Biographical"]},
        "P103": {"domains": ["Biographical", "Geographic"]}}


def write_dataset(folder: Path, p19: list[dict] | None = None,
                  metadata: dict | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metadata_relations.json").write_text(json.dumps(metadata or METADATA))
    (folder / "relation_info.json").write_text(json.dumps(INFO))
    for code, rows in (("P19", p19 if p19 is not None else P19), ("P103", P103)):
        (folder / f"{code}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [folder / n for n in ("metadata_relations.json", "relation_info.json",
                                 "P103.jsonl", "P19.jsonl")]


def bear_store(tmp_path: Path, **kw: object) -> LocalStore:
    files = write_dataset(tmp_path / "BEAR", **kw)  # type: ignore[arg-type]
    store = LocalStore.in_memory()
    src = Source("bear", "BEAR test", "kg.bear", "data", "lm-pub-quiz", "none", "http://x",
                 tuple(SourceFile(str(f)) for f in files))
    load_source(store.oxigraph, src, files, tmp_path)
    return store


def test_manifest_bear_sources() -> None:
    m = load_manifest()
    assert {f.path for f in m["bear"].files} >= {"bear/BEAR/metadata_relations.json",
                                                 "bear/relation_info.json", "bear/BEAR/P19.jsonl"}
    assert sum(f.path.endswith(".jsonl") for f in m["bear"].files) == 60
    assert sum(f.path.endswith(".jsonl") for f in m["bear-big"].files) == 78
    assert all(f.sha256 for f in m["bear"].files + m["bear-big"].files)
    # bear-big is optional: a plain build leaves it out
    assert "bear" in [s.name for s in pick(None)]
    assert "bear-big" not in [s.name for s in pick(None)]


def export(store: LocalStore, name: str = "bear.rq") -> pl.DataFrame:
    return instances_for(load_probe(QUERIES / name), store).sort("target")


def test_export_bear_instances(tmp_path: Path) -> None:
    df = export(bear_store(tmp_path))
    assert df["target"].to_list() == ["Bob", "Carl", "Dora", "Emil", "ann"]
    rows = {r["target"]: r for r in df.iter_rows(named=True)}
    # P19: the metadata's answer space in its order; P103: first appearance in the file
    assert rows["ann"]["candidates"] == ["Paris", "Berlin", "Rome"]
    assert rows["ann"]["gold"] == ["Berlin"]
    assert rows["Carl"]["candidates"] == ["German", "French"]
    assert rows["Emil"]["gold"] == ["German"]      # Q188's first label
    ann, emil = json.loads(rows["ann"]["fields"]), json.loads(rows["Emil"]["fields"])
    assert ann["template"] == ["[W] was born in [V].", "The birthplace of [W] is [V]."]
    # the repeated template stays a prompt of its own (prompt_index)
    assert emil["template"] == ["the native language of [W] is [V].", "[V] is spoken by [W].",
                                "the native language of [W] is [V]."]
    assert emil["tindex"] == [0, 1, 2]
    assert (emil["relation"], emil["index"]) == ("P103", 2)
    assert sorted(emil["domain"]) == ["Biographical", "Geographic"]
    assert ann["domain"] == ["Biographical"]


def test_statements_and_requests(tmp_path: Path) -> None:
    df = export(bear_store(tmp_path))
    row = next(r for r in df.iter_rows(named=True) if r["target"] == "Emil")
    inst = Instance.from_row(row)
    spec = load_probe(QUERIES / "bear.rq").spec
    items = CHOICE.items(inst, spec, TaskContext(CAUSAL_LM))
    # 3 templates x 2 answers; first letter upper-cased after filling (lm-pub-quiz)
    assert len(items) == 6
    texts = {(it.prompt_id, it.candidate): it.prompt for it in items}
    assert texts[(0, "French")] == "The native language of Emil is French."
    assert texts[(1, "German")] == "German is spoken by Emil."
    assert texts[(2, "German")] == texts[(0, "German")]
    whole = {(it.prompt_id, it.candidate): it.requests[0].args for it in items}
    assert whole[(0, "German")] == ("", "The native language of Emil is German.")
    cond = load_probe(QUERIES / "bear-conditional.rq").spec
    got = {(it.prompt_id, it.candidate): it.requests[0].args
           for it in CHOICE.items(inst, cond, TaskContext(CAUSAL_LM))}
    assert got[(0, "German")] == ("The native language of Emil is", " German.")
    assert got[(1, "German")] == ("", "German is spoken by Emil.")
    masked = {(it.prompt_id, it.candidate): it.requests[0]
              for it in CHOICE.items(inst, cond, TaskContext(MASKED_LM))}
    req = masked[(0, "French")]
    assert req.op == "pll"
    text, (s, e) = req.args
    assert text[s:e] == "French" and text == "The native language of Emil is French."


def test_lowercase_subject_is_capitalised(tmp_path: Path) -> None:
    df = export(bear_store(tmp_path))
    row = next(r for r in df.iter_rows(named=True) if r["target"] == "ann")
    items = CHOICE.items(Instance.from_row(row), load_probe(QUERIES / "bear.rq").spec,
                         TaskContext(CAUSAL_LM))
    assert {it.prompt for it in items if it.prompt_id == 0} == {
        "Ann was born in Paris.", "Ann was born in Berlin.", "Ann was born in Rome."}


def test_bad_gold_index_names_the_line(tmp_path: Path) -> None:
    bad = [P19[0], {**P19[1], "answer_idx": 0}]
    with pytest.raises(SourceError, match=r"P19.jsonl:2: the gold answer Q220 is not answer 0"):
        bear_store(tmp_path, p19=bad)


def test_relation_without_metadata_is_an_error(tmp_path: Path) -> None:
    meta = {k: v for k, v in METADATA.items() if k != "P19"}
    with pytest.raises(SourceError, match="relation P19 has no entry in metadata_relations"):
        bear_store(tmp_path, metadata=meta)


def test_missing_field_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"P19.jsonl:1: missing field\(s\) sub_label"):
        bear_store(tmp_path, p19=[{k: v for k, v in P19[0].items() if k != "sub_label"}])


HEAD = """# name: t/x
# task: choice
# split: test
# target: ?w
# gold: ?g
# candidates: ?c
# group_by: ?w
"""


def test_prompts_from_header_checks() -> None:
    q = "SELECT ?w ?g ?c ?t ?i WHERE { }"
    with pytest.raises(ProbeFileError, match="not both"):
        parse_probe(HEAD + "# prompts: ['[W] [V]']\n# prompts_from: ?t\n" + q, "x.rq")
    with pytest.raises(ProbeFileError, match=r"set prompts_from: \?var too"):
        parse_probe(HEAD + "# prompt_index: ?i\n" + q, "x.rq")
    with pytest.raises(ProbeFileError, match=r"prompts_from \?z is not selected"):
        parse_probe(HEAD + "# prompts_from: ?z\n" + q, "x.rq")
    with pytest.raises(ProbeFileError, match="prompts_from is taken by the task"):
        parse_probe(HEAD.replace("choice", "binary") + "# prompts_from: ?t\n" + q, "x.rq")


def test_prompt_index_must_count_from_zero() -> None:
    probe = parse_probe(HEAD + "# prompts_from: ?t\n# prompt_index: ?i\n"
                        'SELECT ?w ?g ?c ?t ?i WHERE { VALUES (?w ?g ?c ?t ?i) '
                        '{ ("a" "x" "x" "[W] is [V]" 0) ("a" "x" "y" "[V] of [W]" 2) } }', "x.rq")
    with pytest.raises(ProbeFileError, match=r"prompt_index values are \[0, 2\]"):
        instances_for(probe, LocalStore.in_memory())


def test_template_without_slot_names_the_instance() -> None:
    probe = parse_probe(HEAD + "# prompts_from: ?t\n"
                        'SELECT ?w ?g ?c ?t WHERE { VALUES (?w ?g ?c ?t) '
                        '{ ("a" "x" "y" "[W] is it") } }', "x.rq")
    df = instances_for(probe, LocalStore.in_memory())
    inst = Instance.from_row(df.row(0, named=True))
    with pytest.raises(ProbeError, match=r"template '\[W\] is it' \(from \?t\) has no slot"):
        CHOICE.items(inst, probe.spec, TaskContext(CAUSAL_LM))


def test_stats_query_counts_statements(tmp_path: Path) -> None:
    from probes.benchmarks.bear.__main__ import stats_query

    rows = {r["code"]: r for r in bear_store(tmp_path).query(stats_query("bear"))}
    # P19: 3 answers x 2 instances x 2 templates; P103: 2 x 3 x 3 (the repeated template counts)
    assert {c: (int(r["answers"]), int(r["instances"]), int(r["templates"]))
            for c, r in rows.items()} == {"P19": (3, 2, 2), "P103": (2, 3, 3)}
