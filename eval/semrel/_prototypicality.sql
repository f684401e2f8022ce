-- Per-probe prototypicality (Cao et al.), a support file run after _views.sql. It calls the
-- Python function list_edit_distance (eval/udf.py), which eval.sqlfile registers on the
-- connection; the plain DuckDB CLI does not have it, so this file (and the prototypicality
-- metric) runs only from Python.
--
-- For a model agent and a probe with human answers on which annotators agree (R < 1, see
-- semrel_probe_r): human = the human run's ranked list (unfiltered), k = its length, agent =
-- the model's filtered, re-ranked list cut to its top k;
-- p = 1/2 * [agent top-1 = human top-1] + 1/2 * (1 - d / (2k)), d = the edit distance between
-- the two lists as word sequences (insertion / deletion 1, substitution 2; at most 2k).
-- Humans are not compared with themselves.
CREATE OR REPLACE TEMP VIEW semrel_probe_p AS
WITH humans AS (
    SELECT l.probe, l.split, l.instance_id, l.prompt_id, l.answers AS human
    FROM semrel_lists l JOIN semrel_probe_r r USING (probe, instance_id, prompt_id)
    WHERE l.is_human AND r.r < 1 AND len(l.answers) > 0
),
scored AS (
    SELECT m.model, m.run_id, m.probe, m.relation, m.split, m.instance_id, m.prompt_id,
           len(h.human) AS k, coalesce(m.answers[1] = h.human[1], false) AS top1_match,
           list_edit_distance(m.answers[1:len(h.human)], h.human) AS d
    FROM semrel_lists m JOIN humans h USING (probe, split, instance_id, prompt_id)
    WHERE NOT m.is_human
)
SELECT *, 0.5 * top1_match::INTEGER + 0.5 * (1 - d / (2 * k)) AS p
FROM scored;
