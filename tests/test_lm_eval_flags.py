"""lm-evaluation-harness habits on ``python -m probes.engine.run`` (issue 24, point 7): the
underscore spellings as aliases, ``--batch-size auto``, and ``--tasks`` / ``--num_fewshot``
answered with the kgprobe way of doing the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.app.run import main
from probes.engine.runner.command import build_parser


def test_underscore_spellings_are_aliases() -> None:
    args = build_parser().parse_args([
        "-m", "m", "-p", "x/*", "--model_args", "revision=main", "--batch_size", "8",
        "--output_path", "out", "--log_samples"])
    assert (args.model_args, args.batch_size, args.output_path, args.log_samples) == (
        "revision=main", 8, Path("out"), True)


@pytest.mark.parametrize("value", ["auto", "AUTO"])
def test_batch_size_auto_is_the_automatic_default(value: str) -> None:
    assert build_parser().parse_args(["--batch-size", value]).batch_size is None


@pytest.mark.parametrize("value", ["0", "auto:4", "many"])
def test_other_batch_sizes_are_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--batch-size", value])
    assert "--batch-size takes a positive number or auto" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "hint"), [
    ("--tasks", "--probe PATTERN"), ("--num_fewshot", "zero-shot prompts only"),
    ("--num-fewshot", "kgprobe kshot")])
def test_lm_eval_only_flags_point_at_the_kgprobe_equivalent(
        flag: str, hint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["-m", "m", "-p", "x/*", flag, "5", "--results", str(tmp_path / "r.duckdb")])
    err = capsys.readouterr().err
    assert code == 2
    assert "lm-evaluation-harness option" in err and hint in err
    assert not (tmp_path / "r.duckdb").exists()  # refused before anything was opened
