/* The time zone loader (server/zoneinfo.h): names checked before any file is opened, "UTC"
 * without a file, unknown and malformed zones, $JOBQ_ZONEINFO, the bounded cache (a zone held
 * stays valid across a reset) and many threads at once. */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_zone_util.h"
#include "testlib.h"
#include "zoneinfo.h"

static void reset(void)
{
    unsetenv("JOBQ_ZONEINFO");
    zoneinfo_reset();
}

static enum zoneinfo_result get(const char *name, const struct tz **z)
{
    return zoneinfo_get(name, strlen(name), z);
}

TEST(system_zones)
{
    test_defer(reset);
    reset();
    const struct tz *a = NULL, *b = NULL;
    CHECK_INT(get("Europe/Berlin", &a), ZONEINFO_OK);
    CHECK_INT(tz_offset(a, utc(2026, 7, 1, 0, 0)), 7200);
    CHECK_INT(get("Europe/Berlin", &b), ZONEINFO_OK);
    CHECK(a == b); /* cached */
    zoneinfo_put(a);
    zoneinfo_put(b);
    CHECK_INT(get("UTC", &a), ZONEINFO_OK);
    CHECK(a == tz_utc());
    zoneinfo_put(a);
    CHECK_INT(get("Mars/Olympus_Mons", &a), ZONEINFO_UNKNOWN);
    CHECK(a == NULL);
    CHECK_INT(get("Europe", &a), ZONEINFO_UNKNOWN); /* a directory */
    CHECK_INT(get("../../etc/passwd", &a), ZONEINFO_UNKNOWN);
    CHECK_INT(get("/etc/passwd", &a), ZONEINFO_UNKNOWN);
    CHECK_INT(get("", &a), ZONEINFO_UNKNOWN);
    CHECK_INT(zoneinfo_get("Europe/Berlin\0x", 15, &a), ZONEINFO_UNKNOWN);
    zoneinfo_put(NULL);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

TEST(zone_directory_from_the_environment)
{
    test_defer(reset);
    /* A directory of our own: one good zone (a copy of Kolkata), a truncated one, a big one. */
    size_t len = 0;
    unsigned char *kolkata = zone_file("Asia/Kolkata", &len);
    CHECK(kolkata != NULL);
    CHECK(mkdir("zones", 0700) == 0 && mkdir("zones/Test", 0700) == 0);
    write_file("zones/Test/Here", kolkata, len);
    write_file("zones/Test/Cut", kolkata, len / 2);
    free(kolkata);
    unsigned char *big = calloc(1, TZ_FILE_MAX + 1);
    CHECK(big != NULL);
    write_file("zones/Test/Big", big, TZ_FILE_MAX + 1);
    free(big);
    char dir[4096];
    CHECK(getcwd(dir, sizeof dir - 8) != NULL);
    strcat(dir, "/zones");
    setenv("JOBQ_ZONEINFO", dir, 1);
    zoneinfo_reset();
    const struct tz *z = NULL;
    CHECK_INT(get("Test/Here", &z), ZONEINFO_OK);
    CHECK_INT(tz_offset(z, 0), 19800);
    zoneinfo_put(z);
    CHECK_INT(get("Test/Cut", &z), ZONEINFO_UNKNOWN);
    CHECK_INT(get("Test/Big", &z), ZONEINFO_UNKNOWN);
    CHECK_INT(get("Europe/Berlin", &z), ZONEINFO_UNKNOWN); /* not in this directory */
    CHECK_INT(get("UTC", &z), ZONEINFO_OK);                /* needs no file */
    CHECK(z == tz_utc());
}

TEST(bounded_cache)
{
    test_defer(reset);
    reset();
    /* More distinct zones than the cache holds, all held at once: each is valid, the ones past
     * the cache are the caller's alone, and every put frees what it must (the sanitizer build
     * sees a leak or a double free). */
    enum { N = ZONEINFO_CACHE_MAX + 8 };
    const struct tz *held[N];
    char name[300];
    int n = 0;
    /* Etc/GMT-14 .. Etc/GMT+12 (27 zones), then zones of America/ until N. */
    for (int i = 0; i < 27; i++) {
        if (i == 14)
            snprintf(name, sizeof name, "Etc/GMT");
        else
            snprintf(name, sizeof name, "Etc/GMT%+d", i - 14);
        CHECK_INT(get(name, &held[n]), ZONEINFO_OK);
        n++;
    }
    DIR *d = opendir(TEST_ZONEINFO "/America");
    CHECK(d != NULL);
    for (struct dirent *e; n < N && (e = readdir(d));) {
        if ((e->d_type != DT_REG && e->d_type != DT_UNKNOWN) ||
            !tz_name_check(e->d_name, strlen(e->d_name)))
            continue;
        snprintf(name, sizeof name, "America/%s", e->d_name);
        if (get(name, &held[n]) == ZONEINFO_OK) /* not a directory such as America/Indiana */
            n++;
    }
    closedir(d);
    CHECK_INT(n, N);
    CHECK_INT(tz_offset(held[0], 0), 14 * 3600); /* Etc/GMT-14 is 14 hours east */
    zoneinfo_reset();                            /* held zones stay valid */
    CHECK_INT(tz_offset(held[0], 0), 14 * 3600);
    const struct tz *again = NULL;
    CHECK_INT(get("Etc/GMT-14", &again), ZONEINFO_OK);
    CHECK(again != held[0]); /* read anew after the reset */
    zoneinfo_put(again);
    for (int i = 0; i < n; i++)
        zoneinfo_put(held[i]);
}

static void *worker(void *arg)
{
    static const char *const names[] = {"Europe/Berlin", "Asia/Kolkata", "UTC",
                                        "Australia/Lord_Howe", "Nowhere/Else"};
    long bad = 0, k = (long)(intptr_t)arg;
    for (int i = 0; i < 2000; i++) {
        const char *n = names[(i + k) % 5];
        const struct tz *z = NULL;
        enum zoneinfo_result r = get(n, &z);
        if (strcmp(n, "Nowhere/Else") == 0)
            bad += r != ZONEINFO_UNKNOWN;
        else
            bad += r != ZONEINFO_OK || tz_offset(z, utc(2026, 1, 1, 0, 0)) < 0;
        zoneinfo_put(z);
        if (i % 500 == 499 && k == 0)
            zoneinfo_reset();
    }
    return (void *)(intptr_t)bad;
}

TEST(threads)
{
    test_defer(reset);
    reset();
    pthread_t th[4];
    for (long k = 0; k < 4; k++)
        CHECK(pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k) == 0);
    long bad = 0;
    for (int k = 0; k < 4; k++) {
        void *r = NULL;
        pthread_join(th[k], &r);
        bad += (long)(intptr_t)r;
    }
    CHECK_INT(bad, 0);
}

TEST_MAIN(TEST_ENTRY(system_zones), TEST_ENTRY(zone_directory_from_the_environment),
          TEST_ENTRY(bounded_cache), TEST_ENTRY(threads))
