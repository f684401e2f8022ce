"""K-shot prompt-based fine-tuning on OntoLAMA:
``python -m probes.benchmarks.ontolama.kshot -m MODEL -p PROBE``.

OntoLAMA's K-shot setting (He et al. 2023, section 5): the language model itself is fine-tuned
on the prompt, with the label words as the classifier, on K examples per class.

- **Data**: the probe's exported instances (``python -m probes.engine.export``). K examples per
class
  (gold ``"1"`` / ``"0"``) are drawn from ``train``, and as many from ``dev`` for model
  selection, with ``random.Random(seed)`` over the instances sorted by id; the best dev epoch
  is evaluated on all of ``test``, or a seeded class-balanced sample of it (``--sample N``).
  ``--full``: the fully supervised setting (whole train and dev splits, T1 L1, one seed, K = -1;
  1 epoch, or 10 for a small training split, as the paper: :func:`full_epochs`).
- **Protocol** (He et al. 2023, L176): by default every template of the probe's ``prompts``
  x every set of ``params.label_words`` x every seed, i.e. 2 x 3 x 3 = 18 runs per K
  (``--template``, ``--label-set``, ``--seed`` restrict it); a run already done is skipped.
- **Class scores**, one per class, from its label words' scores (:func:`combine`): the sum of
  their probabilities (the paper's equation, default) or the mean of their log-probabilities
  (``--scoring mean_logprob``, OpenPrompt); a word's score:
  masked LMs: log-softmax at the mask of the word's first token (OpenPrompt's verbaliser
  default for words of several tokens); causal LMs: the log-likelihood of the continuation from
  the slot (the word and the rest of the template), as in zero-shot scoring. The loss is the
  cross-entropy of the softmax over the two class scores.
- **Training** (:class:`KshotConfig`, the values of DeepOnto's ``scripts/ontolama/config.yaml``
  on GitHub; batch size and length are not in the paper nor the PyPI package): AdamW,
  learning rate 1e-5, weight decay 1e-2, a linear schedule with 50 warm-up steps (with few
  examples there are fewer steps than that, so the rate never reaches its peak, as in the
  original), 10 epochs, batch size 4, at most 256 tokens, gradient norm clipped at 1; dev
  accuracy after every epoch, the weights of the best epoch (the first of ties) kept.
- **K** in {4, 8, 16, 32, 64, 128}, seeds 6666, 7777, 8888.

Each (K, template, label set, seed) writes one run: ``runs.config`` holds the probe's
``prompts`` and ``params`` and ``kshot`` (K, seed, template, label set, scoring, sample,
hyper-parameters, best epoch, dev accuracy and train loss per epoch); ``scores`` holds, per
test instance, one row per label word of the chosen set (``prompt_id`` encoded as in the
zero-shot task), so eval/ontolama/ontolama_accuracy.sql scores K-shot runs too,
ontolama_kshot.sql averages them over seeds and ontolama_kshot_protocol.sql over all runs
of a K.

>>> picked = sample_k([Instance("p", "train", str(i), None, [str(i % 2)], [], {})
...                    for i in range(10)], 2, 6666)
>>> sorted(i.gold[0] for i in picked)
['0', '0', '1', '1']
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import torch

from kg import options as kg_options
from probes.backends.protocol import Capabilities, capabilities, family
from probes.engine import options
from probes.engine.errors import ProbeError
from probes.engine.render import render
from probes.engine.spec import Probe, discover
from probes.engine.tasks import Instance
from probes.engine.tasks.subsumption import CLASSES, label_sets, prompt_id
from probes.engine.train import LoopSettings, fit, python_shuffle
from probes.results import connect, transaction
from probes.results.writers import (
    PromptRow,
    Run,
    delete_run,
    insert_run,
    write_prompts,
    write_scores,
)

KS = (4, 8, 16, 32, 64, 128)
SCORINGS = ("sum_prob", "mean_logprob")
FULL = -1
"""``K = -1``: the fully supervised setting (the whole training split, L176)."""
SEEDS = (6666, 7777, 8888)

PAPER_FULL_EPOCHS = {"ontolama/schemaorg-atomic": 10, "ontolama/foodon-complex": 10,
                     "ontolama/doid-atomic": 1, "ontolama/foodon-atomic": 1,
                     "ontolama/go-atomic": 1, "ontolama/go-complex": 1}
"""Epochs of the fully supervised setting per dataset of the paper (L178: "for the fully
supervised setting involving very large training samples, we only train for 1 epoch", footnote
17: "Since Schema.org's Atomic SI and FoodOn's Complex SI datasets have a small training set,
their fully supervised settings still take 10 epochs")."""

SMALL_TRAIN = 10_000
"""A dataset the paper does not name (Pizza, a user's probe) gets the paper's reason applied:
10 epochs when its training split is smaller than this (between the paper's largest small
training set, FoodOn complex's 3,754, and its smallest large one, GO complex's 72,318), else 1."""


def full_epochs(probe: str, n_train: int) -> int:
    """Epochs of the fully supervised setting (:data:`PAPER_FULL_EPOCHS`, else by size).

    >>> full_epochs("ontolama/go-atomic", 42_838), full_epochs("ontolama/schemaorg-atomic", 808)
    (1, 10)
    >>> full_epochs("ontolama/pizza-atomic", 752), full_epochs("mine/big", 50_000)
    (10, 1)
    """
    if probe in PAPER_FULL_EPOCHS:
        return PAPER_FULL_EPOCHS[probe]
    return 10 if n_train < SMALL_TRAIN else 1


@dataclass(frozen=True)
class KshotConfig:
    """Hyper-parameters of one K-shot fine-tuning run."""

    lr: float = 1e-5
    weight_decay: float = 1e-2
    warmup_steps: int = 50
    epochs: int = 10
    batch_size: int = 4
    eval_batch_size: int = 32
    max_length: int = 256
    max_grad_norm: float = 1.0


@dataclass
class KshotResult:
    """What one (K, seed) run did."""

    run_id: str
    k: int
    seed: int
    best_epoch: int
    dev_accuracy: list[float]
    train_loss: list[float]
    test_accuracy: float
    test_n: int
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def sample_k(instances: Sequence[Instance], k: int, seed: int) -> list[Instance]:
    """K instances per class (``"1"``, ``"0"``), drawn with ``seed`` from the instances sorted
    by id, in a seeded shuffled order. Too few of a class is a ProbeError."""
    rng = random.Random(seed)
    out: list[Instance] = []
    for cls in CLASSES:
        pool = sorted((i for i in instances if i.gold[:1] == [cls]), key=lambda i: i.instance_id)
        if len(pool) < k:
            split = instances[0].split if instances else "?"
            raise ProbeError(f"split {split} has {len(pool)} instances of class {cls}, fewer "
                             f"than K = {k}; use a smaller K")
        out += rng.sample(pool, k)
    rng.shuffle(out)
    return out


class PromptClassifier:
    """A language model with one template and one label-word set as a two-class classifier."""

    def __init__(self, model: Any, tokenizer: Any, caps: Capabilities, template: str,
                 words: dict[str, list[str]], max_length: int = 256,
                 scoring: str = "sum_prob") -> None:
        self.scoring = scoring
        # the verbaliser reads the slot: at a mask token (PLL-scored, masked LMs) or as the
        # next token (prompts end at the slot, causal LMs); an encoder-decoder does neither
        self.at_mask = caps.slot_scoring == "pll" and caps.slot_token is not None
        if not (self.at_mask or caps.ends_at_slot):
            raise ProbeError("K-shot fine-tuning supports masked and causal LMs (a slot at a "
                             "mask token, or prompts that end at the slot), not this model")
        self.model, self.tokenizer = model, tokenizer
        self.template, self.words, self.max_length = template, words, max_length
        self.device = next(model.parameters()).device
        if self.at_mask:
            if tokenizer.mask_token is None:
                raise ProbeError("the masked LM's tokenizer has no mask token")
            self.first_ids = {cls: [self._first_token(w) for w in ws] for cls, ws in words.items()}
        else:
            from probes.backends.causal import leading_special_ids

            self.start = leading_special_ids(tokenizer) or [
                t for t in (tokenizer.bos_token_id, tokenizer.eos_token_id) if t is not None][:1]

    def _first_token(self, word: str) -> int:
        ids = self.tokenizer(" " + word, add_special_tokens=False)["input_ids"]
        probe = self.tokenizer(f"x {word}", add_special_tokens=False)["input_ids"]
        x = self.tokenizer("x", add_special_tokens=False)["input_ids"]
        # the word's tokens as they follow other text (space-prefixed BPE or WordPiece)
        ids = probe[len(x):] if probe[:len(x)] == x and len(probe) > len(x) else ids
        return int(ids[0])

    def _pad(self, seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        pad = self.tokenizer.pad_token_id
        pad = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        att = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, :len(s)] = torch.tensor(s)
            att[r, :len(s)] = 1
        return ids.to(self.device), att.to(self.device)

    def _check(self, n: int, text: str) -> None:
        if n > self.max_length:
            raise ProbeError(f"prompt {text[:80]!r} has {n} tokens, more than max_length "
                             f"{self.max_length}")

    def word_scores(self, batch: Sequence[Instance]) -> dict[str, torch.Tensor]:
        """Per class, a [batch, n_words] tensor of the class's label-word scores."""
        if self.at_mask:
            return self._masked(batch)
        return self._causal(batch)

    def class_scores(self, batch: Sequence[Instance]) -> torch.Tensor:
        """[batch, 2]: column j is the score of class j (``"0"``, ``"1"``), so the argmax is
        the predicted label (:func:`combine`)."""
        return combine(self.word_scores(batch), self.scoring)

    def _masked(self, batch: Sequence[Instance]) -> dict[str, torch.Tensor]:
        mask = self.tokenizer.mask_token
        seqs, where = [], []
        for inst in batch:
            text = render(self.template, inst.fields, target=inst.target, slot=mask).text
            ids = self.tokenizer(text, add_special_tokens=True)["input_ids"]
            self._check(len(ids), text)
            seqs.append(ids)
            where.append(ids.index(self.tokenizer.mask_token_id))
        ids, att = self._pad(seqs)
        logits = self.model(input_ids=ids, attention_mask=att).logits
        rows = logits[torch.arange(len(batch), device=self.device),
                      torch.tensor(where, device=self.device)]
        logp = torch.log_softmax(rows.float(), dim=-1)
        return {cls: logp[:, torch.tensor(tok, device=self.device)]
                for cls, tok in self.first_ids.items()}

    def _causal(self, batch: Sequence[Instance]) -> dict[str, torch.Tensor]:
        seqs: list[list[int]] = []
        spans: list[tuple[int, int]] = []
        order: list[tuple[str, int]] = []
        for inst in batch:
            for cls, ws in self.words.items():
                for j, w in enumerate(ws):
                    r = render(self.template, inst.fields, target=inst.target, slot=w)
                    assert r.slot is not None
                    context = r.text[:r.slot[0]].rstrip()
                    ctx_ids = self.tokenizer(context, add_special_tokens=False)["input_ids"]
                    all_ids = self.tokenizer(r.text, add_special_tokens=False)["input_ids"]
                    n_ctx = len(ctx_ids) if all_ids[:len(ctx_ids)] == ctx_ids else len(ctx_ids) - 1
                    seq = self.start + all_ids
                    self._check(len(seq), r.text)
                    seqs.append(seq)
                    spans.append((len(self.start) + n_ctx, len(seq)))
                    order.append((cls, j))
        ids, att = self._pad(seqs)
        rows_i = [r for r, (a, b) in enumerate(spans) for _ in range(a - 1, b - 1)]
        pos_i = [t for a, b in spans for t in range(a - 1, b - 1)]  # t predicts token t + 1
        rows = torch.tensor(rows_i, device=self.device)
        pos = torch.tensor(pos_i, device=self.device)
        logits = self.model(input_ids=ids, attention_mask=att).logits[rows, pos].float()
        token_lp = torch.log_softmax(logits, dim=-1).gather(1, ids[rows, pos + 1][:, None])
        totals = torch.zeros(len(seqs), device=self.device).index_add(0, rows, token_lp[:, 0])
        out = {cls: torch.empty((len(batch), len(ws)), device=self.device)
               for cls, ws in self.words.items()}
        per = sum(len(ws) for ws in self.words.values())
        for n, (cls, j) in enumerate(order):
            out[cls][n // per, j] = totals[n]
        return out


def combine(word_scores: dict[str, torch.Tensor], scoring: str = "sum_prob") -> torch.Tensor:
    """[batch, 2] class scores from each class's [batch, n_words] word log-probabilities:
    ``sum_prob`` (the paper's equation, L149: log of the sum of the words' probabilities) or
    ``mean_logprob`` (OpenPrompt: the mean of their log-probabilities).

    >>> ws = {"0": torch.tensor([[0.01, 0.5]]).log(), "1": torch.tensor([[0.2, 0.2]]).log()}
    >>> combine(ws).exp()  # 0.01 + 0.5 against 0.2 + 0.2
    tensor([[0.5100, 0.4000]])
    >>> combine(ws, "mean_logprob").exp()  # geometric means: sqrt(0.005) against 0.2
    tensor([[0.0707, 0.2000]])
    """
    if scoring not in SCORINGS:
        raise ProbeError(f"unknown class scoring {scoring!r}; use one of {', '.join(SCORINGS)}")
    agg = (lambda t: torch.logsumexp(t, dim=1)) if scoring == "sum_prob" else (
        lambda t: t.mean(dim=1))
    return torch.stack([agg(word_scores["0"]), agg(word_scores["1"])], dim=1)


def balanced_sample(instances: Sequence[Instance], n: int | None, seed: int = 42
                    ) -> list[Instance]:
    """A seeded, class-balanced sample of ``n`` instances (``n // 2`` per class, ordered by a
    seeded hash of the id), or all of them when ``n`` is None or not smaller.

    >>> pool = [Instance("p", "test", str(i), None, [str(int(i < 8))], [], {}) for i in range(20)]
    >>> sorted(i.gold[0] for i in balanced_sample(pool, 6))
    ['0', '0', '0', '1', '1', '1']
    """
    if n is None or n >= len(instances):
        return list(instances)
    out: list[Instance] = []
    for cls in CLASSES:
        pool = sorted((i for i in instances if i.gold[:1] == [cls]), key=lambda i: hashlib.md5(
            f"{seed}:{i.instance_id}".encode()).hexdigest())
        out += pool[:n // 2]
    return sorted(out, key=lambda i: i.instance_id)


def _labels(batch: Sequence[Instance], device: torch.device) -> torch.Tensor:
    return torch.tensor([int(i.gold[0]) for i in batch], device=device)


def evaluate(clf: PromptClassifier, instances: Sequence[Instance], batch_size: int
             ) -> tuple[float, list[dict[str, list[float]]]]:
    """(accuracy, per instance the word scores per class); a tie counts as wrong."""
    clf.model.eval()
    right = 0
    words: list[dict[str, list[float]]] = []
    with torch.no_grad():
        for s in range(0, len(instances), batch_size):
            batch = instances[s:s + batch_size]
            ws = clf.word_scores(batch)
            cs = combine(ws, clf.scoring)
            gold = _labels(batch, clf.device)
            right += int((cs.gather(1, gold[:, None]).squeeze(1)
                          > cs.gather(1, (1 - gold)[:, None]).squeeze(1)).sum())
            for r in range(len(batch)):
                words.append({cls: ws[cls][r].tolist() for cls in ws})
    return (right / len(instances) if instances else 0.0), words


def train(clf: PromptClassifier, train_set: Sequence[Instance], dev_set: Sequence[Instance],
          cfg: KshotConfig, seed: int, progress: str | None = None
          ) -> tuple[int, list[float], list[float]]:
    """Fine-tune in place with the shared loop (:func:`probes.engine.train.fit`); returns (best
    epoch, dev accuracy per epoch, train loss per epoch) and leaves the best epoch's weights in the
    model."""
    torch.manual_seed(seed)
    settings = LoopSettings(lr=cfg.lr, weight_decay=cfg.weight_decay, epochs=cfg.epochs,
                            batch_size=cfg.batch_size, warmup_steps=cfg.warmup_steps,
                            max_grad_norm=cfg.max_grad_norm)

    def loss(batch: Sequence[Instance]) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(clf.class_scores(batch),
                                                 _labels(batch, clf.device))

    out = fit(clf.model, train_set, loss, lambda: evaluate(clf, dev_set, cfg.eval_batch_size)[0],
              settings, python_shuffle(seed), progress)
    return out.best_epoch, out.dev_accuracy, out.train_loss


def load_split(con: duckdb.DuckDBPyConnection, probe: str, split: str) -> list[Instance]:
    """The probe's instances of one split that have gold, sorted by id."""
    cur = con.execute("SELECT * FROM instances WHERE probe = ? AND split = ? AND len(gold) > 0 "
                      "ORDER BY instance_id", [probe, split])
    cols = [d[0] for d in cur.description]
    return [Instance.from_row(dict(zip(cols, r, strict=True))) for r in cur.fetchall()]


def stored_test_accuracy(con: duckdb.DuckDBPyConnection, run_id: str,
                         test: Sequence[Instance], scoring: str) -> tuple[float, int, float]:
    """(test accuracy, test n, wall seconds) of a finished run, from its stored word scores:
    the same class rule as :func:`evaluate` (:func:`combine`, a tie counts as wrong), so a
    resumed run reports what it reported when it ran."""
    rows = con.execute("SELECT instance_id, label, score FROM scores WHERE run_id = ? "
                       "ORDER BY instance_id, label, candidate", [run_id]).fetchall()
    per: dict[str, dict[str, list[float]]] = {}
    for iid, label, score in rows:
        per.setdefault(iid, {}).setdefault(label, []).append(score)
    gold = {i.instance_id: i.gold[0] for i in test}
    per = {iid: words for iid, words in per.items() if iid in gold}
    right = 0
    for iid, words in per.items():
        cs = combine({c: torch.tensor([words[c]], dtype=torch.float64) for c in CLASSES},
                     scoring)[0]
        g = int(gold[iid])
        right += int(cs[g] > cs[1 - g])
    (wall,) = con.execute("SELECT coalesce(wall_s, 0) FROM runs WHERE run_id = ?",
                          [run_id]).fetchone() or (0.0,)
    return (right / len(per) if per else float("nan")), len(per), float(wall)


def _run_id(model: str, revision: str, probe: str, identity: dict[str, Any]) -> str:
    raw = json.dumps([model, revision, probe, "kshot", identity], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def write_run(con: duckdb.DuckDBPyConnection, *, model: str, revision: str, kind: str,
              lm_family: str, probe: Probe, template_index: int, label_set: str,
              result: KshotResult,
              identity: dict[str, Any], test: Sequence[Instance],
              words: Sequence[dict[str, list[float]]]) -> None:
    """One run row and its test scores (replacing an earlier run of the same setting);
    ``kind`` is the backend's registered name, ``lm_family`` the family it was scored as."""
    spec = probe.spec
    names = [n for n, _ in label_sets(spec)]
    pid = prompt_id(template_index, names.index(label_set), len(names))
    word_lists = dict(label_sets(spec))[label_set]
    config = {"task": spec.task, "prompts": spec.prompts, "params": spec.params,
              "probe_file": str(probe.path),
              "kshot": {**identity, "best_epoch": result.best_epoch,
                        "dev_accuracy": result.dev_accuracy, "train_loss": result.train_loss}}
    rows = []
    for inst, ws in zip(test, words, strict=True):
        for cls, scores in ws.items():
            for w, sc in zip(word_lists[cls], scores, strict=True):
                text = render(spec.prompts[template_index], inst.fields, target=inst.target,
                              slot=w).text
                rows.append((result.run_id, spec.name, inst.split, inst.instance_id, pid, w, cls,
                             text, float(sc), 1))
    now = datetime.now(UTC).replace(tzinfo=None)
    run = Run(run_id=result.run_id, model=model, revision=revision, backend=kind,
              task=spec.task, probe=spec.name, config=config,
              started_at=now - timedelta(seconds=result.wall_s), finished_at=now,
              wall_s=result.wall_s, status="done", method="kshot", k=identity.get("k"),
              seed=identity.get("seed"), scoring=identity.get("scoring", "sum_prob"),
              family=lm_family)
    prompt = PromptRow(result.run_id, pid, f"T{template_index + 1}",
                       spec.prompts[template_index], label_set, word_lists)
    with transaction(con):
        delete_run(con, result.run_id, ("scores", "prompts", "runs"))
        insert_run(con, run)
        write_prompts(con, [prompt])
        write_scores(con, rows)


def run_kshot(con: duckdb.DuckDBPyConnection, model_name: str, probe: Probe, k: int, seed: int,
              *, template: int = 1, label_set: str = "L1", cfg: KshotConfig | None = None,
              test_limit: int | None = None, device: str | None = None,
              threads: int | None = None, scoring: str = "sum_prob",
              test_sample: int | None = None, epochs: int | None = None,
              progress: bool = False) -> KshotResult:
    """Fine-tune a fresh copy of ``model_name`` on K examples per class and write the run
    (``threads``: torch CPU threads, as ``probes.engine.run --threads``; ``epochs`` overrides
    ``cfg.epochs``, and when None the fully supervised setting takes :func:`full_epochs`)."""
    from probes.backends.registry import load_scorer

    cfg = cfg or KshotConfig()
    spec = probe.spec
    if spec.task != "subsumption":
        raise ProbeError(f"{probe.path}: K-shot fine-tuning is for subsumption probes, not "
                         f"{spec.task}")
    if not 1 <= template <= len(spec.prompts):
        raise ProbeError(f"{probe.path}: --template {template}: the probe has "
                         f"{len(spec.prompts)} templates (1..{len(spec.prompts)})")
    sets = dict(label_sets(spec))
    if label_set not in sets:
        raise ProbeError(f"{probe.path}: --label-set {label_set!r} is not one of "
                         f"{', '.join(sets)}")
    t0 = time.perf_counter()
    if k == FULL:  # the fully supervised setting: the whole train and dev splits
        train_set = load_split(con, spec.name, "train")
        dev_set = load_split(con, spec.name, "dev")
        cfg = replace(cfg, epochs=epochs or full_epochs(spec.name, len(train_set)))
    else:
        train_set = sample_k(load_split(con, spec.name, "train"), k, seed)
        dev_set = sample_k(load_split(con, spec.name, "dev"), k, seed)
        cfg = replace(cfg, epochs=epochs or cfg.epochs)
    test = balanced_sample(load_split(con, spec.name, "test")[:test_limit], test_sample)
    if not test:
        raise ProbeError(f"no test instances of {spec.name}: export the probe first")
    scorer = load_scorer(model_name, device=device, dtype="float32", threads=threads)
    clf = PromptClassifier(scorer.model, scorer.tokenizer, capabilities(scorer),
                           spec.prompts[template - 1], sets[label_set], cfg.max_length,
                           scoring)
    identity = {"k": k, "seed": seed, "template": f"T{template}", "label_set": label_set,
                "test_limit": test_limit, "test_sample": test_sample, "scoring": scoring,
                **asdict(cfg)}
    rid = _run_id(scorer.name, scorer.revision, spec.name, identity)
    done = con.execute("SELECT json_extract(config, '$.kshot') FROM runs WHERE run_id = ? AND "
                       "status = 'done'", [rid]).fetchone()
    if done is not None:  # already run with these settings: resume, do not redo
        old = json.loads(done[0])
        acc, n, wall = stored_test_accuracy(con, rid, test, scoring)
        return KshotResult(rid, k, seed, int(old["best_epoch"]), old["dev_accuracy"],
                           old["train_loss"], acc, n, wall, {"resumed": True})
    label = f"K={'full' if k == FULL else k} T{template} {label_set} seed {seed}"
    best, dev_acc, losses = train(clf, train_set, dev_set, cfg, seed,
                                  label if progress else None)
    acc, words = evaluate(clf, test, cfg.eval_batch_size)
    result = KshotResult(rid, k, seed, best, dev_acc, losses, acc, len(test),
                         time.perf_counter() - t0)
    write_run(con, model=scorer.name, revision=scorer.revision, kind=scorer.kind,
              lm_family=family(capabilities(scorer)), probe=probe,
              template_index=template - 1, label_set=label_set, result=result,
              identity=identity, test=test, words=words)
    return result


def format_results(results: Sequence[KshotResult]) -> str:
    """A markdown table of the runs."""
    lines = ["| K | seed | run | best epoch | dev acc | test acc | test n | seconds |",
             "|---:|---:|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.k} | {r.seed} | {r.run_id} | {r.best_epoch} | "
              f"{r.dev_accuracy[r.best_epoch - 1] if r.best_epoch else float('nan'):.3f} | "
              f"{r.test_accuracy:.3f} | {r.test_n} | {r.wall_s:.1f} |" for r in results]
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe kshot`` / ``python -m probes.benchmarks.ontolama.kshot``."""
    p.description = (
        "OntoLAMA K-shot prompt-based fine-tuning: K examples per class from train (and dev "
        "for model selection), the best dev epoch evaluated on test; one run per (K, seed) "
        "written to the results DuckDB file.")
    p.set_defaults(handler=run)
    options.add_model(p, required=True, help="model name or alias, as for probes.engine.run")
    p.add_argument("--probe", "-p", action="append", required=True, metavar="PATTERN",
                   help="subsumption probe name or glob pattern; repeatable")
    p.add_argument("--k", type=int, action="append", default=None,
                   help=f"examples per class; repeatable (default: {' '.join(map(str, KS))})")
    p.add_argument("--seed", type=int, action="append", default=None,
                   help=f"repeatable (default: {' '.join(map(str, SEEDS))})")
    p.add_argument("--template", type=int, action="append", default=None,
                   help="1-based template index; repeatable (default: every template, the "
                   "paper's protocol)")
    p.add_argument("--label-set", action="append", default=None,
                   help="params.label_words set; repeatable (default: every set)")
    p.add_argument("--scoring", choices=SCORINGS, default="sum_prob",
                   help="class score from the label words: sum_prob (the paper's equation, "
                   "default) or mean_logprob (OpenPrompt)")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="evaluate on a seeded class-balanced sample of N test instances")
    p.add_argument("--full", action="store_true",
                   help="the fully supervised setting (whole train split, T1 and L1 unless "
                   "given, one seed; stored as K = -1)")
    kg_options.add_results(p, help="results DuckDB file")
    kg_options.add_queries(p, help="extra folder of probe files")
    options.add_device(p, help="torch device (default: a GPU if any)")
    options.add_threads(p)
    p.add_argument("--test-limit", type=int, default=None, metavar="N",
                   help="evaluate on the first N test instances only (smoke runs)")
    p.add_argument("--quiet", action="store_true", help="no training progress bar")
    p.add_argument("--epochs", type=int, default=None,
                   help=f"training epochs (default: {KshotConfig.epochs}; with --full the "
                   "paper's: 1, or 10 for a small training split, see full_epochs)")
    p.add_argument("--lr", type=float, default=KshotConfig.lr)
    p.add_argument("--batch-size", type=int, default=KshotConfig.batch_size)


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    return kg_options.run_command("python -m probes.benchmarks.ontolama.kshot", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Train and evaluate every (K, template, label set, seed) asked for."""
    cfg = KshotConfig(lr=args.lr, batch_size=args.batch_size)
    con = None
    results: list[KshotResult] = []
    try:
        for flag, v in (("--epochs", args.epochs), ("--batch-size", args.batch_size),
                        ("--test-limit", args.test_limit), ("--threads", args.threads),
                        *(("--k", k) for k in args.k or [])):
            if v is not None and v < 1:
                raise ProbeError(f"{flag} must be a positive number (got {v})")
        probes = [p for p in discover(args.queries, args.probe) if p.spec.task == "subsumption"]
        if not probes:
            raise ProbeError(f"no subsumption probe matches {' '.join(args.probe)}")
        con = connect(args.results)
        if args.sample is not None and args.sample < 2:
            raise ProbeError(f"--sample must be at least 2 (got {args.sample})")
        ks = [FULL] if args.full else (args.k or list(KS))
        seeds = args.seed or ([SEEDS[0]] if args.full else list(SEEDS))
        for probe in probes:
            templates = args.template or ([1] if args.full else
                                          list(range(1, len(probe.spec.prompts) + 1)))
            sets = args.label_set or (["L1"] if args.full else
                                      [n for n, _ in label_sets(probe.spec)])
            for k in ks:
                for template in templates:
                    for label_set in sets:
                        for seed in seeds:
                            results.append(run_kshot(
                                con, args.model, probe, k, seed, template=template,
                                label_set=label_set, cfg=cfg, test_limit=args.test_limit,
                                device=args.device, threads=args.threads,
                                scoring=args.scoring, test_sample=args.sample,
                                epochs=args.epochs, progress=not args.quiet))
                            print(format_results(results[-1:]).splitlines()[-1], flush=True)
    finally:
        if con is not None:
            con.close()
    print(format_results(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
