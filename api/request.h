/* Per-request state: allocated on the first access-handler call, freed only in the
 * completion callback (http.c). Handlers read it and answer through reply.h. */
#ifndef JOBQ_REQUEST_H
#define JOBQ_REQUEST_H

#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;
struct app;
struct route;

#define REQUEST_ID_MAX 200

struct request {
    struct MHD_Connection *conn;
    struct app *app;
    const char *method;        /* borrowed from libmicrohttpd */
    const char *url;           /* path only, borrowed */
    const struct route *route; /* set by the router */
    int64_t id;                /* {id} path parameter, 0 when the route has none */
    char *body;                /* NUL-terminated, NULL when empty */
    size_t body_len;
    size_t body_cap;
    int too_large; /* body passed --max-body-bytes: answer 413 */
    int role;      /* enum auth_role of the bearer token (server/auth.h), 0 when none */
    int denied;    /* enum access_denial (access.h), decided from the headers: when not 0,
                         * the body is discarded and a 401 or 403 is the answer */
    int answered;  /* a response was queued */
    int status;    /* the status answered, for the access log */
    size_t bytes;  /* the body answered, for the access log */
    /* X-Request-Id: the client's (1-200 of A-Z a-z 0-9 - _ .) or a new random one */
    char request_id[REQUEST_ID_MAX + 1];
    int64_t started_us; /* clock_mono_us() at the first call */
    /* The SQS front end (sqs.h): the action's name (static; NULL before it is known) and 1
     * when the request speaks the query protocol (its answers are XML). */
    const char *sqs_action;
    int sqs_query;
    /* A handler that needs to keep state across calls (a parked claim) stores it here;
     * http.c calls state_free(state) in the completion callback. */
    void *state;
    void (*state_free)(void *state);
};

#endif
