-- name: copen_cic_out_of_context
-- description: >-
--   Table 5 of the paper: the percentage of out-of-context predictions among all incorrect
--   predictions. For each in-context zero-shot CiC run, over the labelled instances it gets
--   wrong (n), the share whose predicted concept is the one the same model predicts, with the
--   same part, when the sentence is removed (the out-of-context run). A high share means the
--   model conceptualises the entity from memory, not from the context. Predictions: best
--   per-token score; a tie goes to a wrong concept first (as copen_cic_error_types), then to
--   the concept's words.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH settings AS (
    SELECT run_id, model, revision, dtype, part, context
    FROM runs
    WHERE probe = 'copen/cic' AND status = 'done' AND method = 'zero-shot'
),
pairs AS (                        -- in-context run -> the out-of-context run of the same setting
    SELECT a.run_id AS in_run, b.run_id AS out_run
    FROM settings a JOIN settings b
      ON a.model = b.model AND a.revision IS NOT DISTINCT FROM b.revision
     AND a.dtype IS NOT DISTINCT FROM b.dtype AND a.part = b.part
    WHERE a.context AND NOT b.context
),
predicted AS (
    SELECT s.run_id, s.split, s.instance_id, i.gold[1] AS gold,
           first(s.candidate ORDER BY s.score DESC, s.candidate = i.gold[1], s.candidate)
               AS prediction
    FROM copen_candidate_scores s
    JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
)
SELECT p.in_run AS run_id, 'copen/cic' AS probe, i.split,
       avg(CASE WHEN i.prediction = o.prediction THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM pairs p
JOIN predicted i ON i.run_id = p.in_run
JOIN predicted o ON o.run_id = p.out_run AND o.split = i.split AND o.instance_id = i.instance_id
WHERE i.prediction <> i.gold
GROUP BY ALL
ORDER BY ALL
