/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock-stat — show the counters a running dpsock instance (dpsockd or a
 * native app) publishes in /dev/shm/dpsock.<name>.stats, while it runs.
 * Lock-free: it only loads, except for the two requests (-z, --log-level)
 * it writes into the segment's control area (see stats_segment.h).
 *
 *   dpsock-stat [-n NAME | -p PID]                    plain counter lines
 *   dpsock-stat [-n NAME | -p PID] -v VIEW [-d 1|2] [-i SECONDS] [-c CYCLES]
 *               [-s FILTER] [--json]
 *   dpsock-stat [-n NAME | -p PID] -z
 *   dpsock-stat [-n NAME | -p PID] --log-level MODULE=LEVEL[,...]
 *
 * Without -v or -d the output is the plain one: one counter per line,
 * "<scope>.<index>.<counter> <value>" (port.0.rx_packets 10,
 * worker.1.rx_drop_ip_cksum 3), for people and for scripts that grep (the
 * integration tests read it); --json gives the same numbers as one JSON
 * object. Exit status: 0; 1 when the instance is not found (or a request
 * failed); 2 for bad usage. An instance that stops while -i cycles ends the
 * program with a message and status 0.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dpsock_build_config.h"
#include "stats_segment.h"

enum view { VIEW_RAW, VIEW_BASIC, VIEW_EXTRA, VIEW_FULL, VIEW_MC, VIEW_SOCKETS, VIEW_CLIENTS };

static const char *const view_names[] = {
	[VIEW_RAW] = "raw", [VIEW_BASIC] = "basic", [VIEW_EXTRA] = "extra",
	[VIEW_FULL] = "full", [VIEW_MC] = "mc", [VIEW_SOCKETS] = "sockets",
	[VIEW_CLIENTS] = "clients",
};

struct options {
	const char *name;
	int pid;
	enum view view;
	bool view_given;
	int mode;            /* 1 totals, 2 per second */
	double interval;     /* seconds; 0 = not given */
	long cycles;         /* samples; -1 = until stopped */
	const char *filter;
	bool json;
	bool zero;
	const char *log_spec;
	/* -S [PID:]FD: preloaded sockets by process and descriptor (fd 0: all);
	 * -p PID of a preloaded program: its sockets only */
	bool fds;
	int fd_pid, fd;
	int client_pid;
};

/* One sample of the segment: private copies, consistent per block. */
struct sample {
	double t;            /* CLOCK_MONOTONIC seconds */
	struct dpsock_port_stats ports[DPSOCK_STATS_MAX_PORTS];
	struct dpsock_worker_stats workers[DPSOCK_STATS_MAX_WORKERS];
	struct dpsock_sock_stats *socks; /* in_use entries */
	unsigned int n_socks;
};

static const struct dpsock_stats_segment *seg;
static size_t seg_len;
static int client_only;   /* -p of a preloaded program: the sockets view shows its own */
static char seg_shm[300];

/*
 * What the tool indexes with, checked once against the file when it maps it
 * and private from then on. The instance writes these at start and never
 * changes them; anyone else who can write the segment (a hostile or broken
 * writer, a torn update) may, and must not move a read outside the mapping.
 * Strings are terminated copies.
 */
static struct {
	uint32_t n_ports;       /* <= DPSOCK_STATS_MAX_PORTS */
	uint32_t n_workers;     /* <= DPSOCK_STATS_MAX_WORKERS */
	uint32_t sock_slots;    /* the socket table fits in the file */
	uint64_t sock_off;
	char name[sizeof(seg->name) + 1];
	char app[sizeof(seg->app) + 1];
	char port_names[DPSOCK_STATS_MAX_PORTS][sizeof(seg->port_names[0]) + 1];
} geo;

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: dpsock-stat [-n NAME | -p PID] [options]\n"
		"Show the counters of a running dpsock instance (dpsockd or a native app).\n"
		"  -n, --name NAME     the instance (name = ... in its config; default dpsock)\n"
		"  -p, --pid PID       the instance whose process id is PID, or the instance a\n"
		"                      preloaded program PID is attached to (its sockets only)\n"
		"  -v, --view VIEW     basic | extra | full | mc | sockets | clients (a table;\n"
		"                      clients: processes attached through libdpsock_preload; default: the\n"
		"                      plain 'scope.index.counter value' lines); vma_stats' levels\n"
		"                      1..5 are basic, extra, full, mc, sockets\n"
		"      --raw           the plain lines (the default without -v or -d)\n"
		"  -S, --fd [PID:]FD   every counter of a preloaded socket, by its program's pid and\n"
		"                      descriptor (FD 0: every preloaded socket), summed over workers\n"
		"  -d, --details 1|2   1: totals (default); 2: per second between samples\n"
		"  -i, --interval SEC  repeat every SEC seconds (fractions allowed: -i 0.1)\n"
		"  -c, --cycles N      take N samples (default 1, or 2 with -d 2; unlimited with -i;\n"
		"                      0: until interrupted, every second unless -i)\n"
		"  -s, --filter F      sockets view: 'state=ESTABLISHED', 'proto=udp', 'worker=1',\n"
		"                      'port=80', or a substring of the addresses ('198.18.0.2')\n"
		"  -j, --json          JSON (one object per sample) with the numbers of the table\n"
		"  -z, --zero          zero the instance's counters (each writer zeroes its own)\n"
		"      --log-level SPEC  set log levels while it runs: 'pmd=debug', 'all=info',\n"
		"                      'tcp=debug,worker=notice'\n"
		"  -V, --version       dpsock-stat's version and the stats segment's\n"
		"  -h, --help          this text\n");
}

/* ---- finding and mapping the segment ----------------------------------------- */

static bool
instance_alive(const struct dpsock_stats_segment *s)
{
	/* acquire: pairs with the instance's release stores of running */
	return __atomic_load_n(&s->running, __ATOMIC_ACQUIRE) &&
	       !(kill(s->pid, 0) != 0 && errno == ESRCH);
}

/* Why a header that passed the magic and version checks cannot be used,
 * or NULL. file_size: the bytes the file holds. */
static const char *
geometry_why(const struct dpsock_stats_segment *h, uint64_t file_size)
{
	uint64_t table;

	if (h->size > file_size)
		return "its header says it is larger than the file";
	if (h->n_ports > DPSOCK_STATS_MAX_PORTS)
		return "more ports than the format has room for";
	if (h->n_workers > DPSOCK_STATS_MAX_WORKERS)
		return "more workers than the format has room for";
	if (h->sock_slots == 0)
		return NULL;
	table = (uint64_t)h->n_workers * h->sock_slots * sizeof(struct dpsock_sock_stats);
	if (h->sock_off < sizeof(*h) || h->sock_off % _Alignof(struct dpsock_sock_stats) != 0 ||
	    h->sock_off > h->size || table > h->size - h->sock_off)
		return "its socket table is not inside it";
	return NULL;
}

static void
geometry_take(const struct dpsock_stats_segment *h)
{
	unsigned int i;

	geo.n_ports = h->n_ports;
	geo.n_workers = h->n_workers;
	geo.sock_slots = h->sock_slots;
	geo.sock_off = h->sock_off;
	snprintf(geo.name, sizeof(geo.name), "%.*s", (int)sizeof(h->name), h->name);
	snprintf(geo.app, sizeof(geo.app), "%.*s", (int)sizeof(h->app), h->app);
	for (i = 0; i < DPSOCK_STATS_MAX_PORTS; i++)
		snprintf(geo.port_names[i], sizeof(geo.port_names[i]), "%.*s",
			 (int)sizeof(h->port_names[i]), h->port_names[i]);
}

/* Worker w's socket entries (the checked geometry, not the live header). */
static const struct dpsock_sock_stats *
socks_of(unsigned int w)
{
	return (const struct dpsock_sock_stats *)((const char *)seg + geo.sock_off) +
	       (size_t)w * geo.sock_slots;
}

/* Map /dev/shm<shm> (header first, then all of it) and take its geometry.
 * Returns NULL with a message in err. */
static const struct dpsock_stats_segment *
map_segment(const char *shm, bool writable, char *err, size_t errlen)
{
	const struct dpsock_stats_segment *s;
	struct dpsock_stats_segment hdr;
	int fd = shm_open(shm, writable ? O_RDWR : O_RDONLY, 0);
	const char *why;
	struct stat st;
	size_t len;

	if (fd < 0) {
		snprintf(err, errlen, "/dev/shm%s: %s%s", shm, strerror(errno),
			 errno == EACCES ? " (-z and --log-level write to it: run as its owner)" : "");
		return NULL;
	}
	if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    hdr.magic != DPSOCK_STATS_MAGIC || hdr.version != DPSOCK_STATS_VERSION ||
	    hdr.hdr_size != sizeof(hdr) || hdr.size < sizeof(hdr)) {
		close(fd);
		snprintf(err, errlen, "/dev/shm%s is not a stats segment of this version (%u); "
			 "is dpsock-stat from the same build?", shm, DPSOCK_STATS_VERSION);
		return NULL;
	}
	why = fstat(fd, &st) != 0 ? strerror(errno) : geometry_why(&hdr, (uint64_t)st.st_size);
	if (why != NULL) {
		close(fd);
		snprintf(err, errlen, "/dev/shm%s is not a usable stats segment: %s", shm, why);
		return NULL;
	}
	geometry_take(&hdr);
	len = hdr.size;
	s = mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED) {
		snprintf(err, errlen, "mmap /dev/shm%s: %s", shm, strerror(errno));
		return NULL;
	}
	seg_len = len;
	return s;
}

/* -p PID: the segment in /dev/shm whose pid matches, else (client_pid not
 * NULL) the one PID is a preloaded client of: *client_pid = PID. */
static int
find_by_pid(int pid, char *shm, size_t len, int *client_pid)
{
	DIR *dir = opendir("/dev/shm");
	struct dirent *de;
	int found = -1;

	if (dir == NULL)
		return -1;
	while ((de = readdir(dir)) != NULL) {
		size_t n = strlen(de->d_name);
		struct dpsock_stats_segment hdr;
		char path[300];
		int fd;

		if (strncmp(de->d_name, "dpsock.", 7) != 0 || n < 13 ||
		    strcmp(de->d_name + n - 6, ".stats") != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		if (pread(fd, &hdr, offsetof(struct dpsock_stats_segment, name), 0) ==
			    (ssize_t)offsetof(struct dpsock_stats_segment, name) &&
		    hdr.magic == DPSOCK_STATS_MAGIC && hdr.pid == pid) {
			snprintf(shm, len, "/%s", de->d_name);
			found = 0;
		} else if (client_pid != NULL && pread(fd, &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
			   hdr.magic == DPSOCK_STATS_MAGIC && hdr.version == DPSOCK_STATS_VERSION) {
			/* a preloaded program attached to this instance (as vma_stats -p) */
			for (uint32_t i = 0; i < hdr.n_clients && i < DPSOCK_STATS_MAX_CLIENTS; i++)
				if (hdr.clients[i].pid == pid) {
					snprintf(shm, len, "/%s", de->d_name);
					*client_pid = pid;
					found = 0;
				}
		}
		close(fd);
		if (found == 0)
			break;
	}
	closedir(dir);
	return found;
}

/* ---- sampling ------------------------------------------------------------------ */

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
copy_words(void *dst, const void *src, size_t len)
{
	const uint64_t *s = src;
	uint64_t *d = dst;
	size_t i;

	for (i = 0; i < len / sizeof(uint64_t); i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

static void
take_sample(struct sample *sm, bool sockets)
{
	unsigned int w;

	sm->t = now_s();
	copy_words(sm->ports, seg->ports, sizeof(sm->ports));
	copy_words(sm->workers, seg->workers, sizeof(sm->workers));
	sm->n_socks = 0;
	if (!sockets || geo.sock_slots == 0)
		return;
	if (sm->socks == NULL) {
		sm->socks = calloc((size_t)geo.n_workers * geo.sock_slots, sizeof(*sm->socks));
		if (sm->socks == NULL) {
			fprintf(stderr, "dpsock-stat: out of memory\n");
			exit(1);
		}
	}
	for (w = 0; w < geo.n_workers; w++) {
		const struct dpsock_sock_stats *tab = socks_of(w);
		uint32_t i;

		for (i = 0; i < geo.sock_slots; i++) {
			struct dpsock_sock_stats *e = &sm->socks[sm->n_socks];

			if (__atomic_load_n(&tab[i].in_use, __ATOMIC_RELAXED) &&
			    dpsock_sockstat_read(&tab[i], e) && e->in_use)
				sm->n_socks++;
		}
	}
}

/* A counter's value: total, or per second against prev. Gauges as they are. */
static double
value(const void *blk, const void *prev_blk, const struct dpsock_stat_desc *d, double dt)
{
	uint64_t v = dpsock_stat_at(blk, d);

	if (prev_blk == NULL || d->gauge || dt <= 0)
		return (double)v;
	return (double)(v - dpsock_stat_at(prev_blk, d)) / dt;
}

static const struct dpsock_stat_desc *
desc_find(const struct dpsock_stat_desc *desc, unsigned int n, const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (strcmp(desc[i].name, name) == 0)
			return &desc[i];
	fprintf(stderr, "dpsock-stat: internal: no counter '%s'\n", name);
	exit(2);
}

/* ---- aligned tables --------------------------------------------------------------- */

#define TAB_MAX_COLS 24
#define CELL 48           /* an IPv6 address (45) fits */

struct table {
	unsigned int ncols, nrows;
	unsigned int max_rows;
	const char *title[TAB_MAX_COLS];
	bool left[TAB_MAX_COLS];
	char (*cells)[TAB_MAX_COLS][CELL];
};

/* A table of at most max_rows rows (the caller's count, from the checked
 * geometry). */
static void
tab_init(struct table *t, unsigned int max_rows)
{
	memset(t, 0, sizeof(*t));
	t->max_rows = max_rows;
	t->cells = calloc(max_rows ? max_rows : 1, sizeof(*t->cells));
	if (t->cells == NULL)
		exit(1);
}

static void
tab_col(struct table *t, const char *title, bool left)
{
	t->title[t->ncols] = title;
	t->left[t->ncols] = left;
	t->ncols++;
}

static char *
tab_cell(struct table *t, unsigned int row, unsigned int col)
{
	static char spare[CELL];

	if (row >= t->max_rows || col >= TAB_MAX_COLS)
		return spare; /* not shown: callers size their tables */
	if (row >= t->nrows)
		t->nrows = row + 1;
	return t->cells[row][col];
}

static void
tab_print(struct table *t)
{
	unsigned int w[TAB_MAX_COLS], r, c;

	for (c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->title[c]);
		for (r = 0; r < t->nrows; r++)
			if (strlen(t->cells[r][c]) > w[c])
				w[c] = strlen(t->cells[r][c]);
	}
	for (c = 0; c < t->ncols; c++)
		printf(t->left[c] ? "%s%-*s" : "%s%*s", c ? "  " : "", (int)w[c], t->title[c]);
	printf("\n");
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++)
			printf(t->left[c] ? "%s%-*s" : "%s%*s", c ? "  " : "", (int)w[c],
			       t->cells[r][c]);
		printf("\n");
	}
	free(t->cells);
	t->cells = NULL;
}

/* Cell text for a number of a given kind. */
enum unit { U_COUNT, U_BYTES, U_PERMILLE, U_MS, U_PLAIN };

static void
fmt_value(char *buf, size_t len, double v, enum unit u, bool rate)
{
	char b[32];

	switch (u) {
	case U_BYTES:
		snprintf(buf, len, "%s%s", dpsock_fmt_bytes(b, sizeof(b), v), rate ? "/s" : "");
		break;
	case U_PERMILLE:
		snprintf(buf, len, "%.1f %%", v / 10);
		break;
	case U_MS:
		snprintf(buf, len, "%.0f ms", v);
		break;
	case U_PLAIN:
		snprintf(buf, len, "%.0f", v);
		break;
	default:
		if (rate)
			snprintf(buf, len, "%.1f", v);
		else
			snprintf(buf, len, "%.0f", v);
	}
}

/* A column of counter `name` with its unit; the title says "/s" in rates. */
struct col {
	const char *title;
	const char *counter;   /* NULL: computed */
	enum unit unit;
};

static void
counter_table(const struct col *cols, unsigned int ncols, bool ports, const struct sample *cur,
	      const struct sample *prev, double dt)
{
	const struct dpsock_stat_desc *desc = ports ? dpsock_port_stat_desc : dpsock_worker_stat_desc;
	unsigned int ndesc = ports ? dpsock_port_stat_count : dpsock_worker_stat_count;
	unsigned int n = ports ? geo.n_ports : geo.n_workers, r, c;
	static char titles[TAB_MAX_COLS][48];
	struct table t;

	tab_init(&t, n);
	tab_col(&t, ports ? "Port" : "Worker", true);
	tab_col(&t, ports ? "Name" : "Lcore", true);
	for (c = 0; c < ncols; c++) {
		const struct dpsock_stat_desc *d = cols[c].counter ?
			desc_find(desc, ndesc, cols[c].counter) : NULL;
		bool rate = prev != NULL && d != NULL && !d->gauge;

		snprintf(titles[c], sizeof(titles[c]), "%s%s", cols[c].title,
			 rate ? (cols[c].unit == U_BYTES ? "" : "/s") : "");
		tab_col(&t, titles[c], false);
	}
	for (r = 0; r < n; r++) {
		const void *blk = ports ? (const void *)&cur->ports[r] : (const void *)&cur->workers[r];
		const void *pblk = prev == NULL ? NULL :
			ports ? (const void *)&prev->ports[r] : (const void *)&prev->workers[r];

		snprintf(tab_cell(&t, r, 0), CELL, "%u", r);
		if (ports)
			snprintf(tab_cell(&t, r, 1), CELL, "%s", geo.port_names[r]);
		else
			snprintf(tab_cell(&t, r, 1), CELL, "%u", cur->workers[r].lcore_id);
		for (c = 0; c < ncols; c++) {
			const struct dpsock_stat_desc *d;
			double v;

			if (cols[c].counter == NULL) {
				/* average RX burst: packets / bursts */
				const struct dpsock_stat_desc *p = desc_find(desc, ndesc, "rx_packets");
				const struct dpsock_stat_desc *b = desc_find(desc, ndesc, "rx_bursts");
				double np = value(blk, pblk, p, dt), nb = value(blk, pblk, b, dt);

				snprintf(tab_cell(&t, r, c + 2), CELL, "%.1f", nb > 0 ? np / nb : 0);
				continue;
			}
			d = desc_find(desc, ndesc, cols[c].counter);
			v = value(blk, pblk, d, dt);
			fmt_value(tab_cell(&t, r, c + 2), CELL, v, cols[c].unit, pblk && !d->gauge);
		}
	}
	tab_print(&t);
}

static const struct col port_basic[] = {
	{ "Link", "link_up", U_PLAIN },
	{ "Mb/s", "link_speed_mbps", U_PLAIN },
	{ "RX pkt", "rx_packets", U_COUNT },
	{ "RX", "rx_bytes", U_BYTES },
	{ "TX pkt", "tx_packets", U_COUNT },
	{ "TX", "tx_bytes", U_BYTES },
	{ "Missed", "rx_missed", U_COUNT },
	{ "RX err", "rx_errors", U_COUNT },
	{ "TX err", "tx_errors", U_COUNT },
};

static const struct col port_extra[] = {
	{ "No mbuf", "rx_nombuf", U_COUNT },
	{ "Mbufs free", "mbufs_free", U_PLAIN },
	{ "Mbufs", "mbufs_total", U_PLAIN },
	{ "XDP RX full", "xdp_rx_ring_full", U_COUNT },
	{ "XDP no fill", "xdp_fill_empty", U_COUNT },
	{ "XDP RX inval", "xdp_rx_invalid", U_COUNT },
	{ "XDP TX inval", "xdp_tx_invalid", U_COUNT },
};

static const struct col worker_basic[] = {
	{ "Busy", "busy_permille", U_PERMILLE },
	{ "RX pkt", "rx_packets", U_COUNT },
	{ "RX", "rx_bytes", U_BYTES },
	{ "TX pkt", "tx_packets", U_COUNT },
	{ "TX", "tx_bytes", U_BYTES },
	{ "ICMP echo", "icmp_echo", U_COUNT },
	{ "Accepted", "tcp_accepted", U_COUNT },
	{ "Connected", "tcp_connected", U_COUNT },
	{ "TCP conns", "tcp_conns", U_PLAIN },
	{ "Sockets", "sockets", U_PLAIN },
};

static const struct col worker_extra_drops[] = {
	{ "TX drops", "tx_drops", U_COUNT },
	{ "No mbuf", "tx_nombuf", U_COUNT },
	{ "No mem", "rx_nomem", U_COUNT },
	{ "Runt", "rx_drop_runt", U_COUNT },
	{ "Ethertype", "rx_drop_ethertype", U_COUNT },
	{ "VLAN", "rx_drop_vlan", U_COUNT },
	{ "IP hdr", "rx_drop_ip_hdr", U_COUNT },
	{ "IP len", "rx_drop_ip_len", U_COUNT },
	{ "IP csum", "rx_drop_ip_cksum", U_COUNT },
	{ "L4 csum", "rx_drop_l4_cksum", U_COUNT },
	{ "lwIP IP", "lwip_ip_drop", U_COUNT },
	{ "lwIP TCP", "lwip_tcp_drop", U_COUNT },
	{ "lwIP UDP", "lwip_udp_drop", U_COUNT },
	{ "Refused", "tcp_refused", U_COUNT },
};

static const struct col worker_extra_steer[] = {
	{ "Steer out", "steer_out", U_COUNT },
	{ "Steer in", "steer_in", U_COUNT },
	{ "Steer full", "steer_full", U_COUNT },
	{ "Ring", "steer_ring_depth", U_PLAIN },
	{ "ARP shared", "arp_shared_out", U_COUNT },
	{ "Wake-ups sent", "wakeups_sent", U_COUNT },
	{ "Woken", "wakeups", U_COUNT },
	{ "Sleeps", "sleeps", U_COUNT },
	{ "Timer runs", "timer_runs", U_COUNT },
	{ "Next timer", "timers_pending", U_MS },
};

static const struct col worker_mc[] = {
	{ "MC rx", "mc_rx", U_COUNT },
	{ "Filtered", "mc_rx_filtered", U_COUNT },
	{ "Delivered", "mc_deliveries", U_COUNT },
	{ "Looped", "mc_loop", U_COUNT },
	{ "FIFO full", "pl_rx_dropped", U_COUNT },
	{ "Q v1", "igmp_rx_query_v1", U_COUNT },
	{ "Q v2", "igmp_rx_query_v2", U_COUNT },
	{ "Q v3", "igmp_rx_query_v3", U_COUNT },
	{ "Others' rpt", "igmp_rx_report", U_COUNT },
	{ "Bad", "igmp_rx_bad", U_COUNT },
	{ "Rpt v3", "igmp_tx_report_v3", U_COUNT },
	{ "Rpt v2", "igmp_tx_report_v2", U_COUNT },
	{ "Rpt v1", "igmp_tx_report_v1", U_COUNT },
	{ "Leaves", "igmp_tx_leave", U_COUNT },
};

static const struct col worker_extra_mem[] = {
	{ "Avg burst", NULL, U_PLAIN },
	{ "1", "rx_burst_1", U_COUNT },
	{ "2-3", "rx_burst_2_3", U_COUNT },
	{ "4-7", "rx_burst_4_7", U_COUNT },
	{ "8-15", "rx_burst_8_15", U_COUNT },
	{ "16-31", "rx_burst_16_31", U_COUNT },
	{ "32-63", "rx_burst_32_63", U_COUNT },
	{ "64+", "rx_burst_64_up", U_COUNT },
	{ "Mbufs held", "mbufs_held", U_PLAIN },
	{ "lwIP mem", "lwip_mem_bytes", U_BYTES },
	{ "lwIP objs", "lwip_mem_objs", U_PLAIN },
	{ "Unlisted socks", "sock_unlisted", U_COUNT },
};

#define NCOLS(a) (sizeof(a) / sizeof((a)[0]))
#define MIN_U(a, b) ((a) < (b) ? (unsigned int)(a) : (unsigned int)(b))

/* full: one row per counter, one column per port/worker (and the total). */
static void
full_table(bool ports, const struct sample *cur, const struct sample *prev, double dt)
{
	const struct dpsock_stat_desc *desc = ports ? dpsock_port_stat_desc : dpsock_worker_stat_desc;
	unsigned int ndesc = ports ? dpsock_port_stat_count : dpsock_worker_stat_count;
	unsigned int n = ports ? geo.n_ports : geo.n_workers, r, c;
	static char titles[DPSOCK_STATS_MAX_WORKERS][16];
	struct table t;
	bool cut = n > TAB_MAX_COLS - 3;

	if (cut)
		n = TAB_MAX_COLS - 3;
	tab_init(&t, ndesc);
	tab_col(&t, ports ? "Port counter" : "Worker counter", true);
	for (c = 0; c < n; c++) {
		snprintf(titles[c], sizeof(titles[c]), "%s %u", ports ? "port" : "worker", c);
		tab_col(&t, titles[c], false);
	}
	tab_col(&t, "total", false);
	tab_col(&t, prev ? "(per second; levels as they are)" : "", true);
	for (r = 0; r < ndesc; r++) {
		const struct dpsock_stat_desc *d = &desc[r];
		double sum = 0;

		snprintf(tab_cell(&t, r, 0), CELL, "%s", d->name);
		for (c = 0; c < n; c++) {
			const void *blk = ports ? (const void *)&cur->ports[c] :
						  (const void *)&cur->workers[c];
			const void *pblk = prev == NULL ? NULL :
				ports ? (const void *)&prev->ports[c] : (const void *)&prev->workers[c];
			double v = value(blk, pblk, d, dt);

			sum += v;
			fmt_value(tab_cell(&t, r, c + 1), CELL, v, U_COUNT, pblk && !d->gauge);
		}
		fmt_value(tab_cell(&t, r, n + 1), CELL, sum, U_COUNT, prev && !d->gauge);
		snprintf(tab_cell(&t, r, n + 2), CELL, "%.*s", CELL - 1, d->help);
	}
	tab_print(&t);
	if (cut)
		printf("(first %u only; --json has all of them)\n", n);
}

/* ---- sockets ----------------------------------------------------------------- */

static void
owner_name(const struct dpsock_sock_stats *e, char *buf, size_t len)
{
	const struct dpsock_client_stats *c = e->client >= 0 && e->client < DPSOCK_STATS_MAX_CLIENTS ?
					      &seg->clients[e->client] : NULL;
	char cname[sizeof(c->name) + 1];

	if (e->client < 0 && e->fd < 0) {
		snprintf(buf, len, "%s[%d]", geo.app, (int)e->owner_pid);
	} else if (c != NULL && __atomic_load_n(&c->pid, __ATOMIC_RELAXED) == e->owner_pid) {
		/* a private, terminated copy: the client table is the writer's */
		memcpy(cname, c->name, sizeof(c->name));
		cname[sizeof(c->name)] = '\0';
		snprintf(buf, len, "%.12s[%d] fd %d", cname, (int)e->owner_pid, (int)e->fd);
	} else {
		snprintf(buf, len, "pid %d fd %d", (int)e->owner_pid, (int)e->fd);
	}
}

/* -s: "key=value" (state, proto, worker, port, lport, rport) or a
 * substring of "local remote"; several, comma separated, must all match.
 * With -p of a preloaded program, only its own sockets match. */
static bool
filter_match(const struct dpsock_sock_stats *e, const char *filter)
{
	char buf[256], *save = NULL, *tok;

	if (client_only != 0 && e->owner_pid != client_only)
		return false;
	if (filter == NULL || filter[0] == '\0')
		return true;
	snprintf(buf, sizeof(buf), "%s", filter);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char l[56], r[56], both[116];

		if (eq != NULL) {
			const char *v = eq + 1;
			bool ok;

			*eq = '\0';
			if (strcmp(tok, "state") == 0)
				ok = strcasecmp(v, dpsock_sock_state_name(e->state)) == 0;
			else if (strcmp(tok, "proto") == 0)
				ok = strcasecmp(v, e->proto == IPPROTO_TCP ? "tcp" : "udp") == 0;
			else if (strcmp(tok, "worker") == 0)
				ok = atoi(v) == e->worker;
			else if (strcmp(tok, "port") == 0)
				ok = atoi(v) == e->lport || atoi(v) == e->rport;
			else if (strcmp(tok, "lport") == 0)
				ok = atoi(v) == e->lport;
			else if (strcmp(tok, "rport") == 0)
				ok = atoi(v) == e->rport;
			else {
				fprintf(stderr, "dpsock-stat: -s %s=...: filters are state, proto, "
					"worker, port, lport, rport, or an address substring\n", tok);
				exit(2);
			}
			if (!ok)
				return false;
			continue;
		}
		dpsock_sock_fmt_end(l, sizeof(l), e, false);
		dpsock_sock_fmt_end(r, sizeof(r), e, true);
		snprintf(both, sizeof(both), "%s %s", l, r);
		if (strstr(both, tok) == NULL)
			return false;
	}
	return true;
}

static uint64_t
unlisted_total(const struct sample *cur)
{
	const struct dpsock_stat_desc *d =
		desc_find(dpsock_worker_stat_desc, dpsock_worker_stat_count, "sock_unlisted");
	uint64_t n = 0;
	unsigned int w;

	for (w = 0; w < geo.n_workers; w++)
		n += dpsock_stat_at(&cur->workers[w], d);
	return n;
}

static void
sockets_view(const struct sample *cur, const char *filter)
{
	char line[512], owner[64];
	unsigned int i, shown = 0;

	dpsock_sock_format_header(line, sizeof(line));
	printf("%s\n", line);
	for (i = 0; i < cur->n_socks; i++) {
		const struct dpsock_sock_stats *e = &cur->socks[i];

		if (!filter_match(e, filter))
			continue;
		owner_name(e, owner, sizeof(owner));
		dpsock_sock_format(e, owner, line, sizeof(line));
		printf("%s\n", line);
		shown++;
	}
	printf("%u socket(s)", shown);
	if (geo.sock_slots == 0)
		printf("; this instance lists no sockets (stats.socket_slots = 0)");
	else if (unlisted_total(cur))
		printf("; %" PRIu64 " created while the table was full were never listed "
		       "(stats.socket_slots = %u)", unlisted_total(cur), geo.sock_slots);
	printf("\n");
}

/* ---- JSON ---------------------------------------------------------------------- */

static void
json_str(const char *key, const char *v, bool comma)
{
	const char *p;

	printf("%s\"%s\": \"", comma ? ", " : "", key);
	for (p = v; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		/* names come from the segment (and from clients): anything
		 * but printable ASCII is escaped, as a code point of its byte */
		if (ch < 0x20 || ch >= 0x7f)
			printf("\\u%04x", ch);
		else if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void
json_num(const char *key, double v, bool rate)
{
	if (rate)
		printf(", \"%s\": %.3f", key, v);
	else
		printf(", \"%s\": %.0f", key, v);
}

static void json_port_info(unsigned int i);

static void
json_blocks(bool ports, const struct sample *cur, const struct sample *prev, double dt)
{
	const struct dpsock_stat_desc *desc = ports ? dpsock_port_stat_desc : dpsock_worker_stat_desc;
	unsigned int ndesc = ports ? dpsock_port_stat_count : dpsock_worker_stat_count;
	unsigned int n = ports ? geo.n_ports : geo.n_workers, i, k;

	printf("%s: [", ports ? "\"ports\"" : "\"workers\"");
	for (i = 0; i < n && i < (ports ? DPSOCK_STATS_MAX_PORTS : DPSOCK_STATS_MAX_WORKERS); i++) {
		const void *blk = ports ? (const void *)&cur->ports[i] : (const void *)&cur->workers[i];
		const void *pblk = prev == NULL ? NULL :
			ports ? (const void *)&prev->ports[i] : (const void *)&prev->workers[i];

		printf("%s{\"index\": %u", i ? ", " : "", i);
		if (ports) {
			json_str("name", geo.port_names[i], true);
			json_port_info(i);
		}
		else
			printf(", \"lcore\": %u", cur->workers[i].lcore_id);
		for (k = 0; k < ndesc; k++)
			json_num(desc[k].name, value(blk, pblk, &desc[k], dt), pblk && !desc[k].gauge);
		printf("}");
	}
	printf("]");
}

/* ---- preloaded sockets by process and descriptor (-S) ------------------------------- */

/* -S: one block per (pid, fd) of a preloaded socket, the counters of its
 * entries summed over the workers (a listener or UDP socket has one on
 * every worker; poll hits and misses are kept on its first). */
static void
fds_view(const struct options *o, const struct sample *cur, bool json)
{
	bool *done = calloc(cur->n_socks ? cur->n_socks : 1, sizeof(*done));
	unsigned int i, j, k, shown = 0;

	if (done == NULL) {
		fprintf(stderr, "dpsock-stat: out of memory\n");
		exit(1);
	}
	if (json)
		printf(", \"fds\": [");
	for (i = 0; i < cur->n_socks; i++) {
		const struct dpsock_sock_stats *e = &cur->socks[i];
		uint64_t sum[64] = { 0 };
		char local[56], remote[56], owner[64], workers[128] = "";
		size_t wl = 0;

		if (done[i] || e->fd < 0 || (o->fd != 0 && e->fd != o->fd) ||
		    (o->fd_pid != 0 && e->owner_pid != o->fd_pid) ||
		    (o->client_pid != 0 && e->owner_pid != o->client_pid))
			continue;
		for (j = i; j < cur->n_socks; j++) {
			const struct dpsock_sock_stats *f = &cur->socks[j];

			if (done[j] || f->owner_pid != e->owner_pid || f->fd != e->fd ||
			    f->proto != e->proto || f->lport != e->lport)
				continue;
			done[j] = true;
			for (k = 0; k < dpsock_sock_stat_count && k < NCOLS(sum); k++)
				sum[k] += dpsock_stat_at(f, &dpsock_sock_stat_desc[k]);
			wl += (size_t)snprintf(workers + wl, sizeof(workers) - wl, "%s%u",
					       wl ? (json ? ", " : ",") : "", f->worker);
			if (wl >= sizeof(workers))
				wl = sizeof(workers) - 1;
		}
		dpsock_sock_fmt_end(local, sizeof(local), e, false);
		if (e->raddr == 0 && e->rport == 0 && !(e->flags & DPSOCK_SOCK_F_IPV6))
			snprintf(remote, sizeof(remote), "*:*");
		else
			dpsock_sock_fmt_end(remote, sizeof(remote), e, true);
		owner_name(e, owner, sizeof(owner));
		if (json) {
			printf("%s{\"pid\": %d, \"fd\": %d", shown ? ", " : "", (int)e->owner_pid,
			       (int)e->fd);
			json_str("owner", owner, true);
			json_str("proto", e->proto == IPPROTO_TCP ? "tcp" : "udp", true);
			json_str("state", dpsock_sock_state_name(e->state), true);
			json_str("local", local, true);
			json_str("remote", remote, true);
			printf(", \"workers\": [%s]", workers);
			for (k = 0; k < dpsock_sock_stat_count && k < NCOLS(sum); k++)
				json_num(dpsock_sock_stat_desc[k].name, (double)sum[k], false);
			printf("}");
		} else {
			printf("%s: %s %s -> %s %s, worker(s) %s\n", owner,
			       e->proto == IPPROTO_TCP ? "tcp" : "udp", local, remote,
			       dpsock_sock_state_name(e->state), workers);
			for (k = 0; k < dpsock_sock_stat_count && k < NCOLS(sum); k++)
				printf("  %-14s %" PRIu64 "%s", dpsock_sock_stat_desc[k].name, sum[k],
				       k % 4 == 3 || k + 1 == dpsock_sock_stat_count ? "\n" : "");
		}
		shown++;
	}
	if (json)
		printf("]");
	else if (shown == 0)
		printf("no preloaded socket matches (-S %d%s%d)\n", o->fd_pid ? o->fd_pid : 0,
		       o->fd_pid ? ":" : "", o->fd);
	free(done);
}

static void
json_header(const struct sample *prev, double dt, const char *view)
{
	printf("{");
	json_str("name", geo.name, false);
	json_str("app", geo.app, true);
	printf(", \"pid\": %d, \"view\": \"%s\", \"details\": \"%s\"", (int)seg->pid, view,
	       prev ? "per_second" : "totals");
	if (prev)
		printf(", \"interval_s\": %.6f", dt);
}

static void
json_sockets(const struct sample *cur, const char *filter)
{
	unsigned int i, k, shown = 0;

	printf(", \"sockets\": [");
	for (i = 0; i < cur->n_socks; i++) {
		const struct dpsock_sock_stats *e = &cur->socks[i];
		char a[56], owner[64];

		if (!filter_match(e, filter))
			continue;
		printf("%s{", shown++ ? ", " : "");
		json_str("proto", e->proto == IPPROTO_TCP ? "tcp" : "udp", false);
		json_str("state", dpsock_sock_state_name(e->state), true);
		dpsock_sock_fmt_end(a, sizeof(a), e, false);
		json_str("local", a, true);
		dpsock_sock_fmt_end(a, sizeof(a), e, true);
		json_str("remote", a, true);
		owner_name(e, owner, sizeof(owner));
		json_str("owner", owner, true);
		printf(", \"worker\": %u, \"owner_pid\": %d, \"fd\": %d, \"offloaded\": %u"
		       ", \"recv_q\": %" PRIu64 ", \"send_q\": %" PRIu64,
		       e->worker, (int)e->owner_pid, (int)e->fd, e->offloaded,
		       e->rx_held + e->rx_refused, e->tx_queue);
		for (k = 0; k < dpsock_sock_stat_count; k++)
			json_num(dpsock_sock_stat_desc[k].name,
				 (double)dpsock_stat_at(e, &dpsock_sock_stat_desc[k]), false);
		printf("}");
	}
	printf("], \"unlisted\": %" PRIu64, unlisted_total(cur));
}

/* ---- how each port is served ---------------------------------------------------- */

/* Port i's mode and addresses, copied under their seqlock. */
static bool
port_info_copy(unsigned int i, struct dpsock_port_info *out)
{
	const struct dpsock_port_info *src = &seg->port_info[i];

	for (unsigned int tries = 0; tries < 1000; tries++) {
		/* acquire: pairs with the writer's release store of an even gen */
		uint32_t g1 = __atomic_load_n(&src->gen, __ATOMIC_ACQUIRE);

		if (g1 & 1)
			continue;
		copy_words(out, src, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&src->gen, __ATOMIC_RELAXED) == g1)
			return g1 != 0;   /* 0: never written (no port info) */
	}
	return false;
}

/* One line per port: owned (its address from dpsock.conf) or shared with
 * the kernel (the netdev's addresses, as the kernel has them). */
static void
port_lines(void)
{
	for (unsigned int i = 0; i < geo.n_ports && i < DPSOCK_STATS_MAX_PORTS; i++) {
		struct dpsock_port_info pi;
		char addrs[DPSOCK_STATS_PORT_ADDRS * 20 + DPSOCK_STATS_PORT_ADDRS6 * 48] = "";
		char a[INET6_ADDRSTRLEN];
		size_t o = 0;

		if (!port_info_copy(i, &pi))
			continue;
		for (unsigned int k = 0; k < pi.n_addrs && k < DPSOCK_STATS_PORT_ADDRS; k++)
			o += (size_t)snprintf(addrs + o, sizeof(addrs) - o, "%s%s/%u", o ? ", " : "",
					      inet_ntop(AF_INET, &pi.addrs[k], a, sizeof(a)),
					      pi.prefix_len[k]);
		for (unsigned int k = 0; k < pi.n_addrs6 && k < DPSOCK_STATS_PORT_ADDRS6; k++)
			o += (size_t)snprintf(addrs + o, sizeof(addrs) - o, "%s%s/%u", o ? ", " : "",
					      inet_ntop(AF_INET6, pi.addrs6[k], a, sizeof(a)),
					      pi.prefix6_len[k]);
		if (pi.shared)
			printf("port %u %s: shared with the kernel's %s (ifindex %u, link %s, MTU %u); "
			       "addresses from the kernel: %s\n", i, geo.port_names[i],
			       pi.ifname[0] ? pi.ifname : "?", pi.ifindex, pi.up ? "up" : "down",
			       pi.mtu, o ? addrs : "none yet");
		else
			printf("port %u %s: owned by dpsock; address from dpsock.conf: %s\n", i,
			       geo.port_names[i], addrs);
	}
}

static void
json_port_info(unsigned int i)
{
	struct dpsock_port_info pi;
	char a[INET6_ADDRSTRLEN];

	if (!port_info_copy(i, &pi))
		return;
	json_str("mode", pi.shared ? "shared" : "owned", true);
	json_str("addresses_from", pi.shared ? "kernel" : "config", true);
	if (pi.shared)
		json_str("netdev", pi.ifname, true);
	printf(", \"addresses\": [");
	for (unsigned int k = 0; k < pi.n_addrs && k < DPSOCK_STATS_PORT_ADDRS; k++)
		printf("%s\"%s/%u\"", k ? ", " : "", inet_ntop(AF_INET, &pi.addrs[k], a, sizeof(a)),
		       pi.prefix_len[k]);
	for (unsigned int k = 0; k < pi.n_addrs6 && k < DPSOCK_STATS_PORT_ADDRS6; k++)
		printf("%s\"%s/%u\"", k || pi.n_addrs ? ", " : "",
		       inet_ntop(AF_INET6, pi.addrs6[k], a, sizeof(a)), pi.prefix6_len[k]);
	printf("]");
}

/* ---- multicast ----------------------------------------------------------------- */

/* The multicast table, copied under its seqlock (dpsock_sockstat_read's protocol). */
static bool
mc_copy(struct dpsock_mc_table *t)
{
	const struct dpsock_mc_table *src = &seg->mc;

	for (unsigned int tries = 0; tries < 1000; tries++) {
		/* acquire: pairs with the writer's release store of an even gen */
		uint32_t g1 = __atomic_load_n(&src->gen, __ATOMIC_ACQUIRE);

		if (g1 & 1)
			continue;
		copy_words(t, src, sizeof(*t));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&src->gen, __ATOMIC_RELAXED) == g1)
			return true;
	}
	return false;
}

static const char *
mc_mode(uint8_t m)
{
	return m == DPSOCK_MC_MODE_INCLUDE ? "INCLUDE" : m == DPSOCK_MC_MODE_EXCLUDE ? "EXCLUDE" : "-";
}

/* A table address (16 bytes): an IPv4-mapped one as IPv4. */
static const char *
mc_ntop(const uint8_t a[16], char *buf, size_t len)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(a, mapped, 12) == 0)
		return inet_ntop(AF_INET, a + 12, buf, (socklen_t)len);
	return inet_ntop(AF_INET6, a, buf, (socklen_t)len);
}

static bool
mc_zero(const uint8_t a[16])
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

/* "{a, b}" (shown of n in all) */
static void
mc_srcs(char *buf, size_t len, const uint8_t (*src)[16], unsigned int shown, unsigned int n,
	bool json)
{
	size_t off = 0;
	char a[INET6_ADDRSTRLEN];

	off += snprintf(buf + off, len - off, json ? "[" : "{");
	for (unsigned int i = 0; i < shown && off < len; i++) {
		mc_ntop(src[i], a, sizeof(a));
		off += snprintf(buf + off, len - off, json ? "%s\"%s\"" : "%s%s", i ? ", " : "", a);
	}
	if (n > shown && off < len && !json)
		off += snprintf(buf + off, len - off, ", +%u", n - shown);
	if (off < len)
		snprintf(buf + off, len - off, json ? "]" : "}");
}

/* A member row's socket entry in the sample (same worker, index, serial). */
static const struct dpsock_sock_stats *
mc_sock(const struct sample *cur, const struct dpsock_mc_member_row *r)
{
	if (r->sock_idx < 0)
		return NULL;
	/* serials are per worker: a reused entry has another */
	for (unsigned int i = 0; i < cur->n_socks; i++)
		if (cur->socks[i].worker == r->worker && cur->socks[i].serial == r->serial)
			return &cur->socks[i];
	return NULL;
}

/* One line per socket: a preloaded socket has a member on every worker
 * (its slots); they are summed as one (pid, fd). */
struct mc_sub {
	uint8_t group[16];
	uint16_t port;
	uint8_t mode, nsrc;
	int32_t pid, fd;
	uint64_t workers;         /* bit per worker */
	uint8_t src[DPSOCK_STATS_MC_MSRCS][16];
	uint64_t dgrams, bytes, drops;
	uint32_t lport;
};

static unsigned int
mc_subs(const struct dpsock_mc_table *t, const struct sample *cur, struct mc_sub *v)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < t->n_members && i < DPSOCK_STATS_MC_MEMBERS; i++) {
		const struct dpsock_mc_member_row *r = &t->members[i];
		const struct dpsock_sock_stats *e = mc_sock(cur, r);
		unsigned int j;

		for (j = 0; j < n; j++)
			if (memcmp(v[j].group, r->group, 16) == 0 && v[j].port == r->port &&
			    v[j].pid == r->pid &&
			    v[j].fd == r->fd &&
			    (r->fd >= 0 || (v[j].workers & (1ull << (r->worker % 64))) == 0))
				break;
		if (j == n || r->fd < 0) {
			/* native sockets (fd -1) are one per worker: keep them apart */
			j = n++;
			memset(&v[j], 0, sizeof(v[j]));
			memcpy(v[j].group, r->group, 16);
			v[j].port = r->port;
			v[j].pid = r->pid;
			v[j].fd = r->fd;
			v[j].mode = r->mode;
			v[j].nsrc = r->nsrc;
			memcpy(v[j].src, r->src, sizeof(v[j].src));
		}
		v[j].workers |= 1ull << (r->worker % 64);
		if (e != NULL) {
			v[j].dgrams += e->rx_packets;
			v[j].bytes += e->rx_bytes;
			v[j].drops += e->rx_drops;
			v[j].lport = e->lport;
		}
	}
	return n;
}

/* "; querier Q, last query N s ago[; older querier ...]" and the line's end */
static void
mc_querier(const struct dpsock_mc_port_row *p, const struct timespec *now)
{
	char q[INET6_ADDRSTRLEN];

	if (!mc_zero(p->querier)) {
		mc_ntop(p->querier, q, sizeof(q));
		printf("; querier %s, last query %.0f s ago", q,
		       ((double)now->tv_sec * 1e9 + now->tv_nsec - (double)p->query_ns) / 1e9);
	} else {
		printf("; no querier heard");
	}
	if (p->older_until_ns > (uint64_t)now->tv_sec * 1000000000ull)
		printf("; older querier present for %.0f s more",
		       ((double)p->older_until_ns - ((double)now->tv_sec * 1e9 + now->tv_nsec)) / 1e9);
	printf("\n");
}

static const char *const mc_filter_names[] = {
	[DPSOCK_MC_FILTER_NONE] = "none (what the link delivers)",
	[DPSOCK_MC_FILTER_LIST] = "MAC list",
	[DPSOCK_MC_FILTER_ALLMULTI] = "allmulticast",
};

static void
mc_view(const struct sample *cur, const struct sample *prev, double dt, bool json)
{
	static struct dpsock_mc_table t;
	static struct mc_sub subs[DPSOCK_STATS_MC_MEMBERS];
	char a[INET6_ADDRSTRLEN], q[INET6_ADDRSTRLEN], q6[INET6_ADDRSTRLEN], srcs[1024];
	unsigned int i, ns;
	struct timespec now;
	struct table tb;

	if (!mc_copy(&t)) {
		fprintf(stderr, "dpsock-stat: the multicast table kept changing; try again\n");
		memset(&t, 0, sizeof(t));
	}
	ns = mc_subs(&t, cur, subs);
	clock_gettime(CLOCK_REALTIME, &now);
	if (json) {
		printf(", \"ports\": [");
		for (i = 0; i < geo.n_ports; i++) {
			const struct dpsock_mc_port_row *p = &t.ports[i], *p6 = &t.mld[i];

			mc_ntop(p->querier, q, sizeof(q));
			mc_ntop(p6->querier, q6, sizeof(q6));
			printf("%s{\"port\": %u", i ? ", " : "", i);
			json_str("name", geo.port_names[i], true);
			printf(", \"igmp_version\": %u, "
			       "\"filter\": \"%s\", \"macs\": %u, \"robustness\": %u, \"querier\": \"%s\", "
			       "\"query_age_s\": %.1f, \"mld_version\": %u, \"mld_robustness\": %u, "
			       "\"mld_querier\": \"%s\", \"mld_query_age_s\": %.1f}",
			       p->version,
			       p->filter == DPSOCK_MC_FILTER_LIST ? "list" :
			       p->filter == DPSOCK_MC_FILTER_ALLMULTI ? "allmulticast" : "none",
			       p->n_macs, p->robustness, !mc_zero(p->querier) ? q : "",
			       p->query_ns ? ((double)now.tv_sec * 1e9 + now.tv_nsec - (double)p->query_ns) / 1e9 : -1.0,
			       p6->version, p6->robustness, !mc_zero(p6->querier) ? q6 : "",
			       p6->query_ns ? ((double)now.tv_sec * 1e9 + now.tv_nsec - (double)p6->query_ns) / 1e9 : -1.0);
		}
		printf("], \"groups\": [");
		for (i = 0; i < t.n_groups && i < DPSOCK_STATS_MC_GROUPS; i++) {
			const struct dpsock_mc_group_row *g = &t.groups[i];

			mc_ntop(g->addr, a, sizeof(a));
			mc_srcs(srcs, sizeof(srcs), g->src, MIN_U(g->nsrc, DPSOCK_STATS_MC_SRCS),
				g->nsrc, true);
			printf("%s{\"group\": \"%s\", \"port\": %u, \"mode\": \"%s\", \"sources\": %s, "
			       "\"nsources\": %u, \"members\": %u}", i ? ", " : "", a, g->port,
			       mc_mode(g->mode), srcs, g->nsrc, g->members);
		}
		printf("], \"subscribers\": [");
		for (i = 0; i < ns; i++) {
			mc_ntop(subs[i].group, a, sizeof(a));
			mc_srcs(srcs, sizeof(srcs), subs[i].src,
				MIN_U(subs[i].nsrc, DPSOCK_STATS_MC_MSRCS), subs[i].nsrc, true);
			printf("%s{\"group\": \"%s\", \"port\": %u, \"pid\": %d, \"fd\": %d, "
			       "\"workers\": %u, \"mode\": \"%s\", \"sources\": %s, \"local_port\": %u, "
			       "\"datagrams\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"drops\": %" PRIu64 "}",
			       i ? ", " : "", a, subs[i].port, (int)subs[i].pid, (int)subs[i].fd,
			       (unsigned int)__builtin_popcountll(subs[i].workers), mc_mode(subs[i].mode),
			       srcs, subs[i].lport, subs[i].dgrams, subs[i].bytes, subs[i].drops);
		}
		printf("], \"unlisted\": %u", t.unlisted);
		return;
	}
	for (i = 0; i < geo.n_ports; i++) {
		const struct dpsock_mc_port_row *p = &t.ports[i], *p6 = &t.mld[i];
		bool v6 = p6->query_ns != 0 || p6->version != 2;

		/* the MLD host's line once it has something to say: an IPv6
		 * group on the port, a query heard */
		for (unsigned int j = 0; j < t.n_groups && j < DPSOCK_STATS_MC_GROUPS && !v6; j++)
			v6 = t.groups[j].port == i && t.groups[j].addr[10] != 0xff;
		printf("Port %u (%s): IGMPv%u host, robustness %u, multicast filter: %s", i,
		       geo.port_names[i], p->version, p->robustness,
		       mc_filter_names[p->filter <= DPSOCK_MC_FILTER_ALLMULTI ? p->filter : 0]);
		if (p->filter == DPSOCK_MC_FILTER_LIST)
			printf(" (%u MACs)", p->n_macs);
		mc_querier(p, &now);
		if (v6) {
			printf("Port %u (%s): MLDv%u host, robustness %u", i, geo.port_names[i],
			       p6->version, p6->robustness);
			mc_querier(p6, &now);
		}
	}
	printf("\nGroups joined (interface state: every socket's filter merged, RFC 3376 3.2)\n");
	tab_init(&tb, DPSOCK_STATS_MC_GROUPS);
	tab_col(&tb, "Group", true);
	tab_col(&tb, "Port", false);
	tab_col(&tb, "Mode", true);
	tab_col(&tb, "Sources", true);
	tab_col(&tb, "Memberships", false);
	for (i = 0; i < t.n_groups && i < DPSOCK_STATS_MC_GROUPS; i++) {
		const struct dpsock_mc_group_row *g = &t.groups[i];

		mc_ntop(g->addr, a, sizeof(a));
		mc_srcs(srcs, CELL, g->src, MIN_U(g->nsrc, 4u), g->nsrc, false);
		snprintf(tab_cell(&tb, i, 0), CELL, "%s", a);
		snprintf(tab_cell(&tb, i, 1), CELL, "%u", g->port);
		snprintf(tab_cell(&tb, i, 2), CELL, "%s", mc_mode(g->mode));
		memcpy(tab_cell(&tb, i, 3), srcs, CELL);
		snprintf(tab_cell(&tb, i, 4), CELL, "%u", g->members);
	}
	tab_print(&tb);
	if (t.n_groups == 0)
		printf("none\n");
	printf("\nSubscribers (a preloaded socket's slots on every worker summed; native sockets per worker)\n");
	tab_init(&tb, ns);
	tab_col(&tb, "Group", true);
	tab_col(&tb, "Port", false);
	tab_col(&tb, "Pid", false);
	tab_col(&tb, "Fd", false);
	tab_col(&tb, "Workers", false);
	tab_col(&tb, "UDP port", false);
	tab_col(&tb, "Mode", true);
	tab_col(&tb, "Sources", true);
	tab_col(&tb, "Datagrams", false);
	tab_col(&tb, "Bytes", false);
	tab_col(&tb, "Dropped", false);
	for (i = 0; i < ns; i++) {
		char b[32];

		mc_ntop(subs[i].group, a, sizeof(a));
		mc_srcs(srcs, CELL, subs[i].src, MIN_U(subs[i].nsrc, 3u), subs[i].nsrc, false);
		snprintf(tab_cell(&tb, i, 0), CELL, "%s", a);
		snprintf(tab_cell(&tb, i, 1), CELL, "%u", subs[i].port);
		snprintf(tab_cell(&tb, i, 2), CELL, "%d", (int)subs[i].pid);
		snprintf(tab_cell(&tb, i, 3), CELL, "%d", (int)subs[i].fd);
		snprintf(tab_cell(&tb, i, 4), CELL, "%u",
			 (unsigned int)__builtin_popcountll(subs[i].workers));
		snprintf(tab_cell(&tb, i, 5), CELL, "%u", subs[i].lport);
		snprintf(tab_cell(&tb, i, 6), CELL, "%s", mc_mode(subs[i].mode));
		memcpy(tab_cell(&tb, i, 7), srcs, CELL);
		snprintf(tab_cell(&tb, i, 8), CELL, "%" PRIu64, subs[i].dgrams);
		snprintf(tab_cell(&tb, i, 9), CELL, "%s",
			 dpsock_fmt_bytes(b, sizeof(b), (double)subs[i].bytes));
		snprintf(tab_cell(&tb, i, 10), CELL, "%" PRIu64, subs[i].drops);
	}
	tab_print(&tb);
	if (ns == 0)
		printf("none\n");
	if (t.unlisted)
		printf("(%u groups or memberships not listed: the table is full)\n", t.unlisted);
	printf("\nMulticast and IGMP counters (IGMP: worker %u's host)\n", 0u);
	counter_table(worker_mc, NCOLS(worker_mc), false, cur, prev, dt);
}

/* ---- preload clients --------------------------------------------------------------- */

/* A consistent copy of the used entries (pid != 0). The writer (dpsockd's
 * control thread) stores pid last with release and clears it first. */
static unsigned int
clients_collect(struct dpsock_client_stats *out, unsigned int max)
{
	unsigned int n = 0, i, used = __atomic_load_n(&seg->n_clients, __ATOMIC_ACQUIRE);

	for (i = 0; i < used && i < DPSOCK_STATS_MAX_CLIENTS && n < max; i++) {
		const struct dpsock_client_stats *e = &seg->clients[i];
		/* acquire: pairs with the release store of pid in dpsockd */
		int32_t pid = __atomic_load_n(&e->pid, __ATOMIC_ACQUIRE);

		if (pid == 0)
			continue;
		out[n].pid = pid;
		out[n].threads = __atomic_load_n(&e->threads, __ATOMIC_RELAXED);
		out[n].rings = __atomic_load_n(&e->rings, __ATOMIC_RELAXED);
		out[n].group = __atomic_load_n(&e->group, __ATOMIC_RELAXED);
		out[n].wakeups = __atomic_load_n(&e->wakeups, __ATOMIC_RELAXED);
		out[n].sockets = __atomic_load_n(&e->sockets, __ATOMIC_RELAXED);
		memcpy(out[n].name, e->name, sizeof(out[n].name));
		out[n].name[sizeof(out[n].name) - 1] = '\0';
		if (__atomic_load_n(&e->pid, __ATOMIC_ACQUIRE) == pid)
			n++;
	}
	return n;
}

static void
clients_view(bool json)
{
	struct dpsock_client_stats rows[DPSOCK_STATS_MAX_CLIENTS];
	unsigned int n = clients_collect(rows, DPSOCK_STATS_MAX_CLIENTS), i;
	struct table t;

	if (json) {
		printf(", \"clients\": [");
		for (i = 0; i < n; i++) {
			/* the program name comes from the client: escaped */
			printf("%s{\"pid\": %d", i ? ", " : "", (int)rows[i].pid);
			json_str("program", rows[i].name, true);
			printf(", \"group\": %u, \"threads\": %u, \"waiters\": %u, \"sockets\": %" PRIu64
			       ", \"wakeups\": %" PRIu64 "}", rows[i].group, rows[i].threads,
			       rows[i].rings, rows[i].sockets, rows[i].wakeups);
		}
		printf("]");
		return;
	}
	printf("Preload clients (sockets and wake-ups are per group: a process and its forks)\n");
	tab_init(&t, n);
	tab_col(&t, "Pid", false);
	tab_col(&t, "Program", true);
	tab_col(&t, "Group", false);
	tab_col(&t, "Threads", false);
	tab_col(&t, "Waiters", false);
	tab_col(&t, "Sockets", false);
	tab_col(&t, "Wake-ups", false);
	for (i = 0; i < n; i++) {
		snprintf(tab_cell(&t, i, 0), CELL, "%d", (int)rows[i].pid);
		snprintf(tab_cell(&t, i, 1), CELL, "%s", rows[i].name);
		snprintf(tab_cell(&t, i, 2), CELL, "%u", rows[i].group);
		snprintf(tab_cell(&t, i, 3), CELL, "%u", rows[i].threads);
		snprintf(tab_cell(&t, i, 4), CELL, "%u", rows[i].rings);
		snprintf(tab_cell(&t, i, 5), CELL, "%" PRIu64, rows[i].sockets);
		snprintf(tab_cell(&t, i, 6), CELL, "%" PRIu64, rows[i].wakeups);
	}
	tab_print(&t);
	if (n == 0)
		printf("none\n");
}

/* ---- output of one sample --------------------------------------------------------- */

static void
print_raw(const struct sample *cur, const struct sample *prev, double dt)
{
	unsigned int idx, k;

	printf("daemon.0.pid %d\ndaemon.0.ports %u\ndaemon.0.workers %u\n", (int)seg->pid,
	       geo.n_ports, geo.n_workers);
	for (idx = 0; idx < geo.n_ports; idx++)
		for (k = 0; k < dpsock_port_stat_count; k++) {
			const struct dpsock_stat_desc *d = &dpsock_port_stat_desc[k];
			double v = value(&cur->ports[idx], prev ? &prev->ports[idx] : NULL, d, dt);

			printf(prev && !d->gauge ? "port.%u.%s %.3f\n" : "port.%u.%s %.0f\n", idx,
			       d->name, v);
		}
	for (idx = 0; idx < geo.n_workers; idx++)
		for (k = 0; k < dpsock_worker_stat_count; k++) {
			const struct dpsock_stat_desc *d = &dpsock_worker_stat_desc[k];
			double v = value(&cur->workers[idx], prev ? &prev->workers[idx] : NULL, d, dt);

			printf(prev && !d->gauge ? "worker.%u.%s %.3f\n" : "worker.%u.%s %.0f\n", idx,
			       d->name, v);
		}
}

static void
print_title(const struct sample *prev, double dt)
{
	time_t now = time(NULL);
	struct tm tm;
	char when[32];
	uint64_t up = (uint64_t)now - seg->start_time_ns / 1000000000ULL;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	printf("==== %s: %s '%s', pid %d, %u port(s), %u worker(s), up %" PRIu64 ":%02" PRIu64
	       ":%02" PRIu64 " — %s", when, geo.app, geo.name, (int)seg->pid, geo.n_ports,
	       geo.n_workers, up / 3600, up / 60 % 60, up % 60,
	       prev ? "per second" : "totals");
	if (prev)
		printf(" over %.2f s", dt);
	printf("\n");
}

static void
print_sample(const struct options *o, const struct sample *cur, const struct sample *prev)
{
	double dt = prev ? cur->t - prev->t : 0;

	if (o->view == VIEW_RAW && !o->json) {
		print_raw(cur, prev, dt);
		return;
	}
	if (o->json) {
		json_header(prev, dt, o->fds ? "fds" : view_names[o->view]);
		if (o->fds) {
			fds_view(o, cur, true);
		} else if (o->view == VIEW_SOCKETS) {
			json_sockets(cur, o->filter);
		} else if (o->view == VIEW_MC) {
			mc_view(cur, prev, dt, true);
		} else if (o->view == VIEW_CLIENTS) {
			clients_view(true);
		} else {
			printf(", ");
			json_blocks(true, cur, prev, dt);
			printf(", ");
			json_blocks(false, cur, prev, dt);
		}
		printf("}\n");
		return;
	}
	print_title(prev, dt);
	if (o->fds) {
		fds_view(o, cur, false);
		fflush(stdout);
		return;
	}
	switch (o->view) {
	case VIEW_SOCKETS:
		sockets_view(cur, o->filter);
		break;
	case VIEW_MC:
		mc_view(cur, prev, dt, false);
		break;
	case VIEW_CLIENTS:
		clients_view(false);
		break;
	case VIEW_FULL:
		port_lines();
		full_table(true, cur, prev, dt);
		printf("\n");
		full_table(false, cur, prev, dt);
		break;
	default:
		port_lines();
		counter_table(port_basic, NCOLS(port_basic), true, cur, prev, dt);
		if (o->view == VIEW_EXTRA)
			counter_table(port_extra, NCOLS(port_extra), true, cur, prev, dt);
		printf("\n");
		counter_table(worker_basic, NCOLS(worker_basic), false, cur, prev, dt);
		if (o->view == VIEW_EXTRA) {
			printf("\nDrops\n");
			counter_table(worker_extra_drops, NCOLS(worker_extra_drops), false, cur,
				      prev, dt);
			printf("\nSteering, wake-ups, timers\n");
			counter_table(worker_extra_steer, NCOLS(worker_extra_steer), false, cur,
				      prev, dt);
			printf("\nRX bursts (packets per burst), memory\n");
			counter_table(worker_extra_mem, NCOLS(worker_extra_mem), false, cur, prev,
				      dt);
		}
	}
	fflush(stdout);
}

/* ---- requests ----------------------------------------------------------------------- */

static int
request_zero(struct dpsock_stats_segment *s)
{
	/* release: pairs with the writers' acquire loads of zero_req */
	uint64_t req = __atomic_add_fetch(&s->ctl.zero_req, 1, __ATOMIC_RELEASE);
	double deadline = now_s() + 5;
	unsigned int w;

	while (now_s() < deadline) {
		bool done = __atomic_load_n(&s->ctl.zero_ack_ports, __ATOMIC_ACQUIRE) >= req;

		for (w = 0; w < geo.n_workers && done; w++)
			done = __atomic_load_n(&s->workers[w].zero_ack, __ATOMIC_ACQUIRE) >= req;
		if (done) {
			printf("dpsock-stat: counters of '%s' zeroed (%u port(s), %u worker(s))\n",
			       geo.name, geo.n_ports, geo.n_workers);
			return 0;
		}
		if (!instance_alive(s))
			break;
		usleep(20000);
	}
	fprintf(stderr, "dpsock-stat: '%s' did not acknowledge the zero request within 5 s\n",
		geo.name);
	return 1;
}

static int
request_log(struct dpsock_stats_segment *s, const char *spec)
{
	struct dpsock_stats_ctl *ctl = &s->ctl;
	double deadline = now_s() + 5;
	uint64_t req;

	if (strlen(spec) >= sizeof(ctl->log_spec)) {
		fprintf(stderr, "dpsock-stat: --log-level: at most %zu characters\n",
			sizeof(ctl->log_spec) - 1);
		return 2;
	}
	/* one request at a time: wait for the one pending, if any */
	while (__atomic_load_n(&ctl->log_req, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&ctl->log_ack, __ATOMIC_ACQUIRE) && now_s() < deadline)
		usleep(20000);
	req = __atomic_load_n(&ctl->log_ack, __ATOMIC_ACQUIRE) + 1;
	memset(ctl->log_spec, 0, sizeof(ctl->log_spec));
	memcpy(ctl->log_spec, spec, strlen(spec));
	/* release: the spec is visible before the request number */
	__atomic_store_n(&ctl->log_req, req, __ATOMIC_RELEASE);
	while (now_s() < deadline) {
		/* acquire: pairs with the instance's release store of log_ack */
		if (__atomic_load_n(&ctl->log_ack, __ATOMIC_ACQUIRE) >= req) {
			if (ctl->log_status != 0) {
				fprintf(stderr, "dpsock-stat: %s: %.*s\n", geo.name,
					(int)sizeof(ctl->log_msg), ctl->log_msg);
				return 1;
			}
			printf("dpsock-stat: %s: %.*s\n", geo.name, (int)sizeof(ctl->log_msg),
			       ctl->log_msg);
			return 0;
		}
		if (!instance_alive(s))
			break;
		usleep(20000);
	}
	fprintf(stderr, "dpsock-stat: '%s' did not answer the log level request within 5 s\n",
		geo.name);
	return 1;
}

/* ---- main ------------------------------------------------------------------------------ */

/* -S [PID:]FD */
static int
parse_fd_arg(const char *arg, struct options *o)
{
	const char *colon = strchr(arg, ':');
	char *end;
	long v;

	o->fd_pid = 0;
	if (colon != NULL) {
		v = strtol(arg, &end, 10);
		if (end != colon || v <= 0 || v > INT32_MAX)
			return -1;
		o->fd_pid = (int)v;
		arg = colon + 1;
	}
	v = strtol(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || v < 0 || v > INT32_MAX)
		return -1;
	o->fd = (int)v;
	o->fds = true;
	return 0;
}

static int
parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_RAW = 256, OPT_LOG };
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "pid", required_argument, NULL, 'p' },
		{ "view", required_argument, NULL, 'v' },
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "details", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "filter", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "zero", no_argument, NULL, 'z' },
		{ "log-level", required_argument, NULL, OPT_LOG },
		{ "fd", required_argument, NULL, 'S' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool cycles_given = false, details_given = false;
	unsigned int v;
	char *end;
	int opt;

	memset(o, 0, sizeof(*o));
	o->name = NULL;
	o->mode = 1;
	o->cycles = 1;
	while ((opt = getopt_long(argc, argv, "n:p:v:d:i:c:s:S:jzVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			o->name = optarg;
			break;
		case 'p':
			o->pid = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || o->pid <= 0) {
				fprintf(stderr, "dpsock-stat: -p %s: not a pid\n", optarg);
				return 2;
			}
			break;
		case 'v':
			for (v = VIEW_BASIC; v < NCOLS(view_names); v++)
				if (strcmp(optarg, view_names[v]) == 0)
					break;
			/* vma_stats' numeric levels: 1 basic .. 5 the netstat-like view */
			if (optarg[0] >= '1' && optarg[0] <= '5' && optarg[1] == '\0')
				v = (unsigned int)(VIEW_BASIC + (optarg[0] - '1'));
			if (v == NCOLS(view_names)) {
				fprintf(stderr, "dpsock-stat: -v %s: views are basic, extra, full, mc, clients, "
					"sockets (or 1..5: basic, extra, full, mc, sockets)\n", optarg);
				return 2;
			}
			o->view = v;
			o->view_given = true;
			break;
		case OPT_RAW:
			o->view = VIEW_RAW;
			o->view_given = true;
			break;
		case 'd':
			if (strcmp(optarg, "1") != 0 && strcmp(optarg, "2") != 0) {
				fprintf(stderr, "dpsock-stat: -d %s: 1 (totals) or 2 (per second)\n",
					optarg);
				return 2;
			}
			o->mode = optarg[0] - '0';
			details_given = true;
			break;
		case 'i':
			o->interval = strtod(optarg, &end);
			if (*end != '\0' || !(o->interval >= 0.01) || o->interval > 86400) {
				fprintf(stderr, "dpsock-stat: -i %s: seconds, 0.01..86400\n", optarg);
				return 2;
			}
			break;
		case 'c':
			o->cycles = strtol(optarg, &end, 10);
			if (*end != '\0' || o->cycles < 0) {
				fprintf(stderr, "dpsock-stat: -c %s: a number of samples, 1 or more (0: until interrupted)\n",
					optarg);
				return 2;
			}
			if (o->cycles == 0)
				o->cycles = -1;
			cycles_given = true;
			break;
		case 'S':
			if (parse_fd_arg(optarg, o) < 0) {
				fprintf(stderr, "dpsock-stat: -S %s: [PID:]FD, FD 0 for every preloaded socket\n",
					optarg);
				return 2;
			}
			break;
		case 'V':
			printf("dpsock-stat %s (stats segment version %u)\n", DPSOCK_VERSION,
			       DPSOCK_STATS_VERSION);
			exit(0);
		case 's':
			o->filter = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'z':
			o->zero = true;
			break;
		case OPT_LOG:
			o->log_spec = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dpsock-stat: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (o->name != NULL && o->pid != 0) {
		fprintf(stderr, "dpsock-stat: -n and -p choose the instance: give one\n");
		return 2;
	}
	if (o->name == NULL)
		o->name = "dpsock";
	/* -d alone picks the basic view; the plain lines stay the default */
	if (!o->view_given && details_given)
		o->view = VIEW_BASIC;
	/* -c 0 without -i: vma_stats' default interval, one second */
	if (cycles_given && o->cycles < 0 && o->interval == 0)
		o->interval = 1;
	/* -c: samples. Default 1; unlimited with -i; with -d 2 and no -i, two
	 * samples 1 s apart (one line of rates) */
	if (!cycles_given)
		o->cycles = o->interval > 0 ? -1 : o->mode == 2 ? 2 : 1;
	if (o->mode == 2 && o->interval == 0)
		o->interval = 1;
	if (o->mode == 2 && o->cycles < 2) {
		fprintf(stderr, "dpsock-stat: -d 2 needs two samples or more (-c 2)\n");
		return 2;
	}
	return -1;
}

static void
sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int
main(int argc, char **argv)
{
	struct sample a = { 0 }, b = { 0 }, *cur = &a, *prev = NULL;
	struct options o;
	char err[512];
	bool want_sockets, writes;
	double next;
	long n;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.pid != 0) {
		if (find_by_pid(o.pid, seg_shm, sizeof(seg_shm), &o.client_pid) != 0) {
			fprintf(stderr, "dpsock-stat: no dpsock instance with pid %d, and no preloaded "
				"program %d attached to one\n", o.pid, o.pid);
			return 1;
		}
	} else {
		snprintf(seg_shm, sizeof(seg_shm), DPSOCK_STATS_SHM_FMT, o.name);
	}
	writes = o.zero || o.log_spec != NULL;
	seg = map_segment(seg_shm, writes, err, sizeof(err));
	if (seg == NULL) {
		if (o.pid == 0 && errno == ENOENT)
			fprintf(stderr, "dpsock-stat: no dpsock instance called '%s' is running "
				"(/dev/shm%s: %s)\n", o.name, seg_shm, strerror(ENOENT));
		else
			fprintf(stderr, "dpsock-stat: %s\n", err);
		return 1;
	}
	if (!instance_alive(seg)) {
		fprintf(stderr, "dpsock-stat: dpsock instance '%s' (pid %d) is not running "
			"(starting or stopped)\n", geo.name, (int)seg->pid);
		return 1;
	}
	if (o.log_spec != NULL) {
		rc = request_log((struct dpsock_stats_segment *)seg, o.log_spec);
		if (rc != 0 || (!o.zero && !o.view_given && o.interval == 0))
			return rc;
	}
	if (o.zero) {
		rc = request_zero((struct dpsock_stats_segment *)seg);
		if (rc != 0 || (!o.view_given && o.interval == 0 && o.mode == 1))
			return rc;
	}
	want_sockets = o.view == VIEW_SOCKETS || o.view == VIEW_MC || o.fds;
	client_only = o.client_pid;
	next = now_s();
	for (n = 0; o.cycles < 0 || n < o.cycles; n++) {
		if (n > 0) {
			next += o.interval;
			sleep_until(next);
			if (!instance_alive(seg)) {
				printf("dpsock-stat: dpsock instance '%s' (pid %d) stopped\n",
				       geo.name, (int)seg->pid);
				return 0;
			}
		}
		take_sample(cur, want_sockets);
		if (o.mode == 2) {
			if (prev != NULL)
				print_sample(&o, cur, prev);
			prev = cur;
			cur = cur == &a ? &b : &a;
		} else {
			print_sample(&o, cur, NULL);
			if (o.view == VIEW_RAW && !o.json && o.cycles != 1 && n + 1 != o.cycles)
				printf("\n");
		}
	}
	free(a.socks);
	free(b.socks);
	munmap((void *)seg, seg_len);
	return 0;
}
