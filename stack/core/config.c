/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock.conf parser.
 *
 * One table per struct (conf_main_keys for struct dpsock_config,
 * conf_iface_keys for struct dpsock_iface_conf) drives everything: the
 * defaults, the parser, the "non-default settings" banner and the help text.
 * Adding a key is adding a row. Cross-field rules that a row cannot express
 * (gateway inside the subnet, mempool cache vs pool size) live in the
 * *_validate functions below the table.
 *
 * Deliberately free of DPDK headers: it is linked into unit tests that have
 * no EAL. Log levels use DPDK's numbering (RTE_LOG_EMERG = 1 ... DEBUG = 8).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_priv.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define FIELD_SIZE(st, f) (sizeof(((st *)0)->f))

#define CONF_LCORE_MAX 1023     /* highest lcore id accepted in "workers" */
#define CONF_MEMPOOL_CACHE_MAX 512 /* RTE_MEMPOOL_CACHE_MAX_SIZE */
/* runtime_dir + "/" + name + a suffix must fit sun_path (108 bytes) */
#define CONF_RUNTIME_DIR_LEN_MAX 64
#define CONF_NAME_LEN_MAX (DPSOCK_NAME_MAX - 1)
#define CONF_PORT_LEN_MAX (DPSOCK_PORT_NAME_MAX - 1)
/* one group's segment may reserve at most this much address space per
 * worker (a sparse memfd: memory is used as sockets open); dpsockd lowers
 * preload.slots at start where every group's reservation would not fit
 * its address space (daemon/clients.c) */
#define CONF_PL_SEG_PER_WORKER_MAX (4ull << 40)

_Static_assert(CONF_RUNTIME_DIR_LEN_MAX < FIELD_SIZE(struct dpsock_config, runtime_dir),
	       "runtime_dir limit does not fit the field");
_Static_assert(CONF_NAME_LEN_MAX < FIELD_SIZE(struct dpsock_config, name),
	       "name limit does not fit the field");
_Static_assert(CONF_PORT_LEN_MAX < FIELD_SIZE(struct dpsock_iface_conf, port),
	       "port limit does not fit the field");

enum conf_type {
	CONF_UINT,        /* unsigned integer, field of 1, 2, 4 or 8 bytes */
	CONF_BOOL,        /* bool field */
	CONF_STRING,      /* char[] field; min/max = length limits */
	CONF_LOG_LEVEL,   /* "info" or 1..8, uint32_t field */
	CONF_LOG_MODULES, /* group of module = level (struct dpsock_config only) */
	CONF_LCORE_LIST,  /* [ lcore, ... ] (struct dpsock_config only) */
	CONF_IPV4_ADDR,   /* "a.b.c.d", uint32_t network order; 0 = none */
	CONF_IPV4_PREFIX, /* "a.b.c.d/len": uint32_t at off, uint8_t at off2 */
	CONF_IPV6_PREFIX, /* "v6addr/len" (len <= 64): uint8_t[16] at off, uint8_t at off2; all 0 = none */
	CONF_IPV6_ADDR,   /* "v6addr" (link-local too): uint8_t[16]; all 0 = none */
	CONF_IFACE_LIST,  /* ( { iface }, ... ) (struct dpsock_config only) */
	CONF_UID_LIST,    /* [ uid, ... ] (struct dpsock_config only) */
	CONF_RULE_LIST,   /* [ "rule line", ... ] (struct dpsock_config only) */
	CONF_ROUTE_LIST,  /* [ "DEST/LEN via GATEWAY", ... ] (struct dpsock_config only) */
};

#define CONF_F_REQUIRED 0x1u /* must be present (no default) */
#define CONF_F_POW2 0x2u     /* CONF_UINT: power of two */
#define CONF_F_QUIET 0x4u    /* an interface key the banner shows only when not its default */

struct conf_key {
	const char *key;     /* path inside its table: "memory.mbufs" */
	enum conf_type type;
	unsigned int flags;  /* CONF_F_* */
	size_t off;          /* offsetof the field */
	size_t size;         /* sizeof the field */
	size_t off2;         /* CONF_IPV[46]_PREFIX: offsetof the prefix length */
	uint64_t def;        /* default: uint, bool, log level, ipv4 (host order) */
	const char *def_str; /* default: string */
	uint64_t min, max;   /* uint: value range; string: length range */
	/* CONF_STRING: returns why the value is bad, or NULL */
	const char *(*check)(const char *v);
	const char *help;
};

static const char *check_name(const char *v);
static const char *check_abs_path(const char *v);
static const char *check_abs_path_or_empty(const char *v);
static const char *check_port(const char *v);
static const char *check_steering(const char *v);
static const char *check_yield(const char *v);
static const char *check_segmentation(const char *v);
static const char *check_congestion(const char *v);

#define K_UINT(st, k, f, d, lo, hi, fl, h)                                     \
	{ .key = (k), .type = CONF_UINT, .flags = (fl), .off = offsetof(st, f), \
	  .size = FIELD_SIZE(st, f), .def = (d), .min = (lo), .max = (hi),     \
	  .help = (h) }
/* hi must be below sizeof(field): checked by the static_asserts below */
#define K_STR(st, k, f, d, lo, hi, chk, fl, h)                                 \
	{ .key = (k), .type = CONF_STRING, .flags = (fl),                      \
	  .off = offsetof(st, f), .size = FIELD_SIZE(st, f), .def_str = (d),   \
	  .min = (lo), .max = (hi), .check = (chk), .help = (h) }
#define K_SPECIAL(st, k, t, f, d, fl, h)                                       \
	{ .key = (k), .type = (t), .flags = (fl), .off = offsetof(st, f),      \
	  .size = FIELD_SIZE(st, f), .def = (d), .help = (h) }

#define DC struct dpsock_config
#define DI struct dpsock_iface_conf

static const struct conf_key conf_main_keys[] = {
	K_STR(DC, "name", name, "dpsock", 1, CONF_NAME_LEN_MAX, check_name, 0,
	      "instance name ([A-Za-z0-9_-]): shared memory names, dpsock-stat -n"),
	K_STR(DC, "runtime_dir", runtime_dir, "/run/dpsock", 1, CONF_RUNTIME_DIR_LEN_MAX, check_abs_path, 0,
	      "directory of the control socket (absolute, at most 64 characters)"),
	K_SPECIAL(DC, "log.level", CONF_LOG_LEVEL, log_level, 7, 0,
		  "log level of every dpsock module: emerg alert crit error warning notice info debug, or 1..8"),
	K_SPECIAL(DC, "log.modules", CONF_LOG_MODULES, log_modules, 0, 0,
		  "per-module log levels, { pmd = \"debug\"; ... }; module names [a-z0-9_]"),
	K_SPECIAL(DC, "workers", CONF_LCORE_LIST, workers, 0, 0,
		  "EAL lcore ids running a worker (0..1023, unique); empty = every EAL worker lcore, or the main lcore alone"),
	K_UINT(DC, "memory.mbufs", mbufs, 16383, 511, (1u << 24) - 1, 0,
	       "mbufs in each port's pool (best as 2^n - 1)"),
	K_UINT(DC, "memory.mbuf_cache", mbuf_cache, 256, 0, CONF_MEMPOOL_CACHE_MAX, 0,
	       "per-lcore mempool cache (mbufs); at most mbufs / 1.5"),
	K_UINT(DC, "memory.rx_desc", rx_desc, 1024, 64, 32768, CONF_F_POW2,
	       "RX descriptors per queue (the PMD may adjust it)"),
	K_UINT(DC, "memory.tx_desc", tx_desc, 1024, 64, 32768, CONF_F_POW2,
	       "TX descriptors per queue (the PMD may adjust it)"),
	K_UINT(DC, "memory.steer_ring", steer_ring, 1024, 64, 65536, CONF_F_POW2,
	       "per-worker software steering ring (mbufs)"),
	K_UINT(DC, "worker.rx_burst", rx_burst, 32, 1, 512, 0,
	       "packets per rx_burst call"),
	K_STR(DC, "worker.yield", yield, "auto", 1, 7, check_yield, 0,
	      "when a polling worker gives its CPU away (sched_yield): auto (once, right after "
	      "it woke a preloaded thread that sleeps on its CPU), never, or always (that, and "
	      "on every idle pass: other threads of unknown needs share its CPU)"),
	K_UINT(DC, "worker.idle_poll_us", idle_poll_us, 200, 0, 1000000, 0,
	       "keep polling this long after the last work before sleeping (0 = sleep at once)"),
	K_UINT(DC, "worker.idle_sleep_max_us", idle_sleep_max_us, 1000, 1, 100000, 0,
	       "longest single sleep of an idle worker whose ports cannot wake it (AF_XDP "
	       "queues wake it when a frame arrives: it then sleeps until its next timer)"),
	K_UINT(DC, "memory.lwip_mb", lwip_mb, 256, 16, 65536, 0,
	       "memory each worker's lwIP may hold (MiB); past it new connections are refused"),
	K_UINT(DC, "tcp.ephemeral_min", ephemeral_min, 32768, 1024, 65535, 0,
	       "lowest local port an active open may choose"),
	K_UINT(DC, "tcp.ephemeral_max", ephemeral_max, 60999, 1024, 65535, 0,
	       "highest local port an active open may choose"),
	K_UINT(DC, "tcp.max_connections", max_connections, 65536, 1, 1048576, 0,
	       "connections per worker; a SYN beyond it is answered with RST"),
	K_STR(DC, "tcp.steering", steering, "auto", 1, 15, check_steering, 0,
	      "active-open steering: auto (probe), toeplitz, rte_flow or software"),
	K_STR(DC, "tcp.segmentation", segmentation, "auto", 1, 7, check_segmentation, 0,
	      "who cuts TCP data into MSS-sized frames: auto (the port's TSO, else lwIP), "
	      "tso (the port's TSO, else lwIP), gso (the port's TSO, else the netif's software GSO), "
	      "lwip (lwIP, one segment per MSS)"),
	K_SPECIAL(DC, "tcp.gro", CONF_BOOL, gro, 1, 0,
		  "merge the in-order TCP segments of a flow within a receive burst before lwIP "
		  "(one lwIP input and one ACK decision per burst)"),
	K_STR(DC, "tcp.congestion", congestion, "cubic", 1, 15, check_congestion, 0,
	      "congestion control of new connections: cubic or reno (newreno); TCP_CONGESTION sets it per socket"),
	K_SPECIAL(DC, "tcp.pacing", CONF_BOOL, pacing, 0, 0,
		  "pace new data at 2x (slow start) or 1.2x cwnd/RTT, in bursts of 1 ms (Linux's internal pacing); off: as Linux's CUBIC"),
	K_UINT(DC, "stats.socket_slots", socket_slots, 4096, 0, 65536, 0,
	       "sockets each worker lists in the stats segment (dpsock-stat -v sockets); 0 = none"),
	K_SPECIAL(DC, "routes", CONF_ROUTE_LIST, routes, 0, 0,
		  "static routes, [ \"DEST/LEN via GATEWAY\", ... ]: what no interface's subnet holds goes to the gateway of the longest matching prefix (on the interface whose subnet holds that gateway), before the interfaces' default gateway"),
	K_SPECIAL(DC, "interfaces", CONF_IFACE_LIST, ifaces, 0, CONF_F_REQUIRED,
		  "ports and their addresses, ( { port = ...; address = ...; }, ... ); 1..4 entries"),
	K_SPECIAL(DC, "preload.allowed_uids", CONF_UID_LIST, allowed_uids, 0, 0,
		  "uids that may attach preloaded programs, [ 1000, ... ]; root always may; empty = root and the daemon's own uid"),
	K_UINT(DC, "preload.max_groups", pl_max_groups, 64, 1, 1024, 0,
	       "process groups (a process and the children it forks) attached at once"),
	K_UINT(DC, "preload.max_threads", pl_max_threads, 1024, 1, 16384, 0,
	       "channels per group: threads of its processes that use offloaded sockets "
	       "(address space is reserved for them; memory is used as threads come)"),
	K_UINT(DC, "preload.slots", pl_slots, 65536, 16, 1u << 20, 0,
	       "sockets per worker per group (a listener and a UDP socket take one on every "
	       "worker): a reservation of address space, memory is used as sockets open; "
	       "dpsockd lowers it at start where every group's reservation would not fit"),
	K_UINT(DC, "preload.rx_fifo_kb", pl_rx_fifo_kb, 128, 4, 65536, CONF_F_POW2,
	       "receive FIFO of each preloaded socket (KiB): at most what it holds; its pages "
	       "are used as bytes arrive and given back once it drained"),
	K_UINT(DC, "preload.tx_fifo_kb", pl_tx_fifo_kb, 1024, 4, 65536, CONF_F_POW2,
	       "send FIFO of each preloaded socket (KiB): at most what a program queues "
	       "before a send blocks; pages used and given back as for rx_fifo_kb"),
	K_UINT(DC, "preload.poll_batch", pl_poll_batch, 32, 1, 1024, 0,
	       "commands a worker takes from one client ring per loop iteration"),
	K_SPECIAL(DC, "preload.cut_through", CONF_BOOL, pl_cut_through, 1, 0,
		  "a TCP connection between two preloaded sockets of this instance (within the "
		  "host) moves its bytes from one's send FIFO into the other's receive FIFO; "
		  "its handshake and end still go through lwIP's loop. false: every byte too"),
	K_SPECIAL(DC, "offload.rules", CONF_RULE_LIST, rules, 0, 0,
		  "offload rules in libvma.conf's grammar, [ \"application-id PROGRAM [ID]\", \"use offload|vma|os ROLE ADDR[/LEN]:PORT[-PORT][:LADDR[/LEN]:LPORT[-LPORT]]\", ... ]; first match decides"),
	K_STR(DC, "offload.rules_file", rules_file, "", 0, CONF_RULES_FILE_LEN_MAX, check_abs_path_or_empty, 0,
	      "a libvma.conf-style rules file, read as it is (absolute path); its rules follow offload.rules"),
};

static const struct conf_key conf_iface_keys[] = {
	K_STR(DI, "port", port, NULL, 1, CONF_PORT_LEN_MAX, check_port, CONF_F_REQUIRED,
	      "DPDK port: PCI address or vdev name as given to EAL ([A-Za-z0-9_:.-])"),
	{ .key = "address", .type = CONF_IPV4_PREFIX,
	  .off = offsetof(DI, addr), .size = FIELD_SIZE(DI, addr),
	  .off2 = offsetof(DI, prefix_len),
	  .help = "IPv4 address and prefix length, a.b.c.d/len: dpsock owns the port alone and "
		  "answers ARP; absent = the port is shared with the kernel, whose netdev's "
		  "addresses, MTU, routes and neighbours it follows" },
	{ .key = "address6", .type = CONF_IPV6_PREFIX,
	  .off = offsetof(DI, addr6), .size = FIELD_SIZE(DI, addr6),
	  .off2 = offsetof(DI, prefix6_len), .flags = CONF_F_QUIET,
	  .help = "IPv6 address and prefix length, v6addr/len (len 64 or shorter), beside address "
		  "(an owned port): NDP, ICMPv6, TCP and UDP over IPv6; the link-local address "
		  "comes from the MAC; absent = IPv4 only" },
	{ .key = "gateway6", .type = CONF_IPV6_ADDR,
	  .off = offsetof(DI, gateway6), .size = FIELD_SIZE(DI, gateway6), .flags = CONF_F_QUIET,
	  .help = "IPv6 default gateway (with address6): link-local, or inside address6's prefix; "
		  "absent = the routers the link advertises" },
	{ .key = "gateway", .type = CONF_IPV4_ADDR,
	  .off = offsetof(DI, gateway), .size = FIELD_SIZE(DI, gateway),
	  .help = "default gateway, inside the interface subnet; absent = none (with address only)" },
	K_UINT(DI, "mtu", mtu, 1500, 68, 9000, 0, "IP MTU (bytes; with address only: a shared "
	       "interface has its netdev's)"),
	K_UINT(DI, "vlan", vlan, 0, 0, 4094, CONF_F_QUIET,
	       "802.1Q VLAN id: the interface sends tagged frames and takes only frames of this VLAN; 0 = untagged"),
	K_UINT(DI, "vlan_priority", vlan_priority, 0, 0, 7, CONF_F_QUIET,
	       "802.1p priority (PCP) in the tag of the frames the interface sends (needs vlan)"),
};

#undef DC
#undef DI

#define MAIN_NKEYS ARRAY_SIZE(conf_main_keys)
#define IFACE_NKEYS ARRAY_SIZE(conf_iface_keys)

/* ---------------------------------------------------------------------- */
/* log levels */

static const char *const log_level_names[] = {
	[1] = "emerg", [2] = "alert", [3] = "crit", [4] = "error",
	[5] = "warning", [6] = "notice", [7] = "info", [8] = "debug",
};

int
dpsock_log_level_parse(const char *s)
{
	static const struct { const char *name; int level; } aliases[] = {
		{ "emergency", 1 }, { "critical", 3 }, { "err", 4 }, { "warn", 5 },
	};
	size_t i;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	if (s[0] >= '1' && s[0] <= '8' && s[1] == '\0')
		return s[0] - '0';
	for (i = 1; i < ARRAY_SIZE(log_level_names); i++)
		if (strcasecmp(s, log_level_names[i]) == 0)
			return (int)i;
	for (i = 0; i < ARRAY_SIZE(aliases); i++)
		if (strcasecmp(s, aliases[i].name) == 0)
			return aliases[i].level;
	return -EINVAL;
}

const char *
dpsock_log_level_name(uint32_t level)
{
	if (level < 1 || level >= ARRAY_SIZE(log_level_names))
		return "invalid";
	return log_level_names[level];
}

/* ---------------------------------------------------------------------- */
/* value checks and helpers */

static const char *
check_chars(const char *v, const char *extra)
{
	for (; *v != '\0'; v++)
		if (!isalnum((unsigned char)*v) && strchr(extra, *v) == NULL)
			return "contains a character that is not allowed";
	return NULL;
}

static const char *
check_name(const char *v)
{
	return check_chars(v, "_-") ?
		"must contain only letters, digits, '_' and '-'" : NULL;
}

static const char *
check_abs_path(const char *v)
{
	return v[0] == '/' ? NULL : "must be an absolute path";
}

static const char *
check_abs_path_or_empty(const char *v)
{
	return v[0] == '\0' ? NULL : check_abs_path(v);
}

static const char *
check_port(const char *v)
{
	return check_chars(v, "_:.-") ?
		"must be a PCI address or vdev name (letters, digits, '_', ':', '.', '-'); device arguments belong on the EAL command line" :
		NULL;
}

/* NULL when v is one of the NULL-terminated names, else why. */
static const char *
check_one_of(const char *v, const char *const *names, const char *why)
{
	for (; *names != NULL; names++)
		if (strcmp(v, *names) == 0)
			return NULL;
	return why;
}

static const char *
check_steering(const char *v)
{
	static const char *const names[] = { "auto", "toeplitz", "rte_flow", "software", NULL };

	return check_one_of(v, names, "must be auto, toeplitz, rte_flow or software");
}

static const char *
check_yield(const char *v)
{
	static const char *const names[] = { "auto", "never", "always", NULL };

	return check_one_of(v, names, "must be auto, never or always");
}

static const char *
check_segmentation(const char *v)
{
	static const char *const names[] = { "auto", "tso", "gso", "lwip", NULL };

	return check_one_of(v, names, "must be auto, tso, gso or lwip");
}

/* The modules of lwip/tcp_cc.c (not linked into the config test). */
static const char *
check_congestion(const char *v)
{
	static const char *const names[] = { "cubic", "reno", "newreno", NULL };

	return check_one_of(v, names, "must be cubic or reno (newreno)");
}

/* Build a key path; long user-supplied names are cut, never overflow. */
static void __attribute__((format(printf, 3, 4)))
pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static bool
is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

static uint32_t
prefix_mask(unsigned int len)
{
	return len == 0 ? 0 : (uint32_t)(0xffffffffu << (32 - len));
}

static void
store_uint(void *p, size_t size, uint64_t v)
{
	switch (size) {
	case 1: *(uint8_t *)p = (uint8_t)v; break;
	case 2: *(uint16_t *)p = (uint16_t)v; break;
	case 4: *(uint32_t *)p = (uint32_t)v; break;
	default: *(uint64_t *)p = v; break;
	}
}

static uint64_t
load_uint(const void *p, size_t size)
{
	switch (size) {
	case 1: return *(const uint8_t *)p;
	case 2: return *(const uint16_t *)p;
	case 4: return *(const uint32_t *)p;
	default: return *(const uint64_t *)p;
	}
}

/* "1,2,3" (as many as fit), or empty_text for an empty list. */
static void
format_u32_list(char *buf, size_t len, const uint32_t *v, unsigned int n, const char *empty_text)
{
	size_t used = 0;
	unsigned int i;

	if (n == 0)
		snprintf(buf, len, "%s", empty_text);
	for (i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? "," : "", v[i]);
}

static void
format_ipv4(uint32_t host_order, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", host_order >> 24,
		 (host_order >> 16) & 0xff, (host_order >> 8) & 0xff,
		 host_order & 0xff);
}

/* Strict dotted quad (inet_pton rejects leading zeros and short forms). */
static int
parse_ipv4(const char *s, uint32_t *host_order)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*host_order = ntohl(a.s_addr);
	return 0;
}

/* Why an IPv6 address cannot be an interface's global address, or NULL. */
static const char *
ipv6_unicast_why(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return "is the unspecified address (::), not a host address";
	if (IN6_IS_ADDR_LOOPBACK(a))
		return "is the loopback address";
	if (IN6_IS_ADDR_MULTICAST(a))
		return "is a multicast address";
	if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a))
		return "is an IPv4-mapped or -compatible address, not an IPv6 host address";
	if (IN6_IS_ADDR_LINKLOCAL(a))
		return "is link-local (fe80::/10): the interface's link-local address comes from its MAC";
	return NULL;
}

/* Why a host address cannot be used, or NULL. */
static const char *
ipv4_unicast_why(uint32_t a)
{
	if ((a >> 24) == 0)
		return "is in 0.0.0.0/8 (\"this network\"), not a host address";
	if ((a >> 24) == 127)
		return "is a loopback address";
	if ((a >> 28) == 0xe)
		return "is a multicast address";
	if ((a >> 28) == 0xf)
		return "is a reserved or broadcast address";
	return NULL;
}

static const char *
type_name(int t)
{
	switch (t) {
	case CONFIG_TYPE_GROUP: return "a group";
	case CONFIG_TYPE_INT: return "an integer";
	case CONFIG_TYPE_INT64: return "an integer";
	case CONFIG_TYPE_FLOAT: return "a float";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL: return "a boolean";
	case CONFIG_TYPE_ARRAY: return "an array";
	case CONFIG_TYPE_LIST: return "a list";
	default: return "nothing";
	}
}

/* Edit distance with adjacent transpositions (optimal string alignment). */
static unsigned int
edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned int d[DPSOCK_NAME_MAX + 1][DPSOCK_NAME_MAX + 1];

	if (la > DPSOCK_NAME_MAX || lb > DPSOCK_NAME_MAX)
		return 1000;
	for (i = 0; i <= la; i++)
		d[i][0] = (unsigned int)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (unsigned int)j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			unsigned int cost = a[i - 1] != b[j - 1];
			unsigned int v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

/* ---------------------------------------------------------------------- */
/* parser */

struct parse_ctx {
	const char *name; /* file name for messages */
	char *err;
	size_t errlen;
};

/* One table applied to one struct. */
struct scope {
	const struct conf_key *keys;
	size_t nkeys;
	void *base;
	const char *prefix; /* key path prefix in messages: "", "interfaces[0]." */
	const config_setting_t **seen; /* per key: the setting, or NULL */
};

static int
fail_at(struct parse_ctx *p, const char *file, int line, const char *path,
	const char *fmt, ...)
{
	char why[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (p->err == NULL || p->errlen == 0)
		return -EINVAL;
	if (file == NULL)
		file = p->name;
	if (line > 0)
		snprintf(p->err, p->errlen, "%s:%d: %s: %s", file, line, path, why);
	else
		snprintf(p->err, p->errlen, "%s: %s: %s", file, path, why);
	return -EINVAL;
}

#define fail(p, s, path, ...)                                                  \
	fail_at((p), config_setting_source_file(s),                            \
		(int)config_setting_source_line(s), (path), __VA_ARGS__)

static int
get_uint(struct parse_ctx *p, const config_setting_t *s, const char *path,
	 uint64_t lo, uint64_t hi, int64_t *out)
{
	int t = config_setting_type(s);
	int64_t v;

	if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
		return fail(p, s, path, "expected an integer, got %s", type_name(t));
	v = t == CONFIG_TYPE_INT ? config_setting_get_int(s) :
		config_setting_get_int64(s);
	if (v < 0 || (uint64_t)v < lo || (uint64_t)v > hi)
		return fail(p, s, path, "must be between %" PRIu64 " and %" PRIu64
			    " (got %" PRId64 ")", lo, hi, v);
	*out = v;
	return 0;
}

static int
get_string(struct parse_ctx *p, const config_setting_t *s, const char *path,
	   const char **out)
{
	int t = config_setting_type(s);

	if (t != CONFIG_TYPE_STRING)
		return fail(p, s, path, "expected a string, got %s", type_name(t));
	*out = config_setting_get_string(s);
	return 0;
}

static int
get_log_level(struct parse_ctx *p, const config_setting_t *s, const char *path,
	      uint32_t *out)
{
	int t = config_setting_type(s), lvl;
	const char *str = NULL;
	int64_t v;

	if (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) {
		if (get_uint(p, s, path, 1, 8, &v) < 0)
			return -EINVAL;
		*out = (uint32_t)v;
		return 0;
	}
	if (get_string(p, s, path, &str) < 0)
		return -EINVAL;
	lvl = dpsock_log_level_parse(str);
	if (lvl < 0)
		return fail(p, s, path, "unknown log level '%s' (expected emerg, alert, crit, error, warning, notice, info, debug or 1..8)",
			    str);
	*out = (uint32_t)lvl;
	return 0;
}

static int
parse_log_modules(struct parse_ctx *p, struct dpsock_config *c,
		  const config_setting_t *s, const char *path)
{
	int i, n;

	if (!config_setting_is_group(s))
		return fail(p, s, path, "expected a group of module = level, like { pmd = \"debug\"; }, got %s",
			    type_name(config_setting_type(s)));
	n = config_setting_length(s);
	c->n_log_modules = 0;
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		const char *mod = config_setting_name(e);
		struct dpsock_log_module_conf *m;
		char epath[128];
		const char *c1;

		pathf(epath, sizeof(epath), "%s.%s", path, mod);
		for (c1 = mod; *c1 != '\0'; c1++)
			if (!islower((unsigned char)*c1) &&
			    !isdigit((unsigned char)*c1) && *c1 != '_')
				return fail(p, e, epath, "module names may contain only a-z, 0-9 and '_'");
		if (strlen(mod) >= DPSOCK_NAME_MAX)
			return fail(p, e, epath, "module name longer than %d characters",
				    DPSOCK_NAME_MAX - 1);
		if (c->n_log_modules >= DPSOCK_LOG_MODULE_MAX)
			return fail(p, e, epath, "at most %d log modules", DPSOCK_LOG_MODULE_MAX);
		m = &c->log_modules[c->n_log_modules];
		if (get_log_level(p, e, epath, &m->level) < 0)
			return -EINVAL;
		snprintf(m->module, sizeof(m->module), "%s", mod);
		c->n_log_modules++;
	}
	return 0;
}

/* The messages of one kind of id list. */
struct id_list_words {
	const char *what;   /* one element: "lcore" */
	const char *list;   /* the list, with an example: "lcore ids, like [ 1, 2 ]" */
	const char *many;   /* what the length limits: "workers" */
};

/* A list of distinct unsigned ids, each at most max_v, at most max_n of
 * them, into out[] / *n_out. */
static int
parse_id_list(struct parse_ctx *p, const config_setting_t *s, const char *path,
	      const struct id_list_words *words, int max_n, int64_t max_v, uint32_t *out,
	      unsigned int *n_out)
{
	int t = config_setting_type(s), i, j, n;
	const char *what = words->what;

	if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
		return fail(p, s, path, "expected a list of %s, got %s", words->list,
			    type_name(t));
	n = config_setting_length(s);
	if (n > max_n)
		return fail(p, s, path, "at most %d %s (got %d)", max_n, words->many, n);
	*n_out = 0;
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		char epath[64];
		int64_t v;

		pathf(epath, sizeof(epath), "%s[%d]", path, i);
		if (get_uint(p, e, epath, 0, max_v, &v) < 0)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (out[j] == (uint32_t)v)
				return fail(p, e, epath, "%s %" PRId64 " is listed twice (also %s[%d])",
					    what, v, path, j);
		out[(*n_out)++] = (uint32_t)v;
	}
	return 0;
}

static int
parse_lcore_list(struct parse_ctx *p, struct dpsock_config *c,
		 const config_setting_t *s, const char *path)
{
	static const struct id_list_words words = { "lcore", "lcore ids, like [ 1, 2 ]",
						    "workers" };

	return parse_id_list(p, s, path, &words, DPSOCK_MAX_WORKERS, CONF_LCORE_MAX, c->workers,
			     &c->n_workers);
}

static int parse_iface_list(struct parse_ctx *p, struct dpsock_config *c,
			    const config_setting_t *s, const char *path);

static int
parse_uid_list(struct parse_ctx *p, struct dpsock_config *c,
	       const config_setting_t *s, const char *path)
{
	static const struct id_list_words words = { "uid", "uids, like [ 1000, 1001 ]", "uids" };

	/* (uid_t)-1 means "no change" to chown and friends: not a uid */
	return parse_id_list(p, s, path, &words, DPSOCK_MAX_UIDS, 0xfffffffeu, c->allowed_uids,
			     &c->n_allowed_uids);
}

/* ---------------------------------------------------------------------- */
/* offload rules (libvma.conf grammar: abi/offload_rules.c) */

static int
parse_rule_list(struct parse_ctx *p, struct dpsock_config *c,
		const config_setting_t *s, const char *path)
{
	int t = config_setting_type(s), i, n, rc;
	struct dpsock_rule_scope scope;

	if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
		return fail(p, s, path, "expected a list of rule strings, like [ \"use os tcp_server *:22\" ], got %s",
			    type_name(t));
	n = config_setting_length(s);
	c->n_rules = 0;
	dpsock_rule_scope_init(&scope);
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		const config_setting_t *at = config_setting_source_line(e) > 0 ? e : s;
		char epath[64], why[256];
		struct dpsock_pl_rule rule;
		const char *str;

		pathf(epath, sizeof(epath), "%s[%d]", path, i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			return fail(p, at, epath, "expected a string, got %s",
				    type_name(config_setting_type(e)));
		str = config_setting_get_string(e);
		rc = dpsock_rule_parse(str, &scope, &rule, why, sizeof(why));
		if (rc < 0)
			return fail(p, at, epath, "%s", why);
		if (rc > 0)
			continue;
		if (c->n_rules >= DPSOCK_PL_MAX_RULES)
			return fail(p, at, epath, "at most %d rules", DPSOCK_PL_MAX_RULES);
		c->rules[c->n_rules++] = rule;
	}
	return 0;
}

/* "a.b.c.d/len" into host-order address and length; NULL or why not. */
static const char *
parse_prefix(const char *str, uint32_t *a, unsigned int *len)
{
	char buf[64], *slash, *end;
	unsigned long l;

	if (strlen(str) >= sizeof(buf))
		return "is too long for a.b.c.d/len";
	snprintf(buf, sizeof(buf), "%s", str);
	slash = strchr(buf, '/');
	if (slash == NULL)
		return "has no prefix length (a.b.c.d/len)";
	*slash = '\0';
	if (parse_ipv4(buf, a) < 0)
		return "is not an IPv4 prefix (a.b.c.d/len)";
	errno = 0;
	l = strtoul(slash + 1, &end, 10);
	if (slash[1] < '0' || slash[1] > '9' || *end != '\0' || errno != 0 || l > 32)
		return "has a prefix length that is not 0..32";
	*len = (unsigned int)l;
	return NULL;
}

/* routes = [ "DEST/LEN via GATEWAY", ... ] (the interface is found later,
 * routes_validate, once every interface is known). */
static int
parse_route_list(struct parse_ctx *p, struct dpsock_config *c,
		 const config_setting_t *s, const char *path)
{
	int t = config_setting_type(s), i, j, n;

	if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
		return fail(p, s, path, "expected a list of route strings, like [ \"198.19.0.0/16 via 198.18.0.254\" ], got %s",
			    type_name(t));
	n = config_setting_length(s);
	c->n_routes = 0;
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		const config_setting_t *at = config_setting_source_line(e) > 0 ? e : s;
		char epath[64], dst[64], via[16], gw[64], extra[2];
		struct dpsock_route_conf *r;
		unsigned int len;
		uint32_t a, g;
		const char *str, *why;

		pathf(epath, sizeof(epath), "%s[%d]", path, i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			return fail(p, at, epath, "expected a string, got %s",
				    type_name(config_setting_type(e)));
		str = config_setting_get_string(e);
		if (sscanf(str, "%63s %15s %63s %1s", dst, via, gw, extra) != 3 ||
		    strcmp(via, "via") != 0)
			return fail(p, at, epath, "'%s': expected \"DEST/LEN via GATEWAY\"", str);
		if ((why = parse_prefix(dst, &a, &len)) != NULL)
			return fail(p, at, epath, "destination '%s' %s", dst, why);
		if ((a & ~prefix_mask(len)) != 0)
			return fail(p, at, epath, "destination '%s' has bits set past its prefix length "
				    "(the network is %u.%u.%u.%u/%u)", dst, (a & prefix_mask(len)) >> 24,
				    ((a & prefix_mask(len)) >> 16) & 0xff, ((a & prefix_mask(len)) >> 8) & 0xff,
				    a & prefix_mask(len) & 0xff, len);
		if (parse_ipv4(gw, &g) < 0)
			return fail(p, at, epath, "gateway '%s' is not an IPv4 address (a.b.c.d)", gw);
		if ((why = ipv4_unicast_why(g)) != NULL)
			return fail(p, at, epath, "gateway %s %s", gw, why);
		for (j = 0; j < (int)c->n_routes; j++)
			if (c->routes[j].dest == htonl(a) && c->routes[j].prefix_len == len)
				return fail(p, at, epath, "a second route to %s (also %s[%d])", dst, path, j);
		if (c->n_routes >= DPSOCK_MAX_ROUTES)
			return fail(p, at, epath, "at most %d routes", DPSOCK_MAX_ROUTES);
		r = &c->routes[c->n_routes++];
		r->dest = htonl(a);
		r->prefix_len = (uint8_t)len;
		r->gateway = htonl(g);
		r->iface = 0;
		r->line = (int)config_setting_source_line(at);
	}
	return 0;
}

static int
parse_value(struct parse_ctx *p, const struct scope *sc, const struct conf_key *k,
	    const config_setting_t *s, const char *path)
{
	char *field = (char *)sc->base + k->off;
	const char *str = NULL, *why;
	uint32_t a;
	int64_t v;

	switch (k->type) {
	case CONF_UINT:
		if (get_uint(p, s, path, k->min, k->max, &v) < 0)
			return -EINVAL;
		if ((k->flags & CONF_F_POW2) && !is_pow2((uint64_t)v))
			return fail(p, s, path, "must be a power of two between %" PRIu64
				    " and %" PRIu64 " (got %" PRId64 ")", k->min, k->max, v);
		store_uint(field, k->size, (uint64_t)v);
		return 0;
	case CONF_BOOL:
		if (config_setting_type(s) != CONFIG_TYPE_BOOL)
			return fail(p, s, path, "expected true or false, got %s",
				    type_name(config_setting_type(s)));
		*(bool *)field = config_setting_get_bool(s) != 0;
		return 0;
	case CONF_STRING:
		if (get_string(p, s, path, &str) < 0)
			return -EINVAL;
		if (strlen(str) < k->min || strlen(str) > k->max)
			return fail(p, s, path, "must be %" PRIu64 " to %" PRIu64
				    " characters long (got %zu)", k->min, k->max, strlen(str));
		if (k->check != NULL && (why = k->check(str)) != NULL)
			return fail(p, s, path, "'%s' %s", str, why);
		memcpy(field, str, strlen(str) + 1);
		return 0;
	case CONF_LOG_LEVEL:
		return get_log_level(p, s, path, (uint32_t *)field);
	case CONF_LOG_MODULES:
		return parse_log_modules(p, sc->base, s, path);
	case CONF_LCORE_LIST:
		return parse_lcore_list(p, sc->base, s, path);
	case CONF_IFACE_LIST:
		return parse_iface_list(p, sc->base, s, path);
	case CONF_UID_LIST:
		return parse_uid_list(p, sc->base, s, path);
	case CONF_RULE_LIST:
		return parse_rule_list(p, sc->base, s, path);
	case CONF_ROUTE_LIST:
		return parse_route_list(p, sc->base, s, path);
	case CONF_IPV4_ADDR:
		if (get_string(p, s, path, &str) < 0)
			return -EINVAL;
		if (parse_ipv4(str, &a) < 0)
			return fail(p, s, path, "'%s' is not an IPv4 address (a.b.c.d)", str);
		if ((why = ipv4_unicast_why(a)) != NULL)
			return fail(p, s, path, "%s %s", str, why);
		*(uint32_t *)field = htonl(a);
		return 0;
	case CONF_IPV6_PREFIX: {
		char buf[64], *slash, *end;
		unsigned long len;
		struct in6_addr a6;

		if (get_string(p, s, path, &str) < 0)
			return -EINVAL;
		snprintf(buf, sizeof(buf), "%s", str);
		slash = strchr(buf, '/');
		if (slash == NULL)
			return fail(p, s, path, "'%s' has no prefix length; expected v6addr/64, like fd00:198:18::1/64",
				    str);
		*slash = '\0';
		if (inet_pton(AF_INET6, buf, &a6) != 1)
			return fail(p, s, path, "'%s' is not an IPv6 address (v6addr/64)", str);
		errno = 0;
		len = strtoul(slash + 1, &end, 10);
		if (!isdigit((unsigned char)slash[1]) || *end != '\0' || errno != 0 || len == 0 ||
		    len > 64)
			/* lwIP 2.1.3 takes a static address's /64 as on-link: a
			 * longer prefix would put others' addresses on the link */
			return fail(p, s, path, "'%s': the prefix length must be 1 to 64 (lwIP takes "
				    "the /64 of an address as on-link)", str);
		if ((why = ipv6_unicast_why(&a6)) != NULL)
			return fail(p, s, path, "%s %s", buf, why);
		memcpy(field, &a6, 16);
		*((uint8_t *)sc->base + k->off2) = (uint8_t)len;
		return 0;
	}
	case CONF_IPV6_ADDR: {
		struct in6_addr a6;

		if (get_string(p, s, path, &str) < 0)
			return -EINVAL;
		if (inet_pton(AF_INET6, str, &a6) != 1)
			return fail(p, s, path, "'%s' is not an IPv6 address", str);
		if (!IN6_IS_ADDR_LINKLOCAL(&a6) && (why = ipv6_unicast_why(&a6)) != NULL)
			return fail(p, s, path, "%s %s", str, why);
		memcpy(field, &a6, 16);
		return 0;
	}
	case CONF_IPV4_PREFIX: {
		char buf[64], *slash, *end;
		unsigned long len;
		uint32_t mask;
		char net[16];

		if (get_string(p, s, path, &str) < 0)
			return -EINVAL;
		snprintf(buf, sizeof(buf), "%s", str);
		slash = strchr(buf, '/');
		if (slash == NULL)
			return fail(p, s, path, "'%s' has no prefix length; expected a.b.c.d/len, like 198.18.0.1/24",
				    str);
		*slash = '\0';
		if (parse_ipv4(buf, &a) < 0)
			return fail(p, s, path, "'%s' is not an IPv4 address (a.b.c.d/len)", str);
		errno = 0;
		len = strtoul(slash + 1, &end, 10);
		if (!isdigit((unsigned char)slash[1]) || *end != '\0' || errno != 0 ||
		    len < 1 || len > 32)
			return fail(p, s, path, "'%s': prefix length must be between 1 and 32",
				    str);
		if ((why = ipv4_unicast_why(a)) != NULL)
			return fail(p, s, path, "%s %s", buf, why);
		mask = prefix_mask((unsigned int)len);
		format_ipv4(a & mask, net, sizeof(net));
		if (len < 31 && (a & ~mask) == 0)
			return fail(p, s, path, "%s is the network address of %s/%lu, not a host address",
				    buf, net, len);
		if (len < 31 && (a & ~mask) == ~mask)
			return fail(p, s, path, "%s is the broadcast address of %s/%lu, not a host address",
				    buf, net, len);
		*(uint32_t *)field = htonl(a);
		*((uint8_t *)sc->base + k->off2) = (uint8_t)len;
		return 0;
	}
	}
	return fail(p, s, path, "internal error: unhandled key type %d", (int)k->type);
}

/* Suggest the nearest key for an unknown one: a sibling within edit
 * distance 2, else any key whose last component is exactly the name. */
static void
suggest(const struct scope *sc, const char *rel_parent, const char *name,
	char *out, size_t outlen)
{
	size_t plen = strlen(rel_parent), i;
	unsigned int best = 3;

	out[0] = '\0';
	for (i = 0; i < sc->nkeys; i++) {
		const char *k = sc->keys[i].key, *rest, *dot;
		char comp[DPSOCK_NAME_MAX + 1];
		unsigned int d;
		size_t clen;

		if (plen > 0 && (strncmp(k, rel_parent, plen) != 0 || k[plen] != '.'))
			continue;
		rest = plen > 0 ? k + plen + 1 : k;
		dot = strchr(rest, '.');
		clen = dot ? (size_t)(dot - rest) : strlen(rest);
		if (clen > DPSOCK_NAME_MAX)
			continue;
		memcpy(comp, rest, clen);
		comp[clen] = '\0';
		d = edit_distance(name, comp);
		if (d < best) {
			best = d;
			snprintf(out, outlen, "%s", comp);
		}
	}
	if (out[0] != '\0')
		return;
	for (i = 0; i < sc->nkeys; i++) {
		const char *k = sc->keys[i].key, *dot = strrchr(k, '.');

		if (dot != NULL && strcmp(dot + 1, name) == 0) {
			snprintf(out, outlen, "%s%s", sc->prefix, k);
			return;
		}
	}
}

static const struct conf_key *
find_key(const struct scope *sc, const char *rel)
{
	size_t i;

	for (i = 0; i < sc->nkeys; i++)
		if (strcmp(sc->keys[i].key, rel) == 0)
			return &sc->keys[i];
	return NULL;
}

/* Is rel the parent group of some key ("memory" for "memory.mbufs")? */
static bool
is_group_prefix(const struct scope *sc, const char *rel)
{
	size_t len = strlen(rel), i;

	for (i = 0; i < sc->nkeys; i++)
		if (strncmp(sc->keys[i].key, rel, len) == 0 &&
		    sc->keys[i].key[len] == '.')
			return true;
	return false;
}

static int
walk_group(struct parse_ctx *p, const struct scope *sc,
	   const config_setting_t *g, const char *rel)
{
	int i, n = config_setting_length(g);

	for (i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned int)i);
		const char *name = config_setting_name(s);
		const struct conf_key *k;
		char crel[128], path[160], hint[160];

		pathf(crel, sizeof(crel), "%s%s%s", rel, *rel ? "." : "", name);
		pathf(path, sizeof(path), "%s%s", sc->prefix, crel);
		k = find_key(sc, crel);
		if (k != NULL) {
			if (parse_value(p, sc, k, s, path) < 0)
				return -EINVAL;
			sc->seen[k - sc->keys] = s;
			continue;
		}
		if (is_group_prefix(sc, crel)) {
			if (!config_setting_is_group(s))
				return fail(p, s, path, "expected a group { ... }, got %s",
					    type_name(config_setting_type(s)));
			if (walk_group(p, sc, s, crel) < 0)
				return -EINVAL;
			continue;
		}
		suggest(sc, rel, name, hint, sizeof(hint));
		if (hint[0] != '\0')
			return fail(p, s, path, "unknown key '%s' (did you mean '%s'?)",
				    name, hint);
		return fail(p, s, path, "unknown key '%s'", name);
	}
	return 0;
}

static int
check_required(struct parse_ctx *p, const struct scope *sc,
	       const config_setting_t *g, const char *what)
{
	size_t i;

	for (i = 0; i < sc->nkeys; i++)
		if ((sc->keys[i].flags & CONF_F_REQUIRED) && sc->seen[i] == NULL)
			return fail(p, g, what, "missing required key '%s'",
				    sc->keys[i].key);
	return 0;
}

static void
apply_defaults(const struct conf_key *keys, size_t n, void *base)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct conf_key *k = &keys[i];
		char *field = (char *)base + k->off;

		switch (k->type) {
		case CONF_UINT:
		case CONF_LOG_LEVEL:
			store_uint(field, k->size, k->def);
			break;
		case CONF_BOOL:
			*(bool *)field = k->def != 0;
			break;
		case CONF_STRING:
			snprintf(field, k->size, "%s", k->def_str ? k->def_str : "");
			break;
		case CONF_IPV4_ADDR:
			*(uint32_t *)field = htonl((uint32_t)k->def);
			break;
		case CONF_IPV4_PREFIX:
			*(uint32_t *)field = 0;
			*((uint8_t *)base + k->off2) = 0;
			break;
		case CONF_IPV6_PREFIX:
			memset(field, 0, 16);
			*((uint8_t *)base + k->off2) = 0;
			break;
		case CONF_IPV6_ADDR:
			memset(field, 0, 16);
			break;
		case CONF_LOG_MODULES:
			((struct dpsock_config *)base)->n_log_modules = 0;
			break;
		case CONF_LCORE_LIST:
			((struct dpsock_config *)base)->n_workers = 0;
			break;
		case CONF_IFACE_LIST:
			((struct dpsock_config *)base)->n_ifaces = 0;
			break;
		case CONF_UID_LIST:
			((struct dpsock_config *)base)->n_allowed_uids = 0;
			break;
		case CONF_RULE_LIST:
			((struct dpsock_config *)base)->n_rules = 0;
			break;
		case CONF_ROUTE_LIST:
			((struct dpsock_config *)base)->n_routes = 0;
			break;
		}
	}
}

static const config_setting_t *
seen_key(const struct scope *sc, const char *key)
{
	const struct conf_key *k = find_key(sc, key);

	return k ? sc->seen[k - sc->keys] : NULL;
}

/* Rules across the keys of one interface, and against earlier interfaces. */
static int
iface_validate(struct parse_ctx *p, struct dpsock_config *c,
	       const struct scope *sc, unsigned int idx)
{
	struct dpsock_iface_conf *f = &c->ifaces[idx];
	uint32_t a = ntohl(f->addr), gw = ntohl(f->gateway);
	uint32_t mask = prefix_mask(f->prefix_len);
	char path[64], net[16], gws[16];
	const config_setting_t *s;
	unsigned int j;

	/* no address: the port is shared with the kernel, which owns its
	 * addresses, MTU and routes (stack/netview/netview.c follows them) */
	f->shared = seen_key(sc, "address") == NULL;
	if (f->shared) {
		static const char *const owned_only[] = { "gateway", "mtu", "address6", "gateway6" };

		for (j = 0; j < ARRAY_SIZE(owned_only); j++) {
			if ((s = seen_key(sc, owned_only[j])) == NULL)
				continue;
			pathf(path, sizeof(path), "%s%s", sc->prefix, owned_only[j]);
			return fail(p, s, path, "an interface without address is shared with the "
				    "kernel and takes its %s from the kernel's netdev: remove %s, or "
				    "give the interface an address to own the port alone",
				    j == 0 || j == 3 ? "routes" : j == 1 ? "MTU" : "IPv6 addresses",
				    owned_only[j]);
		}
	}
	if (f->gateway != 0) {
		s = seen_key(sc, "gateway");
		pathf(path, sizeof(path), "%sgateway", sc->prefix);
		format_ipv4(gw, gws, sizeof(gws));
		format_ipv4(a & mask, net, sizeof(net));
		if ((gw & mask) != (a & mask))
			return fail(p, s, path, "gateway %s is outside the interface subnet %s/%u",
				    gws, net, f->prefix_len);
		if (gw == a)
			return fail(p, s, path, "gateway %s is the interface's own address", gws);
		if (f->prefix_len < 31 && ((gw & ~mask) == 0 || (gw & ~mask) == ~mask))
			return fail(p, s, path, "gateway %s is the network or broadcast address of %s/%u",
				    gws, net, f->prefix_len);
	}
	if ((s = seen_key(sc, "gateway6")) != NULL) {
		char g6[INET6_ADDRSTRLEN];
		const uint8_t *g = f->gateway6;
		unsigned int n = f->prefix6_len / 8, rest = f->prefix6_len % 8;
		bool ll = g[0] == 0xfe && (g[1] & 0xc0) == 0x80;

		pathf(path, sizeof(path), "%sgateway6", sc->prefix);
		inet_ntop(AF_INET6, g, g6, sizeof(g6));
		if (f->prefix6_len == 0)
			return fail(p, s, path, "gateway6 %s needs an address6 on the interface", g6);
		if (!ll && (memcmp(g, f->addr6, n) != 0 ||
			    (rest != 0 && ((g[n] ^ f->addr6[n]) & (0xff00 >> rest)) != 0)))
			return fail(p, s, path, "gateway6 %s is neither link-local nor inside address6's "
				    "prefix /%u", g6, f->prefix6_len);
		if (memcmp(g, f->addr6, 16) == 0)
			return fail(p, s, path, "gateway6 %s is the interface's own address", g6);
	}
	if (f->vlan_priority != 0 && f->vlan == 0) {
		pathf(path, sizeof(path), "%svlan_priority", sc->prefix);
		return fail(p, seen_key(sc, "vlan_priority"), path,
			    "vlan_priority %u needs a vlan: an untagged frame has no priority field",
			    f->vlan_priority);
	}
	for (j = 0; j < idx; j++) {
		if (strcmp(c->ifaces[j].port, f->port) == 0) {
			pathf(path, sizeof(path), "%sport", sc->prefix);
			return fail(p, seen_key(sc, "port"), path,
				    "duplicate port '%s' (also interfaces[%u], line %d)",
				    f->port, j, c->ifaces[j].line);
		}
		if (f->prefix6_len != 0 && c->ifaces[j].prefix6_len != 0 &&
		    memcmp(c->ifaces[j].addr6, f->addr6, 16) == 0) {
			char a6[INET6_ADDRSTRLEN];

			pathf(path, sizeof(path), "%saddress6", sc->prefix);
			return fail(p, seen_key(sc, "address6"), path,
				    "address6 %s is already used by interfaces[%u]",
				    inet_ntop(AF_INET6, f->addr6, a6, sizeof(a6)), j);
		}
		if (!f->shared && !c->ifaces[j].shared && c->ifaces[j].addr == f->addr) {
			format_ipv4(a, gws, sizeof(gws));
			pathf(path, sizeof(path), "%saddress", sc->prefix);
			return fail(p, seen_key(sc, "address"), path,
				    "address %s is already used by interfaces[%u]",
				    gws, j);
		}
	}
	return 0;
}

static int
parse_iface_list(struct parse_ctx *p, struct dpsock_config *c,
		 const config_setting_t *s, const char *path)
{
	int t = config_setting_type(s), i, n;

	n = config_setting_length(s);
	/* "[]" is an empty array to libconfig; accept it as an empty list */
	if (t != CONFIG_TYPE_LIST && !(t == CONFIG_TYPE_ARRAY && n == 0))
		return fail(p, s, path, "expected a list of groups, like ( { port = \"...\"; address = \"...\"; } ), got %s",
			    type_name(t));
	if (n == 0)
		return fail(p, s, path, "at least one interface is required");
	c->n_ifaces = 0;
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned int)i);
		const config_setting_t *seen[IFACE_NKEYS] = { NULL };
		char prefix[32], epath[32];
		struct scope sc = {
			.keys = conf_iface_keys, .nkeys = IFACE_NKEYS,
			.base = &c->ifaces[i], .prefix = prefix, .seen = seen,
		};

		pathf(epath, sizeof(epath), "%s[%d]", path, i);
		pathf(prefix, sizeof(prefix), "%s.", epath);
		if (i >= DPSOCK_MAX_PORTS)
			return fail(p, e, epath, "too many interfaces: at most %d are supported (got %d)",
				    DPSOCK_MAX_PORTS, n);
		if (!config_setting_is_group(e))
			return fail(p, e, epath, "expected a group { port = ...; address = ...; }, got %s",
				    type_name(config_setting_type(e)));
		memset(&c->ifaces[i], 0, sizeof(c->ifaces[i]));
		apply_defaults(conf_iface_keys, IFACE_NKEYS, &c->ifaces[i]);
		c->ifaces[i].line = (int)config_setting_source_line(e);
		if (walk_group(p, &sc, e, "") < 0 ||
		    check_required(p, &sc, e, epath) < 0 ||
		    iface_validate(p, c, &sc, (unsigned int)i) < 0)
			return -EINVAL;
		c->n_ifaces++;
	}
	return 0;
}

/* Each route's gateway on an interface's subnet (which becomes the route's
 * interface), and no route inside a connected subnet (the stack reaches
 * those directly: such a route would never be used). */
static int
routes_validate(struct parse_ctx *p, struct dpsock_config *c)
{
	for (unsigned int i = 0; i < c->n_routes; i++) {
		struct dpsock_route_conf *r = &c->routes[i];
		uint32_t g = ntohl(r->gateway), d = ntohl(r->dest);
		char path[32], gs[16], ds[16], net[16];
		int found = -1;

		pathf(path, sizeof(path), "routes[%u]", i);
		format_ipv4(g, gs, sizeof(gs));
		format_ipv4(d, ds, sizeof(ds));
		for (unsigned int j = 0; j < c->n_ifaces; j++) {
			const struct dpsock_iface_conf *f = &c->ifaces[j];
			uint32_t a = ntohl(f->addr), m = prefix_mask(f->prefix_len);

			if (f->shared)
				continue; /* the kernel's routes lead there */
			format_ipv4(a & m, net, sizeof(net));
			if (r->prefix_len >= f->prefix_len && (d & m) == (a & m))
				return fail_at(p, NULL, r->line, path,
					       "the route to %s/%u lies inside interfaces[%u]'s subnet "
					       "%s/%u, which the stack reaches directly", ds,
					       r->prefix_len, j, net, f->prefix_len);
			if (found < 0 && (g & m) == (a & m)) {
				if (g == a)
					return fail_at(p, NULL, r->line, path,
						       "gateway %s is interfaces[%u]'s own address", gs, j);
				if (f->prefix_len < 31 && ((g & ~m) == 0 || (g & ~m) == ~m))
					return fail_at(p, NULL, r->line, path,
						       "gateway %s is the network or broadcast address of %s/%u",
						       gs, net, f->prefix_len);
				found = (int)j;
			}
		}
		if (found < 0)
			return fail_at(p, NULL, r->line, path,
				       "gateway %s is on no interface's subnet: a route's gateway must be "
				       "reachable directly (an interface without address follows the "
				       "kernel's routes, not these)", gs);
		r->iface = (uint8_t)found;
	}
	return 0;
}

/* Rules across top-level keys. */
static int
main_validate(struct parse_ctx *p, struct dpsock_config *c,
	      const struct scope *sc, const config_setting_t *root)
{
	const config_setting_t *s;

	if (seen_key(sc, "interfaces") == NULL || c->n_ifaces == 0)
		return fail_at(p, NULL, 0, "interfaces", "at least one interface is required");
	if (routes_validate(p, c) < 0)
		return -EINVAL;
	/* rte_mempool_create: cache_size * 1.5 must not exceed the pool */
	if ((uint64_t)c->mbuf_cache * 3 > (uint64_t)c->mbufs * 2) {
		const char *key = "memory.mbuf_cache";

		s = seen_key(sc, key);
		if (s == NULL) {
			key = "memory.mbufs";
			s = seen_key(sc, key);
		}
		return fail(p, s ? s : root, key, "mbuf_cache (%u) must be at most mbufs / 1.5 (mbufs = %u)",
			    c->mbuf_cache, c->mbufs);
	}
	/* at least one port per worker must remain, whatever the worker count */
	if (c->ephemeral_min + 63 > c->ephemeral_max) {
		const char *key = seen_key(sc, "tcp.ephemeral_max") ? "tcp.ephemeral_max" : "tcp.ephemeral_min";

		s = seen_key(sc, key);
		return fail(p, s ? s : root, key,
			    "the ephemeral range %u..%u must hold at least 64 ports",
			    c->ephemeral_min, c->ephemeral_max);
	}
	/* each group's segment maps slots x (rx + tx FIFO) per worker */
	if ((uint64_t)c->pl_slots * (c->pl_rx_fifo_kb + c->pl_tx_fifo_kb) * 1024 >
	    CONF_PL_SEG_PER_WORKER_MAX) {
		const char *key = seen_key(sc, "preload.slots") ? "preload.slots" :
				  seen_key(sc, "preload.rx_fifo_kb") ? "preload.rx_fifo_kb" :
				  "preload.tx_fifo_kb";

		s = seen_key(sc, key);
		return fail(p, s ? s : root, key,
			    "slots x (rx_fifo_kb + tx_fifo_kb) = %" PRIu64 " MiB per worker and group; at most %llu MiB",
			    (uint64_t)c->pl_slots * (c->pl_rx_fifo_kb + c->pl_tx_fifo_kb) / 1024,
			    CONF_PL_SEG_PER_WORKER_MAX >> 20);
	}
	if (c->rules_file[0] != '\0') {
		char why[384];

		if (dpsock_rules_read_file(c->rules_file, c->rules, DPSOCK_PL_MAX_RULES, &c->n_rules,
					   why, sizeof(why), NULL, NULL) < 0) {
			s = seen_key(sc, "offload.rules_file");
			return fail(p, s ? s : root, "offload.rules_file", "%s", why);
		}
	}
	return 0;
}

void
dpsock_config_defaults(struct dpsock_config *c)
{
	memset(c, 0, sizeof(*c));
	apply_defaults(conf_main_keys, MAIN_NKEYS, c);
}

static int
load_parsed(struct dpsock_config *c, config_t *cfg, struct parse_ctx *p)
{
	const config_setting_t *seen[MAIN_NKEYS] = { NULL };
	const config_setting_t *root = config_root_setting(cfg);
	struct scope sc = {
		.keys = conf_main_keys, .nkeys = MAIN_NKEYS, .base = c,
		.prefix = "", .seen = seen,
	};

	if (walk_group(p, &sc, root, "") < 0 ||
	    main_validate(p, c, &sc, root) < 0)
		return -EINVAL;
	return 0;
}

static int
syntax_error(struct parse_ctx *p, config_t *cfg)
{
	const char *file = config_error_file(cfg) ? config_error_file(cfg) : p->name;
	const char *text = config_error_text(cfg) ? config_error_text(cfg) : "?";

	if (p->err != NULL && p->errlen > 0) {
		if (strcmp(text, "syntax error") == 0)
			snprintf(p->err, p->errlen, "%s:%d: syntax error", file,
				 config_error_line(cfg));
		else
			snprintf(p->err, p->errlen, "%s:%d: syntax error: %s", file,
				 config_error_line(cfg), text);
	}
	return -EINVAL;
}

int
dpsock_config_load_string(struct dpsock_config *c, const char *text,
			  const char *name, char *err, size_t errlen)
{
	struct parse_ctx p = { .name = name ? name : "<string>", .err = err,
			       .errlen = errlen };
	config_t cfg;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	dpsock_config_defaults(c);
	config_init(&cfg);
	if (!config_read_string(&cfg, text))
		rc = syntax_error(&p, &cfg);
	else
		rc = load_parsed(c, &cfg, &p);
	config_destroy(&cfg);
	return rc;
}

int
dpsock_config_load(struct dpsock_config *c, const char *path, char *err,
		   size_t errlen)
{
	struct parse_ctx p = { .name = path, .err = err, .errlen = errlen };
	struct stat st;
	config_t cfg;
	FILE *f;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	dpsock_config_defaults(c);
	if (strlen(path) >= sizeof(c->path)) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: path longer than %zu characters",
				 path, sizeof(c->path) - 1);
		return -EINVAL;
	}
	/* open it ourselves first: libconfig reports only "file I/O error" */
	f = fopen(path, "r");
	if (f == NULL) {
		rc = errno;
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: cannot read configuration: %s",
				 path, strerror(rc));
		return -ENOENT;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: cannot read configuration: %s",
				 path, strerror(EISDIR));
		return -ENOENT;
	}
	fclose(f);
	snprintf(c->path, sizeof(c->path), "%s", path);
	config_init(&cfg);
	if (!config_read_file(&cfg, path)) {
		if (config_error_type(&cfg) == CONFIG_ERR_FILE_IO) {
			rc = errno;
			if (err != NULL && errlen > 0)
				snprintf(err, errlen, "%s: cannot read configuration: %s",
					 config_error_file(&cfg) ? config_error_file(&cfg) : path,
					 rc ? strerror(rc) : "I/O error");
			rc = -ENOENT;
		} else {
			rc = syntax_error(&p, &cfg);
		}
	} else {
		rc = load_parsed(c, &cfg, &p);
	}
	config_destroy(&cfg);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* printing: banner and help */

/* Format one scalar key of base into buf ("" when there is no value). */
static void
format_value(const struct conf_key *k, const void *base, char *buf, size_t len)
{
	const char *field = (const char *)base + k->off;
	char ip[16];

	buf[0] = '\0';
	switch (k->type) {
	case CONF_UINT:
		snprintf(buf, len, "%" PRIu64, load_uint(field, k->size));
		break;
	case CONF_BOOL:
		snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false");
		break;
	case CONF_STRING:
		snprintf(buf, len, "%s", field);
		break;
	case CONF_LOG_LEVEL:
		snprintf(buf, len, "%s", dpsock_log_level_name(*(const uint32_t *)field));
		break;
	case CONF_IPV4_ADDR: {
		uint32_t a = ntohl(*(const uint32_t *)field);

		if (a == 0) {
			snprintf(buf, len, "none");
		} else {
			format_ipv4(a, ip, sizeof(ip));
			snprintf(buf, len, "%s", ip);
		}
		break;
	}
	case CONF_IPV4_PREFIX:
		format_ipv4(ntohl(*(const uint32_t *)field), ip, sizeof(ip));
		snprintf(buf, len, "%s/%u", ip,
			 *((const uint8_t *)base + k->off2));
		break;
	case CONF_IPV6_ADDR: {
		static const uint8_t any[16];
		char ip6[INET6_ADDRSTRLEN];

		snprintf(buf, len, "%s", memcmp(field, any, 16) == 0 ? "none" :
			 inet_ntop(AF_INET6, field, ip6, sizeof(ip6)));
		break;
	}
	case CONF_IPV6_PREFIX: {
		char ip6[INET6_ADDRSTRLEN];

		if (*((const uint8_t *)base + k->off2) == 0)
			snprintf(buf, len, "none");
		else
			snprintf(buf, len, "%s/%u", inet_ntop(AF_INET6, field, ip6, sizeof(ip6)),
				 *((const uint8_t *)base + k->off2));
		break;
	}
	case CONF_LCORE_LIST: {
		const struct dpsock_config *c = base;

		format_u32_list(buf, len, c->workers, c->n_workers, "auto");
		break;
	}
	case CONF_UID_LIST: {
		const struct dpsock_config *c = base;

		format_u32_list(buf, len, c->allowed_uids, c->n_allowed_uids, "root,self");
		break;
	}
	case CONF_RULE_LIST: {
		const struct dpsock_config *c = base;

		if (c->n_rules == 0)
			snprintf(buf, len, "none");
		else
			snprintf(buf, len, "%u rule%s", c->n_rules, c->n_rules == 1 ? "" : "s");
		break;
	}
	case CONF_ROUTE_LIST: {
		const struct dpsock_config *c = base;
		size_t used = 0;
		char d[16], g[16];

		if (c->n_routes == 0)
			snprintf(buf, len, "none");
		for (unsigned int i = 0; i < c->n_routes && used < len; i++) {
			format_ipv4(ntohl(c->routes[i].dest), d, sizeof(d));
			format_ipv4(ntohl(c->routes[i].gateway), g, sizeof(g));
			used += (size_t)snprintf(buf + used, len - used, "%s%s/%u via %s", i ? ", " : "",
						 d, c->routes[i].prefix_len, g);
		}
		break;
	}
	case CONF_LOG_MODULES:
	case CONF_IFACE_LIST:
		break;
	}
}

static bool
is_default(const struct conf_key *k, const void *base, const void *def)
{
	char a[512], b[512];

	format_value(k, base, a, sizeof(a));
	format_value(k, def, b, sizeof(b));
	return strcmp(a, b) == 0;
}

void
dpsock_config_foreach_nondefault(const struct dpsock_config *c,
				 void (*emit)(void *arg, const char *line),
				 void *arg)
{
	struct dpsock_config d;
	struct dpsock_iface_conf idef;
	char line[640], val[512];
	size_t i, j;
	unsigned int m;

	dpsock_config_defaults(&d);
	for (i = 0; i < MAIN_NKEYS; i++) {
		const struct conf_key *k = &conf_main_keys[i];

		switch (k->type) {
		case CONF_LOG_MODULES:
			for (m = 0; m < c->n_log_modules; m++) {
				snprintf(line, sizeof(line), "%s.%s = %s", k->key,
					 c->log_modules[m].module,
					 dpsock_log_level_name(c->log_modules[m].level));
				emit(arg, line);
			}
			break;
		case CONF_IFACE_LIST:
			memset(&idef, 0, sizeof(idef));
			apply_defaults(conf_iface_keys, IFACE_NKEYS, &idef);
			for (m = 0; m < c->n_ifaces; m++) {
				for (j = 0; j < IFACE_NKEYS; j++) {
					if ((conf_iface_keys[j].flags & CONF_F_QUIET) &&
					    is_default(&conf_iface_keys[j], &c->ifaces[m], &idef))
						continue;
					/* a shared interface has no address of its own
					 * (the kernel's are logged as they come) */
					if (c->ifaces[m].shared &&
					    (strcmp(conf_iface_keys[j].key, "address") == 0 ||
					     strcmp(conf_iface_keys[j].key, "gateway") == 0 ||
					     strcmp(conf_iface_keys[j].key, "mtu") == 0))
						continue;
					format_value(&conf_iface_keys[j], &c->ifaces[m],
						     val, sizeof(val));
					snprintf(line, sizeof(line), "%s[%u].%s = %s",
						 k->key, m, conf_iface_keys[j].key, val);
					emit(arg, line);
				}
			}
			break;
		default:
			if (is_default(k, c, &d))
				break;
			format_value(k, c, val, sizeof(val));
			snprintf(line, sizeof(line), "%s = %s", k->key, val);
			emit(arg, line);
			break;
		}
	}
}

static void
describe_type(const struct conf_key *k, char *buf, size_t len)
{
	switch (k->type) {
	case CONF_UINT:
		snprintf(buf, len, "uint%s %" PRIu64 "..%" PRIu64,
			 (k->flags & CONF_F_POW2) ? " 2^n" : "", k->min, k->max);
		break;
	case CONF_BOOL: snprintf(buf, len, "bool"); break;
	case CONF_STRING:
		snprintf(buf, len, "string %" PRIu64 "..%" PRIu64 " chars",
			 k->min, k->max);
		break;
	case CONF_LOG_LEVEL: snprintf(buf, len, "log level"); break;
	case CONF_LOG_MODULES: snprintf(buf, len, "group of log levels"); break;
	case CONF_LCORE_LIST: snprintf(buf, len, "lcore list"); break;
	case CONF_IPV4_ADDR: snprintf(buf, len, "ipv4 address"); break;
	case CONF_IPV4_PREFIX: snprintf(buf, len, "ipv4 prefix"); break;
	case CONF_IPV6_PREFIX: snprintf(buf, len, "ipv6 prefix"); break;
	case CONF_IPV6_ADDR: snprintf(buf, len, "ipv6 address"); break;
	case CONF_IFACE_LIST: snprintf(buf, len, "list of groups"); break;
	case CONF_UID_LIST: snprintf(buf, len, "uid list"); break;
	case CONF_RULE_LIST: snprintf(buf, len, "list of strings"); break;
	case CONF_ROUTE_LIST: snprintf(buf, len, "list of strings"); break;
	}
}

struct help_row {
	char key[64];
	char type[48];
	char def[48];
	const char *help;
};

static size_t
help_rows(struct help_row *rows, size_t max)
{
	struct dpsock_config d;
	struct dpsock_iface_conf di;
	size_t n = 0, i, j;

	dpsock_config_defaults(&d);
	memset(&di, 0, sizeof(di));
	apply_defaults(conf_iface_keys, IFACE_NKEYS, &di);
	for (i = 0; i < MAIN_NKEYS && n < max; i++) {
		const struct conf_key *k = &conf_main_keys[i];

		snprintf(rows[n].key, sizeof(rows[n].key), "%s%s", k->key,
			 k->type == CONF_LOG_MODULES ? ".<module>" : "");
		describe_type(k, rows[n].type, sizeof(rows[n].type));
		format_value(k, &d, rows[n].def, sizeof(rows[n].def));
		if (k->type == CONF_LOG_MODULES)
			snprintf(rows[n].def, sizeof(rows[n].def), "log.level");
		if (k->flags & CONF_F_REQUIRED)
			snprintf(rows[n].def, sizeof(rows[n].def), "(required)");
		rows[n].help = k->help;
		n++;
		if (k->type != CONF_IFACE_LIST)
			continue;
		for (j = 0; j < IFACE_NKEYS && n < max; j++) {
			const struct conf_key *ik = &conf_iface_keys[j];

			snprintf(rows[n].key, sizeof(rows[n].key), "%s[].%s",
				 k->key, ik->key);
			describe_type(ik, rows[n].type, sizeof(rows[n].type));
			format_value(ik, &di, rows[n].def, sizeof(rows[n].def));
			if (ik->flags & CONF_F_REQUIRED)
				snprintf(rows[n].def, sizeof(rows[n].def), "(required)");
			rows[n].help = ik->help;
			n++;
		}
	}
	return n;
}

void
dpsock_config_print_help(FILE *f)
{
	struct help_row rows[MAIN_NKEYS + IFACE_NKEYS];
	int wk = 3, wt = 4, wd = 7;
	size_t n, i;

	n = help_rows(rows, ARRAY_SIZE(rows));
	for (i = 0; i < n; i++) {
		if ((int)strlen(rows[i].key) > wk)
			wk = (int)strlen(rows[i].key);
		if ((int)strlen(rows[i].type) > wt)
			wt = (int)strlen(rows[i].type);
		if ((int)strlen(rows[i].def) > wd)
			wd = (int)strlen(rows[i].def);
	}
	fprintf(f, "%-*s  %-*s  %-*s  %s\n", wk, "KEY", wt, "TYPE", wd, "DEFAULT", "DESCRIPTION");
	for (i = 0; i < n; i++)
		fprintf(f, "%-*s  %-*s  %-*s  %s\n", wk, rows[i].key, wt,
			rows[i].type, wd, rows[i].def, rows[i].help);
}
