"""What a whole-statement run of ParaRel costs, from the data files alone (no store, no model).

Per relation with a patterns file: the facts kept (the first ``--facts`` N of its
trex_lms_vocab file, as ``kgprobe pararel subset --facts N`` keeps them), its patterns, its
candidates (every distinct object of the relation's file: the probe's candidate set) and the
statements a run of ``pararel/pararel`` scores (facts x patterns x candidates). With
``--tokenizer DIR`` (a model folder holding tokenizer.json) also the scored tokens: each
statement as the probe renders it ([X] the subject, [Y] the candidate, the first letter
capitalised) tokenised without special tokens (a causal LM scores every token after BOS).

    .venv/bin/python scripts/pararel_cost.py --facts 100 \\
        --tokenizer ~/.cache/kgprobe/models/smollm2-135m-b179c9523d0e6a0f
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg.config import data_dir


@dataclass
class Cost:
    code: str
    facts: int
    patterns: int
    candidates: int
    tokens: int | None

    @property
    def statements(self) -> int:
        return self.facts * self.patterns * self.candidates


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def statement(pattern: str, subject: str, candidate: str) -> str:
    """The statement the probe scores (kgprobe's render: [X], [Y] filled, capitalised).

    >>> statement("[X] was born in [Y] .", "john", "Paris")
    'John was born in Paris .'
    """
    text = pattern.replace("[X]", subject).replace("[Y]", candidate)
    return text[:1].upper() + text[1:]


def relation_cost(root: Path, code: str, facts: int | None, tokenizer: Any) -> Cost:
    patterns = [p["pattern"] for p in _lines(root / "patterns" / f"{code}.jsonl")]
    all_facts = _lines(root / "trex_lms_vocab" / f"{code}.jsonl")
    objects = list(dict.fromkeys(f["obj_label"] for f in all_facts))
    kept = all_facts if facts is None else all_facts[:facts]
    tokens = None
    if tokenizer is not None:
        tokens = 0
        for f in kept:
            texts = [statement(p, f["sub_label"], o) for p in patterns for o in objects]
            tokens += sum(len(e.ids) for e in
                          tokenizer.encode_batch(texts, add_special_tokens=False))
    return Cost(code, len(kept), len(patterns), len(objects), tokens)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="the ParaRel folder (default: KGPROBE_DATA_DIR/pararel)")
    parser.add_argument("--facts", type=int, default=None, metavar="N",
                        help="the first N facts of each relation (default: all)")
    parser.add_argument("--tokenizer", type=Path, default=None, metavar="DIR",
                        help="a model folder with tokenizer.json: count scored tokens too")
    args = parser.parse_args(argv)
    root = args.data or data_dir() / "pararel"
    if not (root / "patterns").is_dir():
        print(f"{root} has no patterns/ folder; give --data the ParaRel folder "
              "(../shared/data/pararel)", file=sys.stderr)
        return 2
    tokenizer = None
    if args.tokenizer is not None:
        from tokenizers import Tokenizer

        file = args.tokenizer.expanduser() / "tokenizer.json"
        if not file.is_file():
            print(f"{file} does not exist; give --tokenizer a model folder holding "
                  "tokenizer.json", file=sys.stderr)
            return 2
        tokenizer = Tokenizer.from_file(str(file))
    codes = sorted((p.stem for p in (root / "patterns").glob("P*.jsonl")),
                   key=lambda c: int(c[1:]))
    costs = [relation_cost(root, c, args.facts, tokenizer) for c in codes]
    print("| relation | facts | patterns | candidates | statements | scored tokens |")
    print("|---|---:|---:|---:|---:|---:|")
    for c in sorted(costs, key=lambda c: (c.statements, c.code)):
        tok = "–" if c.tokens is None else f"{c.tokens:,}"
        print(f"| {c.code} | {c.facts:,} | {c.patterns} | {c.candidates} | "
              f"{c.statements:,} | {tok} |")
    tokens = f"{sum(c.tokens or 0 for c in costs):,}" if tokenizer is not None else "–"
    print(f"| all {len(costs)} | {sum(c.facts for c in costs):,} | "
          f"{sum(c.patterns for c in costs)} | | {sum(c.statements for c in costs):,} | "
          f"{tokens} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
