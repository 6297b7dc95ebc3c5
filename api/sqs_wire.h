/* The SQS front end's wire format (the AWS JSON 1.0 protocol): its error table and its
 * answers. Every SQS error is one row: the JSON __type, the legacy query code that
 * x-amzn-query-error carries (SDKs name the error after it), the HTTP status and whether
 * the sender is at fault. docs/sqs.md lists them. */
#ifndef JOBQ_SQS_WIRE_H
#define JOBQ_SQS_WIRE_H

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "request.h"
#include "store.h"

enum sqs_err {
    SQS_INVALID_ACTION = 0, /* an action SQS does not have */
    SQS_UNSUPPORTED,        /* an SQS action jobq does not serve */
    SQS_SERIALIZATION,      /* the body is not a JSON object */
    SQS_MISSING_PARAMETER,  /* a required parameter is absent */
    SQS_INVALID_PARAMETER,  /* a parameter's value is out of its bounds */
    SQS_NO_QUEUE,           /* the queue does not exist */
    SQS_RECEIPT_INVALID,    /* a receipt handle that is malformed or no longer holds the
                               * message (received again since: fencing) */
    SQS_NOT_INFLIGHT,       /* ChangeMessageVisibility of a message not in flight */
    SQS_TOO_MANY_ENTRIES,   /* more than 10 entries in a batch */
    SQS_EMPTY_BATCH,        /* no entry in a batch */
    SQS_IDS_NOT_DISTINCT,   /* two entries of a batch with one Id */
    SQS_INVALID_ENTRY_ID,   /* an entry Id that is not 1-80 of A-Z a-z 0-9 - _ */
    SQS_BATCH_TOO_LONG,     /* a batch's bodies together over 256 KiB */
    SQS_INVALID_CONTENTS,   /* a body with characters SQS does not allow */
    SQS_INVALID_ATTR_NAME,  /* an unknown queue attribute */
    SQS_INVALID_ATTR_VALUE, /* a queue attribute's value out of its bounds */
    SQS_QUEUE_EXISTS,       /* CreateQueue of an existing queue with other attributes */
    SQS_TOO_LARGE,          /* the request body is larger than --max-body-bytes */
    SQS_AUTH_MISSING,       /* auth on and no SigV4 Authorization header */
    SQS_AUTH_INCOMPLETE,    /* a SigV4 Authorization header with a part missing or malformed */
    SQS_AUTH_UNKNOWN_KEY,   /* an access key id that is not configured */
    SQS_AUTH_SIGNATURE,     /* the signature is not the one the key's secret gives */
    SQS_AUTH_EXPIRED,       /* X-Amz-Date more than 15 minutes off the clock */
    SQS_AUTH_DENIED,        /* the key's role may not run the action */
    SQS_INTERNAL,           /* ours: logged */
    SQS_UNAVAILABLE,        /* the store cannot be used now, or the server is stopping */
    SQS_ERR_COUNT
};

/* The legacy code of e ("AWS.SimpleQueueService.NonExistentQueue"), as batch entries show
 * it in their Code. Never NULL. */
const char *sqs_err_code(enum sqs_err e);

/* 1 when e is the sender's fault (SenderFault of a batch entry). */
int sqs_err_sender(enum sqs_err e);

/* Answer e with fmt (printf-style; NULL: the table's message) as the message: the status of
 * e, {"__type": ..., "message": ...} and x-amzn-query-error. Returns MHD_YES or MHD_NO. */
enum MHD_Result sqs_reply_error(struct request *rq, enum sqs_err e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The error a failed store call is answered with (BUSY, UNAVAILABLE: SQS_UNAVAILABLE;
 * anything else SQS_INTERNAL). */
enum MHD_Result sqs_reply_store(struct request *rq, enum store_result r);

/* Answer 200 with body (consumed, even on failure; NULL: out of memory, answered 500). */
enum MHD_Result sqs_reply(struct request *rq, cJSON *body);

#endif
