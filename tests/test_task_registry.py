"""The task registry: one table of tasks and their typed params that validation, metric
headers and the README all read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from eval.sqlfile import parse_metric
from probes.backends.protocol import CAUSAL_LM
from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.spec import ProbeSpec, load_probe, parse_probe
from probes.engine.tasks import TaskContext, get_task
from probes.engine.tasks.registry import TASK_ENTRIES, markdown_table
from probes.results import TASKS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ONTOLAMA = ROOT / "queries" / "ontolama"


def spec(task: str, **params: object) -> ProbeSpec:
    return ProbeSpec(name="t/x", task=task, split="test", prompts=["[W] is [DET] [V]"],
                     params=params)


def test_readme_task_table_is_the_registry() -> None:
    assert markdown_table() in README.read_text(encoding="utf-8")


def test_every_task_is_registered_once_and_found_by_name() -> None:
    # one definition of the names, the results contract's; the registry is keyed by it
    assert TASKS == ("relatum", "choice", "binary", "subsumption", "records", "generate", "probing")
    assert tuple(TASK_ENTRIES) == TASKS
    for name, entry in TASK_ENTRIES.items():
        assert get_task(name) is entry.task and entry.task.name == name
        assert entry.description and entry.params.model_config["extra"] == "forbid"


def test_metric_tasks_are_checked_against_the_registry() -> None:
    header = "-- name: m\n-- description: d\n-- tasks: [{}]\n-- grain: [probe]\nSELECT 1\n"
    assert parse_metric(header.format("subsumption"), "m.sql").tasks == ["subsumption"]
    with pytest.raises(Exception, match="unknown task 'relatm' \\(did you mean 'relatum'"):
        parse_metric(header.format("relatm"), "m.sql")


def test_typed_params_fill_defaults_and_keep_what_was_written() -> None:
    s = spec("relatum", top_k=5)
    p = get_task("relatum").typed_params(s)
    assert (p.top_k, p.slot_det, p.vocab, p.lower_case, p.det_weights) == (
        5, "both", "lowercase", False, None)
    assert s.params == {"top_k": 5}  # the mapping as written: it enters run ids and hashes
    c = get_task("choice").typed_params(spec("choice"))
    assert (c.score, c.slot_det, c.capitalize) == ("continuation", "a", False)
    b = get_task("binary").typed_params(spec("binary", labels={"true": "Yes", "false": ["No"]}))
    assert b.labels == {"true": ["Yes"], "false": ["No"]} and b.score is None


@pytest.mark.parametrize(("task", "params", "words"), [
    ("relatum", {"top_k": "5"}, "params top_k: Input should be a valid integer"),
    ("relatum", {"top_k": 0}, "params top_k: Input should be greater than or equal to 1"),
    ("relatum", {"vocab": "every"}, "params vocab: 'every' is not one of lowercase, words, all"),
    ("relatum", {"det_weights": {"a": 1}}, 'params det_weights must map both "a" and "an"'),
    ("choice", {"score": "all"}, "params score: 'all' must be one of whole, continuation"),
    ("choice", {"capitalise": True}, "unknown params key 'capitalise' for task choice (did you "
                                     "mean 'capitalize'?)"),
    ("subsumption", {"score": "[W]"}, "params score: '[W]' is not one of continuation, whole"),
    ("records", {"top_k": 3}, "unknown params key 'top_k' for task records"),
])
def test_bad_params_name_the_probe_and_the_key(task: str, params: dict, words: str) -> None:
    with pytest.raises(ProbeError) as info:
        get_task(task).typed_params(spec(task, **params))
    assert str(info.value).startswith("probe t/x: ") and words in str(info.value)


def test_check_still_rejects_a_bad_default_top_k() -> None:
    with pytest.raises(ProbeError, match="top_k must be a positive integer"):
        get_task("relatum").check(spec("relatum"), TaskContext(CAUSAL_LM, 0))


def test_builder_settings_live_apart_from_task_params() -> None:
    probe = load_probe(ONTOLAMA / "pizza-atomic.rq")
    assert set(probe.spec.builder_params) == {"ontolama", "balance"}
    assert set(probe.spec.params) == {"label_words"}
    old_style = ("# name: t/s\n# task: subsumption\n# split: test\n"
                 "# builder: probes.benchmarks.ontolama:instances\n"
                 "# params: {ontolama: {ontology: pizza, kind: atomic}}\n"
                 "SELECT ?a WHERE { VALUES ?a { 1 } }\n")
    with pytest.raises(ProbeFileError) as info:
        parse_probe(old_style, "p.rq")
    assert str(info.value).startswith("p.rq:5: unknown params key 'ontolama'")
    assert "a setting of the builder goes in builder_params" in str(info.value)
    text = (ONTOLAMA / "pizza-atomic.rq").read_text(encoding="utf-8")
    both = text.replace("# params:\n", "# params:\n#   balance: {}\n")
    with pytest.raises(ProbeFileError, match="params and builder_params both set balance"):
        parse_probe(both, "p.rq")


def test_moving_builder_settings_kept_the_export_hash() -> None:
    """The export hash counts builder_params as params, as headers wrote them before
    builder_params existed, so an export made with the old layout stays current. (The hash
    pinned here until issue 26, 02010dd6d5e52a7c, changed with the query: the OntoLAMA queries
    lost their discarded hash split, so their exports are re-made once, with the same
    instances.)"""
    probe = load_probe(ONTOLAMA / "pizza-atomic.rq")
    assert set(probe.spec.builder_params) == {"ontolama", "balance"}
    old_layout = probe.spec.model_copy(update={
        "params": {**probe.spec.builder_params, **probe.spec.params}, "builder_params": {}})
    assert dataclasses.replace(probe, spec=old_layout).instances_hash == probe.instances_hash
    moved = probe.spec.model_copy(update={"params": {}, "builder_params": {
        **probe.spec.builder_params, "balance": {}}})
    assert dataclasses.replace(probe, spec=moved).instances_hash != probe.instances_hash
