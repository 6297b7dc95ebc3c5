-- batched workers: claim up to :max_jobs due jobs and complete them, in one transaction.
WITH done AS (
    UPDATE jobs SET status = 'done', done_at = clock_timestamp()
    WHERE id = ANY (ARRAY(SELECT id FROM jobs
                          WHERE queue = 'bench' AND status = 'queued' AND run_at <= now()
                          ORDER BY priority DESC, run_at, id
                          LIMIT :max_jobs FOR UPDATE SKIP LOCKED))
    RETURNING 1)
SELECT count(*) AS claimed FROM done \gset
\if :claimed = 0
\sleep 1 ms
\endif
