/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capture/ — the frames dpsock-dump asks for.
 *
 * capture.c — capturing: the frames the ports receive and send, copied for
 * dpsock-dump through the instance's capture segment. What it owns and how
 * the main lcore and the workers share a session: capture_priv.h; the
 * segment's layout and the tool's side: abi/capture_ring.h.
 *
 * Nothing runs on the data path while no capture does: a worker looks at
 * one word per pass (the capture generation) and each RX and TX frame tests
 * one count.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pcap/bpf.h>

#include <rte_bpf.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pdump.h>

#include "core/stack_priv.h"
#include "core/log_priv.h"
#include "mcast/mcast_priv.h"
#include "capture_priv.h"

#define CAPTURE_SHM_FMT "/dpsock.%s.capture"

/* The instance's side of the segment (main lcore; the workers read the
 * published sessions). */
struct dpsock_capture {
	int fd;
	unsigned char *seg;
	size_t size;
	char shm[80];
	struct dpsock_cap_hdr *hdr;
	uint32_t gen;                           /* last published generation */
	struct dpsock_cap_sess *live[DPSOCK_CAP_SESSIONS];
	/* taken from the workers, freed once they all saw gen retire_gen */
	struct dpsock_cap_sess *retiring[DPSOCK_CAP_SESSIONS];
	uint32_t retire_gen[DPSOCK_CAP_SESSIONS];
	bool freeing[DPSOCK_CAP_SESSIONS];      /* the session goes back to FREE after */
	bool pdump;                             /* rte_pdump_init succeeded */
	/* a loaded request is answered (applied_gen) once every worker saw
	 * the generation that published it: "capturing" means it */
	uint32_t answer_gen[DPSOCK_CAP_SESSIONS]; /* 0: nothing to answer */
	/* control rounds a claimed session has shown no owner: a tool stores
	 * its pid just after its claim, so only a few rounds in a row mean
	 * it died in between */
	uint8_t unowned[DPSOCK_CAP_SESSIONS];
};

static inline struct dpsock_cap_session *
session(const struct dpsock_capture *c, unsigned int i)
{
	return (struct dpsock_cap_session *)(void *)(c->seg + c->hdr->off_sessions +
						      (uint64_t)i * c->hdr->session_stride);
}

static inline unsigned char *
ring_ctl(const struct dpsock_capture *c, unsigned int i, unsigned int k)
{
	return (unsigned char *)session(c, i) + c->hdr->ring_off + (uint64_t)k * c->hdr->ring_stride;
}

/* ---- the segment ------------------------------------------------------------- */

int
dpsock_capture_init(struct dpsock_stack *d, bool taking, char *err, size_t errlen)
{
	struct dpsock_capture *c = calloc(1, sizeof(*c));
	struct dpsock_cap_hdr *h;
	uint64_t ring_stride, session_stride, off;
	unsigned int i;

	if (c == NULL) {
		snprintf(err, errlen, "capture: out of memory");
		return -ENOMEM;
	}
	c->fd = -1;
	snprintf(c->shm, sizeof(c->shm), CAPTURE_SHM_FMT, d->conf.name);
	/* a takeover: as the stats segment (renamed at dpsock_tko_done) */
	if (taking)
		strncat(c->shm, DPSOCK_TKO_SHM_SUFFIX, sizeof(c->shm) - strlen(c->shm) - 1);
	/* ring: its control line, then a FIFO header and its data */
	ring_stride = RTE_ALIGN_CEIL(sizeof(struct dpsock_cap_ring_ctl) + DPSOCK_SPSC_HDR_SIZE +
				     DPSOCK_CAP_RING_BYTES, 4096);
	session_stride = RTE_ALIGN_CEIL(sizeof(struct dpsock_cap_session), 4096) +
			 (uint64_t)d->n_workers * ring_stride;
	off = DPSOCK_CAP_HDR_SIZE;
	c->size = off + DPSOCK_CAP_SESSIONS * session_stride;
	/* root's alone: capturing is a control command (the stats segment,
	 * whose name guards the instance's, was made before: a file left
	 * here by a dead instance of this name is stale) */
	shm_unlink(c->shm);
	c->fd = shm_open(c->shm, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (c->fd < 0 || fchmod(c->fd, 0600) != 0 || ftruncate(c->fd, (off_t)c->size) != 0) {
		int e = errno;

		snprintf(err, errlen, "capture segment /dev/shm%s: %s", c->shm, strerror(e));
		if (c->fd >= 0) {
			close(c->fd);
			shm_unlink(c->shm);
		}
		free(c);
		return -e;
	}
	c->seg = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (c->seg == MAP_FAILED) {
		int e = errno;

		snprintf(err, errlen, "mmap of /dev/shm%s: %s", c->shm, strerror(e));
		close(c->fd);
		shm_unlink(c->shm);
		free(c);
		return -e;
	}
	h = c->hdr = (struct dpsock_cap_hdr *)(void *)c->seg;
	h->version = DPSOCK_CAP_VERSION;
	h->size = c->size;
	h->pid = getpid();
	h->n_workers = d->n_workers;
	h->n_ports = d->n_ports;
	h->n_sessions = DPSOCK_CAP_SESSIONS;
	h->ring_bytes = DPSOCK_CAP_RING_BYTES;
	h->off_sessions = off;
	h->session_stride = session_stride;
	h->ring_off = RTE_ALIGN_CEIL(sizeof(struct dpsock_cap_session), 4096);
	h->ring_stride = ring_stride;
	for (i = 0; i < d->n_ports && i < DPSOCK_CAP_MAX_PORTS; i++) {
		snprintf(h->ports[i].name, sizeof(h->ports[i].name), "%s", d->ports[i].name);
		h->ports[i].ifindex = d->ports[i].xdp.ifindex;
	}
	snprintf(h->name, sizeof(h->name), "%s", d->conf.name);
	h->state = DPSOCK_CAP_RUNNING;
	/* release: the header is whole before a tool sees its magic */
	__atomic_store_n(&h->magic, DPSOCK_CAP_MAGIC, __ATOMIC_RELEASE);
	d->capture = c;
	/* DPDK's own capture (dpdk-dumpcap, dpdk-pdump) attaches as a
	 * secondary process: only to an EAL with multi-process, which the
	 * default --in-memory is not (dpsockd --proc-type primary keeps it) */
	if (rte_pdump_init() == 0) {
		c->pdump = true;
		DPSOCK_LOG(INFO, main, "capture: dpdk-dumpcap may attach too (EAL runtime %s)",
			   rte_eal_get_runtime_dir());
	} else {
		DPSOCK_LOG(DEBUG, main, "capture: no dpdk-dumpcap (%s: the EAL has no multi-process, "
			   "as with --in-memory); dpsock-dump captures", rte_strerror(rte_errno));
	}
	return 0;
}

/* ---- sessions (main lcore) ----------------------------------------------------- */

static void
sess_free(struct dpsock_cap_sess *s)
{
	if (s == NULL)
		return;
	if (s->bpf != NULL)
		rte_bpf_destroy(s->bpf);
	free(s->ctl);
	free(s->data);
	free(s->hdr);
	free(s);
}

static void
refuse(struct dpsock_cap_session *ss, uint32_t gen, int err, const char *fmt, const char *arg)
{
	snprintf(ss->msg, sizeof(ss->msg), fmt, arg);
	__atomic_store_n(&ss->status, -err, __ATOMIC_RELAXED);
	/* release: status and msg before the generation that answers */
	__atomic_store_n(&ss->applied_gen, gen, __ATOMIC_RELEASE);
}

/* Load session i's request (generation gen) into a new dpsock_cap_sess,
 * or refuse it in the segment. */
static struct dpsock_cap_sess *
sess_load(struct dpsock_stack *d, struct dpsock_capture *c, unsigned int i, uint32_t gen)
{
	struct dpsock_cap_session *ss = session(c, i);
	uint32_t n_insns = __atomic_load_n(&ss->n_insns, __ATOMIC_RELAXED);
	struct dpsock_cap_sess *s;
	unsigned int k;

	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		refuse(ss, gen, ENOMEM, "%s", "out of memory");
		return NULL;
	}
	s->idx = i;
	s->gen = gen;
	s->snaplen = __atomic_load_n(&ss->snaplen, __ATOMIC_RELAXED);
	s->dirs = __atomic_load_n(&ss->dirs, __ATOMIC_RELAXED);
	s->ports = __atomic_load_n(&ss->ports, __ATOMIC_RELAXED);
	if (s->snaplen == 0 || s->snaplen > DPSOCK_CAP_SNAPLEN_MAX ||
	    (s->dirs & ~(DPSOCK_CAP_DIR_RX | DPSOCK_CAP_DIR_TX)) != 0 || s->dirs == 0 ||
	    n_insns > DPSOCK_CAP_MAX_INSNS) {
		refuse(ss, gen, EINVAL, "%s", "snaplen, directions or program length out of range");
		sess_free(s);
		return NULL;
	}
	if (n_insns > 0) {
		struct bpf_insn *insns = malloc(sizeof(*insns) * n_insns);
		struct bpf_program prog = { .bf_len = n_insns, .bf_insns = insns };
		struct rte_bpf_prm *prm;
		struct rte_bpf_jit jit;

		if (insns == NULL) {
			refuse(ss, gen, ENOMEM, "%s", "out of memory");
			sess_free(s);
			return NULL;
		}
		/* a private copy: the tool's area is read once */
		for (uint32_t j = 0; j < n_insns; j++) {
			insns[j].code = ss->insns[j].code;
			insns[j].jt = ss->insns[j].jt;
			insns[j].jf = ss->insns[j].jf;
			insns[j].k = ss->insns[j].k;
		}
		prm = rte_bpf_convert(&prog);
		free(insns);
		if (prm == NULL) {
			refuse(ss, gen, rte_errno ? rte_errno : EINVAL, "the filter cannot be converted "
			       "to eBPF: %s", rte_strerror(rte_errno));
			sess_free(s);
			return NULL;
		}
		s->bpf = rte_bpf_load(prm);
		rte_free(prm);
		if (s->bpf == NULL) {
			refuse(ss, gen, rte_errno ? rte_errno : EINVAL, "the filter does not load: %s",
			       rte_strerror(rte_errno));
			sess_free(s);
			return NULL;
		}
		if (rte_bpf_get_jit(s->bpf, &jit) == 0 && jit.func != NULL)
			s->jit = jit.func;
	}
	s->ctl = calloc(d->n_workers, sizeof(*s->ctl));
	s->data = calloc(d->n_workers, sizeof(*s->data));
	s->hdr = calloc(d->n_workers, sizeof(*s->hdr));
	if (s->ctl == NULL || s->data == NULL || s->hdr == NULL) {
		refuse(ss, gen, ENOMEM, "%s", "out of memory");
		sess_free(s);
		return NULL;
	}
	for (k = 0; k < d->n_workers; k++) {
		unsigned char *r = ring_ctl(c, i, k);

		s->ctl[k] = (struct dpsock_cap_ring_ctl *)(void *)r;
		s->hdr[k] = r + sizeof(struct dpsock_cap_ring_ctl);
		s->data[k] = r + sizeof(struct dpsock_cap_ring_ctl) + DPSOCK_SPSC_HDR_SIZE;
	}
	return s;
}

/* Format session i's rings for a new capture (nobody uses them: the
 * session was FREE or its previous load retired). */
static void
rings_reset(struct dpsock_stack *d, struct dpsock_capture *c, unsigned int i)
{
	for (unsigned int k = 0; k < d->n_workers; k++) {
		unsigned char *r = ring_ctl(c, i, k);

		memset(r, 0, sizeof(struct dpsock_cap_ring_ctl));
		dpsock_fifo_init_hdr(r + sizeof(struct dpsock_cap_ring_ctl), DPSOCK_CAP_RING_BYTES);
	}
}

/* Give session i's ring pages back (it ended). */
static void
rings_punch(struct dpsock_stack *d, struct dpsock_capture *c, unsigned int i)
{
	off_t off = (off_t)((unsigned char *)session(c, i) + c->hdr->ring_off - c->seg);

	if (fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
		      (off_t)((uint64_t)d->n_workers * c->hdr->ring_stride)) != 0)
		DPSOCK_LOG(WARNING, main, "capture: giving session %u's pages back: %s", i,
			   strerror(errno));
}

/* Has every worker seen generation gen? A worker replaces its view of the
 * sessions only in dpsock_capture_worker_sync, before it says which
 * generation it saw, so a session none of them shows any more is out of
 * reach. publish() wakes the sleeping workers: each answers within a pass. */
static bool
workers_past(struct dpsock_stack *d, uint32_t gen)
{
	for (unsigned int k = 0; k < d->n_workers; k++)
		/* acquire: pairs with the worker's release of cap.gen */
		if ((int32_t)(__atomic_load_n(&d->workers[k].cap.gen, __ATOMIC_ACQUIRE) - gen) < 0)
			return false;
	return true;
}

static void
publish(struct dpsock_stack *d, struct dpsock_capture *c)
{
	unsigned int i, n = 0;

	for (i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		__atomic_store_n(&d->cap_pub[i], c->live[i], __ATOMIC_RELAXED);
		n += c->live[i] != NULL;
	}
	__atomic_store_n(&d->cap_live, n, __ATOMIC_RELAXED);
	/* release: the sessions above before the generation a worker loads */
	do /* 0 and UINT32_MAX mean "none" and "this round" in retire_gen / answer_gen */
		c->gen++;
	while (c->gen == 0 || c->gen == UINT32_MAX);
	__atomic_store_n(&d->cap_gen, c->gen, __ATOMIC_RELEASE);
	for (i = 0; i < d->n_workers; i++)
		if ((int)i != d->main_worker)
			dpsock_worker_wake(&d->workers[i]);
}

static bool
owner_gone(int32_t pid)
{
	return pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH);
}

void
dpsock_capture_control(struct dpsock_stack *d)
{
	struct dpsock_capture *c = d->capture;
	bool changed = false;
	unsigned int i;

	if (c == NULL)
		return;
	/* requests the workers now run */
	for (i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		struct dpsock_cap_session *ss = session(c, i);

		if (c->answer_gen[i] == 0 || c->live[i] == NULL || !workers_past(d, c->answer_gen[i]))
			continue;
		c->answer_gen[i] = 0;
		__atomic_store_n(&ss->jit, c->live[i]->jit != NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&ss->status, 0, __ATOMIC_RELAXED);
		ss->msg[0] = '\0';
		/* release: status before the generation that answers */
		__atomic_store_n(&ss->applied_gen, c->live[i]->gen, __ATOMIC_RELEASE);
	}
	/* what the workers let go of */
	for (i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		if (c->retiring[i] == NULL || !workers_past(d, c->retire_gen[i]))
			continue;
		sess_free(c->retiring[i]);
		c->retiring[i] = NULL;
		if (c->freeing[i]) {
			c->freeing[i] = false;
			rings_punch(d, c, i);
			/* release: the session is ours no more */
			__atomic_store_n(&session(c, i)->state, DPSOCK_CAP_FREE, __ATOMIC_RELEASE);
			DPSOCK_LOG(INFO, main, "capture: session %u ended", i);
		}
	}
	for (i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		struct dpsock_cap_session *ss = session(c, i);
		/* acquire: pairs with the tool's release of state; its request
		 * is complete */
		uint32_t state = __atomic_load_n(&ss->state, __ATOMIC_ACQUIRE);
		uint32_t gen = __atomic_load_n(&ss->gen, __ATOMIC_RELAXED);
		struct dpsock_cap_sess *s;

		if (c->retiring[i] != NULL)
			continue; /* one change at a time per session */
		if (state == DPSOCK_CAP_ACTIVE || state == DPSOCK_CAP_CLAIMED) {
			int32_t owner = __atomic_load_n(&ss->owner_pid, __ATOMIC_RELAXED);

			if (owner > 0 || state == DPSOCK_CAP_ACTIVE)
				c->unowned[i] = 0;
			else if (++c->unowned[i] < 10)
				continue; /* claimed a moment ago: its pid comes next */
			if (owner_gone(owner))
				state = DPSOCK_CAP_STOP; /* the tool died */
		}
		if (state != DPSOCK_CAP_ACTIVE && state != DPSOCK_CAP_CLAIMED)
			c->unowned[i] = 0;
		if (state == DPSOCK_CAP_STOP) {
			if (c->live[i] == NULL) {
				/* nothing published: no worker holds it */
				rings_punch(d, c, i);
				/* release: the session is ours no more */
				__atomic_store_n(&ss->state, DPSOCK_CAP_FREE, __ATOMIC_RELEASE);
				continue;
			}
			c->retiring[i] = c->live[i];
			c->live[i] = NULL;
			c->freeing[i] = true;
			c->answer_gen[i] = 0;
			changed = true;
			continue;
		}
		if (state != DPSOCK_CAP_ACTIVE || (c->live[i] != NULL && c->live[i]->gen == gen) ||
		    __atomic_load_n(&ss->applied_gen, __ATOMIC_RELAXED) == gen)
			continue;
		s = sess_load(d, c, i, gen);
		if (s == NULL)
			continue; /* refused: the tool reads why */
		if (c->live[i] == NULL)
			rings_reset(d, c, i);
		c->retiring[i] = c->live[i];
		c->live[i] = s;
		changed = true;
		c->answer_gen[i] = UINT32_MAX; /* set to the publication's below */
		DPSOCK_LOG(INFO, main, "capture: session %u (pid %d): %u-instruction filter%s, "
			   "snaplen %u", i, (int)ss->owner_pid, ss->n_insns,
			   s->jit ? " (JIT)" : "", s->snaplen);
	}
	if (changed) {
		publish(d, c);
		for (i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
			if (c->retiring[i] != NULL && c->retire_gen[i] == 0)
				c->retire_gen[i] = c->gen;
			if (c->answer_gen[i] == UINT32_MAX)
				c->answer_gen[i] = c->gen;
		}
	}
	for (i = 0; i < DPSOCK_CAP_SESSIONS; i++)
		if (c->retiring[i] == NULL)
			c->retire_gen[i] = 0;
}

void
dpsock_capture_fini(struct dpsock_stack *d)
{
	struct dpsock_capture *c = d->capture;

	if (c == NULL)
		return;
	/* the workers are stopped: what they wrote is the last; a tool
	 * finishes its file and leaves */
	__atomic_store_n(&c->hdr->state, DPSOCK_CAP_STOPPED, __ATOMIC_RELEASE);
	if (c->pdump)
		rte_pdump_uninit();
	for (unsigned int i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		sess_free(c->live[i]);
		sess_free(c->retiring[i]);
		d->cap_pub[i] = NULL;
	}
	munmap(c->seg, c->size);
	close(c->fd);
	/* a tool still reading keeps its mapping; the name goes */
	shm_unlink(c->shm);
	free(c);
	d->capture = NULL;
}

/* ---- workers ----------------------------------------------------------------- */

void
dpsock_capture_worker_sync(struct dpsock_worker *w)
{
	struct dpsock_stack *d = w->d;
	struct dpsock_cap_worker *cw = &w->cap;
	/* acquire: pairs with publish()'s release; the sessions are whole */
	uint32_t gen = __atomic_load_n(&d->cap_gen, __ATOMIC_ACQUIRE);

	if (gen == cw->gen)
		return;
	cw->n = 0;
	for (unsigned int i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		struct dpsock_cap_sess *s = __atomic_load_n(&d->cap_pub[i], __ATOMIC_RELAXED);

		if (s != cw->s[i] && s != NULL &&
		    dpsock_fifo_prod_attach_at(&cw->ring[i], s->hdr[w->idx], s->data[w->idx],
					       DPSOCK_CAP_RING_BYTES) != 0)
			s = NULL;
		cw->s[i] = s;
		cw->n += s != NULL;
	}
	/* release: the main lcore frees what this view no longer holds once
	 * it sees the generation */
	__atomic_store_n(&cw->gen, gen, __ATOMIC_RELEASE);
}

/* Does session s want frame m of port p, direction dir? Returns the bytes
 * to keep (0: no). */
static inline uint32_t
wants(const struct dpsock_cap_sess *s, struct rte_mbuf *m, unsigned int port, uint32_t dir)
{
	uint64_t rc;

	if (!(s->dirs & dir) || (s->ports != 0 && !(s->ports & (1u << port))))
		return 0;
	if (s->bpf == NULL)
		return s->snaplen;
	rc = s->jit != NULL ? s->jit(m) : rte_bpf_exec(s->bpf, m);
	return rc == 0 ? 0 : (uint32_t)RTE_MIN(rc, (uint64_t)s->snaplen);
}

/* Copy len bytes at off within the record's two segments. */
static void
iov_put(const struct iovec iov[2], uint32_t off, const void *src, uint32_t len)
{
	const unsigned char *p = src;

	if (off < iov[0].iov_len) {
		uint32_t n = RTE_MIN(len, (uint32_t)iov[0].iov_len - off);

		memcpy((unsigned char *)iov[0].iov_base + off, p, n);
		p += n;
		len -= n;
		off = (uint32_t)iov[0].iov_len;
	}
	if (len > 0)
		memcpy((unsigned char *)iov[1].iov_base + (off - iov[0].iov_len), p, len);
}

/* Write frame m's record into session i's ring of this worker; the
 * record is committed by the caller (pending) or here. Returns false when
 * the ring had no room (counted). */
static bool
record(struct dpsock_worker *w, unsigned int i, struct rte_mbuf *m, unsigned int port,
       uint32_t dir, uint32_t caplen, uint64_t ts, struct iovec iov[2], uint32_t *len_out)
{
	struct dpsock_cap_worker *cw = &w->cap;
	struct dpsock_cap_sess *s = cw->s[i];
	struct dpsock_cap_rec r = { 0 };
	uint32_t len, off;
	const struct rte_mbuf *seg;

	caplen = RTE_MIN(caplen, m->pkt_len);
	len = (uint32_t)(sizeof(r) + caplen + 7) & ~7u;
	if (dpsock_fifo_write_reserve(&cw->ring[i], len, iov) != len) {
		__atomic_store_n(&s->ctl[w->idx]->dropped, s->ctl[w->idx]->dropped + 1,
				 __ATOMIC_RELAXED);
		return false;
	}
	r.len = len;
	r.wirelen = m->pkt_len;
	r.caplen = caplen;
	r.port = (uint8_t)port;
	r.dir = (uint8_t)dir;
	r.ts_ns = dpsock_clock_tsc_ns(w, ts);
	r.hw_ts = dpsock_clock_hw_ns(w, m);
	if (r.hw_ts != 0)
		r.flags |= DPSOCK_CAP_REC_HWTS;
	r.worker = w->idx;
	iov_put(iov, 0, &r, sizeof(r));
	off = sizeof(r);
	for (seg = m; seg != NULL && off < sizeof(r) + caplen; seg = seg->next) {
		uint32_t n = RTE_MIN((uint32_t)seg->data_len, (uint32_t)sizeof(r) + caplen - off);

		iov_put(iov, off, rte_pktmbuf_mtod(seg, const void *), n);
		off += n;
	}
	*len_out = len;
	return true;
}

static void
commit(struct dpsock_worker *w, unsigned int i, uint32_t len)
{
	struct dpsock_cap_sess *s = w->cap.s[i];

	/* release (the FIFO's P1): the record before the tool sees it */
	dpsock_fifo_write_commit(&w->cap.ring[i], len);
	__atomic_store_n(&s->ctl[w->idx]->captured, s->ctl[w->idx]->captured + 1, __ATOMIC_RELAXED);
}

void
dpsock_capture_rx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	struct dpsock_cap_worker *cw = &w->cap;

	cw->n_pending = 0;
	for (unsigned int i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		struct dpsock_cap_sess *s = cw->s[i];
		uint32_t caplen, len;

		if (s == NULL)
			continue;
		s->ctl[w->idx]->filtered++;
		caplen = wants(s, m, wp->port_idx, DPSOCK_CAP_DIR_RX);
		if (caplen == 0)
			continue;
		if (!record(w, i, m, wp->port_idx, DPSOCK_CAP_DIR_RX, caplen, w->rx_tsc,
			    cw->pending[cw->n_pending].iov, &len))
			continue;
		cw->pending[cw->n_pending].idx = i;
		cw->pending[cw->n_pending].len = len;
		cw->n_pending++;
	}
}

void
dpsock_capture_drop(struct dpsock_worker *w, const uint64_t *counter)
{
	struct dpsock_cap_worker *cw = &w->cap;
	uint32_t drop = (uint32_t)((const unsigned char *)counter -
				   (const unsigned char *)w->stats) + 1;

	for (unsigned int j = 0; j < cw->n_pending; j++)
		iov_put(cw->pending[j].iov, offsetof(struct dpsock_cap_rec, drop), &drop,
			sizeof(drop));
}

void
dpsock_capture_rx_done(struct dpsock_worker *w)
{
	struct dpsock_cap_worker *cw = &w->cap;

	for (unsigned int j = 0; j < cw->n_pending; j++)
		commit(w, cw->pending[j].idx, cw->pending[j].len);
	cw->n_pending = 0;
}

void
dpsock_capture_tx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf **m,
		  unsigned int n)
{
	struct dpsock_cap_worker *cw = &w->cap;
	uint64_t now = rte_rdtsc();

	for (unsigned int i = 0; i < DPSOCK_CAP_SESSIONS; i++) {
		struct dpsock_cap_sess *s = cw->s[i];

		if (s == NULL)
			continue;
		/* a received frame's reply leaves while the frame's own record
		 * waits in this ring (a full TX batch flushes from within
		 * rx_frame): the record goes first, its fate unknown */
		for (unsigned int j = 0; j < cw->n_pending; j++) {
			if (cw->pending[j].idx != i)
				continue;
			commit(w, i, cw->pending[j].len);
			cw->pending[j] = cw->pending[--cw->n_pending];
			break;
		}
		for (unsigned int k = 0; k < n; k++) {
			struct iovec iov[2];
			uint32_t caplen, len;

			s->ctl[w->idx]->filtered++;
			caplen = wants(s, m[k], wp->port_idx, DPSOCK_CAP_DIR_TX);
			if (caplen != 0 &&
			    record(w, i, m[k], wp->port_idx, DPSOCK_CAP_DIR_TX, caplen, now, iov, &len))
				commit(w, i, len);
		}
	}
}

char *
dpsock_capture_shm_name(struct dpsock_stack *d)
{
	return d->capture != NULL ? d->capture->shm : NULL;
}
