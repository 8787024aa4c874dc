-- Energy of training (docs/trace-protocol.md, docs/user-guide.md): a trace
-- records the energy of one measured step and the counter that measured it
-- (NVML's board energy on a GPU, the RAPL package counters on the CPU), or
-- why it could not (no counter is guessed at).
ALTER TABLE traces ADD COLUMN energy_j double precision
    CHECK (energy_j IS NULL OR energy_j >= 0);
ALTER TABLE traces ADD COLUMN energy_source text
    CHECK (energy_source IS NULL OR energy_source IN ('nvml', 'rapl'));
ALTER TABLE traces ADD COLUMN energy_absent text;

-- The mean power of each device class while it trains, per framework and
-- dtype: the median over its traces of energy per step / time per step.
-- predict multiplies a predicted epoch time by it.
CREATE VIEW device_training_power AS
SELECT d.name AS device, t.framework, t.dtype, coalesce(t.amp, '') AS amp,
       min(t.energy_source) AS energy_source,
       count(*) AS traces,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.energy_j * 1000.0 / t.median_ms) AS watts,
       min(t.energy_j * 1000.0 / t.median_ms) AS min_watts,
       max(t.energy_j * 1000.0 / t.median_ms) AS max_watts
FROM traces t JOIN devices d USING (device_id)
WHERE t.status = 'ok' AND t.energy_j IS NOT NULL AND t.median_ms > 0
GROUP BY d.name, t.framework, t.dtype, coalesce(t.amp, '');

COMMENT ON COLUMN traces.energy_j IS 'Energy of one measured training step, joules (NULL: not measured; energy_absent says why).';
COMMENT ON COLUMN traces.energy_source IS 'The counter that measured energy_j: nvml (the GPU board''s total energy) or rapl (the CPU packages, whole-package: other work on the machine counts too).';
COMMENT ON COLUMN traces.energy_absent IS 'Why the trace has no energy (no RAPL domain, counter not readable, NVML energy unsupported).';
COMMENT ON VIEW device_training_power IS 'Mean power of each device class while training, from the traces that measured energy: what predict''s energy per epoch uses.';
COMMENT ON COLUMN device_training_power.device IS 'Device class (devices.name).';
COMMENT ON COLUMN device_training_power.framework IS 'Framework of the traces.';
COMMENT ON COLUMN device_training_power.dtype IS 'Data type of the traces.';
COMMENT ON COLUMN device_training_power.amp IS 'Automatic mixed precision of the traces ('''' off).';
COMMENT ON COLUMN device_training_power.energy_source IS 'The counter (nvml or rapl).';
COMMENT ON COLUMN device_training_power.traces IS 'Traces with energy.';
COMMENT ON COLUMN device_training_power.watts IS 'Median over those traces of energy per step / time per step, watts.';
COMMENT ON COLUMN device_training_power.min_watts IS 'Smallest of them.';
COMMENT ON COLUMN device_training_power.max_watts IS 'Largest of them.';

-- A stored prediction's energy per epoch, where the device has power data.
ALTER TABLE predictions ADD COLUMN energy_kj double precision;
COMMENT ON COLUMN predictions.energy_kj IS 'Predicted energy of one epoch, kJ: epoch_s times the device''s training power (device_training_power); NULL when no trace of the device measured energy.';
