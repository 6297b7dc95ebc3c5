#include "rand.h"

#include <errno.h>
#include <sys/random.h>

#include "job.h"
#include "log.h"

static int fill(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            log_error("getrandom failed: errno %d", errno);
            return -1;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

int rand_token(char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[JOB_TOKEN_LEN];
    if (fill(raw, sizeof raw) != 0)
        return -1;
    for (size_t i = 0; i < JOB_TOKEN_LEN; i++)
        out[i] = alphabet[raw[i] & 63];
    out[JOB_TOKEN_LEN] = '\0';
    return 0;
}

double rand_unit(void)
{
    uint64_t v = 0;
    if (fill(&v, sizeof v) != 0)
        return 0.0;
    return (double)(v >> 11) / 9007199254740992.0; /* 53 bits / 2^53 */
}
