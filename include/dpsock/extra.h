/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock extra API: what a program running under libdpsock_preload.so can
 * do beyond the socket API. One header, nothing to link:
 *
 *   #include <dpsock/extra.h>
 *
 *   const struct dpsock_extra_api *x = dpsock_get_api();
 *   if (x != NULL && (x->caps & DPSOCK_CAP_ZCOPY_UDP))
 *           ...use x->recvfrom_zcopy...
 *   else
 *           ...plain recvfrom: the program runs the same without the preload...
 *
 * dpsock_get_api() asks the preload library through a reserved getsockopt
 * on descriptor -1: without the library, libc answers EBADF and the call
 * returns NULL. The table is the library's; it lives as long as the process.
 *
 * Versions. `version` is the DPSOCK_EXTRA_VERSION the library implements,
 * `size` the size of its table: members past `size` are absent (a program
 * built against a newer header than the library checks `size` or the
 * capability bits before calling a newer member). `caps` says which
 * functions work in this library and process; a function whose bit is
 * clear returns -EOPNOTSUPP.
 *
 * Errors: every function returns 0, a count, or -errno (it never touches
 * errno). The errors each one can return are listed with it.
 *
 * Sockets: the functions act on descriptors dpsock offloaded (a bound or
 * connected UDP socket, a TCP connection, a listener). A socket the library
 * left to the kernel (not yet bound, a loopback peer, a "use os" rule)
 * gives -EOPNOTSUPP; a descriptor that is not an AF_INET socket the library
 * knows gives -EBADF, and so does a socket created while offload was off
 * (DPSOCK_OFFLOAD=0, thread_offload(0)): the library never tracked it.
 *
 * Zero-copy receive. Data reaches a preloaded program through a per-socket
 * receive FIFO in memory shared with dpsockd: the worker copies each
 * datagram or stream chunk there once, and recv() copies it again into the
 * program's buffer. recvfrom_zcopy() skips the second copy: it describes
 * the data where it lies (one or two segments: the FIFO wraps) and marks it
 * held; free_packets() hands it back. Held data keeps its FIFO space
 * (dpsock.conf's preload.rx_fifo_kb), so a program that holds a lot slows
 * its sender (TCP closes the window, UDP datagrams that do not fit are
 * dropped and counted, as a full kernel socket buffer would), and a
 * program must not wait for more data on a socket while what it holds of
 * it could fill the FIFO: free first, or receive with MSG_DONTWAIT. Packets may be freed in any order and from any
 * thread; the FIFO space comes back in arrival order. Plain recv() on the
 * same socket keeps working and skips held data.
 */
#ifndef DPSOCK_EXTRA_H
#define DPSOCK_EXTRA_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version this header describes. */
#define DPSOCK_EXTRA_VERSION 1

/* getsockopt(-1, SOL_SOCKET, DPSOCK_SO_EXTRA_API, &ptr, &len): the reserved
 * query dpsock_get_api() makes (a value no Linux option uses). */
#define DPSOCK_SO_EXTRA_API 0x44505841 /* "DPXA" */

/* Capability bits (struct dpsock_extra_api.caps). */
#define DPSOCK_CAP_ZCOPY_UDP      (1ull << 0) /* recvfrom_zcopy on UDP sockets */
#define DPSOCK_CAP_ZCOPY_TCP      (1ull << 1) /* recvfrom_zcopy on TCP connections */
#define DPSOCK_CAP_RECV_CALLBACK  (1ull << 2) /* register_recv_callback */
#define DPSOCK_CAP_COMPLETIONS    (1ull << 3) /* comp_add/del/poll/fds */
#define DPSOCK_CAP_CONF_RULE      (1ull << 4) /* add_conf_rule */
#define DPSOCK_CAP_THREAD_OFFLOAD (1ull << 5) /* thread_offload */
#define DPSOCK_CAP_DUMP_FD_STATS  (1ull << 6) /* dump_fd_stats */
#define DPSOCK_CAP_DUMMY_SEND     (1ull << 7) /* send_dummy */

/*
 * A received datagram (UDP) or stream chunk (TCP), where it lies in shared
 * memory. Read-only to the program. One cache line.
 */
struct dpsock_zpkt {
	uint64_t id;              /* give it back to free_packets */
	uint32_t len;             /* bytes: iov[0].iov_len + iov[1].iov_len */
	uint16_t n_iov;           /* 1, or 2 when the data wraps around the FIFO */
	uint16_t flags;           /* 0 (reserved) */
	struct iovec iov[2];
	struct sockaddr_in from;  /* UDP: the sender; TCP: the peer (an IPv6 one:
				   * AF_UNSPEC and its port, recvfrom names it) */
};

/* What a receive callback decides for a datagram. */
enum dpsock_recv_verdict {
	DPSOCK_RECV_KEEP = 0,     /* queue it for recv/recvfrom_zcopy/completions */
	DPSOCK_RECV_DROP = 1,     /* discard it now (its FIFO space comes back) */
	DPSOCK_RECV_HOLD = 2,     /* the program keeps it: free_packets(pkt) later */
};

/*
 * Receive callback: called once for each datagram that arrives on the
 * socket, before recv, poll, epoll or the completion poll sees it, in the
 * thread that is looking at the socket (a recv on it, a poll/select/epoll
 * wait that includes it, comp_poll). pkt is valid during the call; with
 * DPSOCK_RECV_HOLD it stays valid until it is freed. The callback must not
 * block and must not call recv, poll or the extra API's receive functions
 * on the same socket (free_packets of other packets is fine).
 */
typedef enum dpsock_recv_verdict (*dpsock_recv_cb_t)(int fd, const struct dpsock_zpkt *pkt,
						      void *ctx);

/* Completion events (struct dpsock_comp.events): EPOLLIN, EPOLLOUT,
 * EPOLLERR, EPOLLHUP, EPOLLRDHUP from <sys/epoll.h>, and these. */
#define DPSOCK_COMP_PACKET   (1u << 24) /* pkt holds received data: free it */
#define DPSOCK_COMP_ACCEPTED (1u << 25) /* new_fd is a connection the listener accepted */

struct dpsock_comp {
	uint64_t user_data;       /* what comp_add was given */
	int fd;                   /* the socket */
	uint32_t events;
	int new_fd;               /* DPSOCK_COMP_ACCEPTED: the new connection; else -1 */
	uint32_t pad;
	struct dpsock_zpkt pkt;   /* DPSOCK_COMP_PACKET: held data */
};

/* comp_poll flags */
#define DPSOCK_COMP_ARM 0x1u /* nothing ready: arm the fds of comp_fds before returning 0 */

/* add_conf_rule / thread_offload: see below. dump_fd_stats levels are
 * syslog's: 3 (err) .. 7 (debug), as DPSOCK_LOG_LEVEL. */

struct dpsock_extra_api {
	uint32_t version;         /* DPSOCK_EXTRA_VERSION of the library */
	uint32_t size;            /* sizeof(struct dpsock_extra_api) in the library */
	uint64_t caps;            /* DPSOCK_CAP_* */

	/*
	 * Receive up to max datagrams (UDP) or one chunk of stream (TCP, the
	 * bytes that lie contiguously readable, at most two segments) without
	 * copying them. Blocks as recv would (the socket's O_NONBLOCK,
	 * SO_RCVTIMEO; flags: MSG_DONTWAIT). UDP returns the datagrams that are
	 * ready, at least one; a connected UDP socket skips datagrams from
	 * other senders, as recv does. Each returned packet is held until
	 * free_packets.
	 * Returns the number of packets filled (>= 1); 0 on TCP at end of
	 * stream; -EAGAIN (non-blocking, or SO_RCVTIMEO ran out), -EINTR,
	 * -EINVAL (pkts NULL, max 0, a listener, unknown flags: only
	 * MSG_DONTWAIT is taken), -EBADF, -EOPNOTSUPP (not offloaded),
	 * -ECONNRESET (TCP reset, dpsockd gone), -ENOMEM (TCP: too many chunks
	 * held at once: free some).
	 */
	int (*recvfrom_zcopy)(int fd, struct dpsock_zpkt *pkts, unsigned int max, int flags);

	/*
	 * Hand back n packets from recvfrom_zcopy, a HOLD verdict or a
	 * completion. Each id is checked on its own: one this process does
	 * not hold (already freed, forged, or its socket was closed) is
	 * skipped, and the others are freed all the same, so a stale id in a
	 * batch leaks nothing.
	 * Returns 0; -EINVAL (pkts NULL with n > 0, or at least one id
	 * skipped).
	 */
	int (*free_packets)(const struct dpsock_zpkt *pkts, unsigned int n);

	/*
	 * Call cb for every datagram arriving on a UDP socket from now on
	 * (datagrams already queued included); cb NULL removes it.
	 * Returns 0; -EBADF, -EOPNOTSUPP (not offloaded), -EPROTOTYPE (not UDP),
	 * -ENOMEM (the socket's zero-copy state could not be allocated).
	 */
	int (*register_recv_callback)(int fd, dpsock_recv_cb_t cb, void *ctx);

	/*
	 * Completion polling: one call returns what happened on every socket
	 * of the calling thread's completion set, data included. The set
	 * exists from the thread's first comp_* call; from then on, every
	 * socket the thread offloads (bind, listen, connect, first send) and
	 * every connection accepted through comp_poll joins it with user_data
	 * = its fd, and comp_add adds others.
	 *
	 * comp_add: put fd in the set (again: update user_data).
	 *   Returns 0; -EBADF, -EOPNOTSUPP (not offloaded), -ENOMEM, -EMFILE
	 *   (this thread cannot open a waiter: dpsockd's limits).
	 * comp_del: take fd out. Returns 0; -ENOENT (not in the set), -EBADF.
	 * comp_poll: fill up to max completions. UDP: one DPSOCK_COMP_PACKET
	 *   per datagram; TCP: one per chunk; a listener: DPSOCK_COMP_ACCEPTED
	 *   per connection (accepted non-blocking, close-on-exec); a
	 *   connecting socket: EPOLLOUT when connected, EPOLLERR|EPOLLHUP when
	 *   refused; EPOLLRDHUP at the peer's FIN, EPOLLHUP|EPOLLERR at a
	 *   reset; EPOLLHUP|EPOLLERR on every socket once when dpsockd goes
	 *   away. Never blocks. With DPSOCK_COMP_ARM and nothing ready, the
	 *   fds of comp_fds are armed: the program may sleep in poll/epoll on
	 *   them until one is readable, then call comp_poll again.
	 *   Returns the number filled (0: nothing ready); -EINVAL (c NULL,
	 *   max 0, unknown flags); -ENOMEM, -EMFILE (as comp_add).
	 * comp_fds: the descriptors to sleep on (readable = look again): the
	 *   set's eventfd and the control socket (hangs up when dpsockd dies).
	 *   Returns how many were written (2), -EINVAL (max < 2), -ENOMEM,
	 *   -EMFILE.
	 */
	int (*comp_add)(int fd, uint64_t user_data);
	int (*comp_del)(int fd);
	int (*comp_poll)(struct dpsock_comp *c, unsigned int max, unsigned int flags);
	int (*comp_fds)(int *fds, unsigned int max);

	/*
	 * Add an offload rule for this process, in dpsock.conf's offload.rules
	 * grammar (libvma.conf's): "use offload|vma|os ROLE ADDR[/LEN]:PORT[-PORT]
	 * [:LADDR[/LEN]:LPORT[-LPORT]]" or "application-id PROGRAM [ID]" (which
	 * scopes the rules added after it). The process's own rules are
	 * consulted before dpsockd's, first match decides, and they apply to
	 * sockets whose offload decision (bind, listen, connect, first send)
	 * comes after the call.
	 * Returns 0; -EINVAL (bad rule; the reason is logged at warning
	 * level), -ENOSPC (64 rules already), -EFAULT (rule NULL).
	 */
	int (*add_conf_rule)(const char *rule);

	/*
	 * Offload on (1) or off (0) for sockets the calling thread creates from
	 * now on (off: they are plain kernel sockets, as with DPSOCK_OFFLOAD=0
	 * for the whole process). Sockets created before keep their state.
	 * Returns the previous setting (0 or 1); -EINVAL (on not 0 or 1).
	 */
	int (*thread_offload)(int on);

	/*
	 * Write one socket's state and counters to the library's log
	 * (DPSOCK_LOG_FILE, stderr by default) at the given level (3..7; shown
	 * only if DPSOCK_LOG_LEVEL lets it through): the shim's view (kind,
	 * slots, receive and send FIFO levels, held packets, poll hits and
	 * misses) and the worker's counters from dpsockd's stats segment.
	 * Returns 0; -EBADF, -EINVAL (level).
	 */
	int (*dump_fd_stats)(int fd, int level);

	/*
	 * A send that goes through the whole send path (lock, FIFO space,
	 * the copy into shared memory) without sending: nothing is published
	 * to the worker. Keeps the send path warm in the caches between rare
	 * real sends (VMA's VMA_SND_FLAGS_DUMMY).
	 * Returns what a real send would have taken now (UDP: len; TCP: up
	 * to len, at least 1); -EAGAIN (no room now), -EMSGSIZE (UDP: too
	 * big; len above INT_MAX), -ENOTCONN,
	 * -EDESTADDRREQ (UDP: no peer), -EPIPE (TCP: cannot send any more;
	 * either: dpsockd gone), -EFAULT (buf NULL with len > 0), -EBADF,
	 * -EOPNOTSUPP (not offloaded, or a listener), -EINVAL (flags: none is
	 * taken).
	 */
	int (*send_dummy)(int fd, const void *buf, size_t len, int flags);
};

/*
 * The preload library's table, or NULL when the program does not run under
 * libdpsock_preload.so (or under one that has no extra API).
 */
static inline const struct dpsock_extra_api *
dpsock_get_api(void)
{
	const struct dpsock_extra_api *api = NULL;
	socklen_t len = sizeof(api);
	int saved = errno;    /* without the library, libc says EBADF: not news */

	if (getsockopt(-1, SOL_SOCKET, DPSOCK_SO_EXTRA_API, &api, &len) != 0 ||
	    len != sizeof(api) || api == NULL || api->size < 4 * sizeof(uint32_t))
		api = NULL;
	errno = saved;
	return api;
}

#ifdef __cplusplus
}
#endif

#endif /* DPSOCK_EXTRA_H */
