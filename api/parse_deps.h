/* The workflow fields of an enqueue (../shared/API.md "Workflows"): depends_on, refs and
 * on_dependency_failure, read into the request shapes of parse.h. Like parse.h these never
 * answer: on failure they return -1 with the fields error set (the message names the field or
 * the element). */
#ifndef JOBQ_PARSE_DEPS_H
#define JOBQ_PARSE_DEPS_H

#include <stddef.h>

#include "parse.h"

/* parse_job_spec's part: depends_on (up to JOB_DEPS_MAX entries: ids, and refs that only
 * parse_batch_deps() accepts; a repeated entry counts once; the refs borrowed into buf) and
 * on_dependency_failure ("cancel" or "run"). Returns 0, or -1 with f's error set. */
int parse_workflow(struct fields *f, struct job_spec *spec, struct spec_buf *buf);

/* Read a batch element's ref (1..JOB_REF_MAX bytes, optional) into buf->ref. POST /jobs does
 * not read it (an unknown field there). Returns 0, or -1 with f's error set. */
int parse_batch_ref(struct fields *f, struct spec_buf *buf);

/* The checks of a POST /jobs spec that a batch element does not have: a string entry in
 * depends_on (a ref) is invalid_request naming depends_on[i]. Returns 0, or -1 with f's
 * error set. */
int parse_single_deps(struct fields *f, const struct job_spec *spec, const struct spec_buf *buf);

/* Resolve the refs of a batch of n specs (bufs from parse_job_spec): each string entry of an
 * element's depends_on becomes the index of the element with that ref, repeated entries are
 * dropped, and the batch is checked for cycles (depend_order). A duplicate ref, an unknown
 * ref or a cycle is invalid_request naming the element ("jobs[3].depends_on[1]: ...",
 * "jobs[5].ref: ...", "jobs[4].depends_on: ..."). Returns 0, or -1 with f's error set. */
int parse_batch_deps(struct fields *f, struct job_spec *specs, struct spec_buf *bufs, size_t n);

#endif
