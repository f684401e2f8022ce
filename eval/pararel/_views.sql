-- Shared temporary views of the ParaRel metrics (not a metric: the metric files name it in
-- their `requires` header; in the DuckDB CLI `.read eval/pararel/_views.sql` first).
-- Definitions follow the authors' code (yanaiela/pararel, pararel/consistency/
-- encode_consistency_probe.py; docs/pararel.md): one fact is one instance, prompt i is pattern i
-- of its relation's graph (pattern 0: LAMA's), the candidates are the relation's distinct
-- objects (--use_targets) in first-fact order.
--
-- pararel_answers: per (run, fact, pattern) of a finished pararel/* run the answer: the
-- best-scored candidate (a tie to the earlier candidate), the gold object, the relation, the
-- pattern and `skip`: the authors' filter_a_an_vowel_mismatch (the word before the one holding
-- the slot is "a" and the gold object starts with a vowel, or "an" and it does not; a slot in
-- the first word is never skipped).
CREATE OR REPLACE TEMP VIEW pararel_answers AS
WITH s AS (
  SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id, s.candidate, s.score,
         list_position(i.candidates, s.candidate) AS cpos
  FROM scores s JOIN runs r ON r.run_id = s.run_id
    JOIN instances i ON i.probe = s.probe AND i.split = s.split AND i.instance_id = s.instance_id
  WHERE r.probe LIKE 'pararel/%' AND r.status = 'done'),
best AS (
  SELECT run_id, probe, split, instance_id, prompt_id,
         first(candidate ORDER BY score DESC, cpos) AS pred
  FROM s GROUP BY ALL),
t AS (
  SELECT b.*, i.fields->>'relation' AS relation, i.gold[1] AS gold,
         CAST(i.fields->>'index' AS INTEGER) AS fact_index,
         from_json(i.fields->'template', '["VARCHAR"]')[
           list_position(from_json(i.fields->'pindex', '["INTEGER"]'), b.prompt_id)] AS pattern
  FROM best b
  JOIN instances i ON i.probe = b.probe AND i.split = b.split AND i.instance_id = b.instance_id)
SELECT *, CASE WHEN pred = gold THEN 1.0 ELSE 0.0 END AS correct,
       (regexp_matches(pattern, '(^| )a [^ ]*\[V\]') AND regexp_matches(lower(gold), '^[aeiou]'))
       OR (regexp_matches(pattern, '(^| )an [^ ]*\[V\]')
           AND NOT regexp_matches(lower(gold), '^[aeiou]')) AS skip
FROM t;
-- pararel_edges: each exported fact's graph edges (from pattern, to pattern, edge type:
-- syntactic, lexical, both, none or determiner; kg/pararel.py).
CREATE OR REPLACE TEMP VIEW pararel_edges AS
WITH e AS (
  SELECT probe, split, instance_id,
         unnest(coalesce(from_json(fields->'edge', '["VARCHAR"]'), [])) AS edge
  FROM instances WHERE probe LIKE 'pararel/%')
SELECT probe, split, instance_id, CAST(split_part(edge, ' ', 1) AS INTEGER) AS from_id,
       CAST(split_part(edge, ' ', 2) AS INTEGER) AS to_id, split_part(edge, ' ', 3) AS edge_type
FROM e;
-- pararel_pairs: per run, fact and edge whose two patterns both pass the a/an filter,
-- `agree` = 1 when the two patterns give the fact the same answer (the authors' `success`).
CREATE OR REPLACE TEMP VIEW pararel_pairs AS
SELECT a.run_id, a.probe, a.split, a.instance_id, a.relation, e.from_id, e.to_id, e.edge_type,
       CASE WHEN a.pred = b.pred THEN 1.0 ELSE 0.0 END AS agree
FROM pararel_answers a
JOIN pararel_edges e ON e.probe = a.probe AND e.split = a.split
  AND e.instance_id = a.instance_id AND e.from_id = a.prompt_id
JOIN pararel_answers b ON b.run_id = a.run_id AND b.probe = a.probe AND b.split = a.split
  AND b.instance_id = a.instance_id AND b.prompt_id = e.to_id
WHERE NOT a.skip AND NOT b.skip;
-- pararel_facts: per run and fact: right under pattern 0 (the LAMA pattern, the authors'
-- lama_acc), the share of patterns right, right under every pattern (lama_group_acc, no a/an
-- filter), one answer under every pattern but a wrong one (group-unacc), and the share of its
-- edges that agree (NULL without edges).
CREATE OR REPLACE TEMP VIEW pararel_facts AS
WITH f AS (
  SELECT run_id, probe, split, instance_id, any_value(relation) AS relation,
         any_value(fact_index) AS fact_index, any_value(gold) AS gold,
         max(correct) FILTER (WHERE prompt_id = 0) AS lama_correct,
         avg(correct) AS pattern_accuracy, min(correct) AS consistent_correct,
         CASE WHEN count(DISTINCT pred) = 1 AND min(correct) = 0 THEN 1.0 ELSE 0.0 END
           AS consistent_wrong,
         count(*) AS patterns
  FROM pararel_answers GROUP BY run_id, probe, split, instance_id),
p AS (
  SELECT run_id, probe, split, instance_id, avg(agree) AS consistency, count(*) AS pairs
  FROM pararel_pairs GROUP BY ALL)
SELECT f.*, p.consistency, coalesce(p.pairs, 0) AS pairs
FROM f LEFT JOIN p USING (run_id, probe, split, instance_id);
-- pararel_majority_facts: the paper's majority baseline per probe and fact: every pattern
-- answers the relation's most frequent object over all its facts (the authors'
-- create_majority_baseline: Counter(objs).most_common()[0][0], a tie to the object met first;
-- the loader's kgp:majorityAnswer, exported as the field `majority`). Its consistency is 1 by
-- construction; `correct`: the fact's gold is that object.
CREATE OR REPLACE TEMP VIEW pararel_majority_facts AS
SELECT probe, split, instance_id, fields->>'relation' AS relation,
       fields->'majority'->>0 AS majority,
       CASE WHEN gold[1] = fields->'majority'->>0 THEN 1.0 ELSE 0.0 END AS correct
FROM instances WHERE probe LIKE 'pararel/%';
