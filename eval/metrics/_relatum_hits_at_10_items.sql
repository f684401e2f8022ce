-- name: relatum_hits_at_10_items
-- description: >-
--   The items of relatum_hits_at_10: per instance and prompt, 1 when a gold relatum is among
--   the top 10 answers (value; an inflected gold form in gold_forms counts, as in the
--   metric). relatum_hits_at_10 is their mean, so its interval resamples the instances with
--   all their prompts (a cluster bootstrap).
-- tasks: [relatum]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- requires: [_relatum_hits.sql]
-- plot: false
SELECT run_id, probe, split, instance_id, prompt_id, hit_at_10 AS value
FROM relatum_item_hits
ORDER BY ALL
