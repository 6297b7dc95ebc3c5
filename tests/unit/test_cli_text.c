/* The jobq client's text helpers (cli/text.c): whole numbers, UTF-8 the server accepts,
 * JSON parsed exactly, and the tail of a command's stderr. */
#include <stdlib.h>

#include "testlib.h"
#include "text.h"

TEST(to_ll_takes_whole_numbers_only)
{
    long long v = 7;
    CHECK_INT(text_to_ll("42", &v), 0);
    CHECK_INT(v, 42);
    CHECK_INT(text_to_ll("-9223372036854775808", &v), 0);
    CHECK(v < 0 && v == -9223372036854775807LL - 1);
    v = 7;
    CHECK_INT(text_to_ll("", &v), -1);
    CHECK_INT(text_to_ll("12x", &v), -1);
    CHECK_INT(text_to_ll("x", &v), -1);
    CHECK_INT(text_to_ll("9223372036854775808", &v), -1);
    CHECK_INT(text_to_ll(NULL, &v), -1);
    CHECK_INT(v, 7);
}

/* text_utf8_clean(in[0..len)) == want, freeing the result. Returns 1 when equal. */
static int cleans_to(const char *in, size_t len, const char *want)
{
    char *got = text_utf8_clean(in, len);
    int ok = got != NULL && strcmp(got, want) == 0;
    if (!ok) {
        fprintf(stderr, "text_utf8_clean: got \"%s\", want \"%s\"\n", got ? got : "(null)", want);
    }
    free(got);
    return ok;
}

#define FFFD "\xEF\xBF\xBD"

TEST(utf8_clean_keeps_valid_text)
{
    CHECK(cleans_to("", 0, ""));
    CHECK(cleans_to("plain", 5, "plain"));
    CHECK(cleans_to("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", 14,
                    "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
    CHECK(cleans_to("\xF4\x8F\xBF\xBF", 4, "\xF4\x8F\xBF\xBF")); /* U+10FFFF */
}

TEST(utf8_clean_replaces_bad_bytes)
{
    CHECK(cleans_to("a\xFF"
                    "b",
                    3, "a" FFFD "b"));
    CHECK(cleans_to("a\0b", 3, "a" FFFD "b"));                    /* NUL */
    CHECK(cleans_to("\xC0\xAF", 2, FFFD FFFD));                   /* overlong '/' */
    CHECK(cleans_to("\xED\xA0\x80", 3, FFFD FFFD FFFD));          /* a surrogate */
    CHECK(cleans_to("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD)); /* past U+10FFFF */
    CHECK(cleans_to("x\xE2\x82", 3, "x" FFFD FFFD));              /* cut short at the end */
    CHECK(cleans_to("\x80", 1, FFFD));                            /* a lone continuation */
}

TEST(parse_json_is_exact)
{
    cJSON *v = text_parse_json(" {\"a\": [1, 2]}\n", 15);
    CHECK(cJSON_IsObject(v));
    cJSON_Delete(v);
    v = text_parse_json("\"s\"", 3);
    CHECK(cJSON_IsString(v));
    cJSON_Delete(v);
    CHECK(text_parse_json("{} {}", 5) == NULL);
    CHECK(text_parse_json("{\"a\":", 5) == NULL);
    CHECK(text_parse_json("", 0) == NULL);
    CHECK(text_parse_json("1\0 2", 4) == NULL); /* a NUL inside */
}

TEST(tail_keeps_the_last_bytes)
{
    struct text_tail t;
    CHECK_INT(text_tail_init(&t, 8), 0);
    char *s = text_tail_string(&t);
    CHECK_STR(s, "");
    free(s);
    text_tail_put(&t, "abc", 3);
    s = text_tail_string(&t);
    CHECK_STR(s, "abc");
    free(s);
    text_tail_put(&t, "defghij", 7); /* wraps the ring */
    s = text_tail_string(&t);
    CHECK_STR(s, "cdefghij");
    free(s);
    text_tail_put(&t, "0123456789ABCDEF", 16); /* longer than the ring at once */
    s = text_tail_string(&t);
    CHECK_STR(s, "89ABCDEF");
    free(s);
    CHECK_INT(t.total, 26);
    text_tail_clear(&t);
    text_tail_clear(&t); /* twice is fine */
}

TEST(tail_skips_a_character_cut_at_its_start)
{
    struct text_tail t;
    CHECK_INT(text_tail_init(&t, 5), 0);
    text_tail_put(&t, "x\xE2\x82\xAC\xE2\x82\xAC", 7); /* x€€: the first € loses a byte */
    char *s = text_tail_string(&t);
    CHECK_STR(s, "\xE2\x82\xAC");
    free(s);
    text_tail_clear(&t);
}

TEST_MAIN(TEST_ENTRY(to_ll_takes_whole_numbers_only), TEST_ENTRY(utf8_clean_keeps_valid_text),
          TEST_ENTRY(utf8_clean_replaces_bad_bytes), TEST_ENTRY(parse_json_is_exact),
          TEST_ENTRY(tail_keeps_the_last_bytes),
          TEST_ENTRY(tail_skips_a_character_cut_at_its_start))
