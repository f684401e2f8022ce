"""The papers' model lists (probes/engine/model_lists/*.toml) and ``probes.engine.run --models``.

Expected entries are copied by hand from the papers: Cao et al. Table 4 and Section 7.1 ("we
use the cased version" of BERT), COPEN Appendix A Table 7, OntoLAMA Tables 3 and 4.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from probes.app.run import main
from probes.engine.model_lists import load_list
from probes.engine.models import hub_reachable
from tests.test_run import FakeScorer, choice_probe, query, setup


def test_semrel_list_is_table_4() -> None:
    got = [(m.label, m.hub, m.kind, m.params) for m in load_list("paper:semrel").models]
    opt = ["125m", "350m", "1.3b", "2.7b", "6.7b", "13b", "30b", "66b"]
    want = [("B1", "bert-base-cased", "masked", "110M"),
            ("B2", "bert-large-cased", "masked", "340M"),
            ("A1", "albert-base-v2", "masked", "12M"), ("A2", "albert-large-v2", "masked", "18M"),
            ("A3", "albert-xlarge-v2", "masked", "60M"),
            ("A4", "albert-xxlarge-v2", "masked", "235M"),
            ("R1", "roberta-base", "masked", "125M"), ("R2", "roberta-large", "masked", "355M")]
    want += [(f"O{i}", f"facebook/opt-{s}", "causal", s.upper())
             for i, s in enumerate(opt, start=1)]
    assert got == want


def test_copen_and_ontolama_lists() -> None:
    copen = {m.label: (m.hub, m.kind) for m in load_list("paper:copen").models}
    assert len(copen) == 16
    assert copen["BERT_BASE"] == ("bert-base-uncased", "masked")
    assert copen["GPT-Neo_125M"] == ("EleutherAI/gpt-neo-125M", "causal")
    assert copen["BART_BASE"] == ("facebook/bart-base", "seq2seq")
    assert copen["T5_11B"] == ("t5-11b", "seq2seq")
    main_models = [m.label for m in load_list("paper:copen").models if m.role == "main"]
    assert main_models == ["BERT_BASE", "RoBERTa_BASE", "GPT-2_BASE", "GPT-Neo_125M",
                           "BART_BASE", "T5_BASE"]  # Table 2's rows
    onto = load_list("paper:ontolama").models
    assert [(m.label, m.hub) for m in onto] == [
        ("roberta-base", "roberta-base"), ("roberta-large", "roberta-large"),
        ("roberta-large-pm-m3-voc", "")]


def test_offline_list_fails_fast_naming_every_missing_model(tmp_path: Path, capsys: Any,
                                                             monkeypatch: Any) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty HF cache
    hub_reachable.cache_clear()
    qdir, results = setup(tmp_path, choice_probe())
    loaded: list[str] = []
    t0 = time.perf_counter()
    code = main(["--models", "paper:semrel", "--results", str(results), "--queries",
                 str(qdir), "--only-extra", "-p", "t/*"],
                lambda name, **kw: loaded.append(name) or FakeScorer(name=name))
    assert code == 2 and loaded == [] and time.perf_counter() - t0 < 10
    err = capsys.readouterr().err
    assert "not reachable" in err and "Nothing was run" in err
    for m in load_list("paper:semrel").models:
        assert f"{m.label}: {m.hub}" in err
    assert query(results, "SELECT count(*) FROM runs") == [(0,)]
    hub_reachable.cache_clear()


def test_list_runs_each_model_once_and_resumes(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    dirs = {label: tmp_path / label for label in ("X1", "X2", "X3")}
    for d in dirs.values():
        d.mkdir()
    lst = tmp_path / "mine.toml"
    lst.write_text('format = 1\npaper = "test"\ntable = "T"\n' + "".join(
        f'[[model]]\nlabel = "{label}"\nhub = ""\nkind = "causal"\n' for label in dirs))
    argv = ["--models", str(lst), "--results", str(results), "--queries", str(qdir),
            "--only-extra", "--quiet", "-p", "t/*"]
    argv += [a for label, d in dirs.items() for a in ("--model-dir", f"{label}={d}")]
    loaded: list[str] = []

    def factory(name: str, **kw: Any) -> FakeScorer:
        loaded.append(name)
        if name == str(dirs["X2"]) and len(loaded) == 2:
            raise KeyboardInterrupt  # the run is stopped during the second model
        return FakeScorer(name=name)

    assert main(argv, factory) == 130
    assert loaded == [str(dirs["X1"]), str(dirs["X2"])]
    assert main(argv, factory) == 0  # resumes: X1 is done and skipped
    assert loaded[2:] == [str(dirs["X2"]), str(dirs["X3"])]
    assert "X1 (" in capsys.readouterr().err
    assert query(results, "SELECT count(DISTINCT model), min(status) FROM runs") == [
        (3, "done")]
    assert main(argv, factory) == 0 and len(loaded) == 4  # all done: nothing loaded


def test_list_errors(tmp_path: Path, capsys: Any) -> None:
    qdir, results = setup(tmp_path, choice_probe())
    base = ["--results", str(results), "--queries", str(qdir), "--only-extra", "-p", "t/*"]
    assert main(["--models", "paper:nope", *base]) == 2
    assert "paper:copen, paper:ontolama, paper:semrel" in capsys.readouterr().err
    assert main(["--models", "paper:ontolama", "--model-dir", "Z9=/x", *base]) == 2
    assert "does not list" in capsys.readouterr().err
    assert main(["--models", "paper:semrel", "--model", "gpt2", *base]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(base) == 2
    assert "--model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--models", "paper:semrel", "--results", str(results)])  # no --probe
