"""scripts/html_screenshot.py: the HTML page opened on a "ranked first but not said" instance
and saved as a PNG, on tests/html_fixtures.py's file (the emu is ranked first and answered "no
idea"); and one clear line where there is no such instance or no file."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from tests.html_fixtures import formats_results
from tests.test_generate_run import FakeSpeaker
from tests.test_html_browser import _driver
from tests.test_run import choice_probe, query, run, setup

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "html_screenshot.py"
_spec = importlib.util.spec_from_file_location("html_screenshot", SCRIPT)
assert _spec is not None and _spec.loader is not None
html_screenshot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(html_screenshot)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.slow  # starts a browser
def test_screenshot_of_a_ranked_not_said_instance(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _driver().quit()  # skipped (saying why) where Chromium or selenium is missing
    results = formats_results(tmp_path)
    (emu,) = query(results, "SELECT instance_id FROM instances WHERE target = 'emu'")[0]
    png = tmp_path / "shot" / "page.png"
    capsys.readouterr()
    assert html_screenshot.main(["--results", str(results), "--out", str(png)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"wrote {png}: fake/model on t/choice, instance {emu} "
                   "(ranked first but not said)"]
    width, height = png_size(png)
    assert width >= 1000 and height >= 700


def test_no_such_instance_is_one_line(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # a choice probe without formats: nothing read both ways
    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeSpeaker(), "-p", "t/choice") == 0
    capsys.readouterr()
    assert html_screenshot.main(["--results", str(results), "--out",
                                 str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no 'ranked first but not said' instance in" in err[0]
    assert "formats: {generate" in err[0] and not (tmp_path / "x.png").exists()


def test_a_model_without_one_and_a_missing_file_are_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = formats_results(tmp_path)
    capsys.readouterr()
    assert html_screenshot.main(["--results", str(results), "--out", str(tmp_path / "x.png"),
                                 "--model", "someone/else"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model someone/else" in err[0]
    assert html_screenshot.main(["--results", str(tmp_path / "none.duckdb"), "--out",
                                 str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.duckdb does not exist" in err[0]
