"""Which generation prompts share a token prefix long enough to run it once (no torch here).

:func:`shared_prefixes` sorts the prompts' token ids, so that prompts with a common start lie
side by side, and walks them once: a group grows while its members still share at least
``min_tokens`` tokens and adding one more member saves at least as many prefix tokens as it
costs the group (``(g - 1) x L`` tokens saved by ``g`` members sharing ``L`` tokens: a member
that would shrink ``L`` too far starts a group of its own). The shared length stops one token
before the shortest member's end, so that every member has a suffix of its own (its last
position gives the first answer token's logits). Prompts in no group of two or more are left
out: they run as they did before (:mod:`probes.backends.causal_generate`).

>>> a, b, c = [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 9], [7, 8]
>>> shared_prefixes([a, c, b], min_tokens=3)
[(4, [0, 2])]
>>> shared_prefixes([a, c, b], min_tokens=5)
[]
>>> shared_prefixes([a, a, a], min_tokens=2)
[(5, [0, 1, 2])]
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_SHARED_TOKENS = 16
"""The shortest prefix worth running once for several prompts. Below it the prefill saved
(a few tokens per prompt) is smaller than what a group costs: one more forward call for the
prefix, its key/value cache copied to every row, and the group's rows batched apart from the
other prompts (more decode steps of fewer rows). A few-shot block or a chat template's system
turn is far longer; "Q: What is the capital of" (7 tokens) is not shared."""


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` have in common.

    >>> common_length([1, 2, 3], [1, 2, 4]), common_length([1], [2]), common_length([], [1])
    (2, 0, 0)
    """
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def shared_prefixes(sequences: Sequence[Sequence[int]], min_tokens: int = MIN_SHARED_TOKENS
                    ) -> list[tuple[int, list[int]]]:
    """The groups of prompts (their indices, in order) that share a prefix of at least
    ``min_tokens`` tokens, each with the shared length (see the module)."""
    order = sorted(range(len(sequences)), key=lambda i: (tuple(sequences[i]), i))
    groups: list[tuple[int, list[int]]] = []
    members: list[int] = []
    shared = 0

    def close() -> None:
        if len(members) >= 2 and shared >= min_tokens:
            groups.append((shared, sorted(members)))

    for i in order:
        seq = sequences[i]
        if members:
            joined = min(shared, common_length(sequences[members[0]], seq), len(seq) - 1)
            if joined >= min_tokens and len(members) * joined >= (len(members) - 1) * shared:
                members.append(i)
                shared = joined
                continue
            close()
        members, shared = [i], len(seq) - 1
    close()
    return sorted(groups, key=lambda g: g[1][0])
