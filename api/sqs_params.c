/* Reading SQS parameters (see sqs_params.h). */
#include "sqs_params.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "sqs_msg.h"
#include "sqs_wire.h"

void *sqs_state_new(struct request *rq, size_t size, enum MHD_Result (*resume)(struct request *rq),
                    void (*state_free)(void *state))
{
    struct sqs_state *st = calloc(1, size);
    if (!st) {
        sqs_reply_error(rq, SQS_INTERNAL, "out of memory");
        return NULL;
    }
    st->resume = resume;
    rq->state = st;
    rq->state_free = state_free;
    return st;
}

int sqs_param_string(struct request *rq, const cJSON *params, const char *name, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, name);
    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v)) {
        sqs_reply_error(rq, SQS_INVALID_PARAMETER, "%s must be a string", name);
        return -1;
    }
    *out = v->valuestring;
    return 0;
}

int sqs_param_int(struct request *rq, const cJSON *params, const char *name, int64_t def,
                  int64_t min, int64_t max, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, name);
    *out = def;
    if (!v || cJSON_IsNull(v))
        return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (cJSON_IsString(v)) { /* the query protocol's numbers come as text */
        char *end = NULL;
        d = strtod(v->valuestring, &end);
        if (end == v->valuestring || *end)
            d = NAN;
    }
    if (!(d >= (double)min && d <= (double)max) || d != floor(d)) {
        sqs_reply_error(
            rq, SQS_INVALID_PARAMETER,
            "Value for parameter %s is invalid. Reason: must be an integer from %" PRId64
            " to %" PRId64 ".",
            name, min, max);
        return -1;
    }
    *out = (int64_t)d;
    return 0;
}

int sqs_queue_name_ok(const char *name)
{
    size_t n = strlen(name);
    size_t base = n > 5 && strcmp(name + n - 5, ".fifo") == 0 ? n - 5 : n;
    return n >= 1 && n <= 80 && base >= 1 &&
           strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == base;
}

/* The queue a required parameter names (url: its last path segment) into out. Returns 0,
 * or -1 after answering: missing, or not a queue name (bad: the error then). */
static int queue_param(struct request *rq, const cJSON *params, const char *param, int url,
                       enum sqs_err bad, char out[JOB_QUEUE_MAX + 1])
{
    const char *v;
    if (sqs_param_string(rq, params, param, &v) != 0)
        return -1;
    if (!v) {
        sqs_reply_error(rq, SQS_MISSING_PARAMETER, "The request must contain the parameter %s.",
                        param);
        return -1;
    }
    const char *slash = url ? strrchr(v, '/') : NULL;
    const char *name = slash ? slash + 1 : v;
    if (!sqs_queue_name_ok(name)) {
        sqs_reply_error(rq, bad,
                        bad == SQS_NO_QUEUE ? NULL
                                            : "Can only include alphanumeric characters, "
                                              "hyphens, or underscores. 1 to 80 in length");
        return -1;
    }
    snprintf(out, JOB_QUEUE_MAX + 1, "%s", name);
    return 0;
}

int sqs_queue_or_reply(struct request *rq, const cJSON *params, char out[JOB_QUEUE_MAX + 1])
{
    return queue_param(rq, params, "QueueUrl", 1, SQS_NO_QUEUE, out);
}

int sqs_queue_name_or_reply(struct request *rq, const cJSON *params, char out[JOB_QUEUE_MAX + 1])
{
    return queue_param(rq, params, "QueueName", 0, SQS_INVALID_PARAMETER, out);
}

void sqs_queue_url(const struct request *rq, const char *queue, char *out, size_t len)
{
    snprintf(out, len, "%s/%s/%s", rq->app->base_url, SQS_ACCOUNT, queue);
}

int sqs_entry_id_ok(const char *id)
{
    size_t n = strlen(id);
    return n >= 1 && n <= 80 &&
           strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

int sqs_entries_or_reply(struct request *rq, const cJSON *params, const cJSON **entries)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(params, "Entries");
    if (!list) {
        sqs_reply_error(rq, SQS_MISSING_PARAMETER,
                        "The request must contain the parameter "
                        "Entries.");
        return -1;
    }
    if (!cJSON_IsArray(list)) {
        sqs_reply_error(rq, SQS_INVALID_PARAMETER, "Entries must be a list");
        return -1;
    }
    int n = 0;
    for (const cJSON *e = list->child; e; e = e->next) {
        if (n == SQS_BATCH_MAX) {
            sqs_reply_error(rq, SQS_TOO_MANY_ENTRIES,
                            "Maximum number of entries per request are %d.", SQS_BATCH_MAX);
            return -1;
        }
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "Id"));
        if (!cJSON_IsObject(e) || !id || !sqs_entry_id_ok(id)) {
            sqs_reply_error(rq, SQS_INVALID_ENTRY_ID, NULL);
            return -1;
        }
        for (int i = 0; i < n; i++) {
            if (strcmp(cJSON_GetObjectItemCaseSensitive(entries[i], "Id")->valuestring, id) == 0) {
                sqs_reply_error(rq, SQS_IDS_NOT_DISTINCT, "Id %s repeated.", id);
                return -1;
            }
        }
        entries[n++] = e;
    }
    if (n == 0) {
        sqs_reply_error(rq, SQS_EMPTY_BATCH, NULL);
        return -1;
    }
    return n;
}
