-- name: pararel_shortcut_ceiling
-- description: >-
--   ParaRel's shortcut ceiling beside the model, on the same facts: per finished run of a
--   pararel/* probe, the facts it scored that fall in the held-out test part of the split by
--   subject (_shortcut_split.sql); `value`: the accuracy there of the rule of the shortcut
--   panel chosen on dev (rule, chosen_on; fitted on train, so no rule saw these subjects);
--   `model_accuracy`: the run's accuracy under the LAMA pattern (pattern 0) on the same facts;
--   `majority`: the paper's majority baseline on them (the relation's most frequent object over
--   all its facts, test labels included); best_value, best_rule: the best rule on these facts
--   (chosen on their labels, biased upward). All pooled over the n facts.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [_views.sql, _shortcut_split.sql, ../metrics/_shortcuts.sql]
WITH held_out AS (
  SELECT f.run_id, f.probe, f.split, avg(f.lama_correct) AS model_accuracy,
         avg(m.correct) AS majority, count(*) AS facts
  FROM pararel_facts f
  JOIN sc_instances i ON i.probe = f.probe AND i.instance_id = f.instance_id
    AND i.split = 'test'
  JOIN pararel_majority_facts m ON m.probe = f.probe AND m.split = f.split
    AND m.instance_id = f.instance_id
  GROUP BY ALL)
SELECT c.run_id, c.probe, c.split, c.value, c.rule, c.chosen_on, c.n, h.model_accuracy,
       h.majority, c.best_value, c.best_rule
FROM sc_run_ceiling c
JOIN held_out h USING (run_id, probe, split)
ORDER BY c.run_id, c.probe
