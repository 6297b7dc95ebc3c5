-- full-speed lifecycle producers: one job per transaction while fewer than :backlog jobs wait
-- (the load generator bounds jobq's and beanstalkd's backlog the same way); else pause 1 ms.
WITH ins AS (
    INSERT INTO jobs (payload)
    SELECT '{"t": 0}'
    WHERE (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE queue = 'bench' AND status = 'queued'
                                 LIMIT :backlog) waiting) < :backlog
    RETURNING 1)
SELECT count(*) AS inserted FROM ins \gset
\if :inserted = 0
\sleep 1 ms
\endif
