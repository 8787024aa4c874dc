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
-- them and among the quiet ones; both summaries take their halves from it.

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

CREATE OR REPLACE VIEW trace_summary_all AS
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
       percentile_cont(0.1) WITHIN GROUP (ORDER BY t.median_ms) AS p10_ms,
       coalesce(t.amp, '') AS amp,
       CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END
           AS library_key,
       t.settings_key,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms)
           FILTER (WHERE r.rank_all % 2 = 1) AS half_a_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms)
           FILTER (WHERE r.rank_all % 2 = 0) AS half_b_ms
FROM traces t
JOIN devices d USING (device_id)
JOIN trace_ranks r USING (trace_id)
WHERE t.status = 'ok'
GROUP BY d.name, t.model_id, t.batch, t.framework, t.dtype, t.policy, coalesce(t.amp, ''),
         CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END,
         t.settings_key;

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
       percentile_cont(0.1) WITHIN GROUP (ORDER BY t.median_ms) AS p10_ms,
       coalesce(t.amp, '') AS amp,
       CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END
           AS library_key,
       t.settings_key,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms)
           FILTER (WHERE r.rank_same_load % 2 = 1) AS half_a_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms)
           FILTER (WHERE r.rank_same_load % 2 = 0) AS half_b_ms
FROM traces t
JOIN devices d USING (device_id)
JOIN trace_ranks r USING (trace_id)
WHERE t.status = 'ok' AND NOT t.disturbed
GROUP BY d.name, t.model_id, t.batch, t.framework, t.dtype, t.policy, coalesce(t.amp, ''),
         CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END,
         t.settings_key;

COMMENT ON VIEW trace_ranks IS 'Each successful trace with its number within its point in time order: among all (rank_all) and among those taken under the same load (rank_same_load: the quiet ones among themselves).';
COMMENT ON COLUMN trace_summary.half_a_ms IS 'Median of the odd-numbered traces in time order (NULL with none): with half_b_ms, the truth''s own noise.';
COMMENT ON COLUMN trace_summary.half_b_ms IS 'Median of the even-numbered traces in time order (NULL with fewer than two).';
COMMENT ON COLUMN trace_summary_all.half_a_ms IS 'As trace_summary.half_a_ms, among every successful trace.';
COMMENT ON COLUMN trace_summary_all.half_b_ms IS 'As trace_summary.half_b_ms, among every successful trace.';
