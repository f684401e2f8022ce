-- name: copen_cic_error_types
-- description: >-
--   CiC error types, as shares of the wrong labelled instances (n): 'wrong_level' when the
--   predicted concept lies on a concept chain that also holds the gold concept (the right
--   sense, but too general or too specific), 'disambiguation' when it lies only on other chains
--   (the entity read in another sense). The prediction is copen_predictions' (the best
--   per-token score, a tie to the earliest concept on the chains, as in the authors' code). As
--   in the paper's Tables 6 and 13, only entities with two or more concept chains count.
-- tasks: [choice]
-- grain: [run_id, probe, split, error_type]
-- requires: [_views.sql]
WITH predicted AS (
    SELECT p.run_id, p.probe, p.split, p.instance_id, i.gold[1] AS gold,
           CAST(json_extract(i.fields, '$.chain_words') AS VARCHAR[][]) AS chains,
           p.prediction
    FROM copen_predictions p JOIN instances i USING (probe, split, instance_id)
    WHERE p.probe = 'copen/cic' AND len(i.gold) > 0
      AND json_array_length(json_extract(i.fields, '$.chain_words')) >= 2
),
errors AS (
    SELECT run_id, probe, split, instance_id,
           CASE WHEN len(list_filter(chains, lambda ch: list_contains(ch, gold)
                                               AND list_contains(ch, prediction))) > 0
                THEN 'wrong_level' ELSE 'disambiguation' END AS error_type
    FROM predicted
    WHERE prediction <> gold
)
SELECT e.run_id, e.probe, e.split, t.error_type,
       avg(CASE WHEN e.error_type = t.error_type THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM errors e, (VALUES ('wrong_level'), ('disambiguation')) AS t(error_type)
GROUP BY ALL
ORDER BY ALL
