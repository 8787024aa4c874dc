-- Per-device regression fits of the non-conv training time (aggregator fit).
-- A fit is never updated: a new fit of the same device, framework, policy and
-- dtype is a new row, and `latest_fit` shows the newest. Documented in
-- docs/fitting.md.

CREATE TABLE fits (
    fit_id          bigserial PRIMARY KEY,
    device          text NOT NULL,      -- device name: devices sharing a name share a fit
    framework       text NOT NULL,
    policy          text,               -- the traces' algorithm policy; NULL where none
    dtype           text NOT NULL,
    conv_policy     text NOT NULL,      -- policy of the conv benchmarks summed
    form            text NOT NULL CHECK (form IN ('ols', 'nnls', 'ridge', 'robust')),
    weighting       text NOT NULL CHECK (weighting IN ('none', 'relative')),
    -- non-conv ms = sum over i of coefficients[i] * value of features[i]
    features        text[] NOT NULL,
    coefficients    double precision[] NOT NULL,
    covariance      double precision[] NOT NULL,  -- p x p, ms^2 per unit^2 (empty when p = 0)
    -- residual standard error: ms (weighting none) or a fraction of the
    -- measured time (weighting relative)
    rse             double precision,
    dof             double precision NOT NULL,
    ridge_lambda    double precision,   -- on the standardized design; NULL unless ridge
    candidates      text[] NOT NULL,    -- the features the selection could choose from
    -- the data: points are (model, batch) pairs with successful traces
    n_points        integer NOT NULL CHECK (n_points > 0),
    n_cnns          integer NOT NULL CHECK (n_cnns > 0),
    models          text[] NOT NULL,
    batches         integer[] NOT NULL,
    excluded_oom    integer NOT NULL DEFAULT 0,
    excluded_failed integer NOT NULL DEFAULT 0,
    -- leave-one-CNN-out of the whole procedure (selection included), percent
    cv_mape         double precision,
    cv_median_ape   double precision,
    cv_max_ape      double precision,
    selection_mape  double precision,   -- the chosen model's score while choosing
    conv_only_mape  double precision,   -- predicting the conv sum alone
    data_through    timestamptz,        -- newest trace start among the points
    fitted_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (cardinality(features) = cardinality(coefficients)),
    CHECK (cardinality(covariance) = cardinality(features) * cardinality(features))
);
CREATE INDEX fits_lookup_idx ON fits (device, framework, dtype, fitted_at DESC);

-- Every point a fit was made from, with its held-out prediction.
CREATE TABLE fit_points (
    fit_id         bigint NOT NULL REFERENCES fits (fit_id) ON DELETE CASCADE,
    model_id       text NOT NULL,
    cnn            text NOT NULL,
    batch          integer NOT NULL,
    traces         integer NOT NULL,
    measured_ms    double precision NOT NULL,
    conv_ms        double precision NOT NULL,
    fitted_ms      double precision NOT NULL,  -- conv + the fit's non-conv prediction
    held_out_ms    double precision,           -- the nested leave-one-CNN-out prediction
    feature_values double precision[] NOT NULL, -- the fit's features, in its order
    PRIMARY KEY (fit_id, model_id, batch)
);

-- The newest fit per device, framework, policy and dtype: what predict uses.
CREATE VIEW latest_fit AS
SELECT DISTINCT ON (device, framework, policy, dtype) *
FROM fits
ORDER BY device, framework, policy, dtype, fitted_at DESC, fit_id DESC;

-- Held-out error per fit and CNN.
CREATE VIEW fit_cnn_error AS
SELECT p.fit_id, f.device, f.framework, f.policy, f.dtype, p.cnn, count(*) AS points,
       avg(100 * abs(p.held_out_ms - p.measured_ms) / p.measured_ms) AS mape,
       max(100 * abs(p.held_out_ms - p.measured_ms) / p.measured_ms) AS max_ape
FROM fit_points p
JOIN fits f USING (fit_id)
WHERE p.held_out_ms IS NOT NULL
GROUP BY p.fit_id, f.device, f.framework, f.policy, f.dtype, p.cnn;
