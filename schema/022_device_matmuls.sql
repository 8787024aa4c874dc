-- device_overview gains each device's matmul benchmarks (a new last column), as
-- `aggregator status` lists them beside the conv benchmarks.
CREATE OR REPLACE VIEW device_overview AS
SELECT d.device_id, d.name, d.kind, d.host, d.uuid, d.threads, d.multiprocessors,
       d.compute_capability, d.memory_bytes, d.driver_version, d.runtime_version,
       d.library, d.library_version, d.agent_id, d.first_seen, d.last_seen,
       (SELECT count(*) FROM conv_results r WHERE r.device_id = d.device_id) AS conv_results,
       (SELECT count(*) FROM traces t WHERE t.device_id = d.device_id) AS traces,
       d.import_id, i.source AS imported_from, d.original_name,
       (SELECT count(*) FROM matmul_results r WHERE r.device_id = d.device_id) AS matmul_results
FROM devices d
LEFT JOIN imports i USING (import_id);

COMMENT ON COLUMN device_overview.matmul_results IS 'Matmul benchmarks stored for the device.';
