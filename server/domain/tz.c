/* Time zones (tz.h): the TZif decoder, the offset at an instant (the transitions, then the
 * footer's rule), and the instants of a local time. */
#include "tz.h"

#include <stdlib.h>
#include <string.h>

#include "tz_posix.h"

#define TZ_TYPES_MAX 256     /* a type index is one byte */
#define TZ_LOCAL_SEGMENTS 64 /* offset changes tz_local_to_utc looks through (real: <= 4) */

struct tz_type {
    int32_t off;
    uint8_t isdst;
};

struct tz {
    size_t ntrans;
    int64_t *at;  /* ntrans transition instants, strictly ascending */
    uint8_t *idx; /* the type that starts at each */
    size_t ntypes;
    struct tz_type types[TZ_TYPES_MAX];
    int has_rule; /* 1: rule holds from the last transition on (or always, without any) */
    struct tz_posix rule;
};

static const struct tz utc_zone = {.ntypes = 1};

const struct tz *tz_utc(void)
{
    return &utc_zone;
}

void tz_free(const struct tz *z)
{
    if (!z || z == &utc_zone)
        return;
    struct tz *m = (struct tz *)z;
    free(m->at);
    free(m->idx);
    free(m);
}

/* A bounded big-endian reader: every read checks what is left. */
struct buf {
    const unsigned char *p;
    size_t len;
    size_t pos;
};

static int need(const struct buf *b, uint64_t n)
{
    return n <= b->len - b->pos;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct header {
    char version;
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static const char *read_header(struct buf *b, struct header *h)
{
    if (!need(b, 44))
        return "TZif: truncated header";
    const unsigned char *p = b->p + b->pos;
    if (memcmp(p, "TZif", 4) != 0)
        return "TZif: bad magic";
    h->version = (char)p[4];
    if (h->version != 0 && (h->version < '2' || h->version > '4'))
        return "TZif: unknown version";
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    b->pos += 44;
    if (h->typecnt == 0 || h->typecnt > TZ_TYPES_MAX || h->charcnt == 0)
        return "TZif: bad type or designation count";
    if ((h->isutcnt != 0 && h->isutcnt != h->typecnt) ||
        (h->isstdcnt != 0 && h->isstdcnt != h->typecnt))
        return "TZif: bad indicator count";
    return NULL;
}

/* The size of the data block that h describes, with times of tsize bytes. */
static uint64_t block_size(const struct header *h, unsigned tsize)
{
    return (uint64_t)h->timecnt * (tsize + 1) + (uint64_t)h->typecnt * 6 + h->charcnt +
           (uint64_t)h->leapcnt * (tsize + 4) + h->isstdcnt + h->isutcnt;
}

/* Decode a data block at b's position into z. */
static const char *read_block(struct buf *b, const struct header *h, unsigned tsize, struct tz *z)
{
    if (!need(b, block_size(h, tsize)))
        return "TZif: truncated data block";
    if (h->leapcnt != 0) /* its times would count leap seconds ("right/" zones) */
        return "TZif: leap-second zones are not supported";
    const unsigned char *p = b->p + b->pos;
    z->ntrans = h->timecnt;
    z->ntypes = h->typecnt;
    z->at = malloc((h->timecnt ? h->timecnt : 1) * sizeof *z->at);
    z->idx = malloc(h->timecnt ? h->timecnt : 1);
    if (!z->at || !z->idx)
        return NULL; /* the caller sees the NULL arrays: out of memory */
    for (uint32_t i = 0; i < h->timecnt; i++) {
        const unsigned char *q = p + (size_t)i * tsize;
        z->at[i] = tsize == 8 ? be64(q) : (int64_t)(int32_t)be32(q);
        if (i > 0 && z->at[i] <= z->at[i - 1])
            return "TZif: transitions out of order";
    }
    p += (size_t)h->timecnt * tsize;
    for (uint32_t i = 0; i < h->timecnt; i++) {
        if (p[i] >= h->typecnt)
            return "TZif: bad type index";
        z->idx[i] = p[i];
    }
    p += h->timecnt;
    for (uint32_t i = 0; i < h->typecnt; i++, p += 6) {
        int32_t off = (int32_t)be32(p);
        if (off < -TZ_OFFSET_MAX || off > TZ_OFFSET_MAX)
            return "TZif: offset out of range";
        if (p[4] > 1 || p[5] >= h->charcnt)
            return "TZif: bad local time type";
        z->types[i] = (struct tz_type){off, p[4]};
    }
    for (uint32_t i = 0; i < h->isstdcnt + h->isutcnt; i++)
        if (p[h->charcnt + (size_t)h->leapcnt * (tsize + 4) + i] > 1)
            return "TZif: bad indicator";
    b->pos += block_size(h, tsize);
    return NULL;
}

static const char *read_footer(struct buf *b, struct tz *z)
{
    if (!need(b, 2) || b->p[b->pos] != '\n')
        return "TZif: missing footer";
    const char *s = (const char *)b->p + b->pos + 1;
    size_t left = b->len - b->pos - 1;
    const char *nl = memchr(s, '\n', left);
    if (!nl)
        return "TZif: unterminated footer";
    if ((size_t)(nl - s) + 1 != left)
        return "TZif: bytes after the footer";
    if (nl == s)
        return NULL; /* empty: no rule */
    const char *why = NULL;
    if (tz_posix_parse(s, (size_t)(nl - s), &z->rule, &why) != 0)
        return why;
    z->has_rule = 1;
    return NULL;
}

enum tz_result tz_parse(const void *data, size_t len, struct tz **out, const char **why)
{
    struct buf b = {data, len, 0};
    struct header h;
    const char *bad = len > TZ_FILE_MAX ? "TZif: file too large" : read_header(&b, &h);
    struct tz *z = calloc(1, sizeof *z);
    if (!z)
        return TZ_NOMEM;
    if (!bad && h.version != 0) { /* skip the v1 block; read the 64-bit one and the footer */
        if (!need(&b, block_size(&h, 4)))
            bad = "TZif: truncated data block";
        else {
            b.pos += block_size(&h, 4);
            bad = read_header(&b, &h);
        }
        if (!bad && h.version == 0)
            bad = "TZif: second header without a version";
    }
    if (!bad)
        bad = read_block(&b, &h, h.version ? 8 : 4, z);
    int nomem = !bad && (!z->at || !z->idx);
    if (!bad && !nomem && h.version != 0)
        bad = read_footer(&b, z);
    else if (!bad && !nomem && b.pos != len)
        bad = "TZif: bytes after the data block";
    if (bad || nomem) {
        tz_free(z);
        if (why && bad)
            *why = bad;
        return bad ? TZ_INVALID : TZ_NOMEM;
    }
    *out = z;
    return TZ_OK;
}

enum tz_result tz_from_posix(const char *spec, size_t len, struct tz **out, const char **why)
{
    struct tz_posix p;
    if (tz_posix_parse(spec, len, &p, why) != 0)
        return TZ_INVALID;
    struct tz *z = calloc(1, sizeof *z);
    if (!z)
        return TZ_NOMEM;
    z->ntypes = 1;
    z->types[0].off = p.std_off;
    z->has_rule = 1;
    z->rule = p;
    *out = z;
    return TZ_OK;
}

/* The index of the last transition <= t, or -1 when t is before the first. */
static long last_at_or_before(const struct tz *z, int64_t t)
{
    size_t lo = 0, hi = z->ntrans; /* the answer + 1 lies in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->at[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (long)lo - 1;
}

/* 1 when t lies where the footer's rule decides. */
static int in_rule(const struct tz *z, int64_t t)
{
    return z->has_rule && (z->ntrans == 0 || t >= z->at[z->ntrans - 1]);
}

int32_t tz_offset(const struct tz *z, int64_t t)
{
    t = civil_clamp(t);
    if (in_rule(z, t))
        return tz_posix_offset(&z->rule, t);
    long i = last_at_or_before(z, t);
    return z->types[i < 0 ? 0 : z->idx[i]].off; /* before the first transition: type 0 */
}

int64_t tz_next_change(const struct tz *z, int64_t t)
{
    t = civil_clamp(t);
    int32_t cur = tz_offset(z, t);
    if (!in_rule(z, t)) {
        for (size_t i = (size_t)(last_at_or_before(z, t) + 1); i < z->ntrans; i++)
            if (tz_offset(z, z->at[i]) != cur)
                return z->at[i];
        if (!z->has_rule)
            return TZ_NEVER;
        t = z->at[z->ntrans - 1]; /* the rule's offset there is cur */
    }
    int64_t c = tz_posix_next_change(&z->rule, t);
    return c > CIVIL_TIME_MAX ? TZ_NEVER : c;
}

enum tz_local_kind tz_local_to_utc(const struct tz *z, int64_t local, int64_t *first,
                                   int64_t *second)
{
    local = civil_clamp(local);
    int64_t hi = local + TZ_OFFSET_MAX + 1;
    int64_t start = local - TZ_OFFSET_MAX - 1, sol[2] = {0, 0}, gap_end = TZ_NEVER;
    int32_t off = tz_offset(z, start);
    int n = 0;
    /* Walk the segments of constant offset that can hold an instant with this local time. */
    for (int seg = 0; seg < TZ_LOCAL_SEGMENTS; seg++) {
        int64_t end = tz_next_change(z, start);
        if (end > hi)
            end = hi;
        int64_t cand = local - off;
        if (cand >= start && cand < end) {
            if (n < 2)
                sol[n] = cand;
            n++;
        } else if (n == 0 && seg > 0 && gap_end == TZ_NEVER && start + off > local)
            gap_end = start;
        if (end >= hi)
            break;
        start = end;
        off = tz_offset(z, start);
    }
    enum tz_local_kind k = n == 0 ? TZ_LOCAL_GAP : n == 1 ? TZ_LOCAL_ONE : TZ_LOCAL_TWICE;
    if (n == 0)
        sol[0] = gap_end != TZ_NEVER ? gap_end : local - tz_offset(z, local);
    *first = sol[0];
    if (second)
        *second = n >= 2 ? sol[1] : sol[0];
    return k;
}

int tz_name_check(const char *name, size_t len)
{
    if (len == 0 || len > TZ_NAME_MAX || name[0] == '/' || name[len - 1] == '/')
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || c == '+' || (c == '/' && name[i - 1] != '/');
        if (!ok)
            return 0;
    }
    return 1;
}
