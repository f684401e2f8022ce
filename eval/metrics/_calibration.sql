-- The model's probabilities over each instance's answers, for the calibration metrics
-- (brier_score, expected_calibration_error, and ../calibration/reliability_bins.sql;
-- docs/report.md).
-- An answer is a candidate's label (the candidate itself for choice; the class of a binary
-- label word, compared case-insensitively). Its score is the MEAN of its scores over the
-- probe's prompts (as choice_accuracy and binary_accuracy score it), an answer with several
-- candidates (binary label words) takes its best candidate's score, and the probabilities are
-- the softmax of those scores over the instance's answers. confidence: the top answer's
-- probability; correct: the best gold answer scores strictly higher than every other answer
-- (a tie is wrong), the outcome the accuracy metrics count; brier: sum over the answers of
-- (p - y)^2 with y = 1 for a gold answer (Brier 1950). Instances without gold are left out;
-- only finished choice and binary runs.
CREATE OR REPLACE TEMP VIEW calibration_answers AS
WITH per_candidate AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.candidate,
           lower(coalesce(s.label, s.candidate)) AS answer, avg(s.score) AS score
    FROM scores s JOIN runs r ON r.run_id = s.run_id
    WHERE r.task IN ('choice', 'binary') AND r.status = 'done' AND s.score IS NOT NULL
    GROUP BY ALL
),
per_answer AS (
    SELECT run_id, probe, split, instance_id, answer, max(score) AS score
    FROM per_candidate GROUP BY ALL
),
shifted AS (                      -- exp(score - the instance's best score): no overflow
    SELECT *, exp(score - max(score) OVER (PARTITION BY run_id, probe, split, instance_id))
           AS e
    FROM per_answer
)
SELECT a.run_id, a.probe, a.split, a.instance_id, a.answer,
       a.e / sum(a.e) OVER w AS p,
       list_contains(list_transform(i.gold, lambda g: lower(g)), a.answer) AS is_gold,
       a.score
FROM shifted a
JOIN instances i ON i.probe = a.probe AND i.split = a.split AND i.instance_id = a.instance_id
WHERE len(i.gold) > 0
WINDOW w AS (PARTITION BY a.run_id, a.probe, a.split, a.instance_id);

CREATE OR REPLACE TEMP VIEW calibration_items AS
SELECT run_id, probe, split, instance_id,
       max(p) AS confidence,
       coalesce(max(score) FILTER (WHERE is_gold)
                > coalesce(max(score) FILTER (WHERE NOT is_gold), '-inf'::DOUBLE), false)
           ::INTEGER::DOUBLE AS correct,
       sum(power(p - is_gold::INTEGER, 2)) AS brier,
       -- the bin of the confidence: ((m - 1) / 10, m / 10], m = 1..10 (Guo et al. 2017)
       greatest(1, least(10, ceil(max(p) * 10)))::INTEGER AS bin
FROM calibration_answers
GROUP BY ALL;

-- 1,000 bootstrap resamples of each (run, probe, split)'s instances, with replacement,
-- seeded (position j of resample b draws the instance at hash(b, j, group) mod n), for the
-- percentile intervals of the calibration metrics.
CREATE OR REPLACE TEMP VIEW calibration_resamples AS
WITH numbered AS (
    SELECT *, row_number() OVER (PARTITION BY run_id, probe, split ORDER BY instance_id) - 1
           AS pos,
           count(*) OVER (PARTITION BY run_id, probe, split) AS n
    FROM calibration_items
),
groups AS (SELECT DISTINCT run_id, probe, split, n FROM numbered),
draws AS (
    SELECT g.run_id, g.probe, g.split, b.b,
           (hash(b.b, j.j, g.run_id, g.probe, g.split, 'kgprobe-calibration') % g.n)::BIGINT
               AS pos
    FROM groups g CROSS JOIN range(1000) b(b)
    JOIN range((SELECT max(n) FROM groups)) j(j) ON j.j < g.n
)
SELECT d.b, x.* EXCLUDE (pos)
FROM draws d
JOIN numbered x ON x.run_id = d.run_id AND x.probe = d.probe AND x.split = d.split
    AND x.pos = d.pos;
