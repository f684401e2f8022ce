"""Where things live. Every location can be changed by an environment variable or a CLI flag.

| what            | environment variable    | default                                     |
|-----------------|-------------------------|---------------------------------------------|
| data directory  | ``KGPROBE_DATA_DIR``    | ``../shared/data`` (relative to the cwd)     |
| WordNet files   | ``KGPROBE_WORDNET_DIR`` | ``/usr/share/wordnet`` (Debian wordnet-base) |
| working folder  | ``KGPROBE_HOME``        | ``.kgprobe`` (relative to the cwd)           |
| store           | ``KGPROBE_STORE``       | ``<home>/store``                             |
| results file    | ``KGPROBE_RESULTS``     | ``<home>/results.duckdb``                    |
| model cache     | ``KGPROBE_MODEL_CACHE`` | ``~/.cache/kgprobe/models``                  |
| probe folders   | ``KGPROBE_QUERIES``     | none (folders besides ``queries/``, ``:``-separated) |

>>> import os
>>> saved = os.environ.pop("KGPROBE_STORE", None)  # the store's own variable wins over home
>>> os.environ["KGPROBE_HOME"] = "kgp-doc"
>>> str(store_path())
'kgp-doc/store'
>>> del os.environ["KGPROBE_HOME"]
>>> if saved is not None: os.environ["KGPROBE_STORE"] = saved
"""

from __future__ import annotations

import os
from pathlib import Path


def _env_path(name: str, default: str | Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else Path(default).expanduser()


def data_dir() -> Path:
    """The folder that holds the benchmark sources (``../shared/data`` by default)."""
    return _env_path("KGPROBE_DATA_DIR", Path("..") / "shared" / "data")


def wordnet_dir() -> Path:
    """The WordNet 3.0 database folder (``/usr/share/wordnet`` on Debian)."""
    return _env_path("KGPROBE_WORDNET_DIR", Path("/usr/share/wordnet"))


def home() -> Path:
    """The working folder for the store and the results file."""
    return _env_path("KGPROBE_HOME", ".kgprobe")


def store_path() -> Path:
    """The embedded Oxigraph store folder."""
    return _env_path("KGPROBE_STORE", home() / "store")


def results_path() -> Path:
    """The DuckDB results file."""
    return _env_path("KGPROBE_RESULTS", home() / "results.duckdb")


def model_cache() -> Path:
    """Where dequantised GGUF models are cached as safetensors (outside the repository)."""
    return _env_path("KGPROBE_MODEL_CACHE", Path.home() / ".cache" / "kgprobe" / "models")


def exports_dir() -> Path:
    """Where ``python -m probes.engine.export`` writes Parquet files."""
    return _env_path("KGPROBE_EXPORTS", home() / "exports")


def extra_query_dirs() -> list[Path]:
    """Probe folders besides ``queries/`` from ``KGPROBE_QUERIES`` (separated by ``os.pathsep``),
    read by every command that finds probes, so a folder named once applies to every step.

    >>> os.environ["KGPROBE_QUERIES"] = os.pathsep.join(["mine", "theirs"])
    >>> [str(p) for p in extra_query_dirs()]
    ['mine', 'theirs']
    >>> del os.environ["KGPROBE_QUERIES"]
    """
    value = os.environ.get("KGPROBE_QUERIES", "")
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p]
