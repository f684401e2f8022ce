"""Building, counting and exporting the OntoLAMA datasets (``python -m
probes.benchmarks.ontolama``)."""

from __future__ import annotations

import fnmatch
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from kg import config
from kg.store import KnowledgeStore
from kg.vocab import KGP, OWL, graph
from probes.benchmarks.ontolama.common import (
    DEFAULT_SEED,
    PAPER,
    SPLITS,
    _settings,
    control,
    split_proportions,
)
from probes.benchmarks.ontolama.complex import complex_instances
from probes.benchmarks.ontolama.splits import balance, equalise, split_by_group, split_per_class
from probes.engine import parquet_sync
from probes.engine.errors import ProbeError
from probes.engine.export import write_instances, write_parquet
from probes.engine.instances import instances_for
from probes.engine.spec import Probe
from probes.results import connect


def atomic_instances(probe: Probe, store: KnowledgeStore) -> tuple[pl.DataFrame, dict[str, int]]:
    """An atomic probe's balanced dataset, split per class by exact counts, and the counts of
    each kind."""
    df, counts = balance(instances_for(probe, store), probe)
    seed = int(probe.spec.seed if probe.spec.seed is not None else DEFAULT_SEED)
    if control(probe, "super_class"):  # hypotheses disjoint between the splits
        return split_by_group(equalise(df, seed), split_proportions(probe), seed,
                              "super_class"), counts
    return split_per_class(equalise(df, seed), split_proportions(probe), seed), counts


def instances(probe: Probe, store: KnowledgeStore) -> pl.DataFrame:
    """The probe's instances, as :func:`probes.engine.instances.instances_for` shapes them, with
    OntoLAMA's extra steps (balance and per-class splits; the Python builder for complex SI)."""
    cfg = _settings(probe)
    if cfg["kind"] == "atomic":
        return atomic_instances(probe, store)[0]
    return complex_instances(probe, store)[0]



@dataclass
class BuildReport:
    probe: str
    counts: dict[str, int]
    splits: dict[str, int]
    seconds: float
    notes: list[str] = field(default_factory=list)


def build(probes: list[Probe], store: KnowledgeStore, results: str | Path | None = None,
          out_dir: Path | None = None) -> list[BuildReport]:
    """Make every probe's dataset and write it to the results file (and Parquet).

    A probe whose source is not in the store, or whose Complex SI reasoning fails, gets a
    report with the reason and no rows written; the other probes are still built."""
    have = set(store.graphs())
    con = connect(results)
    reports = []
    try:
        for probe in probes:
            t0 = time.perf_counter()
            cfg = _settings(probe)
            missing = [g for g in probe.spec.graphs if graph(g).value not in have]
            if missing:
                reports.append(BuildReport(probe.spec.name, {}, {}, 0.0, [
                    f"not built: source {', '.join(missing)} is not in the store "
                    f"(python -m kg.build {' '.join('-s ' + m for m in missing)})"]))
                continue
            try:
                if cfg["kind"] == "atomic":
                    df, counts = atomic_instances(probe, store)
                    notes = []
                    if sum(v for k, v in counts.items() if k != "positive") < counts.get(
                            "positive", 0):
                        notes.append("too few negative candidates for a 1:1 balance")
                else:
                    df, rep = complex_instances(probe, store)
                    counts = {"positive": rep.positives, "negative": rep.negatives}
                    notes = rep.notes()
            except ProbeError as e:
                reports.append(BuildReport(probe.spec.name, {}, {}, time.perf_counter() - t0,
                                           [f"not built: {e}"]))
                continue
            write_instances(con, probe.spec.name, df, probe.instances_hash)
            if out_dir is not None:
                write_parquet(out_dir, probe.spec.name, df, parquet_sync.stamp(
                    con, probe.spec.name, Path(results or config.results_path())))
            splits = dict(Counter(df["split"].to_list()))
            reports.append(BuildReport(probe.spec.name, counts, splits,
                                       time.perf_counter() - t0, notes))
    finally:
        con.close()
    return reports


def format_build(reports: list[BuildReport]) -> str:
    lines = ["| probe | counts | train / dev / test | seconds |", "|---|---|---:|---:|"]
    for r in reports:
        counts = ", ".join(f"{k} {v:,}" for k, v in r.counts.items()) or "-"
        sp = " / ".join(f"{r.splits.get(s, 0):,}" for s in SPLITS)
        lines.append(f"| {r.probe} | {counts} | {sp} | {r.seconds:.1f} |")
    notes = [f"- {r.probe}: {n}" for r in reports for n in r.notes]
    return "\n".join(lines + (["", *notes] if notes else []))


def _split_counts(con: Any, probe: str) -> tuple[int, int, int] | None:
    rows = dict(con.execute("SELECT split, COUNT(*) FROM instances WHERE probe = ? "
                            "GROUP BY split", [probe]).fetchall())
    if not rows:
        return None
    return tuple(int(rows.get(s, 0)) for s in SPLITS)  # type: ignore[return-value]


def _fmt(t: tuple[int, int, int] | None) -> str:
    return "/".join(f"{x:,}" for x in t) if t else "-"


def stats(store: KnowledgeStore, results: str | Path | None = None) -> str:
    """A Markdown table: our dataset sizes beside the paper's Table 2, per ontology, and the
    positives per split (``kgprobe ontolama stats`` adds the shortcut ceiling of
    :func:`eval.ontolama_report.ceiling_lines`)."""
    con = connect(results, read_only=True)
    have = set(store.graphs())
    sources = ["schemaorg", "doid", "foodon", "go", "pizza"]
    lines = ["| ontology | named concepts | anchors (equiv. axioms) | Atomic SI train/dev/test | "
             "Complex SI train/dev/test | paper: concepts | paper: equiv. | "
             "paper: Atomic SI | paper: Complex SI |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    try:
        for s in sources:
            if graph(s).value not in have:
                continue
            n = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph(s).value}> {{ "
                            f"?c a <{KGP.NamedClass.value}> }} }}")[0]["n"]
            eq = store.query(f"""SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph(s).value}> {{
                ?c a <{KGP.NamedClass.value}> ; <{OWL.equivalentClass.value}> ?e
                FILTER(isBlank(?e)) }} }}""")[0]["n"]
            atomic = _split_counts(con, f"ontolama/{s}-atomic")
            complex_ = _split_counts(con, f"ontolama/{s}-complex")
            p = PAPER.get(s)
            paper = ([f"{p.concepts:,}", f"{p.equivalences:,}" if p.equivalences else "-",
                      _fmt(p.atomic), _fmt(p.complex)] if p else ["-", "-", "-", "-"])
            lines.append(f"| {s} | {n:,} | {eq:,} | {_fmt(atomic)} | {_fmt(complex_)} | "
                         + " | ".join(paper) + " |")
        lines += ["", "Positives per split (every split of every dataset must be exactly 50 %):",
                  "", "| dataset | train | dev | test |", "|---|---:|---:|---:|"]
        rows = con.execute("""SELECT probe, split, count(*), sum((gold[1] = '1')::INTEGER)
                              FROM instances WHERE probe LIKE 'ontolama/%' GROUP BY ALL
                              ORDER BY ALL""").fetchall()
        share: dict[str, dict[str, str]] = defaultdict(dict)
        for probe, split, n, pos in rows:
            share[probe][split] = f"{n:,} ({100 * pos / n:.1f} %)"
        for probe in sorted(share):
            lines.append(f"| {probe} | " + " | ".join(share[probe].get(s, "-") for s in SPLITS)
                         + " |")
    finally:
        con.close()
    return "\n".join(lines)


def export_files(results: str | Path | None, out_dir: Path,
                 patterns: list[str] | None = None) -> list[Path]:
    """OntoLAMA's own JSON-lines files, ``<out>/<ontology>-<kind>-SI/<split>.jsonl``
    (splits train, validation, test as on the Hugging Face hub)."""
    con = connect(results, read_only=True)
    paths = []
    try:
        names = [r[0] for r in con.execute("SELECT DISTINCT probe FROM instances WHERE probe "
                                           "LIKE 'ontolama/%' ORDER BY probe").fetchall()]
        for name in names:
            if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
                continue
            short = name.split("/", 1)[1]
            onto, _, kind = short.rpartition("-")
            folder = out_dir / f"{onto}-{kind}-SI"
            folder.mkdir(parents=True, exist_ok=True)
            rows = con.execute("SELECT split, fields FROM instances WHERE probe = ? "
                               "ORDER BY split, instance_id", [name]).fetchall()
            by_split: dict[str, list[str]] = defaultdict(list)
            for split, fields in rows:
                f = json.loads(fields)
                rec = {"v_sub_concept": f["sub"], "v_super_concept": f["super"],
                       "label": int(f["label"]),
                       "axiom": f.get("axiom") or
                       f"SubClassOf(<{f['sub_class']}> <{f['super_class']}>)"}
                if "anchor_axiom" in f:
                    rec["anchor_axiom"] = f["anchor_axiom"]
                by_split[split].append(json.dumps(rec, ensure_ascii=False))
            for split, recs in by_split.items():
                path = folder / f"{'validation' if split == 'dev' else split}.jsonl"
                tmp = path.with_suffix(".jsonl.tmp")
                tmp.write_text("\n".join(recs) + "\n", encoding="utf-8")
                tmp.replace(path)
                paths.append(path)
    finally:
        con.close()
    return paths
