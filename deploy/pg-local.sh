#!/usr/bin/env bash
# pg-local.sh start|stop|status|dsn [DIR]
#
# An embedded, throwaway PostgreSQL cluster for tests and the demo, kept in a
# project-local directory (default: .traincast/pg in the repository). It
# listens on 127.0.0.1 only, on a free port, with trust authentication for the
# local user 'traincast', and serves a database named 'traincast'.
#
# Run as root, the server runs as an unprivileged system user (postgres, or
# traincast-pg created on demand); run as a normal user, it runs as that
# user. `start` prints the connection string; so does `dsn`.
#
# A real deployment does not use this: pass --db with the connection string
# of any PostgreSQL 13 or newer.
set -euo pipefail

usage() {
    echo "usage: $0 start|stop|status|dsn [DIR]" >&2
    echo "  DIR defaults to .traincast/pg in the repository" >&2
    exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-$repo/.traincast/pg}
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac

die() { echo "pg-local: $*" >&2; exit 1; }

find_bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return 0
        fi
    done
    if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v pg_ctl)"
        return 0
    fi
    return 1
}

bindir=$(find_bindir) || die "PostgreSQL server binaries not found; install the Debian package 'postgresql' (deploy/setup.sh does)"

# Who runs the server.
if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then
        pguser=postgres
    else
        pguser=traincast-pg
        id "$pguser" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$pguser"
    fi
    as_pg() { (cd / && runuser -u "$pguser" -- "$@"); }
else
    pguser=$(id -un)
    as_pg() { "$@"; }
fi

portfile=$dir/port
dsnfile=$dir/dsn

# The cluster's data directory: DIR/data, or where the DIR/data link points
# when the server user could not reach DIR (see prepare_data_dir).
resolve_data() {
    data=$dir/data
    [ -L "$data" ] && data=$(readlink -f "$data")
    logfile=$(dirname "$data")/server.log
}
resolve_data

free_port() {
    /usr/bin/python3 - <<'EOF' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

is_running() {
    [ -d "$data" ] && as_pg "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1
}

write_dsn() {
    echo "postgresql://traincast@127.0.0.1:$(cat "$portfile")/traincast" >"$dsnfile"
    chmod 644 "$dsnfile"
}

# When the unprivileged server user cannot reach DIR (a home directory that
# is not world-searchable, say), keep the cluster in a private directory
# under /var/tmp and link DIR/data to it.
prepare_data_dir() {
    mkdir -p "$dir"
    chmod 755 "$dir"
    rm -f "$dir/data" 2>/dev/null || true
    if [ "$(id -u)" -eq 0 ]; then
        chown "$pguser" "$dir"
        if ! runuser -u "$pguser" -- test -w "$dir" 2>/dev/null; then
            local alt
            alt=/var/tmp/traincast-pg-$(echo -n "$dir" | sha1sum | cut -c1-12)
            rm -rf "$alt"
            mkdir -p "$alt/data"
            chown -R "$pguser" "$alt"
            chmod 700 "$alt" "$alt/data"
            ln -s "$alt/data" "$dir/data"
            echo "pg-local: $pguser cannot reach $dir; keeping the cluster in $alt" >&2
            resolve_data
            return
        fi
    fi
    mkdir -p "$dir/data"
    if [ "$(id -u)" -eq 0 ]; then chown "$pguser" "$dir/data"; fi
    chmod 700 "$dir/data"
    resolve_data
}

start() {
    if is_running; then
        write_dsn
        cat "$dsnfile"
        return 0
    fi
    if [ ! -f "$data/PG_VERSION" ]; then
        prepare_data_dir
        echo "pg-local: creating a cluster in $data (server user: $pguser)" >&2
        as_pg "$bindir/initdb" -D "$data" -U traincast --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; die "initdb failed (log: $dir/initdb.log)"; }
        cat >>"$data/postgresql.conf" <<EOF
# pg-local.sh: loopback only, no unix socket
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
shared_buffers = 128MB
logging_collector = off
# A throwaway cluster: WAL kept small (each CREATE DATABASE writes its
# template, about 8 MB, to the WAL; the test suite makes a hundred).
max_wal_size = 96MB
min_wal_size = 32MB
EOF
    fi
    local port=""
    [ -f "$portfile" ] && port=$(cat "$portfile")
    if [ -z "$port" ] || port_in_use "$port"; then
        port=$(free_port)
    fi
    echo "$port" >"$portfile"
    touch "$logfile"
    if [ "$(id -u)" -eq 0 ]; then chown "$pguser" "$logfile"; fi
    as_pg "$bindir/pg_ctl" -D "$data" -l "$logfile" -o "-p $port" -w -t 60 start >/dev/null \
        || { tail -n 20 "$logfile" >&2; die "the server did not start (log: $logfile)"; }
    # The database itself; its absence is the only expected failure.
    if ! "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U traincast -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'traincast'" | grep -q 1; then
        "$bindir/createdb" -h 127.0.0.1 -p "$port" -U traincast traincast
    fi
    write_dsn
    cat "$dsnfile"
}

stop() {
    if is_running; then
        as_pg "$bindir/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
        echo "pg-local: stopped ($dir)" >&2
    else
        echo "pg-local: not running ($dir)" >&2
    fi
}

case "$cmd" in
start) start ;;
stop) stop ;;
status)
    if is_running; then
        echo "running: $(cat "$dsnfile" 2>/dev/null)"
    else
        echo "stopped ($dir)"
        exit 3
    fi
    ;;
dsn)
    [ -f "$dsnfile" ] || die "no cluster in $dir; run: $0 start${2:+ $2}"
    cat "$dsnfile"
    ;;
*) usage ;;
esac
