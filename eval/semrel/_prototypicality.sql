-- Per-probe prototypicality (Cao et al. eqs. 20-23), a support file run after _views.sql. It
-- calls the Python function list_edit_distance (eval/udf.py), which eval.sqlfile registers.
--
-- The probe set (section 6.2): HYP, HOL, ANT and SYN only; probes whose human R = 1 removed;
-- probes whose human answers include a word outside the shared vocabulary removed.
-- human = the human run's ranked list, k = its length, agent = the model's list cut to k;
-- p = 1/2 [agent top-1 = human top-1] + 1/2 (1 - d / 2k), d = edit distance (insertion and
-- deletion 1, substitution 2). Humans are not compared with themselves.
CREATE OR REPLACE TEMP VIEW semrel_proto_probes AS
WITH outside AS (
    SELECT DISTINCT probe, instance_id, prompt_id FROM semrel_human_tokens
    WHERE NOT semrel_keep(response)
)
SELECT r.probe, r.relation, r.instance_id, r.prompt_id, r.word
FROM semrel_probe_r r
ANTI JOIN outside o USING (probe, instance_id, prompt_id)
WHERE r.relation IN ('HYP', 'HOL', 'ANT', 'SYN') AND r.r < 1 - 1e-9 AND r.in_targets;

CREATE OR REPLACE TEMP VIEW semrel_probe_p AS
WITH humans AS (
    SELECT l.probe, l.split, l.instance_id, l.prompt_id, l.answers AS human
    FROM semrel_probes l JOIN semrel_proto_probes r USING (probe, instance_id, prompt_id)
    WHERE l.is_human AND len(l.answers) > 0
),
scored AS (
    SELECT m.model, m.run_id, m.probe, m.relation, m.word, m.split, m.instance_id,
           m.prompt_id, len(h.human) AS k,
           coalesce(m.answers[1] = h.human[1], false) AS top1_match,
           list_edit_distance(m.answers[1:len(h.human)], h.human) AS d
    FROM semrel_probes m JOIN humans h USING (probe, split, instance_id, prompt_id)
    WHERE NOT m.is_human
)
SELECT *, 0.5 * top1_match::INTEGER + 0.5 * (1 - d / (2 * k)) AS p
FROM scored;
