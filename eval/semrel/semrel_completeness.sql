-- name: semrel_completeness
-- description: >-
--   Completeness C (Cao et al. eqs. 13-14): Recall@k of each probe, k = min(|Y^r(w)|, list
--   length), averaged over the word's prompts, then over the words with a non-empty set.
--   Extra rows: 'macro' = the mean over relations, 'micro' = the mean over per-word scores.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql]
WITH per_relation AS (
    SELECT model, probe, avg(c) AS value, count(*) AS n FROM semrel_word_sc GROUP BY ALL
)
SELECT model, probe, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(*) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(c), count(*) FROM semrel_word_sc GROUP BY model
ORDER BY ALL
