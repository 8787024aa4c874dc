-- The references of conv results checked once per statement instead of once per row.
--
-- conv_results and conv_algo_timings are written by COPY, hundreds of rows per statement, and
-- the rows of one message name one device and a few configs. A FOREIGN KEY checks and locks its
-- parent row once per child row (an executor started per row): while ingesting, that was about
-- 40 % of the database's time (docs/transport.md, "References checked per statement"). The
-- triggers below keep the same rules:
--   * a result names an existing device and config, a timing an existing result; the distinct
--     keys of each INSERT, COPY or UPDATE are looked up in one query, which locks the parent rows
--     FOR KEY SHARE as a foreign key does (a concurrent delete of one waits for the writer to
--     commit and then fails; a delete that came first makes the insert fail);
--   * a device or config that results refer to is not deleted (nor truncated while results
--     exist); deleting results deletes their timings (was ON DELETE CASCADE);
--   * the keys these rules rest on (devices.device_id, conv_configs.config_id,
--     conv_results.result_id) are surrogate keys and never change: an UPDATE that changes one
--     is refused.
-- A violation is SQLSTATE 23503 (foreign_key_violation), as from a foreign key, with the key in
-- the detail. One difference: the check on delete reads with the statement's snapshot, so under
-- REPEATABLE READ a delete could miss a result committed after its snapshot; traincast itself
-- deletes none of these rows, and an operator who does should do so at the default READ
-- COMMITTED. traces and model_convs keep their foreign keys (a few rows per message).

ALTER TABLE conv_algo_timings DROP CONSTRAINT conv_algo_timings_result_id_fkey;
ALTER TABLE conv_results DROP CONSTRAINT conv_results_device_id_fkey,
                         DROP CONSTRAINT conv_results_config_id_fkey;

-- The references of the rows of the transition table new_rows, a statement's rows of
-- conv_results (a device and a config each) or of conv_algo_timings (a result each): for each
-- reference, the statement's distinct keys less the parent rows found, and locked FOR KEY SHARE
-- as a foreign key locks them. Runs as the tables' owner, as a foreign key's check does
-- (locking rows needs more than the writer role's INSERT).
-- The statements are written out, not built with format(): a static statement is planned once
-- per connection, and planning was most of the cost for a statement of one row (an agent's
-- single result: 0.4 ms a message, against 0.05 ms for the foreign keys). As that plan is made
-- at the connection's first call, perhaps on empty tables, the parents are always reached by
-- their key's index (enable_seqscan off), never by a scan that grows with the table.
CREATE FUNCTION tc_check_references() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET enable_seqscan = off AS $$
DECLARE
    short_device bigint := 0;
    short_config bigint := 0;
    short_result bigint := 0;
    ref    record;
    absent bigint;
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'conv_results' THEN
        SELECT (SELECT count(DISTINCT device_id) FROM new_rows)
             - (SELECT count(*) FROM (SELECT 1 FROM devices p
                                      WHERE p.device_id IN (SELECT device_id FROM new_rows)
                                      FOR KEY SHARE OF p) locked),
               (SELECT count(DISTINCT config_id) FROM new_rows)
             - (SELECT count(*) FROM (SELECT 1 FROM conv_configs p
                                      WHERE p.config_id IN (SELECT config_id FROM new_rows)
                                      FOR KEY SHARE OF p) locked)
          INTO short_device, short_config;
    WHEN 'conv_algo_timings' THEN
        SELECT (SELECT count(DISTINCT result_id) FROM new_rows)
             - (SELECT count(*) FROM (SELECT 1 FROM conv_results p
                                      WHERE p.result_id IN (SELECT result_id FROM new_rows)
                                      FOR KEY SHARE OF p) locked)
          INTO short_result;
    END CASE;
    IF short_device + short_config + short_result = 0 THEN
        RETURN NULL;
    END IF;
    FOR ref IN SELECT * FROM (VALUES ('device_id', 'devices', short_device),
                                     ('config_id', 'conv_configs', short_config),
                                     ('result_id', 'conv_results', short_result)) v (col, parent, short)
               WHERE v.short > 0 LOOP
        EXECUTE format('SELECT n.%1$I FROM new_rows n WHERE NOT EXISTS '
                       '(SELECT 1 FROM %2$I p WHERE p.%1$I = n.%1$I) LIMIT 1', ref.col, ref.parent)
            INTO absent;
        RAISE EXCEPTION 'insert or update on table "%" violates its reference to table "%"',
                        TG_TABLE_NAME, ref.parent
            USING ERRCODE = 'foreign_key_violation',
                  DETAIL = format('Key (%s)=(%s) is not present in table "%s".',
                                  ref.col, absent, ref.parent),
                  TABLE = TG_TABLE_NAME;
    END LOOP;
    RETURN NULL;
END
$$;

-- No row of old_rows may still be referred to by table TG_ARGV[0] through its column
-- TG_ARGV[1] (the deleted table's key of the same name).
CREATE FUNCTION tc_refuse_referenced_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    child text := TG_ARGV[0];
    col   text := TG_ARGV[1];
    used  bigint;
BEGIN
    EXECUTE format('SELECT o.%2$I FROM old_rows o WHERE EXISTS '
                   '(SELECT 1 FROM %1$I c WHERE c.%2$I = o.%2$I) LIMIT 1', child, col)
        INTO used;
    IF used IS NOT NULL THEN
        RAISE EXCEPTION 'delete on table "%" violates the reference from table "%"',
                        TG_TABLE_NAME, child
            USING ERRCODE = 'foreign_key_violation',
                  DETAIL = format('Key (%s)=(%s) is still referenced from table "%s".',
                                  col, used, child),
                  TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END
$$;

-- TRUNCATE of a table that table TG_ARGV[0] refers to, while that table has rows.
CREATE FUNCTION tc_refuse_referenced_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    has_rows boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', TG_ARGV[0]) INTO has_rows;
    IF has_rows THEN
        RAISE EXCEPTION 'cannot truncate table "%" while table "%" refers to it',
                        TG_TABLE_NAME, TG_ARGV[0]
            USING ERRCODE = 'foreign_key_violation',
                  HINT = format('Truncate table "%s" first.', TG_ARGV[0]);
    END IF;
    RETURN NULL;
END
$$;

-- An UPDATE that changes key TG_ARGV[0] (the trigger's WHEN clause says it does).
CREATE FUNCTION tc_refuse_key_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the key % of table "%" does not change: other tables refer to it',
                    TG_ARGV[0], TG_TABLE_NAME
        USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME;
END
$$;

-- The timings of deleted results go with them.
CREATE FUNCTION tc_delete_result_timings() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    DELETE FROM conv_algo_timings t USING old_rows o WHERE t.result_id = o.result_id;
    RETURN NULL;
END
$$;

CREATE FUNCTION tc_truncate_result_timings() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    TRUNCATE conv_algo_timings;
    RETURN NULL;
END
$$;

-- The functions that run as the owner find the tables in this schema and temporary tables
-- last, so that no one calling them can put a table of the same name in their way.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['tc_check_references()', 'tc_refuse_referenced_delete()',
                             'tc_refuse_referenced_truncate()', 'tc_delete_result_timings()',
                             'tc_truncate_result_timings()'] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

CREATE TRIGGER references_checked AFTER INSERT ON conv_results
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tc_check_references();
CREATE TRIGGER references_checked_on_update AFTER UPDATE ON conv_results
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tc_check_references();
CREATE TRIGGER references_checked AFTER INSERT ON conv_algo_timings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tc_check_references();
CREATE TRIGGER references_checked_on_update AFTER UPDATE ON conv_algo_timings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tc_check_references();

CREATE TRIGGER referenced_by_results AFTER DELETE ON devices
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION tc_refuse_referenced_delete('conv_results', 'device_id');
CREATE TRIGGER referenced_by_results AFTER DELETE ON conv_configs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION tc_refuse_referenced_delete('conv_results', 'config_id');
CREATE TRIGGER referenced_by_results_truncate BEFORE TRUNCATE ON devices
    FOR EACH STATEMENT EXECUTE FUNCTION tc_refuse_referenced_truncate('conv_results');
CREATE TRIGGER referenced_by_results_truncate BEFORE TRUNCATE ON conv_configs
    FOR EACH STATEMENT EXECUTE FUNCTION tc_refuse_referenced_truncate('conv_results');
CREATE TRIGGER timings_deleted AFTER DELETE ON conv_results
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION tc_delete_result_timings();
CREATE TRIGGER timings_truncated AFTER TRUNCATE ON conv_results
    FOR EACH STATEMENT EXECUTE FUNCTION tc_truncate_result_timings();

CREATE TRIGGER key_fixed BEFORE UPDATE OF device_id ON devices FOR EACH ROW
    WHEN (OLD.device_id IS DISTINCT FROM NEW.device_id)
    EXECUTE FUNCTION tc_refuse_key_change('device_id');
CREATE TRIGGER key_fixed BEFORE UPDATE OF config_id ON conv_configs FOR EACH ROW
    WHEN (OLD.config_id IS DISTINCT FROM NEW.config_id)
    EXECUTE FUNCTION tc_refuse_key_change('config_id');
CREATE TRIGGER key_fixed BEFORE UPDATE OF result_id ON conv_results FOR EACH ROW
    WHEN (OLD.result_id IS DISTINCT FROM NEW.result_id)
    EXECUTE FUNCTION tc_refuse_key_change('result_id');

COMMENT ON TRIGGER references_checked ON conv_results IS 'The foreign keys conv_results.device_id -> devices and config_id -> conv_configs, checked once per statement (schema/010_batched_references.sql).';
COMMENT ON TRIGGER references_checked ON conv_algo_timings IS 'The foreign key conv_algo_timings.result_id -> conv_results, checked once per statement (schema/010_batched_references.sql).';
COMMENT ON TRIGGER timings_deleted ON conv_results IS 'Deleting results deletes their algorithm timings (ON DELETE CASCADE of the former foreign key).';
