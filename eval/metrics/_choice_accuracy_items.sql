-- name: choice_accuracy_items
-- description: >-
--   The items of choice_accuracy: per instance and prompt, 1 when the best gold candidate
--   scores strictly higher than every other candidate under that prompt alone (value), and
--   the instance's outcome under the mean over prompts, the one choice_accuracy counts
--   (instance_value).
-- tasks: [choice]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- requires: [_choice_ranks.sql]
-- plot: false
SELECT p.run_id, p.probe, p.split, p.instance_id, p.prompt_id,
       CASE WHEN p.rank = 1 THEN 1.0 ELSE 0.0 END AS value,
       CASE WHEN m.rank = 1 THEN 1.0 ELSE 0.0 END AS instance_value
FROM choice_item_ranks p
JOIN choice_item_ranks m USING (run_id, probe, split, instance_id)
WHERE p.prompt_id >= 0 AND m.prompt_id = -1
ORDER BY ALL
