-- Shared temporary views and macros of the BEAR metrics (not a metric: the metric files name it
-- in their `requires` header; in the DuckDB CLI `.read eval/bear/_views.sql` first).
-- Definitions follow lm-pub-quiz 0.3.3 (the reference implementation of Wiland, Ploner and
-- Akbik 2024; docs/bear.md quotes the code): one "row" is one instance under one template
-- (lm-pub-quiz's instance table, `template_index` = kgprobe's prompt_id); its answers are the
-- relation's whole answer space, in its order (instances.candidates keeps that order).
--
-- bear_scores: every statement score of a finished bear/* run, with the answer's position in
-- the answer space (answer_idx, 0-based), the gold answer's (gold_idx), the answer-space size,
-- the summed score (lm-pub-quiz's reduction "sum", its default) and the mean per scored token
-- (its reduction "mean": score / n_tokens, the tokens the score sums over).
CREATE OR REPLACE TEMP VIEW bear_scores AS
SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id,
       i.fields->>'relation' AS relation,
       list_position(i.candidates, s.candidate) - 1 AS answer_idx,
       list_position(i.candidates, i.gold[1]) - 1 AS gold_idx,
       len(i.candidates) AS n_answers,
       s.score AS score_sum,
       s.score / greatest(s.n_tokens, 1) AS score_mean
FROM scores s JOIN runs r ON r.run_id = s.run_id
  JOIN instances i ON i.probe = s.probe AND i.split = s.split AND i.instance_id = s.instance_id
WHERE r.probe LIKE 'bear/%' AND r.status = 'done';
-- bear_rows_by(reduction): one row per (run, instance, template) under the reduction 'sum' or
-- 'mean' (any other value: 'sum'). pred_idx: the best-scored answer, a tie going to the
-- earliest answer in the answer space (lm-pub-quiz: `pll_scores.index(max(pll_scores))`);
-- correct: pred_idx = gold_idx; gold_rank: the gold answer's rank in lm-pub-quiz's ranking
-- (`sort_scores`: a stable sort by score, descending, so ties keep answer-space order);
-- p_top, p_second, entropy_bits, brier_sum: from the softmax of the row's scores (lm-pub-quiz's
-- SoftmaxBase, here computed with the maximum subtracted first, which gives the same numbers
-- where lm-pub-quiz's np.exp does not underflow); brier_sum = sum over answers of
-- (p - [answer is gold])^2.
CREATE OR REPLACE TEMP MACRO bear_rows_by(reduction) AS TABLE
WITH sc AS (
  SELECT *, CASE WHEN reduction = 'mean' THEN score_mean ELSE score_sum END AS score
  FROM bear_scores),
w AS (
  SELECT *,
         max(CASE WHEN answer_idx = gold_idx THEN score END) OVER g AS gold_score,
         exp(score - max(score) OVER g) AS e
  FROM sc WINDOW g AS (PARTITION BY run_id, probe, split, instance_id, prompt_id))
SELECT run_id, probe, split, instance_id, prompt_id,
       any_value(relation) AS relation, any_value(gold_idx) AS gold_idx,
       any_value(n_answers) AS n_answers, count(*) AS n_scored,
       first(answer_idx ORDER BY score DESC, answer_idx) AS pred_idx,
       CASE WHEN first(answer_idx ORDER BY score DESC, answer_idx) = any_value(gold_idx)
            THEN 1.0 ELSE 0.0 END AS correct,
       1 + count(*) FILTER (WHERE score > gold_score
                            OR (score = gold_score AND answer_idx < gold_idx)) AS gold_rank,
       max(e) / sum(e) AS p_top,
       coalesce(list_sort(list(e), 'DESC')[2], 0) / sum(e) AS p_second,
       (ln(sum(e)) - sum(e * ln(e)) / sum(e)) / ln(2) AS entropy_bits,
       sum(e * e) / (sum(e) * sum(e))
         - 2 * coalesce(max(CASE WHEN answer_idx = gold_idx THEN e END), 0) / sum(e) + 1
         AS brier_sum
FROM w
GROUP BY run_id, probe, split, instance_id, prompt_id;
-- bear_rows: the rows under lm-pub-quiz's default reduction (sum).
CREATE OR REPLACE TEMP VIEW bear_rows AS FROM bear_rows_by('sum');
-- bear_instance_domains: each exported BEAR instance's relation and domains
-- (relation_info.json; a relation may have several).
CREATE OR REPLACE TEMP VIEW bear_instance_domains AS
SELECT probe, split, instance_id, fields->>'relation' AS relation,
       unnest(from_json(fields->'domain', '["VARCHAR"]')) AS domain
FROM instances
WHERE probe LIKE 'bear/%';
-- bear_relation_domains: per probe, each relation's domains and their count.
CREATE OR REPLACE TEMP VIEW bear_relation_domains AS
SELECT DISTINCT probe, relation, domain,
       count(*) OVER (PARTITION BY probe, split, relation, instance_id) AS n_domains
FROM bear_instance_domains;
-- bear_instance_values: per (run, instance) the share of its templates right (the instance's
-- value in bear_accuracy, which is the mean of these over instances), chance (1 / its
-- answer-space size), its relation and domains.
CREATE OR REPLACE TEMP VIEW bear_instance_values AS
SELECT b.run_id, b.probe, b.split, b.instance_id, any_value(b.relation) AS relation,
       avg(b.correct) AS value, count(*) AS templates, 1.0 / any_value(b.n_answers) AS chance,
       any_value(from_json(i.fields->'domain', '["VARCHAR"]')) AS domains
FROM bear_rows b
JOIN instances i ON i.probe = b.probe AND i.split = b.split AND i.instance_id = b.instance_id
GROUP BY b.run_id, b.probe, b.split, b.instance_id;
