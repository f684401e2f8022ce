"""Generate the fixed, seeded workload of the side-by-side speed benchmark.

Two request sets, written as one JSON file so that every tool scores exactly the same text:

* ``mc``: multiple choice with shared contexts. Each instance is one context of 8-20 tokens
  (``"... a lighthouse is a kind of"``) and 21 candidate continuations of 1-6 tokens
  (``" musical instrument"``), each with a leading space. Every candidate is scored as
  ``log P(candidate | context)``.
* ``sentences``: independent sentences of 10-25 tokens, scored as whole-sentence
  log-likelihood given the tokenizer's BOS token (see ``docs/benchmarks.md``).

Words are common WordNet nouns and adjectives (``tagsense_cnt >= 3`` in ``index.noun`` /
``index.adj``) put into a small list of English templates. Token counts come from the model's
own ``tokenizer.json`` and are stored in the file, so the benchmark can compute the arithmetic
floor without loading the model. The same seed, WordNet files and tokenizer give the same file.

Usage::

    .venv/bin/python scripts/bench_workload.py --model ~/.cache/kgprobe/models/smollm2-135m \\
        --out workload.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

FORMAT_VERSION = 1
DEFAULT_SEED = 20240613

CONTEXT_TOKENS = (8, 20)
CANDIDATE_TOKENS = (1, 6)
SENTENCE_TOKENS = (10, 25)

# Contexts end in a word that a noun naturally follows; {dw} is "a/an <noun phrase>".
MC_TEMPLATES = (
    "If you look it up in a good dictionary, you will find that {dw} is a kind of",
    "My teacher explained to the class that {dw} is best described as a type of",
    "Most people would agree that {dw} is a sort of",
    "According to the old encyclopedia, {dw} belongs to the category of",
    "The children learned today that {dw} is an example of",
    "In the story, {dw} was mistaken for",
    "{Dw} is usually kept next to",
    "When she opened the box, she found {dw} and some",
)

# {dn1}/{dn2}/{dn3} are "a/an <noun phrase>", {Dn1} capitalised, {n1} without the article.
SENTENCE_TEMPLATES = (
    "{Dn1} was found near {dn2} after the long winter.",
    "Nobody expected {dn1} to be so {adj} in the middle of the afternoon.",
    "She told me that {dn1} looked rather {adj} next to {dn2}.",
    "The report described {dn1} and {dn2} in great detail.",
    "After the meeting, we talked about {dn1} for almost an hour.",
    "It is hard to imagine {dn1} without {dn2}.",
    "The old man kept {dn1} in a box next to {dn2}.",
    "Every morning the {n1} seemed a little more {adj} than the day before.",
    "They said the {n1} would arrive before {dn2} was ready.",
    "I have never seen {dn1} as {adj} as the one in the museum.",
    "The {adj} {n1} on the table belonged to my grandmother.",
    "Why would anyone bring {dn1} to {dn2}?",
)

# Optional openings (contexts and sentences) and closing phrases (sentences only).
PREFIXES = (
    "Last year, ",
    "According to my neighbour, ",
    "For reasons that nobody understood, ",
    "As everyone in the village knew, ",
    "Surprisingly, ",
    "In her first lecture, ",
)
NO_PREFIX = ("If ", "In ", "When ", "After ", "Why ", "According ")
SUFFIXES = (
    " near {dn3}",
    " because of {dn3}",
    " during the {adj2} summer",
    " without telling anyone",
    " in the north of the country",
)

_LEMMA = re.compile(r"^[a-z]+(_[a-z]+)?$")
_MAX_TRIES = 10_000


class WorkloadError(Exception):
    """A workload cannot be generated (missing WordNet file, tokenizer, impossible lengths)."""


def article(word: str) -> str:
    """Return ``word`` with the indefinite article in front (spelling rule only).

    >>> article("apple"), article("tree")
    ('an apple', 'a tree')
    """
    return ("an " if word[:1] in "aeiou" else "a ") + word


def common_lemmas(index_file: Path, min_tagged: int = 3) -> list[str]:
    """Read a WordNet ``index.<pos>`` file; return lemmas with >= ``min_tagged`` tagged senses.

    Only lower-case alphabetic lemmas of one or two words are kept; underscores become
    spaces. The order is the file's (alphabetical), so the result is deterministic.
    """
    try:
        text = index_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"{index_file}: cannot read WordNet index ({exc}); "
                            "set KGPROBE_WORDNET_DIR to the WordNet 3.0 dict folder") from exc
    lemmas = []
    for line in text.splitlines():
        if line.startswith("  ") or not line.strip():
            continue  # licence header
        fields = line.split()
        lemma = fields[0]
        try:
            n_pointers = int(fields[3])
            tagged = int(fields[5 + n_pointers])
        except (IndexError, ValueError) as exc:
            raise WorkloadError(f"{index_file}: malformed index line {line[:60]!r}") from exc
        if _LEMMA.match(lemma) and tagged >= min_tagged:
            lemmas.append(lemma.replace("_", " "))
    if not lemmas:
        raise WorkloadError(f"{index_file}: no usable lemmas found")
    return lemmas


def _noun_phrase(rng: random.Random, nouns: Sequence[str], adjs: Sequence[str],
                 max_adjs: int) -> str:
    words = [rng.choice(adjs) for _ in range(rng.randint(0, max_adjs))]
    return " ".join([*words, rng.choice(nouns)])


def _context(rng: random.Random, nouns: Sequence[str], adjs: Sequence[str]) -> str:
    noun = _noun_phrase(rng, nouns, adjs, 1)
    body = rng.choice(MC_TEMPLATES).format(dw=article(noun), Dw=article(noun).capitalize())
    return _with_prefix(body, rng, 0.5)


def _candidate(rng: random.Random, nouns: Sequence[str], adjs: Sequence[str]) -> str:
    phrase = _noun_phrase(rng, nouns, adjs, 2)
    if rng.random() < 0.3:
        phrase += " of " + _noun_phrase(rng, nouns, adjs, 1)
    return " " + phrase


def _sentence(rng: random.Random, nouns: Sequence[str], adjs: Sequence[str]) -> str:
    n1, n2, n3 = (_noun_phrase(rng, nouns, adjs, 1) for _ in range(3))
    adj, adj2 = rng.choice(adjs), rng.choice(adjs)
    values = {"n1": n1, "dn1": article(n1), "Dn1": article(n1).capitalize(),
              "dn2": article(n2), "dn3": article(n3), "adj": adj, "adj2": adj2}
    body = rng.choice(SENTENCE_TEMPLATES)
    stop = body[-1]
    body = body[:-1] + "".join(rng.sample(SUFFIXES, rng.randint(0, 2))) + stop
    return _with_prefix(body.format(**values), rng, 0.4)


def _with_prefix(text: str, rng: random.Random, p: float) -> str:
    """With probability ``p``, put an opening phrase in front of ``text``."""
    if rng.random() >= p or text.startswith(NO_PREFIX):
        return text
    if not text.startswith("I "):
        text = text[0].lower() + text[1:]
    return rng.choice(PREFIXES) + text


def _draw(make: Callable[[], str], count_tokens: Callable[[str], int],
          bounds: tuple[int, int], rng: random.Random, seen: set[str]) -> tuple[str, int]:
    """Draw a target length uniformly in ``bounds``, then a new text of exactly that length."""
    for _ in range(_MAX_TRIES):
        target = rng.randint(*bounds)
        for _ in range(200):
            text = make()
            n = count_tokens(text)
            if n == target and text not in seen:
                seen.add(text)
                return text, n
    raise WorkloadError(f"could not draw a text of {bounds[0]}-{bounds[1]} tokens; "
                        "check the tokenizer and the word lists")


def build_workload(
    count_tokens: Callable[[str], int],
    nouns: Sequence[str],
    adjectives: Sequence[str],
    seed: int = DEFAULT_SEED,
    n_mc: int = 200,
    n_candidates: int = 21,
    n_sentences: int = 1000,
) -> dict:
    """Build the workload dictionary (see the module docstring for its shape).

    ``count_tokens`` returns the number of model tokens of a string (no special tokens).
    Each length (context, candidate, sentence) is drawn uniformly from its range first, then
    a text of exactly that many tokens is drawn, so the lengths spread over the whole range.

    >>> words = ["apple", "tree", "ocean liner", "cup", "owl", "kettle", "dog", "moon"]
    >>> def words_in(s): return len(s.split())
    >>> w = build_workload(words_in, words, ["red", "old"], n_mc=2, n_candidates=3,
    ...                    n_sentences=2)
    >>> len(w["mc"]), len(w["mc"][0]["candidates"]), len(w["sentences"])
    (2, 3, 2)
    >>> all(1 <= words_in(c) <= 6 for c in w["mc"][0]["candidates"])
    True
    >>> w == build_workload(words_in, words, ["red", "old"], n_mc=2, n_candidates=3,
    ...                     n_sentences=2)
    True
    """
    rng = random.Random(seed)
    mc = []
    seen_contexts: set[str] = set()
    for _ in range(n_mc):
        context, n_ctx = _draw(lambda: _context(rng, nouns, adjectives), count_tokens,
                               CONTEXT_TOKENS, rng, seen_contexts)
        seen_candidates: set[str] = set()
        drawn = [_draw(lambda: _candidate(rng, nouns, adjectives), count_tokens,
                       CANDIDATE_TOKENS, rng, seen_candidates) for _ in range(n_candidates)]
        mc.append({
            "context": context,
            "context_tokens": n_ctx,
            "candidates": [text for text, _ in drawn],
            "candidate_tokens": [n for _, n in drawn],
        })
    seen: set[str] = set()
    sentences = []
    for _ in range(n_sentences):
        text, n_tok = _draw(lambda: _sentence(rng, nouns, adjectives), count_tokens,
                            SENTENCE_TOKENS, rng, seen)
        sentences.append({"text": text, "tokens": n_tok})
    return {
        "format": FORMAT_VERSION,
        "seed": seed,
        "sentence_convention": "sentence tokens scored given the tokenizer's BOS token",
        "mc": mc,
        "sentences": sentences,
    }


def subset(workload: dict, n_mc: int, n_sentences: int) -> dict:
    """Return a copy holding the first ``n_mc`` instances and ``n_sentences`` sentences.

    >>> subset({"mc": [1, 2, 3], "sentences": [4, 5], "seed": 1}, 2, 1)
    {'mc': [1, 2], 'sentences': [4], 'seed': 1}
    """
    out = dict(workload)
    out["mc"] = workload["mc"][:n_mc]
    out["sentences"] = workload["sentences"][:n_sentences]
    return out


def token_counter(model_dir: Path) -> Callable[[str], int]:
    """Return a function counting the tokens of a string with ``model_dir/tokenizer.json``."""
    from tokenizers import Tokenizer

    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise WorkloadError(f"{path}: no tokenizer.json; --model must be a Hugging Face "
                            "format model folder")
    tok = Tokenizer.from_file(str(path))
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def generate(model_dir: Path, seed: int = DEFAULT_SEED, **sizes: int) -> dict:
    """Build the workload from ``kg.config.wordnet_dir()`` and the model's tokenizer."""
    from kg.config import wordnet_dir

    wn = wordnet_dir()
    nouns = common_lemmas(wn / "index.noun")
    adjectives = common_lemmas(wn / "index.adj")
    return build_workload(token_counter(model_dir), nouns, adjectives, seed=seed, **sizes)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the workload JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True,
                        help="Hugging Face format model folder (its tokenizer.json is used)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--mc", type=int, default=200, help="multiple-choice instances")
    parser.add_argument("--candidates", type=int, default=21, help="candidates per instance")
    parser.add_argument("--sentences", type=int, default=1000)
    args = parser.parse_args(argv)
    try:
        workload = generate(args.model.expanduser(), args.seed, n_mc=args.mc,
                            n_candidates=args.candidates, n_sentences=args.sentences)
    except WorkloadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(workload, indent=1), encoding="utf-8")
    n_req = sum(len(i["candidates"]) for i in workload["mc"])
    print(f"wrote {args.out}: {len(workload['mc'])} instances ({n_req} requests), "
          f"{len(workload['sentences'])} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
