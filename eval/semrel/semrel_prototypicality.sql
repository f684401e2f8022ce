-- name: semrel_prototypicality
-- description: >-
--   Prototypicality P (Cao et al.) of a model against the humans, per probe (instance x prompt)
--   that has human answers on which annotators agree (R < 1, see semrel_response_entropy):
--   with k = the length of the humans' ranked list, P = 1/2 [model top-1 = human top-1] +
--   1/2 (1 - d / 2k), d = the edit distance between the model's top k (filtered to the shared
--   vocabulary, re-ranked) and the humans' top k as word sequences (insertion / deletion 1,
--   substitution 2). value = the mean P per model and relation probe; extra rows: probe
--   'macro' = the mean over the relations (n = relations), 'micro' = pooled over all probes.
--   Not computed for humans. Needs the Python function list_edit_distance (eval/udf.py), which
--   eval.sqlfile registers: it does not run in the plain DuckDB CLI.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql, _prototypicality.sql]
WITH per_relation AS (
    SELECT model, probe, avg(p) AS value, count(*) AS n
    FROM semrel_probe_p
    GROUP BY ALL
)
SELECT model, probe, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(*) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(p), count(*) FROM semrel_probe_p GROUP BY model
ORDER BY ALL
