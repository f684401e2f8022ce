"""Hidden states of every layer and the linear probes on them, checked against plain
transformers and a direct torch fit.

- the stored states (``probes.engine.hidden_cache``, float16 shards) of tiny causal, masked and
  seq2seq models built from configs equal ``output_hidden_states=True`` run here one text at a
  time, unpadded, pooled here (last / mean / the slot's tokens), within a tolerance scaled to
  each row's magnitude (float16 keeps 11 bits);
- a rerun extracts nothing, an interrupted one only what is missing;
- ``kgprobe layers`` on an exported probing probe gives, at every layer, the test accuracy of
  an L2 logistic regression fitted here with torch.optim.LBFGS on those direct states, the
  strength chosen on dev (the same objective, written out again here);
- the server backend and bad input are one line each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from probes.backends import ModelError, load_scorer
from probes.backends.hidden import HiddenRequest, check_hidden
from probes.backends.server import ServerScorer
from probes.engine.errors import ProbeError
from probes.engine.hidden_cache import extract_cached
from probes.results import connect
from tests.test_backends import (  # noqa: F401  (fixtures)
    smol_tokenizer,
    tiny_bert,
    tiny_llama,
    tiny_t5,
)

TEXTS = ["Paris is the capital of France.", "A dog is a kind of animal.",
         "The violin is played by musicians in an orchestra.", "Owls hunt at night."]
SLOTS = ["France", "animal", "musicians", "night"]


def _requests() -> list[HiddenRequest]:
    return [HiddenRequest(t, (t.rfind(s), t.rfind(s) + len(s))) for t, s in zip(TEXTS, SLOTS,
                                                                               strict=True)]


def _direct(model: Any, tok: Any, kind: str, text: str, span: tuple[int, int]
            ) -> dict[str, np.ndarray]:
    """[layers, dim] per position from one unpadded forward with output_hidden_states."""
    enc = tok(text, add_special_tokens=kind != "causal", return_offsets_mapping=True,
              return_special_tokens_mask=True)
    ids = torch.tensor([enc["input_ids"]])
    with torch.no_grad():
        if kind == "seq2seq":
            out = model.get_encoder()(input_ids=ids, output_hidden_states=True)
        else:
            out = model(input_ids=ids, output_hidden_states=True)
    states = torch.stack(out.hidden_states)[:, 0]  # [layers, tokens, dim]
    special = torch.tensor(enc["special_tokens_mask"]).bool()
    content = ~special
    slot = torch.tensor([e > s and s < span[1] and e > span[0]
                         for s, e in enc["offset_mapping"]]) & content
    last = int(torch.nonzero(content).max())
    return {"last": states[:, last].numpy(),
            "mean": states[:, content].mean(dim=1).numpy(),
            "slot": states[:, slot].mean(dim=1).numpy()}


@pytest.mark.parametrize("which", ["tiny_llama", "tiny_bert", "tiny_t5"])
def test_stored_states_equal_output_hidden_states(which: str, request: pytest.FixtureRequest,
                                                  tmp_path: Path) -> None:
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForSeq2SeqLM,
        AutoTokenizer,
    )

    path = request.getfixturevalue(which)
    kind = {"tiny_llama": "causal", "tiny_bert": "masked", "tiny_t5": "seq2seq"}[which]
    auto = {"causal": AutoModelForCausalLM, "masked": AutoModelForMaskedLM,
            "seq2seq": AutoModelForSeq2SeqLM}[kind]
    model = auto.from_pretrained(path).eval()
    tok = AutoTokenizer.from_pretrained(path)
    scorer = load_scorer(str(path), device="cpu", dtype="float32")
    con = connect(tmp_path / "r.duckdb")
    states, items = extract_cached(con, scorer, _requests(), tmp_path / "r.duckdb.hidden",
                                   positions=["slot", "last", "mean"], shard_rows=2)
    n_layers = model.config.num_hidden_layers if kind != "seq2seq" else model.config.num_layers
    assert states.layers == list(range(n_layers + 1))
    direct = [_direct(model, tok, kind, r.text, r.slot) for r in _requests()]  # type: ignore[arg-type]
    for position in ("slot", "last", "mean"):
        for layer in states.layers:
            stored = states.matrix(items, layer, position)
            want = np.stack([d[position][layer] for d in direct])
            scale = np.abs(want).max(axis=1, keepdims=True)
            assert np.all(np.abs(stored - want) <= 2e-3 * scale + 1e-6), (position, layer)
    # the float16 rounding is there (stored != the float32 values), and the rows differ
    assert not np.array_equal(states.matrix(items, 1, "last"),
                              np.stack([d["last"][1] for d in direct]))


def test_rerun_and_resume_extract_only_what_is_missing(llama: Any, tmp_path: Path) -> None:
    con = connect(tmp_path / "r.duckdb")
    folder = tmp_path / "r.duckdb.hidden"
    seen: list[tuple[int, int]] = []
    extract_cached(con, llama, _requests()[:2], folder, layers=[0, -1], shard_rows=1,
                   before=lambda d, t: seen.append((d, t)))
    states, items = extract_cached(con, llama, _requests(), folder, layers=[0, -1],
                                   before=lambda d, t: seen.append((d, t)))
    assert seen == [(0, 2), (2, 2)]
    again, _ = extract_cached(con, llama, _requests(), folder, layers=[0, -1],
                              before=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (4, 0)
    assert again.layers == [0, 2]
    assert states.matrix(items, 2, "last").shape == (4, 32)
    # other layers or positions are another key: extracted afresh
    extract_cached(con, llama, _requests(), folder, layers=[1],
                   before=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (0, 4)
    n_files = len(list(folder.rglob("*.npy")))
    assert n_files == con.execute("SELECT count(*) FROM hidden_shards").fetchone()[0]


@pytest.fixture(scope="module")
def llama(tiny_llama: Path) -> Any:  # noqa: F811
    return load_scorer(str(tiny_llama), device="cpu", dtype="float32")


def test_server_and_bad_layers_are_one_line(llama: Any, tmp_path: Path) -> None:
    server = ServerScorer.__new__(ServerScorer)
    server.name = "srv"  # type: ignore[misc]
    with pytest.raises(ModelError, match="cannot give hidden states") as err:
        check_hidden(server)
    assert "\n" not in str(err.value)
    con = connect(tmp_path / "r.duckdb")
    with pytest.raises(ModelError, match=r"layer 7 does not exist.*0 \(the embeddings\) to 2"):
        extract_cached(con, llama, _requests(), tmp_path / "h", layers=[7])
    with pytest.raises(ModelError, match="unknown position 'middle'"):
        extract_cached(con, llama, _requests(), tmp_path / "h", positions=["middle"])


# --- the probing run against a direct fit ---------------------------------------------------

NOUNS = ["dog", "cat", "horse", "owl", "trout", "oak", "rose", "tulip", "pine", "crow", "bee",
         "ant", "wolf", "fox", "pike", "elm", "fern", "moss", "hawk", "moth", "eel", "yak",
         "lily", "ash"]


def _probe_file(folder: Path) -> Path:
    rows = []
    for i, noun in enumerate(NOUNS):
        split = "train" if i % 4 < 2 else ("dev" if i % 4 == 2 else "test")
        animal = i % 2 == 0
        for obj, label in (("animal", "true" if animal else "false"),
                           ("plant", "false" if animal else "true")):
            rows.append(f'("{noun}" "{obj}" "{noun} is a kind of {obj}." "{label}" "{split}")')
    text = f"""# name: t/truth
# task: probing
# split: ?split
# target: ?word
# gold: ?label
# id: [?word, ?object]
# params: {{text: statement, slot: object, positions: [last, slot]}}
SELECT ?word ?object ?statement ?label ?split WHERE {{
  VALUES (?word ?object ?statement ?label ?split) {{ {' '.join(rows)} }} }}
"""
    path = folder / "truth.rq"
    path.write_text(text, encoding="utf-8")
    return path


def _lbfgs(x: torch.Tensor, y: torch.Tensor, c: float) -> tuple[torch.Tensor, torch.Tensor]:
    w = torch.zeros(x.shape[1], 2, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=200, tolerance_grad=1e-9,
                            tolerance_change=1e-12, history_size=20,
                            line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w + b, y)
        loss = loss + (w ** 2).sum() / (2 * c * len(y))
        loss.backward()  # type: ignore[no-untyped-call]
        return loss

    opt.step(closure)  # type: ignore[no-untyped-call]
    return w.detach(), b.detach()


def _direct_fit_accuracy(x: dict[str, torch.Tensor], y: dict[str, torch.Tensor]) -> float:
    """L2 logistic regression with torch.optim.LBFGS, c chosen on dev, test accuracy."""
    mean = x["train"].mean(0)
    std = x["train"].std(0, unbiased=False)
    std = torch.where(std > 0, std, torch.ones_like(std))
    z = {k: (v - mean) / std for k, v in x.items()}
    best = (-1.0, 0.0)
    for c in (0.001, 0.01, 0.1, 1.0, 10.0, 100.0):
        w, b = _lbfgs(z["train"], y["train"], c)
        with torch.no_grad():
            dev = float(((z["dev"] @ w + b).argmax(1) == y["dev"]).double().mean())
            test = float(((z["test"] @ w + b).argmax(1) == y["test"]).double().mean())
        if dev > best[0]:
            best = (dev, test)
    return best[1]


def test_layer_probes_equal_a_direct_fit(tiny_llama: Path, tmp_path: Path,  # noqa: F811
                                         tiny_store: Any) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from eval.layers import best_layers, layer_points
    from probes.engine.export import instances_for, write_instances
    from probes.engine.layers import run_layers
    from probes.engine.spec import load_probe

    probe = load_probe(_probe_file(tmp_path))
    con = connect(tmp_path / "r.duckdb")
    write_instances(con, "t/truth", instances_for(probe, tiny_store))
    scorer = load_scorer(str(tiny_llama), device="cpu", dtype="float32")
    result = run_layers(con, scorer, probe, tmp_path / "r.duckdb.hidden", dtype="float32")
    points = [p for p in layer_points(con) if p.position == "last"]
    assert [p.layer for p in points] == [0, 1, 2]
    assert all(p.n == 12 for p in points)
    assert {p.chance for p in points} == {0.5}

    model = AutoModelForCausalLM.from_pretrained(tiny_llama).eval()
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    rows = con.execute("SELECT split, fields, gold[1] FROM instances ORDER BY split, "
                       "instance_id").fetchall()
    for layer in (0, 1, 2):
        x: dict[str, list[torch.Tensor]] = {"train": [], "dev": [], "test": []}
        y: dict[str, list[int]] = {"train": [], "dev": [], "test": []}
        for split, fields, gold in rows:
            ids = torch.tensor([tok(json.loads(fields)["statement"],
                                    add_special_tokens=False)["input_ids"]])
            with torch.no_grad():
                states = model(input_ids=ids, output_hidden_states=True).hidden_states
            x[split].append(states[layer][0, -1].double())
            y[split].append(int(gold == "true"))
        want = _direct_fit_accuracy({k: torch.stack(v) for k, v in x.items()},
                                    {k: torch.tensor(v) for k, v in y.items()})
        (got,) = [p.accuracy for p in points if p.layer == layer]
        assert got == pytest.approx(want), layer
    # the control task: a seeded function of the object (two values): same labels per object
    ctl = con.execute("SELECT DISTINCT f.object, p.gold FROM layer_predictions p JOIN "
                      "(SELECT instance_id, json_extract_string(fields, '$.object') AS object "
                      "FROM instances) f USING (instance_id) WHERE p.control").fetchall()
    assert len({o for o, _ in ctl}) == len(ctl)
    assert len(best_layers(points)) == 1
    assert result.n == {"train": 24, "dev": 12, "test": 12}


def test_probing_probe_needs_three_labelled_splits(tiny_llama: Path, tmp_path: Path,  # noqa: F811
                                                   tiny_store: Any) -> None:
    from probes.engine.export import instances_for, write_instances
    from probes.engine.layers import run_layers
    from probes.engine.spec import load_probe

    path = _probe_file(tmp_path)
    path.write_text(path.read_text().replace('"dev")', '"train")'), encoding="utf-8")
    probe = load_probe(path)
    con = connect(tmp_path / "r.duckdb")
    write_instances(con, "t/truth", instances_for(probe, tiny_store))
    scorer = load_scorer(str(tiny_llama), device="cpu", dtype="float32")
    with pytest.raises(ProbeError, match="needs labelled train, dev and test instances"):
        run_layers(con, scorer, probe, tmp_path / "h")


@pytest.mark.parametrize(("which", "pooling"), [("tiny_llama", "last"), ("tiny_bert", "cls"),
                                                ("tiny_bert", "mean"), ("tiny_t5", "mean")])
def test_copen_features_through_the_extraction_are_the_backends(
        which: str, pooling: str, request: pytest.FixtureRequest) -> None:
    """COPEN's linear probing reads pooled_features: bit for bit the backend's features()."""
    from probes.backends.hidden import pooled_features

    scorer = load_scorer(str(request.getfixturevalue(which)), device="cpu", dtype="float32")
    got = pooled_features(scorer, TEXTS, pooling)
    want = scorer.features(TEXTS, pooling=pooling)  # type: ignore[arg-type]
    assert got.shape == want.shape and torch.equal(got, want)


def test_the_default_results_file_keeps_its_hidden_states_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run without --results (the default results file) stores its states beside that file,
    not in a folder named "None.hidden" in the working folder."""
    from probes.engine.hidden_cache import hidden_folder

    monkeypatch.setenv("KGPROBE_RESULTS", str(tmp_path / "r.duckdb"))
    assert hidden_folder(None) == tmp_path / "r.duckdb.hidden"
    assert hidden_folder(tmp_path / "x.duckdb") == tmp_path / "x.duckdb.hidden"


def test_a_shard_beyond_float16s_range_is_stored_as_float32(tmp_path: Path) -> None:
    """A batch holding a value float16 cannot hold (inf there) ends the float16 shard before
    it and starts a float32 shard that keeps its exact values; the rows before and after stay
    float16."""
    from probes.engine.hidden_cache import HiddenStates, _ShardSink

    con = connect(tmp_path / "r.duckdb")
    names = [f"item{i}" for i in range(8)]
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((2, 2, 1, 4)).astype(np.float32) for _ in range(4)]
    batches[1][0, 1, 0, 3] = -1e6  # beyond float16's 65,504, negative (min, not max)
    sink = _ShardSink(con, tmp_path / "h" / "k", "k", names, [0, 1], ["last"], "m",
                      shard_rows=4, dtype="float16")
    for i, states in enumerate(batches):
        sink([2 * i, 2 * i + 1], states)
    sink.flush()
    shards = con.execute("SELECT dtype, n_rows FROM hidden_shards WHERE key = 'k' "
                         "ORDER BY shard").fetchall()
    # rows 0-1 float16; 2-5 float32 (the batch out of range and the next, to the shard's 4
    # rows); 6-7 float16
    assert shards == [("float16", 2), ("float32", 4), ("float16", 2)]
    states = HiddenStates(con, tmp_path / "h", "k")
    got = states.matrix(names, 1, "last")
    want = np.concatenate(batches)[:, 1, 0]
    assert np.array_equal(got[2:6], want[2:6])  # float32: exact, the -1e6 included
    assert got[2, 3] == -1e6  # batch 1, row 0 = item 2
    for part in (slice(0, 2), slice(6, 8)):
        assert np.allclose(got[part], want[part], rtol=1e-3, atol=1e-3)
        assert not np.array_equal(got[part], want[part])  # float16's rounding is there
    con.close()


def test_a_batch_larger_than_the_rows_left_is_split_across_shards(tmp_path: Path) -> None:
    """Shards hold exactly ``shard_rows`` rows (the last one fewer): a batch that does not fit
    in the rows left fills them and starts the next shard; every item reads back its own
    row."""
    from probes.engine.hidden_cache import HiddenStates, _ShardSink

    con = connect(tmp_path / "r.duckdb")
    names = [f"item{i}" for i in range(8)]
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((n, 3, 2, 5)).astype(np.float32) for n in (2, 3, 3)]
    sink = _ShardSink(con, tmp_path / "h" / "k", "k", names, [0, 2, 4], ["last", "mean"], "m",
                      shard_rows=3, dtype="float32")
    start = 0
    for states in batches:
        sink(list(range(start, start + len(states))), states)
        start += len(states)
    sink.flush()
    rows = con.execute("SELECT n_rows FROM hidden_shards WHERE key = 'k' ORDER BY shard")
    assert [n for (n,) in rows.fetchall()] == [3, 3, 2]
    states = HiddenStates(con, tmp_path / "h", "k")
    want = np.concatenate(batches)
    for li, layer in enumerate([0, 2, 4]):
        for pi, position in enumerate(["last", "mean"]):
            assert np.array_equal(states.matrix(names[::-1], layer, position),
                                  want[::-1, li, pi])
    con.close()
