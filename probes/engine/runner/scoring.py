"""Answering a chunk of scoring requests with a backend, and turning answers into rows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm

from probes.backends.generation import GenerateSettings
from probes.backends.protocol import progress_to
from probes.engine.errors import ProbeError
from probes.engine.runner.plan import Plan
from probes.engine.tasks import Request, Rows, Task


def vocab_for(scorer: Any, name: str) -> Any:
    """The vocabulary a topk request names: ``words`` (the backend's default, None),
    ``lowercase`` (lower-case whole words only) or ``all`` (every token; the non-words marked,
    probes.engine.wordvocab.nonword)."""
    if name == "words":
        return None
    if name == "lowercase":
        return scorer.word_vocab(lowercase=True)
    if name == "all":
        return scorer.word_vocab(every_token=True)
    raise ProbeError(f"unknown vocab {name!r}: use words, lowercase or all")


def score_requests(scorer: Any, reqs: Sequence[Request]) -> list[Any]:
    """Score requests of one chunk with as few backend calls as possible (one per op/options)."""
    out: list[Any] = [None] * len(reqs)
    groups: dict[tuple[str, tuple], list[int]] = {}
    for i, r in enumerate(reqs):
        groups.setdefault((r.op, r.options), []).append(i)
    for (op, options), idx in groups.items():
        if op == "loglik":
            res = scorer.loglik([reqs[i].args for i in idx])
        elif op == "pll":
            res = scorer.pll([reqs[i].args for i in idx])
        elif op == "topk":
            opts = dict(options)
            vocab = vocab_for(scorer, opts.get("vocab", "words"))
            mix = opts.get("mix")
            if mix:  # each request holds one prompt per weight; one mixed list per request
                prompts = [p for i in idx for p in reqs[i].args]
                res = scorer.topk(prompts, opts["k"], vocab, mix=list(mix))
            else:
                prompts = [reqs[i].args[0] for i in idx]
                res = (scorer.topk(prompts, opts["k"], vocab) if vocab is not None
                       else scorer.topk(prompts, opts["k"]))
        elif op == "generate":
            res = scorer.generate([reqs[i].args[0] for i in idx],
                                  GenerateSettings.from_options(options))
        else:
            raise ProbeError(f"unknown scoring operation {op!r} (a task module bug)")
        res = list(res)
        if len(res) != len(idx):
            raise ProbeError(f"backend {scorer.name} returned {len(res)} results for "
                             f"{len(idx)} {op} requests")
        for i, r in zip(idx, res, strict=True):
            out[i] = r
    return out


class Resolver:
    """Collects results by key and yields the rows of items whose requests are all answered."""

    def __init__(self, task: Task, work: Plan) -> None:
        self.task, self.work = task, work
        self.results: dict[str, Any] = {}
        self.waiting: dict[str, list[int]] = {}
        self.pending: list[int] = []
        for i, keys in enumerate(work.item_keys):
            unique = set(keys)
            self.pending.append(len(unique))
            for k in unique:
                self.waiting.setdefault(k, []).append(i)

    def add(self, results: dict[str, Any]) -> Rows:
        self.results.update(results)
        rows = Rows()
        for k in results:
            for i in self.waiting.get(k, ()):
                self.pending[i] -= 1
                if self.pending[i] == 0:
                    got = self.task.rows(self.work.items[i],
                                         [self.results[c] for c in self.work.item_keys[i]])
                    rows.scores += got.scores
                    rows.responses += got.responses
                    rows.generations += got.generations
        return rows


def scored_with_progress(scorer: Any, reqs: list[Request], bar: tqdm) -> list[Any]:
    """Score a chunk, moving the bar per backend batch when the scorer reports progress."""
    done = 0

    def step(n: int) -> None:
        nonlocal done
        n = min(n, len(reqs) - done)
        if n > 0:
            done += n
            bar.update(n)

    with progress_to(scorer, step):
        out = score_requests(scorer, reqs)
    bar.update(len(reqs) - done)
    return out


def culprit(error: Exception, chunk: Sequence[str], work: Plan) -> str:
    """The instance whose request a backend refused (found by the prompt text the error
    quotes), as ``instance <id> (target ...)``; ``an instance`` when it cannot be told."""
    m = re.search(r"prompt #\d+ \((['\"])(.*)\1\) has", str(error))
    snippet = m.group(2).removesuffix("...")[:60] if m else ""
    for key in chunk:
        text = "".join(str(a) for a in work.requests[key].args)
        if snippet and snippet in text:
            inst = work.instances[work.owner[key]]
            return f"instance {inst.instance_id} (target {inst.target!r}, split {inst.split})"
    return "an instance"
