-- Agent identity bound to keys, and roles for least privilege.

-- The CURVE public key that first stored a message under each agent id. A
-- message under that id from any other key is refused (and logged). An
-- operator who rotates an agent's key releases the old binding with
--     DELETE FROM agent_keys WHERE agent_id = '...';
-- Agents of an aggregator running --insecure have no key and bind nothing.
CREATE TABLE agent_keys (
    agent_id      text PRIMARY KEY,
    public_key    text NOT NULL CHECK (length(public_key) = 40),
    registered_at timestamptz NOT NULL DEFAULT now()
);

-- Two group roles (NOLOGIN; they are the same in every database of the
-- cluster): traincast_writer holds exactly what `aggregator serve` needs,
-- traincast_reader may read everything an analyst queries. Log-in roles
-- are made members by the operator (docs/operator-guide.md, "Database
-- roles"):
--     CREATE ROLE traincast_serve LOGIN PASSWORD '...' IN ROLE traincast_writer;
--     CREATE ROLE analyst LOGIN PASSWORD '...' IN ROLE traincast_reader;
-- Creating roles needs CREATEROLE: a migrating user without it skips them
-- with a notice, `aggregator migrate` says so, and an administrator runs the
-- CREATE ROLE statements and the GRANTs below by hand. `aggregator serve`
-- checks at start that its role holds every privilege it needs, and warns
-- when it connects as a superuser or as the owner of the tables.
DO $$
DECLARE
    can_create boolean;
BEGIN
    SELECT rolcreaterole OR rolsuper INTO can_create FROM pg_roles WHERE rolname = current_user;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_writer') THEN
        IF can_create THEN
            BEGIN
                CREATE ROLE traincast_writer NOLOGIN;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- made meanwhile by a migration of another database
            END;
        ELSE
            RAISE NOTICE 'traincast: role traincast_writer not created (% may not create roles); '
                         'an administrator runs: CREATE ROLE traincast_writer NOLOGIN; then the '
                         'GRANT statements of schema/005_security.sql', current_user;
        END IF;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_reader') THEN
        IF can_create THEN
            BEGIN
                CREATE ROLE traincast_reader NOLOGIN;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- made meanwhile by a migration of another database
            END;
        ELSE
            RAISE NOTICE 'traincast: role traincast_reader not created (% may not create roles); '
                         'an administrator runs: CREATE ROLE traincast_reader NOLOGIN; then the '
                         'GRANT statements of schema/005_security.sql', current_user;
        END IF;
    END IF;

    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_writer') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO traincast_writer', current_schema());
        GRANT SELECT ON schema_version TO traincast_writer;
        GRANT SELECT, INSERT, UPDATE ON agents, devices, models, jobs TO traincast_writer;
        GRANT SELECT, INSERT ON conv_configs, conv_results, conv_algo_timings, traces,
            trace_iterations, trace_op_times, received_messages, job_events, agent_keys
            TO traincast_writer;
        GRANT SELECT, INSERT, DELETE ON model_layers, model_convs TO traincast_writer;
        GRANT USAGE ON SEQUENCE devices_device_id_seq, conv_configs_config_id_seq,
            conv_results_result_id_seq, traces_trace_id_seq TO traincast_writer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'traincast_reader') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO traincast_reader', current_schema());
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO traincast_reader',
                       current_schema());
        -- Tables and views of later migrations, made by the same migrating user.
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO '
                       'traincast_reader', current_schema());
    END IF;
END
$$;
