#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, never the system's one.
#
#   scripts/pg_cluster.sh start DIR   make DIR (absent or empty), initdb in DIR/data, start
#                                     the server and wait until it accepts connections
#   scripts/pg_cluster.sh stop DIR    stop it (fast mode) and remove DIR
#
# The server listens on a unix socket in DIR and on a free port of 127.0.0.1, with trust
# authentication on both (replication too) for the superuser `jobq`, max_connections 300 and
# fsync on. Its settings are in DIR/data/postgresql.conf, so `pg_ctl -D DIR/data start` after
# a stop (a restart test) brings it back the same. `start` prints and writes DIR/env, lines
# to source (`. DIR/env`):
#   JOBQ_TEST_PG_HOST  the socket directory (DIR)    JOBQ_TEST_PG_PORT  the port
#   JOBQ_TEST_PG_USER  jobq                          JOBQ_TEST_PG_BIN   initdb/pg_ctl/psql's dir
#   JOBQ_TEST_PG_DATA  DIR/data (for pg_ctl)         JOBQ_TEST_PG_URL   libpq URL of the
#                                                    maintenance database `postgres`
# initdb and postgres refuse to run as root: as root, they run as the user `postgres` (the
# Debian package makes it), which then owns DIR. $JOBQ_PG_BIN overrides the bin directory
# (default: the newest /usr/lib/postgresql/*/bin). Every wait is bounded.
set -euo pipefail

PG_USER=jobq
START_TIMEOUT=60 # seconds for the server to accept connections
STOP_TIMEOUT=60  # seconds for a fast shutdown (then immediate, then SIGKILL)
MARKER=.jobq-pg-cluster

die() {
    echo "pg_cluster: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 start DIR | stop DIR" >&2
    exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
dir=$(realpath -m -- "$2")
# The directory goes into a unix socket path (at most 107 bytes with "/.s.PGSQL.NNNNN"), a
# URL and a sourced file: keep it short and plain.
[[ $dir =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "DIR must be a plain path ([A-Za-z0-9._/+-]): $dir"
[ "${#dir}" -le 80 ] || die "DIR is too long for a unix socket path (80 characters at most): $dir"

bindir() {
    if [ -n "${JOBQ_PG_BIN:-}" ]; then
        echo "$JOBQ_PG_BIN"
        return
    fi
    local best="" v
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] || continue
        v=${d#/usr/lib/postgresql/}
        v=${v%/bin}
        if [ -z "$best" ] || [ "${v%%.*}" -gt "${best%%.*}" ] 2>/dev/null; then
            best=$v
        fi
    done
    [ -n "$best" ] || die "no PostgreSQL server in /usr/lib/postgresql/*/bin" \
        "(apt-get install postgresql, or set JOBQ_PG_BIN)"
    echo "/usr/lib/postgresql/$best/bin"
}

# The command prefix that runs the server's programs: as `postgres` when root, else as is.
as_owner=()
owner=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
    getent passwd postgres >/dev/null || die "running as root, but there is no user postgres" \
        "to run PostgreSQL as (apt-get install postgresql makes it)"
    command -v runuser >/dev/null || die "running as root, but runuser is missing"
    as_owner=(runuser -u postgres --)
    owner=postgres
fi

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

start() {
    local bin port data log ok
    bin=$(bindir)
    for p in initdb pg_ctl psql pg_isready; do
        [ -x "$bin/$p" ] || die "$bin/$p not found"
    done
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
        die "$dir exists and is not empty"
    fi
    mkdir -p "$dir"
    touch "$dir/$MARKER"
    chmod 0755 "$dir" # clients of any user reach the socket; the data dir stays 0700
    [ "$owner" = "$(id -un)" ] || chown -R "$owner:" "$dir"
    "${as_owner[@]}" test -w "$dir" || die "user $owner cannot write $dir (a parent closed to it?)"
    data=$dir/data
    log=$dir/postgres.log

    if ! "${as_owner[@]}" "$bin/initdb" -D "$data" -U "$PG_USER" -A trust -E UTF8 \
            --no-instructions >"$dir/initdb.log" 2>&1 </dev/null; then
        cat "$dir/initdb.log" >&2
        die "initdb failed in $data"
    fi
    "${as_owner[@]}" tee "$data/pg_hba.conf" >/dev/null <<'EOF'
# jobq's throwaway test cluster (scripts/pg_cluster.sh): trust on the socket and 127.0.0.1.
local   all             all                     trust
host    all             all     127.0.0.1/32    trust
local   replication     all                     trust
host    replication     all     127.0.0.1/32    trust
EOF

    # A free port may be taken between the probe and the bind: a few tries, each bounded.
    ok=0
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        "${as_owner[@]}" tee -a "$data/postgresql.conf" >/dev/null <<EOF
# scripts/pg_cluster.sh (the last assignment wins)
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
fsync = on
EOF
        if "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -l "$log" -w -t "$START_TIMEOUT" start \
                >/dev/null </dev/null; then
            ok=1
            break
        fi
        if ! grep -qi 'in use' "$log" 2>/dev/null; then
            break
        fi
    done
    if [ "$ok" -ne 1 ]; then
        tail -n 30 "$log" >&2 2>/dev/null || true
        die "the server did not start (log: $log)"
    fi

    ok=0
    for _ in $(seq 1 $((START_TIMEOUT * 4))); do
        if "$bin/pg_isready" -q -h "$dir" -p "$port" -U "$PG_USER" -d postgres -t 2 &&
                "$bin/psql" -X -q -At -h 127.0.0.1 -p "$port" -U "$PG_USER" -d postgres \
                    -c 'SELECT 1' >/dev/null 2>&1; then
            ok=1
            break
        fi
        sleep 0.25
    done
    [ "$ok" -eq 1 ] || die "the server does not accept connections after ${START_TIMEOUT}s (log: $log)"

    local enc=${dir//\//%2F}
    "${as_owner[@]}" tee "$dir/env" <<EOF
export JOBQ_TEST_PG_HOST=$dir
export JOBQ_TEST_PG_PORT=$port
export JOBQ_TEST_PG_USER=$PG_USER
export JOBQ_TEST_PG_BIN=$bin
export JOBQ_TEST_PG_DATA=$data
export JOBQ_TEST_PG_URL='postgresql:///postgres?host=$enc&port=$port&user=$PG_USER'
EOF
}

stop() {
    local bin data pid
    [ -e "$dir" ] || return 0
    [ -e "$dir/$MARKER" ] || die "$dir is not a cluster made by $0: not touching it"
    data=$dir/data
    if [ -f "$data/postmaster.pid" ]; then
        bin=$(bindir)
        pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
        if ! "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -m fast -w -t "$STOP_TIMEOUT" stop \
                >/dev/null 2>&1 </dev/null; then
            "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -m immediate -w -t 10 stop \
                >/dev/null 2>&1 </dev/null || true
        fi
        # Still there (a server that ignores signals)? This postmaster is ours: kill it.
        if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
                grep -qs "$data" "/proc/$pid/cmdline"; then
            kill -KILL "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
    fi
    rm -rf -- "$dir"
}

case $cmd in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
