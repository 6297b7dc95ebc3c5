#include "jscan.h"

#include <string.h>

struct cur {
    const char *p, *end;
};

static void ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int eat(struct cur *c, char ch)
{
    ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A string: *s and *n get its raw text between the quotes (escapes left as they are). */
static int string(struct cur *c, const char **s, size_t *n)
{
    ws(c);
    if (c->p >= c->end || *c->p != '"')
        return -1;
    const char *start = ++c->p;
    while (c->p < c->end && *c->p != '"') {
        if (*c->p == '\\')
            c->p++;
        c->p++;
    }
    if (c->p >= c->end)
        return -1;
    *s = start;
    *n = (size_t)(c->p - start);
    c->p++;
    return 0;
}

static int number(struct cur *c, int64_t *v)
{
    ws(c);
    int neg = 0;
    if (c->p < c->end && *c->p == '-') {
        neg = 1;
        c->p++;
    }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return -1;
    int64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        x = x * 10 + (*c->p++ - '0');
    *v = neg ? -x : x;
    return 0;
}

static int skip(struct cur *c, int depth)
{
    if (depth > JSCAN_DEPTH)
        return -1;
    ws(c);
    if (c->p >= c->end)
        return -1;
    const char *s;
    size_t n;
    switch (*c->p) {
    case '"':
        return string(c, &s, &n);
    case '{':
        c->p++;
        if (eat(c, '}'))
            return 0;
        do {
            if (string(c, &s, &n) != 0 || !eat(c, ':') || skip(c, depth + 1) != 0)
                return -1;
        } while (eat(c, ','));
        return eat(c, '}') ? 0 : -1;
    case '[':
        c->p++;
        if (eat(c, ']'))
            return 0;
        do {
            if (skip(c, depth + 1) != 0)
                return -1;
        } while (eat(c, ','));
        return eat(c, ']') ? 0 : -1;
    default: /* a number or a literal: up to the next delimiter */
        while (c->p < c->end && !strchr(",}] \t\r\n", *c->p))
            c->p++;
        return 0;
    }
}

static int key_is(const char *s, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(s, want, n) == 0;
}

static int payload(struct cur *c, struct claimed *j)
{
    ws(c);
    if (c->p >= c->end || *c->p != '{')
        return skip(c, 2);
    c->p++;
    if (eat(c, '}'))
        return 0;
    do {
        const char *k;
        size_t kn;
        if (string(c, &k, &kn) != 0 || !eat(c, ':'))
            return -1;
        if (key_is(k, kn, "t")) {
            if (number(c, &j->t) != 0)
                return -1;
            j->has_t = 1;
        } else if (skip(c, 3) != 0) {
            return -1;
        }
    } while (eat(c, ','));
    return eat(c, '}') ? 0 : -1;
}

static int job(struct cur *c, struct claimed *j)
{
    int have_id = 0, have_token = 0;
    memset(j, 0, sizeof *j);
    if (!eat(c, '{'))
        return -1;
    if (!eat(c, '}')) {
        do {
            const char *k, *s;
            size_t kn, n;
            if (string(c, &k, &kn) != 0 || !eat(c, ':'))
                return -1;
            if (key_is(k, kn, "id")) {
                if (number(c, &j->id) != 0)
                    return -1;
                have_id = 1;
            } else if (key_is(k, kn, "lease_token")) {
                if (string(c, &s, &n) != 0 || n > JSCAN_TOKEN_MAX)
                    return -1;
                memcpy(j->token, s, n);
                j->token[n] = '\0';
                have_token = 1;
            } else if (key_is(k, kn, "payload")) {
                if (payload(c, j) != 0)
                    return -1;
            } else if (skip(c, 2) != 0) {
                return -1;
            }
        } while (eat(c, ','));
        if (!eat(c, '}'))
            return -1;
    }
    return have_id && have_token ? 0 : -1;
}

int jscan_claim(const char *s, size_t len, struct claimed *out, int max)
{
    struct cur c = {s, s + len};
    int count = 0, seen_jobs = 0;
    if (!eat(&c, '{'))
        return -1;
    if (eat(&c, '}'))
        return -1;
    do {
        const char *k;
        size_t kn;
        if (string(&c, &k, &kn) != 0 || !eat(&c, ':'))
            return -1;
        if (!key_is(k, kn, "jobs")) {
            if (skip(&c, 1) != 0)
                return -1;
            continue;
        }
        seen_jobs = 1;
        if (!eat(&c, '['))
            return -1;
        if (eat(&c, ']'))
            continue;
        do {
            struct claimed scratch;
            if (job(&c, count < max ? &out[count] : &scratch) != 0)
                return -1;
            if (count < max)
                count++;
        } while (eat(&c, ','));
        if (!eat(&c, ']'))
            return -1;
    } while (eat(&c, ','));
    return eat(&c, '}') && seen_jobs ? count : -1;
}
