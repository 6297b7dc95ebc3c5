/* Randomness from the kernel (getrandom). Thread-safe. */
#ifndef JOBQ_RAND_H
#define JOBQ_RAND_H

#include <stddef.h>
#include <stdint.h>

/* Fill out with JOB_TOKEN_LEN URL-safe characters (A-Z a-z 0-9 - _) carrying 6 random bits
 * each, plus a NUL: out must hold JOB_TOKEN_LEN + 1 bytes. Returns 0, or -1 when the kernel
 * gives no randomness (logged). */
int rand_token(char *out);

/* A uniformly random double in [0, 1). This function can't fail. */
double rand_unit(void);

#endif
