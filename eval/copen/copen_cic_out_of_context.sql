-- name: copen_cic_out_of_context
-- description: >-
--   CiC with the context removed: for each in-context zero-shot run, the share of instances
--   (hidden labels included) whose predicted concept stays the same when the same model scores
--   the same part without the sentence ("<entity> is a/an <concept>."). A high share means the
--   model conceptualises the entity from its name, not from the context. The out-of-context
--   run's own accuracy is in copen_accuracy. Predictions: best per-token score, ties broken by
--   the concept's words.
-- tasks: [choice]
-- grain: [run_id, probe, split]
WITH settings AS (
    SELECT run_id, model, revision, dtype,
           json_extract_string(config, '$.runtime.copen.part') AS part,
           json_extract(config, '$.runtime.copen.context')::BOOLEAN AS context
    FROM runs
    WHERE probe = 'copen/cic' AND status = 'done'
      AND json_extract_string(config, '$.runtime.copen.method') = 'zero-shot'
),
pairs AS (                        -- in-context run -> the out-of-context run of the same setting
    SELECT a.run_id AS in_run, b.run_id AS out_run
    FROM settings a JOIN settings b
      ON a.model = b.model AND a.revision IS NOT DISTINCT FROM b.revision
     AND a.dtype IS NOT DISTINCT FROM b.dtype AND a.part = b.part
    WHERE a.context AND NOT b.context
),
predicted AS (
    SELECT run_id, split, instance_id,
           first(candidate ORDER BY score DESC, candidate) AS prediction
    FROM (SELECT run_id, split, instance_id, candidate,
                 avg(score / greatest(n_tokens, 1)) AS score
          FROM scores WHERE probe = 'copen/cic' GROUP BY ALL)
    GROUP BY ALL
)
SELECT p.in_run AS run_id, 'copen/cic' AS probe, i.split,
       avg(CASE WHEN i.prediction = o.prediction THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM pairs p
JOIN predicted i ON i.run_id = p.in_run
JOIN predicted o ON o.run_id = p.out_run AND o.split = i.split AND o.instance_id = i.instance_id
GROUP BY ALL
ORDER BY ALL
