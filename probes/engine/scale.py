"""What the scale options of ``python -m probes.engine.run`` (model lists, model placement, shards;
parsed by :func:`probes.engine.runner.command.add_scale_arguments`) do to a run.

``route`` sends a command line that uses them to :mod:`probes.engine.model_lists` (``--models``) or
:mod:`probes.engine.shard` (``--shard``, torchrun) before the normal run; ``load_options`` turns
``--device-map``/``--max-memory``/``--offload-folder`` into keyword arguments of
``probes.backends.registry.load_scorer``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from probes.engine.errors import ProbeError


def load_options(args: argparse.Namespace) -> dict[str, Any]:
    """``load_scorer`` keyword arguments for the placement options (none without them)."""
    if args.device_map is None:
        if args.max_memory or args.offload_folder:
            raise ProbeError("--max-memory and --offload-folder need --device-map (e.g. auto)")
        return {}
    from probes.engine.placement import parse_max_memory

    return {"device_map": args.device_map, "max_memory": parse_max_memory(args.max_memory),
            "offload_folder": args.offload_folder}


def route(args: argparse.Namespace, argv: Sequence[str], main: Callable[..., int],
          factory: Any) -> int | None:
    """Run a list, a shard or a distributed rank and return its exit code; None when the
    command is a plain run that ``probes.app.run.main`` does itself. A ProbeError for options
    that do not go together."""
    from probes.engine import shard

    if args.models:
        if args.model:
            raise ProbeError("give --model or --models, not both")
        from probes.engine.model_lists import run_list

        return run_list(args, argv, main, factory)
    if not args.model:
        raise ProbeError("name a model with --model (or a paper's list with --models)")
    if args.model_dir:
        raise ProbeError("--model-dir goes with --models (a list); use --model FOLDER")
    if args.shard_part:
        return None
    if args.shard:
        return shard.run_shard(args, argv, main, factory, shard.parse_shard(args.shard))
    ranked = shard.distributed_shard()
    if ranked is not None:
        return shard.run_distributed(args, argv, main, factory, ranked)
    return None
