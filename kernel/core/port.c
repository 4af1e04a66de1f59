// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Port attributes that follow the underlying netdev: the active IB MTU and the
 * logical/physical port state.
 */
#include "port.h"

u32 sroce_mtu_bytes(enum sroce_mtu mtu)
{
	return 128u << mtu;
}

/*
 * The largest IB MTU whose packets fit the netdev MTU.  A netdev too small to
 * carry even 256-byte payloads yields SROCE_MTU_256 with *usable false: the
 * port is then reported down rather than advertising an MTU that cannot work.
 */
enum sroce_mtu sroce_mtu_from_netdev(u32 netdev_mtu, bool *usable)
{
	enum sroce_mtu mtu;

	*usable = netdev_mtu >= SROCE_MIN_NETDEV_MTU;
	for (mtu = SROCE_MTU_4096; mtu > SROCE_MTU_256; mtu--)
		if (netdev_mtu >= sroce_mtu_bytes(mtu) + SROCE_ROCE_OVERHEAD)
			return mtu;
	return SROCE_MTU_256;
}

/*
 * An administratively down netdev is a disabled link; an up netdev without
 * carrier is still polling for a peer.  Only an up netdev with carrier and
 * room for RoCE packets makes the port ACTIVE.
 */
struct sroce_port_status sroce_port_evaluate(bool admin_up, bool carrier,
					     u32 netdev_mtu)
{
	struct sroce_port_status st = {
		.state = SROCE_PORT_DOWN,
		.phys_state = SROCE_PHYS_DISABLED,
	};
	bool usable;

	if (!admin_up)
		return st;
	st.phys_state = carrier ? SROCE_PHYS_LINK_UP : SROCE_PHYS_POLLING;
	sroce_mtu_from_netdev(netdev_mtu, &usable);
	if (carrier && usable)
		st.state = SROCE_PORT_ACTIVE;
	return st;
}
