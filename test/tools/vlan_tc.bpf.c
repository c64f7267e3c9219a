/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vlan_tc.bpf.c — 802.1Q for a Linux peer whose kernel has no VLAN devices
 * (CONFIG_VLAN_8021Q off) and no VLAN-filtering bridge: two tc programs
 * (cls_bpf, direct action) that make the device they sit on a VLAN access
 * link, as a VLAN device over it would.
 *
 *   egress   every frame the stack sends untagged gets VID's tag
 *            (priority 0); frames already tagged go as they are
 *   ingress  a frame tagged VID loses its tag and goes up the stack;
 *            other tagged frames are left alone (the kernel, with no VLAN
 *            device for them, drops them as for another host); untagged
 *            frames go up as they are
 *
 * Built by the test that uses it (test/integration/vlan.sh):
 *   clang -O2 -g -target bpf -DVID=100 -I/usr/include/$(gcc -print-multiarch) \
 *         -c vlan_tc.bpf.c -o vlan_tc.o
 *   tc qdisc add dev IF clsact
 *   tc filter add dev IF egress bpf da obj vlan_tc.o sec tc_egress
 *   tc filter add dev IF ingress bpf da obj vlan_tc.o sec tc_ingress
 * The device needs txvlan off, so that the kernel writes each tag into the
 * frame instead of handing it to the driver beside the frame.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef VID
#error "build with -DVID=<1..4094>"
#endif

SEC("tc_egress")
int
vlan_egress(struct __sk_buff *skb)
{
	if (skb->vlan_present || skb->protocol == bpf_htons(ETH_P_8021Q))
		return TC_ACT_OK;
	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), VID) != 0)
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

SEC("tc_ingress")
int
vlan_ingress(struct __sk_buff *skb)
{
	/* the kernel has already moved a tag out of the frame (skb_vlan_untag) */
	if (skb->vlan_present && (skb->vlan_tci & 0x0fff) == VID)
		bpf_skb_vlan_pop(skb);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
