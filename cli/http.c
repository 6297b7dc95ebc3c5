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

enum http_outcome http_call(struct http *h, const char *method, const char *path, const cJSON *body,
                            long timeout_ms, int cancel_fd, struct http_reply *out)
{
    memset(out, 0, sizeof(*out));
    char *text = body != NULL ? cJSON_PrintUnformatted(body) : NULL;
    struct sink sink = {0};
    char errbuf[CURL_ERROR_SIZE] = "";
    if ((body != NULL && text == NULL) ||
        prepare(h, method, path, text, timeout_ms, &sink, errbuf) != 0) {
        free(text);
        snprintf(out->error, sizeof(out->error), "out of memory");
        return HTTP_UNREACHABLE;
    }
    curl_multi_add_handle(h->multi, h->easy);
    int rc = drive(h, cancel_fd);
    curl_multi_remove_handle(h->multi, h->easy);
    curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, NULL);
    free(text);
    if (rc == -1) {
        text_buf_clear(&sink.body);
        snprintf(out->error, sizeof(out->error), "cancelled");
        return HTTP_CANCELLED;
    }
    if (rc != CURLE_OK) {
        text_buf_clear(&sink.body);
        if (sink.too_big) {
            snprintf(out->error, sizeof(out->error), "the answer is larger than %u bytes",
                     HTTP_MAX_ANSWER);
        } else {
            snprintf(out->error, sizeof(out->error), "%s",
                     errbuf[0] ? errbuf : curl_easy_strerror((CURLcode)rc));
        }
        return HTTP_UNREACHABLE;
    }
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = sink.body.data; /* the reply owns it now */
    out->len = sink.body.len;
    if (out->body != NULL) {
        out->json = text_parse_json(out->body, out->len);
    }
    return HTTP_ANSWERED;
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
