-- One instance's two readings, ranked and said, for every model and probe that has a
-- finished choice run and a finished generate run (the latest of each; a probe header's
-- formats, docs/generate.md): ranked = the gold candidate ranks first under the mean of its
-- scores over the prompts (what choice_accuracy counts); said = an accepted form is
-- contained in the generated answer under at least half of the prompts the instance was
-- asked in. Support file of format_agreement and format_disagreements.
CREATE OR REPLACE TEMP VIEW format_item_pairs AS
WITH latest AS (
    SELECT run_id, model, probe, task,
           row_number() OVER (PARTITION BY model, probe, task
                              ORDER BY finished_at DESC NULLS LAST, run_id DESC) AS nth
    FROM runs WHERE status = 'done' AND task IN ('choice', 'generate')
),
pairs AS (
    SELECT c.model, c.probe, c.run_id AS choice_run, g.run_id AS generate_run
    FROM latest c JOIN latest g USING (model, probe)
    WHERE c.task = 'choice' AND g.task = 'generate' AND c.nth = 1 AND g.nth = 1
),
said AS (
    SELECT run_id, probe, split, instance_id,
           avg(CASE WHEN contains THEN 1.0 ELSE 0.0 END) >= 0.5 AS said
    FROM generate_item_matches
    GROUP BY ALL
)
SELECT p.model, p.probe, r.split, r.instance_id, p.choice_run, p.generate_run,
       coalesce(r.rank = 1, false) AS ranked, s.said
FROM pairs p
JOIN choice_item_ranks r ON r.run_id = p.choice_run AND r.prompt_id = -1
JOIN said s ON s.run_id = p.generate_run AND s.probe = r.probe AND s.split = r.split
           AND s.instance_id = r.instance_id
