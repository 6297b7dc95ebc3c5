#!/bin/sh
# jobq producer: enqueue COUNT jobs on QUEUE and print their ids, one a line.
#
#     sh producer.sh QUEUE COUNT [PAYLOAD_JSON]
#
# Job i (1..COUNT) gets the payload {"n": i} unless PAYLOAD_JSON is given. The server is
# $JOBQ_URL (default http://127.0.0.1:8080); $JOBQ_TOKEN, when set, is sent as a bearer token
# (from a file, so it never shows in `ps`). POSIX sh, curl and jq.
set -eu
URL=${JOBQ_URL:-http://127.0.0.1:8080}
[ $# -ge 2 ] || { echo "usage: producer.sh QUEUE COUNT [PAYLOAD_JSON]" >&2; exit 2; }
queue=$1 count=$2 fixed=${3:-}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(umask 077; [ -z "${JOBQ_TOKEN:-}" ] || printf 'Authorization: Bearer %s\n' "$JOBQ_TOKEN") > "$tmp/auth"

i=1
while [ "$i" -le "$count" ]; do
    payload=${fixed:-"{\"n\": $i}"}
    body=$(jq -nc --arg q "$queue" --argjson p "$payload" '{queue: $q, payload: $p}')
    code=$(curl -sS -o "$tmp/resp" -w '%{http_code}' --max-time 10 -H @"$tmp/auth" \
        -H 'Content-Type: application/json' -d "$body" "$URL/jobs") || code=000
    case $code in
        200|201) jq -r .id "$tmp/resp" ;;
        *) echo "enqueue failed: HTTP $code $(cat "$tmp/resp" 2>/dev/null)" >&2; exit 1 ;;
    esac
    i=$((i + 1))
done
