/* The route handlers. Each answers exactly once through reply.h (or parks a claim). */
#ifndef JOBQ_HANDLERS_H
#define JOBQ_HANDLERS_H

#include <microhttpd.h>

#include "request.h"

enum MHD_Result handle_enqueue(struct request *rq);       /* POST /jobs */
enum MHD_Result handle_enqueue_batch(struct request *rq); /* POST /jobs/batch */
enum MHD_Result handle_claim(struct request *rq);         /* POST /claim */
enum MHD_Result handle_heartbeat(struct request *rq);     /* POST /jobs/{id}/heartbeat */
enum MHD_Result handle_complete(struct request *rq);      /* POST /jobs/{id}/complete */
enum MHD_Result handle_fail(struct request *rq);          /* POST /jobs/{id}/fail */
enum MHD_Result handle_snooze(struct request *rq);        /* POST /jobs/{id}/snooze */
enum MHD_Result handle_cancel(struct request *rq);        /* POST /jobs/{id}/cancel */
enum MHD_Result handle_retry(struct request *rq);         /* POST /jobs/{id}/retry */
enum MHD_Result handle_get_job(struct request *rq);       /* GET /jobs/{id} */
enum MHD_Result handle_list_jobs(struct request *rq);     /* GET /jobs */
enum MHD_Result handle_attempts(struct request *rq);      /* GET /jobs/{id}/attempts */
enum MHD_Result handle_dependencies(struct request *rq);  /* GET /jobs/{id}/dependencies */
enum MHD_Result handle_dependents(struct request *rq);    /* GET /jobs/{id}/dependents */
enum MHD_Result handle_queues(struct request *rq);        /* GET /queues */
enum MHD_Result handle_throughput(struct request *rq);    /* GET /stats/throughput */
enum MHD_Result handle_pause(struct request *rq);         /* POST /queues/{name}/pause */
enum MHD_Result handle_resume(struct request *rq);        /* POST /queues/{name}/resume */
enum MHD_Result handle_purge(struct request *rq);         /* DELETE /queues/{name}/jobs */
enum MHD_Result handle_limits(struct request *rq);        /* GET /limits */
enum MHD_Result handle_limit_get(struct request *rq);     /* GET /limits/{key} */
enum MHD_Result handle_limit_put(struct request *rq);     /* PUT /limits/{key} */
enum MHD_Result handle_limit_delete(struct request *rq);  /* DELETE /limits/{key} */
enum MHD_Result handle_healthz(struct request *rq);       /* GET /healthz */
enum MHD_Result handle_readyz(struct request *rq);        /* GET /readyz */
enum MHD_Result handle_metrics(struct request *rq);       /* GET /metrics */
enum MHD_Result handle_events(struct request *rq);        /* GET /events */
/* GET /ui/ and each dashboard file (ui.h): the file with a strict Content-Security-Policy,
 * nosniff, its ETag and Cache-Control: no-cache; 304 when If-None-Match matches. */
enum MHD_Result handle_ui_asset(struct request *rq);
enum MHD_Result handle_ui_redirect(struct request *rq); /* GET /ui: 308 to /ui/ */

/* The schedules (h_schedules.c): GET /schedules, GET, PUT and DELETE /schedules/{name}. */
enum MHD_Result handle_schedules(struct request *rq);
enum MHD_Result handle_schedule_get(struct request *rq);
enum MHD_Result handle_schedule_put(struct request *rq);
enum MHD_Result handle_schedule_delete(struct request *rq);

/* The webhooks (h_webhooks.c): GET /webhooks, GET, PUT and DELETE /webhooks/{name}. */
enum MHD_Result handle_webhooks(struct request *rq);
enum MHD_Result handle_webhook_get(struct request *rq);
enum MHD_Result handle_webhook_put(struct request *rq);
enum MHD_Result handle_webhook_delete(struct request *rq);

/* How the ticker reads a schedule's job body: as POST /jobs reads a body (parse.c), with its
 * idempotency_key then set by the ticker (h_schedules.c). */
struct ticker_spec_fns;
extern const struct ticker_spec_fns schedule_job_fns;

#endif
