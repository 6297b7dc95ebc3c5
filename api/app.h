/* What the HTTP layer needs from the process: borrowed for the server's lifetime. */
#ifndef JOBQ_APP_H
#define JOBQ_APP_H

#include <stdatomic.h>

#include "config.h"
#include "store.h"
#include "waitq.h"

struct auth;
struct workers;
struct sse_hub;
struct sqs_cache;
struct whdeliver;

struct app {
    struct store *store;
    struct waitq *waitq;
    const struct config *cfg;
    const struct auth *auth; /* bearer tokens (server/auth.h); NULL: no authentication */
    /* Store calls (writes and reads) submitted and not over (their connections are
     * suspended: pending.c), and 1 once new ones are refused (shutdown: http_stop). */
    atomic_long store_calls;
    atomic_int refuse_calls;
    /* The threads that run store reads (pending_read_submit): started by http_start(),
     * stopped by http_stop(). */
    struct workers *readers;
    /* The open GET /events streams (sse.h): started by http_start(), stopped by http_stop(). */
    struct sse_hub *streams;
    /* Webhook delivery (whdeliver.h), for /metrics; NULL on the SQS listener's app. */
    struct whdeliver *webhooks;
    /* The SQS front end (sqs.h): what its queue URLs start with (no trailing '/'); set
     * before its listener starts (right after, when it binds port 0). Empty on the native
     * listener's app. */
    char base_url[512];
    /* The SQS front end's copies of queue rows (sqs_cache.h); NULL on the native app. */
    struct sqs_cache *sqs_cache;
};

#endif
