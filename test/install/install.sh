#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# meson install, then use what it installed, not the build tree:
#   - into a DESTDIR: the programs, the preload library, the public headers
#     (native and extra API), the static libraries, dpsock.pc and
#     dpsock-native.pc, four man pages, dpsockd@.service and the example
#     configuration are where they belong;
#   - the man pages render without a warning and are complete: every key
#     of dpsockd --help-config is in dpsock.conf(5), every DPSOCK_*
#     variable of the preload library (shim/env.c's table) in
#     libdpsock_preload(8), every long option of dpsock-stat in
#     dpsock-stat(8) and of dpsock-dump in dpsock-dump(8);
#   - the unit passes systemd-analyze verify (paths moved into DESTDIR);
#   - a small program built with `pkg-config --cflags --libs dpsock`
#     against the installed headers finds the extra API under the installed
#     preload library (and none without it) and receives 50 datagrams by
#     zero-copy from a Linux peer, with the installed dpsockd serving it;
#   - a native program links with `pkg-config --cflags --libs dpsock-native`.
set -euo pipefail
. "$DPSOCK_SRC/test/integration/lib.sh"

require_root
require_cmd ip meson cc pkg-config groff python3
require_tools dpsockd
B=${DPSOCK_BUILD:-$DPSOCK_SRC/build}
ROOT=$TEST_TMP/root

# ---- install ------------------------------------------------------------------
meson install -C "$B" --destdir "$ROOT" --no-rebuild >"$TEST_TMP/install.log" 2>&1 ||
	fail "meson install: $(tail -n 3 "$TEST_TMP/install.log" | tr '\n' ' ')"
prefix=$(meson introspect "$B" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["bindir"], o["libdir"], o["includedir"], o["mandir"], o["sysconfdir"])')
read -r P bindir libdir incdir mandir sysconfdir <<<"$prefix"
abs() { case "$1" in /*) echo "$1" ;; *) echo "$P/$1" ;; esac; }
BIN=$ROOT$(abs "$bindir") LIB=$ROOT$(abs "$libdir") INC=$ROOT$(abs "$incdir")
MAN=$ROOT$(abs "$mandir") ETC=$ROOT$(abs "$sysconfdir")
for f in "$BIN/dpsockd" "$BIN/dpsock-stat" "$BIN/dpsock-dump" "$BIN/dpsock-echo" "$BIN/dpsock-http" "$BIN/dpsock-loadgen" \
	"$BIN/dpsock-udp-recv" "$LIB/libdpsock_preload.so" "$LIB/libdpsock_stack.a" "$LIB/libdpsock_lwip.a" \
	"$INC/dpsock/dpsock.h" "$INC/dpsock/extra.h" "$LIB/pkgconfig/dpsock.pc" \
	"$LIB/pkgconfig/dpsock-native.pc" "$MAN/man8/dpsockd.8" "$MAN/man8/dpsock-stat.8" "$MAN/man8/dpsock-dump.8" \
	"$MAN/man5/dpsock.conf.5" "$MAN/man8/libdpsock_preload.8" "$ETC/dpsock/dpsock.conf" \
	"$ETC/dpsock/dpsock.env"; do
	[ -f "$f" ] || fail "not installed: ${f#"$ROOT"}"
done
unit=$(find "$ROOT" -name 'dpsockd@.service' | head -n 1)
[ -n "$unit" ] || fail "not installed: dpsockd@.service"
ok "installed: programs, preload library, headers, static libraries, pkg-config files, man pages, unit, example config"

# ---- man pages ----------------------------------------------------------------
for m in "$MAN"/man*/*; do
	w=$(groff -man -ww -z "$m" 2>&1) || fail "groff ${m##*/}: $w"
	[ -z "$w" ] || fail "groff warns on ${m##*/}: $w"
done
grep -q '@VERSION@' "$MAN"/man*/* && fail "a man page kept @VERSION@"
while read -r key _; do
	[ "$key" = KEY ] && continue
	k=${key//\[\]/[]}
	k=${k%.<module>}
	grep -qF -- "$(sed 's/-/\\-/g' <<<"$k")" "$MAN/man5/dpsock.conf.5" ||
		fail "dpsock.conf(5) lacks the key $key"
done < <("$BIN/dpsockd" -- --help-config 2>/dev/null)
for v in $(grep -o '"DPSOCK_[A-Z_]*"' "$DPSOCK_SRC/shim/env.c" | tr -d '"') DPSOCK_INHERIT; do
	grep -qF -- "$v" "$MAN/man8/libdpsock_preload.8" ||
		fail "libdpsock_preload(8) lacks $v"
done
for o in $("$BIN/dpsock-stat" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
	grep -qF -- "$(sed 's/-/\\-/g' <<<"$o")" "$MAN/man8/dpsock-stat.8" ||
		fail "dpsock-stat(8) lacks $o"
done
for o in $("$BIN/dpsock-dump" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u); do
	grep -qF -- "$(sed 's/-/\\-/g' <<<"$o")" "$MAN/man8/dpsock-dump.8" ||
		fail "dpsock-dump(8) lacks $o"
done
MANPATH=$MAN man -w dpsockd >/dev/null || fail "man -w dpsockd does not find the installed page"
ok "man pages render without warnings; every config key, DPSOCK_* variable and dpsock-stat and dpsock-dump option is in them"

# ---- the unit -----------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$TEST_TMP/unit"
	sed "s|$P|$ROOT$P|g" "$unit" >"$TEST_TMP/unit/dpsockd@.service"
	cp "$ETC/dpsock/dpsock.conf" "$ETC/dpsock/check.conf"
	out=$(MANPATH=$MAN systemd-analyze verify "$TEST_TMP/unit/dpsockd@check.service" 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify: $out"
	rm -f "$ETC/dpsock/check.conf"
	for k in 'AssertPathIsMountPoint=/dev/hugepages' 'Restart=on-failure' 'RestartPreventExitStatus=1 2' \
		"ExecStart=$P/bin/dpsockd \$DPSOCK_EAL_ARGS -- -f $(abs "$sysconfdir")/dpsock/%i.conf"; do
		grep -qxF -- "$k" "$unit" || fail "dpsockd@.service lacks '$k'"
	done
	ok "dpsockd@.service: systemd-analyze verify passes; instance per config, hugepages, restart policy"
else
	note "no systemd-analyze: the unit is not verified"
fi

# ---- build against the installed headers --------------------------------------
mkdir -p "$TEST_TMP/pc"
for f in "$LIB"/pkgconfig/*.pc; do
	sed "s|^prefix=.*|prefix=$ROOT$P|" "$f" >"$TEST_TMP/pc/${f##*/}"
done
flags=$(PKG_CONFIG_PATH=$TEST_TMP/pc pkg-config --cflags --libs dpsock)
[ "$flags" = "-I$INC " ] || [ "$flags" = "-I$INC" ] || fail "pkg-config dpsock: '$flags'"
# shellcheck disable=SC2086 # flags are words
cc -Wall -Wextra -Werror -o "$TEST_TMP/extra_echo" "$DPSOCK_SRC/test/install/extra_echo.c" $flags ||
	fail "extra_echo does not build against the installed header"
# shellcheck disable=SC2046
cc -o "$TEST_TMP/native" -x c - $(PKG_CONFIG_PATH=$TEST_TMP/pc pkg-config --cflags --libs dpsock-native) <<'CEOF' ||
#include <stdio.h>
#include <dpsock/dpsock.h>
int main(void) { printf("native %u\n", dpsock_worker_count()); return 0; }
CEOF
	fail "a native program does not link with pkg-config dpsock-native"
ok "built with pkg-config: extra_echo (dpsock: $flags), a native program (dpsock-native)"
out=$("$TEST_TMP/extra_echo" 1 1 || true)
[ "$out" = "extra_echo: no api" ] || fail "without the preload: '$out'"

# ---- run it under the installed preload library and dpsockd --------------------
DPSOCKD=$BIN/dpsockd
PRELOAD_LIB=$LIB/libdpsock_preload.so
name=$TEST_NAME
test_topo_up 116
preload_daemon_start "$name"
preload_start echo "$TEST_TMP/extra_echo" 7500 50
wait_until 10 grep -q "extra_echo: ready" "$TEST_TMP/echo.log"
in_b python3 - "$TOPO_ADDR_A" <<'PYEOF' || fail "the peer got no answers: $(tail -n 2 "$TEST_TMP/echo.log" | tr '\n' ' ')"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
for i in range(50):
    for _ in range(10):
        s.sendto(b"hello %d" % i, (sys.argv[1], 7500))
        try:
            while s.recv(64) != b"ack %d" % i:
                pass
            break
        except socket.timeout:
            pass
    else:
        sys.exit("no ack for %d" % i)
PYEOF
preload_wait echo 10 || fail "extra_echo: $(tail -n 2 "$TEST_TMP/echo.log" | tr '\n' ' ')"
grep -q "extra_echo: ok 50" "$TEST_TMP/echo.log" || fail "extra_echo: $(tail -n 2 "$TEST_TMP/echo.log")"
ok "extra_echo under the installed preload library and dpsockd: 50 datagrams by zero-copy, answered"
preload_daemon_stop
pass "meson install: complete, documented, usable through pkg-config"
