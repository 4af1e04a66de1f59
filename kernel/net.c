// SPDX-License-Identifier: GPL-2.0
/*
 * The RoCE v2 UDP endpoint: one kernel UDP tunnel socket per address family
 * on port 4791 in the initial network namespace, and the receive path from
 * those sockets to the QPs.
 *
 * The sockets exist while at least one sroce device does.  Opening them at
 * the first "rdma link add" rather than at module load lets "modprobe sroce"
 * succeed next to rdma_rxe (which binds 4791 at load) and turns the clash into
 * a clear error on the command that needs the port.
 *
 * Receive (softirq, from UDP's encap_rcv): find the sroce device the datagram
 * is for, check that it is long enough, carried by a plain IP header and has
 * a valid ICRC, look its destination QP up and hand it to the QP's execution
 * context (exec.h).  Every dropped datagram is counted by reason in
 * /sys/kernel/debug/sroce/rx_drops.
 *
 * Locking: net_mutex serialises users and the socket pointers.  It is taken
 * from newlink and from dealloc_driver only, never under RTNL.  The
 * receive path does not touch the socket pointers.
 */
#include <linux/crc32.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/mutex.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/udp_tunnel.h>
#include <rdma/sroce-abi.h>

#include "core/hdr.h"
#include "core/icrc.h"
#include "debugfs.h"
#include "device.h"
#include "exec.h"
#include "net.h"
#include "qp.h"

/* Any non-zero encap_type makes UDP hand datagrams to encap_rcv. */
#define SROCE_ENCAP_TYPE 1

static DEFINE_MUTEX(net_mutex);
static unsigned int net_users;
static struct socket *sock4;
static struct socket *sock6;

static void sroce_net_rx_drop(struct sk_buff *skb, enum sroce_drop_reason why)
{
	sroce_drop_count(why);
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
 * device of this host sent to an address of this host was routed through
 * the loopback device, so there the destination address names the netdev.
 */
static struct ib_device *sroce_net_rx_ibdev(struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;
	struct ib_device *ibdev = NULL;

	if (!(ndev->flags & IFF_LOOPBACK))
		return ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);

	rcu_read_lock();
	ndev = sroce_net_rx_local_dev(skb);
	if (ndev)
		ibdev = ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);
	rcu_read_unlock();
	return ibdev;
}

/*
 * Make the datagram what sroce_exec_rx() expects: skb->data at the BTH,
 * linear, with a verified ICRC.  Returns false with the reason to drop it.
 */
static bool sroce_net_rx_valid(struct sk_buff *skb,
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

static void sroce_net_rx_deliver(struct sroce_dev *sdev, struct sk_buff *skb)
{
	enum sroce_drop_reason why;
	struct sroce_qp *qp;

	if (!sroce_net_rx_valid(skb, &why)) {
		sroce_net_rx_drop(skb, why);
		return;
	}
	qp = sroce_qp_get(sdev, sroce_bth_qpn(skb->data));
	if (!qp) {
		sroce_net_rx_drop(skb, SROCE_DROP_NO_QP);
		return;
	}
	sroce_exec_rx(qp, skb);
	sroce_qp_put(qp);
}

/*
 * UDP's encap_rcv, in softirq: skb->data is the UDP header, skb->len the UDP
 * length (more than the header alone), the UDP checksum has been verified
 * if it was not zero.  Always consumes the skb.
 */
static int sroce_net_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct ib_device *ibdev = sroce_net_rx_ibdev(skb);

	if (!ibdev) {
		sroce_net_rx_drop(skb, SROCE_DROP_NO_DEVICE);
		return 0;
	}
	sroce_net_rx_deliver(to_sroce_dev(ibdev), skb);
	ib_device_put(ibdev);
	return 0;
}

static struct socket *sroce_net_open(int family)
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
	err = udp_sock_create(&init_net, &port, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(&init_net, sock, &tunnel);
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

static int sroce_net_open_all(void)
{
	struct socket *sock;

	sock = sroce_net_open(AF_INET);
	if (IS_ERR(sock)) {
		sroce_net_report(AF_INET, PTR_ERR(sock));
		return PTR_ERR(sock);
	}
	sock4 = sock;

	/* A kernel booted with IPv6 disabled still gets IPv4 RoCE. */
	sock = sroce_net_open(AF_INET6);
	if (IS_ERR(sock) && PTR_ERR(sock) != -EAFNOSUPPORT) {
		sroce_net_report(AF_INET6, PTR_ERR(sock));
		sroce_net_close(&sock4);
		return PTR_ERR(sock);
	}
	sock6 = IS_ERR(sock) ? NULL : sock;
	return 0;
}

/* Take a reference on the UDP endpoint, opening it for the first user. */
int sroce_net_get(void)
{
	int err = 0;

	mutex_lock(&net_mutex);
	if (!net_users)
		err = sroce_net_open_all();
	if (!err)
		net_users++;
	mutex_unlock(&net_mutex);
	return err;
}

void sroce_net_put(void)
{
	mutex_lock(&net_mutex);
	if (!--net_users) {
		sroce_net_close(&sock6);
		sroce_net_close(&sock4);
	}
	mutex_unlock(&net_mutex);
}
