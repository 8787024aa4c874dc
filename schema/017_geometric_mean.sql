-- A point's truth as the geometric mean of its traces (docs/fitting.md, "The truth: a geometric
-- mean").
--
-- A study traces every point once per round, and its rounds fall into sittings (runs hours or
-- days apart) whose levels differ by several percent while the traces inside one sitting do
-- not have heavy tails. The traces of a point are then a mixture of shifted lumps, and their
-- median sits between the lumps and jumps as rounds are added: its noise floor stopped
-- falling with more rounds, where the geometric mean's fell (docs/fitting.md has the figures).
-- The geometric mean is the mean of the log times, the centre the fit's relative errors are
-- measured around.
--
-- The fit's statistic gains `geomean`, its default: `geomean_ms` in the trace summaries, and
-- the halves' geometric means for the noise floor. `median_ms`, `p10_ms` and `min_ms` stay, for
-- `--stat median|p10|min`. Traces of 0 ms (none are stored as ok) are left out of the logs.

ALTER TABLE fits DROP CONSTRAINT fits_stat_check;
ALTER TABLE fits ADD CONSTRAINT fits_stat_check
    CHECK (stat IN ('geomean', 'median', 'p10', 'min'));
ALTER TABLE fits ALTER COLUMN stat SET DEFAULT 'geomean';

CREATE OR REPLACE VIEW trace_points AS
SELECT s.scope, d.name AS device, t.model_id, t.batch, t.framework, t.dtype, t.policy,
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
       percentile_cont(0.1) WITHIN GROUP (ORDER BY t.median_ms) AS p10_ms,
       coalesce(t.amp, '') AS amp,
       CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END
           AS library_key,
       t.settings_key,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms)
           FILTER (WHERE s.rank % 2 = 1) AS half_a_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms)
           FILTER (WHERE s.rank % 2 = 0) AS half_b_ms,
       exp(avg(ln(t.median_ms)) FILTER (WHERE t.median_ms > 0)) AS geomean_ms,
       exp(avg(ln(t.median_ms)) FILTER (WHERE t.median_ms > 0 AND s.rank % 2 = 1))
           AS half_a_geomean_ms,
       exp(avg(ln(t.median_ms)) FILTER (WHERE t.median_ms > 0 AND s.rank % 2 = 0))
           AS half_b_geomean_ms
FROM (SELECT 'all'::text AS scope, r.trace_id, r.rank_all AS rank FROM trace_ranks r
      UNION ALL
      SELECT 'quiet'::text, r.trace_id, r.rank_same_load FROM trace_ranks r WHERE NOT r.disturbed) s
JOIN traces t USING (trace_id)
JOIN devices d USING (device_id)
GROUP BY s.scope, d.name, t.model_id, t.batch, t.framework, t.dtype, t.policy,
         coalesce(t.amp, ''),
         CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END,
         t.settings_key;

CREATE OR REPLACE VIEW trace_summary_all AS
SELECT device, model_id, batch, framework, dtype, policy, traces, median_ms, min_ms, max_ms,
       spread_between_traces, spread_within_trace, peak_memory_bytes, last_started_at, p10_ms,
       amp, library_key, settings_key, half_a_ms, half_b_ms, geomean_ms, half_a_geomean_ms,
       half_b_geomean_ms
FROM trace_points WHERE scope = 'all';

CREATE OR REPLACE VIEW trace_summary AS
SELECT device, model_id, batch, framework, dtype, policy, traces, median_ms, min_ms, max_ms,
       spread_between_traces, spread_within_trace, peak_memory_bytes, last_started_at, p10_ms,
       amp, library_key, settings_key, half_a_ms, half_b_ms, geomean_ms, half_a_geomean_ms,
       half_b_geomean_ms
FROM trace_points WHERE scope = 'quiet';

-- A prediction against the traces taken after it: measured by the same statistic.
CREATE OR REPLACE VIEW prediction_vs_trace AS
SELECT p.prediction_id, p.predicted_at, p.model_id, p.model_name, p.model_sha256, p.device,
       p.batch, p.framework, p.dtype, p.fit_id,
       p.iteration_ms AS predicted_ms, p.lo_ms, p.hi_ms,
       m.traces, m.measured_ms, m.first_traced_at, m.last_traced_at,
       100 * (p.iteration_ms - m.measured_ms) / m.measured_ms AS error_pct,
       m.measured_ms BETWEEN p.lo_ms AND p.hi_ms AS inside_interval
FROM predictions p
LEFT JOIN LATERAL (
    SELECT count(*) AS traces,
           exp(avg(ln(t.median_ms)) FILTER (WHERE t.median_ms > 0)) AS measured_ms,
           min(coalesce(t.started_at, t.stored_at)) AS first_traced_at,
           max(coalesce(t.started_at, t.stored_at)) AS last_traced_at
    FROM traces t
    JOIN devices d USING (device_id)
    WHERE d.name = p.device AND t.model_id = p.model_id AND t.batch = p.batch
      AND t.framework = p.framework AND t.dtype = p.dtype AND t.status = 'ok'
      AND coalesce(t.started_at, t.stored_at) > p.predicted_at
    HAVING count(*) > 0
) m ON true;

COMMENT ON COLUMN prediction_vs_trace.measured_ms IS 'Geometric mean of their iteration times (ms; each trace''s median), as a fit''s truth.';
COMMENT ON COLUMN fits.stat IS 'Statistic of repeated measurements, on both sides: geomean (the default since 017), median, p10 or min.';
COMMENT ON COLUMN trace_summary.geomean_ms IS 'Geometric mean of the traces'' median iteration times (ms): the point''s truth by default.';
COMMENT ON COLUMN trace_summary.half_a_geomean_ms IS 'Geometric mean of the odd-numbered traces in time order (NULL with none): with half_b_geomean_ms, the geometric-mean truth''s own noise.';
COMMENT ON COLUMN trace_summary.half_b_geomean_ms IS 'Geometric mean of the even-numbered traces in time order (NULL with fewer than two).';
COMMENT ON COLUMN trace_summary_all.geomean_ms IS 'As trace_summary.geomean_ms, among every successful trace.';
COMMENT ON COLUMN trace_summary_all.half_a_geomean_ms IS 'As trace_summary.half_a_geomean_ms, among every successful trace.';
COMMENT ON COLUMN trace_summary_all.half_b_geomean_ms IS 'As trace_summary.half_b_geomean_ms, among every successful trace.';
