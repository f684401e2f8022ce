-- Per relatum run, instance and prompt: whether a gold relatum is the top answer (hit_at_1)
-- and whether one is among the top 10 (hit_at_10). Answers and gold are compared lower-cased;
-- an inflected form of a gold answer in gold_forms (relatum params inflections) counts as that
-- answer. Instances without gold are left out; only finished runs (status done).
-- Support file of relatum_precision_at_1, relatum_hits_at_10 and their items files, so the
-- metrics and their per-prompt items count the same hits.
CREATE OR REPLACE TEMP VIEW relatum_item_hits AS
WITH matched AS (
    SELECT r.run_id, r.probe, r.split, r.instance_id, r.prompt_id, r.rank,
           (list_contains(list_transform(i.gold, lambda g: lower(g)), lower(r.token))
            OR EXISTS (SELECT 1 FROM gold_forms f WHERE f.probe = r.probe
                       AND f.split = r.split AND f.instance_id = r.instance_id
                       AND f.form = lower(r.token))) AS gold
    FROM responses r
    JOIN runs USING (run_id)
    JOIN instances i ON i.probe = r.probe AND i.split = r.split
                    AND i.instance_id = r.instance_id
    WHERE runs.task = 'relatum' AND runs.status = 'done' AND len(i.gold) > 0
)
SELECT run_id, probe, split, instance_id, prompt_id,
       max(CASE WHEN rank = 1 AND gold THEN 1.0 ELSE 0.0 END) AS hit_at_1,
       max(CASE WHEN rank <= 10 AND gold THEN 1.0 ELSE 0.0 END) AS hit_at_10
FROM matched
GROUP BY ALL;
