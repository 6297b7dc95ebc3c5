/* The jobq API calls the generator makes, on a thread's own connection. Failures are counted
 * as the thread's errors (count_error) and printed the first few times. */
#ifndef BENCH_JOBQ_API_H
#define BENCH_JOBQ_API_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "jscan.h"

#define CLAIM_MAX 100           /* the API's bound on max_jobs */
#define BODY_MAX (CONN_BUF / 2) /* the largest request body the generator builds */
#define DELAY_SECONDS 2592000L  /* delayed jobs of the history: 30 days away */

/* POST body (len bytes) to path on c. Returns the HTTP status, or -1 after a connection
 * failure (why in c->err); *resp is valid until the next call on c. */
int jq_post(struct conn *c, const char *path, const char *body, size_t len, struct http_resp *resp);

/* Count an error of ts for the call what: a connection failure (status -1) or an answer. */
void jq_report(struct tstate *ts, const char *what, int status, const struct http_resp *resp);

/* Write into out (cap bytes) the body of a batch enqueue of n jobs into queue q, each with
 * payload {"t": t}, and "delay_seconds": delay when delay > 0. Returns its length (cap when it
 * did not fit). This function can't fail. */
size_t jq_batch_body(char *out, size_t cap, const char *q, int n, int64_t t, long delay);

/* Claim up to max (at most CLAIM_MAX) jobs of the run's queue for ts, waiting up to wait
 * seconds, into out[]. Returns the count (0: none), or -1 after counting an error. */
int jq_claim(struct tstate *ts, int max, int wait, struct claimed *out);

/* Complete job j with its lease token. Returns 0, or -1 after counting an error. */
int jq_complete(struct tstate *ts, const struct claimed *j);

/* Enqueue one job with payload {"t": t} into the run's queue. Returns 0, or -1 after counting
 * an error. */
int jq_enqueue(struct tstate *ts, int64_t t);

/* Prepare a drain or claim run: enqueue opts.prefill due jobs in batches (unless
 * opts.no_prefill). Returns 0, or -1 after printing why. */
int jobq_prefill(struct run *r);

/* Leave opts.finished succeeded jobs and opts.delayed delayed jobs in the run's queue, through
 * the API: batch enqueue, claim max_jobs 100, complete each; then batches with delay_seconds.
 * Stops at opts.timeout seconds. Returns 0, or -1 after printing why. */
int jobq_history(struct run *r);

#endif
