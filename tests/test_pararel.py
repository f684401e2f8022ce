"""ParaRel: the loader (kg/pararel.py) on the real files, and the SQL metrics (eval/pararel/)
against the authors' own computation, re-typed below from yanaiela/pararel (commit cb55546,
``pararel/consistency/encode_consistency_probe.py``: ``filter_a_an_vowel_mismatch``,
``analyze_results``, ``evaluate_lama``, ``group_score_lama_eval``,
``group_score_incorrect_ans_eval``, ``create_majority_baseline``) and run on a networkx graph
built like theirs (nodes with ``lm_pattern``, edges with an ``edge_type`` carrying the three
change flags). Two real relations (P106, with "a"/"an" patterns, and P1303), their real graphs
and first facts, seeded random scores for every (fact, pattern, candidate); both sides read
the same scores (the authors' answer: the best candidate, as their pipeline's top-1 among
``--use_targets``), and every number must agree to 1e-9.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import networkx as nx  # type: ignore[import-untyped]
import pytest

from eval.sqlfile import discover_metrics, load_metric, run_metric
from kg.config import data_dir
from kg.pararel import ParaRelRelation, edge_type, read_dataset, read_relation
from probes.results import connect
from probes.results.writers import Run, insert_run

ROOT = Path(__file__).parents[1]
DATA = (ROOT / data_dir() if not data_dir().is_absolute() else data_dir()) / "pararel"
METRICS = {m.name: m for m in discover_metrics([ROOT / "eval" / "pararel"])}
PROBE = "pararel/pararel"
FACTS = 12

needs_data = pytest.mark.skipif(not (DATA / "graphs" / "P106.json").is_file(),
                                reason="the ParaRel data (../shared/data/pararel) is not here")


# --- the authors' computation, re-typed (their names, their loops) -------------------------

@dataclass(frozen=True)
class PatternNode:
    lm_pattern: str


@dataclass(frozen=True)
class EdgeType:
    syntactic_change: bool
    lexical_change: bool
    determiner_change: bool


def filter_a_an_vowel_mismatch(pattern: str, gold_object: str) -> bool:
    words = pattern.split(' ')
    indices = [ind for (ind, x) in enumerate(words) if '[Y]' in x]
    assert len(indices) == 1
    y_index = indices[0]
    if y_index == 0:
        return False
    vowels = ['a', 'e', 'i', 'o', 'u']
    if words[y_index - 1] == 'a' and any(gold_object.lower().startswith(x) for x in vowels):
        return True
    if words[y_index - 1] == 'an' and not any(  # noqa: SIM103 (the authors' shape)
            gold_object.lower().startswith(x) for x in vowels):
        return True
    return False


def get_node(graph: Any, pattern: str) -> Any:
    for node in graph.nodes:
        if node.lm_pattern == pattern:
            return node
    return None


def analyze_results(lm_results: dict[str, dict[str, tuple[str, str]]], patterns_graph: Any
                    ) -> dict[str, float]:
    total = points = 0
    totals = {"syn": 0, "lex": 0, "both": 0, "no": 0}
    pts = {"syn": 0, "lex": 0, "both": 0, "no": 0}
    for pattern, vals in lm_results.items():
        for subj, (pred, gold_obj) in vals.items():
            graph_node = get_node(patterns_graph, pattern)
            if graph_node is None:
                continue
            if filter_a_an_vowel_mismatch(pattern, gold_obj):
                continue
            for ent_node in patterns_graph.successors(graph_node):
                if [graph_node, ent_node] not in patterns_graph.edges:
                    continue
                t = patterns_graph.edges[graph_node, ent_node]['edge_type']
                ent_pattern = ent_node.lm_pattern
                if filter_a_an_vowel_mismatch(ent_pattern, gold_obj):
                    continue
                success = pred == lm_results[ent_pattern][subj][0]
                points += int(success)
                total += 1
                kind = None
                if t.syntactic_change and not t.lexical_change and not t.determiner_change:
                    kind = "syn"
                elif t.lexical_change and not t.syntactic_change and not t.determiner_change:
                    kind = "lex"
                elif t.lexical_change and t.syntactic_change and not t.determiner_change:
                    kind = "both"
                if kind:
                    pts[kind] += int(success)
                    totals[kind] += 1
                if not t.syntactic_change and not t.lexical_change and not t.determiner_change:
                    pts["no"] += int(success)
                    totals["no"] += 1
    out = {"consistency": points / total if total else -1}
    for k in totals:
        out[k] = pts[k] / totals[k] if totals[k] else -1
    return out


def evaluate_lama(pattern: str, lm_results: dict[str, Any]) -> float:
    points = 0
    data, predictions = lm_results[pattern]['data'], lm_results[pattern]['predictions']
    for datum, preds in zip(data, predictions, strict=True):
        if preds[0]['token_str'] == datum['obj_label']:
            points += 1
    return points / len(data)


def group_score_lama_eval(lm_results: dict[str, Any]) -> float:
    patterns = list(lm_results.keys())
    points = 0
    data = lm_results[patterns[0]]['data']
    for datum_ind, datum in enumerate(data):
        if all(lm_results[p]['predictions'][datum_ind][0]['token_str'] == datum['obj_label']
               for p in patterns):
            points += 1
    return points / len(data)


def group_score_incorrect_ans_eval(lm_results: dict[str, Any]) -> float:
    patterns = list(lm_results.keys())
    points = 0
    data = lm_results[patterns[0]]['data']
    for datum_ind, datum in enumerate(data):
        answers: dict[str, int] = defaultdict(int)
        for pattern in patterns:
            answers[lm_results[pattern]['predictions'][datum_ind][0]['token_str']] += 1
        if len(answers) == 1 and list(answers.keys())[0] != datum['obj_label']:  # noqa: RUF015
            points += 1
    return points / len(data)


def majority_object(data: list[dict[str, str]]) -> str:
    return Counter([x['obj_label'] for x in data]).most_common()[0][0]


def authors_graph(rel: ParaRelRelation) -> Any:
    g = nx.DiGraph()
    nodes = {p: PatternNode(p) for p in rel.patterns}
    for p in rel.patterns:
        g.add_node(nodes[p])
    for e in rel.edges:
        g.add_edge(nodes[e["from"]], nodes[e["to"]], edge_type=EdgeType(
            e["syntactic_change"], e["lexical_change"], e["determiner_change"]))
    return g


# --- the data and the results file ----------------------------------------------------------

def relations() -> list[tuple[ParaRelRelation, list[dict[str, Any]]]]:
    out = []
    for code in ("P106", "P1303"):
        rel = read_relation(code, DATA / "graphs" / f"{code}.json",
                            DATA / "trex_lms_vocab" / f"{code}.jsonl",
                            DATA / "patterns" / f"{code}.jsonl")
        facts = rel.facts[:FACTS]
        assert len({f["sub_label"] for f in facts}) == len(facts)  # the authors key by subject
        out.append((rel, facts))
    return out


def scores_for(rels: list[tuple[ParaRelRelation, list[dict[str, Any]]]], seed: int
               ) -> dict[tuple[str, int, int, str], float]:
    """A score per (relation, fact, pattern, candidate); a few candidates get high scores so
    that agreement and right answers occur often enough to test."""
    rng = random.Random(seed)
    out = {}
    for rel, facts in rels:
        favourites = rel.objects[:3]
        for i, f in enumerate(facts):
            for p in range(len(rel.patterns)):
                for c in rel.objects:
                    bonus = 3.0 if c in favourites else (2.5 if c == f["obj_label"] else 0.0)
                    out[(rel.code, i, p, c)] = -rng.random() * 4 + bonus * rng.random()
    return out


def results_file(rels: list[tuple[ParaRelRelation, list[dict[str, Any]]]],
                 scores: dict[tuple[str, int, int, str], float]) -> duckdb.DuckDBPyConnection:
    """The rows an export and a run of pararel/pararel write (the same fields as the probe
    file's, see test_export_fields_are_what_the_metrics_read)."""
    c = connect(":memory:")
    for rel, facts in rels:
        majority = majority_object(rel.facts)
        index = {p: i for i, p in enumerate(rel.patterns)}
        edges = [f"{index[e['from']]} {index[e['to']]} {edge_type(e)}" for e in rel.edges]
        templates = [p.replace("[X]", "[W]").replace("[Y]", "[V]") for p in rel.patterns]
        for i, f in enumerate(facts):
            fields = {"relation": rel.code, "index": i, "subject": [f["sub_label"]],
                      "answer": [f["obj_label"]], "template": templates,
                      "pindex": list(range(len(templates))), "candidate": rel.objects,
                      "edge": edges, "majority": [majority]}
            c.execute("""INSERT INTO instances (probe, split, instance_id, target, gold,
                         candidates, fields, exported_at)
                         VALUES (?, 'test', ?, ?, ?, ?, ?::JSON, now())""",
                      [PROBE, f"{rel.code}-{i}", f["sub_label"], [f["obj_label"]], rel.objects,
                       json.dumps(fields)])
    insert_run(c, Run(run_id="R", model="m", probe=PROBE, task="choice", config={},
                      status="done"))
    rows = [(PROBE, f"{code}-{i}", p, cand, cand, score)
            for (code, i, p, cand), score in scores.items()]
    c.executemany("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, candidate,
                     label, prompt, score, n_tokens) VALUES ('R', ?, 'test', ?, ?, ?, ?, '', ?, 1)
                     """, rows)
    return c


def authors_numbers(rel: ParaRelRelation, facts: list[dict[str, Any]],
                    scores: dict[tuple[str, int, int, str], float]) -> dict[str, float]:
    """Their main(): results_dict per pattern (data, predictions sorted best first), then
    lama_acc, lama_group_acc, group-unacc and analyze_results; the majority baseline's
    lama_acc from create_majority_baseline's predictions."""
    results_dict: dict[str, dict[str, Any]] = {}
    for p, pattern in enumerate(rel.patterns):
        data = [{"sub_label": f["sub_label"], "obj_label": f["obj_label"]} for f in facts]
        preds = [[{"token_str": c, "score": scores[(rel.code, i, p, c)]}
                  for c in sorted(rel.objects, key=lambda c: -scores[(rel.code, i, p, c)])]
                 for i in range(len(facts))]
        results_dict[pattern] = {"data": data, "predictions": preds}
    lm_results = {pattern: {d["sub_label"]: (pr[0]["token_str"], d["obj_label"])
                            for d, pr in zip(v["data"], v["predictions"], strict=True)}
                  for pattern, v in results_dict.items()}
    out = analyze_results(lm_results, authors_graph(rel))
    out["lama_acc"] = evaluate_lama(rel.patterns[0], results_dict)
    out["lama_group_acc"] = group_score_lama_eval(results_dict)
    out["group_unacc"] = group_score_incorrect_ans_eval(results_dict)
    most = majority_object(rel.facts)
    out["majority_acc"] = sum(f["obj_label"] == most for f in facts) / len(facts)
    return out


def metric(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, dict[str, Any]]:
    cols, rows = run_metric(con, METRICS[name])
    return {r[cols.index("relation")]: dict(zip(cols, r, strict=True)) for r in rows}


@needs_data
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sql_gives_the_authors_numbers(seed: int) -> None:
    rels = relations()
    scores = scores_for(rels, seed)
    con = results_file(rels, scores)
    consistency = metric(con, "pararel_consistency")
    accuracy = metric(con, "pararel_accuracy")
    group = metric(con, "pararel_consistent_accuracy")
    majority = metric(con, "pararel_majority_baseline")
    theirs = {rel.code: authors_numbers(rel, facts, scores) for rel, facts in rels}

    def none_as_minus_one(v: float | None) -> float:
        return -1 if v is None else v

    for code, t in theirs.items():
        assert consistency[code]["value"] == pytest.approx(t["consistency"], abs=1e-9)
        assert none_as_minus_one(consistency[code]["syntactic"]) == pytest.approx(t["syn"],
                                                                                 abs=1e-9)
        assert none_as_minus_one(consistency[code]["lexical"]) == pytest.approx(t["lex"],
                                                                               abs=1e-9)
        assert none_as_minus_one(consistency[code]["both_changes"]) == pytest.approx(
            t["both"], abs=1e-9)
        assert none_as_minus_one(consistency[code]["no_change"]) == pytest.approx(t["no"],
                                                                                 abs=1e-9)
        assert accuracy[code]["value"] == pytest.approx(t["lama_acc"], abs=1e-9)
        assert accuracy[code]["consistent_wrong"] == pytest.approx(t["group_unacc"], abs=1e-9)
        assert group[code]["value"] == pytest.approx(t["lama_group_acc"], abs=1e-9)
        assert majority[code]["value"] == pytest.approx(t["majority_acc"], abs=1e-9)
    # the overall figure is the mean over relations (the paper averages its relations)
    for name, key in (("pararel_consistency", "consistency"), ("pararel_accuracy", "lama_acc"),
                      ("pararel_consistent_accuracy", "lama_group_acc")):
        rows = {"pararel_consistency": consistency, "pararel_accuracy": accuracy,
                "pararel_consistent_accuracy": group}[name]
        mean = sum(t[key] for t in theirs.values()) / len(theirs)
        assert rows["all"]["value"] == pytest.approx(mean, abs=1e-9)
    # the a/an filter matters on P106 ("is a [Y]" / "is an [Y]"): without it the pairs differ
    p106 = rels[0][0]
    assert any(filter_a_an_vowel_mismatch(p, rels[0][1][0]["obj_label"]) for p in p106.patterns)


@needs_data
def test_prompt_consistency_counts_pairs_of_prompts() -> None:
    """The generic metric on the same file, against a plain count: per fact the share of
    unordered pattern pairs with one answer, averaged over facts (no a/an filter)."""
    rels = relations()
    scores = scores_for(rels, 7)
    con = results_file(rels, scores)
    shares = []
    for rel, facts in rels:
        for i in range(len(facts)):
            answers = [max(rel.objects, key=lambda c: scores[(rel.code, i, p, c)])
                       for p in range(len(rel.patterns))]
            pairs = [(a, b) for x, a in enumerate(answers) for b in answers[x + 1:]]
            shares.append(sum(a == b for a, b in pairs) / len(pairs))
    cols, rows = run_metric(con, load_metric(ROOT / "eval" / "metrics" /
                                             "prompt_consistency.sql"))
    row = dict(zip(cols, rows[0], strict=True))
    assert row["value"] == pytest.approx(sum(shares) / len(shares), abs=1e-12)
    assert row["n"] == len(shares)


@needs_data
def test_loader_reads_every_relation() -> None:
    files = sorted(p for d in ("graphs", "patterns", "trex_lms_vocab")
                   for p in (DATA / d).glob("P*.json*"))
    rels = read_dataset(files)
    assert len(rels) == 41
    assert sum(r.in_pararel for r in rels) == 39
    assert {r.code for r in rels if not r.in_pararel} == {"P31", "P527"}
    assert sum(len(r.facts) for r in rels) == 29411
    # the paper's 38 relations and 328 patterns: those with two or more patterns (P1001 has
    # one, so no pair: its consistency is undefined, its accuracy is not)
    paired = [r for r in rels if r.in_pararel and len(r.patterns) >= 2]
    assert (len(paired), sum(len(r.patterns) for r in paired)) == (38, 328)
    assert [r.code for r in rels if r.in_pararel and len(r.patterns) < 2] == ["P1001"]
    for r in rels:  # every graph is complete: one edge per ordered pair of patterns
        assert len(r.edges) == len(r.patterns) * (len(r.patterns) - 1)


def test_a_graph_that_names_an_unknown_pattern_is_refused(tmp_path: Path) -> None:
    from kg.errors import SourceError

    graph = tmp_path / "P1.json"
    graph.write_text(json.dumps({"patterns": ["[X] a [Y]."], "edges": [
        {"from": "[X] a [Y].", "to": "[X] b [Y].", "syntactic_change": True,
         "lexical_change": False, "determiner_change": False}]}))
    facts = tmp_path / "P1.jsonl"
    facts.write_text(json.dumps({"sub_label": "s", "obj_label": "o"}) + "\n")
    with pytest.raises(SourceError, match="not a node of the graph"):
        read_relation("P1", graph, facts, None)


@needs_data
def test_profile_has_pararel_rows_from_its_record() -> None:
    """The profile's ParaRel lines (eval/profile_sql/profile_pararel.sql, the generic shape,
    named by the record's [profile]): consistency, accuracy under the LAMA pattern and
    consistent accuracy over the same facts as the metrics, with the majority baseline as
    the ceiling."""
    from eval.profile import per_benchmark, profile_lines

    rels = relations()
    scores = scores_for(rels, 5)
    con = results_file(rels, scores)
    cols, rows = run_metric(con, load_metric(ROOT / "eval" / "profile_sql" /
                                             "profile_pararel.sql"))
    lines = profile_lines({"profile_pararel": [dict(zip(cols, r, strict=True)) for r in rows]},
                          "m")
    assert [(p.benchmark, p.measure) for p in lines] == [
        ("ParaRel", "consistency (pararel)"), ("ParaRel", "accuracy (LAMA pattern) (pararel)"),
        ("ParaRel", "consistent accuracy (pararel)")]
    theirs = [authors_numbers(rel, facts, scores) for rel, facts in rels]
    n = sum(len(f) for _, f in rels)
    acc = sum(t["lama_acc"] * len(f) for t, (_, f) in zip(theirs, rels, strict=True)) / n
    group = sum(t["lama_group_acc"] * len(f) for t, (_, f) in zip(theirs, rels, strict=True)) / n
    majority = sum(t["majority_acc"] * len(f) for t, (_, f) in zip(theirs, rels, strict=True)) / n
    assert lines[1].n == lines[2].n == n
    assert lines[1].value == pytest.approx(acc, abs=1e-9)
    assert lines[2].value == pytest.approx(group, abs=1e-9)
    assert lines[1].ceiling == pytest.approx(majority, abs=1e-9)
    assert lines[0].ceiling == 1.0
    # the three measures are over the same facts: counted once
    assert per_benchmark(lines) == f"n per benchmark: ParaRel {n} facts"


@needs_data
def test_export_fields_are_what_the_metrics_read() -> None:
    """The real probe file exported from a store loaded by kg/pararel.py (P106 and P1303) gives
    each fact the fields results_file() writes above: the metrics are tested on the export's
    shape."""
    import polars as pl

    from kg.build import load_source
    from kg.manifest import Source, SourceFile
    from kg.store import LocalStore
    from probes.engine.export import instances_for
    from probes.engine.spec import load_probe

    files = [DATA / d / f"{c}.{ext}" for c in ("P106", "P1303")
             for d, ext in (("graphs", "json"), ("patterns", "jsonl"),
                            ("trex_lms_vocab", "jsonl"))]
    store = LocalStore.in_memory()
    src = Source("pararel", "ParaRel test", "kg.pararel", "data", "pararel-json", "MIT",
                 "http://x", tuple(SourceFile(str(f)) for f in files))
    load_source(store.oxigraph, src, files, DATA)
    df: pl.DataFrame = instances_for(load_probe(ROOT / "queries" / "pararel" / "pararel.rq"),
                                     store)
    by_fact = {(json.loads(r["fields"])["relation"], json.loads(r["fields"])["index"]): r
               for r in df.iter_rows(named=True)}
    assert len(by_fact) == sum(len(r.facts) for r, _ in relations())
    for rel, facts in relations():
        majority = majority_object(rel.facts)
        index = {p: i for i, p in enumerate(rel.patterns)}
        for i, f in enumerate(facts):
            row = by_fact[(rel.code, i)]
            fields = json.loads(row["fields"])
            assert row["gold"] == [f["obj_label"]] and row["target"] == f["sub_label"]
            assert row["candidates"] == rel.objects
            assert fields["template"] == [p.replace("[X]", "[W]").replace("[Y]", "[V]")
                                          for p in rel.patterns]
            assert fields["pindex"] == list(range(len(rel.patterns)))
            assert sorted(fields["edge"]) == sorted(
                f"{index[e['from']]} {index[e['to']]} {edge_type(e)}" for e in rel.edges)
            assert fields["majority"] == [majority]


# --- kgprobe pararel subset (probes/engine/subset.py, shared with kgprobe bear subset) -------

def test_pararel_subset_writes_a_probe_file(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from probes.app.cli import main
    from probes.engine.spec import load_probe

    assert main(["pararel", "subset", "--probe", "pararel/pararel-sample", "--relation", "P19",
                 "--relation", "P1303", "--facts", "7", "--name", "pararel/mine", "--out",
                 str(tmp_path)]) == 0
    probe = load_probe(tmp_path / "pararel_mine.rq")
    assert probe.spec.name == "pararel/mine"
    assert 'FILTER(?relation IN ("P19", "P1303"))' in probe.query
    # the sample's own FILTER(?index < 2) gives way to --facts
    assert "FILTER(?index < 7)" in probe.query and "FILTER(?index < 2)" not in probe.query
    assert "kgprobe --queries" in capsys.readouterr().out
    # issue 44 point 3: the sample (and so its subsets) is asked too, with the same instances
    assert probe.spec.formats == {"generate": {"max_new_tokens": 8, "capitalize": True}}


@pytest.mark.parametrize(("argv", "message"), [
    (["--relation", "born"], "--relation 'born' is not a Wikidata property code"),
    (["--probe", "pararel/nope"], "--probe 'pararel/nope' is not one of"),
    (["--facts", "0"], "--facts must be at least 1")])
def test_pararel_subset_bad_input_is_one_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              argv: list[str], message: str) -> None:
    from probes.app.cli import main

    assert main(["pararel", "subset", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not list(tmp_path.iterdir())


def test_pararel_subset_out_that_is_no_folder_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from probes.app.cli import main

    target = tmp_path / "a-file"
    target.write_text("keep me")
    assert main(["pararel", "subset", "--facts", "3", "--out", str(target)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --out {target} is not a folder; give the folder to write pararel_subset.rq "
        "into")
    assert target.read_text() == "keep me"


# --- the shortcut panel on a seeded split by subject (eval/pararel/_shortcut_split.sql) -------
#
# Two relations (so the panel reads a multiple-choice probe: the candidate lists differ). The
# parts below are MD5(subject|42)'s first hex digit (train 0-9, dev a-c, test d-f), checked with
# hashlib in the test. Hand-worked (docs/shortcuts.md's rules; a tie among k candidates counts
# 1/k):
#   shared_words: a car's make is in its name, so 1 on every P176 fact, 1/3 on P27 (no word
#     shared, three tied); train 5/7 (highest) against 1/7 (lowest): highest; dev (1 + 1 + 1/3 +
#     1/3) / 4 = 2/3; test (1 + 1 + 3 x 1/3) / 5 = 3/5; test mean over relations (1 + 1/3) / 2.
#   answer_prior: train rates Toyota 2/4, Honda 1/4, Ford 1/4, Nissan 0; France 2/3, Germany
#     1/3, Italy 0 (on train leave-one-out: highest 5/21 beats lowest 3/14); it answers Toyota
#     and France: dev 1/4 (Alice), test 2/5 (Prius, Frank).
#   candidate_position: train picks the first candidate (lowest: 4/7 against 0): dev 1/4,
#     test 2/5.
#   candidate_characters (Toyota 6, Honda 5, Ford 4, Nissan 6; France 6, Germany 7, Italy 5):
#     train highest 2/7 against lowest 1/7; dev: Leaf 1/2 -> 1/8; test: Prius 1/2, Judy 1 -> 3/10.
#   The rule chosen on dev is shared_words (2/3; the others at most 7/24): the ceiling on the
#   run's test-part facts is 3/5, its best rule there shared_words too.
SHORTCUT_FACTS = {
    "P176": (["Toyota", "Honda", "Ford", "Nissan"],
             [("Toyota Corolla", "Toyota", "train"), ("Toyota Camry", "Toyota", "train"),
              ("Honda Civic", "Honda", "train"), ("Ford Focus", "Ford", "train"),
              ("Honda Jazz", "Honda", "dev"), ("Nissan Leaf", "Nissan", "dev"),
              ("Toyota Prius", "Toyota", "test"), ("Ford Mustang", "Ford", "test")]),
    "P27": (["France", "Germany", "Italy"],
            [("Bob", "France", "train"), ("Carol", "France", "train"),
             ("Dave", "Germany", "train"), ("Alice", "France", "dev"),
             ("Grace", "Italy", "dev"), ("Frank", "France", "test"), ("Judy", "Germany", "test"),
             ("Mallory", "Italy", "test")])}
MODEL_RIGHT = {"Toyota Prius", "Frank", "Honda Civic"}  # the facts the run answers right


def shortcut_results() -> duckdb.DuckDBPyConnection:
    """An export of the facts above (the fields of pararel/pararel, two patterns each) and a
    finished run that answers MODEL_RIGHT's facts right under both patterns, the others with
    the last candidate (Nissan, Italy) or, where that is gold, the first."""
    c = connect(":memory:")
    majority = {"P176": "Toyota", "P27": "France"}
    scores = []
    for code, (objects, facts) in SHORTCUT_FACTS.items():
        templates = ["[W] is made by [V] .", "[W] comes from [V] ."]
        for i, (subject, gold, _) in enumerate(facts):
            fields = {"relation": code, "index": i, "subject": [subject], "answer": [gold],
                      "template": templates, "pindex": [0, 1], "candidate": objects,
                      "edge": ["0 1 lexical", "1 0 lexical"], "majority": [majority[code]]}
            c.execute("""INSERT INTO instances (probe, split, instance_id, target, gold,
                         candidates, fields, exported_at)
                         VALUES (?, 'test', ?, ?, ?, ?, ?::JSON, now())""",
                      [PROBE, f"{code}-{i}", subject, [gold], objects, json.dumps(fields)])
            wrong = objects[-1] if objects[-1] != gold else objects[0]
            answer = gold if subject in MODEL_RIGHT else wrong
            scores += [(PROBE, f"{code}-{i}", p, o, o, 0.0 if o == answer else -1.0)
                       for p in (0, 1) for o in objects]
    insert_run(c, Run(run_id="R", model="m", probe=PROBE, task="choice", config={},
                      status="done"))
    c.executemany("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, candidate,
                     label, prompt, score, n_tokens) VALUES ('R', ?, 'test', ?, ?, ?, ?, '', ?, 1)
                     """, scores)
    return c


def test_shortcut_split_is_md5_of_the_subject() -> None:
    import hashlib

    for _, facts in SHORTCUT_FACTS.values():
        for subject, _, part in facts:
            digit = hashlib.md5(f"{subject}|42".encode()).hexdigest()[0]
            assert part == ("train" if digit < "a" else "dev" if digit < "d" else "test")
    con = shortcut_results()
    from eval.sqlfile import run_support
    run_support(con, [ROOT / "eval" / "pararel" / "_shortcut_split.sql"])
    got = dict(con.execute("SELECT target, split FROM sc_instances").fetchall())
    assert got == {s: part for _, facts in SHORTCUT_FACTS.values() for s, _, part in facts}


def test_shortcut_panel_on_the_split_by_subject() -> None:
    con = shortcut_results()
    cols, rows = run_metric(con, METRICS["pararel_shortcut_panel"])
    panel = {(r[cols.index("split")], r[cols.index("rule")]): dict(zip(cols, r, strict=True))
             for r in rows}
    want = {("train", "shared_words"): 5 / 7, ("dev", "shared_words"): 2 / 3,
            ("test", "shared_words"): 3 / 5, ("dev", "answer_prior"): 1 / 4,
            ("test", "answer_prior"): 2 / 5, ("dev", "candidate_position"): 1 / 4,
            ("test", "candidate_position"): 2 / 5, ("dev", "candidate_characters"): 1 / 8,
            ("test", "candidate_characters"): 3 / 10}
    for key, value in want.items():
        assert panel[key]["value"] == pytest.approx(value, abs=1e-12), key
    assert panel[("test", "shared_words")]["n"] == 5
    assert panel[("test", "shared_words")]["relations"] == 2
    assert panel[("test", "shared_words")]["relation_mean"] == pytest.approx((1 + 1 / 3) / 2)
    chosen = {r for (_, r), d in panel.items() if d["chosen"]}
    assert chosen == {"shared_words"}
    assert {d["chosen_on"] for d in panel.values()} == {"dev"}


def test_shortcut_ceiling_beside_the_model_on_held_out_facts() -> None:
    con = shortcut_results()
    cols, rows = run_metric(con, METRICS["pararel_shortcut_ceiling"])
    assert len(rows) == 1
    row = dict(zip(cols, rows[0], strict=True))
    assert row["rule"] == "shared_words" and row["chosen_on"] == "dev"
    assert row["value"] == pytest.approx(3 / 5) and row["n"] == 5
    assert row["best_rule"] == "shared_words" and row["best_value"] == pytest.approx(3 / 5)
    # the model is right on Prius and Frank of the five test-part facts (Honda Civic is train)
    assert row["model_accuracy"] == pytest.approx(2 / 5)
    # the majority objects (Toyota, France) are gold for Prius and Frank
    assert row["majority"] == pytest.approx(2 / 5)


def test_report_shows_the_panel_beside_the_accuracy(tmp_path: Path) -> None:
    from eval.pararel_report import METRIC_DIR, render
    from eval.report import metric_rows

    con = shortcut_results()
    md = render(con, metric_rows(con, [METRIC_DIR]), tmp_path).markdown
    # the held-out line: model 2/5 (Wilson 0.118-0.769), ceiling 3/5, majority 2/5, n = 5
    assert ("on the 5 facts of the held-out test part of the split by subject (pooled): model "
            "accuracy (LAMA pattern) 0.400 (0.118–0.769, n = 5); shortcut ceiling 0.600 "
            "(0.231–0.882, n = 5) (`shared_words`, chosen on dev); majority baseline 0.400") in md
    assert "## Shortcut panel of pararel/pararel" in md
    line = next(x for x in md.splitlines() if x.startswith("| shared_words |"))
    assert line == "| shared_words | 0.714 | 0.667 | 0.600 | 0.231–0.882 | 5 | 0.667 | yes |"
