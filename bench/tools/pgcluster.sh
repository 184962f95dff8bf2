# bench/tools/pgcluster.sh: sourced by postgres.sh and ab.sh. A PostgreSQL cluster of the
# bench's own, on disk (fsync on), under $1, listening on 127.0.0.1:$2, with a database
# "alertd"; extra `-c name=value` settings after. Appends the server's pid to PIDS
# (the caller's cleanup stops it) and sets URL, and PGBIN unless the caller has.
#
#   pg_cluster "$OUT" "$PG_PORT" [-c synchronous_commit=off ...]
pg_cluster() {
    local dir=$1 port=$2
    shift 2
    : "${PGBIN:=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
    [ -n "$PGBIN" ] || { echo "needs PostgreSQL (apt-get install postgresql)" >&2; exit 2; }
    local as_pg=()
    if [ "$(id -u)" -eq 0 ]; then as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --); fi
    mkdir -p "$dir/pgdata" "$dir/pgrun"
    [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$dir/pgdata" "$dir/pgrun"
    chmod 755 "$dir"
    "${as_pg[@]}" "$PGBIN/initdb" -D "$dir/pgdata" -A trust -U postgres -E UTF8 --locale=C >"$dir/initdb.log" 2>&1
    "${as_pg[@]}" "$PGBIN/postgres" -D "$dir/pgdata" -p "$port" -k "$dir/pgrun" -c listen_addresses=127.0.0.1 \
        -c max_connections=200 -c shared_buffers=256MB "$@" >"$dir/postgres.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        "$PGBIN/pg_isready" -h 127.0.0.1 -p "$port" -U postgres -q && break
        sleep 0.1
    done
    "$PGBIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -c "CREATE DATABASE alertd" postgres
    URL="postgres://postgres@127.0.0.1:$port/alertd?sslmode=disable"
}
