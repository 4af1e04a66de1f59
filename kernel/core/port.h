/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef SROCE_CORE_PORT_H
#define SROCE_CORE_PORT_H

#include "core_env.h"

/*
 * IBTA encodings, restated here so the core does not need rdma/ib_verbs.h.
 * The kernel side pins each value to its ib_verbs.h twin with BUILD_BUG_ON.
 */
enum sroce_mtu {
	SROCE_MTU_256 = 1,
	SROCE_MTU_512 = 2,
	SROCE_MTU_1024 = 3,
	SROCE_MTU_2048 = 4,
	SROCE_MTU_4096 = 5,
};

enum sroce_port_state {
	SROCE_PORT_DOWN = 1,
	SROCE_PORT_ACTIVE = 4,
};

enum sroce_phys_state {
	SROCE_PHYS_POLLING = 2,
	SROCE_PHYS_DISABLED = 3,
	SROCE_PHYS_LINK_UP = 5,
};

/*
 * Worst-case bytes a RoCE v2 packet adds to its payload inside one netdev
 * MTU: IPv6 header (40), UDP (8), BTH (12), 28 bytes of extended headers
 * (more than any packet with payload carries: XRC's RDMA WRITE ONLY with
 * immediate has 24; XRC's atomics, 32, carry none) and the ICRC (4).  A path
 * MTU is usable only if a full payload plus this overhead fits in the
 * netdev MTU.
 */
#define SROCE_ROCE_OVERHEAD (40 + 8 + 12 + 28 + 4)

/* Smallest netdev MTU that carries an IB MTU of 256 bytes. */
#define SROCE_MIN_NETDEV_MTU (256 + SROCE_ROCE_OVERHEAD)

u32 sroce_mtu_bytes(enum sroce_mtu mtu);
enum sroce_mtu sroce_mtu_from_netdev(u32 netdev_mtu, bool *usable);

struct sroce_port_status {
	enum sroce_port_state state;
	enum sroce_phys_state phys_state;
};

struct sroce_port_status sroce_port_evaluate(bool admin_up, bool carrier,
					     u32 netdev_mtu);

#endif /* SROCE_CORE_PORT_H */
