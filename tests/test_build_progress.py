"""The store build's silent stretch (issue 46: a bar to 11/11, then 4.7 minutes without a line
while the derived graphs were made and the store compacted): each stage after the sources now
says what it is doing, and how long it took, unless --quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.build import build
from kg.derived import discover
from tests.test_lexical_sources import _write_responses


def test_the_stages_after_the_sources_say_what_they_do(tmp_path: Path,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    _write_responses(data, {"dog": {"hyp": {"[DET] [W] is a kind of [V]": [
        ["animal"], ["pet"], ["mammal"], ["animal"]]}}})
    build(["responses"], store_path=tmp_path / "store", data_dir=data, verify=False,
          progress=True)
    err = capfd.readouterr().err.replace("\r", "\n")
    graphs = len(discover())
    assert graphs > 0 and "deriving: 100%" in err and f"{graphs}/{graphs}" in err
    last = sorted(discover(), key=lambda d: d.name)  # every graph is named while it is made
    assert any(f"derived/{d.name}" in err for d in last)
    assert "compacting the store (once per build) ..." in err
    assert "compacting the store (once per build): done in " in err
    build(["responses"], store_path=tmp_path / "store2", data_dir=data, verify=False,
          progress=False)
    assert capfd.readouterr().err == ""  # --quiet: nothing
