"""``--model-args`` (probes.engine.model_args): parsing, validation, and how it reaches the model
loader through ``python -m probes.engine.run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probes.app.run import main
from probes.engine.errors import ProbeError
from probes.engine.model_args import merge_flags, parse_model_args
from probes.engine.runner.command import build_parser
from tests.test_run import FakeScorer, choice_probe, query, setup


def test_parses_every_key_with_typed_values() -> None:
    got = parse_model_args("revision=v1.0, dtype=bfloat16,trust_remote_code=yes,"
                           "allow_pickle=False,device_map=auto")
    assert got == {"revision": "v1.0", "dtype": "bfloat16", "trust_remote_code": True,
                   "allow_pickle": False, "device_map": "auto"}


@pytest.mark.parametrize(("text", "message"), [
    ("revison=main", "unknown key 'revison' (did you mean 'revision'?)"),
    ("pretrained=gpt2", "unknown key 'pretrained'; known keys: revision, dtype"),
    ("dtype=bfloat", "dtype='bfloat' is not one of float32, bfloat16, float16 (did you mean "
                     "'bfloat16'?)"),
    ("trust_remote_code=maybe", "trust_remote_code='maybe' is not a truth value"),
    ("dtype", "'dtype' is not key=value"),
    ("revision=", "revision= needs a value"),
    ("device_map=everywhere", "device_map='everywhere' is not one of auto"),
])
def test_bad_model_args_name_the_key_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(ProbeError) as e:
        parse_model_args(text)
    assert message in str(e.value)


def test_flag_and_model_arg_must_agree() -> None:
    assert merge_flags({"allow_pickle": True}, {"allow_pickle": True}) == {"allow_pickle": True}
    with pytest.raises(ProbeError, match="--allow-pickle and --model-args allow_pickle=False"):
        merge_flags({"allow_pickle": False}, {"allow_pickle": True})


def run_with(tmp_path: Path, *args: str) -> tuple[int, list[dict[str, Any]], Path]:
    qdir, results = setup(tmp_path, choice_probe())
    seen: list[dict[str, Any]] = []

    def factory(name: str, **kwargs: Any) -> FakeScorer:
        seen.append(kwargs)
        return FakeScorer()

    code = main(["--model", "fake/model", "--results", str(results), "--queries", str(qdir),
                 "--only-extra", "--quiet", "-p", "t/choice", *args], factory)
    return code, seen, results


def test_model_args_reach_the_loader_as_keywords(tmp_path: Path) -> None:
    code, seen, results = run_with(
        tmp_path, "--model-args", "revision=abc123,dtype=float16,trust_remote_code=true,"
        "allow_pickle=true")
    assert code == 0
    (kw,) = seen
    assert kw["revision"] == "abc123" and kw["trust_remote_code"] is True
    assert kw["dtype"] == "float16" and kw["allow_pickle"] is True
    (config,) = query(results, "SELECT config FROM runs")
    runtime = json.loads(config[0])["runtime"]
    assert runtime["dtype"] == "float16"
    assert runtime["model_args"] == {"revision": "abc123", "dtype": "float16",
                                     "trust_remote_code": True, "allow_pickle": True}


def test_model_args_and_flags_together(tmp_path: Path) -> None:
    code, seen, _ = run_with(tmp_path, "--model-args", "revision=r", "--dtype", "bfloat16")
    assert code == 0 and seen[0]["dtype"] == "bfloat16" and seen[0]["revision"] == "r"


def test_conflicting_flag_is_an_error_before_any_model_loads(tmp_path: Path,
                                                             capsys: Any) -> None:
    code, seen, _ = run_with(tmp_path, "--model-args", "dtype=float16", "--dtype", "float32")
    assert code == 2 and seen == []
    assert "--dtype float32 and --model-args dtype=float16 disagree" in capsys.readouterr().err


def test_unknown_key_on_the_command_line(tmp_path: Path, capsys: Any) -> None:
    code, seen, _ = run_with(tmp_path, "--model-args", "dtyp=float16")
    assert code == 2 and seen == []
    assert "did you mean 'dtype'?" in capsys.readouterr().err


def test_help_lists_the_new_options() -> None:
    text = build_parser().format_help()
    for option in ("--model-args", "--apply-chat-template", "--output-path", "--log-samples"):
        assert option in text


def test_scoring_options_are_model_args() -> None:
    got = parse_model_args("pll_metric=within_word_l2r,boundary=whole")
    assert got == {"pll_metric": "within_word_l2r", "boundary": "whole"}
    with pytest.raises(ProbeError, match="did you mean 'within_word_l2r'"):
        parse_model_args("pll_metric=within_word_l2")
