-- predict's look-up of a conv benchmark (TC_SQL_CONV_STAT in
-- aggregator/store/store_internal.h) reads the latest five results of one
-- (device, config, batch, direction, policy). With the time order and the
-- values it reads in the index, they come from an index-only scan, newest
-- first, without visiting the table's wide rows (their samples). The index
-- starts with the columns of conv_results_lookup_idx, so it replaces it for
-- every other reader too.
CREATE INDEX conv_results_latest_idx ON conv_results
    (device_id, config_id, batch, direction, policy, measured_at DESC NULLS LAST, result_id DESC)
    INCLUDE (median_ms, stddev_ms, library_version);
DROP INDEX conv_results_lookup_idx;
