// SPDX-License-Identifier: GPL-2.0
/*
 * Same-host delivery.  A RoCE v2 packet whose route is local (its
 * destination address is one of this host's: a QP talking to a QP of the
 * same sroce device or of another one of this host) does not go through
 * ip_local_out(), the loopback netdev and the IP and UDP input paths.
 * sroce_net_xmit() builds its UDP and IP headers as for the wire (the
 * receive path checks the addresses in them) and hands it here; it is
 * queued on a per-CPU queue and delivered by a per-CPU NAPI instance, in
 * the NET_RX softirq, to the same receive entry the UDP socket uses.
 *
 * A packet stays in its sender's network namespace: it is queued as if it
 * came in on that namespace's loopback netdev, and the receive path looks
 * its destination address up there, so it reaches only devices of the same
 * namespace.  The packet holds the loopback netdev while it is queued: the
 * namespace may be dismantled meanwhile (its loopback netdev goes with its
 * last other netdevs, not after them).
 *
 * Why a queue and a softirq rather than a call: the sender transmits from
 * inside its QP's engine, with the QP locked.  Calling the destination's
 * receive path from there could run the destination's engine, whose reply
 * would come back into the sender's locked QP.  The softirq runs only once
 * the sender has re-enabled bottom halves, which it does after giving up
 * its QP.
 *
 * The ICRC protects a packet on a wire; this path has none, so by default
 * it is neither computed nor verified.  The loopback_icrc module parameter
 * turns both on (the decision is taken per packet at transmit and travels
 * with it in skb->cb, which only this file writes and reads, so nothing a
 * peer sends can switch the receive check off).
 *
 * The transmit destructor (kernel/dp/tx.c) stays on the packet while it is
 * queued here and runs just before the receive path gets it, as the
 * loopback netdev orphans a packet: the sender's inflight count covers the
 * queue, so the engine's backpressure keeps one QP from filling it.  The
 * queue is bounded all the same (SROCE_LOOP_QUEUE_MAX per CPU); a packet
 * that finds it full is dropped and counted as a tx_errors "dropped" and
 * as "queue_full" in /sys/kernel/debug/sroce/loopback.
 *
 * Locking: each CPU's queue has its own spinlock (the sk_buff_head's),
 * taken with bottom halves disabled; the NAPI instance moves the whole
 * queue to its private list at once.  The counters are per CPU, written
 * with bottom halves disabled on their CPU.
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/ip6_fib.h>
#include <net/route.h>

#include "core/hdr.h"
#include "core/icrc.h"
#include "device.h"
#include "dp/loop.h"
#include "dp/net.h"
#include "obj/qp.h"
#include "stats.h"

#define CREATE_TRACE_POINTS
#include "dp/loop_trace.h"

/* Per CPU, like the stack's backlog (netdev_max_backlog is 1000). */
#define SROCE_LOOP_QUEUE_MAX	1024

static bool loopback_icrc;
module_param(loopback_icrc, bool, 0644);
MODULE_PARM_DESC(loopback_icrc,
		 "compute and verify the ICRC of packets between QPs of this host (default: off)");

struct sroce_loop_cpu {
	struct sk_buff_head queue;	/* filled by transmit, locked */
	struct sk_buff_head process;	/* the NAPI poll's own */
	struct napi_struct napi;
	unsigned long packets;		/* queued */
	unsigned long queue_full;	/* dropped: queue full */
};

/* What a queued packet carries in skb->cb. */
struct sroce_loop_cb {
	bool icrc;			/* its ICRC was computed: verify it */
};

/*
 * Test hook, root only through debugfs: flip a bit in the last byte the
 * ICRC covers of this many packets sent with an ICRC, so that a test can
 * see the receive check catch them (selftests/loopback.sh).
 */
static atomic_t loop_corrupt = ATOMIC_INIT(0);

static struct sroce_loop_cpu __percpu *loop_cpus;
static struct net_device *loop_napi_dev;

static struct sroce_loop_cb *sroce_loop_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct sroce_loop_cb) > sizeof(skb->cb));
	return (struct sroce_loop_cb *)skb->cb;
}

/**
 * sroce_loop_route_local - does a route deliver to this host?
 * @dst: the route sroce_net_xmit() looked up (or kept) for the packet
 * @v4: an IPv4 route
 *
 * Unicast to an address of this host only: broadcast and multicast keep
 * the IP path, which also delivers them to the wire, and so does an IPv6
 * anycast address.  Decided from the route alone, no further lookup.
 *
 * Return: true if the packet may take the shortcut.
 */
bool sroce_loop_route_local(const struct dst_entry *dst, bool v4)
{
	if (v4)
		return container_of(dst, struct rtable, dst)->rt_type ==
		       RTN_LOCAL;
	return (container_of(dst, struct rt6_info, dst)->rt6i_flags &
		(RTF_LOCAL | RTF_ANYCAST)) == RTF_LOCAL;
}

/* Should a packet that takes the shortcut get (and be checked for) an ICRC? */
bool sroce_loop_icrc(void)
{
	return READ_ONCE(loopback_icrc);
}

static void sroce_loop_trace(const struct sroce_qp *qp,
			     const struct sk_buff *skb, bool icrc)
{
	const struct udphdr *uh;
	const u8 *bth;

	/* The BTH is read only for an enabled event: nothing costs when off. */
	if (!trace_sroce_loopback_pkt_enabled())
		return;
	uh = udp_hdr(skb);
	bth = (const u8 *)(uh + 1);
	trace_sroce_loopback_pkt(qp->ibqp.qp_num, sroce_bth_qpn(bth),
				 sroce_bth_opcode(bth), sroce_bth_psn(bth),
				 ntohs(uh->len) - sizeof(*uh), icrc);
}

/* A packet that will not be delivered: free it, drop its hold on lo. */
static void sroce_loop_free(struct sk_buff *skb)
{
	struct net_device *lo = skb->dev;

	kfree_skb(skb);
	dev_put(lo);
}

/**
 * sroce_loop_xmit - queue a packet for this host's receive path
 * @qp: the sending QP; its engine's lock held
 * @skb: the packet with its IP and UDP headers, skb->data at the IP header,
 *	 and its ICRC if @icrc
 * @icrc: the ICRC was computed; the receive path verifies it
 *
 * Consumes the skb.  Return: 0, or -ENOBUFS if the queue was full.
 */
int sroce_loop_xmit(struct sroce_qp *qp, struct sk_buff *skb, bool icrc)
{
	struct sroce_loop_cpu *c;
	bool full;

	if (icrc && unlikely(atomic_read(&loop_corrupt) > 0) &&
	    atomic_dec_if_positive(&loop_corrupt) >= 0)
		skb_tail_pointer(skb)[-SROCE_ICRC_LEN - 1] ^= 1;
	sroce_loop_trace(qp, skb, icrc);
	sroce_loop_cb(skb)->icrc = icrc;
	/* as if it came in on lo: dev_net() of it is the sender's namespace */
	skb->dev = to_sroce_dev(qp->ibqp.device)->net->loopback_dev;
	dev_hold(skb->dev);

	local_bh_disable();
	c = this_cpu_ptr(loop_cpus);
	full = skb_queue_len_lockless(&c->queue) +
	       skb_queue_len_lockless(&c->process) >= SROCE_LOOP_QUEUE_MAX;
	if (likely(!full)) {
		spin_lock(&c->queue.lock);
		__skb_queue_tail(&c->queue, skb);
		spin_unlock(&c->queue.lock);
		c->packets++;
		napi_schedule(&c->napi);
	} else {
		c->queue_full++;
	}
	/* The poll runs here at the latest, if it is not running already. */
	local_bh_enable();

	if (unlikely(full)) {
		sroce_qp_tx_error(qp, SROCE_TX_DROPPED);
		sroce_loop_free(skb);
		return -ENOBUFS;
	}
	return 0;
}

/* Hand one packet to the receive path, as UDP's encap_rcv would. */
static void sroce_loop_deliver(struct sk_buff *skb)
{
	bool icrc = sroce_loop_cb(skb)->icrc;
	struct net_device *lo = skb->dev;

	memset(skb->cb, 0, sizeof(skb->cb));
	/* The sender's accounting ends here, as at a netdev's transmit. */
	skb_orphan(skb);
	__skb_pull(skb, skb_transport_offset(skb));
	sroce_net_rx(skb, icrc);
	dev_put(lo);
}

static int sroce_loop_poll(struct napi_struct *napi, int budget)
{
	struct sroce_loop_cpu *c = container_of(napi, struct sroce_loop_cpu,
						napi);
	int done = 0;

	while (done < budget) {
		if (skb_queue_empty(&c->process)) {
			spin_lock(&c->queue.lock);
			skb_queue_splice_tail_init(&c->queue, &c->process);
			spin_unlock(&c->queue.lock);
			if (skb_queue_empty(&c->process))
				break;
		}
		sroce_loop_deliver(__skb_dequeue(&c->process));
		done++;
	}
	/* napi_schedule() during the poll makes this return false. */
	if (done < budget)
		napi_complete_done(napi, done);
	return done;
}

static int loopback_show(struct seq_file *s, void *unused)
{
	unsigned long packets = 0, full = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct sroce_loop_cpu *c = per_cpu_ptr(loop_cpus, cpu);

		packets += READ_ONCE(c->packets);
		full += READ_ONCE(c->queue_full);
	}
	seq_printf(s, "packets %lu\nqueue_full %lu\nicrc %d\n", packets, full,
		   sroce_loop_icrc());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(loopback);

/* /sys/kernel/debug/sroce/loopback; loop_cpus outlives it. */
void sroce_loop_debugfs(struct dentry *dir)
{
	debugfs_create_file("loopback", 0444, dir, NULL, &loopback_fops);
	debugfs_create_atomic_t("loopback_corrupt", 0600, dir, &loop_corrupt);
}

int sroce_loop_init(void)
{
	int cpu;

	loop_cpus = alloc_percpu(struct sroce_loop_cpu);
	if (!loop_cpus)
		return -ENOMEM;
	/* NAPI instances need a netdev; this one is never registered. */
	loop_napi_dev = sroce_alloc_netdev_dummy();
	if (!loop_napi_dev) {
		free_percpu(loop_cpus);
		return -ENOMEM;
	}
	for_each_possible_cpu(cpu) {
		struct sroce_loop_cpu *c = per_cpu_ptr(loop_cpus, cpu);

		skb_queue_head_init(&c->queue);
		__skb_queue_head_init(&c->process);
		netif_napi_add(loop_napi_dev, &c->napi, sroce_loop_poll);
		napi_enable(&c->napi);
	}
	return 0;
}

static void sroce_loop_purge(struct sk_buff_head *q)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(q)))
		sroce_loop_free(skb);
}

/*
 * After every device is gone: their QPs waited for their packets, so the
 * queues are empty; purge them all the same.
 */
void sroce_loop_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct sroce_loop_cpu *c = per_cpu_ptr(loop_cpus, cpu);

		napi_disable(&c->napi);
		netif_napi_del(&c->napi);
		WARN_ON_ONCE(!skb_queue_empty(&c->queue) ||
			     !skb_queue_empty(&c->process));
		sroce_loop_purge(&c->queue);
		sroce_loop_purge(&c->process);
	}
	sroce_free_netdev_dummy(loop_napi_dev);
	free_percpu(loop_cpus);
}
