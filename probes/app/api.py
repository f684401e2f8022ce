"""The notebook API: find a probe, export it, load a model, score, compute metrics — each call
returns a polars DataFrame (or the loaded object). See ``docs/api.md`` for a worked example.

>>> from probes.app import api
>>> sorted(api.list_tasks()["task"])
['binary', 'choice', 'generate', 'probing', 'records', 'relatum', 'subsumption']

Everything here calls the same functions as the command line (``probes.engine.export.export``,
``probes.engine.runner.probe.run_probe``, ``eval.sqlfile.run_metric``), so a notebook and ``python
-m
probes.engine.run`` write and read the same results file and share its score cache. Importing this
module does not import torch; :func:`load_scorer` does.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from kg import config
from kg.store import KnowledgeStore, open_store
from probes.app import outputs
from probes.engine import export as export_mod
from probes.engine import model_args as model_args_mod
from probes.engine.errors import ProbeError
from probes.engine.frames import frame
from probes.engine.spec import Probe, discover
from probes.engine.spec import load_probe as load_probe_file
from probes.results import connect

ProbeLike = str | Path | Probe
Results = str | Path | None


# --- discover ----------------------------------------------------------------------------------


def list_probes(queries: Sequence[Path] | None = None, include_default: bool = True,
                pattern: str | None = None) -> pl.DataFrame:
    """The probes that ``python -m probes.engine.export`` exports (files under ``queries/`` and the
    extra folders ``queries``; building blocks with ``export: false`` left out), one row each:
    name, task, split, description, path. ``pattern``: a glob on the name (``semrel/*``)."""
    found = discover([Path(q) for q in queries or []], [pattern] if pattern else None,
                     include_default=include_default)
    rows = [(p.spec.name, p.spec.task, p.spec.split, p.spec.description, str(p.path))
            for p in found if p.spec.export]
    return pl.DataFrame(rows, schema=["name", "task", "split", "description", "path"],
                        orient="row")


def list_tasks() -> pl.DataFrame:
    """The task kinds a probe header's ``task:`` may name, with one line on each."""
    from probes.engine.tasks.registry import TASK_ENTRIES

    rows = [(name, entry.description) for name, entry in sorted(TASK_ENTRIES.items())]
    return pl.DataFrame(rows, schema=["task", "description"], orient="row")


def list_metrics(metrics_dirs: Sequence[Path] | None = None) -> pl.DataFrame:
    """The metric files (default: ``eval/metrics``): metric, tasks, grain, description, path."""
    from eval.sqlfile import discover_metrics

    found = discover_metrics([Path(d) for d in metrics_dirs] if metrics_dirs else None)
    return pl.DataFrame(
        {"metric": [m.name for m in found], "tasks": [m.tasks for m in found],
         "grain": [m.grain for m in found],
         "description": [" ".join(m.description.split()) for m in found],
         "path": [str(m.path) for m in found]},
        schema={"metric": pl.String, "tasks": pl.List(pl.String), "grain": pl.List(pl.String),
                "description": pl.String, "path": pl.String})


def listing(what: str = "all", queries: Sequence[Path] | None = None,
            include_default: bool = True, metrics_dirs: Sequence[Path] | None = None) -> str:
    """The text of ``--list``: probes, tasks, metrics and model args (``what``: one of those or
    ``all``), one line each with its description, for a command line to print."""
    parts = ("probes", "tasks", "metrics", "model_args")
    if what != "all" and what not in parts:
        raise ProbeError(f"cannot list {what!r}; use one of {', '.join(parts)} or all")
    out: list[str] = []

    def section(title: str, lines: list[str]) -> None:
        out.extend([f"{title}:", *(f"  {ln}" for ln in lines), ""])

    if what in ("all", "probes"):
        df = list_probes(queries, include_default)
        section("probes", [f"{n:32} {t:12} {_one_line(d) or p}"
                           for n, t, _, d, p in df.iter_rows()])
    if what in ("all", "tasks"):
        section("tasks", [f"{t:12} {d}" for t, d in list_tasks().iter_rows()])
    if what in ("all", "metrics"):
        df = list_metrics(metrics_dirs)
        section("metrics", [f"{m:28} [{', '.join(t)}] {_one_line(d)}"
                            for m, t, d in df.select("metric", "tasks", "description")
                            .iter_rows()])
    if what in ("all", "model_args"):
        section("model args (--model-args KEY=VALUE,...)",
                [f"{k:18} {d}" for k, d in model_args_mod.describe()])
    return "\n".join(out).rstrip() + "\n"


def _one_line(text: str, width: int = 90) -> str:
    """The first sentence of ``text``, cut to ``width`` characters.

    >>> _one_line("Share of pairs. More words here.")
    'Share of pairs.'
    """
    first = " ".join(text.replace("``", "").split()).split(". ")[0].rstrip(".")
    first = first + "." if first else ""
    return first if len(first) <= width else first[:width - 3].rstrip() + "..."


def load_probe(name: ProbeLike, queries: Sequence[Path] | None = None,
               include_default: bool = True) -> Probe:
    """A probe by name (``semrel/hyp``), by glob matching one probe, or by its ``.rq`` file."""
    if isinstance(name, Probe):
        return name
    path = Path(name)
    if path.suffix == ".rq" and path.is_file():
        return load_probe_file(path)
    found = discover([Path(q) for q in queries or []], [str(name)],
                     include_default=include_default)
    exact = [p for p in found if p.spec.name == str(name)]
    if exact or len(found) == 1:
        return (exact or found)[0]
    names = ", ".join(p.spec.name for p in found[:8]) + (", ..." if len(found) > 8 else "")
    raise ProbeError(f"{name!r} matches {len(found)} probes ({names}); name one")


# --- export ------------------------------------------------------------------------------------


def export(probe: ProbeLike, store: KnowledgeStore | str | Path | None = None,
           results: Results = None, *, endpoint: str | None = None,
           queries: Sequence[Path] | None = None, out_dir: Path | None = None) -> pl.DataFrame:
    """Run a probe's query against ``store`` (a store object, a store folder, or None for
    ``$KGPROBE_STORE``; or ``endpoint``, a SPARQL URL), write its instances into ``results``
    (and Parquet files into ``out_dir`` when given) and return them."""
    probe = load_probe(probe, queries)
    if store is None or isinstance(store, str | Path):  # else a store object (KnowledgeStore)
        store = open_store(endpoint, Path(store) if store is not None else None)
    export_mod.export([probe], store, results, out_dir, progress=False,
                      builder_dirs=[Path(q) for q in queries] if queries else None)
    return instances(probe, results)


def instances(probe: ProbeLike, results: Results = None) -> pl.DataFrame:
    """A probe's exported instances: split, instance_id, target, gold, candidates, fields."""
    name = probe.spec.name if isinstance(probe, Probe) else str(probe)
    return query(results, "SELECT probe, split, instance_id, target, gold, candidates, "
                 "fields::VARCHAR AS fields FROM instances WHERE probe = ? "
                 "ORDER BY split, instance_id", [name])


# --- score -------------------------------------------------------------------------------------


def load_scorer(model: str | Path, model_args: str | None = None, *,
                apply_chat_template: bool = False, **options: Any) -> Any:
    """Load a model (hub id, folder, .gguf file or alias such as ``smollm2-135m``) as a scorer.

    ``model_args``: the ``--model-args`` string (``revision=main,dtype=bfloat16``);
    ``options``: keyword arguments of :func:`probes.backends.registry.load_scorer` (``device``,
    ``dtype``, ``batch_size``, ``threads``, ``revision``, ...); a key given both ways must
    agree. ``apply_chat_template``: wrap prompts in the model's chat template
    (:mod:`probes.engine.chat`)."""
    from probes.backends.registry import load_scorer as load

    parsed = model_args_mod.parse_model_args(model_args)
    for key, value in parsed.items():
        if key in options and options[key] != value:
            raise ProbeError(f"{key}={options[key]!r} and model_args {key}={value} disagree; "
                             "give the option one way only")
    from probes.engine.chat import with_chat_template
    from probes.engine.runner.command import check_device

    merged = {**options, **parsed}
    check_device(merged.get("device"), "device={!r}", "device='cpu'")  # as the CLI does
    return with_chat_template(load(model, **merged), apply_chat_template)


def score(probe: ProbeLike, scorer: Any, results: Results = None, *,
          split: str | Sequence[str] | None = None, sample: int | None = None,
          limit: int | None = None, top_k: int = 10, use_cache: bool = True,
          queries: Sequence[Path] | None = None) -> pl.DataFrame:
    """Score a probe's exported instances with ``scorer`` (as ``python -m probes.engine.run`` does:
    cached, resumable, one ``runs`` row) and return the run's rows: the ``scores`` table for
    probes that score candidates or label words, ``responses`` (ranked top-k answers) for
    relatum probes; with the model's name as the first column. ``sample``: a seeded sample of N
    instances per split, stratified by gold class; ``limit``: the first N per split."""
    from probes.engine.runner.plan import RunOptions
    from probes.engine.runner.probe import run_probe
    from probes.engine.runner.select import check_exported

    probe = load_probe(probe, queries)
    splits = [split] if isinstance(split, str) else (list(split) if split else None)
    if limit is not None and sample is not None:
        raise ProbeError("limit and sample exclude each other: use one")
    where = str(results or config.results_path())
    con = connect(results)
    try:
        check_exported(con, [probe], where)  # this probe only: no folder is searched
        report = run_probe(con, scorer, probe, RunOptions(
            top_k=top_k, splits=splits, limit=limit, sample=sample, use_cache=use_cache,
            progress=False, runtime={"api": True, "apply_chat_template": "chat_template" in
                                     scorer.cache_key_options()}), where)
        table = "responses" if probe.spec.task == "relatum" else "scores"
        rows = frame(con, f"SELECT ? AS model, * FROM {table} WHERE run_id = ? ORDER BY "
                             "split, instance_id, prompt_id", [scorer.name, report.run_id])
    finally:
        con.close()
    return rows


def score_texts(texts: Sequence[str | tuple[str, str]], scorer: Any, results: Results = None,
                *, per_token: bool = False, use_cache: bool = True) -> pl.DataFrame:
    """Score a plain list without a probe file: sentences (``"A dog is an animal."``) and/or
    (context, continuation) pairs (``("A dog is", " an animal")``), with any scorer that does
    ``loglik`` (a local model or a server's, :mod:`probes.backends.server`), through the score
    cache of ``results`` (a re-run costs nothing). minicons' ``sequence_score`` and
    ``conditional_score`` in one call; ``per_token``: also each continuation token with its
    log-probability (minicons' ``token_score``, lm-pub-quiz's ``reduction=None``).

    One row per text, in order: item, context, continuation (a sentence is an empty context and
    the sentence), logprob (summed over the scored tokens), n_tokens, and with ``per_token``
    the columns tokens and token_logprobs. A sentence's first token has no context and is not
    scored when the model has no start token (a server's model)."""
    from probes.backends.tokens import token_logprobs
    from probes.engine import cache
    from probes.engine.tasks import Request

    pairs: list[tuple[str, str]] = []
    for i, text in enumerate(texts):
        if isinstance(text, str):
            pairs.append(("", text))
        elif isinstance(text, tuple | list) and len(text) == 2 and all(
                isinstance(t, str) for t in text):
            pairs.append((text[0], text[1]))
        else:
            raise ProbeError(f"score_texts: item {i} ({text!r}) is neither a sentence (str) nor "
                             "a (context, continuation) pair of strings")
    ops = ["loglik", "tokens"] if per_token else ["loglik"]
    options = scorer.cache_key_options()
    keyed: dict[str, list[Any]] = {
        op: [cache.request_key(scorer.name, scorer.revision, options, Request(op, p))
             for p in pairs] for op in ops}
    con = connect(results)
    try:
        for op in ops:
            keys = keyed[op]
            found = cache.lookup(con, keys) if use_cache else {}
            todo = [i for i, k in enumerate(keys) if k not in found]
            if todo:
                asked = [pairs[i] for i in todo]
                got = scorer.loglik(asked) if op == "loglik" else token_logprobs(scorer, asked)
                cache.commit(con, cache_rows=[(keys[i], scorer.name, op, r)
                                              for i, r in zip(todo, got, strict=True)],
                             replace=not use_cache)
                found.update({keys[i]: r for i, r in zip(todo, got, strict=True)})
            keyed[op] = [found[k] for k in keys]
    finally:
        con.close()
    data: dict[str, Any] = {
        "item": list(range(len(pairs))), "context": [c for c, _ in pairs],
        "continuation": [t for _, t in pairs],
        "logprob": [float(r.logprob) for r in keyed["loglik"]],
        "n_tokens": [int(r.n_tokens) for r in keyed["loglik"]]}
    schema: dict[str, Any] = {"item": pl.Int64, "context": pl.String,
                              "continuation": pl.String, "logprob": pl.Float64,
                              "n_tokens": pl.Int64}
    if per_token:
        data["tokens"] = [[str(t) for t, _ in r] for r in keyed["tokens"]]
        data["token_logprobs"] = [[float(v) for _, v in r] for r in keyed["tokens"]]
        schema |= {"tokens": pl.List(pl.String), "token_logprobs": pl.List(pl.Float64)}
    return pl.DataFrame(data, schema=schema)


# --- read results ------------------------------------------------------------------------------


def query(results: Results, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
    """Any SQL over the results file (tables instances, runs, scores, responses,
    human_responses, model_vocab), opened read-only."""
    con = connect(results, read_only=True)
    try:
        return frame(con, sql, params or [])
    finally:
        con.close()


def runs(results: Results = None) -> pl.DataFrame:
    """The ``runs`` table: one row per (model, probe, options) run."""
    return query(results, "SELECT run_id, model, revision, backend, task, probe, status, "
                 "wall_s, finished_at, config::VARCHAR AS config FROM runs ORDER BY probe, model")


def metrics(results: Results = None, metric: str | Sequence[str] | None = None, *,
            probe: str | None = None, model: str | None = None,
            metrics_dirs: Sequence[Path] | None = None) -> pl.DataFrame:
    """Metric values as one long table: metric, model, run_id, probe, split (the metric's grain
    columns), value, n; for a metric with items also its 95 % interval over instances, the
    per-prompt values and their spread (see :func:`probes.app.outputs.compute_metrics`).
    ``metric``: one name or several (default: every metric that applies to a run); ``probe``
    / ``model``: glob patterns on those columns; ``metrics_dirs``: folders of metric files
    (default: ``eval/metrics``)."""
    names = [metric] if isinstance(metric, str) else (list(metric) if metric else None)
    con = connect(results, read_only=True)
    try:
        frame = outputs.compute_metrics(con, names, [Path(d) for d in metrics_dirs]
                                        if metrics_dirs else None)
    finally:
        con.close()
    for column, pattern in (("probe", probe), ("model", model)):
        if pattern and column in frame.columns:
            keep = [v is not None and fnmatch.fnmatch(v, pattern) for v in frame[column]]
            frame = frame.filter(pl.Series(keep, dtype=pl.Boolean))
    return frame


def save_outputs(results: Results, run_ids: Sequence[str], folder: Path) -> list[Path]:
    """The runs' ``scores`` and ``responses`` rows as Parquet files in ``folder`` (loadable with
    ``datasets.load_dataset("parquet", data_files=...)``); returns the paths written."""
    con = connect(results, read_only=True)
    try:
        return outputs.export_parquet(con, list(run_ids), Path(folder))
    finally:
        con.close()
