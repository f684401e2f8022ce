"""The ParaRel report: ``python -m eval.pararel_report`` (``kgprobe pararel report``).

SQL over the results file only (the metric files of ``eval/pararel``). Per finished run of a
``pararel/*`` probe, one table: per relation and over all of them (the mean over relations, as
the paper averages), the consistency over the graph's edges (the authors' a/an filter applied)
and its split by edge type (syntactic, lexical, both), the accuracy under the LAMA pattern and
the consistent accuracy (right under every pattern), each accuracy with its 95 % interval over
facts (Wilson), and the paper's majority baseline on the same facts; then, on the facts of
the held-out part of a seeded split by subject, the model beside the shortcut ceiling, and per
probe the shortcut panel (model-free rules fitted on that split's train part). Which answer the
numbers count is the probe's: ``pararel/pararel`` (and ``-sample``) whole statements ranked by
(pseudo-)log-likelihood, ``pararel/pararel-masked`` the paper's [MASK] protocol (docs/pararel.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from eval.intervals import stratified_bootstrap_ci
from eval.report import Rendered, Rows, report_command
from eval.sqlfile import MetricError
from eval.stats import bootstrap_ci, proportion_ci
from kg import options

METRIC_DIR = Path(__file__).with_name("pararel")


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _ci(values: Sequence[float]) -> str:
    """Wilson over 0/1 values, else the percentile bootstrap; – without values.

    >>> _ci([1.0, 0.0, 1.0, 1.0])
    '0.301–0.954'
    """
    if not values:
        return "–"
    ci = (proportion_ci(int(sum(values)), len(values))
          if all(v in (0.0, 1.0) for v in values) else bootstrap_ci(values))
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _ci_of(facts: Sequence[dict[str, Any]], column: str, over_relations: bool) -> str:
    """The interval of one relation's share (Wilson), or of the mean over relations of their
    shares (the stratified bootstrap: the value the `all` row shows, not the pooled share)."""
    if not over_relations:
        return _ci([float(r[column]) for r in facts])
    groups: dict[str, list[float]] = {}
    for r in facts:
        groups.setdefault(str(r["relation"]), []).append(float(r[column]))
    ci = stratified_bootstrap_ci(list(groups.values()))
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _by(rows: list[dict[str, Any]], run: str) -> dict[str, dict[str, Any]]:
    return {str(r["relation"]): r for r in rows if r.get("run_id") == run}


def run_section(con: duckdb.DuckDBPyConnection, rows: Rows, run: str) -> list[str]:
    """The markdown of one run."""
    model, probe = con.execute("SELECT model, probe FROM runs WHERE run_id = ?",
                               [run]).fetchone() or ("?", "?")
    cons = _by(rows.get("pararel_consistency", []), run)
    acc = _by(rows.get("pararel_accuracy", []), run)
    group = _by(rows.get("pararel_consistent_accuracy", []), run)
    majority = {str(r["relation"]): r for r in rows.get("pararel_majority_baseline", [])
                if r["probe"] == probe}
    facts = [r for r in rows.get("pararel_facts", []) if r["run_id"] == run]
    parts = [f"## {model} on {probe} (run {run})", "",
             "| relation | facts | consistency | syntactic | lexical | both | accuracy | 95% CI "
             "| consistent accuracy | 95% CI | majority: accuracy |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    relations = sorted({str(r["relation"]) for r in facts}, key=lambda c: int(c[1:]))
    for rel in [*relations, "all"]:
        mine = facts if rel == "all" else [r for r in facts if r["relation"] == rel]
        c, a, g = cons.get(rel, {}), acc.get(rel, {}), group.get(rel, {})
        name = "**all (mean over relations)**" if rel == "all" else rel
        parts.append(
            f"| {name} | {len(mine):,} | {_f(c.get('value'))} | {_f(c.get('syntactic'))} | "
            f"{_f(c.get('lexical'))} | {_f(c.get('both_changes'))} | {_f(a.get('value'))} | "
            f"{_ci_of(mine, 'lama_correct', rel == 'all')} | {_f(g.get('value'))} | "
            f"{_ci_of(mine, 'consistent_correct', rel == 'all')} | "
            f"{_f(majority.get(rel, {}).get('value'))} |")
    parts += ["", "Intervals over facts (for `all`, whose value is the mean over relations: the "
              "bootstrap that resamples each relation's facts within the relation, 1,000 "
              "seeded resamples); the majority "
              "baseline's consistency is 1 by construction.", ""]
    ceiling = [r for r in rows.get("pararel_shortcut_ceiling", []) if r["run_id"] == run]
    for c in ceiling:
        n = int(c["n"])
        parts += [f"Beside the shortcut ceiling, on the {n:,} facts of the held-out test part "
                  "of the split by subject (pooled): model accuracy (LAMA pattern) "
                  f"{_share(c['model_accuracy'], n)}; shortcut ceiling "
                  f"{_share(c['value'], n)} (`{c['rule']}`, chosen on {c['chosen_on']}); "
                  f"majority baseline {_share(c['majority'], n)}; the best rule on these "
                  f"facts themselves {_f(c['best_value'])} (`{c['best_rule']}`, chosen on "
                  "their labels, biased upward).", ""]
    return parts


def _share_ci(value: float | None, n: int) -> str:
    """The 95 % Wilson interval of a share of n facts (of value x n, rounded: a rule's expected
    accuracy counts a tie among k candidates 1/k); – without facts.

    >>> _share_ci(0.5, 10)
    '0.237–0.763'
    """
    ci = None if value is None or not n else proportion_ci(round(float(value) * n), n)
    return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _share(value: float | None, n: int) -> str:
    """A share of n facts with its interval and n.

    >>> _share(0.5, 10)
    '0.500 (0.237–0.763, n = 10)'
    """
    return "–" if value is None else f"{value:.3f} ({_share_ci(value, n)}, n = {n:,})"


PANEL_NOTE = ("Model-free rules (eval/metrics/_shortcuts.sql, docs/shortcuts.md) fitted on the "
              "train part of a seeded split of the facts by subject (MD5(subject|42): train "
              "10/16, dev 3/16, test 3/16; no subject in two parts; eval/pararel/"
              "_shortcut_split.sql, docs/pararel.md) and scored on each part, pooled over its "
              "facts (train in-sample); `mean over relations` averages the test part's "
              "relations, as the accuracy above does; chosen: the ceiling's rule, the best on "
              "dev.")


def panel_section(rows: Rows, probe: str) -> list[str]:
    """The shortcut panel of one probe (no model): one row per rule."""
    panel = [r for r in rows.get("pararel_shortcut_panel", []) if r["probe"] == probe]
    if not panel:
        return []
    by = {(str(r["rule"]), str(r["split"])): r for r in panel}
    parts = [f"## Shortcut panel of {probe}", "", PANEL_NOTE, "",
             "| rule | train | dev | test | 95% CI | n | mean over relations | chosen |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for rule in sorted({str(r["rule"]) for r in panel}):
        test = by.get((rule, "test"), {})
        n = int(test.get("n") or 0)
        chosen = any(r["chosen"] for (ru, _), r in by.items() if ru == rule)
        parts.append(f"| {rule} | {_f(by.get((rule, 'train'), {}).get('value'))} | "
                     f"{_f(by.get((rule, 'dev'), {}).get('value'))} | "
                     f"{_f(test.get('value'))} | {_share_ci(test.get('value'), n)} | {n:,} | "
                     f"{_f(test.get('relation_mean'))} | {'yes' if chosen else ''} |")
    return [*parts, ""]


def render(con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
    """The report's markdown (one section per finished ParaRel run)."""
    runs = sorted({str(r["run_id"]) for r in rows.get("pararel_facts", [])})
    if not runs:
        raise MetricError("no finished ParaRel run in this results file: export and score "
                          "first, e.g. `kgprobe export -p pararel/pararel-sample` and `kgprobe "
                          "run -m smollm2-135m -p pararel/pararel-sample` (needs `kgprobe build "
                          "--benchmark pararel`)")
    parts = ["# ParaRel report", "",
             "ParaRel (Elazar et al. 2021): consistency = the share of (fact, graph edge) pairs "
             "whose two patterns give the same answer (a pattern whose a/an does not fit the "
             "gold object skipped); accuracy = right under the LAMA pattern (pattern 0); "
             "consistent accuracy = right under every pattern; as the authors' "
             "encode_consistency_probe.py computes them (docs/pararel.md).", ""]
    probes = []
    for run in runs:
        parts += run_section(con, rows, run)
        probe = next(str(r["probe"]) for r in rows["pararel_facts"] if r["run_id"] == run)
        if probe not in probes:
            probes.append(probe)
    for probe in probes:
        parts += panel_section(rows, probe)
    return Rendered("\n".join(parts), [])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe pararel report`` / ``python -m eval.pararel_report``."""
    parser.description = __doc__.split("\n\n")[0].replace("\n", " ")
    options.add_results(parser)
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for pararel.md (default: a new folder per call under "
                        "$KGPROBE_HOME/reports)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    return report_command(args.results, "pararel", argv, args.out, [METRIC_DIR], render,
                          "pararel.md")


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.pararel_report", add_arguments, argv)


if __name__ == "__main__":
    raise SystemExit(main())
