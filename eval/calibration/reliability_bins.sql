-- name: reliability_bins
-- description: >-
--   The reliability diagram's points: per confidence bin ((m - 1)/10, m/10], as
--   expected_calibration_error bins them) the instances in it (n), their accuracy (value) and
--   their mean confidence. The report draws accuracy against confidence per run; a calibrated
--   model lies on the diagonal. Not a metric of the tables (its grain has the bin): the report
--   runs it for the diagram (eval.calibration); it lives outside eval/metrics.
-- tasks: [choice, binary]
-- grain: [run_id, probe, split, bin]
-- requires: [../metrics/_calibration.sql]
-- plot: false
SELECT run_id, probe, split, bin, avg(correct) AS value, avg(confidence) AS confidence,
       count(*) AS n
FROM calibration_items
GROUP BY ALL
ORDER BY ALL
