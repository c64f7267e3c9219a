/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sock_priv.h — what the sockets offer beside include/dpsock/dpsock.h: their
 * per-worker set-up, their entries in the stats segment's socket table
 * (sockstat.c), connections within the instance, and their image for a
 * takeover (sock.c).
 */
#ifndef DPSOCK_SOCK_PRIV_H
#define DPSOCK_SOCK_PRIV_H

#include "core/stack_priv.h"
#include "core/wire.h"

/* sock.c */

/* Per-worker socket layer set-up and teardown (on the worker's lcore). */
int dpsock_sock_worker_init(struct dpsock_worker *w);
void dpsock_sock_worker_fini(struct dpsock_worker *w);

/* sockstat.c: the per-socket table, on the owning worker. */

/* Build the worker's free list of socket slots. Returns 0 or -ENOMEM. */
int dpsock_sockstat_worker_init(struct dpsock_worker *w);
void dpsock_sockstat_worker_fini(struct dpsock_worker *w);

/* A slot for a new socket (zeroed, in_use), or NULL when none is left
 * (counted in sock_unlisted). */
struct dpsock_sock_stats *dpsock_sockstat_open(struct dpsock_worker *w, uint8_t proto);

/* Refresh an entry from its pcb: addresses, state, queues, cwnd, RTT,
 * retransmissions (last_retrans: the caller's memory of the connection's
 * retransmission total). pcb NULL: the connection is gone (state CLOSED). */
struct tcp_pcb;
struct udp_pcb;
void dpsock_sockstat_tcp(struct dpsock_sock_stats *e, const struct tcp_pcb *pcb,
			 uint32_t *last_retrans);
void dpsock_sockstat_udp(struct dpsock_sock_stats *e, const struct udp_pcb *pcb);

/* The socket is gone: write its summary to DPSOCK_STATS_FILE, free the slot. */
void dpsock_sockstat_close(struct dpsock_worker *w, struct dpsock_sock_stats *e);

/* Zero the counters of every socket of the worker (its -z). */
void dpsock_sockstat_zero(struct dpsock_worker *w);

/* sock.c: refresh every socket entry of the worker (its 100 ms tick). */
void dpsock_sock_stats_refresh(struct dpsock_worker *w);
/* sock.c: a preload client's socket (daemon/serve.c): the process and
 * descriptor it serves (client: clients[] index, -1 unknown) and poll hits
 * and misses to add, for the socket table. On the socket's worker. */
void dpsock_sock_stats_owner(struct dpsock_sock *s, int32_t pid, int32_t fd, int32_t client,
			     uint32_t add_hits, uint32_t add_misses);

/* sock.c: the process and descriptor using a socket (the preload's
 * sockets: shown by dpsock-stat), and a datagram its owner could not take
 * (rx FIFO full: the socket's rx_drops). */
void dpsock_sock_set_owner(struct dpsock_sock *s, int pid, int fd);
void dpsock_sock_rx_dropped(struct dpsock_sock *s, size_t bytes);

/* Connections within the instance (docs/design.md decision 16). For an
 * established TCP connection whose other end is a pcb of the same lwIP
 * instance: that end's ops (its listener's while it is half open), and in
 * *peer its socket once accepted; NULL when the other end is elsewhere,
 * gone or closing. */
const struct dpsock_sock_ops *dpsock_tcp_loop_peer(const struct dpsock_sock *s,
						   struct dpsock_sock **peer);
/* Mark a connection whose bytes go FIFO to FIFO (dpsock-stat), and count
 * n bytes moved from one end to the other. */
void dpsock_sock_set_cut(struct dpsock_sock *s, bool on);
void dpsock_sock_cut_moved(struct dpsock_sock *from, struct dpsock_sock *to, size_t n);
/* A listener of the calling worker's lwIP takes SYNs to addr:port (port in
 * host order; its own address or any). */
bool dpsock_tcp_listening(uint32_t addr, uint16_t port);

/* Add v to one counter of a socket entry (NULL: not listed). */
#define DPSOCK_SOCKSTAT_ADD(e, field, v)                                        \
	do {                                                                    \
		struct dpsock_sock_stats *e_ = (e);                             \
		if (e_ != NULL) {                                               \
			dpsock_sockstat_write_begin(e_);                        \
			dpsock_stat_add(&e_->field, (v));                       \
			dpsock_sockstat_write_end(e_);                          \
		}                                                               \
	} while (0)

/* A takeover's image of the sockets (docs/design.md decision 19). */

struct dpsock_sock;
struct dpsock_sock_ops;
struct dpsock_rx;

/* Append socket s (the app's, live) to blob; 0 or -errno: -EINPROGRESS (a
 * connect of ours in flight), -ENOTSUP (something not carried). */
int dpsock_sock_export(struct dpsock_sock *s, struct dpsock_tko_buf *blob);
/* The socket again on w (its thread), with ops and user. NULL and *err 0:
 * the socket had no pcb any more (nothing to restore); NULL and *err < 0:
 * failed. */
struct dpsock_sock *dpsock_sock_import(struct dpsock_worker *w, const void *blob, size_t len,
				       const struct dpsock_sock_ops *ops, void *user, int *err);
/* Data the app held, given back as held data of s (released with
 * dpsock_rx_release, which opens the window by len as before). */
struct dpsock_rx *dpsock_rx_restore(struct dpsock_sock *s, const void *data, size_t len);
/* The pcbs of w no app socket stands for (closing, TIME_WAIT; with
 * half_open, the peers' handshakes in SYN_RCVD, which the import gives to
 * their listener again): DPSOCK_TKO_R_PCB records; and one of them back
 * (0, 1 for a handshake given to its listener, or -errno). */
int dpsock_tko_export_pcbs(struct dpsock_worker *w, struct dpsock_tko_buf *b, bool half_open);
int dpsock_tko_import_pcb(struct dpsock_worker *w, const void *data, size_t len);

#endif /* DPSOCK_SOCK_PRIV_H */
