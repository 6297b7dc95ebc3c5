/* libFuzzer target: raw HTTP request bytes into the real server, in-process. Initialization
 * opens a store on a database in a temporary directory and starts the HTTP server
 * (http_start) on 127.0.0.1:0, as jobqd does. Each input is written on a fresh loopback
 * connection, which is then half-closed; the answers are read until the server closes (or a
 * deadline passes), so libmicrohttpd's parsing, http.c (limits, Content-Type, bodies,
 * chunked uploads), the router, every handler, JSON decoding, validation and the store all
 * run on the fuzzed bytes. Besides what the sanitizers catch, an answer of ours with a 5xx
 * status (other than 503), a JSON error body that is not of the contract's shape, or a server
 * that stops answering aborts the run.
 *
 * Three seams, all linker wraps (-Wl,--wrap=...) set by tests/fuzz/CMakeLists.txt:
 * - waitq_park() caps a long poll's deadline at PARK_MS_MAX, so that a claim with
 *   wait_seconds parks and resumes for real but costs milliseconds, not a minute;
 * - rand_token() gives every claim the lease token FUZZ_TOKEN (in the seeds and the
 *   dictionary), so that heartbeat, complete and fail get past the token check;
 * - MHD_is_feature_supported() denies epoll, so the server polls: with epoll, libmicrohttpd
 *   0.9.75 can miss a client's half-close that arrives with the request (the connection then
 *   lives until --idle-timeout), which would make every input wait that long.
 * Built with -fsanitize=fuzzer for fuzzing, or with replay.c to run a corpus (ctest). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app.h"
#include "clock.h"
#include "config.h"
#include "http.h"
#include "job.h"
#include "log.h"
#include "store.h"
#include "waitq.h"

/* The lease token of every claim (JOB_TOKEN_LEN URL-safe characters). */
#define FUZZ_TOKEN "fuzzFUZZfuzzFUZZfuzzFUZZfuzzFUZZ"
/* A parked long poll wakes after at most this long. */
#define PARK_MS_MAX 20
/* One input may take this long from connect to the server's close (--idle-timeout is 2 s). */
#define INPUT_DEADLINE_MS 10000
/* Answers kept for checking; more are read and dropped. */
#define ANSWER_MAX (256 * 1024)

#define INVARIANT(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_http: invariant broken at %s:%d: %s: ", __FILE__, __LINE__,      \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int __real_waitq_park(struct waitq *q, struct waiter *w, void (*suspend)(void *), void *arg);
int __wrap_waitq_park(struct waitq *q, struct waiter *w, void (*suspend)(void *), void *arg);
int __wrap_rand_token(char *out);
enum MHD_Result __real_MHD_is_feature_supported(enum MHD_FEATURE feature);
enum MHD_Result __wrap_MHD_is_feature_supported(enum MHD_FEATURE feature);

_Static_assert(sizeof FUZZ_TOKEN == JOB_TOKEN_LEN + 1, "FUZZ_TOKEN is a lease token");

static struct {
    struct config cfg;
    struct app app;
    struct store *store;
    struct waitq *waitq;
    struct http_server *http;
    int port;
    int verbose; /* JOBQ_FUZZ_VERBOSE set: print each answer's status line */
    char dir[256];
    char db[512];
} fz;

int __wrap_waitq_park(struct waitq *q, struct waiter *w, void (*suspend)(void *), void *arg)
{
    int64_t cap = clock_mono_ms() + PARK_MS_MAX;
    if (w->deadline_ms > cap)
        w->deadline_ms = cap;
    return __real_waitq_park(q, w, suspend, arg);
}

int __wrap_rand_token(char *out)
{
    memcpy(out, FUZZ_TOKEN, sizeof FUZZ_TOKEN);
    return 0;
}

enum MHD_Result __wrap_MHD_is_feature_supported(enum MHD_FEATURE feature)
{
    if (feature == MHD_FEATURE_EPOLL)
        return MHD_NO;
    return __real_MHD_is_feature_supported(feature);
}

static void hook_ready(void *ctx, const char *queue)
{
    (void)ctx;
    waitq_notify(fz.waitq, queue);
}

static void remove_db(void)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s%s", fz.db, suffixes[i]);
        unlink(path);
    }
    rmdir(fz.dir);
}

/* At exit: stop as jobqd does on SIGTERM, then remove the database. */
static void stop_server(void)
{
    if (!fz.http)
        return;
    http_quiesce(fz.http);
    waitq_shutdown(fz.waitq);
    http_stop(fz.http, 5000);
    fz.http = NULL;
    waitq_free(fz.waitq);
    store_close(fz.store);
    remove_db();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(fz.dir, sizeof fz.dir, "%s/jobq-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fz.dir)) {
        perror("fuzz_http: mkdtemp");
        abort();
    }
    snprintf(fz.db, sizeof fz.db, "%s/fuzz.db", fz.dir);
    char db_arg[600];
    snprintf(db_arg, sizeof db_arg, "--db=%s", fz.db);
    char *args[] = {"fuzz_http",        "--listen=127.0.0.1:0",  db_arg,
                    "--threads=2",      "--sync=normal",         "--max-body-bytes=65536",
                    "--idle-timeout=2", "--max-connections=256", "--log-level=error"};
    if (config_load(&fz.cfg, (int)(sizeof args / sizeof args[0]), args, stderr) != CONFIG_OK)
        abort();
    log_set_level(LOG_ERROR);
    struct store_options opts = {
        .url = fz.cfg.db_path,
        .backoff_base = fz.cfg.backoff_base,
        .backoff_max = fz.cfg.backoff_max,
        .hooks = {.on_ready = hook_ready},
        .sqlite = {.sync_full = fz.cfg.sync_full, .readers = fz.cfg.readers},
    };
    fz.store = store_open(&opts);
    fz.waitq = waitq_new(0);
    if (!fz.store || !fz.waitq)
        abort();
    fz.app.store = fz.store;
    fz.app.waitq = fz.waitq;
    fz.app.cfg = &fz.cfg;
    struct http_front front = {.host = fz.cfg.listen_host, .port = fz.cfg.listen_port};
    fz.http = http_start(&fz.app, &front);
    if (!fz.http)
        abort();
    fz.port = http_port(fz.http);
    fz.verbose = getenv("JOBQ_FUZZ_VERBOSE") != NULL;
    atexit(stop_server);
    return 0;
}

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    INVARIANT(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)fz.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    INVARIANT(rc == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
    return fd;
}

/* Value of header `name` in the header block h[0..n), or NULL. */
static const char *header(const char *h, size_t n, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (const char *p = h; p && p < h + n;) {
        const char *eol = memmem(p, (size_t)(h + n - p), "\r\n", 2);
        size_t ll = eol ? (size_t)(eol - p) : (size_t)(h + n - p);
        if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < p + ll && *v == ' ')
                v++;
            *len = (size_t)(p + ll - v);
            return v;
        }
        p = eol ? eol + 2 : NULL;
    }
    return NULL;
}

/* A JSON error body of the contract: {"error": {"code": "...", "message": "..."}}. */
static int error_body_ok(const char *body, size_t n)
{
    cJSON *root = cJSON_ParseWithLength(body, n);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
    int ok = cJSON_IsString(code) && cJSON_IsString(msg) && code->valuestring[0] != '\0';
    cJSON_Delete(root);
    return ok;
}

/* Walk the answers in a[0..n): each must be a clean answer. Stops at the first thing that
 * is not a complete answer with a Content-Length. An answer to HEAD announces a body it does
 * not carry: one whose "body" starts with the next status line is taken as headers only. */
static void check_answers(const char *a, size_t n)
{
    size_t off = 0;
    while (n - off >= 12 && memcmp(a + off, "HTTP/1.", 7) == 0) {
        const char *start = a + off;
        const char *end = memmem(start, n - off, "\r\n\r\n", 4);
        if (!end)
            return;
        int status = atoi(start + 9);
        if (fz.verbose)
            fprintf(stderr, "fuzz_http: answer %.*s\n", (int)strcspn(start, "\r"), start);
        size_t hlen = (size_t)(end - start) + 4;
        size_t cl_len = 0;
        const char *cl = header(start, hlen, "Content-Length", &cl_len);
        size_t body_len = cl ? (size_t)strtoull(cl, NULL, 10) : 0;
        if (!cl && status >= 200 && status != 204 && status != 304)
            return;
        if (body_len > n - off - hlen)
            return;
        const char *body = start + hlen;
        if (body_len >= 7 && memcmp(body, "HTTP/1.", 7) == 0) {
            off += hlen; /* the answer to a HEAD: headers only */
            continue;
        }
        size_t ct_len = 0;
        const char *ct = header(start, hlen, "Content-Type", &ct_len);
        int json = ct && ct_len >= 16 && strncasecmp(ct, "application/json", 16) == 0;
        /* 503 is a legitimate answer (busy); 501 and 505 come from libmicrohttpd itself
         * (unsupported transfer coding, HTTP version). Any other 5xx is a bug of ours. */
        INVARIANT(status < 500 || status == 503 || ((status == 501 || status == 505) && !json),
                  "answer %d: %.*s", status, (int)(hlen + body_len), start);
        if (json && status >= 400)
            INVARIANT(error_body_ok(body, body_len), "answer %d with body %.*s", status,
                      (int)body_len, body);
        off += hlen + body_len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = connect_server();
    static char answers[ANSWER_MAX + 1]; /* + 1: a NUL after the last byte read */
    size_t got = 0, sent = 0;
    int shut = 0, closed = 0;
    int64_t deadline = clock_mono_ms() + INPUT_DEADLINE_MS;
    while (!closed) {
        if (sent == size && !shut) {
            shutdown(fd, SHUT_WR);
            shut = 1;
        }
        int64_t left = deadline - clock_mono_ms();
        INVARIANT(left > 0, "no close from the server within %d ms (%zu of %zu bytes sent)",
                  INPUT_DEADLINE_MS, sent, size);
        struct pollfd p = {.fd = fd, .events = (short)(POLLIN | (sent < size ? POLLOUT : 0))};
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            INVARIANT(0, "poll: %s", strerror(errno));
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            char buf[16384];
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r > 0) {
                size_t keep = (size_t)r < ANSWER_MAX - got ? (size_t)r : ANSWER_MAX - got;
                memcpy(answers + got, buf, keep);
                got += keep;
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                closed = 1;
            }
        }
        if (!closed && sent < size && (p.revents & POLLOUT)) {
            ssize_t w = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                sent = size; /* the server closed on us: read what it said */
        }
    }
    close(fd);
    answers[got] = '\0'; /* check_answers reads numbers with atoi */
    check_answers(answers, got);
    return 0;
}
