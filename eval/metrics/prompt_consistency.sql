-- name: prompt_consistency
-- description: >-
--   Consistency across prompts, for any choice probe with two or more prompts (BEAR's three
--   templates, ParaRel's patterns, a user's own): per instance, the share of its prompt pairs
--   (each unordered pair once) whose best-scored candidates are the same (a tie to the earlier
--   candidate); the mean over instances with two or more prompts scored. Says nothing of
--   whether the answer is right (see choice_accuracy). Only finished runs (status done).
--   n: the instances with two or more prompts scored; pairs: their prompt pairs. The 95 %
--   interval (ci_low, ci_high, ci_method) is over instances, since the pairs of one instance
--   are not independent: each instance's share is its one value, and where every share is 0
--   or 1 (two prompts) the Wilson interval of that share of instances, else the seeded
--   percentile bootstrap over instances (each resampled whole with its share: the cluster
--   bootstrap, instances as clusters), eval.intervals.instance_interval via the udf
--   instance_ci.
-- tasks: [choice]
-- grain: [run_id, probe, split]
WITH s AS (
  SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id, s.candidate, s.score,
         list_position(i.candidates, s.candidate) AS cpos
  FROM scores s JOIN runs r ON r.run_id = s.run_id
    JOIN instances i ON i.probe = s.probe AND i.split = s.split AND i.instance_id = s.instance_id
  WHERE r.task = 'choice' AND r.status = 'done'),
a AS (
  SELECT run_id, probe, split, instance_id, prompt_id,
         first(candidate ORDER BY score DESC, cpos, candidate) AS answer
  FROM s GROUP BY ALL),
p AS (
  SELECT x.run_id, x.probe, x.split, x.instance_id,
         avg(CASE WHEN x.answer = y.answer THEN 1.0 ELSE 0.0 END) AS share, count(*) AS pairs
  FROM a x JOIN a y ON y.run_id = x.run_id AND y.probe = x.probe AND y.split = x.split
    AND y.instance_id = x.instance_id AND y.prompt_id > x.prompt_id
  GROUP BY ALL)
SELECT run_id, probe, split, avg(share) AS value, count(*) AS n, sum(pairs) AS pairs,
       instance_ci(list(share ORDER BY instance_id))[1] AS ci_low,
       instance_ci(list(share ORDER BY instance_id))[2] AS ci_high,
       instance_ci_method(list(share ORDER BY instance_id)) AS ci_method
FROM p GROUP BY ALL
ORDER BY ALL
