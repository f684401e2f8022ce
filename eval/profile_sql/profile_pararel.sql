-- name: profile_pararel
-- description: >-
--   Knowledge profile, ParaRel (Elazar et al. 2021): per model, ParaRel probe and fact of the
--   model's latest finished run of that probe, three measures: consistency (the share of the
--   fact's graph edges whose two patterns give one answer, the authors' a/an filter applied;
--   facts with no such edge left out), accuracy under the LAMA pattern (pattern 0) and
--   consistent accuracy (right under every pattern); chance: a uniform pick among the
--   relation's objects (for consistency: the chance that two uniform picks agree, the same
--   number); ceiling: the majority baseline on the same fact (1 for consistency).
-- tasks: [choice]
-- grain: [model, probe, measure, split, instance_id]
-- plot: false
-- requires: [../pararel/_views.sql]
WITH latest AS (
    SELECT r.run_id, r.model,
           row_number() OVER (PARTITION BY r.model, r.probe
                              ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
    FROM runs r WHERE r.probe LIKE 'pararel/%' AND r.status = 'done'),
f AS (
    SELECT l.model, f.*, m.correct AS majority, 1.0 / len(i.candidates) AS chance
    FROM pararel_facts f JOIN latest l ON l.run_id = f.run_id AND l.nth = 1
    JOIN instances i USING (probe, split, instance_id)
    LEFT JOIN pararel_majority_facts m USING (probe, split, instance_id))
SELECT model, probe, 'consistency' AS measure, split, instance_id, consistency AS value,
       chance, 1.0 AS ceiling, 1 AS ord FROM f WHERE consistency IS NOT NULL
UNION ALL
SELECT model, probe, 'accuracy (LAMA pattern)', split, instance_id, lama_correct, chance,
       majority, 2 FROM f
UNION ALL
SELECT model, probe, 'consistent accuracy', split, instance_id, consistent_correct,
       chance, majority, 3 FROM f
ORDER BY model, probe, ord, split, instance_id
