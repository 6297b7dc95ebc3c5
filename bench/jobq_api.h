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

/* What the jobs of a batch enqueue carry besides their queue. */
struct jq_spec {
    int64_t t;       /* the payload {"t": t} */
    long delay;      /* "delay_seconds" when > 0 */
    int priority;    /* "priority" when not 0 */
    const char *key; /* "concurrency_key" when not NULL: key itself, or key-I when nkeys > 0 */
    int nkeys;       /* jobs spread over key-0 .. key-(nkeys-1), the I of job number i */
};

/* Write into out (cap bytes) the body of a batch enqueue of n jobs into queue q, each with
 * payload {"t": t}, and "delay_seconds": delay when delay > 0. Returns its length (cap when it
 * did not fit). This function can't fail. */
size_t jq_batch_body(char *out, size_t cap, const char *q, int n, int64_t t, long delay);

/* The same for jobs of spec; first numbers the first job (for spec->nkeys). */
size_t jq_batch_body_spec(char *out, size_t cap, const char *q, int n, long first,
                          const struct jq_spec *spec);

/* PUT /limits/{key} {"max_running": max} on c. Returns the HTTP status, or -1 after a
 * connection failure. */
int jq_put_limit(struct conn *c, const char *key, int max, struct http_resp *resp);

/* Claim up to max (at most CLAIM_MAX) jobs of the run's queue for ts, waiting up to wait
 * seconds, into out[]. Returns the count (0: none), or -1 after counting an error. */
int jq_claim(struct tstate *ts, int max, int wait, struct claimed *out);

/* The same with a lease of lease seconds (jq_claim's: 600). */
int jq_claim_lease(struct tstate *ts, int max, int wait, int lease, struct claimed *out);

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

/* Prepare the head-of-line scenario (hol): with opts.saturated > 0, a limit of max_running 1
 * on the key HOL_KEY, opts.saturated queued jobs of it at priority 10 (payload t HOL_T_HOT)
 * and one of them claimed and held; then 10 jobs of one free key at priority 0, claimed one
 * by one at once (their latency goes into the result line: first_claim_ms, ten_claims_ms),
 * and completed; then opts.prefill jobs at priority 0 spread over 16 free keys, which the
 * workers claim and complete as in drain. With opts.saturated 0: the same on a queue with no
 * limit and nothing ahead (the reference). Returns 0, or -1 after printing why. */
int jobq_hol(struct run *r);

#define HOL_KEY "bench-hot"
#define HOL_T_HOT 2 /* payload t of the saturated key's jobs; the free ones carry 1 */

#endif
