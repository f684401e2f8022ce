"""The HTML report's per-layer probing (issue 48 point 4): per run (model x probe) and position
of ``kgprobe layers``, the chart of eval.layers' PNG as inline SVG drawn from the rows (test
accuracy and control accuracy per layer with their Wilson intervals as bands, chance as a
dashed line, the dev-chosen layer as a dotted one; no script, nothing fetched) and below it the
numbers: layer, n, accuracy [interval], control accuracy [interval], selectivity, dev accuracy,
the dev-chosen layer marked.

>>> from eval.layers import LayerPoint
>>> pts = [LayerPoint("m", "p", "r", "last", k, 10, a, (a - .1, a + .1), .5, (.4, .6), d, .5)
...        for k, a, d in ((0, .6, .55), (1, .9, .8), (2, .7, .8))]
>>> svg = layer_svg(pts)
>>> svg.count("<polyline") == 2 and svg.count("<circle") == 6 and "layer 1" in svg
True
>>> body = layer_body(pts)
>>> 'class="chosen"' in body and "+0.400" in body and "0.900 [0.800, 1.000]" in body
True
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import duckdb

from eval.html_page import Html, Section, join, note, tag
from eval.layers import Interval, LayerPoint, best_layers, layer_points

W, H = 600, 250
LEFT, RIGHT, TOP, BOTTOM = 46, 180, 14, 36
"""The chart's size and margins in pixels (the legend sits in the right margin)."""
SERIES = (("probe", "accuracy", "interval", "#1f77b4"),
          ("control task", "control_accuracy", "control_interval", "#9467bd"))
NOTE = ("kgprobe layers (docs/layers.md): per layer, the test accuracy of a linear probe on the "
        "hidden states and of the same probe on the control task (labels a seeded random "
        "function of the item, Hewitt and Liang 2019), each with its 95% Wilson interval over "
        "the n test instances; selectivity = accuracy − control accuracy; chance = the most "
        "frequent test label's share. The marked layer is the one whose probe is best on dev "
        "(ties: the lower layer); test accuracy never chooses it.")


def _ci(i: Interval) -> str:
    return "" if i is None else f" [{i[0]:.3f}, {i[1]:.3f}]"


def _x(layer: int, lo: int, hi: int) -> float:
    return LEFT + (W - LEFT - RIGHT) * ((layer - lo) / (hi - lo) if hi > lo else 0.5)


def _y(v: float) -> float:
    return TOP + (H - TOP - BOTTOM) * (1.0 - min(1.0, max(0.0, v)))


def _pts(xy: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)


def _s(name: str, *children: object, **attrs: object) -> Html:
    """An SVG element through :func:`tag`: ``stroke_width`` is written ``stroke-width``."""
    return tag(name, *children, **{k if k == "cls" else k.replace("_", "-"): v
                                   for k, v in attrs.items()})


def layer_svg(points: Sequence[LayerPoint]) -> Html:
    """One run's and position's chart (``points`` of one run and position)."""
    pts = sorted(points, key=lambda p: p.layer)
    lo, hi = pts[0].layer, pts[-1].layer
    best = best_layers(pts)[0]
    parts: list[Html] = []
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):  # the y axis: grid lines and their labels
        parts.append(_s("line", x1=LEFT, x2=W - RIGHT, y1=f"{_y(v):.1f}", y2=f"{_y(v):.1f}",
                         stroke="#ddd"))
        parts.append(_s("text", f"{v:.2f}", x=LEFT - 4, y=f"{_y(v) + 4:.1f}",
                         text_anchor="end"))
    step = max(1, -(-(hi - lo) // 12))
    for p in pts:  # the x axis: every layer, or every step-th
        if (p.layer - lo) % step == 0 or p.layer == hi:
            parts.append(_s("text", p.layer, x=f"{_x(p.layer, lo, hi):.1f}", y=H - BOTTOM + 14,
                             text_anchor="middle"))
    parts.append(_s("text", "layer (0 = embeddings)", x=(LEFT + W - RIGHT) / 2, y=H - 4,
                     text_anchor="middle"))
    chance = _y(pts[0].chance)
    parts.append(_s("line", x1=LEFT, x2=W - RIGHT, y1=f"{chance:.1f}", y2=f"{chance:.1f}",
                     stroke="#000", stroke_dasharray="5 3", cls="chance"))
    xb = f"{_x(best.layer, lo, hi):.1f}"
    parts.append(_s("line", x1=xb, x2=xb, y1=TOP, y2=H - BOTTOM, stroke="#777",
                     stroke_dasharray="2 2", cls="chosen"))
    legend = [("chance", f"chance ({pts[0].chance:.2f})", "#000"),
              ("chosen", f"chosen on dev: layer {best.layer}", "#777")]
    for label, value, interval, colour in SERIES:
        xs = [_x(p.layer, lo, hi) for p in pts]
        vals = [float(getattr(p, value)) for p in pts]
        cis = [getattr(p, interval) or (v, v) for p, v in zip(pts, vals, strict=True)]
        band = [(x, _y(c[1])) for x, c in zip(xs, cis, strict=True)]
        band += [(x, _y(c[0])) for x, c in reversed(list(zip(xs, cis, strict=True)))]
        parts.append(_s("polygon", points=_pts(band), fill=colour, fill_opacity="0.18",
                         stroke="none", cls="band"))
        parts.append(_s("polyline", points=_pts([(x, _y(v)) for x, v in zip(xs, vals,
                                                                            strict=True)]),
                         fill="none", stroke=colour, stroke_width="1.5", cls="series"))
        for p, x, v, c in zip(pts, xs, vals, cis, strict=True):
            parts.append(_s("circle", _s("title", f"{label}, layer {p.layer}: {v:.3f} "
                                           f"[{c[0]:.3f}, {c[1]:.3f}], n = {p.n}"),
                             cx=f"{x:.1f}", cy=f"{_y(v):.1f}", r="2.5", fill=colour))
        legend.insert(len(legend) - 2, (label, label, colour))
    for k, (_name, text, colour) in enumerate(legend):
        y = TOP + 10 + 16 * k
        parts.append(_s("line", x1=W - RIGHT + 10, x2=W - RIGHT + 26, y1=y - 4, y2=y - 4,
                         stroke=colour, stroke_width="2"))
        parts.append(_s("text", text, x=W - RIGHT + 30, y=y))
    parts.append(_s("text", f"test accuracy (n = {pts[0].n:,})", x=12, y=(TOP + H - BOTTOM) / 2,
                     text_anchor="middle",
                     transform=f"rotate(-90 12 {(TOP + H - BOTTOM) / 2:.1f})"))
    return _s("svg", _s("title", f"{pts[0].model} - {pts[0].probe} - {pts[0].position}"),
               *parts, xmlns="http://www.w3.org/2000/svg", viewbox=f"0 0 {W} {H}", width=W,
               height=H, font_size="11", font_family="system-ui, sans-serif", cls="layer-chart",
               role="img")


def layer_body(points: Sequence[LayerPoint]) -> Html:
    """One run's and position's heading, chart and table."""
    pts = sorted(points, key=lambda p: p.layer)
    best = best_layers(pts)[0]
    rows = [tag("tr", tag("td", f"{p.layer}" + (" ✓ chosen on dev" if p is best else "")),
                tag("td", f"{p.n:,}", cls="num"),
                tag("td", f"{p.accuracy:.3f}{_ci(p.interval)}", cls="num"),
                tag("td", f"{p.control_accuracy:.3f}{_ci(p.control_interval)}", cls="num"),
                tag("td", f"{p.selectivity:+.3f}", cls="num"),
                tag("td", f"{p.dev_accuracy:.3f}", cls="num"),
                cls="chosen" if p is best else None)
            for p in pts]
    head = ["layer", "n", "accuracy [95% CI]", "control accuracy [95% CI]", "selectivity",
            "dev accuracy"]
    first = pts[0]
    return (tag("h3", f"{first.model} on {first.probe}, position {first.position} "
                      f"(chance {first.chance:.3f})")
            + layer_svg(pts)
            + tag("table", tag("thead", tag("tr", *(tag("th", h) for h in head))),
                  tag("tbody", *rows), cls="layers"))


def layer_sections(con: duckdb.DuckDBPyConnection, runs: Collection[str]) -> list[Section]:
    """The section "Per layer" over the layer-probing runs in ``runs``; none without."""
    groups: dict[tuple[str, str], list[LayerPoint]] = {}
    for p in layer_points(con):
        if p.run_id in runs:
            groups.setdefault((p.run_id, p.position), []).append(p)
    if not groups:
        return []
    ordered = sorted(groups.values(), key=lambda g: (g[0].model, g[0].probe, g[0].position,
                                                     g[0].run_id))
    return [Section("layers", "Per layer", note(NOTE) + join(
        tag("div", layer_body(g), cls="layer") for g in ordered))]
