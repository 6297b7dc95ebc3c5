/* Bearer tokens and roles (see auth.h). */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* One token: its bytes zero-padded to AUTH_TOKEN_MAX, its length and role. */
struct token {
    unsigned char bytes[AUTH_TOKEN_MAX];
    size_t len;
    unsigned role;
    unsigned line; /* where it was defined, for the duplicate message */
};

/* One SQS access key: its id and secret zero-padded, their lengths and its role. */
struct sqs_key {
    char id[AUTH_KEY_ID_MAX];
    size_t id_len;
    char secret[AUTH_SECRET_MAX + 1];
    size_t secret_len;
    unsigned role;
};

struct auth {
    struct token *tokens;
    size_t n;
    struct sqs_key *keys; /* room for AUTH_MAX_KEYS */
    size_t nkeys;
};

static const struct {
    const char *name;
    enum auth_role role;
} role_names[] = {
    {"producer", AUTH_ROLE_PRODUCER},
    {"worker", AUTH_ROLE_WORKER},
    {"admin", AUTH_ROLE_ADMIN},
};

const char *auth_role_name(enum auth_role role)
{
    for (size_t i = 0; i < sizeof role_names / sizeof role_names[0]; i++) {
        if (role_names[i].role == role)
            return role_names[i].name;
    }
    return "none";
}

int auth_allows(enum auth_role role, enum auth_access access)
{
    switch (access) {
    case AUTH_ACCESS_OPEN:
        return 1;
    case AUTH_ACCESS_READ:
        return role == AUTH_ROLE_PRODUCER || role == AUTH_ROLE_WORKER || role == AUTH_ROLE_ADMIN;
    case AUTH_ACCESS_PRODUCE:
        return role == AUTH_ROLE_PRODUCER || role == AUTH_ROLE_ADMIN;
    case AUTH_ACCESS_WORK:
        return role == AUTH_ROLE_WORKER || role == AUTH_ROLE_ADMIN;
    case AUTH_ACCESS_ADMIN:
        return role == AUTH_ROLE_ADMIN;
    }
    return 0;
}

int auth_equal(const void *a, const void *b, size_t n)
{
    /* volatile: the compiler may not turn the OR-reduction into a loop that stops early. */
    const volatile unsigned char *x = a, *y = b;
    unsigned d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned)(x[i] ^ y[i]);
    /* 1 when d is 0, without a branch: (d - 1) has its top bit set only when d was 0. */
    return (int)(((d & 0xffu) - 1u) >> (sizeof d * 8 - 1));
}

/* All ones when a == b, else 0, without a branch. */
static unsigned mask_equal_size(size_t a, size_t b)
{
    uint64_t d = (uint64_t)a ^ (uint64_t)b;
    /* d | -d has its top bit set exactly when d != 0. */
    uint64_t nonzero = (d | (0 - d)) >> 63;
    return (unsigned)(nonzero - 1u);
}

/* All ones when probe (len bytes, zero-padded to size) is stored (stored_len bytes, padded
 * to size), else 0, in time that depends only on size. */
static unsigned mask_same(const void *probe, size_t len, const void *stored, size_t stored_len,
                          size_t size)
{
    return (0u - (unsigned)auth_equal(probe, stored, size)) & mask_equal_size(len, stored_len);
}

enum auth_role auth_lookup(const struct auth *a, const char *tok, size_t len)
{
    if (!a || !tok || len == 0 || len > AUTH_TOKEN_MAX)
        return AUTH_ROLE_NONE; /* the caller's own length: nothing secret is learned */
    unsigned char probe[AUTH_TOKEN_MAX];
    memset(probe, 0, sizeof probe);
    memcpy(probe, tok, len);
    unsigned role = 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct token *t = &a->tokens[i];
        role |= mask_same(probe, len, t->bytes, t->len, AUTH_TOKEN_MAX) & t->role;
    }
    explicit_bzero(probe, sizeof probe);
    return (enum auth_role)role;
}

size_t auth_count(const struct auth *a, enum auth_role role)
{
    if (!a)
        return 0;
    if (role == AUTH_ROLE_NONE)
        return a->n;
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++)
        n += a->tokens[i].role == (unsigned)role;
    return n;
}

void auth_free(struct auth *a)
{
    if (!a)
        return;
    if (a->tokens)
        explicit_bzero(a->tokens, a->n * sizeof a->tokens[0]);
    free(a->tokens);
    if (a->keys)
        explicit_bzero(a->keys, AUTH_MAX_KEYS * sizeof a->keys[0]);
    free(a->keys);
    free(a);
}

enum auth_role auth_sqs_key(const struct auth *a, const char *id, size_t len, char *secret,
                            size_t *slen)
{
    memset(secret, 0, AUTH_SECRET_MAX + 1);
    *slen = 0;
    if (!a || len == 0 || len > AUTH_KEY_ID_MAX)
        return AUTH_ROLE_NONE;
    char probe[AUTH_KEY_ID_MAX] = {0};
    memcpy(probe, id, len);
    unsigned role = 0;
    for (size_t i = 0; i < a->nkeys; i++) {
        const struct sqs_key *k = &a->keys[i];
        unsigned same = mask_same(probe, len, k->id, k->id_len, AUTH_KEY_ID_MAX);
        role |= same & k->role;
        for (size_t j = 0; j <= AUTH_SECRET_MAX; j++)
            secret[j] = (char)((unsigned char)secret[j] | (same & (unsigned char)k->secret[j]));
        *slen |= (size_t)same & k->secret_len;
    }
    return (enum auth_role)role;
}

size_t auth_sqs_key_count(const struct auth *a)
{
    return a ? a->nkeys : 0;
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* 1 when c may appear in a token before its trailing '=' padding (RFC 6750 b64token). */
static int token_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

/* 1 when s[0..n) is a b64token: 1*token_char followed by *"=". */
static int valid_token(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && token_char(s[i]))
        i++;
    if (i == 0)
        return 0;
    while (i < n && s[i] == '=')
        i++;
    return i == n;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Split line[0..n) into at most 3 blank-separated fields; returns how many there are (3
 * meaning "3 or more"). */
static int split_fields(const char *line, size_t n, const char **f, size_t *flen)
{
    int k = 0;
    size_t i = 0;
    while (k < 3) {
        while (i < n && is_blank(line[i]))
            i++;
        if (i == n)
            break;
        f[k] = line + i;
        while (i < n && !is_blank(line[i]))
            i++;
        flen[k] = (size_t)(line + i - f[k]);
        k++;
    }
    return k;
}

/* The role named s[0..n), or 0. */
static unsigned role_of(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof role_names / sizeof role_names[0]; i++) {
        if (strlen(role_names[i].name) == n && memcmp(role_names[i].name, s, n) == 0)
            return (unsigned)role_names[i].role;
    }
    return 0;
}

/* Add the key "ID:SECRET:ROLE" (s[0..n)) to a. Returns NULL, or what is wrong with it. */
static const char *add_key(struct auth *a, const char *s, size_t n)
{
    const char *c1 = memchr(s, ':', n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(s + n - c1 - 1)) : NULL;
    if (!c2)
        return "expected KEY:SECRET:ROLE";
    size_t idn = (size_t)(c1 - s), sn = (size_t)(c2 - c1 - 1);
    if (idn == 0 || idn > AUTH_KEY_ID_MAX)
        return "the access key id is empty or too long";
    for (size_t i = 0; i < idn; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return "the access key id has characters outside A-Z a-z 0-9 - _ .";
    }
    if (sn == 0 || sn > AUTH_SECRET_MAX)
        return "the secret is empty or too long";
    for (size_t i = 0; i < sn; i++) {
        if (c1[1 + i] <= ' ' || c1[1 + i] > '~')
            return "the secret has characters outside printable ASCII";
    }
    unsigned role = role_of(c2 + 1, (size_t)(s + n - c2 - 1));
    if (!role)
        return "unknown role (must be producer, worker or admin)";
    if (!a->keys && !(a->keys = calloc(AUTH_MAX_KEYS, sizeof *a->keys)))
        return "out of memory";
    if (a->nkeys == AUTH_MAX_KEYS)
        return "too many access keys";
    for (size_t i = 0; i < a->nkeys; i++) {
        if (a->keys[i].id_len == idn && memcmp(a->keys[i].id, s, idn) == 0)
            return "the same access key id twice";
    }
    struct sqs_key *k = &a->keys[a->nkeys++];
    memcpy(k->id, s, idn);
    k->id_len = idn;
    memcpy(k->secret, c1 + 1, sn);
    k->secret_len = sn;
    k->role = role;
    return NULL;
}

int auth_add_sqs_keys(struct auth *a, const char *text, const char *name, char *err, size_t errlen)
{
    unsigned item = 0;
    const char *p = text;
    for (;;) {
        p += strspn(p, " \t\r\n");
        if (!*p)
            return 0;
        size_t n = strcspn(p, " \t\r\n");
        item++;
        const char *why = add_key(a, p, n);
        if (why)
            return fail(err, errlen, "%s, key %u: %s", name, item, why);
        p += n;
    }
}

/* Parse one non-blank, non-comment line into t. Returns 0, or -1 with err written. */
static int parse_line(const char *line, size_t n, unsigned lineno, const char *name,
                      struct token *t, char *err, size_t errlen)
{
    const char *f[3];
    size_t flen[3];
    /* Messages name the line and what is wrong with it, never its text: a misplaced field
     * could be a token. */
    if (split_fields(line, n, f, flen) != 2)
        return fail(err, errlen, "%s line %u: expected \"TOKEN ROLE\" (two fields)", name, lineno);
    if (flen[0] > AUTH_TOKEN_MAX)
        return fail(err, errlen, "%s line %u: the token is longer than %d characters", name, lineno,
                    AUTH_TOKEN_MAX);
    if (!valid_token(f[0], flen[0]))
        return fail(err, errlen,
                    "%s line %u: the token has characters outside A-Z a-z 0-9 - . _ ~ + / "
                    "(and trailing =)",
                    name, lineno);
    unsigned role = role_of(f[1], flen[1]);
    if (!role)
        return fail(err, errlen, "%s line %u: unknown role (must be producer, worker or admin)",
                    name, lineno);
    memset(t, 0, sizeof *t);
    memcpy(t->bytes, f[0], flen[0]);
    t->len = flen[0];
    t->role = role;
    t->line = lineno;
    return 0;
}

/* The parse proper, into a (whose tokens array has room for AUTH_MAX_TOKENS). */
static int parse_into(struct auth *a, const char *text, size_t len, const char *name, char *err,
                      size_t errlen)
{
    unsigned lineno = 0;
    size_t pos = 0;
    while (pos < len) {
        lineno++;
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (memchr(line, '\0', n))
            return fail(err, errlen, "%s line %u: contains a NUL byte", name, lineno);
        size_t skip = 0;
        while (skip < n && is_blank(line[skip]))
            skip++;
        if (skip == n || line[skip] == '#')
            continue;
        size_t end = n;
        while (end > skip && is_blank(line[end - 1]))
            end--;
        if (!memchr(line + skip, ' ', end - skip) && !memchr(line + skip, '\t', end - skip) &&
            memchr(line + skip, ':', end - skip)) {
            const char *why = add_key(a, line + skip, end - skip);
            if (why)
                return fail(err, errlen, "%s line %u: %s", name, lineno, why);
            continue;
        }
        if (a->n == AUTH_MAX_TOKENS)
            return fail(err, errlen, "%s line %u: more than %d tokens", name, lineno,
                        AUTH_MAX_TOKENS);
        struct token *t = &a->tokens[a->n];
        if (parse_line(line, n, lineno, name, t, err, errlen) != 0)
            return -1;
        /* Start-up only, not timed by any client: a plain comparison is fine here. */
        for (size_t i = 0; i < a->n; i++) {
            if (a->tokens[i].len == t->len && memcmp(a->tokens[i].bytes, t->bytes, t->len) == 0)
                return fail(err, errlen, "%s line %u: the same token as line %u", name, lineno,
                            a->tokens[i].line);
        }
        if (t->len < AUTH_TOKEN_WEAK)
            log_warn("%s line %u: the token is shorter than %d characters and easy to guess", name,
                     lineno, AUTH_TOKEN_WEAK);
        a->n++;
    }
    if (a->n == 0 && a->nkeys == 0)
        return fail(err, errlen, "%s: no tokens (expected lines of \"TOKEN ROLE\")", name);
    return 0;
}

int auth_parse(const char *text, size_t len, const char *name, struct auth **out, char *err,
               size_t errlen)
{
    *out = NULL;
    if (!name)
        name = "token file";
    struct auth *a = calloc(1, sizeof *a);
    struct token *tokens = calloc(AUTH_MAX_TOKENS, sizeof *tokens);
    if (!a || !tokens) {
        free(a);
        free(tokens);
        return fail(err, errlen, "%s: out of memory", name);
    }
    a->tokens = tokens;
    if (parse_into(a, text ? text : "", text ? len : 0, name, err, errlen) != 0) {
        explicit_bzero(tokens, AUTH_MAX_TOKENS * sizeof *tokens);
        a->n = 0;
        auth_free(a);
        return -1;
    }
    /* Keep only what is used. */
    struct token *fit = malloc(a->n * sizeof *fit);
    if (fit) {
        memcpy(fit, tokens, a->n * sizeof *fit);
        explicit_bzero(tokens, AUTH_MAX_TOKENS * sizeof *tokens);
        free(tokens);
        a->tokens = fit;
    }
    *out = a;
    return 0;
}

int auth_load_file(const char *path, struct auth **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "cannot read the token file %s: not a regular file", path);
    }
    if (st.st_size > AUTH_FILE_MAX) {
        close(fd);
        return fail(err, errlen, "the token file %s is larger than %d bytes", path, AUTH_FILE_MAX);
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        log_warn("the token file %s can be read or written by other users (mode %03o): "
                 "chmod 600 it",
                 path, (unsigned)(st.st_mode & 0777));
    char *buf = malloc(AUTH_FILE_MAX + 1);
    if (!buf) {
        close(fd);
        return fail(err, errlen, "cannot read the token file %s: out of memory", path);
    }
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, AUTH_FILE_MAX + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            explicit_bzero(buf, len);
            free(buf);
            return fail(err, errlen, "cannot read the token file %s: %s", path, strerror(e));
        }
        if (r == 0 || len + (size_t)r > AUTH_FILE_MAX) {
            len += (size_t)r;
            break;
        }
        len += (size_t)r;
    }
    close(fd);
    int rc;
    if (len > AUTH_FILE_MAX)
        rc = fail(err, errlen, "the token file %s is larger than %d bytes", path, AUTH_FILE_MAX);
    else
        rc = auth_parse(buf, len, path, out, err, errlen);
    explicit_bzero(buf, len);
    free(buf);
    return rc;
}
