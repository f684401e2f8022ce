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
-- items: _relatum_precision_at_1_items.sql
SELECT r.run_id, r.probe, r.split,
       avg(CASE WHEN list_contains(list_transform(i.gold, lambda g: lower(g)), lower(r.token))
                     OR EXISTS (SELECT 1 FROM gold_forms f WHERE f.probe = r.probe
                                AND f.split = r.split AND f.instance_id = r.instance_id
                                AND f.form = lower(r.token))
                THEN 1.0 ELSE 0.0 END) AS value,
       count(DISTINCT r.instance_id) AS n, count(*) AS pairs
FROM responses r
JOIN runs USING (run_id)
JOIN instances i ON i.probe = r.probe AND i.split = r.split AND i.instance_id = r.instance_id
WHERE runs.task = 'relatum' AND runs.status = 'done' AND r.rank = 1 AND len(i.gold) > 0
GROUP BY ALL
ORDER BY ALL
