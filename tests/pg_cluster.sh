#!/bin/sh
# A throwaway PostgreSQL cluster for the test suite (tests/test_postgres_*.py).
#
#   tests/pg_cluster.sh start DIR   # prints postgresql://postgres@127.0.0.1:PORT/postgres
#   tests/pg_cluster.sh stop DIR    # stops it and deletes DIR
#
# Trust auth, but only on 127.0.0.1 and a socket inside DIR; fsync off (data is thrown away).
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.
# On failure it prints why on stderr, nothing on stdout, and exits 1.
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] && command -v pg_ctl >/dev/null 2>&1; then bin=$(dirname "$(command -v pg_ctl)"); fi

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
  [ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "PostgreSQL is not installed (no initdb)" >&2; exit 1; }
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "running as root but there is no postgres user to run the server as" >&2; exit 1
  fi
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 \
    >"$dir/initdb.log" 2>&1 || { echo "initdb failed:" >&2; tail -n 5 "$dir/initdb.log" >&2; exit 1; }
  opts="-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir"
  opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$opts" -w -t 30 start >/dev/null \
    || { echo "pg_ctl start failed:" >&2; tail -n 5 "$dir/server.log" >&2; exit 1; }
  echo "postgresql://postgres@127.0.0.1:$port/postgres"
  ;;
stop)
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir/data" "$dir/initdb.log" "$dir/server.log"  # only what start made
  rmdir "$dir" 2>/dev/null || true
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2; exit 2
  ;;
esac
