"""The registered backend name is a label (issue 43, point 3).

A copy of the causal backend registered under another name (``renamed-causal``: a subclass in
a module of its own, found through a real installed distribution's entry point in the group
``kgprobe.backends``, not through a test hook) runs every scored task kind from the command
line (``python -m probes.engine.run --backend NAME``, in a fresh interpreter) and gives the
original's results: the same scores and responses row for row, the same family in
``runs.family``, its own label in ``runs.backend`` and its own run ids; and since the cache
key names the computation, not the registration, every one of its requests is answered from
the original's cache entries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from probes.backends import registry
from probes.engine.errors import ModelError
from probes.results import connect
from tests.test_backends import smol_tokenizer, tiny_llama  # noqa: F401  (fixtures)
from tests.test_run import choice_probe, query, setup

ROOT = Path(__file__).resolve().parents[1]
NEW = "renamed-causal"

PLUGIN = '''"""A user's own backend: the causal one, copied under another name."""
from probes.backends.causal import CausalScorer


class RenamedCausal(CausalScorer):
    """Registered by its entry point's name (renamed-causal)."""
'''

PROBES = {
    "relatum": ("# name: t/rel\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?g\n"
                '# prompts: ["[DET] [W] is a kind of [V].", "[W] are [V]"]\n'
                "# params: {top_k: 5}\n"
                'SELECT ?w ?g WHERE { VALUES (?w ?g) { ("owl" "bird") ("cat" "animal") } }\n'),
    "choice": choice_probe(),
    "binary": ("# name: t/bin\n# task: binary\n# split: test\n# target: ?s\n# gold: ?g\n"
               '# prompts: ["[W] It is [V]."]\n'
               "# params: {labels: {'true': ['yes', right], 'false': 'no'}}\n"
               'SELECT ?s ?g WHERE { VALUES (?s ?g) { ("Owls fly." true) ("Fish fly." false) '
               "} }\n"),
    "subsumption": ("# name: t/sub\n# task: subsumption\n# split: test\n# target: ?sub\n"
                    "# gold: ?label\n# id: [?sub, ?super]\n"
                    '# prompts: ["[SUB]? [V], [SUPER]."]\n'
                    "# params:\n#   label_words:\n"
                    '#     L1: {"1": ["Yes"], "0": ["No"]}\n'
                    '#     L2: {"1": ["Right"], "0": ["Wrong"]}\n'
                    "SELECT ?sub ?super ?label WHERE { VALUES (?sub ?super ?label) { "
                    '("a dog" "an animal" "1") ("a stone" "a fruit" "0") } }\n'),
}


def install_plugin(where: Path, value: str = "kgp_renamed_backend:RenamedCausal") -> Path:
    """A real installed distribution (a dist-info folder on the path, as pip leaves one) whose
    entry point names the renamed backend."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "kgp_renamed_backend.py").write_text(PLUGIN)
    info = where / "kgp_renamed_backend-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kgp-renamed-backend\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(f"[kgprobe.backends]\n{NEW} = {value}\n")
    return where


def command(model: Path, qdir: Path, results: Path, plugin: Path | None, *extra: str
            ) -> subprocess.CompletedProcess[str]:
    """``python -m probes.engine.run`` in a fresh interpreter (the plugin on its path)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *([str(plugin)] if plugin else []), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "probes.engine.run", "--model", str(model), "-p", "t/*",
         "--results", str(results), "--queries", str(qdir), "--only-extra", "--quiet",
         "--device", "cpu", "--dtype", "float32", "--threads", "1", *extra],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def rows_of(results: Path, backend: str) -> dict[str, Any]:
    """Per task: the run's scores and responses (run ids left out), in a fixed order."""
    out: dict[str, Any] = {}
    for rid, task in query(results, "SELECT run_id, task FROM runs WHERE backend = ?",
                           [backend]):
        scores = query(results, "SELECT probe, split, instance_id, prompt_id, candidate, "
                       "label, prompt, score, n_tokens FROM scores WHERE run_id = ? "
                       "ORDER BY ALL", [rid])
        responses = query(results, "SELECT probe, split, instance_id, prompt_id, rank, token, "
                          "probability, prompt FROM responses WHERE run_id = ? ORDER BY ALL",
                          [rid])
        prompts = query(results, "SELECT prompt_id, template, text, label_set FROM prompts "
                        "WHERE run_id = ? ORDER BY ALL", [rid])
        out[task] = (scores, responses, prompts)
    return out


@pytest.mark.slow
def test_every_task_kind_through_a_renamed_backend_gives_the_originals_results(
        tmp_path: Path, tiny_llama: Path) -> None:  # noqa: F811
    qdir, results = setup(tmp_path, *PROBES.values())
    plugin = install_plugin(tmp_path / "site")
    original = command(tiny_llama, qdir, results, None)  # the kind from the model's config
    assert original.returncode == 0, original.stderr
    renamed = command(tiny_llama, qdir, results, plugin, "--backend", NEW)
    assert renamed.returncode == 0, renamed.stderr

    runs = query(results, "SELECT backend, family, task, requests, cache_hits, run_id "
                 "FROM runs ORDER BY backend, task")
    assert [(b, f, t) for b, f, t, *_ in runs] == [
        *(("causal", "causal", t) for t in sorted(PROBES)),
        *((NEW, "causal", t) for t in sorted(PROBES))]
    by = {(b, t): (n, hits, rid) for b, _f, t, n, hits, rid in runs}
    for task in PROBES:
        n, hits, rid = by[(NEW, task)]
        n0, _, rid0 = by[("causal", task)]
        assert rid != rid0, task  # a run of its own ...
        assert n == n0 and n > 0 and hits == n, task  # ... answered from the original's cache
    ours, theirs = rows_of(results, NEW), rows_of(results, "causal")
    assert set(ours) == set(PROBES)
    for task in PROBES:
        assert ours[task] == theirs[task], task
        assert ours[task][0] or ours[task][1], task  # something was scored
    assert theirs["relatum"][1] and theirs["subsumption"][2]  # responses; subsumption prompts
    # the record says which class did the work
    described = query(results, "SELECT config->>'$.backend.kind' FROM runs WHERE backend = ?",
                      [NEW])
    assert {d for (d,) in described} == {NEW}


def test_an_unknown_backend_is_one_line_naming_the_choices(tmp_path: Path,
                                                           tiny_llama: Path) -> None:  # noqa: F811
    qdir, results = setup(tmp_path, PROBES["choice"])
    done = command(tiny_llama, qdir, results, None, "--backend", "causl")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "unknown model kind 'causl'" in lines[0] and "causal" in lines[0]
    assert "kgprobe.backends" in lines[0]
    assert query(results, "SELECT count(*) FROM runs") == [(0,)]


def test_an_entry_point_naming_no_backend_is_a_clear_error(tmp_path: Path,
                                                           monkeypatch: Any) -> None:
    site = install_plugin(tmp_path / "site", value="kgp_renamed_backend:PLUGIN_TEXT")
    (site / "kgp_renamed_backend.py").write_text('PLUGIN_TEXT = "not a scorer"\n')
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    monkeypatch.delitem(sys.modules, "kgp_renamed_backend", raising=False)
    assert NEW in registry.kinds()  # listed from the installed distribution
    with pytest.raises(ModelError, match=rf"entry point '{NEW}'.*kgp-renamed-backend.*"
                       r"registers no backend"):
        registry.backend(NEW)


def test_an_entry_point_whose_module_registers_itself(tmp_path: Path,
                                                      monkeypatch: Any) -> None:
    site = install_plugin(tmp_path / "site", value="kgp_renamed_backend")
    (site / "kgp_renamed_backend.py").write_text(
        PLUGIN.replace("class RenamedCausal", f"@register({NEW!r})\nclass RenamedCausal")
        .replace("from probes.backends.causal import CausalScorer",
                 "from probes.backends.causal import CausalScorer\n"
                 "from probes.backends.registry import register"))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    monkeypatch.delitem(sys.modules, "kgp_renamed_backend", raising=False)
    cls = registry.backend(NEW)
    assert cls.__name__ == "RenamedCausal" and cls.kind == NEW
    from probes.backends.causal import CausalScorer

    assert CausalScorer.kind == "causal"  # the original keeps its name


def test_registering_a_backend_class_under_a_second_name_is_refused(monkeypatch: Any) -> None:
    from probes.backends.causal import CausalScorer

    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    with pytest.raises(ModelError, match="register a subclass"):
        registry.register("other")(CausalScorer)
    assert CausalScorer.kind == "causal"


def test_an_older_file_gets_the_family_each_run_was_scored_as(tmp_path: Path) -> None:
    """The upgrade step: runs.family from the recorded capabilities, else the old backend
    column (which named the family before capabilities were recorded)."""
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, model VARCHAR NOT NULL, "
                "revision VARCHAR, backend VARCHAR, probe VARCHAR NOT NULL, config JSON, "
                "status VARCHAR NOT NULL)")
    caps = {"my-lm": {"slot_scoring": "loglik", "ends_at_slot": True, "slot_token": None},
            "enc": {"slot_scoring": "pll", "ends_at_slot": False, "slot_token": "[MASK]"},
            "t5ish": {"slot_scoring": "loglik", "ends_at_slot": False, "slot_token": "[MASK]"}}
    for name, c in caps.items():
        con.execute("INSERT INTO runs VALUES (?, 'm', 'r', ?, 'p', ?::JSON, 'done')",
                    [name, name, json.dumps({"capabilities": c})])
    con.execute("INSERT INTO runs VALUES ('h', 'human', NULL, 'human', 'p', '{}', 'done'), "
                "('old', 'm', 'r', 'masked', 'p', '{}', 'done')")
    con.close()
    con = connect(path)
    got = dict(con.execute("SELECT run_id, family FROM runs").fetchall())
    con.close()
    assert got == {"my-lm": "causal", "enc": "masked", "t5ish": "seq2seq", "h": "human",
                   "old": "masked"}
