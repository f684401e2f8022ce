"""Whole-statement scoring for causal LMs, as lm-pub-quiz 0.3.3 scores statements, and its
shared-prefix fast path (the causal backend's ``boundary`` options ``whole`` and
``lm-pub-quiz``).

Tokenisation (lm-pub-quiz's ``CausalLMEvaluator.encode``): ``context + continuation`` is
tokenised as ONE string with the tokenizer's special tokens and ``add_bos_token`` forced on;
when the tokenizer still puts no BOS in front (SmolLM2's byte-level BPE), the BOS token's
*text* is put before the statement and the string tokenised again, and that BOS is not scored.
The scored tokens are the non-special tokens after the first, from the first token that holds
a character of the continuation's text (its leading whitespace left out) to the end: with an
empty context that is the whole statement (lm-pub-quiz's default score), with the text before
the answer as context it is lm-pub-quiz's ``conditional_score``. ``Score.n_tokens`` is the
number of scored tokens, so ``logprob / n_tokens`` is its ``mean`` reduction.

The BOS-text quirk (``boundary="lm-pub-quiz"``): lm-pub-quiz finds the answer's first token from
the answer's character offsets in the statement *without* the BOS text, so when it had to put
the BOS text in front its conditional score starts ``len(bos_token)`` characters (a few
tokens) before the answer, or at the statement's first token when the answer starts closer to
the beginning than that. ``boundary="whole"`` shifts the offsets by the BOS text (the answer's
own first token). When forcing ``add_bos_token`` makes the tokenizer add BOS (every fast
tokenizer with a BOS token in transformers 5: SmolLM2 and Gemma 3 here; not GPT-2's fast
tokenizer in transformers 4), the two are the same.

Speed: the statements are sorted by their token ids, and runs of statements that share a
token prefix (BOS and the template text before the answer: an instance's statements) form a
group, chosen by :func:`prefix_groups`; the prefix runs once per group, packed with its
members' remainders in one row under a block attention mask (``causal_model.block_mask``), and
the prefix tokens' log-probabilities are computed once and added to every member that scores
them. Groups of one statement are plain full forwards. Rows are length-sorted and batched; the
LM head runs only at the predicting positions, each once.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probes.backends.causal_model import block_mask
from probes.errors import ModelError

if TYPE_CHECKING:
    from probes.backends.causal import CausalScorer

Ids = tuple[int, ...]
@dataclass(frozen=True, slots=True)
class Statement:
    """A statement's token ids (BOS first, nothing after the last scored token) and the
    positions whose log-probabilities are summed (each >= 1)."""

    ids: Ids
    scored: tuple[int, ...]


@contextlib.contextmanager
def forced_bos(tokenizer: Any) -> Iterator[None]:
    """``tokenizer.add_bos_token = True`` while the block runs (lm-pub-quiz's ``add_bos_token``).

    In transformers 5 the setter rebuilds the fast tokenizer's post-processor (a template with
    BOS), and setting it back does not bring the original post-processor back; it is restored
    here, so the scorer's tokenizer is the same after the block as before."""
    if not hasattr(tokenizer, "add_bos_token"):
        yield
        return
    backend = getattr(tokenizer, "backend_tokenizer", None)
    saved = backend.post_processor if backend is not None else None
    old = tokenizer.add_bos_token
    try:
        tokenizer.add_bos_token = True
        yield
    finally:
        tokenizer.add_bos_token = old
        if backend is not None:
            backend.post_processor = saved


def encode_statements(
    tokenizer: Any, requests: Sequence[tuple[str, str]], *, quirk: bool
) -> list[Statement]:
    """The statements of ``(context, continuation)`` requests, tokenised as lm-pub-quiz does
    (see the module docstring); ``quirk``: reproduce its BOS-text offset of the answer."""
    texts = [c + x for c, x in requests]
    starts = [len(c) + len(x) - len(x.lstrip()) for c, x in requests]
    bos_id = tokenizer.bos_token_id
    with forced_bos(tokenizer):
        enc = _encode(tokenizer, texts)
    plain = [i for i in range(len(texts)) if enc["input_ids"][i][:1] != [bos_id]]
    prefixed = None
    if plain:
        if tokenizer.bos_token is None or bos_id is None:
            raise ModelError(
                f"the tokenizer ({type(tokenizer).__name__}) has no BOS token, which boundary "
                "'whole'/'lm-pub-quiz' puts before every statement; use boundary='lm-eval'"
            )
        prefixed = _encode(tokenizer, [tokenizer.bos_token + texts[i] for i in plain])
    where = {i: k for k, i in enumerate(plain)}
    out: list[Statement] = []
    for i, text in enumerate(texts):
        if not text[starts[i]:].strip():
            out.append(Statement((int(bos_id if bos_id is not None else 0),), ()))
            continue
        if i in where and prefixed is not None:
            k = where[i]
            ids = list(prefixed["input_ids"][k])
            special = list(prefixed["special_tokens_mask"][k])
            special[0] = 1  # lm-pub-quiz marks the BOS text's token as special
            shift = 0 if quirk else len(tokenizer.bos_token)
            first = _first_token(prefixed, k, starts[i] + shift, len(text) + shift + 1)
        else:
            ids = list(enc["input_ids"][i])
            special = list(enc["special_tokens_mask"][i])
            first = _first_token(enc, i, starts[i], len(text))
        scored = tuple(p for p in range(max(1, first), len(ids)) if not special[p])
        end = scored[-1] + 1 if scored else 1
        out.append(Statement(tuple(int(t) for t in ids[:end]), scored))
    return out


def _encode(tokenizer: Any, texts: list[str]) -> Any:
    return tokenizer(texts, add_special_tokens=True, return_special_tokens_mask=True,
                     return_attention_mask=False)


def _first_token(enc: Any, row: int, start: int, end: int) -> int:
    """The first token that holds one of the characters [start, end) (lm-pub-quiz's
    ``char_to_token`` search over the answer span), or 0 if none does."""
    for char in range(start, end):
        token = enc.char_to_token(row, char)
        if token is not None:
            return int(token)
    return 0


def common_length(a: Ids, b: Ids) -> int:
    """The length of the longest common prefix.

    >>> common_length((1, 2, 3), (1, 2, 4, 5)), common_length((1,), (2,))
    (2, 0)
    """
    n = min(len(a), len(b))
    for k in range(n):
        if a[k] != b[k]:
            return k
    return n


def prefix_groups(seqs: Sequence[Ids], row_limit: int) -> list[tuple[int, list[int]]]:
    """Groups of statements that run one shared token prefix once: ``(prefix length, member
    indices)``; every member has at least one token after the prefix. A lone statement is a
    group whose prefix is all but its last token (one plain forward).

    The statements are sorted by their ids, so a prefix is shared by consecutive runs. A run
    either forms one group (its common prefix) or splits where its neighbours' common prefix is
    shortest, whichever costs fewer token positions (a prefix repeats in every packed row of
    ``row_limit`` tokens): an instance's statements share BOS and the template text up to the
    answer and group together; instances that share only the template's first words do not.

    >>> seqs = [(0, 5, 6, 7, x, 9) for x in (1, 2, 3)] + [(0, 5, 8, 7, x, 9) for x in (1, 2, 3)]
    >>> sorted(prefix_groups([*seqs, (9, 9)], 64))  # 2 x (4 + 3 x 1) positions, not 2 + 6 x 3
    [(1, [6]), (4, [0, 1, 2]), (4, [3, 4, 5])]
    """
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    common = [common_length(seqs[a], seqs[b]) for a, b in itertools.pairwise(order)]
    plans: dict[tuple[int, int], tuple[float, list[tuple[int, list[int]]]]] = {}
    # post-order over the runs (each split gives runs with a longer common prefix)
    visit: list[tuple[int, int, bool]] = [(0, len(order), False)] if order else []
    while visit:
        lo, hi, expanded = visit.pop()
        if hi - lo == 1:
            i = order[lo]
            plans[(lo, hi)] = (float(len(seqs[i]) - 1), [(len(seqs[i]) - 1, [i])])
            continue
        lowest = min(common[lo : hi - 1])
        cuts = [k + 1 for k in range(lo, hi - 1) if common[k] == lowest]
        parts = list(zip([lo, *cuts], [*cuts, hi], strict=True))
        if not expanded:
            visit.append((lo, hi, True))
            visit.extend((a, b, False) for a, b in parts)
            continue
        members = [order[k] for k in range(lo, hi)]
        shared = min(lowest, min(len(seqs[i]) for i in members) - 1)
        together = _group_cost(shared, [len(seqs[i]) for i in members], row_limit)
        split_cost = sum(plans[p][0] for p in parts)
        if shared >= 1 and together <= split_cost:
            plans[(lo, hi)] = (together, [(shared, members)])
        else:
            plans[(lo, hi)] = (split_cost, [g for p in parts for g in plans.pop(p)[1]])
    return plans[(0, len(order))][1] if order else []


def _group_cost(shared: int, lengths: list[int], row_limit: int) -> float:
    """Token positions one group runs: its prefix once per packed row, each member's tokens
    after the prefix but its last."""
    rest = sum(n - shared - 1 for n in lengths)
    rows = max(1, math.ceil(rest / max(1, row_limit - shared)))
    return float(rows * shared + rest)


def score_statements(
    scorer: CausalScorer, statements: Sequence[Statement], *, share: bool
) -> list[tuple[float, int]]:
    """(summed log-probability, scored tokens) of each statement; ``share``: run shared
    prefixes once (else every statement is one plain forward)."""
    n = len(statements)
    totals = [0.0] * n
    todo = [i for i in range(n) if statements[i].scored]
    seqs = [statements[i].ids for i in todo]
    if share:
        limit = scorer._row_limit(1)
        groups = [(s, [todo[m] for m in ms]) for s, ms in prefix_groups(seqs, limit)]
    else:
        groups = [(len(statements[i].ids) - 1, [i]) for i in todo]
    rows: list[tuple[int, list[int], bool]] = []  # (group, members, first row of the group)
    for g, (shared, members) in enumerate(groups):
        limit = scorer._row_limit(shared)
        current: list[int] = []
        length = shared
        for i in sorted(members, key=lambda m: len(statements[m].ids)):
            extra = len(statements[i].ids) - shared - 1
            if current and length + extra > limit:
                rows.append((g, current, not any(r[0] == g for r in rows[-1:])))
                current, length = [], shared
            current.append(i)
            length += extra
        rows.append((g, current, not any(r[0] == g for r in rows[-1:])))
    prefix_lp: dict[tuple[int, int], float] = {}  # (group, position) -> log-probability

    def work(batch: list[int]) -> None:
        chosen = [rows[b] for b in batch]
        sequences, segments, positions = [], [], []
        slots: dict[tuple[int, int], int] = {}  # (row, column) -> predicting state
        picks: list[tuple[int, int]] = []  # (state slot, target)
        owners: list[tuple[str, int, int]] = []  # ("member", request, 0) | ("prefix", g, pos)
        for r, (g, members, first) in enumerate(chosen):
            shared = groups[g][0]
            prefix = statements[members[0]].ids[:shared]
            seq, seg, pos = list(prefix), [0] * shared, list(range(shared))
            if first:
                needed = min(statements[m].scored[0] for m in groups[g][1])
                for p in range(max(1, needed), shared):
                    picks.append((slots.setdefault((r, p - 1), len(slots)), prefix[p]))
                    owners.append(("prefix", g, p))
            for j, i in enumerate(members, start=1):
                ids = statements[i].ids
                start = len(seq)
                for p in statements[i].scored:
                    if p < shared:
                        continue
                    col = shared - 1 if p == shared else start + p - shared - 1
                    picks.append((slots.setdefault((r, col), len(slots)), ids[p]))
                    owners.append(("member", i, 0))
                seq.extend(ids[shared:-1])
                seg.extend([j] * (len(ids) - shared - 1))
                pos.extend(range(shared, len(ids) - 1))
            sequences.append(seq)
            segments.append(seg)
            positions.append(pos)
        ids_t, _ = scorer._padded(sequences)
        seg_ids, _ = scorer._padded(segments, pad=-1)
        pos_ids, _ = scorer._padded(positions, pad=0)
        states, _ = scorer._run(ids_t, block_mask(seg_ids, scorer.model.dtype), pos_ids)
        order = sorted(slots, key=slots.__getitem__)
        gathered = states[scorer._long([rc[0] for rc in order]),
                          scorer._long([rc[1] for rc in order])]
        lp = scorer._first_tokens(
            gathered, scorer._long([s for s, _ in picks]), scorer._long([t for _, t in picks])
        ).double().tolist()
        for (what, a, b), value in zip(owners, lp, strict=True):
            if what == "prefix":
                prefix_lp[(a, b)] = value
            else:
                totals[a] += value
        scorer._report(sum(len(m) for _, m, _ in chosen))

    lengths = [groups[g][0] + sum(len(statements[i].ids) - groups[g][0] - 1 for i in m)
               for g, m, _ in rows]
    scorer.batcher("statements").run(lengths, work)
    for g, (shared, members) in enumerate(groups):
        for i in members:
            totals[i] += sum(prefix_lp[(g, p)] for p in statements[i].scored if p < shared)
    scorer._report(n - len(todo))
    return [(totals[i], len(statements[i].scored)) for i in range(n)]
