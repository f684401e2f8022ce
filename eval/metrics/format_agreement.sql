-- name: format_agreement
-- description: >-
--   Agreement of two readings of the same instances (a probe header's formats): ranked (the
--   gold candidate ranks first, choice; or the top-1 slot answer is
--   gold, relatum) and said (an accepted form is contained in the
--   generated answer under at least half the prompts, generate). The 2 x 2 table (both
--   right, ranked but not said, said but not ranked, both wrong) and Cohen's kappa (value)
--   with its 95 % interval: kappa = (po - pe) / (1 - pe) is a straight line in the observed
--   agreement po for the chance agreement pe, so the interval is the Wilson interval of po
--   (k = both right + both wrong out of n) taken through that line, clipped to kappa's range
--   [-1, 1] (the udf instance_ci, Wilson on 0/1 values). Cohen's (1960) large-sample standard
--   error sqrt(po (1 - po) / (n (1 - pe)^2)) is the Wald interval of po through the same line: it collapses to a point when the readings
--   agree on every instance (n = 4 gave [1, 1]) and passed 1 at kappa 0.70 on 53 instances;
--   Wilson's is never zero-width. Both treat pe as fixed. kappa is NULL when pe is 1.
-- tasks: [choice, relatum, generate]
-- grain: [model, probe, split]
-- requires: [_choice_ranks.sql, _generate_matches.sql, _format_pairs.sql]
-- plot: false
WITH counts AS (
    SELECT model, probe, split, any_value(choice_run) AS choice_run,
           any_value(generate_run) AS generate_run, count(*) AS n,
           count(*) FILTER (WHERE ranked AND said) AS both_right,
           count(*) FILTER (WHERE ranked AND NOT said) AS ranked_not_said,
           count(*) FILTER (WHERE NOT ranked AND said) AS said_not_ranked,
           count(*) FILTER (WHERE NOT ranked AND NOT said) AS both_wrong,
           -- the Wilson interval of po (every value 0 or 1: eval.intervals.instance_interval)
           instance_ci(list(CASE WHEN ranked = said THEN 1.0 ELSE 0.0 END)) AS po_ci
    FROM format_item_pairs
    GROUP BY model, probe, split
),
chance AS (
    SELECT *, (both_right + both_wrong) / n AS po,
           ((both_right + ranked_not_said) * (both_right + said_not_ranked)
            + (said_not_ranked + both_wrong) * (ranked_not_said + both_wrong)) / (n * n) AS pe
    FROM counts
),
kappa AS (
    SELECT *, CASE WHEN pe < 1 THEN (po - pe) / (1 - pe) END AS value,
           CASE WHEN pe < 1 THEN (po_ci[1] - pe) / (1 - pe) END AS low,
           CASE WHEN pe < 1 THEN (po_ci[2] - pe) / (1 - pe) END AS high
    FROM chance
)
SELECT model, probe, split, choice_run, generate_run, n, both_right, ranked_not_said,
       said_not_ranked, both_wrong, value, greatest(-1.0, low) AS ci_low,
       least(1.0, high) AS ci_high
FROM kappa
ORDER BY ALL
