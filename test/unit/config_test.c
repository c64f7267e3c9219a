/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the dpsock.conf parser (stack/core/config.c).
 *
 * Runs from the project root (meson: workdir) so it can read
 * the files in test/unit/data and the shipped example config/dpsock.conf.
 * Exit 0 = pass, 1 = fail.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_priv.h"
#include "check.h"

#define IF0 "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; } );\n"

static uint32_t
ip(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		abort();
	return a.s_addr;
}

/* ---------------------------------------------------------------------- */

static void
check_defaults(const struct dpsock_config *c, const char *what)
{
	CHECK(strcmp(c->name, "dpsock") == 0, "%s: name '%s'", what, c->name);
	CHECK(strcmp(c->runtime_dir, "/run/dpsock") == 0, "%s: runtime_dir '%s'",
	      what, c->runtime_dir);
	CHECK(c->log_level == 7, "%s: log_level %u", what, c->log_level);
	CHECK(c->n_log_modules == 0, "%s: n_log_modules %u", what, c->n_log_modules);
	CHECK(c->n_workers == 0, "%s: n_workers %u", what, c->n_workers);
	CHECK(c->mbufs == 16383, "%s: mbufs %u", what, c->mbufs);
	CHECK(c->mbuf_cache == 256, "%s: mbuf_cache %u", what, c->mbuf_cache);
	CHECK(c->rx_desc == 1024, "%s: rx_desc %u", what, c->rx_desc);
	CHECK(c->tx_desc == 1024, "%s: tx_desc %u", what, c->tx_desc);
	CHECK(c->steer_ring == 1024, "%s: steer_ring %u", what, c->steer_ring);
	CHECK(c->rx_burst == 32, "%s: rx_burst %u", what, c->rx_burst);
	CHECK(c->idle_poll_us == 200, "%s: idle_poll_us %u", what, c->idle_poll_us);
	CHECK(c->idle_sleep_max_us == 1000, "%s: idle_sleep_max_us %u", what,
	      c->idle_sleep_max_us);
	CHECK(c->lwip_mb == 256, "%s: lwip_mb %u", what, c->lwip_mb);
	CHECK(c->ephemeral_min == 32768 && c->ephemeral_max == 60999, "%s: ephemeral %u..%u",
	      what, c->ephemeral_min, c->ephemeral_max);
	CHECK(c->max_connections == 65536, "%s: max_connections %u", what, c->max_connections);
	CHECK(strcmp(c->steering, "auto") == 0, "%s: steering '%s'", what, c->steering);
	CHECK(strcmp(c->yield, "auto") == 0, "%s: yield '%s'", what, c->yield);
	CHECK(strcmp(c->congestion, "cubic") == 0, "%s: congestion '%s'", what, c->congestion);
	CHECK(!c->pacing, "%s: pacing on", what);
	CHECK(c->socket_slots == 4096, "%s: socket_slots %u", what, c->socket_slots);
	CHECK(c->n_allowed_uids == 0, "%s: n_allowed_uids %u", what, c->n_allowed_uids);
	CHECK(c->pl_max_groups == 64, "%s: pl_max_groups %u", what, c->pl_max_groups);
	CHECK(c->pl_max_threads == 1024, "%s: pl_max_threads %u", what, c->pl_max_threads);
	CHECK(c->pl_slots == 65536, "%s: pl_slots %u", what, c->pl_slots);
	CHECK(c->pl_rx_fifo_kb == 128 && c->pl_tx_fifo_kb == 1024, "%s: fifo %u/%u KiB", what,
	      c->pl_rx_fifo_kb, c->pl_tx_fifo_kb);
	CHECK(c->pl_poll_batch == 32, "%s: pl_poll_batch %u", what, c->pl_poll_batch);
	CHECK(c->pl_cut_through, "%s: cut_through off", what);
	CHECK(c->n_rules == 0, "%s: n_rules %u", what, c->n_rules);
	CHECK(c->n_routes == 0, "%s: n_routes %u", what, c->n_routes);
}

static void
test_defaults(void)
{
	struct dpsock_config c;
	char err[256];
	int rc;

	memset(&c, 0xa5, sizeof(c));
	dpsock_config_defaults(&c);
	check_defaults(&c, "defaults");
	CHECK(c.path[0] == '\0', "defaults: path '%s'", c.path);
	CHECK(c.n_ifaces == 0, "defaults: n_ifaces %u", c.n_ifaces);

	/* the smallest valid file: one interface, everything else default */
	memset(&c, 0xa5, sizeof(c));
	rc = dpsock_config_load_string(&c, IF0, "min.conf", err, sizeof(err));
	CHECK(rc == 0, "minimal: rc %d: %s", rc, err);
	CHECK(err[0] == '\0', "minimal: error text on success: %s", err);
	check_defaults(&c, "minimal");
	CHECK(c.n_ifaces == 1, "minimal: n_ifaces %u", c.n_ifaces);
	CHECK(strcmp(c.ifaces[0].port, "p0") == 0, "minimal: port");
	CHECK(c.ifaces[0].addr == ip("198.18.0.1"), "minimal: addr");
	CHECK(c.ifaces[0].prefix_len == 24, "minimal: prefix %u", c.ifaces[0].prefix_len);
	CHECK(c.ifaces[0].gateway == 0, "minimal: gateway");
	CHECK(c.ifaces[0].mtu == 1500, "minimal: mtu %u", c.ifaces[0].mtu);
	CHECK(c.ifaces[0].line == 1, "minimal: line %d", c.ifaces[0].line);
}

static void
test_full_file(void)
{
	static const uint32_t workers[] = { 3, 1, 1023 };
	struct dpsock_config c;
	const char *path = "test/unit/data/full.conf";
	char err[256];
	unsigned int i;
	int rc;

	rc = dpsock_config_load(&c, path, err, sizeof(err));
	CHECK(rc == 0, "full: rc %d: %s", rc, err);
	if (rc != 0)
		return;
	CHECK(strcmp(c.path, path) == 0, "full: path '%s'", c.path);
	CHECK(strcmp(c.name, "edge-7_b") == 0, "full: name '%s'", c.name);
	CHECK(strcmp(c.runtime_dir, "/var/run/dpsock-test") == 0, "full: runtime_dir");
	CHECK(c.log_level == 8, "full: log_level %u", c.log_level);
	CHECK(c.n_log_modules == 3, "full: n_log_modules %u", c.n_log_modules);
	if (c.n_log_modules == 3) {
		CHECK(strcmp(c.log_modules[0].module, "pmd") == 0 &&
		      c.log_modules[0].level == 4, "full: module 0");
		CHECK(strcmp(c.log_modules[1].module, "lwip") == 0 &&
		      c.log_modules[1].level == 5, "full: module 1");
		CHECK(strcmp(c.log_modules[2].module, "tcp_in") == 0 &&
		      c.log_modules[2].level == 6, "full: module 2");
	}
	CHECK(c.n_workers == 3, "full: n_workers %u", c.n_workers);
	for (i = 0; i < 3 && i < c.n_workers; i++)
		CHECK(c.workers[i] == workers[i], "full: workers[%u] = %u", i, c.workers[i]);
	CHECK(c.mbufs == 65535, "full: mbufs %u", c.mbufs);
	CHECK(c.mbuf_cache == 512, "full: mbuf_cache %u", c.mbuf_cache);
	CHECK(c.rx_desc == 4096, "full: rx_desc %u", c.rx_desc);
	CHECK(c.tx_desc == 2048, "full: tx_desc %u", c.tx_desc);
	CHECK(c.steer_ring == 8192, "full: steer_ring %u", c.steer_ring);
	CHECK(c.rx_burst == 64, "full: rx_burst %u", c.rx_burst);
	CHECK(c.idle_poll_us == 0, "full: idle_poll_us %u", c.idle_poll_us);
	CHECK(c.idle_sleep_max_us == 100000, "full: idle_sleep_max_us %u",
	      c.idle_sleep_max_us);
	CHECK(c.lwip_mb == 1024, "full: lwip_mb %u", c.lwip_mb);
	CHECK(c.ephemeral_min == 40000 && c.ephemeral_max == 50000, "full: ephemeral %u..%u",
	      c.ephemeral_min, c.ephemeral_max);
	CHECK(c.max_connections == 1000, "full: max_connections %u", c.max_connections);
	CHECK(strcmp(c.steering, "software") == 0, "full: steering '%s'", c.steering);
	CHECK(strcmp(c.congestion, "newreno") == 0, "full: congestion '%s'", c.congestion);
	CHECK(c.pacing, "full: pacing off");
	CHECK(c.socket_slots == 16, "full: socket_slots %u", c.socket_slots);
	CHECK(c.n_allowed_uids == 3 && c.allowed_uids[0] == 1000 && c.allowed_uids[1] == 0 &&
	      c.allowed_uids[2] == 4294967294u, "full: allowed_uids (%u)", c.n_allowed_uids);
	CHECK(c.pl_max_groups == 8 && c.pl_max_threads == 16 && c.pl_slots == 256 &&
	      c.pl_rx_fifo_kb == 64 && c.pl_tx_fifo_kb == 32 && c.pl_poll_batch == 8,
	      "full: preload %u %u %u %u %u %u", c.pl_max_groups, c.pl_max_threads, c.pl_slots,
	      c.pl_rx_fifo_kb, c.pl_tx_fifo_kb, c.pl_poll_batch);
	CHECK(!c.pl_cut_through, "full: cut_through on");
	CHECK(c.n_rules == 3, "full: n_rules %u", c.n_rules);
	if (c.n_rules == 3) {
		const struct dpsock_pl_rule *r = c.rules;

		CHECK(strcmp(r[0].app_id, "*") == 0 && r[0].offload == 0 &&
		      r[0].role == DPSOCK_PL_TCP_SERVER && r[0].prefix_len == 0 && r[0].addr == 0 &&
		      r[0].port_lo == 22 && r[0].port_hi == 22, "full: rule 0");
		CHECK(strcmp(r[1].app_id, "redis-server") == 0 && r[1].offload == 1 &&
		      r[1].role == DPSOCK_PL_TCP_SERVER && r[1].prefix_len == 16 &&
		      r[1].addr == ip("198.18.0.0") && r[1].port_lo == 6379 && r[1].port_hi == 6380,
		      "full: rule 1");
		CHECK(strcmp(r[2].app_id, "*") == 0 && r[2].offload == 0 &&
		      r[2].role == DPSOCK_PL_UDP_SENDER && r[2].prefix_len == 32 &&
		      r[2].addr == ip("198.18.1.1") && r[2].port_lo == 0 && r[2].port_hi == 65535,
		      "full: rule 2");
	}

	CHECK(c.n_ifaces == 4, "full: n_ifaces %u", c.n_ifaces);
	if (c.n_ifaces != 4)
		return;
	CHECK(strcmp(c.ifaces[0].port, "0000:03:00.0") == 0, "full: if0 port");
	CHECK(c.ifaces[0].addr == ip("198.18.0.1"), "full: if0 addr");
	CHECK(c.ifaces[0].prefix_len == 24, "full: if0 prefix");
	CHECK(c.ifaces[0].gateway == ip("198.18.0.254"), "full: if0 gateway");
	CHECK(c.ifaces[0].mtu == 9000, "full: if0 mtu %u", c.ifaces[0].mtu);
	CHECK(c.ifaces[0].line == 35, "full: if0 line %d", c.ifaces[0].line);
	CHECK(strcmp(c.ifaces[1].port, "net_af_packet0") == 0, "full: if1 port");
	CHECK(c.ifaces[1].addr == ip("198.19.255.254"), "full: if1 addr");
	CHECK(c.ifaces[1].prefix_len == 15, "full: if1 prefix");
	CHECK(c.ifaces[1].gateway == 0, "full: if1 gateway");
	CHECK(c.ifaces[1].mtu == 68, "full: if1 mtu %u", c.ifaces[1].mtu);
	CHECK(c.ifaces[1].vlan == 4094 && c.ifaces[1].vlan_priority == 7,
	      "full: if1 vlan %u priority %u", c.ifaces[1].vlan, c.ifaces[1].vlan_priority);
	CHECK(c.ifaces[0].vlan == 0 && c.ifaces[0].vlan_priority == 0,
	      "full: if0 vlan %u priority %u (untagged by default)", c.ifaces[0].vlan,
	      c.ifaces[0].vlan_priority);
	CHECK(c.ifaces[1].line == 41, "full: if1 line %d", c.ifaces[1].line);
	CHECK(strcmp(c.ifaces[2].port, "net_memif1") == 0, "full: if2 port");
	CHECK(c.ifaces[2].addr == ip("10.1.2.3"), "full: if2 addr");
	CHECK(c.ifaces[2].prefix_len == 31, "full: if2 prefix");
	CHECK(c.ifaces[2].gateway == ip("10.1.2.2"), "full: if2 gateway");
	CHECK(c.ifaces[2].mtu == 1500, "full: if2 mtu %u", c.ifaces[2].mtu);
	CHECK(strcmp(c.ifaces[3].port, "net_tap0") == 0, "full: if3 port");
	CHECK(c.ifaces[3].addr == ip("192.0.2.9"), "full: if3 addr");
	CHECK(c.ifaces[3].prefix_len == 32, "full: if3 prefix");
	/* each route on the interface whose subnet holds its gateway */
	CHECK(c.n_routes == 3, "full: n_routes %u", c.n_routes);
	if (c.n_routes == 3) {
		CHECK(c.routes[0].dest == ip("203.0.113.0") && c.routes[0].prefix_len == 24 &&
		      c.routes[0].gateway == ip("198.18.0.7") && c.routes[0].iface == 0,
		      "full: route 0 (interface %u)", c.routes[0].iface);
		CHECK(c.routes[1].dest == 0 && c.routes[1].prefix_len == 0 &&
		      c.routes[1].gateway == ip("198.19.0.1") && c.routes[1].iface == 1,
		      "full: route 1 (interface %u)", c.routes[1].iface);
		CHECK(c.routes[2].dest == ip("10.9.0.0") && c.routes[2].prefix_len == 16 &&
		      c.routes[2].gateway == ip("10.1.2.2") && c.routes[2].iface == 2,
		      "full: route 2 (interface %u)", c.routes[2].iface);
	}
}

/* ---------------------------------------------------------------------- */
/* bad input: each class of error, its line and message */

struct bad_case {
	const char *text;
	int line;            /* expected line; 0 = message has no line */
	const char *want;    /* substring of the message */
	const char *unwanted; /* must not appear, or NULL */
};

static const struct bad_case bad_cases[] = {
	/* syntax (libconfig) */
	{ IF0 "memory = { mbufs = ; };\n", 2, "syntax error", NULL },
	{ IF0 "name = \"a\";\nname = \"b\";\n", 3, "syntax error: duplicate setting name", NULL },
	/* unknown keys, with and without a suggestion */
	{ IF0 "memroy = { mbufs = 1023; };\n", 2,
	  "memroy: unknown key 'memroy' (did you mean 'memory'?)", NULL },
	{ IF0 "memory = {\n\tmbufs = 1023;\n\tmbfus = 1023;\n};\n", 4,
	  "memory.mbfus: unknown key 'mbfus' (did you mean 'mbufs'?)", NULL },
	{ IF0 "log = { levle = \"info\"; };\n", 2,
	  "log.levle: unknown key 'levle' (did you mean 'level'?)", NULL },
	{ IF0 "colour = 1;\n", 2, "colour: unknown key 'colour'", "did you mean" },
	{ IF0 "rx_burst = 16;\n", 2,
	  "rx_burst: unknown key 'rx_burst' (did you mean 'worker.rx_burst'?)", NULL },
	{ "interfaces = ( { port = \"p0\";\n\taddress = \"198.18.0.1/24\";\n\tadress = \"198.18.0.2/24\"; } );\n", 3,
	  "interfaces[0].adress: unknown key 'adress' (did you mean 'address'?)", NULL },
	{ IF0 "worker = { rx_burst = 32; sleep = 5; };\n", 2,
	  "worker.sleep: unknown key 'sleep'", "did you mean" },
	/* wrong type */
	{ IF0 "memory = { mbufs = \"lots\"; };\n", 2,
	  "memory.mbufs: expected an integer, got a string", NULL },
	{ IF0 "worker = { rx_burst = 32.0; };\n", 2,
	  "worker.rx_burst: expected an integer, got a float", NULL },
	{ IF0 "name = 5;\n", 2, "name: expected a string, got an integer", NULL },
	{ IF0 "memory = 5;\n", 2, "memory: expected a group", NULL },
	{ IF0 "workers = \"1,2\";\n", 2, "workers: expected a list of lcore ids", NULL },
	{ IF0 "workers = [ 1.5 ];\n", 2, "workers[0]: expected an integer, got a float", NULL },
	{ IF0 "log = { level = true; };\n", 2, "log.level: expected a string, got a boolean", NULL },
	{ IF0 "log = { modules = \"debug\"; };\n", 2, "log.modules: expected a group", NULL },
	{ "interfaces = { port = \"p0\"; };\n", 1, "interfaces: expected a list of groups", NULL },
	{ "interfaces = ( \"p0\" );\n", 1, "interfaces[0]: expected a group", NULL },
	{ "interfaces = ( { port = 0; address = \"198.18.0.1/24\"; } );\n", 1,
	  "interfaces[0].port: expected a string, got an integer", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\tgateway = 7; } );\n", 2,
	  "interfaces[0].gateway: expected a string, got an integer", NULL },
	/* out of range */
	{ IF0 "worker = { rx_burst = 0; };\n", 2, "worker.rx_burst: must be between 1 and 512 (got 0)", NULL },
	{ IF0 "worker = { idle_sleep_max_us = 100001; };\n", 2,
	  "worker.idle_sleep_max_us: must be between 1 and 100000", NULL },
	{ IF0 "worker = { idle_sleep_max_us = 0; };\n", 2,
	  "worker.idle_sleep_max_us: must be between 1 and 100000", NULL },
	{ IF0 "worker = { yield = \"seldom\"; };\n", 2,
	  "worker.yield: 'seldom' must be auto, never or always", NULL },
	{ IF0 "tcp = { steering = \"magic\"; };\n", 2,
	  "tcp.steering: 'magic' must be auto, toeplitz, rte_flow or software", NULL },
	{ IF0 "tcp = { congestion = \"bbr\"; };\n", 2,
	  "tcp.congestion: 'bbr' must be cubic or reno (newreno)", NULL },
	{ IF0 "tcp = { ephemeral_min = 50000; ephemeral_max = 50010; };\n", 2,
	  "tcp.ephemeral_max: the ephemeral range 50000..50010 must hold at least 64 ports", NULL },
	{ IF0 "memory = { lwip_mb = 8; };\n", 2,
	  "memory.lwip_mb: must be between 16 and 65536", NULL },
	{ IF0 "worker = { idle_poll_us = 1000001; };\n", 2,
	  "worker.idle_poll_us: must be between 0 and 1000000", NULL },
	{ IF0 "memory = { mbufs = -1; };\n", 2, "memory.mbufs: must be between 511 and 16777215 (got -1)", NULL },
	{ IF0 "memory = { mbufs = 5000000000L; };\n", 2, "memory.mbufs: must be between 511 and 16777215 (got 5000000000)", NULL },
	{ IF0 "memory = { mbuf_cache = 513; };\n", 2, "memory.mbuf_cache: must be between 0 and 512", NULL },
	{ IF0 "memory = { rx_desc = 1000; };\n", 2, "memory.rx_desc: must be a power of two between 64 and 32768", NULL },
	{ IF0 "memory = { tx_desc = 65536; };\n", 2, "memory.tx_desc: must be between 64 and 32768", NULL },
	{ IF0 "memory = { steer_ring = 32; };\n", 2, "memory.steer_ring: must be between 64 and 65536", NULL },
	{ IF0 "memory = {\n\tmbuf_cache = 400;\n\tmbufs = 511;\n};\n", 3,
	  "memory.mbuf_cache: mbuf_cache (400) must be at most mbufs / 1.5 (mbufs = 511)", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\tmtu = 9001; } );\n", 2,
	  "interfaces[0].mtu: must be between 68 and 9000", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\tmtu = 67; } );\n", 2,
	  "interfaces[0].mtu: must be between 68 and 9000", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\tvlan = 4095; } );\n", 2,
	  "interfaces[0].vlan: must be between 0 and 4094", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; vlan = 5;\n\tvlan_priority = 8; } );\n", 2,
	  "interfaces[0].vlan_priority: must be between 0 and 7", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\tvlan_priority = 3; } );\n", 2,
	  "interfaces[0].vlan_priority: vlan_priority 3 needs a vlan", NULL },
	{ IF0 "workers = [ 1, 1024 ];\n", 2, "workers[1]: must be between 0 and 1023", NULL },
	{ IF0 "workers = [ -1 ];\n", 2, "workers[0]: must be between 0 and 1023", NULL },
	/* strings, log levels */
	{ IF0 "log = { level = \"verbose\"; };\n", 2, "log.level: unknown log level 'verbose'", NULL },
	{ IF0 "log = { level = 9; };\n", 2, "log.level: must be between 1 and 8", NULL },
	{ IF0 "log = { modules = { pmd = \"loud\"; }; };\n", 2, "log.modules.pmd: unknown log level 'loud'", NULL },
	{ IF0 "log = { modules = { PMD = \"debug\"; }; };\n", 2,
	  "log.modules.PMD: module names may contain only a-z, 0-9 and '_'", NULL },
	{ IF0 "name = \"my name\";\n", 2, "name: 'my name' must contain only letters, digits", NULL },
	{ IF0 "name = \"\";\n", 2, "name: must be 1 to 31 characters long (got 0)", NULL },
	{ IF0 "name = \"abcdefghijklmnopqrstuvwxyz012345\";\n", 2,
	  "name: must be 1 to 31 characters long (got 32)", NULL },
	{ IF0 "runtime_dir = \"run/dpsock\";\n", 2, "runtime_dir: 'run/dpsock' must be an absolute path", NULL },
	{ IF0 "runtime_dir = \"/0123456789012345678901234567890123456789012345678901234567890123\";\n", 2,
	  "runtime_dir: must be 1 to 64 characters long (got 65)", NULL },
	{ "interfaces = ( { port = \"net_af_packet0,iface=veth0\"; address = \"198.18.0.1/24\"; } );\n", 1,
	  "interfaces[0].port: 'net_af_packet0,iface=veth0' must be a PCI address or vdev name", NULL },
	/* bad addresses and prefixes */
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\taddress6 = \"fd00::1/72\"; } );\n", 2,
	  "interfaces[0].address6: 'fd00::1/72': the prefix length must be 1 to 64", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\taddress6 = \"fd00::1/0\"; } );\n", 2,
	  "interfaces[0].address6: 'fd00::1/0': the prefix length must be 1 to 64", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\tgateway6 = \"fd00::fe\"; } );\n", 2,
	  "interfaces[0].gateway6: gateway6 fd00::fe needs an address6 on the interface", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; address6 = \"fd00::1/64\";\n"
	  "\tgateway6 = \"fd01::fe\"; } );\n", 2,
	  "interfaces[0].gateway6: gateway6 fd01::fe is neither link-local nor inside address6's prefix /64",
	  NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; address6 = \"fd00::1/64\";\n"
	  "\tgateway6 = \"fd00::1\"; } );\n", 2,
	  "interfaces[0].gateway6: gateway6 fd00::1 is the interface's own address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; address6 = \"fd00::1/64\";\n"
	  "\tgateway6 = \"ff02::2\"; } );\n", 2,
	  "interfaces[0].gateway6: ff02::2 is a multicast address", NULL },
	{ "interfaces = ( { port = \"p0\";\n\tgateway6 = \"fe80::1\"; } );\n", 2,
	  "interfaces[0].gateway6: an interface without address is shared with the kernel and takes its routes",
	  NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\taddress6 = \"fe80::1/64\"; } );\n", 2,
	  "interfaces[0].address6: fe80::1 is link-local (fe80::/10)", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\taddress6 = \"fd00::g/64\"; } );\n", 2,
	  "interfaces[0].address6: 'fd00::g/64' is not an IPv6 address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\";\n\taddress6 = \"::ffff:1.2.3.4/64\"; } );\n", 2,
	  "interfaces[0].address6: ::ffff:1.2.3.4 is an IPv4-mapped", NULL },
	{ "interfaces = ( { port = \"p0\";\n\taddress6 = \"fd00::1/64\"; } );\n", 2,
	  "interfaces[0].address6: an interface without address is shared with the kernel and takes its IPv6 addresses", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; address6 = \"fd00::1/64\"; },\n"
	  "\t{ port = \"p1\"; address = \"198.19.0.1/24\";\n\taddress6 = \"fd00::1/64\"; } );\n", 3,
	  "interfaces[1].address6: address6 fd00::1 is already used by interfaces[0]", NULL },
	{ "interfaces = ( { port = \"p0\";\n\taddress = \"198.18.0.1\"; } );\n", 2,
	  "interfaces[0].address: '198.18.0.1' has no prefix length", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/33\"; } );\n", 1,
	  "interfaces[0].address: '198.18.0.1/33': prefix length must be between 1 and 32", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/0\"; } );\n", 1,
	  "prefix length must be between 1 and 32", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24x\"; } );\n", 1,
	  "prefix length must be between 1 and 32", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/\"; } );\n", 1,
	  "prefix length must be between 1 and 32", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/+24\"; } );\n", 1,
	  "prefix length must be between 1 and 32", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.256/24\"; } );\n", 1,
	  "interfaces[0].address: '198.18.0.256/24' is not an IPv4 address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.1/24\"; } );\n", 1,
	  "is not an IPv4 address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"127.0.0.1/8\"; } );\n", 1,
	  "127.0.0.1 is a loopback address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"224.0.0.1/4\"; } );\n", 1,
	  "224.0.0.1 is a multicast address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"0.1.2.3/8\"; } );\n", 1,
	  "0.1.2.3 is in 0.0.0.0/8", NULL },
	/* network / broadcast address */
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.0/24\"; } );\n", 1,
	  "interfaces[0].address: 198.18.0.0 is the network address of 198.18.0.0/24", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.255/24\"; } );\n", 1,
	  "interfaces[0].address: 198.18.0.255 is the broadcast address of 198.18.0.0/24", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.19.255.255/15\"; } );\n", 1,
	  "198.19.255.255 is the broadcast address of 198.18.0.0/15", NULL },
	/* gateway */
	{ "interfaces = ( { port = \"p0\";\n\taddress = \"198.18.0.1/24\";\n\tgateway = \"198.18.1.1\"; } );\n", 3,
	  "interfaces[0].gateway: gateway 198.18.1.1 is outside the interface subnet 198.18.0.0/24", NULL },
	/* the gateway written before the address is checked all the same */
	{ "interfaces = ( { port = \"p0\";\n\tgateway = \"10.0.0.1\";\n\taddress = \"198.18.0.1/24\"; } );\n", 2,
	  "interfaces[0].gateway: gateway 10.0.0.1 is outside the interface subnet 198.18.0.0/24", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; gateway = \"198.18.0.1\"; } );\n", 1,
	  "gateway 198.18.0.1 is the interface's own address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; gateway = \"198.18.0.255\"; } );\n", 1,
	  "gateway 198.18.0.255 is the network or broadcast address of 198.18.0.0/24", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; gateway = \"none\"; } );\n", 1,
	  "interfaces[0].gateway: 'none' is not an IPv4 address", NULL },
	{ "interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; gateway = \"0.0.0.0\"; } );\n", 1,
	  "interfaces[0].gateway: 0.0.0.0 is in 0.0.0.0/8", NULL },
	/* duplicates */
	{ "interfaces = (\n\t{ port = \"p0\"; address = \"198.18.0.1/24\"; },\n"
	  "\t{ port = \"p0\"; address = \"198.18.1.1/24\"; }\n);\n", 3,
	  "interfaces[1].port: duplicate port 'p0' (also interfaces[0], line 2)", NULL },
	{ "interfaces = (\n\t{ port = \"p0\"; address = \"198.18.0.1/24\"; },\n"
	  "\t{ port = \"p1\"; address = \"198.18.0.1/16\"; }\n);\n", 3,
	  "interfaces[1].address: address 198.18.0.1 is already used by interfaces[0]", NULL },
	{ IF0 "workers = [ 1,\n\t2,\n\t1 ];\n", 4,
	  "workers[2]: lcore 1 is listed twice (also workers[0])", NULL },
	/* preload and offload rules */
	{ IF0 "preload = { max_groups = 0; };\n", 2, "preload.max_groups: must be between 1 and 1024 (got 0)", NULL },
	{ IF0 "preload = { max_threads = 16385; };\n", 2, "preload.max_threads: must be between 1 and 16384", NULL },
	{ IF0 "preload = { slots = 8; };\n", 2, "preload.slots: must be between 16 and 1048576", NULL },
	{ IF0 "preload = { rx_fifo_kb = 100; };\n", 2, "preload.rx_fifo_kb: must be a power of two between 4 and 65536", NULL },
	{ IF0 "preload = { tx_fifo_kb = 2; };\n", 2, "preload.tx_fifo_kb: must be between 4 and 65536", NULL },
	{ IF0 "preload = { poll_batch = 0; };\n", 2, "preload.poll_batch: must be between 1 and 1024", NULL },
	{ IF0 "preload = { slots = 1048576;\n\trx_fifo_kb = 65536; };\n", 2,
	  "preload.slots: slots x (rx_fifo_kb + tx_fifo_kb)", NULL },
	{ IF0 "preload = { allowed_uids = 1000; };\n", 2, "preload.allowed_uids: expected a list of uids", NULL },
	{ IF0 "preload = { allowed_uids = [ -1 ]; };\n", 2, "preload.allowed_uids[0]: must be between 0 and 4294967294", NULL },
	{ IF0 "preload = { allowed_uids = [ 5,\n 5 ]; };\n", 3, "preload.allowed_uids[1]: uid 5 is listed twice", NULL },
	{ IF0 "preload = { max_group = 4; };\n", 2, "preload.max_group: unknown key 'max_group' (did you mean 'max_groups'?)", NULL },
	{ IF0 "offload = { rules_file = \"libvma.conf\"; };\n", 2, "offload.rules_file: 'libvma.conf' must be an absolute path", NULL },
	{ IF0 "offload = { rules_file = \"/nonexistent/libvma.conf\"; };\n", 2,
	  "offload.rules_file: /nonexistent/libvma.conf: No such file or directory", NULL },
	{ IF0 "offload = { rule = [ ]; };\n", 2, "offload.rule: unknown key 'rule' (did you mean 'rules'?)", NULL },
	{ IF0 "offload = { rules = \"use os tcp_server *:22\"; };\n", 2, "offload.rules: expected a list of rule strings", NULL },
	/* static routes */
	{ IF0 "routes = \"10.0.0.0/8 via 198.18.0.9\";\n", 2, "routes: expected a list of route strings", NULL },
	{ IF0 "routes = [\n\t\"10.0.0.0/8 198.18.0.9\" ];\n", 3, "routes[0]: '10.0.0.0/8 198.18.0.9': expected \"DEST/LEN via GATEWAY\"", NULL },
	{ IF0 "routes = [ \"10.0.0.0/8 via 198.18.0.9 now\" ];\n", 2, "expected \"DEST/LEN via GATEWAY\"", NULL },
	{ IF0 "routes = [ \"10.0.0.0 via 198.18.0.9\" ];\n", 2, "routes[0]: destination '10.0.0.0' has no prefix length", NULL },
	{ IF0 "routes = [ \"10.0.0.0/33 via 198.18.0.9\" ];\n", 2, "prefix length that is not 0..32", NULL },
	{ IF0 "routes = [ \"10.1.0.0/8 via 198.18.0.9\" ];\n", 2, "has bits set past its prefix length (the network is 10.0.0.0/8)", NULL },
	{ IF0 "routes = [ \"10.0.0.0/8 via 224.0.0.1\" ];\n", 2, "gateway 224.0.0.1 is a multicast address", NULL },
	{ IF0 "routes = [ \"10.0.0.0/8 via 198.18.0.9\",\n\t\"10.0.0.0/8 via 198.18.0.8\" ];\n", 3, "routes[1]: a second route to 10.0.0.0/8 (also routes[0])", NULL },
	{ IF0 "routes = [\n\t\"10.0.0.0/8 via 198.19.0.9\" ];\n", 3, "routes[0]: gateway 198.19.0.9 is on no interface's subnet", NULL },
	{ IF0 "routes = [ \"10.0.0.0/8 via 198.18.0.1\" ];\n", 2, "gateway 198.18.0.1 is interfaces[0]'s own address", NULL },
	{ IF0 "routes = [ \"10.0.0.0/8 via 198.18.0.255\" ];\n", 2, "network or broadcast address of 198.18.0.0/24", NULL },
	{ IF0 "routes = [ \"198.18.0.128/25 via 198.18.0.9\" ];\n", 2, "lies inside interfaces[0]'s subnet 198.18.0.0/24", NULL },
	{ IF0 "offload = { rules = [ \"use os tcp_server *:22\",\n\t\"use maybe tcp_server *:22\" ]; };\n", 3,
	  "offload.rules[1]: 'maybe': expected 'offload' (or 'vma') or 'os'", NULL },
	{ IF0 "offload = { rules = [\n\t\"use os tcp_serve *:22\" ]; };\n", 3,
	  "offload.rules[0]: 'tcp_serve': role must be tcp_server", NULL },
	{ IF0 "offload = { rules = [ \"use os tcp_server 198.18.0.1\" ]; };\n", 2,
	  "offload.rules[0]: '198.18.0.1': expected ADDR[/PREFIX]:PORT[-PORT]", NULL },
	{ IF0 "offload = { rules = [ \"use os tcp_server 198.18.0.1:70000\" ]; };\n", 2,
	  "port must be *, N or N-M", NULL },
	{ IF0 "offload = { rules = [ \"use os tcp_server 198.18.0.1:90-80\" ]; };\n", 2,
	  "port range 90-80 is empty", NULL },
	{ IF0 "offload = { rules = [ \"use os tcp_server 198.18.0.1/33:80\" ]; };\n", 2,
	  "prefix length must be between 0 and 32", NULL },
	{ IF0 "offload = { rules = [ \"use os tcp_server 198.18.0:80\" ]; };\n", 2,
	  "'198.18.0' is not an IPv4 address", NULL },
	{ IF0 "offload = { rules = [ \"use os tcp_server *:80 extra\" ]; };\n", 2,
	  "expected 'use offload|vma|os ROLE", NULL },
	{ IF0 "offload = { rules = [ \"application-id\" ]; };\n", 2,
	  "offload.rules[0]: expected 'application-id PROGRAM [ID]'", NULL },
	{ IF0 "offload = { rules = [ \"allow tcp_server *:80\" ]; };\n", 2,
	  "'allow': a rule starts with 'use', 'application-id' or 'log'", NULL },
	{ IF0 "offload = { rules = [ 5 ]; };\n", 2, "offload.rules[0]: expected a string, got an integer", NULL },
	{ IF0 "offload = { rules = ( \"use os tcp_server *:1\", 5 ); };\n", 2, "offload.rules[1]: expected a string, got an integer", NULL },
	/* interfaces missing, empty, incomplete, too many */
	{ "name = \"x\";\n", 0, "interfaces: at least one interface is required", NULL },
	{ "", 0, "interfaces: at least one interface is required", NULL },
	{ "name = \"x\";\ninterfaces = ( );\n", 2, "interfaces: at least one interface is required", NULL },
	{ "name = \"x\";\ninterfaces = [ ];\n", 2, "interfaces: at least one interface is required", NULL },
	{ "interfaces = (\n\t{ port = \"p0\"; gateway = \"198.18.0.1\"; }\n);\n", 2,
	  "interfaces[0].gateway: an interface without address is shared with the kernel and "
	  "takes its routes from the kernel's netdev", NULL },
	{ "interfaces = (\n\t{ port = \"p0\"; mtu = 9000; }\n);\n", 2,
	  "interfaces[0].mtu: an interface without address is shared with the kernel and "
	  "takes its MTU from the kernel's netdev", NULL },
	{ "interfaces = (\n\t{ port = \"p0\"; address = \"198.18.0.1/24\"; },\n\t{ port = \"p1\"; }\n);\n"
	  "routes = [ \"10.0.0.0/8 via 198.18.5.1\" ];\n", 5,
	  "routes[0]: gateway 198.18.5.1 is on no interface's subnet", NULL },
	{ "interfaces = (\n\t{ port = \"p0\"; address = \"198.18.0.1/24\"; },\n\t{ mtu = 1500; address = \"198.18.1.1/24\"; }\n);\n", 3,
	  "interfaces[1]: missing required key 'port'", NULL },
	{ "interfaces = (\n"
	  "\t{ port = \"p0\"; address = \"198.18.0.1/24\"; },\n"
	  "\t{ port = \"p1\"; address = \"198.18.1.1/24\"; },\n"
	  "\t{ port = \"p2\"; address = \"198.18.2.1/24\"; },\n"
	  "\t{ port = \"p3\"; address = \"198.18.3.1/24\"; },\n"
	  "\t{ port = \"p4\"; address = \"198.18.4.1/24\"; }\n);\n", 6,
	  "interfaces[4]: too many interfaces: at most 4 are supported (got 5)", NULL },
};

static void
test_bad_cases(void)
{
	struct dpsock_config c;
	char err[512], prefix[64];
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *b = &bad_cases[i];
		int rc;

		err[0] = '\0';
		rc = dpsock_config_load_string(&c, b->text, "bad.conf", err, sizeof(err));
		if (b->line > 0)
			snprintf(prefix, sizeof(prefix), "bad.conf:%d: ", b->line);
		else
			snprintf(prefix, sizeof(prefix), "bad.conf: ");
		CHECK(rc == -EINVAL, "case %zu: rc %d (want -EINVAL), err '%s'", i, rc, err);
		CHECK(strncmp(err, prefix, strlen(prefix)) == 0,
		      "case %zu: message '%s' does not start with '%s'", i, err, prefix);
		CHECK(strstr(err, b->want) != NULL,
		      "case %zu: message '%s' lacks '%s'", i, err, b->want);
		CHECK(b->unwanted == NULL || strstr(err, b->unwanted) == NULL,
		      "case %zu: message '%s' has '%s'", i, err, b->unwanted);
	}
}

/* Edges that must be accepted. */
static void
test_good_cases(void)
{
	static const char *const good[] = {
		IF0 "memory = { mbufs = 1023; mbuf_cache = 512; };\n", /* 512 * 1.5 <= 1023 */
		IF0 "memory = { mbufs = 511; mbuf_cache = 0; rx_desc = 64; tx_desc = 32768; steer_ring = 65536; };\n",
		IF0 "memory = { rx_desc = 0x400; };\n",           /* hex */
		IF0 "worker = { rx_burst = 512; idle_sleep_max_us = 1; };\n",
		IF0 "workers = ( 0, 1023 );\n",                   /* a list works as well as an array */
		IF0 "log = { level = 1; modules = { a_1 = 8; }; };\n",
		"interfaces = ( { port = \"p0\"; address = \"198.18.0.0/31\"; gateway = \"198.18.0.1\"; } );\n",
		"interfaces = ( { port = \"p0\"; address = \"198.18.0.0/32\"; } );\n",
		"interfaces = ( { port = \"p0\"; address = \"198.18.0.1/1\"; } );\n",
		"interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; gateway = \"198.18.0.254\"; mtu = 68; } );\n",
		"interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; address6 = \"fd00:1:2::1/48\";\n"
		"\tgateway6 = \"fd00:1:2:3::fe\"; } );\n",
		"interfaces = ( { port = \"p0\"; address = \"198.18.0.1/24\"; address6 = \"fd00::1/64\";\n"
		"\tgateway6 = \"fe80::1\"; } );\n",
	};
	struct dpsock_config c;
	char err[512];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		rc = dpsock_config_load_string(&c, good[i], "good.conf", err, sizeof(err));

		CHECK(rc == 0, "good case %zu: rc %d, '%s'", i, rc, err);
	}
	/* no address: the port is shared with the kernel; an owned one beside */
	rc = dpsock_config_load_string(&c, "interfaces = ( { port = \"p0\"; },\n"
				       "{ port = \"p1\"; address = \"198.18.0.1/24\"; } );\n",
				       "shared.conf", err, sizeof(err));
	CHECK(rc == 0 && c.n_ifaces == 2 && c.ifaces[0].shared && !c.ifaces[1].shared,
	      "shared: rc %d, '%s'", rc, err);
}

/* Cases too long to write out: built in a buffer. */
static void
test_bad_generated(void)
{
	struct dpsock_config c;
	char text[4096], err[512];
	size_t used;
	int rc, i;

	/* 65 workers: more than DPSOCK_MAX_WORKERS */
	used = (size_t)snprintf(text, sizeof(text), IF0 "workers = [ 0");
	for (i = 1; i <= DPSOCK_MAX_WORKERS; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, ", %d", i);
	snprintf(text + used, sizeof(text) - used, " ];\n");
	rc = dpsock_config_load_string(&c, text, "gen.conf", err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "gen.conf:2: workers: at most 64 workers (got 65)"),
	      "65 workers: rc %d, '%s'", rc, err);

	/* exactly DPSOCK_MAX_WORKERS is fine */
	used = (size_t)snprintf(text, sizeof(text), IF0 "workers = [ 0");
	for (i = 1; i < DPSOCK_MAX_WORKERS; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, ", %d", i * 2);
	snprintf(text + used, sizeof(text) - used, " ];\n");
	rc = dpsock_config_load_string(&c, text, "gen.conf", err, sizeof(err));
	CHECK(rc == 0 && c.n_workers == DPSOCK_MAX_WORKERS && c.workers[63] == 126,
	      "64 workers: rc %d, '%s'", rc, err);

	/* DPSOCK_LOG_MODULE_MAX + 1 log modules */
	used = (size_t)snprintf(text, sizeof(text), IF0 "log = { modules = {\n");
	for (i = 0; i <= DPSOCK_LOG_MODULE_MAX; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
					 "m%d = \"debug\";\n", i);
	snprintf(text + used, sizeof(text) - used, "}; };\n");
	rc = dpsock_config_load_string(&c, text, "gen.conf", err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "gen.conf:19: log.modules.m16: at most 16 log modules"),
	      "17 modules: rc %d, '%s'", rc, err);
}

static void
test_files(void)
{
	struct dpsock_config c;
	char err[512];
	int rc;

	rc = dpsock_config_load(&c, "test/unit/data/no-such.conf", err, sizeof(err));
	CHECK(rc == -ENOENT, "missing file: rc %d", rc);
	CHECK(strstr(err, "test/unit/data/no-such.conf") && strstr(err, strerror(ENOENT)),
	      "missing file: '%s'", err);

	rc = dpsock_config_load(&c, "test/unit/data", err, sizeof(err));
	CHECK(rc == -ENOENT, "directory: rc %d, '%s'", rc, err);
	CHECK(strstr(err, "test/unit/data: ") && strstr(err, strerror(EISDIR)),
	      "directory: '%s'", err);

	rc = dpsock_config_load(&c, "test/unit/data/bad_syntax.conf", err, sizeof(err));
	CHECK(rc == -EINVAL && strcmp(err, "test/unit/data/bad_syntax.conf:4: syntax error") == 0,
	      "bad_syntax: rc %d, '%s'", rc, err);

	rc = dpsock_config_load(&c, "test/unit/data/bad_range.conf", err, sizeof(err));
	CHECK(rc == -EINVAL && strcmp(err, "test/unit/data/bad_range.conf:5: worker.rx_burst: "
				       "must be between 1 and 512 (got 513)") == 0,
	      "bad_range: rc %d, '%s'", rc, err);

	/* a short buffer is cut, NUL-terminated; no buffer at all is fine */
	memset(err, 'x', sizeof(err));
	rc = dpsock_config_load(&c, "test/unit/data/bad_range.conf", err, 8);
	CHECK(rc == -EINVAL && strlen(err) == 7 && err[8] == 'x', "short buffer: '%.8s'", err);
	rc = dpsock_config_load(&c, "test/unit/data/bad_range.conf", NULL, 0);
	CHECK(rc == -EINVAL, "no buffer: rc %d", rc);
	rc = dpsock_config_load(&c, "test/unit/data/no-such.conf", NULL, 0);
	CHECK(rc == -ENOENT, "no buffer, missing file: rc %d", rc);
}

/* ---------------------------------------------------------------------- */
/* non-default banner, shipped example, help */

struct lines {
	unsigned int n;
	char line[64][128];
};

static void
collect(void *arg, const char *line)
{
	struct lines *l = arg;

	if (l->n < sizeof(l->line) / sizeof(l->line[0]))
		snprintf(l->line[l->n], sizeof(l->line[0]), "%s", line);
	l->n++;
}

static void
test_nondefault(void)
{
	static const char *const want[] = {
		"log.level = warning",
		"log.modules.pmd = debug",
		"workers = 2,4",
		"memory.rx_desc = 2048",
		"interfaces[0].port = net_af_packet0",
		"interfaces[0].address = 198.18.0.1/24",
		"interfaces[0].gateway = none",
		"interfaces[0].mtu = 1500",
	};
	struct dpsock_config c;
	struct lines l = { 0 };
	char err[512];
	unsigned int i;
	int rc;

	rc = dpsock_config_load(&c, "test/unit/data/few.conf", err, sizeof(err));
	CHECK(rc == 0, "few: rc %d: %s", rc, err);
	dpsock_config_foreach_nondefault(&c, collect, &l);
	CHECK(l.n == sizeof(want) / sizeof(want[0]), "few: %u lines", l.n);
	for (i = 0; i < l.n && i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(strcmp(l.line[i], want[i]) == 0, "few: line %u '%s', want '%s'",
		      i, l.line[i], want[i]);

	/* the full file changes every key: one line per scalar key at least */
	memset(&l, 0, sizeof(l));
	rc = dpsock_config_load(&c, "test/unit/data/full.conf", err, sizeof(err));
	CHECK(rc == 0, "full: rc %d: %s", rc, err);
	dpsock_config_foreach_nondefault(&c, collect, &l);
	/* 19 scalars + workers + 3 modules + routes + 4 interfaces * 4 (+ the
	 * one VLAN's 2: vlan keys are shown when set) + 7 preload scalars +
	 * allowed_uids + rules */
	CHECK(l.n == 19 + 1 + 3 + 1 + 16 + 2 + 7 + 2, "full: %u non-default lines", l.n);
	for (i = 0; i < l.n && i < sizeof(l.line) / sizeof(l.line[0]); i++)
		if (strncmp(l.line[i], "routes = ", 9) == 0)
			CHECK(strcmp(l.line[i], "routes = 203.0.113.0/24 via 198.18.0.7, 0.0.0.0/0 via "
				      "198.19.0.1, 10.9.0.0/16 via 10.1.2.2") == 0, "full: '%s'", l.line[i]);
	CHECK(strcmp(l.line[0], "name = edge-7_b") == 0, "full: first '%s'", l.line[0]);
	CHECK(strcmp(l.line[l.n - 1], "offload.rules = 3 rules") == 0,
	      "full: last '%s'", l.line[l.n - 1]);
}

/* config/dpsock.conf must parse and hold only defaults (plus its interface). */
static void
test_example(void)
{
	struct dpsock_config c;
	struct lines l = { 0 };
	char err[512];
	unsigned int i;
	int rc;

	rc = dpsock_config_load(&c, "config/dpsock.conf", err, sizeof(err));
	CHECK(rc == 0, "example: rc %d: %s", rc, err);
	if (rc != 0)
		return;
	check_defaults(&c, "example");
	dpsock_config_foreach_nondefault(&c, collect, &l);
	CHECK(l.n == 4, "example: %u non-default lines", l.n);
	for (i = 0; i < l.n && i < 32; i++)
		CHECK(strncmp(l.line[i], "interfaces[0].", 14) == 0,
		      "example: '%s' is not the default", l.line[i]);
}

static void
test_help(void)
{
	static const char *const keys[] = {
		"name", "runtime_dir", "log.level", "log.modules.<module>", "workers",
		"memory.mbufs", "memory.mbuf_cache", "memory.rx_desc", "memory.tx_desc",
		"memory.steer_ring", "worker.rx_burst", "worker.idle_poll_us",
		"worker.idle_sleep_max_us", "worker.yield", "memory.lwip_mb", "tcp.ephemeral_min",
		"tcp.ephemeral_max", "tcp.max_connections", "tcp.steering", "tcp.segmentation",
		"tcp.gro", "tcp.congestion", "tcp.pacing", "stats.socket_slots",
		"routes", "interfaces", "interfaces[].port",
		"interfaces[].address", "interfaces[].address6", "interfaces[].gateway6",
		"interfaces[].gateway",
		"interfaces[].mtu",
		"interfaces[].vlan", "interfaces[].vlan_priority",
		"preload.allowed_uids", "preload.max_groups", "preload.max_threads",
		"preload.slots", "preload.rx_fifo_kb", "preload.tx_fifo_kb", "preload.poll_batch",
		"preload.cut_through",
		"offload.rules", "offload.rules_file",
	};
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0, i, type_col = 0, n = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL) {
		CHECK(0, "open_memstream: %s", strerror(errno));
		return;
	}
	dpsock_config_print_help(f);
	fclose(f);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char pat[80];

		snprintf(pat, sizeof(pat), "\n%s ", keys[i]);
		CHECK(strstr(buf, pat) != NULL, "help lacks key '%s'", keys[i]);
	}
	CHECK(strstr(buf, "\nmemory.mbufs") && strstr(strstr(buf, "\nmemory.mbufs"), "16383"),
	      "help: mbufs default");
	CHECK(strstr(buf, "(required)") != NULL, "help: required marker");
	/* aligned: the TYPE column starts at the same place on every line */
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
		size_t k = strcspn(line, " ");
		size_t col = k + strspn(line + k, " ");

		if (n == 0)
			type_col = col;
		else
			CHECK(col == type_col, "help line %zu misaligned: '%s'", n, line);
	}
	CHECK(n == 1 + sizeof(keys) / sizeof(keys[0]), "help: %zu lines", n);
	free(buf);
}

/* One rule line at a time, as the shim's users write them in libvma.conf
 * (the VMA forms and their decisions: rules_test.c). */
static void
test_rules(void)
{
	struct dpsock_rule_scope sc;
	struct dpsock_pl_rule r;
	char why[256];
	int rc;

	dpsock_rule_scope_init(&sc);
	rc = dpsock_rule_parse("   ", &sc, &r, why, sizeof(why));
	CHECK(rc == 1, "blank: %d", rc);
	rc = dpsock_rule_parse("#use os tcp_server *:*", &sc, &r, why, sizeof(why));
	CHECK(rc == 1, "comment: %d", rc);
	rc = dpsock_rule_parse("use offload udp_connect *:*", &sc, &r, why, sizeof(why));
	CHECK(rc == 0 && r.offload == 1 && r.role == DPSOCK_PL_UDP_CONNECT && r.prefix_len == 0 &&
	      r.port_lo == 0 && r.port_hi == 65535 && strcmp(r.app_id, "*") == 0, "any: %d %s", rc, why);
	rc = dpsock_rule_parse("application-id nginx", &sc, &r, why, sizeof(why));
	CHECK(rc == 1 && strcmp(sc.app_id, "nginx") == 0 && strcmp(sc.prog, "*") == 0,
	      "app id: %d '%s'", rc, sc.app_id);
	rc = dpsock_rule_parse("\tuse  os\ttcp_client 198.18.7.9/24:1-1023 ", &sc, &r, why, sizeof(why));
	CHECK(rc == 0 && r.offload == 0 && r.role == DPSOCK_PL_TCP_CLIENT && r.prefix_len == 24 &&
	      r.addr == ip("198.18.7.0") && r.port_lo == 1 && r.port_hi == 1023 &&
	      strcmp(r.app_id, "nginx") == 0, "block: %d %s", rc, why);
	rc = dpsock_rule_parse("application-id 0123456789012345678901234567890123", &sc, &r, why,
			       sizeof(why));
	CHECK(rc == -EINVAL && strstr(why, "longer than 31") != NULL, "long id: %d '%s'", rc, why);
	rc = dpsock_rule_parse("use os tcp_server *:-5", &sc, &r, why, sizeof(why));
	CHECK(rc == -EINVAL, "negative port: %d", rc);
	rc = dpsock_rule_parse("use os tcp_server :80", &sc, &r, why, sizeof(why));
	CHECK(rc == -EINVAL, "empty address: %d", rc);
}

/* offload.rules, then offload.rules_file's rules (a VMA-style file read as
 * it is; rules_test.c checks its decisions). */
static void
test_rules_file(void)
{
	static struct dpsock_config c;
	char text[512], path[300], err[512];
	int rc;

	if (realpath("test/unit/data/libvma_style.conf", path) == NULL) {
		CHECK(0, "test/unit/data/libvma_style.conf: %s", strerror(errno));
		return;
	}
	snprintf(text, sizeof(text), IF0 "offload = { rules = [ \"use os tcp_server *:22\" ];\n"
		 "\trules_file = \"%s\"; };\n", path);
	rc = dpsock_config_load_string(&c, text, "rf.conf", err, sizeof(err));
	CHECK(rc == 0, "rules_file: %d %s", rc, err);
	CHECK(c.n_rules == 10 && c.rules[0].port_lo == 22 && c.rules[1].port_lo == 53 &&
	      strcmp(c.rules[9].prog, "t?cp_lat") == 0, "rules_file: %u rules", c.n_rules);
}

static void
test_log_levels(void)
{
	static const char *const names[] = {
		NULL, "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug",
	};
	char num[4];
	int i;

	for (i = 1; i <= 8; i++) {
		CHECK(dpsock_log_level_parse(names[i]) == i, "parse %s", names[i]);
		CHECK(strcmp(dpsock_log_level_name((uint32_t)i), names[i]) == 0, "name %d", i);
		snprintf(num, sizeof(num), "%d", i);
		CHECK(dpsock_log_level_parse(num) == i, "parse %s", num);
	}
	CHECK(dpsock_log_level_parse("INFO") == 7, "case-insensitive");
	CHECK(dpsock_log_level_parse("err") == 4, "alias err");
	CHECK(dpsock_log_level_parse("warn") == 5, "alias warn");
	CHECK(dpsock_log_level_parse("0") == -EINVAL, "0");
	CHECK(dpsock_log_level_parse("9") == -EINVAL, "9");
	CHECK(dpsock_log_level_parse("77") == -EINVAL, "77");
	CHECK(dpsock_log_level_parse("") == -EINVAL, "empty");
	CHECK(dpsock_log_level_parse(NULL) == -EINVAL, "NULL");
	CHECK(dpsock_log_level_parse("infox") == -EINVAL, "infox");
	CHECK(strcmp(dpsock_log_level_name(0), "invalid") == 0, "name 0");
	CHECK(strcmp(dpsock_log_level_name(9), "invalid") == 0, "name 9");
}

/* Every prefix of a valid file either parses or fails with a message that
 * names the file: errors are never silent. */
static void
test_truncations(void)
{
	struct dpsock_config c;
	char *text, err[512];
	size_t len, i;
	FILE *f = fopen("test/unit/data/full.conf", "r");

	if (f == NULL) {
		CHECK(0, "open full.conf: %s", strerror(errno));
		return;
	}
	text = calloc(1, 8192);
	len = fread(text, 1, 8191, f);
	fclose(f);
	for (i = 0; i <= len; i++) {
		char saved = text[i];
		int rc;

		text[i] = '\0';
		err[0] = '\0';
		rc = dpsock_config_load_string(&c, text, "cut.conf", err, sizeof(err));
		CHECK(rc == 0 || (rc == -EINVAL && strncmp(err, "cut.conf", 8) == 0),
		      "prefix %zu: rc %d, '%s'", i, rc, err);
		text[i] = saved;
	}
	free(text);
}

int
main(void)
{
	test_defaults();
	test_full_file();
	test_good_cases();
	test_bad_cases();
	test_bad_generated();
	test_files();
	test_nondefault();
	test_example();
	test_help();
	test_rules();
	test_rules_file();
	test_log_levels();
	test_truncations();
	if (failures != 0) {
		fprintf(stderr, "config_test: %d check(s) failed\n", failures);
		return 1;
	}
	printf("config_test: all checks passed (%zu bad-input cases)\n",
	       sizeof(bad_cases) / sizeof(bad_cases[0]));
	return 0;
}
