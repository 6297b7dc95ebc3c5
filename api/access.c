/* The access check of a request (see access.h). */
#include "access.h"

#include <string.h>
#include <strings.h>

#include "app.h"
#include "auth.h"
#include "reply.h"
#include "router.h"

int access_bearer_token(const char *value, const char **tok, size_t *len)
{
    static const char scheme[] = "Bearer";
    if (!value)
        return -1;
    value += strspn(value, " \t");
    if (strncasecmp(value, scheme, sizeof scheme - 1) != 0)
        return -1;
    const char *p = value + sizeof scheme - 1;
    size_t gap = strspn(p, " \t");
    if (gap == 0)
        return -1;
    p += gap;
    size_t n = strcspn(p, " \t");
    if (n == 0 || p[n + strspn(p + n, " \t")] != '\0')
        return -1;
    *tok = p;
    *len = n;
    return 0;
}

int access_check(struct request *rq)
{
    rq->role = AUTH_ROLE_NONE;
    rq->denied = ACCESS_OK;
    const struct auth *auth = rq->app ? rq->app->auth : NULL;
    if (!auth)
        return ACCESS_OK;
    const struct route *r = NULL;
    long long id = 0;
    int found = router_match(rq->method, rq->url, &r, &id, NULL, 0) == ROUTE_FOUND;
    if (found && r->access == AUTH_ACCESS_OPEN)
        return ACCESS_OK;

    const char *value =
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *tok = NULL;
    size_t len = 0;
    if (!value)
        rq->denied = ACCESS_NO_TOKEN;
    else if (access_bearer_token(value, &tok, &len) != 0)
        rq->denied = ACCESS_MALFORMED;
    else if ((rq->role = (int)auth_lookup(auth, tok, len)) == AUTH_ROLE_NONE)
        rq->denied = ACCESS_UNKNOWN;
    else if (found && !auth_allows((enum auth_role)rq->role, r->access))
        rq->denied = ACCESS_ROLE;
    if (found)
        rq->route = r; /* for the 403 message; the router sets the same again */
    return rq->denied;
}

enum MHD_Result access_reply_denied(struct request *rq)
{
    switch (rq->denied) {
    case ACCESS_NO_TOKEN:
        return reply_error(rq, ERR_UNAUTHORIZED,
                           "this request needs an \"Authorization: Bearer TOKEN\" header");
    case ACCESS_MALFORMED:
        return reply_error(rq, ERR_UNAUTHORIZED,
                           "the Authorization header must be \"Bearer TOKEN\"");
    case ACCESS_ROLE:
        return reply_error(rq, ERR_FORBIDDEN, "a %s token may not use %s %s",
                           auth_role_name((enum auth_role)rq->role),
                           rq->route ? rq->route->method : rq->method,
                           rq->route ? rq->route->pattern : "this path");
    case ACCESS_UNKNOWN:
    default:
        return reply_error(rq, ERR_UNAUTHORIZED, "the bearer token is not valid");
    }
}
