/* jsonin: strict validation, member lookup, array iteration, compaction. */
#include <stdlib.h>
#include <string.h>

#include "jsonin.h"
#include "testlib.h"

static enum jv check(const char *s)
{
    return json_validate(s, strlen(s), NULL);
}

static enum jv check_n(const char *s, size_t n)
{
    return json_validate(s, n, NULL);
}

/* A body nesting `depth` levels: arrays inside one top-level object. */
static char *nested(int depth, char open, char close)
{
    char *s = malloc((size_t)depth * 8 + 32);
    size_t n = 0;
    n += (size_t)sprintf(s + n, "{\"p\":");
    for (int i = 1; i < depth; i++) {
        if (open == '{')
            n += (size_t)sprintf(s + n, "{\"a\":");
        else
            s[n++] = open;
    }
    s[n++] = '1';
    for (int i = 1; i < depth; i++)
        s[n++] = close;
    s[n++] = '}';
    s[n] = '\0';
    return s;
}

TEST(valid_values)
{
    const char *ok[] = {
        "{}",
        "[]",
        "0",
        "-0",
        "1",
        "-1",
        "1.5",
        "1e5",
        "1E+5",
        "1e-5",
        "-0.0e0",
        "12345678901234567890123456789",
        "\"\"",
        "\"x\"",
        "true",
        "false",
        "null",
        " \t\r\n{ \"a\" : [ 1 , 2 , { } , [ ] ] , \"b\" : null } \n",
        "{\"a\":1,\"a\":2}",
        "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041 \\u00e9\"",
        "\"\\ud83d\\ude00\"",
        "\"\\uD83D\\uDE00\"",
        "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
        "\"\x7f\"",
        "\"\xef\xbf\xbf\"",
        "\"\xf4\x8f\xbf\xbf\"",
        "\"\xed\x9f\xbf\"",
        "\"\\u0000\"",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (check(ok[i]) != JV_OK)
            fprintf(stderr, "rejected: %s\n", ok[i]);
        CHECK_INT(check(ok[i]), JV_OK);
    }
}

TEST(syntax_errors)
{
    const char *bad[] = {
        "",
        " ",
        "{",
        "}",
        "[",
        "]",
        "{,}",
        "[,]",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\"}",
        "{\"a\" 1}",
        "{'a':1}",
        "{a:1}",
        "[01]",
        "[-01]",
        "[1.]",
        "[.5]",
        "[1e]",
        "[1e+]",
        "[+1]",
        "[-]",
        "[NaN]",
        "[Infinity]",
        "[-Infinity]",
        "[tru]",
        "[nul]",
        "[True]",
        "\"abc",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\"a\x01b\"",
        "\"a\tb\"",
        "\"a\nb\"",
        "{}{}",
        "{} x",
        "1 2",
        "[1 2]",
        "{\"a\":1 \"b\":2}",
        "/* c */ {}",
        "{} // c",
        "[1]\f",
        "\v[1]",
        "[\"a\",]",
        "[1,,2]",
        "{\"a\"::1}",
        "[0x10]",
        "\xef\xbb\xbf{}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (check(bad[i]) == JV_OK)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CHECK(check(bad[i]) != JV_OK);
    }
    /* A NUL byte anywhere is not JSON, also after a complete value. */
    CHECK_INT(check_n("{}\0", 3), JV_SYNTAX);
    CHECK_INT(check_n("[\"a\0b\"]", 7), JV_SYNTAX);
    /* Never reads past n. */
    CHECK_INT(check_n("[1]", 2), JV_SYNTAX);
    CHECK_INT(check_n("\"\\u00e9\"", 6), JV_SYNTAX);
    CHECK_INT(check_n("true", 3), JV_SYNTAX);
}

TEST(error_offset)
{
    size_t where = 99;
    CHECK_INT(json_validate("[1, x]", 6, &where), JV_SYNTAX);
    CHECK_INT(where, 4);
}

TEST(bad_utf8)
{
    const char *bad[] = {
        "\"\xff\"",             /* never valid */
        "\"\xc3\"",             /* truncated */
        "\"\xc3x\"",            /* bad continuation */
        "\"\xc0\xaf\"",         /* overlong '/' */
        "\"\xc1\xbf\"",         /* overlong */
        "\"\xe0\x80\xaf\"",     /* overlong 3-byte */
        "\"\xf0\x80\x80\xaf\"", /* overlong 4-byte */
        "\"\xed\xa0\x80\"",     /* U+D800 encoded */
        "\"\xed\xbf\xbf\"",     /* U+DFFF encoded */
        "\"\xf4\x90\x80\x80\"", /* U+110000 */
        "\"\xf5\x80\x80\x80\"", /* past U+10FFFF */
        "\"\x80\"",             /* lone continuation */
        "\"\xe2\x82\"",         /* truncated 3-byte */
        "{\"k\xfe\":1}",        /* in a key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(check(bad[i]), JV_UTF8);
    /* Outside strings any byte >= 0x80 is a syntax error. */
    CHECK(check("[1,\xc3\xa9]") != JV_OK);
}

TEST(surrogate_escapes)
{
    CHECK_INT(check("\"\\ud800\""), JV_UTF8);        /* lone high */
    CHECK_INT(check("\"\\udc00\""), JV_UTF8);        /* lone low */
    CHECK_INT(check("\"\\ud800x\""), JV_UTF8);       /* high then text */
    CHECK_INT(check("\"\\ud800\\u0041\""), JV_UTF8); /* high then non-low */
    CHECK_INT(check("\"\\ud800\\ud800\""), JV_UTF8); /* high then high */
    CHECK_INT(check("\"\\ude00\\ud83d\""), JV_UTF8); /* reversed pair */
    CHECK_INT(check("\"\\ud800\\n\""), JV_UTF8);     /* high then other escape */
    CHECK_INT(check("\"\\udbff\\udfff\""), JV_OK);   /* U+10FFFF */
}

TEST(depth_64_ok_65_rejected)
{
    for (int obj = 0; obj < 2; obj++) {
        char open = obj ? '{' : '[', close = obj ? '}' : ']';
        char *s64 = nested(64, open, close);
        char *s65 = nested(65, open, close);
        enum jv r64 = check(s64), r65 = check(s65);
        free(s64);
        free(s65);
        CHECK_INT(r64, JV_OK);
        CHECK_INT(r65, JV_DEPTH);
    }
    /* Very deep input is refused without recursion. */
    size_t n = 1000000;
    char *deep = malloc(n);
    memset(deep, '[', n);
    enum jv r = json_validate(deep, n, NULL);
    free(deep);
    CHECK_INT(r, JV_DEPTH);
    /* Depth counts open containers, not total ones. */
    CHECK_INT(check("[[],[],[[]],{\"a\":{}}]"), JV_OK);
}

static int member_is(const char *obj, const char *key, const char *want)
{
    struct jspan o = {obj, strlen(obj)}, v;
    if (!json_member(o, key, &v))
        return want == NULL;
    return want && v.n == strlen(want) && memcmp(v.p, want, v.n) == 0;
}

TEST(member_lookup)
{
    const char *o = " { \"a\" : 1 , \"b\":{\"a\":2, \"c\":[1,\"}\"]} ,\"s\": \"x,}]\" , "
                    "\"n\":null, \"a\": 3 } ";
    CHECK(member_is(o, "a", "1")); /* the first of duplicate names */
    CHECK(member_is(o, "b", "{\"a\":2, \"c\":[1,\"}\"]}"));
    CHECK(member_is(o, "s", "\"x,}]\""));
    CHECK(member_is(o, "n", "null"));
    CHECK(member_is(o, "c", NULL)); /* nested members are not top-level members */
    CHECK(member_is(o, "A", NULL)); /* case-sensitive */
    CHECK(member_is(o, "", NULL));
    CHECK(member_is("{}", "a", NULL));
    CHECK(member_is("[1]", "a", NULL));
    CHECK(member_is("{\"\":5}", "", "5"));
    /* Escaped names match their decoded form, like cJSON's lookup. */
    CHECK(member_is("{\"p\\u0061y\":7}", "pay", "7"));
    CHECK(member_is("{\"\\u00e9\":7}", "\xc3\xa9", "7"));
    CHECK(member_is("{\"\\ud83d\\ude00\":7}", "\xf0\x9f\x98\x80", "7"));
    CHECK(member_is("{\"a\\\"b\":7}", "a\"b", "7"));
    CHECK(member_is("{\"a\\nb\\/\\\\\":7}", "a\nb/\\", "7"));
    CHECK(member_is("{\"ab\":7}", "a", NULL));
    CHECK(member_is("{\"a\":7}", "ab", NULL));
}

TEST(array_iteration)
{
    const char *a = " [ 1 , \"x,]\" , {\"k\":[1,2]} , [ ] , null ] ";
    const char *want[] = {"1", "\"x,]\"", "{\"k\":[1,2]}", "[ ]", "null"};
    struct jspan arr = {a, strlen(a)}, v;
    size_t pos = 0, i = 0;
    while (json_array_next(arr, &pos, &v)) {
        CHECK(i < 5);
        CHECK_INT(v.n, strlen(want[i]));
        CHECK(memcmp(v.p, want[i], v.n) == 0);
        i++;
    }
    CHECK_INT(i, 5);
    CHECK(!json_array_next(arr, &pos, &v)); /* stays finished */

    struct jspan empty = {" [ ] ", 5};
    pos = 0;
    CHECK(!json_array_next(empty, &pos, &v));
    struct jspan obj = {"{}", 2};
    pos = 0;
    CHECK(!json_array_next(obj, &pos, &v));
}

static int compacts_to(const char *in, const char *want)
{
    struct jspan v = {in, strlen(in)};
    char *out = json_compact(v);
    int ok = out && strcmp(out, want) == 0;
    if (!ok)
        fprintf(stderr, "compact(%s) = %s, want %s\n", in, out ? out : "(null)", want);
    free(out);
    return ok;
}

TEST(compact_keeps_strings_and_numbers)
{
    CHECK(compacts_to(" { \"a b\" : [ 1 , 2.50 ] ,\n\t\"c\" : \" x  y \" } ",
                      "{\"a b\":[1,2.50],\"c\":\" x  y \"}"));
    CHECK(compacts_to("12345678901234567890", "12345678901234567890"));
    CHECK(compacts_to("[1E+400, -0.0, 1e-7]", "[1E+400,-0.0,1e-7]"));
    CHECK(compacts_to("\"\\u00e9 \\\" \\\\ \\n\"", "\"\\u00e9 \\\" \\\\ \\n\""));
    CHECK(compacts_to("\"h\xc3\xa9\"", "\"h\xc3\xa9\""));
    CHECK(compacts_to("[ \"\\\\\" , \" \" ]", "[\"\\\\\",\" \"]"));
    CHECK(compacts_to("null", "null"));
}

TEST(has_nul)
{
    struct jspan a = {"\"a\\u0000b\"", 10};
    struct jspan b = {"\"a\\\\u0000b\"", 11}; /* an escaped backslash, then text */
    struct jspan c = {"[\"x\", \"\\u0000\"]", 15};
    struct jspan d = {"\"\\u0001\"", 8};
    CHECK(json_has_nul(a));
    CHECK(!json_has_nul(b));
    CHECK(json_has_nul(c));
    CHECK(!json_has_nul(d));
}

TEST_MAIN(TEST_ENTRY(valid_values), TEST_ENTRY(syntax_errors), TEST_ENTRY(error_offset),
          TEST_ENTRY(bad_utf8), TEST_ENTRY(surrogate_escapes), TEST_ENTRY(depth_64_ok_65_rejected),
          TEST_ENTRY(member_lookup), TEST_ENTRY(array_iteration),
          TEST_ENTRY(compact_keeps_strings_and_numbers), TEST_ENTRY(has_nul))
