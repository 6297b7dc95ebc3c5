/* The workflow fields of an enqueue (parse_deps.h). */
#include "parse_deps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "depend.h"

/* Drop the repeated entries of deps[0..*n) (every entry resolved), keeping the first of each in
 * its place (depend_repeats over a key per entry: the id, or minus one more than the element
 * index). Returns 0, or -1 when out of memory. */
static int deps_dedupe(struct job_dep *deps, size_t *n)
{
    if (*n < 2)
        return 0;
    int64_t *key = malloc(*n * sizeof *key);
    unsigned char *repeat = malloc(*n);
    long repeats = key && repeat ? 0 : -1;
    for (size_t i = 0; repeats == 0 && i < *n; i++)
        key[i] = deps[i].id > 0 ? deps[i].id : -1 - (int64_t)deps[i].index;
    if (repeats == 0)
        repeats = depend_repeats(key, *n, repeat);
    size_t out = 0;
    for (size_t i = 0; repeats > 0 && i < *n; i++) {
        if (!repeat[i])
            deps[out++] = deps[i];
    }
    if (repeats > 0)
        *n = out;
    free(key);
    free(repeat);
    return repeats < 0 ? -1 : 0;
}

/* A ref for a message: at most 48 bytes of it, cut on a character boundary, into buf. */
static const char *ref_shown(const char *ref, char buf[64])
{
    size_t n = strlen(ref);
    if (n > 48) {
        n = 48;
        while (n > 0 && ((unsigned char)ref[n] & 0xC0) == 0x80)
            n--;
    }
    snprintf(buf, 64, "%.*s%s", (int)n, ref, n < strlen(ref) ? "..." : "");
    return buf;
}

/* depends_on: ids and refs (see parse_job_spec). */
static int parse_deps(struct fields *f, struct job_spec *spec, struct spec_buf *buf)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(f->obj, "depends_on");
    if (!item || cJSON_IsNull(item))
        return 0;
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) > JOB_DEPS_MAX)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%sdepends_on must be an array of at most %d job ids (or refs of "
                           "elements of the same batch)",
                           f->prefix, JOB_DEPS_MAX);
    size_t count = (size_t)cJSON_GetArraySize(item);
    if (count == 0)
        return 0;
    struct jspan text;
    if (json_member(f->span, "depends_on", &text) && json_has_nul(text))
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%sdepends_on must not contain a NUL character (\\u0000)", f->prefix);
    if (!(buf->deps = calloc(count, sizeof *buf->deps)))
        return fields_fail(f, ERR_INTERNAL, "out of memory reading %sdepends_on", f->prefix);
    size_t k = 0;
    const cJSON *el;
    cJSON_ArrayForEach(el, item)
    {
        double d = cJSON_IsNumber(el) ? el->valuedouble : NAN;
        if (cJSON_IsString(el) && el->valuestring && strlen(el->valuestring) >= 1 &&
            strlen(el->valuestring) <= JOB_REF_MAX) {
            if (!buf->dep_refs && !(buf->dep_refs = calloc(count, sizeof *buf->dep_refs)))
                return fields_fail(f, ERR_INTERNAL, "out of memory reading %sdepends_on",
                                   f->prefix);
            buf->dep_refs[k] = el->valuestring;
            buf->deps[k++] = (struct job_dep){0, -1};
        } else if (isfinite(d) && d == floor(d) && d >= 1 && d < 9223372036854775808.0) {
            buf->deps[k++] = (struct job_dep){(int64_t)d, 0};
        } else {
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "%sdepends_on[%zu] must be a job id (an integer from 1) or the ref "
                               "of an element of the same batch (1 to %d bytes)",
                               f->prefix, k, JOB_REF_MAX);
        }
    }
    spec->deps = buf->deps;
    spec->ndeps = k;
    if (!buf->dep_refs && deps_dedupe(buf->deps, &spec->ndeps) < 0)
        return fields_fail(f, ERR_INTERNAL, "out of memory reading %sdepends_on", f->prefix);
    return 1;
}

/* depends_on and on_dependency_failure. */
int parse_workflow(struct fields *f, struct job_spec *spec, struct spec_buf *buf)
{
    if (parse_deps(f, spec, buf) < 0)
        return -1;
    const char *mode = NULL;
    int r = fields_string(f, "on_dependency_failure", 1, 16, &mode);
    if (r < 0 || (r > 0 && job_dep_mode_parse(mode, &spec->on_dependency_failure) < 0))
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%son_dependency_failure must be \"cancel\" or \"run\"", f->prefix);
    return 0;
}

int parse_batch_ref(struct fields *f, struct spec_buf *buf)
{
    return fields_string(f, "ref", 1, JOB_REF_MAX, &buf->ref) < 0 ? -1 : 0;
}

int parse_single_deps(struct fields *f, const struct job_spec *spec, const struct spec_buf *buf)
{
    for (size_t k = 0; buf->dep_refs && k < spec->ndeps; k++) {
        if (buf->dep_refs[k])
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "depends_on[%zu] must be a job id: a ref (a string) names an "
                               "element of the same POST /jobs/batch",
                               k);
    }
    return 0;
}

/* One element's ref, for the sorted lookup. */
struct ref_at {
    const char *ref;
    size_t index;
};

static int cmp_ref_at(const void *a, const void *b)
{
    const struct ref_at *x = a, *y = b;
    int c = strcmp(x->ref, y->ref);
    if (c != 0)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sort the refs of the n elements into refs (*nrefs of them); a duplicate ref is
 * invalid_request naming the later element of the first pair. */
static int batch_refs(struct fields *f, const struct spec_buf *bufs, size_t n, struct ref_at *refs,
                      size_t *nrefs)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].ref)
            refs[k++] = (struct ref_at){bufs[i].ref, i};
    }
    qsort(refs, k, sizeof *refs, cmp_ref_at);
    size_t bad = k;
    for (size_t i = 1; i < k; i++) {
        if (strcmp(refs[i].ref, refs[i - 1].ref) == 0 &&
            (bad == k || refs[i].index < refs[bad].index))
            bad = i;
    }
    *nrefs = k;
    if (bad == k)
        return 0;
    char shown[64];
    return fields_fail(f, ERR_INVALID_REQUEST, "jobs[%zu].ref: \"%s\" is also jobs[%zu].ref",
                       refs[bad].index, ref_shown(refs[bad].ref, shown), refs[bad - 1].index);
}

int parse_batch_deps(struct fields *f, struct job_spec *specs, struct spec_buf *bufs, size_t n)
{
    struct ref_at *refs = malloc((n ? n : 1) * sizeof *refs);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    size_t nrefs = 0;
    int r = -1;
    if (!refs || !order) {
        fields_fail(f, ERR_INTERNAL, "out of memory reading the batch");
        goto out;
    }
    if (batch_refs(f, bufs, n, refs, &nrefs) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; bufs[i].dep_refs && d < specs[i].ndeps; d++) {
            if (!bufs[i].dep_refs[d])
                continue;
            struct ref_at key = {bufs[i].dep_refs[d], 0};
            size_t lo = 0, hi = nrefs; /* the first ref >= key */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(refs[mid].ref, key.ref) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == nrefs || strcmp(refs[lo].ref, key.ref) != 0) {
                char shown[64];
                fields_fail(f, ERR_INVALID_REQUEST,
                            "jobs[%zu].depends_on[%zu]: no element of the batch has ref \"%s\"", i,
                            d, ref_shown(key.ref, shown));
                goto out;
            }
            bufs[i].deps[d].index = (int32_t)refs[lo].index;
        }
        if (deps_dedupe(bufs[i].deps, &specs[i].ndeps) < 0) {
            fields_fail(f, ERR_INTERNAL, "out of memory reading the batch");
            goto out;
        }
    }
    long cycle = depend_order(specs, n, order);
    if (cycle == -2)
        fields_fail(f, ERR_INTERNAL, "out of memory reading the batch");
    else if (cycle >= 0)
        fields_fail(f, ERR_INVALID_REQUEST,
                    "jobs[%ld].depends_on: a cycle (the element depends on itself through the "
                    "batch)",
                    cycle);
    else
        r = 0;
out:
    free(refs);
    free(order);
    return r;
}
