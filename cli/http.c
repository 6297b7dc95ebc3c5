/* HTTP over libcurl: an easy handle for the keep-alive connection, driven by a multi handle
 * so that a wait can also watch a cancel descriptor (curl_multi_poll's extra fds). */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "text.h"

struct http {
    CURL *easy;
    CURLM *multi;
    struct curl_slist *headers;
    char *base; /* without a trailing '/' */
};

struct sink {
    struct text_buf body;
    int too_big;
    CURL *easy;
    /* A stream (http_stream): a 2xx answer's body goes to on_data as it comes. */
    int (*on_data)(void *arg, const char *data, size_t len);
    void *arg;
};

int http_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void http_global_cleanup(void)
{
    curl_global_cleanup();
}

struct http *http_new(const char *base_url, const char *token)
{
    struct http *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return NULL;
    }
    size_t n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/') {
        n--;
    }
    h->base = strndup(base_url, n);
    h->easy = curl_easy_init();
    h->multi = curl_multi_init();
    struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
    h->headers = l;
    if (l != NULL) {
        l = curl_slist_append(l, "Accept: application/json"); /* GET /events: one page */
    }
    if (l != NULL) {
        l = curl_slist_append(l, "Expect:"); /* no 100-continue round trip for large bodies */
    }
    if (l != NULL && token != NULL) {
        char *auth = NULL;
        if (asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
            auth = NULL;
        }
        l = auth != NULL ? curl_slist_append(l, auth) : NULL;
        free(auth);
    }
    if (h->base == NULL || h->easy == NULL || h->multi == NULL || l == NULL) {
        http_free(h);
        return NULL;
    }
    return h;
}

void http_free(struct http *h)
{
    if (h == NULL) {
        return;
    }
    if (h->multi != NULL) {
        curl_multi_cleanup(h->multi);
    }
    if (h->easy != NULL) {
        curl_easy_cleanup(h->easy);
    }
    curl_slist_free_all(h->headers);
    free(h->base);
    free(h);
}

static size_t sink_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct sink *s = arg;
    size_t n = size * nmemb;
    long status = 0;
    if (s->on_data != NULL &&
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status >= 200 &&
        status < 300) {
        return s->on_data(s->arg, data, n) == 0 ? n : 0;
    }
    if (n > HTTP_MAX_ANSWER - s->body.len) {
        s->too_big = 1;
        return 0; /* libcurl ends the transfer: CURLE_WRITE_ERROR */
    }
    return text_buf_add(&s->body, data, n) == 0 ? n : 0;
}

/* Set the request's method, URL and body on the easy handle. Returns 0, or -1 when out of
 * memory. */
static int prepare(struct http *h, const char *method, const char *path, const char *body,
                   long timeout_ms, struct sink *sink, char *errbuf)
{
    CURL *e = h->easy;
    char *url = NULL;
    if (asprintf(&url, "%s%s", h->base, path) < 0) {
        return -1;
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url); /* libcurl keeps its own copy */
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, HTTP_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
    if (strcmp(method, "POST") == 0 || body != NULL) { /* PUT sends a body too */
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body ? body : "");
        if (strcmp(method, "POST") != 0) {
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        }
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        if (strcmp(method, "GET") != 0) {
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        }
    }
    return 0;
}

/* Drive the transfer until it ends or cancel_fd is readable. Returns the transfer's result,
 * or -1 when cancelled. */
static int drive(struct http *h, int cancel_fd)
{
    for (;;) {
        int running = 0;
        CURLMcode mc = curl_multi_perform(h->multi, &running);
        if (mc != CURLM_OK) {
            return CURLE_FAILED_INIT;
        }
        int left = 0;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
            if (msg->msg == CURLMSG_DONE) {
                return msg->data.result;
            }
        }
        struct curl_waitfd extra = {.fd = cancel_fd, .events = CURL_WAIT_POLLIN};
        unsigned n_extra = cancel_fd >= 0 ? 1 : 0;
        if (curl_multi_poll(h->multi, n_extra ? &extra : NULL, n_extra, 1000, NULL) != CURLM_OK) {
            return CURLE_FAILED_INIT;
        }
        if (n_extra && (extra.revents & CURL_WAIT_POLLIN)) {
            return -1;
        }
    }
}

/* Run one exchange with the sink (and headers, NULL: the client's) and fill *out. */
static enum http_outcome exchange(struct http *h, const char *method, const char *path,
                                  const char *text, long timeout_ms, int cancel_fd,
                                  struct sink *sink, struct curl_slist *headers,
                                  struct http_reply *out)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    sink->easy = h->easy;
    if (prepare(h, method, path, text, timeout_ms, sink, errbuf) != 0) {
        snprintf(out->error, sizeof(out->error), "out of memory");
        return HTTP_UNREACHABLE;
    }
    if (headers != NULL) {
        curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, headers);
    }
    curl_multi_add_handle(h->multi, h->easy);
    int rc = drive(h, cancel_fd);
    curl_multi_remove_handle(h->multi, h->easy);
    curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, h->headers);
    if (rc == -1) {
        text_buf_clear(&sink->body);
        snprintf(out->error, sizeof(out->error), "cancelled");
        return HTTP_CANCELLED;
    }
    if (rc != CURLE_OK) {
        text_buf_clear(&sink->body);
        if (sink->too_big) {
            snprintf(out->error, sizeof(out->error), "the answer is larger than %u bytes",
                     HTTP_MAX_ANSWER);
        } else {
            snprintf(out->error, sizeof(out->error), "%s",
                     errbuf[0] ? errbuf : curl_easy_strerror((CURLcode)rc));
        }
        return HTTP_UNREACHABLE;
    }
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = sink->body.data; /* the reply owns it now */
    out->len = sink->body.len;
    if (out->body != NULL) {
        out->json = text_parse_json(out->body, out->len);
    }
    return HTTP_ANSWERED;
}

enum http_outcome http_call(struct http *h, const char *method, const char *path, const cJSON *body,
                            long timeout_ms, int cancel_fd, struct http_reply *out)
{
    memset(out, 0, sizeof(*out));
    char *text = body != NULL ? cJSON_PrintUnformatted(body) : NULL;
    struct sink sink = {0};
    enum http_outcome o;
    if (body != NULL && text == NULL) {
        snprintf(out->error, sizeof(out->error), "out of memory");
        o = HTTP_UNREACHABLE;
    } else {
        o = exchange(h, method, path, text, timeout_ms, cancel_fd, &sink, NULL, out);
    }
    free(text);
    return o;
}

enum http_outcome http_stream(struct http *h, const char *path, const char *last_id,
                              int (*on_data)(void *arg, const char *data, size_t len), void *arg,
                              int cancel_fd, struct http_reply *out)
{
    memset(out, 0, sizeof(*out));
    struct curl_slist *l = NULL;
    int bad = 0;
    for (const struct curl_slist *i = h->headers; i != NULL && !bad; i = i->next) {
        if (strncmp(i->data, "Accept:", 7) != 0) {
            struct curl_slist *n = curl_slist_append(l, i->data);
            bad = n == NULL;
            l = n != NULL ? n : l;
        }
    }
    char *extra[2] = {strdup("Accept: text/event-stream"), NULL};
    if (last_id != NULL && asprintf(&extra[1], "Last-Event-ID: %s", last_id) < 0) {
        extra[1] = NULL;
        bad = 1;
    }
    for (int k = 0; k < 2 && !bad; k++) {
        if (extra[k] != NULL) {
            struct curl_slist *n = curl_slist_append(l, extra[k]);
            bad = n == NULL;
            l = n != NULL ? n : l;
        }
    }
    free(extra[0]);
    free(extra[1]);
    enum http_outcome o = HTTP_UNREACHABLE;
    if (bad || l == NULL) {
        snprintf(out->error, sizeof(out->error), "out of memory");
    } else {
        struct sink sink = {.on_data = on_data, .arg = arg};
        /* No time limit on the whole; a stream that says nothing (not even its keep-alive)
         * for HTTP_STREAM_SILENCE_S is taken as dropped. */
        curl_easy_setopt(h->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h->easy, CURLOPT_LOW_SPEED_TIME, (long)HTTP_STREAM_SILENCE_S);
        o = exchange(h, "GET", path, NULL, 0, cancel_fd, &sink, l, out);
        curl_easy_setopt(h->easy, CURLOPT_LOW_SPEED_LIMIT, 0L);
        curl_easy_setopt(h->easy, CURLOPT_LOW_SPEED_TIME, 0L);
    }
    curl_slist_free_all(l);
    return o;
}

static const char *error_field(const struct http_reply *r, const char *name)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(r->json, "error");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(err, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *http_error_code(const struct http_reply *r)
{
    return error_field(r, "code");
}

const char *http_error_message(const struct http_reply *r)
{
    return error_field(r, "message");
}

void http_reply_clear(struct http_reply *r)
{
    if (r == NULL) {
        return;
    }
    free(r->body);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof(*r));
}

char *http_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    if (e == NULL) {
        return NULL;
    }
    char *copy = strdup(e); /* callers free with free(), not curl_free() */
    curl_free(e);
    return copy;
}
