"""PNG plots for reports (matplotlib, Agg backend: no display needed).

>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "acc.png"
>>> bar_chart([("gpt2", "demo/a", 0.5), ("gpt2", "demo/b", 0.75), ("bert", "demo/a", 0.25)],
...           "accuracy", out).read_bytes()[:4] == b"\\x89PNG"
True
>>> line_chart({"pizza": [(0, 0.5, None), (4, 0.6, 0.05)], "go": [(0, 0.4, None)]},
...            "K-shot", out, xlabel="K", ylabel="accuracy").read_bytes()[:4] == b"\\x89PNG"
True
>>> line_panels({"HYP": {"HPO": [(1, 0.5), (2, 0.75)]}, "SYN": {}}, "D_k", out
...             ).read_bytes()[:4] == b"\\x89PNG"
True
>>> profile_chart([("a", 0.5, (0.4, 0.6), 0.25, 0.9, (0.8, 1.0)),
...                ("b", None, None, None, None, None)], "P", out).read_bytes()[:4] == b"\\x89PNG"
True
>>> heat_map(["a", "b"], ["a", "b"], [[None, 0.5], [0.25, None]], "AuDC", out
...          ).read_bytes()[:4] == b"\\x89PNG"
True
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt


@contextmanager
def _figure(path: Path, **subplots: Any) -> Iterator[tuple[Any, Any]]:
    """``plt.subplots(**subplots)``; on leaving, the figure is laid out and saved as ``path``
    (folders made), and always closed."""
    fig, ax = plt.subplots(**subplots)
    try:
        yield fig, ax
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)


#: Groups per panel of a bar chart; more are wrapped into further panels below.
MAX_GROUPS = 12

#: The colours of the marks drawn over the series: chance, the shortcut ceiling (or another
#: model-free baseline drawn as a ceiling) and the human value. No series uses them.
MARK_COLOURS = {"chance": "black", "ceiling": "tab:orange", "human": "tab:red"}
#: The series (model) colours: matplotlib's tab10 without the mark colours (orange, red) and
#: grey, so that a tick never disappears over a bar of the same colour.
SERIES_COLOURS = ("tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
                  "tab:cyan", "navy", "darkgreen", "indigo")


def series_colour(i: int) -> str:
    """The colour of the ``i``-th series (cycling through :data:`SERIES_COLOURS`).

    >>> series_colour(1), series_colour(10) == series_colour(0)
    ('tab:green', True)
    >>> any(series_colour(i) in MARK_COLOURS.values() for i in range(30))
    False
    """
    return SERIES_COLOURS[i % len(SERIES_COLOURS)]


def _draw_bars(ax: Any, series: Sequence[str], chunk: Sequence[str],
               values: Mapping[tuple[str, str], float | None],
               errors: Mapping[tuple[str, str], tuple[float, float]], width: float) -> None:
    """One bar per series in each group of ``chunk``, with its interval as an error bar."""
    for i, s in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        shown = [(j + offset, y, errors.get((s, lab))) for j, lab in enumerate(chunk)
                 if (y := values.get((s, lab))) is not None]
        low = [max(0.0, y - e[0]) if e else 0.0 for _, y, e in shown]
        high = [max(0.0, e[1] - y) if e else 0.0 for _, y, e in shown]
        ax.bar([x for x, _, _ in shown], [y for _, y, _ in shown], width=width, label=s,
               color=series_colour(i),
               yerr=[low, high] if any(e for _, _, e in shown) else None,
               capsize=2, error_kw={"elinewidth": 0.8, "ecolor": "0.25"})


def _draw_ticks(ax: Any, chunk: Sequence[str], ticks: Mapping[str, float], colour: str,
                name: str) -> None:
    """A dashed tick across each group of ``chunk`` that has a value in ``ticks``, named
    once in the legend."""
    named = False
    for j, lab in enumerate(chunk):
        if lab in ticks:
            ax.hlines(ticks[lab], j - 0.45, j + 0.45, colors=colour, linestyles="--",
                      linewidth=1.2, label=None if named else name)
            named = True


def _style_panel(ax: Any, chunk: Sequence[str], ylabel: str, finite: Sequence[float],
                 legend: bool) -> None:
    many = len(chunk) > 3
    ax.set_xticks(range(len(chunk)))
    ax.set_xticklabels(chunk, rotation=30 if many else 0, ha="right" if many else "center",
                       fontsize=8)
    ax.set_xlim(-0.6, max(len(chunk), 1) - 0.4)
    ax.set_ylabel(ylabel)
    if finite and min(finite) >= 0:
        ax.set_ylim(0, 1 if max(finite) <= 1 else max(finite) * 1.08)
    ax.grid(axis="y", alpha=0.3)
    if legend:  # one series is still named (which model is this?)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def bar_chart(points: Sequence[tuple[str, str, float | None]], title: str, path: Path,
              ylabel: str = "value",
              errors: Mapping[tuple[str, str], tuple[float, float]] | None = None,
              baselines: Mapping[str, float] | None = None,
              baseline_label: str = "baseline", max_groups: int = MAX_GROUPS,
              ceilings: Mapping[str, float] | None = None,
              ceiling_label: str = "shortcut ceiling") -> Path:
    """A grouped bar chart: one group per x label (probe/split), one bar per series (model),
    the series named in a legend.

    ``points`` are ``(series, x label, value)``; missing values leave a gap. ``errors`` maps
    ``(series, x label)`` to an interval drawn as an error bar; ``baselines`` maps an x label
    to a value drawn as a black tick across its group (named ``baseline_label`` in the legend);
    ``ceilings`` likewise, a second dashed tick in orange (``ceiling_label``: the shortcut
    ceiling). Series take :func:`series_colour`, never a mark's colour.
    The y axis starts at 0 when no value is negative (and ends at 1 for shares); more than
    ``max_groups`` groups are wrapped into panels stacked below each other.
    """
    series = list(dict.fromkeys(s for s, _, _ in points))
    labels = list(dict.fromkeys(x for _, x, _ in points))
    values = {(s, x): v for s, x, v in points}
    errors, baselines, ceilings = errors or {}, baselines or {}, ceilings or {}
    chunks = [labels[i:i + max_groups] for i in range(0, len(labels), max_groups)] or [[]]
    per_panel = max(len(c) for c in chunks)
    finite = [v for v in values.values() if v is not None] + [*baselines.values(),
              *ceilings.values(), *(b for lo_hi in errors.values() for b in lo_hi)]
    with _figure(path, nrows=len(chunks), squeeze=False,
                 figsize=(max(4.5, 1.6 + 0.9 * per_panel * max(1, len(series)) ** 0.5),
                          0.9 + 2.9 * len(chunks))) as (_fig, axes):
        for ax, chunk in zip(axes[:, 0], chunks, strict=True):
            _draw_bars(ax, series, chunk, values, errors, 0.8 / max(1, len(series)))
            _draw_ticks(ax, chunk, baselines, MARK_COLOURS["chance"], baseline_label)
            _draw_ticks(ax, chunk, ceilings, MARK_COLOURS["ceiling"], ceiling_label)
            _style_panel(ax, chunk, ylabel, finite, bool(series or baselines or ceilings))
        axes[0, 0].set_title(title)
    return path


def line_chart(series: Mapping[str, Sequence[tuple[float, float, float | None]]], title: str,
               path: Path, xlabel: str = "x", ylabel: str = "value",
               baselines: dict[str, float] | None = None,
               series_baselines: Mapping[str, float] | None = None,
               series_baseline_label: str = "baseline") -> Path:
    """One line per series through ``(x, y, error)`` points; ``error`` draws a ± bar (None:
    none); ``baselines`` are dashed horizontal lines (name -> y); ``series_baselines`` a
    dashed line per series (series name -> y) in that series' colour, named
    ``"<series>: <series_baseline_label>"``. The x values present are
    spaced evenly and labelled (K = 0, 4, 8, ... reads better so than on a linear or
    logarithmic axis)."""
    xs = sorted({x for points in series.values() for x, _, _ in points})
    where = {x: i for i, x in enumerate(xs)}
    with _figure(path, figsize=(max(4.0, 1.5 + 0.8 * len(xs)), 3.6)) as (_fig, ax):
        for name, points in series.items():
            pts = sorted(points)
            drawn = ax.errorbar([where[x] for x, _, _ in pts], [y for _, y, _ in pts],
                                yerr=[e or 0.0 for _, _, e in pts], marker="o", capsize=3,
                                label=name)
            if name in (series_baselines or {}):
                ax.axhline((series_baselines or {})[name], linestyle="--", linewidth=1,
                           color=drawn.lines[0].get_color(),
                           label=f"{name}: {series_baseline_label}")
        for name, y in (baselines or {}).items():
            ax.axhline(y, linestyle="--", linewidth=1, color="grey", label=name)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([f"{x:g}" for x in xs])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ys = [y for points in series.values() for _, y, _ in points] + list(
            (baselines or {}).values()) + list((series_baselines or {}).values())
        if ys and min(ys) >= 0 and max(ys) <= 1:
            ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        if series:
            ax.legend(fontsize=8, frameon=False)
    return path


def line_panels(panels: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]],
                title: str, path: Path, xlabel: str = "x", ylabel: str = "value", ncols: int = 3,
                ylim: tuple[float, float] | None = (0.0, 1.0)) -> Path:
    """A grid of line charts sharing their axes: one panel per key of ``panels``, one line per
    series through its ``(x, y)`` points; a panel without series says so."""
    nrows = max(1, -(-len(panels) // ncols))
    with _figure(path, nrows=nrows, ncols=ncols, figsize=(3.4 * ncols, 2.8 * nrows + 0.5),
                             sharex=True, sharey=True, squeeze=False) as (fig, axes):
        flat = list(axes.flat)
        for ax, (name, series) in zip(flat, panels.items(), strict=False):
            for label, points in series.items():
                pts = sorted(points)
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", markersize=3,
                        label=label)
            if series:
                ax.legend(fontsize=7, frameon=False)
            else:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes,
                        color="grey")
            ax.set_title(name, fontsize=10)
            if ylim is not None:
                ax.set_ylim(*ylim)
            ax.grid(alpha=0.3)
        for ax in flat[len(panels):]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel(xlabel)
        for ax in axes[:, 0]:
            ax.set_ylabel(ylabel)
        fig.suptitle(title)
    return path


def heat_map(rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[float | None]],
             title: str, path: Path, vmin: float = 0.0, vmax: float = 1.0,
             xlabel: str = "", ylabel: str = "") -> Path:
    """A heat map of ``values[i][j]`` (row ``rows[i]``, column ``cols[j]``), each cell labelled
    with its value; ``None`` cells stay blank, NaN cells (no data) are grey and marked "–"."""
    data = np.ma.masked_invalid(np.array(
        [[np.nan if v is None else float(v) for v in row] for row in values], dtype=float))
    with _figure(path, figsize=(1.0 + 0.75 * len(cols), 1.0 + 0.65 * len(rows))) as (fig, ax):
        cmap = plt.get_cmap("viridis").with_extremes(bad="white")
        im = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax)
        for i, row in enumerate(values):
            for j, v in enumerate(row):
                if v is not None and math.isnan(float(v)):
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, color="0.88"))
                    ax.text(j, i, "–", ha="center", va="center", fontsize=8, color="0.4")
                elif v is not None:
                    shade = (float(v) - vmin) / ((vmax - vmin) or 1.0)
                    ax.text(j, i, f"{float(v):.2f}", ha="center", va="center", fontsize=8,
                            color="black" if shade > 0.6 else "white")
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels(cols)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(rows)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return path


Interval = tuple[float, float] | None


def _few_bands(ax: Any, skip: Collection[int], few_label: str) -> None:
    """A grey hatched band with ``few_label`` across the rows ``skip`` (too few items)."""
    for i, y in enumerate(sorted(skip)):
        ax.barh(y, 1.0, height=0.6, color="none", edgecolor="0.6", hatch="///",
                linewidth=0.0, label="n below the minimum" if i == 0 else None)
        ax.text(0.02, y, few_label, fontsize=7, va="center", color="0.3",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})


def label_x(start: float, marks: Sequence[float], width: float = 0.045) -> float:
    """Where a value label that would start at ``start`` goes so that it covers none of its
    row's ``marks`` (ticks, diamonds): moved just past each mark that falls under it.

    >>> label_x(0.04, [0.03])          # the mark lies before the label: unmoved
    0.04
    >>> round(label_x(0.04, [0.05, 0.09]), 3)   # past 0.05, then past 0.09
    0.1
    """
    x = start
    for m in sorted(marks):
        if x - 0.005 <= m <= x + width:
            x = m + 0.01
    return x


def _value_bars(ax: Any, shown: Sequence[tuple[int, float, Interval]], model: str,
                marks: Mapping[int, Sequence[float]] | None = None) -> None:
    """The model's horizontal bars with their intervals, each value written beside it, clear
    of the row's ``marks`` (chance, ceiling and human values)."""
    colour = series_colour(0)
    ax.barh([y for y, _, _ in shown], [v for _, v, _ in shown], height=0.6, color=colour,
            label=model,
            xerr=[[v - ci[0] if ci else 0.0 for _, v, ci in shown],
                  [ci[1] - v if ci else 0.0 for _, v, ci in shown]],
            error_kw={"elinewidth": 1.0, "ecolor": "0.2", "capsize": 3})
    for y, v, ci in shown:
        ax.text(label_x(max(v, ci[1] if ci else v) + 0.01, (marks or {}).get(y, ())),
                y + 0.18, f"{v:.2f}", fontsize=7,
                va="center", color=colour, clip_on=False)


def _row_ticks(ax: Any, points: Sequence[tuple[int, float]], colour: str, name: str,
               under: Mapping[int, float] | None = None) -> None:
    """A dashed vertical tick at each ``(row, value)``, named once in the legend; where the
    row's value in ``under`` (a tick drawn before) is the same to the drawing's precision, only
    the upper half, so that both stay visible."""
    for i, (y, c) in enumerate(points):
        same = under is not None and y in under and abs(under[y] - c) < 0.005
        ax.vlines(c, y if same else y - 0.4, y + 0.4, colors=colour, linestyles="--",
                  linewidth=1.4, label=name if i == 0 else None)


def _human_marks(ax: Any, human: Sequence[tuple[int, float, Interval]]) -> None:
    if human:
        ax.errorbar([h for _, h, _ in human], [y for y, _, _ in human],
                    xerr=[[h - hci[0] if hci else 0.0 for _, h, hci in human],
                          [hci[1] - h if hci else 0.0 for _, h, hci in human]],
                    fmt="D", color=MARK_COLOURS["human"], ecolor=MARK_COLOURS["human"],
                    elinewidth=0.8, capsize=2, markersize=5, zorder=3, label="human")


def _style_profile(ax: Any, labels: Sequence[str], title: str, caption: str) -> None:
    n = len(labels)
    ax.set_yticks(list(range(n))[::-1])
    ax.set_yticklabels([textwrap.fill(lab, 60) for lab in labels], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("score (share of items right; 0 to 1)" + (
        "\n\n" + "\n".join(textwrap.fill(part, 80) for part in caption.split("\n"))
        if caption else ""), fontsize=8 if caption else None)
    ax.set_title(title, fontsize=10, pad=20)
    ax.grid(axis="x", alpha=0.3)
    # every legend entry in one row between the title and the axes (two rows would run
    # into the title)
    entries = len(ax.get_legend_handles_labels()[1])
    ax.legend(fontsize=7 if entries > 4 else 8, frameon=False, loc="lower center",
              ncol=max(1, entries), bbox_to_anchor=(0.5, 1.0), borderaxespad=0.2,
              columnspacing=1.2, handlelength=1.8)


def profile_chart(lines: Sequence[tuple[str, float | None, Interval, float | None,
                                      float | None, Interval]],
                  title: str, path: Path, model: str = "model", few: Collection[int] = (),
                  few_label: str = "too few items: not drawn", caption: str = "",
                  ceilings: Sequence[float | None] | None = None,
                  ceiling_label: str = "shortcut ceiling") -> Path:
    """One horizontal bar per measure, top to bottom in the given order: ``(label, value,
    interval, chance, human, human interval)``; the bar is the model's value (named ``model``
    in the legend, its value written beside it) with its interval as an error bar, chance a
    black dashed tick, the model-free ceiling (``ceilings``, one per line or None; named
    ``ceiling_label``) an orange dashed tick (its upper half only where it equals chance) and
    the human value a red diamond with its own interval (no bar takes a mark's colour). The
    lines at the indices ``few`` (too few items for a figure) get no bar, tick or marker: a
    grey hatched band across the axis with ``few_label`` written on it. The x axis runs from 0
    to 1 (shares); long labels are wrapped; the legend sits above the axes and ``caption``
    (wrapped) under them."""
    n = len(lines)
    rows = 1 + caption.count("\n") + len(caption) // 80 if caption else 0
    ys = list(range(n))[::-1]
    skip = {ys[i] for i in few}
    kept = [(y, line) for y, line in zip(ys, lines, strict=True) if y not in skip]
    tops = [(y, c) for y, c in zip(ys, ceilings or [None] * n, strict=True)
            if c is not None and y not in skip]
    with _figure(path, figsize=(9.0, 1.6 + 0.42 * n + 0.16 * rows)) as (_fig, ax):
        _few_bands(ax, skip, few_label)
        marks: dict[int, list[float]] = {y: [c] for y, c in tops}
        for y, (_, _, _, c, h, _) in kept:
            marks.setdefault(y, []).extend(m for m in (c, h) if m is not None)
        _value_bars(ax, [(y, v, ci) for y, (_, v, ci, *_) in kept if v is not None], model,
                    marks)
        chance = {y: c for y, (_, _, _, c, _, _) in kept if c is not None}
        _row_ticks(ax, list(chance.items()), MARK_COLOURS["chance"], "chance")
        _row_ticks(ax, tops, MARK_COLOURS["ceiling"], ceiling_label, under=chance)
        _human_marks(ax, [(y, h, hci) for y, (*_, h, hci) in kept if h is not None])
        _style_profile(ax, [line[0] for line in lines], title, caption)
    return path


def reliability_diagram(panels: Mapping[str, Mapping[str, Sequence[tuple[float, float, int]]]],
                        title: str, path: Path, ncols: int = 3) -> Path:
    """A reliability diagram per panel (probe/split): per series (model) its confidence bins
    as ``(mean confidence, accuracy, instances)``, drawn as a line through the bins (the
    marker's area grows with the bin's instances) against the diagonal of perfect calibration
    (a grey dashed line: a mark colour no series takes)."""
    ncols = max(1, min(ncols, len(panels)))
    nrows = max(1, -(-len(panels) // ncols))
    with _figure(path, nrows=nrows, ncols=ncols, figsize=(3.6 * ncols, 3.3 * nrows + 0.4),
                 squeeze=False) as (fig, axes):
        flat = list(axes.flat)
        for ax, (name, series) in zip(flat, panels.items(), strict=False):
            ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", linewidth=1,
                    label="perfect calibration")
            for i, (label, points) in enumerate(series.items()):
                pts = sorted(points)
                total = sum(n for *_, n in pts) or 1
                ax.plot([c for c, _, _ in pts], [a for _, a, _ in pts], color=series_colour(i),
                        linewidth=1.2, label=label)
                ax.scatter([c for c, _, _ in pts], [a for _, a, _ in pts],
                           s=[12 + 200 * n / total for *_, n in pts], color=series_colour(i),
                           zorder=3)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_title(name, fontsize=9)
            ax.set_xlabel("confidence (top answer's probability)", fontsize=8)
            ax.set_ylabel("accuracy", fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, frameon=False, loc="upper left")
        for ax in flat[len(panels):]:
            ax.set_visible(False)
        fig.suptitle(title, fontsize=10)
    return path
