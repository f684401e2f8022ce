-- name: profile_layers
-- description: >-
--   Knowledge profile, linear probes per layer (kgprobe layers, docs/layers.md): per model and
--   probing probe, of the model's latest run, the layer and position whose probe has the best
--   dev accuracy (the lower layer, then the first position, on ties; test never chooses), and
--   there each test instance: whether the probe was right, whether the control probe was
--   right (Hewitt and Liang's control task), and chance (the share of the most frequent test
--   label).
-- tasks: [probing]
-- grain: [model, probe, instance_id]
-- plot: false
WITH latest AS (
    SELECT r.run_id, r.model,
           row_number() OVER (PARTITION BY r.model, r.probe
                              ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
    FROM runs r WHERE r.task = 'probing' AND r.status = 'done'),
best AS (
    SELECT p.run_id, p.layer, p.position, p.dev_accuracy,
           row_number() OVER (PARTITION BY p.run_id
                              ORDER BY p.dev_accuracy DESC, p.layer, p.position) AS k
    FROM layer_probes p WHERE NOT p.control),
chance AS (
    SELECT run_id, max(n) / sum(n) AS chance FROM (
        SELECT run_id, gold, count(DISTINCT instance_id)::DOUBLE AS n
        FROM layer_predictions WHERE NOT control GROUP BY run_id, gold)
    GROUP BY run_id)
SELECT l.model, p.probe, p.instance_id, b.layer, b.position, b.dev_accuracy,
       CASE WHEN p.gold = p.predicted THEN 1.0 ELSE 0.0 END AS value,
       CASE WHEN c.gold = c.predicted THEN 1.0 ELSE 0.0 END AS control_value,
       ch.chance
FROM latest l
JOIN best b ON b.run_id = l.run_id AND b.k = 1
JOIN layer_predictions p ON p.run_id = l.run_id AND p.layer = b.layer
     AND p.position = b.position AND NOT p.control
JOIN layer_predictions c ON c.run_id = l.run_id AND c.layer = b.layer
     AND c.position = b.position AND c.control AND c.instance_id = p.instance_id
JOIN chance ch ON ch.run_id = l.run_id
WHERE l.nth = 1
ORDER BY ALL
