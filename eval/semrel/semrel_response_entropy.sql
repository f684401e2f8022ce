-- name: semrel_response_entropy
-- description: >-
--   Human response entropy R (Cao et al.), from the raw answers in human_responses: per probe
--   (instance x prompt), each annotator's distinct answers weigh 1 / (their number x the number
--   of annotators) and equal answers are pooled into p; R = H(p) / H_max, H_max being the
--   entropy of the same weights with nothing pooled, so R = 1 exactly when no two annotators
--   share an answer and lower the more they agree. value = the mean R per relation probe
--   (model 'human'); agreeing = probes with R < 1 (those prototypicality uses). Extra rows:
--   probe 'macro' = the mean over the relations (n = relations), 'micro' = pooled over all
--   probes. Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql]
WITH per_relation AS (
    SELECT probe, avg(r) AS value, count(*) AS n, count(*) FILTER (WHERE shared) AS agreeing
    FROM semrel_probe_r
    GROUP BY ALL
)
SELECT 'human' AS model, probe, value, n, agreeing FROM per_relation
UNION ALL
SELECT 'human', 'macro', avg(value), count(*), sum(agreeing) FROM per_relation
HAVING count(*) > 0
UNION ALL
SELECT 'human', 'micro', avg(r), count(*), count(*) FILTER (WHERE shared) FROM semrel_probe_r
HAVING count(*) > 0
ORDER BY ALL
