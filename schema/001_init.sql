-- traincast schema, version 1: the system of record for everything agents
-- measure. Applied by `aggregator migrate`; never edit a released migration,
-- add a new numbered file instead.

CREATE TABLE agents (
    agent_id      text PRIMARY KEY,
    name          text,
    host          text,
    version       text,
    first_seen    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now(),
    spool_backlog integer
);

-- One physical device. Devices sharing a name are the same hardware class
-- and share one fit.
CREATE TABLE devices (
    device_id          bigserial PRIMARY KEY,
    uuid               text NOT NULL UNIQUE,
    kind               text NOT NULL CHECK (kind IN ('cpu', 'cuda')),
    name               text NOT NULL,
    host               text,
    gpu_index          integer,
    compute_capability text,
    multiprocessors    integer,
    threads            integer,
    memory_bytes       bigint,
    clock_mhz          integer,
    memory_clock_mhz   integer,
    driver_version     text,
    runtime_version    text,
    library            text,
    library_version    text,
    agent_id           text REFERENCES agents (agent_id),
    first_seen         timestamptz NOT NULL DEFAULT now(),
    last_seen          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX devices_name_idx ON devices (name);

-- A convolution's shape without its batch.
CREATE TABLE conv_configs (
    config_id  bigserial PRIMARY KEY,
    c          integer NOT NULL CHECK (c > 0),
    h          integer NOT NULL CHECK (h > 0),
    w          integer NOT NULL CHECK (w > 0),
    k          integer NOT NULL CHECK (k > 0),
    r          integer NOT NULL CHECK (r > 0),
    s          integer NOT NULL CHECK (s > 0),
    pad_h      integer NOT NULL CHECK (pad_h >= 0),
    pad_w      integer NOT NULL CHECK (pad_w >= 0),
    stride_h   integer NOT NULL CHECK (stride_h > 0),
    stride_w   integer NOT NULL CHECK (stride_w > 0),
    dilation_h integer NOT NULL CHECK (dilation_h > 0),
    dilation_w integer NOT NULL CHECK (dilation_w > 0),
    groups     integer NOT NULL CHECK (groups > 0),
    dtype      text NOT NULL,
    layout     text NOT NULL,
    UNIQUE (c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w, groups,
            dtype, layout)
);

-- One benchmarked (config, batch, direction, policy) on one device.
CREATE TABLE conv_results (
    result_id       bigserial PRIMARY KEY,
    message_id      text NOT NULL,
    seq             integer NOT NULL,
    device_id       bigint NOT NULL REFERENCES devices (device_id),
    config_id       bigint NOT NULL REFERENCES conv_configs (config_id),
    batch           integer NOT NULL CHECK (batch > 0),
    direction       text NOT NULL CHECK (direction IN ('fwd', 'bwd_data', 'bwd_filter')),
    policy          text NOT NULL CHECK (policy IN ('heuristic', 'exhaustive')),
    backend         text,
    algo            text NOT NULL,
    algo_id         integer,
    median_ms       double precision NOT NULL CHECK (median_ms > 0),
    min_ms          double precision NOT NULL,
    max_ms          double precision NOT NULL,
    stddev_ms       double precision NOT NULL,
    repetitions     integer NOT NULL,
    workspace_bytes bigint,
    measured_at     timestamptz,
    samples_ms      double precision[],
    sample_offsets_us bigint[],
    stored_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (message_id, seq)
);
CREATE INDEX conv_results_lookup_idx
    ON conv_results (device_id, config_id, batch, direction, policy);

-- Every algorithm tried for a result.
CREATE TABLE conv_algo_timings (
    result_id       bigint NOT NULL REFERENCES conv_results (result_id) ON DELETE CASCADE,
    algo            text NOT NULL,
    algo_id         integer,
    time_ms         double precision,
    workspace_bytes bigint,
    status          text NOT NULL,
    message         text
);
CREATE INDEX conv_algo_timings_result_idx ON conv_algo_timings (result_id);

CREATE TABLE models (
    model_id      text PRIMARY KEY,
    name          text NOT NULL,
    input_c       integer NOT NULL,
    input_h       integer NOT NULL,
    input_w       integer NOT NULL,
    params        bigint NOT NULL,
    flops         double precision NOT NULL,
    source_sha256 text,
    stored_at     timestamptz NOT NULL DEFAULT now()
);

-- Per-sample element counts and FLOPs; multiply by the batch.
CREATE TABLE model_layers (
    model_id  text NOT NULL REFERENCES models (model_id) ON DELETE CASCADE,
    idx       integer NOT NULL,
    name      text,
    op        text NOT NULL,
    op_class  text NOT NULL,
    params    bigint NOT NULL,
    flops     double precision NOT NULL,
    elems_in  bigint NOT NULL,
    elems_out bigint NOT NULL,
    out_shape bigint[],
    PRIMARY KEY (model_id, idx)
);

CREATE TABLE model_convs (
    model_id     text NOT NULL REFERENCES models (model_id) ON DELETE CASCADE,
    config_id    bigint NOT NULL REFERENCES conv_configs (config_id),
    first_layer  boolean NOT NULL,
    multiplicity integer NOT NULL CHECK (multiplicity > 0),
    PRIMARY KEY (model_id, config_id, first_layer)
);

CREATE TABLE traces (
    trace_id          bigserial PRIMARY KEY,
    message_id        text NOT NULL UNIQUE,
    device_id         bigint NOT NULL REFERENCES devices (device_id),
    model_id          text NOT NULL,
    framework         text NOT NULL,
    framework_version text,
    library_version   text,
    batch             integer NOT NULL CHECK (batch > 0),
    input_size        integer NOT NULL,
    dtype             text NOT NULL,
    amp               text,
    optimizer         text,
    policy            text,
    threads           integer,
    warmup            integer,
    iters             integer,
    repeats           integer,
    median_ms         double precision,
    spread            double precision,
    peak_memory_bytes bigint,
    status            text NOT NULL CHECK (status IN ('ok', 'oom', 'failed')),
    reason            text,
    runner            text,
    started_at        timestamptz,
    stored_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX traces_lookup_idx ON traces (device_id, model_id, batch);

CREATE TABLE trace_iterations (
    trace_id bigint NOT NULL REFERENCES traces (trace_id) ON DELETE CASCADE,
    repeat   integer NOT NULL,
    idx      integer NOT NULL,
    ms       double precision NOT NULL,
    at       timestamptz,
    warmup   boolean NOT NULL,
    PRIMARY KEY (trace_id, repeat, idx)
);

CREATE TABLE trace_op_times (
    trace_id bigint NOT NULL REFERENCES traces (trace_id) ON DELETE CASCADE,
    op_class text NOT NULL,
    ms       double precision NOT NULL,
    PRIMARY KEY (trace_id, op_class)
);

-- Every message id ever stored: a replay of one stores nothing.
CREATE TABLE received_messages (
    message_id  text PRIMARY KEY,
    agent_id    text NOT NULL,
    kind        text NOT NULL,
    sent_at     timestamptz,
    received_at timestamptz NOT NULL DEFAULT now()
);
