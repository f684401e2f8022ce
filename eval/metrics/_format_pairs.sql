-- One instance's two readings, ranked and said, for every model and probe that has a
-- finished choice or relatum run and a finished generate run (the latest of each; a probe
-- header's formats, docs/generate.md): ranked = the gold candidate ranks first under the mean
-- of its scores over the prompts (choice, what choice_accuracy counts), or the top-1 answer
-- at the slot is a gold answer under at least half the prompts (relatum); said = an accepted form is
-- contained in the generated answer under at least half of the prompts the instance was
-- asked in. Support file of format_agreement and format_disagreements.
CREATE OR REPLACE TEMP VIEW format_item_pairs AS
WITH latest AS (
    SELECT run_id, model, probe, task,
           row_number() OVER (PARTITION BY model, probe, task
                              ORDER BY finished_at DESC NULLS LAST, run_id DESC) AS nth
    FROM runs WHERE status = 'done' AND task IN ('choice', 'relatum', 'generate')
),
pairs AS (
    SELECT c.model, c.probe, c.run_id AS choice_run, g.run_id AS generate_run
    FROM latest c JOIN latest g USING (model, probe)
    WHERE c.task IN ('choice', 'relatum') AND g.task = 'generate' AND c.nth = 1
      AND g.nth = 1
),
ranks AS (                        -- choice: the rank under the mean over prompts
    SELECT run_id, probe, split, instance_id, coalesce(rank = 1, false) AS ranked
    FROM choice_item_ranks WHERE prompt_id = -1
    UNION ALL                     -- relatum: the top-1 answer is gold under half the prompts
    SELECT r.run_id, r.probe, r.split, r.instance_id,
           avg(CASE WHEN list_contains(i.gold, r.token) THEN 1.0 ELSE 0.0 END) >= 0.5
    FROM responses r JOIN runs u ON u.run_id = r.run_id
    JOIN instances i ON i.probe = r.probe AND i.split = r.split
                    AND i.instance_id = r.instance_id
    WHERE u.task = 'relatum' AND r.rank = 1
    GROUP BY r.run_id, r.probe, r.split, r.instance_id
),
said AS (
    SELECT run_id, probe, split, instance_id,
           avg(CASE WHEN contains THEN 1.0 ELSE 0.0 END) >= 0.5 AS said
    FROM generate_item_matches
    GROUP BY ALL
)
SELECT p.model, p.probe, r.split, r.instance_id, p.choice_run, p.generate_run,
       r.ranked, s.said
FROM pairs p
JOIN ranks r ON r.run_id = p.choice_run
JOIN said s ON s.run_id = p.generate_run AND s.probe = r.probe AND s.split = r.split
           AND s.instance_id = r.instance_id
