/* The access check of a request: from its headers alone, before any of its body is read.
 * With --auth-token-file, every request needs "Authorization: Bearer TOKEN" with a known
 * token (else 401 unauthorized, with WWW-Authenticate) whose role the route's access column
 * allows (else 403 forbidden); only the routes marked AUTH_ACCESS_OPEN (/healthz, /readyz)
 * are exempt. Without it every request may go on.
 *
 * The order, and why: authentication comes first, for every path that is not an open route,
 * so that a client without a valid token learns nothing else: not which paths exist (an
 * unknown path is 401, not 404), which methods they take (401, not 405), nor what the server
 * thinks of its body (401, not 413, 415 or 400); and so that no memory is spent buffering the
 * body of a stranger (it is read and dropped, at most --max-body-bytes of it). Then
 * authorization of the matched route (403), then everything else as without authentication:
 * 413, 415, 404 or 405, then the handler's own checks. */
#ifndef JOBQ_ACCESS_H
#define JOBQ_ACCESS_H

#include <microhttpd.h>
#include <stddef.h>

#include "request.h"

/* Why a request is refused (rq->denied). */
enum access_denial {
    ACCESS_OK = 0,
    ACCESS_NO_TOKEN,  /* 401: no Authorization header */
    ACCESS_MALFORMED, /* 401: not "Bearer TOKEN" */
    ACCESS_UNKNOWN,   /* 401: a token that is not in the file */
    ACCESS_ROLE       /* 403: a known token whose role the route does not allow */
};

/* Find the token in an Authorization header value: the scheme "Bearer" in any case, one or
 * more spaces or tabs, then the token, then nothing but spaces or tabs. Returns 0 with *tok
 * and *len pointing into value, or -1 (value NULL, another scheme, no token, or more than one
 * word after the scheme). The token's characters are checked by the lookup, not here. This
 * function can't fail otherwise. */
int access_bearer_token(const char *value, const char **tok, size_t *len);

/* Decide whether rq (method, url and conn set; headers complete) may go on: match its route
 * and, when rq->app->auth is set and the route is not open, authenticate the Authorization
 * header and authorize the role for the route (an unknown path or method needs a valid token
 * too: its 404 or 405 comes later, from the router). Sets rq->role and rq->denied. Returns
 * rq->denied: ACCESS_OK when the request may go on. Answers nothing; never logs a token. */
int access_check(struct request *rq);

/* Answer a refused request: 401 unauthorized (with WWW-Authenticate) or 403 forbidden naming
 * the role and the route. Returns what reply_error() returns. */
enum MHD_Result access_reply_denied(struct request *rq);

#endif
