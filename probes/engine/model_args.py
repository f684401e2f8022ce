"""``--model-args``: model loading options as one comma-separated ``key=value`` string.

As in lm-evaluation-harness (``--model_args pretrained=gpt2,dtype=float32``), the options that
say how a model is loaded can be given in one string, e.g. ``--model-args
revision=main,dtype=bfloat16``. The keys are the keyword arguments of
:func:`probes.backends.registry.load_scorer` that a researcher sets per model:

- ``revision``: a hub branch, tag or commit;
- ``dtype``: float32, bfloat16 or float16 (same as ``--dtype``);
- ``trust_remote_code``: run code from the model's repository (true/false);
- ``allow_pickle``: allow pickle weights (true/false, same as ``--allow-pickle``);
- ``device_map``: auto, balanced, balanced_low_0 or sequential (same as ``--device-map``);
- ``pll_metric`` (masked LMs): which tokens each pseudo-log-likelihood copy masks: original
  (default), within_word_l2r (lm-pub-quiz's default), sentence_l2r, answer_l2r+word_l2r
  (:data:`probes.backends.masked.PLL_METRICS`);
- ``boundary`` (causal LMs): lm-eval (default: context and continuation tokenised apart),
  whole (one statement with BOS, lm-pub-quiz's scoring) or lm-pub-quiz (whole, with its
  BOS-text quirk; :mod:`probes.backends.causal_statements`).
- for a model behind an inference server (:mod:`probes.backends.server`, the keys of
  lm-evaluation-harness's ``local-completions``): ``base_url``, ``model``, ``tokenizer``,
  ``num_concurrent``, ``batch_size``, ``max_retries``, ``timeout``, ``top_logprobs``.

``pll_metric`` and ``boundary`` enter the score-cache key (through the scorer's
``cache_key_options``).

An unknown key or a bad value is an error that names it (with a "did you mean"); an option
given both as a flag and in ``--model-args`` with different values is an error too.

>>> parse_model_args("revision=main,dtype=bfloat16")
{'revision': 'main', 'dtype': 'bfloat16'}
>>> parse_model_args("trust_remote_code=True, allow_pickle=no")
{'trust_remote_code': True, 'allow_pickle': False}
>>> parse_model_args("dtyp=float16")
Traceback (most recent call last):
...
probes.results.ProbeError: --model-args: unknown key 'dtyp' (did you mean 'dtype'?); known keys: ...
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable
from typing import Any

from probes.backends.scoring_options import BOUNDARIES, PLL_METRICS
from probes.engine.errors import ProbeError

DTYPES = ("float32", "bfloat16", "float16")
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _text(key: str, value: str) -> str:
    if not value:
        raise ProbeError(f"--model-args: {key}= needs a value (e.g. {key}=main)")
    return value


def _choice(choices: tuple[str, ...]) -> Callable[[str, str], str]:
    def check(key: str, value: str) -> str:
        if value not in choices:
            close = difflib.get_close_matches(value, choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ProbeError(f"--model-args: {key}={value!r} is not one of "
                             f"{', '.join(choices)}{hint}")
        return value
    return check


def _flag(key: str, value: str) -> bool:
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ProbeError(f"--model-args: {key}={value!r} is not a truth value; use true or false")


def _number(kind: type) -> Callable[[str, str], Any]:
    def check(key: str, value: str) -> Any:
        try:
            number = kind(value)
        except ValueError:
            number = 0
        if not number > 0:
            raise ProbeError(f"--model-args: {key}={value!r} is not a positive number")
        return number
    return check


KEYS: dict[str, tuple[Callable[[str, str], Any], str]] = {
    "revision": (_text, "hub branch, tag or commit of the model"),
    "dtype": (_choice(DTYPES), "weights/compute dtype: " + ", ".join(DTYPES)),
    "trust_remote_code": (_flag, "run code from the model's repository (true/false)"),
    "allow_pickle": (_flag, "allow pickle weights (pytorch_model.bin) (true/false)"),
    "device_map": (_choice(DEVICE_MAPS), "spread the model over devices: "
                   + ", ".join(DEVICE_MAPS)),
    "pll_metric": (_choice(PLL_METRICS), "masked LMs: the tokens each PLL copy masks: "
                   + ", ".join(PLL_METRICS)),
    "boundary": (_choice(BOUNDARIES), "causal LMs: how a request is tokenised and scored: "
                 + ", ".join(BOUNDARIES)),
    # an inference server's model (probes.backends.server; lm-eval local-completions spelling)
    "base_url": (_text, "server: URL of an OpenAI-compatible API (http://host:8000/v1)"),
    "model": (_text, "server: the served model's name (default: the only one it serves)"),
    "tokenizer": (_text, "server: a kgprobe model name with the served model's tokenizer"),
    "num_concurrent": (_number(int), "server: requests at once (default 4)"),
    "batch_size": (_number(int), "server: prompts per request (default 8; also --batch-size)"),
    "max_retries": (_number(int), "server: tries after a failed request (default 3)"),
    "timeout": (_number(float), "server: seconds per request (default 120)"),
    "top_logprobs": (_number(int), "server: next tokens asked for topk (default 20)"),
}
"""key -> (parser of its value, one-line description)."""

FLAGS = {"dtype": "--dtype", "allow_pickle": "--allow-pickle", "device_map": "--device-map",
         "batch_size": "--batch-size"}
"""Keys that also have a flag of their own in ``python -m probes.engine.run`` (args attribute =
key)."""


def parse_model_args(text: str | None) -> dict[str, Any]:
    """The options of a ``key=value,key=value`` string, values checked and typed (booleans for
    ``trust_remote_code`` and ``allow_pickle``); an empty string or None gives ``{}``.

    >>> parse_model_args("")
    {}
    >>> parse_model_args("dtype=float16,dtype=float32")
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: --model-args: dtype is given twice (float16, float32); give it once
    """
    out: dict[str, Any] = {}
    if not text or not text.strip():
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise ProbeError(f"--model-args: {part!r} is not key=value; write e.g. "
                             "revision=main,dtype=bfloat16")
        if key not in KEYS:
            close = difflib.get_close_matches(key, list(KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ProbeError(f"--model-args: unknown key {key!r}{hint}; known keys: "
                             f"{', '.join(KEYS)}")
        parsed = KEYS[key][0](key, value)
        if key in out and out[key] != parsed:
            raise ProbeError(f"--model-args: {key} is given twice ({out[key]}, {parsed}); "
                             "give it once")
        out[key] = parsed
    return out


def merge_flags(parsed: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """``parsed`` model args completed with the values of their flags (``flags``: key -> the
    flag's value, None or False when not given). A key set both ways must agree.

    >>> merge_flags({"dtype": "float16"}, {"dtype": None, "allow_pickle": True})
    {'dtype': 'float16', 'allow_pickle': True}
    >>> merge_flags({"dtype": "float16"}, {"dtype": "float32"})
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: --dtype float32 and --model-args dtype=float16 disagree; give ...
    """
    merged = dict(parsed)
    for key, value in flags.items():
        if value is None or value is False:
            continue
        if key in parsed and parsed[key] != value:
            shown = FLAGS[key] if value is True else f"{FLAGS[key]} {value}"
            raise ProbeError(f"{shown} and --model-args {key}={parsed[key]} disagree; give "
                             "the option one way only")
        merged[key] = value
    return merged


def apply_to_args(args: argparse.Namespace) -> dict[str, Any]:
    """Fold ``args.model_args`` into the run's flags: ``--dtype``, ``--allow-pickle`` and
    ``--device-map`` take their values from it (so the rest of the run sees one setting), and
    the keyword arguments that have no flag (``revision``, ``trust_remote_code``) are returned
    for ``load_scorer``. Also stores the merged options as ``args.model_args_parsed``."""
    parsed = parse_model_args(getattr(args, "model_args", None))
    merged = merge_flags(parsed, {k: getattr(args, k, None) for k in FLAGS})
    for key in FLAGS:
        if key in merged:
            setattr(args, key, merged[key])
    args.model_args_parsed = merged
    if merged.get("base_url") and not getattr(args, "model", None):
        args.model = "server"  # --model-args base_url=... alone names a server's model
    return {k: v for k, v in merged.items() if k not in FLAGS}


def describe() -> list[tuple[str, str]]:
    """(key, description) of every ``--model-args`` key, for help texts and listings."""
    return [(k, d) for k, (_, d) in KEYS.items()]
