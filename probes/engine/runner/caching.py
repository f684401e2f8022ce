"""One wrapper around the scorer: requests answered from the score cache, the rest forwarded.

:class:`CachingScorer` follows the pattern of lm-evaluation-harness's ``CachingLM``
(``lm_eval/api/model.py``): the runner asks the wrapper, the wrapper answers every request
whose key the ``score_cache`` holds and forwards only the others to the real scorer. Here the
real scorer is also loaded lazily: a wrapper built on a :class:`RecordedScorer` (the identity
a finished run recorded: name, revision, kind, cache options) constructs the model only when
it must forward a request, read a vocabulary that is not recorded, or check a head.

Whether a run needs the model at all is decided in one function, :func:`needs_model`, and
:func:`open_scorer` acts on it: the model is loaded before any probe runs exactly when a
request is not cached (or no finished run recorded the model's identity).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
from tqdm import tqdm

from probes.backends.protocol import Capabilities, capabilities, description, require
from probes.engine import cache
from probes.engine.errors import ProbeError
from probes.engine.runner.plan import Plan, RunOptions, load_instances, plan, task_context
from probes.engine.runner.scoring import scored_with_progress
from probes.engine.spec import Probe
from probes.engine.tasks import get_task

Loader = Callable[[], Any]


@dataclass
class RecordedScorer:
    """A model's identity as a finished run recorded it: name, revision, kind, dtype, device,
    capabilities and cache options. It answers nothing itself; :class:`CachingScorer` uses it
    to key requests before (and instead of) loading the model."""

    name: str
    revision: str
    kind: str
    dtype: str
    device: str
    capabilities: Capabilities
    options: dict[str, Any]
    described: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None

    def cache_key_options(self) -> dict[str, Any]:
        return dict(self.options)

    def describe(self) -> dict[str, Any]:
        return {**self.described, "loaded": False}


def recorded_scorer(con: duckdb.DuckDBPyConnection, model: str, device: str | None,
                    dtype: str | None, backend: str | None = None) -> RecordedScorer | None:
    """The identity of ``model`` from its latest finished run with the same revision, device
    and dtype (and, when ``backend`` names one, run through that backend: its record carries
    the label), or None (no such run, a hub model whose revision is only known once loaded)."""
    try:
        from probes.backends.base import dtype_name, resolve_device, resolve_dtype
        from probes.engine.models import resolve

        revision = resolve(model).revision
        want_device = resolve_device(device)
        want_dtype = dtype_name(resolve_dtype(dtype, want_device))
    except Exception:  # any doubt: load the model the normal way
        return None
    if revision is None:
        return None
    row = con.execute("""SELECT backend, config FROM runs WHERE model = ? AND revision = ?
                         AND device = ? AND dtype = ? AND status = 'done'
                         AND json_exists(config, '$.capabilities')
                         AND (? IS NULL OR backend = ?)
                         ORDER BY finished_at DESC LIMIT 1""",
                      [model, revision, str(want_device), want_dtype, backend, backend]
                      ).fetchall()
    if not row:
        return None
    config = json.loads(row[0][1])
    return RecordedScorer(model, revision, row[0][0], want_dtype, str(want_device),
                          Capabilities.from_record(config["capabilities"]),
                          config.get("scorer") or {},
                          config.get("backend") or {})


def _key_identity(scorer: Any) -> tuple[Any, ...]:
    """What a request's cache key and a run's id depend on besides the request (the
    computation: never the backend's registered name, which is a label)."""
    return (scorer.name, scorer.revision, capabilities(scorer),
            json.dumps(dict(scorer.cache_key_options()), sort_keys=True, default=str))


class CachingScorer:
    """The scorer a run talks to: cached answers from ``score_cache``, the rest from the model.

    ``identity`` names the model (a loaded scorer, or a :class:`RecordedScorer`); ``load``
    constructs the real scorer, called at most once and only when a request must be
    forwarded. Without ``load`` the identity is the real scorer. ``use_cache=False``
    (``--no-cache``) answers nothing from the cache.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, identity: Any,
                 load: Loader | None = None, use_cache: bool = True) -> None:
        self.con, self.identity, self.use_cache = con, identity, use_cache
        self._load = load
        self._model: Any = None if load is not None else identity

    # -- the identity: what requests are keyed by ------------------------------------------
    @property
    def name(self) -> str:
        return str(self.identity.name)

    @property
    def revision(self) -> str | None:
        return self.identity.revision

    @property
    def kind(self) -> str:
        return str(self.identity.kind)

    @property
    def capabilities(self) -> Capabilities:
        return capabilities(self.identity)

    @property
    def dtype(self) -> Any:
        return getattr(self.identity, "dtype", None)

    @property
    def device(self) -> Any:
        return getattr(self.identity, "device", None)

    @property
    def batch_size(self) -> int | None:
        return getattr(self.identity, "batch_size", None)

    def cache_key_options(self) -> dict[str, Any]:
        return dict(self.identity.cache_key_options())

    def describe(self) -> dict[str, Any]:
        return description(self._model if self._model is not None else self.identity)

    # -- answering -------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        """Whether the real scorer has been constructed."""
        return self._model is not None

    @property
    def model(self) -> Any:
        """The real scorer, constructed on first use; a ProbeError when it would key requests
        differently from the identity they were keyed by."""
        if self._model is None:
            assert self._load is not None
            model = self._load()
            if _key_identity(model) != _key_identity(self.identity):
                raise ProbeError(f"model {self.name}: the loaded model's revision or options "
                                 "differ from those its earlier run recorded; run again with "
                                 "--no-cache once to score it afresh")
            self._model = model
        return self._model

    def cached(self, keys: Sequence[str]) -> dict[str, Any]:
        """The answers ``score_cache`` holds for ``keys`` (none with ``use_cache=False``)."""
        return cache.lookup(self.con, keys) if self.use_cache else {}

    def score(self, requests: list[Any], bar: tqdm) -> list[Any]:
        """Answer ``requests`` (not cached) with the real scorer, moving ``bar``."""
        return scored_with_progress(self.model, requests, bar)

    def word_vocab(self, **options: Any) -> Any:
        return self.model.word_vocab(**options)

    def require(self, *operations: str) -> None:
        """Check the model's heads when it is loaded (a recorded identity did these ops)."""
        if self._model is not None:
            require(self._model, operations)


def caching(con: duckdb.DuckDBPyConnection, scorer: Any, use_cache: bool) -> CachingScorer:
    """``scorer`` as a :class:`CachingScorer` (as it is when it is one already)."""
    return scorer if isinstance(scorer, CachingScorer) else CachingScorer(
        con, scorer, use_cache=use_cache)


def needs_model(con: duckdb.DuckDBPyConnection, scorer: CachingScorer,
                plans: Iterable[Plan]) -> bool:
    """THE decision whether a run needs the model: True when a request of ``plans`` is not in
    the cache under ``scorer``'s identity, or a ``topk`` request's vocabulary is not recorded
    in ``model_vocab`` for it (the vocabulary comes from the tokenizer)."""
    for work in plans:
        keys = list(work.requests)
        if len(scorer.cached(keys)) < len(keys):
            return True
        for name in {dict(r.options).get("vocab", "words") for r in work.requests.values()
                     if r.op == "topk"}:
            if not con.execute("SELECT count(*) FROM model_vocab WHERE model = ? AND vocab = ?",
                               [scorer.name, name]).fetchall()[0][0]:
                return True
    return False


def plans_for(con: duckdb.DuckDBPyConnection, scorer: Any, probes: Sequence[Probe],
              opts: RunOptions, results: str) -> dict[str, Plan] | None:
    """Each probe's plan keyed under ``scorer``'s identity, or None when a probe cannot be
    planned with it (the run then loads the model and reports the error with it)."""
    ctx = task_context(scorer, opts.top_k)
    plans: dict[str, Plan] = {}
    for probe in probes:
        task = get_task(probe.spec.task)
        try:
            task.check(probe.spec, ctx)
            plans[probe.spec.name] = plan(task, probe, ctx, load_instances(
                con, probe.spec.name, opts.splits, opts.limit, results, opts.sample), scorer)
        except ProbeError:
            return None
    return plans


def open_scorer(con: duckdb.DuckDBPyConnection, probes: Sequence[Probe], opts: RunOptions,
                results: str, load: Loader, recorded: Any = None
                ) -> tuple[CachingScorer, dict[str, Plan]]:
    """The scorer of a run and the plans already made with it. With the cache on and a
    ``recorded`` identity, the probes are planned under it and, unless :func:`needs_model`,
    the model is never constructed; else ``load()`` constructs it now."""
    if opts.use_cache and recorded is not None:
        stand_in = CachingScorer(con, recorded, load)
        plans = plans_for(con, stand_in, probes, opts, results)
        if plans is not None and not needs_model(con, stand_in, plans.values()):
            return stand_in, plans
    return CachingScorer(con, load(), use_cache=opts.use_cache), {}
