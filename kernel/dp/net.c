// SPDX-License-Identifier: GPL-2.0
/*
 * The RoCE v2 UDP endpoints: in each network namespace that has sroce
 * devices, one kernel UDP tunnel socket per address family on port 4791; the
 * receive path from those sockets to the QPs and the transmit path of
 * connected QPs.
 *
 * A namespace's sockets exist while at least one sroce device of a netdev in
 * it does (the device's namespace, sdev->net, taken at its creation).
 * Opening them at the first "rdma link add" rather than at module load lets
 * "modprobe sroce" succeed next to rdma_rxe (which binds 4791 at load) and
 * turns the clash into a clear error on the command that needs the port.
 * Everything a device does on the network happens in its namespace: routes,
 * IP identification, the IP output path, same-host delivery (which only
 * reaches devices of the same namespace, dp/loop.c), and a packet's device
 * on receive must belong to the namespace it arrived in.
 *
 * A device holds no reference on its namespace: that would keep the
 * namespace, and so the netdev and the device, alive for good.  Instead the
 * namespace's exit (sroce_net_exit()), which runs after its netdevs are gone
 * or moved out and their devices' unregistrations queued, waits until the
 * last of those devices has released the endpoint: until then the namespace
 * is not freed, and the device may use it.
 *
 * Receive (softirq, from UDP's encap_rcv): find the sroce device the datagram
 * is for, check that it was not broadcast, is long enough, carried by a
 * plain IP header and has a valid ICRC, look its destination QP up and hand
 * it to the QP's execution context (exec.h), which has a connected QP's
 * packets checked against its address vector (sroce_net_rx_from_peer()).
 * Every dropped datagram is counted by reason on its device (stats.h; the
 * port's hw_counters), one for no device module-wide; debugfs's rx_drops
 * shows the sums.
 *
 * Transmit (the QP's engine: qp->exec_lock held, BHs off, in softirq or
 * process context): route the QP's address vector, add the UDP and IP
 * headers sroce builds itself (so that every field the ICRC covers is final
 * before the ICRC is computed) and the ICRC, and hand the packet to
 * ip_local_out()/ip6_local_out().  A destination address of this host (a
 * local route: how QPs of one host, on the same device or on two, talk to
 * each other) skips the IP stack and goes to same-host delivery
 * (dp/loop.c), which hands it to sroce_net_rx() in softirq.  Packets sent
 * and failures are counted on the device (stats.h).
 *
 * Locking: net_mutex serialises every namespace's users count and socket
 * pointers.  It is taken from newlink, from dealloc_driver and from the
 * namespace's exit, never under RTNL.  The data paths do not touch the socket
 * pointers; a namespace's sockets outlive its devices and so their QPs.
 */
#include <linux/crc32.h>
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/mutex.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <linux/wait.h>
#include <net/dst.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/ip6_fib.h>
#include <net/ipv6_stubs.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_cache.h>
#include <rdma/sroce-abi.h>

#include "core/addr.h"
#include "core/hdr.h"
#include "core/icrc.h"
#include "debugfs.h"
#include "device.h"
#include "dp/exec.h"
#include "dp/loop.h"
#include "dp/mcast_rx.h"
#include "dp/net.h"
#include "dp/trace.h"
#include "obj/qp.h"
#include "stats.h"

/* Any non-zero encap_type makes UDP hand datagrams to encap_rcv. */
#define SROCE_ENCAP_TYPE 1

/*
 * A namespace's endpoint, in its net_generic() slot.  users counts the
 * namespace's devices; it is written under net_mutex and read without it by
 * sroce_net_exit().
 */
struct sroce_net {
	unsigned int users;
	struct socket *sock4;	/* set while users > 0; net_mutex */
	struct socket *sock6;	/* also NULL if IPv6 is off */
};

static unsigned int sroce_net_id __read_mostly;
static DEFINE_MUTEX(net_mutex);
/* woken when a namespace's last device releases its endpoint */
static DECLARE_WAIT_QUEUE_HEAD(net_idle_wq);

static struct sroce_net *sroce_net_of(const struct net *net)
{
	return net_generic(net, sroce_net_id);
}

/* The namespace a QP's packets are routed and sent in: its device's. */
static struct net *sroce_net_qp_net(struct sroce_qp *qp)
{
	return to_sroce_dev(qp->ibqp.device)->net;
}

static void sroce_net_rx_drop(struct sroce_dev *sdev, struct sk_buff *skb,
			      enum sroce_drop_reason why)
{
	sroce_drop_count(sdev, why);
	kfree_skb(skb);
}

/*
 * The netdev that owns the destination address of a datagram that came
 * through the loopback device.  Caller holds rcu_read_lock(); the result is
 * not referenced.
 */
static struct net_device *sroce_net_rx_local_dev(struct sk_buff *skb)
{
	struct net *net = dev_net(skb->dev);

	if (skb->protocol == htons(ETH_P_IP))
		return __ip_dev_find(net, ip_hdr(skb)->daddr, false);
	/* Only the IPv6 socket, opened only when IPv6 works, gets here. */
	return ipv6_stub->ipv6_dev_find(net, &ipv6_hdr(skb)->daddr, NULL);
}

/*
 * The sroce device a datagram is for, with a reference, or NULL.  From the
 * wire that is the device of the netdev it arrived on.  A packet that one
 * device of this host sent to an address of this host came through the
 * loopback device or the same-host shortcut (which sets skb->dev to the
 * loopback device), so there the destination address names the netdev, and
 * that netdev must be up.
 */
static struct ib_device *sroce_net_rx_ibdev(struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;
	struct ib_device *ibdev = NULL;

	if (!(ndev->flags & IFF_LOOPBACK))
		return ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);

	rcu_read_lock();
	ndev = sroce_net_rx_local_dev(skb);
	/* as the wire would not deliver to a netdev that is down */
	if (ndev && netif_running(ndev))
		ibdev = ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);
	rcu_read_unlock();
	return ibdev;
}

/*
 * Make the datagram what sroce_exec_rx() expects: skb->data at the BTH,
 * linear, with a verified ICRC (unless @icrc is false: a same-host packet
 * that was sent without one, see kernel/dp/loop.c).  Returns false with the
 * reason to drop it.
 */
static bool sroce_net_rx_valid(struct sk_buff *skb, bool icrc,
			       enum sroce_drop_reason *why)
{
	enum sroce_icrc_status st;

	/* UDP pulled the IP header and trimmed skb->len to the UDP length. */
	__skb_pull(skb, sizeof(struct udphdr));

	/*
	 * The ICRC covers the IP header as if the UDP header followed it;
	 * extension headers have no place in it.
	 */
	if (skb->protocol == htons(ETH_P_IPV6) &&
	    ipv6_hdr(skb)->nexthdr != IPPROTO_UDP) {
		*why = SROCE_DROP_IP;
		return false;
	}
	/*
	 * The QP gets a linear skb that it may write to, even while a packet
	 * tap holds a clone of it.
	 */
	if (skb_linearize(skb) || skb_unclone(skb, GFP_ATOMIC)) {
		*why = SROCE_DROP_NO_MEM;
		return false;
	}
	if (!icrc) {
		if (skb->len >= SROCE_BTH_LEN + SROCE_ICRC_LEN)
			return true;
		*why = SROCE_DROP_RUNT;
		return false;
	}

	st = sroce_icrc_verify(crc32_le, skb_network_header(skb),
			       skb_transport_header(skb), skb->data, skb->len);
	switch (st) {
	case SROCE_ICRC_OK:
		return true;
	case SROCE_ICRC_TOO_SHORT:
		*why = SROCE_DROP_RUNT;
		break;
	case SROCE_ICRC_UNSUPPORTED_IP:	/* IPv4 with options */
		*why = SROCE_DROP_IP;
		break;
	default:
		*why = SROCE_DROP_ICRC;
		break;
	}
	return false;
}

/*
 * Broadcast is not RoCE (core/addr.h): a datagram that IP delivered as a
 * broadcast (to 255.255.255.255 or a subnet's broadcast address, which only
 * the route knows), or that came in a link-layer broadcast frame.  Caller in
 * the receive softirq, under RCU, which keeps the route.
 */
static bool sroce_net_rx_bcast(const struct sk_buff *skb)
{
	const struct rtable *rt;

	if (skb->pkt_type == PACKET_BROADCAST)
		return true;
	if (skb->protocol != htons(ETH_P_IP))
		return false;
	rt = skb_rtable(skb);
	return rt && (rt->rt_flags & RTCF_BROADCAST);
}

static void sroce_net_rx_deliver(struct sroce_dev *sdev, struct sk_buff *skb,
				 bool icrc)
{
	enum sroce_drop_reason why;
	struct sroce_qp *qp;
	u32 qpn;

	if (sroce_net_rx_bcast(skb)) {
		sroce_net_rx_drop(sdev, skb, SROCE_DROP_BCAST);
		return;
	}
	if (!sroce_net_rx_valid(skb, icrc, &why)) {
		sroce_net_rx_drop(sdev, skb, why);
		return;
	}
	/* BTH through ICRC, as sent (sroce_net_xmit()) */
	trace_sroce_rx(sdev, skb->data, skb->len);
	qpn = sroce_bth_qpn(skb->data);
	qp = qpn == SROCE_QPN_MULTICAST ? NULL : sroce_qp_get(sdev, qpn);
	if (!qp) {
		sroce_stats_inc(sdev, SROCE_STAT_RCVD_PKTS);
		sroce_stats_add(sdev, SROCE_STAT_RCVD_BYTES, skb->len);
		if (qpn == SROCE_QPN_MULTICAST) {
			sroce_mcast_rx_deliver(sdev, skb);
			return;
		}
		sroce_drop_count_qpn(sdev, qpn, SROCE_DROP_NO_QP);
		kfree_skb(skb);
		return;
	}
	/* in the QP's own counter if it is bound to one */
	sroce_qp_stats_inc(qp, SROCE_STAT_RCVD_PKTS);
	sroce_qp_stats_add(qp, SROCE_STAT_RCVD_BYTES, skb->len);
	sroce_exec_rx(qp, skb);
	sroce_qp_put(qp);
}

/**
 * sroce_net_rx_from_peer - is a connected QP's packet from its peer
 * @qp: an RC or UC QP in a state with an address vector; qp->exec_lock held
 * @skb: a packet as sroce_exec_rx() received it
 *
 * The packet must come from the address vector's DGID to the QP's SGID
 * (core/addr.h).  A packet that does not is counted under its reason; the
 * caller drops it.
 *
 * Return: true if the packet may go to the QP's engine.
 */
bool sroce_net_rx_from_peer(struct sroce_qp *qp, const struct sk_buff *skb)
{
	static const enum sroce_drop_reason why[] = {
		[SROCE_ADDR_BCAST] = SROCE_DROP_BCAST,
		[SROCE_ADDR_MCAST] = SROCE_DROP_MCAST_CONN,
		[SROCE_ADDR_BAD_SRC] = SROCE_DROP_BAD_SRC,
		[SROCE_ADDR_BAD_DST] = SROCE_DROP_BAD_DST,
	};
	/* the headers sroce_net_rx_valid() left in the linear skb */
	const u8 *ip = skb_network_header(skb);
	struct sroce_addr_pair addrs;
	enum sroce_addr_verdict v;

	lockdep_assert_held(&qp->exec_lock);
	BUILD_BUG_ON(sizeof(qp->av.saddr) != SROCE_GID_LEN);
	if (!sroce_addr_parse(ip, skb_tail_pointer(skb) - ip, &addrs))
		v = SROCE_ADDR_BAD_SRC;
	else
		v = sroce_addr_check_conn(&addrs, qp->av.saddr.s6_addr,
					  qp->av.daddr.s6_addr);
	if (v == SROCE_ADDR_OK)
		return true;
	sroce_qp_drop(qp, why[v]);
	return false;
}

/**
 * sroce_net_rx - receive a RoCE v2 datagram
 * @skb: skb->data at the UDP header, skb->len the UDP length (more than the
 *	 header alone), the network header set, the IP header pulled
 * @icrc: verify the ICRC; false only for a same-host packet sent without
 *	  one (kernel/dp/loop.c)
 *
 * The common receive entry of the UDP sockets and of same-host delivery;
 * in softirq.  Consumes the skb.
 */
void sroce_net_rx(struct sk_buff *skb, bool icrc)
{
	struct ib_device *ibdev = sroce_net_rx_ibdev(skb);

	/*
	 * A device whose netdev has just left the namespace (it is being
	 * removed) is another namespace's business now.
	 */
	if (ibdev && !net_eq(to_sroce_dev(ibdev)->net, dev_net(skb->dev))) {
		ib_device_put(ibdev);
		ibdev = NULL;
	}
	if (!ibdev) {
		sroce_net_rx_drop(NULL, skb, SROCE_DROP_NO_DEVICE);
		return;
	}
	sroce_net_rx_deliver(to_sroce_dev(ibdev), skb, icrc);
	ib_device_put(ibdev);
}

/*
 * UDP's encap_rcv, in softirq: the UDP checksum has been verified if it was
 * not zero.  Always consumes the skb.
 */
static int sroce_net_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	sroce_net_rx(skb, true);
	return 0;
}

/*
 * Room in front of the BTH: the netdev's link-layer header and the IP and
 * UDP headers.  If the route leaves through a netdev with a longer link
 * header (a VLAN on top), the IP output path makes more room itself.
 */
static unsigned int sroce_net_ip_udp_len(const struct sroce_qp_av *av)
{
	return (av->v4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr)) +
	       sizeof(struct udphdr);
}

static unsigned int sroce_net_headroom(struct sroce_qp *qp,
				       const struct sroce_qp_av *av)
{
	struct net_device *ndev = to_sroce_dev(qp->ibqp.device)->ndev;

	return LL_RESERVED_SPACE(ndev) + sroce_net_ip_udp_len(av);
}

/*
 * A packet that fits in a page, without the slab allocator: its buffer is a
 * fragment of this CPU's NAPI page-fragment cache and its sk_buff comes
 * from this CPU's NAPI sk_buff cache, which napi_consume_skb() refills
 * (the engine consumes the packets it received that way,
 * sroce_exec_consume(); so do NIC drivers with the packets they sent).
 * __netdev_alloc_skb() takes both from the slab for packets under about
 * 700 bytes, which ACKs and small messages are: two slab allocations and
 * two frees per packet, the largest cost of a 64-byte message rate in the
 * profile (Documentation/benchmarks.md).  A page whose fragments have all
 * come back is reused as it is, not zeroed.  Both caches belong to the
 * CPU's bottom half: callers hold exec_lock, taken with BHs off.
 */
static struct sk_buff *sroce_net_alloc_frag_skb(unsigned int size)
{
	unsigned int truesize = SKB_DATA_ALIGN(size) +
				SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
	struct sk_buff *skb;
	void *data;

	lockdep_assert_in_softirq();
	if (truesize > PAGE_SIZE)
		return __netdev_alloc_skb(NULL, size, GFP_NOWAIT | __GFP_NOWARN);
	data = napi_alloc_frag(truesize);
	if (unlikely(!data))
		return NULL;
	skb = napi_build_skb(data, truesize);
	if (unlikely(!skb))
		skb_free_frag(data);
	return skb;
}

struct sk_buff *sroce_net_alloc_skb(struct sroce_qp *qp,
				    const struct sroce_qp_av *av,
				    unsigned int len)
{
	unsigned int headroom, size;
	struct sk_buff *skb;

	lockdep_assert_held(&qp->exec_lock);
	headroom = sroce_net_headroom(qp, av);
	size = headroom + len + SROCE_ICRC_LEN;
	/*
	 * The engine never sleeps (kernel/dp/exec.c): when the per-CPU caches
	 * have nothing, the atomic reserves are tried; failing that the
	 * engine backs off.
	 */
	skb = sroce_net_alloc_frag_skb(size);
	if (unlikely(!skb))
		skb = alloc_skb(size, GFP_ATOMIC | __GFP_NOWARN);
	if (unlikely(!skb)) {
		sroce_qp_tx_error(qp, SROCE_TX_NO_MEM);
		return NULL;
	}
	skb_reserve(skb, headroom);
	skb_put(skb, len);
	return skb;
}

/*
 * RoCE v2 puts the flow's entropy into the UDP source port, which ECMP
 * hashes: the flow label if the consumer set one, else a hash of the two
 * QP numbers, in 0xC000..0xFFFF as IBTA Annex A17 asks.
 */
static __be16 sroce_net_sport(struct sroce_qp *qp,
			      const struct sroce_qp_av *av, u32 dest_qpn)
{
	return htons(rdma_get_udp_sport(av->flow_label, qp->ibqp.qp_num,
					dest_qpn));
}

/* The netdev of the source GID, for multicast and link-local routes. */
static int sroce_net_gid_ifindex(const struct sroce_qp_av *av)
{
	struct net_device *ndev;
	int oif = 0;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(av->sgid_attr);
	if (!IS_ERR(ndev))
		oif = ndev->ifindex;
	rcu_read_unlock();
	return oif;
}

/*
 * A unicast v4 route is not bound to the GID's netdev: a destination on
 * another netdev of this host must reach it through the loopback device.
 * A multicast one leaves through the GID's netdev.
 */
static struct dst_entry *sroce_net_route4(struct net *net,
					  const struct sroce_qp_av *av,
					  __be16 sport)
{
	bool mcast = ipv4_is_multicast(av->daddr.s6_addr32[3]);
	struct flowi4 fl4 = {
		.flowi4_oif = mcast ? sroce_net_gid_ifindex(av) : 0,
		.daddr = av->daddr.s6_addr32[3],
		.saddr = av->saddr.s6_addr32[3],
		/* Routing looks at the DSCP; the ECN bits are not its business. */
		.flowi4_tos = av->traffic_class & ~INET_ECN_MASK,
		.flowi4_proto = IPPROTO_UDP,
		.fl4_sport = sport,
		.fl4_dport = htons(SROCE_UDP_PORT),
	};
	struct rtable *rt;

	rt = ip_route_output_key(net, &fl4);
	if (IS_ERR(rt))
		return ERR_CAST(rt);
	/* No broadcast: multicast only where the address asked for it. */
	if (rt->rt_type != RTN_UNICAST && rt->rt_type != RTN_LOCAL &&
	    !(mcast && rt->rt_type == RTN_MULTICAST)) {
		ip_rt_put(rt);
		return ERR_PTR(-ENETUNREACH);
	}
	return &rt->dst;
}

/*
 * The interface a link-local v6 address is scoped to, and the one multicast
 * leaves through: the GID's netdev.
 */
static int sroce_net_oif6(const struct sroce_qp_av *av)
{
	if (!(ipv6_addr_type(&av->daddr) &
	      (IPV6_ADDR_LINKLOCAL | IPV6_ADDR_MULTICAST)) &&
	    !(ipv6_addr_type(&av->saddr) & IPV6_ADDR_LINKLOCAL))
		return 0;
	return sroce_net_gid_ifindex(av);
}

static struct dst_entry *sroce_net_route6(struct net *net,
					  const struct sroce_qp_av *av,
					  __be16 sport)
{
	struct flowi6 fl6 = {
		.daddr = av->daddr,
		.saddr = av->saddr,
		.flowi6_oif = sroce_net_oif6(av),
		.flowlabel = ip6_make_flowinfo(av->traffic_class,
					       cpu_to_be32(av->flow_label) &
					       IPV6_FLOWLABEL_MASK),
		.flowi6_proto = IPPROTO_UDP,
		.fl6_sport = sport,
		.fl6_dport = htons(SROCE_UDP_PORT),
	};

	return ipv6_stub->ipv6_dst_lookup_flow(net, NULL, &fl6, NULL);
}

static void sroce_net_push_udp(struct sk_buff *skb, __be16 sport)
{
	struct udphdr *uh;

	uh = skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh->source = sport;
	uh->dest = htons(SROCE_UDP_PORT);
	uh->len = htons(skb->len);
	/* RoCE v2 sends no UDP checksum: the ICRC protects the packet. */
	uh->check = 0;
}

/*
 * A zero hop limit in the address vector means the consumer did not choose
 * one (a packet sent with it would not pass the first router): use the
 * route's.
 */
static u8 sroce_net_hop_limit(const struct sroce_qp_av *av,
			      struct dst_entry *dst)
{
	if (av->hop_limit)
		return av->hop_limit;
	return av->v4 ? ip4_dst_hoplimit(dst) : ip6_dst_hoplimit(dst);
}

/*
 * Every field the ICRC covers is final when this returns: length, the
 * identification (chosen here, not by ip_local_out()), DF and the
 * addresses.  __ip_local_out() only rewrites the length with the same
 * value and fills in the header checksum, which the ICRC does not cover.
 */
static void sroce_net_push_ip4(struct net *net, struct sk_buff *skb,
			       const struct sroce_qp_av *av,
			       struct dst_entry *dst)
{
	struct iphdr *iph;

	iph = skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) / 4;
	iph->tos = av->traffic_class;
	iph->tot_len = htons(skb->len);
	/* RoCE v2 packets must not be fragmented: the ICRC covers them. */
	iph->frag_off = htons(IP_DF);
	iph->ttl = sroce_net_hop_limit(av, dst);
	iph->protocol = IPPROTO_UDP;
	iph->check = 0;
	iph->saddr = av->saddr.s6_addr32[3];
	iph->daddr = av->daddr.s6_addr32[3];
	ip_select_ident(net, skb, NULL);
	skb->protocol = htons(ETH_P_IP);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
}

/* ip6_local_out() rewrites the payload length with the same value. */
static void sroce_net_push_ip6(struct sk_buff *skb,
			       const struct sroce_qp_av *av,
			       struct dst_entry *dst)
{
	struct ipv6hdr *ip6h;

	ip6h = skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6_flow_hdr(ip6h, av->traffic_class,
		     cpu_to_be32(av->flow_label) & IPV6_FLOWLABEL_MASK);
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = sroce_net_hop_limit(av, dst);
	ip6h->saddr = av->saddr;
	ip6h->daddr = av->daddr;
	skb->protocol = htons(ETH_P_IPV6);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
}

/*
 * Compute the ICRC over the finished IP, UDP and transport headers and the
 * payload, into the last 4 bytes, reading again only what is not in @part
 * (the payload, if its CRC was taken while it was copied in).  The IP
 * header built above always has the form the ICRC supports and the BTH is
 * there (checked by the caller), so sroce_icrc_compute_part() cannot fail.
 */
static void sroce_net_put_icrc(struct sk_buff *skb,
			       const struct sroce_icrc_part *part)
{
	u8 *udp = skb_transport_header(skb);
	u8 *bth = udp + sizeof(struct udphdr);
	u32 len = skb_tail_pointer(skb) - bth;
	u32 icrc = 0;

	sroce_icrc_compute_part(crc32_le, skb_network_header(skb), udp, bth,
				len, part, &icrc);
	sroce_icrc_store(bth + len - SROCE_ICRC_LEN, icrc);
}

/*
 * A packet to an address of this host: finish it as ip_local_out() would
 * (the IPv4 header checksum; the ICRC only if asked for) and hand it to
 * same-host delivery instead.  Consumes the skb.
 */
static int sroce_net_xmit_local(struct sroce_qp *qp,
				const struct sroce_qp_av *av,
				struct sk_buff *skb,
				const struct sroce_icrc_part *part)
{
	bool icrc = sroce_loop_icrc();

	skb_dst_drop(skb);
	if (av->v4)
		ip_send_check(ip_hdr(skb));
	if (icrc)
		sroce_net_put_icrc(skb, part);
	else
		sroce_icrc_store(skb_tail_pointer(skb) - SROCE_ICRC_LEN, 0);
	return sroce_loop_xmit(qp, skb, icrc);
}

static int sroce_net_tx_fail(struct sroce_qp *qp, struct sk_buff *skb,
			     enum sroce_tx_error why, int err)
{
	sroce_qp_tx_error(qp, why);
	kfree_skb(skb);
	return err;
}

/*
 * The headers go into the headroom and the ICRC into the tailroom that
 * sroce_net_alloc_skb() left, and the ICRC needs at least a BTH.
 */
static bool sroce_net_skb_ok(const struct sroce_qp_av *av,
			     const struct sk_buff *skb)
{
	return !skb_is_nonlinear(skb) && skb->len >= SROCE_BTH_LEN &&
	       skb_headroom(skb) >= sroce_net_ip_udp_len(av) &&
	       skb_tailroom(skb) >= SROCE_ICRC_LEN;
}

/*
 * A route depends only on the address vector and the flow (the UDP source
 * port, which ECMP hashes), so the QP keeps the last one it looked up, as
 * a connected socket keeps its dst: a connected QP's for its whole life (until
 * modify_qp changes the address vector or the destination QP), a UD QP's
 * for as long as it sends to one address handle and destination QP.  The
 * key is the av's id, never reused, and the source port: the av itself may
 * be a destroyed address handle's whose memory has been reused, and the QP
 * does not hold it.  dst_check() notices when routing changed underneath
 * (an address or route change bumps the IPv4 generation count or the IPv6
 * cookie); a netdev going away replaces the dst's device without waiting
 * for this reference, and the next dst_check() fails.
 */
static struct dst_entry *sroce_net_route(struct sroce_qp *qp,
					 const struct sroce_qp_av *av,
					 __be16 sport)
{
	struct dst_entry *dst = qp->tx_dst;
	struct net *net;

	if (dst) {
		if (qp->tx_dst_av == av->id && qp->tx_dst_sport == sport &&
		    dst_check(dst, qp->tx_dst_cookie)) {
			dst_hold(dst);
			return dst;
		}
		sroce_net_forget_route(qp);
	}
	net = sroce_net_qp_net(qp);
	dst = av->v4 ? sroce_net_route4(net, av, sport) :
		       sroce_net_route6(net, av, sport);
	if (IS_ERR(dst))
		return dst;
	qp->tx_dst_cookie = av->v4 ? 0 : rt6_get_cookie((struct rt6_info *)dst);
	qp->tx_dst_av = av->id;
	qp->tx_dst_sport = sport;
	dst_hold(dst);
	qp->tx_dst = dst;
	return dst;
}

/* A packet handed on; len is its BTH through ICRC, as rcvd_bytes counts. */
static void sroce_net_count_sent(struct sroce_qp *qp, unsigned int len)
{
	sroce_qp_stats_inc(qp, SROCE_STAT_SENT_PKTS);
	sroce_qp_stats_add(qp, SROCE_STAT_SENT_BYTES, len);
}

void sroce_net_forget_route(struct sroce_qp *qp)
{
	dst_release(qp->tx_dst);
	qp->tx_dst = NULL;
}

/*
 * Will a packet of the QP to @av carry an ICRC?  Only a guess from the
 * route the QP kept (the packet's own is looked up later): a packet that
 * takes the same-host shortcut gets none unless loopback_icrc asks, and a
 * CRC taken for nothing costs more than a plain copy.  A wrong guess costs
 * time, never correctness: sroce_net_put_icrc() reads the payload again
 * when its CRC was not taken.
 */
bool sroce_net_icrc_likely(struct sroce_qp *qp, const struct sroce_qp_av *av)
{
	lockdep_assert_held(&qp->exec_lock);
	return sroce_loop_icrc() || !qp->tx_dst || qp->tx_dst_av != av->id ||
	       !sroce_loop_route_local(qp->tx_dst, av->v4);
}

int sroce_net_xmit(struct sroce_qp *qp, const struct sroce_qp_av *av,
		   u32 dest_qpn, struct sk_buff *skb,
		   const struct sroce_icrc_part *part)
{
	__be16 sport = sroce_net_sport(qp, av, dest_qpn);
	struct net *net = sroce_net_qp_net(qp);
	struct dst_entry *dst;
	unsigned int len;
	int err;

	lockdep_assert_held(&qp->exec_lock);
	if (WARN_ON_ONCE(!sroce_net_skb_ok(av, skb)))
		return sroce_net_tx_fail(qp, skb, SROCE_TX_BAD_SKB, -EINVAL);

	dst = sroce_net_route(qp, av, sport);
	if (IS_ERR(dst))
		return sroce_net_tx_fail(qp, skb, SROCE_TX_NO_ROUTE,
					 PTR_ERR(dst));
	skb_dst_set(skb, dst);

	skb_put(skb, SROCE_ICRC_LEN);
	len = skb->len;
	trace_sroce_tx(&qp->ibqp, skb->data, len);
	sroce_net_push_udp(skb, sport);
	if (av->v4)
		sroce_net_push_ip4(net, skb, av, dst);
	else
		sroce_net_push_ip6(skb, av, dst);
	if (sroce_loop_route_local(dst, av->v4)) {
		/* sroce_loop_xmit() counts its own failure */
		err = sroce_net_xmit_local(qp, av, skb, part);
		if (!err)
			sroce_net_count_sent(qp, len);
		return err;
	}
	sroce_net_put_icrc(skb, part);

	/* The stack frees the skb whatever happens. */
	if (av->v4)
		err = ip_local_out(net, NULL, skb);
	else
		err = ip6_local_out(net, NULL, skb);
	err = net_xmit_eval(err);
	if (unlikely(err)) {
		sroce_qp_tx_error(qp, SROCE_TX_DROPPED);
		return err < 0 ? err : -ENOBUFS;
	}
	sroce_net_count_sent(qp, len);
	return 0;
}

/**
 * sroce_net_mcast - join or leave an IP multicast group on a device's netdev
 * @sdev: the device whose QP attached to the group
 * @group: the group's address (IPv4-mapped for IPv4)
 * @join: join, or leave
 *
 * The group is joined on the socket of the device's namespace, so the host
 * reports the membership (IGMP, MLD), the netdev accepts the group's MAC
 * address and IP delivers the datagrams to port 4791.  Process context; the
 * device holds the endpoint, so the socket exists.
 *
 * Return: 0 or a negative errno (-EAFNOSUPPORT: IPv6 is off).
 */
int sroce_net_mcast(struct sroce_dev *sdev, const struct in6_addr *group,
		    bool join)
{
	struct sroce_net *sn = sroce_net_of(sdev->net);
	int ifindex = sdev->ndev->ifindex;
	struct ip_mreqn mreq = { .imr_ifindex = ifindex };
	struct socket *sock;
	int err;

	sock = ipv6_addr_v4mapped(group) ? sn->sock4 : sn->sock6;
	if (!sock)
		return -EAFNOSUPPORT;
	mreq.imr_multiaddr.s_addr = group->s6_addr32[3];
	/* the order the socket options take: RTNL, then the socket lock */
	rtnl_lock();
	lock_sock(sock->sk);
	if (sock == sn->sock4)
		err = join ? ip_mc_join_group(sock->sk, &mreq) :
			     ip_mc_leave_group(sock->sk, &mreq);
	else
		err = join ? ipv6_stub->ipv6_sock_mc_join(sock->sk, ifindex,
							  group) :
			     ipv6_stub->ipv6_sock_mc_drop(sock->sk, ifindex,
							  group);
	release_sock(sock->sk);
	rtnl_unlock();
	return err;
}

static struct socket *sroce_net_open(struct net *net, int family)
{
	struct udp_port_cfg port = {
		.family = family,
		.local_udp_port = htons(SROCE_UDP_PORT),
		/* RoCE v2 senders (sroce too) leave the UDP checksum 0. */
		.use_udp6_rx_checksums = false,
	};
	struct udp_tunnel_sock_cfg tunnel = {
		.encap_type = SROCE_ENCAP_TYPE,
		.encap_rcv = sroce_net_encap_rcv,
	};
	struct socket *sock;
	int err;

	if (family == AF_INET6) {
		port.local_ip6 = in6addr_any;
		port.ipv6_v6only = 1;
	}
	/* a kernel socket: it holds no reference on the namespace */
	err = udp_sock_create(net, &port, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, sock, &tunnel);
	sroce_obj_get(SROCE_OBJ_UDP_SOCKET);
	return sock;
}

static void sroce_net_close(struct socket **sock)
{
	if (!*sock)
		return;
	udp_tunnel_sock_release(*sock);
	*sock = NULL;
	sroce_obj_put(SROCE_OBJ_UDP_SOCKET);
}

static void sroce_net_report(int family, int err)
{
	const char *fam = family == AF_INET ? "IPv4" : "IPv6";

	if (err == -EADDRINUSE)
		pr_err("cannot bind %s UDP port %d: it is already in use (rdma_rxe binds it when loaded; unload rdma_rxe to use sroce)\n",
		       fam, SROCE_UDP_PORT);
	else
		pr_err("cannot open %s UDP port %d: error %d\n", fam,
		       SROCE_UDP_PORT, err);
}

static int sroce_net_open_all(struct net *net, struct sroce_net *sn)
{
	struct socket *sock;

	lockdep_assert_held(&net_mutex);
	sock = sroce_net_open(net, AF_INET);
	if (IS_ERR(sock)) {
		sroce_net_report(AF_INET, PTR_ERR(sock));
		return PTR_ERR(sock);
	}
	sn->sock4 = sock;

	/* A kernel booted with IPv6 disabled still gets IPv4 RoCE. */
	sock = sroce_net_open(net, AF_INET6);
	if (IS_ERR(sock) && PTR_ERR(sock) != -EAFNOSUPPORT) {
		sroce_net_report(AF_INET6, PTR_ERR(sock));
		sroce_net_close(&sn->sock4);
		return PTR_ERR(sock);
	}
	sn->sock6 = IS_ERR(sock) ? NULL : sock;
	return 0;
}

/**
 * sroce_net_get - take a reference on a namespace's UDP endpoint
 * @net: the namespace of a new device's netdev; the caller holds a
 *	 reference on it for the duration of the call
 *
 * Opens the endpoint for the namespace's first device.  The reference, not
 * one on @net, keeps the namespace's exit waiting (sroce_net_exit()).
 *
 * Return: 0 or a negative errno.
 */
int sroce_net_get(struct net *net)
{
	struct sroce_net *sn = sroce_net_of(net);
	int err = 0;

	mutex_lock(&net_mutex);
	if (!sn->users)
		err = sroce_net_open_all(net, sn);
	if (!err)
		WRITE_ONCE(sn->users, sn->users + 1);
	mutex_unlock(&net_mutex);
	return err;
}

void sroce_net_put(struct net *net)
{
	struct sroce_net *sn = sroce_net_of(net);

	mutex_lock(&net_mutex);
	WRITE_ONCE(sn->users, sn->users - 1);
	if (!sn->users) {
		sroce_net_close(&sn->sock6);
		sroce_net_close(&sn->sock4);
		wake_up_all(&net_idle_wq);
	}
	mutex_unlock(&net_mutex);
}

/*
 * The namespace is being dismantled, after its netdevs: each of its sroce
 * devices has had its unregistration queued by NETDEV_UNREGISTER, whether
 * the netdev was deleted or moved out.  Wait until they have released the
 * endpoint.  At module unload no device is left, so this does not wait.
 */
static void __net_exit sroce_net_exit(struct net *net)
{
	struct sroce_net *sn = sroce_net_of(net);

	/* a lockless read: wait_event() must not sleep in its condition */
	wait_event(net_idle_wq, !READ_ONCE(sn->users));
	mutex_lock(&net_mutex);
	WARN_ON_ONCE(sn->sock4 || sn->sock6);
	mutex_unlock(&net_mutex);
}

/*
 * A subsystem, not a device: its exit runs after the namespace's netdevs
 * have been unregistered or moved (the netdev notifier has seen them).
 */
static struct pernet_operations sroce_net_ops = {
	.exit = sroce_net_exit,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_net),
};

int sroce_net_init(void)
{
	return register_pernet_subsys(&sroce_net_ops);
}

/* After every device is gone: no namespace's endpoint is in use. */
void sroce_net_cleanup(void)
{
	unregister_pernet_subsys(&sroce_net_ops);
}
