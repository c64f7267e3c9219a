/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * offload_rules.h — the offload rule grammar (VMA's libvma.conf, read as
 * it is) compiled into struct dpsock_pl_rule (preload_wire.h), and the
 * matching. Compiled into dpsockd (dpsock.conf's offload.rules and
 * offload.rules_file) and into the shim (DPSOCK_RULES_FILE, the extra API's
 * add_conf_rule): libc only.
 *
 * Grammar, one statement per line; '#' starts a comment to the end of the
 * line; blank lines are skipped:
 *
 *   application-id PROGRAM [ID]
 *       The rules after it apply to programs whose name (no path) matches
 *       PROGRAM and whose application id (DPSOCK_APPLICATION_ID, default:
 *       the program name) matches ID; both are shell wildcards (* ? [..]),
 *       ID defaults to *. With one word, "application-id NAME" (dpsock's
 *       own form) matches NAME against the application id alone. Before
 *       any application-id line the rules apply to every program.
 *   use offload|vma|os ROLE ENDPOINT
 *       offload and vma are synonyms. ROLE and ENDPOINT:
 *         tcp_server    LOCAL          the address listen() is on
 *         udp_receiver  LOCAL          the address bind() is on
 *         udp_sender    REMOTE         the first sendto()'s destination
 *         tcp_client    REMOTE[:LOCAL] connect()'s destination and the
 *         udp_connect   REMOTE[:LOCAL]   socket's local address
 *       each of LOCAL/REMOTE is ADDR[/PREFIX]:PORT[-PORT], either part *;
 *       an IPv6 ADDR[/PREFIX] in brackets ([fd00::/64]:80; an IPv4-mapped
 *       one is its IPv4 address). VMA's client form
 *       remote:port:local:port, e.g. 192.168.1.0/24:*:*:*
 *       An address of one family matches only sockets of that family; *
 *       matches both.
 *   log ...
 *       VMA's log statement: accepted and ignored (the shim logs through
 *       DPSOCK_LOG_LEVEL / DPSOCK_LOG_FILE, dpsockd through log.level).
 *
 * The first rule that matches decides.
 */
#ifndef DPSOCK_ABI_OFFLOAD_RULES_H
#define DPSOCK_ABI_OFFLOAD_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "preload_wire.h"

/* The application-id statement in force while a file or list is read. */
struct dpsock_rule_scope {
	char prog[32];
	char app_id[32];
};

/* Rules apply to every program ("application-id * *"). */
void dpsock_rule_scope_init(struct dpsock_rule_scope *sc);

/*
 * Compile one line. Returns
 *   0        a use statement: *r filled (with sc's program and id)
 *   1        nothing to compile: blank, comment, application-id (sc updated)
 *   2        a statement dpsock accepts and ignores (log): why says so
 *   -EINVAL  anything else: why (size whylen) says what is wrong
 */
int dpsock_rule_parse(const char *line, struct dpsock_rule_scope *sc, struct dpsock_pl_rule *r,
		      char *why, size_t whylen);

/*
 * Read a libvma.conf-style file, appending its rules to rules[*n .. max).
 * note (may be NULL) gets "path:line: ..." for each ignored statement.
 * Returns 0; -errno of open/read (why: "path: reason"); -EINVAL (why:
 * "path:line: reason"); -ENOSPC (more than max rules in all).
 */
int dpsock_rules_read_file(const char *path, struct dpsock_pl_rule *rules, unsigned int max,
			   unsigned int *n, char *why, size_t whylen,
			   void (*note)(void *arg, const char *msg), void *arg);

/* What a rule is matched against. Addresses and ports in network order;
 * laddr/lport: the socket's local address (0: not bound yet). An IPv6
 * socket (ip6) has addr6 and laddr6 (NULL: not known yet) instead. */
struct dpsock_rule_subject {
	const char *prog;         /* program name, no path */
	const char *app_id;       /* DPSOCK_APPLICATION_ID, or the program name */
	int role;                 /* enum dpsock_pl_role */
	uint32_t addr;
	uint16_t port;
	uint32_t laddr;
	uint16_t lport;
	bool ip6;
	const uint8_t *addr6;     /* 16 bytes */
	const uint8_t *laddr6;
};

bool dpsock_rule_match(const struct dpsock_pl_rule *r, const struct dpsock_rule_subject *s);

/* "tcp_server"...; "?" for a number that is no role. */
const char *dpsock_rule_role_name(int role);

/* The rule back in the grammar ("use os tcp_client 10.0.0.0/8:*:*:*",
 * program and id as a prefix "[prog id] "), for logs and tests. */
void dpsock_rule_format(const struct dpsock_pl_rule *r, char *buf, size_t len);

#endif /* DPSOCK_ABI_OFFLOAD_RULES_H */
