"""``kgprobe list --what``: probes (the default, as ``probes.engine.export --list``), tasks,
metrics, model args, or all of them, each with its description."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.app.cli import main
from probes.engine.export import main as export_main

ROOT = Path(__file__).resolve().parents[1]


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["list", *args]) == 0
    return capsys.readouterr().out


def names(section: str) -> list[str]:
    """The first word of each indented line of a ``listing`` section."""
    return [ln.split()[0] for ln in section.splitlines() if ln.startswith("  ")]


def test_default_is_the_probe_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert export_main(["--list"]) == 0
    exported = capsys.readouterr().out
    assert listed(capsys) == exported
    assert listed(capsys, "--what", "probes") == exported


def test_tasks_are_the_seven_task_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    out = listed(capsys, "--what", "tasks")
    assert out.splitlines()[0] == "tasks:"
    assert names(out) == ["binary", "choice", "generate", "probing", "records", "relatum",
                          "subsumption"]
    choice = next(ln for ln in out.splitlines() if ln.startswith("  choice"))
    assert "log-likelihood" in choice  # a description follows the name


def test_metrics_are_the_sql_files_of_eval_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    out = listed(capsys, "--what", "metrics")
    assert names(out) == sorted(p.stem for p in (ROOT / "eval" / "metrics").glob("*.sql")
                                if not p.name.startswith("_"))  # support files, no metrics
    line = next(ln for ln in out.splitlines() if ln.startswith("  choice_accuracy "))
    assert "[choice] Multiple choice accuracy." in line


def test_model_args_are_the_lm_eval_keys(capsys: pytest.CaptureFixture[str]) -> None:
    out = listed(capsys, "--what", "model_args")
    assert names(out) == ["revision", "dtype", "trust_remote_code", "allow_pickle",
                          "device_map", "pll_metric", "boundary",
                          # an inference server's model (lm-eval's local-completions keys)
                          "base_url", "model", "tokenizer", "num_concurrent", "batch_size",
                          "max_retries", "timeout", "top_logprobs"]


def test_all_lists_every_part_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    probes = listed(capsys)
    out = listed(capsys, "--what", "all")
    heads = [ln for ln in out.splitlines() if ln and not ln.startswith(" ")]
    assert heads == ["probes:", "tasks:", "metrics:", "model args (--model-args KEY=VALUE,...):"]
    probe_part = out.split("\n\ntasks:")[0].splitlines()[1:]
    assert probe_part == [f"  {ln}" for ln in probes.splitlines()]


def test_probe_pattern_with_another_part_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["list", "--what", "tasks", "-p", "starter/*"])
    assert stop.value.code == 2
    assert "--probe selects probes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["list", "--what", "models"])
    assert "invalid choice: 'models'" in capsys.readouterr().err
