-- name: profile_bear
-- description: >-
--   Knowledge profile, BEAR (Wiland, Ploner and Akbik 2024): per model, BEAR probe and scored
--   instance of the model's latest finished run of that probe, the share of the instance's
--   templates whose best-scored answer (summed log-likelihood, a tie to the earlier answer,
--   as lm-pub-quiz) is gold; the chance of a uniform pick (1 / answer-space size); the
--   shortcut ceiling's item (the model-free rule chosen on the other fold of relations,
--   ../bear/_shortcuts.sql: right or not); the relation and its domains.
-- tasks: [choice]
-- grain: [model, probe, split, instance_id]
-- plot: false
-- requires: [../bear/_views.sql, ../bear/_shortcuts.sql]
WITH latest AS (
    SELECT r.run_id, r.model,
           row_number() OVER (PARTITION BY r.model, r.probe
                              ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
    FROM runs r WHERE r.probe LIKE 'bear/%' AND r.task = 'choice' AND r.status = 'done')
SELECT l.model, v.probe, v.split, v.instance_id, v.relation, v.value, v.chance, v.domains,
       c.value AS ceiling, c.rule AS ceiling_rule
FROM bear_instance_values v
JOIN latest l ON l.run_id = v.run_id AND l.nth = 1
LEFT JOIN bear_shortcut_choice c USING (probe, split, instance_id)
ORDER BY ALL
