-- name: semrel_soundness
-- description: >-
--   Soundness S (Cao et al. eqs. 11-12): Precision@1 of each probe (the top answer is in the
--   word's relatum set Y^r, limited to the declared models' shared vocabulary), averaged over
--   the word's prompts, then over the words W^r with a non-empty set. Extra rows: probe 'macro'
--   = the mean over relations (n = relations), 'micro' = the mean over all per-word scores.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql]
WITH per_relation AS (
    SELECT model, probe, avg(s) AS value, count(*) AS n FROM semrel_word_sc GROUP BY ALL
)
SELECT model, probe, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(*) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(s), count(*) FROM semrel_word_sc GROUP BY model
ORDER BY ALL
