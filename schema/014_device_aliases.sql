-- Short names of device classes (aggregator alias), used where a full device
-- name is too long to read: predict's table and plot, and --prices and --gpu,
-- which accept an alias as well as a part of the name. A device without a row
-- here has a default alias derived from its name ("EPYC 2t" for
-- "AMD EPYC (2 threads) [...]"); a row set here replaces it.
CREATE TABLE device_aliases (
    device text PRIMARY KEY,
    alias  text NOT NULL UNIQUE
           CHECK (alias ~ '^[^,=#]+$' AND alias = btrim(alias) AND length(alias) <= 16),
    set_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX device_aliases_alias_lower_idx ON device_aliases (lower(alias));

COMMENT ON TABLE device_aliases IS 'Short names of device classes set with aggregator alias (a device without one has a default derived from its name).';
COMMENT ON COLUMN device_aliases.device IS 'The device name (devices.name) the alias stands for.';
COMMENT ON COLUMN device_aliases.alias IS 'At most 16 characters, no comma, = or #: it is used in --gpu lists and price files.';
COMMENT ON COLUMN device_aliases.set_at IS 'When the alias was set.';
