"""scripts/fault_drill_kit.py: the drill's stand-in scorer must be a scorer the engine accepts.

Since backends declare their capabilities (issue 31, point 1), a scorer without them is refused
before any work; the stand-in declared none, so every drill case that scores (issue 30's table
among them) stopped with "declares no capabilities" and the drill itself crashed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

from probes.backends.protocol import CAUSAL_LM, capabilities

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import fault_drill_kit as kit  # noqa: E402  (scripts/ is not a package)


def test_the_stand_in_declares_a_causal_scorer() -> None:
    assert capabilities(kit.StandInScorer()) == CAUSAL_LM


def test_the_stand_in_scores_a_choice_probe(tmp_path: Path) -> None:
    _, results = kit.exported(tmp_path, kit.CHOICE, score=True)
    con = duckdb.connect(str(results), read_only=True)
    status = con.execute("SELECT status FROM runs").fetchall()
    n_scores = con.execute("SELECT count(*) FROM scores").fetchone()
    con.close()
    assert status == [("done",)]
    # CHOICE's VALUES: owl {bird, tree, apple}, cat {animal, tree}, emu {bird, thing}, one prompt
    assert n_scores == (3 + 2 + 2,)
