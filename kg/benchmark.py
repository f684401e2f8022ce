"""The benchmark records: what each benchmark provides, declared once in its package.

A benchmark is one folder ``probes/benchmarks/<name>/`` with a ``benchmark.toml`` (the record)
beside its code. The record names its sources (entries of ``kg/sources.toml``), its probe folder
(``queries/<queries>/``), its metric folder (``eval/<metrics>/``), its report (the ``eval`` module
of ``kgprobe <name> report``), its commands (``kgprobe <name> ...`` and any top-level commands it
adds) and its rows in the knowledge profile. The readers are ``kg.build`` (``--benchmark``),
the ``kgprobe`` tree (``probes.app.cli``) and the profile (``eval.profile``); nothing else lists
benchmarks. The record is data, not code, and lives in the base layer's reader so that every
layer may read it (``kg`` may import neither ``probes`` nor ``eval``; ``eval`` may import no
``probes`` module but the results contract): reading a TOML file imports nothing.

>>> [b.name for b in benchmarks()][:4]
['semrel', 'ontolama', 'copen', 'bear']
>>> get("bear").sources
['bear', 'bear-big']
"""

from __future__ import annotations

import difflib
import tomllib
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kg.errors import KgError

#: where the benchmark packages are (each with its ``benchmark.toml``).
BENCHMARKS_DIR = Path(__file__).resolve().parents[1] / "probes" / "benchmarks"
RECORD = "benchmark.toml"
#: the repository's folders that a record's ``queries`` and ``metrics`` are relative to.
QUERIES_DIR = Path(__file__).resolve().parents[1] / "queries"
EVAL_DIR = Path(__file__).resolve().parents[1] / "eval"


class BenchmarkError(KgError):
    """A benchmark record that cannot be read, or an unknown benchmark name."""


class Command(BaseModel):
    """One command: the ``module:function`` that adds its options (and sets its handler) and
    its line of help."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ref: str = Field(pattern=r"^[a-z_][\w.]*:[a-z_]\w*$")
    help: str


class Profile(BaseModel):
    """A benchmark's rows in the knowledge profile: the profile metrics
    (``eval/profile_sql/<name>.sql``) whose rows make its lines, its label in the profile's
    table and the unit its items are counted in."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rows: list[str] = Field(min_length=1)
    label: str
    unit: str = "instances"
    note: str | None = Field(None, description="what the profile's notes say of its rows")


class Benchmark(BaseModel):
    """One benchmark's record (``probes/benchmarks/<name>/benchmark.toml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: str
    order: int = Field(description="the benchmark's place in listings (the CLI, the profile)")
    sources: list[str] = Field(default_factory=list)
    queries: str
    metrics: str
    report: Command | None = Field(None, description=(
        "`kgprobe NAME report`: the eval module that reads its metric folder"))
    command: Command | None = Field(None, description="`kgprobe NAME ...`")
    endpoint: list[str] = Field(default_factory=list, description=(
        "the sub-commands of `kgprobe NAME` that query the store (take --endpoint)"))
    subcommands: dict[str, Command] = Field(default_factory=dict, description=(
        "sub-commands that live in eval besides report (the benchmark package may not import "
        "them)"))
    commands: dict[str, Command] = Field(default_factory=dict, description=(
        "top-level commands the benchmark adds besides `kgprobe NAME`"))
    profile: Profile | None = None

    @property
    def query_dir(self) -> Path:
        return QUERIES_DIR / self.queries

    @property
    def metric_dir(self) -> Path:
        return EVAL_DIR / self.metrics

    def eval_subcommands(self) -> dict[str, Command]:
        """The sub-commands of ``kgprobe NAME`` that live in ``eval``: ``report`` (from
        :attr:`report`) and the others."""
        return {**({"report": self.report} if self.report else {}), **self.subcommands}


def read_record(path: Path) -> Benchmark:
    """One record, validated; a :class:`BenchmarkError` naming the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        record = Benchmark.model_validate(data)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise BenchmarkError(f"{path}: cannot read the benchmark record: {e}") from e
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        raise BenchmarkError(f"{path}: field {where}: {first['msg']}; see docs/architecture.md "
                             "'A new benchmark'") from e
    if record.name != path.parent.name:
        raise BenchmarkError(f"{path}: name = {record.name!r} but the package is "
                             f"{path.parent.name!r}; make them the same")
    return record


@cache
def _benchmarks(root: Path) -> tuple[Benchmark, ...]:
    records = [read_record(p) for p in sorted(root.glob(f"*/{RECORD}"))]
    return tuple(sorted(records, key=lambda b: (b.order, b.name)))


def benchmarks(root: Path | None = None) -> list[Benchmark]:
    """Every benchmark record under ``root`` (default: ``probes/benchmarks``), in their
    declared order."""
    return list(_benchmarks((root or BENCHMARKS_DIR).resolve()))


def get(name: str, root: Path | None = None) -> Benchmark:
    """The record of benchmark ``name``, with a "did you mean" on a typo."""
    found = {b.name: b for b in benchmarks(root)}
    if name not in found:
        close = difflib.get_close_matches(name, found, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise BenchmarkError(f"unknown benchmark {name!r}.{hint} Known benchmarks: "
                             f"{', '.join(found)}.")
    return found[name]


def sources_of(names: list[str], root: Path | None = None) -> list[str]:
    """The sources of the benchmarks named, each once, in their order.

    >>> sources_of(["bear", "copen"])
    ['bear', 'bear-big', 'copen']
    """
    return list(dict.fromkeys(s for n in names for s in get(n, root).sources))
