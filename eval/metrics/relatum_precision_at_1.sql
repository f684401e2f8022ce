-- name: relatum_precision_at_1
-- description: >-
--   Share of (instance, prompt) pairs whose top-ranked answer is a gold relatum (soundness,
--   P@1), averaged over prompts and instances; n = instances (pairs: the (instance,
--   prompt) pairs).
--   Answers and gold compared lower-cased; an inflected form of a gold answer in the
--   gold_forms table (relatum params inflections, WordNet's morphology: "fingers" for
--   "finger") counts as that answer.
--   Instances without gold are left out. Only finished runs (status done).
-- tasks: [relatum]
-- grain: [run_id, probe, split]
-- requires: [_relatum_hits.sql]
-- items: _relatum_precision_at_1_items.sql
SELECT run_id, probe, split, avg(hit_at_1) AS value, count(DISTINCT instance_id) AS n,
       count(*) AS pairs
FROM relatum_item_hits
GROUP BY ALL
ORDER BY ALL
