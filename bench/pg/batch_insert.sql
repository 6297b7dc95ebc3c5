-- batched producers: :batch jobs per transaction while fewer than :backlog jobs wait.
WITH ins AS (
    INSERT INTO jobs (payload)
    SELECT '{"t": 0}' FROM generate_series(1, :batch)
    WHERE (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE queue = 'bench' AND status = 'queued'
                                 LIMIT :backlog) waiting) < :backlog
    RETURNING 1)
SELECT count(*) AS inserted FROM ins \gset
\if :inserted = 0
\sleep 1 ms
\endif
