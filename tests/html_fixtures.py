"""Results files for the HTML report's sections, made by kgprobe's own export and run.

:func:`formats_results`: tests/test_run.py's choice probe with ``formats: {generate: ...}``
scored by tests/test_generate_run.py's FakeSpeaker (md5 scores, fixed answers), so the same
three instances are read ranked and generated. Which instance lands where follows from the
fake's answers and scores (checked in tests/test_html_sections.py): the emu is ranked first but
not said (it answers "no idea"), the owl said but not ranked first, the cat both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kg.store import LocalStore
from probes.backends.generation import GenerateSettings, Generation
from probes.engine.export import export
from probes.engine.spec import discover
from tests.test_generate_run import FakeSpeaker
from tests.test_html_browser import PROBE as KINDS_PROBE
from tests.test_run import choice_probe, run, setup

FORMATS = "# formats: {generate: {max_new_tokens: 4}}\n"


def formats_results(tmp_path: Path) -> Path:
    """A results file with a choice run and a generate run of one probe (``t/choice``)."""
    qdir, results = setup(tmp_path, choice_probe(params=FORMATS))
    assert run(qdir, results, FakeSpeaker(), "-p", "t/choice") == 0
    return results


class AnimalSpeaker(FakeSpeaker):
    """The fake speaker that answers " an animal" to every prompt."""

    def generate(self, prompts: Sequence[str], settings: GenerateSettings) -> list[Generation]:
        self._called("generate", len(prompts))
        return [Generation(" an animal", 2, "stop") for _ in prompts]


def kinds_formats_results(tmp_path: Path, store: LocalStore) -> Path:
    """tests/test_html_browser.py's probe over the tiny store (so its instances have triples),
    with a generate format, scored by the fake scorer and answered by :class:`AnimalSpeaker`."""
    qdir = tmp_path / "queries"
    qdir.mkdir(exist_ok=True)
    text = KINDS_PROBE.replace("# prompts:", FORMATS + "# prompts:")
    (qdir / "kinds.rq").write_text(text, encoding="utf-8")
    results = tmp_path / "kinds.duckdb"
    export(discover([qdir], include_default=False), store, results, None, progress=False)
    assert run(qdir, results, AnimalSpeaker(), "-p", "t/kinds") == 0
    return results
