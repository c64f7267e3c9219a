#!/usr/bin/env bash
# PostgreSQL 15 (Debian's, unmodified) under libdpsock_preload.so, run as
# the unprivileged postgres user: the postmaster waits for connections in
# select() on its listeners and forks a backend per connection, which
# inherits the accepted socket and talks over it with poll/epoll
# (WaitEventSet) and blocking sends. From the Linux peer in B, Debian's
# pgbench (on the kernel):
#   - `pgbench -i` loads its tables over one connection (COPY: tens of
#     thousands of rows, the client sending in bulk);
#   - `pgbench -c 8 -j 2 -T 3`: transactions > 0 and none failed, each of
#     8 clients its own backend process;
#   - `psql` reads back a row count that matches what -i loaded;
#   - offload, not a kernel fallback: the listener is dpsockd's (its line in
#     dpsock-stat's socket view) and dpsockd accepted every connection
#     (tcp_accepted); on af_packet A's kernel has no address at all;
#   - postgres stops on SIGINT (fast shutdown) with status 0.
# listen_addresses = '*' gives the postmaster an AF_INET socket on 0.0.0.0
# and an AF_INET6 one on "::" with IPV6_V6ONLY (its default): the first is
# offloaded, the second stays the kernel's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip runuser setpriv
require_preload
PGBIN=/usr/lib/postgresql/15/bin
[ -x "$PGBIN/postgres" ] && [ -x "$PGBIN/pgbench" ] && [ -x "$PGBIN/initdb" ] ||
	fail "PostgreSQL 15 is not installed (scripts/setup installs postgresql-15)"
[ -x "$PGBIN/psql" ] || fail "no $PGBIN/psql"
id postgres >/dev/null 2>&1 || fail "no postgres user (the postgresql-15 package makes it)"
name=$TEST_NAME
test_topo_up 125
# dpsockd takes programs of root and of the uids it is told
preload_daemon_start "$name" "preload = { allowed_uids = [ $(id -u postgres) ]; };"
# the postgres user reaches the control socket and writes the shim's log
chmod 1777 "$TEST_TMP"
pg=$TEST_TMP/pg
mkdir -p "$pg"
chown postgres: "$pg"
runuser -u postgres -- "$PGBIN/initdb" -D "$pg/data" -A trust -U postgres >"$TEST_TMP/initdb.log" 2>&1 ||
	fail "initdb failed: $(tail -n 5 "$TEST_TMP/initdb.log")"
cat >>"$pg/data/postgresql.conf" <<EOF
listen_addresses = '*'
port = 5432
unix_socket_directories = '$pg'
max_connections = 32
fsync = off
synchronous_commit = off
logging_collector = off
EOF
printf 'host all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n' >>"$pg/data/pg_hba.conf"
# setpriv execs postgres in place (PRELOAD_PID is the postmaster's, which
# signals reach); runuser would stay in between
preload_start postgres setpriv --reuid=postgres --regid=postgres --init-groups -- "$PGBIN/postgres" -D "$pg/data"
wait_until 30 grep -q 'ready to accept connections' "$TEST_TMP/postgres.log" ||
	fail "postgres did not start: $(tail -n 5 "$TEST_TMP/postgres.log")"
if [ "$PRELOAD_KERNEL" != 1 ]; then
	wait_until 10 bash -c "\"$DPSOCK_STAT\" -n $name -v sockets 2>/dev/null | grep -q ':5432 .*LISTEN'" ||
		fail "postgres's listener is not dpsockd's: $("$DPSOCK_STAT" -n "$name" -v sockets 2>&1)"
fi
acc0=$(preload_stat tcp_accepted)
bench() { in_b env PGCONNECT_TIMEOUT=10 "$PGBIN/pgbench" -h "$TOPO_ADDR_A" -U postgres "$@" postgres; }
bench -i -s 1 >"$TEST_TMP/pgbench-i.log" 2>&1 || fail "pgbench -i failed: $(tail -n 5 "$TEST_TMP/pgbench-i.log")"
bench -c 8 -j 2 -T 3 >"$TEST_TMP/pgbench.log" 2>&1 || fail "pgbench failed: $(tail -n 8 "$TEST_TMP/pgbench.log")"
done_tx=$(awk -F': ' '/number of transactions actually processed/ { print $2 }' "$TEST_TMP/pgbench.log")
failed_tx=$(awk -F': ' '/number of failed transactions/ { split($2, a, " "); print a[1] }' "$TEST_TMP/pgbench.log")
tps=$(awk '/^tps/ { print $3 }' "$TEST_TMP/pgbench.log")
[ "${done_tx:-0}" -gt 0 ] || fail "pgbench processed no transaction: $(cat "$TEST_TMP/pgbench.log")"
[ "${failed_tx:-x}" = 0 ] || fail "pgbench: $failed_tx failed transactions: $(cat "$TEST_TMP/pgbench.log")"
rows=$(in_b "$PGBIN/psql" -h "$TOPO_ADDR_A" -U postgres -Atc 'select count(*) from pgbench_accounts' postgres 2>"$TEST_TMP/psql.log") ||
	fail "psql failed: $(cat "$TEST_TMP/psql.log")"
[ "$rows" = 100000 ] || fail "pgbench_accounts has '$rows' rows, not the 100000 that pgbench -i -s 1 loads"
acc1=$(preload_stat tcp_accepted)
if [ "$PRELOAD_KERNEL" != 1 ]; then
	# -i: 1 connection (and one to check), the run: 8, psql: 1
	[ $((acc1 - acc0)) -ge 10 ] || fail "dpsockd accepted $((acc1 - acc0)) of the 10 connections"
fi
ok "postgres under the shim: pgbench -i loaded 100000 rows, pgbench -c 8 ran $done_tx transactions ($tps tps), none failed; dpsockd accepted $((acc1 - acc0)) connections"
preload_stop postgres INT || fail "postgres did not stop cleanly: $(tail -n 3 "$TEST_TMP/postgres.log")"
ok "postgres stopped on SIGINT (fast shutdown) with status 0"
preload_daemon_stop
