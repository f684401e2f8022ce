"""The semantic-relation report (Cao et al.) laid out like the paper: ``python -m
eval.semrel_report``.

Runs the metric files of ``eval/semrel/`` over the results file (opened read-only) and prints
markdown:

1. one table per relation (HYP, HPO, HOL, MER, ANT, SYN), a row per agent (humans first, then
   the models): soundness S, completeness C, symmetry M_1/M_5/M_10 (ANT, SYN) or asymmetry
   A_1/A_5/A_10 (the others), prototypicality P, out-of-relatum (OOR) rate, mean rank of the
   first non-OOR answer, n (probes scored for S); below them the constant-answer baseline
   (``semrel_constant_answer``: S and C of the other words' most frequent relata, fitted
   leave-one-out) and a note on how it is fitted;
2. the macro / micro averages of the same measures, AuDC per agent and the humans' response
   entropy R per relation;
3. the humans' figures of the paper beside ours (:data:`PAPER_HUMAN_S`, ...);
4. the significance tests of :func:`eval.stats.compare_with_humans` (``--no-stats`` skips them);
5. the questionable inputs (``semrel_bad_inputs``, ``semrel_empty_sets``).

It writes ``semrel_report.md`` and PNGs into ``--out`` (default ``.kgprobe/reports/semrel``):
``soundness.png`` (relations x agents), and per agent ``distinguishability_<agent>.png`` (D_k(r,
s) over k, one panel per relation r) and ``d_matrix_<agent>.png`` (AuDC(r, s), 6 x 6).

The figures and the data it reads: :mod:`eval.semrel_results`; the tables and plots:
:mod:`eval.semrel_tables`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import polars as pl

from eval import sqlfile
from eval.report import Render, Rendered, Rows, report_folder, run_report
from eval.semrel_results import (
    ABSENT,
    CONFLICTS,
    CONSTANT_NOTE,
    ENTROPY_POPULATIONS,
    METRIC_DIR,
    MODEL_LISTS,
    NO_RUNS,
    RANKS,
    TARGETS,
    Results,
    Settings,
    build,
    check_vocab,
    declared_models,
)
from eval.semrel_tables import (
    audc_table,
    bad_input_tables,
    constant_note,
    d_lowest,
    entropy_table,
    entropy_test_table,
    oor_table,
    paper_table,
    plots,
    prompt_table,
    relation_table,
    stats_table,
    summary_table,
    tables_1_2,
)
from eval.sqlfile import MetricError
from kg import config, options
from kg.relations import RELATION_NAMES, RELATIONS

# --- the report -----------------------------------------------------------------------------

def render(res: Results, images: list[Path] | None = None, stats: bool = True) -> str:
    """The whole report as markdown."""
    st = res.settings
    parts = ["# Semantic relations report (Cao et al.)", "",
             "Agents: " + ", ".join(res.agents) + f". Shared vocabulary: {st.vocab_label} "
             f"({', '.join(st.vocab_models) or 'none declared'}); model lists: "
             f"{st.model_lists}; W^r: {st.targets}; conflicting relata: {st.conflicts}; "
             f"human R (Table 3, footnote 15) over: {st.entropy_population}; "
             f"rho of an absent relatum: {st.absent}; rank base: {st.rank} "
             "(eval/semrel/_views.sql). S soundness, C completeness (eqs. 11-14, per word then "
             "per relation), M_k symmetry (ANT, SYN), A_k asymmetry (the others; models "
             "only), P prototypicality (models against humans), words = W^r scored for S; "
             "S 95% CI: percentile bootstrap over the words (1,000 seeded resamples). Chance "
             "is about 0 (a top answer drawn from the vocabulary); humans are the ceiling. "
             + CONSTANT_NOTE, ""]
    for r in RELATIONS:
        table = relation_table(res, r)
        parts += [f"## {r} ({RELATION_NAMES[r]})", "", table, ""]
        if table.startswith("|"):
            parts += [constant_note(res, r), ""]
    parts += ["## Soundness per prompt (Appendix F)", "",
              "S computed as if each prompt were the only one in the set (Appendix F): per "
              "prompt the mean over the words of its Precision@1; spread: min–max and the "
              "population sd across the relation's prompts (eval/semrel/"
              "semrel_soundness_per_prompt.sql, which also gives C per prompt).", "",
              prompt_table(res), ""]
    parts += ["## Averages", "",
              "macro = the mean over relations (n = relations), micro = the mean over "
              "per-word scores (section 9).", "", summary_table(res), "",
              "## AuDC (distinguishability, eqs. 24-28)", "", audc_table(res), "",
              *(line for a in res.agents if (line := d_lowest(res, a))), "",
              "## Out-of-relatum statistics (sections 6.1, 8)", "", oor_table(res), "",
              "## Tables 1 and 2 beside the paper's", "", tables_1_2(res), "",
              "## Table 3, response entropy and the prototypicality probe set", "",
              entropy_table(res), "",
              "## The paper's human figures beside ours", "", paper_table(res), "",
              "## Footnote 15: Mann-Whitney U between relations' R", "",
              entropy_test_table(res.entropy if stats else None), ""]
    parts += ["## Significance (section 7.3, Appendix F)", ""]
    if stats:
        parts += ["McNemar (S, M5 / A5), Wilcoxon (C; P between models), model against humans "
                  "and model against model; Levene across one agent's prompts (per-word S of "
                  "each prompt); * p < 0.05.", "",
                  stats_table(res.stats if res.stats is not None else pl.DataFrame()), ""]
    else:
        parts += ["Skipped (--no-stats).", ""]
    parts += ["## Bad inputs", "", bad_input_tables(res), ""]
    for p in images or []:
        parts += [f"![{p.stem}]({p.name})", ""]
    return "\n".join(parts).rstrip() + "\n"


def render_report(results: Path, stats: bool, settings: Settings) -> Render:
    """The render function of the report runner: tables, statistics and figures; no semrel
    runs is a :class:`MetricError` (nothing is written)."""

    def render_fn(con: duckdb.DuckDBPyConnection, rows: Rows, out: Path) -> Rendered:
        res = build(con, stats=stats, settings=settings, rows=rows)
        if not res.agents:
            raise MetricError(NO_RUNS.format(path=results))
        check_vocab(con, settings)
        images = plots(res, out)
        return Rendered(render(res, images, stats=stats), images)

    return render_fn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe semrel report`` / ``python -m eval.semrel_report``."""
    parser.description = " ".join(  # the whole first paragraph
        __doc__.split("\n\n")[0].split()).replace("``", "")
    options.add_results(parser, help="results DuckDB file, opened read-only (default: "
                        "$KGPROBE_RESULTS or .kgprobe/results.duckdb)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for semrel_report.md and the PNGs (default: a new folder "
                        "per call, $KGPROBE_HOME/reports/semrel-<time>-<hash>)")
    parser.add_argument("--no-stats", action="store_true",
                        help="skip the significance tests")
    parser.add_argument("--metric-timeout", type=float, default=sqlfile.METRIC_TIMEOUT_S,
                        metavar="SECONDS", help="the most seconds one metric may run, as "
                        f"`kgprobe report`'s (default: {sqlfile.METRIC_TIMEOUT_S:g}; 0: no "
                        "limit); a metric stopped there names this option")
    parser.add_argument("--absent", choices=ABSENT, default="present",
                        help="rho of a relatum absent from L_k (eq. 24): present = the mean "
                        "over the relata in L_k, 1 if none (default); one = each absent "
                        "relatum counts 1; skip = absent relata left out")
    parser.add_argument("--rank", choices=RANKS, default="zero",
                        help="rho = (rank - 1) / k (zero, default) or rank / k (one)")
    parser.add_argument("--model-lists", choices=MODEL_LISTS, default="full",
                        help="full: a model's own ranking (default); shared: filtered to the "
                        "shared vocabulary and re-ranked")
    parser.add_argument("--targets", choices=TARGETS, default="answered",
                        help="W^r: the words the annotators answered (default; section 6.1), "
                        "or the targets of the reconstructed tuples")
    parser.add_argument("--conflicts", choices=CONFLICTS, default="all",
                        help="relationally ambiguous relata (section 4.3): removed from every "
                        "set, tuple relata included (all, default), or a tuple relatum kept in "
                        "its tuple's relation (keep-tuples)")
    parser.add_argument("--entropy-population", choices=ENTROPY_POPULATIONS, default="file",
                        help="the human answers of Table 3 and footnote 15: every loaded answer "
                        "of the response file (file, default: the population of section 6.1's "
                        "counts) or only those of W^r (targets)")
    parser.set_defaults(handler=run)


def main(argv: list[str] | None = None) -> int:
    return options.run_command("python -m eval.semrel_report", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """``kgprobe semrel report``: the report printed and written."""
    results = Path(args.results or config.results_path())
    if args.metric_timeout < 0:
        return options.error_line(
            f"--metric-timeout must be a positive number (got {args.metric_timeout:g})")
    sqlfile.METRIC_TIMEOUT_S = args.metric_timeout or None
    if not results.exists():
        return options.error_line(NO_RUNS.format(path=f"{results} (no such file)"))
    out = report_folder(args.out, "semrel", argv)
    label, models = declared_models()
    settings = Settings(models, label, args.absent, args.rank, args.model_lists, args.targets,
                        args.conflicts, args.entropy_population)
    report, rendered = run_report(results, [METRIC_DIR],
                                  render_report(results, not args.no_stats, settings), out,
                                  "semrel_report.md", prepare=settings.apply)
    print(rendered.markdown)
    for path in [report, *rendered.figures]:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
