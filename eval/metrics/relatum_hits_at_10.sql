-- name: relatum_hits_at_10
-- description: >-
--   Share of (instance, prompt) pairs with at least one gold relatum among the top 10
--   answers, averaged over prompts and instances; n = instances (pairs: the (instance,
--   prompt) pairs).
--   Answers and gold compared lower-cased; an inflected form of a gold answer in the
--   gold_forms table (relatum params inflections, WordNet's morphology: "fingers" for
--   "finger") counts as that answer.
--   Instances without gold are left out. Only finished runs (status done).
-- tasks: [relatum]
-- grain: [run_id, probe, split]
-- requires: [_relatum_hits.sql]
-- items: _relatum_hits_at_10_items.sql
SELECT run_id, probe, split, avg(hit_at_10) AS value, count(DISTINCT instance_id) AS n,
       count(*) AS pairs
FROM relatum_item_hits
GROUP BY ALL
ORDER BY ALL
