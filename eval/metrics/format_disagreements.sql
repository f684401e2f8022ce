-- name: format_disagreements
-- description: >-
--   The instances whose two readings disagree (see format_agreement): "ranked first but
--   not said" (the gold candidate ranks first, no generated answer holds an accepted form
--   under half the prompts) and "said but not ranked first", with the first prompt's
--   generated answer and the accepted forms; value: 1 for "ranked first but not said",
--   0 for "said but not ranked first".
-- tasks: [choice, relatum, generate]
-- grain: [model, probe, split, instance_id]
-- requires: [_choice_ranks.sql, _generate_matches.sql, _format_pairs.sql]
-- plot: false
SELECT p.model, p.probe, p.split, p.instance_id,
       CASE WHEN p.ranked THEN 'ranked first but not said'
            ELSE 'said but not ranked first' END AS kind,
       CASE WHEN p.ranked THEN 1.0 ELSE 0.0 END AS value,
       g.prompt, g.generation, g.answers, p.choice_run, p.generate_run
FROM format_item_pairs p
JOIN generations g ON g.run_id = p.generate_run AND g.probe = p.probe AND g.split = p.split
                  AND g.instance_id = p.instance_id
WHERE p.ranked <> p.said
QUALIFY row_number() OVER (PARTITION BY p.model, p.probe, p.split, p.instance_id
                           ORDER BY g.prompt_id) = 1
ORDER BY ALL
