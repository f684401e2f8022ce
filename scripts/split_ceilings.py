"""The shortcut ceiling of whole splits, with the permutation null of the best rule.

    PYTHONPATH=$PWD python scripts/split_ceilings.py --results R [--split test] [-p 'ontolama/*']

``shortcut_ceiling`` (eval/metrics/_shortcuts.sql, docs/shortcuts.md) is computed per finished
run, on the instances it scored. To read it for a whole split before any model has run, this
script copies the results file, adds to the copy one stand-in finished run per probe that
"scores" every instance of the split (no model: the metric reads only which instances a run
scored), and prints the metric's row: the rule chosen on dev (or train) and its accuracy, the
best rule on the split itself and that best's permutation null (200 seeded shuffles of the
split's labels). The results file itself is not touched.
"""

from __future__ import annotations

import argparse
import fnmatch
import shutil
import tempfile
from pathlib import Path

import duckdb

from eval.sqlfile import load_metric, run_metric

METRIC = Path(__file__).resolve().parents[1] / "eval" / "metrics" / "shortcut_ceiling.sql"


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, required=True, help="results DuckDB file")
    parser.add_argument("--split", default="test", help="the split to read (default: test)")
    parser.add_argument("-p", "--probe", default="*", help="probe name or glob (default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kgprobe-ceilings-") as tmp:
        copy = Path(tmp) / "r.duckdb"
        shutil.copy(args.results, copy)
        con = duckdb.connect(str(copy))
        probes = [p for (p,) in con.execute("SELECT DISTINCT probe FROM instances WHERE split = ?"
                                            " ORDER BY 1", [args.split]).fetchall()
                  if fnmatch.fnmatchcase(p, args.probe)]
        for p in probes:
            rid = f"whole-split:{p}"
            con.execute("INSERT INTO runs (run_id, model, probe, status, task) "
                        "VALUES (?, 'none', ?, 'done', 'binary')", [rid, p])
            con.execute("""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                           candidate, score) SELECT ?, probe, split, instance_id, 0, '', 0.0
                           FROM instances WHERE probe = ? AND split = ?""", [rid, p, args.split])
        cols, rows = run_metric(con, load_metric(METRIC))
        con.close()
    print(f"| probe | n ({args.split}) | shortcut ceiling (rule, chosen on) | best rule on "
          f"{args.split} (chosen on its labels) | its null: median / 95th percentile |")
    print("|---|---:|---|---|---|")
    for r in (dict(zip(cols, row, strict=True)) for row in rows):
        print(f"| {r['probe']} | {r['n']:,} | {pct(r['value'])} ({r['rule']}, {r['chosen_on']}) "
              f"| {pct(r['best_value'])} ({r['best_rule']}) | {pct(r['null_median'])} / "
              f"{pct(r['null_p95'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
