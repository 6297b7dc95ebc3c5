/* The SQS front end's authentication (docs/sqs.md): with --auth-token-file, every request
 * carries an AWS Signature Version 4 Authorization header whose access key is configured
 * (--sqs-key, or a KEY:SECRET:ROLE line of the token file) and whose signature is the one
 * the key's secret gives over the request as it came (method, path, query, the signed
 * headers, the body's SHA-256) within 15 minutes of the clock; the key's role then decides
 * which actions it may run (sqs.c's action table). Without authentication any signature, or
 * none, is accepted. The pure parts (the canonical request, the HMAC chain) are
 * server/domain/sigv4.h. */
#ifndef JOBQ_SQS_AUTH_H
#define JOBQ_SQS_AUTH_H

#include "auth.h"
#include "request.h"

/* Check rq's signature (its headers and whole body are in) when authentication is on.
 * Returns 0 with rq->role set (AUTH_ROLE_ADMIN when authentication is off), or -1 after
 * answering AWS's error in the request's protocol: MissingAuthenticationToken,
 * IncompleteSignature, InvalidClientTokenId, SignatureDoesNotMatch or RequestExpired. Never
 * logs a secret or a signature. */
int sqs_auth_check_or_reply(struct request *rq);

/* 1 when rq->role may run an action that needs `access`; else answers AccessDenied naming
 * the action and returns 0. */
int sqs_auth_allows_or_reply(struct request *rq, enum auth_access access, const char *action);

#endif
