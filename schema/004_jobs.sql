-- Jobs for agents: conv benchmarks and training traces that a running
-- `aggregator serve` dispatches to a connected agent of the right device.
--
-- Enqueue by inserting a row in state 'queued' (aggregator predict does);
-- the insert notifies channel traincast_jobs and the server dispatches it to
-- an idle agent that announced a matching device and accepts jobs. Every
-- JobProgress the agent reports updates the row, is kept in job_events, and
-- notifies channel traincast_job_progress with the job id.

-- Agents running `agent serve` say so in their Hello.
ALTER TABLE agents ADD COLUMN accepts_jobs boolean NOT NULL DEFAULT false;

CREATE TABLE jobs (
    job_id        text PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('bench', 'trace')),
    -- Which device: any device of this name (a hardware class), or exactly
    -- the device with this uuid.
    device_name   text,
    device_uuid   text,
    -- The packed traincast.v1.BenchRequest or TraceRequest; its job_id and
    -- device_uuid are filled in at dispatch.
    request       bytea NOT NULL,
    summary       text,
    state         text NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'dispatched', 'running', 'done', 'failed')),
    attempts      integer NOT NULL DEFAULT 0,
    agent_id      text,
    assigned_uuid text,
    done          integer NOT NULL DEFAULT 0,
    total         integer NOT NULL DEFAULT 0,
    message       text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    dispatched_at timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    CHECK (device_name IS NOT NULL OR device_uuid IS NOT NULL)
);
CREATE INDEX jobs_queued_idx ON jobs (created_at) WHERE state = 'queued';
CREATE INDEX jobs_agent_idx ON jobs (agent_id) WHERE state IN ('dispatched', 'running');

-- Every JobProgress received, in order.
CREATE TABLE job_events (
    job_id     text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    message_id text NOT NULL,
    agent_id   text NOT NULL,
    state      text NOT NULL,
    done       integer NOT NULL,
    total      integer NOT NULL,
    message    text,
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_events_job_idx ON job_events (job_id, at);

CREATE FUNCTION jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'queued' AND (TG_OP = 'INSERT' OR OLD.state IS DISTINCT FROM 'queued') THEN
        PERFORM pg_notify('traincast_jobs', NEW.job_id);
    END IF;
    IF TG_OP = 'UPDATE' THEN
        PERFORM pg_notify('traincast_job_progress', NEW.job_id);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER jobs_notify AFTER INSERT OR UPDATE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_notify();

-- Devices whose agent accepts jobs and was heard from in the last 30 s (the
-- default heartbeat is 5 s): where a queued job can run now.
CREATE VIEW devices_online AS
SELECT d.device_id, d.name, d.uuid, d.kind, d.host, a.agent_id, a.last_seen, a.spool_backlog
FROM devices d
JOIN agents a USING (agent_id)
WHERE a.accepts_jobs AND a.last_seen > now() - interval '30 seconds';

-- Jobs with their latest progress, newest first.
CREATE VIEW job_overview AS
SELECT j.job_id, j.kind, coalesce(j.device_name, j.device_uuid) AS device, j.state, j.done,
       j.total, j.agent_id, j.attempts, j.summary, j.message, j.created_at, j.dispatched_at,
       j.finished_at
FROM jobs j
ORDER BY j.created_at DESC;
