/* Workflows: jobs that wait for other jobs (../shared/API.md "Workflows"). Pure rules: no I/O,
 * no clock (now is given).
 *
 * What a backend keeps, and how it uses these functions:
 * - one edge per (dependency, dependent) with a `settled` flag, a job's depends_on (the ids,
 *   shown by the API) and mode (enum dep_mode), its count of unsettled edges (`pending`), and a
 *   flag on every job that some job depends on (so the end of a job nobody waits for costs
 *   nothing more);
 * - the invariant: a blocked job's pending is the number of its unsettled edges; an edge is
 *   settled when its dependency reached an end that depend_effect() says settles it.
 * At enqueue (and when a retry re-evaluates a dependent, below) the backend reads the status
 * of each dependency, asks depend_effect() for each, and depend_plan() for the job's status.
 * When a job that has dependents reaches an end, the backend settles its unsettled edges: for
 * each blocked dependent, depend_effect() says settle (pending - 1; at 0 it is queued with
 * depend_release_run_at()) or cancel (cancelled with error_code DEPEND_FAILED_CODE and the
 * error_detail of depend_detail(); its own dependents are then visited the same way).
 * When a failed or cancelled job is retried (no longer final), its settled edges are unsettled
 * again (a blocked dependent's pending + 1) and every dependent cancelled because of it
 * (depend_cancelled_by()) is re-evaluated from its dependencies' statuses, and so on down.
 * A retried job's own dependencies are looked at as a DEP_RUN job's (the retry asks for it to
 * run: a failed dependency counts as settled), so it is blocked while one has not ended.
 * A job deleted by a purge or by retention settles its dependents in the delete's transaction
 * as if it had ended as depend_purged() says (its edges to them stay until then); a dependent
 * cancelled because of another dependency that this end cancels too is pinned to the deleted
 * job (its error_detail names it from then on), so that no retry re-evaluates it: the deleted
 * job keeps it cancelled for good.
 * A transaction visits at most DEPEND_STEP_MAX jobs; the backend marks the rest for the
 * sweeper, which goes on in bounded batches. */
#ifndef JOBQ_DEPEND_H
#define JOBQ_DEPEND_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

#define DEPEND_STEP_MAX 1000                   /* jobs one transaction visits down a graph */
#define DEPEND_FAILED_CODE "dependency_failed" /* error_code of a dependent cancelled */
#define DEPEND_DETAIL_MAX 64                   /* bytes of depend_detail()'s text, NUL included */

/* What a dependency in one status means for a dependent. */
enum depend_effect {
    DEPEND_WAIT = 0, /* not ended yet (queued, blocked, running): the edge stays unsettled */
    DEPEND_SETTLE,   /* it counts as done for this dependent */
    DEPEND_CANCEL    /* the dependent is cancelled because of it */
};

/* The effect of a dependency in status `dep` on a dependent of mode m: succeeded settles;
 * failed or cancelled cancels a DEP_CANCEL dependent and settles a DEP_RUN one; any other
 * status waits. This function can't fail. */
enum depend_effect depend_effect(enum job_status dep, enum dep_mode m);

/* What a job is when its dependencies have been looked at. */
struct depend_plan {
    enum job_status status; /* JOB_QUEUED (due at its run_at), JOB_BLOCKED or JOB_CANCELLED */
    int64_t cancel_dep;     /* JOB_CANCELLED: the dependency that cancelled it; else 0 */
    int64_t pending;        /* JOB_BLOCKED: its unsettled edges; else 0 */
};

/* The plan of a job whose dependencies gave `waiting` DEPEND_WAIT effects and whose first
 * DEPEND_CANCEL effect (in the order the backend read them; 0 when none) came from
 * `cancel_dep`: cancelled by it when there is one, else blocked while waiting > 0, else
 * queued. This function can't fail. */
struct depend_plan depend_plan(int64_t waiting, int64_t cancel_dep);

/* A job that a purge or retention deletes while in status s (a backend's stored status that
 * is no API status counts as not ended) with its dependents' walk still to do when todo is 1:
 * the end its dependents count it as (a job that had not ended counts as cancelled, as a
 * cancel of it would have ended it), or JOB_STATUS_NONE when they need no visit (it had
 * succeeded and that end was counted already). A failed or cancelled one is visited even when its end was
 * counted: the dependents it cancels that another dependency cancelled first are pinned to it
 * (it never comes back, so a retry of the other one must leave them cancelled). This function
 * can't fail. */
enum job_status depend_purged(enum job_status s, int todo);

/* The modes m (bit m of the result, for m < DEP_MODE_COUNT) whose dependents a dependency in
 * status s affects as `want` says (depend_effect(s, m) == want). This function can't fail. */
unsigned depend_modes(enum job_status s, enum depend_effect want);

/* The run_at of a blocked job released at now: the later of its own run_at and now. This
 * function can't fail. */
int64_t depend_release_run_at(int64_t run_at, int64_t now);

/* The error_detail (compact JSON text: a string that names the job, so that a reader matches
 * it as text) of a dependent cancelled because of dependency dep, into buf (DEPEND_DETAIL_MAX
 * bytes): "dependency <dep> did not succeed". Returns buf. */
char *depend_detail(int64_t dep, char buf[DEPEND_DETAIL_MAX]);

/* 1 when a job with error_code `code` and error_detail `detail` (compact JSON text as
 * depend_detail() wrote it; either may be NULL) was cancelled because of dependency dep. This
 * function can't fail. */
int depend_cancelled_by(const char *code, const char *detail, int64_t dep);

/* The entries of ids[0..n) (job ids; any values will do) that repeat an earlier one:
 * repeat[i] = 1 when ids[i] is ids[j] for some j < i, else 0. A job counts once however its
 * dependents name it (an id and a ref may resolve to one job). Returns how many repeat, or -1
 * when out of memory. */
long depend_repeats(const int64_t *ids, size_t n, unsigned char *repeat);

/* Drop the entries of ids[0..n) that repeat an earlier one (depend_repeats), keeping the
 * order; returns how many are left, or -1 when out of memory. */
long depend_unique(int64_t *ids, size_t n);

/* depends_on as the API shows it, "[id,...]" of ids[0..n), as a new string (the caller frees
 * it); NULL when out of memory. */
char *depend_ids_text(const int64_t *ids, size_t n);

/* A walk down a graph: the jobs whose dependents are still to be visited (ids[head..n)), at
 * most `budget` visited (DEPEND_STEP_MAX for a write, the batch for a sweep); what is left
 * when the budget is spent goes to the sweep. Start from {.budget = B}; release with
 * depend_walk_clear(). */
struct depend_walk {
    int64_t *ids;
    size_t head, n, cap;
    int visited, budget;
};

/* Add job id to visit. Returns 0, or -1 when out of memory. */
int depend_walk_push(struct depend_walk *w, int64_t id);

/* The next job to visit into *id (counted as visited): 1, or 0 when none is left or the
 * budget is spent (then ids[head..n) are the jobs left). This function can't fail. */
int depend_walk_next(struct depend_walk *w, int64_t *id);

/* Release what w holds and empty it. Accepts NULL. */
void depend_walk_clear(struct depend_walk *w);

/* Check the dependencies inside one batch of n specs and put the elements in an order where
 * every element comes after the elements it depends on (the order of the batch where it
 * allows: the earliest element first). order must hold n entries. Returns -1 when the batch
 * is fine (order filled), else the index of an element on a cycle (an element that depends
 * on itself included), which is invalid_request. Index entries must name elements < n (the
 * parser resolves refs). Uses O(n + entries) memory it allocates: returns -2 when out of
 * memory. */
long depend_order(const struct job_spec *specs, size_t n, size_t *order);

#endif
