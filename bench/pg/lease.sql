-- pg-lease: the plain queue of schema.sql with a lease, as a queue whose claims can be lost
-- keeps one: a claimed job holds a random token and a deadline, and an index finds the
-- leases that ran out (what a sweeper reads).
ALTER TABLE jobs ADD COLUMN lease_token bigint, ADD COLUMN lease_until timestamptz;
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE status = 'running';
