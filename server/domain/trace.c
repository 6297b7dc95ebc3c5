/* W3C Trace Context checks (trace.h). */
#include "trace.h"

#include <string.h>

static int lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* 1 when s[0..n) is lowercase hex and not all zeros. */
static int hex_id_ok(const char *s, size_t n)
{
    int nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        if (!lower_hex(s[i]))
            return 0;
        nonzero |= s[i] != '0';
    }
    return nonzero;
}

int trace_parent_ok(const char *s, size_t n)
{
    if (!s || n != TRACE_PARENT_LEN || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' ||
        s[52] != '-')
        return 0;
    return hex_id_ok(s + 3, 32) && hex_id_ok(s + 36, 16) && lower_hex(s[53]) && lower_hex(s[54]);
}

static int key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
           c == '/';
}

/* 1 when k[0..n) is a tracestate key: a simple key (a lowercase letter, then up to 255 key
 * characters) or a multi-tenant key (tenant: a lowercase letter or digit, then up to 240;
 * "@"; system: a lowercase letter, then up to 13). */
static int key_ok(const char *k, size_t n)
{
    const char *at = memchr(k, '@', n);
    if (!at) {
        if (n < 1 || n > 256 || !(k[0] >= 'a' && k[0] <= 'z'))
            return 0;
        for (size_t i = 1; i < n; i++)
            if (!key_char(k[i]))
                return 0;
        return 1;
    }
    size_t tn = (size_t)(at - k), sn = n - tn - 1;
    int tenant_first = (k[0] >= 'a' && k[0] <= 'z') || (k[0] >= '0' && k[0] <= '9');
    if (tn < 1 || tn > 241 || sn < 1 || sn > 14 || !tenant_first || !(at[1] >= 'a' && at[1] <= 'z'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (i != tn && !key_char(k[i]))
            return 0;
    return 1;
}

/* 1 when v[0..n) is a tracestate value: 1..256 bytes of 0x20..0x7e but ',' and '=', the
 * last not a space. */
static int value_ok(const char *v, size_t n)
{
    if (n < 1 || n > 256 || v[n - 1] == ' ')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] < 0x20 || v[i] > 0x7e || v[i] == ',' || v[i] == '=')
            return 0;
    return 1;
}

int trace_state_ok(const char *s, size_t n)
{
    if (!s || n > TRACE_STATE_MAX)
        return 0;
    const char *keys[TRACE_STATE_MEMBERS];
    size_t klens[TRACE_STATE_MEMBERS], members = 0;
    size_t i = 0;
    while (i <= n) {
        size_t end = i;
        while (end < n && s[end] != ',')
            end++;
        size_t a = i, b = end; /* the member without the blanks around it */
        while (a < b && (s[a] == ' ' || s[a] == '\t'))
            a++;
        while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
            b--;
        if (a < b) {
            const char *eq = memchr(s + a, '=', b - a);
            if (!eq || members == TRACE_STATE_MEMBERS)
                return 0;
            size_t kn = (size_t)(eq - (s + a));
            if (!key_ok(s + a, kn) || !value_ok(eq + 1, (size_t)(s + b - eq - 1)))
                return 0;
            for (size_t m = 0; m < members; m++)
                if (klens[m] == kn && memcmp(keys[m], s + a, kn) == 0)
                    return 0;
            keys[members] = s + a;
            klens[members++] = kn;
        }
        i = end + 1;
    }
    return 1;
}
