-- workers: claim the next due job and complete it, in one transaction; pause 1 ms when none.
WITH done AS (
    UPDATE jobs SET status = 'done', done_at = clock_timestamp()
    WHERE id = (SELECT id FROM jobs
                WHERE queue = 'bench' AND status = 'queued' AND run_at <= now()
                ORDER BY priority DESC, run_at, id
                LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING 1)
SELECT count(*) AS claimed FROM done \gset
\if :claimed = 0
\sleep 1 ms
\endif
