-- name: bear_accuracy_template
-- description: >-
--   BEAR accuracy per relation and template (prompt_id = lm-pub-quiz's template_index): the
--   share of the relation's instances whose best-scored answer under that template is gold
--   (lm-pub-quiz: evaluate_relation with template_index=[t]).
-- tasks: [choice]
-- grain: [run_id, probe, split, relation, prompt_id]
-- requires: [_views.sql]
SELECT run_id, probe, split, relation, prompt_id, avg(correct) AS value, count(*) AS n
FROM bear_rows
GROUP BY ALL
ORDER BY ALL
