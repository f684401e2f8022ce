"""eval.profile: the knowledge profile's SQL and lines on hand-made results files.

Every expected number is worked out by hand in the comments from the rows inserted.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eval import profile
from eval.report import metric_rows
from probes.results import connect
from probes.results.writers import Run, insert_run
from tests import semrel_fixtures
from tests.test_ontolama_report import db  # noqa: F401  (the hand-made OntoLAMA file)
from tests.test_stats import wilson_by_hand


def rows_of(path: Path) -> dict[str, list[dict[str, Any]]]:
    con = connect(path, read_only=True)
    try:
        return metric_rows(con, [profile.PROFILE_DIR])
    finally:
        con.close()


def test_semrel_lines_with_the_human_ceiling(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    semrel_fixtures.build(path)
    lines = profile.profile_lines(rows_of(path), "mA")
    got = {p.measure.split(":")[0]: (p.n, p.value, p.human) for p in lines}
    # mA's top-1 answers (tests/semrel_fixtures.py), relatum sets unlimited (no declaration):
    # dog HYP p0 animal (in {animal, pet, beast}) 1, p1 puppy 0 -> S 1/2;
    # big SYN p0 large 1, p1 small 0 -> 1/2; large SYN p0 big 1, p1 thing 0 -> 1/2.
    # Humans on the same words: dog p0 animal 1, p1 mammal 0 -> 1/2; big p0 large, p1 large
    # -> 1; large has no human list (no human value). All: mA (1/2 * 3), humans (1/2 + 1) / 2.
    assert got == {"HYP": (1, 0.5, 0.5), "SYN": (2, 0.5, 1.0), "all six": (3, 0.5, 0.75)}
    assert all(p.chance == 0.0 for p in lines)
    # every word's S is 1/2: each resample's mean is 1/2, a zero-width interval
    assert all(p.ci == pytest.approx((0.5, 0.5)) for p in lines)


def test_ontolama_lines(db: Path) -> None:  # noqa: F811
    lines = profile.profile_lines(rows_of(db), "m")
    got = {p.measure: (p.n, p.value, p.chance) for p in lines}
    # pizza, zero-shot run Z1, six prompts; right under them: A 5, B 4, C 2, D 1 (of 6):
    # mean (5 + 4 + 2 + 1) / 24 = 1/2; gold 1, 0, 1, 0: majority 1/2. The K-shot runs and the
    # failed run are left out. go complex (Z2): E, F right under every prompt, G never -> 2/3;
    # gold 1, 1, 0 -> majority 2/3.
    assert got == {"pizza-atomic: accuracy, zero-shot": (4, 0.5, 0.5),
                   "go-complex: accuracy, zero-shot": (3, pytest.approx(2 / 3),
                                                       pytest.approx(2 / 3))}
    pizza = lines[1] if lines[1].measure.startswith("pizza") else lines[0]
    assert pizza.ci is not None and 1 / 6 <= pizza.ci[0] < 0.5 < pizza.ci[1] <= 5 / 6
    # the shortcut ceiling: pizza's train split (2 of 3 positive) makes the majority rule answer
    # "1": A, C right of A-D -> 1/2 (no texts, no other rule); go complex has no train split
    assert pizza.ceiling == 0.5
    go = lines[0] if pizza is lines[1] else lines[1]
    assert go.ceiling is None


def add_copen_run(con: duckdb.DuckDBPyConnection, rid: str, probe: str, part: str,
                  finished: str = "2025-01-01") -> None:
    cfg = {"method": "zero-shot", "runtime": {"copen": {"method": "zero-shot", "part": part,
                                                         "context": True, "kind": "causal"}}}
    insert_run(con, Run(run_id=rid, model="m", backend="causal", family="causal", probe=probe,
                        task="choice",
                        config=cfg, status="done", finished_at=datetime.fromisoformat(finished),
                        method="zero-shot", part=part, context=True))


def test_copen_lines_use_the_table8_part(tmp_path: Path) -> None:
    con = connect(tmp_path / "c.duckdb")
    add = "INSERT INTO instances VALUES ('copen/csj', 'dev', ?, NULL, ?, ?, '{}', now())"
    con.execute(add, ["q1", ["b"], ["a", "b", "c"]])
    con.execute(add, ["q2", ["x"], ["x", "y"]])
    con.execute(add, ["q3", [], ["x", "y"]])  # hidden label: left out
    score = ("INSERT INTO scores (run_id, probe, split, instance_id, prompt_id, candidate, "
             "label, score, n_tokens) VALUES (?, 'copen/csj', 'dev', ?, 0, ?, ?, ?, ?)")
    # Table 8 for a causal model: CSJ part 'all'. Run ALL: q1 b -4/2 = -2 > a -6/2, c -9/3
    # -> right; q2 x -3/1 < y -2/1 -> wrong: accuracy 1/2; chance (1/3 + 1/2) / 2 = 5/12.
    add_copen_run(con, "ALL", "copen/csj", "all")
    for iid, cand, s, n in (("q1", "a", -6, 2), ("q1", "b", -4, 2), ("q1", "c", -9, 3),
                            ("q2", "x", -3, 1), ("q2", "y", -2, 1), ("q3", "x", 0, 1)):
        con.execute(score, ["ALL", iid, cand, cand, s, n])
    # the 'query' part is not Table 8's for a causal model: its perfect scores are left out
    add_copen_run(con, "QUERY", "copen/csj", "query")
    for iid, cand, s in (("q1", "b", 0), ("q1", "a", -5), ("q2", "x", 0), ("q2", "y", -5)):
        con.execute(score, ["QUERY", iid, cand, cand, s, 1])
    con.close()
    (line,) = profile.profile_lines(rows_of(tmp_path / "c.duckdb"), "m")
    assert (line.benchmark, line.n, line.value) == ("COPEN", 2, 0.5)
    assert line.chance == pytest.approx(5 / 12)
    # two items, each right or wrong: the Wilson interval of 1 of 2 (never zero-width)
    assert line.ci == pytest.approx(wilson_by_hand(1, 2))


def test_cli_writes_profile_and_png(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "s.duckdb"
    semrel_fixtures.build(path)
    out = tmp_path / "prof"
    assert profile.main(["--results", str(path), "--model", "mA", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # 3 words < 10: the value is marked (and not drawn as a bar)
    assert "| semrel | all six: soundness S (top-1 answer right) | 3 | 0.500 † | 0.500–0.500 " \
           "| 0.000 | 0.750 (" in printed
    assert "n per benchmark: semrel 3 words." in printed
    assert (out / "profile.png").read_bytes()[:4] == b"\x89PNG"
    assert "![profile](profile.png)" in (out / "profile.md").read_text()
    assert profile.main(["--results", str(tmp_path / "none.duckdb"), "--out", str(out)]) == 2
    # a model without rows is an error naming the models that have some and the command
    capsys.readouterr()
    assert profile.main(["--results", str(path), "--model", "nobody", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no profile rows for nobody" in err and "models with rows: mA, mB" in err
    assert "scripts/profile.sh nobody" in err


def test_too_few_items_are_a_hatched_band_not_a_bar(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import eval.plots as plots_mod

    drawn: list[dict[str, Any]] = []
    real_close = plots_mod.plt.close

    def close(fig: Any) -> None:
        ax = fig.axes[0]
        drawn.append({"patches": [(p.get_y() + p.get_height() / 2, p.get_width(),
                                   p.get_hatch()) for p in ax.patches],
                      "texts": [t.get_text() for t in ax.texts], "xlabel": ax.get_xlabel()})
        real_close(fig)

    monkeypatch.setattr(plots_mod.plt, "close", close)
    # semrel HYP: 12 words, 3 right (S 1/4); COPEN CPJ: 4 instances, all right ("CPJ 1.00")
    rows = {"profile_semrel": [{"model": "m", "is_human": False, "relation": "HYP",
                                "word": f"w{i}", "value": 1.0 if i < 3 else 0.0}
                               for i in range(12)],
            "profile_copen": [{"model": "m", "probe": "copen/cpj", "split": "dev",
                               "instance_id": f"c{i}", "value": 1.0, "chance": 0.5}
                              for i in range(4)]}
    rendered = profile.render_profile("m", "r.duckdb")(None, rows, tmp_path)  # type: ignore[arg-type]
    (fig,) = drawn
    # lines top to bottom: HYP (y 2), all six (y 1), CPJ (y 0). Two bars of width 1/4 and, for
    # CPJ, a hatched band across the axis (width 1) instead of a bar of 1.00
    assert sorted(fig["patches"]) == [(0.0, 1.0, "///"), (1.0, 0.25, None), (2.0, 0.25, None)]
    assert "n < 10: too few items, not drawn" in fig["texts"] and "1.00" not in fig["texts"]
    assert "n per benchmark: semrel 12 words, COPEN 4 instances." in fig["xlabel"]
    assert "fewer than 10 items, too few for a figure: COPEN CPJ (n = 4)" in fig["xlabel"]
    # the table keeps the value with its Wilson interval, marked: 4/4 -> [4 / (4 + z²), 1]
    low, high = wilson_by_hand(4, 4)
    assert (f"| COPEN | CPJ: property true? (accuracy) | 4 | 1.000 † | {low:.3f}–{high:.3f} |"
            in rendered.markdown)


def test_eval_does_not_import_torch() -> None:
    code = ("import sys, eval.copen_report, eval.ontolama_report, eval.semrel_report, "
            "eval.report, eval.profile; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_semrel_rows_take_the_constant_answer_baseline_as_their_ceiling() -> None:
    """Each relation's line gets its probe's constant-answer S, "all six" the micro row."""
    rows = {"profile_semrel": [
        {"model": "m", "is_human": False, "relation": rel, "word": w, "value": v}
        for rel, w, v in (("HYP", "dog", 1.0), ("HYP", "cat", 0.0), ("MER", "car", 0.5))]}
    lines = profile.profile_lines(rows, "m", {"semrel/hyp": 0.109, "semrel/mer": 0.25,
                                              "micro": 0.07})
    got = {p.measure.split(":")[0]: (p.value, p.ceiling) for p in lines}
    assert got == {"HYP": (0.5, 0.109), "MER": (0.5, 0.25), "all six": (0.5, 0.07)}


def test_a_ceiling_equal_to_chance_leaves_the_chance_tick_visible(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.colors as mcolors

    import eval.plots as plots_mod

    ticks: list[tuple[str, float, float, float]] = []  # colour, x, y from, y to
    real_close = plots_mod.plt.close

    def close(fig: Any) -> None:
        for coll in fig.axes[0].collections:
            for seg, colour in zip(coll.get_segments(), coll.get_colors(), strict=False):
                (x0, y0), (x1, y1) = seg
                if x0 == x1:
                    ticks.append((mcolors.to_hex(colour), x0, min(y0, y1), max(y0, y1)))
        real_close(fig)

    monkeypatch.setattr(plots_mod.plt, "close", close)
    # line "same" (y 1): chance 0.25, ceiling 0.25; line "apart" (y 0): chance 0.25, ceiling 0.5
    plots_mod.profile_chart([("same", 0.6, None, 0.25, None, None),
                             ("apart", 0.6, None, 0.25, None, None)], "t",
                            tmp_path / "p.png", ceilings=[0.25, 0.5])
    black, orange = mcolors.to_hex("black"), mcolors.to_hex("tab:orange")
    assert sorted(t for t in ticks if t[0] == black) == [(black, 0.25, -0.4, 0.4),
                                                          (black, 0.25, 0.6, 1.4)]
    # the equal ceiling covers only the upper half of its row; the other one the whole row
    assert sorted(t for t in ticks if t[0] == orange) == [(orange, 0.25, 1.0, 1.4),
                                                           (orange, 0.5, -0.4, 0.4)]


def test_a_benchmark_s_measures_over_too_few_items_are_one_hatched_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46: the main job's profile hatched 9 of 21 rows; a benchmark's too-few measures
    are now one row that names them (here COPEN's three tasks, 4 instances each)."""
    import eval.plots as plots_mod

    drawn: list[dict[str, Any]] = []
    real_close = plots_mod.plt.close

    def close(fig: Any) -> None:
        ax = fig.axes[0]
        drawn.append({"hatched": [p for p in ax.patches if p.get_hatch()],
                      "ticks": [t.get_text() for t in ax.get_yticklabels()]})
        real_close(fig)

    monkeypatch.setattr(plots_mod.plt, "close", close)
    rows = {"profile_semrel": [{"model": "m", "is_human": False, "relation": "HYP",
                                "word": f"w{i}", "value": 1.0 if i < 3 else 0.0}
                               for i in range(12)],
            "profile_copen": [{"model": "m", "probe": f"copen/{task}", "split": "dev",
                               "instance_id": f"{task}{i}", "value": 1.0, "chance": 0.5}
                              for task in ("csj", "cpj", "cic") for i in range(4)]}
    rendered = profile.render_profile("m", "r.duckdb")(None, rows, tmp_path)  # type: ignore[arg-type]
    (fig,) = drawn
    assert len(fig["hatched"]) == 1
    (copen,) = [t for t in fig["ticks"] if t.startswith("COPEN")]
    assert copen.startswith("COPEN: 3 measures over too few items (") and "n = 4)" in copen
    assert rendered.markdown.count(" † |") == 3  # the table keeps each, marked
