-- name: relatum_precision_at_1_items
-- description: >-
--   The items of relatum_precision_at_1: per instance and prompt, 1 when the top-ranked
--   answer is a gold relatum (value; an inflected gold form in gold_forms counts, as in the
--   metric). relatum_precision_at_1 is their mean, so its interval resamples the instances with all their prompts (a cluster bootstrap).
-- tasks: [relatum]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- plot: false
SELECT r.run_id, r.probe, r.split, r.instance_id, r.prompt_id,
       CASE WHEN (list_contains(list_transform(i.gold, lambda g: lower(g)), lower(r.token))
                  OR EXISTS (SELECT 1 FROM gold_forms f WHERE f.probe = r.probe
                             AND f.split = r.split AND f.instance_id = r.instance_id
                             AND f.form = lower(r.token)))
            THEN 1.0 ELSE 0.0 END AS value
FROM responses r
JOIN runs USING (run_id)
JOIN instances i ON i.probe = r.probe AND i.split = r.split AND i.instance_id = r.instance_id
WHERE runs.task = 'relatum' AND runs.status = 'done' AND r.rank = 1 AND len(i.gold) > 0
ORDER BY ALL
