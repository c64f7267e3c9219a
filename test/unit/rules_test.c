/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules_test — the offload rule grammar (abi/offload_rules.c): VMA's
 * libvma.conf forms read as they are, and a table of sockets against the
 * rules of test/unit/data/libvma_style.conf with the decision each one
 * must get (the first matching rule; none: dpsock's own default).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offload_rules.h"

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failures++; \
		printf("FAIL %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} \
} while (0)

static uint32_t
ip(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		abort();
	return a.s_addr;
}

/* One line alone (in the default scope) -> parse result and why. */
static const struct {
	const char *line;
	int rc;                   /* 0 rule, 1 nothing, 2 ignored, -EINVAL */
	const char *why;          /* a substring of the reason, for errors */
} lines[] = {
	{ "", 1, NULL },
	{ "   \t ", 1, NULL },
	{ "# use os tcp_server *:80", 1, NULL },
	{ "use os tcp_server *:80   # a trailing comment", 0, NULL },
	{ "application-id * *", 1, NULL },
	{ "application-id nginx", 1, NULL },
	{ "application-id db2* B1", 1, NULL },
	{ "application-id a b c", -EINVAL, "expected 'application-id PROGRAM [ID]'" },
	{ "log destination stderr min-level 9", 2, "ignored" },
	{ "use vma tcp_server *:5001", 0, NULL },
	{ "use offload tcp_server *:5001", 0, NULL },
	{ "use os tcp_server *:5001", 0, NULL },
	{ "use sdp tcp_server *:5001", -EINVAL, "expected 'offload' (or 'vma') or 'os'" },
	{ "use vma tcp_client 192.168.1.0/24:*:*:*", 0, NULL },
	{ "use vma udp_connect 1.2.3.4:5:6.7.8.9:10-20", 0, NULL },
	{ "use vma tcp_server 1.2.3.4:5:6.7.8.9:10", -EINVAL, "tcp_server takes one endpoint" },
	{ "use vma udp_sender *:*:*:*", -EINVAL, "udp_sender takes one endpoint" },
	{ "use vma tcp_client 1.2.3.4:5:6", -EINVAL, "expected ADDR[/PREFIX]:PORT[-PORT]" },
	{ "use vma tcp_client *:*:1.2.3.4/40:*", -EINVAL, "prefix length must be between 0 and 32" },
	{ "use vma tcp_client *:*:*:9-8", -EINVAL, "port range 9-8 is empty" },
	{ "use vma tcp_client *:70000", -EINVAL, "port must be" },
	{ "use vma tcp_client 1.2.3:80", -EINVAL, "is not an IPv4 address" },
	{ "use vma tcp_peer *:80", -EINVAL, "role must be" },
	{ "use vma tcp_server", -EINVAL, "expected 'use offload|vma|os" },
	{ "allow tcp_server *:80", -EINVAL, "a rule starts with 'use', 'application-id' or 'log'" },
};

enum { NO_RULE = -1, KERNEL = 0, OFFLOAD = 1 };

/* Sockets against the example file's rules. */
static const struct {
	const char *prog, *app_id;
	int role;
	const char *addr;
	int port;
	const char *laddr;        /* client roles: the local address (NULL: 0) */
	int lport;
	int want;
} probes[] = {
	/* the "* *" block: DNS receivers to the kernel, every listener offloaded */
	{ "named", "named", DPSOCK_PL_UDP_RECEIVER, "0.0.0.0", 53, NULL, 0, KERNEL },
	{ "nginx", "nginx", DPSOCK_PL_TCP_SERVER, "198.18.0.1", 80, NULL, 0, OFFLOAD },
	{ "nginx", "nginx", DPSOCK_PL_UDP_RECEIVER, "0.0.0.0", 5353, NULL, 0, NO_RULE },
	/* md_feed*, id B1 only: a port range in a prefix to the kernel, the rest offloaded */
	{ "md_feed_a", "B1", DPSOCK_PL_UDP_RECEIVER, "198.18.4.4", 30005, NULL, 0, KERNEL },
	{ "md_feed_a", "B1", DPSOCK_PL_UDP_RECEIVER, "198.18.4.4", 30011, NULL, 0, OFFLOAD },
	{ "md_feed_a", "B1", DPSOCK_PL_UDP_RECEIVER, "10.1.1.1", 30005, NULL, 0, OFFLOAD },
	{ "md_feed_a", "B2", DPSOCK_PL_UDP_RECEIVER, "198.18.4.4", 30005, NULL, 0, NO_RULE },
	{ "md_feed_a", "md_feed_a", DPSOCK_PL_UDP_RECEIVER, "198.18.4.4", 30005, NULL, 0, NO_RULE },
	{ "xmd_feed", "B1", DPSOCK_PL_UDP_RECEIVER, "198.18.4.4", 30005, NULL, 0, NO_RULE },
	/* the "* *" block comes first for everyone: md_feed's DNS socket too */
	{ "md_feed_a", "B1", DPSOCK_PL_UDP_RECEIVER, "198.18.4.4", 53, NULL, 0, KERNEL },
	/* t?cp_lat (ttcp_lat, not tcp_lat): the client form */
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_TCP_CLIENT, "192.168.1.77", 5001, "198.18.0.1", 40000, OFFLOAD },
	{ "ttcp_lat", "x", DPSOCK_PL_TCP_CLIENT, "192.168.1.77", 5001, "10.2.3.4", 0, OFFLOAD },
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_TCP_CLIENT, "192.168.2.77", 5001, "10.2.3.4", 0, KERNEL },
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_TCP_CLIENT, "192.168.2.77", 5001, "198.18.0.1", 0, NO_RULE },
	{ "tcpx_lat", "tcpx_lat", DPSOCK_PL_TCP_CLIENT, "192.168.1.77", 5001, NULL, 0, NO_RULE },
	{ "tcp_lat", "tcp_lat", DPSOCK_PL_TCP_CLIENT, "192.168.1.77", 5001, NULL, 0, NO_RULE },
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_UDP_CONNECT, "198.18.5.5", 9000, "198.18.0.1", 40050, KERNEL },
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_UDP_CONNECT, "198.18.5.5", 9000, "198.18.0.1", 40100, NO_RULE },
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_UDP_CONNECT, "198.18.5.5", 9001, "198.18.0.1", 40050, NO_RULE },
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_UDP_SENDER, "198.18.9.200", 7, NULL, 0, OFFLOAD },
	{ "ttcp_lat", "ttcp_lat", DPSOCK_PL_UDP_SENDER, "198.18.10.1", 7, NULL, 0, KERNEL },
	/* a role no rule names */
	{ "tcp_lat", "tcp_lat", DPSOCK_PL_TCP_SERVER, "0.0.0.0", 22, NULL, 0, OFFLOAD },
};

static int
decide(const struct dpsock_pl_rule *r, unsigned int n, const struct dpsock_rule_subject *s)
{
	for (unsigned int i = 0; i < n; i++)
		if (dpsock_rule_match(&r[i], s))
			return r[i].offload;
	return NO_RULE;
}

static void
note(void *arg, const char *msg)
{
	(*(int *)arg)++;
	CHECK(strstr(msg, "libvma_style.conf:5: 'log' statement ignored") != NULL, "note: %s", msg);
}

int
main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "test/unit/data/libvma_style.conf";
	struct dpsock_pl_rule rules[DPSOCK_PL_MAX_RULES];
	struct dpsock_rule_scope sc;
	unsigned int n = 0;
	char why[384], text[256];
	int rc, notes = 0;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct dpsock_pl_rule r;

		dpsock_rule_scope_init(&sc);
		why[0] = '\0';
		rc = dpsock_rule_parse(lines[i].line, &sc, &r, why, sizeof(why));
		CHECK(rc == lines[i].rc, "'%s': %d, want %d (%s)", lines[i].line, rc, lines[i].rc, why);
		if (lines[i].why != NULL)
			CHECK(strstr(why, lines[i].why) != NULL, "'%s': reason '%s', want '%s'",
			      lines[i].line, why, lines[i].why);
	}

	/* the client form compiles both endpoints; format gives it back */
	dpsock_rule_scope_init(&sc);
	{
		struct dpsock_pl_rule r;

		rc = dpsock_rule_parse("use vma tcp_client 192.168.1.0/24:*:10.0.0.1:1000-1999", &sc, &r,
				       why, sizeof(why));
		CHECK(rc == 0 && r.offload == 1 && r.role == DPSOCK_PL_TCP_CLIENT && r.prefix_len == 24 &&
		      r.addr == ip("192.168.1.0") && r.port_lo == 0 && r.port_hi == 65535 &&
		      r.lprefix_len == 32 && r.laddr == ip("10.0.0.1") && r.lport_lo == 1000 &&
		      r.lport_hi == 1999, "client form: %d %s", rc, why);
		dpsock_rule_format(&r, text, sizeof(text));
		CHECK(strcmp(text, "[* *] use offload tcp_client 192.168.1.0/24:*:10.0.0.1:1000-1999") == 0,
		      "format: '%s'", text);
	}

	/* the example file, read as it is */
	rc = dpsock_rules_read_file(path, rules, DPSOCK_PL_MAX_RULES, &n, why, sizeof(why), note,
				    &notes);
	CHECK(rc == 0, "%s: %d %s", path, rc, why);
	CHECK(n == 9, "%s: %u rules, want 9", path, n);
	CHECK(notes == 1, "%d notes, want 1 (the log line)", notes);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		struct dpsock_rule_subject s = {
			.prog = probes[i].prog, .app_id = probes[i].app_id, .role = probes[i].role,
			.addr = ip(probes[i].addr), .port = htons((uint16_t)probes[i].port),
			.laddr = probes[i].laddr ? ip(probes[i].laddr) : 0,
			.lport = htons((uint16_t)probes[i].lport),
		};
		int d = decide(rules, n, &s);

		CHECK(d == probes[i].want, "%s (id %s) %s %s:%d local %s:%d: %d, want %d",
		      probes[i].prog, probes[i].app_id, dpsock_rule_role_name(probes[i].role),
		      probes[i].addr, probes[i].port, probes[i].laddr ? probes[i].laddr : "-",
		      probes[i].lport, d, probes[i].want);
	}

	/* IPv6 endpoints in brackets; an address of one family matches only
	 * sockets of that family, "*" both */
	{
		static const uint8_t in[16] = { 0xfd, 0, 1, 0x98, 0, 0x18, 0, 0x7e, [15] = 1 };
		static const uint8_t out[16] = { 0xfd, 0, 1, 0x98, 0, 0x18, 0, 0x7f, [15] = 1 };
		static const struct {
			const char *line, *text; /* text: the rule formatted, NULL: refused */
		} six[] = {
			{ "use os tcp_server [fd00:198:18:7e::/64]:80",
			  "[* *] use os tcp_server [fd00:198:18:7e::/64]:80" },
			{ "use os tcp_server [fd00:198:18:7e::1]:*", "[* *] use os tcp_server [fd00:198:18:7e::1]:*" },
			{ "use vma tcp_client [fd00:198:18::/48]:443:[fd00:198:18:7e::/64]:*",
			  "[* *] use offload tcp_client [fd00:198:18::/48]:443:[fd00:198:18:7e::/64]:*" },
			/* host bits past the prefix are dropped, as for IPv4 */
			{ "use os udp_receiver [fd00:198:18:7e::77/56]:5000-5001",
			  "[* *] use os udp_receiver [fd00:198:18::/56]:5000-5001" },
			/* an IPv4-mapped address is its IPv4 address */
			{ "use os tcp_server [::ffff:198.18.0.1]:22", "[* *] use os tcp_server 198.18.0.1:22" },
			{ "use os tcp_server [::ffff:198.18.0.0/120]:22", "[* *] use os tcp_server 198.18.0.0/24:22" },
			{ "use os tcp_server [fd00::/129]:80", NULL },
			{ "use os tcp_server [fd00::zz]:80", NULL },
			{ "use os tcp_server [fd00::1:80", NULL },
			{ "use os tcp_server fd00::1:80", NULL },
			{ "use os tcp_server [fd00::1]:80:[fd00::2]:*", NULL },
			{ "use os tcp_client [fd00::1]::*:*", NULL },
		};
		struct dpsock_pl_rule r;
		struct dpsock_rule_subject s6 = { .prog = "nginx", .app_id = "nginx",
						  .role = DPSOCK_PL_TCP_SERVER, .port = htons(80),
						  .ip6 = true, .addr6 = in };
		struct dpsock_rule_subject s4 = { .prog = "nginx", .app_id = "nginx",
						  .role = DPSOCK_PL_TCP_SERVER, .port = htons(80),
						  .addr = ip("198.18.126.1") };

		for (size_t i = 0; i < sizeof(six) / sizeof(six[0]); i++) {
			dpsock_rule_scope_init(&sc);
			why[0] = '\0';
			rc = dpsock_rule_parse(six[i].line, &sc, &r, why, sizeof(why));
			CHECK(six[i].text ? rc == 0 : rc == -EINVAL, "'%s': %d (%s)", six[i].line, rc, why);
			if (rc == 0 && six[i].text != NULL) {
				dpsock_rule_format(&r, text, sizeof(text));
				CHECK(strcmp(text, six[i].text) == 0, "'%s' formats as '%s', want '%s'",
				      six[i].line, text, six[i].text);
			}
		}
		dpsock_rule_scope_init(&sc);
		rc = dpsock_rule_parse(six[0].line, &sc, &r, why, sizeof(why));
		CHECK(rc == 0 && dpsock_rule_match(&r, &s6), "IPv6 in the /64");
		s6.addr6 = out;
		CHECK(!dpsock_rule_match(&r, &s6), "IPv6 out of the /64");
		s6.addr6 = NULL;
		CHECK(!dpsock_rule_match(&r, &s6), "IPv6 with no address yet against a prefix");
		CHECK(!dpsock_rule_match(&r, &s4), "an IPv4 socket against an IPv6 rule");
		/* an IPv4 rule, even 0.0.0.0/8 (where a zero address would fall),
		 * does not match an IPv6 socket; "*" matches both */
		s6.addr6 = in;
		rc = dpsock_rule_parse("use os tcp_server 0.0.0.0/8:80", &sc, &r, why, sizeof(why));
		CHECK(rc == 0 && !dpsock_rule_match(&r, &s6), "IPv6 against 0.0.0.0/8:80: %d %s", rc,
		      why);
		rc = dpsock_rule_parse("use os tcp_server *:80", &sc, &r, why, sizeof(why));
		CHECK(rc == 0 && dpsock_rule_match(&r, &s6) && dpsock_rule_match(&r, &s4),
		      "both families against *:80: %d %s", rc, why);
		/* a client rule's local half: the socket's address6 */
		s6.role = DPSOCK_PL_TCP_CLIENT;
		s6.addr6 = out;
		s6.laddr6 = in;
		s6.port = htons(443);
		rc = dpsock_rule_parse(six[2].line, &sc, &r, why, sizeof(why));
		CHECK(rc == 0 && dpsock_rule_match(&r, &s6), "IPv6 client with its local address");
		s6.laddr6 = NULL;
		CHECK(!dpsock_rule_match(&r, &s6), "IPv6 client, local address not known");
	}

	/* errors name the file and line; a full table is refused */
	{
		char tpl[] = "/tmp/rules_test.XXXXXX";
		int fd = mkstemp(tpl);

		if (fd >= 0) {
			FILE *w = fdopen(fd, "w");

			fprintf(w, "application-id * *\nuse vma tcp_server *:1\nuse vma tcp_server *:99999\n");
			fclose(w);
			n = 0;
			rc = dpsock_rules_read_file(tpl, rules, DPSOCK_PL_MAX_RULES, &n, why, sizeof(why),
						    NULL, NULL);
			CHECK(rc == -EINVAL && strstr(why, ":3: '*:99999': port must be") != NULL,
			      "bad file: %d '%s'", rc, why);
			n = DPSOCK_PL_MAX_RULES - 1;
			w = fopen(tpl, "w");
			fprintf(w, "use vma tcp_server *:1\nuse vma tcp_server *:2\n");
			fclose(w);
			rc = dpsock_rules_read_file(tpl, rules, DPSOCK_PL_MAX_RULES, &n, why, sizeof(why),
						    NULL, NULL);
			CHECK(rc == -ENOSPC && strstr(why, ":2: more than 64 rules") != NULL,
			      "full table: %d '%s'", rc, why);
			unlink(tpl);
		}
	}
	rc = dpsock_rules_read_file("/nonexistent/libvma.conf", rules, DPSOCK_PL_MAX_RULES, &n, why,
				    sizeof(why), NULL, NULL);
	CHECK(rc == -ENOENT && strstr(why, "/nonexistent/libvma.conf: No such file") != NULL,
	      "missing file: %d '%s'", rc, why);

	if (failures == 0)
		printf("rules: %zu lines, %zu sockets against the example file: ok\n",
		       sizeof(lines) / sizeof(lines[0]), sizeof(probes) / sizeof(probes[0]));
	return failures ? 1 : 0;
}
