#!/bin/bash
# The jobq image's entrypoint (installed as /usr/local/bin/jobq-entrypoint).
#
#   jobq-entrypoint [JOBQD FLAGS...]   set up authentication, then exec jobqd: jobqd replaces
#                                      this shell as PID 1 and gets SIGTERM directly
#   jobq-entrypoint jobqd [FLAGS...]   the same
#   jobq-entrypoint [jobqd] migrate ARGS...
#                                      exec `jobqd migrate ARGS` (no token set-up: it serves
#                                      nothing); its --db defaults to JOBQ_DB
#   jobq-entrypoint healthcheck        GET /healthz on $JOBQ_LISTEN; exit 0 on a 200
#   jobq-entrypoint COMMAND [ARGS...]  exec any other command (e.g. bash)
#
# jobqd refuses a non-loopback listen address (the image's default is 0.0.0.0:8080) without
# tokens. The first of these that applies decides:
#   1. JOBQ_INSECURE_LISTEN_ANY=1 (or --insecure-listen-any) and no token file: no tokens, and
#      anyone who can reach the port can do everything.
#   2. JOBQ_AUTH_TOKEN_FILE (or --auth-token-file): that file, e.g. a mounted secret, with
#      lines "TOKEN ROLE" (ROLE producer, worker or admin).
#   3. JOBQ_AUTH_TOKEN: one admin token given in the environment.
#   4. Otherwise /var/lib/jobq/auth-tokens, in the volume. On the first start it does not
#      exist: it is created (mode 600) with one random admin token, which is printed once in
#      the log. Later starts reuse it; add producer and worker tokens to it as you like.
set -euo pipefail

readonly data_dir=/var/lib/jobq
readonly kept_tokens=$data_dir/auth-tokens

say() {
    printf 'jobq-entrypoint: %s\n' "$*" >&2
}

truthy() {
    case "${1,,}" in 1 | true | yes) return 0 ;; *) return 1 ;; esac
}

# GET /healthz on the address jobqd listens on (JOBQ_LISTEN; flags given to the container
# are not seen here). A wildcard address is asked on loopback. bash's /dev/tcp speaks no TLS,
# so with JOBQ_TLS_CERT set the check only opens a connection.
healthcheck() {
    local listen=${JOBQ_LISTEN:-127.0.0.1:8080} host port status
    port=${listen##*:}
    host=${listen%:*}
    host=${host#[}
    host=${host%]}
    case "$host" in
        '' | 0.0.0.0) host=127.0.0.1 ;;
        ::) host=::1 ;;
    esac
    exec 3<>"/dev/tcp/$host/$port" || return 1
    if [ -n "${JOBQ_TLS_CERT:-}" ]; then
        return 0
    fi
    printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
    IFS= read -r -t 4 status <&3 || return 1
    [[ $status =~ ^HTTP/1\.[01]\ 200 ]]
}

# Create the kept token file with one random admin token (32 bytes from /dev/urandom,
# base64url) and print the token once. The file appears whole or not at all (a hard link of a
# finished temporary file), and only once: when two containers start on one new volume at the
# same moment, the one that loses the race uses the winner's file and prints nothing.
create_kept_tokens() {
    local token tmp
    if ! [ -w "$data_dir" ]; then
        say "cannot write $data_dir (owner uid $(stat -c %u "$data_dir"), we are uid $(id -u))."
        say "Mount a volume there that uid $(id -u) can write (a named volume is), or give"
        say "JOBQ_AUTH_TOKEN_FILE, or set JOBQ_INSECURE_LISTEN_ANY=1 to run without tokens."
        exit 1
    fi
    token=$(head -c 32 /dev/urandom | base64 -w 0 | tr '+/' '-_' | tr -d '=')
    tmp=$(mktemp "$kept_tokens.XXXXXX")
    {
        echo "# Made by the jobq image on first start. Lines: TOKEN ROLE (producer, worker, admin)."
        echo "$token admin"
    } >"$tmp"
    if ! ln "$tmp" "$kept_tokens" 2>/dev/null; then
        if [ -e "$kept_tokens" ]; then
            rm -f "$tmp"
            say "authentication: the tokens in $kept_tokens (made by another container)"
            return 0
        fi
        mv -f "$tmp" "$kept_tokens" # a file system without hard links
    fi
    rm -f "$tmp"
    say "=============================================================================="
    say "No JOBQ_AUTH_TOKEN_FILE was given, so an admin token was created and kept in"
    say "$kept_tokens (in the volume). It is shown only this once:"
    say ""
    say "    admin token: $token"
    say ""
    say "Send it as 'Authorization: Bearer TOKEN'. Add producer and worker tokens to that"
    say "file, or mount your own token file and set JOBQ_AUTH_TOKEN_FILE."
    say "=============================================================================="
}

# Decide on the token file (see the top of this file) and export JOBQ_AUTH_TOKEN_FILE.
setup_auth() {
    local arg insecure=0 have_file=0 env_file
    if truthy "${JOBQ_INSECURE_LISTEN_ANY:-0}"; then
        insecure=1
    fi
    [ -n "${JOBQ_AUTH_TOKEN_FILE:-}" ] && have_file=1
    for arg in "$@"; do
        case "$arg" in
            --insecure-listen-any) insecure=1 ;;
            --insecure-listen-any=*) truthy "${arg#*=}" && insecure=1 ;;
            --auth-token-file | --auth-token-file=?*) have_file=1 ;;
        esac
    done
    umask 077
    if [ "$have_file" = 1 ]; then
        if [ -n "${JOBQ_AUTH_TOKEN_FILE:-}" ] && [ -e "$JOBQ_AUTH_TOKEN_FILE" ] &&
            ! [ -r "$JOBQ_AUTH_TOKEN_FILE" ]; then
            say "$JOBQ_AUTH_TOKEN_FILE is not readable by uid $(id -u) (owner uid" \
                "$(stat -L -c '%u, mode %a' "$JOBQ_AUTH_TOKEN_FILE")):" \
                "chown $(id -u) it on the host"
        fi
        unset JOBQ_AUTH_TOKEN
        return 0
    fi
    if [ -n "${JOBQ_AUTH_TOKEN:-}" ]; then
        if ! [[ $JOBQ_AUTH_TOKEN =~ ^[A-Za-z0-9._~+/-]+=*$ ]]; then
            say "JOBQ_AUTH_TOKEN may hold only A-Z a-z 0-9 - . _ ~ + / and trailing '='."
            exit 1
        fi
        env_file=$(mktemp "${TMPDIR:-/tmp}/jobq-auth-tokens.XXXXXX")
        printf '%s admin\n' "$JOBQ_AUTH_TOKEN" >"$env_file"
        unset JOBQ_AUTH_TOKEN
        export JOBQ_AUTH_TOKEN_FILE=$env_file
        say "authentication: the admin token from JOBQ_AUTH_TOKEN"
        return 0
    fi
    if [ "$insecure" = 1 ]; then
        say "authentication: none (JOBQ_INSECURE_LISTEN_ANY): anyone who can reach the port" \
            "can do everything"
        return 0
    fi
    if [ -e "$kept_tokens" ]; then
        say "authentication: the tokens in $kept_tokens (created on first start, not shown again)"
    else
        create_kept_tokens
    fi
    export JOBQ_AUTH_TOKEN_FILE=$kept_tokens
}

if [ "${1:-}" = healthcheck ]; then
    healthcheck
    exit
fi
if [ "${1:-}" = jobqd ]; then
    shift
    if [ "${1:-}" = migrate ]; then
        exec /usr/local/bin/jobqd "$@"
    fi
elif [ "${1:-}" = migrate ]; then
    exec /usr/local/bin/jobqd "$@"
elif [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    exec "$@"
fi
setup_auth "$@"
exec /usr/local/bin/jobqd "$@"
