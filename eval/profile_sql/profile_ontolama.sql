-- name: profile_ontolama
-- description: >-
--   Knowledge profile, OntoLAMA (He et al. 2023): per model, probe and test instance of the
--   latest zero-shot run, the share of the run's prompts (templates x label-word sets) that
--   answer the instance right under the paper's class scoring (sum of the label words'
--   probabilities; ontolama_correct of _class_scores.sql); gold is the instance's class.
-- tasks: [subsumption]
-- grain: [model, probe, instance_id]
-- requires: [../ontolama/_class_scores.sql]
-- plot: false
WITH latest AS (                  -- the latest finished zero-shot run per (model, probe)
    SELECT run_id, model FROM (
        SELECT r.run_id, r.model, row_number() OVER (
                   PARTITION BY r.model, r.probe
                   ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
        FROM runs r
        WHERE r.run_id IN (SELECT run_id FROM ontolama_correct WHERE NOT is_kshot))
    WHERE nth = 1
)
SELECT l.model, c.probe, c.instance_id, avg(c.correct) AS value, count(*) AS n,
       any_value(i.gold[1]) AS gold
FROM ontolama_correct c
JOIN latest l USING (run_id)
JOIN instances i ON i.probe = c.probe AND i.split = c.split AND i.instance_id = c.instance_id
WHERE c.scoring = 'sum_prob' AND NOT c.is_kshot AND c.split = 'test'
GROUP BY ALL
ORDER BY ALL
