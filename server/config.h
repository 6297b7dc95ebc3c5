/* The server's configuration: one table of settings (name, env var, flag, default, bounds,
 * help). Filled once at start-up, read-only afterwards. */
#ifndef JOBQ_CONFIG_H
#define JOBQ_CONFIG_H

#include <stdint.h>
#include <stdio.h>

struct config {
    char listen_host[256]; /* --listen HOST:PORT, JOBQ_LISTEN; default 127.0.0.1:8080 */
    int listen_port;
    char db_path[4096];         /* --db PATH|URL, JOBQ_DB; default ./data/jobq.db */
    int64_t sweep_interval;     /* --sweep-interval seconds, JOBQ_SWEEP_INTERVAL; default 5 */
    int64_t retention;          /* --retention seconds, JOBQ_RETENTION; default 604800 */
    int64_t events_retention;   /* --events-retention-seconds; default 86400 */
    int64_t events_max;         /* --events-max; default 1000000 */
    int events_streams;         /* --events-streams; default 256 */
    int64_t webhook_retry_base; /* --webhook-retry-base seconds; default 5 */
    int webhook_allow_private;  /* --webhook-allow-private; default 0 */
    int sync_full;              /* --sync full|normal, JOBQ_SYNC; default full */
    int64_t max_body_bytes;     /* --max-body-bytes, JOBQ_MAX_BODY_BYTES; default 1 MiB */
    int64_t backoff_base;       /* --backoff-base seconds, JOBQ_BACKOFF_BASE; default 2 */
    int64_t backoff_max;        /* --backoff-max seconds, JOBQ_BACKOFF_MAX; default 3600 */
    char auth_token_file[4096]; /* --auth-token-file, JOBQ_AUTH_TOKEN_FILE; default none */
    int insecure_listen_any;    /* --insecure-listen-any, JOBQ_INSECURE_LISTEN_ANY; default 0 */
    char tls_cert[4096];        /* --tls-cert PEM file, JOBQ_TLS_CERT; default none */
    char tls_key[4096];         /* --tls-key PEM file, JOBQ_TLS_KEY; default none */
    int threads;                /* --threads, JOBQ_THREADS; HTTP worker threads, default 4 */
    int max_connections;        /* --max-connections, JOBQ_MAX_CONNECTIONS; default 4096 */
    int max_connections_per_ip; /* --max-connections-per-ip, JOBQ_MAX_CONNECTIONS_PER_IP; 2048 */
    int64_t idle_timeout;       /* --idle-timeout seconds, JOBQ_IDLE_TIMEOUT; default 90 */
    int64_t header_timeout;     /* --header-timeout seconds, JOBQ_HEADER_TIMEOUT; default 30 */
    int readers;                /* --readers, JOBQ_READERS; SQLite read connections, default 4 */
    int pool_size;              /* --pool-size, JOBQ_POOL_SIZE; PostgreSQL connections, 8 */
    int pg_writers;             /* --pg-writers, JOBQ_PG_WRITERS; 0: all the pool allows */
    int64_t pg_checkout_ms;     /* --pg-checkout-timeout ms, JOBQ_PG_CHECKOUT_TIMEOUT; 5000 */
    int64_t pg_statement_ms;    /* --pg-statement-timeout ms, JOBQ_PG_STATEMENT_TIMEOUT; 5000 */
    char log_level[16];         /* --log-level, JOBQ_LOG_LEVEL; default info */
    int log_json;               /* --log-format json, JOBQ_LOG_FORMAT; default text (0) */
    int access_log; /* --access-log, JOBQ_ACCESS_LOG; default 1: request lines at info */
    /* --sqs-listen HOST:PORT, JOBQ_SQS_LISTEN: the SQS front end's listener; default none
     * (sqs_listen_host empty: no SQS listener) */
    char sqs_listen_host[256];
    int sqs_listen_port;
    char sqs_base_url[512]; /* --sqs-base-url, JOBQ_SQS_BASE_URL; default http://HOST:PORT */
    /* --sqs-key KEY:SECRET:ROLE (repeatable), JOBQ_SQS_KEYS: one per line; default none */
    char sqs_keys[16384];
};

enum config_parse { CONFIG_OK = 0, CONFIG_HELP, CONFIG_VERSION, CONFIG_INVALID };

/* Fill cfg from the defaults, then the JOBQ_* environment, then argv (flags win). Accepts
 * "--flag value" and "--flag=value"; a switch (--insecure-listen-any) also stands alone, and
 * its variable takes 1/0, true/false, yes/no. On CONFIG_INVALID a message naming the key has
 * been written to err. CONFIG_HELP / CONFIG_VERSION: the caller prints and exits 0.
 * Checks across settings, also CONFIG_INVALID: --tls-cert and --tls-key come together; an
 * explicit --max-connections-per-ip is at most --max-connections (the default is lowered to
 * --max-connections when that is smaller); and a --listen address that is not loopback
 * (127.0.0.0/8, ::1; a name counts as loopback only when every address it resolves to is)
 * needs --auth-token-file or --insecure-listen-any. Files are not read here. */
enum config_parse config_load(struct config *cfg, int argc, char **argv, FILE *err);

/* Print the usage text with every setting, its env var, default and bounds. */
void config_usage(FILE *out, const char *prog);

#endif
