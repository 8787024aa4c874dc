-- The matmuls of each model beside its convs (docs/matmul-benchmarks.md), so that a fit can
-- subtract their benchmarked time from the traces as it subtracts the convs', and whether a
-- fit did so. Models stored from graphs of older agents keep matmuls_listed false: their
-- matmuls are unknown, and a fit over them sums convs alone, as before.

CREATE TABLE model_matmuls (
    model_id     text NOT NULL REFERENCES models (model_id) ON DELETE CASCADE,
    config_id    bigint NOT NULL REFERENCES matmul_configs (config_id),
    grad_a       boolean NOT NULL,
    grad_b       boolean NOT NULL,
    multiplicity integer NOT NULL CHECK (multiplicity > 0),
    PRIMARY KEY (model_id, config_id, grad_a, grad_b)
);

ALTER TABLE models ADD COLUMN matmuls_listed boolean NOT NULL DEFAULT false;
ALTER TABLE fits ADD COLUMN matmuls boolean NOT NULL DEFAULT false;
ALTER TABLE fit_points ADD COLUMN matmul_ms double precision;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_writer') THEN
        GRANT SELECT, INSERT, DELETE ON model_matmuls TO traincast_writer;
    END IF;
END
$$;

COMMENT ON TABLE model_matmuls IS 'The matmul configs of each model (Gemm, MatMul of matrices) with what its training step runs and how often each occurs.';
COMMENT ON COLUMN model_matmuls.model_id IS 'The model (models).';
COMMENT ON COLUMN model_matmuls.config_id IS 'The matmul shape (matmul_configs).';
COMMENT ON COLUMN model_matmuls.grad_a IS 'Its operand A needs a gradient: the step runs bwd_data.';
COMMENT ON COLUMN model_matmuls.grad_b IS 'Its operand B needs a gradient: the step runs bwd_filter.';
COMMENT ON COLUMN model_matmuls.multiplicity IS 'How many layers of the model have this config and gradients.';
COMMENT ON COLUMN models.matmuls_listed IS 'The agent listed the model''s matmuls (model_matmuls; none there then means none); false for graphs of older agents.';
COMMENT ON COLUMN fits.matmuls IS 'The fit subtracted the benchmarked matmuls from the traces with the convs (predict adds them back); false: matmuls were regressed with the rest.';
COMMENT ON COLUMN fit_points.matmul_ms IS 'The point''s benchmarked matmul time by the step rule, where its fit benchmarked matmuls (fits.matmuls); conv_ms + matmul_ms is then the part the regression did not predict. NULL otherwise.';
