#!/bin/sh
# jobq worker: claim jobs from QUEUE with a long poll, run them, complete them.
#
#     sh worker.sh QUEUE [MAX_JOBS]
#
# The job: sleep payload.sleep seconds (default 0), then answer {"doubled": 2 * payload.n}.
# A payload whose n is not a number fails the job with error_code "work_error".
#
# Leases, done right:
# - the job runs in a background subshell while the main loop heartbeats every lease/3
#   seconds;
# - a 409 lease_lost (on a heartbeat or on complete) means the job is someone else's now:
#   kill the work and drop the job, never complete it;
# - complete (and fail) are retried after a network error or a 5xx, a few times with
#   backoff, with the same lease_token: if the first answer was lost, the repeat gets 200.
#
# Settings (environment): JOBQ_URL (default http://127.0.0.1:8080), JOBQ_TOKEN (bearer
# token, sent from a file), JOBQ_LEASE_SECONDS (30), JOBQ_WAIT_SECONDS (long poll, 20),
# JOBQ_IDLE_POLLS (exit after this many empty polls in a row; 0 = never), JOBQ_HEARTBEAT (1;
# 0 turns heartbeats off, to show a lease being lost). Exits after MAX_JOBS jobs (0 = no
# limit), or on SIGTERM/SIGINT (after the poll or job in hand). POSIX sh, curl and jq.
set -u
URL=${JOBQ_URL:-http://127.0.0.1:8080}
LEASE=${JOBQ_LEASE_SECONDS:-30}
WAIT=${JOBQ_WAIT_SECONDS:-20}
IDLE_POLLS=${JOBQ_IDLE_POLLS:-0}
HEARTBEAT=${JOBQ_HEARTBEAT:-1}
RETRIES=5 # tries of complete/fail before giving up (the lease then expires: redelivery)
[ $# -ge 1 ] || { echo "usage: worker.sh QUEUE [MAX_JOBS]" >&2; exit 2; }
queue=$1 max_jobs=${2:-0}
worker_id="sh-$(hostname)-$$"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stopping=0
trap 'stopping=1' TERM INT
(umask 077; [ -z "${JOBQ_TOKEN:-}" ] || printf 'Authorization: Bearer %s\n' "$JOBQ_TOKEN") > "$tmp/auth"

log() { echo "worker: $*" >&2; }

# post PATH BODY MAX_SECONDS: prints the HTTP status (000 on a network error or time-out);
# the answer is in $tmp/resp.
post() {
    rm -f "$tmp/resp"
    code=$(curl -sS -o "$tmp/resp" -w '%{http_code}' --max-time "$3" -H @"$tmp/auth" \
        -H 'Content-Type: application/json' -d "$2" "$URL$1" 2>"$tmp/curl.err") || code=000
    echo "$code"
}

# The job itself: reads the job on stdin, prints the result. Runs in the background; on a
# lost lease it is killed, with the sleep it waits for (whose pid it leaves in $tmp/sleep).
work() {
    job=$(cat)
    sleep "$(printf '%s' "$job" | jq -r '.payload.sleep? // 0')" &
    echo $! > "$tmp/sleep"
    wait $! || return
    printf '%s' "$job" | jq -ce '.payload.n as $n | if ($n | type) == "number"
        then {doubled: ($n * 2)} else error("payload.n is not a number: \($n)") end'
}

# finish ID ACTION BODY: POST /jobs/ID/ACTION (complete or fail), retrying network errors
# and 5xx with backoff, the same lease_token every time. Returns 0 when the server took it.
finish() {
    try=1 delay=1
    while :; do
        code=$(post "/jobs/$1/$2" "$3" 10)
        case $code in
            200) return 0 ;;
            409) log "job $1: lease lost on $2, dropping it"; return 1 ;;
            000|5??) ;;
            *) log "job $1: $2 answered $code $(cat "$tmp/resp")"; return 1 ;;
        esac
        if [ "$try" -ge "$RETRIES" ]; then
            log "job $1: gave up on $2; the lease will expire and the job be retried"
            return 1
        fi
        log "job $1: $2 failed ($code), retry $try with the same token"
        sleep "$delay"
        try=$((try + 1)) delay=$((delay * 2))
    done
}

handle() { # $1: the claimed job (JSON)
    id=$(printf '%s' "$1" | jq -r .id)
    token=$(printf '%s' "$1" | jq -r .lease_token)
    tokbody=$(jq -nc --arg t "$token" '{lease_token: $t}')
    rm -f "$tmp/sleep"
    printf '%s' "$1" | work > "$tmp/result" 2> "$tmp/work.err" &
    pid=$!
    every=$((LEASE * 10 / 3)) ticks=0 # heartbeat period, in tenths of a second
    [ "$every" -ge 1 ] || every=1
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.1
        ticks=$((ticks + 1))
        [ "$HEARTBEAT" != 0 ] && [ "$ticks" -ge "$every" ] || continue
        ticks=0
        code=$(post "/jobs/$id/heartbeat" "$tokbody" "$LEASE")
        case $code in
            200) ;;
            409) log "job $id: lease lost on heartbeat, dropping it"
                 kill "$pid" "$(cat "$tmp/sleep")" 2>/dev/null; wait "$pid"; return ;;
            *) log "job $id: heartbeat answered $code, trying again" ;;
        esac
    done
    if wait "$pid"; then
        result=$(cat "$tmp/result")
        body=$(jq -nc --arg t "$token" --argjson r "$result" '{lease_token: $t, result: $r}')
        finish "$id" complete "$body" && log "job $id: completed $result"
    else
        detail=$(tail -n 1 "$tmp/work.err")
        body=$(jq -nc --arg t "$token" --arg d "$detail" \
            '{lease_token: $t, error_code: "work_error", error_detail: $d}')
        finish "$id" fail "$body" && log "job $id: failed: $detail"
    fi
}

claim=$(jq -nc --arg w "$worker_id" --arg q "$queue" --argjson l "$LEASE" --argjson s "$WAIT" \
    '{worker_id: $w, queue: $q, lease_seconds: $l, wait_seconds: $s}')
done_jobs=0 idle=0
while [ "$stopping" = 0 ] && { [ "$max_jobs" = 0 ] || [ "$done_jobs" -lt "$max_jobs" ]; }; do
    code=$(post /claim "$claim" $((WAIT + 10)))
    if [ "$code" != 200 ]; then
        log "claim answered $code $(cat "$tmp/curl.err" "$tmp/resp" 2>/dev/null), trying again in 1s"
        sleep 1
        continue
    fi
    job=$(jq -c '.jobs[0] // empty' "$tmp/resp")
    if [ -z "$job" ]; then
        idle=$((idle + 1))
        if [ "$IDLE_POLLS" != 0 ] && [ "$idle" -ge "$IDLE_POLLS" ]; then
            log "idle, exiting"
            break
        fi
        continue
    fi
    idle=0
    handle "$job"
    done_jobs=$((done_jobs + 1))
done
