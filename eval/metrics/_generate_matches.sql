-- Every generated answer of a finished generate run, matched against its accepted forms
-- (generations.answers: the gold values, then the aliases) by the rules of docs/generate.md
-- (eval.answers, registered by eval.udf): exact match after SQuAD's normalisation, the form
-- contained in the answer as whole words, the best token F1 over the forms, and "not
-- attempted" (no form contained; empty or a refusal). One row per (run, instance, prompt).
-- Rows whose answers list is empty are left out (nothing to match). Support file of the
-- generate_* metrics and their items files, so they all match the same way.
CREATE OR REPLACE TEMP VIEW generate_item_matches AS
SELECT g.run_id, g.probe, g.split, g.instance_id, g.prompt_id,
       list_bool_or([answer_normalize(g.generation) = answer_normalize(f)
                     AND answer_normalize(f) <> '' FOR f IN g.answers]) AS exact,
       list_bool_or([answer_contains(g.generation, f) FOR f IN g.answers]) AS contains,
       list_max([answer_f1(g.generation, f) FOR f IN g.answers]) AS f1,
       answer_not_attempted(g.generation, g.answers) AS not_attempted
FROM generations g JOIN runs r USING (run_id)
WHERE r.task = 'generate' AND r.status = 'done' AND len(g.answers) > 0
