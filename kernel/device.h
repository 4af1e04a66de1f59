/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_DEVICE_H
#define SROCE_DEVICE_H

#include <linux/atomic.h>
#include <linux/idr.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/netdevice.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "core/port.h"

struct sroce_stats;

/*
 * One sroce RDMA device, bound to one Ethernet netdev for its whole life.
 *
 * Lifetime: allocated by newlink, owned by ib_core once registered, freed by
 * ib_core after dealloc_driver (sroce_device_dealloc_driver) has dropped what
 * the device holds.  ndev is held with a tracked reference from creation to
 * dealloc_driver, so it is valid whenever an op can run.  A netdev that
 * leaves its namespace is unregistered there first (NETDEV_UNREGISTER), which
 * removes the device.
 */
struct sroce_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	/*
	 * ndev's namespace when the device was created, whose UDP endpoint
	 * it holds (if net_held) and whose stack it uses; not referenced: the
	 * endpoint keeps the namespace's exit waiting (dp/net.c).
	 */
	struct net *net;
	bool net_held;
	struct device *link_parent;	/* during registration: device.c */
	int port_state;			/* enum sroce_port_state last announced */
	struct ida pd_ida;		/* PD numbers, 1..SROCE_MAX_PD */
	struct ida cq_ida;		/* CQ numbers, 1..SROCE_MAX_CQ */
	struct ida srq_ida;		/* SRQ numbers, 1..SROCE_MAX_SRQ */
	struct xarray xsrq_xa;		/* srqn -> XRC struct sroce_srq (srq.c) */
	struct xarray mr_xa;		/* key index -> MR or MW (mr.h) */
	atomic_t mr_count;		/* live MRs, at most SROCE_MAX_MR */
	atomic_t mw_count;		/* live MWs, at most SROCE_MAX_MW */
	struct xarray qp_xa;		/* QPN -> struct sroce_qp_ref (qp.c) */
	atomic64_t qp_serial;		/* last struct sroce_qp.serial given */
	struct xarray ah_xa;		/* AH number -> struct sroce_ah_dest (ah.c) */
	struct mutex mcast_mutex;	/* multicast groups, see mcast.c */
	spinlock_t mcast_lock;
	struct list_head mcast_groups;
	u32 mcast_count;
	atomic_long_t rx_backlog;	/* bytes queued on QPs' rxq, dp/exec.c */
	struct sroce_stats __percpu *stats;	/* counters, stats.h */
	struct xarray counter_xa;	/* QP counter id -> struct sroce_counter */
	struct list_head stats_node;	/* in stats.c's list of devices */
};

static inline struct sroce_dev *to_sroce_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

/*
 * Allocation flags for the memory of an object whose size its creator
 * chooses: rings, WQE copies, page arrays.
 *
 * A user's objects are charged to the memory cgroup of the task that
 * creates them (current, in the uverbs call), so a container cannot pin
 * more kernel memory through sroce than its memory.max allows.  Reaching
 * the limit is the user's business, not the kernel's: __GFP_RETRY_MAYFAIL
 * makes the allocation fail with ENOMEM instead of invoking the OOM killer
 * (which would pick the caller or a neighbour in its cgroup), and
 * __GFP_NOWARN keeps the failure out of the kernel log.
 *
 * A kernel ULP's objects (no udata) are not charged: they are created by
 * whatever task runs the ULP (a kworker, modprobe, a configfs write), live
 * as long as the ULP and not that task, and a charge would pin the task's
 * cgroup after it is gone or make a kernel service fail inside a small
 * one.  They are allocated as any other kernel memory.
 */
static inline gfp_t sroce_obj_gfp(bool user)
{
	return user ? GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN :
		      GFP_KERNEL;
}

struct sroce_port_status sroce_device_port_status(struct sroce_dev *sdev);
void sroce_device_dealloc_driver(struct ib_device *ibdev);
int sroce_device_enable_driver(struct ib_device *ibdev);
int sroce_device_newlink(const char *ibdev_name, struct net_device *ndev);
int sroce_device_init(void);
void sroce_device_exit(void);

#endif /* SROCE_DEVICE_H */
