/* W3C Trace Context (https://www.w3.org/TR/trace-context/): the checks of a job's
 * traceparent and tracestate (../shared/API.md "Events, webhooks and trace context"). A job
 * keeps the trace context of the request that created it; jobq never makes or changes one.
 * Pure functions: no I/O. */
#ifndef JOBQ_TRACE_H
#define JOBQ_TRACE_H

#include <stddef.h>

#define TRACE_PARENT_LEN 55    /* "00-" 32 hex "-" 16 hex "-" 2 hex */
#define TRACE_STATE_MAX 512    /* bytes of a tracestate */
#define TRACE_STATE_MEMBERS 32 /* list-members of a tracestate */

/* 1 when s[0..n) is a traceparent of version 00: exactly "00-<trace-id>-<parent-id>-<flags>"
 * with a 32-digit trace-id and a 16-digit parent-id, neither all zeros, and 2-digit flags, all
 * lowercase hex; else 0. Another version (01..fe, which the specification lets a reader parse
 * as 00 when it can) is refused: jobq passes on only what it understands whole. This function
 * can't fail. */
int trace_parent_ok(const char *s, size_t n);

/* 1 when s[0..n) is a tracestate of at most TRACE_STATE_MAX bytes and TRACE_STATE_MEMBERS
 * list-members, each "key=value" (a simple key of lowercase letters, digits and _ - * / of at
 * most 256 bytes starting with a letter, or a multi-tenant "tenant@system" key; a value of 1
 * to 256 printable ASCII bytes without ',' or '=' that does not end in a space), separated by
 * commas with optional spaces and tabs around them, no key twice. Empty list-members are
 * allowed (and not counted); an empty or all-blank s is valid. Else 0. This function can't
 * fail. */
int trace_state_ok(const char *s, size_t n);

#endif
