-- name: relatum_precision_at_1_items
-- description: >-
--   The items of relatum_precision_at_1: per instance and prompt, 1 when the top-ranked
--   answer is a gold relatum (value; an inflected gold form in gold_forms counts, as in the
--   metric). relatum_precision_at_1 is their mean, so its interval resamples the instances with all their prompts (a cluster bootstrap).
-- tasks: [relatum]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- requires: [_relatum_hits.sql]
-- plot: false
SELECT run_id, probe, split, instance_id, prompt_id, hit_at_1 AS value
FROM relatum_item_hits
ORDER BY ALL
