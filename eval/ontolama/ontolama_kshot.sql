-- name: ontolama_kshot
-- description: >-
--   OntoLAMA K-shot accuracy (python -m probes.kshot): the mean (value) and population standard
--   deviation (std) over seeds of the test accuracy of the best dev epoch, per model, probe, K,
--   template and label-word set. A class's score is the mean of its label words' scores; the
--   gold class must score strictly higher (a tie counts as wrong). seeds says how many runs.
-- tasks: [subsumption]
-- grain: [model, probe, split, k, template, label_set]
WITH kruns AS (                   -- the K-shot runs and their settings
    SELECT run_id, model, json_extract(config, '$.kshot.k')::INTEGER AS k,
           json_extract_string(config, '$.kshot.template') AS template,
           json_extract_string(config, '$.kshot.label_set') AS label_set
    FROM runs
    WHERE task = 'subsumption' AND status = 'done' AND json_extract(config, '$.kshot') IS NOT NULL
),
class_scores AS (                 -- one score per (run, instance, class): mean over words
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.label, avg(s.score) AS score
    FROM scores s JOIN kruns USING (run_id)
    GROUP BY ALL
),
per_instance AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id,
           max(c.score) FILTER (WHERE c.label = i.gold[1]) AS gold_score,
           max(c.score) FILTER (WHERE c.label <> i.gold[1]) AS other_score
    FROM class_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
),
per_run AS (                      -- one test accuracy per run (= per seed)
    SELECT run_id, probe, split,
           avg(CASE WHEN gold_score > coalesce(other_score, '-inf'::DOUBLE) THEN 1.0 ELSE 0.0
               END) AS accuracy,
           count(*) AS n
    FROM per_instance
    GROUP BY ALL
)
SELECT k.model, p.probe, p.split, k.k, k.template, k.label_set,
       avg(p.accuracy) AS value, stddev_pop(p.accuracy) AS std, count(*) AS seeds,
       max(p.n) AS n
FROM per_run p JOIN kruns k USING (run_id)
GROUP BY ALL
ORDER BY ALL
