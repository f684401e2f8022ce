-- name: binary_accuracy_items
-- description: >-
--   The items of binary_accuracy: per instance and prompt, 1 when the best candidate of the
--   gold class scores strictly higher than every candidate of the other classes under that
--   prompt alone (value), and the instance's outcome under the mean over prompts, the one
--   binary_accuracy counts (instance_value). Classes compared case-insensitively.
-- tasks: [binary]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- plot: false
WITH per_prompt AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id, s.candidate,
           lower(s.label) AS label, s.score
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.task = 'binary' AND r.status = 'done'
),
candidate_scores AS (             -- each prompt's scores, and their mean as prompt -1
    SELECT * FROM per_prompt
    UNION ALL
    SELECT run_id, probe, split, instance_id, -1 AS prompt_id, candidate, label,
           avg(score) AS score
    FROM per_prompt
    GROUP BY run_id, probe, split, instance_id, candidate, label
),
outcome AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id,
           CASE WHEN max(c.score) FILTER (WHERE list_contains(
                         list_transform(i.gold, lambda g: lower(g)), c.label))
                     > coalesce(max(c.score) FILTER (WHERE NOT list_contains(
                         list_transform(i.gold, lambda g: lower(g)), c.label)), '-inf'::DOUBLE)
                THEN 1.0 ELSE 0.0 END AS right
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
)
SELECT p.run_id, p.probe, p.split, p.instance_id, p.prompt_id, p.right AS value,
       m.right AS instance_value
FROM outcome p JOIN outcome m USING (run_id, probe, split, instance_id)
WHERE p.prompt_id >= 0 AND m.prompt_id = -1
ORDER BY ALL
