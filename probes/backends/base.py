"""The scorer interface every model backend implements, and the machinery they share.

A :class:`Scorer` wraps one model and its tokenizer and offers four operations:

- ``loglik``: log P(continuation | context), summed over the continuation's tokens;
- ``pll``: pseudo-log-likelihood of a character span (masked LMs);
- ``topk``: the distribution at a slot, as top-k over whole-word vocabulary items;
- ``features``: pooled last-layer features (for linear probing).

Work is sorted by length and cut into batches bounded by rows and by padded tokens
(:class:`probes.backends.device.Batcher`); a batch that runs out of memory is retried with
half the limits.
Probabilities are computed on the device; only ``[batch, k]`` results move to the CPU.

>>> Score(-2.5, 2)
Score(logprob=-2.5, n_tokens=2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

import torch

from probes.backends.device import Batcher as Batcher
from probes.backends.device import dtype_name as dtype_name
from probes.backends.device import free_memory as free_memory
from probes.backends.device import is_oom as is_oom
from probes.backends.device import resolve_device as resolve_device
from probes.backends.device import resolve_dtype as resolve_dtype
from probes.backends.generation import GenerateSettings, Generation
from probes.backends.protocol import SLOT, Capabilities, family
from probes.engine.errors import ModelError
from probes.engine.models import (
    ModelSource,
    PromptTooLongError,
    hub_commit,
    load_model,
    load_tokenizer,
)
from probes.engine.wordvocab import WholeWordVocab

if TYPE_CHECKING:
    from probes.engine.placement import Placement

MASK = SLOT
"""The slot marker in prompts for ``topk`` (masked LMs and seq2seq; a causal LM's prompt ends at
the slot)."""

Pooling = Literal["cls", "first", "last", "mean"]
POOLINGS: tuple[str, ...] = ("cls", "first", "last", "mean")
OPERATIONS: tuple[str, ...] = ("loglik", "pll", "topk", "features", "generate")
SCORER_VERSION = 1
"""Bumped when a change alters the numbers a scorer returns (part of the cache key)."""


class PromptError(ModelError):
    """A prompt is malformed for the requested operation (e.g. not exactly one [MASK])."""


@dataclass(frozen=True, slots=True)
class Score:
    """A summed log-probability and the number of tokens it covers."""

    logprob: float
    n_tokens: int


class Scorer:
    """One model + tokenizer behind the four scoring operations.

    Attributes: ``name`` (as the user gave it), ``revision`` (commit hash or sha256 of the
    weights), ``kind`` (masked | causal | seq2seq), ``device``, ``dtype`` (a string),
    ``max_length`` (tokens), ``operations`` (what this scorer supports), ``progress`` (an
    optional callback that receives the number of finished requests after each batch).
    """

    kind: ClassVar[str] = ""
    """The name the backend is registered under (:func:`probes.backends.registry.register`): a
    label for the run record and messages; what tasks need is ``capabilities``."""
    capabilities: Capabilities
    """What tasks need to know (:class:`probes.backends.protocol.Capabilities`): each backend
    declares it."""
    operations: frozenset[str] = frozenset()
    hidden_states: ClassVar[bool] = False
    """Whether :mod:`probes.backends.hidden` can read every layer's states (the transformers
    backends say True)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        revision: str | None,
        device: torch.device,
        max_length: int,
        batch_size: int | None = None,
        max_batch_tokens: int | None = None,
        source: ModelSource | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.revision = revision or "unknown"
        self.device = device
        self.dtype = dtype_name(next(model.parameters()).dtype)
        self.max_length = int(max_length)
        self.source = source
        self.progress: Callable[[int], None] | None = None
        self._logit_budget = (1 << 27) if device.type != "cpu" else (1 << 23)  # CPU: fits L3
        self._vocabs: dict[tuple[bool, int, bool], WholeWordVocab] = {}
        self.set_batch_size(batch_size, max_batch_tokens)

    def set_batch_size(self, batch_size: int | None, max_batch_tokens: int | None = None) -> None:
        """Fixed rows per batch, or None for automatic batches (a padded-token budget: 2,048 on
        CPU, 32,768 on GPU, or ``max_batch_tokens``); either way halved on out-of-memory."""
        on_gpu = self.device.type != "cpu"
        self.batch_size = batch_size
        if batch_size is not None:
            self._rows, self._tokens = int(batch_size), None
        else:
            self._rows = 512 if on_gpu else 64
            self._tokens = max_batch_tokens or (32768 if on_gpu else 2048)
        self._batchers: dict[str, Batcher] = {}

    auto_model: ClassVar[str] = ""
    """The transformers Auto class (by name) that loads this backend's models with their head."""
    headless_auto_model: ClassVar[str | None] = None
    """The Auto class for a checkpoint without that head, or None: such a checkpoint is an
    error (:meth:`no_head_error`)."""

    @classmethod
    def from_source(
        cls,
        source: ModelSource,
        config: Any,
        *,
        device: torch.device,
        dtype: torch.dtype,
        batch_size: int | None = None,
        max_batch_tokens: int | None = None,
        placement: Placement | None = None,
        has_head: bool = True,
        verify: bool = True,
        **options: Any,
    ) -> Self:
        """Load the model that ``source`` names (its ``config`` already read) for this backend.

        The same steps for every backend: refuse a checkpoint without the head the backend
        needs, check the backend's own ``options`` (:meth:`check_options`), load tokenizer and
        model (``placement``: spread over devices), make the scorer (:meth:`create`) and let
        the backend finish it (:meth:`configure`, which runs the self-checks when ``verify``).
        """
        if not has_head and cls.headless_auto_model is None:
            raise cls.no_head_error(source, config)
        settings = cls.check_options(options)
        import transformers

        tokenizer = load_tokenizer(source)
        auto = getattr(transformers, cls.auto_model if has_head else str(cls.headless_auto_model))
        model = load_model(source, auto, dtype=dtype, device=device, placement=placement)
        revision = source.revision or hub_commit(source.location, source.options.get("revision"))
        scorer = cls.create(
            model,
            tokenizer,
            has_head=has_head,
            name=source.name,
            revision=revision,
            device=device,
            max_length=model_max_length(config, tokenizer),
            batch_size=batch_size,
            max_batch_tokens=max_batch_tokens,
            source=source,
        )
        scorer.configure(settings, verify=verify)
        return scorer

    @classmethod
    def no_head_error(cls, source: ModelSource, config: Any) -> ModelError:
        """The error for a checkpoint without the head this backend needs."""
        arch = ", ".join(getattr(config, "architectures", None) or [])
        return ModelError(f"model {source.name!r} ({arch}) has no {cls.kind} LM head; "
                          f"load it with {cls.auto_model}")

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """The backend's own load options, checked (default: it has none, so any is an error)."""
        if options:
            raise ModelError(f"unknown scorer options: {', '.join(sorted(options))}")
        return {}

    @classmethod
    def create(cls, model: Any, tokenizer: Any, *, has_head: bool, **kwargs: Any) -> Self:
        """The scorer object for a loaded model (a backend whose constructor needs to know
        whether the head is there overrides this)."""
        return cls(model, tokenizer, **kwargs)

    def configure(self, settings: dict[str, Any], *, verify: bool) -> None:
        """Apply :meth:`check_options`' settings after loading; run self-checks if ``verify``."""

    # --- the operations (backends override what they support) ------------------------------

    def loglik(self, requests: Sequence[tuple[str, str]]) -> list[Score]:
        """log P(continuation | context) summed over the continuation's tokens, per request."""
        raise self._unsupported("loglik")

    def pll(self, requests: Sequence[tuple[str, tuple[int, int]]]) -> list[Score]:
        """Pseudo-log-likelihood of the characters [start, end) of each text (masked LMs)."""
        raise self._unsupported("pll")

    def topk(
        self, prompts: Sequence[str], k: int, vocab: WholeWordVocab | None = None,
        mix: Sequence[float] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """The k most probable whole-word fillers of each prompt's slot, with probabilities.

        With ``mix`` (weights w_1..w_g), the prompts come in consecutive groups of g and each
        group gives one list: the top-k of the mixture sum_j w_j * P_j(word), computed on the
        device over the whole vocabulary (used to merge "a" and "an" before the slot).
        """
        raise self._unsupported("topk")

    def features(self, texts: Sequence[str], pooling: Pooling = "mean") -> torch.Tensor:
        """Frozen last-layer features, one row per text, float32 on the CPU."""
        raise self._unsupported("features")

    def generate(self, prompts: Sequence[str], settings: GenerateSettings) -> list[Generation]:
        """The text the model generates after each prompt (probes.backends.generation)."""
        raise self._unsupported("generate")

    # --- shared helpers ----------------------------------------------------------------------

    def require(self, *operations: str) -> None:
        """Raise ModelError unless every named operation is supported by this model."""
        for op in operations:
            if op not in OPERATIONS:
                raise ModelError(f"unknown operation {op!r}; use one of {', '.join(OPERATIONS)}")
            if op not in self.operations:
                raise self._unsupported(op)

    def cache_key_options(self) -> dict[str, Any]:
        """What, besides model, revision and prompt, changes the numbers this scorer returns:
        the computation, never the name the backend is registered under (a copy registered
        under another name shares the cache). ``kind`` holds the family the capabilities
        declare (the field keeps its name so that entries cached before stay valid: for the
        built-in backends family and name agree). A backend whose numbers differ from those
        of its family's computation adds what sets them apart here."""
        return {
            "kind": family(self.capabilities),
            "dtype": self.dtype,
            "scorer_version": SCORER_VERSION,
            "tokenizer": type(self.tokenizer).__name__,
        }

    def word_vocab(self, *, lowercase: bool = False, min_length: int = 1,
                   every_token: bool = False) -> WholeWordVocab:
        """The whole-word items of this model's tokenizer (cached); ``every_token``: the whole
        vocabulary (WholeWordVocab.every_token; the other arguments are then ignored)."""
        key = (lowercase, min_length, every_token)
        if key not in self._vocabs:
            self._vocabs[key] = (
                WholeWordVocab.every_token(self.tokenizer) if every_token
                else WholeWordVocab.from_tokenizer(
                    self.tokenizer, lowercase=lowercase, min_length=min_length))
        return self._vocabs[key]

    def describe(self) -> dict[str, Any]:
        """Name, revision, kind, device, dtype and batch limits (for the run record)."""
        return {
            "model": self.name,
            "revision": self.revision,
            "kind": self.kind,
            "device": str(self.device),
            "dtype": self.dtype,
            "max_length": self.max_length,
            "batch_size": self.batch_size,
            "batch_limits": {k: (b.rows, b.tokens) for k, b in self._batchers.items()},
            "device_map": _device_map(self.model),
        }

    def batcher(self, label: str, *, rows: int | None = None, cut: bool = True) -> Batcher:
        """The batcher for one kind of work; it remembers limits lowered after out-of-memory
        (``cut``: see :class:`Batcher`)."""
        if label not in self._batchers:
            self._batchers[label] = Batcher(
                rows=rows or self._rows, tokens=self._tokens, label=label, cut=cut
            )
        return self._batchers[label]

    def _report(self, n: int) -> None:
        if self.progress is not None and n:
            self.progress(n)

    def _unsupported(self, op: str) -> ModelError:
        return ModelError(
            f"model {self.name!r} ({self.kind} LM) does not support {op!r}; "
            f"it supports: {', '.join(sorted(self.operations)) or 'nothing'}"
        )

    def _check_length(self, n_tokens: int, index: int, text: str) -> None:
        if n_tokens > self.max_length:
            short = text if len(text) <= 80 else text[:77] + "..."
            raise PromptTooLongError(
                f"prompt #{index} ({short!r}) has {n_tokens} tokens but model {self.name!r} "
                f"accepts at most {self.max_length}; shorten the template or the inserted text"
            )

    def _pad_id(self) -> int:
        for candidate in (
            self.tokenizer.pad_token_id,
            self.tokenizer.eos_token_id,
            self.tokenizer.unk_token_id,
        ):
            if candidate is not None:
                return int(candidate)
        return 0

    def _padded(
        self, sequences: Sequence[Sequence[int]], pad: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ids and the attention mask, on the device."""
        pad = self._pad_id() if pad is None else pad
        width = max(1, max(len(s) for s in sequences))
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
            mask[row, : len(seq)] = 1
        return ids.to(self.device), mask.to(self.device)

    def _row_logprobs(
        self,
        rows: torch.Tensor,
        targets: torch.Tensor,
        project: Callable[[torch.Tensor], torch.Tensor] | None,
    ) -> torch.Tensor:
        """log-softmax at ``targets``, one per row.

        ``rows`` are hidden states (``project`` maps them to logits) or logits already. The
        projection and the logsumexp run in chunks so at most ``_logit_budget`` logits exist.
        """
        n = rows.shape[0]
        logprobs = torch.empty(n, dtype=torch.float32, device=rows.device)
        if n == 0:
            return logprobs
        vocab = _vocab_size(self.model)
        step = max(1, self._logit_budget // max(1, vocab))
        for start in range(0, n, step):
            chunk = rows[start : start + step]
            logits = (project(chunk) if project is not None else chunk).float()
            tgt = targets[start : start + step]
            picked = logits.gather(1, tgt[:, None]).squeeze(1)
            logprobs[start : start + step] = picked - log_normalizer(logits)
        return logprobs

    def _topk_rows(
        self,
        rows: torch.Tensor,
        k: int,
        vocab: WholeWordVocab,
        project: Callable[[torch.Tensor], torch.Tensor] | None,
        mix: Sequence[float] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Softmax over the full vocabulary, top-k among ``vocab``'s items; [b, k] to the CPU.

        With ``mix`` (g weights), consecutive groups of g rows are mixed into one distribution
        before the top-k (one list per group)."""
        if k < 1:
            raise ModelError(f"top-k needs k >= 1, got {k}")
        ids = vocab.ids_on(rows.device)
        if vocab.tokenizer_size is not None and vocab.tokenizer_size != len(self.tokenizer):
            raise ModelError(
                f"the whole-word vocabulary was built for another tokenizer "
                f"({vocab.tokenizer_size} tokens, model {self.name!r} has {len(self.tokenizer)}); "
                "build it with scorer.word_vocab() and narrow it with .restrict(words)"
            )
        g = len(mix) if mix else 1
        weights = (torch.tensor(list(mix), dtype=torch.float32, device=rows.device).view(1, g, 1)
                   if mix else None)
        if len(ids) == 0:
            return [[] for _ in range(rows.shape[0] // g)]
        kk = min(k, len(ids))
        out: list[list[tuple[str, float]]] = []
        step = g * max(1, self._logit_budget // max(1, _vocab_size(self.model)) // g)
        for start in range(0, rows.shape[0], step):
            chunk = rows[start : start + step]
            logits = (project(chunk) if project is not None else chunk).float()
            probs = torch.softmax(logits, dim=-1).index_select(1, ids)
            if weights is not None:
                probs = (probs.view(-1, g, probs.shape[1]) * weights).sum(1)
            top_p, top_i = probs.topk(kk, dim=-1)
            for p_row, i_row in zip(top_p.cpu().tolist(), top_i.cpu().tolist(), strict=True):
                out.append([(vocab.words[i], p) for i, p in zip(i_row, p_row, strict=True)])
        return out

    def _topk_collector(
        self, prompts: Sequence[str], k: int, vocab: WholeWordVocab,
        project: Callable[[torch.Tensor], torch.Tensor] | None, mix: Sequence[float] | None,
    ) -> TopkCollector:
        """Where a backend's topk batches put the rows at their slots (see TopkCollector)."""
        self._check_mix(prompts, mix)
        return TopkCollector(self, len(prompts), k, vocab, project, mix)

    @staticmethod
    def _check_mix(prompts: Sequence[str], mix: Sequence[float] | None) -> None:
        if mix is None:
            return
        if len(mix) < 1 or any(not (w >= 0) for w in mix) or abs(sum(mix) - 1.0) > 1e-6:
            raise ModelError(f"topk mix weights must be non-negative and sum to 1, got {mix}")
        if len(prompts) % len(mix):
            raise ModelError(f"topk with {len(mix)} mix weights needs prompts in groups of "
                             f"{len(mix)}, got {len(prompts)} prompts")

    def _resolve_vocab(self, vocab: WholeWordVocab | None) -> WholeWordVocab:
        return self.word_vocab() if vocab is None else vocab


class TopkCollector:
    """Collects the slot rows (hidden states or logits) of a topk call batch by batch.

    Without mixing, each batch is turned into top-k lists at once; with ``mix`` the rows are
    kept (on the device) until every prompt of a group is in, then mixed and ranked together.
    """

    def __init__(self, scorer: Scorer, n: int, k: int, vocab: WholeWordVocab,
                 project: Callable[[torch.Tensor], torch.Tensor] | None,
                 mix: Sequence[float] | None) -> None:
        self.scorer, self.k, self.vocab, self.project, self.mix = scorer, k, vocab, project, mix
        self.results: list[list[tuple[str, float]]] = [[] for _ in range(n)]
        self.rows: list[torch.Tensor | None] = [None] * n if mix else []

    def add(self, batch: Sequence[int], rows: torch.Tensor) -> None:
        if self.mix:
            for b, row in zip(batch, rows, strict=True):
                self.rows[b] = row
            return
        ranked = self.scorer._topk_rows(rows, self.k, self.vocab, self.project)
        for b, answers in zip(batch, ranked, strict=True):
            self.results[b] = answers

    def result(self) -> list[list[tuple[str, float]]]:
        if not self.mix:
            return self.results
        stacked = torch.stack([r for r in self.rows if r is not None])
        return self.scorer._topk_rows(stacked, self.k, self.vocab, self.project, self.mix)


def pool(
    hidden: torch.Tensor, attention: torch.Tensor, special: torch.Tensor, pooling: str
) -> torch.Tensor:
    """Pool ``[batch, length, dim]`` states: ``cls`` = position 0, ``first``/``last`` = first/last
    non-special token, ``mean`` = mean over non-special tokens (falls back to all real tokens
    when a text has no non-special token).

    >>> h = torch.arange(12.0).reshape(1, 4, 3)
    >>> att = torch.tensor([[1, 1, 1, 0]]); sp = torch.tensor([[1, 0, 0, 1]])
    >>> pool(h, att, sp, "mean").tolist()
    [[4.5, 5.5, 6.5]]
    >>> pool(h, att, sp, "last").tolist(), pool(h, att, sp, "cls").tolist()
    ([[6.0, 7.0, 8.0]], [[0.0, 1.0, 2.0]])
    """
    if pooling not in POOLINGS:
        raise ModelError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
    real = attention.bool()
    content = real & ~special.bool()
    content = torch.where(content.any(dim=1, keepdim=True), content, real)
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "first":
        return hidden[rows, content.int().argmax(dim=1)]
    if pooling == "last":
        positions = torch.arange(hidden.shape[1], device=hidden.device)
        last = torch.where(content, positions, torch.full_like(positions, -1)).amax(dim=1)
        return hidden[rows, last]
    weights = content.to(hidden.dtype).unsqueeze(-1)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)


def log_normalizer(logits: torch.Tensor) -> torch.Tensor:
    """The logsumexp of each row of float ``logits``, which it overwrites (no second
    [rows, vocab] buffer).

    >>> x = torch.tensor([[0.0, 1.0, 2.0]])
    >>> round(float(log_normalizer(x.clone())[0] - torch.logsumexp(x, -1)[0]), 6)
    0.0
    """
    best = logits.amax(dim=-1)
    total = logits.sub_(best[:, None]).exp_().sum(dim=-1)
    return total.log_().add_(best)


def _device_map(model: Any) -> dict[str, str] | None:
    """Where accelerate placed each part of a dispatched model (None for a model on one
    device)."""
    found = getattr(model, "hf_device_map", None)
    return {k: str(v) for k, v in found.items()} if found else None


def _vocab_size(model: Any) -> int:
    embeddings = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(embeddings, "weight", None)
    if weight is not None:
        return int(weight.shape[0])
    return int(model.config.get_text_config().vocab_size)


def model_max_length(config: Any, tokenizer: Any, default: int = 512) -> int:
    """The longest input the model accepts: position embeddings, else the tokenizer's limit."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(text, attr, None)
        if isinstance(value, int) and value > 0:
            # RoBERTa-style models reserve padding_idx + 1 positions
            if getattr(text, "model_type", "") in {"roberta", "xlm-roberta", "camembert"}:
                value -= getattr(text, "pad_token_id", 1) + 1
            return value
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 1_000_000:
        return limit
    return default


def segment_sum(values: torch.Tensor, segments: torch.Tensor, n: int) -> torch.Tensor:
    """Sum ``values`` per segment id into ``n`` float64 slots.

    >>> segment_sum(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([0, 1, 0]), 2).tolist()
    [5.0, 2.0]
    """
    out = torch.zeros(n, dtype=torch.float64, device=values.device)
    return out.index_add_(0, segments, values.double())


