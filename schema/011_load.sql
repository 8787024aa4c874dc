-- The machine's load while each measurement ran (agent/devices/hostload.h), and which ones
-- were taken while other work ran.
--
-- A conv benchmark or a training trace taken while other processes use the machine measures
-- their work too. The agent records, per benchmark and per trace, the share of the machine's
-- CPU capacity other processes used meanwhile (its own process tree left out), the share the
-- hypervisor stole, the other processes on the GPU, its quiet threshold and how often it
-- measured again because of load; a measurement still over the threshold is `disturbed`.
-- Results of older agents carry none of it (NULL; disturbed false).
--
-- The fit leaves disturbed traces out (trace_summary counts quiet ones only;
-- trace_summary_all every successful trace, for `aggregator fit --include-disturbed`), and a
-- disturbed benchmark counts only where its measurement has no quiet one.

ALTER TABLE conv_results
    ADD COLUMN load_others_pct double precision,
    ADD COLUMN load_steal_pct double precision,
    ADD COLUMN gpu_other_processes integer,
    ADD COLUMN load_threshold_pct double precision,
    ADD COLUMN remeasured integer,
    ADD COLUMN disturbed boolean NOT NULL DEFAULT false;

ALTER TABLE traces
    ADD COLUMN load_others_pct double precision,
    ADD COLUMN load_steal_pct double precision,
    ADD COLUMN gpu_other_processes integer,
    ADD COLUMN load_threshold_pct double precision,
    ADD COLUMN remeasured integer,
    ADD COLUMN disturbed boolean NOT NULL DEFAULT false;

-- Every successful trace, disturbed or not (as trace_summary was).
CREATE VIEW trace_summary_all AS
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
       t.settings_key
FROM traces t
JOIN devices d USING (device_id)
WHERE t.status = 'ok'
GROUP BY d.name, t.model_id, t.batch, t.framework, t.dtype, t.policy, coalesce(t.amp, ''),
         CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END,
         t.settings_key;

-- The quiet ones: what the fit uses by default.
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
       t.settings_key
FROM traces t
JOIN devices d USING (device_id)
WHERE t.status = 'ok' AND NOT t.disturbed
GROUP BY d.name, t.model_id, t.batch, t.framework, t.dtype, t.policy, coalesce(t.amp, ''),
         CASE WHEN d.kind = 'cuda' THEN coalesce(t.library_version, '') ELSE '' END,
         t.settings_key;

-- Per device: how many benchmarks and traces were measured, how many of them while the
-- machine was busy, and the load they were taken under.
CREATE VIEW measurement_load AS
SELECT d.name AS device, 'conv benchmark' AS kind, count(*) AS measured,
       count(*) FILTER (WHERE r.disturbed) AS disturbed,
       count(*) FILTER (WHERE r.remeasured > 0) AS remeasured,
       count(r.load_others_pct) AS with_load,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY r.load_others_pct) AS median_others_pct,
       max(r.load_others_pct) AS max_others_pct,
       max(r.load_steal_pct) AS max_steal_pct
FROM conv_results r JOIN devices d USING (device_id)
GROUP BY d.name
UNION ALL
SELECT d.name, 'trace', count(*), count(*) FILTER (WHERE t.disturbed),
       count(*) FILTER (WHERE t.remeasured > 0), count(t.load_others_pct),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.load_others_pct),
       max(t.load_others_pct), max(t.load_steal_pct)
FROM traces t JOIN devices d USING (device_id)
GROUP BY d.name;

COMMENT ON COLUMN conv_results.load_others_pct IS 'Share of the machine''s CPU capacity other processes used while this was measured (the agent''s process tree left out), percent; NULL from older agents.';
COMMENT ON COLUMN conv_results.load_steal_pct IS 'Share of the machine''s CPU time the hypervisor stole meanwhile, percent.';
COMMENT ON COLUMN conv_results.gpu_other_processes IS 'Other processes on the GPU meanwhile (NVML); 0 none or unknown.';
COMMENT ON COLUMN conv_results.load_threshold_pct IS 'The agent''s quiet threshold (100: its guard was off).';
COMMENT ON COLUMN conv_results.remeasured IS 'Times the agent measured it again because of load.';
COMMENT ON COLUMN conv_results.disturbed IS 'Other processes used more than the quiet threshold even after re-measuring: the fit and predict use it only where the measurement has no quiet benchmark.';
COMMENT ON COLUMN traces.load_others_pct IS 'Share of the machine''s CPU capacity other processes used over the repeats kept, percent; NULL from older agents.';
COMMENT ON COLUMN traces.load_steal_pct IS 'Share of the machine''s CPU time the hypervisor stole meanwhile, percent.';
COMMENT ON COLUMN traces.gpu_other_processes IS 'Other processes on the GPU meanwhile (NVML); 0 none or unknown.';
COMMENT ON COLUMN traces.load_threshold_pct IS 'The agent''s quiet threshold (100: its guard was off).';
COMMENT ON COLUMN traces.remeasured IS 'Repeats the agent ran again because of load.';
COMMENT ON COLUMN traces.disturbed IS 'A repeat kept was over the quiet threshold: left out of fits unless --include-disturbed.';
COMMENT ON VIEW trace_summary IS 'Successful traces taken on a quiet machine, per device class, model, batch, framework, dtype and policy, with their run-to-run spread.';
COMMENT ON VIEW trace_summary_all IS 'As trace_summary, with the disturbed traces too.';
COMMENT ON VIEW measurement_load IS 'Per device and kind (conv benchmark, trace): how many were measured, disturbed, measured again for load, and the load they were taken under.';
