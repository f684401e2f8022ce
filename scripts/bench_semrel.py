"""Relatum-prediction throughput with and without the a/an double probing (a benchmark, not a
test).

Workload: the first ``--instances`` target words (by instance id) of the exported probe
``--probe`` (default ``semrel/hyp``), rendered with every template of the probe as the relatum
task renders them for the model, top-100 over the lower-case whole-word vocabulary. Two passes
over the same probes with the same scorer:

- ``a/an mixed`` (the probe's ``slot_det: both``): a template with ``[DET]`` before the slot is
  run twice, with "a" and with "an", and the two next-token distributions are mixed on the device
  (``probes.engine.tasks.relatum``);
- ``single``: ``slot_det: a``, one forward pass per probe.

Prints probes/s and forward passes/s of each pass and the cost of the mixing. Needs the probe
exported (``python -m probes.engine.export -p 'semrel/*'``).

Run: ``.venv/bin/python scripts/bench_semrel.py --model smollm2-135m --threads 2``
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from kg import config, options
from probes.backends.registry import load_scorer
from probes.engine.errors import ProbeError
from probes.engine.runner.plan import load_instances, task_context
from probes.engine.runner.scoring import score_requests
from probes.engine.spec import discover
from probes.engine.tasks import get_task
from probes.results import connect


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--probe", default="semrel/hyp")
    parser.add_argument("--instances", type=int, default=150)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--results", default=None, help="results file holding the instances")
    args = parser.parse_args(argv)
    con = connect(args.results or config.results_path(), read_only=True)
    try:
        probes = discover(None, [args.probe])
        if not probes:
            raise ProbeError(f"no probe file named {args.probe}")
        probe = probes[0]
        instances = load_instances(con, probe.spec.name, None, args.instances,
                                   str(args.results or config.results_path()))
    except ProbeError as e:
        return options.error_line(e)
    finally:
        con.close()
    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype, threads=args.threads)
    task = get_task("relatum")
    ctx = task_context(scorer, 100)
    scorer.topk(["warm up"], 5)
    print(f"model {args.model} ({scorer.kind}, {scorer.dtype}, {scorer.device}, "
          f"{torch.get_num_threads()} threads); {len(instances)} targets of {probe.spec.name} x "
          f"{len(probe.spec.prompts)} templates")
    rows = []
    for label, det in (("a/an mixed", "both"), ("single", "a")):
        spec = probe.spec.model_copy(update={"params": {**probe.spec.params, "slot_det": det}})
        requests = [r for inst in instances for item in task.items(inst, spec, ctx)
                    for r in item.requests]
        passes = sum(len(r.args) for r in requests)
        t0 = time.perf_counter()
        score_requests(scorer, requests)
        seconds = time.perf_counter() - t0
        rows.append((label, len(requests), passes, seconds))
    print("\n| pass | probes | forward passes | seconds | probes/s | passes/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, n, passes, seconds in rows:
        print(f"| {label} | {n:,} | {passes:,} | {seconds:.1f} | {n / seconds:.1f} | "
              f"{passes / seconds:.1f} |")
    mixed, single = rows
    print(f"\na/an mixing costs {mixed[3] / single[3]:.2f}x the time of single probing "
          f"({mixed[2] / mixed[1]:.2f} forward passes per probe)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
