"""The ``kgprobe`` command (probes/cli.py): dispatch, shared options before or after the
command, ``list``, ``query``, ``export --preview`` and the checks made at export.

Expected rows come from the tiny store (tests/conftest.py): dog's superclasses are mammal and
pet, cat's mammal, sparrow's bird, mammal's and bird's animal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from probes.app.cli import main
from probes.app.run import main as run_main
from probes.engine.errors import ProbeFileError
from probes.engine.export import main as export_main

ROOT = Path(__file__).parents[1]
HYPERNYMS = """# name: mine/hyp
# task: relatum
# split: test
# target: ?child
# gold: ?parent
# group_by: ?child
# graphs: [animals]
# prompts: ["[DET] [W] is a kind of [V]."]
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?child ?parent WHERE {
  GRAPH <https://w3id.org/kgprobe/graph/animals> {
    ?c rdfs:subClassOf ?p . ?c rdfs:label ?child . ?p rdfs:label ?parent .
  }
  FILTER(LANG(?child) = "")
}
ORDER BY ?child ?parent
"""


def write_probe(folder: Path, text: str = HYPERNYMS, name: str = "hyp.rq") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("KGPROBE_QUERIES", "KGPROBE_RESULTS"):
        monkeypatch.delenv(k, raising=False)


def test_help_is_fast_and_loads_no_torch() -> None:
    code = ("import sys\nfrom probes.app.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "export" in out and "semrel" in out and "kshot" in out
    assert out.strip().endswith("False")


def test_shared_options_before_or_after_the_command(tmp_path: Path, tiny_store_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    write_probe(mine)
    before = tmp_path / "before.duckdb"
    after = tmp_path / "after.duckdb"
    assert main(["--results", str(before), "-q", str(mine), "--store", str(tiny_store_path),
                 "export", "-p", "mine/*", "--no-parquet", "--quiet"]) == 0
    assert main(["export", "-p", "mine/*", "--no-parquet", "--quiet", "--results", str(after),
                 "--queries", str(mine), "--store", str(tiny_store_path)]) == 0
    for path in (before, after):
        with duckdb.connect(str(path), read_only=True) as con:
            rows = con.execute("SELECT target, gold FROM instances ORDER BY target").fetchall()
        assert rows == [("bird", ["animal"]), ("cat", ["mammal"]), ("dog", ["mammal", "pet"]),
                        ("mammal", ["animal"]), ("sparrow", ["bird"])]
    assert "KGPROBE_QUERIES" not in os.environ  # passed to the step, never through the env
    # --queries given to the CLI once reaches probes.engine.run too: it finds the probe
    capsys.readouterr()
    assert main(["--queries", str(mine), "run", "--list", "-p", "mine/*"]) == 0
    assert "mine/hyp" in capsys.readouterr().out


def test_env_queries_apply_to_python_m_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    write_probe(mine)
    monkeypatch.setenv("KGPROBE_QUERIES", str(mine))
    # given both ways, the folder is read once (no duplicate-name error)
    assert export_main(["--list", "-p", "mine/*", "-q", str(mine)]) == 0
    assert "mine/hyp" in capsys.readouterr().out


def test_run_list_is_export_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert export_main(["--list"]) == 0
    exported = capsys.readouterr().out
    assert run_main(["--list"]) == 0
    assert capsys.readouterr().out == exported
    assert main(["list"]) == 0
    assert capsys.readouterr().out == exported
    assert "copen/cic-chains" not in exported  # export: false (a building block)
    assert "starter/wordnet-hypernyms" in exported


def test_run_names_queries_when_a_probe_is_not_found(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    assert run_main(["-m", "x", "-p", "mine/nothing", "--results",
                     str(tmp_path / "r.duckdb")]) == 2
    err = capsys.readouterr().err
    assert "no probe matches mine/nothing" in err and "--queries DIR" in err
    assert "KGPROBE_QUERIES" in err


def test_run_without_probe_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_main(["-m", "x"])
    assert "--probe" in capsys.readouterr().err


def test_query_prints_first_rows(tmp_path: Path, tiny_store_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = write_probe(tmp_path / "mine")
    assert main(["query", str(path), "-n", "2", "--store", str(tiny_store_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:4] == ["| child | parent |", "|---|---|", "| bird | animal |",
                                    "| cat | mammal |"]
    assert "6 row(s)" in out


def test_export_preview_prints_prompts_and_writes_nothing(
        tmp_path: Path, tiny_store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    write_probe(mine)
    results = tmp_path / "r.duckdb"
    assert main(["export", "--preview", "2", "-p", "mine/*", "-q", str(mine), "--store",
                 str(tiny_store_path), "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "A bird is a kind of" in out and "A cat is a kind of" in out
    assert "A dog" not in out  # two instances only
    assert not results.exists()
    assert main(["export", "--preview", "1", "--kind", "masked", "-p", "mine/*", "-q",
                 str(mine), "--store", str(tiny_store_path)]) == 0
    assert "A bird is a kind of [MASK]." in capsys.readouterr().out


def test_endpoint_is_refused_where_no_store_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-m", "x", "-p", "y", "--endpoint", "http://localhost:1/"]) == 2
    assert "does not query a SPARQL endpoint" in capsys.readouterr().err


def test_benchmark_report_dispatches_to_the_report_module(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    with pytest.raises(SystemExit):
        main(["semrel", "report", "--help"])
    out = capsys.readouterr().out
    assert "eval.semrel_report" in out
    # the description is the docstring's whole first sentence (it was cut at a line end)
    assert "laid out like the paper: python -m eval.semrel_report." in " ".join(out.split())


# --- checks made at export, before any model loads -------------------------------------------

def _export_error(tmp_path: Path, store: Path, text: str) -> str:
    mine = tmp_path / "bad"
    write_probe(mine, text)
    with pytest.raises(ProbeFileError) as e:
        from kg.store import LocalStore
        from probes.engine.export import build_instances
        from probes.engine.spec import discover

        probe = discover([mine], include_default=False)[0]
        build_instances(probe, LocalStore.open(store, read_only=True))
    return str(e.value)


def test_misspelled_param_is_found_at_export(tmp_path: Path, tiny_store_path: Path) -> None:
    text = HYPERNYMS.replace("# prompts:", "# params: {top_kk: 5}\n# prompts:")
    msg = _export_error(tmp_path, tiny_store_path, text)
    assert msg.startswith(f"{tmp_path / 'bad' / 'hyp.rq'}:8:")  # the params line
    assert "unknown params key 'top_kk'" in msg and "did you mean 'top_k'" in msg


def test_unselected_placeholder_is_found_at_export(tmp_path: Path, tiny_store_path: Path
                                                   ) -> None:
    text = HYPERNYMS.replace("[W] is a kind of", "[W] ([LABEL]) is a kind of")
    msg = _export_error(tmp_path, tiny_store_path, text)
    assert ":8:" in msg and "[LABEL]" in msg and "selects no ?label" in msg


def test_two_slots_are_found_at_export(tmp_path: Path, tiny_store_path: Path) -> None:
    text = HYPERNYMS.replace("is a kind of [V].", "[V] is a kind of [V].")
    msg = _export_error(tmp_path, tiny_store_path, text)
    assert ":8:" in msg and "exactly one slot [V]" in msg


def test_slot_not_last_warns_for_causal_models(tmp_path: Path, tiny_store_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    write_probe(mine, HYPERNYMS.replace("[DET] [W] is a kind of [V].", "[V] includes [W]."))
    assert export_main(["-q", str(mine), "--only-extra", "--store", str(tiny_store_path),
                        "--results", str(tmp_path / "r.duckdb"), "--no-parquet",
                        "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "hyp.rq:8: causal models cannot run this probe" in err
    assert "[V] must end the template" in err


# --- the README ----------------------------------------------------------------------------

def readme_sql() -> str:
    text = (ROOT / "README.md").read_text()
    block = text.split("-- compare models on every choice probe", 1)[1]
    return "-- compare" + block.split("```", 1)[0]


def test_readme_sql_example_runs_and_counts_right(tmp_path: Path) -> None:
    from tests.test_run import ANIMALS, FakeScorer, choice_probe, run, setup

    qdir, results = setup(tmp_path, choice_probe())
    assert run(qdir, results, FakeScorer(), "-p", "t/choice") == 0
    with duckdb.connect(str(results), read_only=True) as con:
        rows = con.execute(readme_sql()).fetchall()
        scores = con.execute("SELECT instance_id, candidate, score FROM scores").fetchall()
        gold = dict(con.execute("SELECT instance_id, gold[1] FROM instances").fetchall())
    # worked out here: the mean score per (instance, candidate), the best one against the gold
    sums: dict[tuple[str, str], list[float]] = {}
    for inst, cand, score in scores:
        sums.setdefault((inst, cand), []).append(score)
    best: dict[str, tuple[float, str]] = {}
    for (inst, cand), values in sums.items():
        mean = sum(values) / len(values)
        if inst not in best or mean > best[inst][0]:
            best[inst] = (mean, cand)
    right = sum(best[i][1] == gold[i] for i in best)
    assert len(best) == len(ANIMALS)
    assert rows == [("fake/model", "t/choice", pytest.approx(right / len(ANIMALS)), 3)]


# --- the new user's path, through the kgprobe command --------------------------------------

PARENTS = """# name: mine/parents
# description: which class is a class's direct superclass, among every class of the graph
# task: choice
# split: test
# target: ?child
# gold: ?parent
# candidates: ?candidate
# group_by: ?child
# graphs: [animals]
# prompts: ["[DET] [W] is a kind of [V]."]
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?child ?parent ?candidate WHERE {
  GRAPH <https://w3id.org/kgprobe/graph/animals> {
    ?c rdfs:subClassOf ?p . ?c rdfs:label ?child . ?p rdfs:label ?parent .
    ?x rdfs:label ?candidate .
  }
  FILTER(LANG(?child) = "" && LANG(?candidate) = "")
}
ORDER BY ?child ?candidate
"""
MY_METRIC = """-- name: my_scored_instances
-- description: Instances with at least one score, per run and probe.
-- tasks: [choice]
-- grain: [run_id, probe]
SELECT run_id, probe, count(DISTINCT instance_id) AS value FROM scores GROUP BY ALL
"""


def tiny_llama(folder: Path) -> Path:
    """A 2-layer Llama with SmolLM2's tokenizer, from a config (random weights)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from probes.engine.models import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_new_user_path_through_kgprobe(tmp_path: Path, tiny_store_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Write a probe, query it, preview it, export, run a tiny model, report with an own
    metric: the README's path, every step through ``kgprobe``."""
    mine = tmp_path / "my_probes"
    write_probe(mine, PARENTS, "parents.rq")
    metrics = tmp_path / "my_metrics"
    metrics.mkdir()
    (metrics / "my_scored_instances.sql").write_text(MY_METRIC)
    model = tiny_llama(tmp_path / "tiny-llama")
    shared = ["--store", str(tiny_store_path), "--results", str(tmp_path / "r.duckdb")]

    assert main([*shared, "query", str(mine / "parents.rq"), "-n", "3"]) == 0
    assert "42 row(s)" in capsys.readouterr().out  # 6 subclass edges x 7 labels
    assert main([*shared, "-q", str(mine), "export", "--preview", "1", "-p", "mine/*"]) == 0
    preview = capsys.readouterr().out
    assert "A bird is a kind of animal." in preview and "A sparrow" not in preview  # 1 instance
    assert main([*shared, "-q", str(mine), "export", "-p", "mine/*", "--quiet",
                 "--no-parquet"]) == 0
    assert main(["run", "-m", str(model), "-p", "mine/*", "--threads", "1", "--quiet",
                 *shared, "--queries", str(mine)]) == 0
    capsys.readouterr()
    assert main(["report", "--metrics", str(metrics), "--out", str(tmp_path / "report"),
                 "--no-plots", *shared]) == 0
    out = capsys.readouterr().out
    assert "my_scored_instances" in out
    lines = out.splitlines()  # the own metric's table: its column, on the probe's row
    at = next(i for i, line in enumerate(lines) if "my_scored_instances" in line)
    column = [c.strip() for c in lines[at].strip("|").split("|")].index("my_scored_instances")
    row = next(line for line in lines[at:] if "mine/parents" in line)
    assert row.strip("|").split("|")[column].strip() in ("5", "5.0", "5.000")
