-- Benchmark sets imported from other traincast databases, every prediction
-- predict makes (next to the traces measured later), and a description of
-- every table, view and column an analyst queries (COMMENT ON: psql's \d+
-- shows them).

-- One `aggregator import` of a benchmark set (docs/benchmark-sets.md). A set
-- is imported at most once: importing it again finds its set_id here and
-- stores nothing new.
CREATE TABLE imports (
    import_id         bigserial PRIMARY KEY,
    set_id            text NOT NULL UNIQUE,
    source            text NOT NULL,
    file_name         text,
    file_sha256       text NOT NULL,
    format_version    integer NOT NULL,
    traincast_version text,
    schema_version    integer,
    exported_at       timestamptz,
    imported_at       timestamptz NOT NULL DEFAULT now(),
    imported_by       text NOT NULL DEFAULT current_user,
    records           integer NOT NULL,
    stored            integer NOT NULL,
    duplicates        integer NOT NULL,
    devices           text[] NOT NULL,
    renamed           text[] NOT NULL DEFAULT '{}'
);

-- A device that came from a set rather than from an agent of this fleet.
ALTER TABLE devices ADD COLUMN import_id bigint REFERENCES imports (import_id);
-- Its name in the set when it clashed with a local device class and was
-- imported under another name.
ALTER TABLE devices ADD COLUMN original_name text;

-- Every prediction `aggregator predict` printed, one row per device class
-- and batch size it could predict.
CREATE TABLE predictions (
    prediction_id     bigserial PRIMARY KEY,
    request_id        text NOT NULL,
    predicted_at      timestamptz NOT NULL DEFAULT now(),
    model_id          text NOT NULL,
    model_name        text NOT NULL,
    model_sha256      text,
    input_size        integer NOT NULL,
    device            text NOT NULL,
    batch             integer NOT NULL CHECK (batch > 0),
    framework         text NOT NULL,
    dtype             text NOT NULL,
    iteration_ms      double precision NOT NULL,
    lo_ms             double precision,
    hi_ms             double precision,
    conv_ms           double precision,
    nonconv_ms        double precision,
    epoch_s           double precision,
    dataset_size      double precision,
    peak_memory_bytes double precision,
    fits_memory       boolean,
    fit_id            bigint REFERENCES fits (fit_id) ON DELETE SET NULL
);
CREATE INDEX predictions_lookup_idx ON predictions (device, model_id, batch, predicted_at);

-- Each prediction next to the successful traces of the same model, device
-- class, batch, framework and dtype that started after it was made: the
-- honest test of a prediction. Predictions not traced since have NULL
-- measurements.
CREATE VIEW prediction_vs_trace AS
SELECT p.prediction_id, p.predicted_at, p.model_id, p.model_name, p.model_sha256, p.device,
       p.batch, p.framework, p.dtype, p.fit_id,
       p.iteration_ms AS predicted_ms, p.lo_ms, p.hi_ms,
       m.traces, m.measured_ms, m.first_traced_at, m.last_traced_at,
       100 * (p.iteration_ms - m.measured_ms) / m.measured_ms AS error_pct,
       m.measured_ms BETWEEN p.lo_ms AND p.hi_ms AS inside_interval
FROM predictions p
LEFT JOIN LATERAL (
    SELECT count(*) AS traces,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY t.median_ms) AS measured_ms,
           min(coalesce(t.started_at, t.stored_at)) AS first_traced_at,
           max(coalesce(t.started_at, t.stored_at)) AS last_traced_at
    FROM traces t
    JOIN devices d USING (device_id)
    WHERE d.name = p.device AND t.model_id = p.model_id AND t.batch = p.batch
      AND t.framework = p.framework AND t.dtype = p.dtype AND t.status = 'ok'
      AND coalesce(t.started_at, t.stored_at) > p.predicted_at
    HAVING count(*) > 0
) m ON true;

-- device_overview gains where each device came from (new last columns).
CREATE OR REPLACE VIEW device_overview AS
SELECT d.device_id, d.name, d.kind, d.host, d.uuid, d.threads, d.multiprocessors,
       d.compute_capability, d.memory_bytes, d.driver_version, d.runtime_version,
       d.library, d.library_version, d.agent_id, d.first_seen, d.last_seen,
       (SELECT count(*) FROM conv_results r WHERE r.device_id = d.device_id) AS conv_results,
       (SELECT count(*) FROM traces t WHERE t.device_id = d.device_id) AS traces,
       d.import_id, i.source AS imported_from, d.original_name
FROM devices d
LEFT JOIN imports i USING (import_id);

-- Tables.
COMMENT ON TABLE schema_version IS 'Migrations applied by aggregator migrate, one row each.';
COMMENT ON COLUMN schema_version.version IS 'Migration number (schema/NNN_name.sql).';
COMMENT ON COLUMN schema_version.name IS 'Migration file name without .sql.';
COMMENT ON COLUMN schema_version.applied_at IS 'When it was applied.';
COMMENT ON TABLE agents IS 'Agents that sent results: one per device box (or per GPU with one agent each).';
COMMENT ON COLUMN agents.agent_id IS 'The agent''s id (its state directory''s agent_id file).';
COMMENT ON COLUMN agents.name IS 'The agent''s name as it announced itself.';
COMMENT ON COLUMN agents.host IS 'Host name of the agent''s machine.';
COMMENT ON COLUMN agents.version IS 'traincast version of the agent.';
COMMENT ON COLUMN agents.first_seen IS 'When the aggregator first stored a message of this agent.';
COMMENT ON COLUMN agents.last_seen IS 'When the agent was last heard from (any message or heartbeat).';
COMMENT ON COLUMN agents.spool_backlog IS 'Messages waiting in the agent''s spool at its last heartbeat.';
COMMENT ON COLUMN agents.accepts_jobs IS 'The agent runs agent serve and takes benchmark and trace jobs.';

COMMENT ON TABLE devices IS 'Physical devices (a GPU, or a CPU with a thread count, allocator, BLAS and framework). Devices sharing a name are one device class and share one fit.';
COMMENT ON COLUMN devices.device_id IS 'Surrogate key.';
COMMENT ON COLUMN devices.uuid IS 'The physical device: the GPU''s UUID, or a stable hash for a CPU device.';
COMMENT ON COLUMN devices.kind IS 'cpu or cuda.';
COMMENT ON COLUMN devices.name IS 'The device class name users compare (predict --gpu).';
COMMENT ON COLUMN devices.host IS 'Host the device is in.';
COMMENT ON COLUMN devices.gpu_index IS 'GPU index on its host (0 for a CPU).';
COMMENT ON COLUMN devices.compute_capability IS 'CUDA compute capability, e.g. 9.0; empty for a CPU.';
COMMENT ON COLUMN devices.multiprocessors IS 'Streaming multiprocessors of a GPU, physical cores of a CPU.';
COMMENT ON COLUMN devices.threads IS 'CPU threads the device is measured with (0 for a GPU).';
COMMENT ON COLUMN devices.memory_bytes IS 'Device memory (bytes).';
COMMENT ON COLUMN devices.clock_mhz IS 'Core clock (MHz).';
COMMENT ON COLUMN devices.memory_clock_mhz IS 'Memory clock (MHz).';
COMMENT ON COLUMN devices.driver_version IS 'NVIDIA driver version, or the operating system for a CPU.';
COMMENT ON COLUMN devices.runtime_version IS 'CUDA runtime version, or the framework for a CPU.';
COMMENT ON COLUMN devices.library IS 'Conv library measured with: cudnn or onednn.';
COMMENT ON COLUMN devices.library_version IS 'Version of that library.';
COMMENT ON COLUMN devices.agent_id IS 'The agent that measures this device; NULL for an imported device.';
COMMENT ON COLUMN devices.first_seen IS 'When the device was first stored.';
COMMENT ON COLUMN devices.last_seen IS 'When a message about the device was last stored.';
COMMENT ON COLUMN devices.import_id IS 'The import it came from (imports); NULL for a device of this fleet.';
COMMENT ON COLUMN devices.original_name IS 'Its name in the imported set, when it was imported under another name to avoid a clash.';

COMMENT ON TABLE conv_configs IS 'Convolution shapes without their batch size.';
COMMENT ON COLUMN conv_configs.config_id IS 'Surrogate key.';
COMMENT ON COLUMN conv_configs.c IS 'Input channels.';
COMMENT ON COLUMN conv_configs.h IS 'Input height.';
COMMENT ON COLUMN conv_configs.w IS 'Input width.';
COMMENT ON COLUMN conv_configs.k IS 'Output channels (filters).';
COMMENT ON COLUMN conv_configs.r IS 'Filter height.';
COMMENT ON COLUMN conv_configs.s IS 'Filter width.';
COMMENT ON COLUMN conv_configs.pad_h IS 'Zero padding, top and bottom.';
COMMENT ON COLUMN conv_configs.pad_w IS 'Zero padding, left and right.';
COMMENT ON COLUMN conv_configs.stride_h IS 'Vertical stride.';
COMMENT ON COLUMN conv_configs.stride_w IS 'Horizontal stride.';
COMMENT ON COLUMN conv_configs.dilation_h IS 'Vertical dilation.';
COMMENT ON COLUMN conv_configs.dilation_w IS 'Horizontal dilation.';
COMMENT ON COLUMN conv_configs.groups IS 'Groups (channels for a depthwise conv).';
COMMENT ON COLUMN conv_configs.dtype IS 'Data type: fp32, tf32, fp16 or bf16.';
COMMENT ON COLUMN conv_configs.layout IS 'Tensor layout: nchw or nhwc.';

COMMENT ON TABLE conv_results IS 'One conv benchmark: a config at a batch size, one direction and algorithm policy, on one device, with every timed sample.';
COMMENT ON COLUMN conv_results.result_id IS 'Surrogate key.';
COMMENT ON COLUMN conv_results.message_id IS 'The message that carried it (received_messages).';
COMMENT ON COLUMN conv_results.seq IS 'Its position in that message.';
COMMENT ON COLUMN conv_results.device_id IS 'The device measured (devices).';
COMMENT ON COLUMN conv_results.config_id IS 'The conv shape (conv_configs).';
COMMENT ON COLUMN conv_results.batch IS 'Mini-batch size.';
COMMENT ON COLUMN conv_results.direction IS 'fwd, bwd_data or bwd_filter.';
COMMENT ON COLUMN conv_results.policy IS 'heuristic (the library''s first choice) or exhaustive (fastest of all timed, as cudnn.benchmark).';
COMMENT ON COLUMN conv_results.backend IS 'Backend that ran it: cudnn, onednn, or the framework''s native path.';
COMMENT ON COLUMN conv_results.algo IS 'The algorithm the policy chose.';
COMMENT ON COLUMN conv_results.algo_id IS 'The backend''s numeric id of that algorithm.';
COMMENT ON COLUMN conv_results.median_ms IS 'Median time of the chosen algorithm (ms).';
COMMENT ON COLUMN conv_results.min_ms IS 'Fastest sample (ms).';
COMMENT ON COLUMN conv_results.max_ms IS 'Slowest sample (ms).';
COMMENT ON COLUMN conv_results.stddev_ms IS 'Standard deviation of the samples (ms).';
COMMENT ON COLUMN conv_results.repetitions IS 'Timed samples.';
COMMENT ON COLUMN conv_results.workspace_bytes IS 'Workspace the chosen algorithm needs (bytes).';
COMMENT ON COLUMN conv_results.measured_at IS 'When the first timed sample started.';
COMMENT ON COLUMN conv_results.samples_ms IS 'Every timed sample in order (ms).';
COMMENT ON COLUMN conv_results.sample_offsets_us IS 'Start of each sample after measured_at (microseconds).';
COMMENT ON COLUMN conv_results.stored_at IS 'When the aggregator stored it.';

COMMENT ON TABLE conv_algo_timings IS 'Every algorithm tried for a conv benchmark, with its time or why it was not timed.';
COMMENT ON COLUMN conv_algo_timings.result_id IS 'The benchmark (conv_results).';
COMMENT ON COLUMN conv_algo_timings.algo IS 'Algorithm name.';
COMMENT ON COLUMN conv_algo_timings.algo_id IS 'The backend''s numeric id.';
COMMENT ON COLUMN conv_algo_timings.time_ms IS 'Median time (ms); NULL when not timed.';
COMMENT ON COLUMN conv_algo_timings.workspace_bytes IS 'Workspace it needs (bytes).';
COMMENT ON COLUMN conv_algo_timings.status IS 'ok, not_supported, workspace_too_large, failed or skipped.';
COMMENT ON COLUMN conv_algo_timings.message IS 'Why it failed or was skipped.';

COMMENT ON TABLE models IS 'CNN graphs as imported from ONNX: one per model and input size.';
COMMENT ON COLUMN models.model_id IS 'torchvision:NAME@PX or onnx:<12 hex of the file''s SHA-256>@PX.';
COMMENT ON COLUMN models.name IS 'Model name.';
COMMENT ON COLUMN models.input_c IS 'Input channels.';
COMMENT ON COLUMN models.input_h IS 'Input height (pixels).';
COMMENT ON COLUMN models.input_w IS 'Input width (pixels).';
COMMENT ON COLUMN models.params IS 'Trainable parameters.';
COMMENT ON COLUMN models.flops IS 'Forward FLOPs per image.';
COMMENT ON COLUMN models.source_sha256 IS 'SHA-256 of the ONNX bytes the graph came from.';
COMMENT ON COLUMN models.stored_at IS 'When the graph was stored or last replaced.';

COMMENT ON TABLE model_layers IS 'Layers of each model, per image: multiply element counts and FLOPs by the batch.';
COMMENT ON COLUMN model_layers.model_id IS 'The model (models).';
COMMENT ON COLUMN model_layers.idx IS 'Position in the graph.';
COMMENT ON COLUMN model_layers.name IS 'ONNX node name.';
COMMENT ON COLUMN model_layers.op IS 'ONNX op type.';
COMMENT ON COLUMN model_layers.op_class IS 'Class the regression groups it in: conv, bn, act, pool, eltwise, concat, gemm, ...';
COMMENT ON COLUMN model_layers.params IS 'Parameters.';
COMMENT ON COLUMN model_layers.flops IS 'FLOPs per image.';
COMMENT ON COLUMN model_layers.elems_in IS 'Elements read per image.';
COMMENT ON COLUMN model_layers.elems_out IS 'Elements written per image.';
COMMENT ON COLUMN model_layers.out_shape IS 'Output shape without the batch.';

COMMENT ON TABLE model_convs IS 'The conv configs of each model with how often each occurs.';
COMMENT ON COLUMN model_convs.model_id IS 'The model (models).';
COMMENT ON COLUMN model_convs.config_id IS 'The conv shape (conv_configs).';
COMMENT ON COLUMN model_convs.first_layer IS 'Its input is the network input: no backward-data pass.';
COMMENT ON COLUMN model_convs.multiplicity IS 'How many layers of the model have this config.';

COMMENT ON TABLE traces IS 'Full training runs through the framework: one model at one batch size on one device, with every iteration (trace_iterations).';
COMMENT ON COLUMN traces.trace_id IS 'Surrogate key.';
COMMENT ON COLUMN traces.message_id IS 'The message that carried it (received_messages).';
COMMENT ON COLUMN traces.device_id IS 'The device (devices).';
COMMENT ON COLUMN traces.model_id IS 'The model (models.model_id).';
COMMENT ON COLUMN traces.framework IS 'Training framework, e.g. pytorch.';
COMMENT ON COLUMN traces.framework_version IS 'Its version.';
COMMENT ON COLUMN traces.library_version IS 'cuDNN or oneDNN version as the framework reports it.';
COMMENT ON COLUMN traces.batch IS 'Mini-batch size.';
COMMENT ON COLUMN traces.input_size IS 'Input height and width (pixels).';
COMMENT ON COLUMN traces.dtype IS 'fp32, tf32, fp16 or bf16.';
COMMENT ON COLUMN traces.amp IS 'Automatic mixed precision type, if any.';
COMMENT ON COLUMN traces.optimizer IS 'Optimizer, e.g. sgd.';
COMMENT ON COLUMN traces.policy IS 'Conv algorithm policy (exhaustive = cudnn.benchmark on); NULL where none applies.';
COMMENT ON COLUMN traces.threads IS 'CPU threads the framework used.';
COMMENT ON COLUMN traces.warmup IS 'Warm-up iterations per repeat (not measured).';
COMMENT ON COLUMN traces.iters IS 'Measured iterations per repeat.';
COMMENT ON COLUMN traces.repeats IS 'Fresh processes the trace was repeated in.';
COMMENT ON COLUMN traces.median_ms IS 'Median iteration time over the repeats (ms); NULL unless ok.';
COMMENT ON COLUMN traces.spread IS '(max - min) / median of the repeats'' medians.';
COMMENT ON COLUMN traces.peak_memory_bytes IS 'Peak memory the framework allocated (bytes).';
COMMENT ON COLUMN traces.status IS 'ok, oom (out of memory) or failed.';
COMMENT ON COLUMN traces.reason IS 'Why it ran out of memory or failed.';
COMMENT ON COLUMN traces.runner IS 'The runner command, when not the built-in PyTorch harness.';
COMMENT ON COLUMN traces.started_at IS 'When the trace started.';
COMMENT ON COLUMN traces.stored_at IS 'When the aggregator stored it.';

COMMENT ON TABLE trace_iterations IS 'Every iteration of every trace, warm-up included.';
COMMENT ON COLUMN trace_iterations.trace_id IS 'The trace (traces).';
COMMENT ON COLUMN trace_iterations.repeat IS 'Which fresh process (0-based).';
COMMENT ON COLUMN trace_iterations.idx IS 'Iteration within the repeat (0-based).';
COMMENT ON COLUMN trace_iterations.ms IS 'Iteration time (ms).';
COMMENT ON COLUMN trace_iterations.at IS 'When the iteration ended.';
COMMENT ON COLUMN trace_iterations.warmup IS 'A warm-up iteration (not in the trace''s median).';

COMMENT ON TABLE trace_op_times IS 'Time per op class of a trace''s iteration, from the framework profiler.';
COMMENT ON COLUMN trace_op_times.trace_id IS 'The trace (traces).';
COMMENT ON COLUMN trace_op_times.op_class IS 'Op class: conv, bn, act, pool, ...';
COMMENT ON COLUMN trace_op_times.ms IS 'Time per iteration in that class (ms).';

COMMENT ON TABLE received_messages IS 'Every message id stored: a replayed or re-imported message stores nothing.';
COMMENT ON COLUMN received_messages.message_id IS 'The envelope''s message id (a ULID).';
COMMENT ON COLUMN received_messages.agent_id IS 'The agent that sent it (for an imported message, the agent of the other fleet).';
COMMENT ON COLUMN received_messages.kind IS 'hello, conv_results, model_graph or train_trace.';
COMMENT ON COLUMN received_messages.sent_at IS 'When the agent sent it.';
COMMENT ON COLUMN received_messages.received_at IS 'When it was stored here.';

COMMENT ON TABLE fits IS 'Per-device-class regressions of the non-conv training time (aggregator fit; docs/fitting.md). Never updated: a new fit is a new row.';
COMMENT ON COLUMN fits.fit_id IS 'Surrogate key (predictions.fit_id refers to it).';
COMMENT ON COLUMN fits.device IS 'Device class name.';
COMMENT ON COLUMN fits.framework IS 'Framework of the traces.';
COMMENT ON COLUMN fits.policy IS 'Algorithm policy of the traces; NULL where none.';
COMMENT ON COLUMN fits.dtype IS 'Data type of the traces.';
COMMENT ON COLUMN fits.conv_policy IS 'Policy of the conv benchmarks summed.';
COMMENT ON COLUMN fits.form IS 'Regression: ols, nnls, ridge or robust.';
COMMENT ON COLUMN fits.weighting IS 'none (absolute errors) or relative (errors relative to the measured time).';
COMMENT ON COLUMN fits.features IS 'Features of the model: non-conv ms = sum of coefficients[i] * features[i].';
COMMENT ON COLUMN fits.coefficients IS 'One per feature.';
COMMENT ON COLUMN fits.covariance IS 'Covariance of the coefficients, p x p row-major.';
COMMENT ON COLUMN fits.rse IS 'Residual standard error: ms, or a fraction of the time with relative weighting.';
COMMENT ON COLUMN fits.dof IS 'Residual degrees of freedom.';
COMMENT ON COLUMN fits.ridge_lambda IS 'Ridge penalty on the standardized design; NULL unless ridge.';
COMMENT ON COLUMN fits.candidates IS 'Features the selection could choose from.';
COMMENT ON COLUMN fits.n_points IS '(model, batch) points fitted.';
COMMENT ON COLUMN fits.n_cnns IS 'CNNs among the points.';
COMMENT ON COLUMN fits.models IS 'Model ids fitted.';
COMMENT ON COLUMN fits.batches IS 'Batch sizes fitted.';
COMMENT ON COLUMN fits.excluded_oom IS 'Points left out because every trace ran out of memory.';
COMMENT ON COLUMN fits.excluded_failed IS 'Points left out because every trace failed.';
COMMENT ON COLUMN fits.cv_mape IS 'Leave-one-CNN-out mean absolute percentage error of the whole procedure (percent).';
COMMENT ON COLUMN fits.cv_median_ape IS 'Its median (percent).';
COMMENT ON COLUMN fits.cv_max_ape IS 'Its maximum (percent).';
COMMENT ON COLUMN fits.selection_mape IS 'The chosen model''s error while choosing (percent; optimistic).';
COMMENT ON COLUMN fits.conv_only_mape IS 'Error of the conv sum alone (percent).';
COMMENT ON COLUMN fits.data_through IS 'Start of the newest trace among the points.';
COMMENT ON COLUMN fits.fitted_at IS 'When the fit was made.';
COMMENT ON COLUMN fits.stat IS 'Statistic of repeated measurements: median, p10 or min.';
COMMENT ON COLUMN fits.interval_lo IS 'Lower factor of the 95 % prediction interval (calibrated on held-out predictions).';
COMMENT ON COLUMN fits.interval_hi IS 'Upper factor of the 95 % prediction interval.';

COMMENT ON TABLE fit_points IS 'Every (model, batch) point a fit was made from, with its held-out prediction.';
COMMENT ON COLUMN fit_points.fit_id IS 'The fit (fits).';
COMMENT ON COLUMN fit_points.model_id IS 'The model.';
COMMENT ON COLUMN fit_points.cnn IS 'The CNN (family member) it belongs to.';
COMMENT ON COLUMN fit_points.batch IS 'Batch size.';
COMMENT ON COLUMN fit_points.traces IS 'Traces behind the measured time.';
COMMENT ON COLUMN fit_points.measured_ms IS 'Measured iteration time (ms).';
COMMENT ON COLUMN fit_points.conv_ms IS 'Sum of the conv benchmarks (ms).';
COMMENT ON COLUMN fit_points.fitted_ms IS 'The fit''s in-sample prediction (ms).';
COMMENT ON COLUMN fit_points.held_out_ms IS 'Leave-one-CNN-out prediction (ms).';
COMMENT ON COLUMN fit_points.feature_values IS 'Values of the fit''s features at this point.';
COMMENT ON COLUMN fit_points.held_out_lo_ms IS 'Lower end of the held-out prediction''s 95 % interval (ms).';
COMMENT ON COLUMN fit_points.held_out_hi_ms IS 'Upper end (ms).';

COMMENT ON TABLE jobs IS 'Conv benchmarks and traces queued for agents (aggregator predict queues missing benchmarks).';
COMMENT ON COLUMN jobs.job_id IS 'Job id.';
COMMENT ON COLUMN jobs.kind IS 'bench or trace.';
COMMENT ON COLUMN jobs.device_name IS 'Any device of this class may run it.';
COMMENT ON COLUMN jobs.device_uuid IS 'Only this device may run it.';
COMMENT ON COLUMN jobs.request IS 'The packed BenchRequest or TraceRequest.';
COMMENT ON COLUMN jobs.summary IS 'What it measures, in words.';
COMMENT ON COLUMN jobs.state IS 'queued, dispatched, running, done or failed.';
COMMENT ON COLUMN jobs.attempts IS 'Times it was dispatched.';
COMMENT ON COLUMN jobs.agent_id IS 'Agent running or last running it.';
COMMENT ON COLUMN jobs.assigned_uuid IS 'Device running it.';
COMMENT ON COLUMN jobs.done IS 'Items done.';
COMMENT ON COLUMN jobs.total IS 'Items in all.';
COMMENT ON COLUMN jobs.message IS 'Latest progress message, or why it failed.';
COMMENT ON COLUMN jobs.created_at IS 'When it was queued.';
COMMENT ON COLUMN jobs.dispatched_at IS 'When it was last dispatched.';
COMMENT ON COLUMN jobs.updated_at IS 'Latest change.';
COMMENT ON COLUMN jobs.finished_at IS 'When it finished.';

COMMENT ON TABLE job_events IS 'Every progress report of every job, in order.';
COMMENT ON COLUMN job_events.job_id IS 'The job (jobs).';
COMMENT ON COLUMN job_events.message_id IS 'The message that carried it.';
COMMENT ON COLUMN job_events.agent_id IS 'The reporting agent.';
COMMENT ON COLUMN job_events.state IS 'State reported.';
COMMENT ON COLUMN job_events.done IS 'Items done.';
COMMENT ON COLUMN job_events.total IS 'Items in all.';
COMMENT ON COLUMN job_events.message IS 'Progress message.';
COMMENT ON COLUMN job_events.at IS 'When it was received.';

COMMENT ON TABLE agent_keys IS 'The CURVE public key each agent id is bound to (the first that stored under it).';
COMMENT ON COLUMN agent_keys.agent_id IS 'Agent id.';
COMMENT ON COLUMN agent_keys.public_key IS 'Its public key (Z85).';
COMMENT ON COLUMN agent_keys.registered_at IS 'When it was bound.';

COMMENT ON TABLE imports IS 'Benchmark sets imported from other traincast databases (aggregator import), one row per set.';
COMMENT ON COLUMN imports.import_id IS 'Surrogate key (devices.import_id refers to it).';
COMMENT ON COLUMN imports.set_id IS 'The set''s own id, written by aggregator export.';
COMMENT ON COLUMN imports.source IS 'Where the set came from, as its exporter labelled it (export --source).';
COMMENT ON COLUMN imports.file_name IS 'The file imported.';
COMMENT ON COLUMN imports.file_sha256 IS 'SHA-256 of the file.';
COMMENT ON COLUMN imports.format_version IS 'Format version of the set.';
COMMENT ON COLUMN imports.traincast_version IS 'traincast version that exported it.';
COMMENT ON COLUMN imports.schema_version IS 'Schema version of the database it was exported from.';
COMMENT ON COLUMN imports.exported_at IS 'When it was exported.';
COMMENT ON COLUMN imports.imported_at IS 'When it was imported here.';
COMMENT ON COLUMN imports.imported_by IS 'Database role that imported it.';
COMMENT ON COLUMN imports.records IS 'Messages in the set.';
COMMENT ON COLUMN imports.stored IS 'Messages stored by this import.';
COMMENT ON COLUMN imports.duplicates IS 'Messages that were stored here already.';
COMMENT ON COLUMN imports.devices IS 'Device class names the set brought, as stored here.';
COMMENT ON COLUMN imports.renamed IS 'Devices imported under another name: ''NAME -> NEW NAME''.';

COMMENT ON TABLE predictions IS 'Every prediction aggregator predict made: one row per device class and batch size it could predict.';
COMMENT ON COLUMN predictions.prediction_id IS 'Surrogate key.';
COMMENT ON COLUMN predictions.request_id IS 'One predict command: its rows share it.';
COMMENT ON COLUMN predictions.predicted_at IS 'When the prediction was made.';
COMMENT ON COLUMN predictions.model_id IS 'The model as models and traces name it (torchvision:NAME@PX or onnx:<hash>@PX).';
COMMENT ON COLUMN predictions.model_name IS 'The model''s name.';
COMMENT ON COLUMN predictions.model_sha256 IS 'SHA-256 of the ONNX bytes predicted from.';
COMMENT ON COLUMN predictions.input_size IS 'Input height and width (pixels).';
COMMENT ON COLUMN predictions.device IS 'Device class name.';
COMMENT ON COLUMN predictions.batch IS 'Mini-batch size.';
COMMENT ON COLUMN predictions.framework IS 'Framework of the fit used.';
COMMENT ON COLUMN predictions.dtype IS 'Data type of the fit used.';
COMMENT ON COLUMN predictions.iteration_ms IS 'Predicted time of one training iteration (ms).';
COMMENT ON COLUMN predictions.lo_ms IS 'Lower end of its 95 % prediction interval (ms).';
COMMENT ON COLUMN predictions.hi_ms IS 'Upper end (ms).';
COMMENT ON COLUMN predictions.conv_ms IS 'The conv part: summed benchmarks (ms).';
COMMENT ON COLUMN predictions.nonconv_ms IS 'The fitted non-conv part (ms).';
COMMENT ON COLUMN predictions.epoch_s IS 'Predicted epoch time for dataset_size images (s).';
COMMENT ON COLUMN predictions.dataset_size IS 'Images per epoch assumed.';
COMMENT ON COLUMN predictions.peak_memory_bytes IS 'Predicted peak memory (bytes); NULL unknown.';
COMMENT ON COLUMN predictions.fits_memory IS 'Predicted to fit in the device''s memory; NULL unknown.';
COMMENT ON COLUMN predictions.fit_id IS 'The fit it came from (fits).';

-- Views.
COMMENT ON VIEW device_overview IS 'Devices with their library versions, how much each has measured, and where imported ones came from.';
COMMENT ON COLUMN device_overview.conv_results IS 'Conv benchmarks stored for the device.';
COMMENT ON COLUMN device_overview.traces IS 'Traces stored for the device.';
COMMENT ON COLUMN device_overview.imported_from IS 'Source of the set it was imported from; NULL for a device of this fleet.';
COMMENT ON VIEW conv_config_labels IS 'Conv configs with a readable label, e.g. c64 56x56 k64 3x3/1 p1.';
COMMENT ON COLUMN conv_config_labels.label IS 'cC HxW kK RxS/STRIDE pPAD, with gGROUPS and dDILATION where not 1.';
COMMENT ON VIEW best_conv_time IS 'Lowest median per device, config, batch, direction and policy over every benchmark of it.';
COMMENT ON COLUMN best_conv_time.measurements IS 'Benchmarks of that combination.';
COMMENT ON VIEW latest_conv_time IS 'Newest benchmark per device, config, batch, direction and policy.';
COMMENT ON VIEW trace_summary IS 'Successful traces per device class, model, batch, framework, dtype and policy, with their run-to-run spread.';
COMMENT ON COLUMN trace_summary.traces IS 'Traces of the point.';
COMMENT ON COLUMN trace_summary.median_ms IS 'Median of the traces'' median iteration times (ms).';
COMMENT ON COLUMN trace_summary.min_ms IS 'Fastest trace (ms).';
COMMENT ON COLUMN trace_summary.max_ms IS 'Slowest trace (ms).';
COMMENT ON COLUMN trace_summary.spread_between_traces IS '(max - min) / median across traces; NULL with one trace.';
COMMENT ON COLUMN trace_summary.spread_within_trace IS 'Largest spread between the repeats of one trace.';
COMMENT ON COLUMN trace_summary.peak_memory_bytes IS 'Largest peak memory (bytes).';
COMMENT ON COLUMN trace_summary.last_started_at IS 'Start of the newest trace.';
COMMENT ON COLUMN trace_summary.p10_ms IS '10th percentile of the traces'' medians (ms).';
COMMENT ON VIEW trace_failures IS 'Traces that ran out of memory or failed, with why.';
COMMENT ON VIEW model_conv_usage IS 'Each model''s conv configs with multiplicity, as the predictor sums them.';
COMMENT ON VIEW latest_fit IS 'Newest fit per device class, framework, policy and dtype: what predict uses.';
COMMENT ON VIEW fit_cnn_error IS 'Held-out error per fit and CNN (percent).';
COMMENT ON COLUMN fit_cnn_error.mape IS 'Mean absolute percentage error of the CNN''s held-out predictions.';
COMMENT ON COLUMN fit_cnn_error.max_ape IS 'Largest absolute percentage error.';
COMMENT ON VIEW devices_online IS 'Devices whose agent takes jobs and was heard from in the last 30 s.';
COMMENT ON VIEW job_overview IS 'Jobs with their latest progress, newest first.';
COMMENT ON VIEW prediction_vs_trace IS 'Every prediction next to the successful traces of the same model, device class, batch, framework and dtype that started after it (NULL until traced).';
COMMENT ON COLUMN prediction_vs_trace.predicted_ms IS 'Predicted iteration time (ms).';
COMMENT ON COLUMN prediction_vs_trace.lo_ms IS 'Lower end of the 95 % interval (ms).';
COMMENT ON COLUMN prediction_vs_trace.hi_ms IS 'Upper end (ms).';
COMMENT ON COLUMN prediction_vs_trace.traces IS 'Traces measured after the prediction; NULL when none.';
COMMENT ON COLUMN prediction_vs_trace.measured_ms IS 'Median of their iteration times (ms).';
COMMENT ON COLUMN prediction_vs_trace.first_traced_at IS 'Start of the first of them.';
COMMENT ON COLUMN prediction_vs_trace.last_traced_at IS 'Start of the newest of them.';
COMMENT ON COLUMN prediction_vs_trace.error_pct IS '100 * (predicted - measured) / measured.';
COMMENT ON COLUMN prediction_vs_trace.inside_interval IS 'The measured time lies inside the 95 % interval.';

-- Columns added by 007_framework_faithful.
COMMENT ON COLUMN conv_configs.bias IS 'The layer adds a bias (and computes its gradient): another config than the same shape without.';
COMMENT ON COLUMN devices.framework IS 'The framework whose conv routing the agent follows ("pytorch 2.4.1"; "no framework").';
COMMENT ON COLUMN devices.routing IS 'The routing rule followed for that framework ("pytorch-2"), with a note when it was not checked for that version.';
COMMENT ON COLUMN conv_results.route IS 'Which code ran the conv as the framework routes it (e.g. cudnn, cudnn-v8, onednn, native); NULL when not reported.';
COMMENT ON COLUMN conv_results.library_version IS 'cuDNN or oneDNN version the conv ran with (as the message''s device reported it).';
COMMENT ON COLUMN conv_results.sm_clock_mhz IS 'Median SM clock while measuring (GPU); NULL when unknown.';
COMMENT ON COLUMN conv_results.power_w IS 'Median board power while measuring, watts (GPU); NULL when unknown.';
COMMENT ON COLUMN traces.settings IS 'Framework settings and environment variables that change what a conv computes or how fast, as the runner reported them (JSON object of text).';
COMMENT ON COLUMN traces.settings_key IS 'The same settings as one canonical text (name=value sorted by name, joined by "; "): what fits group by.';
COMMENT ON COLUMN traces.sm_clock_mhz IS 'Median SM clock over the measured iterations (GPU); NULL when unknown.';
COMMENT ON COLUMN traces.power_w IS 'Median board power over the measured iterations, watts (GPU); NULL when unknown.';
COMMENT ON COLUMN fits.amp IS 'Automatic mixed precision of the fit''s traces ('''' off, fp16, bf16).';
COMMENT ON COLUMN fits.library_version IS 'On a GPU, the cuDNN version the fit''s traces ran with ('''' elsewhere or unknown).';
COMMENT ON COLUMN fits.settings IS 'The settings key the fit''s traces share (traces.settings_key).';
