/* Job expiry: a job still queued (or blocked: not claimed) when its expires_at comes is never
 * claimed; the sweeper cancels it with error_code "expired" (and a blocked one's dependents
 * as for any cancel). Pure functions: no I/O, no clock (now is given). */
#ifndef JOBQ_EXPIRY_H
#define JOBQ_EXPIRY_H

#include <stdint.h>

#include "job.h"

#define EXPIRY_IN_MAX 31536000 /* expires_in_seconds */

/* Check an enqueue's expires_at and expires_in_seconds (each JOB_NONE when absent) at the
 * server's now: not both; expires_in_seconds 1..EXPIRY_IN_MAX; expires_at after now (an
 * expires_at at or before now is in the past) and at most JOB_RUN_AT_MAX. Returns NULL when
 * valid, else the field to name in the message: "expires_at and expires_in_seconds" (both
 * given), "expires_in_seconds" or "expires_at". This function can't fail. */
const char *expiry_check(int64_t expires_at, int64_t expires_in, int64_t now);

/* The expires_at a job keeps, from checked values, resolved at the store's now (as
 * job_spec_run_at resolves a delay: a relative time is never measured on one clock and kept
 * on another): expires_at when given, else now + expires_in when given, else JOB_NONE. This
 * function can't fail. */
int64_t expiry_resolve(int64_t expires_at, int64_t expires_in, int64_t now);

/* 1 when a job with this expires_at (JOB_NONE: never) is expired at now: now >= expires_at.
 * At expires_at itself the job is already expired: a claim takes a queued job only while
 * now < expires_at, and the sweeper cancels a queued or blocked one from then on. A running
 * job is not expired by it; if it is requeued after its expires_at, it is never claimed again.
 * This function can't fail. */
int expiry_passed(int64_t expires_at, int64_t now);

#endif
