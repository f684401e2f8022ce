"""A probe's work before any model runs: its instances, items, keyed requests and run id.

The run id is derived from (model, revision, probe, configuration), so running the same thing
again continues (or re-uses) the same ``runs`` row.

>>> a = run_id("gpt2", "abc", "demo/x", {"prompts": ["[W] is [V]"]})
>>> a == run_id("gpt2", "abc", "demo/x", {"prompts": ["[W] is [V]"]}), len(a)
(True, 16)
>>> a == run_id("gpt2", "abc", "demo/x", {"prompts": ["[W] is a [V]"]})
False
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from probes.backends.protocol import capabilities
from probes.engine import cache
from probes.engine.errors import ProbeError
from probes.engine.spec import Probe
from probes.engine.tasks import Instance, Item, Request, Task, TaskContext

# Requests scored between two commits. On a CPU, 2,048 rather than 256: a chunk is one
# `score` call, and a larger one fills the shared-prefix path's batches (docs/bear_parity.md,
# "Whole of BEAR").
DEFAULT_CHUNK = {"cpu": 2048, "gpu": 2048}
# Instances whose requests are reordered together (sharing_order): at least this many chunks.
ORDER_WINDOW_CHUNKS = 8


@dataclass
class RunOptions:
    """Options of one run that are not the model's own (see ``--help``)."""

    top_k: int = 10
    splits: list[str] | None = None
    limit: int | None = None
    sample: int | None = None  # a seeded sample stratified by gold class (--sample)
    chunk_size: int | None = None  # None: DEFAULT_CHUNK by the scorer's device
    use_cache: bool = True
    progress: bool = True
    runtime: dict[str, Any] = field(default_factory=dict)  # stored in config, not in the run id


def run_id(model: str, revision: str | None, probe: str, config: dict[str, Any]) -> str:
    """A stable 16-hex-digit id for (model, revision, probe, configuration)."""
    raw = json.dumps([model, revision, probe, config], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def task_context(scorer: Any, top_k: int) -> TaskContext:
    """What the tasks may know of ``scorer``: its declared capabilities (never its name) and
    the default top-k."""
    return TaskContext(capabilities(scorer), top_k)


def load_instances(con: duckdb.DuckDBPyConnection, probe: str, splits: list[str] | None,
                   limit: int | None, results: str, sample: int | None = None
                   ) -> list[Instance]:
    """The probe's instances, ordered by split and instance id; the first ``limit`` per split,
    or a seeded sample of ``sample`` per split stratified by gold class: ``sample // c`` of
    each of the probe's ``c`` gold classes, the first by MD5(instance id + "42")."""
    sql = "SELECT * FROM instances WHERE probe = ?"
    params: list[Any] = [probe]
    if splits:
        sql += f" AND split IN ({', '.join('?' for _ in splits)})"
        params += splits
    if limit is not None:
        sql += " QUALIFY row_number() OVER (PARTITION BY split ORDER BY instance_id) <= ?"
        params.append(limit)
    elif sample is not None:
        classes = con.execute("SELECT count(DISTINCT gold[1]) FROM instances WHERE probe = ?",
                              [probe]).fetchone()
        sql += (" QUALIFY row_number() OVER (PARTITION BY split, gold[1] ORDER BY "
                "md5(instance_id || '42'), instance_id) <= ?")
        params.append(max(1, sample // max(1, classes[0] if classes else 1)))
    sql += " ORDER BY split, instance_id"
    cur = con.execute(sql, params)
    cols = [d[0] for d in cur.description]
    rows = [Instance.from_row(dict(zip(cols, r, strict=True))) for r in cur.fetchall()]
    if not rows:
        where = f" in split(s) {', '.join(splits)}" if splits else ""
        raise ProbeError(f"no instances of probe {probe!r}{where} in {results}: it was not "
                         f"exported or its query returned no rows; run `python -m "
                         f"probes.engine.export "
                         f"-p {probe}` first (and check that its sources are built)")
    return rows


def chunks(keys: Sequence[str], owner: dict[str, int], size: int) -> list[list[str]]:
    """Cut ``keys`` into chunks of about ``size``, ending a chunk only where the owning instance
    changes (so a backend sees all candidates of an instance together and can share their
    context), unless one instance alone exceeds four chunks.

    >>> chunks(list("abcdef"), {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1, "f": 2}, 2)
    [['a', 'b'], ['c', 'd', 'e'], ['f']]
    """
    out: list[list[str]] = []
    cur: list[str] = []
    last = None
    for k in keys:
        inst = owner.get(k)
        if cur and ((len(cur) >= size and inst != last) or len(cur) >= 4 * size):
            out.append(cur)
            cur = []
        cur.append(k)
        last = inst
    if cur:
        out.append(cur)
    return out


def sharing_order(keys: Sequence[str], requests: dict[str, Any], owner: dict[str, int],
                  window: int) -> list[str]:
    """``keys`` reordered so that log-likelihood requests that share a text prefix are scored
    in one chunk: consecutive instances are taken together until they hold ``window`` requests,
    and within each such window the ``loglik`` requests are sorted by (options, context,
    continuation), after the window's other requests in their order. The backend shares a
    token prefix only within one call, and a chunk is one call: BEAR's answer-first templates
    (``"Paris is the capital of [X]."``) share everything but the subject across instances,
    which an instance-by-instance order never puts together. An item's rows are written when
    its last request is scored, so rows still complete window by window.

    >>> from types import SimpleNamespace as R
    >>> reqs = {"a": R(op="loglik", args=("", "Paris is in France."), options=()),
    ...         "b": R(op="loglik", args=("", "Rome is in France."), options=()),
    ...         "c": R(op="pll", args=("x",), options=()),
    ...         "d": R(op="loglik", args=("", "Paris is in Italy."), options=()),
    ...         "e": R(op="loglik", args=("", "Rome is in Italy."), options=())}
    >>> sharing_order(list("abcde"), reqs, {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1}, 4)
    ['c', 'a', 'd', 'b', 'e']
    >>> sharing_order(list("abcde"), reqs, {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1}, 2)
    ['c', 'a', 'b', 'd', 'e']
    """
    out: list[str] = []
    window_keys: list[str] = []

    def flush() -> None:
        rest = [k for k in window_keys if requests[k].op != "loglik"]
        sortable = [k for k in window_keys if requests[k].op == "loglik"]
        sortable.sort(key=lambda k: (repr(requests[k].options), *map(str, requests[k].args)))
        out.extend(rest + sortable)
        window_keys.clear()

    last = None
    for k in keys:
        inst = owner.get(k)
        if window_keys and len(window_keys) >= window and inst != last:
            flush()
        window_keys.append(k)
        last = inst
    flush()
    return out


@dataclass
class Plan:
    """A probe's work: its items, the distinct requests by cache key, and who needs which."""

    instances: list[Instance]
    items: list[Item]
    requests: dict[str, Request]   # cache key -> request, in order of first use
    item_keys: list[list[str]]     # per item, the key of each of its requests, in order
    owner: dict[str, int]          # cache key -> index of the first instance that needs it


def plan(task: Task, probe: Probe, ctx: TaskContext, instances: list[Instance],
         scorer: Any) -> Plan:
    """Turn instances into items and keyed requests (errors name the probe file)."""
    items: list[Item] = []
    owner_of_item: list[int] = []
    for n, inst in enumerate(instances):
        try:
            got = task.items(inst, probe.spec, ctx)
        except ProbeError as e:
            raise ProbeError(f"{probe.path}: {e}") from e
        items += got
        owner_of_item += [n] * len(got)
    scorer_opts = dict(scorer.cache_key_options())
    requests: dict[str, Request] = {}
    owner: dict[str, int] = {}
    item_keys: list[list[str]] = []
    for it, n in zip(items, owner_of_item, strict=True):
        keys = [cache.request_key(scorer.name, scorer.revision, scorer_opts, r)
                for r in it.requests]
        for k, r in zip(keys, it.requests, strict=True):
            if k not in requests:
                requests[k] = r
                owner[k] = n
        item_keys.append(keys)
    return Plan(instances, items, requests, item_keys, owner)


def run_identity(scorer: Any, probe: Probe, work: Plan,
                 opts: RunOptions) -> tuple[str, dict[str, Any]]:
    """The run id and what it hashes: model, revision, probe, templates, params, request
    options, splits, limit, the scorer's cache options and, for a backend registered under a
    name that is not the name of its computation (the cache options' ``kind``), that name: a
    run of its own beside the original's, whose run ids stay what they were; the cache
    entries are shared all the same."""
    spec = probe.spec
    options = dict(scorer.cache_key_options())
    label = str(getattr(scorer, "kind", "") or "")
    identity = {
        "task": spec.task, "prompts": spec.prompts, "params": spec.hashed_params,
        "request_options": sorted({json.dumps(r.options) for r in work.requests.values()}),
        "splits": sorted(opts.splits) if opts.splits else None, "limit": opts.limit,
        **({"sample": opts.sample} if opts.sample is not None else {}),
        "scorer": options,
        **({"backend": label} if label and label != options.get("kind") else {}),
    }
    return run_id(scorer.name, scorer.revision, spec.name, identity), identity
