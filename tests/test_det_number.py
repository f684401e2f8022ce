"""[DET] before plural nouns (issue 30 point 8): "a spectacles" becomes "spectacles".

WordNet marks no number; kgprobe reads it from morphy over the store's WordNet
(kg.morphology.Morphology.is_plural). The mini WordNet below is loaded with the real loader and
holds WordNet 3.0's plural-only nouns as they are there: "spectacles" (a lemma, and morphy's
"-s" rule leads it to the lemma "spectacle" too), "scissors" (no noun "scissor"; WordNet has
"pair of scissors"), "trousers" (no lemma: the plural of "trouser"), and the exception list's
"feet". The expected texts are English as written by hand.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pyoxigraph as ox
import pytest

from kg.build import load_source
from kg.manifest import pick
from kg.morphology import read_morphology
from kg.store import LocalStore
from probes.engine.inflections import mark_plurals
from probes.engine.render import render

NOUNS = ["spectacles", "spectacle", "scissors", "pair_of_scissors", "trouser", "foot", "knife",
         "glass", "bus", "tool"]


def mini_store(tmp_path: Path) -> LocalStore:
    lines = [f"{i + 1:08d} 00 n 01 {w} 0 000 | a test word  " for i, w in enumerate(NOUNS)]
    files = {"data.noun": lines, "data.verb": [], "data.adj": [], "data.adv": [],
             "index.sense": [], "verb.exc": ["had have"], "noun.exc": ["feet foot"]}
    for name, rows in files.items():
        (tmp_path / name).write_text("".join(r + "\n" for r in rows))
    store = ox.Store()
    source = dataclasses.replace(pick(["wordnet"])[0], options={"check_version": False})
    load_source(store, source, [tmp_path / n for n in files], tmp_path)
    read_morphology.cache_clear()
    return LocalStore(store)


def test_plural_only_nouns_from_wordnet(tmp_path: Path) -> None:
    m = read_morphology(mini_store(tmp_path))
    assert [m.is_plural(w) for w in ("spectacles", "scissors", "trousers", "feet",
                                     "sharp knives", "knives")] == [True] * 4 + [False, False]
    # "knives" -> "knife" needs "-ves", which morphy's rules do not have (nor noun.exc here)
    assert [m.is_plural(w) for w in ("knife", "glass", "bus", "spectacle", "tool")] == [False] * 5


def test_det_takes_no_article_before_a_plural_candidate(tmp_path: Path) -> None:
    store = mini_store(tmp_path)
    probe = SimpleNamespace(spec=SimpleNamespace(
        name="t/choice", prompts=["[DET] [W] is a kind of [DET] [V]."]))
    df = pl.DataFrame({"split": ["test", "test"], "instance_id": ["a", "b"],
                       "target": ["spectacles", "knife"],
                       "candidates": [["tool", "scissors"], ["tool", "trousers"]],
                       "fields": [json.dumps({"w": "spectacles"}), json.dumps({"w": "knife"})]})
    out = mark_plurals(probe, df, store)
    fields = [json.loads(f) for f in out["fields"]]
    assert fields[0]["det_plural"] == ["scissors", "spectacles"]
    assert fields[1]["det_plural"] == ["trousers"] and fields[1]["w"] == "knife"
    text = [render(probe.spec.prompts[0], f, target=t, slot=c).text
            for f, t, cands in zip(fields, out["target"], out["candidates"], strict=True)
            for c in cands]
    assert text == ["Spectacles is a kind of a tool.", "Spectacles is a kind of scissors.",
                    "A knife is a kind of a tool.", "A knife is a kind of trousers."]


def test_det_is_unchanged_without_plural_words() -> None:
    assert render("[DET] [W] has [DET] [V]", target="car", slot="engine").text == \
        "A car has an engine"
    r = render("it is [DET] [V] and [DET] [W]", {"det_plural": ["pliers"]}, target="pliers",
               slot="hour")
    assert r.text == "it is an hour and pliers"
    assert r.text[slice(*r.spans["W"])] == "pliers"


def test_a_store_without_wordnet_keeps_a_an_and_says_so_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    probe = SimpleNamespace(spec=SimpleNamespace(name="t/p", prompts=["[W] is [DET] [V]."]))
    df = pl.DataFrame({"split": ["test"], "instance_id": ["a"], "target": ["knife"],
                       "candidates": [["tool", "scissors"]], "fields": ['{"w": "knife"}']})
    assert mark_plurals(probe, df, LocalStore.in_memory()).equals(df)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("t/p: 1 texts end in 's' and may be plural (e.g. 'scissors')")
    assert "python -m kg.build -s wordnet" in line
    quiet = df.with_columns(pl.Series("candidates", [["tool", "saw"]]))
    assert mark_plurals(probe, quiet, LocalStore.in_memory()).equals(quiet)
    assert capsys.readouterr().err == ""
