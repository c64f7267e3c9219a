/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness: dpsock.conf text -> struct dpsock_config (stack/core/config.c).
 *
 * The input is the file's text, given to dpsock_config_load_string exactly as
 * dpsockd gives a file's contents to libconfig. A configuration it accepts
 * must keep every promise the key table makes (ranges, powers of two,
 * terminated strings, counts within their arrays), and the start-up banner
 * must print it; one it refuses must say why, within the error buffer.
 * Every line of the input also goes through the offload rule compiler
 * (abi/offload_rules.c: dpsock_rule_parse, the libvma.conf grammar, with
 * the application-id scope carried from line to line as in a rules file)
 * and the log level parser on its own, so that the rule grammar is fuzzed
 * without libconfig's quoting in the way; every compiled rule is printed
 * back in the grammar (dpsock_rule_format) and matched against a socket.
 *
 * Not fuzzed: libconfig's "@include" directive (inputs holding it are
 * skipped): it opens the named file, and a path such as /dev/stdin would
 * block the fuzzer. Which files a root-owned configuration may include is
 * the administrator's business.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_priv.h"
#include "fuzz_check.h"
#include "offload_rules.h"

#define MAX_TEXT (64 * 1024)

static void
banner_line(void *arg, const char *line)
{
	size_t *n = arg;

	FUZZ_CHECK(line != NULL && strlen(line) < 4096, "banner line");
	(*n)++;
}

static bool
terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static bool
pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* What an accepted configuration promises (config_priv.h, the key table). */
static void
check_accepted(const struct dpsock_config *c)
{
	unsigned int i;

	FUZZ_CHECK(terminated(c->name, sizeof(c->name)) && c->name[0] != '\0', "name");
	FUZZ_CHECK(terminated(c->runtime_dir, sizeof(c->runtime_dir)) &&
		   c->runtime_dir[0] == '/', "runtime_dir");
	FUZZ_CHECK(terminated(c->steering, sizeof(c->steering)), "steering");
	FUZZ_CHECK(c->log_level >= 1 && c->log_level <= 8, "log.level %u", c->log_level);
	FUZZ_CHECK(c->n_log_modules <= DPSOCK_LOG_MODULE_MAX, "log modules %u", c->n_log_modules);
	for (i = 0; i < c->n_log_modules; i++) {
		FUZZ_CHECK(terminated(c->log_modules[i].module, sizeof(c->log_modules[i].module)),
			   "log module name");
		FUZZ_CHECK(c->log_modules[i].level >= 1 && c->log_modules[i].level <= 8,
			   "log module level %u", c->log_modules[i].level);
	}
	FUZZ_CHECK(c->n_workers <= DPSOCK_MAX_WORKERS, "workers %u", c->n_workers);
	FUZZ_CHECK(c->mbufs >= 511 && c->mbuf_cache <= 512, "mbufs");
	FUZZ_CHECK(pow2(c->rx_desc) && pow2(c->tx_desc) && pow2(c->steer_ring), "pow2 rings");
	FUZZ_CHECK(c->rx_burst >= 1 && c->rx_burst <= 512, "rx_burst %u", c->rx_burst);
	FUZZ_CHECK(c->ephemeral_min >= 1024 && c->ephemeral_max <= 65535 &&
		   c->ephemeral_min <= c->ephemeral_max, "ephemeral %u-%u", c->ephemeral_min,
		   c->ephemeral_max);
	FUZZ_CHECK(c->n_ifaces >= 1 && c->n_ifaces <= DPSOCK_MAX_PORTS, "interfaces %u", c->n_ifaces);
	for (i = 0; i < c->n_ifaces; i++) {
		const struct dpsock_iface_conf *ic = &c->ifaces[i];

		FUZZ_CHECK(terminated(ic->port, sizeof(ic->port)) && ic->port[0] != '\0', "port");
		FUZZ_CHECK(ic->prefix_len <= 32, "prefix %u", ic->prefix_len);
		FUZZ_CHECK(ic->mtu >= 68 && ic->mtu <= 9000, "mtu %u", ic->mtu);
		/* no address: shared with the kernel, nothing else of its own */
		FUZZ_CHECK(ic->shared ? ic->addr == 0 && ic->gateway == 0 && ic->mtu == 1500 :
			   ic->addr != 0, "address %#x (shared %d)", ic->addr, ic->shared);
		FUZZ_CHECK(ic->vlan <= 4094 && ic->vlan_priority <= 7 &&
			   (ic->vlan != 0 || ic->vlan_priority == 0), "vlan %u priority %u",
			   ic->vlan, ic->vlan_priority);
	}
	/* every route: network address, gateway directly on its interface's
	 * subnet (not the interface's own address), none inside a subnet */
	FUZZ_CHECK(c->n_routes <= DPSOCK_MAX_ROUTES, "routes %u", c->n_routes);
	for (i = 0; i < c->n_routes; i++) {
		const struct dpsock_route_conf *r = &c->routes[i];
		const struct dpsock_iface_conf *ic;
		uint32_t m, rm;

		FUZZ_CHECK(r->prefix_len <= 32 && r->iface < c->n_ifaces, "route %u fields", i);
		ic = &c->ifaces[r->iface];
		FUZZ_CHECK(!ic->shared, "route %u on a shared interface", i);
		m = ic->prefix_len ? htonl(~0u << (32 - ic->prefix_len)) : 0;
		rm = r->prefix_len ? htonl(~0u << (32 - r->prefix_len)) : 0;
		FUZZ_CHECK((r->dest & ~rm) == 0, "route %u: host bits in its destination", i);
		FUZZ_CHECK((r->gateway & m) == (ic->addr & m) && r->gateway != ic->addr,
			   "route %u: gateway not on interface %u's subnet", i, r->iface);
		for (unsigned int j = 0; j < c->n_ifaces; j++) {
			const struct dpsock_iface_conf *f = &c->ifaces[j];
			uint32_t fm = f->prefix_len ? htonl(~0u << (32 - f->prefix_len)) : 0;

			if (f->shared)
				continue;
			FUZZ_CHECK(!(r->prefix_len >= f->prefix_len && (r->dest & fm) == (f->addr & fm)),
				   "route %u inside interface %u's subnet", i, j);
		}
	}
	FUZZ_CHECK(c->n_allowed_uids <= DPSOCK_MAX_UIDS, "uids %u", c->n_allowed_uids);
	FUZZ_CHECK(pow2(c->pl_rx_fifo_kb) && pow2(c->pl_tx_fifo_kb), "fifo sizes");
	FUZZ_CHECK(c->pl_max_groups >= 1 && c->pl_max_threads >= 1 && c->pl_slots >= 16 &&
		   c->pl_poll_batch >= 1, "preload limits");
	FUZZ_CHECK(c->n_rules <= DPSOCK_PL_MAX_RULES, "rules %u", c->n_rules);
	for (i = 0; i < c->n_rules; i++) {
		const struct dpsock_pl_rule *r = &c->rules[i];

		FUZZ_CHECK(terminated(r->app_id, sizeof(r->app_id)) &&
			   terminated(r->prog, sizeof(r->prog)), "rule program and app id");
		FUZZ_CHECK(r->role >= DPSOCK_PL_TCP_SERVER && r->role <= DPSOCK_PL_UDP_CONNECT,
			   "rule role %u", r->role);
		FUZZ_CHECK(r->offload <= 1 && r->prefix_len <= (r->ip6 ? 128 : 32) &&
			   r->port_lo <= r->port_hi, "rule fields");
	}
}

/* One line as an offload rule (in the scope the lines before it left) and
 * as a log level. */
static void
fuzz_line(const char *line, struct dpsock_rule_scope *sc)
{
	static const uint8_t a6[16] = { 0xfd, 0, 1, 0x98, 0, 0x18, [15] = 2 };
	struct dpsock_rule_subject subj = {
		.prog = "fuzzprog", .app_id = "B1", .role = DPSOCK_PL_TCP_CLIENT,
		.addr = 0x010012c6, .port = 0x5000, .laddr = 0x020012c6, .lport = 0x3930,
	}, subj6 = {
		.prog = "fuzzprog", .app_id = "B1", .role = DPSOCK_PL_TCP_CLIENT, .port = 0x5000,
		.lport = 0x3930, .ip6 = true, .addr6 = a6,
	};
	char why[256], text[256];
	struct dpsock_pl_rule r;
	int rc, lvl;

	why[0] = '\0';
	rc = dpsock_rule_parse(line, sc, &r, why, sizeof(why));
	FUZZ_CHECK(rc == 0 || rc == 1 || rc == 2 || rc == -EINVAL, "rule_parse returned %d", rc);
	if (rc < 0 || rc == 2)
		FUZZ_CHECK(why[0] != '\0' && terminated(why, sizeof(why)), "rule error text");
	FUZZ_CHECK(terminated(sc->prog, sizeof(sc->prog)) && terminated(sc->app_id, sizeof(sc->app_id)),
		   "scope");
	if (rc == 0) {
		FUZZ_CHECK(r.role >= DPSOCK_PL_TCP_SERVER && r.role <= DPSOCK_PL_UDP_CONNECT &&
			   r.prefix_len <= (r.ip6 ? 128 : 32) && r.lprefix_len <= (r.lip6 ? 128 : 32) &&
			   r.ip6 <= 1 && r.lip6 <= 1 && r.port_lo <= r.port_hi &&
			   r.lport_lo <= r.lport_hi && r.offload <= 1, "rule fields");
		FUZZ_CHECK(terminated(r.prog, sizeof(r.prog)) && terminated(r.app_id, sizeof(r.app_id)),
			   "rule program and app id");
		dpsock_rule_format(&r, text, sizeof(text));
		FUZZ_CHECK(terminated(text, sizeof(text)) && strstr(text, "use ") != NULL,
			   "rule text '%s'", text);
		subj.role = subj6.role = r.role;
		(void)dpsock_rule_match(&r, &subj);
		(void)dpsock_rule_match(&r, &subj6);
	}
	lvl = dpsock_log_level_parse(line);
	FUZZ_CHECK(lvl == -EINVAL || (lvl >= 1 && lvl <= 8), "log level %d", lvl);
	FUZZ_CHECK(dpsock_log_level_name((uint32_t)lvl) != NULL, "level name");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpsock_rule_scope sc;
	struct dpsock_config *c;
	char *text, *line, *save = NULL, err[512];
	size_t n = 0;
	int rc;

	if (size > MAX_TEXT)
		return 0;
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (strstr(text, "@include") != NULL) {
		free(text);
		return 0;
	}
	c = malloc(sizeof(*c));
	if (c == NULL) {
		free(text);
		return 0;
	}
	memset(err, 0x5a, sizeof(err));
	rc = dpsock_config_load_string(c, text, "fuzz.conf", err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -EINVAL, "load_string returned %d", rc);
	FUZZ_CHECK(terminated(err, sizeof(err)), "error text not terminated");
	if (rc == 0) {
		check_accepted(c);
		dpsock_config_foreach_nondefault(c, banner_line, &n);
	} else {
		FUZZ_CHECK(strncmp(err, "fuzz.conf:", 10) == 0, "error without file:line: '%s'", err);
	}
	free(c);

	dpsock_rule_scope_init(&sc);
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		fuzz_line(line, &sc);
	free(text);
	return 0;
}
