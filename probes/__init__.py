"""Probes: probe files, rendering, model backends, runs. The notebook API is :mod:`probes.api`;
its functions are also reachable as ``probes.<name>`` (imported on first use, so ``import
probes`` stays cheap and never imports torch)."""

from __future__ import annotations

from typing import Any

_API = ("export", "instances", "list_metrics", "list_probes", "list_tasks", "listing",
        "load_probe", "load_scorer", "metrics", "query", "runs", "save_outputs", "score")


def __getattr__(name: str) -> Any:
    if name in _API:
        from probes import api

        return getattr(api, name)
    raise AttributeError(f"module 'probes' has no attribute {name!r}")
