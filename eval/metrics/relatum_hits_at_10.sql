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
-- items: _relatum_hits_at_10_items.sql
WITH hits AS (
    SELECT r.run_id, r.probe, r.split, r.instance_id, r.prompt_id,
           max(CASE WHEN r.rank <= 10
                     AND (list_contains(list_transform(i.gold, lambda g: lower(g)), lower(r.token))
                          OR EXISTS (SELECT 1 FROM gold_forms f WHERE f.probe = r.probe
                                     AND f.split = r.split AND f.instance_id = r.instance_id
                                     AND f.form = lower(r.token)))
                    THEN 1.0 ELSE 0.0 END) AS hit
    FROM responses r
    JOIN runs USING (run_id)
    JOIN instances i ON i.probe = r.probe AND i.split = r.split AND i.instance_id = r.instance_id
    WHERE runs.task = 'relatum' AND runs.status = 'done' AND len(i.gold) > 0
    GROUP BY ALL
)
SELECT run_id, probe, split, avg(hit) AS value, count(DISTINCT instance_id) AS n,
       count(*) AS pairs
FROM hits
GROUP BY ALL
ORDER BY ALL
