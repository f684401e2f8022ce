-- name: binary_accuracy
-- description: >-
--   Binary (true/false) accuracy. Each label word or statement gets the MEAN of its scores over
--   the probe's prompts; an instance is right when the best candidate of its gold class scores
--   strictly higher than every candidate of the other classes (the best wins; a tie counts as
--   wrong). Classes and gold are compared case-insensitively. Instances without gold are left
--   out. Only finished runs (status done).
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- items: _binary_accuracy_items.sql
WITH candidate_scores AS (        -- one score per (instance, candidate): the mean over prompts
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.candidate, lower(s.label) AS label,
           avg(s.score) AS score
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.task = 'binary' AND r.status = 'done'
    GROUP BY ALL
),
per_instance AS (                 -- the best candidate of the gold class and of the others
    SELECT c.run_id, c.probe, c.split, c.instance_id,
           max(c.score) FILTER (WHERE list_contains(
               list_transform(i.gold, lambda g: lower(g)), c.label)) AS gold_best,
           max(c.score) FILTER (WHERE NOT list_contains(
               list_transform(i.gold, lambda g: lower(g)), c.label)) AS other_best
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
)
SELECT run_id, probe, split,
       avg(CASE WHEN gold_best > coalesce(other_best, '-inf'::DOUBLE) THEN 1.0 ELSE 0.0 END)
           AS value,
       count(*) AS n
FROM per_instance
GROUP BY ALL
ORDER BY ALL
