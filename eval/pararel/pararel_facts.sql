-- name: pararel_facts
-- description: >-
--   Per finished pararel/* run and fact: its relation, right under pattern 0 (lama_correct),
--   the share of its patterns right, right under every pattern (consistent_correct), one wrong
--   answer under every pattern (consistent_wrong), the share of its graph edges that agree
--   (consistency; NULL without an edge that passes the a/an filter) and the majority
--   baseline's answer right or not: the rows the report's and the profile's intervals over
--   facts are drawn from (value: consistent_correct).
-- tasks: [choice]
-- grain: [run_id, probe, split, instance_id]
-- plot: false
-- requires: [_views.sql]
SELECT f.run_id, f.probe, f.split, f.instance_id, f.relation, f.fact_index, f.gold,
       f.consistent_correct AS value,
       f.lama_correct, f.pattern_accuracy, f.consistent_correct, f.consistent_wrong,
       f.patterns, f.consistency, f.pairs, m.correct AS majority_correct
FROM pararel_facts f
LEFT JOIN pararel_majority_facts m USING (probe, split, instance_id)
ORDER BY ALL
