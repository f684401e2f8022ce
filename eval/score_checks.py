"""Checks of the stored numbers a report stands on: a score that is not finite (NaN, +inf or
-inf, stored by a version that did not check a server's answers, or written through the API)
makes every metric over its run wrong without an error (a NaN loses every comparison, so
accuracy falls and Brier reads nan). The report names each such run in a warning line.

>>> con = duckdb.connect()  # the columns it reads; the results file's writers never store NaN
>>> _ = con.execute("CREATE TABLE runs (run_id TEXT, model TEXT, probe TEXT, status TEXT); "
...                 "CREATE TABLE scores (run_id TEXT, score DOUBLE); "
...                 "CREATE TABLE responses (run_id TEXT, probability DOUBLE)")
>>> _ = con.execute("INSERT INTO runs VALUES ('0123456789', 'm', 'p', 'done')")
>>> _ = con.execute("INSERT INTO scores VALUES ('0123456789', 'nan'), ('0123456789', -1.0)")
>>> nonfinite_warnings(con)
['run 01234567 (model m, probe p) has 1 stored score that is not finite (NaN or ±inf): its \
metrics are wrong; score it again (the same run command: a cached value that is not finite is \
never served)']
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

_QUERY = """
SELECT r.run_id, r.model, r.probe, count(*) AS n
FROM (SELECT run_id, score AS v FROM scores
      UNION ALL SELECT run_id, probability FROM responses) s
JOIN runs r USING (run_id)
WHERE r.status = 'done' AND s.v IS NOT NULL AND NOT isfinite(s.v)
GROUP BY ALL ORDER BY r.model, r.probe, r.run_id
"""


def nonfinite_warnings(con: duckdb.DuckDBPyConnection,
                       keep: Callable[[str, str], bool] | None = None) -> list[str]:
    """One line per finished run (``keep(model, probe)``: the report's choice) that has stored
    scores or top-k probabilities that are not finite."""
    out = []
    for run_id, model, probe, n in con.execute(_QUERY).fetchall():
        if keep is not None and not keep(model, probe):
            continue
        out.append(f"run {str(run_id)[:8]} (model {model}, probe {probe}) has {n:,} stored "
                   f"score{'s' if n != 1 else ''} that {'are' if n != 1 else 'is'} not finite "
                   "(NaN or ±inf): its metrics are wrong; score it again (the same run "
                   "command: a cached value that is not finite is never served)")
    return out
