"""COPEN as classification, shared by linear probing and fine-tuning.

- :func:`load_examples`: the loaded instances of a COPEN task as :class:`Example` lists by
  split (texts built with the zero-shot templates, :func:`probes.benchmarks.copen.forms.example`);
- :func:`batch_logits` / :func:`loss_and_correct`: options of different counts padded into one
  ``[batch, options]`` matrix, cross-entropy and accuracy over it;
- :func:`default_pooling`: the paper's feature per architecture (Appendix A.2): [CLS] for
  BERT-style encoders, ``<s>`` (position 0) for RoBERTa, the last token for GPT-2/GPT-Neo (and
  other decoders), for BART the decoder's state at the final ``</s>`` (``decoder_eos``, as
  BartForSequenceClassification), the first token for T5 (which is trained text-to-text
  instead, :mod:`probes.benchmarks.copen.text2text`);
- :func:`load_examples` with ``text_to_text=True``: one Table 9 input per instance, the options
  in the released order (their letters are the targets);
- :func:`write_run`: a ``runs`` row and ``scores`` rows (log-softmax of the logits, one row per
  option, token count 1), so the SQL metrics read linear probing and fine-tuning like zero-shot;
- :func:`seed_summary`: mean and population standard deviation over seeds.

>>> default_pooling("bert", "masked"), default_pooling("roberta", "masked")
('cls', 'cls')
>>> [default_pooling(t, k) for t, k in [("gpt2", "causal"), ("bart", "seq2seq"), ("t5", "seq2seq")]]
['last', 'decoder_eos', 'first']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import torch

from probes.benchmarks.copen import PROBES, TASK_OF, task_name
from probes.benchmarks.copen.forms import Example, example, text_to_text
from probes.benchmarks.copen.runs import replace_run
from probes.engine.errors import ProbeError
from probes.engine.runner.plan import run_id as make_run_id
from probes.engine.tasks import Instance
from probes.results.copen import seed_summary  # noqa: F401 (re-exported)

SEEDS = (42, 43, 44)

TEXT_TO_TEXT = frozenset({"t5", "mt5", "umt5", "longt5", "switch_transformers"})
"""Model types trained text-to-text (Table 9) with their vocabulary head, as the paper's T5."""
DECODER_EOS = frozenset({"bart", "mbart", "plbart"})
"""Model types whose feature is the decoder's state at the final ``</s>``, as BART's."""
_LAST_SEQ2SEQ = {"marian", "pegasus", "blenderbot"}
POOLINGS = ("cls", "first", "last", "mean", "decoder_eos")


def default_pooling(model_type: str, kind: str) -> str:
    """The pooled feature the paper uses for a model type (see the module docstring)."""
    if model_type in DECODER_EOS:
        return "decoder_eos"
    if kind == "causal" or model_type in _LAST_SEQ2SEQ:
        return "last"
    if model_type in TEXT_TO_TEXT:
        return "first"
    return "cls"


def load_examples(con: duckdb.DuckDBPyConnection, task: str, text_to_text: bool = False
                  ) -> dict[str, list[Example]]:
    """Examples of a loaded COPEN task by split (ordered by instance id); ``text_to_text``:
    the Table 9 forms (:func:`text_to_text_example`)."""
    probe = PROBES[task_name(task)]
    cur = con.execute("SELECT * FROM instances WHERE probe = ? ORDER BY split, instance_id",
                      [probe])
    cols = [d[0] for d in cur.description]
    out: dict[str, list[Example]] = {}
    for row in cur.fetchall():
        inst = Instance.from_row(dict(zip(cols, row, strict=True)))
        build = text_to_text_example if text_to_text else example
        out.setdefault(inst.split, []).append(build(
            task, inst.split, inst.instance_id, inst.target, inst.gold, inst.candidates,
            inst.fields))
    if not out:
        raise ProbeError(f"no instances of {probe} in the results file: load the COPEN files "
                         "first (`python -m probes.benchmarks.copen load DIR`)")
    return out


def text_to_text_example(task: str, split: str, instance_id: str, target: str | None,
                         gold: list[str], candidates: list[str], fields: Mapping[str, Any]
                         ) -> Example:
    """One instance as its Table 9 input (``texts``: the one input string) and its options in
    the released order (CSJ candidates, CiC concepts; CPJ ``false``/``true``), whose targets
    are :func:`probes.benchmarks.copen.forms.text_to_text_target` of their index.

    >>> e = text_to_text_example("csj", "dev", "i", "Rose", ["B"], ["A", "B"], {"query": "Rose"})
    >>> e.texts[0], e.options, e.gold
    ('choose the most similar entity to Rose: (A) A, (B) B.', ('A', 'B'), 1)
    """
    t = task_name(task)
    if t == "cpj":
        base = example(t, split, instance_id, target, gold, candidates, fields)
        return Example(split, instance_id, (text_to_text(t, {"statement": base.texts[0]}, []),),
                       base.options, base.gold, pairwise=False)
    options = list(dict.fromkeys([*candidates, *gold]))
    return Example(split, instance_id, (text_to_text(t, fields, options),), tuple(options),
                   options.index(gold[0]) if gold else None, pairwise=False)


def require_splits(examples: dict[str, list[Example]], task: str) -> None:
    """Training needs labelled train and dev instances."""
    for split in ("train", "dev"):
        if not any(e.gold is not None for e in examples.get(split, [])):
            raise ProbeError(f"COPEN {task}: no labelled {split} instances; linear probing and "
                             f"fine-tuning train on train and stop early on dev")


def batch_logits(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-example logit vectors (different lengths) as ``[batch, max]``, padded with -inf.

    >>> batch_logits([torch.tensor([1.0, 2.0]), torch.tensor([3.0])]).tolist()
    [[1.0, 2.0], [3.0, -inf]]
    """
    width = max(int(r.shape[0]) for r in rows)
    out = torch.full((len(rows), width), float("-inf"), dtype=rows[0].dtype,
                     device=rows[0].device)
    for i, r in enumerate(rows):
        out[i, : r.shape[0]] = r
    return out


def loss_and_correct(rows: Sequence[torch.Tensor], gold: Sequence[int]) -> tuple[torch.Tensor,
                                                                                 int]:
    """Mean cross-entropy over the options, and how many are right (a tie is wrong).

    >>> loss, right = loss_and_correct([torch.tensor([0.0, 2.0]), torch.tensor([1.0, 1.0])], [1, 0])
    >>> round(float(loss), 4), right
    (0.41, 1)
    """
    logits = batch_logits(rows)
    target = torch.tensor(list(gold), device=logits.device)
    loss = torch.nn.functional.cross_entropy(logits, target)
    gold_score = logits.gather(1, target[:, None])
    others = logits.scatter(1, target[:, None], float("-inf"))
    right = int((gold_score.squeeze(1) > others.max(dim=1).values).sum())
    return loss, right


@dataclass
class FitResult:
    """A trained model's record: epochs run, the best epoch, dev accuracy there, wall time."""

    epochs: int
    best_epoch: int
    dev_accuracy: float
    wall_s: float


def write_run(con: duckdb.DuckDBPyConnection, *, model: str, revision: str | None, kind: str,
              task: str, method: str, seed: int, settings: dict[str, Any], fit: FitResult,
              examples: Sequence[Example], logits: Sequence[torch.Tensor],
              describe: dict[str, Any] | None = None, family: str | None = None) -> str:
    """Write one trained model's predictions as a run (replacing an earlier one of the same
    setting) and return its run id. ``kind``: the backend's registered name; ``family``: the
    LM family it was scored as (default: ``kind``, for a model loaded by its config's kind)."""
    probe = PROBES[task_name(task)]
    identity = {"method": method, "seed": seed, **settings}
    rid = make_run_id(model, revision, probe, identity)
    runtime = {"copen": {"method": method, "task": task_name(task), "seed": seed, **settings,
                         "epochs": fit.epochs, "best_epoch": fit.best_epoch,
                         "dev_accuracy": fit.dev_accuracy}}
    config = {"task": TASK_OF[probe], "method": method, "runtime": runtime,
              "backend": describe or {}}
    rows = []
    for ex, lg in zip(examples, logits, strict=True):
        logp = torch.log_softmax(lg.detach().float().cpu(), dim=0).tolist()
        for j, option in enumerate(ex.options):
            text = ex.texts[j] if ex.pairwise else ex.texts[0]
            rows.append((rid, probe, ex.split, ex.instance_id, 0, option, option, text,
                         float(logp[j]), 1))
    replace_run(con, rid=rid, model=model, revision=revision, kind=kind,
                family=family or kind, probe=probe,
                config=config, describe=describe or {}, batch_size=settings.get("batch_size"),
                wall_s=fit.wall_s, rows=rows)
    return rid


def accuracy(rows: Sequence[torch.Tensor], examples: Sequence[Example]) -> float | None:
    """Accuracy over the labelled examples (None when none is labelled)."""
    pairs = [(r, e.gold) for r, e in zip(rows, examples, strict=True) if e.gold is not None]
    if not pairs:
        return None
    with torch.no_grad():
        _, right = loss_and_correct([p[0] for p in pairs], [int(p[1]) for p in pairs])
    return right / len(pairs)
