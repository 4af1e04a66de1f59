// SPDX-License-Identifier: GPL-2.0
/*
 * The RoCE v2 UDP endpoint: one kernel UDP tunnel socket per address family
 * on port 4791 in the initial network namespace.
 *
 * The sockets exist while at least one sroce device does.  Opening them at
 * the first "rdma link add" rather than at module load lets "modprobe sroce"
 * succeed next to rdma_rxe (which binds 4791 at load) and turns the clash into
 * a clear error on the command that needs the port.
 *
 * Locking: net_mutex serialises users and the socket pointers.  It is taken
 * from newlink and from dealloc_driver only, never under RTNL.
 */
#include <linux/mutex.h>
#include <linux/skbuff.h>
#include <net/udp_tunnel.h>

#include "debugfs.h"
#include "net.h"

/* Any non-zero encap_type makes UDP hand datagrams to encap_rcv. */
#define SROCE_ENCAP_TYPE 1

static DEFINE_MUTEX(net_mutex);
static unsigned int net_users;
static struct socket *sock4;
static struct socket *sock6;

/*
 * Nothing consumes RoCE packets yet: every datagram is dropped and counted so
 * that traffic aimed at a device without queue pairs is visible, not silent.
 */
static int sroce_net_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	sroce_drop_count(SROCE_DROP_NO_QP);
	kfree_skb(skb);
	return 0;
}

static struct socket *sroce_net_open(int family)
{
	struct udp_port_cfg port = {
		.family = family,
		.local_udp_port = htons(SROCE_UDP_PORT),
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
