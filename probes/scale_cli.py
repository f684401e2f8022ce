"""The scale options of ``python -m probes.run``: model lists, model placement, shards.

``add_arguments`` adds them to the run parser; ``route`` sends a command line that uses them to
:mod:`probes.model_lists` (``--models``) or :mod:`probes.shard` (``--shard``, torchrun) before
the normal run; ``load_options`` turns ``--device-map``/``--max-memory``/``--offload-folder``
into keyword arguments of ``probes.backends.registry.load_scorer``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from probes.errors import ProbeError


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The scale options (see docs/scale.md)."""
    p.add_argument("--models", metavar="LIST",
                   help="run every model of a paper's list, one run per model, resumable: "
                   "paper:semrel, paper:copen, paper:ontolama, or a .toml list "
                   "(probes/model_lists/); instead of --model")
    p.add_argument("--model-dir", action="append", metavar="LABEL=FOLDER",
                   help="with --models: load the listed model LABEL from a local folder "
                   "instead of the hub; repeatable")
    p.add_argument("--device-map", choices=("auto", "balanced", "balanced_low_0", "sequential"),
                   help="spread a model larger than one GPU over all GPUs (and CPU/disk) "
                   "with accelerate")
    p.add_argument("--max-memory", metavar="DEV=SIZE,...",
                   help="with --device-map: memory per device, e.g. 0=70GiB,1=70GiB,cpu=200GiB "
                   "(what does not fit is offloaded to disk)")
    p.add_argument("--offload-folder", metavar="DIR",
                   help="with --device-map: folder for weights offloaded to disk (default: "
                   "offload/<model> in the model cache)")
    p.add_argument("--shard", metavar="I/N",
                   help="score only shard I of N (0-based) into <results>.shard-I-of-N; merge "
                   "them with `python -m probes.run merge --shards N` (torchrun sets this "
                   "from RANK/WORLD_SIZE and merges by itself)")
    p.add_argument("--shard-part", action="store_true", help=argparse.SUPPRESS)


def load_options(args: argparse.Namespace) -> dict[str, Any]:
    """``load_scorer`` keyword arguments for the placement options (none without them)."""
    if args.device_map is None:
        if args.max_memory or args.offload_folder:
            raise ProbeError("--max-memory and --offload-folder need --device-map (e.g. auto)")
        return {}
    from probes.placement import parse_max_memory

    return {"device_map": args.device_map, "max_memory": parse_max_memory(args.max_memory),
            "offload_folder": args.offload_folder}


def route(args: argparse.Namespace, argv: Sequence[str], main: Callable[..., int],
          factory: Any) -> int | None:
    """Run a list, a shard or a distributed rank and return its exit code; None when the
    command is a plain run that ``probes.app.run.main`` does itself. A ProbeError for options
    that do not go together."""
    from probes import shard

    if args.models:
        if args.model:
            raise ProbeError("give --model or --models, not both")
        from probes.model_lists import run_list

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
