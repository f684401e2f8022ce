"""COPEN prompts as marked token sequences, built the way the authors' probing code builds them.

Every zero-shot prompt is a list of pieces, each with a marker naming the text part it belongs
to (``query``/``candidate`` in CSJ, ``concept``/``answer`` in CPJ, ``concept`` in CiC, ``#``
for template text). The pieces are tokenised one at a time (``tokenisation="words"``, as in
``data/task{1,2,3}/probing_data_processor.py`` of THU-KEG/COPEN: CSJ by template piece, CPJ and
CiC word by word), or the joined text is tokenised once and each token takes the marker of the
piece its characters fall in (``tokenisation="text"``). A start token (``begin``: [CLS] for
BERT-style masked LMs, ``<s>``/BOS for RoBERTa-style masked LMs and causal LMs, nothing for
seq2seq) and an end token (``end``: [SEP] or EOS) frame the sequence. A prompt longer than
:data:`MAX_TOKENS` (120, ``max_seq_length`` of the authors' ``code/probing/task*/config.yaml``)
is cut as their ``convertSingleExample`` cuts it: the first 119 tokens, then the end token.

Templates (the authors' probing processors; Figure 2 of the paper):

- CSJ: ``E1 is conceptually similar with E2.`` (pieces: E1 | `` is conceptually similar with``
  | E2 | ``.``);
- CPJ: the statement's words, then ``The statement is true .`` / ``... false .``;
- CiC: ``Choose the concept that best fits the context for <entity name> according to the
  context: <sentence> <mention> is a|an <concept> .`` -- the mention as written in the sentence
  (``entity.pos``), ``an`` before a, e, i, o (the authors' ``isVowel``), the concept label as the
  authors write it: the part after the last ``_``, lower-cased (``PeriodicalLiterature`` ->
  ``periodicalliterature``). Without context the sentence is left out.

>>> [p for p in csj_pieces("Rose", "Ugadi")]
[('Rose', 'query'), (' is conceptually similar with', '#'), ('Ugadi', 'candidate'), ('.', '#')]
>>> [w for w, m in cic_pieces("Dolly", "Dolly", "Dolly runs .", "Animal") if m != "#"]
['animal']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probes.engine.errors import ProbeError

CIC_PREFIX = "Choose the concept that best fits the context for %s according to the context:"
"""The instruction of Figure 2(c) (the authors' CiC probing processor)."""

TOKENISATIONS = ("words", "text")
MAX_TOKENS = 120
"""The authors' ``max_seq_length`` for probing (every ``code/probing/task*/config.yaml``)."""
BEGIN, END, OTHER = "begin", "end", "#"


@dataclass(frozen=True)
class Marked:
    """Token ids with one marker each (``begin``, ``end``, ``#`` or a part name)."""

    ids: tuple[int, ...]
    markers: tuple[str, ...]
    text: str

    def span(self, part: str) -> tuple[int, int] | None:
        """[start, end) of the part's tokens (None when the part has no token)."""
        where = [i for i, m in enumerate(self.markers) if m == part]
        if not where:
            return None
        if where != list(range(where[0], where[-1] + 1)):
            raise ProbeError(f"COPEN: part {part!r} is not one contiguous span in {self.text!r}")
        return where[0], where[-1] + 1

    def scored_all(self) -> list[int]:
        """Positions the "all" part scores: every token but the start and end tokens."""
        return [i for i, m in enumerate(self.markers) if m not in (BEGIN, END)]

    @property
    def n_special(self) -> int:
        return sum(1 for m in self.markers if m in (BEGIN, END))


def csj_pieces(query: str, candidate: str) -> list[tuple[str, str]]:
    """CSJ: ``E1 is conceptually similar with E2.`` as template pieces."""
    return [(query, "query"), (" is conceptually similar with", OTHER),
            (candidate, "candidate"), (".", OTHER)]


def cpj_pieces(pre: str, concept: str, post: str, answer: str) -> list[tuple[str, str]]:
    """CPJ: the statement word by word, then ``The statement is <answer> .``."""
    out = [(w, OTHER) for w in pre.split()] + [(w, "concept") for w in concept.split()]
    out += [(w, OTHER) for w in post.split()]
    out += [("The", OTHER), ("statement", OTHER), ("is", OTHER), (answer, "answer"), (".", OTHER)]
    return out


def _article(label: str) -> str:
    return "an" if label[:1].lower() in ("a", "e", "i", "o") else "a"


def concept_label(name: str) -> str:
    """A concept as the authors' CiC prompt writes it.

    >>> concept_label("Q41298_PeriodicalLiterature")
    'periodicalliterature'
    """
    return name.rsplit("_", 1)[-1].lower()


def cic_pieces(entity: str, mention: str, sentence: str | None, concept: str
               ) -> list[tuple[str, str]]:
    """CiC with the Figure 2(c) instruction; ``sentence=None``: out of context."""
    out = [(w, OTHER) for w in (CIC_PREFIX % entity).split()]
    if sentence is not None:
        out += [(w, OTHER) for w in sentence.split()]
    label = concept_label(concept)
    out += [(w, OTHER) for w in mention.split()]
    out += [("is", OTHER), (_article(label), OTHER), (label, "concept"), (".", OTHER)]
    return out


def pieces_for(task: str, fields: dict[str, Any], candidate: str, context: bool = True
               ) -> list[tuple[str, str]]:
    """The pieces of one (instance, candidate) prompt; ``fields`` as the loader writes them."""
    if task == "csj":
        return csj_pieces(str(fields["query"]), candidate)
    if task == "cpj":
        return cpj_pieces(str(fields.get("pre", "")), str(fields["concept"]),
                          str(fields.get("post", "")), candidate)
    if task == "cic":
        name = (fields.get("names") or {}).get(candidate, candidate)
        return cic_pieces(str(fields["entity"]), str(fields.get("mention") or fields["entity"]),
                          str(fields["sentence"]) if context else None, name)
    raise ProbeError(f"unknown COPEN task {task!r}; use csj, cpj or cic")


def joined(task: str, pieces: Sequence[tuple[str, str]]) -> str:
    """The prompt as text: CPJ/CiC words space-joined; CSJ pieces as the sentence reads (the
    authors tokenise the candidate without the space before it).

    >>> joined("csj", csj_pieces("Rose", "Ugadi"))
    'Rose is conceptually similar with Ugadi.'
    """
    if task == "csj":
        return "".join(p if m != "candidate" else " " + p for p, m in pieces)
    return " ".join(p for p, _ in pieces)


def frame_tokens(tokenizer: Any, kind: str) -> tuple[list[int], list[int]]:
    """(start ids, end ids) as the authors frame prompts: masked [CLS]/<s> ... [SEP]/</s>,
    causal BOS ... EOS, seq2seq ... EOS."""
    def one(*names: str) -> list[int]:
        for name in names:
            tid = getattr(tokenizer, f"{name}_token_id", None)
            if tid is not None:
                return [int(tid)]
        return []

    if kind == "masked":
        return one("cls", "bos"), one("sep", "eos")
    if kind == "causal":
        begin = one("bos", "eos")
        if not begin:
            raise ProbeError("COPEN: the causal LM's tokenizer has no BOS (or EOS) token to "
                             "condition on; every part is scored after it")
        return begin, one("eos")
    return [], one("eos")


def cut(ids: list[int], markers: list[str], end: Sequence[int], max_tokens: int | None
        ) -> tuple[list[int], list[str]]:
    """The authors' cut of a long prompt: ``tokens[:max - 1]`` then the end token (their
    ``convertSingleExample``); a prompt of at most ``max_tokens`` tokens is kept whole.

    >>> cut([1, 2, 3, 4, 9], ["begin", "#", "query", "#", "end"], [9], 3)
    ([1, 2, 9], ['begin', '#', 'end'])
    """
    if max_tokens is None or len(ids) <= max_tokens:
        return ids, markers
    keep = max_tokens - len(end)
    return ids[:keep] + list(end), markers[:keep] + [END] * len(end)


def mark(tokenizer: Any, kind: str, task: str, pieces: Sequence[tuple[str, str]],
         tokenisation: str = "words", max_tokens: int | None = MAX_TOKENS) -> Marked:
    """Tokenise the pieces and frame them (see the module docstring); ``max_tokens=None``
    keeps a long prompt whole."""
    if tokenisation not in TOKENISATIONS:
        raise ProbeError(f"COPEN: unknown tokenisation {tokenisation!r}; use words (the "
                         "authors': piece by piece) or text (the joined prompt at once)")
    begin, end = frame_tokens(tokenizer, kind)
    text = joined(task, pieces)
    ids: list[int] = list(begin)
    markers: list[str] = [BEGIN] * len(begin)
    if tokenisation == "words":
        for piece, marker in pieces:
            toks = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(piece))
            ids += toks
            markers += [marker] * len(toks)
    else:
        bounds, pos = [], 0
        for piece, marker in pieces:
            start = text.index(piece.strip(), pos)
            bounds.append((start, start + len(piece.strip()), marker))
            pos = start + len(piece.strip())
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        for tid, (s, e) in zip(enc["input_ids"], enc["offset_mapping"], strict=True):
            mid = next((m for a, b, m in bounds if a <= s < b or (s < b and e > a)), OTHER)
            ids.append(int(tid))
            markers.append(mid)
    ids += end
    markers += [END] * len(end)
    ids, markers = cut(ids, markers, end, max_tokens)
    return Marked(tuple(ids), tuple(markers), text)
