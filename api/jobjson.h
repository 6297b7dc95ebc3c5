/* Job records to JSON, encoded once per answer. */
#ifndef JOBQ_JOBJSON_H
#define JOBQ_JOBJSON_H

#include <cjson/cJSON.h>

#include "job.h"

/* A new JSON object with every field of the contract's job object, plus "lease_token" when
 * with_token is set and the job has one. Returns NULL when out of memory. Borrows j. */
cJSON *job_to_json(const struct job *j, int with_token);

#endif
