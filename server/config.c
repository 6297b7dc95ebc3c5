#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define KIB 1024LL
#define MIB (1024LL * KIB)
#define YEAR_SECONDS (365LL * 86400) /* "10 years" of --retention: 3650 days */

enum kind {
    K_LISTEN,     /* HOST:PORT or [IPv6]:PORT into listen_host and listen_port */
    K_LISTEN_OPT, /* the same into sqs_listen_host and sqs_listen_port, or empty for none */
    K_PATH,       /* a string; `min` 1: must not be empty */
    K_INT,        /* an int field within [min, max] */
    K_INT64,      /* an int64_t field within [min, max] */
    K_SYNC,       /* full | normal into sync_full */
    K_LEVEL,      /* a log level name */
    K_BOOL,       /* a switch: an int field set to 0 or 1; the flag alone means 1 */
    K_FORMAT,     /* text | json into log_json */
    K_KEYS        /* repeatable: each value appended to a string field, a newline between */
};

/* One setting. The flag is "--" followed by the name. */
struct setting {
    const char *name;
    const char *env;
    const char *def; /* the default, written as on the command line */
    enum kind kind;
    int64_t min, max;    /* K_INT, K_INT64; K_PATH: min 1 means required */
    size_t off, size;    /* where the value goes in struct config */
    const char *metavar; /* shown in --help */
    const char *help;
};

#define FIELD(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)

/* The one config table. */
static const struct setting settings[] = {
    {"listen", "JOBQ_LISTEN", "127.0.0.1:8080", K_LISTEN, 0, 65535, FIELD(listen_host), "HOST:PORT",
     "address to listen on; [::1]:PORT for IPv6, port 0 picks a free one"},
    {"db", "JOBQ_DB", "./data/jobq.db", K_PATH, 1, 0, FIELD(db_path), "PATH|URL",
     "SQLite database file (its directory is created when missing), or a PostgreSQL URL "
     "(postgres://... or postgresql://..., any libpq URI, multi-host included)"},
    {"sweep-interval", "JOBQ_SWEEP_INTERVAL", "5", K_INT64, 1, 3600, FIELD(sweep_interval),
     "SECONDS", "how often the sweeper returns expired leases and deletes old jobs"},
    {"retention", "JOBQ_RETENTION", "604800", K_INT64, 0, 10 * YEAR_SECONDS, FIELD(retention),
     "SECONDS", "keep succeeded and cancelled jobs this long"},
    {"events-retention-seconds", "JOBQ_EVENTS_RETENTION_SECONDS", "86400", K_INT64, 1, 31536000,
     FIELD(events_retention), "SECONDS",
     "keep job events (GET /events) this long; the sweeper deletes older ones"},
    {"events-max", "JOBQ_EVENTS_MAX", "1000000", K_INT64, 1, 1000000000, FIELD(events_max), "N",
     "keep at most about this many job events; the sweeper deletes the oldest beyond it"},
    {"events-streams", "JOBQ_EVENTS_STREAMS", "256", K_INT, 1, 10000, FIELD(events_streams), "N",
     "open GET /events streams at most (more: 503)"},
    {"webhook-retry-base", "JOBQ_WEBHOOK_RETRY_BASE", "5", K_INT64, 1, 3600,
     FIELD(webhook_retry_base), "SECONDS",
     "the first wait before a failed webhook delivery is tried again; each wait doubles (with "
     "jitter, at most an hour) for up to 3 days"},
    {"webhook-allow-private", "JOBQ_WEBHOOK_ALLOW_PRIVATE", "0", K_BOOL, 0, 1,
     FIELD(webhook_allow_private), "",
     "allow webhook URLs whose host resolves to a loopback, private, link-local or unspecified "
     "address"},
    {"sync", "JOBQ_SYNC", "full", K_SYNC, 0, 0, FIELD(sync_full), "full|normal",
     "SQLite: full: an acknowledged write is on disk; normal: faster, may lose the last writes "
     "on power loss"},
    {"max-body-bytes", "JOBQ_MAX_BODY_BYTES", "1048576", K_INT64, KIB, 64 * MIB,
     FIELD(max_body_bytes), "BYTES", "largest request body accepted (larger: 413)"},
    {"backoff-base", "JOBQ_BACKOFF_BASE", "2", K_INT64, 0, 86400, FIELD(backoff_base), "SECONDS",
     "retry delay base: base * 2^(attempts-1), plus up to 10% jitter"},
    {"backoff-max", "JOBQ_BACKOFF_MAX", "3600", K_INT64, 0, 31536000, FIELD(backoff_max), "SECONDS",
     "longest retry delay of the backoff policy"},
    {"auth-token-file", "JOBQ_AUTH_TOKEN_FILE", "", K_PATH, 0, 0, FIELD(auth_token_file), "PATH",
     "require \"Authorization: Bearer TOKEN\": lines of \"TOKEN ROLE\", ROLE producer, worker "
     "or admin, '#' comments; without it every client may do everything and --listen must be "
     "loopback"},
    {"insecure-listen-any", "JOBQ_INSECURE_LISTEN_ANY", "0", K_BOOL, 0, 1,
     FIELD(insecure_listen_any), "",
     "allow a non-loopback --listen without --auth-token-file (anyone who can reach the port "
     "can do everything)"},
    {"tls-cert", "JOBQ_TLS_CERT", "", K_PATH, 0, 0, FIELD(tls_cert), "PATH",
     "serve HTTPS with this PEM certificate (chain); needs --tls-key"},
    {"tls-key", "JOBQ_TLS_KEY", "", K_PATH, 0, 0, FIELD(tls_key), "PATH",
     "the PEM private key of --tls-cert (unencrypted); needs --tls-cert"},
    {"threads", "JOBQ_THREADS", "4", K_INT, 1, 64, FIELD(threads), "N", "HTTP worker threads"},
    {"max-connections", "JOBQ_MAX_CONNECTIONS", "4096", K_INT, 16, 100000, FIELD(max_connections),
     "N", "open client connections at most (parked long polls count)"},
    {"max-connections-per-ip", "JOBQ_MAX_CONNECTIONS_PER_IP", "2048", K_INT, 1, 100000,
     FIELD(max_connections_per_ip), "N",
     "open connections from one client address at most (at most --max-connections; the "
     "default is lowered to it)"},
    {"idle-timeout", "JOBQ_IDLE_TIMEOUT", "90", K_INT64, 1, 3600, FIELD(idle_timeout), "SECONDS",
     "close a connection idle this long"},
    {"header-timeout", "JOBQ_HEADER_TIMEOUT", "30", K_INT64, 1, 3600, FIELD(header_timeout),
     "SECONDS",
     "close a connection whose request line and headers are not all in this long after their "
     "first byte (slowloris)"},
    {"readers", "JOBQ_READERS", "4", K_INT, 1, 32, FIELD(readers), "N",
     "SQLite: database read connections"},
    {"pool-size", "JOBQ_POOL_SIZE", "8", K_INT, 1, 256, FIELD(pool_size), "N",
     "PostgreSQL: connections per process for requests and the sweeper (one more listens)"},
    {"pg-writers", "JOBQ_PG_WRITERS", "0", K_INT, 0, 256, FIELD(pg_writers), "N",
     "PostgreSQL: write transactions in flight at most (as the load asks); 0: --pool-size "
     "less two (one for the sweeper, one for reads)"},
    {"pg-checkout-timeout", "JOBQ_PG_CHECKOUT_TIMEOUT", "5000", K_INT64, 10, 600000,
     FIELD(pg_checkout_ms), "MS",
     "PostgreSQL: wait at most this long for a free pooled connection (then 503)"},
    {"pg-statement-timeout", "JOBQ_PG_STATEMENT_TIMEOUT", "5000", K_INT64, 10, 600000,
     FIELD(pg_statement_ms), "MS", "PostgreSQL: statement_timeout of every statement"},
    {"log-level", "JOBQ_LOG_LEVEL", "info", K_LEVEL, 0, 0, FIELD(log_level),
     "debug|info|warn|error|off", "lowest level logged"},
    {"log-format", "JOBQ_LOG_FORMAT", "text", K_FORMAT, 0, 0, FIELD(log_json), "text|json",
     "log lines as text, or as one JSON object each (for log shippers)"},
    {"access-log", "JOBQ_ACCESS_LOG", "1", K_BOOL, 0, 1, FIELD(access_log), "",
     "one line per request (method, path, status, bytes, duration, request id) at info level; "
     "0: at debug level"},
    {"sqs-listen", "JOBQ_SQS_LISTEN", "", K_LISTEN_OPT, 0, 65535, FIELD(sqs_listen_host),
     "HOST:PORT",
     "also serve the Amazon SQS API (docs/sqs.md) on this address, with the main listener's "
     "TLS and limits; empty: not at all"},
    {"sqs-base-url", "JOBQ_SQS_BASE_URL", "", K_PATH, 0, 0, FIELD(sqs_base_url), "URL",
     "what the SQS queue URLs handed out start with (then /ACCOUNT/QUEUE); empty: "
     "http(s)://HOST:PORT of --sqs-listen"},
    {"sqs-key", "JOBQ_SQS_KEYS", "", K_KEYS, 0, 0, FIELD(sqs_keys), "KEY:SECRET:ROLE",
     "an SQS access key for SigV4 (needs --auth-token-file; repeatable; the variable holds "
     "several separated by spaces; a tokens-file line KEY:SECRET:ROLE does the same without "
     "showing the secret in ps)"},
};

#define NSETTINGS (sizeof settings / sizeof settings[0])

/* The allowed values of s, for error messages and --help. */
static void describe_range(const struct setting *s, char *out, size_t n)
{
    switch (s->kind) {
    case K_LISTEN:
        snprintf(out, n, "HOST:PORT or [IPV6]:PORT with a port from 0 to 65535");
        break;
    case K_LISTEN_OPT:
        snprintf(out, n, "HOST:PORT or [IPV6]:PORT with a port from 0 to 65535, or empty");
        break;
    case K_PATH:
        snprintf(out, n, "a path of 1 to %zu bytes%s", s->size - 1,
                 s->min ? "" : ", or empty for none");
        break;
    case K_INT:
    case K_INT64:
        snprintf(out, n, "an integer from %" PRId64 " to %" PRId64, s->min, s->max);
        break;
    case K_SYNC:
        snprintf(out, n, "full or normal");
        break;
    case K_LEVEL:
        snprintf(out, n, "debug, info, warn, error or off");
        break;
    case K_BOOL:
        snprintf(out, n, "1, 0, true, false, yes, no, on or off (the flag alone means 1)");
        break;
    case K_FORMAT:
        snprintf(out, n, "text or json");
        break;
    case K_KEYS:
        snprintf(out, n, "KEY:SECRET:ROLE, at most %zu bytes in all", s->size - 2);
        break;
    }
}

/* Parse a switch's value. Returns 0 or 1, or -1. */
static int parse_bool(const char *text)
{
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no",
                                                                                "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(text, yes[i]) == 0)
            return 1;
        if (strcmp(text, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* Parse a base-10 integer that is the whole of text. Returns 0, or -1. */
static int parse_int64(const char *text, int64_t *out)
{
    if (*text == '\0' || (*text != '-' && (*text < '0' || *text > '9')))
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* Parse "HOST:PORT" or "[IPV6]:PORT". A host is a name or IPv4 address of letters, digits,
 * '.' and '-', or a bracketed IPv6 address. Returns 0, or -1. */
static int parse_listen(const char *text, char *host, size_t host_size, int *port)
{
    const char *colon;
    const char *h;
    size_t hlen;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return -1;
        h = text + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
        char v6[INET6_ADDRSTRLEN];
        struct in6_addr a;
        if (hlen == 0 || hlen >= sizeof v6)
            return -1;
        memcpy(v6, h, hlen);
        v6[hlen] = '\0';
        if (inet_pton(AF_INET6, v6, &a) != 1)
            return -1;
    } else {
        colon = strrchr(text, ':');
        if (!colon)
            return -1;
        h = text;
        hlen = (size_t)(colon - h);
        if (hlen == 0)
            return -1;
        for (size_t i = 0; i < hlen; i++) {
            char c = h[i];
            int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '.' || c == '-';
            if (!ok)
                return -1;
        }
    }
    if (hlen >= host_size)
        return -1;
    const char *p = colon + 1;
    size_t plen = strlen(p);
    if (plen == 0 || plen > 5 || strspn(p, "0123456789") != plen)
        return -1;
    int v = atoi(p);
    if (v > 65535)
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = v;
    return 0;
}

/* Store text as the value of s in cfg. Returns 0, or -1 when it is not allowed. */
static int set_value(struct config *cfg, const struct setting *s, const char *text)
{
    char *field = (char *)cfg + s->off;
    int64_t v;
    switch (s->kind) {
    case K_LISTEN:
        return parse_listen(text, cfg->listen_host, sizeof cfg->listen_host, &cfg->listen_port);
    case K_LISTEN_OPT:
        cfg->sqs_listen_host[0] = '\0';
        cfg->sqs_listen_port = 0;
        if (text[0] == '\0')
            return 0;
        return parse_listen(text, cfg->sqs_listen_host, sizeof cfg->sqs_listen_host,
                            &cfg->sqs_listen_port);
    case K_PATH: {
        size_t len = strlen(text);
        if (len >= s->size || (s->min && len == 0))
            return -1;
        memcpy(field, text, len + 1);
        return 0;
    }
    case K_INT:
    case K_INT64:
        if (parse_int64(text, &v) != 0 || v < s->min || v > s->max)
            return -1;
        if (s->kind == K_INT)
            *(int *)(void *)field = (int)v;
        else
            *(int64_t *)(void *)field = v;
        return 0;
    case K_SYNC:
        if (strcmp(text, "full") == 0)
            cfg->sync_full = 1;
        else if (strcmp(text, "normal") == 0)
            cfg->sync_full = 0;
        else
            return -1;
        return 0;
    case K_LEVEL: {
        enum log_level level;
        if (log_level_parse(text, &level) != 0)
            return -1;
        snprintf(cfg->log_level, sizeof cfg->log_level, "%s", text);
        return 0;
    }
    case K_BOOL: {
        int b = parse_bool(text);
        if (b < 0)
            return -1;
        *(int *)(void *)field = b;
        return 0;
    }
    case K_FORMAT:
        if (strcmp(text, "text") != 0 && strcmp(text, "json") != 0)
            return -1;
        *(int *)(void *)field = strcmp(text, "json") == 0;
        return 0;
    case K_KEYS: {
        size_t have = strlen(field), len = strlen(text);
        if (len == 0)
            return 0;
        if (have + len + 2 > s->size)
            return -1;
        if (have)
            field[have++] = '\n';
        memcpy(field + have, text, len + 1);
        return 0;
    }
    }
    return -1;
}

/* Set s from text coming from `source` ("JOBQ_X" or "--x"); on failure write why to err. */
static int apply(struct config *cfg, const struct setting *s, const char *text, const char *source,
                 FILE *err)
{
    if (set_value(cfg, s, text) == 0)
        return 0;
    char range[128];
    describe_range(s, range, sizeof range);
    if (err) {
        /* Long values are cut so that the message stays one readable line. */
        if (s->kind == K_KEYS) /* never a secret in a message */
            fprintf(err, "invalid value for %s (%s): must be %s\n", s->name, source, range);
        else
            fprintf(err, "invalid value for %s (%s): \"%.80s%s\": must be %s\n", s->name, source,
                    text, strlen(text) > 80 ? "..." : "", range);
    }
    return -1;
}

static const struct setting *find_setting(const char *name, size_t len)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        if (strlen(settings[i].name) == len && strncmp(settings[i].name, name, len) == 0)
            return &settings[i];
    }
    return NULL;
}

/* Apply the command line, marking in seen[] (indexed like settings[]) what it sets. Returns
 * CONFIG_OK or CONFIG_INVALID (err written). */
static enum config_parse load_flags(struct config *cfg, int argc, char **argv, FILE *err,
                                    unsigned char *seen)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            if (err)
                fprintf(err, "unexpected argument \"%.80s\" (see --help)\n", arg);
            return CONFIG_INVALID;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct setting *s = find_setting(name, nlen);
        if (!s) {
            if (err)
                fprintf(err, "unknown option --%.*s (see --help)\n", (int)(nlen > 80 ? 80 : nlen),
                        name);
            return CONFIG_INVALID;
        }
        const char *value;
        if (eq) {
            value = eq + 1;
        } else if (s->kind == K_BOOL) {
            value = "1"; /* a switch never takes the next argument */
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            if (err)
                fprintf(err, "option --%s needs a value (see --help)\n", s->name);
            return CONFIG_INVALID;
        }
        char source[64];
        snprintf(source, sizeof source, "--%s", s->name);
        if (apply(cfg, s, value, source, err) != 0)
            return CONFIG_INVALID;
        seen[s - settings] = 1;
    }
    return CONFIG_OK;
}

/* 1 when every address host resolves to is a loopback one (127.0.0.0/8, ::1, or 127.0.0.0/8
 * mapped into IPv6), 0 when one is not, -1 when host does not resolve (binding it will fail
 * later with its own message). */
static int host_is_loopback(const char *host)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return -1;
    int all = 1;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            const struct sockaddr_in *a = (const void *)ai->ai_addr;
            all &= (ntohl(a->sin_addr.s_addr) >> 24) == 127;
        } else if (ai->ai_family == AF_INET6) {
            const struct in6_addr *a =
                &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr;
            all &= IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
        } else {
            all = 0;
        }
    }
    freeaddrinfo(res);
    return all;
}

/* The checks across settings (see config_load in config.h). Returns CONFIG_OK or
 * CONFIG_INVALID (err written). */
static enum config_parse check_together(struct config *cfg, const unsigned char *seen, FILE *err)
{
    if ((cfg->tls_cert[0] == '\0') != (cfg->tls_key[0] == '\0')) {
        if (err)
            fprintf(err, "tls-cert (--tls-cert, JOBQ_TLS_CERT) and tls-key (--tls-key, "
                         "JOBQ_TLS_KEY) must be given together\n");
        return CONFIG_INVALID;
    }
    if (cfg->max_connections_per_ip > cfg->max_connections) {
        static const char per_ip[] = "max-connections-per-ip";
        const struct setting *s = find_setting(per_ip, sizeof per_ip - 1);
        if (seen[s - settings]) {
            if (err)
                fprintf(err,
                        "max-connections-per-ip (--max-connections-per-ip, "
                        "JOBQ_MAX_CONNECTIONS_PER_IP) is %d: must be at most max-connections "
                        "(%d)\n",
                        cfg->max_connections_per_ip, cfg->max_connections);
            return CONFIG_INVALID;
        }
        cfg->max_connections_per_ip = cfg->max_connections;
    }
    if (cfg->sqs_keys[0] && cfg->auth_token_file[0] == '\0') {
        if (err)
            fprintf(err, "sqs-key (--sqs-key, JOBQ_SQS_KEYS) needs --auth-token-file: SigV4 "
                         "signatures are checked only when authentication is on\n");
        return CONFIG_INVALID;
    }
    if (cfg->auth_token_file[0] == '\0' && !cfg->insecure_listen_any && cfg->sqs_listen_host[0] &&
        host_is_loopback(cfg->sqs_listen_host) == 0) {
        if (err)
            fprintf(err,
                    "sqs-listen (--sqs-listen, JOBQ_SQS_LISTEN): %s is not a loopback address "
                    "and no --auth-token-file is given. Give --auth-token-file PATH, or "
                    "--insecure-listen-any (JOBQ_INSECURE_LISTEN_ANY=1) to serve it open "
                    "anyway\n",
                    cfg->sqs_listen_host);
        return CONFIG_INVALID;
    }
    if (cfg->auth_token_file[0] == '\0' && !cfg->insecure_listen_any &&
        host_is_loopback(cfg->listen_host) == 0) {
        if (err)
            fprintf(err,
                    "listen (--listen, JOBQ_LISTEN): %s is not a loopback address and no "
                    "--auth-token-file is given: refusing to let every client that can reach it "
                    "do everything without authentication. Give --auth-token-file PATH, or "
                    "--insecure-listen-any (JOBQ_INSECURE_LISTEN_ANY=1) to serve it open "
                    "anyway\n",
                    cfg->listen_host);
        return CONFIG_INVALID;
    }
    return CONFIG_OK;
}

enum config_parse config_load(struct config *cfg, int argc, char **argv, FILE *err)
{
    /* --help and --version win over everything, even a bad environment. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return CONFIG_HELP;
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0)
            return CONFIG_VERSION;
    }

    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NSETTINGS; i++) {
        /* A default outside its own bounds is our bug; say so rather than run with zeros. */
        if (set_value(cfg, &settings[i], settings[i].def) != 0) {
            if (err)
                fprintf(err, "bad default for %s\n", settings[i].name);
            return CONFIG_INVALID;
        }
    }

    /* An empty variable counts as unset, so `JOBQ_DB= jobqd` means the default. */
    unsigned char seen[NSETTINGS] = {0};
    for (size_t i = 0; i < NSETTINGS; i++) {
        const char *v = getenv(settings[i].env);
        if (v && *v) {
            if (apply(cfg, &settings[i], v, settings[i].env, err) != 0)
                return CONFIG_INVALID;
            seen[i] = 1;
        }
    }

    if (load_flags(cfg, argc, argv, err, seen) != CONFIG_OK)
        return CONFIG_INVALID;
    return check_together(cfg, seen, err);
}

void config_usage(FILE *out, const char *prog)
{
    fprintf(out,
            "usage: %s [--OPTION VALUE | --OPTION=VALUE]...\n"
            "       %s --help | --version\n"
            "       %s migrate --from PATH.db --db postgres://... (see %s migrate --help)\n\n"
            "jobq job-queue server. Each option is also read from its environment variable;\n"
            "the command line wins over the environment, an empty variable counts as unset.\n\n",
            prog, prog, prog, prog);
    for (size_t i = 0; i < NSETTINGS; i++) {
        const struct setting *s = &settings[i];
        char range[128];
        describe_range(s, range, sizeof range);
        fprintf(out, "  --%s%s%s\n      %s\n      env %s; default %s; %s\n", s->name,
                s->metavar[0] ? " " : "", s->metavar, s->help, s->env, s->def[0] ? s->def : "none",
                range);
    }
    fprintf(out, "  --help      print this text\n  --version   print the version\n");
}
