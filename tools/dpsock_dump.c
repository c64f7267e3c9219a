/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock-dump — a tcpdump for what a dpsock instance (dpsockd or a native
 * app) receives and sends: the frames its workers take from the ports
 * (with the counter of those they drop) and give to them, through the
 * instance's capture segment (abi/capture_ring.h), written as pcapng (-w)
 * or shown by tcpdump (or one line per frame when tcpdump is not there).
 * The filter is tcpdump's language, compiled here by libpcap and run by
 * the workers (rte_bpf). No DPDK: like dpsock-stat, it only maps segments.
 *
 *   dpsock-dump [-n NAME] [-i PORT] [-w FILE|-] [-c COUNT] [-s SNAPLEN]
 *               [-Q in|out|inout] [--pid PID [--fd FD]] [-q] [expression]
 *
 * Exit 0 after a capture; 1 when it cannot run (no instance, refused,
 * every session taken, a write failed); 2 on a bad command line or filter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "capture_ring.h"
#include "spsc_ring.h"
#include "stats_segment.h"

#define PROG "dpsock-dump"
#define BATCH 512               /* records taken from a ring per pass */
#define RESOLVE_MS 1000         /* --pid: how often the program's sockets are read again */

static volatile sig_atomic_t stop_sig;

static void
on_signal(int sig)
{
	stop_sig = sig;
}

struct opts {
	const char *name;
	const char *port;
	const char *out;            /* -w; NULL: show */
	uint64_t count;             /* -c; 0: unlimited */
	uint32_t snaplen;
	uint32_t dirs;
	int pid, fd;                /* --pid / --fd; -1: none */
	bool quiet;
	char expr[4096];
};

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [-n NAME] [-i PORT] [-w FILE|-] [-c COUNT] [-s SNAPLEN]\n"
		"                   [-Q in|out|inout] [--pid PID [--fd FD]] [-q] [expression]\n"
		"Capture what a dpsock instance's ports receive and send (tcpdump's filter\n"
		"language; the workers run it).\n"
		"  -n, --name NAME     the instance (default dpsock)\n"
		"  -i, --interface P   one port, by name or index (default: every port)\n"
		"  -w, --write FILE    pcapng to FILE (- : stdout); without it, tcpdump -n shows\n"
		"                      the frames (one line each of our own without tcpdump)\n"
		"  -c, --count N       stop after N frames\n"
		"  -s, --snaplen N     bytes kept of each frame (1..65535, default 65535)\n"
		"  -Q, --direction D   in, out or inout (default)\n"
		"      --pid PID       only the frames of that program's offloaded sockets\n"
		"      --fd FD         ... of that descriptor of it\n"
		"  -q, --quiet         no summary on stderr at the end\n"
		"  -h, --help          this text\n");
}

/* ---- the instance's segments -------------------------------------------------- */

static unsigned char *cap_seg;
static size_t cap_size;
static struct dpsock_cap_hdr *cap;

static struct dpsock_cap_session *
session(unsigned int i)
{
	return (struct dpsock_cap_session *)(void *)(cap_seg + cap->off_sessions +
						      (uint64_t)i * cap->session_stride);
}

/* Map /dev/shm<shm> whole, writable with O_RDWR; NULL with errno set
 * (EBADMSG: an empty segment). */
static void *
map_shm(const char *shm, int flags, size_t *size)
{
	struct stat st;
	void *p = MAP_FAILED;
	int fd, e;

	fd = shm_open(shm, flags, 0);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0)
		; /* errno says why */
	else if (st.st_size == 0)
		errno = EBADMSG;
	else
		p = mmap(NULL, (size_t)st.st_size,
			 flags == O_RDWR ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	e = errno;
	close(fd);
	errno = e;
	if (p == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return p;
}

static int
map_capture(const char *name)
{
	char shm[96];

	snprintf(shm, sizeof(shm), "/dpsock.%s.capture", name);
	cap_seg = map_shm(shm, O_RDWR, &cap_size);
	if (cap_seg == NULL) {
		if (errno == EACCES)
			fprintf(stderr, PROG ": /dev/shm%s: %s: capturing is root's, as "
				"dpsock-stat's control commands are (run it as root)\n", shm,
				strerror(errno));
		else if (errno == ENOENT)
			fprintf(stderr, PROG ": no dpsock instance called '%s' runs (no /dev/shm%s)\n",
				name, shm);
		else
			fprintf(stderr, PROG ": /dev/shm%s: %s\n", shm, strerror(errno));
		return -1;
	}
	if (cap_size < DPSOCK_CAP_HDR_SIZE) {
		fprintf(stderr, PROG ": /dev/shm%s is not a capture segment\n", shm);
		return -1;
	}
	cap = (struct dpsock_cap_hdr *)(void *)cap_seg;
	/* acquire: pairs with the instance's release of magic */
	if (__atomic_load_n(&cap->magic, __ATOMIC_ACQUIRE) != DPSOCK_CAP_MAGIC ||
	    cap->version != DPSOCK_CAP_VERSION || cap->size != cap_size ||
	    cap->n_sessions != DPSOCK_CAP_SESSIONS || cap->n_workers == 0 ||
	    cap->n_workers > DPSOCK_CAP_MAX_WORKERS || cap->n_ports > DPSOCK_CAP_MAX_PORTS ||
	    cap->off_sessions + (uint64_t)DPSOCK_CAP_SESSIONS * cap->session_stride > cap_size ||
	    cap->ring_off + (uint64_t)cap->n_workers * cap->ring_stride > cap->session_stride ||
	    cap->ring_bytes != DPSOCK_CAP_RING_BYTES) {
		fprintf(stderr, PROG ": /dev/shm%s is not a capture segment of version %u "
			"(is " PROG " from the same build as the instance?)\n", shm, DPSOCK_CAP_VERSION);
		return -1;
	}
	return 0;
}

static bool
instance_gone(void)
{
	return __atomic_load_n(&cap->state, __ATOMIC_ACQUIRE) != DPSOCK_CAP_RUNNING ||
	       (kill(cap->pid, 0) != 0 && errno == ESRCH);
}

/* --pid: the program's sockets, from the stats segment's socket table, as
 * a filter expression. Returns 0, or -1 (no stats segment). */
static const struct dpsock_stats_segment *stats;

static int
map_stats(const char *name)
{
	char shm[96];
	size_t size;

	snprintf(shm, sizeof(shm), "/dpsock.%s.stats", name);
	stats = map_shm(shm, O_RDONLY, &size);
	if (stats == NULL) {
		fprintf(stderr, PROG ": /dev/shm%s: %s\n", shm, strerror(errno));
		return -1;
	}
	if (stats->magic != DPSOCK_STATS_MAGIC || stats->version != DPSOCK_STATS_VERSION ||
	    stats->size > size ||
	    stats->sock_off + (uint64_t)stats->n_workers * stats->sock_slots *
				      sizeof(struct dpsock_sock_stats) > size) {
		fprintf(stderr, PROG ": /dev/shm%s is not a stats segment of this build\n", shm);
		return -1;
	}
	return 0;
}

static void
addr_text(const struct dpsock_sock_stats *e, bool local, char *buf, size_t len)
{
	if (e->flags & DPSOCK_SOCK_F_IPV6)
		inet_ntop(AF_INET6, local ? e->laddr6 : e->raddr6, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET, local ? &e->laddr : &e->raddr, buf, (socklen_t)len);
}

/* Append term to out (len bytes) unless it is there; false when it does
 * not fit. */
static bool
expr_add(char *out, size_t len, const char *term)
{
	size_t o = strlen(out);

	if (strstr(out, term) != NULL)
		return true; /* the same on another worker, or a port already in */
	if (o + strlen(term) + 5 >= len)
		return false;
	snprintf(out + o, len - o, "%s%s", o ? " or " : "", term);
	return true;
}

/* The filter of program pid's sockets (fd >= 0: that descriptor's): a
 * listener's or a UDP socket's port, a connection's four-tuple unless its
 * local port is a listener's. Returns the sockets it found, or -1 when
 * the expression would not fit in len (said why). */
static int
pid_expr(int pid, int fd, char *out, size_t len)
{
	int n = 0;

	out[0] = '\0';
	/* pass 0: listeners and UDP sockets; pass 1: connections */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned int k = 0; k < stats->n_workers; k++) {
			const struct dpsock_sock_stats *t = dpsock_stats_socks(stats, k);

			for (unsigned int i = 0; i < stats->sock_slots; i++) {
				struct dpsock_sock_stats e = { 0 };
				char l[INET6_ADDRSTRLEN], r[INET6_ADDRSTRLEN], term[320];
				bool conn;

				if (!dpsock_sockstat_read(&t[i], &e) || !e.in_use || e.owner_pid != pid ||
				    (fd >= 0 && e.fd != fd))
					continue;
				conn = e.proto != IPPROTO_UDP && e.state != 1 /* LISTEN */ && e.rport != 0;
				if (conn != (pass == 1))
					continue;
				n += pass == 1 || !conn;
				if (e.proto == IPPROTO_UDP) {
					snprintf(term, sizeof(term), "(udp port %u)", e.lport);
				} else if (!conn) {
					snprintf(term, sizeof(term), "(tcp port %u)", e.lport);
				} else {
					snprintf(term, sizeof(term), "(tcp port %u)", e.lport);
					if (strstr(out, term) != NULL)
						continue; /* an accepted connection of a listener in */
					addr_text(&e, true, l, sizeof(l));
					addr_text(&e, false, r, sizeof(r));
					snprintf(term, sizeof(term),
						 "(tcp and host %s and host %s and port %u and port %u)", l,
						 r, e.lport, e.rport);
				}
				if (!expr_add(out, len, term)) {
					fprintf(stderr, PROG ": --pid %d: its sockets make a filter longer than "
						"%zu characters; narrow it with --fd or an expression\n", pid,
						len);
					return -1;
				}
			}
		}
	if (out[0] == '\0')
		snprintf(out, len, "less 1"); /* nothing: no frame is that short */
	return n;
}

/* ---- the session ------------------------------------------------------------------ */

static int my_sess = -1;

static int
compile(const struct opts *o, const char *pidpart, struct bpf_program *prog)
{
	char expr[8192];
	pcap_t *p = pcap_open_dead(DLT_EN10MB, (int)o->snaplen);

	if (p == NULL) {
		fprintf(stderr, PROG ": pcap_open_dead failed\n");
		return -1;
	}
	if (pidpart != NULL && o->expr[0] != '\0')
		snprintf(expr, sizeof(expr), "(%s) and (%s)", o->expr, pidpart);
	else
		snprintf(expr, sizeof(expr), "%s", pidpart != NULL ? pidpart : o->expr);
	if (pcap_compile(p, prog, expr, 1, PCAP_NETMASK_UNKNOWN) != 0) {
		fprintf(stderr, PROG ": can't parse filter expression: %s\n", pcap_geterr(p));
		pcap_close(p);
		return -1;
	}
	pcap_close(p);
	if (prog->bf_len > DPSOCK_CAP_MAX_INSNS) {
		fprintf(stderr, PROG ": the filter compiles to %u instructions, at most %u\n",
			prog->bf_len, DPSOCK_CAP_MAX_INSNS);
		pcap_freecode(prog);
		return -1;
	}
	return 0;
}

/* Write the request into session s (claimed) and wait for the instance's
 * answer. 0, or -1 (said why). */
static int
request(struct dpsock_cap_session *s, const struct opts *o, uint32_t ports,
	const struct bpf_program *prog)
{
	uint32_t gen = __atomic_load_n(&s->gen, __ATOMIC_RELAXED) + 1;

	s->snaplen = o->snaplen;
	s->dirs = o->dirs;
	s->ports = ports;
	s->n_insns = prog != NULL ? prog->bf_len : 0;
	for (uint32_t i = 0; prog != NULL && i < prog->bf_len; i++) {
		s->insns[i].code = prog->bf_insns[i].code;
		s->insns[i].jt = prog->bf_insns[i].jt;
		s->insns[i].jf = prog->bf_insns[i].jf;
		s->insns[i].k = prog->bf_insns[i].k;
	}
	__atomic_store_n(&s->gen, gen, __ATOMIC_RELAXED);
	/* release: the request before the state that makes it stand */
	__atomic_store_n(&s->state, DPSOCK_CAP_ACTIVE, __ATOMIC_RELEASE);
	for (int t = 0; t < 500; t++) { /* 5 s: the instance looks every 100 ms */
		/* acquire: pairs with the instance's release of applied_gen */
		if (__atomic_load_n(&s->applied_gen, __ATOMIC_ACQUIRE) == gen) {
			if (s->status == 0)
				return 0;
			fprintf(stderr, PROG ": the instance refused the capture: %.128s\n", s->msg);
			return -1;
		}
		if (instance_gone() || stop_sig) {
			fprintf(stderr, PROG ": the instance stopped\n");
			return -1;
		}
		usleep(10000);
	}
	fprintf(stderr, PROG ": the instance did not answer in 5 s\n");
	return -1;
}

static int
claim(void)
{
	/* A session whose tool stopped or died is freed by the instance at its
	 * next control round (100 ms): wait for those, never for live ones. */
	for (int t = 0; t < 500 && !stop_sig; t++) {
		bool freeing = false;

		for (unsigned int i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
			struct dpsock_cap_session *s = session(i);
			uint32_t st = DPSOCK_CAP_FREE;
			pid_t owner;

			if (__atomic_compare_exchange_n(&s->state, &st, DPSOCK_CAP_CLAIMED, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				__atomic_store_n(&s->owner_pid, (int32_t)getpid(), __ATOMIC_RELAXED);
				return (int)i;
			}
			owner = (pid_t)__atomic_load_n(&s->owner_pid, __ATOMIC_RELAXED);
			if (st == DPSOCK_CAP_STOP || owner <= 0 ||
			    (kill(owner, 0) != 0 && errno == ESRCH))
				freeing = true;
		}
		if (!freeing || instance_gone())
			break;
		usleep(10000);
	}
	fprintf(stderr, PROG ": all %u capture sessions of the instance are taken\n",
		DPSOCK_CAP_SESSIONS);
	return -1;
}

static void
release_session(void)
{
	if (my_sess >= 0)
		/* release: the instance frees it */
		__atomic_store_n(&session((unsigned int)my_sess)->state, DPSOCK_CAP_STOP,
				 __ATOMIC_RELEASE);
	my_sess = -1;
}

/* ---- pcapng ----------------------------------------------------------------------- */

static FILE *out;

static bool
put(const void *p, size_t n)
{
	return fwrite(p, 1, n, out) == n;
}

static bool
put_opt(uint16_t code, const void *v, uint16_t len)
{
	static const uint8_t zero[4];
	uint16_t h[2] = { code, len };

	return put(h, 4) && put(v, len) && put(zero, (4 - len % 4) % 4);
}

static uint32_t
opt_len(size_t len)
{
	return 4 + (uint32_t)((len + 3) & ~(size_t)3);
}

static bool
pcapng_header(void)
{
	static const char app[] = PROG " (dpsock)";
	uint32_t end = 0, len;
	bool ok;

	/* section header */
	len = 28 + opt_len(sizeof(app) - 1) + 4;
	{
		uint32_t h[4] = { 0x0A0D0D0A, len, 0x1A2B3C4D, 1 /* major 1, minor 0 */ };
		uint64_t sect = UINT64_MAX;

		ok = put(h, 16) && put(&sect, 8) && put_opt(4 /* shb_userappl */, app, sizeof(app) - 1) &&
		     put(&end, 4) && put(&len, 4);
	}
	/* an interface per port and direction */
	for (unsigned int p = 0; ok && p < cap->n_ports; p++)
		for (unsigned int d = 0; ok && d < 2; d++) {
			char nm[64], desc[128];
			uint8_t tsres = 9;
			uint32_t h[4];

			snprintf(nm, sizeof(nm), "%.32s/%s", cap->ports[p].name, d ? "tx" : "rx");
			snprintf(desc, sizeof(desc), "dpsock instance %.32s, port %u (%.32s), %s", cap->name,
				 p, cap->ports[p].name, d ? "frames sent" : "frames received");
			len = 20 + opt_len(strlen(nm)) + opt_len(strlen(desc)) + opt_len(1) + 4;
			h[0] = 1;
			h[1] = len;
			h[2] = 1; /* LINKTYPE_ETHERNET, reserved 0 */
			h[3] = 65535;
			ok = put(h, 16) && put_opt(2 /* if_name */, nm, (uint16_t)strlen(nm)) &&
			     put_opt(3 /* if_description */, desc, (uint16_t)strlen(desc)) &&
			     put_opt(9 /* if_tsresol */, &tsres, 1) && put(&end, 4) && put(&len, 4);
		}
	return ok && fflush(out) == 0;
}

/* the counter a worker dropped a frame with: its name and help */
static const struct dpsock_stat_desc *
drop_desc(uint32_t drop)
{
	for (unsigned int i = 0; drop != 0 && i < dpsock_worker_stat_count; i++)
		if (dpsock_worker_stat_desc[i].off == drop - 1)
			return &dpsock_worker_stat_desc[i];
	return NULL;
}

static bool
pcapng_packet(const struct dpsock_cap_rec *r, const unsigned char *data)
{
	static const uint8_t zero[4];
	uint32_t end = 0, flags = r->dir == DPSOCK_CAP_DIR_RX ? 1 : 2;
	uint32_t pad = (4 - r->caplen % 4) % 4, len;
	const struct dpsock_stat_desc *dd = drop_desc(r->drop);
	char comment[256] = "";
	uint32_t h[7];

	if (dd != NULL)
		snprintf(comment, sizeof(comment), "dropped by worker %u: %s (%s)", r->worker,
			 dd->name, dd->help);
	len = 28 + r->caplen + pad + opt_len(4) + (comment[0] ? opt_len(strlen(comment)) : 0) + 4 + 4;
	h[0] = 6;
	h[1] = len;
	h[2] = (uint32_t)r->port * 2 + (r->dir == DPSOCK_CAP_DIR_TX);
	h[3] = (uint32_t)(r->ts_ns >> 32);
	h[4] = (uint32_t)r->ts_ns;
	h[5] = r->caplen;
	h[6] = r->wirelen;
	return put(h, 28) && put(data, r->caplen) && put(zero, pad) &&
	       put_opt(2 /* epb_flags */, &flags, 4) &&
	       (comment[0] == '\0' || put_opt(1 /* opt_comment */, comment, (uint16_t)strlen(comment))) &&
	       put(&end, 4) && put(&len, 4);
}

/* ---- one line per frame (no tcpdump) ---------------------------------------------- */

static void
line(const struct dpsock_cap_rec *r, const unsigned char *d)
{
	time_t sec = (time_t)(r->ts_ns / 1000000000u);
	struct tm tm;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN], l4[128] = "";
	const struct dpsock_stat_desc *dd = drop_desc(r->drop);
	uint16_t et;
	uint32_t c = r->caplen, o = 14;
	uint8_t proto = 0;

	localtime_r(&sec, &tm);
	printf("%02d:%02d:%02d.%06u %s %s ", tm.tm_hour, tm.tm_min, tm.tm_sec,
	       (unsigned int)(r->ts_ns % 1000000000u / 1000), cap->ports[r->port].name,
	       r->dir == DPSOCK_CAP_DIR_RX ? "In " : "Out");
	if (c < 14) {
		printf("[%u bytes]\n", r->wirelen);
		return;
	}
	et = (uint16_t)(d[12] << 8 | d[13]);
	if (et == 0x8100 && c >= 18) {
		printf("vlan %u ", (unsigned int)((d[14] << 8 | d[15]) & 0xfff));
		et = (uint16_t)(d[16] << 8 | d[17]);
		o = 18;
	}
	if (et == 0x0800 && c >= o + 20) {
		inet_ntop(AF_INET, d + o + 12, a, sizeof(a));
		inet_ntop(AF_INET, d + o + 16, b, sizeof(b));
		proto = d[o + 9];
		o += (uint32_t)(d[o] & 0xf) * 4;
	} else if (et == 0x86dd && c >= o + 40) {
		inet_ntop(AF_INET6, d + o + 8, a, sizeof(a));
		inet_ntop(AF_INET6, d + o + 24, b, sizeof(b));
		proto = d[o + 6];
		o += 40;
	} else {
		printf("ethertype 0x%04x, length %u%s%s\n", et, r->wirelen, dd ? ", dropped: " : "",
		       dd ? dd->name : "");
		return;
	}
	if ((proto == 6 || proto == 17) && c >= o + 4) {
		uint16_t sp = (uint16_t)(d[o] << 8 | d[o + 1]), dp = (uint16_t)(d[o + 2] << 8 | d[o + 3]);

		if (proto == 6 && c >= o + 14) {
			static const char fl[] = "FSRP.UEW";
			char f[9];
			unsigned int n = 0;

			for (unsigned int i = 0; i < 8; i++)
				if (d[o + 13] & (1u << i))
					f[n++] = fl[i];
			f[n] = '\0';
			snprintf(l4, sizeof(l4), ": Flags [%s], length %u", f, r->wirelen);
		} else {
			snprintf(l4, sizeof(l4), ": UDP, length %u", r->wirelen);
		}
		printf("IP%s %s.%u > %s.%u%s", et == 0x86dd ? "6" : "", a, sp, b, dp, l4);
	} else {
		printf("IP%s %s > %s: proto %u, length %u", et == 0x86dd ? "6" : "", a, b, proto,
		       r->wirelen);
	}
	printf("%s%s\n", dd ? ", dropped: " : "", dd ? dd->name : "");
}

/* ---- the rings ------------------------------------------------------------------- */

struct taken {
	struct dpsock_cap_rec r;
	unsigned char *data;
};

static int
by_time(const void *a, const void *b)
{
	const struct taken *x = a, *y = b;

	return x->r.ts_ns < y->r.ts_ns ? -1 : x->r.ts_ns > y->r.ts_ns;
}

static uint64_t captured, dropped_sum;

/* Take what the rings hold (at most BATCH a ring), in time order, out.
 * Returns the frames written, or -1 when writing failed. */
static long
drain(struct dpsock_fifo_cons *rings, unsigned int n_rings, const struct opts *o,
      struct taken *tk, unsigned char *buf, bool *full)
{
	unsigned int n = 0;
	size_t used = 0;
	long wrote = 0;

	*full = false;
	for (unsigned int k = 0; k < n_rings; k++) {
		unsigned int got = 0;

		while (got < BATCH) {
			struct dpsock_cap_rec r;
			struct iovec iov[2];

			if (dpsock_fifo_read_peek(&rings[k], sizeof(r), iov) != sizeof(r))
				break;
			memcpy(&r, iov[0].iov_base, iov[0].iov_len);
			if (iov[1].iov_len)
				memcpy((unsigned char *)&r + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
			if (r.caplen > o->snaplen || r.len != ((sizeof(r) + r.caplen + 7) & ~7u) ||
			    r.port >= cap->n_ports) {
				fprintf(stderr, PROG ": ring %u holds a bad record: stopping\n", k);
				return -1;
			}
			if (dpsock_fifo_read_peek(&rings[k], r.len, iov) != r.len)
				break;
			tk[n].r = r;
			tk[n].data = buf + used;
			/* the data, past the header */
			{
				uint32_t off = sizeof(r), left = r.caplen;

				if (off < iov[0].iov_len) {
					uint32_t m = (uint32_t)iov[0].iov_len - off < left ?
						     (uint32_t)iov[0].iov_len - off : left;

					memcpy(buf + used, (unsigned char *)iov[0].iov_base + off, m);
					left -= m;
					used += m;
					off = (uint32_t)iov[0].iov_len;
				}
				if (left > 0) {
					memcpy(buf + used, (unsigned char *)iov[1].iov_base +
						       (off - iov[0].iov_len), left);
					used += left;
				}
			}
			dpsock_fifo_read_consume(&rings[k], r.len);
			n++;
			got++;
		}
		*full |= got == BATCH;
	}
	qsort(tk, n, sizeof(*tk), by_time);
	for (unsigned int i = 0; i < n; i++) {
		if (o->count != 0 && captured >= o->count)
			break;
		if (out != NULL) {
			if (!pcapng_packet(&tk[i].r, tk[i].data))
				return -1;
		} else {
			line(&tk[i].r, tk[i].data);
		}
		captured++;
		wrote++;
	}
	if (fflush(out != NULL ? out : stdout) != 0)
		return -1;
	return wrote;
}

/* ---- main --------------------------------------------------------------------------- */

static FILE *
tcpdump_pipe(pid_t *child)
{
	static const char *const where[] = { "/usr/sbin/tcpdump", "/usr/bin/tcpdump",
					     "/sbin/tcpdump", "/bin/tcpdump" };
	int fds[2];

	for (unsigned int i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		if (access(where[i], X_OK) != 0 || pipe(fds) != 0)
			continue;
		*child = fork();
		if (*child == 0) {
			dup2(fds[0], 0);
			close(fds[0]);
			close(fds[1]);
			/* out of the terminal's signals: it ends with the pipe,
			 * once it showed everything we took */
			setpgid(0, 0);
			execl(where[i], "tcpdump", "-n", "-l", "-r", "-", (char *)NULL);
			_exit(127);
		}
		close(fds[0]);
		if (*child < 0) {
			close(fds[1]);
			continue;
		}
		return fdopen(fds[1], "w");
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "interface", required_argument, NULL, 'i' },
		{ "write", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'c' },
		{ "snaplen", required_argument, NULL, 's' },
		{ "direction", required_argument, NULL, 'Q' },
		{ "pid", required_argument, NULL, 'P' },
		{ "fd", required_argument, NULL, 'F' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .name = "dpsock", .snaplen = 65535,
			  .dirs = DPSOCK_CAP_DIR_RX | DPSOCK_CAP_DIR_TX, .pid = -1, .fd = -1 };
	struct dpsock_fifo_cons rings[DPSOCK_CAP_MAX_WORKERS];
	struct bpf_program prog = { 0 };
	char pidpart[8192] = "";
	uint32_t ports = 0;
	pid_t child = -1;
	struct taken *tk;
	unsigned char *buf;
	struct sigaction sa;
	int c, rc = 0;
	unsigned int idle = 0;
	uint64_t last_resolve = 0;

	while ((c = getopt_long(argc, argv, "+n:i:w:c:s:Q:qh", lo, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'n': o.name = optarg; break;
		case 'i': o.port = optarg; break;
		case 'w': o.out = optarg; break;
		case 'c':
			o.count = strtoull(optarg, &end, 10);
			if (*end != '\0' || o.count == 0) {
				fprintf(stderr, PROG ": -c: '%s' is not a count above 0\n", optarg);
				return 2;
			}
			break;
		case 's':
			o.snaplen = (uint32_t)strtoul(optarg, &end, 10);
			if (*end != '\0' || o.snaplen == 0 || o.snaplen > DPSOCK_CAP_SNAPLEN_MAX) {
				fprintf(stderr, PROG ": -s: '%s' is not a length in 1..%u\n", optarg,
					DPSOCK_CAP_SNAPLEN_MAX);
				return 2;
			}
			break;
		case 'Q':
			if (strcmp(optarg, "in") == 0)
				o.dirs = DPSOCK_CAP_DIR_RX;
			else if (strcmp(optarg, "out") == 0)
				o.dirs = DPSOCK_CAP_DIR_TX;
			else if (strcmp(optarg, "inout") == 0)
				o.dirs = DPSOCK_CAP_DIR_RX | DPSOCK_CAP_DIR_TX;
			else {
				fprintf(stderr, PROG ": -Q: in, out or inout, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'P': o.pid = atoi(optarg); break;
		case 'F': o.fd = atoi(optarg); break;
		case 'q': o.quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.fd >= 0 && o.pid < 0) {
		fprintf(stderr, PROG ": --fd needs --pid\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		size_t l = strlen(o.expr);

		snprintf(o.expr + l, sizeof(o.expr) - l, "%s%s", l ? " " : "", argv[i]);
	}
	/* the filter first: a bad one is said before anything is asked */
	if (o.expr[0] != '\0' && o.pid < 0 && compile(&o, NULL, &prog) != 0)
		return 2;
	if (map_capture(o.name) != 0)
		return 1;
	if (o.port != NULL) {
		char *end;
		unsigned long p = strtoul(o.port, &end, 10);

		for (unsigned int i = 0; *end != '\0' && i < cap->n_ports; i++)
			if (strncmp(cap->ports[i].name, o.port, sizeof(cap->ports[i].name)) == 0)
				p = i, end = (char *)"";
		if (*end != '\0' || p >= cap->n_ports) {
			fprintf(stderr, PROG ": the instance has no port '%s' (", o.port);
			for (unsigned int i = 0; i < cap->n_ports; i++)
				fprintf(stderr, "%s%u: %.32s", i ? ", " : "", i, cap->ports[i].name);
			fprintf(stderr, ")\n");
			return 2;
		}
		ports = 1u << p;
	}
	if (o.pid >= 0) {
		if (kill(o.pid, 0) != 0 && errno == ESRCH) {
			fprintf(stderr, PROG ": --pid %d: no such process\n", o.pid);
			return 2;
		}
		if (map_stats(o.name) != 0)
			return 1;
		if (pid_expr(o.pid, o.fd, pidpart, sizeof(pidpart)) < 0 ||
		    compile(&o, pidpart, &prog) != 0)
			return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	my_sess = claim();
	if (my_sess < 0)
		return 1;
	if (request(session((unsigned int)my_sess), &o, ports,
		    o.expr[0] != '\0' || o.pid >= 0 ? &prog : NULL) != 0) {
		release_session();
		return 1;
	}
	for (unsigned int k = 0; k < cap->n_workers; k++) {
		unsigned char *r = (unsigned char *)session((unsigned int)my_sess) + cap->ring_off +
				   (uint64_t)k * cap->ring_stride;

		if (dpsock_fifo_cons_attach_at(&rings[k], r + sizeof(struct dpsock_cap_ring_ctl),
					       r + sizeof(struct dpsock_cap_ring_ctl) +
						       DPSOCK_SPSC_HDR_SIZE,
					       cap->ring_bytes) != 0) {
			fprintf(stderr, PROG ": worker %u's ring is not a FIFO\n", k);
			release_session();
			return 1;
		}
	}
	if (o.out != NULL && strcmp(o.out, "-") == 0)
		out = stdout;
	else if (o.out != NULL)
		out = fopen(o.out, "w");
	else
		out = tcpdump_pipe(&child); /* NULL: our own lines on stdout */
	if (o.out != NULL && out == NULL) {
		fprintf(stderr, PROG ": %s: %s\n", o.out, strerror(errno));
		release_session();
		return 1;
	}
	if (out != NULL && !pcapng_header()) {
		fprintf(stderr, PROG ": writing the pcapng header: %s\n", strerror(errno));
		release_session();
		return 1;
	}
	if (!o.quiet)
		fprintf(stderr, PROG ": capturing on %s of '%s'%s%s, snaplen %u\n",
			ports ? cap->ports[__builtin_ctz(ports)].name : "every port", cap->name,
			o.expr[0] || o.pid >= 0 ? ", filter: " : "",
			o.pid >= 0 ? pidpart : o.expr, o.snaplen);
	tk = malloc(sizeof(*tk) * BATCH * cap->n_workers);
	buf = malloc((size_t)BATCH * cap->n_workers * (o.snaplen + 8));
	if (tk == NULL || buf == NULL) {
		fprintf(stderr, PROG ": out of memory\n");
		release_session();
		return 1;
	}
	for (;;) {
		bool full, gone = instance_gone();
		long n = drain(rings, cap->n_workers, &o, tk, buf, &full);
		struct timespec ts;

		if (n < 0) {
			fprintf(stderr, PROG ": writing: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		if ((o.count != 0 && captured >= o.count) || stop_sig || gone)
			break; /* gone: what the rings held was drained above */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (o.pid >= 0 && (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - last_resolve >=
					  RESOLVE_MS) {
			char again[sizeof(pidpart)];

			last_resolve = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
			if (pid_expr(o.pid, o.fd, again, sizeof(again)) >= 0 &&
			    strcmp(again, pidpart) != 0) {
				struct bpf_program np;

				memcpy(pidpart, again, sizeof(pidpart));
				if (compile(&o, pidpart, &np) == 0) {
					request(session((unsigned int)my_sess), &o, ports, &np);
					pcap_freecode(&np);
				}
			}
		}
		if (n > 0 || full) {
			idle = 0;
			continue;
		}
		/* nothing: sleep 1 ms, longer while it stays so (10 ms at most) */
		idle = idle < 10 ? idle + 1 : 10;
		usleep(1000 * idle);
	}
	for (unsigned int k = 0; k < cap->n_workers; k++) {
		struct dpsock_cap_ring_ctl *ctl =
			(struct dpsock_cap_ring_ctl *)(void *)((unsigned char *)session((unsigned int)my_sess) +
							       cap->ring_off + (uint64_t)k * cap->ring_stride);

		dropped_sum += __atomic_load_n(&ctl->dropped, __ATOMIC_RELAXED);
	}
	release_session();
	if (out != NULL && out != stdout)
		fclose(out);
	else if (out != NULL)
		fflush(out);
	if (child > 0)
		waitpid(child, NULL, 0);
	if (!o.quiet) {
		fprintf(stderr, "%" PRIu64 " packets captured\n", captured);
		fprintf(stderr, "%" PRIu64 " packets dropped by dpsock (capture rings full; "
			"the traffic went on)\n", dropped_sum);
	}
	if (prog.bf_insns != NULL)
		pcap_freecode(&prog);
	return rc;
}
