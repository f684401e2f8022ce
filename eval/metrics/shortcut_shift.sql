-- name: shortcut_shift
-- description: >-
--   Did the split move a cue? Every rule of the shortcut panel (fitted on train only, no
--   model) with its accuracy on train, dev and test side by side (train in-sample), and for
--   label probes the label-shuffle null of its dev and test accuracy: the split's labels
--   shuffled among its instances 200 times (seeded), the rule's predictions kept (they read no
--   label of that split). null_median: the rule's median accuracy under the shuffles; band:
--   the 95th percentile over the shuffles of the largest distance of any rule of the probe
--   from its own null median (a band that allows for the choice among the rules). moved
--   (test_moved, dev_moved): the split's accuracy lies outside null_median +- band on the other
--   side of the null median from train's: what the rule learned on train points the other way
--   on that split. value: test minus train. Nothing is chosen on test labels. docs/shortcuts.md.
-- tasks: [subsumption, binary, choice, relatum, records]
-- grain: [probe, rule]
-- plot: false
-- requires: [_shortcuts.sql]
WITH items AS (
    SELECT probe, split, instance_id, label,
           row_number() OVER (PARTITION BY probe, split ORDER BY instance_id) AS pos
    FROM sc_items
    WHERE kind = 'label' AND split IN ('dev', 'test')
),
shuffled AS (
    SELECT it.probe, it.split, k.perm, it.label,
           row_number() OVER (PARTITION BY it.probe, it.split, k.perm
                              ORDER BY md5(it.instance_id || ':' || k.perm::VARCHAR || ':42'),
                                       it.instance_id) AS pos
    FROM items it CROSS JOIN range(1, 201) AS k(perm)
),
null_acc AS (
    SELECT it.probe, it.split, sh.perm, p.rule,
           avg((p.prediction = sh.label)::DOUBLE) AS value
    FROM items it
    JOIN shuffled sh USING (probe, split, pos)
    JOIN sc_label_predictions p USING (probe, split, instance_id)
    GROUP BY ALL
),
medians AS (
    SELECT probe, split, rule, quantile_cont(value, 0.5) AS null_median
    FROM null_acc GROUP BY ALL
),
band AS (
    SELECT probe, split, quantile_cont(far, 0.95) AS band
    FROM (SELECT a.probe, a.split, a.perm, max(abs(a.value - m.null_median)) AS far
          FROM null_acc a JOIN medians m USING (probe, split, rule)
          GROUP BY ALL)
    GROUP BY ALL
),
nulls AS (
    SELECT m.probe, m.split, m.rule, m.null_median, b.band
    FROM medians m JOIN band b USING (probe, split)
),
side AS (
    SELECT probe, rule, any_value(measure) AS measure,
           max(value) FILTER (WHERE split = 'train') AS train,
           max(value) FILTER (WHERE split = 'dev') AS dev,
           max(value) FILTER (WHERE split = 'test') AS test,
           max(n) FILTER (WHERE split = 'train') AS n_train,
           max(n) FILTER (WHERE split = 'dev') AS n_dev,
           max(n) FILTER (WHERE split = 'test') AS n_test
    FROM sc_panel
    GROUP BY ALL
)
SELECT s.probe, s.rule, s.measure, s.train, s.dev, s.test, s.test - s.train AS value,
       s.n_train, s.n_dev, s.n_test,
       t.null_median AS test_null_median, t.band AS test_band,
       abs(s.test - t.null_median) > t.band
           AND (s.test - t.null_median) * (s.train - t.null_median) < 0 AS test_moved,
       d.null_median AS dev_null_median, d.band AS dev_band,
       abs(s.dev - d.null_median) > d.band
           AND (s.dev - d.null_median) * (s.train - d.null_median) < 0 AS dev_moved
FROM side s
LEFT JOIN nulls t ON t.probe = s.probe AND t.rule = s.rule AND t.split = 'test'
LEFT JOIN nulls d ON d.probe = s.probe AND d.rule = s.rule AND d.split = 'dev'
ORDER BY s.probe, s.rule
