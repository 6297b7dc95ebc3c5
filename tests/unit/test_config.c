#include <stdarg.h>
#include <stdlib.h>

#include "config.h"
#include "testlib.h"

static const char *const env_names[] = {
    "JOBQ_LISTEN",
    "JOBQ_DB",
    "JOBQ_SWEEP_INTERVAL",
    "JOBQ_RETENTION",
    "JOBQ_SYNC",
    "JOBQ_MAX_BODY_BYTES",
    "JOBQ_BACKOFF_BASE",
    "JOBQ_BACKOFF_MAX",
    "JOBQ_AUTH_TOKEN_FILE",
    "JOBQ_INSECURE_LISTEN_ANY",
    "JOBQ_TLS_CERT",
    "JOBQ_TLS_KEY",
    "JOBQ_THREADS",
    "JOBQ_MAX_CONNECTIONS",
    "JOBQ_MAX_CONNECTIONS_PER_IP",
    "JOBQ_IDLE_TIMEOUT",
    "JOBQ_HEADER_TIMEOUT",
    "JOBQ_READERS",
    "JOBQ_LOG_LEVEL",
    "JOBQ_SQS_KEYS",
};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
        unsetenv(env_names[i]);
}

/* Run config_load on a NULL-terminated argument list; the error text goes to errbuf. */
static enum config_parse load(struct config *cfg, char *errbuf, size_t errlen, ...)
{
    char *argv[32] = {"jobqd"};
    int argc = 1;
    va_list ap;
    va_start(ap, errlen);
    for (char *a; argc < 31 && (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    FILE *err = fmemopen(errbuf, errlen, "w");
    enum config_parse r = config_load(cfg, argc, argv, err);
    fclose(err);
    return r;
}

TEST(defaults)
{
    clear_env();
    struct config c;
    char err[512] = "";
    CHECK_INT(load(&c, err, sizeof err, NULL), CONFIG_OK);
    CHECK_STR(c.listen_host, "127.0.0.1");
    CHECK_INT(c.listen_port, 8080);
    CHECK_STR(c.db_path, "./data/jobq.db");
    CHECK_INT(c.sweep_interval, 5);
    CHECK_INT(c.retention, 604800);
    CHECK_INT(c.sync_full, 1);
    CHECK_INT(c.max_body_bytes, 1048576);
    CHECK_INT(c.backoff_base, 2);
    CHECK_INT(c.backoff_max, 3600);
    CHECK_STR(c.auth_token_file, "");
    CHECK_INT(c.insecure_listen_any, 0);
    CHECK_STR(c.tls_cert, "");
    CHECK_STR(c.tls_key, "");
    CHECK_INT(c.threads, 4);
    CHECK_INT(c.max_connections, 4096);
    /* At least 1,000 simultaneous connections from one address by default. */
    CHECK_INT(c.max_connections_per_ip, 2048);
    CHECK_INT(c.idle_timeout, 90);
    CHECK_INT(c.header_timeout, 30);
    CHECK_INT(c.readers, 4);
    CHECK_STR(c.log_level, "info");
    CHECK_STR(err, "");
}

TEST(env_overrides_defaults)
{
    clear_env();
    setenv("JOBQ_LISTEN", "0.0.0.0:9000", 1);
    setenv("JOBQ_INSECURE_LISTEN_ANY", "1", 1); /* open on every address: must be said */
    setenv("JOBQ_DB", "/tmp/x.db", 1);
    setenv("JOBQ_SWEEP_INTERVAL", "7", 1);
    setenv("JOBQ_SYNC", "normal", 1);
    setenv("JOBQ_THREADS", "8", 1);
    setenv("JOBQ_LOG_LEVEL", "debug", 1);
    setenv("JOBQ_RETENTION", "", 1); /* empty: unset */
    struct config c;
    char err[512] = "";
    enum config_parse r = load(&c, err, sizeof err, NULL);
    clear_env();
    CHECK_INT(r, CONFIG_OK);
    CHECK_STR(c.listen_host, "0.0.0.0");
    CHECK_INT(c.listen_port, 9000);
    CHECK_STR(c.db_path, "/tmp/x.db");
    CHECK_INT(c.sweep_interval, 7);
    CHECK_INT(c.sync_full, 0);
    CHECK_INT(c.threads, 8);
    CHECK_STR(c.log_level, "debug");
    CHECK_INT(c.retention, 604800);
    CHECK_INT(c.insecure_listen_any, 1);
}

TEST(flags_override_env)
{
    clear_env();
    setenv("JOBQ_SWEEP_INTERVAL", "7", 1);
    setenv("JOBQ_DB", "/tmp/env.db", 1);
    setenv("JOBQ_MAX_BODY_BYTES", "2048", 1);
    struct config c;
    char err[512] = "";
    enum config_parse r = load(&c, err, sizeof err, "--sweep-interval", "9", "--db=/tmp/flag.db",
                               "--max-connections=16", NULL);
    clear_env();
    CHECK_INT(r, CONFIG_OK);
    CHECK_INT(c.sweep_interval, 9);
    CHECK_STR(c.db_path, "/tmp/flag.db");
    CHECK_INT(c.max_body_bytes, 2048);
    CHECK_INT(c.max_connections, 16);
}

TEST(equals_form_and_last_wins)
{
    clear_env();
    struct config c;
    char err[512] = "";
    CHECK_INT(load(&c, err, sizeof err, "--retention=0", "--backoff-base", "0",
                   "--backoff-max=31536000", "--threads=2", "--threads", "3", "--sync=full", NULL),
              CONFIG_OK);
    CHECK_INT(c.retention, 0);
    CHECK_INT(c.backoff_base, 0);
    CHECK_INT(c.backoff_max, 31536000);
    CHECK_INT(c.threads, 3);
    CHECK_INT(c.sync_full, 1);
    /* "--x=" is an explicit empty value, not "take the next argument". */
    CHECK_INT(load(&c, err, sizeof err, "--db=", "--threads", "2", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "db") != NULL);
}

TEST(bounds_rejected_naming_key_and_range)
{
    clear_env();
    struct config c;
    char err[512];
    CHECK_INT(load(&c, err, sizeof err, "--sweep-interval", "0", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "sweep-interval") != NULL);
    CHECK(strstr(err, "from 1 to 3600") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--sweep-interval=3601", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "from 1 to 3600") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--sweep-interval=3600", NULL), CONFIG_OK);

    CHECK_INT(load(&c, err, sizeof err, "--max-body-bytes=1023", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "max-body-bytes") != NULL);
    CHECK(strstr(err, "from 1024 to 67108864") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--max-body-bytes=67108864", NULL), CONFIG_OK);
    CHECK_INT(load(&c, err, sizeof err, "--max-body-bytes=67108865", NULL), CONFIG_INVALID);

    CHECK_INT(load(&c, err, sizeof err, "--threads=65", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "threads") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--max-connections=15", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--readers=33", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--idle-timeout=0", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--retention=-1", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--retention=315360001", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--backoff-max=31536001", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--backoff-base=86401", NULL), CONFIG_INVALID);

    /* Not an integer at all, or with trailing junk, or overflowing. */
    CHECK_INT(load(&c, err, sizeof err, "--threads=4x", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--threads=", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--threads= 4", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--retention=99999999999999999999", NULL), CONFIG_INVALID);

    CHECK_INT(load(&c, err, sizeof err, "--sync=FULL", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "full or normal") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--log-level=verbose", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "log-level") != NULL);
}

TEST(bad_env_names_variable)
{
    clear_env();
    setenv("JOBQ_THREADS", "0", 1);
    struct config c;
    char err[512];
    enum config_parse r = load(&c, err, sizeof err, NULL);
    clear_env();
    CHECK_INT(r, CONFIG_INVALID);
    CHECK(strstr(err, "JOBQ_THREADS") != NULL);
    CHECK(strstr(err, "from 1 to 64") != NULL);
}

TEST(listen_parsing)
{
    clear_env();
    struct config c;
    char err[512];
    CHECK_INT(load(&c, err, sizeof err, "--listen", "[::1]:9090", NULL), CONFIG_OK);
    CHECK_STR(c.listen_host, "::1");
    CHECK_INT(c.listen_port, 9090);
    CHECK_INT(load(&c, err, sizeof err, "--listen=[::]:0", "--insecure-listen-any", NULL),
              CONFIG_OK);
    CHECK_STR(c.listen_host, "::");
    CHECK_INT(c.listen_port, 0);
    CHECK_INT(load(&c, err, sizeof err, "--listen=localhost:65535", NULL), CONFIG_OK);
    CHECK_STR(c.listen_host, "localhost");
    CHECK_INT(c.listen_port, 65535);

    static const char *const bad[] = {
        "127.0.0.1",    "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",     "127.0.0.1:80x",
        ":8080",        "::1:8080",   "[::1]8080",       "[::1]:",           "[]:80",
        "[nothost]:80", "[::1:80",    "a b:80",          "127.0.0.1:123456",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (load(&c, err, sizeof err, "--listen", bad[i], NULL) != CONFIG_INVALID) {
            fprintf(stderr, "accepted --listen %s\n", bad[i]);
            CHECK(0);
        }
        CHECK(strstr(err, "listen") != NULL);
        CHECK(strstr(err, "65535") != NULL);
    }
}

TEST(unknown_and_missing)
{
    clear_env();
    struct config c;
    char err[512];
    CHECK_INT(load(&c, err, sizeof err, "--nope", "1", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "--nope") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--db", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "needs a value") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "stray", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "-x", NULL), CONFIG_INVALID);
}

TEST(help_and_version)
{
    clear_env();
    setenv("JOBQ_THREADS", "bad", 1); /* --help works even with a bad environment */
    struct config c;
    char err[512];
    enum config_parse h = load(&c, err, sizeof err, "--threads=0", "--help", NULL);
    enum config_parse v = load(&c, err, sizeof err, "--version", NULL);
    clear_env();
    CHECK_INT(h, CONFIG_HELP);
    CHECK_INT(v, CONFIG_VERSION);

    static char usage[8192];
    FILE *out = fmemopen(usage, sizeof usage, "w");
    config_usage(out, "jobqd");
    fclose(out);
    CHECK(strstr(usage, "--sweep-interval") != NULL);
    CHECK(strstr(usage, "JOBQ_SWEEP_INTERVAL") != NULL);
    CHECK(strstr(usage, "default 127.0.0.1:8080") != NULL);
    CHECK(strstr(usage, "default 1048576") != NULL);
    CHECK(strstr(usage, "JOBQ_MAX_CONNECTIONS") != NULL);
    CHECK(strstr(usage, "from 16 to 100000") != NULL);
    CHECK(strstr(usage, "--insecure-listen-any\n") != NULL); /* a switch: no metavar */
    CHECK(strstr(usage, "JOBQ_INSECURE_LISTEN_ANY") != NULL);
    CHECK(strstr(usage, "--tls-cert PATH") != NULL);
    CHECK(strstr(usage, "--tls-key PATH") != NULL);
    CHECK(strstr(usage, "--max-connections-per-ip N") != NULL);
    CHECK(strstr(usage, "JOBQ_MAX_CONNECTIONS_PER_IP; default 2048") != NULL);
}

TEST(auth_token_file_accepted)
{
    clear_env();
    struct config c;
    char err[512] = "";
    /* The file is read by jobqd at start-up (auth.c), not by config_load. */
    CHECK_INT(load(&c, err, sizeof err, "--auth-token-file", "/tmp/tokens", NULL), CONFIG_OK);
    CHECK_STR(c.auth_token_file, "/tmp/tokens");
    setenv("JOBQ_AUTH_TOKEN_FILE", "/etc/jobq/tokens", 1);
    enum config_parse r = load(&c, err, sizeof err, NULL);
    clear_env();
    CHECK_INT(r, CONFIG_OK);
    CHECK_STR(c.auth_token_file, "/etc/jobq/tokens");
    CHECK_STR(err, "");
}

TEST(sqs_listen)
{
    clear_env();
    struct config c;
    char err[1024] = "";
    CHECK_INT(load(&c, err, sizeof err, NULL), CONFIG_OK);
    CHECK_STR(c.sqs_listen_host, ""); /* off by default */
    CHECK_STR(c.sqs_base_url, "");
    CHECK_INT(load(&c, err, sizeof err, "--sqs-listen", "[::1]:9324", "--sqs-base-url",
                   "https://sqs.example/", NULL),
              CONFIG_OK);
    CHECK_STR(c.sqs_listen_host, "::1");
    CHECK_INT(c.sqs_listen_port, 9324);
    CHECK_STR(c.sqs_base_url, "https://sqs.example/");
    CHECK_INT(load(&c, err, sizeof err, "--sqs-listen=127.0.0.1:9324", "--sqs-listen=", NULL),
              CONFIG_OK);
    CHECK_STR(c.sqs_listen_host, "");
    CHECK_INT(load(&c, err, sizeof err, "--sqs-listen", "127.0.0.1", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "sqs-listen") != NULL);
    /* A wide SQS listener needs authentication as a wide native one does. */
    err[0] = '\0';
    CHECK_INT(load(&c, err, sizeof err, "--sqs-listen", "0.0.0.0:9324", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "not a loopback address") != NULL);
    CHECK_INT(
        load(&c, err, sizeof err, "--sqs-listen", "0.0.0.0:9324", "--insecure-listen-any", NULL),
        CONFIG_OK);
}

TEST(non_loopback_needs_auth_or_insecure)
{
    clear_env();
    struct config c;
    char err[1024] = "";
    static const char *const open_ok[] = {"127.0.0.1:0", "127.9.8.7:1", "[::1]:0", "localhost:0"};
    for (size_t i = 0; i < sizeof open_ok / sizeof open_ok[0]; i++) {
        if (load(&c, err, sizeof err, "--listen", open_ok[i], NULL) != CONFIG_OK) {
            fprintf(stderr, "refused --listen %s: %s\n", open_ok[i], err);
            CHECK(0);
        }
    }
    static const char *const wide[] = {
        "0.0.0.0:0", "[::]:8080", "10.1.2.3:80", "128.0.0.1:80", "[::ffff:10.0.0.1]:80",
        "[::2]:80"};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        err[0] = '\0';
        if (load(&c, err, sizeof err, "--listen", wide[i], NULL) != CONFIG_INVALID) {
            fprintf(stderr, "accepted --listen %s without auth\n", wide[i]);
            CHECK(0);
        }
        CHECK(strstr(err, "not a loopback address") != NULL);
        CHECK(strstr(err, "--auth-token-file") != NULL);
        CHECK(strstr(err, "--insecure-listen-any") != NULL);
        CHECK_INT(load(&c, err, sizeof err, "--listen", wide[i], "--auth-token-file=t", NULL),
                  CONFIG_OK);
        CHECK_INT(load(&c, err, sizeof err, "--listen", wide[i], "--insecure-listen-any", NULL),
                  CONFIG_OK);
        CHECK_INT(c.insecure_listen_any, 1);
    }
    /* IPv4-mapped loopback is loopback. */
    CHECK_INT(load(&c, err, sizeof err, "--listen=[::ffff:127.0.0.1]:0", NULL), CONFIG_OK);
}

TEST(insecure_switch_forms)
{
    clear_env();
    struct config c;
    char err[512] = "";
    /* The switch alone never takes the next argument. */
    CHECK_INT(load(&c, err, sizeof err, "--insecure-listen-any", "--threads", "2", NULL),
              CONFIG_OK);
    CHECK_INT(c.insecure_listen_any, 1);
    CHECK_INT(c.threads, 2);
    static const char *const yes[] = {"1", "true", "yes"}, *const no[] = {"0", "false", "no"};
    for (size_t i = 0; i < 3; i++) {
        char arg[64];
        snprintf(arg, sizeof arg, "--insecure-listen-any=%s", yes[i]);
        CHECK_INT(load(&c, err, sizeof err, arg, NULL), CONFIG_OK);
        CHECK_INT(c.insecure_listen_any, 1);
        snprintf(arg, sizeof arg, "--insecure-listen-any=%s", no[i]);
        CHECK_INT(load(&c, err, sizeof err, arg, NULL), CONFIG_OK);
        CHECK_INT(c.insecure_listen_any, 0);
    }
    CHECK_INT(load(&c, err, sizeof err, "--insecure-listen-any=2", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "insecure-listen-any") != NULL);
    setenv("JOBQ_INSECURE_LISTEN_ANY", "1", 1);
    setenv("JOBQ_LISTEN", "0.0.0.0:0", 1);
    enum config_parse r1 = load(&c, err, sizeof err, NULL);
    int v1 = c.insecure_listen_any;
    /* The command line wins: switched off again, the wide listen is refused. */
    enum config_parse r2 = load(&c, err, sizeof err, "--insecure-listen-any=0", NULL);
    setenv("JOBQ_INSECURE_LISTEN_ANY", "maybe", 1);
    enum config_parse r3 = load(&c, err, sizeof err, NULL);
    clear_env();
    CHECK_INT(r1, CONFIG_OK);
    CHECK_INT(v1, 1);
    CHECK_INT(r2, CONFIG_INVALID);
    CHECK_INT(r3, CONFIG_INVALID);
    CHECK(strstr(err, "JOBQ_INSECURE_LISTEN_ANY") != NULL);
}

TEST(tls_cert_and_key_together)
{
    clear_env();
    struct config c;
    char err[512] = "";
    CHECK_INT(load(&c, err, sizeof err, "--tls-cert", "c.pem", "--tls-key", "k.pem", NULL),
              CONFIG_OK);
    CHECK_STR(c.tls_cert, "c.pem");
    CHECK_STR(c.tls_key, "k.pem");
    CHECK_INT(load(&c, err, sizeof err, "--tls-cert", "c.pem", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "tls-cert") != NULL);
    CHECK(strstr(err, "tls-key") != NULL);
    CHECK(strstr(err, "together") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--tls-key=k.pem", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "together") != NULL);
    setenv("JOBQ_TLS_CERT", "/etc/c.pem", 1);
    setenv("JOBQ_TLS_KEY", "/etc/k.pem", 1);
    enum config_parse r = load(&c, err, sizeof err, NULL);
    clear_env();
    CHECK_INT(r, CONFIG_OK);
    CHECK_STR(c.tls_cert, "/etc/c.pem");
    CHECK_STR(c.tls_key, "/etc/k.pem");
}

TEST(connection_limits)
{
    clear_env();
    struct config c;
    char err[512] = "";
    CHECK_INT(load(&c, err, sizeof err, "--max-connections-per-ip=1", NULL), CONFIG_OK);
    CHECK_INT(c.max_connections_per_ip, 1);
    CHECK_INT(load(&c, err, sizeof err, "--max-connections-per-ip=0", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "max-connections-per-ip") != NULL);
    CHECK(strstr(err, "from 1 to 100000") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--max-connections-per-ip=100001", NULL), CONFIG_INVALID);
    /* Per address never above the total: an explicit value over it is refused... */
    CHECK_INT(
        load(&c, err, sizeof err, "--max-connections=100", "--max-connections-per-ip=101", NULL),
        CONFIG_INVALID);
    CHECK(strstr(err, "at most max-connections") != NULL);
    CHECK_INT(
        load(&c, err, sizeof err, "--max-connections=100", "--max-connections-per-ip=100", NULL),
        CONFIG_OK);
    CHECK_INT(c.max_connections_per_ip, 100);
    setenv("JOBQ_MAX_CONNECTIONS_PER_IP", "5000", 1);
    enum config_parse r = load(&c, err, sizeof err, NULL);
    clear_env();
    CHECK_INT(r, CONFIG_INVALID);
    CHECK(strstr(err, "JOBQ_MAX_CONNECTIONS_PER_IP") != NULL);
    /* ...and the default follows a smaller total down. */
    CHECK_INT(load(&c, err, sizeof err, "--max-connections=16", NULL), CONFIG_OK);
    CHECK_INT(c.max_connections_per_ip, 16);
    CHECK_INT(load(&c, err, sizeof err, "--max-connections=100000", NULL), CONFIG_OK);
    CHECK_INT(c.max_connections_per_ip, 2048);
    /* The idle timeout that closes quiet connections. */
    CHECK_INT(load(&c, err, sizeof err, "--idle-timeout=1", NULL), CONFIG_OK);
    CHECK_INT(c.idle_timeout, 1);
    CHECK_INT(load(&c, err, sizeof err, "--idle-timeout=3600", NULL), CONFIG_OK);
    CHECK_INT(load(&c, err, sizeof err, "--idle-timeout=3601", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "idle-timeout") != NULL);
}

TEST(header_timeout)
{
    clear_env();
    struct config c;
    char err[512] = "";
    CHECK_INT(load(&c, err, sizeof err, "--header-timeout", "1", NULL), CONFIG_OK);
    CHECK_INT(c.header_timeout, 1);
    CHECK_INT(load(&c, err, sizeof err, "--header-timeout=3600", NULL), CONFIG_OK);
    CHECK_INT(c.header_timeout, 3600);
    CHECK_INT(load(&c, err, sizeof err, "--header-timeout=0", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "header-timeout") != NULL);
    CHECK(strstr(err, "from 1 to 3600") != NULL);
    CHECK_INT(load(&c, err, sizeof err, "--header-timeout=3601", NULL), CONFIG_INVALID);
    CHECK_INT(load(&c, err, sizeof err, "--header-timeout=2s", NULL), CONFIG_INVALID);
    setenv("JOBQ_HEADER_TIMEOUT", "7", 1);
    enum config_parse r = load(&c, err, sizeof err, NULL);
    int64_t from_env = c.header_timeout;
    enum config_parse r2 = load(&c, err, sizeof err, "--header-timeout=9", NULL);
    int64_t from_flag = c.header_timeout;
    setenv("JOBQ_HEADER_TIMEOUT", "-1", 1);
    enum config_parse r3 = load(&c, err, sizeof err, NULL);
    clear_env();
    CHECK_INT(r, CONFIG_OK);
    CHECK_INT(from_env, 7);
    CHECK_INT(r2, CONFIG_OK);
    CHECK_INT(from_flag, 9);
    CHECK_INT(r3, CONFIG_INVALID);
    CHECK(strstr(err, "JOBQ_HEADER_TIMEOUT") != NULL);

    static char usage[16384];
    FILE *out = fmemopen(usage, sizeof usage, "w");
    config_usage(out, "jobqd");
    fclose(out);
    CHECK(strstr(usage, "--header-timeout SECONDS\n") != NULL);
    CHECK(strstr(usage, "env JOBQ_HEADER_TIMEOUT; default 30; an integer from 1 to 3600") != NULL);
}

/* --sqs-key is repeatable (and adds to JOBQ_SQS_KEYS), needs --auth-token-file, and a bad
 * value's message never shows the value (it holds a secret). */
TEST(sqs_keys_repeat)
{
    clear_env();
    struct config c;
    char err[1024] = "";
    CHECK_INT(load(&c, err, sizeof err, NULL), CONFIG_OK);
    CHECK_STR(c.sqs_keys, "");
    setenv("JOBQ_SQS_KEYS", "E:e:admin", 1);
    CHECK_INT(load(&c, err, sizeof err, "--auth-token-file", "t", "--sqs-key", "A:a:admin",
                   "--sqs-key=B:b:worker", NULL),
              CONFIG_OK);
    CHECK_STR(c.sqs_keys, "E:e:admin\nA:a:admin\nB:b:worker");
    unsetenv("JOBQ_SQS_KEYS");
    CHECK_INT(load(&c, err, sizeof err, "--sqs-key", "A:a:admin", NULL), CONFIG_INVALID);
    CHECK(strstr(err, "needs --auth-token-file") != NULL);
    static char big[20000];
    memset(big, 'k', sizeof big - 1);
    err[0] = '\0';
    CHECK_INT(load(&c, err, sizeof err, "--auth-token-file", "t", "--sqs-key", big, NULL),
              CONFIG_INVALID);
    CHECK(strstr(err, "sqs-key") != NULL && strstr(err, "kkkk") == NULL);
}

TEST_MAIN(TEST_ENTRY(defaults), TEST_ENTRY(env_overrides_defaults), TEST_ENTRY(flags_override_env),
          TEST_ENTRY(equals_form_and_last_wins), TEST_ENTRY(bounds_rejected_naming_key_and_range),
          TEST_ENTRY(bad_env_names_variable), TEST_ENTRY(listen_parsing),
          TEST_ENTRY(unknown_and_missing), TEST_ENTRY(help_and_version),
          TEST_ENTRY(auth_token_file_accepted), TEST_ENTRY(non_loopback_needs_auth_or_insecure),
          TEST_ENTRY(insecure_switch_forms), TEST_ENTRY(tls_cert_and_key_together),
          TEST_ENTRY(connection_limits), TEST_ENTRY(header_timeout), TEST_ENTRY(sqs_listen),
          TEST_ENTRY(sqs_keys_repeat))
