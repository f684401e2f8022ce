"""Statement scoring for causal LMs: the prefix tree that every causal ``loglik`` call runs
(a request is a statement: its token ids and the positions it scores), and whole statements
tokenised as lm-pub-quiz 0.3.3 tokenises them (the causal backend's ``boundary`` options
``whole`` and ``lm-pub-quiz``).

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

Speed: the statements' token sequences form one prefix tree (:class:`PrefixTree`): every
distinct proper token prefix of the call is a node, run once, so what statements share (BOS,
the subject that starts an instance's templates, the template text before the answer, the
first words of answers such as "United States" and "United Kingdom", and whole prefixes across
the instances of an answer-first template) runs once. The nodes, in depth-first order, are cut
into rows of the row limit; each row starts with the ancestors of its first node (context
only) and carries a tree attention mask (``causal_model.tree_mask``: a node sees itself and
its ancestors) and each node's depth as its position id. Rows are full but for the last, so
batches carry no padding; the LM head runs only at the predicting nodes, each once per target
token.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probes.backends.causal_model import tree_mask
from probes.engine.errors import ModelError

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


@dataclass(frozen=True, slots=True)
class PrefixTree:
    """The token tree of a set of statements: one node per distinct proper token prefix, in
    depth-first (sorted) order, so a node's parent always comes before it.

    ``token[v]`` is the prefix's last token, ``parent[v]`` the node of the prefix one token
    shorter (-1 for a first token), ``depth[v]`` its position id; ``paths[i][k - 1]`` is the
    node of statement ``i``'s first ``k`` tokens, whose state predicts its token ``k``.

    >>> tree = PrefixTree.build([(0, 5, 6, 1), (0, 5, 6, 2), (0, 7, 1)], share=True)
    >>> tree.token, tree.parent, tree.depth
    ([0, 5, 6, 7], [-1, 0, 1, 0], [0, 1, 2, 1])
    >>> tree.paths
    [[0, 1, 2], [0, 1, 2], [0, 3]]
    >>> len(PrefixTree.build([(0, 5, 6, 1), (0, 5, 6, 2)], share=False).token)  # no sharing
    6
    """

    token: list[int]
    parent: list[int]
    depth: list[int]
    paths: list[list[int]]

    @classmethod
    def build(cls, seqs: Sequence[Ids], *, share: bool) -> PrefixTree:
        """``share``: statements share the nodes of their common prefixes (else every
        statement is a chain of its own)."""
        order = sorted(range(len(seqs)), key=lambda i: seqs[i]) if share else range(len(seqs))
        token: list[int] = []
        parent: list[int] = []
        paths: list[list[int]] = [[] for _ in seqs]
        previous: Ids = ()
        last: list[int] = []
        for i in order:
            seq = seqs[i]
            keep = min(common_length(previous, seq), len(seq) - 1) if share else 0
            path = last[:keep]  # a statement that is a prefix of this one has one node less
            for k in range(len(path), len(seq) - 1):
                parent.append(path[-1] if path else -1)
                token.append(seq[k])
                path.append(len(token) - 1)
            paths[i] = path
            previous, last = seq, path
        depth = [0] * len(token)
        for v, p in enumerate(parent):
            depth[v] = depth[p] + 1 if p >= 0 else 0
        return cls(token, parent, depth, paths)

    def pack(self, limit: int) -> list[tuple[list[int], int]]:
        """Rows of at most ``limit`` nodes: ``(nodes, first owned column)``. The nodes run in
        depth-first order, cut into rows; a row starts with its first node's ancestors
        (context only, owned by an earlier row), so every node sees its whole prefix in its
        row. Rows are full but for the last, so a batch of them carries no padding.

        >>> PrefixTree.build([(0, 5, 6, 1), (0, 5, 6, 2), (0, 7, 1)], share=True).pack(3)
        [([0, 1, 2], 0), ([0, 3], 1)]
        """
        rows: list[tuple[list[int], int]] = []
        current: list[int] = []
        owned = 0
        for v in range(len(self.token)):
            if len(current) >= limit:
                rows.append((current, owned))
                current = self.ancestors(v)
                owned = len(current)
            current.append(v)
        if current:
            rows.append((current, owned))
        return rows

    def ancestors(self, v: int) -> list[int]:
        """The nodes above ``v``, root first."""
        chain: list[int] = []
        p = self.parent[v]
        while p >= 0:
            chain.append(p)
            p = self.parent[p]
        return chain[::-1]


def score_statements(
    scorer: CausalScorer, statements: Sequence[Statement], *, share: bool
) -> list[tuple[float, int]]:
    """(summed log-probability, scored tokens) of each statement; ``share``: run every shared
    token prefix once in packed tree rows (else every statement is a plain forward of its own,
    the reference path). A statement longer than a row (the model's sliding window, whose
    layers a packed row's mask would override) is a plain forward too."""
    n = len(statements)
    todo = [i for i in range(n) if statements[i].scored]
    longest = max((len(statements[i].ids) for i in todo), default=1)
    limit = scorer._row_limit(longest - 1)
    totals = [0.0] * n
    packed = [i for i in todo if share and len(statements[i].ids) - 1 <= limit]
    plain = [i for i in todo if not share or len(statements[i].ids) - 1 > limit]
    if packed:
        _score_tree(scorer, statements, packed, totals, limit)
    if plain:
        _score_tree(scorer, statements, plain, totals, None)
    scorer._report(n - len(todo))
    return [(totals[i], len(statements[i].scored)) for i in range(n)]


def _score_tree(scorer: CausalScorer, statements: Sequence[Statement], todo: list[int],
                totals: list[float], limit: int | None) -> None:
    """Adds the statements' log-probabilities to ``totals``: their prefix tree packed into
    rows of ``limit`` under tree masks, or (``limit=None``) one plain causal row each."""
    tree = PrefixTree.build([statements[i].ids for i in todo], share=limit is not None)
    rows = tree.pack(limit) if limit is not None else [(path, 0) for path in tree.paths]
    owner: dict[int, tuple[int, int]] = {}  # node -> (row, column) where it is computed
    for r, (nodes, first) in enumerate(rows):
        for c in range(first, len(nodes)):
            owner[nodes[c]] = (r, c)
    wanted: list[dict[tuple[int, int], None]] = [{} for _ in rows]  # (column, target) per row
    done = [0] * len(rows)  # statements whose last scored node a row computes
    for k, i in enumerate(todo):
        st, path = statements[i], tree.paths[k]
        last = -1
        for p in st.scored:
            r, c = owner[path[p - 1]]
            wanted[r][(c, st.ids[p])] = None
            last = max(last, r)
        done[last] += 1
    logprob: dict[tuple[int, int], float] = {}  # (node, target) -> log-probability

    def work(batch: list[int]) -> None:
        chosen = [rows[b] for b in batch]
        ids, attention = scorer._padded([[tree.token[v] for v in nodes] for nodes, _ in chosen])
        if limit is None:
            states, _ = scorer._run(ids, attention)
        else:
            pos, _ = scorer._padded([[tree.depth[v] for v in nodes] for nodes, _ in chosen],
                                    pad=0)
            parents = []
            for nodes, _ in chosen:
                column = {v: c for c, v in enumerate(nodes)}
                parents.append([column.get(tree.parent[v], -1) for v in nodes])
            mask = tree_mask(parents, ids.shape[1], scorer.model.dtype, ids.device)
            states, _ = scorer._run(ids, mask, pos)
        cells: dict[tuple[int, int], int] = {}  # (row, column) -> state slot
        picks: list[tuple[int, int, int]] = []  # (slot, target, node)
        for r, b in enumerate(batch):
            nodes = rows[b][0]
            for c, target in wanted[b]:
                picks.append((cells.setdefault((r, c), len(cells)), target, nodes[c]))
        if picks:
            order = list(cells)
            gathered = states[scorer._long([rc[0] for rc in order]),
                              scorer._long([rc[1] for rc in order])]
            values = scorer._first_tokens(
                gathered, scorer._long([s for s, _, _ in picks]),
                scorer._long([t for _, t, _ in picks])).double().tolist()
            for (_, target, node), value in zip(picks, values, strict=True):
                logprob[(node, target)] = value
        scorer._report(sum(done[b] for b in batch))

    label = "statements" if limit is not None else "plain statements"
    scorer.batcher(label).run([len(nodes) for nodes, _ in rows], work)
    for k, i in enumerate(todo):
        st, path = statements[i], tree.paths[k]
        totals[i] = sum(logprob[(path[p - 1], st.ids[p])] for p in st.scored)
