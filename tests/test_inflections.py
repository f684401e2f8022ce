"""Inflection-aware gold matching of relatum probes (issue 24, point 4): WordNet's exception
lists in the store (kg.wordnet), morphy over them (kg.morphology), the forms the export stores
(probes.engine.inflections) and the relatum metrics that count them.

The mini WordNet below is loaded with the real loader. Expected forms are worked out by hand
from morphy(7WN)'s rules of detachment: noun "-s" -> "", "-ies" -> "-y", "-ches" -> "-ch";
exception list: "feet" -> "foot", "teeth" -> "tooth".
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pyoxigraph as ox
import pytest

from eval.sqlfile import discover_metrics, run_metric
from kg.build import load_source
from kg.lexicon import LexiconError
from kg.manifest import pick
from kg.morphology import read_morphology
from kg.store import LocalStore
from probes.engine.export import write_instances
from probes.engine.inflections import gold_form_rows
from probes.engine.spec import ProbeSpec
from probes.engine.tasks.registry import TASK_ENTRIES
from probes.results import connect, transaction
from probes.results.writers import ResponseRow, Run, insert_run, write_responses

NOUNS = ["finger", "foot", "tooth", "body", "glass", "hand", "watch"]
VERBS = ["finger"]
NOUN_EXC = ["feet foot", "teeth tooth"]


def _lines(words: list[str], pos: str, frames: str = "") -> list[str]:
    return [f"{i + 1:08d} 00 {pos} 01 {w} 0 000{frames} | a test word  "
            for i, w in enumerate(words)]


def mini_store(tmp_path: Path, with_noun_exc: bool = True) -> LocalStore:
    files = {"data.noun": _lines(NOUNS, "n"), "data.verb": _lines(VERBS, "v", " 01 + 02 00"),
             "data.adj": [], "data.adv": [], "index.sense": [], "verb.exc": ["had have"]}
    if with_noun_exc:
        files["noun.exc"] = NOUN_EXC
    for name, lines in files.items():
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))
    store = ox.Store()
    source = dataclasses.replace(pick(["wordnet"])[0], options={"check_version": False})
    load_source(store, source, [tmp_path / n for n in files], tmp_path)
    read_morphology.cache_clear()
    return LocalStore(store)


def test_morphy_finds_base_forms_by_exception_list_and_rules(tmp_path: Path) -> None:
    m = read_morphology(mini_store(tmp_path))
    assert m.base_forms("fingers", "noun") == {"finger"}
    assert m.base_forms("feet", "noun") == {"foot"}         # noun.exc, from the store
    assert m.base_forms("bodies", "noun") == {"body"}       # -ies -> -y
    assert m.base_forms("watches", "noun") == {"watch"}     # -ches -> -ch
    assert m.base_forms("glass", "noun") == {"glass"}       # "-ss" is not detached
    assert m.base_forms("fingered", "verb") == {"finger"}   # -ed -> ""
    assert m.base_forms("hands", "verb") == set()           # "hand" is no verb here


def test_inflected_forms_run_the_rules_backwards(tmp_path: Path) -> None:
    m = read_morphology(mini_store(tmp_path))
    assert m.inflected_forms("finger", "noun") == {"fingers"}
    # the verb rules: -s, -es (e), -es, -ed (e), -ed, -ing (e), -ing; "fingere..." forms
    # strip back to "finger" through the rule that removes their whole ending
    assert m.inflected_forms("finger", "verb") == {"fingers", "fingeres", "fingered",
                                                   "fingering"}
    assert m.inflected_forms("tooth", "noun") == {"teeth", "tooths"}
    assert m.inflected_forms("watch", "noun") == {"watchs", "watches"}
    assert m.inflected_forms("nail", "noun") == set()       # not a lemma: no forms


def test_a_store_without_the_noun_exception_list_names_the_rebuild(tmp_path: Path) -> None:
    with pytest.raises(LexiconError, match=r"python -m kg\.build -s wordnet"):
        read_morphology(mini_store(tmp_path, with_noun_exc=False))


def test_the_option_is_off_by_default_and_checked() -> None:
    params = TASK_ENTRIES["relatum"].params
    assert params.model_validate({}).inflections is None
    with pytest.raises(ValueError, match="'nouns' is not one of noun, verb"):
        params.model_validate({"inflections": "nouns"})


def _spec(**params: object) -> ProbeSpec:
    return ProbeSpec(name="t/mer", task="relatum", split="test", prompts=["[W] has [V]"],
                     params=dict(params))


INSTANCES = pl.DataFrame({"probe": ["t/mer"] * 2, "split": ["test"] * 2,
                          "instance_id": ["hand", "leg"], "target": ["hand", "leg"],
                          "gold": [["finger"], ["foot"]], "candidates": [[], []],
                          "fields": ["{}", "{}"]})


def test_export_stores_the_gold_forms_only_when_asked(tmp_path: Path) -> None:
    store = mini_store(tmp_path)
    assert gold_form_rows(_spec(), INSTANCES, store) == []
    assert gold_form_rows(_spec(inflections="noun"), INSTANCES, store) == [
        ("t/mer", "test", "hand", "fingers", "finger"),
        ("t/mer", "test", "leg", "feet", "foot"), ("t/mer", "test", "leg", "foots", "foot")]


def _hits(tmp_path: Path, inflections: bool) -> dict[str, float]:
    path = tmp_path / f"r{inflections}.duckdb"
    con = connect(path)
    forms = gold_form_rows(_spec(inflections="noun") if inflections else _spec(), INSTANCES,
                           mini_store(tmp_path))
    write_instances(con, "t/mer", INSTANCES, gold_forms=forms)
    with transaction(con):
        insert_run(con, Run(run_id="r", model="m", probe="t/mer", task="relatum",
                            status="done"))
        # hand: "fingers" at rank 1; leg: "knee", then "Feet" at rank 2
        write_responses(con, [ResponseRow("r", "t/mer", "test", "hand", 0, 1, "fingers", .5),
                              ResponseRow("r", "t/mer", "test", "leg", 0, 1, "knee", .4),
                              ResponseRow("r", "t/mer", "test", "leg", 0, 2, "Feet", .3)])
    metrics = {m.name: m for m in discover_metrics()}
    out = {}
    for name in ("relatum_precision_at_1", "relatum_hits_at_10"):
        cols, rows = run_metric(con, metrics[name])
        out[name] = rows[0][cols.index("value")]
    con.close()
    return out


def test_relatum_metrics_count_an_inflected_gold_only_with_the_option(tmp_path: Path) -> None:
    assert _hits(tmp_path, inflections=False) == {"relatum_precision_at_1": 0.0,
                                                  "relatum_hits_at_10": 0.0}
    # with: P@1 1/2 (hand: fingers), hits@10 2/2 (leg: Feet, compared lower-cased)
    assert _hits(tmp_path, inflections=True) == {"relatum_precision_at_1": 0.5,
                                                 "relatum_hits_at_10": 1.0}
