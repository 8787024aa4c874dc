-- The matmul benchmarks in SQL as the conv ones are (002, 007): a readable label per config,
-- the newest benchmark per device, config, batch, direction and policy, and each model's
-- matmuls with what its training step runs. README.md's "Analysis in SQL" reads them.

-- The label is tc_matmul_config_label's (common/ops/tc_matmul.c) for a key (no mini-batch):
-- "Nx50x3072 k768 tB weight +bias" is a Linear on N rows of 50 tokens, "12N 49x32 k49" twelve
-- products per sample of a batched matmul. Labels are formatted once per config, as
-- conv_config_labels' (020).
CREATE VIEW matmul_config_labels AS
WITH labelled AS MATERIALIZED (
    SELECT config_id, batch, m, n, k, minibatch_in, trans_a, trans_b, weight, bias, dtype,
           CASE WHEN minibatch_in = 2 THEN CASE WHEN batch > 1 THEN batch || 'N ' ELSE 'N ' END
                WHEN batch > 1 THEN batch || ' '
                ELSE '' END
           || CASE WHEN minibatch_in = 1 THEN CASE WHEN m > 1 THEN 'Nx' || m ELSE 'N' END
                   ELSE m::text END
           || 'x' || n || ' k' || k
           || CASE WHEN trans_a THEN ' tA' ELSE '' END
           || CASE WHEN trans_b THEN ' tB' ELSE '' END
           || CASE WHEN weight THEN ' weight' ELSE '' END
           || CASE WHEN bias THEN ' +bias' ELSE '' END
           || CASE WHEN dtype <> 'fp32' THEN ' ' || dtype ELSE '' END AS label
    FROM matmul_configs)
SELECT config_id, batch, m, n, k, minibatch_in, trans_a, trans_b, weight, bias, dtype, label
FROM labelled;

-- Newest measurement per device, config, batch, direction and policy, as latest_conv_time.
CREATE VIEW latest_matmul_time AS
SELECT DISTINCT ON (r.device_id, r.config_id, r.batch, r.direction, r.policy)
       r.device_id, d.name AS device, r.config_id, r.batch, r.direction, r.policy,
       r.algo, r.route, r.median_ms, r.min_ms, r.max_ms, r.stddev_ms, r.repetitions,
       r.measured_at
FROM matmul_results r
JOIN devices d USING (device_id)
ORDER BY r.device_id, r.config_id, r.batch, r.direction, r.policy, r.measured_at DESC NULLS LAST,
         r.result_id DESC;

-- Per model: its matmul configs with multiplicity and the gradients its step computes
-- (tc_matmul_step_directions: fwd always, bwd_data where A needs a gradient, bwd_filter where
-- B does).
CREATE VIEW model_matmul_usage AS
SELECT m.model_id, m.name AS model, mm.config_id, l.label, mm.multiplicity, mm.grad_a,
       mm.grad_b
FROM model_matmuls mm
JOIN models m USING (model_id)
JOIN matmul_config_labels l USING (config_id);

COMMENT ON VIEW matmul_config_labels IS 'Matmul configs with a readable label, e.g. Nx50x3072 k768 tB weight +bias.';
COMMENT ON COLUMN matmul_config_labels.label IS '[COUNT][N ]ROWSxCOLS kK: N where the mini-batch enters (before the rows of a Linear, after the count of a batched matmul), then tA/tB for a transposed operand, weight, +bias, and the dtype where not fp32.';
COMMENT ON VIEW latest_matmul_time IS 'Newest matmul benchmark per device, config, batch, direction and policy.';
COMMENT ON VIEW model_matmul_usage IS 'Each model''s matmul configs with multiplicity and the gradients its step computes (grad_a: bwd_data, grad_b: bwd_filter; fwd always).';
