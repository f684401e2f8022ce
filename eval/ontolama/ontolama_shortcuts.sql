-- name: ontolama_shortcuts
-- description: >-
--   Shortcut baselines of each OntoLAMA dataset, over the instances themselves (no model):
--   majority, the accuracy of always answering the more frequent class of the split; and, for
--   Complex SI, complex_first, the accuracy of the rule "the complex concept is the premise =>
--   subsumption" (fields.complex_side; its mirror rule scores 1 - value). A dataset free of
--   these shortcuts has both at 50 % on every split (the paper: majority 50.0 everywhere,
--   L190).
-- tasks: [subsumption]
-- grain: [probe, split, baseline]
WITH gold AS (
    SELECT probe, split, gold[1] = '1' AS positive,
           json_extract_string(fields, '$.complex_side') AS side
    FROM instances
    WHERE probe LIKE 'ontolama/%' AND len(gold) > 0
)
SELECT probe, split, 'majority' AS baseline,
       greatest(avg(positive::INTEGER), 1 - avg(positive::INTEGER)) AS value, count(*) AS n
FROM gold
GROUP BY ALL
UNION ALL
SELECT probe, split, 'complex_first' AS baseline,
       avg(((side = 'premise') = positive)::INTEGER) AS value, count(*) AS n
FROM gold
WHERE side IS NOT NULL
GROUP BY ALL
ORDER BY ALL
