-- Test accuracy of every linear probe per layer (kgprobe layers): one row per (run, layer,
-- position, probe or control), with n and the number right; the chance row per run is the
-- share of the most frequent test label (the best constant guess). Reads layer_predictions,
-- layer_probes and runs.
WITH acc AS (
    SELECT run_id, probe, layer, position, control, count(*) AS n,
           sum(CASE WHEN gold = predicted THEN 1 ELSE 0 END) AS correct
    FROM layer_predictions
    GROUP BY run_id, probe, layer, position, control
), chance AS (
    SELECT run_id, max(k) / sum(k) AS chance FROM (
        SELECT run_id, gold, count(DISTINCT instance_id)::DOUBLE AS k FROM layer_predictions
        WHERE NOT control
        GROUP BY run_id, gold
    ) GROUP BY run_id
)
SELECT r.model, a.probe, a.run_id, a.layer, a.position, a.control, a.n, a.correct,
       a.correct / a.n::DOUBLE AS accuracy, p.dev_accuracy, p.c, c.chance
FROM acc a
JOIN runs r USING (run_id)
JOIN layer_probes p USING (run_id, layer, position, control)
JOIN chance c USING (run_id)
ORDER BY r.model, a.probe, a.position, a.layer, a.control
