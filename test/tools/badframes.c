/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * badframes — send hand-made malformed Ethernet frames through an AF_PACKET
 * raw socket, one defect per case, so an integration test can check that
 * dpsockd drops each one and bumps the named counter.
 *
 *   badframes -i IFACE -m DSTMAC -s SRCIP -d DSTIP [-n COUNT] [-x] [-v] CASE...
 *   badframes -w FILE.pcap [-S SRCMAC] -m DSTMAC -s SRCIP -d DSTIP ... CASE...
 *   badframes -i IFACE -m DSTMAC -6 SRC6 -D DST6 [-n COUNT] ... IP6CASE...
 *   badframes --list        sendable cases: "CASE EXPECTED_COUNTER description"
 *   badframes --list-all    also the cases an Ethernet device cannot carry
 *   badframes --list-l4     TCP/UDP cases aimed at a bound port (-p PORT)
 *   badframes --list-ip6    IPv6 cases aimed at a port with an IPv6 address
 *
 * Every frame is otherwise correct: destination MAC = DSTMAC, source MAC =
 * the interface's own MAC, IPv4 header checksum right (unless that is the
 * defect), L4 checksums right (unless that is the defect). COUNT frames are
 * sent per case, each with its own IP id / ICMP sequence / source port. The
 * CASE "all" stands for every case --list prints.
 *
 * IPv6 cases (--list-ip6, never in "all": a port without an IPv6 address
 * drops every one as rx_drop_ethertype, see "ethertype_ipv6") go from SRC6
 * (-6) to DST6 (-D), which they need; -s and -d are needed only when an
 * IPv4 case is sent too.
 *
 * Runts: Linux refuses, with EINVAL, an AF_PACKET frame shorter than the
 * device's minimum link-layer header (14 bytes on Ethernet: see
 * dev_validate_header()), even for CAP_SYS_RAWIO, and veth itself could not
 * carry one (eth_type_trans() pulls 14 bytes). So "runt" is not in --list;
 * it can still be written to a pcap file (-w) and fed to dpsockd through
 * DPDK's net_pcap PMD (--vdev=net_pcap0,rx_pcap=FILE). veth pads nothing:
 * the other cases reach the receiver at exactly the length built here.
 *
 * Exit status: 0 when every frame was sent (or written), 1 when a send
 * failed, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ETH_HLEN_ 14
#define FRAME_MAX 1514

#define ETYPE_IPV4 0x0800
#define ETYPE_ARP 0x0806
#define ETYPE_IPV6 0x86dd
#define ETYPE_LOCAL_EXP 0x88b5 /* IEEE 802 local experimental ethertype 1 */

#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_ICMPV6 58

#define IP6_HLEN 40
#define NEXTH_HBH 0   /* IPv6 hop-by-hop options header */
#define NEXTH_NONE 59 /* IPv6 "no next header" */

#define DISCARD_PORT 9
#define SRC_PORT_BASE 40000

struct ctx {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint32_t src_ip; /* network order */
	uint32_t dst_ip; /* network order */
	uint8_t src_ip6[16]; /* -6, for the IPv6 cases */
	uint8_t dst_ip6[16]; /* -D, for the IPv6 cases */
	unsigned int seq; /* frame number within a case, 0..COUNT-1 */
	const char *case_name;
	uint16_t dport;      /* -p: destination port of the L4 cases */
	uint16_t sport_base; /* L4 cases: 41000 + 100 * case index */
};

/* A builder writes one frame into buf and returns its length. */
typedef size_t (*build_fn)(uint8_t *buf, const struct ctx *c);

struct bad_case {
	const char *name;
	const char *counter; /* worker counter in abi/stats_segment.h */
	build_fn build;
	bool not_on_ethernet; /* AF_PACKET on an Ethernet device refuses it */
	const char *help;
	/* L4 case: meant for a bound port (-p), listed by --list-l4 only
	 * (not by --list, --list-all or "all"); counter "-" when the right
	 * outcome is an answer, not a drop */
	bool l4;
	/* IPv6 case: meant for a port with an IPv6 address, needs -6 and -D;
	 * listed by --list-ip6 only (not by --list, --list-all, --list-l4 or
	 * "all") */
	bool ip6;
};

/* ---- byte helpers ---------------------------------------------------- */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* RFC 1071 sum, not yet folded or complemented. */
static uint32_t
sum16(const uint8_t *p, size_t len, uint32_t acc)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		acc += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		acc += (uint32_t)p[len - 1] << 8;
	return acc;
}

static uint16_t
fold(uint32_t acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)~acc;
}

static uint16_t
inet_csum(const uint8_t *p, size_t len)
{
	return fold(sum16(p, len, 0));
}

/* Checksum of an L4 segment with the IPv4 pseudo-header. */
static uint16_t
l4_csum(const struct ctx *c, uint8_t proto, const uint8_t *l4, size_t len)
{
	uint8_t ph[12];

	memcpy(ph, &c->src_ip, 4);
	memcpy(ph + 4, &c->dst_ip, 4);
	ph[8] = 0;
	ph[9] = proto;
	put16(ph + 10, (uint16_t)len);
	return fold(sum16(l4, len, sum16(ph, sizeof(ph), 0)));
}

/* The same with the IPv6 pseudo-header (RFC 8200 8.1), which ICMPv6 uses
 * too: src, dst, 32-bit upper-layer length, 3 zero bytes, next header. */
static uint16_t
l4_csum6(const struct ctx *c, uint8_t proto, const uint8_t *l4, size_t len)
{
	uint8_t ph[40];

	memcpy(ph, c->src_ip6, 16);
	memcpy(ph + 16, c->dst_ip6, 16);
	put32(ph + 32, (uint32_t)len);
	memset(ph + 36, 0, 3);
	ph[39] = proto;
	return fold(sum16(l4, len, sum16(ph, sizeof(ph), 0)));
}

/*
 * A checksum value that is wrong for sure. In one's complement 0x0000 and
 * 0xffff are the same number, so "correct ^ 0xffff" could verify; a
 * smaller mask never maps one onto the other. For UDP, 0 means "no
 * checksum" and would be accepted: avoid it.
 */
static uint16_t
bad_csum(uint16_t good, bool is_udp)
{
	uint16_t bad = good ^ 0x00ff;

	if (is_udp && bad == 0)
		bad = good ^ 0x0f0f;
	return bad;
}

/* ---- frame builders ---------------------------------------------------- */

static size_t
eth_hdr(uint8_t *buf, const struct ctx *c, uint16_t ethertype)
{
	memcpy(buf, c->dst_mac, 6);
	memcpy(buf + 6, c->src_mac, 6);
	put16(buf + 12, ethertype);
	return ETH_HLEN_;
}

/* Payload that names the case, to recognise frames in a capture. */
static size_t
marker(uint8_t *p, const struct ctx *c, size_t len)
{
	char text[64];
	size_t n;

	n = (size_t)snprintf(text, sizeof(text), "badframes:%s:%u",
			     c->case_name, c->seq);
	memset(p, 0, len);
	memcpy(p, text, n < len ? n : len);
	return len;
}

/*
 * A correct 20-byte IPv4 header for a payload of l4_len bytes; the caller
 * patches fields and calls ip_fix_csum() afterwards if it must.
 */
static void
ip_hdr(uint8_t *ip, const struct ctx *c, uint8_t proto, size_t l4_len)
{
	ip[0] = 0x45;
	ip[1] = 0;
	put16(ip + 2, (uint16_t)(20 + l4_len));
	put16(ip + 4, (uint16_t)(0xb000 + c->seq)); /* id */
	put16(ip + 6, 0x4000);                      /* DF */
	ip[8] = 64;
	ip[9] = proto;
	put16(ip + 10, 0);
	memcpy(ip + 12, &c->src_ip, 4);
	memcpy(ip + 16, &c->dst_ip, 4);
	put16(ip + 10, inet_csum(ip, 20));
}

/* Recompute the header checksum over the 20 bytes written. */
static void
ip_fix_csum(uint8_t *ip)
{
	put16(ip + 10, 0);
	put16(ip + 10, inet_csum(ip, 20));
}

#define ICMP_DATA 32

/* An echo request's ICMP (type 8) or ICMPv6 (type 128) header and
 * ICMP_DATA bytes of marker, checksum 0 for the caller to fill. */
static void
echo_request(uint8_t *icmp, const struct ctx *c, uint8_t type)
{
	icmp[0] = type;
	icmp[1] = 0;
	put16(icmp + 2, 0);
	put16(icmp + 4, 0xbf00); /* identifier */
	put16(icmp + 6, (uint16_t)c->seq);
	marker(icmp + 8, c, ICMP_DATA);
}

/* A complete, correct Ethernet + IPv4 + ICMP echo request; returns length. */
static size_t
icmp_echo(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip = buf + ETH_HLEN_, *icmp = ip + 20;
	size_t l4_len = 8 + ICMP_DATA;

	eth_hdr(buf, c, ETYPE_IPV4);
	echo_request(icmp, c, 8);
	put16(icmp + 2, inet_csum(icmp, l4_len));
	ip_hdr(ip, c, PROTO_ICMP, l4_len);
	return ETH_HLEN_ + 20 + l4_len;
}

static size_t
b_runt(uint8_t *buf, const struct ctx *c)
{
	eth_hdr(buf, c, ETYPE_IPV4);
	return 10; /* dst MAC and 4 bytes of the source MAC */
}

static size_t
b_ethertype(uint8_t *buf, const struct ctx *c)
{
	size_t n = eth_hdr(buf, c, ETYPE_LOCAL_EXP);

	return n + marker(buf + n, c, 46);
}

static size_t
b_ethertype_ipv6(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip6 = buf + eth_hdr(buf, c, ETYPE_IPV6);
	size_t plen = 32;

	/* A well-formed IPv6 header, link-local to link-local, carrying
	 * "no next header" (59): a stack without IPv6 must drop it. */
	memset(ip6, 0, 40);
	ip6[0] = 0x60;
	put16(ip6 + 4, (uint16_t)plen);
	ip6[6] = 59;
	ip6[7] = 64;
	ip6[8] = 0xfe;
	ip6[9] = 0x80;
	memcpy(ip6 + 18, c->src_mac, 6);
	ip6[24] = 0xfe;
	ip6[25] = 0x80;
	memcpy(ip6 + 34, c->dst_mac, 6);
	marker(ip6 + 40, c, plen);
	return ETH_HLEN_ + 40 + plen;
}

/* 28-byte Ethernet/IPv4 ARP request body for DSTIP, from SRCMAC/SRCIP. */
static void
arp_body(uint8_t *a, const struct ctx *c)
{
	put16(a, 1);          /* hardware type: Ethernet */
	put16(a + 2, 0x0800); /* protocol type: IPv4 */
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, 1); /* request */
	memcpy(a + 8, c->src_mac, 6);
	memcpy(a + 14, &c->src_ip, 4);
	memset(a + 18, 0, 6);
	memcpy(a + 24, &c->dst_ip, 4);
}

static size_t
b_arp_trunc(uint8_t *buf, const struct ctx *c)
{
	size_t n = eth_hdr(buf, c, ETYPE_ARP);

	arp_body(buf + n, c);
	return n + 20; /* cut inside the target hardware address */
}

static size_t
b_arp_badhw(uint8_t *buf, const struct ctx *c)
{
	size_t n = eth_hdr(buf, c, ETYPE_ARP);

	arp_body(buf + n, c);
	put16(buf + n, 6); /* IEEE 802 instead of Ethernet (1) */
	return n + 28;
}

static size_t
b_arp_badhlen(uint8_t *buf, const struct ctx *c)
{
	uint8_t *a = buf + eth_hdr(buf, c, ETYPE_ARP);

	/* Ethernet hardware type with an 8-byte hardware address length; the
	 * body is laid out consistently with that length (8+4+8+4). */
	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 8;
	a[5] = 4;
	put16(a + 6, 1);
	memset(a + 8, 0, 8);
	memcpy(a + 8, c->src_mac, 6);
	memcpy(a + 16, &c->src_ip, 4);
	memset(a + 20, 0, 8);
	memcpy(a + 28, &c->dst_ip, 4);
	return ETH_HLEN_ + 32;
}

static size_t
b_ip_version(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp_echo(buf, c);
	uint8_t *ip = buf + ETH_HLEN_;

	ip[0] = 0x65; /* version 6, IHL 5, in an IPv4 ethertype */
	ip_fix_csum(ip);
	return n;
}

static size_t
b_ip_ihl(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp_echo(buf, c);
	uint8_t *ip = buf + ETH_HLEN_;

	ip[0] = 0x44; /* IHL 4: 16 bytes, less than the minimum 20 */
	ip_fix_csum(ip);
	return n;
}

static size_t
b_ip_cksum(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp_echo(buf, c);
	uint8_t *ip = buf + ETH_HLEN_;
	uint16_t good = (uint16_t)(ip[10] << 8 | ip[11]);

	put16(ip + 10, bad_csum(good, false));
	return n;
}

static size_t
b_ip_len_long(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp_echo(buf, c);
	uint8_t *ip = buf + ETH_HLEN_;

	put16(ip + 2, (uint16_t)(n - ETH_HLEN_ + 100)); /* 100 bytes too many */
	ip_fix_csum(ip);
	return n;
}

static size_t
b_ip_len_short(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp_echo(buf, c);
	uint8_t *ip = buf + ETH_HLEN_;

	put16(ip + 2, 16); /* less than IHL * 4 = 20 */
	ip_fix_csum(ip);
	return n;
}

static size_t
b_icmp_cksum(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp_echo(buf, c);
	uint8_t *icmp = buf + ETH_HLEN_ + 20;
	uint16_t good = (uint16_t)(icmp[2] << 8 | icmp[3]);

	put16(icmp + 2, bad_csum(good, false));
	return n;
}

static size_t
b_icmp_padded(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip = buf + ETH_HLEN_, *icmp = ip + 20;
	size_t l4_len = 8;

	/* The smallest echo request (no data): 42 bytes, padded with zeros to
	 * the 60-byte Ethernet minimum as every real NIC does. Valid: the
	 * receiver must trim to the IP total length and answer. */
	eth_hdr(buf, c, ETYPE_IPV4);
	icmp[0] = 8;
	icmp[1] = 0;
	put16(icmp + 2, 0);
	put16(icmp + 4, 0xbf01);
	put16(icmp + 6, (uint16_t)c->seq);
	put16(icmp + 2, inet_csum(icmp, l4_len));
	ip_hdr(ip, c, PROTO_ICMP, l4_len);
	memset(icmp + l4_len, 0, 60 - (ETH_HLEN_ + 20 + l4_len));
	return 60;
}

#define UDP_DATA 32

static size_t
b_udp_cksum(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip = buf + ETH_HLEN_, *udp = ip + 20;
	size_t l4_len = 8 + UDP_DATA;
	uint16_t good;

	eth_hdr(buf, c, ETYPE_IPV4);
	put16(udp, (uint16_t)(SRC_PORT_BASE + c->seq % 20000));
	put16(udp + 2, DISCARD_PORT);
	put16(udp + 4, (uint16_t)l4_len);
	put16(udp + 6, 0);
	marker(udp + 8, c, UDP_DATA);
	good = l4_csum(c, PROTO_UDP, udp, l4_len);
	if (good == 0)
		good = 0xffff; /* RFC 768: a computed 0 is sent as all ones */
	put16(udp + 6, bad_csum(good, true));
	ip_hdr(ip, c, PROTO_UDP, l4_len);
	return ETH_HLEN_ + 20 + l4_len;
}

/* An echo request whose source (src) or destination is 127.0.0.1: a
 * martian, which no wire may bring (lwIP would take 127.0.0.1 as its own). */
static size_t
martian(uint8_t *buf, const struct ctx *c, bool src)
{
	size_t n = icmp_echo(buf, c);
	uint8_t *ip = buf + ETH_HLEN_;
	static const uint8_t loop[4] = { 127, 0, 0, 1 };

	memcpy(ip + (src ? 12 : 16), loop, 4);
	ip_fix_csum(ip);
	return n;
}

static size_t
b_ip_martian_src(uint8_t *buf, const struct ctx *c)
{
	return martian(buf, c, true);
}

static size_t
b_ip_martian_dst(uint8_t *buf, const struct ctx *c)
{
	return martian(buf, c, false);
}

static size_t
b_tcp_cksum(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip = buf + ETH_HLEN_, *tcp = ip + 20;
	size_t l4_len = 24; /* header with the MSS option */
	uint16_t good;

	eth_hdr(buf, c, ETYPE_IPV4);
	put16(tcp, (uint16_t)(SRC_PORT_BASE + c->seq % 20000));
	put16(tcp + 2, DISCARD_PORT);
	put32(tcp + 4, 0x1000000u + c->seq * 0x10000u); /* sequence number */
	put32(tcp + 8, 0);                              /* ack */
	tcp[12] = (uint8_t)((l4_len / 4) << 4);         /* data offset */
	tcp[13] = 0x02;                                 /* SYN */
	put16(tcp + 14, 64240);                         /* window */
	put16(tcp + 16, 0);                             /* checksum */
	put16(tcp + 18, 0);                             /* urgent */
	tcp[20] = 2;                                    /* MSS option */
	tcp[21] = 4;
	put16(tcp + 22, 1460);
	good = l4_csum(c, PROTO_TCP, tcp, l4_len);
	put16(tcp + 16, bad_csum(good, false));
	ip_hdr(ip, c, PROTO_TCP, l4_len);
	return ETH_HLEN_ + 20 + l4_len;
}

/* ---- L4 cases: aimed at a bound port (-p), see --list-l4 ----------------- */

#define TCP_F_FIN 0x01
#define TCP_F_SYN 0x02
#define TCP_F_RST 0x04
#define TCP_F_ACK 0x10

static uint16_t
l4_sport(const struct ctx *c)
{
	return (uint16_t)(c->sport_base + c->seq % 100);
}

/*
 * A TCP segment to c->dport: 20-byte header plus opt (optlen bytes, a
 * multiple of 4), data offset doff (0: the right one), flags; returns the
 * frame length. The checksum is right for the bytes sent.
 */
static size_t
tcp_seg(uint8_t *buf, const struct ctx *c, uint8_t flags, const uint8_t *opt,
	size_t optlen, unsigned int doff)
{
	uint8_t *ip = buf + ETH_HLEN_, *tcp = ip + 20;
	size_t l4_len = 20 + optlen;

	eth_hdr(buf, c, ETYPE_IPV4);
	put16(tcp, l4_sport(c));
	put16(tcp + 2, c->dport);
	put32(tcp + 4, 0x2000000u + c->seq * 0x10000u);
	put32(tcp + 8, (flags & TCP_F_ACK) ? 0x5000000u : 0);
	tcp[12] = (uint8_t)((doff ? doff : l4_len / 4) << 4);
	tcp[13] = flags;
	put16(tcp + 14, 64240);
	put16(tcp + 16, 0);
	put16(tcp + 18, 0);
	if (optlen)
		memcpy(tcp + 20, opt, optlen);
	put16(tcp + 16, l4_csum(c, PROTO_TCP, tcp, l4_len));
	ip_hdr(ip, c, PROTO_TCP, l4_len);
	return ETH_HLEN_ + 20 + l4_len;
}

static size_t
b_tcp_doff_short(uint8_t *buf, const struct ctx *c)
{
	return tcp_seg(buf, c, TCP_F_SYN, NULL, 0, 4); /* 16 < the 20-byte minimum */
}

static size_t
b_tcp_doff_long(uint8_t *buf, const struct ctx *c)
{
	return tcp_seg(buf, c, TCP_F_SYN, NULL, 0, 15); /* 60 bytes in a 20-byte segment */
}

static size_t
b_tcp_trunc(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip = buf + ETH_HLEN_, *tcp = ip + 20;

	/* only the first 12 bytes of a SYN (ports, seq, ack); valid IPv4 */
	tcp_seg(buf, c, TCP_F_SYN, NULL, 0, 0);
	ip_hdr(ip, c, PROTO_TCP, 12);
	(void)tcp;
	return ETH_HLEN_ + 20 + 12;
}

static size_t
b_tcp_synfin(uint8_t *buf, const struct ctx *c)
{
	return tcp_seg(buf, c, TCP_F_SYN | TCP_F_FIN, NULL, 0, 0);
}

static size_t
b_tcp_synrst(uint8_t *buf, const struct ctx *c)
{
	return tcp_seg(buf, c, TCP_F_SYN | TCP_F_RST, NULL, 0, 0);
}

/* window scale 7, SACK permitted: the SYN-ACK shows whether they were read */
#define OPT_WS_SACK 3, 3, 7, 4, 2

static size_t
b_tcp_opt_zero(uint8_t *buf, const struct ctx *c)
{
	/* an unknown option (kind 30) of length 0, then WS and SACK_PERM */
	static const uint8_t opt[12] = { 30, 0, OPT_WS_SACK, 1, 1, 1, 0 };

	return tcp_seg(buf, c, TCP_F_SYN, opt, sizeof(opt), 0);
}

static size_t
b_tcp_opt_overrun(uint8_t *buf, const struct ctx *c)
{
	/* an unknown option (kind 30) whose length (40) runs past the 8
	 * option bytes, swallowing WS and SACK_PERM */
	static const uint8_t opt[8] = { 30, 40, OPT_WS_SACK, 1 };

	return tcp_seg(buf, c, TCP_F_SYN, opt, sizeof(opt), 0);
}

static size_t
b_tcp_opt_mss_cut(uint8_t *buf, const struct ctx *c)
{
	/* WS and SACK_PERM, then an MSS option cut by the end of the header
	 * (kind 2, length 4, 1 byte of its value left) */
	static const uint8_t opt[8] = { OPT_WS_SACK, 2, 4, 5 };

	return tcp_seg(buf, c, TCP_F_SYN, opt, sizeof(opt), 0);
}

static size_t
b_tcp_opt_ok(uint8_t *buf, const struct ctx *c)
{
	static const uint8_t opt[8] = { OPT_WS_SACK, 1 };

	return tcp_seg(buf, c, TCP_F_SYN, opt, sizeof(opt), 0);
}

/* UDP to c->dport with 32 bytes of data and the given length field,
 * checksum 0 (none: RFC 768), so the length field alone is wrong. */
static size_t
udp_dgram(uint8_t *buf, const struct ctx *c, uint16_t len_field)
{
	uint8_t *ip = buf + ETH_HLEN_, *udp = ip + 20;
	size_t l4_len = 8 + UDP_DATA;

	eth_hdr(buf, c, ETYPE_IPV4);
	put16(udp, l4_sport(c));
	put16(udp + 2, c->dport);
	put16(udp + 4, len_field);
	put16(udp + 6, 0);
	marker(udp + 8, c, UDP_DATA);
	ip_hdr(ip, c, PROTO_UDP, l4_len);
	return ETH_HLEN_ + 20 + l4_len;
}

static size_t
b_udp_len_long(uint8_t *buf, const struct ctx *c)
{
	return udp_dgram(buf, c, 8 + UDP_DATA + 100);
}

static size_t
b_udp_len_short(uint8_t *buf, const struct ctx *c)
{
	return udp_dgram(buf, c, 4); /* less than the 8-byte header */
}

static size_t
b_udp_len_pad(uint8_t *buf, const struct ctx *c)
{
	return udp_dgram(buf, c, 8 + 12); /* valid: 12 bytes of data, 20 bytes of padding */
}

/* ---- IPv6 cases: aimed at a port with an IPv6 address, see --list-ip6 ---- */

/*
 * A correct 40-byte IPv6 header for a payload of plen bytes (extension
 * headers included). It has no checksum: a caller may patch any field.
 */
static void
ip6_hdr(uint8_t *ip6, const struct ctx *c, uint8_t next, size_t plen)
{
	put32(ip6, 0x60000000u); /* version 6, traffic class 0, flow label 0 */
	put16(ip6 + 4, (uint16_t)plen);
	ip6[6] = next;
	ip6[7] = 64; /* hop limit */
	memcpy(ip6 + 8, c->src_ip6, 16);
	memcpy(ip6 + 24, c->dst_ip6, 16);
}

/* A complete, correct Ethernet + IPv6 + ICMPv6 echo request; returns length. */
static size_t
icmp6_echo(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip6 = buf + ETH_HLEN_, *icmp = ip6 + IP6_HLEN;
	size_t l4_len = 8 + ICMP_DATA;

	eth_hdr(buf, c, ETYPE_IPV6);
	echo_request(icmp, c, 128);
	put16(icmp + 2, l4_csum6(c, PROTO_ICMPV6, icmp, l4_len));
	ip6_hdr(ip6, c, PROTO_ICMPV6, l4_len);
	return ETH_HLEN_ + IP6_HLEN + l4_len;
}

static size_t
b_ip6_version(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp6_echo(buf, c);
	uint8_t *ip6 = buf + ETH_HLEN_;

	ip6[0] = (uint8_t)(0x40 | (ip6[0] & 0x0f)); /* version 4, in an IPv6 ethertype */
	return n;
}

static size_t
b_ip6_trunc(uint8_t *buf, const struct ctx *c)
{
	/* The first 30 bytes of a correct IPv6 header, cut inside the
	 * destination address: 44 bytes in all. AF_PACKET sends it (it
	 * refuses only frames shorter than the 14-byte Ethernet header) and
	 * veth pads nothing; a NIC padding it to 60 bytes would turn it into
	 * rx_drop_ip6_len (40-byte payload, 6 bytes present). */
	icmp6_echo(buf, c);
	return ETH_HLEN_ + 30;
}

static size_t
b_ip6_len_long(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp6_echo(buf, c);
	uint8_t *ip6 = buf + ETH_HLEN_;

	put16(ip6 + 4, (uint16_t)(n - ETH_HLEN_ - IP6_HLEN + 100)); /* 100 bytes too many */
	return n;
}

static size_t
b_ip6_len_zero(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp6_echo(buf, c);
	uint8_t *ip6 = buf + ETH_HLEN_;

	/* 0 marks a jumbogram (RFC 2675), whose length is in a hop-by-hop
	 * jumbo payload option; there is none, and no Ethernet carries one */
	put16(ip6 + 4, 0);
	return n;
}

/* An echo request whose source (src) or destination is addr, with its
 * checksum right for that address: the address is the only defect. */
static size_t
martian6(uint8_t *buf, const struct ctx *c, bool src, const uint8_t addr[16])
{
	struct ctx m = *c;

	memcpy(src ? m.src_ip6 : m.dst_ip6, addr, 16);
	return icmp6_echo(buf, &m);
}

static size_t
b_ip6_src_mcast(uint8_t *buf, const struct ctx *c)
{
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 }; /* ff02::1 */

	return martian6(buf, c, true, all_nodes);
}

static size_t
b_ip6_src_loopback(uint8_t *buf, const struct ctx *c)
{
	static const uint8_t loop[16] = { [15] = 1 }; /* ::1 */

	return martian6(buf, c, true, loop);
}

static size_t
b_ip6_dst_mapped(uint8_t *buf, const struct ctx *c)
{
	/* ::ffff:198.18.0.1, sent to DSTMAC all the same: an IPv4 address in
	 * IPv6 clothes, which no wire may bring (RFC 4291 2.5.5.2) */
	static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff,
					    198, 18, 0, 1 };

	return martian6(buf, c, false, mapped);
}

static size_t
b_icmp6_cksum(uint8_t *buf, const struct ctx *c)
{
	size_t n = icmp6_echo(buf, c);
	uint8_t *icmp = buf + ETH_HLEN_ + IP6_HLEN;
	uint16_t good = (uint16_t)(icmp[2] << 8 | icmp[3]);

	put16(icmp + 2, bad_csum(good, false));
	return n;
}

static size_t
b_ip6_hbh_short(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip6 = buf + ETH_HLEN_;

	/* A 1-byte payload behind next header "hop-by-hop": the options
	 * header's length byte is not in the packet (lwIP read it anyway
	 * before its length check: frames/crash-ip6_ext_hlen_past_end). The
	 * byte that is there says "no next header". */
	eth_hdr(buf, c, ETYPE_IPV6);
	ip6[IP6_HLEN] = NEXTH_NONE;
	ip6_hdr(ip6, c, NEXTH_HBH, 1);
	return ETH_HLEN_ + IP6_HLEN + 1;
}

static size_t
b_ip6_hbh_trunc(uint8_t *buf, const struct ctx *c)
{
	uint8_t *ip6 = buf + ETH_HLEN_, *hbh = ip6 + IP6_HLEN;
	size_t plen = 16;

	/* A hop-by-hop options header whose length field says 8, i.e.
	 * (8 + 1) * 8 = 72 bytes, in a 16-byte payload. The payload length
	 * fits the frame, so dpsockd passes it; lwIP walks the extension
	 * headers and must drop it. The 16 bytes hold "no next header" and a
	 * PadN option up to their end: were the header accepted, nothing
	 * else would count a drop. */
	eth_hdr(buf, c, ETYPE_IPV6);
	hbh[0] = NEXTH_NONE;
	hbh[1] = 8;  /* header length, in 8-byte units after the first 8 */
	hbh[2] = 1;  /* PadN */
	hbh[3] = 12; /* its data: the 12 bytes left */
	memset(hbh + 4, 0, 12);
	ip6_hdr(ip6, c, NEXTH_HBH, plen);
	return ETH_HLEN_ + IP6_HLEN + plen;
}

static const struct bad_case cases[] = {
	{ .name = "runt", .counter = "rx_drop_runt", .build = b_runt, .not_on_ethernet = true,
	  .help = "10-byte frame, shorter than an Ethernet header (pcap only: Linux will not send it)" },
	{ .name = "ethertype", .counter = "rx_drop_ethertype", .build = b_ethertype,
	  .help = "unknown ethertype 0x88b5 (IEEE 802 local experimental)" },
	{ .name = "ethertype_ipv6", .counter = "rx_drop_ethertype", .build = b_ethertype_ipv6,
	  .help = "IPv6 (0x86dd) frame, link-local, no next header" },
	{ .name = "arp_trunc", .counter = "rx_drop_arp", .build = b_arp_trunc,
	  .help = "ARP request cut to 20 of its 28 body bytes" },
	{ .name = "arp_badhw", .counter = "rx_drop_arp", .build = b_arp_badhw,
	  .help = "ARP request with hardware type 6 (IEEE 802) instead of 1" },
	{ .name = "arp_badhlen", .counter = "rx_drop_arp", .build = b_arp_badhlen,
	  .help = "ARP request with hardware address length 8 instead of 6" },
	{ .name = "ip_version", .counter = "rx_drop_ip_hdr", .build = b_ip_version,
	  .help = "ICMP echo whose IP header says version 6 (ethertype IPv4)" },
	{ .name = "ip_ihl", .counter = "rx_drop_ip_hdr", .build = b_ip_ihl,
	  .help = "ICMP echo with IHL 4 (16-byte IP header, minimum is 20)" },
	{ .name = "ip_cksum", .counter = "rx_drop_ip_cksum", .build = b_ip_cksum,
	  .help = "ICMP echo with a bad IPv4 header checksum" },
	{ .name = "ip_len_long", .counter = "rx_drop_ip_len", .build = b_ip_len_long,
	  .help = "ICMP echo whose IP total length is 100 bytes more than the frame holds" },
	{ .name = "ip_len_short", .counter = "rx_drop_ip_len", .build = b_ip_len_short,
	  .help = "ICMP echo whose IP total length (16) is less than its header (20)" },
	{ .name = "ip_martian_src", .counter = "rx_drop_martian", .build = b_ip_martian_src,
	  .help = "ICMP echo from 127.0.0.1 (a loopback source on the wire)" },
	{ .name = "ip_martian_dst", .counter = "rx_drop_martian", .build = b_ip_martian_dst,
	  .help = "ICMP echo to 127.0.0.1 (a loopback destination on the wire)" },
	{ .name = "icmp_cksum", .counter = "lwip_icmp_chkerr", .build = b_icmp_cksum,
	  .help = "valid IPv4, ICMP echo request with a bad ICMP checksum" },
	{ .name = "udp_cksum", .counter = "lwip_udp_chkerr", .build = b_udp_cksum,
	  .help = "valid IPv4, UDP to port 9 with a bad checksum (never 0)" },
	{ .name = "tcp_cksum", .counter = "lwip_tcp_chkerr", .build = b_tcp_cksum,
	  .help = "valid IPv4, TCP SYN to port 9 with a bad checksum" },
	{ .name = "icmp_padded", .counter = "icmp_echo", .build = b_icmp_padded,
	  .help = "control, NOT malformed: minimal ICMP echo padded to 60 bytes; must be answered" },
	{ .name = "tcp_doff_short", .counter = "lwip_tcp_drop", .build = b_tcp_doff_short,
	  .help = "TCP SYN to -p with data offset 4 (16 bytes, minimum is 20)", .l4 = true },
	{ .name = "tcp_doff_long", .counter = "lwip_tcp_drop", .build = b_tcp_doff_long,
	  .help = "TCP SYN to -p with data offset 15 (60 bytes) in a 20-byte segment", .l4 = true },
	{ .name = "tcp_trunc", .counter = "lwip_tcp_drop", .build = b_tcp_trunc,
	  .help = "TCP SYN to -p cut to 12 bytes (IP payload shorter than a TCP header)", .l4 = true },
	{ .name = "tcp_synfin", .counter = "rx_drop_tcp_flags", .build = b_tcp_synfin,
	  .help = "TCP SYN+FIN to -p (must not open a connection)", .l4 = true },
	{ .name = "tcp_synrst", .counter = "rx_drop_tcp_flags", .build = b_tcp_synrst,
	  .help = "TCP SYN+RST to -p (must not open a connection)", .l4 = true },
	{ .name = "tcp_opt_zero", .counter = "-", .build = b_tcp_opt_zero,
	  .help = "TCP SYN to -p: option of length 0, then WS and SACK_PERM (parse stops: SYN-ACK without them)", .l4 = true },
	{ .name = "tcp_opt_overrun", .counter = "-", .build = b_tcp_opt_overrun,
	  .help = "TCP SYN to -p: option length running past the header over WS and SACK_PERM (SYN-ACK without them)", .l4 = true },
	{ .name = "tcp_opt_mss_cut", .counter = "-", .build = b_tcp_opt_mss_cut,
	  .help = "TCP SYN to -p: WS, SACK_PERM, then an MSS option cut by the header end (SYN-ACK, with WS)", .l4 = true },
	{ .name = "tcp_opt_ok", .counter = "-", .build = b_tcp_opt_ok,
	  .help = "control, NOT malformed: TCP SYN to -p with WS and SACK_PERM (SYN-ACK with them)", .l4 = true },
	{ .name = "udp_len_long", .counter = "rx_drop_udp_len", .build = b_udp_len_long,
	  .help = "UDP to -p whose length field is 100 more than the IP payload (checksum 0)", .l4 = true },
	{ .name = "udp_len_short", .counter = "rx_drop_udp_len", .build = b_udp_len_short,
	  .help = "UDP to -p whose length field (4) is less than its header (checksum 0)", .l4 = true },
	{ .name = "udp_len_pad", .counter = "udp_rx", .build = b_udp_len_pad,
	  .help = "control, NOT malformed: UDP to -p, length field 20 with 20 bytes of padding after it: 12 bytes of data", .l4 = true },
	{ .name = "ip6_version", .counter = "rx_drop_ip6_hdr", .build = b_ip6_version,
	  .help = "ICMPv6 echo whose IPv6 header says version 4 (ethertype IPv6)", .ip6 = true },
	{ .name = "ip6_trunc", .counter = "rx_drop_ip6_hdr", .build = b_ip6_trunc,
	  .help = "ethertype IPv6 with 30 bytes after the Ethernet header (the IPv6 header is 40)", .ip6 = true },
	{ .name = "ip6_len_long", .counter = "rx_drop_ip6_len", .build = b_ip6_len_long,
	  .help = "ICMPv6 echo whose IPv6 payload length is 100 bytes more than the frame holds", .ip6 = true },
	{ .name = "ip6_len_zero", .counter = "rx_drop_ip6_len", .build = b_ip6_len_zero,
	  .help = "ICMPv6 echo with payload length 0 (a jumbogram, without the hop-by-hop jumbo option)", .ip6 = true },
	{ .name = "ip6_src_mcast", .counter = "rx_drop_ip6_martian", .build = b_ip6_src_mcast,
	  .help = "ICMPv6 echo from ff02::1 (a multicast source)", .ip6 = true },
	{ .name = "ip6_src_loopback", .counter = "rx_drop_ip6_martian", .build = b_ip6_src_loopback,
	  .help = "ICMPv6 echo from ::1 (a loopback source on the wire)", .ip6 = true },
	{ .name = "ip6_dst_mapped", .counter = "rx_drop_ip6_martian", .build = b_ip6_dst_mapped,
	  .help = "ICMPv6 echo to ::ffff:198.18.0.1 (an IPv4-mapped destination), to DSTMAC", .ip6 = true },
	{ .name = "icmp6_cksum", .counter = "lwip_icmp6_drop", .build = b_icmp6_cksum,
	  .help = "valid IPv6, ICMPv6 echo request to DST6 with a bad ICMPv6 checksum", .ip6 = true },
	{ .name = "ip6_hbh_trunc", .counter = "lwip_ip6_drop", .build = b_ip6_hbh_trunc,
	  .help = "hop-by-hop options header claiming 72 bytes in a 16-byte payload", .ip6 = true },
	{ .name = "ip6_hbh_short", .counter = "lwip_ip6_drop", .build = b_ip6_hbh_short,
	  .help = "hop-by-hop options header cut before its length byte (1-byte payload)", .ip6 = true },
	{ .name = "icmp6_echo_ok", .counter = "icmp6_echo", .build = icmp6_echo,
	  .help = "control, NOT malformed: ICMPv6 echo request to DST6; must be answered", .ip6 = true },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* ---- plumbing ---------------------------------------------------------- */

static const char *prog = "badframes";

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: %s -i IFACE -m DSTMAC -s SRCIP -d DSTIP [-n COUNT] [-p PORT] [-x] [-v] CASE...\n"
		"       %s -w FILE.pcap [-S SRCMAC] -m DSTMAC -s SRCIP -d DSTIP [-n COUNT] CASE...\n"
		"       %s -i IFACE -m DSTMAC -6 SRC6 -D DST6 [-n COUNT] [-x] [-v] IP6CASE...\n"
		"       %s --list | --list-all | --list-l4 | --list-ip6\n"
		"Send hand-made malformed frames through an AF_PACKET socket on IFACE\n"
		"(or write them to a pcap file), one defect per CASE.\n"
		"  -i IFACE   interface to send on; its MAC is the source MAC\n"
		"  -m DSTMAC  destination MAC (the receiver's), aa:bb:cc:dd:ee:ff\n"
		"  -s SRCIP   source IPv4 address (the sender's)\n"
		"  -d DSTIP   destination IPv4 address (the receiver's)\n"
		"  -6 SRC6    source IPv6 address of the --list-ip6 cases (the sender's)\n"
		"  -D DST6    destination IPv6 address of the --list-ip6 cases (the receiver's)\n"
		"  -n COUNT   frames per case (default 1)\n"
		"  -w FILE    write a pcap file instead of sending (-i optional)\n"
		"  -S SRCMAC  source MAC with -w and no -i (default 02:00:00:00:00:01)\n"
		"  -x         print each frame in hex on stdout\n"
		"  -v         print one line per case sent\n"
		"  CASE       a name from --list, or \"all\"\n"
		"  --list     print \"CASE EXPECTED_COUNTER description\" for each case\n"
		"             that can be sent on an Ethernet device\n"
		"  --list-all the same, including cases only a pcap file can carry\n"
		"  --list-l4  the TCP/UDP cases aimed at a bound port (-p), not in \"all\";\n"
		"             counter \"-\" = the right outcome is an answer, not a drop\n"
		"  -p PORT    destination port of the --list-l4 cases (default 9); their\n"
		"             source ports are 41000 + 100 * (case index) + frame %% 100\n"
		"  --list-ip6 the IPv6 cases, aimed at a port with an IPv6 address, not\n"
		"             in \"all\"; they need -6 and -D (-s and -d only if IPv4\n"
		"             cases are sent too)\n"
		"Exit: 0 every frame sent, 1 a send failed, 2 bad arguments.\n",
		prog, prog, prog, prog);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(try %s --help)\n", prog);
	exit(2);
}

static bool
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char end;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &end) != 6 || strlen(s) != 17)
		return false;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

static const struct bad_case *
find_case(const char *name)
{
	size_t i;

	for (i = 0; i < N_CASES; i++)
		if (strcmp(cases[i].name, name) == 0)
			return &cases[i];
	return NULL;
}

static void
list_cases(bool all, bool l4, bool ip6)
{
	size_t i;

	for (i = 0; i < N_CASES; i++) {
		if (cases[i].l4 != l4 || cases[i].ip6 != ip6)
			continue;
		if (cases[i].not_on_ethernet && !all)
			continue;
		printf("%s %s %s\n", cases[i].name, cases[i].counter,
		       cases[i].help);
	}
}

static void
hexdump(const char *name, unsigned int seq, const uint8_t *p, size_t len)
{
	size_t i;

	printf("# %s #%u, %zu bytes\n", name, seq, len);
	for (i = 0; i < len; i++)
		printf("%02x%s", p[i], (i % 16 == 15 || i + 1 == len) ? "\n" : " ");
}

/* pcap writer (classic format, LINKTYPE_ETHERNET). */
static int
pcap_open(const char *path, FILE **out)
{
	uint8_t h[24];
	uint32_t v;
	FILE *f = fopen(path, "wb");

	if (f == NULL) {
		fprintf(stderr, "%s: cannot create %s: %s\n", prog, path,
			strerror(errno));
		return -1;
	}
	v = 0xa1b2c3d4;
	memcpy(h, &v, 4); /* host order, as readers expect */
	v = 2 | 4u << 16; /* version 2.4 */
	memcpy(h + 4, &v, 4);
	memset(h + 8, 0, 8); /* thiszone, sigfigs */
	v = 65535;
	memcpy(h + 16, &v, 4);
	v = 1; /* Ethernet */
	memcpy(h + 20, &v, 4);
	if (fwrite(h, sizeof(h), 1, f) != 1) {
		fclose(f);
		return -1;
	}
	*out = f;
	return 0;
}

static int
pcap_write(FILE *f, const uint8_t *p, size_t len)
{
	struct timeval tv;
	uint32_t r[4];

	gettimeofday(&tv, NULL);
	r[0] = (uint32_t)tv.tv_sec;
	r[1] = (uint32_t)tv.tv_usec;
	r[2] = (uint32_t)len;
	r[3] = (uint32_t)len;
	if (fwrite(r, sizeof(r), 1, f) != 1 || fwrite(p, len, 1, f) != 1)
		return -1;
	return 0;
}

static int
send_frame(int fd, const struct sockaddr_ll *sll, const uint8_t *p,
	   size_t len)
{
	int tries;
	ssize_t n;

	for (tries = 0; tries < 100; tries++) {
		n = sendto(fd, p, len, 0, (const struct sockaddr *)sll,
			   sizeof(*sll));
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0) {
			errno = EMSGSIZE; /* short write: never expected */
			return -1;
		}
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			return -1;
		usleep(1000); /* qdisc/queue full: let it drain */
	}
	return -1;
}

enum { OPT_LIST = 256, OPT_LIST_ALL, OPT_LIST_L4, OPT_LIST_IP6, OPT_HELP };

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "list", no_argument, NULL, OPT_LIST },
		{ "list-all", no_argument, NULL, OPT_LIST_ALL },
		{ "list-l4", no_argument, NULL, OPT_LIST_L4 },
		{ "list-ip6", no_argument, NULL, OPT_LIST_IP6 },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *iface = NULL, *pcap_path = NULL;
	bool have_dmac = false, have_smac = false, have_sip = false,
	     have_dip = false, have_sip6 = false, have_dip6 = false,
	     need_ip4 = false, hex = false, verbose = false;
	const struct bad_case *todo[N_CASES * 4];
	size_t n_todo = 0, i;
	unsigned long count = 1, count_port;
	struct ctx c;
	struct sockaddr_ll sll;
	FILE *pcap = NULL;
	int fd = -1, opt, rc = 0;
	struct in_addr a;
	char *end;

	memset(&c, 0, sizeof(c));
	memset(&sll, 0, sizeof(sll));
	c.dport = DISCARD_PORT;
	if (argv[0] != NULL && strrchr(argv[0], '/') != NULL)
		prog = strrchr(argv[0], '/') + 1;
	else if (argv[0] != NULL)
		prog = argv[0];

	while ((opt = getopt_long(argc, argv, "i:m:s:d:6:D:n:w:S:p:xvh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'i':
			iface = optarg;
			break;
		case 'm':
			if (!parse_mac(optarg, c.dst_mac))
				die_usage("-m: bad MAC address '%s' (want aa:bb:cc:dd:ee:ff)", optarg);
			have_dmac = true;
			break;
		case 'S':
			if (!parse_mac(optarg, c.src_mac))
				die_usage("-S: bad MAC address '%s' (want aa:bb:cc:dd:ee:ff)", optarg);
			have_smac = true;
			break;
		case 's':
			if (inet_pton(AF_INET, optarg, &a) != 1)
				die_usage("-s: bad IPv4 address '%s'", optarg);
			c.src_ip = a.s_addr;
			have_sip = true;
			break;
		case 'd':
			if (inet_pton(AF_INET, optarg, &a) != 1)
				die_usage("-d: bad IPv4 address '%s'", optarg);
			c.dst_ip = a.s_addr;
			have_dip = true;
			break;
		case '6':
			if (inet_pton(AF_INET6, optarg, c.src_ip6) != 1)
				die_usage("-6: bad IPv6 address '%s'", optarg);
			have_sip6 = true;
			break;
		case 'D':
			if (inet_pton(AF_INET6, optarg, c.dst_ip6) != 1)
				die_usage("-D: bad IPv6 address '%s'", optarg);
			have_dip6 = true;
			break;
		case 'n':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || optarg[0] == '-' ||
			    count < 1 || count > 1000000)
				die_usage("-n: COUNT must be 1..1000000, got '%s'", optarg);
			break;
		case 'w':
			pcap_path = optarg;
			break;
		case 'x':
			hex = true;
			break;
		case 'v':
			verbose = true;
			break;
		case OPT_LIST:
		case OPT_LIST_ALL:
		case OPT_LIST_L4:
		case OPT_LIST_IP6:
			list_cases(opt == OPT_LIST_ALL, opt == OPT_LIST_L4,
				   opt == OPT_LIST_IP6);
			return 0;
		case 'p':
			errno = 0;
			count_port = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || optarg[0] == '-' ||
			    count_port < 1 || count_port > 65535)
				die_usage("-p: PORT must be 1..65535, got '%s'", optarg);
			c.dport = (uint16_t)count_port;
			break;
		case 'h':
		case OPT_HELP:
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "(try %s --help)\n", prog);
			return 2;
		}
	}

	if (optind >= argc)
		die_usage("no CASE given (see --list)");
	for (; optind < argc; optind++) {
		const struct bad_case *bc;

		if (strcmp(argv[optind], "all") == 0) {
			for (i = 0; i < N_CASES; i++)
				if (!cases[i].not_on_ethernet && !cases[i].l4 &&
				    !cases[i].ip6 &&
				    n_todo < sizeof(todo) / sizeof(todo[0]))
					todo[n_todo++] = &cases[i];
			need_ip4 = true;
			continue;
		}
		bc = find_case(argv[optind]);
		if (bc == NULL)
			die_usage("unknown CASE '%s' (see --list)", argv[optind]);
		if (bc->not_on_ethernet && pcap_path == NULL)
			die_usage("CASE '%s' cannot be sent on an Ethernet device: "
				  "Linux refuses AF_PACKET frames shorter than 14 bytes "
				  "(EINVAL, even with CAP_SYS_RAWIO); write it with -w "
				  "FILE.pcap and replay it through net_pcap",
				  bc->name);
		if (bc->ip6 && (!have_sip6 || !have_dip6))
			die_usage("CASE '%s' is an IPv6 case: it needs -6 SRC6 and "
				  "-D DST6 (the sender's and the receiver's IPv6 "
				  "addresses)", bc->name);
		if (!bc->ip6)
			need_ip4 = true;
		if (n_todo >= sizeof(todo) / sizeof(todo[0]))
			die_usage("too many CASEs");
		todo[n_todo++] = bc;
	}
	if (iface == NULL && pcap_path == NULL)
		die_usage("-i IFACE is required (or -w FILE)");
	if (!have_dmac)
		die_usage("-m DSTMAC is required");
	/* the IPv6 cases use no IPv4 address */
	if (!have_sip && need_ip4)
		die_usage("-s SRCIP is required");
	if (!have_dip && need_ip4)
		die_usage("-d DSTIP is required");
	if (have_smac && iface != NULL)
		die_usage("-S and -i both give the source MAC; use one");

	if (iface != NULL) {
		struct ifreq ifr;
		int ifindex;

		if (strlen(iface) >= IFNAMSIZ)
			die_usage("-i: interface name '%s' too long", iface);
		ifindex = (int)if_nametoindex(iface);
		if (ifindex == 0) {
			fprintf(stderr, "%s: no interface '%s' here: %s\n",
				prog, iface, strerror(errno));
			return 2;
		}
		/* protocol 0: this socket sends only, it receives nothing */
		fd = socket(AF_PACKET, SOCK_RAW, 0);
		if (fd < 0) {
			fprintf(stderr, "%s: socket(AF_PACKET): %s%s\n", prog,
				strerror(errno),
				errno == EPERM ? " (needs CAP_NET_RAW: run as root)" : "");
			return 1;
		}
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
		if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
			fprintf(stderr, "%s: %s: cannot read MAC address: %s\n",
				prog, iface, strerror(errno));
			close(fd);
			return 1;
		}
		if (ifr.ifr_hwaddr.sa_family != 1 /* ARPHRD_ETHER */) {
			fprintf(stderr, "%s: %s is not an Ethernet device\n",
				prog, iface);
			close(fd);
			return 2;
		}
		memcpy(c.src_mac, ifr.ifr_hwaddr.sa_data, 6);
		sll.sll_family = AF_PACKET;
		sll.sll_ifindex = ifindex;
		sll.sll_halen = 6;
		memcpy(sll.sll_addr, c.dst_mac, 6);
	} else if (!have_smac) {
		static const uint8_t def[6] = { 0x02, 0, 0, 0, 0, 0x01 };

		memcpy(c.src_mac, def, 6);
	}

	if (pcap_path != NULL && pcap_open(pcap_path, &pcap) < 0) {
		if (fd >= 0)
			close(fd);
		return 1;
	}

	for (i = 0; i < n_todo && rc == 0; i++) {
		const struct bad_case *bc = todo[i];
		unsigned long k;

		c.case_name = bc->name;
		c.sport_base = (uint16_t)(41000 + 100 * (bc - cases));
		for (k = 0; k < count; k++) {
			uint8_t frame[FRAME_MAX];
			size_t len;

			memset(frame, 0, sizeof(frame));
			c.seq = (unsigned int)k;
			len = bc->build(frame, &c);
			if (hex)
				hexdump(bc->name, c.seq, frame, len);
			if (pcap != NULL) {
				if (pcap_write(pcap, frame, len) < 0) {
					fprintf(stderr, "%s: writing %s: %s\n",
						prog, pcap_path, strerror(errno));
					rc = 1;
					break;
				}
				continue;
			}
			if (send_frame(fd, &sll, frame, len) < 0) {
				fprintf(stderr, "%s: %s: sending frame %lu of %lu (%zu bytes) on %s: %s\n",
					prog, bc->name, k + 1, count, len, iface,
					strerror(errno));
				rc = 1;
				break;
			}
		}
		if (rc == 0 && verbose)
			printf("%s %s %lu\n", pcap ? "wrote" : "sent", bc->name,
			       count);
	}

	if (pcap != NULL && fclose(pcap) != 0 && rc == 0) {
		fprintf(stderr, "%s: closing %s: %s\n", prog, pcap_path,
			strerror(errno));
		rc = 1;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}
