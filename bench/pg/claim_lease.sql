-- pg-lease workers: claim the next due job with a lease (one transaction), then complete it
-- only while the lease is its own (a second transaction), as a leasing queue's worker does
-- in two calls; pause 1 ms when none is due.
WITH claimed AS (
    UPDATE jobs SET status = 'running', lease_until = clock_timestamp() + interval '30 s',
                    lease_token = (random() * 9e18)::bigint
    WHERE id = (SELECT id FROM jobs
                WHERE queue = 'bench' AND status = 'queued' AND run_at <= now()
                ORDER BY priority DESC, run_at, id
                LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, lease_token)
SELECT count(*) AS claimed, coalesce(max(id), 0) AS jid, coalesce(max(lease_token), 0) AS tok
FROM claimed \gset
\if :claimed = 0
\sleep 1 ms
\else
UPDATE jobs SET status = 'done', done_at = clock_timestamp(), lease_token = NULL,
                lease_until = NULL
WHERE id = :jid AND status = 'running' AND lease_token = :tok AND lease_until > clock_timestamp();
\endif
