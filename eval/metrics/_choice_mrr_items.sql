-- name: choice_mrr_items
-- description: >-
--   The items of choice_mrr: per instance and prompt, the reciprocal rank of the gold answer
--   under that prompt alone (value; 0 when no gold candidate was scored), and the instance's
--   reciprocal rank under the mean over prompts, the one choice_mrr counts (instance_value).
-- tasks: [choice]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- requires: [_choice_ranks.sql]
-- plot: false
SELECT p.run_id, p.probe, p.split, p.instance_id, p.prompt_id,
       coalesce(1.0 / p.rank, 0.0) AS value,
       coalesce(1.0 / m.rank, 0.0) AS instance_value
FROM choice_item_ranks p
JOIN choice_item_ranks m USING (run_id, probe, split, instance_id)
WHERE p.prompt_id >= 0 AND m.prompt_id = -1
ORDER BY ALL
