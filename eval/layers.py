"""Linear probes per layer: accuracy and control accuracy with intervals, selectivity, charts.

Reads what ``kgprobe layers`` writes (``layer_probes``, ``layer_predictions``) through
eval/layers/layer_accuracy.sql: per run (model x probe), layer and position, the test accuracy
of the probe and of the control probe over the test instances, each with its Wilson interval
(:func:`eval.stats.proportion_ci`), and selectivity = accuracy - control accuracy (Hewitt and
Liang 2019). The best layer of a position is the one whose probe has the best *dev* accuracy
(ties: the lower layer): test accuracy never chooses it. ``python -m eval.layers --results R
--out DIR`` prints the tables and writes one chart per run and position
(``layers-<model>-<probe>-<position>.png``): accuracy and control accuracy against the layer,
with their intervals as bands, and chance as a dashed line.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from eval.stats import proportion_ci
from kg import options as kg_options
from probes.results import connect

SQL = Path(__file__).with_name("layers") / "layer_accuracy.sql"
Interval = tuple[float, float] | None


@dataclass(frozen=True)
class LayerPoint:
    """One layer's probe and control results for one run and position."""

    model: str
    probe: str
    run_id: str
    position: str
    layer: int
    n: int
    accuracy: float
    interval: Interval
    control_accuracy: float
    control_interval: Interval
    dev_accuracy: float
    chance: float

    @property
    def selectivity(self) -> float:
        return self.accuracy - self.control_accuracy


def layer_points(con: duckdb.DuckDBPyConnection) -> list[LayerPoint]:
    """Every (run, position, layer) with its probe and control accuracy."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables")
              .fetchall()}
    if "layer_predictions" not in tables:
        return []
    cur = con.execute(SQL.read_text(encoding="utf-8"))
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    by: dict[tuple[str, str, int], dict[bool, dict]] = {}
    for r in rows:
        by.setdefault((r["run_id"], r["position"], r["layer"]), {})[bool(r["control"])] = r
    out = []
    for (_rid, position, layer), pair in by.items():
        if True not in pair or False not in pair:
            continue
        p, c = pair[False], pair[True]
        out.append(LayerPoint(p["model"], p["probe"], p["run_id"], position, layer, p["n"],
                              p["accuracy"], proportion_ci(p["correct"], p["n"]),
                              c["accuracy"], proportion_ci(c["correct"], c["n"]),
                              p["dev_accuracy"], p["chance"]))
    return sorted(out, key=lambda x: (x.model, x.probe, x.position, x.layer))


def best_layers(points: Sequence[LayerPoint]) -> list[LayerPoint]:
    """Per run and position, the layer whose probe is best on dev (the lowest on ties)."""
    best: dict[tuple[str, str], LayerPoint] = {}
    for p in points:
        key = (p.run_id, p.position)
        if key not in best or p.dev_accuracy > best[key].dev_accuracy:
            best[key] = p
    return list(best.values())


def _ci(i: Interval) -> str:
    return "" if i is None else f" [{i[0]:.3f}, {i[1]:.3f}]"


def markdown(points: Sequence[LayerPoint]) -> str:
    """The per-layer table and the best-layer table."""
    lines = ["| model | probe | position | layer | n | accuracy | control accuracy | "
             "selectivity | chance |", "|---|---|---|---:|---:|---|---|---:|---:|"]
    lines += [f"| {p.model} | {p.probe} | {p.position} | {p.layer} | {p.n} | "
              f"{p.accuracy:.3f}{_ci(p.interval)} | {p.control_accuracy:.3f}"
              f"{_ci(p.control_interval)} | {p.selectivity:+.3f} | {p.chance:.3f} |"
              for p in points]
    lines += ["", "Best layer per position (chosen on dev):", "",
              "| model | probe | position | layer (dev) | dev accuracy | test accuracy | "
              "control accuracy | selectivity |", "|---|---|---|---:|---:|---|---|---:|"]
    lines += [f"| {p.model} | {p.probe} | {p.position} | {p.layer} | {p.dev_accuracy:.3f} | "
              f"{p.accuracy:.3f}{_ci(p.interval)} | {p.control_accuracy:.3f}"
              f"{_ci(p.control_interval)} | {p.selectivity:+.3f} |"
              for p in best_layers(points)]
    return "\n".join(lines)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def layer_chart(points: Sequence[LayerPoint], path: Path) -> Path:
    """Accuracy and control accuracy of one run and position against the layer: lines with
    their Wilson intervals as bands, chance as a dashed line, the dev-chosen layer marked."""
    from eval.plots import _figure

    pts = sorted(points, key=lambda p: p.layer)
    first = pts[0]
    xs = [p.layer for p in pts]
    with _figure(path, figsize=(max(5.0, 1.5 + 0.22 * len(xs)), 3.8)) as (_fig, ax):
        for label, acc, ci, colour in (
                ("probe", [p.accuracy for p in pts], [p.interval for p in pts], "tab:blue"),
                ("control task", [p.control_accuracy for p in pts],
                 [p.control_interval for p in pts], "tab:purple")):
            ax.plot(xs, acc, marker="o", markersize=3, color=colour, label=label)
            ax.fill_between(xs, [c[0] if c else a for c, a in zip(ci, acc, strict=True)],
                            [c[1] if c else a for c, a in zip(ci, acc, strict=True)],
                            color=colour, alpha=0.18, linewidth=0)
        ax.axhline(first.chance, linestyle="--", linewidth=1, color="black",
                   label=f"chance ({first.chance:.2f})")
        best = best_layers(pts)[0]
        ax.axvline(best.layer, linestyle=":", linewidth=1, color="grey",
                   label=f"chosen on dev: layer {best.layer}")
        ax.set_ylim(0, 1)
        ax.set_xlabel("layer (0 = embeddings)")
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers are whole numbers
        ax.set_ylabel(f"test accuracy (n = {first.n})")
        ax.set_title(f"{first.model} - {first.probe} - {first.position}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False, loc="lower right")
    return path


def charts(points: Sequence[LayerPoint], out: Path) -> list[Path]:
    """One chart per (run, position) under ``out``."""
    groups: dict[tuple[str, str], list[LayerPoint]] = {}
    for p in points:
        groups.setdefault((p.run_id, p.position), []).append(p)
    paths = []
    for pts in groups.values():
        p = pts[0]
        name = f"layers-{_slug(p.model)}-{_slug(p.probe)}-{p.position}.png"
        paths.append(layer_chart(pts, out / name))
    return paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (__doc__ or "").split("\n")[0]
    kg_options.add_results(parser, help="results DuckDB file")
    parser.add_argument("--out", type=Path, help="folder for the charts (default: none)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    con = connect(args.results, read_only=True)
    try:
        points = layer_points(con)
    finally:
        con.close()
    print(markdown(points))
    if args.out is not None:
        for path in charts(points, args.out):
            print(path)
    return 0


def main(argv: list[str] | None = None) -> int:
    return kg_options.run_command("python -m eval.layers", add_arguments, argv)


if __name__ == "__main__":
    raise SystemExit(main())


def profile_layer_lines(rows: Sequence[dict], model: str) -> list[tuple[str, str, list[float],
                                                                      float, float]]:
    """The knowledge profile's rows of eval/profile_sql/profile_layers.sql for ``model``:
    (probe, measure, per-instance values, chance, control accuracy) per probing probe, the
    measure naming the dev-chosen layer and position and the selectivity."""
    out = []
    mine = [r for r in rows if r["model"] == model]
    for probe in sorted({r["probe"] for r in mine}):
        items = [r for r in mine if r["probe"] == probe]
        values = [float(r["value"]) for r in items]
        control = sum(float(r["control_value"]) for r in items) / len(items)
        acc = sum(values) / len(values)
        first = items[0]
        measure = (f"{probe.split('/')[-1]}: linear probe, layer {first['layer']} "
                   f"{first['position']} (dev), selectivity {acc - control:+.2f}")
        out.append((probe, measure, values, float(first["chance"]), control))
    return out
