/* SPDX-License-Identifier: BSD-3-Clause */
/* The stats segment in /dev/shm; see stats_priv.h. */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "daemon_priv.h"
#include "log_priv.h"

_Static_assert(DPSOCK_STATS_MAX_PORTS >= DPSOCK_MAX_PORTS, "stats segment too small for ports");
_Static_assert(DPSOCK_STATS_MAX_WORKERS >= DPSOCK_MAX_WORKERS, "stats segment too small for workers");
_Static_assert(sizeof(struct dpsock_worker_stats) % 64 == 0, "worker stats must fill whole cache lines");

/* Is a segment left by a daemon that is gone? */
static bool
segment_stale(int fd)
{
	struct dpsock_stats_segment hdr;

	if (pread(fd, &hdr, sizeof(hdr.magic) + sizeof(hdr.version) + sizeof(hdr.size) +
			    sizeof(hdr.pid), 0) <= 0)
		return true;
	return hdr.magic != DPSOCK_STATS_MAGIC || hdr.pid <= 0 ||
	       (kill(hdr.pid, 0) != 0 && errno == ESRCH);
}

int
dpsock_stats_create(struct dpsock_daemon *d, char *err, size_t errlen)
{
	struct dpsock_stats_segment *s;
	struct timespec now;
	unsigned int i;
	int fd;

	snprintf(d->stats_shm, sizeof(d->stats_shm), DPSOCK_STATS_SHM_FMT, d->conf.name);
	fd = shm_open(d->stats_shm, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0 && errno == EEXIST) {
		fd = shm_open(d->stats_shm, O_RDWR, 0644);
		if (fd >= 0 && !segment_stale(fd)) {
			struct dpsock_stats_segment hdr;

			if (pread(fd, &hdr, sizeof(hdr), 0) < 0)
				hdr.pid = 0;
			close(fd);
			snprintf(err, errlen, "an instance called '%s' already runs (pid %d); "
				 "give this one another name (name = ... in the config)",
				 d->conf.name, (int)hdr.pid);
			return -EEXIST;
		}
		if (fd >= 0)
			DPSOCK_LOG(NOTICE, stats, "taking over stale /dev/shm%s", d->stats_shm);
	}
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "shm_open(%s): %s", d->stats_shm, strerror(e));
		return -e;
	}
	if (ftruncate(fd, sizeof(*s)) != 0) {
		int e = errno;

		close(fd);
		shm_unlink(d->stats_shm);
		snprintf(err, errlen, "ftruncate(/dev/shm%s): %s", d->stats_shm, strerror(e));
		return -e;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		int e = errno;

		close(fd);
		shm_unlink(d->stats_shm);
		snprintf(err, errlen, "mmap(/dev/shm%s): %s", d->stats_shm, strerror(e));
		return -e;
	}
	memset(s, 0, sizeof(*s));
	s->version = DPSOCK_STATS_VERSION;
	s->size = sizeof(*s);
	s->pid = getpid();
	s->n_ports = d->n_ports;
	s->n_workers = d->n_workers;
	clock_gettime(CLOCK_REALTIME, &now);
	s->start_time_ns = (uint64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	snprintf(s->name, sizeof(s->name), "%s", d->conf.name);
	for (i = 0; i < d->n_ports; i++)
		snprintf(s->port_names[i], sizeof(s->port_names[i]), "%s", d->ports[i].name);
	/* release: readers check magic first; everything above is visible
	 * once they see it */
	__atomic_store_n(&s->magic, DPSOCK_STATS_MAGIC, __ATOMIC_RELEASE);
	d->stats = s;
	d->stats_fd = fd;
	return 0;
}

void
dpsock_stats_update_ports(struct dpsock_daemon *d)
{
	unsigned int i;

	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_port *p = &d->ports[i];
		struct dpsock_port_stats *ps = &d->stats->ports[i];
		struct rte_eth_stats es;

		if (p->started) {
			struct rte_eth_link link;

			memset(&link, 0, sizeof(link));
			if (rte_eth_link_get_nowait(p->port_id, &link) == 0 &&
			    link.link_status != dpsock_stat_read(&ps->link_up)) {
				char text[RTE_ETH_LINK_MAX_STR_LEN];

				rte_eth_link_to_str(text, sizeof(text), &link);
				DPSOCK_LOG(NOTICE, pmd, "port %s: %s", p->name, text);
				dpsock_stat_set(&ps->link_up, link.link_status);
				dpsock_stat_set(&ps->link_speed_mbps,
						link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 :
						link.link_speed);
			}
		}
		if (p->started && rte_eth_stats_get(p->port_id, &es) == 0) {
			dpsock_stat_set(&ps->rx_packets, es.ipackets);
			dpsock_stat_set(&ps->rx_bytes, es.ibytes);
			dpsock_stat_set(&ps->tx_packets, es.opackets);
			dpsock_stat_set(&ps->tx_bytes, es.obytes);
			dpsock_stat_set(&ps->rx_missed, es.imissed);
			dpsock_stat_set(&ps->rx_errors, es.ierrors);
			dpsock_stat_set(&ps->tx_errors, es.oerrors);
			dpsock_stat_set(&ps->rx_nombuf, es.rx_nombuf);
		}
		if (p->pool != NULL) {
			dpsock_stat_set(&ps->mbufs_free, rte_mempool_avail_count(p->pool));
			dpsock_stat_set(&ps->mbufs_total, p->pool->size);
		}
	}
}

void
dpsock_stats_destroy(struct dpsock_daemon *d)
{
	if (d->stats == NULL)
		return;
	__atomic_store_n(&d->stats->running, 0, __ATOMIC_RELEASE);
	munmap(d->stats, sizeof(*d->stats));
	close(d->stats_fd);
	shm_unlink(d->stats_shm);
	d->stats = NULL;
	d->stats_fd = -1;
}
