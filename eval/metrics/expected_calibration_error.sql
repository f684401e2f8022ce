-- name: expected_calibration_error
-- description: >-
--   Expected calibration error (ECE; Naeini et al. 2015, Guo et al. 2017; lower is better):
--   the instances are binned by the confidence of their top answer (its softmax probability
--   over the answers, as brier_score) into 10 equal-width bins ((m - 1)/10, m/10], m = 1..10;
--   ECE = sum over the bins of |bin| / n x |accuracy(bin) - mean confidence(bin)|, accuracy
--   counting an instance right as choice_accuracy and binary_accuracy do. 95% CI: the
--   percentile bootstrap over instances (1,000 seeded resamples, the bins drawn again in each).
--   Only finished runs with gold.
-- tasks: [choice, binary]
-- grain: [run_id, probe, split]
-- requires: [_calibration.sql]
-- plot: false
WITH bins AS (
    SELECT run_id, probe, split, bin, count(*) AS k, sum(correct) AS n_right,
           sum(confidence) AS conf
    FROM calibration_items GROUP BY ALL
),
ece AS (
    SELECT run_id, probe, split, sum(abs(n_right - conf)) / sum(k) AS value, sum(k) AS n
    FROM bins GROUP BY ALL
),
boot_bins AS (
    SELECT run_id, probe, split, b, bin, count(*) AS k, sum(correct) AS n_right,
           sum(confidence) AS conf
    FROM calibration_resamples GROUP BY ALL
),
boot AS (
    SELECT run_id, probe, split, b, sum(abs(n_right - conf)) / sum(k) AS v
    FROM boot_bins GROUP BY ALL
)
SELECT e.run_id, e.probe, e.split, e.value, e.n,
       quantile_cont(b.v, 0.025) AS ci_low, quantile_cont(b.v, 0.975) AS ci_high
FROM ece e JOIN boot b USING (run_id, probe, split)
GROUP BY ALL
ORDER BY ALL
