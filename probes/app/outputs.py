"""``--output-path`` / ``--log-samples``: a run's results as files, as lm-evaluation-harness
writes them, plus Parquet files of its scores and responses.

Under ``<output path>/<model>/`` (the model name with ``/`` turned into ``__``), one call
writes, all named with the same UTC timestamp:

- ``results_<time>.json``: ``results`` (per probe, the rows of every metric in ``eval/metrics``
  that applies to the run: metric, split, value, n and any other grain column, and for a
  metric with items the 95 % interval over instances, the per-prompt values and their spread:
  see :func:`compute_metrics`), ``config`` (the
  command's options: model, model args, chat template, splits, sample, ...), ``runs`` (per
  probe: run id, model, revision, backend, status, wall seconds and the stored run config),
  ``versions`` (kgprobe, Python and the libraries that make the numbers, and the sha256 of
  the ``requirements.lock`` they were installed from, when kgprobe runs from a checkout);
- ``scores_<time>.parquet`` / ``responses_<time>.parquet``: the runs' rows of the ``scores``
  and ``responses`` tables (written when there are rows), readable with
  ``datasets.load_dataset("parquet", data_files=...)``, polars or DuckDB;
- with ``--log-samples``, ``samples_<probe>_<time>.jsonl``: one line per instance with its
  gold answers, every scored prompt with its candidate, label, score, token and character
  counts and PMI baseline, the top-k responses per prompt, and ``prediction`` (the label,
  else candidate, with the highest mean score over prompts; the top-1 response of the first
  prompt for relatum probes). The SQL
  metrics stay the reference: ``prediction`` is for reading the samples.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import re
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from probes.engine.errors import ProbeError
from probes.engine.frames import frame

VERSIONED = ("kgprobe", "torch", "transformers", "duckdb", "polars", "pyoxigraph")
LOCK = Path(__file__).resolve().parents[2] / "requirements.lock"  # the checkout's lock file


def versions() -> dict[str, str | None]:
    """Installed versions of kgprobe and the libraries that make its numbers (None: absent),
    and ``requirements.lock``: the sha256 of the lock file of the checkout kgprobe runs from
    (None when it runs from an installed wheel), which names the environment exactly."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    out["requirements.lock"] = (f"sha256:{hashlib.sha256(LOCK.read_bytes()).hexdigest()}"
                                if LOCK.is_file() else None)
    return out


def slug(text: str) -> str:
    """A file-name form of a model or probe name.

    >>> slug("HuggingFaceTB/SmolLM2-135M"), slug("semrel/hypernymy")
    ('HuggingFaceTB__SmolLM2-135M', 'semrel__hypernymy')
    """
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text.replace("/", "__")).strip("_") or "model"


def _in(run_ids: Sequence[str]) -> str:
    return ", ".join("?" for _ in run_ids) or "NULL"


def compute_metrics(con: duckdb.DuckDBPyConnection, names: Sequence[str] | None = None,
                    dirs: Sequence[Path] | None = None,
                    run_ids: Sequence[str] | None = None) -> pl.DataFrame:
    """Every metric of ``dirs`` (default: eval/metrics) named in ``names`` (default: all), as
    one long table: ``metric``, the model of the run when the metric has ``run_id`` in its
    grain, the grain columns, ``value`` and ``n``, and for a metric with items (see
    :mod:`eval.items`) its 95 % interval over instances (``ci_low``, ``ci_high``,
    ``ci_method``), ``instances``, and the per-prompt values (``per_prompt``: a list of
    {prompt_id, value, n}) with their spread (``n_prompts``, ``prompt_min``, ``prompt_max``,
    ``prompt_sd``) and the multi-prompt robustness (``prompt_maxp``, ``prompt_avgp``,
    ``prompt_shortfall`` = MaxP − AvgP, ``prompt_cps``; eval.stats.multi_prompt); only
    ``run_ids``' rows when given. An unknown metric name is a ProbeError listing the known
    ones. The metrics run as in every report
    (:func:`eval.sqlfile.run_metric`): ``con`` becomes a metric sandbox (no external access,
    configuration locked), so give it a read-only connection of its own."""
    from eval.items import with_items
    from eval.sqlfile import MetricError, discover_metrics, run_metric

    try:
        return _compute(con, discover_metrics(list(dirs) if dirs else None), names, run_ids,
                        run_metric, with_items)
    except MetricError as e:
        raise ProbeError(str(e)) from e


#: The columns a metric with items adds (eval.items.Summary.columns), in this order.
ITEM_COLUMNS = ("ci_low", "ci_high", "ci_method", "instances", "n_prompts", "prompt_min",
                "prompt_max", "prompt_sd", "prompt_maxp", "prompt_avgp", "prompt_shortfall",
                "prompt_cps", "per_prompt")
PER_PROMPT = pl.List(pl.Struct({"prompt_id": pl.Int64, "value": pl.Float64, "n": pl.Int64}))


def empty_metric_reason(con: duckdb.DuckDBPyConnection, metric: Any) -> str:
    """Why ``metric`` returned no rows, and what to do: no instances, no probe with a train
    split (the shortcut metrics), or no finished run of its tasks."""
    counted = con.execute("SELECT count(*), count(*) FILTER (WHERE split = 'train') "
                          "FROM instances").fetchone()
    instances, train = counted if counted else (0, 0)
    if not instances:
        return ("the results file has no instances; export probes first "
                "(python -m probes.engine.export)")
    if metric.name in ("shortcut_panel", "shortcut_ceiling", "shortcut_shift") and not train:
        return ("no probe has a train split (the model-free rules are fitted on train only, "
                "docs/shortcuts.md); export a probe whose query makes one")
    return (f"no finished {'/'.join(metric.tasks)} run with rows for it; score a probe "
            "with python -m probes.engine.run")


def _compute(con: duckdb.DuckDBPyConnection, found: list[Any], names: Sequence[str] | None,
             run_ids: Sequence[str] | None, run_metric: Any, with_items: Any) -> pl.DataFrame:
    if names:
        known = {m.name for m in found}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ProbeError(f"unknown metric(s) {', '.join(unknown)}; known metrics: "
                             f"{', '.join(sorted(known))}")
        found = [m for m in found if m.name in names]
    models = {r: m for r, m, _ in con.execute("SELECT run_id, model, task FROM runs").fetchall()}
    tasks = {t for r, _, t in con.execute("SELECT run_id, model, task FROM runs").fetchall()
             if run_ids is None or r in set(run_ids)}
    frames: list[pl.DataFrame] = []
    why: dict[str, str] = {}
    for metric in found:
        if metric.needs_run and not tasks & set(metric.tasks):
            why[metric.name] = f"no finished {'/'.join(metric.tasks)} run"
            continue  # no run of the tasks it applies to
        cols, rows = run_metric(con, metric)
        keep = [*metric.grain, "value", *(c for c in ("n", "ci_low", "ci_high") if c in cols)]
        data = [{c: r[cols.index(c)] for c in keep} for r in rows]
        if run_ids is not None and "run_id" in metric.grain:
            data = [d for d in data if d["run_id"] in set(run_ids)]
        if not data:
            why[metric.name] = empty_metric_reason(con, metric)
            continue
        if with_items(con, metric, data):
            keep = [*dict.fromkeys([*keep, *ITEM_COLUMNS])]
            data = [{c: d.get(c) for c in keep} for d in data]
        frame = pl.DataFrame(data, schema_overrides={"per_prompt": PER_PROMPT}
                             if "per_prompt" in keep else None, infer_schema_length=None)
        extra = [pl.lit(metric.name).alias("metric")]
        if "run_id" in metric.grain:
            extra.append(pl.col("run_id").replace_strict(models, default=None,
                                                          return_dtype=pl.String).alias("model"))
        frames.append(frame.with_columns(extra).with_columns(
            pl.col("value").cast(pl.Float64)))
    for name, reason in why.items():
        if names or not frames:
            warnings.warn(f"metric {name} has no rows: {reason}", UserWarning, stacklevel=3)
    if not frames:
        return pl.DataFrame(schema={"metric": pl.String, "value": pl.Float64})
    out = pl.concat(frames, how="diagonal_relaxed")
    first = [c for c in ("metric", "model", "run_id", "probe", "split") if c in out.columns]
    return out.select(first + [c for c in out.columns if c not in first])


def _rows(con: duckdb.DuckDBPyConnection, table: str, run_ids: Sequence[str]) -> pl.DataFrame:
    order = "rank" if table == "responses" else "candidate"
    return frame(con, f"SELECT * FROM {table} WHERE run_id IN ({_in(run_ids)}) ORDER BY "
                  f"run_id, split, instance_id, prompt_id, {order}", run_ids)


def export_parquet(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], folder: Path,
                   stamp: str = "") -> list[Path]:
    """The runs' ``scores`` and ``responses`` rows as ``scores[_<stamp>].parquet`` and
    ``responses[_<stamp>].parquet`` in ``folder`` (a table without rows writes no file)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for table in ("scores", "responses"):
        frame = _rows(con, table, run_ids)
        if frame.is_empty():
            continue
        path = folder / (f"{table}_{stamp}.parquet" if stamp else f"{table}.parquet")
        tmp = path.with_suffix(".parquet.tmp")
        frame.write_parquet(tmp)
        tmp.replace(path)
        paths.append(path)
    return paths


def _prediction(scores: list[dict[str, Any]]) -> str | None:
    """The label (else candidate) with the highest mean score over its rows; the first in
    order on a tie.

    >>> _prediction([{"label": "yes", "candidate": "a", "score": -1.0},
    ...              {"label": "no", "candidate": "b", "score": -2.0},
    ...              {"label": "yes", "candidate": "c", "score": -4.0}])
    'no'
    """
    sums: dict[str, list[float]] = {}
    for s in scores:
        if s["score"] is None:
            continue
        sums.setdefault(s["label"] or s["candidate"], []).append(float(s["score"]))
    if not sums:
        return None
    means = {k: sum(v) / len(v) for k, v in sums.items()}
    return max(means, key=lambda k: means[k])


def samples(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """One record per instance of a run (see the module docstring), ordered by split and id."""
    row = con.execute("SELECT probe, config FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise ProbeError(f"no run {run_id!r} in the results file")
    templates = (json.loads(row[1]) if row[1] else {}).get("prompts") or []
    inst = frame(con, """SELECT split, instance_id, target, gold, candidates FROM instances
                          WHERE probe = ? ORDER BY split, instance_id""", [row[0]])
    scores = _rows(con, "scores", [run_id])
    responses = _rows(con, "responses", [run_id])
    by_score: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in scores.iter_rows(named=True):
        by_score.setdefault((s["split"], s["instance_id"]), []).append(
            {k: s[k] for k in ("prompt_id", "candidate", "label", "prompt", "score",
                               "n_tokens", "n_chars", "baseline")})
    by_resp: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in responses.iter_rows(named=True):
        per = by_resp.setdefault((r["split"], r["instance_id"]), {})
        entry = per.setdefault(r["prompt_id"], {
            "prompt_id": r["prompt_id"],
            "template": templates[r["prompt_id"]] if r["prompt_id"] < len(templates) else None,
            "tokens": [], "probabilities": []})
        entry["tokens"].append(r["token"])
        entry["probabilities"].append(r["probability"])
    out = []
    for i in inst.iter_rows(named=True):
        key = (i["split"], i["instance_id"])
        got_s, got_r = by_score.get(key), by_resp.get(key)
        if got_s is None and got_r is None:
            continue  # not part of this run (another split, --limit or --sample)
        resp = [got_r[p] for p in sorted(got_r)] if got_r else []
        prediction = _prediction(got_s) if got_s else (
            resp[0]["tokens"][0] if resp and resp[0]["tokens"] else None)
        out.append({"run_id": run_id, "probe": row[0], **i, "scores": got_s or [],
                    "responses": resp, "prediction": prediction})
    return out


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S.%f")


def write_outputs(con: duckdb.DuckDBPyConnection, output_path: Path, run_ids: Sequence[str],
                  config: dict[str, Any], log_samples: bool = False,
                  metric_dirs: Sequence[Path] | None = None) -> list[Path]:
    """Write the results JSON, the Parquet files and (``log_samples``) the samples JSONL of
    ``run_ids`` under ``output_path/<model>/``; returns the paths written. ``con``: a read-only
    connection (the metrics make it a sandbox, see :func:`compute_metrics`)."""
    if output_path.exists() and not output_path.is_dir():
        raise ProbeError(f"--output-path {output_path} is a file; give a folder")
    runs = frame(con, f"""SELECT run_id, model, revision, backend, task, probe, status,
                           wall_s, config FROM runs WHERE run_id IN ({_in(run_ids)})
                           ORDER BY probe""", run_ids)
    if runs.is_empty():
        raise ProbeError("no runs to write to --output-path")
    folder = output_path / slug(str(config.get("model") or runs["model"][0]))
    folder.mkdir(parents=True, exist_ok=True)
    stamp = _stamp()
    metrics = compute_metrics(con, dirs=metric_dirs, run_ids=list(run_ids))
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in runs["probe"]}
    for m in metrics.iter_rows(named=True):
        probe = m.get("probe")
        if probe in results:
            results[probe].append({k: v for k, v in m.items() if v is not None
                                   and k not in ("probe", "model")})
    doc = {
        "results": results,
        "config": config,
        "runs": {r["probe"]: {**{k: r[k] for k in ("run_id", "model", "revision", "backend",
                                                   "task", "status", "wall_s")},
                              "config": json.loads(r["config"]) if r["config"] else None}
                 for r in runs.iter_rows(named=True)},
        "versions": versions(),
        "date": stamp,
    }
    path = folder / f"results_{stamp}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n",
                    encoding="utf-8")
    written = [path, *export_parquet(con, run_ids, folder, stamp)]
    if log_samples:
        for r in runs.iter_rows(named=True):
            out = folder / f"samples_{slug(r['probe'])}_{stamp}.jsonl"
            with out.open("w", encoding="utf-8") as f:
                for record in samples(con, r["run_id"]):
                    f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            written.append(out)
    return written
