-- Matmul benchmarks, the second benchmarked op kind (docs/matmul-benchmarks.md), in tables of
-- their own beside the convs': a matmul config is keyed by other fields than a conv's, and the
-- conv tables' references, views and look-ups stay as they are, with every conv row kept.
-- The columns of a matmul result are a conv result's, less what only a conv has (algorithm
-- candidates, workspace), so that one reading serves both kinds.

-- A matrix multiply's shape without its mini-batch: the matmul key
-- (common/ops/tc_matmul_key.h), its UNIQUE key in the key's order.
CREATE TABLE matmul_configs (
    config_id    bigserial PRIMARY KEY,
    batch        integer NOT NULL CHECK (batch > 0),
    m            integer NOT NULL CHECK (m > 0),
    n            integer NOT NULL CHECK (n > 0),
    k            integer NOT NULL CHECK (k > 0),
    minibatch_in integer NOT NULL CHECK (minibatch_in BETWEEN 0 AND 2),
    trans_a      boolean NOT NULL,
    trans_b      boolean NOT NULL,
    weight       boolean NOT NULL,
    bias         boolean NOT NULL,
    dtype        text NOT NULL,
    UNIQUE (batch, m, n, k, minibatch_in, trans_a, trans_b, weight, bias, dtype)
);

-- One benchmarked (matmul config, mini-batch, direction, policy) on one device.
CREATE TABLE matmul_results (
    result_id           bigserial PRIMARY KEY,
    message_id          text NOT NULL,
    seq                 integer NOT NULL,
    device_id           bigint NOT NULL REFERENCES devices (device_id),
    config_id           bigint NOT NULL REFERENCES matmul_configs (config_id),
    batch               integer NOT NULL CHECK (batch > 0),
    direction           text NOT NULL CHECK (direction IN ('fwd', 'bwd_data', 'bwd_filter')),
    policy              text NOT NULL CHECK (policy IN ('heuristic', 'exhaustive')),
    backend             text,
    algo                text NOT NULL,
    route               text,
    median_ms           double precision NOT NULL CHECK (median_ms > 0),
    min_ms              double precision NOT NULL,
    max_ms              double precision NOT NULL,
    stddev_ms           double precision NOT NULL,
    repetitions         integer NOT NULL,
    measured_at         timestamptz,
    samples_ms          double precision[],
    sample_offsets_us   bigint[],
    sm_clock_mhz        integer,
    power_w             double precision,
    load_others_pct     double precision,
    load_steal_pct      double precision,
    gpu_other_processes integer,
    load_threshold_pct  double precision,
    remeasured          integer,
    disturbed           boolean NOT NULL DEFAULT false,
    stored_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (message_id, seq)
);
CREATE INDEX matmul_results_lookup_idx
    ON matmul_results (device_id, config_id, batch, direction, policy);

-- The writer role of schema/005_security.sql stores them (the reader's default privileges
-- already cover tables made by the migrating user).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_writer') THEN
        GRANT SELECT, INSERT ON matmul_configs, matmul_results TO traincast_writer;
        GRANT USAGE ON SEQUENCE matmul_configs_config_id_seq, matmul_results_result_id_seq
            TO traincast_writer;
    END IF;
END
$$;

COMMENT ON TABLE matmul_configs IS 'A matrix multiply''s shape without its mini-batch (the matmul key, common/ops/tc_matmul_key.h): batch products C[m, n] = op(A)[m, k] op(B)[k, n] per sample.';
COMMENT ON COLUMN matmul_configs.batch IS 'Independent products per sample (1 for a Linear; heads x windows for attention).';
COMMENT ON COLUMN matmul_configs.minibatch_in IS 'What the mini-batch multiplies: 0 nothing, 1 the rows m, 2 the count of products.';
COMMENT ON COLUMN matmul_configs.trans_a IS 'A is read transposed (stored [k, m]).';
COMMENT ON COLUMN matmul_configs.trans_b IS 'B is read transposed (stored [n, k]: a Linear''s weight).';
COMMENT ON COLUMN matmul_configs.weight IS 'B is a parameter (a Linear''s weight).';
COMMENT ON COLUMN matmul_configs.bias IS 'The call adds a bias (addmm).';
COMMENT ON TABLE matmul_results IS 'One benchmarked (matmul config, mini-batch, direction, policy) on one device; the columns of conv_results that a matmul has.';
COMMENT ON COLUMN matmul_results.batch IS 'The mini-batch it was measured at.';
COMMENT ON COLUMN matmul_results.seq IS 'Its position in the message''s matmul_results.';
COMMENT ON COLUMN matmul_results.algo IS 'The call PyTorch makes: addmm, mm or bmm.';
COMMENT ON COLUMN matmul_results.route IS 'Which code ran it (blas, naive).';
COMMENT ON COLUMN matmul_configs.config_id IS 'Surrogate key.';
COMMENT ON COLUMN matmul_configs.m IS 'Rows of the product, per sample.';
COMMENT ON COLUMN matmul_configs.n IS 'Columns of the product.';
COMMENT ON COLUMN matmul_configs.k IS 'The contracted dimension.';
COMMENT ON COLUMN matmul_configs.dtype IS 'The data type it runs in (fp32, fp32_strict, tf32, fp16, bf16).';
COMMENT ON COLUMN matmul_results.result_id IS 'Surrogate key.';
COMMENT ON COLUMN matmul_results.message_id IS 'The message that carried it (received_messages.message_id).';
COMMENT ON COLUMN matmul_results.device_id IS 'The device it was measured on.';
COMMENT ON COLUMN matmul_results.config_id IS 'The matmul config (matmul_configs).';
COMMENT ON COLUMN matmul_results.direction IS 'fwd, bwd_data (the gradient of A) or bwd_filter (the gradient of B).';
COMMENT ON COLUMN matmul_results.policy IS 'The agent''s policy when it measured (a matmul has no algorithms to choose among).';
COMMENT ON COLUMN matmul_results.backend IS 'The device library of the message (ConvResults.backend).';
COMMENT ON COLUMN matmul_results.median_ms IS 'Median time of the timed repetitions, ms.';
COMMENT ON COLUMN matmul_results.min_ms IS 'Fastest repetition, ms.';
COMMENT ON COLUMN matmul_results.max_ms IS 'Slowest repetition, ms.';
COMMENT ON COLUMN matmul_results.stddev_ms IS 'Standard deviation of the repetitions, ms.';
COMMENT ON COLUMN matmul_results.repetitions IS 'Timed repetitions.';
COMMENT ON COLUMN matmul_results.measured_at IS 'When the first timed repetition started.';
COMMENT ON COLUMN matmul_results.samples_ms IS 'Every timed repetition, in order, ms.';
COMMENT ON COLUMN matmul_results.sample_offsets_us IS 'Start of each repetition after measured_at, microseconds.';
COMMENT ON COLUMN matmul_results.sm_clock_mhz IS 'Median SM clock while measuring; 0 if unknown (a CPU).';
COMMENT ON COLUMN matmul_results.power_w IS 'Median board power while measuring; 0 if unknown.';
COMMENT ON COLUMN matmul_results.load_others_pct IS 'Share of the machine''s CPU capacity other processes used while this was measured, percent; NULL when the agent did not say.';
COMMENT ON COLUMN matmul_results.load_steal_pct IS 'Share of the machine''s CPU time the hypervisor stole meanwhile, percent.';
COMMENT ON COLUMN matmul_results.gpu_other_processes IS 'Other processes on the GPU meanwhile (NVML); 0 none or unknown.';
COMMENT ON COLUMN matmul_results.load_threshold_pct IS 'The agent''s quiet threshold (100: its guard was off).';
COMMENT ON COLUMN matmul_results.remeasured IS 'Times the agent measured it again because of load.';
COMMENT ON COLUMN matmul_results.disturbed IS 'Others used more than the threshold even after measuring again.';
COMMENT ON COLUMN matmul_results.stored_at IS 'When the aggregator stored it.';
