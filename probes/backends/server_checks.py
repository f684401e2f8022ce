"""Every value an inference server returns is data to check before it is stored (issue 45).

A log-probability is a real JSON number (not a string, not a boolean), finite and not above 0
(:data:`ROUNDING` allowed for a log-softmax's rounding); the echoed ``tokens``,
``text_offset``, ``token_logprobs`` and ``top_logprobs`` have one entry per token; offsets are
whole numbers that start at 0 on the prompt, never go back and lie inside the echoed text; the
tokens kept for the prompt reach its end, and a non-empty continuation has at least one scored
token (:mod:`probes.backends.server`). A violation is a
:class:`BadAnswer` with what is wrong; the client turns it into one line naming the request
(:func:`request_error`), and nothing is stored for that request.

>>> logprob(-0.5, "x"), logprob(None, "x", allow_none=True)
(-0.5, None)
>>> for bad in (float("nan"), float("inf"), 5.0, "-1.0", True):
...     try:
...         logprob(bad, "token_logprobs[2]")
...     except BadAnswer as e:
...         print(e)
token_logprobs[2] = nan, not a log-probability (a finite number <= 0)
token_logprobs[2] = inf, not a log-probability (a finite number <= 0)
token_logprobs[2] = 5.0, not a log-probability (a finite number <= 0)
token_logprobs[2] = '-1.0', not a log-probability (a finite number <= 0)
token_logprobs[2] = True, not a log-probability (a finite number <= 0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

ROUNDING = 1e-5
"""How far above 0 a log-probability may be (a log-softmax computed in float32 can give
+1e-7 for a certain token); anything higher is not a log-probability."""


class BadAnswer(ValueError):
    """A value of a server's answer that is not what the API promises (the message says
    which and why)."""


def logprob(value: Any, where: str, allow_none: bool = False) -> float | None:
    """``value`` as a log-probability, or a :class:`BadAnswer` naming ``where`` it was."""
    if value is None and allow_none:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value)
        if math.isfinite(v) and v <= ROUNDING:
            return v
    raise BadAnswer(f"{where} = {_show(value)}, not a log-probability (a finite number <= 0)")


def top(value: Any, where: str) -> dict[str, float] | None:
    """A ``top_logprobs`` entry: None, or token text -> log-probability.

    >>> top({" dog": -0.1}, "top_logprobs[1]"), top(None, "t")
    ({' dog': -0.1}, None)
    >>> try:
    ...     top([1], "top_logprobs[1]")
    ... except BadAnswer as e:
    ...     print(e)
    top_logprobs[1] = [1], not a map of tokens to log-probabilities
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadAnswer(f"{where} = {_show(value)}, not a map of tokens to log-probabilities")
    return {str(t): float(logprob(v, f"{where}[{t!r}]") or 0.0) for t, v in value.items()}


def echo_lists(lp: dict[str, Any]) -> tuple[list[str], list[int], list[Any], list[Any]]:
    """The OpenAI echo form's four lists, checked for type and length (values unchecked:
    :func:`logprob` reads them)."""
    tokens, offsets = lp.get("tokens"), lp.get("text_offset")
    values, tops = lp.get("token_logprobs"), lp.get("top_logprobs") or []
    for name, items in (("tokens", tokens), ("text_offset", offsets),
                        ("token_logprobs", values), ("top_logprobs", tops)):
        if not isinstance(items, list):
            raise BadAnswer(f"logprobs.{name} is {_show(items)}, not a list")
    assert isinstance(tokens, list) and isinstance(offsets, list) and isinstance(values, list)
    assert isinstance(tops, list)
    if not all(isinstance(t, str) for t in tokens):
        raise BadAnswer("logprobs.tokens holds a value that is not text")
    if not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets):
        raise BadAnswer("logprobs.text_offset holds a value that is not a whole number")
    n = len(tokens)
    for name, items in (("text_offset", offsets), ("token_logprobs", values)):
        if len(items) != n:
            raise BadAnswer(f"logprobs.{name} has {len(items)} entries for {n} tokens")
    if tops and len(tops) != n:
        raise BadAnswer(f"logprobs.top_logprobs has {len(tops)} entries for {n} tokens")
    return tokens, offsets, values, tops


def offsets_in_order(tokens: Sequence[str], offsets: Sequence[int]) -> None:
    """The echoed tokens' offsets (already moved onto the prompt) start at 0, never go back,
    and none lies past the echoed text (the tokens' texts joined).

    >>> offsets_in_order(["A", " dog", "."], [0, 1, 5])
    >>> try:
    ...     offsets_in_order(["A", " dog", "."], [0, 9, 5])
    ... except BadAnswer as e:
    ...     print(e)
    text_offset 9 of token 1 (' dog') lies past the echoed text (6 characters)
    """
    if not offsets:
        return
    if offsets[0] != 0:
        raise BadAnswer(f"the prompt's first token starts at text_offset {offsets[0]}, not 0")
    size = sum(len(t) for t in tokens)
    for i, o in enumerate(offsets):
        if o > size:
            raise BadAnswer(f"text_offset {o} of token {i} ({tokens[i]!r}) lies past the echoed "
                            f"text ({size} characters)")
        if i and o < offsets[i - 1]:
            raise BadAnswer(f"text_offset {o} of token {i} ({tokens[i]!r}) comes before the "
                            f"offset of the token before it ({offsets[i - 1]})")


def request_error(root: str, text: str, problem: str) -> str:
    """The one line for a checked value that failed: the server, the request, the problem."""
    shown = text if len(text) <= 60 else text[:57] + "..."
    return (f"the server at {root} answered the request for {shown!r} with {problem}; nothing "
            "was stored for it. The server or its model is broken or not an OpenAI-compatible "
            "Completions API: check its log, fix it and run the same command again (requests "
            "already scored are kept)")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
