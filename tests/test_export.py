"""``probes.engine.export``: instances from probe queries into DuckDB and Parquet.

Expected instances come from the tiny store's facts (tests/conftest.py): 6 animal edges,
2 colour edges; dog's superclasses are mammal and pet.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyoxigraph as ox
import pytest

import probes.engine.export as export_mod
from kg.store import LocalStore
from kg.vocab import RDFS, graph
from probes.engine.errors import ProbeFileError, ResultsError
from probes.engine.export import export, instances_for, main, write_instances, write_parquet
from probes.engine.spec import Probe, discover, parse_probe
from probes.results import connect

GOOD = Path(__file__).parent / "fixtures" / "probes" / "good"
PAIRS_ID = '# id: ["?child", "?parent"]'
ROOT = Path(__file__).parents[1]
EX = "http://example.org/"
DOG_PET = ox.Quad(ox.NamedNode(EX + "dog"), RDFS.subClassOf, ox.NamedNode(EX + "pet"),
                  graph("animals"))


def good_probes() -> dict[str, Probe]:
    return {p.spec.name: p for p in discover([GOOD], include_default=False)}


def rows(results: Path, probe: str | None = None) -> list[tuple[Any, ...]]:
    """Every instances row (optionally of one probe), sorted, with gold lists as tuples."""
    con = duckdb.connect(str(results), read_only=True)
    try:
        sql = "SELECT probe, split, instance_id, target, gold, fields, exported_at FROM instances"
        got = con.execute(sql + (" WHERE probe = ?" if probe else ""),
                          [probe] if probe else []).fetchall()
    finally:
        con.close()
    return sorted((p, s, i, t, tuple(g), f, e) for p, s, i, t, g, f, e in got)


def counts(results: Path) -> dict[tuple[str, str], int]:
    con = duckdb.connect(str(results), read_only=True)
    try:
        got = con.execute("SELECT probe, split, count(*) FROM instances GROUP BY ALL").fetchall()
    finally:
        con.close()
    return {(p, s): n for p, s, n in got}


# --- shaping rows into instances -------------------------------------------------------------

def test_group_by_collects_gold_lists(tiny_store: LocalStore) -> None:
    df = instances_for(good_probes()["tiny/hypernyms"], tiny_store)
    gold = {t: sorted(g) for t, g in df.select("target", "gold").rows()}
    assert gold == {"dog": ["mammal", "pet"], "cat": ["mammal"], "mammal": ["animal"],
                    "sparrow": ["bird"], "bird": ["animal"]}
    assert set(df["split"]) == {"test"} and set(df["probe"]) == {"tiny/hypernyms"}
    dog = json.loads(df.filter(pl.col("target") == "dog")["fields"][0])
    assert dog["child"] == "dog" and sorted(dog["parent"]) == ["mammal", "pet"]


def test_split_from_a_variable(tiny_store: LocalStore) -> None:
    df = instances_for(good_probes()["tiny/pairs"], tiny_store)
    assert df.group_by("split").len().sort("split").rows() == [("dev", 2), ("test", 6)]
    dev = sorted(df.filter(pl.col("split") == "dev")["target"])
    assert dev == ["blue", "red"]


def test_split_variable_outside_group_by_stays_a_name(tiny_store: LocalStore) -> None:
    text = (GOOD / "pairs.rq").read_text().replace(PAIRS_ID, "# group_by: ?child")
    df = instances_for(parse_probe(text, "grouped.rq"), tiny_store)
    by_split = {s: sorted(df.filter(pl.col("split") == s)["target"]) for s in set(df["split"])}
    assert by_split == {"test": ["bird", "cat", "dog", "mammal", "sparrow"],
                        "dev": ["blue", "red"]}


def test_unbound_split_is_an_error_on_the_split_line(tiny_store: LocalStore) -> None:
    text = ("# name: t/unbound\n# task: records\n# split: ?split\n"
            'SELECT ?w ?split WHERE { VALUES ?w { "a" "b" } OPTIONAL { BIND("x" AS ?nope) } }\n')
    with pytest.raises(ProbeFileError) as info:
        instances_for(parse_probe(text, "unbound.rq"), tiny_store)
    assert info.value.line == 3 and "?split is unbound in 2 row(s)" in str(info.value)


def test_numbers_booleans_and_unbound_values_in_fields(tiny_store: LocalStore) -> None:
    df = instances_for(good_probes()["tiny/features"], tiny_store)
    fields = {t: json.loads(f) for t, f in df.select("target", "fields").rows()}
    assert fields["dog"] == {"animal": "dog", "legs": 4, "weight": 30.5, "tame": True}
    assert fields["cat"] == {"animal": "cat", "legs": 4, "weight": 4.5, "tame": None}
    assert fields["sparrow"] == {"animal": "sparrow", "legs": 2, "weight": None, "tame": None}


def test_instance_ids_are_stable_and_unique(tiny_store: LocalStore,
                                            tiny_quads: list[ox.Quad]) -> None:
    other = LocalStore.in_memory()
    other.oxigraph.extend(reversed(tiny_quads))
    for probe in good_probes().values():
        first = instances_for(probe, tiny_store)
        again = instances_for(probe, tiny_store)
        elsewhere = instances_for(probe, other)
        key = ["split", "instance_id", "target"]
        assert sorted(first.select(key).rows()) == sorted(again.select(key).rows())
        assert sorted(first.select(key).rows()) == sorted(elsewhere.select(key).rows())
        assert first["instance_id"].n_unique() == first.height
        assert all(len(i) == 16 and int(i, 16) >= 0 for i in first["instance_id"])


def test_rows_sharing_an_id_are_an_error_on_the_id_line(tiny_store: LocalStore) -> None:
    text = (GOOD / "pairs.rq").read_text().replace(PAIRS_ID, "# id: ?parent")
    with pytest.raises(ProbeFileError) as info:
        instances_for(parse_probe(text, "ids.rq"), tiny_store)
    assert info.value.line == 7 and "share an instance id" in str(info.value)


# --- writing ---------------------------------------------------------------------------------

def test_export_writes_duckdb_and_parquet_per_split(tiny_store: LocalStore, tmp_path: Path) -> None:
    results, out = tmp_path / "r.duckdb", tmp_path / "out"
    reports = export(list(good_probes().values()), tiny_store, results, out, progress=False)
    expected = {("tiny/hypernyms", "test"): 5, ("tiny/pairs", "test"): 6,
                ("tiny/pairs", "dev"): 2, ("tiny/features", "test"): 3}
    assert counts(results) == expected
    assert {(r.probe, r.split): r.rows for r in reports} == expected
    for (probe, split), n in expected.items():
        part = pl.read_parquet(out / probe / f"{split}.parquet")
        assert part.height == n and set(part["split"]) == {split}
    assert sorted(p.name for p in (out / "tiny" / "pairs").iterdir()) == [
        "_kgprobe_export.json", "dev.parquet", "test.parquet"]  # the record: which export


def test_reexport_replaces_one_probe_and_keeps_the_others(tiny_store: LocalStore,
                                                         tmp_path: Path) -> None:
    results, out = tmp_path / "r.duckdb", tmp_path / "out"
    probes = good_probes()
    export(list(probes.values()), tiny_store, results, out, progress=False)
    before_pairs, before_features = rows(results, "tiny/pairs"), rows(results, "tiny/features")

    tiny_store.oxigraph.remove(DOG_PET)
    export([probes["tiny/hypernyms"]], tiny_store, results, out, progress=False)
    gold = {r[3]: sorted(r[4]) for r in rows(results, "tiny/hypernyms")}
    assert gold["dog"] == ["mammal"] and len(gold) == 5
    assert rows(results, "tiny/pairs") == before_pairs
    assert rows(results, "tiny/features") == before_features
    assert pl.read_parquet(out / "tiny" / "hypernyms" / "test.parquet").height == 5


def test_a_damaged_parquet_file_is_noticed_and_rewritten(
        tiny_store: LocalStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30 point 5: the record keeps each Parquet file's size and SHA-256 at export; the
    next export (and run: both call parquet_sync.sync) finds a file cut to half, rewrites it
    from the results file and says so in one line."""
    import hashlib

    from probes.engine import parquet_sync

    results, out = tmp_path / "r.duckdb", tmp_path / "out"
    probes = good_probes()
    export(list(probes.values()), tiny_store, results, out, progress=False)
    path = out / "tiny" / "pairs" / "test.parquet"
    whole = path.read_bytes()
    before = pl.read_parquet(path)
    record = json.loads((path.parent / "_kgprobe_export.json").read_text())
    assert record["files"]["test.parquet"] == {
        "bytes": len(whole), "sha256": hashlib.sha256(whole).hexdigest()}
    path.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(Exception, match=r"(?i)magic|parquet|eof|invalid|out of"):
        pl.read_parquet(path)
    capsys.readouterr()
    export([probes["tiny/hypernyms"]], tiny_store, results, out, progress=False)
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "tiny/pairs" in x]
    assert "damaged" in line and f"{len(whole) // 2:,} bytes, {len(whole):,} were written" in line
    assert pl.read_parquet(path).equals(before) and before.height == 6
    whole = path.read_bytes()
    # a file changed in place (same size) and a file removed are found too, by run's sync
    path.write_bytes(whole[:-1] + bytes([whole[-1] ^ 1]))
    (path.parent / "dev.parquet").unlink()
    con = connect(results)
    try:
        (note,) = parquet_sync.sync(con, results, out)
        assert "SHA-256 differs" in note and "dev.parquet is missing" in note
        assert parquet_sync.sync(con, results, out) == []  # in step now
    finally:
        con.close()
    assert pl.read_parquet(path).equals(before)
    assert pl.read_parquet(path.parent / "dev.parquet").height == 2


def test_reexport_removes_parquet_of_a_split_that_is_gone(tiny_store: LocalStore,
                                                         tmp_path: Path) -> None:
    results, out = tmp_path / "r.duckdb", tmp_path / "out"
    export([good_probes()["tiny/pairs"]], tiny_store, results, out, progress=False)
    one_split = (GOOD / "pairs.rq").read_text().replace("# split: ?split", "# split: test")
    export([parse_probe(one_split, "pairs.rq")], tiny_store, results, out, progress=False)
    assert counts(results) == {("tiny/pairs", "test"): 8}
    assert sorted(p.name for p in (out / "tiny" / "pairs").iterdir()) == [
        "_kgprobe_export.json", "test.parquet"]


def test_write_parquet_keeps_nested_probe_folders(tmp_path: Path) -> None:
    df = pl.DataFrame({"split": ["test"], "x": [1]})
    write_parquet(tmp_path, "a/b", df)
    write_parquet(tmp_path, "a", df)
    assert (tmp_path / "a" / "b" / "test.parquet").is_file()
    assert (tmp_path / "a" / "test.parquet").is_file()


def test_missing_source_graph_is_an_error_and_nothing_is_written(tiny_store: LocalStore,
                                                                 tmp_path: Path) -> None:
    text = (GOOD / "hypernyms.rq").read_text().replace(
        "# graphs: [animals]", "# graphs: [animals, wordnet]").replace("tiny/hypernyms", "t/wn")
    needs_wordnet = parse_probe(text, "needs_wordnet.rq")
    results, out = tmp_path / "r.duckdb", tmp_path / "out"
    with pytest.raises(ProbeFileError) as info:
        export([*good_probes().values(), needs_wordnet], tiny_store, results, out,
               progress=False)
    msg = str(info.value)
    assert msg.startswith("needs_wordnet.rq:8: ")
    assert "wordnet" in msg and "python -m kg.build -s wordnet" in msg
    assert not results.exists() and not out.exists()


def test_failure_in_the_middle_keeps_earlier_rows(tiny_store: LocalStore, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "r.duckdb"
    probes = good_probes()
    export(list(probes.values()), tiny_store, results, None, progress=False)
    before = {name: rows(results, name) for name in probes}

    real = export_mod.instances_for

    def flaky(probe: Probe, store: Any, *rest: Any) -> pl.DataFrame:
        if probe.spec.name == "tiny/pairs":
            raise RuntimeError("endpoint went away")
        return real(probe, store, *rest)

    monkeypatch.setattr(export_mod, "instances_for", flaky)
    tiny_store.oxigraph.remove(DOG_PET)
    with pytest.raises(RuntimeError):
        export([probes["tiny/hypernyms"], probes["tiny/pairs"]], tiny_store, results, None,
               progress=False)
    assert rows(results, "tiny/pairs") == before["tiny/pairs"]
    assert rows(results, "tiny/features") == before["tiny/features"]
    gold = {r[3]: list(r[4]) for r in rows(results, "tiny/hypernyms")}
    assert gold["dog"] == ["mammal"]


def test_failed_write_rolls_back_the_delete(tiny_store: LocalStore, tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    probe = good_probes()["tiny/hypernyms"]
    export([probe], tiny_store, results, None, progress=False)
    before = rows(results)
    bad = instances_for(probe, tiny_store).with_columns(pl.lit("{not json").alias("fields"))
    con = connect(results)
    try:
        with pytest.raises(duckdb.Error):
            write_instances(con, probe.spec.name, bad)
    finally:
        con.close()
    assert rows(results) == before and len(before) == 5


def test_query_failing_at_run_time_keeps_earlier_rows(tiny_store: LocalStore,
                                                     tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    probe = good_probes()["tiny/pairs"]
    export([probe], tiny_store, results, None, progress=False)
    before = rows(results)
    broken = parse_probe(probe.query.replace(PAIRS_ID, "# id: ?parent"),
                         probe.path)
    with pytest.raises(ProbeFileError):
        export([broken], tiny_store, results, None, progress=False)
    assert rows(results) == before and len(before) == 8


HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("ready", flush=True)
time.sleep(60)
"""


def test_results_file_locked_by_another_process(tiny_store: LocalStore, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "r.duckdb"
    probes = list(good_probes().values())
    export(probes, tiny_store, results, None, progress=False)
    before = rows(results)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(results)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(ResultsError) as info:
            connect(results)
        msg = str(info.value)
        assert str(results) in msg and "locked" in msg and "--results" in msg
        assert str(holder.pid) in msg
        with pytest.raises(ResultsError):
            export(probes, tiny_store, results, None, progress=False)
    finally:
        holder.kill()
        holder.wait()
    assert rows(results) == before


# --- the command -----------------------------------------------------------------------------

def test_help_documents_every_option(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    parsers: list[argparse.ArgumentParser] = []
    real = argparse.ArgumentParser.parse_args

    def spy(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        parsers.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", spy)
    with pytest.raises(SystemExit):
        main(["--help"])
    capsys.readouterr()
    options = [a for a in parsers[0]._actions if a.option_strings]
    assert len(options) >= 10
    done = subprocess.run([sys.executable, "-m", "probes.engine.export", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for action in options:
        assert action.help and action.help != argparse.SUPPRESS, action.option_strings
        for flag in action.option_strings:
            assert flag in done.stdout
        assert " ".join(action.help.split()) in text
    for flag in ("--probe", "--queries", "--only-extra", "--store", "--endpoint", "--results",
                 "--out", "--no-parquet", "--list", "--quiet"):
        assert flag in done.stdout


def test_main_end_to_end_on_a_store_on_disk(tiny_store_path: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    results, out = tmp_path / "r.duckdb", tmp_path / "out"
    rc = main(["--store", str(tiny_store_path), "--results", str(results), "--out", str(out),
               "--queries", str(GOOD), "--only-extra", "--quiet"])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    expected = {("tiny/hypernyms", "test"): 5, ("tiny/pairs", "test"): 6,
                ("tiny/pairs", "dev"): 2, ("tiny/features", "test"): 3}
    assert counts(results) == expected
    table = {}
    for line in printed.out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("tiny/"):
            table[(cells[0], cells[1])] = int(cells[2].replace(",", ""))
            assert float(cells[3]) >= 0
    assert table == expected
    assert "| probe | split | rows | seconds |" in printed.out
    assert "exported 3 probe(s)" in printed.out
    for probe, split in expected:
        assert (out / probe / f"{split}.parquet").is_file()


def test_main_with_a_pattern_and_no_parquet(tiny_store_path: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    results, out = tmp_path / "r.duckdb", tmp_path / "out"
    rc = main(["--store", str(tiny_store_path), "--results", str(results), "--out", str(out),
               "--queries", str(GOOD), "--only-extra", "--quiet", "--no-parquet",
               "--probe", "tiny/p*"])
    assert rc == 0, capsys.readouterr().err
    assert counts(results) == {("tiny/pairs", "test"): 6, ("tiny/pairs", "dev"): 2}
    assert not out.exists()


def test_main_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--queries", str(GOOD), "--only-extra", "--list"]) == 0
    listed = capsys.readouterr().out
    for name in ("tiny/hypernyms", "tiny/pairs", "tiny/features"):
        assert name in listed


def test_main_without_a_store_says_how_to_build_it(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--store", str(tmp_path / "none"), "--results", str(tmp_path / "r.duckdb"),
               "--queries", str(GOOD), "--only-extra", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert str(tmp_path / "none") in err and "python -m kg.build" in err
    assert not (tmp_path / "r.duckdb").exists()


def test_main_reports_a_bad_probe_file_without_a_traceback(
        tiny_store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = Path(__file__).parent / "fixtures" / "probes" / "bad"
    rc = main(["--store", str(tiny_store_path), "--results", str(tmp_path / "r.duckdb"),
               "--queries", str(bad), "--only-extra", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and "Traceback" not in err
    assert str(bad) in err and not (tmp_path / "r.duckdb").exists()


def test_export_keeps_each_instance_s_provenance(tiny_store: LocalStore, tmp_path: Path) -> None:
    """instance_provenance: the bindings (IRI or literal, label, named graphs) and the triples
    linking an instance's values, from the tiny store's facts: dog is a subclass of mammal and
    of pet in the animals graph, labelled "dog" there."""
    probe = parse_probe("""# name: t/edges
# task: records
# split: test
# id: [?c, ?p]
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?c ?p ?child WHERE {
  ?c rdfs:subClassOf ?p . ?c rdfs:label ?child FILTER(LANG(?child) = "")
}""", "edges.rq")
    results = tmp_path / "r.duckdb"
    export([probe], tiny_store, results, None, progress=False)
    con = duckdb.connect(str(results), read_only=True)
    try:
        got = con.execute("SELECT i.fields->>'p', p.bindings::VARCHAR, p.triples::VARCHAR "
                          "FROM instances i JOIN instance_provenance p USING (probe, split, "
                          "instance_id) WHERE i.fields->>'c' = ?", [EX + "dog"]).fetchall()
    finally:
        con.close()
    animals = graph("animals").value
    assert sorted(g[0] for g in got) == [EX + "mammal", EX + "pet"]
    for parent, bindings, triples in got:
        by_var = {b["var"]: b for b in json.loads(bindings)}
        assert by_var["c"] == {"var": "c", "value": EX + "dog", "iri": True, "label": "dog",
                               "graphs": [animals]}
        assert by_var["child"]["iri"] is False and by_var["child"]["graphs"] == [animals]
        assert sorted(map(tuple, json.loads(triples))) == sorted([
            (EX + "dog", RDFS.subClassOf.value, parent, animals),
            (EX + "dog", RDFS.label.value, "dog", animals)])


def test_an_older_file_gains_the_provenance_table(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    con = connect(path)
    con.execute("DROP TABLE instance_provenance")
    con.close()
    con = connect(path)
    try:
        assert con.execute("SELECT count(*) FROM instance_provenance").fetchone() == (0,)
    finally:
        con.close()
