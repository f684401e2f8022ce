"""``kgprobe layers``: linear probes per layer on a probing probe's statements, with control.

For each instance of a probe file with ``task: probing`` (exported first, like any probe) the
statement's hidden states are read once at every chosen layer and position
(:func:`probes.engine.hidden_cache.extract_cached`: cached and resumable; the states live in
``<results>.hidden/``). Then, per layer and position, a logistic regression is fitted on the
train split with its regularisation chosen on dev (:func:`probes.engine.probing.choose_on_dev`),
once on the instances' labels and once on the control task's labels
(:func:`probes.engine.probing.control_labels`), and each test instance's prediction is written
(``layer_probes``, ``layer_predictions``; eval/layers.py reads accuracy with intervals,
control accuracy and selectivity from them).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import torch

from kg import config
from kg import options as kg_options
from probes.backends.hidden import HiddenRequest
from probes.backends.protocol import description
from probes.engine import options
from probes.engine.errors import ProbeError
from probes.engine.hidden_cache import extract_cached, hidden_folder
from probes.engine.probing import C_GRID, choose_on_dev, control_labels, predict
from probes.engine.runner.plan import load_instances, run_id
from probes.engine.spec import Probe, discover
from probes.engine.tasks import Instance
from probes.engine.tasks.probing import TASK, ProbingParams
from probes.results import connect, transaction
from probes.results.writers import (
    LayerPredictionRow,
    LayerProbeRow,
    Run,
    delete_run,
    insert_run,
    write_layer_probes,
)

SPLITS = ("train", "dev", "test")
CONTROL_SEED = 42


def _value(inst: Instance, name: str) -> str:
    value = inst.fields.get(name)
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        raise ProbeError(f"instance {inst.instance_id} of probe {inst.probe} has no value for "
                         f"?{name}; select it in the query or fix params")
    return str(value)


def requests_of(instances: Sequence[Instance], params: ProbingParams) -> list[HiddenRequest]:
    """Each instance's statement and, with ``params.slot``, the span of the slot's last
    occurrence in it."""
    out = []
    for inst in instances:
        text = _value(inst, params.text)
        span = None
        if params.slot is not None:
            part = _value(inst, params.slot)
            start = text.rfind(part)
            if start < 0:
                raise ProbeError(f"instance {inst.instance_id} of probe {inst.probe}: its slot "
                                 f"{part!r} does not occur in its text {text!r}")
            span = (start, start + len(part))
        out.append(HiddenRequest(text, span))
    return out


@dataclass
class LayerResult:
    """One probe's per-layer rows of one run."""

    run_id: str
    probes: list[LayerProbeRow]
    predictions: list[LayerPredictionRow]
    n: dict[str, int]


def fit_layers(states: Any, items: Sequence[str], instances: Sequence[Instance],
               labels: Sequence[str], control: Sequence[str], rid: str,
               grid: Sequence[float] = C_GRID, positions: Sequence[str] | None = None
               ) -> tuple[list[LayerProbeRow], list[LayerPredictionRow]]:
    """Fit the probe and the control probe at every stored layer and position (``positions``:
    only those of the stored ones)."""
    split = [i.split for i in instances]
    idx = {s: [k for k, v in enumerate(split) if v == s] for s in SPLITS}
    probes: list[LayerProbeRow] = []
    preds: list[LayerPredictionRow] = []
    probe = instances[0].probe
    for layer in states.layers:
        for position in positions or states.positions:
            x = torch.from_numpy(states.matrix(list(items), layer, position))
            for is_control, names in ((False, labels), (True, control)):
                classes = sorted(set(names))
                y = torch.tensor([classes.index(n) for n in names])
                tr, dv, te = idx["train"], idx["dev"], idx["test"]
                chosen = choose_on_dev(x[tr], y[tr], x[dv], y[dv], len(classes), grid)
                probes.append(LayerProbeRow(rid, probe, layer, position, is_control,
                                            chosen.fit.c, chosen.dev_accuracy,
                                            chosen.train_accuracy, len(tr), len(dv)))
                guess = predict(chosen.fit, x[te]).tolist()
                preds.extend(LayerPredictionRow(rid, probe, "test", instances[k].instance_id,
                                                layer, position, is_control, names[k],
                                                classes[g]) for k, g in zip(te, guess,
                                                                            strict=True))
    return probes, preds


def run_layers(con: duckdb.DuckDBPyConnection, scorer: Any, probe: Probe, folder: Path, *,
               sample: int | None = None, layers: Sequence[int] | None = None,
               positions: Sequence[str] | None = None, grid: Sequence[float] = C_GRID,
               results: str = "the results file", dtype: str = "float16",
               fit_positions: Sequence[str] | None = None) -> LayerResult:
    """Extract, fit and write one probing probe's per-layer probes for ``scorer``."""
    spec = probe.spec
    if spec.task != "probing":
        raise ProbeError(f"probe {spec.name} has task {spec.task!r}; kgprobe layers runs "
                         "probes with task: probing")
    params: ProbingParams = TASK.typed_params(spec)
    where = list(positions or params.positions)
    if "slot" in where and params.slot is None:
        raise ProbeError(f"probe {spec.name}: position 'slot' needs params slot")
    instances = [i for i in load_instances(con, spec.name, list(SPLITS), None, results,
                                           sample) if i.gold]
    have = {s: sum(i.split == s for i in instances) for s in SPLITS}
    if not all(have.values()):
        raise ProbeError(f"probe {spec.name} needs labelled train, dev and test instances; "
                         f"{results} has {have}: export it again or give a larger --sample")
    labels = [i.gold[0].lower() for i in instances]
    if len(set(labels)) < 2:
        raise ProbeError(f"probe {spec.name}: every instance has the label {labels[0]!r}; a "
                         "probe needs two classes or more")
    by = params.control_by or params.slot
    control_items = [_value(i, by) if by else (i.target or i.instance_id) for i in instances]
    control = control_labels(control_items, labels, spec.seed or CONTROL_SEED)
    started = datetime.now()
    t0 = time.perf_counter()
    states, items = extract_cached(con, scorer, requests_of(instances, params), folder,
                                   params.layers if layers is None else layers, where,
                                   dtype=dtype)
    identity = {"task": "probing", "method": "linear-layers", "params": spec.params,
                "layers": states.layers, "positions": states.positions, "grid": list(grid),
                "sample": sample, "control_by": by, "control_seed": spec.seed or CONTROL_SEED,
                "scorer": dict(scorer.cache_key_options()), "hidden_key": states.key}
    fitted = [p for p in states.positions if not fit_positions or p in fit_positions]
    if not fitted:
        raise ProbeError(f"--fit-position {' '.join(fit_positions or [])}: none of them was "
                         f"extracted (positions {', '.join(states.positions)})")
    identity["fitted_positions"] = fitted
    rid = run_id(scorer.name, scorer.revision, spec.name, identity)
    probes_rows, preds = fit_layers(states, items, instances, labels, control, rid, grid,
                                    fitted)
    run = Run(run_id=rid, model=scorer.name, probe=spec.name, task="probing", status="done",
              revision=scorer.revision, backend=scorer.kind,
              config={**identity, "backend": description(scorer)},
              dtype=getattr(scorer, "dtype", None), device=str(getattr(scorer, "device", "")),
              started_at=started, finished_at=datetime.now(),
              wall_s=time.perf_counter() - t0, requests=len(instances),
              method="linear-layers", seed=spec.seed or CONTROL_SEED)
    with transaction(con):
        delete_run(con, rid, ("runs",))
        insert_run(con, run)
        write_layer_probes(con, probes_rows, preds)
    return LayerResult(rid, probes_rows, preds, have)


def format_result(result: LayerResult) -> str:
    """A markdown table: per layer and position, dev-chosen c, dev accuracy of the probe and
    of the control (test accuracy: `kgprobe report` / eval/layers.py)."""
    lines = [f"run {result.run_id}: train {result.n['train']}, dev {result.n['dev']}, "
             f"test {result.n['test']}", "",
             "| layer | position | c | dev accuracy | control c | control dev accuracy |",
             "|---:|---|---:|---:|---:|---:|"]
    rows = {(r.layer, r.position, r.control): r for r in result.probes}
    for (layer, position, control), r in rows.items():
        if control:
            continue
        c = rows[(layer, position, True)]
        lines.append(f"| {layer} | {position} | {r.c:g} | {r.dev_accuracy:.3f} | {c.c:g} | "
                     f"{c.dev_accuracy:.3f} |")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``kgprobe layers``."""
    parser.description = (__doc__ or "").split("\n")[0]
    options.add_model(parser, required=True, help="model name (as for kgprobe run)")
    parser.add_argument("--probe", required=True, action="append",
                        help="probing probe name or pattern; repeatable")
    kg_options.add_queries(parser, help="another folder of probe files")
    parser.add_argument("--layer", type=int, action="append",
                        help="layer to probe (0 = embeddings, -1 = last); default all")
    parser.add_argument("--position", action="append",
                        help="position (slot, last, mean, first, cls); default the probe's")
    parser.add_argument("--fit-position", action="append",
                        help="fit probes only at this extracted position (repeatable; default "
                        "every extracted one)")
    parser.add_argument("--c", type=float, action="append", dest="grid",
                        help="an inverse L2 strength to try on dev (repeatable; default "
                        + ", ".join(f"{c:g}" for c in C_GRID) + ")")
    parser.add_argument("--sample", type=int,
                        help="at most this many instances per split, balanced by label")
    parser.add_argument("--store-dtype", choices=["float16", "float32"], default="float16",
                        help="how the hidden states are stored (default float16)")
    options.add_device(parser)
    options.add_dtype(parser)
    options.add_threads(parser)
    kg_options.add_results(parser, help="results DuckDB file (hidden states beside it)")
    parser.set_defaults(handler=run)


def main(argv: list[str] | None = None) -> int:
    return kg_options.run_command("kgprobe layers", add_arguments, argv)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run every chosen probe; print each one's per-layer dev table."""
    from probes.backends.hidden import check_hidden
    from probes.backends.registry import load_scorer

    probes = discover(args.queries, args.probe)
    results = str(args.results or config.results_path())  # one file for states and rows
    folder = hidden_folder(results)
    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype,
                         threads=args.threads)
    check_hidden(scorer)
    con = connect(results)
    try:
        for probe in probes:
            result = run_layers(con, scorer, probe, folder, sample=args.sample,
                                layers=args.layer, positions=args.position,
                                results=results, dtype=args.store_dtype,
                                grid=args.grid or C_GRID, fit_positions=args.fit_position)
            print(f"## {probe.spec.name} ({scorer.name})\n\n{format_result(result)}\n")
    finally:
        con.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
