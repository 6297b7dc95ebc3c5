/* Bearer tokens and roles: the token file, constant-time lookup, and which role may use which
 * kind of endpoint. Knows nothing of HTTP: api/access.c reads the Authorization header and
 * calls in here. A token table is built once at start-up and read-only afterwards, so any
 * number of threads may look tokens up at once without locks. */
#ifndef JOBQ_AUTH_H
#define JOBQ_AUTH_H

#include <stddef.h>

/* The longest token accepted, in bytes. Every stored token is kept in a buffer of this size,
 * zero-padded, and every lookup compares all of it, so neither a token's length nor the
 * position of the first differing byte shows in the time a lookup takes. */
#define AUTH_TOKEN_MAX 256
/* At most this many tokens in one file (a lookup compares against every one). */
#define AUTH_MAX_TOKENS 1024
/* The token file may be at most this large. */
#define AUTH_FILE_MAX (1024 * 1024)
/* Tokens shorter than this are accepted, with a warning at start-up naming the line. */
#define AUTH_TOKEN_WEAK 16
/* SQS access keys (SigV4, docs/sqs.md): an access key id of 1 to AUTH_KEY_ID_MAX of A-Z a-z
 * 0-9 - _ . and a secret of 1 to AUTH_SECRET_MAX printable ASCII characters but ':'; at most
 * AUTH_MAX_KEYS of them, from the token file and --sqs-key together. */
#define AUTH_KEY_ID_MAX 128
#define AUTH_SECRET_MAX 128
#define AUTH_MAX_KEYS 1024

/* A caller's role. The values are bits so that a lookup can OR them together under masks. */
enum auth_role {
    AUTH_ROLE_NONE = 0, /* no token, or not a known one */
    AUTH_ROLE_PRODUCER = 1,
    AUTH_ROLE_WORKER = 2,
    AUTH_ROLE_ADMIN = 4
};

/* What an endpoint needs. AUTH_ACCESS_ADMIN is 0 on purpose: a route-table row that forgets
 * its access column is admin-only, never open. */
enum auth_access {
    AUTH_ACCESS_ADMIN = 0, /* admin only (cancel, retry, future admin endpoints) */
    AUTH_ACCESS_OPEN,      /* no token needed (/healthz, /readyz) */
    AUTH_ACCESS_READ,      /* any role (GET /jobs, /jobs/{id}, /queues, /metrics) */
    AUTH_ACCESS_PRODUCE,   /* producer or admin (enqueue, batch) */
    AUTH_ACCESS_WORK       /* worker or admin (claim, heartbeat, complete, fail) */
};

struct auth;

/* Parse a token file's text (len bytes, need not be NUL-terminated): one "TOKEN ROLE" per
 * line, separated by spaces or tabs, ROLE one of producer, worker, admin; blank lines and
 * lines whose first non-blank character is '#' are ignored; a trailing '\r' is dropped. A
 * token is 1 to AUTH_TOKEN_MAX characters of the RFC 6750 token alphabet (A-Z a-z 0-9
 * - . _ ~ + / and trailing '='). A line of one field "KEY:SECRET:ROLE" is an SQS access key
 * instead (auth_add_sqs_keys()); a file may hold keys only. Returns a new table in *out and 0, or -1 with *out NULL and a
 * message in err (errlen bytes, NUL-terminated) naming `name` and the line number of the
 * first bad line: malformed, unknown role, token too long, the same token twice, more than
 * AUTH_MAX_TOKENS tokens, a bad key, or no token nor key at all. A message never contains a token or any other
 * text of the file. Tokens shorter than AUTH_TOKEN_WEAK are logged as a warning (by line).
 * The caller releases the table with auth_free(). */
int auth_parse(const char *text, size_t len, const char *name, struct auth **out, char *err,
               size_t errlen);

/* Read the file at path (at most AUTH_FILE_MAX bytes) and auth_parse() it. Returns 0 with a
 * new table in *out, or -1 with a message in err (unreadable, too large, or a parse error).
 * Warns when the file can be read by its group or others. The copy of the file's text is
 * wiped before it is freed. */
int auth_load_file(const char *path, struct auth **out, char *err, size_t errlen);

/* Add the SQS access keys in text (NUL-terminated): "KEY:SECRET:ROLE" items separated by
 * spaces, tabs or newlines (--sqs-key, JOBQ_SQS_KEYS). Returns 0, or -1 with a message in err
 * naming `name` and the item's number (never its text): malformed, unknown role, a key id
 * twice, or more than AUTH_MAX_KEYS keys. Start-up only: not thread-safe. */
int auth_add_sqs_keys(struct auth *a, const char *text, const char *name, char *err, size_t errlen);

/* The role of the SQS access key id[0..len), with its secret copied into secret (NUL-
 * terminated, AUTH_SECRET_MAX + 1 bytes) and its length in *slen; AUTH_ROLE_NONE (secret
 * left empty) when there is no such key. Compares against every key without an early exit.
 * Thread-safe. This function can't fail. */
enum auth_role auth_sqs_key(const struct auth *a, const char *id, size_t len, char *secret,
                            size_t *slen);

/* How many SQS access keys the table holds. */
size_t auth_sqs_key_count(const struct auth *a);

/* Wipe and free a table. Accepts NULL. */
void auth_free(struct auth *a);

/* The role of the token tok[0..len), or AUTH_ROLE_NONE when it is not in the table (or a is
 * NULL, or len is 0 or over AUTH_TOKEN_MAX). Compares against every token in the table, each
 * over AUTH_TOKEN_MAX bytes, without an early exit: the time taken does not depend on which
 * token matched, where a mismatch is, or how long the stored tokens are. Thread-safe. This
 * function can't fail. */
enum auth_role auth_lookup(const struct auth *a, const char *tok, size_t len);

/* 1 when a and b (n bytes each) are equal, else 0, in time that depends only on n. */
int auth_equal(const void *a, const void *b, size_t n);

/* 1 when a caller with `role` may use an endpoint that needs `access`, else 0.
 * AUTH_ACCESS_OPEN allows everyone, AUTH_ROLE_NONE included. This function can't fail. */
int auth_allows(enum auth_role role, enum auth_access access);

/* How many tokens the table holds with `role` (AUTH_ROLE_NONE: all of them). */
size_t auth_count(const struct auth *a, enum auth_role role);

/* "producer", "worker", "admin", or "none". */
const char *auth_role_name(enum auth_role role);

#endif
