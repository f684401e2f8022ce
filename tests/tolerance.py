"""Float32 tolerances that scale with the magnitude of what is compared.

A log-probability summed over many tokens in float32 carries a rounding error proportional to its
size: two correct batchings of the same sum near -400 differ by a few 1e-4 (relative ~1e-6). An
absolute tolerance alone is therefore right for one machine and wrong on the next. Every test that
compares summed (or averaged) log-probabilities uses :func:`logprob_close` or
:func:`approx_logprob`.

>>> logprob_close(-404.0003, -404.0)
True
>>> logprob_close(-0.5003, -0.5)
False
"""

from __future__ import annotations

import math

import pytest

ABS = 1e-4  # floor, for values near zero
REL = 1e-5  # float32 has ~7 significant digits; sums of hundreds of terms keep ~5-6


def logprob_close(got: float, expected: float, *, rel: float = REL, abs_: float = ABS) -> bool:
    """Whether two log-probabilities agree within ``max(abs_, rel * |expected|)``."""
    return math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)


def approx_logprob(expected: object, *, rel: float = REL, abs_: float = ABS) -> object:
    """``pytest.approx`` with the magnitude-scaled tolerance (scalars or sequences)."""
    return pytest.approx(expected, rel=rel, abs=abs_)
