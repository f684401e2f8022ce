"""The OntoLAMA report: ``python -m eval.ontolama_report``.

Runs the metric files of ``eval/ontolama/`` over the results file and prints markdown:

1. **Zero-shot**: one row per model and dataset (ontology, Atomic or Complex SI), the accuracy
   (%) of every template x label-word set (T1 L1 ... T2 L3), their mean ± population std, the
   number of test instances scored (``n``: all of them, or the first N by instance id of a
   ``--limit`` run), the majority-class baseline on those instances and their share of
   positives (which shows whether a sample keeps the 1:1 balance);
2. **K-shot** (when ``python -m probes.kshot`` runs exist): one row per model, dataset, K and
   template x label set, the test accuracy (%) as mean ± std over the seeds, the number of
   seeds, ``n``, the zero-shot accuracy of the same template x label set and the majority
   baseline; and a PNG of accuracy against K, one line per dataset (error bars: the std over
   seeds), zero-shot drawn as K = 0, the majority-class baseline dashed;
3. **Runs**: wall time and throughput of each zero-shot run (``runs.wall_s``,
   ``runs.requests``).

A dataset run more than once with different ``--limit`` values gets one row per run.

>>> from probes.results import connect
>>> render(build(connect(":memory:"))).splitlines()[2][:40]
'No OntoLAMA runs in the results file: ex'
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from eval.plots import line_chart
from eval.sqlfile import MetricError, discover_metrics, run_metric
from kg import config
from probes.errors import ProbeError
from probes.results import connect

METRIC_DIR = Path(__file__).with_name("ontolama")
KIND_ORDER = {"atomic": 0, "complex": 1}


@dataclass
class RunInfo:
    """One finished subsumption run."""

    run_id: str
    model: str
    probe: str
    kshot: dict[str, Any] | None
    limit: int | None
    wall_s: float | None
    requests: int | None


@dataclass
class Results:
    """Metric rows by metric name and the runs they come from."""

    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    split: str = "test"

    def rows(self, metric: str) -> list[dict[str, Any]]:
        """The metric's rows of the report's split."""
        return [r for r in self.metrics.get(metric, []) if r["split"] == self.split]


def dataset(probe: str) -> str:
    """A probe's display name.

    >>> dataset("ontolama/go-complex"), dataset("other/x")
    ('go complex', 'other/x')
    """
    name = probe.removeprefix("ontolama/")
    onto, _, kind = name.rpartition("-")
    return f"{onto} {kind}" if probe.startswith("ontolama/") and onto else probe


def _order(probe: str) -> tuple[int, str]:
    kind = probe.rpartition("-")[2]
    return KIND_ORDER.get(kind, 2), probe


def _runs(con: duckdb.DuckDBPyConnection) -> dict[str, RunInfo]:
    rows = con.execute("""SELECT run_id, model, probe, config::VARCHAR, wall_s, requests
                          FROM runs WHERE task = 'subsumption' AND status = 'done'""").fetchall()
    out = {}
    for rid, model, probe, cfg, wall, requests in rows:
        c = json.loads(cfg or "{}")
        out[rid] = RunInfo(rid, model, probe, c.get("kshot"), c.get("limit"), wall, requests)
    return out


def build(con: duckdb.DuckDBPyConnection, split: str = "test",
          metric_dir: Path = METRIC_DIR) -> Results:
    """Run the OntoLAMA metrics and collect what the tables need."""
    res = Results(runs=_runs(con), split=split)
    for metric in discover_metrics([metric_dir]):
        cols, rows = run_metric(con, metric)
        res.metrics[metric.name] = [dict(zip(cols, r, strict=True)) for r in rows]
    return res


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _mean_std(mean: float | None, std: float | None, count: int) -> str:
    if mean is None:
        return "–"
    return _pct(mean) if count < 2 or std is None else f"{_pct(mean)} ± {_pct(std)}"


def _zero_shot_runs(res: Results) -> list[RunInfo]:
    runs = {r["run_id"] for r in res.rows("ontolama_zero_shot")}
    return sorted((res.runs[r] for r in runs if r in res.runs),
                  key=lambda i: (i.model, *_order(i.probe), i.limit or 0))


def combinations(res: Results) -> list[tuple[str, str]]:
    """The (template, label set) pairs of the zero-shot runs, sorted."""
    return sorted({(r["template"], r["label_set"]) for r in res.rows("ontolama_accuracy")
                   if r["run_id"] in res.runs and res.runs[r["run_id"]].kshot is None})


def _accuracy(res: Results) -> dict[tuple[str, str, str], float]:
    """(run_id, template, label set) -> accuracy."""
    return {(r["run_id"], r["template"], r["label_set"]): r["value"]
            for r in res.rows("ontolama_accuracy")}


def _baseline(res: Results) -> dict[str, dict[str, Any]]:
    return {r["run_id"]: r for r in res.rows("ontolama_majority_baseline")}


def zero_shot_table(res: Results) -> str:
    """Accuracy (%) per template x label set, mean ± std, n, majority baseline."""
    runs = _zero_shot_runs(res)
    if not runs:
        return "No zero-shot runs."
    combos = combinations(res)
    acc, base = _accuracy(res), _baseline(res)
    summary = {r["run_id"]: r for r in res.rows("ontolama_zero_shot")}
    models = {i.model for i in runs}
    head = (["model"] if len(models) > 1 else []) + ["dataset", "n"] + [
        f"{t} {s}" for t, s in combos] + ["mean ± std", "majority", "positives"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * (len(head) - len(combos) - 4) + "---:|" * (len(combos) + 4)]
    for info in runs:
        z, b = summary[info.run_id], base.get(info.run_id, {})
        cells = ([info.model] if len(models) > 1 else []) + [dataset(info.probe), f"{z['n']:,}"]
        cells += [_pct(acc.get((info.run_id, t, s))) for t, s in combos]
        cells += [_mean_std(z["value"], z["std"], z["combinations"]), _pct(b.get("value")),
                  _pct(b.get("positive_share"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _zero_shot_at(res: Results, model: str, probe: str, template: str, label_set: str
                  ) -> tuple[float, int] | None:
    """The zero-shot accuracy and n of one template x label set (the largest run)."""
    acc = [(r["n"], r["value"]) for r in res.rows("ontolama_accuracy")
           if (info := res.runs.get(r["run_id"])) and info.kshot is None
           and info.model == model and info.probe == probe
           and (r["template"], r["label_set"]) == (template, label_set)]
    if not acc:
        return None
    n, value = max(acc)
    return value, n


def _kshot_baseline(res: Results, row: dict[str, Any]) -> float | None:
    base = _baseline(res)
    for info in res.runs.values():
        k = info.kshot or {}
        if (info.model, info.probe, k.get("k"), k.get("template"), k.get("label_set")) == (
                row["model"], row["probe"], row["k"], row["template"], row["label_set"]) \
                and info.run_id in base:
            return base[info.run_id]["value"]
    return None


def _kshot_rows(res: Results) -> list[dict[str, Any]]:
    return sorted(res.rows("ontolama_kshot"),
                  key=lambda r: (r["model"], *_order(r["probe"]), r["template"], r["label_set"],
                                 r["k"]))


def kshot_table(res: Results) -> str:
    """K-shot accuracy (%), mean ± std over seeds, beside zero-shot on the same prompt."""
    rows = _kshot_rows(res)
    if not rows:
        return "No K-shot runs."
    models = {r["model"] for r in rows}
    head = (["model"] if len(models) > 1 else []) + [
        "dataset", "K", "prompt", "accuracy", "seeds", "n", "zero-shot (n)", "majority"]
    align = ["---"] * (len(models) > 1) + ["---", "---:", "---"] + ["---:"] * 5
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        zs = _zero_shot_at(res, r["model"], r["probe"], r["template"], r["label_set"])
        cells = ([r["model"]] if len(models) > 1 else []) + [
            dataset(r["probe"]), str(r["k"]), f"{r['template']} {r['label_set']}",
            _mean_std(r["value"], r["std"], r["seeds"]), str(r["seeds"]), f"{r['n']:,}",
            f"{_pct(zs[0])} ({zs[1]:,})" if zs else "–", _pct(_kshot_baseline(res, r))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def kshot_curves(res: Results) -> dict[str, list[tuple[float, float, float | None]]]:
    """Per dataset (and prompt, and model when there are several): (K, accuracy, std) points,
    K = 0 being the zero-shot accuracy of the same template x label set when it was run."""
    rows = _kshot_rows(res)
    models = {r["model"] for r in rows}
    out: dict[str, list[tuple[float, float, float | None]]] = {}
    for r in rows:
        name = f"{dataset(r['probe'])} ({r['template']} {r['label_set']})"
        if len(models) > 1:
            name = f"{r['model']}: {name}"
        if name not in out:
            zs = _zero_shot_at(res, r["model"], r["probe"], r["template"], r["label_set"])
            out[name] = [(0, zs[0], None)] if zs else []
        out[name].append((r["k"], r["value"], r["std"] if r["seeds"] > 1 else None))
    return out


def kshot_baselines(res: Results) -> dict[str, float]:
    """Per dataset of the K-shot runs, the majority-class baseline on their test instances."""
    models = {r["model"] for r in _kshot_rows(res)}
    out = {}
    for r in _kshot_rows(res):
        base = _kshot_baseline(res, r)
        if base is not None:
            prefix = f"{r['model']}: " if len(models) > 1 else ""
            out.setdefault(f"{prefix}{dataset(r['probe'])}: majority class", base)
    return out


def kshot_plot(res: Results, path: Path) -> Path | None:
    """The K-shot curve PNG (None when there are no K-shot runs)."""
    curves = kshot_curves(res)
    if not curves:
        return None
    return line_chart(curves, f"OntoLAMA K-shot accuracy ({res.split})", path,
                      xlabel="K (examples per class; 0 = zero-shot)", ylabel="accuracy",
                      baselines=kshot_baselines(res))


def _rate(count: int | None, wall: float | None) -> str:
    return "–" if not wall or count is None else f"{count / wall:.2f}"


def runs_table(res: Results) -> str:
    """Wall time and throughput of the zero-shot runs."""
    runs = _zero_shot_runs(res)
    if not runs:
        return "No zero-shot runs."
    n = {r["run_id"]: r["n"] for r in res.rows("ontolama_zero_shot")}
    lines = ["| model | dataset | run | n | requests | wall s | requests/s | instances/s |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for i in runs:
        req, wall = i.requests, i.wall_s
        lines.append(f"| {i.model} | {dataset(i.probe)} | {i.run_id} | {n[i.run_id]:,} | "
                     f"{'–' if req is None else f'{req:,}'} | "
                     f"{'–' if wall is None else f'{wall:.1f}'} | {_rate(req, wall)} | "
                     f"{_rate(n[i.run_id], wall)} |")
    return "\n".join(lines)


def render(res: Results, plot: Path | None = None) -> str:
    """The whole report as markdown; ``plot`` is the K-shot PNG, when one was written."""
    parts = ["# OntoLAMA report", ""]
    if not res.runs:
        parts.append("No OntoLAMA runs in the results file: export the probes (python -m "
                     "probes.export -p 'ontolama/*') and score them (python -m probes.run -p "
                     "ontolama/NAME) first.")
        return "\n".join(parts)
    parts += [f"Accuracy (%) on {res.split}. A class's score is the mean of its label words' "
              "scores; a tie counts as wrong. mean ± std: over the template x label-word "
              "combinations (zero-shot) or over the seeds (K-shot), population std. n: "
              "instances scored. majority: always answering the more frequent class on them; "
              "positives: their share of label 1.", "", "## Zero-shot", "",
              zero_shot_table(res), "", "## K-shot", "", kshot_table(res), ""]
    if plot is not None:
        parts += [f"![K-shot accuracy]({plot.name})", ""]
    parts += ["## Runs", "", runs_table(res)]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.ontolama_report",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=None,
                        help="results DuckDB file (default: $KGPROBE_RESULTS)")
    parser.add_argument("--split", default="test", help="evaluation split (default test)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for ontolama_report.md and ontolama_kshot.png (default: "
                        "$KGPROBE_HOME/reports)")
    args = parser.parse_args(argv)
    results = str(args.results or config.results_path())
    out = args.out or config.home() / "reports"
    try:
        con = connect(results, read_only=True)
        try:
            res = build(con, args.split)
        finally:
            con.close()
    except (MetricError, ProbeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    plot = kshot_plot(res, out / "ontolama_kshot.png")
    text = render(res, plot)
    (out / "ontolama_report.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"\nwrote {out / 'ontolama_report.md'}" + (f" and {plot}" if plot else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
