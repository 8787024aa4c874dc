-- The host-phase canary's reading with every benchmark, and results that supersede an earlier
-- one (docs/conv-benchmarks.md, "Slow phases of the host, and the canary").
--
-- An agent reads a short fixed kernel (its canary) before and after each measured block; a
-- block whose reading was well over the run's fastest was taken in a slow phase of the host
-- and is measured again. At the end of its plan the agent checks every item against the
-- whole run's fastest reading: an item measured before the run first saw a fast phase was
-- slow too, but its result has already gone out unmarked. The agent measures it again and
-- the new result names the earlier one by its measured_at (Load.supersedes_us). Results stay
-- as they were stored (the writer only inserts); the look-up of a measurement's benchmarks
-- (TC_SQL_CONV_REPEATS, TC_SQL_MATMUL_REPEATS) counts a superseded result as disturbed: used
-- only where the measurement has no quiet one.

ALTER TABLE conv_results
    ADD COLUMN canary_ms double precision,
    ADD COLUMN supersedes_at timestamptz;
ALTER TABLE matmul_results
    ADD COLUMN canary_ms double precision,
    ADD COLUMN supersedes_at timestamptz;

-- The look-up reads the results that supersede one once per statement: a partial index of
-- those few keeps that read off the million others.
CREATE INDEX conv_results_supersedes_idx
    ON conv_results (device_id, config_id, batch, direction, policy, supersedes_at)
    WHERE supersedes_at IS NOT NULL;
CREATE INDEX matmul_results_supersedes_idx
    ON matmul_results (device_id, config_id, batch, direction, policy, supersedes_at)
    WHERE supersedes_at IS NOT NULL;

COMMENT ON COLUMN conv_results.canary_ms IS 'The slowest reading of the device''s canary around the measured block, ms; NULL none (no canary, or an older agent).';
COMMENT ON COLUMN conv_results.supersedes_at IS 'This result measures again, at the end of the agent''s plan, the result of the same device, config, batch, direction and policy measured at this time, which was taken in a slow phase of the host or while the machine was busy: that one counts as disturbed. NULL none.';
COMMENT ON COLUMN matmul_results.canary_ms IS 'The slowest reading of the device''s canary around the measured block, ms; NULL none.';
COMMENT ON COLUMN matmul_results.supersedes_at IS 'As conv_results.supersedes_at: the result of the same matmul measurement taken at this time counts as disturbed.';

-- measurement_load counts a superseded benchmark as disturbed, as the fit does, lists the
-- matmul benchmarks too, and says how many results measured an earlier one again. Both
-- kinds of benchmark are read as one list, so that the rule is written once.
CREATE OR REPLACE VIEW measurement_load AS
WITH bench AS (
    SELECT 'conv benchmark' AS kind, device_id, config_id, batch, direction, policy,
           measured_at, disturbed, remeasured, load_others_pct, load_steal_pct, supersedes_at
    FROM conv_results
    UNION ALL
    SELECT 'matmul benchmark', device_id, config_id, batch, direction, policy, measured_at,
           disturbed, remeasured, load_others_pct, load_steal_pct, supersedes_at
    FROM matmul_results)
SELECT d.name AS device, b.kind, count(*) AS measured,
       count(*) FILTER (WHERE b.disturbed OR coalesce((b.kind, b.device_id, b.config_id,
           b.batch, b.direction, b.policy, b.measured_at) IN (SELECT s.kind, s.device_id,
           s.config_id, s.batch, s.direction, s.policy, s.supersedes_at FROM bench s
           WHERE s.supersedes_at IS NOT NULL), false)) AS disturbed,
       count(*) FILTER (WHERE b.remeasured > 0) AS remeasured,
       count(b.load_others_pct) AS with_load,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY b.load_others_pct) AS median_others_pct,
       max(b.load_others_pct) AS max_others_pct,
       max(b.load_steal_pct) AS max_steal_pct,
       count(b.supersedes_at) AS superseding
FROM bench b JOIN devices d USING (device_id)
GROUP BY d.name, b.kind
UNION ALL
SELECT d.name, 'trace', count(*), count(*) FILTER (WHERE t.disturbed),
       count(*) FILTER (WHERE t.remeasured > 0), count(t.load_others_pct),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.load_others_pct),
       max(t.load_others_pct), max(t.load_steal_pct), 0
FROM traces t JOIN devices d USING (device_id)
GROUP BY d.name;

COMMENT ON VIEW measurement_load IS 'Per device and kind (conv benchmark, matmul benchmark, trace): how many were measured, disturbed (a benchmark another result supersedes counted in), measured again for load, the load they were taken under, and how many benchmarks superseded an earlier one.';
