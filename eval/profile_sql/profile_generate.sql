-- name: profile_generate
-- description: >-
--   Knowledge profile, generation (task generate, docs/generate.md): per model, generate
--   probe and instance of the model's latest finished run of that probe, the share of the
--   probe's prompts whose generated answer is an exact match of an accepted form (SQuAD
--   normalisation), is contained in the answer, and is not attempted.
-- tasks: [generate]
-- grain: [model, probe, split, instance_id]
-- plot: false
-- requires: [../metrics/_generate_matches.sql]
WITH latest AS (
    SELECT r.run_id, r.model,
           row_number() OVER (PARTITION BY r.model, r.probe
                              ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
    FROM runs r WHERE r.task = 'generate' AND r.status = 'done')
SELECT l.model, m.probe, m.split, m.instance_id,
       avg(CASE WHEN m.exact THEN 1.0 ELSE 0.0 END) AS value,
       avg(CASE WHEN m.contains THEN 1.0 ELSE 0.0 END) AS contains,
       avg(CASE WHEN m.not_attempted THEN 1.0 ELSE 0.0 END) AS not_attempted
FROM generate_item_matches m
JOIN latest l ON l.run_id = m.run_id AND l.nth = 1
GROUP BY ALL
ORDER BY ALL
