"""The one command-line tree (issue 26, point 4): ``kgprobe COMMAND`` and the ``python -m`` form
of a command build the same parser from the command's ``add_arguments``; the shared options
are defined once (kg/options.py, probes/engine/options.py); the values given before a command are
handed to it explicitly, never through the environment, so they never reach the next step.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from probes.app.cli import main
from tests.test_cli import write_probe

ROOT = Path(__file__).parents[1]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("KGPROBE_QUERIES", "KGPROBE_RESULTS"):
        monkeypatch.delenv(k, raising=False)


def _help(call: object, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """A command's --help without its usage block (which names the program)."""
    with pytest.raises(SystemExit):
        call(argv)  # type: ignore[operator]
    return capsys.readouterr().out.split("\n\n", 1)[1]


@pytest.mark.parametrize(("command", "module"), [
    ("run", "probes.app.run"), ("export", "probes.engine.export"), ("report", "eval.report"),
    ("kshot", "probes.benchmarks.ontolama.kshot"), ("build", "kg.build"),
    ("results", "probes.results.__main__")])
def test_kgprobe_and_python_m_build_the_same_parser(command: str, module: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    python_m = _help(importlib.import_module(module).main, ["--help"], capsys)
    kgprobe = _help(main, [command, "--help"], capsys)
    assert kgprobe.split("options:")[1] == python_m.split("options:")[1]
    assert "--results" in kgprobe or command in ("build", "results")


def test_python_m_forms_run_the_same_options() -> None:
    # python -m probes.engine.run and kgprobe run both refuse a missing --probe the same way
    for argv in ([sys.executable, "-m", "probes.engine.run", "-m", "x"],
                 [sys.executable, "-m", "probes.app.cli", "run", "-m", "x"]):
        out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 2 and "--probe" in out.stderr, argv


def test_shared_options_are_defined_once() -> None:
    # every --results of kg/, probes/ and eval/ comes from kg.options.add_results
    hits = []
    for layer in ("kg", "probes", "eval"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "add_argument(" in line and any(
                        f'"{flag}"' in line for flag in ("--results", "--store", "--queries",
                                                          "--threads", "--device", "--dtype")):
                    hits.append(f"{path.relative_to(ROOT)}:{n}")
    assert {h.split(":")[0] for h in hits} <= {"kg/options.py", "probes/engine/options.py"}, hits


def test_two_steps_in_one_process_do_not_leak(tmp_path: Path, tiny_store_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Step 1 names --results A and --queries; step 2 names neither: it writes the user's
    default file B and reads no extra folder (step 1's values never reach it)."""
    mine = tmp_path / "mine"
    write_probe(mine)
    first, default = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    monkeypatch.setenv("KGPROBE_RESULTS", str(default))
    store = ["--store", str(tiny_store_path)]
    assert main(["--results", str(first), "-q", str(mine), *store, "export", "-p", "mine/*",
                 "--no-parquet", "--quiet"]) == 0
    assert os.environ["KGPROBE_RESULTS"] == str(default)
    assert "KGPROBE_QUERIES" not in os.environ
    # without -q the probe folder of step 1 is unknown: the step fails, writing nothing
    assert main([*store, "export", "-p", "mine/*", "--no-parquet", "--quiet"]) == 2
    assert not default.exists()
    assert main(["-q", str(mine), *store, "export", "-p", "mine/*", "--no-parquet",
                 "--quiet"]) == 0
    for path in (first, default):
        with duckdb.connect(str(path), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM probe_exports").fetchone() == (1,)
            assert con.execute("SELECT count(*) FROM instances").fetchone() == (5,)


def test_values_before_the_command_reach_it_explicitly(tmp_path: Path) -> None:
    from probes.app.cli import merge_shared

    args = argparse.Namespace(top_results=tmp_path / "top.duckdb", top_store=None,
                              top_queries=[Path("a")], top_endpoint=None,
                              results=None, queries=[Path("b")])
    added = merge_shared(args, ("export",))
    assert args.results == tmp_path / "top.duckdb" and args.queries == [Path("a"), Path("b")]
    assert added == ["--results", str(tmp_path / "top.duckdb"), "--queries", "a"]
    # a value after the command wins; a command without --store ignores the top-level one
    args = argparse.Namespace(top_results=Path("top"), top_store=Path("s"), top_queries=[],
                              top_endpoint=None, results=Path("own"))
    assert merge_shared(args, ("report",)) == [] and args.results == Path("own")
    assert not hasattr(args, "store")


def test_benchmark_subcommands_from_eval_are_in_the_tree(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    with pytest.raises(SystemExit):
        main(["copen", "--help"])
    out = capsys.readouterr().out
    for sub in ("load", "zero-shot", "construct", "report", "submission"):
        assert sub in out
    with pytest.raises(SystemExit):
        main(["copen", "submission", "--help"])
    assert "--part" in capsys.readouterr().out


def test_every_command_and_sub_command_has_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    # kgprobe semrel humans|vocab named a module without main before the tree (issue 26)
    for argv, option in ((["semrel", "humans"], "--endpoint"), (["semrel", "vocab"], "--results"),
                         (["semrel", "report"], "--absent"), (["ontolama", "stats"], "--store"),
                         (["ontolama", "report"], "--split"), (["results", "upgrade"], "path"),
                         (["copen", "zero-shot"], "--span"), (["list"], "--what"),
                         (["bear", "subset"], "--relation"), (["bear", "report"], "--out"),
                         (["bear", "stats"], "--endpoint")):
        with pytest.raises(SystemExit) as e:
            main([*argv, "--help"])
        assert e.value.code == 0
        assert option in capsys.readouterr().out, argv
