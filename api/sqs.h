/* The Amazon SQS front end (docs/sqs.md): a listener of its own (--sqs-listen, http.h's
 * struct http_front) that speaks the AWS JSON 1.0 protocol (POST, X-Amz-Target:
 * AmazonSQS.ACTION, Content-Type: application/x-amz-json-1.0) and maps SQS onto jobq's
 * model through the same store calls as the native handlers: a message is a job, a receive
 * a claim (sqs_receive.h), a delete a complete and a visibility change a heartbeat
 * (sqs_lease.h). Errors carry AWS's shapes (sqs_wire.h). */
#ifndef JOBQ_SQS_H
#define JOBQ_SQS_H

#include <microhttpd.h>

#include "request.h"

/* Serve one request of the SQS listener (struct http_front's serve): on the first call read
 * the action and its parameters and start it; on a later call (a store call over, a long
 * poll woken) go on with the action's state. Returns MHD_YES or MHD_NO. */
enum MHD_Result sqs_serve(struct request *rq);

#endif
