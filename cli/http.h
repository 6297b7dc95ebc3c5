/* The jobq client's HTTP: one keep-alive connection to the server (libcurl), JSON in and
 * out, bounded answers, and calls that a file descriptor can cut short. */
#ifndef JOBQ_CLI_HTTP_H
#define JOBQ_CLI_HTTP_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The largest answer read; a longer one is taken as no answer (HTTP_UNREACHABLE). */
#define HTTP_MAX_ANSWER (64u * 1024 * 1024)
#define HTTP_CONNECT_TIMEOUT_MS 5000L

struct http;

enum http_outcome {
    HTTP_ANSWERED,    /* the server answered: status, body and json are set */
    HTTP_UNREACHABLE, /* no answer (refused, reset, timed out, bad URL): error says why */
    HTTP_CANCELLED,   /* the cancel descriptor became readable first */
};

struct http_reply {
    long status; /* HTTP status, 0 without an answer */
    char *body;  /* the answer's body, NUL-terminated (owned); NULL when empty */
    size_t len;
    cJSON *json;     /* the body parsed, or NULL when it is not JSON (owned) */
    char error[256]; /* why there was no answer */
};

/* Call once, before any thread starts, and http_global_cleanup() once at the end.
 * Returns 0, or -1 when libcurl cannot start. */
int http_global_init(void);
void http_global_cleanup(void);

/* A client of the server at base_url ("http://127.0.0.1:8080", a trailing '/' is ignored)
 * that sends "Authorization: Bearer <token>" when token is not NULL. Both strings are
 * copied. Returns NULL when out of memory. One client serves one thread at a time. */
struct http *http_new(const char *base_url, const char *token);

/* Release the client and its connection. Accepts NULL. */
void http_free(struct http *h);

/* Send `method` (GET, POST, DELETE) to base_url + path (path already URL-encoded) with body
 * (borrowed, sent as JSON; NULL sends none) and wait at most timeout_ms for the whole
 * answer. When cancel_fd >= 0 and becomes readable first, the call is abandoned:
 * HTTP_CANCELLED. Fills *out (cleared first; release it with http_reply_clear()) and returns
 * the outcome. */
enum http_outcome http_call(struct http *h, const char *method, const char *path, const cJSON *body,
                            long timeout_ms, int cancel_fd, struct http_reply *out);

/* A stream that sends nothing for this long (the server's keep-alive comes every 15 s) is
 * taken as dropped. */
#define HTTP_STREAM_SILENCE_S 45

/* GET base_url + path as Server-Sent Events ("Accept: text/event-stream", and
 * "Last-Event-ID: last_id" when last_id is not NULL), with no time limit: every piece of a
 * 2xx answer's body goes to on_data(arg, data, len) as it comes (on_data returns 0, or -1
 * to end the transfer: then HTTP_UNREACHABLE). Returns when the server ends the answer
 * (HTTP_ANSWERED: out->status set; a non-2xx answer's body is in *out as with http_call),
 * when the connection drops or stays silent HTTP_STREAM_SILENCE_S (HTTP_UNREACHABLE), or
 * when cancel_fd becomes readable (HTTP_CANCELLED). Release *out with http_reply_clear(). */
enum http_outcome http_stream(struct http *h, const char *path, const char *last_id,
                              int (*on_data)(void *arg, const char *data, size_t len), void *arg,
                              int cancel_fd, struct http_reply *out);

/* The error code and message of a jobq error answer ({"error": {"code", "message"}}):
 * borrowed from r->json, or NULL when the answer does not have them. */
const char *http_error_code(const struct http_reply *r);
const char *http_error_message(const struct http_reply *r);

/* Release what *r holds and empty it. Accepts NULL. */
void http_reply_clear(struct http_reply *r);

/* `s` percent-encoded for a URL path segment or query value; the caller frees it with
 * free(). Returns NULL when out of memory. */
char *http_escape(const char *s);

#endif
