#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, never the system's one.
#
#   scripts/pg_cluster.sh start DIR   make DIR (absent or empty), initdb in DIR/data, start
#                                     the server and wait until it accepts connections
#   scripts/pg_cluster.sh stop DIR    stop it (fast mode) and remove DIR
#   scripts/pg_cluster.sh standby PRIMARY_DIR DIR
#                                     make DIR (absent or empty) a streaming replica of the
#                                     running cluster PRIMARY_DIR (made by `start`):
#                                     pg_basebackup -R into DIR/data, its own socket and port,
#                                     start it and wait until it streams; then make it the
#                                     primary's synchronous standby (synchronous_standby_names
#                                     = '*' in PRIMARY_DIR/data/postgresql.conf, reloaded) and
#                                     wait until the primary reports it as `sync`. From then
#                                     on a commit on the primary returns only once the standby
#                                     has flushed it. The standby itself has no synchronous
#                                     standby, so after `pg_ctl -D DIR/data promote` it takes
#                                     writes alone. `stop DIR` stops and removes it as above
#                                     (after a failed `standby` too).
#
# The server listens on a unix socket in DIR and on a free port of 127.0.0.1, with trust
# authentication on both (replication too) for the superuser `jobq`, max_connections 300 and
# fsync on. Its settings are in DIR/data/postgresql.conf, so `pg_ctl -D DIR/data start` after
# a stop (a restart test) brings it back the same. `start` prints and writes DIR/env, lines
# to source (`. DIR/env`; `standby` writes one too, naming the standby):
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
SYNC_TIMEOUT=60  # seconds for a new standby to stream and become synchronous
MARKER=.jobq-pg-cluster

die() {
    echo "pg_cluster: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 start DIR | stop DIR | standby PRIMARY_DIR DIR" >&2
    exit 2
}

# The directory goes into a unix socket path (at most 107 bytes with "/.s.PGSQL.NNNNN"), a
# URL and a sourced file: keep it short and plain.
plain_dir() {
    local d
    d=$(realpath -m -- "$1")
    [[ $d =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "DIR must be a plain path ([A-Za-z0-9._/+-]): $d"
    [ "${#d}" -le 80 ] || die "DIR is too long for a unix socket path (80 characters at most): $d"
    echo "$d"
}

[ $# -ge 1 ] || usage
cmd=$1
primary=""
if [ "$cmd" = standby ]; then
    [ $# -eq 3 ] || usage
    primary=$(plain_dir "$2")
    dir=$(plain_dir "$3")
else
    [ $# -eq 2 ] || usage
    dir=$(plain_dir "$2")
fi

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

# Make $dir (absent or empty) with the marker, readable by every user, owned by $owner.
make_dir() {
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
        die "$dir exists and is not empty"
    fi
    mkdir -p "$dir"
    touch "$dir/$MARKER"
    chmod 0755 "$dir" # clients of any user reach the socket; the data dir stays 0700
    [ "$owner" = "$(id -un)" ] || chown -R "$owner:" "$dir"
    "${as_owner[@]}" test -w "$dir" || die "user $owner cannot write $dir (a parent closed to it?)"
}

# Start the server of data dir $2 (log $3) with binaries $1 on a free port, listening on $dir
# and 127.0.0.1; $4 holds extra postgresql.conf lines. Sets `port`. Dies when it cannot start.
launch() {
    local bin=$1 data=$2 log=$3 extra=${4:-} ok=0
    # A free port may be taken between the probe and the bind: a few tries, each bounded.
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
        if [ -n "$extra" ]; then
            printf '%s\n' "$extra" | "${as_owner[@]}" tee -a "$data/postgresql.conf" >/dev/null
        fi
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
}

# Wait (bounded) until the server on $dir and port $2 accepts connections on both.
await_ready() {
    local bin=$1 p=$2 ok=0
    for _ in $(seq 1 $((START_TIMEOUT * 4))); do
        if "$bin/pg_isready" -q -h "$dir" -p "$p" -U "$PG_USER" -d postgres -t 2 &&
                "$bin/psql" -X -q -At -h 127.0.0.1 -p "$p" -U "$PG_USER" -d postgres \
                    -c 'SELECT 1' >/dev/null 2>&1; then
            ok=1
            break
        fi
        sleep 0.25
    done
    [ "$ok" -eq 1 ] || die "the server does not accept connections after ${START_TIMEOUT}s" \
        "(log: $dir/postgres.log)"
}

# Print and write $dir/env for the server with binaries $1, port $2, data dir $3.
write_env() {
    local bin=$1 p=$2 data=$3
    local enc=${dir//\//%2F}
    "${as_owner[@]}" tee "$dir/env" <<EOF
export JOBQ_TEST_PG_HOST=$dir
export JOBQ_TEST_PG_PORT=$p
export JOBQ_TEST_PG_USER=$PG_USER
export JOBQ_TEST_PG_BIN=$bin
export JOBQ_TEST_PG_DATA=$data
export JOBQ_TEST_PG_URL='postgresql:///postgres?host=$enc&port=$p&user=$PG_USER'
EOF
}

start() {
    local bin port data log
    bin=$(bindir)
    for p in initdb pg_ctl psql pg_isready; do
        [ -x "$bin/$p" ] || die "$bin/$p not found"
    done
    make_dir
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
    launch "$bin" "$data" "$log"
    await_ready "$bin" "$port"
    write_env "$bin" "$port" "$data"
}

# psql -At as the superuser on the server of socket dir $2, port $3: run $4.
sql_at() {
    "$1/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$2" -p "$3" -U "$PG_USER" -d postgres -c "$4"
}

standby() {
    local bin port data log pport name ok out
    bin=$(bindir)
    for p in pg_basebackup pg_ctl psql pg_isready; do
        [ -x "$bin/$p" ] || die "$bin/$p not found"
    done
    if [ ! -e "$primary/$MARKER" ] || [ ! -f "$primary/env" ] ||
            [ ! -f "$primary/data/postgresql.conf" ]; then
        die "$primary is not a cluster made by $0 start"
    fi
    pport=$(sed -n 's/^export JOBQ_TEST_PG_PORT=\([0-9][0-9]*\)$/\1/p' "$primary/env")
    [ -n "$pport" ] || die "no JOBQ_TEST_PG_PORT in $primary/env"
    [ "$(sql_at "$bin" "$primary" "$pport" 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ] ||
        die "$primary is not a running primary (log: $primary/postgres.log)"
    [ "$primary" != "$dir" ] || die "PRIMARY_DIR and DIR are the same directory"
    make_dir
    data=$dir/data
    log=$dir/postgres.log
    # The standby's name on the primary (its application_name): from DIR, an identifier.
    name=$(basename "$dir" | tr -c 'A-Za-z0-9_\n' '_')
    name=jobq_standby_${name:0:40}

    # -R writes standby.signal and primary_conninfo (with this application_name); -X stream
    # copies the WAL written meanwhile; -c fast does not wait for a scheduled checkpoint.
    if ! timeout "$START_TIMEOUT" "${as_owner[@]}" "$bin/pg_basebackup" -D "$data" -R \
            -X stream -c fast -d "host=127.0.0.1 port=$pport user=$PG_USER application_name=$name" \
            >"$dir/basebackup.log" 2>&1 </dev/null; then
        cat "$dir/basebackup.log" >&2
        die "pg_basebackup from $primary failed"
    fi
    # The copied settings name the primary's socket and port: ours come last and win. The
    # standby waits for no standby of its own, also once promoted.
    launch "$bin" "$data" "$log" "synchronous_standby_names = ''
hot_standby = on"
    await_ready "$bin" "$port"
    [ "$(sql_at "$bin" "$dir" "$port" 'SELECT pg_is_in_recovery()')" = t ] ||
        die "the new server in $dir is not in recovery (log: $log)"

    # Now the primary: commits wait until the standby has flushed them.
    "${as_owner[@]}" tee -a "$primary/data/postgresql.conf" >/dev/null <<EOF
# scripts/pg_cluster.sh standby (the last assignment wins): every commit waits for $dir
synchronous_standby_names = '*'
synchronous_commit = on
EOF
    sql_at "$bin" "$primary" "$pport" 'SELECT pg_reload_conf()' >/dev/null ||
        die "cannot reload the primary's settings"
    ok=0
    for _ in $(seq 1 $((SYNC_TIMEOUT * 4))); do
        out=$(sql_at "$bin" "$primary" "$pport" "SELECT state || ' ' || sync_state FROM
            pg_stat_replication WHERE application_name = '$name'" 2>/dev/null || true)
        if [ "$out" = "streaming sync" ]; then
            ok=1
            break
        fi
        sleep 0.25
    done
    if [ "$ok" -ne 1 ]; then
        # Do not leave the primary waiting for a standby that never came: commits would hang.
        "${as_owner[@]}" tee -a "$primary/data/postgresql.conf" >/dev/null <<EOF
synchronous_standby_names = '' # scripts/pg_cluster.sh standby: $dir did not become synchronous
EOF
        sql_at "$bin" "$primary" "$pport" 'SELECT pg_reload_conf()' >/dev/null || true
        die "the standby is not the primary's synchronous standby after ${SYNC_TIMEOUT}s" \
            "(pg_stat_replication says '${out}'; logs: $log, $primary/postgres.log)"
    fi
    write_env "$bin" "$port" "$data"
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
    standby) standby ;;
    *) usage ;;
esac
