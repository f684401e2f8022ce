"""COPEN's declared run settings: the values ``runs.config.runtime.copen.part`` takes per task
(the text parts a zero-shot run scores, each stored as its own run), the parts whose scores
cannot differ for a model kind, and the seed summary of trained runs. Here, in the results
contract, because both the writers (probes.benchmarks.copen) and the readers (eval) need them. Which
part the paper reports per model (its Table 8) is a reporting choice: :mod:`eval.copen_table8`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

PARTS: dict[str, tuple[str, ...]] = {
    "csj": ("query", "candidate", "all"),
    "cpj": ("concept", "answer", "all"),
    "cic": ("concept", "all"),
}
"""Task -> the text parts zero-shot probing scores (``all``: the negative perplexity)."""

DEGENERATE: frozenset[tuple[str, str, str]] = frozenset({
    ("causal", "csj", "query"), ("causal", "cpj", "concept")})
"""(kind, task, part) whose scores cannot differ between a prompt's options."""

def seed_summary(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation, as the paper's Table 12 reports them: BERT-base
    CSJ fine-tuning 28.5, 26.6, 26.9 has std 0.86 there; the population deviation of the
    rounded values is 0.83, the sample deviation would be 1.02.

    >>> seed_summary([0.5, 0.7, 0.6])
    (0.6, 0.0816496581)
    >>> round(seed_summary([28.5, 26.6, 26.9])[1], 2)
    0.83
    """
    mean = statistics.fmean(values)
    std = statistics.pstdev(values) if len(values) > 1 else 0.0
    return round(mean, 10), round(std, 10)
