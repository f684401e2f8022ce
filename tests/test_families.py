"""Each name defined once (issue 43 point 5): the language-model families live in
probes.backends.protocol (FAMILY_CAPABILITIES, FAMILIES); ``kgprobe export --kind`` and the
preview's profiles are derived from there, so a family added to the home is offered by both."""

from __future__ import annotations

import argparse

import polars as pl
import pytest

from probes.backends.protocol import FAMILIES, FAMILY_CAPABILITIES, family
from probes.engine import preview
from probes.engine.export import add_arguments
from probes.engine.spec import parse_probe


def _kind_choices() -> tuple[str, ...]:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (action,) = [a for a in parser._actions if "--kind" in a.option_strings]
    assert action.choices is not None
    return tuple(action.choices)


def test_the_families_are_the_three_the_backends_are_named_after() -> None:
    assert set(FAMILIES) == {"masked", "causal", "seq2seq"}
    # each family's capabilities are read back as that family
    assert {f: family(c) for f, c in FAMILY_CAPABILITIES.items()} == {f: f for f in FAMILIES}


def test_export_kind_offers_every_family_of_the_home() -> None:
    assert sorted(_kind_choices()) == sorted(FAMILIES)


def test_the_preview_has_a_profile_for_every_family_of_the_home() -> None:
    assert sorted(preview.PROFILES) == sorted(FAMILIES)


@pytest.mark.parametrize("kind", FAMILIES)
def test_export_kind_and_preview_render_each_family(kind: str) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["--kind", kind]).kind == kind
    probe = parse_probe('# name: demo/hyp\n# task: relatum\n# split: test\n# target: ?w\n'
                        '# prompts: ["[DET] [W] is a kind of [V]."]\n'
                        'SELECT ?w WHERE { VALUES ?w { "owl" } }\n', "demo.rq")
    df = pl.DataFrame({"split": ["test"], "instance_id": ["1"], "target": ["owl"],
                       "gold": [[]], "candidates": [[]], "fields": ['{"w": "owl"}']})
    (line,) = preview.preview_prompts(probe, df, 1, kind)
    # causal prompts end at the slot; masked and seq2seq ones mark it inside the prompt
    if kind == "causal":
        assert line.endswith("An owl is a kind of"), line
    else:
        assert "An owl is a kind of" in line and not line.endswith("kind of"), line
