-- A plain PostgreSQL job queue, claimed with FOR UPDATE SKIP LOCKED: the same claim order as
-- jobq (priority desc, run_at, id), and the finished rows kept (like jobq keeps them until its
-- retention) with the times that give the enqueue -> complete latency.
DROP TABLE IF EXISTS jobs;
CREATE TABLE jobs (
    id bigserial PRIMARY KEY,
    queue text NOT NULL DEFAULT 'bench',
    status text NOT NULL DEFAULT 'queued',
    payload jsonb NOT NULL,
    priority int NOT NULL DEFAULT 0,
    run_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    done_at timestamptz
);
CREATE INDEX jobs_claim ON jobs (queue, priority DESC, run_at, id) WHERE status = 'queued';
