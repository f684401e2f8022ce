"""Shared plumbing for the BEAR parity runners (standard library only).

``scripts/bench_bear.py`` writes a workload JSON: one item per (instance, template), with the
relation, the template index and text, the subject label, the relation's ordered answer space
and the gold answer's index. Each runner scores every answer of every item and writes::

    {"tool": "lm-pub-quiz", "versions": {...}, "threads": 1, "load_seconds": 2.1,
     "statements": 4200, "seconds": {"1": 150.2}, "passes": {"1": [150.2, 151.0, 149.8]},
     "scores": [[...], ...], "n_tokens": [[...], ...], "texts": [[...], ...]}

``seconds`` is the median of the timed ``passes`` (``--repeat``), per tool setting (kgprobe;
lm-pub-quiz's batch sizes). Before them each runner scores the first item once, untimed, at
each setting, so that no tool's time holds its first call's one-off costs (thread pools, the
allocator, kernel choice).

Statements are templated as lm-pub-quiz 0.3.3 templates them (``Templater.replace_placeholders``):
``[X]`` = the subject label, ``[Y]`` = the answer, anywhere in the template, then the first
character upper-cased; the answer's character span is where ``[Y]`` was filled in.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path

# the runners' plumbing that is not BEAR's own: the same functions for every runner (this
# folder is on the path of each runner and of scripts/bench_bear.py, which import this module)
from common import runner_parser
from common import set_threads as set_threads
from common import version_of as version_of

PLACEHOLDER = re.compile(r"(\[X\]|\[Y\])")
SCORINGS = ("whole", "conditional")


def statement(template: str, subject: str, answer: str) -> tuple[str, tuple[int, int]]:
    """The filled template and the answer's character span, as lm-pub-quiz fills it.

    >>> statement("[Y] is the capital of [X].", "france", "paris")
    ('Paris is the capital of france.', (0, 5))
    >>> statement("[X] speaks [Y].", "Ali", "Bengali")
    ('Ali speaks Bengali.', (11, 18))
    """
    text, span, last = "", (0, 0), 0
    for match in PLACEHOLDER.finditer(template):
        value = subject if match.group() == "[X]" else answer
        text += template[last:match.start()]
        if match.group() == "[Y]":
            span = (len(text), len(text) + len(value))
        text += value
        last = match.end()
    text += template[last:]
    return (text[:1].upper() + text[1:], span)


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line every BEAR runner shares."""
    parser = runner_parser(description, threads=1)
    parser.add_argument("--kind", choices=("causal", "masked"), default="causal")
    parser.add_argument("--scoring", choices=SCORINGS, default="whole",
                        help="whole statement (lm-pub-quiz's default) or conditional_score")
    parser.add_argument("--quirk", action="store_true",
                        help="kgprobe: reproduce lm-pub-quiz's BOS-text quirk (conditional)")
    parser.add_argument("--pll-metric", default="within_word_l2r", help="masked LMs")
    parser.add_argument("--batch-size", type=int, action="append",
                        help="lm-pub-quiz batch sizes to time (repeatable; default 1)")
    parser.add_argument("--no-ensure-bos", action="store_true",
                        help="lm-pub-quiz: ensure_bos_token_added=False (its BOS-text branch off)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=1,
                        help="timed passes over the workload (after one untimed warm-up pass "
                             "over the first item); the median is the time")
    return parser.parse_args(argv)


def median(values: Sequence[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count).

    >>> median([3.0, 1.0, 2.0]), median([4.0, 1.0])
    (2.0, 2.5)
    """
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def load_workload(path: Path) -> list[dict]:
    return list(json.loads(path.read_text(encoding="utf-8"))["items"])


def write(out: Path, result: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result), encoding="utf-8")
