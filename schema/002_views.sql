-- Analysis views. Documented in README.md, "Analysis in SQL".

-- Devices with their library versions and what they have measured.
CREATE VIEW device_overview AS
SELECT d.device_id, d.name, d.kind, d.host, d.uuid, d.threads, d.multiprocessors,
       d.compute_capability, d.memory_bytes, d.driver_version, d.runtime_version,
       d.library, d.library_version, d.agent_id, d.first_seen, d.last_seen,
       (SELECT count(*) FROM conv_results r WHERE r.device_id = d.device_id) AS conv_results,
       (SELECT count(*) FROM traces t WHERE t.device_id = d.device_id) AS traces
FROM devices d;

-- Conv configs flattened with a readable shape label.
CREATE VIEW conv_config_labels AS
SELECT config_id, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w,
       groups, dtype, layout,
       format('c%s %sx%s k%s %sx%s/%s p%s%s%s', c, h, w, k, r, s, stride_h, pad_h,
              CASE WHEN groups > 1 THEN ' g' || groups ELSE '' END,
              CASE WHEN dilation_h > 1 THEN ' d' || dilation_h ELSE '' END) AS label
FROM conv_configs;

-- Best (lowest median) measurement per device, config, batch, direction and
-- policy, across all the times it was measured, with how many there were.
CREATE VIEW best_conv_time AS
SELECT DISTINCT ON (r.device_id, r.config_id, r.batch, r.direction, r.policy)
       r.device_id, d.name AS device, r.config_id, r.batch, r.direction, r.policy,
       r.algo, r.median_ms, r.min_ms, r.max_ms, r.stddev_ms, r.repetitions,
       count(*) OVER (PARTITION BY r.device_id, r.config_id, r.batch, r.direction, r.policy)
           AS measurements,
       r.measured_at
FROM conv_results r
JOIN devices d USING (device_id)
ORDER BY r.device_id, r.config_id, r.batch, r.direction, r.policy, r.median_ms;

-- Latest measurement per device, config, batch, direction and policy: what
-- the predictor sums (a re-benchmark replaces an older one).
CREATE VIEW latest_conv_time AS
SELECT DISTINCT ON (r.device_id, r.config_id, r.batch, r.direction, r.policy)
       r.device_id, d.name AS device, r.config_id, r.batch, r.direction, r.policy,
       r.algo, r.median_ms, r.min_ms, r.max_ms, r.stddev_ms, r.repetitions, r.measured_at
FROM conv_results r
JOIN devices d USING (device_id)
ORDER BY r.device_id, r.config_id, r.batch, r.direction, r.policy, r.measured_at DESC NULLS LAST,
         r.result_id DESC;

-- Successful traces per device name, model and batch: the median of the
-- traces' medians, and the run-to-run spread (max - min) / median across
-- them together with the largest within-trace spread.
CREATE VIEW trace_summary AS
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
       max(t.started_at) AS last_started_at
FROM traces t
JOIN devices d USING (device_id)
WHERE t.status = 'ok'
GROUP BY d.name, t.model_id, t.batch, t.framework, t.dtype, t.policy;

-- Traces that did not complete, with why.
CREATE VIEW trace_failures AS
SELECT d.name AS device, t.model_id, t.batch, t.status, t.reason, t.started_at
FROM traces t
JOIN devices d USING (device_id)
WHERE t.status <> 'ok';

-- Per model: its conv configs with multiplicity, as the predictor sums them.
CREATE VIEW model_conv_usage AS
SELECT m.model_id, m.name AS model, mc.config_id, l.label, mc.multiplicity, mc.first_layer
FROM model_convs mc
JOIN models m USING (model_id)
JOIN conv_config_labels l USING (config_id);
