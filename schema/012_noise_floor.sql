-- How far a point's own measured time can be trusted, from the data: the noise floor.
--
-- A point's truth is the statistic of its repeated traces. Split them into two halves in the
-- order they were taken (odd- and even-numbered), and the two halves' medians differ by the
-- truth's own noise: the median of all the traces is off by about half that difference
-- (twice the traces, half the variance of the difference's share). The fit reads half_a_ms
-- and half_b_ms; `aggregator validate` reports, next to each error, the noise floor
-- |a - b| / (2 x truth): the error a perfect model would still show against these truths.
--
-- trace_ranks numbers each successful trace within its point in time order, among all of
-- them and among those taken under the same load; trace_points aggregates both scopes at
-- once, and trace_summary (quiet) and trace_summary_all (all) read it.

CREATE VIEW trace_ranks AS
SELECT t.trace_id, d.name AS device, t.model_id, t.batch, t.framework, t.dtype, t.policy,
       coalesce(t.amp, '') AS amp,
       CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END
           AS library_key,
       t.settings_key, t.median_ms, t.disturbed, t.started_at,
       row_number() OVER (PARTITION BY d.name, t.model_id, t.batch, t.framework, t.dtype,
                                       t.policy, coalesce(t.amp, ''),
                                       CASE WHEN d.kind = 'cuda'
                                            THEN coalesce(t.library_version, '') ELSE '' END,
                                       t.settings_key
                          ORDER BY t.started_at, t.trace_id) AS rank_all,
       row_number() OVER (PARTITION BY d.name, t.model_id, t.batch, t.framework, t.dtype,
                                       t.policy, coalesce(t.amp, ''),
                                       CASE WHEN d.kind = 'cuda'
                                            THEN coalesce(t.library_version, '') ELSE '' END,
                                       t.settings_key, t.disturbed
                          ORDER BY t.started_at, t.trace_id) AS rank_same_load
FROM traces t
JOIN devices d USING (device_id)
WHERE t.status = 'ok';

-- Both summaries from one aggregation: every successful trace (scope 'all', numbered among all
-- of its point's) and the quiet ones (scope 'quiet', numbered among the quiet ones).
CREATE VIEW trace_points AS
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
           FILTER (WHERE s.rank % 2 = 0) AS half_b_ms
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
       amp, library_key, settings_key, half_a_ms, half_b_ms
FROM trace_points WHERE scope = 'all';

CREATE OR REPLACE VIEW trace_summary AS
SELECT device, model_id, batch, framework, dtype, policy, traces, median_ms, min_ms, max_ms,
       spread_between_traces, spread_within_trace, peak_memory_bytes, last_started_at, p10_ms,
       amp, library_key, settings_key, half_a_ms, half_b_ms
FROM trace_points WHERE scope = 'quiet';

COMMENT ON VIEW trace_points IS 'Successful traces per point (device class, model, batch, framework, dtype, policy, AMP, library, settings): scope all, or quiet (taken while the machine was quiet); trace_summary and trace_summary_all read it.';
COMMENT ON VIEW trace_ranks IS 'Each successful trace with its number within its point in time order: among all (rank_all) and among those taken under the same load (rank_same_load: the quiet ones among themselves).';
COMMENT ON COLUMN trace_summary.half_a_ms IS 'Median of the odd-numbered traces in time order (NULL with none): with half_b_ms, the truth''s own noise.';
COMMENT ON COLUMN trace_summary.half_b_ms IS 'Median of the even-numbered traces in time order (NULL with fewer than two).';
COMMENT ON COLUMN trace_summary_all.half_a_ms IS 'As trace_summary.half_a_ms, among every successful trace.';
COMMENT ON COLUMN trace_summary_all.half_b_ms IS 'As trace_summary.half_b_ms, among every successful trace.';
