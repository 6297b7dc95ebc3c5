-- enqueue only, and paced producers (pgbench -R): one job per transaction.
INSERT INTO jobs (payload) VALUES ('{"t": 0}');
