-- Accuracy: the statistic a fit takes of repeated measurements, its
-- prediction interval calibrated on held-out predictions, and the p10 of a
-- point's traces (docs/fitting.md).

-- How repeated measurements became times, on both sides of the fit: the
-- median, 10th percentile or minimum of a conv's most recent benchmarks and
-- of a point's traces. Fits made before this column existed used a conv's
-- latest benchmark and the median of the traces.
ALTER TABLE fits ADD COLUMN stat text NOT NULL DEFAULT 'median'
    CHECK (stat IN ('median', 'p10', 'min'));
-- The 95 % prediction interval as factors on the predicted time (lo < 1 <
-- hi): quantiles of measured / predicted over leave-one-CNN-out predictions.
-- NULL: too few points; predict then uses the regression's variance.
ALTER TABLE fits ADD COLUMN interval_lo double precision;
ALTER TABLE fits ADD COLUMN interval_hi double precision;

-- The nested held-out prediction's 95 % interval, from the intervals of the
-- fold that predicted it.
ALTER TABLE fit_points ADD COLUMN held_out_lo_ms double precision;
ALTER TABLE fit_points ADD COLUMN held_out_hi_ms double precision;

-- The 10th percentile of the traces' medians joins the summary (new last
-- column; the others are as before).
CREATE OR REPLACE VIEW trace_summary AS
SELECT d.name AS device, t.model_id, t.batch, t.framework, t.dtype, t.policy,
       count(*) AS traces,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms) AS median_ms,
       min(t.median_ms) AS min_ms,
       max(t.median_ms) AS max_ms,
       CASE WHEN count(*) > 1
            THEN (max(t.median_ms) - min(t.median_ms))
                 / percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms)
       END AS spread_between_traces,
       max(t.spread) AS spread_within_trace,
       max(t.peak_memory_bytes) AS peak_memory_bytes,
       max(t.started_at) AS last_started_at,
       percentile_cont(0.1) WITHIN GROUP (ORDER BY t.median_ms) AS p10_ms
FROM traces t
JOIN devices d USING (device_id)
WHERE t.status = 'ok'
GROUP BY d.name, t.model_id, t.batch, t.framework, t.dtype, t.policy;
