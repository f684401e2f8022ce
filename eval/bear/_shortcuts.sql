-- BEAR's shortcut panel (support file of the bear_shortcut_* metrics and the profile): model-free
-- rules that pick one answer of the relation's answer space from the exported instances alone.
-- BEAR has no train split, so every rule that learns from labels is fitted leave-one-out: an
-- instance's prediction uses the gold answers of the OTHER instances of its relation only.
-- Rules (a tie goes to the earlier answer in the answer space, as lm-pub-quiz breaks ties):
--   majority_loo     the answer that is most often gold among the relation's other instances;
--   longest          the answer with the most characters;
--   shortest         the answer with the fewest characters;
--   subject_overlap  the answer sharing most lower-cased word tokens (letters and digits) with
--                    the subject label; ties by majority_loo's counts, then answer order.
-- The ceiling (bear_shortcut_choice): the relations are split into two folds by a hash of their
-- code (MD5(relation) starts with 0-7 or 8-f); a relation's instances are scored by the rule
-- that is best on the OTHER fold (ties by rule name; longest when the other fold holds no
-- relation). So no label of a relation, and no label
-- of its own fold, picks its rule: the ceiling is a rule chosen without the labels it is scored
-- on (2-fold cross-fitting over relations), not the best rule picked after seeing them. (A
-- leave-one-out choice, per instance or per relation, is biased low where rules are right about
-- equally often: leaving out an item that one rule gets right tips the choice to another.)
-- What the panel finds on BEAR: its answers are balanced (in every relation each answer is
-- gold equally often), so a rule that picks the same answer for every instance of a relation
-- (longest, shortest) is right exactly at chance, and majority_loo on no instance (leaving the
-- instance out makes its own answer the least frequent).
CREATE OR REPLACE TEMP VIEW bear_answer_rows AS
WITH inst AS (
  SELECT probe, split, instance_id, fields->>'relation' AS relation, target AS subject,
         candidates, list_position(candidates, gold[1]) - 1 AS gold_idx
  FROM instances WHERE probe LIKE 'bear/%'),
ans AS (
  SELECT probe, split, instance_id, relation, subject, gold_idx,
         unnest(candidates) AS answer, unnest(range(len(candidates))) AS answer_idx
  FROM inst),
golds AS (
  SELECT probe, split, relation, gold_idx AS answer_idx, count(*) AS c
  FROM inst GROUP BY ALL)
SELECT a.*,
       coalesce(g.c, 0) - CASE WHEN a.answer_idx = a.gold_idx THEN 1 ELSE 0 END AS loo_count,
       len(list_intersect(
         list_distinct(regexp_extract_all(lower(a.answer), '[\p{L}\p{N}]+')),
         list_distinct(regexp_extract_all(lower(coalesce(a.subject, '')), '[\p{L}\p{N}]+'))))
         AS overlap
FROM ans a LEFT JOIN golds g USING (probe, split, relation, answer_idx);
-- bear_shortcut_items: one row per (instance, rule): the rule's pick and whether it is gold.
CREATE OR REPLACE TEMP VIEW bear_shortcut_items AS
WITH picks AS (
  SELECT probe, split, instance_id, any_value(relation) AS relation,
         any_value(gold_idx) AS gold_idx,
         first(answer_idx ORDER BY loo_count DESC, answer_idx) AS majority_loo,
         first(answer_idx ORDER BY length(answer) DESC, answer_idx) AS longest,
         first(answer_idx ORDER BY length(answer), answer_idx) AS shortest,
         first(answer_idx ORDER BY overlap DESC, loo_count DESC, answer_idx) AS subject_overlap
  FROM bear_answer_rows GROUP BY probe, split, instance_id)
UNPIVOT picks ON majority_loo, longest, shortest, subject_overlap
  INTO NAME rule VALUE pred_idx;
CREATE OR REPLACE TEMP VIEW bear_shortcut_values AS
SELECT probe, split, instance_id, relation, rule, pred_idx, gold_idx,
       CASE WHEN pred_idx = gold_idx THEN 1.0 ELSE 0.0 END AS value
FROM bear_shortcut_items;
-- bear_shortcut_choice: per instance the rule chosen on the relation's other instances and
-- its value on this instance (the ceiling's item).
CREATE OR REPLACE TEMP VIEW bear_shortcut_choice AS
WITH per_rel AS (
  SELECT probe, split, relation, rule, sum(value) AS right_rel, count(*) AS n_rel,
         CASE WHEN left(md5(relation), 1) < '8' THEN 0 ELSE 1 END AS fold
  FROM bear_shortcut_values GROUP BY ALL),
per_fold AS (
  SELECT probe, split, fold, rule, sum(right_rel) / sum(n_rel) AS acc
  FROM per_rel GROUP BY ALL),
chosen AS (
  SELECT r.probe, r.split, r.relation,
         coalesce(first(f.rule ORDER BY f.acc DESC, f.rule), 'longest') AS rule
  FROM (SELECT DISTINCT probe, split, relation, fold FROM per_rel) r
  LEFT JOIN per_fold f ON f.probe = r.probe AND f.split = r.split AND f.fold <> r.fold
  GROUP BY ALL)
SELECT v.probe, v.split, v.instance_id, v.relation, v.rule, v.value
FROM bear_shortcut_values v JOIN chosen c USING (probe, split, relation, rule);
