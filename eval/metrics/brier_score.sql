-- name: brier_score
-- description: >-
--   Brier score (Brier 1950; lower is better): per instance the sum over its answers of
--   (p - y)^2, p the softmax over the answers of their mean-over-prompts scores (an answer
--   with several candidates, binary label words, takes its best one), y = 1 for a gold answer;
--   averaged over the instances. 0 is perfect; a uniform guess over K answers with one gold
--   scores 1 - 1/K. 95% CI: the percentile bootstrap over instances (1,000 seeded resamples).
--   Only finished runs with gold.
-- tasks: [choice, binary]
-- grain: [run_id, probe, split]
-- requires: [_calibration.sql]
-- plot: false
WITH boot AS (
    SELECT run_id, probe, split, b, avg(brier) AS v FROM calibration_resamples GROUP BY ALL
),
ci AS (
    SELECT run_id, probe, split, quantile_cont(v, 0.025) AS ci_low,
           quantile_cont(v, 0.975) AS ci_high
    FROM boot GROUP BY ALL
)
SELECT run_id, probe, split, avg(brier) AS value, count(*) AS n, ci.ci_low, ci.ci_high
FROM calibration_items JOIN ci USING (run_id, probe, split)
GROUP BY ALL
ORDER BY ALL
