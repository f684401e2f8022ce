"""The benchmark records (kg/benchmark.py, probes/benchmarks/<name>/benchmark.toml): every
benchmark package has one, what it names exists, and the readers (the kgprobe tree, kg.build,
the profile) take their benchmarks from them and from nowhere else."""

from __future__ import annotations

import importlib
import re
import shutil
from pathlib import Path

import pytest

from kg.benchmark import BenchmarkError, benchmarks, get, read_record
from kg.build import benchmark_sources
from kg.manifest import load_manifest

ROOT = Path(__file__).parents[1]
PACKAGES = sorted(p.parent.name for p in (ROOT / "probes" / "benchmarks").glob("*/__init__.py")
                  if p.parent.name != "__pycache__")


def _resolve(ref: str) -> object:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def test_every_benchmark_package_has_a_record() -> None:
    assert [b.name for b in benchmarks()] == ["semrel", "ontolama", "copen", "bear", "pararel"]
    assert sorted(b.name for b in benchmarks()) == PACKAGES


@pytest.mark.parametrize("name", PACKAGES)
def test_what_a_record_names_exists(name: str) -> None:
    b = get(name)
    manifest = load_manifest()
    assert b.sources and all(s in manifest for s in b.sources)
    assert list(b.query_dir.glob("*.rq")), b.query_dir
    assert list(b.metric_dir.glob("*.sql")), b.metric_dir
    for command in [b.report, b.command, *b.subcommands.values(), *b.commands.values()]:
        assert command is not None and callable(_resolve(command.ref)), command
    assert b.profile is not None
    for rows in b.profile.rows:
        assert (ROOT / "eval" / "profile_sql" / f"{rows}.sql").is_file()


def test_the_cli_tables_are_the_records() -> None:
    from probes.app import cli

    for b in benchmarks():
        assert b.command is not None
        assert cli.COMMANDS[b.name] == (b.command.ref, b.command.help)
        for name, c in b.commands.items():
            assert cli.COMMANDS[name] == (c.ref, c.help)
        for name, c in b.eval_subcommands().items():
            assert cli.EVAL_SUBCOMMANDS[(b.name, name)] == (c.ref, c.help)
        for name in b.endpoint:
            assert (b.name, name) in cli.ENDPOINT_COMMANDS
    # nothing but the records and the steps' own commands
    named = {b.name for b in benchmarks()} | {n for b in benchmarks() for n in b.commands}
    assert set(cli.COMMANDS) - named == {"build", "derived", "list", "query", "export", "run",
                                         "report", "results", "layers"}
    assert {c for c, _ in cli.EVAL_SUBCOMMANDS} <= {b.name for b in benchmarks()}


def test_no_other_module_lists_the_benchmarks() -> None:
    """No .py file of the readers spells out a table of three or more benchmark names."""
    names = [b.name for b in benchmarks()]
    for path in [ROOT / "probes" / "app" / "cli.py", ROOT / "kg" / "build.py",
                 ROOT / "eval" / "profile.py"]:
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            quoted = {n for n in names if re.search(rf"[\"']{n}[\"']", line)}
            assert len(quoted) < 2, f"{path.name}: {line.strip()}"


def test_kgprobe_pararel_has_its_sub_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from probes.app.cli import main

    with pytest.raises(SystemExit) as e:
        main(["pararel", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for sub in ("stats", "subset", "report"):
        assert re.search(rf"\b{sub}\b", out), out


def test_build_takes_a_benchmark_s_sources() -> None:
    assert benchmark_sources(["pararel"]) == ["pararel"]
    # the optional bear-big stays out (it needs -s), -s sources come first, each once
    assert benchmark_sources(["bear"], ["bear", "wordnet"]) == ["bear", "wordnet"]
    with pytest.raises(BenchmarkError, match=r"unknown benchmark 'parare'\. Did you mean "
                                             "'pararel'"):
        benchmark_sources(["parare"])


def test_a_bad_record_is_one_clear_error(tmp_path: Path) -> None:
    pkg = tmp_path / "mine"
    pkg.mkdir()
    shutil.copy(ROOT / "probes" / "benchmarks" / "pararel" / "benchmark.toml",
                pkg / "benchmark.toml")
    text = (pkg / "benchmark.toml").read_text().replace('name = "pararel"', 'name = "mine"')
    (pkg / "benchmark.toml").write_text(text.replace("order = 50", "order = 50\nsorces = []"))
    with pytest.raises(BenchmarkError, match=r"benchmark.toml: field sorces: Extra inputs"):
        read_record(pkg / "benchmark.toml")
    (pkg / "benchmark.toml").write_text(text.replace('name = "mine"', 'name = "other"'))
    with pytest.raises(BenchmarkError, match="name = 'other' but the package is 'mine'"):
        read_record(pkg / "benchmark.toml")
    (pkg / "benchmark.toml").write_text(text)
    assert [b.name for b in benchmarks(tmp_path)] == ["mine"]
