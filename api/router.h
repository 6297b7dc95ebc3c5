/* The one route table. 404 and 405 (with Allow) are decided here, never by a handler.
 * The table mirrors openapi.yaml; tests/openapi checks that the two agree. */
#ifndef JOBQ_ROUTER_H
#define JOBQ_ROUTER_H

#include <microhttpd.h>
#include <stdio.h>

#include "auth.h"
#include "request.h"

typedef enum MHD_Result (*handler_fn)(struct request *rq);

struct route {
    const char *method;  /* "GET", "POST" */
    const char *pattern; /* "/jobs/{id}/complete": {id} matches a positive int64; {name}
                          * any non-empty segment; {key}, last, the rest of the path (not
                          * empty, '/' included) */
    handler_fn handler;
    int reads_body; /* 1: the handler takes a JSON body */
    /* Who may call it when --auth-token-file is given (server/auth.h). Left out of a row, it
     * is AUTH_ACCESS_ADMIN: a new route is admin-only until it says otherwise. */
    enum auth_access access;
};

enum route_match { ROUTE_FOUND = 0, ROUTE_NOT_FOUND, ROUTE_BAD_METHOD };

/* Match method and path. ROUTE_FOUND: *out and *id are set (id 0 when the pattern has none).
 * ROUTE_BAD_METHOD: the path exists with other methods, listed in allow (", "-separated,
 * allow_len bytes including NUL). ROUTE_NOT_FOUND otherwise. This function can't fail. */
enum route_match router_match(const char *method, const char *path, const struct route **out,
                              long long *id, char *allow, size_t allow_len);

/* Match and, for ROUTE_FOUND, call the route's handler; otherwise answer 404 or 405.
 * rq->route and rq->id are set before the handler runs. */
enum MHD_Result router_dispatch(struct request *rq);

/* The route table, for the openapi check: writes one "METHOD PATTERN" line per route. */
void router_print(FILE *out);

/* The route table itself and its length. */
extern const struct route router_table[];
extern const size_t router_table_len;

#endif
