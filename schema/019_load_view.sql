-- measurement_load in time linear in the results: 018 counted a superseded benchmark as
-- disturbed with `(row) IN (SELECT ... FROM bench ...)` inside a FILTER, which PostgreSQL
-- plans as a subplan over the CTE run once per result (not hashed): quadratic. (The look-up
-- fit and predict use, TC_SQL_SUPERSEDED, probes the results table itself, where the partial
-- index on supersedes_at keeps each probe to the few superseding rows: 71 ms over the same
-- 105 000 conv results.) On a study of 105 000 conv and 11 000 matmul results (118
-- superseding: 110 conv, 8 matmul) the view took over 11 minutes, and
-- `aggregator status` and bench/accuracy.sh's report read it. The same rule as a left join on
-- the distinct superseded keys takes a quarter of a second there; the counts are the same
-- (a NULL in a key matched nothing in either form).
CREATE OR REPLACE VIEW measurement_load AS
WITH bench AS (
    SELECT 'conv benchmark' AS kind, device_id, config_id, batch, direction, policy,
           measured_at, disturbed, remeasured, load_others_pct, load_steal_pct, supersedes_at
    FROM conv_results
    UNION ALL
    SELECT 'matmul benchmark', device_id, config_id, batch, direction, policy, measured_at,
           disturbed, remeasured, load_others_pct, load_steal_pct, supersedes_at
    FROM matmul_results),
superseded AS (
    SELECT DISTINCT kind, device_id, config_id, batch, direction, policy,
           supersedes_at AS measured_at
    FROM bench WHERE supersedes_at IS NOT NULL)
SELECT d.name AS device, b.kind, count(*) AS measured,
       count(*) FILTER (WHERE b.disturbed OR s.measured_at IS NOT NULL) AS disturbed,
       count(*) FILTER (WHERE b.remeasured > 0) AS remeasured,
       count(b.load_others_pct) AS with_load,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY b.load_others_pct) AS median_others_pct,
       max(b.load_others_pct) AS max_others_pct,
       max(b.load_steal_pct) AS max_steal_pct,
       count(b.supersedes_at) AS superseding
FROM bench b JOIN devices d USING (device_id)
     LEFT JOIN superseded s ON s.kind = b.kind AND s.device_id = b.device_id
          AND s.config_id = b.config_id AND s.batch = b.batch AND s.direction = b.direction
          AND s.policy = b.policy AND s.measured_at = b.measured_at
GROUP BY d.name, b.kind
UNION ALL
SELECT d.name, 'trace', count(*), count(*) FILTER (WHERE t.disturbed),
       count(*) FILTER (WHERE t.remeasured > 0), count(t.load_others_pct),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.load_others_pct),
       max(t.load_others_pct), max(t.load_steal_pct), 0
FROM traces t JOIN devices d USING (device_id)
GROUP BY d.name;

COMMENT ON VIEW measurement_load IS 'Per device and kind (conv benchmark, matmul benchmark, trace): how many were measured, disturbed (a benchmark another result supersedes counted in), measured again for load, the load they were taken under, and how many benchmarks superseded an earlier one.';
