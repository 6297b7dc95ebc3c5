/* Job records to JSON, encoded once per answer. */
#ifndef JOBQ_JOBJSON_H
#define JOBQ_JOBJSON_H

#include <cjson/cJSON.h>

#include "job.h"

/* A new JSON object with every field of the contract's job object, plus "lease_token" when
 * with_token is set and the job has one. Returns NULL when out of memory. Borrows j. */
cJSON *job_to_json(const struct job *j, int with_token);

/* A growing text buffer for answers written directly, without a cJSON tree (the hot path).
 * After a failed allocation it stays failed: oom is set and nothing more is appended. Start
 * from {0}; the caller frees p. */
struct jtext {
    char *p; /* NUL-terminated when not NULL */
    size_t len, cap;
    int oom;
};

/* Append n bytes of s. */
void jtext_put(struct jtext *t, const char *s, size_t n);

/* Append the job object exactly as cJSON_PrintUnformatted(job_to_json(j, with_token))
 * writes it. Borrows j. */
void jtext_job(struct jtext *t, const struct job *j, int with_token);

/* Append {"jobs":[...]} with the n jobs of jobs (each as jtext_job). */
void jtext_jobs(struct jtext *t, const struct job *jobs, size_t n, int with_token);

#endif
