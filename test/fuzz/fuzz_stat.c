/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness: the stats segment as dpsock-stat reads it
 * (tools/dpsock_stat.c, abi/stats_segment.h, abi/stats_names.c).
 *
 * Whoever can write /dev/shm/dpsock.<name>.stats (the instance, or anything
 * running as its user) controls every byte dpsock-stat maps. The harness
 * writes a segment file, lets dpsock-stat map and check it exactly as it
 * does for a running instance, then takes samples and prints every view
 * (plain lines, tables, sockets with filters, mc, clients, JSON; totals and
 * rates). "Torn" writes land in the shared file after the tool checked the
 * header and between its two samples: a writer changing the segment under
 * the reader, as a live (or hostile) instance does.
 *
 * JSON output must be well-formed JSON, whatever the segment holds (names
 * are the instance's and its clients' to choose).
 *
 * dpsock_stat.c is a program: it is compiled into this harness with its
 * main renamed, so that its own functions run unchanged.
 *
 * Input (all little endian):
 *   byte 0   view: 0 raw, 1 basic, 2 extra, 3 full, 4 mc, 5 sockets, 6 clients
 *   byte 1   flags: 1 JSON, 2 two samples (rates), 4 fill every socket entry,
 *            8 fill the multicast table (ports, groups, memberships), 16
 *            fill the client table
 *   byte 2   socket filter (index into filters[])
 *   byte 3   n_ports
 *   byte 4   n_workers
 *   byte 5   socket entries per worker (modulo 16: the file stays small)
 *   byte 6-7 bytes cut from the end of the file (a segment shorter than its
 *            header says)
 *   then records: u8 kind, u8 len, u32 offset, len bytes: write the bytes at
 *   offset (modulo the file size); kind bit 0: before the tool maps the
 *   file (0) or after its check, between the samples (1).
 */
#define main dpsock_stat_main
#include "dpsock_stat.c"
#undef main

#include <ctype.h>
#include <stdint.h>

#include "fuzz_check.h"

#define HDR_LEN 8
#define ALIGN64(x) (((x) + 63) & ~(size_t)63)
#define SHM_FMT "/dpsock.fuzzstat%d.stats"

static const char *const filters[] = {
	NULL, "state=ESTABLISHED", "proto=udp", "worker=1", "port=80", "198.18.0",
	"state=LISTEN,proto=tcp", "lport=7,rport=9", ":",
};

static char shm_name[64];
static int out_fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);

static void
shm_cleanup(void)
{
	shm_unlink(shm_name);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(shm_name, sizeof(shm_name), SHM_FMT, (int)getpid());
	atexit(shm_cleanup);
	/* the views print a lot: to /dev/null, fully buffered */
	out_fd = open("/dev/null", O_WRONLY);
	if (out_fd < 0 || dup2(out_fd, STDOUT_FILENO) < 0)
		abort();
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	return 0;
}

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- a strict JSON syntax check (RFC 8259, ASCII only) ---- */

/* A multicast table address: IPv4 (host order v4) mapped, or an IPv6 one
 * (ff15::v4). */
static void
row_addr(uint8_t a[16], bool v6, uint32_t v4)
{
	uint32_t n = htonl(v4);

	memset(a, 0, 16);
	if (v6) {
		a[0] = 0xff;
		a[1] = 0x15;
	} else {
		a[10] = a[11] = 0xff;
	}
	memcpy(a + 12, &n, 4);
}

static const char *js_value(const char *p, int depth);

static const char *
js_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *
js_string(const char *p)
{
	int i;

	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c >= 0x7f)
			return NULL;
		if (c != '\\') {
			p++;
			continue;
		}
		p++;
		if (*p != '\0' && strchr("\"\\/bfnrt", *p) != NULL) {
			p++;
		} else if (*p == 'u') {
			for (i = 1; i <= 4; i++)
				if (!isxdigit((unsigned char)p[i]))
					return NULL;
			p += 5;
		} else {
			return NULL;
		}
	}
	return p + 1;
}

static const char *
js_digits(const char *p)
{
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p))
		p++;
	return p;
}

static const char *
js_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if ((p = js_digits(p)) == NULL)
		return NULL;
	if (*p == '.' && (p = js_digits(p + 1)) == NULL)
		return NULL;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if ((p = js_digits(p)) == NULL)
			return NULL;
	}
	return p;
}

static const char *
js_members(const char *p, int depth, char close, bool object)
{
	p = js_ws(p);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (object) {
			if ((p = js_string(js_ws(p))) == NULL)
				return NULL;
			p = js_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		if ((p = js_value(p, depth + 1)) == NULL)
			return NULL;
		p = js_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *
js_value(const char *p, int depth)
{
	if (depth > 16)
		return NULL;
	p = js_ws(p);
	switch (*p) {
	case '{':
		return js_members(p + 1, depth, '}', true);
	case '[':
		return js_members(p + 1, depth, ']', false);
	case '"':
		return js_string(p);
	case 't':
		return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
	case 'f':
		return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
	case 'n':
		return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
	default:
		return js_number(p);
	}
}

/* One JSON document per line: dpsock-stat --json prints one per sample. */
static void
check_json(const char *out, size_t len)
{
	const char *p = out;

	FUZZ_CHECK(strlen(out) == len, "NUL byte in the JSON output");
	while (*(p = js_ws(p)) != '\0') {
		const char *end = js_value(p, 0);

		FUZZ_CHECK(end != NULL, "not JSON: %.300s", p);
		p = end;
	}
}

/* A segment as a live instance writes it, from the input's header bytes. */
static unsigned char *
base_image(const uint8_t *h, size_t *len)
{
	unsigned int n_ports = h[3], n_workers = h[4], slots = h[5] % 16, i;
	uint8_t flags = h[1];
	struct dpsock_stats_segment *s;
	size_t sock_off = ALIGN64(sizeof(*s));
	size_t size = sock_off + (size_t)n_workers * slots * sizeof(struct dpsock_sock_stats);
	unsigned char *img = calloc(1, size);

	if (img == NULL)
		return NULL;
	s = (struct dpsock_stats_segment *)img;
	s->magic = DPSOCK_STATS_MAGIC;
	s->version = DPSOCK_STATS_VERSION;
	s->size = (uint32_t)size;
	s->hdr_size = sizeof(*s);
	s->pid = (int32_t)getpid();
	s->n_ports = n_ports;
	s->n_workers = n_workers;
	s->running = 1;
	s->sock_slots = slots;
	s->sock_off = sock_off;
	snprintf(s->name, sizeof(s->name), "fuzz");
	snprintf(s->app, sizeof(s->app), "dpsockd");
	for (i = 0; i < DPSOCK_STATS_MAX_PORTS; i++)
		snprintf(s->port_names[i], sizeof(s->port_names[i]), "net_fuzz%u", i);
	if (flags & 4)
		for (i = 0; i < n_workers * slots; i++) {
			struct dpsock_sock_stats *e = (struct dpsock_sock_stats *)(img + sock_off) + i;

			e->in_use = 1;
			e->proto = i & 1 ? IPPROTO_UDP : IPPROTO_TCP;
			e->state = i & 1 ? DPSOCK_SOCK_STATE_UDP : (uint8_t)(i % 11);
			e->client = i % 3 == 0 ? -1 : (int32_t)(i % DPSOCK_STATS_MAX_CLIENTS);
			e->worker = (uint16_t)(i / (slots ? slots : 1));
			e->laddr = htonl(0xc6120001);
			e->raddr = htonl(0xc6120002 + i);
			e->lport = (uint16_t)(80 + i % 3);
			e->rport = (uint16_t)(40000 + i);
			e->rx_bytes = (uint64_t)i << 20;
			e->cwnd = 14600;
		}
	if (flags & 8) {
		/* every row of the multicast table, source counts past what a
		 * row holds, memberships of every worker (some naming socket
		 * entries, some native) */
		struct dpsock_mc_table *mc = &s->mc;
		unsigned int k;

		mc->n_groups = DPSOCK_STATS_MC_GROUPS;
		mc->n_members = DPSOCK_STATS_MC_MEMBERS;
		mc->unlisted = 3;
		for (i = 0; i < DPSOCK_STATS_MAX_PORTS; i++) {
			mc->ports[i].version = (uint8_t)(3 - i % 3);
			mc->ports[i].filter = (uint8_t)(i % 3);
			mc->ports[i].robustness = 2;
			if (i)
				row_addr(mc->ports[i].querier, false, 0xc6120002 + i);
			mc->ports[i].n_macs = i;
			mc->mld[i] = mc->ports[i];
			mc->mld[i].version = (uint8_t)(2 - i % 2);
			if (i)
				row_addr(mc->mld[i].querier, true, 0xc6120002 + i);
		}
		for (i = 0; i < DPSOCK_STATS_MC_GROUPS; i++) {
			struct dpsock_mc_group_row *g = &mc->groups[i];

			/* both families: an IPv4 group mapped, an IPv6 one */
			row_addr(g->addr, i % 2, 0xe0000001 + i);
			g->port = (uint16_t)(i % 4);
			g->mode = (uint8_t)(DPSOCK_MC_MODE_INCLUDE + i % 2);
			g->nsrc = i % (DPSOCK_STATS_MC_SRCS + 3);
			g->members = i;
			for (k = 0; k < DPSOCK_STATS_MC_SRCS; k++)
				row_addr(g->src[k], i % 2, 0xc6120000 + k);
		}
		for (i = 0; i < DPSOCK_STATS_MC_MEMBERS; i++) {
			struct dpsock_mc_member_row *r = &mc->members[i];

			row_addr(r->group, i % 2, 0xe0000001 + i % 8);
			r->port = (uint16_t)(i % 4);
			r->worker = (uint16_t)(i % (n_workers ? n_workers : 1));
			r->mode = (uint8_t)(DPSOCK_MC_MODE_INCLUDE + i % 2);
			r->nsrc = (uint8_t)(i % (DPSOCK_STATS_MC_MSRCS + 2));
			r->pid = (int32_t)(1000 + i % 5);
			r->fd = i % 7 == 0 ? -1 : (int32_t)(3 + i % 5);
			r->sock_idx = i % 3 ? (int32_t)(i % (slots ? slots : 1)) : -1;
			r->serial = i;
			for (k = 0; k < DPSOCK_STATS_MC_MSRCS; k++)
				row_addr(r->src[k], i % 2, 0xc6120000 + k);
		}
	}
	if (flags & 16) {
		s->n_clients = DPSOCK_STATS_MAX_CLIENTS;
		for (i = 0; i < DPSOCK_STATS_MAX_CLIENTS; i++) {
			s->clients[i].pid = (int32_t)(1000 + i);
			snprintf(s->clients[i].name, sizeof(s->clients[i].name), "prog%u", i);
		}
	}
	*len = size;
	return img;
}

/* Apply the records of one phase: to the image (phase 0), or to the file
 * the tool has mapped (phase 1). */
static void
apply(const uint8_t *p, size_t n, unsigned int phase, unsigned char *img, size_t len, int fd)
{
	while (n >= 6) {
		uint8_t kind = p[0], l = p[1];
		uint32_t off = rd32(p + 2);

		p += 6;
		n -= 6;
		if (l > n)
			l = (uint8_t)n;
		if ((kind & 1) == phase && len > 0) {
			off %= len;
			if (l > len - off)
				l = (uint8_t)(len - off);
			if (phase == 0)
				memcpy(img + off, p, l);
			else if (pwrite(fd, p, l, off) != l)
				abort();
		}
		p += l;
		n -= l;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sample a = { 0 }, b = { 0 };
	struct options o;
	unsigned char *img;
	size_t len, cut, file_len;
	char err[512];
	int fd;

	if (size < HDR_LEN)
		return 0;
	img = base_image(data, &len);
	if (img == NULL)
		return 0;
	apply(data + HDR_LEN, size - HDR_LEN, 0, img, len, -1);
	cut = (size_t)data[6] | (size_t)data[7] << 8;
	file_len = cut < len ? len - cut : 0;

	fd = shm_open(shm_name, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (file_len > 0 && write(fd, img, file_len) != (ssize_t)file_len))
		abort();
	free(img);

	memset(&o, 0, sizeof(o));
	o.view = (enum view)(data[0] % NCOLS(view_names));
	o.json = data[1] & 1;
	o.mode = data[1] & 2 ? 2 : 1;
	o.filter = filters[data[2] % NCOLS(filters)];
	o.cycles = 1;

	seg = map_segment(shm_name, false, err, sizeof(err));
	if (seg == NULL) {
		FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL,
			   "map_segment failed without a reason");
		close(fd);
		return 0;
	}
	if (instance_alive(seg)) {
		FILE *real_stdout = stdout;
		char *out = NULL;
		size_t out_len = 0;

		if (o.json) {
			stdout = open_memstream(&out, &out_len);
			if (stdout == NULL)
				abort();
		}
		take_sample(&a, o.view == VIEW_SOCKETS);
		/* a live writer: changes between the check and the samples */
		apply(data + HDR_LEN, size - HDR_LEN, 1, NULL, file_len, fd);
		if (o.mode == 2) {
			take_sample(&b, o.view == VIEW_SOCKETS);
			b.t = a.t + 1;
			print_sample(&o, &b, &a);
		} else {
			print_sample(&o, &a, NULL);
		}
		fflush(stdout);
		if (o.json) {
			fclose(stdout);
			stdout = real_stdout;
			check_json(out, out_len);
			free(out);
		}
	}
	free(a.socks);
	free(b.socks);
	munmap((void *)seg, seg_len);
	seg = NULL;
	close(fd);
	return 0;
}
