/* auth: the token file, constant-time lookup and comparison, the role matrix over the route
 * table, and the Authorization header's parsing (api/access.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "access.h"
#include "auth.h"
#include "router.h"
#include "testlib.h"

static struct auth *parse_ok(const char *text)
{
    struct auth *a = NULL;
    char err[256] = "";
    if (auth_parse(text, strlen(text), "tokens", &a, err, sizeof err) != 0) {
        fprintf(stderr, "unexpected parse error: %s\n", err);
        return NULL;
    }
    return a;
}

static enum auth_role lookup(const struct auth *a, const char *tok)
{
    return auth_lookup(a, tok, strlen(tok));
}

TEST(comments_blanks_crlf_and_roles)
{
    static const char text[] = "# jobq tokens\n"
                               "\n"
                               "   \t \n"
                               "producer-token-0001 producer\n"
                               "  # indented comment\n"
                               "\tworker-token-00002\t\tworker  \r\n"
                               "admin-token-000003 admin"; /* no final newline */
    struct auth *a = parse_ok(text);
    CHECK(a != NULL);
    CHECK_INT(auth_count(a, AUTH_ROLE_NONE), 3);
    CHECK_INT(auth_count(a, AUTH_ROLE_PRODUCER), 1);
    CHECK_INT(auth_count(a, AUTH_ROLE_WORKER), 1);
    CHECK_INT(auth_count(a, AUTH_ROLE_ADMIN), 1);
    CHECK_INT(lookup(a, "producer-token-0001"), AUTH_ROLE_PRODUCER);
    CHECK_INT(lookup(a, "worker-token-00002"), AUTH_ROLE_WORKER);
    CHECK_INT(lookup(a, "admin-token-000003"), AUTH_ROLE_ADMIN);
    /* Comments and role names are not tokens. */
    CHECK_INT(lookup(a, "#"), AUTH_ROLE_NONE);
    CHECK_INT(lookup(a, "producer"), AUTH_ROLE_NONE);
    CHECK_INT(lookup(a, "admin"), AUTH_ROLE_NONE);
    auth_free(a);
    auth_free(NULL);
}

TEST(lookup_is_exact)
{
    /* Tokens that share prefixes and differ in length. */
    struct auth *a = parse_ok("abcdefghijklmnop producer\n"
                              "abcdefghijklmnopq worker\n"
                              "abcdefghijklmno= admin\n"
                              "b64+/token~with.all_chars-== worker\n");
    CHECK(a != NULL);
    CHECK_INT(lookup(a, "abcdefghijklmnop"), AUTH_ROLE_PRODUCER);
    CHECK_INT(lookup(a, "abcdefghijklmnopq"), AUTH_ROLE_WORKER);
    CHECK_INT(lookup(a, "abcdefghijklmno="), AUTH_ROLE_ADMIN);
    CHECK_INT(lookup(a, "b64+/token~with.all_chars-=="), AUTH_ROLE_WORKER);
    CHECK_INT(lookup(a, "abcdefghijklmno"), AUTH_ROLE_NONE);    /* a prefix */
    CHECK_INT(lookup(a, "abcdefghijklmnopqr"), AUTH_ROLE_NONE); /* one more byte */
    CHECK_INT(lookup(a, "Abcdefghijklmnop"), AUTH_ROLE_NONE);   /* case matters */
    CHECK_INT(lookup(a, "abcdefghijklmnoP"), AUTH_ROLE_NONE);   /* last byte differs */
    CHECK_INT(lookup(a, ""), AUTH_ROLE_NONE);
    CHECK_INT(auth_lookup(a, NULL, 3), AUTH_ROLE_NONE);
    CHECK_INT(auth_lookup(NULL, "abcdefghijklmnop", 16), AUTH_ROLE_NONE);
    /* A token followed by a NUL and more: the length given counts, not the string. */
    CHECK_INT(auth_lookup(a, "abcdefghijklmnop\0x", 18), AUTH_ROLE_NONE);
    /* Equal bytes once zero-padded, but not the same length: not the token. */
    CHECK_INT(auth_lookup(a, "abcdefghijklmnop\0", 17), AUTH_ROLE_NONE);
    CHECK_INT(auth_lookup(a, "abcdefghijklmnopXYZ", 16), AUTH_ROLE_PRODUCER);
    auth_free(a);
}

TEST(longest_token)
{
    char text[2 * AUTH_TOKEN_MAX + 64];
    char tok[AUTH_TOKEN_MAX + 2];
    memset(tok, 'k', AUTH_TOKEN_MAX);
    tok[AUTH_TOKEN_MAX] = '\0';
    snprintf(text, sizeof text, "%s admin\n", tok);
    struct auth *a = parse_ok(text);
    CHECK(a != NULL);
    CHECK_INT(lookup(a, tok), AUTH_ROLE_ADMIN);
    tok[AUTH_TOKEN_MAX - 1] = 'j';
    CHECK_INT(lookup(a, tok), AUTH_ROLE_NONE);
    /* A probe longer than any token can be is refused without reading past it. */
    tok[AUTH_TOKEN_MAX - 1] = 'k';
    tok[AUTH_TOKEN_MAX] = 'k';
    tok[AUTH_TOKEN_MAX + 1] = '\0';
    CHECK_INT(lookup(a, tok), AUTH_ROLE_NONE);
    auth_free(a);

    /* One byte over the limit fails, naming the line and not echoing the token. */
    snprintf(text, sizeof text, "# x\n%s admin\n", tok);
    char err[256] = "";
    CHECK_INT(auth_parse(text, strlen(text), "tokens", &a, err, sizeof err), -1);
    CHECK(a == NULL);
    CHECK(strstr(err, "line 2") != NULL);
    CHECK(strstr(err, "longer than 256") != NULL);
    CHECK(strstr(err, "kkkk") == NULL);
}

/* Each bad file fails with a message that names the file, the line, the reason, and never
 * any part of the line's text. */
TEST(bad_lines_fail_naming_line_not_token)
{
    static const struct {
        const char *text;
        const char *line; /* "line N" expected in the message, or "" for a file-level error */
        const char *why;
    } cases[] = {
        {"secret-token-aaaa\n", "line 1", "two fields"},
        {"# c\n\nsecret-token-aaaa producer extra\n", "line 3", "two fields"},
        {"good-token-000001 worker\nsecret-token-aaaa superuser\n", "line 2", "unknown role"},
        {"secret-token-aaaa Producer\n", "line 1", "unknown role"},
        {"secret-token-aaaa producer,worker\n", "line 1", "unknown role"},
        /* Order swapped: the token in the role's place must not be echoed either. */
        {"admin secret-token-aaaa\n", "line 1", "unknown role"},
        {"secret\"token-aaaa admin\n", "line 1", "characters outside"},
        {"secret=token-aaaa admin\n", "line 1", "characters outside"},
        {"=secret-token-aaaa admin\n", "line 1", "characters outside"},
        {"secret-tökén-aaaa admin\n", "line 1", "characters outside"},
        {"secret-token-aaaa # admin\n", "line 1", "two fields"},
        {"a-token-000000001 admin\nsecret-token-aaaa admin\n\nsecret-token-aaaa worker\n", "line 4",
         "same token as line 2"},
        {"", "", "no tokens"},
        {"# only a comment\n\n  \n", "", "no tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct auth *a = (struct auth *)1;
        char err[256] = "";
        int rc =
            auth_parse(cases[i].text, strlen(cases[i].text), "tokens.txt", &a, err, sizeof err);
        if (rc != -1 || a != NULL || !strstr(err, "tokens.txt") || !strstr(err, cases[i].line) ||
            !strstr(err, cases[i].why) || strstr(err, "secret") || strstr(err, "aaaa") ||
            strstr(err, "-token-") || strstr(err, "\xc3")) {
            fprintf(stderr, "case %zu: rc %d, message \"%s\"\n", i, rc, err);
            CHECK(0);
        }
    }
    /* A NUL byte inside the text. */
    static const char nul[] = "x-token-00000001 admin\nsecret\0token admin\n";
    struct auth *a = NULL;
    char err[256] = "";
    CHECK_INT(auth_parse(nul, sizeof nul - 1, "t", &a, err, sizeof err), -1);
    CHECK(strstr(err, "line 2") != NULL);
    CHECK(strstr(err, "NUL") != NULL);
}

TEST(too_many_tokens)
{
    size_t cap = (AUTH_MAX_TOKENS + 1) * 40;
    char *text = malloc(cap);
    CHECK(text != NULL);
    size_t n = 0;
    for (int i = 0; i < AUTH_MAX_TOKENS; i++)
        n += (size_t)snprintf(text + n, cap - n, "token-%020d worker\n", i);
    struct auth *a = NULL;
    char err[256] = "";
    int rc = auth_parse(text, n, "t", &a, err, sizeof err);
    if (rc == 0) {
        CHECK_INT(auth_count(a, AUTH_ROLE_WORKER), AUTH_MAX_TOKENS);
        CHECK_INT(lookup(a, "token-00000000000000001023"), AUTH_ROLE_WORKER);
        CHECK_INT(lookup(a, "token-00000000000000000000"), AUTH_ROLE_WORKER);
        auth_free(a);
    }
    n += (size_t)snprintf(text + n, cap - n, "token-%020d worker\n", AUTH_MAX_TOKENS);
    int rc2 = auth_parse(text, n, "t", &a, err, sizeof err);
    free(text);
    CHECK_INT(rc, 0);
    CHECK_INT(rc2, -1);
    CHECK(strstr(err, "line 1025") != NULL);
    CHECK(strstr(err, "more than 1024 tokens") != NULL);
}

TEST(load_file)
{
    FILE *f = fopen("tokens", "w");
    CHECK(f != NULL);
    fputs("# the tokens\nfile-token-0000001 producer\nfile-token-0000002 admin\n", f);
    fclose(f);
    chmod("tokens", 0600);
    struct auth *a = NULL;
    char err[256] = "";
    CHECK_INT(auth_load_file("tokens", &a, err, sizeof err), 0);
    CHECK_INT(auth_count(a, AUTH_ROLE_NONE), 2);
    CHECK_INT(lookup(a, "file-token-0000002"), AUTH_ROLE_ADMIN);
    auth_free(a);

    CHECK_INT(auth_load_file("missing", &a, err, sizeof err), -1);
    CHECK(a == NULL);
    CHECK(strstr(err, "missing") != NULL);
    CHECK(strstr(err, "No such file") != NULL);
    CHECK_INT(auth_load_file(".", &a, err, sizeof err), -1);
    CHECK(strstr(err, "not a regular file") != NULL);

    f = fopen("bad", "w");
    CHECK(f != NULL);
    fputs("file-token-0000001 producer\nfile-token-0000002 root\n", f);
    fclose(f);
    CHECK_INT(auth_load_file("bad", &a, err, sizeof err), -1);
    CHECK(strstr(err, "bad line 2: unknown role") != NULL);
    CHECK(strstr(err, "file-token") == NULL);

    /* Over AUTH_FILE_MAX: refused before parsing. */
    f = fopen("big", "w");
    CHECK(f != NULL);
    for (int i = 0; i <= AUTH_FILE_MAX / 64; i++)
        fputs("# padding padding padding padding padding padding padding paddin\n", f);
    fclose(f);
    CHECK_INT(auth_load_file("big", &a, err, sizeof err), -1);
    CHECK(strstr(err, "larger than") != NULL);
}

TEST(equal_is_correct)
{
    unsigned char x[64], y[64];
    for (int i = 0; i < 64; i++)
        x[i] = y[i] = (unsigned char)(i * 37 + 1);
    CHECK_INT(auth_equal(x, y, 64), 1);
    CHECK_INT(auth_equal(x, y, 0), 1);
    /* A difference at any position, of any bit, is seen. */
    for (int i = 0; i < 64; i++) {
        for (int bit = 0; bit < 8; bit++) {
            y[i] ^= (unsigned char)(1u << bit);
            int eq = auth_equal(x, y, 64);
            y[i] ^= (unsigned char)(1u << bit);
            CHECK_INT(eq, 0);
        }
    }
    CHECK_INT(auth_equal(x, y, 64), 1);
    memset(y, 0, sizeof y);
    memset(x, 0xff, sizeof x);
    CHECK_INT(auth_equal(x, y, 64), 0);
    CHECK_INT(auth_equal("\x80", "\x00", 1), 0);
    CHECK_INT(auth_equal("\x01", "\x00", 1), 0);
}

/* Every route of the table for every role: allowed, or refused with 403 (a known token) or
 * 401 (none). The expectation is written out here, independently of the table. */
TEST(role_matrix)
{
    enum { P = 1, W = 2, A = 4, OPEN = 8 };
    static const struct {
        const char *method, *pattern;
        int allowed; /* OPEN, or the roles allowed */
    } want[] = {
        {"POST", "/jobs", P | A},
        {"GET", "/jobs", P | W | A},
        {"POST", "/jobs/batch", P | A},
        {"GET", "/jobs/{id}", P | W | A},
        {"POST", "/jobs/{id}/heartbeat", W | A},
        {"POST", "/jobs/{id}/complete", W | A},
        {"POST", "/jobs/{id}/fail", W | A},
        {"POST", "/jobs/{id}/snooze", W | A},
        {"POST", "/jobs/{id}/cancel", A},
        {"POST", "/jobs/{id}/retry", A},
        {"POST", "/claim", W | A},
        {"GET", "/jobs/{id}/attempts", P | W | A},
        {"GET", "/jobs/{id}/dependencies", P | W | A},
        {"GET", "/jobs/{id}/dependents", P | W | A},
        {"GET", "/queues", P | W | A},
        {"GET", "/stats/throughput", P | W | A},
        {"GET", "/events", P | W | A},
        {"POST", "/queues/{name}/pause", A},
        {"POST", "/queues/{name}/resume", A},
        {"DELETE", "/queues/{name}/jobs", A},
        {"GET", "/limits", P | W | A},
        {"GET", "/limits/{key}", P | W | A},
        {"PUT", "/limits/{key}", A},
        {"DELETE", "/limits/{key}", A},
        {"GET", "/schedules", P | W | A},
        {"GET", "/schedules/{name}", P | W | A},
        {"PUT", "/schedules/{name}", A},
        {"DELETE", "/schedules/{name}", A},
        {"GET", "/webhooks", A},
        {"GET", "/webhooks/{name}", A},
        {"PUT", "/webhooks/{name}", A},
        {"DELETE", "/webhooks/{name}", A},
        {"GET", "/healthz", OPEN},
        {"GET", "/readyz", OPEN},
        {"GET", "/metrics", P | W | A},
        {"GET", "/ui", OPEN},
        {"GET", "/ui/", OPEN},
        {"GET", "/ui/api.js", OPEN},
        {"GET", "/ui/app.css", OPEN},
        {"GET", "/ui/app.js", OPEN},
        {"GET", "/ui/chart.js", OPEN},
        {"GET", "/ui/dom.js", OPEN},
        {"GET", "/ui/jobs.js", OPEN},
        {"GET", "/ui/limits.js", OPEN},
        {"GET", "/ui/schedules.js", OPEN},
        {"GET", "/ui/live.js", OPEN},
        {"GET", "/ui/webhooks.js", OPEN},
    };
    static const enum auth_role roles[] = {AUTH_ROLE_NONE, AUTH_ROLE_PRODUCER, AUTH_ROLE_WORKER,
                                           AUTH_ROLE_ADMIN};
    /* Every route in the table has a row here: a new route must be placed in the matrix. */
    for (size_t i = 0; i < router_table_len; i++) {
        const struct route *r = &router_table[i];
        size_t k = 0;
        while (k < sizeof want / sizeof want[0] &&
               (strcmp(want[k].method, r->method) != 0 || strcmp(want[k].pattern, r->pattern) != 0))
            k++;
        if (k == sizeof want / sizeof want[0]) {
            fprintf(stderr, "route %s %s is not in the role matrix\n", r->method, r->pattern);
            CHECK(0);
        }
        for (size_t j = 0; j < sizeof roles / sizeof roles[0]; j++) {
            int expect = want[k].allowed == OPEN || (want[k].allowed & (int)roles[j]) != 0;
            if (auth_allows(roles[j], r->access) != expect) {
                fprintf(stderr, "%s %s as %s: expected %s\n", r->method, r->pattern,
                        auth_role_name(roles[j]), expect ? "allowed" : "refused");
                CHECK(0);
            }
        }
    }
    CHECK_INT(router_table_len, sizeof want / sizeof want[0]);
    /* A row that leaves out the access column is admin-only, never open. */
    static const struct route forgotten = {.method = "POST", .pattern = "/x"};
    CHECK_INT(forgotten.access, AUTH_ACCESS_ADMIN);
    CHECK_INT(auth_allows(AUTH_ROLE_WORKER, forgotten.access), 0);
    CHECK_INT(auth_allows(AUTH_ROLE_ADMIN, forgotten.access), 1);
    CHECK_INT(auth_allows(AUTH_ROLE_NONE, AUTH_ACCESS_READ), 0);
    CHECK_INT(
        auth_allows((enum auth_role)(AUTH_ROLE_PRODUCER | AUTH_ROLE_WORKER), AUTH_ACCESS_READ), 0);
    CHECK_STR(auth_role_name(AUTH_ROLE_PRODUCER), "producer");
    CHECK_STR(auth_role_name(AUTH_ROLE_WORKER), "worker");
    CHECK_STR(auth_role_name(AUTH_ROLE_ADMIN), "admin");
    CHECK_STR(auth_role_name(AUTH_ROLE_NONE), "none");
}

TEST(bearer_header_parsing)
{
    static const struct {
        const char *value;
        const char *token; /* NULL: refused */
    } cases[] = {
        {"Bearer abc", "abc"},
        {"bearer abc", "abc"},
        {"BEARER \t abc \t ", "abc"},
        {" Bearer abc", "abc"},
        {"Bearer abc=", "abc="},
        {"Bearer", NULL},
        {"Bearer ", NULL},
        {"Bearerabc", NULL},
        {"Bearer abc def", NULL},
        {"Basic YWxhZGRpbjpvcGVu", NULL},
        {"Token abc", NULL},
        {"", NULL},
        {"abc", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *tok = NULL;
        size_t len = 0;
        int rc = access_bearer_token(cases[i].value, &tok, &len);
        int ok = cases[i].token ? rc == 0 && len == strlen(cases[i].token) &&
                                      memcmp(tok, cases[i].token, len) == 0
                                : rc == -1;
        if (!ok) {
            fprintf(stderr, "case \"%s\": rc %d\n", cases[i].value, rc);
            CHECK(0);
        }
    }
    const char *tok;
    size_t len;
    CHECK_INT(access_bearer_token(NULL, &tok, &len), -1);
}

/* The SQS access keys (SigV4): from the token file's KEY:SECRET:ROLE lines and from
 * --sqs-key's text, each looked up exactly with its secret; bad keys fail naming where, never
 * the secret. */
TEST(sqs_keys)
{
    struct auth *a = parse_ok("tok-0000000000000001 admin\n"
                              "  AKIDADMIN:wJalr/K7MDENG+bPxRfiCYEXAMPLEKEY:admin \r\n"
                              "AKIDWORK:w-secret:worker\n");
    CHECK(a != NULL);
    CHECK_INT(auth_count(a, AUTH_ROLE_NONE), 1);
    CHECK_INT(auth_sqs_key_count(a), 2);
    char err[256] = "";
    CHECK_INT(auth_add_sqs_keys(a, "AKIDPROD:p-secret:producer\nAKIDP2:s2:producer", "--sqs-key",
                                err, sizeof err),
              0);
    CHECK_INT(auth_sqs_key_count(a), 4);
    char secret[AUTH_SECRET_MAX + 1];
    size_t n = 99;
    CHECK_INT(auth_sqs_key(a, "AKIDADMIN", 9, secret, &n), AUTH_ROLE_ADMIN);
    CHECK_STR(secret, "wJalr/K7MDENG+bPxRfiCYEXAMPLEKEY");
    CHECK_INT(n, strlen(secret));
    CHECK_INT(auth_sqs_key(a, "AKIDWORK", 8, secret, &n), AUTH_ROLE_WORKER);
    CHECK_STR(secret, "w-secret");
    CHECK_INT(auth_sqs_key(a, "AKIDPROD", 8, secret, &n), AUTH_ROLE_PRODUCER);
    CHECK_STR(secret, "p-secret");
    CHECK_INT(auth_sqs_key(a, "AKIDPRO", 7, secret, &n), AUTH_ROLE_NONE);
    CHECK_STR(secret, "");
    CHECK_INT(n, 0);
    CHECK_INT(auth_sqs_key(a, "AKIDPRODX", 9, secret, &n), AUTH_ROLE_NONE);
    CHECK_INT(auth_sqs_key(a, "", 0, secret, &n), AUTH_ROLE_NONE);
    /* A key is not a bearer token. */
    CHECK_INT(lookup(a, "AKIDADMIN"), AUTH_ROLE_NONE);
    static const char *const bad[] = {"AKID:s",      "AKID:s:boss",   ":s:admin",
                                      "AKID::admin", "AK/ID:s:admin", "AKIDP2:other:admin"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK_INT(auth_add_sqs_keys(a, bad[i], "--sqs-key", err, sizeof err), -1);
        CHECK(strstr(err, "--sqs-key, key 1") != NULL);
        CHECK(strstr(err, "boss") == NULL && strstr(err, "other") == NULL);
    }
    auth_free(a);
    /* A file of keys only is a valid file; a bad key line fails naming its line. */
    a = parse_ok("AKIDONLY:secret:admin\n");
    CHECK(a != NULL);
    CHECK_INT(auth_count(a, AUTH_ROLE_NONE), 0);
    auth_free(a);
    a = NULL;
    static const char spaced[] = "t-00000000000000001 admin\nAKID:sec ret:admin\n";
    CHECK_INT(auth_parse(spaced, strlen(spaced), "tokens", &a, err, sizeof err), -1);
    CHECK(strstr(err, "tokens line 2") != NULL);
    static const char king[] = "t-00000000000000001 admin\nAKID:secret:king\n";
    CHECK_INT(auth_parse(king, strlen(king), "tokens", &a, err, sizeof err), -1);
    CHECK(strstr(err, "line 2") != NULL && strstr(err, "secret") == NULL);
}

TEST_MAIN(TEST_ENTRY(comments_blanks_crlf_and_roles), TEST_ENTRY(lookup_is_exact),
          TEST_ENTRY(longest_token), TEST_ENTRY(bad_lines_fail_naming_line_not_token),
          TEST_ENTRY(too_many_tokens), TEST_ENTRY(load_file), TEST_ENTRY(equal_is_correct),
          TEST_ENTRY(role_matrix), TEST_ENTRY(bearer_header_parsing), TEST_ENTRY(sqs_keys))
