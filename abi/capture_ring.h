/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capture_ring.h — the capture segment of a dpsock instance: what
 * dpsock-dump (tools/dpsock_dump.c) asks for and the frames the workers copy
 * to it (stack/capture/). Plain C, no DPDK: dpsock-dump links neither DPDK
 * nor lwIP.
 *
 * /dev/shm/dpsock.<name>.capture, mode 0600 (capturing is root's, as
 * dpsock-stat's control commands are), created by the instance at start
 * (dpsockd or a native app) and unlinked at stop:
 *
 *   0                 struct dpsock_cap_hdr (4 KiB): the instance's
 *                     geometry, ports, state
 *   off_sessions      DPSOCK_CAP_SESSIONS sessions, session_stride each:
 *                       struct dpsock_cap_session (its request, the
 *                       instance's answer, the classic BPF program)
 *                       n_workers capture rings, ring_stride each: a
 *                       struct dpsock_cap_ring_ctl line, then an
 *                       abi/spsc_ring.h byte FIFO (the worker produces,
 *                       the tool consumes) of ring_bytes data bytes
 *
 * The segment is sparse: a session's rings take memory only once a capture
 * writes to them, and the instance gives their pages back when it ends.
 *
 * A session (the tool's side):
 *   1. claim a FREE session: compare-and-swap state FREE -> CLAIMED, write
 *      owner_pid;
 *   2. write the request (snaplen, dirs, ports, the filter as classic BPF
 *      from libpcap's pcap_compile), bump gen, store state = ACTIVE
 *      (release);
 *   3. the instance's main thread (every 100 ms) loads the filter (classic
 *      BPF converted to eBPF, verified, JIT-compiled where it can be),
 *      hands it to the workers and, once each of them runs it, answers:
 *      applied_gen = gen and status 0 (release); or at once, status
 *      -errno with msg;
 *   4. read the rings; a new filter is a new gen (--pid follows the
 *      program's sockets);
 *   5. store state = STOP: the instance takes the session from the
 *      workers, gives its pages back and stores FREE. A tool that dies
 *      (its owner_pid gone) is stopped the same way.
 * The workers copy each frame a session wants, as the port received it
 * (before any validation: a frame the worker drops carries the counter
 * that counted it) or as it goes to the port (after software
 * segmentation), into their ring, whole or not at all: a ring without room
 * drops the frame from the capture (`dropped`, never the traffic).
 *
 * Trust: the segment is root's; the instance still validates every field
 * it reads (a program of more than DPSOCK_CAP_MAX_INSNS instructions, a
 * snaplen out of range, a session in a state it did not expect).
 */
#ifndef DPSOCK_ABI_CAPTURE_RING_H
#define DPSOCK_ABI_CAPTURE_RING_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define DPSOCK_CAP_MAGIC 0x50414344u /* "DCAP" */
/* 1: the first */
#define DPSOCK_CAP_VERSION 1u
#define DPSOCK_CAP_SESSIONS 4u
#define DPSOCK_CAP_MAX_PORTS 4u
#define DPSOCK_CAP_MAX_WORKERS 64u
#define DPSOCK_CAP_MAX_INSNS 4096u   /* libpcap's BPF_MAXINSNS */
#define DPSOCK_CAP_SNAPLEN_MAX 65535u
#define DPSOCK_CAP_RING_BYTES (4u << 20) /* per worker and session */
#define DPSOCK_CAP_HDR_SIZE 4096u

enum dpsock_cap_state {
	DPSOCK_CAP_RUNNING = 1,  /* the instance serves captures */
	DPSOCK_CAP_STOPPED = 2,  /* the instance stopped: what the rings hold is the last */
};

struct dpsock_cap_port {
	char name[32];            /* the port's name (dpsock.conf) */
	uint32_t ifindex;         /* its kernel netdev, 0: none */
	uint32_t pad;
};

struct dpsock_cap_hdr {
	uint32_t magic;           /* DPSOCK_CAP_MAGIC, stored last (release) */
	uint32_t version;         /* DPSOCK_CAP_VERSION */
	uint64_t size;            /* bytes of the segment */
	uint32_t state;           /* enum dpsock_cap_state (instance-written) */
	int32_t pid;              /* the instance's process */
	uint32_t n_workers;
	uint32_t n_ports;
	uint32_t n_sessions;      /* DPSOCK_CAP_SESSIONS */
	uint32_t ring_bytes;      /* data bytes of each ring (a power of two) */
	uint64_t off_sessions;
	uint64_t session_stride;
	uint64_t ring_off;        /* the first ring within a session */
	uint64_t ring_stride;     /* bytes from one worker's ring to the next */
	struct dpsock_cap_port ports[DPSOCK_CAP_MAX_PORTS];
	char name[32];            /* the instance's name */
};
static_assert(sizeof(struct dpsock_cap_hdr) <= DPSOCK_CAP_HDR_SIZE, "capture header");

enum dpsock_cap_session_state {
	DPSOCK_CAP_FREE = 0,
	DPSOCK_CAP_CLAIMED,       /* a tool writes its request */
	DPSOCK_CAP_ACTIVE,        /* the request stands (gen says which) */
	DPSOCK_CAP_STOP,          /* the tool is done (or died): the instance frees it */
};

#define DPSOCK_CAP_DIR_RX 0x1u
#define DPSOCK_CAP_DIR_TX 0x2u

/* One classic BPF instruction, as struct bpf_insn of <pcap/bpf.h>. */
struct dpsock_cap_insn {
	uint16_t code;
	uint8_t jt;
	uint8_t jf;
	uint32_t k;
};
static_assert(sizeof(struct dpsock_cap_insn) == 8, "classic BPF instruction");

struct dpsock_cap_session {
	/* ---- the tool's (line 0) ---- */
	uint32_t state;           /* enum dpsock_cap_session_state */
	int32_t owner_pid;
	uint32_t gen;             /* the request's generation (bumped per new filter) */
	uint32_t snaplen;         /* bytes kept of each frame, 1..DPSOCK_CAP_SNAPLEN_MAX */
	uint32_t dirs;            /* DPSOCK_CAP_DIR_* */
	uint32_t ports;           /* bit p: port p (0: every port) */
	uint32_t n_insns;         /* 0: no filter (every frame) */
	uint32_t pad0[9];
	/* ---- the instance's (line 1) ---- */
	uint32_t applied_gen;     /* the generation the workers run */
	int32_t status;           /* 0, or -errno: the request was refused */
	uint32_t jit;             /* 1: the filter runs JIT-compiled */
	uint32_t pad1[13];
	char msg[128];            /* why a request was refused */
	struct dpsock_cap_insn insns[DPSOCK_CAP_MAX_INSNS];
};

/* The worker-written line in front of each ring. */
struct dpsock_cap_ring_ctl {
	uint64_t captured;        /* frames written to the ring */
	uint64_t dropped;         /* frames the session wanted that did not fit */
	uint64_t filtered;        /* frames the filter looked at */
	uint8_t pad[40];
};
static_assert(sizeof(struct dpsock_cap_ring_ctl) == 64, "ring control line");

/* A record in a ring: this header, caplen bytes of the frame, padding to
 * a multiple of 8. */
struct dpsock_cap_rec {
	uint32_t len;             /* bytes of the record, header and padding included */
	uint32_t wirelen;         /* the frame's length */
	uint32_t caplen;          /* its bytes that follow */
	uint8_t port;             /* dpsock port index */
	uint8_t dir;              /* DPSOCK_CAP_DIR_RX or _TX */
	uint16_t flags;           /* DPSOCK_CAP_REC_* */
	uint64_t ts_ns;           /* CLOCK_REALTIME when the worker took or sent it */
	uint64_t hw_ts;           /* the NIC's raw stamp (DPSOCK_CAP_REC_HWTS) */
	/* the worker dropped the frame: the offset of the counter that counted
	 * it in struct dpsock_worker_stats (abi/stats_segment.h) + 1; 0: kept */
	uint32_t drop;
	uint32_t worker;
};
static_assert(sizeof(struct dpsock_cap_rec) == 40, "capture record header");
#define DPSOCK_CAP_REC_HWTS 0x1u

#endif /* DPSOCK_ABI_CAPTURE_RING_H */
