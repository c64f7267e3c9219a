/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock.conf: the daemon's configuration (libconfig syntax).
 *
 * Every key, its type, default, limits and help text lives in one table in
 * config.c; the parser, the defaults, the "non-default settings" banner and
 * `dpsockd -- --help-config` are all generated from it.
 *
 * Errors: functions return 0 or -errno; a message naming file:line:key and
 * the reason is written to the caller's buffer.
 */
#ifndef DPSOCK_CONFIG_PRIV_H
#define DPSOCK_CONFIG_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "offload_rules.h"
#include "preload_wire.h"

#define DPSOCK_MAX_PORTS 4
#define DPSOCK_MAX_WORKERS 64
#define DPSOCK_NAME_MAX 32
#define DPSOCK_PORT_NAME_MAX 64
#define DPSOCK_LOG_MODULE_MAX 16
#define DPSOCK_MAX_UIDS 32
#define CONF_RULES_FILE_LEN_MAX 255

/* Log levels, in DPDK's numbering (RTE_LOG_ERR = 4 ... RTE_LOG_DEBUG = 8). */
struct dpsock_log_module_conf {
	char module[DPSOCK_NAME_MAX]; /* "pmd", "lwip", "worker", ... */
	uint32_t level;
};

struct dpsock_iface_conf {
	char port[DPSOCK_PORT_NAME_MAX]; /* PCI address or vdev name */
	bool shared;                     /* no address: shared with the kernel, following
					  * its netdev (stack/netview/netview.c); addr, prefix_len,
					  * gateway and mtu are then unused */
	uint32_t addr;                   /* IPv4, network byte order */
	uint8_t prefix_len;              /* 0..32 */
	uint8_t addr6[16];               /* IPv6 (address6), network byte order */
	uint8_t prefix6_len;             /* 1..64; 0 = no IPv6 address */
	uint8_t gateway6[16];            /* IPv6 default gateway; all 0 = none */
	uint32_t gateway;                /* network byte order; 0 = none */
	uint16_t mtu;                    /* 68..9000 */
	uint16_t vlan;                   /* 802.1Q VLAN id 1..4094; 0 = untagged */
	uint8_t vlan_priority;           /* 802.1p priority (PCP) of what it sends */
	int line;                        /* line in the file, for later errors */
};

/* A static route (routes = [ "DEST/LEN via GATEWAY", ... ]). */
#define DPSOCK_MAX_ROUTES 32
struct dpsock_route_conf {
	uint32_t dest;                   /* network byte order, host bits zero */
	uint32_t gateway;                /* network byte order */
	uint8_t prefix_len;              /* 0..32 */
	uint8_t iface;                   /* the interface whose subnet holds the gateway */
	int line;                        /* line in the file, for later errors */
};

struct dpsock_config {
	char path[256];        /* file it came from, "" = built-in defaults */
	char name[DPSOCK_NAME_MAX]; /* instance name: shm names, dpsock-stat -n */
	char runtime_dir[128]; /* where the control socket lives */

	/* log */
	uint32_t log_level;
	unsigned int n_log_modules;
	struct dpsock_log_module_conf log_modules[DPSOCK_LOG_MODULE_MAX];

	/* workers: EAL lcore ids; n_workers == 0 means "every EAL worker lcore,
	 * or the main lcore alone when there is none" */
	unsigned int n_workers;
	uint32_t workers[DPSOCK_MAX_WORKERS];

	/* memory */
	uint32_t mbufs;       /* per port pool size (mbufs) */
	uint32_t mbuf_cache;  /* per-lcore mempool cache */
	uint32_t rx_desc;
	uint32_t tx_desc;
	uint32_t steer_ring;  /* per-worker software steering ring (mbufs) */

	/* worker loop */
	uint32_t rx_burst;      /* 1..512 */
	uint32_t idle_poll_us;  /* keep polling this long after the last packet */
	uint32_t idle_sleep_max_us; /* longest single sleep when idle */

	/* tcp / udp */
	uint32_t ephemeral_min;  /* local ports active opens choose from */
	uint32_t ephemeral_max;
	uint32_t max_connections; /* per worker; more are refused with RST */
	uint32_t lwip_mb;        /* per worker: memory lwIP may hold (MiB) */
	char steering[16];       /* auto, toeplitz, rte_flow, software */
	char yield[8];           /* worker.yield: auto, never, always */
	char segmentation[8];    /* auto, tso, gso, lwip */
	bool gro;                /* merge in-order segments before lwIP */
	char congestion[16];     /* default congestion control: cubic, reno */
	bool pacing;             /* pace new data (internal pacing, as Linux without fq) */

	/* stats */
	uint32_t socket_slots;   /* per worker: entries of the stats socket table */

	/* interfaces */
	unsigned int n_ifaces;
	struct dpsock_iface_conf ifaces[DPSOCK_MAX_PORTS];
	unsigned int n_routes;
	struct dpsock_route_conf routes[DPSOCK_MAX_ROUTES];

	/* preload clients (daemon/clients.c, daemon/serve.c) */
	unsigned int n_allowed_uids; /* 0: root and the daemon's own uid */
	uint32_t allowed_uids[DPSOCK_MAX_UIDS];
	uint32_t pl_max_groups;  /* attached process groups */
	uint32_t pl_max_threads; /* channels (app threads) per group */
	uint32_t pl_slots;       /* slots per worker per group */
	uint32_t pl_rx_fifo_kb;  /* per slot, power of two */
	uint32_t pl_tx_fifo_kb;
	uint32_t pl_poll_batch;  /* commands taken from one ring per loop */
	bool pl_cut_through;     /* connections within the host: FIFO to FIFO */

	/* offload.rules, then offload.rules_file's, compiled (first match
	 * decides; see abi/offload_rules.h) */
	char rules_file[CONF_RULES_FILE_LEN_MAX + 1];
	unsigned int n_rules;
	struct dpsock_pl_rule rules[DPSOCK_PL_MAX_RULES];
};

/* Fill *c with the defaults of the table. */
void dpsock_config_defaults(struct dpsock_config *c);

/*
 * Parse a libconfig file into *c (defaults first, then the file).
 * Returns 0, or:
 *   -ENOENT  file missing or unreadable
 *   -EINVAL  syntax error, unknown key, wrong type, out-of-range value,
 *            bad address or prefix, duplicate port, too many entries
 * On error, err (size errlen) holds "file:line: key: why".
 */
int dpsock_config_load(struct dpsock_config *c, const char *path,
		       char *err, size_t errlen);

/* Same as load, from a string (tests, the embedded default). name is used
 * in messages in place of a file name. */
int dpsock_config_load_string(struct dpsock_config *c, const char *text,
			      const char *name, char *err, size_t errlen);

/*
 * Call emit(arg, line) once per setting that differs from its default, as
 * "key = value" (interfaces as "interfaces[0].address = 198.18.0.1/24").
 * Used by the start-up banner.
 */
void dpsock_config_foreach_nondefault(const struct dpsock_config *c,
				      void (*emit)(void *arg, const char *line),
				      void *arg);

/* Print every key with its type, default and help (dpsockd -- --help-config). */
void dpsock_config_print_help(FILE *f);

/* Parse "error"|"warning"|"notice"|"info"|"debug" (or 1..8) into a DPDK log
 * level. Returns the level or -EINVAL. */
int dpsock_log_level_parse(const char *s);
/* "info" for 7 and so on; "invalid" outside 1..8. Never NULL. */
const char *dpsock_log_level_name(uint32_t level);

#endif /* DPSOCK_CONFIG_PRIV_H */
