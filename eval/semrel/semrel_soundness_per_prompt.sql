-- name: semrel_soundness_per_prompt
-- description: >-
--   Soundness S and completeness C under each prompt alone (Cao et al., Appendix F: "we
--   calculate metrics as if each prompt is the only one in the set"): per agent, relation
--   probe and prompt, the mean over the words with a non-empty relatum set of that prompt's
--   Precision@1 (value, eq. 11) and Recall@k (completeness, eq. 13); n = words. The spread of
--   S across a relation's prompts says how much a figure depends on the wording.
-- tasks: [relatum]
-- grain: [model, probe, prompt_id]
-- requires: [_views.sql]
SELECT model, probe, prompt_id, avg(s_hit) AS value, avg(c) AS completeness, count(*) AS n
FROM semrel_probe_sc
GROUP BY ALL
ORDER BY ALL
