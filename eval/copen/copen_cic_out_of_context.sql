-- name: copen_cic_out_of_context
-- description: >-
--   Table 5 of the paper: the percentage of out-of-context predictions among all incorrect
--   predictions. For each in-context zero-shot CiC run, over the labelled instances it gets
--   wrong (n), the share whose predicted concept is the one the same model predicts, with the
--   same part and the same scoring setting (tokenisation, span, 120-token cut, revision,
--   dtype), when the sentence is removed (the out-of-context run). A high share means the
--   model conceptualises the entity from memory, not from the context. Predictions of
--   copen_predictions (best per-token score, a tie to the earliest concept on the chains).
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH settings AS (
    SELECT run_id, model, revision, dtype, part, context,
           json_extract_string(config, '$.runtime.copen.tokenisation') AS tokenisation,
           json_extract_string(config, '$.runtime.copen.span') AS span,
           json_extract_string(config, '$.runtime.copen.max_tokens') AS max_tokens
    FROM runs
    WHERE probe = 'copen/cic' AND status = 'done' AND method = 'zero-shot'
),
pairs AS (                        -- in-context run -> the out-of-context run of the same setting
    SELECT a.run_id AS in_run, b.run_id AS out_run
    FROM settings a JOIN settings b
      ON a.model = b.model AND a.revision IS NOT DISTINCT FROM b.revision
     AND a.dtype IS NOT DISTINCT FROM b.dtype AND a.part = b.part
     AND a.tokenisation IS NOT DISTINCT FROM b.tokenisation
     AND a.span IS NOT DISTINCT FROM b.span AND a.max_tokens IS NOT DISTINCT FROM b.max_tokens
    WHERE a.context AND NOT b.context
),
predicted AS (
    SELECT p.run_id, p.split, p.instance_id, i.gold[1] AS gold, p.prediction
    FROM copen_predictions p JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
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
