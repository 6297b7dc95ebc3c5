/* The time zone loader (zoneinfo.h): read a TZif file from the zone directory, bounded, and keep
 * the zones in a small cache under one mutex. A cached zone is never freed while a caller holds
 * it: a slot counts its holders, and a zone dropped by zoneinfo_reset() while held is freed by
 * its last zoneinfo_put(). */
#include "zoneinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

struct slot {
    char name[TZ_NAME_MAX + 1]; /* "" when free */
    struct tz *tz;
    int holders;
    int dropped; /* reset while held: free at the last put */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[ZONEINFO_CACHE_MAX];

/* Read the file of zone `name` into a buffer of at most TZ_FILE_MAX bytes. */
static enum zoneinfo_result read_zone(const char *name, unsigned char **data, size_t *len)
{
    const char *dir = getenv("JOBQ_ZONEINFO");
    char path[4096];
    if (!dir || !*dir)
        dir = ZONEINFO_DIR;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return ZONEINFO_UNKNOWN;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR)
            return ZONEINFO_UNKNOWN;
        log_warn("zoneinfo: cannot open %s: %s", path, strerror(errno));
        return ZONEINFO_ERROR;
    }
    struct stat st;
    enum zoneinfo_result res = ZONEINFO_OK;
    unsigned char *buf = NULL;
    size_t n = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TZ_FILE_MAX)
        res = ZONEINFO_UNKNOWN; /* a directory (e.g. "Europe"), or not a zone's size */
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        res = ZONEINFO_ERROR;
    while (res == ZONEINFO_OK && n <= (size_t)st.st_size) { /* reads one past: a grown file */
        ssize_t r = read(fd, buf + n, (size_t)st.st_size + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            log_warn("zoneinfo: cannot read %s: %s", path, strerror(errno));
            res = ZONEINFO_ERROR;
        }
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (res == ZONEINFO_OK && n > (size_t)st.st_size)
        res = ZONEINFO_UNKNOWN;
    if (res != ZONEINFO_OK) {
        free(buf);
        return res;
    }
    *data = buf;
    *len = n;
    return ZONEINFO_OK;
}

/* Load and decode zone `name` (a checked name). */
static enum zoneinfo_result load(const char *name, struct tz **out)
{
    unsigned char *data = NULL;
    size_t len = 0;
    enum zoneinfo_result res = read_zone(name, &data, &len);
    if (res != ZONEINFO_OK)
        return res;
    const char *why = NULL;
    enum tz_result t = tz_parse(data, len, out, &why);
    free(data);
    if (t == TZ_NOMEM)
        return ZONEINFO_ERROR;
    if (t != TZ_OK) {
        log_warn("zoneinfo: zone %s: %s", name, why);
        return ZONEINFO_UNKNOWN;
    }
    return ZONEINFO_OK;
}

enum zoneinfo_result zoneinfo_get(const char *name, size_t len, const struct tz **out)
{
    *out = NULL;
    if (!tz_name_check(name, len))
        return ZONEINFO_UNKNOWN;
    if (len == 3 && memcmp(name, "UTC", 3) == 0) {
        *out = tz_utc();
        return ZONEINFO_OK;
    }
    char key[TZ_NAME_MAX + 1];
    memcpy(key, name, len);
    key[len] = '\0';
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ZONEINFO_CACHE_MAX; i++)
        if (slots[i].tz && !slots[i].dropped && strcmp(slots[i].name, key) == 0) {
            slots[i].holders++;
            *out = slots[i].tz;
            pthread_mutex_unlock(&lock);
            return ZONEINFO_OK;
        }
    pthread_mutex_unlock(&lock);
    /* Read outside the lock; two threads may load one zone at once: the second keeps its own. */
    struct tz *z = NULL;
    enum zoneinfo_result res = load(key, &z);
    if (res != ZONEINFO_OK)
        return res;
    pthread_mutex_lock(&lock);
    int free_slot = -1;
    for (int i = 0; i < ZONEINFO_CACHE_MAX; i++) {
        if (slots[i].tz && !slots[i].dropped && strcmp(slots[i].name, key) == 0) {
            tz_free(z); /* another thread cached it meanwhile */
            z = slots[i].tz;
            slots[i].holders++;
            free_slot = -2;
            break;
        }
        if (!slots[i].tz && free_slot == -1)
            free_slot = i;
    }
    if (free_slot >= 0) {
        snprintf(slots[free_slot].name, sizeof slots[free_slot].name, "%s", key);
        slots[free_slot].tz = z;
        slots[free_slot].holders = 1;
        slots[free_slot].dropped = 0;
    }
    pthread_mutex_unlock(&lock);
    *out = z; /* uncached when the cache is full: zoneinfo_put frees it */
    return ZONEINFO_OK;
}

void zoneinfo_put(const struct tz *z)
{
    if (!z || z == tz_utc())
        return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ZONEINFO_CACHE_MAX; i++)
        if (slots[i].tz == z) {
            struct tz *gone = NULL;
            if (--slots[i].holders == 0 && slots[i].dropped) {
                gone = slots[i].tz;
                slots[i] = (struct slot){0};
            }
            pthread_mutex_unlock(&lock);
            tz_free(gone);
            return;
        }
    pthread_mutex_unlock(&lock);
    tz_free(z); /* not cached */
}

void zoneinfo_reset(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ZONEINFO_CACHE_MAX; i++) {
        if (!slots[i].tz)
            continue;
        if (slots[i].holders == 0) {
            tz_free(slots[i].tz);
            slots[i] = (struct slot){0};
        } else
            slots[i].dropped = 1;
    }
    pthread_mutex_unlock(&lock);
}
