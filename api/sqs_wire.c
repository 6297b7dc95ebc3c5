/* The SQS front end's errors and answers (see sqs_wire.h). */
#include "sqs_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "reply.h"
#include "sqs_query.h"

#define SQS_JSON_TYPE "application/x-amz-json-1.0"
#define SQS_XML_TYPE "text/xml"

/* One row per error: the JSON __type, the legacy (query protocol) code, the status, 1 when
 * the sender is at fault, and the default message. */
static const struct {
    const char *type;
    const char *code;
    unsigned status;
    int sender;
    const char *message;
} errs[SQS_ERR_COUNT] = {
    [SQS_INVALID_ACTION] = {"com.amazonaws.sqs#InvalidAction", "InvalidAction", 400, 1,
                            "the action is not valid for this endpoint"},
    [SQS_UNSUPPORTED] = {"com.amazonaws.sqs#UnsupportedOperation",
                         "AWS.SimpleQueueService.UnsupportedOperation", 400, 1,
                         "jobq does not support this action"},
    [SQS_SERIALIZATION] = {"com.amazonaws.sqs#SerializationException", "SerializationException",
                           400, 1, "the request body is not a JSON object"},
    [SQS_MISSING_PARAMETER] = {"com.amazonaws.sqs#MissingParameter", "MissingParameter", 400, 1,
                               "a required parameter is missing"},
    [SQS_INVALID_PARAMETER] = {"com.amazonaws.sqs#InvalidParameterValue", "InvalidParameterValue",
                               400, 1, "a parameter's value is not valid"},
    [SQS_NO_QUEUE] = {"com.amazonaws.sqs#QueueDoesNotExist",
                      "AWS.SimpleQueueService.NonExistentQueue", 400, 1,
                      "The specified queue does not exist."},
    [SQS_RECEIPT_INVALID] = {"com.amazonaws.sqs#ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid",
                             400, 1, "the receipt handle is not valid"},
    [SQS_NOT_INFLIGHT] = {"com.amazonaws.sqs#MessageNotInflight",
                          "AWS.SimpleQueueService.MessageNotInflight", 400, 1,
                          "the message is not in flight"},
    [SQS_TOO_MANY_ENTRIES] = {"com.amazonaws.sqs#TooManyEntriesInBatchRequest",
                              "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", 400, 1,
                              "a batch holds at most 10 entries"},
    [SQS_EMPTY_BATCH] = {"com.amazonaws.sqs#EmptyBatchRequest",
                         "AWS.SimpleQueueService.EmptyBatchRequest", 400, 1,
                         "the batch holds no entry"},
    [SQS_IDS_NOT_DISTINCT] = {"com.amazonaws.sqs#BatchEntryIdsNotDistinct",
                              "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400, 1,
                              "two entries of the batch have the same Id"},
    [SQS_INVALID_ENTRY_ID] = {"com.amazonaws.sqs#InvalidBatchEntryId",
                              "AWS.SimpleQueueService.InvalidBatchEntryId", 400, 1,
                              "an entry Id is 1 to 80 of A-Z a-z 0-9 - _"},
    [SQS_BATCH_TOO_LONG] = {"com.amazonaws.sqs#BatchRequestTooLong",
                            "AWS.SimpleQueueService.BatchRequestTooLong", 400, 1,
                            "the batch's messages together are longer than 262144 bytes"},
    [SQS_INVALID_CONTENTS] = {"com.amazonaws.sqs#InvalidMessageContents", "InvalidMessageContents",
                              400, 1, "the message holds characters outside the allowed set"},
    [SQS_INVALID_ATTR_NAME] = {"com.amazonaws.sqs#InvalidAttributeName", "InvalidAttributeName",
                               400, 1, "unknown attribute"},
    [SQS_INVALID_ATTR_VALUE] = {"com.amazonaws.sqs#InvalidAttributeValue", "InvalidAttributeValue",
                                400, 1, "an attribute's value is not valid"},
    [SQS_QUEUE_EXISTS] = {"com.amazonaws.sqs#QueueNameExists", "QueueAlreadyExists", 400, 1,
                          "A queue already exists with the same name and a different value for "
                          "attribute(s)"},
    [SQS_TOO_LARGE] = {"com.amazonaws.sqs#RequestEntityTooLarge", "RequestEntityTooLarge", 413, 1,
                       "the request body is too large"},
    /* AWS's common authentication errors: SDKs name them after x-amzn-query-error's code. */
    [SQS_AUTH_MISSING] = {"com.amazon.coral.service#MissingAuthenticationTokenException",
                          "MissingAuthenticationToken", 403, 1,
                          "Request is missing Authentication Token"},
    [SQS_AUTH_INCOMPLETE] = {"com.amazon.coral.service#IncompleteSignatureException",
                             "IncompleteSignature", 400, 1,
                             "the request signature does not conform to AWS standards"},
    [SQS_AUTH_UNKNOWN_KEY] = {"com.amazon.coral.service#UnrecognizedClientException",
                              "InvalidClientTokenId", 403, 1,
                              "The security token included in the request is invalid."},
    [SQS_AUTH_SIGNATURE] = {"com.amazon.coral.service#InvalidSignatureException",
                            "SignatureDoesNotMatch", 403, 1,
                            "The request signature we calculated does not match the signature "
                            "you provided. Check your AWS Secret Access Key and signing method. "
                            "Consult the service documentation for details."},
    [SQS_AUTH_EXPIRED] = {"com.amazon.coral.service#RequestExpired", "RequestExpired", 400, 1,
                          "Request has expired."},
    [SQS_AUTH_DENIED] = {"com.amazonaws.sqs#AccessDeniedException", "AccessDenied", 403, 1,
                         "Access to the resource is denied."},
    [SQS_INTERNAL] = {"com.amazonaws.sqs#InternalError", "InternalError", 500, 0, "internal error"},
    [SQS_UNAVAILABLE] = {"com.amazonaws.sqs#ServiceUnavailable", "ServiceUnavailable", 503, 0,
                         "the service is unavailable now: retry"},
};

const char *sqs_err_code(enum sqs_err e)
{
    return errs[(unsigned)e < SQS_ERR_COUNT ? e : SQS_INTERNAL].code;
}

int sqs_err_sender(enum sqs_err e)
{
    return errs[(unsigned)e < SQS_ERR_COUNT ? e : SQS_INTERNAL].sender;
}

/* Answer text (malloc'd, consumed; NULL: out of memory) with status, in the request's
 * protocol's content type, and the extra header (name may be NULL). */
static enum MHD_Result answer_text(struct request *rq, unsigned status, char *text,
                                   const char *name, const char *value)
{
    if (!text) {
        log_error("out of memory answering an sqs request");
        static const char oom_json[] = "{\"__type\":\"com.amazonaws.sqs#InternalError\"}";
        static const char oom_xml[] = "<ErrorResponse><Error><Type>Receiver</Type><Code>"
                                      "InternalError</Code></Error></ErrorResponse>";
        text = strdup(rq->sqs_query ? oom_xml : oom_json);
        if (!text)
            return MHD_NO;
        status = 500;
        name = "x-amzn-query-error";
        value = "InternalError;Receiver";
    }
    return reply_take(rq, status, rq->sqs_query ? SQS_XML_TYPE : SQS_JSON_TYPE, text, strlen(text),
                      name, value, NULL);
}

/* Answer body (consumed; NULL: out of memory) with status in the request's protocol. */
static enum MHD_Result answer(struct request *rq, unsigned status, cJSON *body, const char *name,
                              const char *value)
{
    char *text = NULL;
    if (body && rq->sqs_query)
        text = sqs_query_answer(rq->sqs_action ? rq->sqs_action : "Unknown", body, rq->request_id);
    else if (body)
        text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    return answer_text(rq, status, text, name, value);
}

enum MHD_Result sqs_reply_error(struct request *rq, enum sqs_err e, const char *fmt, ...)
{
    if ((unsigned)e >= SQS_ERR_COUNT)
        e = SQS_INTERNAL;
    char msg[512];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    } else {
        snprintf(msg, sizeof msg, "%s", errs[e].message);
    }
    char query[128];
    snprintf(query, sizeof query, "%s;%s", errs[e].code, errs[e].sender ? "Sender" : "Receiver");
    if (rq->sqs_query)
        return answer_text(rq, errs[e].status,
                           sqs_query_error(errs[e].code, errs[e].sender, msg, rq->request_id),
                           "x-amzn-query-error", query);
    cJSON *body = cJSON_CreateObject();
    if (body && (!cJSON_AddStringToObject(body, "__type", errs[e].type) ||
                 !cJSON_AddStringToObject(body, "message", msg))) {
        cJSON_Delete(body);
        body = NULL;
    }
    return answer(rq, errs[e].status, body, "x-amzn-query-error", query);
}

enum MHD_Result sqs_reply_store(struct request *rq, enum store_result r)
{
    if (r == STORE_BUSY || r == STORE_UNAVAILABLE)
        return sqs_reply_error(rq, SQS_UNAVAILABLE, NULL);
    return sqs_reply_error(rq, SQS_INTERNAL, NULL);
}

enum MHD_Result sqs_reply(struct request *rq, cJSON *body)
{
    return answer(rq, 200, body, NULL, NULL);
}
