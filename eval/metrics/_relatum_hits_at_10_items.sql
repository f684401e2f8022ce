-- name: relatum_hits_at_10_items
-- description: >-
--   The items of relatum_hits_at_10: per instance and prompt, 1 when a gold relatum is among
--   the top 10 answers (value);
--   an inflected gold form (gold_forms) counts, as in the metric. relatum_hits_at_10 is their mean, so its interval resamples
--   the instances with all their prompts (a cluster bootstrap).
-- tasks: [relatum]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- plot: false
SELECT r.run_id, r.probe, r.split, r.instance_id, r.prompt_id,
       max(CASE WHEN r.rank <= 10
                 AND (list_contains(list_transform(i.gold, lambda g: lower(g)), lower(r.token))
                      OR EXISTS (SELECT 1 FROM gold_forms f WHERE f.probe = r.probe
                                 AND f.split = r.split AND f.instance_id = r.instance_id
                                 AND f.form = lower(r.token)))
                THEN 1.0 ELSE 0.0 END) AS value
FROM responses r
JOIN runs USING (run_id)
JOIN instances i ON i.probe = r.probe AND i.split = r.split AND i.instance_id = r.instance_id
WHERE runs.task = 'relatum' AND runs.status = 'done' AND len(i.gold) > 0
GROUP BY ALL
ORDER BY ALL
