/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * offload_rules.c — libvma.conf's grammar into struct dpsock_pl_rule, and
 * the first-match decision (offload_rules.h). libc only: dpsockd and the
 * shim both compile it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "offload_rules.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* role -> its name, and how many endpoints its rule may give */
static const struct {
	const char *name;
	unsigned int max_endpoints;
} roles[] = {
	[DPSOCK_PL_TCP_SERVER] = { "tcp_server", 1 },
	[DPSOCK_PL_TCP_CLIENT] = { "tcp_client", 2 },
	[DPSOCK_PL_UDP_RECEIVER] = { "udp_receiver", 1 },
	[DPSOCK_PL_UDP_SENDER] = { "udp_sender", 1 },
	[DPSOCK_PL_UDP_CONNECT] = { "udp_connect", 2 },
};

/* "use" transports: VMA's "vma" is dpsock's "offload" */
static const struct {
	const char *name;
	uint8_t offload;
} transports[] = {
	{ "offload", 1 },
	{ "vma", 1 },
	{ "os", 0 },
};

const char *
dpsock_rule_role_name(int role)
{
	if (role <= 0 || (size_t)role >= NELEMS(roles) || roles[role].name == NULL)
		return "?";
	return roles[role].name;
}

void
dpsock_rule_scope_init(struct dpsock_rule_scope *sc)
{
	snprintf(sc->prog, sizeof(sc->prog), "*");
	snprintf(sc->app_id, sizeof(sc->app_id), "*");
}

static int __attribute__((format(printf, 3, 4)))
rule_fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Strict unsigned decimal of at most 5 digits in [lo, hi]. */
static int
number(const char *s, size_t len, unsigned long lo, unsigned long hi, unsigned long *out)
{
	unsigned long v = 0;

	if (len == 0 || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static uint32_t
prefix_mask(unsigned int len)
{
	return len == 0 ? 0 : htonl(~0u << (32 - (len > 32 ? 32 : len)));
}

/* IPv6 "[addr[/len]]" into *ip6/addr6 (an IPv4-mapped one with len >= 96
 * into *addr, the prefix less 96: it is that IPv4 address) */
static int
parse_addr6(const char *s, const char *ep, uint32_t *addr, uint8_t *plen, uint8_t *ip6,
	    uint8_t *addr6, char *why, size_t whylen)
{
	char buf[64], *slash;
	unsigned long len = 128;
	struct in6_addr a;
	size_t n = strlen(s);

	if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(buf))
		return rule_fail(why, whylen, "'%s': '%s' is not an IPv6 address in brackets", ep, s);
	memcpy(buf, s + 1, n - 2);
	buf[n - 2] = '\0';
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		if (number(slash + 1, strlen(slash + 1), 0, 128, &len) < 0)
			return rule_fail(why, whylen, "'%s': prefix length must be between 0 and 128", ep);
	}
	if (inet_pton(AF_INET6, buf, &a) != 1)
		return rule_fail(why, whylen, "'%s': '%s' is not an IPv6 address", ep, buf);
	if (IN6_IS_ADDR_V4MAPPED(&a) && len >= 96) {
		*plen = (uint8_t)(len - 96);
		*addr = a.s6_addr32[3] & prefix_mask((unsigned int)len - 96);
		return 0;
	}
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int bits = len > i * 8 ? len - i * 8 : 0;

		addr6[i] = bits >= 8 ? a.s6_addr[i] : a.s6_addr[i] & (uint8_t)(0xff00u >> bits);
	}
	*plen = (uint8_t)len;
	*ip6 = 1;
	return 0;
}

/* "*", "a.b.c.d[/len]" or "[IPv6[/len]]" */
static int
parse_addr(const char *s, const char *ep, uint32_t *addr, uint8_t *plen, uint8_t *ip6,
	   uint8_t *addr6, char *why, size_t whylen)
{
	char buf[32], *slash;
	unsigned long len = 32;
	struct in_addr a;

	if (strcmp(s, "*") == 0) {
		*addr = 0;
		*plen = 0;
		return 0;
	}
	if (s[0] == '[')
		return parse_addr6(s, ep, addr, plen, ip6, addr6, why, whylen);
	if (strlen(s) >= sizeof(buf))
		return rule_fail(why, whylen, "'%s': '%s' is not an IPv4 address", ep, s);
	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		if (number(slash + 1, strlen(slash + 1), 0, 32, &len) < 0)
			return rule_fail(why, whylen, "'%s': prefix length must be between 0 and 32", ep);
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return rule_fail(why, whylen, "'%s': '%s' is not an IPv4 address", ep, buf);
	*plen = (uint8_t)len;
	*addr = a.s_addr & prefix_mask((unsigned int)len);
	return 0;
}

/* "*", "N" or "N-M" */
static int
parse_ports(const char *s, const char *ep, uint16_t *lo_out, uint16_t *hi_out, char *why,
	    size_t whylen)
{
	const char *dash;
	unsigned long lo, hi;

	if (strcmp(s, "*") == 0) {
		*lo_out = 0;
		*hi_out = 65535;
		return 0;
	}
	dash = strchr(s, '-');
	if (number(s, dash ? (size_t)(dash - s) : strlen(s), 0, 65535, &lo) < 0 ||
	    (dash != NULL && number(dash + 1, strlen(dash + 1), 0, 65535, &hi) < 0))
		return rule_fail(why, whylen, "'%s': port must be *, N or N-M with 0 <= N <= M <= 65535", ep);
	if (dash == NULL)
		hi = lo;
	if (hi < lo)
		return rule_fail(why, whylen, "'%s': port range %lu-%lu is empty", ep, lo, hi);
	*lo_out = (uint16_t)lo;
	*hi_out = (uint16_t)hi;
	return 0;
}

/* Split buf at the colons outside brackets into at most max parts (an
 * empty part or an unclosed bracket: max + 1, never a valid count). */
static unsigned int
split_colons(char *buf, char **part, unsigned int max)
{
	unsigned int n = 0;
	char *t = buf;

	for (;;) {
		char *end = t;

		if (*t == '[') {
			end = strchr(t, ']');
			if (end == NULL)
				return max + 1;
		}
		end = strchr(end, ':');
		if (n == max || end == t)
			return max + 1;
		part[n++] = t;
		if (end == NULL)
			return *t ? n : max + 1;
		*end = '\0';
		t = end + 1;
	}
}

/* ADDR:PORT, or (client roles) REMOTE:PORT:LOCAL:PORT */
static int
parse_endpoints(const char *ep, struct dpsock_pl_rule *r, char *why, size_t whylen)
{
	char buf[128], *part[4];
	unsigned int n;
	int e;

	if (strlen(ep) >= sizeof(buf))
		return rule_fail(why, whylen, "'%.40s...': endpoint too long", ep);
	snprintf(buf, sizeof(buf), "%s", ep);
	n = split_colons(buf, part, 4);
	if (n != 2 && n != 4)
		return rule_fail(why, whylen, "'%s': expected ADDR[/PREFIX]:PORT[-PORT] (* for any)%s", ep,
				 roles[r->role].max_endpoints > 1 ? ", then optionally :LOCAL_ADDR:LOCAL_PORT" : "");
	if (n == 4 && roles[r->role].max_endpoints < 2)
		return rule_fail(why, whylen, "'%s': %s takes one endpoint; the remote:port:local:port form is for tcp_client and udp_connect",
				 ep, roles[r->role].name);
	if ((e = parse_addr(part[0], ep, &r->addr, &r->prefix_len, &r->ip6, r->addr6, why,
			    whylen)) < 0 ||
	    (e = parse_ports(part[1], ep, &r->port_lo, &r->port_hi, why, whylen)) < 0)
		return e;
	r->laddr = 0;
	r->lprefix_len = 0;
	r->lport_lo = 0;
	r->lport_hi = 65535;
	if (n == 4 &&
	    ((e = parse_addr(part[2], ep, &r->laddr, &r->lprefix_len, &r->lip6, r->laddr6, why,
			     whylen)) < 0 ||
	     (e = parse_ports(part[3], ep, &r->lport_lo, &r->lport_hi, why, whylen)) < 0))
		return e;
	return 0;
}

static int
copy_pattern(char *dst, size_t size, const char *src, const char *what, char *why, size_t whylen)
{
	if (strlen(src) >= size)
		return rule_fail(why, whylen, "%s '%s' longer than %zu characters", what, src, size - 1);
	snprintf(dst, size, "%s", src);
	return 0;
}

int
dpsock_rule_parse(const char *line, struct dpsock_rule_scope *sc, struct dpsock_pl_rule *r,
		  char *why, size_t whylen)
{
	char buf[256], *tok[6], *save = NULL, *t, *hash;
	unsigned int n = 0, i;
	int e;

	if (strlen(line) >= sizeof(buf))
		return rule_fail(why, whylen, "rule longer than %zu characters", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", line);
	hash = strchr(buf, '#');
	if (hash != NULL)
		*hash = '\0';
	for (t = strtok_r(buf, " \t\r\n", &save); t != NULL && n < NELEMS(tok);
	     t = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = t;
	if (n == 0)
		return 1;
	if (strcmp(tok[0], "application-id") == 0) {
		struct dpsock_rule_scope next;

		if (n != 2 && n != 3)
			return rule_fail(why, whylen, "expected 'application-id PROGRAM [ID]' (shell wildcards, * for any)");
		if (n == 2) {
			/* dpsock's one-word form: the application id alone */
			snprintf(next.prog, sizeof(next.prog), "*");
			e = copy_pattern(next.app_id, sizeof(next.app_id), tok[1], "application id", why, whylen);
		} else {
			e = copy_pattern(next.prog, sizeof(next.prog), tok[1], "program", why, whylen);
			if (e == 0)
				e = copy_pattern(next.app_id, sizeof(next.app_id), tok[2], "application id",
						 why, whylen);
		}
		if (e < 0)
			return e;
		*sc = next;
		return 1;
	}
	if (strcmp(tok[0], "log") == 0) {
		rule_fail(why, whylen, "'log' statement ignored: the preload library logs through DPSOCK_LOG_LEVEL and DPSOCK_LOG_FILE, dpsockd through log.level");
		return 2;
	}
	if (strcmp(tok[0], "use") != 0)
		return rule_fail(why, whylen, "'%s': a rule starts with 'use', 'application-id' or 'log'", tok[0]);
	if (n != 4)
		return rule_fail(why, whylen, "expected 'use offload|vma|os ROLE ADDR[/PREFIX]:PORT[-PORT]'");
	memset(r, 0, sizeof(*r));
	snprintf(r->prog, sizeof(r->prog), "%s", sc->prog);
	snprintf(r->app_id, sizeof(r->app_id), "%s", sc->app_id);
	for (i = 0; i < NELEMS(transports); i++)
		if (strcmp(tok[1], transports[i].name) == 0)
			break;
	if (i == NELEMS(transports))
		return rule_fail(why, whylen, "'%s': expected 'offload' (or 'vma') or 'os'", tok[1]);
	r->offload = transports[i].offload;
	for (i = 1; i < NELEMS(roles); i++)
		if (strcmp(tok[2], roles[i].name) == 0)
			break;
	if (i == NELEMS(roles))
		return rule_fail(why, whylen, "'%s': role must be tcp_server, tcp_client, udp_receiver, udp_sender or udp_connect",
				 tok[2]);
	r->role = (uint8_t)i;
	return parse_endpoints(tok[3], r, why, whylen);
}

int
dpsock_rules_read_file(const char *path, struct dpsock_pl_rule *rules, unsigned int max,
		       unsigned int *n, char *why, size_t whylen,
		       void (*note)(void *arg, const char *msg), void *arg)
{
	struct dpsock_rule_scope sc;
	struct dpsock_pl_rule r;
	char line[512], reason[256];
	unsigned int lineno = 0;
	int rc = 0, e;
	FILE *f;

	f = fopen(path, "re");
	if (f == NULL) {
		e = -errno;
		if (why != NULL && whylen > 0)
			snprintf(why, whylen, "%s: %s", path, strerror(-e));
		return e;
	}
	dpsock_rule_scope_init(&sc);
	while (fgets(line, sizeof(line), f) != NULL) {
		size_t l = strlen(line);

		lineno++;
		if (l == sizeof(line) - 1 && line[l - 1] != '\n') {
			rc = -EINVAL;
			if (why != NULL && whylen > 0)
				snprintf(why, whylen, "%s:%u: line longer than %zu characters", path,
					 lineno, sizeof(line) - 2);
			break;
		}
		e = dpsock_rule_parse(line, &sc, &r, reason, sizeof(reason));
		if (e < 0) {
			rc = e;
			if (why != NULL && whylen > 0)
				snprintf(why, whylen, "%s:%u: %s", path, lineno, reason);
			break;
		}
		if (e == 2 && note != NULL) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s:%u: %s", path, lineno, reason);
			note(arg, msg);
		}
		if (e == 0 && *n >= max) {
			rc = -ENOSPC;
			if (why != NULL && whylen > 0)
				snprintf(why, whylen, "%s:%u: more than %u rules", path, lineno, max);
			break;
		}
		if (e == 0)
			rules[(*n)++] = r;
	}
	if (rc == 0 && ferror(f)) {
		rc = -EIO;
		if (why != NULL && whylen > 0)
			snprintf(why, whylen, "%s: read error", path);
	}
	fclose(f);
	return rc;
}

static bool
pattern_match(const char *pat, const char *name)
{
	if (pat[0] == '\0' || strcmp(pat, "*") == 0)
		return true;
	return name != NULL && fnmatch(pat, name, 0) == 0;
}

/* The first plen bits of a and b are equal. */
static bool
prefix6_equal(const uint8_t *a, const uint8_t *b, unsigned int plen)
{
	unsigned int full = plen / 8, rest = plen % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	return rest == 0 || ((a[full] ^ b[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

/* A rule's endpoint (IPv6 when rip6: raddr6) against a socket's (IPv6 when
 * ip6: addr6, NULL when not known). */
static bool
endpoint_match(uint8_t rip6, uint32_t raddr, const uint8_t *raddr6, uint8_t plen, uint16_t lo,
	       uint16_t hi, bool ip6, uint32_t addr, const uint8_t *addr6, uint16_t port)
{
	uint16_t p = ntohs(port);

	if (p < lo || p > hi)
		return false;
	if (rip6)
		return ip6 && (plen == 0 ||
			       (addr6 != NULL && prefix6_equal(raddr6, addr6, plen > 128 ? 128 : plen)));
	if (plen == 0)
		return true;   /* "*": either family */
	return !ip6 && (addr & prefix_mask(plen)) == (raddr & prefix_mask(plen));
}

bool
dpsock_rule_match(const struct dpsock_pl_rule *r, const struct dpsock_rule_subject *s)
{
	char prog[sizeof(r->prog) + 1], id[sizeof(r->app_id) + 1];

	if (r->role != s->role)
		return false;
	/* the fields come from shared memory: bounded copies */
	memcpy(prog, r->prog, sizeof(r->prog));
	prog[sizeof(r->prog)] = '\0';
	memcpy(id, r->app_id, sizeof(r->app_id));
	id[sizeof(r->app_id)] = '\0';
	if (!pattern_match(prog, s->prog) || !pattern_match(id, s->app_id))
		return false;
	if (!endpoint_match(r->ip6, r->addr, r->addr6, r->prefix_len, r->port_lo, r->port_hi,
			    s->ip6, s->addr, s->addr6, s->port))
		return false;
	if (roles[r->role].max_endpoints > 1 &&
	    !endpoint_match(r->lip6, r->laddr, r->laddr6, r->lprefix_len, r->lport_lo, r->lport_hi,
			    s->ip6, s->laddr, s->laddr6, s->lport))
		return false;
	return true;
}

static void
format_endpoint(char *buf, size_t len, uint8_t ip6, uint32_t addr, const uint8_t *addr6,
		uint8_t plen, uint16_t lo, uint16_t hi)
{
	char a[INET6_ADDRSTRLEN + 8] = "*", p[16] = "*";

	if (ip6) {
		a[0] = '[';
		inet_ntop(AF_INET6, addr6, a + 1, sizeof(a) - 1);
		snprintf(a + strlen(a), sizeof(a) - strlen(a), plen < 128 ? "/%u]" : "]", plen);
	} else if (plen > 0) {
		inet_ntop(AF_INET, &addr, a, sizeof(a));
		if (plen < 32)
			snprintf(a + strlen(a), sizeof(a) - strlen(a), "/%u", plen);
	}
	if (lo != 0 || hi != 65535)
		snprintf(p, sizeof(p), lo == hi ? "%u" : "%u-%u", lo, hi);
	snprintf(buf, len, "%s:%s", a, p);
}

void
dpsock_rule_format(const struct dpsock_pl_rule *r, char *buf, size_t len)
{
	char e1[72], e2[72] = "";
	bool two = r->role > 0 && (size_t)r->role < NELEMS(roles) &&
		   roles[r->role].max_endpoints > 1 &&
		   (r->lprefix_len != 0 || r->lip6 || r->lport_lo != 0 || r->lport_hi != 65535);

	format_endpoint(e1, sizeof(e1), r->ip6, r->addr, r->addr6, r->prefix_len, r->port_lo,
			r->port_hi);
	if (two) {
		e2[0] = ':';
		format_endpoint(e2 + 1, sizeof(e2) - 1, r->lip6, r->laddr, r->laddr6, r->lprefix_len,
				r->lport_lo, r->lport_hi);
	}
	snprintf(buf, len, "[%.32s %.32s] use %s %s %s%s", r->prog[0] ? r->prog : "*",
		 r->app_id[0] ? r->app_id : "*", r->offload ? "offload" : "os",
		 dpsock_rule_role_name(r->role), e1, e2);
}
