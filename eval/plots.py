"""PNG plots for reports (matplotlib, Agg backend: no display needed).

>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "acc.png"
>>> bar_chart([("gpt2", "demo/a", 0.5), ("gpt2", "demo/b", 0.75), ("bert", "demo/a", 0.25)],
...           "accuracy", out).read_bytes()[:4] == b"\\x89PNG"
True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def bar_chart(points: Sequence[tuple[str, str, float | None]], title: str, path: Path,
              ylabel: str = "value") -> Path:
    """A grouped bar chart: one group per x label (probe/split), one bar per series (model).

    ``points`` are ``(series, x label, value)``; missing values leave a gap.
    """
    series = list(dict.fromkeys(s for s, _, _ in points))
    labels = list(dict.fromkeys(x for _, x, _ in points))
    values = {(s, x): v for s, x, v in points}
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 + 0.9 * len(labels) * max(1, len(series)) ** 0.5),
                                    3.6))
    try:
        for i, s in enumerate(series):
            xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(labels))]
            ys = [values.get((s, x)) for x in labels]
            ax.bar([x for x, y in zip(xs, ys, strict=True) if y is not None],
                   [y for y in ys if y is not None], width=width, label=s)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=30 if len(labels) > 3 else 0, ha="right"
                           if len(labels) > 3 else "center", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        finite = [v for v in values.values() if v is not None]
        if finite and min(finite) >= 0 and max(finite) <= 1:
            ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
        if len(series) > 1:
            ax.legend(fontsize=8, frameon=False)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path
