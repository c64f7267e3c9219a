/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * offload.c — the offload decision (the process's own rules, then
 * dpsockd's from its segment, then the addresses it serves) and opening a
 * socket's slots on the workers.
 */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <string.h>

#include "offload_rules.h"
#include "offload/offload_priv.h"
#include "mcast_filter.h"


void (*shim_sock_offloaded_hook)(struct shim_sock *s);

/* The object becomes offloaded with these slots; this process holds it. */
void
shim_sock_set_offloaded(struct shim_sock *s, int mode)
{
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, 0));
	void (*hook)(struct shim_sock *);

	/* a fresh slot: nobody else in the group knows it yet */
	for (int i = 0; i < SHIM_AREA_PIDS; i++)
		__atomic_store_n(&a->pids[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->pinned, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->closed, 0, __ATOMIC_RELAXED);
	shim_area_pid_add(a, (uint32_t)shim_getpid());
	/* identity for an exec()ed image: every slot of the socket. Relaxed:
	 * read by this process's next image (exec orders it) or by a forked
	 * child's (fork orders it). */
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct shim_slot_area *ai = shim_area(shim_sock_slot(s, i));

		__atomic_store_n(&ai->gen, s->gen[i], __ATOMIC_RELAXED);
		__atomic_store_n(&ai->ino, s->ino, __ATOMIC_RELAXED);
	}
	/* who opened it, for dpsock-stat (the worker copies it every 100 ms) */
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, i);

		__atomic_store_n(&sl->owner_pid, (int32_t)shim_getpid(), __ATOMIC_RELAXED);
		__atomic_store_n(&sl->owner_fd, s->fd0, __ATOMIC_RELAXED);
	}
	shim_fork_track(s);
	/* release: slots and geometry before mode (shim_sock_offloaded) */
	__atomic_store_n(&s->mode, mode, __ATOMIC_RELEASE);
	/* acquire: pairs with the release in comp.c's comp_self */
	hook = __atomic_load_n(&shim_sock_offloaded_hook, __ATOMIC_ACQUIRE);
	if (hook != NULL)
		hook(s);
}


/* ---- offload decision -------------------------------------------------------- */

static uint32_t
plen_mask(unsigned int plen)
{
	return plen == 0 ? 0 : htonl(~0u << (32 - (plen > 32 ? 32 : plen)));
}

/* The served address a client socket's traffic to addr leaves from, or
 * NULL, as the workers route: a subnet of one (its address), else the
 * longest route holding it (an address of the route's port), else an
 * address whose port has a default gateway. Points into *nv. */
static const struct dpsock_pl_iface *
iface_for(const struct dpsock_pl_netview *nv, uint32_t addr)
{
	const struct dpsock_pl_route *best = NULL;

	for (uint32_t i = 0; i < nv->n_ifaces; i++) {
		uint32_t m = plen_mask(nv->ifaces[i].prefix_len);

		if ((addr & m) == (nv->ifaces[i].addr & m))
			return &nv->ifaces[i];
	}
	for (uint32_t i = 0; i < nv->n_routes; i++) {
		const struct dpsock_pl_route *r = &nv->routes[i];

		if ((addr & plen_mask(r->prefix_len)) == r->dest &&
		    (best == NULL || r->prefix_len > best->prefix_len))
			best = r;
	}
	for (uint32_t i = 0; best != NULL && i < nv->n_ifaces; i++)
		if (nv->ifaces[i].port == best->iface)
			return &nv->ifaces[i];
	for (uint32_t i = 0; i < nv->n_ifaces; i++)
		if (nv->ifaces[i].gateway != 0)
			return &nv->ifaces[i];
	return NULL;
}

static bool
served(const struct dpsock_pl_netview *nv, int role, uint32_t addr)
{
	bool server = role == DPSOCK_PL_TCP_SERVER || role == DPSOCK_PL_UDP_RECEIVER;

	/* a group: bound to (receivers) or sent to (senders) on dpsockd's
	 * interfaces, unless IP_MULTICAST_IF chose a kernel one (udp.c) */
	if ((role == DPSOCK_PL_UDP_RECEIVER || role == DPSOCK_PL_UDP_SENDER ||
	     role == DPSOCK_PL_UDP_CONNECT) && dpsock_mc_is_group4(addr))
		return nv->n_ifaces > 0;
	if (!server)
		return iface_for(nv, addr) != NULL;
	if (addr == htonl(INADDR_ANY))
		return nv->n_ifaces > 0;
	for (uint32_t i = 0; i < nv->n_ifaces; i++)
		if (addr == nv->ifaces[i].addr)
			return true;
	return false;
}

/* ---- the process's own rules: DPSOCK_RULES_FILE, then add_conf_rule --------- */

static struct {
	pthread_mutex_t lock;     /* writers; readers take n (acquire) and read below it */
	pthread_once_t file_once;
	struct dpsock_rule_scope scope; /* add_conf_rule's application-id in force */
	unsigned int n;
	struct dpsock_pl_rule r[DPSOCK_PL_MAX_RULES];
} proc_rules = { .lock = PTHREAD_MUTEX_INITIALIZER, .file_once = PTHREAD_ONCE_INIT,
		 .scope = { "*", "*" } };

static void
rules_note(void *arg, const char *msg)
{
	(void)arg;
	SHIM_LOG(NOTICE, "%s", msg);
}

static void
rules_file_load(void)
{
	char why[384];
	unsigned int n = 0;
	int e;

	if (shim_env.rules_file[0] == '\0')
		return;
	pthread_mutex_lock(&proc_rules.lock);
	e = dpsock_rules_read_file(shim_env.rules_file, proc_rules.r, DPSOCK_PL_MAX_RULES, &n, why,
				   sizeof(why), rules_note, NULL);
	if (e < 0)
		SHIM_LOG(WARNING, "DPSOCK_RULES_FILE: %s: the file's rules are not used", why);
	else
		/* release: the rules before their count (decide's acquire) */
		__atomic_store_n(&proc_rules.n, n, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&proc_rules.lock);
}

int
shim_proc_rule_add(const char *line)
{
	struct dpsock_pl_rule r;
	char why[256];
	int e;

	shim_env_load();
	pthread_once(&proc_rules.file_once, rules_file_load);
	pthread_mutex_lock(&proc_rules.lock);
	e = dpsock_rule_parse(line, &proc_rules.scope, &r, why, sizeof(why));
	if (e < 0)
		SHIM_LOG(WARNING, "add_conf_rule '%s': %s", line, why);
	else if (e == 0 && proc_rules.n >= DPSOCK_PL_MAX_RULES)
		e = -ENOSPC;
	else if (e == 0) {
		proc_rules.r[proc_rules.n] = r;
		/* release: the rule before the count that shows it */
		__atomic_store_n(&proc_rules.n, proc_rules.n + 1, __ATOMIC_RELEASE);
	} else {
		e = 0;   /* application-id, comment, or an ignored statement */
	}
	pthread_mutex_unlock(&proc_rules.lock);
	return e;
}

/* The first matching rule of a list: 1 offload, 0 kernel, -1 none. */
static int
rules_decide(const struct dpsock_pl_rule *r, unsigned int n, const struct dpsock_rule_subject *sub,
	     const char *whose)
{
	static int logged_rule;

	for (unsigned int i = 0; i < n; i++) {
		char a[INET6_ADDRSTRLEN], text[256];

		if (!dpsock_rule_match(&r[i], sub))
			continue;
		if (!r[i].offload && !__atomic_exchange_n(&logged_rule, 1, __ATOMIC_RELAXED)) {
			dpsock_rule_format(&r[i], text, sizeof(text));
			SHIM_LOG(INFO, "%s rule '%s' keeps %s %s port %u in the kernel", whose, text,
				 dpsock_rule_role_name(sub->role),
				 sub->ip6 ? inet_ntop(AF_INET6, sub->addr6, a, sizeof(a)) :
				 inet_ntop(AF_INET, &sub->addr, a, sizeof(a)), ntohs(sub->port));
		}
		return r[i].offload != 0;
	}
	return -1;
}

/* The process's rules, then dpsockd's: 1, 0, or -1 when none decides. */
static int
rules_both(const struct dpsock_rule_subject *sub, const struct dpsock_pl_seg *g)
{
	int d;

	pthread_once(&proc_rules.file_once, rules_file_load);
	/* acquire: pairs with the release of the count in rules_file_load /
	 * shim_proc_rule_add */
	d = rules_decide(proc_rules.r, __atomic_load_n(&proc_rules.n, __ATOMIC_ACQUIRE), sub,
			 "this program's");
	if (d < 0)
		d = rules_decide(g->rules, g->n_rules < DPSOCK_PL_MAX_RULES ? g->n_rules :
				 DPSOCK_PL_MAX_RULES, sub, "dpsockd's");
	return d;
}

/* 1: offload, 0: kernel. Logs the reason once per kind. */
int
shim_offload_decide(int role, uint32_t addr, uint16_t port, uint32_t laddr, uint16_t lport)
{
	static int logged_local, logged_unserved;
	struct dpsock_rule_subject sub = {
		.prog = shim_env.prog, .app_id = shim_env.app_id, .role = role,
		.addr = addr, .port = port, .laddr = laddr, .lport = lport,
	};
	const struct dpsock_pl_seg *g;
	struct dpsock_pl_netview nv;
	char a[INET_ADDRSTRLEN];
	int d;

	/* 127.0.0.1 with DPSOCK_LOOPBACK: a TCP listener (with its kernel
	 * half) and a connect, which dpsockd refuses at once when none of its
	 * listeners has the port (the kernel's loopback then: tcp.c) */
	bool loop = shim_env.loopback > 0 && addr == htonl(INADDR_LOOPBACK) &&
		    (role == DPSOCK_PL_TCP_SERVER || role == DPSOCK_PL_TCP_CLIENT);

	if ((ntohl(addr) >> 24) == 127 && !loop) {
		if (!__atomic_exchange_n(&logged_local, 1, __ATOMIC_RELAXED))
			SHIM_LOG(INFO, "loopback addresses stay in the kernel%s",
				 shim_env.loopback > 0 ? " (DPSOCK_LOOPBACK: TCP to and on 127.0.0.1 only)" :
				 " (DPSOCK_LOOPBACK=1 offloads TCP on 127.0.0.1)");
		return 0;
	}
	if (shim_attach() < 0)
		return 0;
	g = shim_seg();
	shim_netview(&nv);
	if (loop && laddr == 0)
		sub.laddr = addr; /* from 127.0.0.1 */
	else if ((role == DPSOCK_PL_TCP_CLIENT || role == DPSOCK_PL_UDP_CONNECT) && laddr == 0) {
		/* not bound yet: the address dpsockd will give it */
		const struct dpsock_pl_iface *f = iface_for(&nv, addr);

		sub.laddr = f != NULL ? f->addr : 0;
	}
	d = rules_both(&sub, g);
	if (d >= 0)
		return d;
	if (loop || served(&nv, role, addr))
		return 1;
	if (!__atomic_exchange_n(&logged_unserved, 1, __ATOMIC_RELAXED))
		SHIM_LOG(INFO, "%s %s: not an address dpsockd serves; kernel socket",
			 dpsock_rule_role_name(role), inet_ntop(AF_INET, &addr, a, sizeof(a)));
	return 0;
}

bool
shim_serves_ip6(void)
{
	struct dpsock_pl_netview nv;

	if (shim_attach() < 0)
		return false;
	shim_netview(&nv);
	return nv.n_ifaces6 > 0;
}

/* The first served IPv6 address whose port has a default route, or NULL. */
static const struct dpsock_pl_iface6 *
default6(const struct dpsock_pl_netview *nv)
{
	for (uint32_t i = 0; i < nv->n_ifaces6 && i < DPSOCK_PL_MAX_ADDRS; i++)
		if (nv->ifaces6[i].flags & DPSOCK_PL_IF6_DEFAULT)
			return &nv->ifaces6[i];
	return NULL;
}

/* a and b share their first plen bits */
static bool
prefix6_eq(const uint8_t *a, const uint8_t *b, unsigned int plen)
{
	unsigned int n = plen > 128 ? 16 : plen / 8, rest = plen > 128 ? 0 : plen % 8;

	return memcmp(a, b, n) == 0 && (rest == 0 || ((a[n] ^ b[n]) & (0xff00 >> rest)) == 0);
}

/* addr in the prefix of a served IPv6 address (a server, a receiver: "::"
 * or one of them) */
static bool
served6(const struct dpsock_pl_netview *nv, int role, const struct in6_addr *addr)
{
	bool server = role == DPSOCK_PL_TCP_SERVER || role == DPSOCK_PL_UDP_RECEIVER;

	if ((server && IN6_IS_ADDR_UNSPECIFIED(addr)) || IN6_IS_ADDR_MULTICAST(addr))
		return nv->n_ifaces6 > 0;
	for (uint32_t i = 0; i < nv->n_ifaces6 && i < DPSOCK_PL_MAX_ADDRS; i++) {
		const struct dpsock_pl_iface6 *f = &nv->ifaces6[i];

		if (server ? memcmp(f->addr, addr, 16) == 0 :
		    prefix6_eq(f->addr, addr->s6_addr, f->prefix_len))
			return true;
	}
	/* a client's destination beyond every prefix: through a default route
	 * (not link-local ones, which need the program's scope id) */
	return !server && default6(nv) != NULL && !IN6_IS_ADDR_LINKLOCAL(addr) &&
	       !IN6_IS_ADDR_LOOPBACK(addr) && !IN6_IS_ADDR_V4MAPPED(addr);
}

int
shim_offload_decide6(int role, const struct in6_addr *addr, uint16_t port)
{
	static int logged_unserved;
	struct dpsock_rule_subject sub = {
		.prog = shim_env.prog, .app_id = shim_env.app_id, .role = role, .port = port,
		.ip6 = true, .addr6 = addr->s6_addr,
	};
	struct dpsock_pl_netview nv;
	char a[INET6_ADDRSTRLEN];
	int d;

	if (shim_attach() < 0)
		return 0;
	shim_netview(&nv);
	if (nv.n_ifaces6 == 0)
		return 0;   /* no IPv6 on dpsockd: the kernel's, rules or not */
	/* a client's local address: the address of the prefix it goes to,
	 * else the one of the port with a default route */
	for (uint32_t i = 0; role != DPSOCK_PL_TCP_SERVER && role != DPSOCK_PL_UDP_RECEIVER &&
			     i < nv.n_ifaces6 && i < DPSOCK_PL_MAX_ADDRS; i++)
		if (prefix6_eq(nv.ifaces6[i].addr, addr->s6_addr, nv.ifaces6[i].prefix_len))
			sub.laddr6 = nv.ifaces6[i].addr;
	if (sub.laddr6 == NULL && role != DPSOCK_PL_TCP_SERVER &&
	    role != DPSOCK_PL_UDP_RECEIVER && default6(&nv) != NULL)
		sub.laddr6 = default6(&nv)->addr;
	d = rules_both(&sub, shim_seg());
	if (d >= 0)
		return d;
	if (served6(&nv, role, addr))
		return 1;
	if (!__atomic_exchange_n(&logged_unserved, 1, __ATOMIC_RELAXED))
		SHIM_LOG(INFO, "%s %s: not an IPv6 address dpsockd serves; kernel socket",
			 dpsock_rule_role_name(role), inet_ntop(AF_INET6, addr, a, sizeof(a)));
	return 0;
}

int
shim_sock_setopt_all(struct shim_thread *t, struct shim_sock *s, int level, int name, int val)
{
	int first = 0;

	for (uint32_t i = 0; i < s->nslots; i++) {
		struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_SETOPT, .slot = s->slot[i],
					   .gen = s->gen[i] };
		struct dpsock_pl_reply r;
		int e;

		c.arg[0] = level;
		c.arg[1] = name;
		c.arg[2] = val;
		/* TCP_CONGESTION: the name, 16 bytes over arg2..arg5 */
		if (level == IPPROTO_TCP && name == TCP_CONGESTION)
			memcpy(&c.arg[2], s->cc, sizeof(s->cc));
		e = shim_cmd_call(t, shim_slot_worker(s->slot[i]), &c, &r);
		if (e == 0)
			e = r.result;
		if (first == 0)
			first = e;
	}
	return first;
}

/* The remembered options a worker needs, sent after the slot exists. */
void
shim_sock_push_opts(struct shim_thread *t, struct shim_sock *s)
{
	bool udp = s->type == SOCK_DGRAM;
	struct {
		int on, level, name, val;
	} opts[] = {
		{ s->nodelay, IPPROTO_TCP, TCP_NODELAY, s->nodelay },
		{ s->keepalive, SOL_SOCKET, SO_KEEPALIVE, s->keepalive },
		{ s->keepidle, IPPROTO_TCP, TCP_KEEPIDLE, s->keepidle },
		{ s->keepintvl, IPPROTO_TCP, TCP_KEEPINTVL, s->keepintvl },
		{ s->keepcnt, IPPROTO_TCP, TCP_KEEPCNT, s->keepcnt },
		{ s->tos, IPPROTO_IP, IP_TOS, s->tos },
		{ s->ttl != SHIM_UNSET, IPPROTO_IP, IP_TTL, s->ttl },
		{ udp && s->mc_ttl != SHIM_UNSET, IPPROTO_IP, IP_MULTICAST_TTL, s->mc_ttl },
		{ udp && s->mc_loop != SHIM_UNSET, IPPROTO_IP, IP_MULTICAST_LOOP, s->mc_loop },
		{ udp && s->mc_all != SHIM_UNSET, IPPROTO_IP, IP_MULTICAST_ALL, s->mc_all },
		{ udp && s->mc_if != SHIM_UNSET && !s->mc_if_kernel, IPPROTO_IP, IP_MULTICAST_IF,
		  s->mc_if },
		{ udp && s->mc6_hops != SHIM_UNSET, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, s->mc6_hops },
		{ udp && s->mc6_loop != SHIM_UNSET, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, s->mc6_loop },
		{ udp && s->mc6_all != SHIM_UNSET, IPPROTO_IPV6, IPV6_MULTICAST_ALL, s->mc6_all },
		{ udp && s->mc6_if != SHIM_UNSET, IPPROTO_IPV6, IPV6_MULTICAST_IF, s->mc6_if },
		{ udp && s->rcvbuf_eff != SHIM_UNSET, SOL_SOCKET, SO_RCVBUF, s->rcvbuf_eff },
	};

	for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
		if (opts[o].on)
			shim_sock_setopt_all(t, s, opts[o].level, opts[o].name, opts[o].val);
	/* the congestion control by name (shim_sock_setopt_all sends it) */
	if (s->cc[0] && s->type == SOCK_STREAM)
		shim_sock_setopt_all(t, s, IPPROTO_TCP, TCP_CONGESTION, 0);
	if (udp)
		shim_mc_replay(t, s);
}

/* LISTEN or UDP_BIND on every worker. Returns 0 or -errno. */
int
shim_sock_open_all(struct shim_sock *s, int op, uint32_t addr, uint16_t port,
		   unsigned int cflags)
{
	struct shim_thread *t = shim_thread_get();
	uint32_t n;

	if (t == NULL)
		return -errno;
	n = shim_proc.n_workers;
	for (uint32_t k = 0; k < n; k++) {
		struct dpsock_pl_cmd c = { .op = (uint16_t)op, .flags = (uint16_t)cflags,
					   .addr = addr, .port = port };
		struct dpsock_pl_reply r;
		int e;

		c.arg[0] = s->backlog;
		if (cflags & DPSOCK_PL_CMD_F_IP6)
			memcpy(c.addr6, &s->laddr6, 16);
		if (op == DPSOCK_PL_OP_UDP_BIND) {
			c.arg[1] = (s->reuseaddr ? DPSOCK_PL_BIND_REUSEADDR : 0) |
				   (s->reuseport ? DPSOCK_PL_BIND_REUSEPORT : 0);
			c.arg[2] = (int32_t)shim_getpid();
			c.arg[3] = s->fd0;
		}
		e = shim_cmd_call(t, k, &c, &r);
		if (e == 0)
			e = r.result;
		if (e == 0 && (!shim_slot_valid(r.slot) || shim_slot_worker(r.slot) != k))
			e = -EPROTO;
		if (e < 0) {
			for (uint32_t j = 0; j < k; j++) {
				struct dpsock_pl_cmd cl = { .op = DPSOCK_PL_OP_CLOSE,
							    .slot = s->slot[j], .gen = s->gen[j] };

				shim_cmd_post(t, j, &cl);
			}
			if (e == -ENOSPC)
				e = -EMFILE;
			if (e == -ENOBUFS)
				SHIM_LOG(WARNING, "dpsockd has no free socket slot (preload.slots): %s",
					 strerror(-e));
			return e;
		}
		s->slot[k] = r.slot;
		s->gen[k] = r.gen;
		if (op == DPSOCK_PL_OP_UDP_BIND && port == 0)
			port = r.port;   /* the same port on the other workers */
	}
	s->nslots = n;
	s->laddr = addr;
	s->lport = port;
	s->bound = 1;
	s->udp_tx_worker = t->worker;
	shim_sock_push_opts(t, s);
	return 0;
}
