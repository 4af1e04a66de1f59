// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast groups of UD QPs.
 *
 * attach_mcast adds a UD QP to a group, named by its GID: the IPv4-mapped
 * or IPv6 multicast address its datagrams are sent to.  The first QP of a
 * device to attach to a group joins it at the IP level on the device's
 * netdev (sroce_exec_mcast_join()), so the host reports the membership,
 * the NIC accepts the frames and IP hands them to port 4791; the last one
 * to detach leaves it.  The receive path hands a datagram to the
 * multicast QPN (0xFFFFFF) to every QP attached to the group of its
 * destination address (kernel/dp/mcast_rx.c).
 *
 * Locking: mcast_mutex serialises attach, detach and QP destruction (which
 * detaches what the consumer left attached) and is held across the IP
 * join, which sleeps.  mcast_lock, taken with BHs off, guards the lists
 * the receive path reads in softirq; it reads them only through
 * sroce_mcast_members(), which copies a group's QP numbers out under the
 * lock.  The lists hold QP numbers, not pointers: delivery takes a counted
 * reference by number (sroce_qp_get()), so a QP being destroyed is simply
 * not found.
 */
#include <linux/list.h>
#include <linux/slab.h>
#include <net/ipv6.h>

#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "dp/exec.h"
#include "obj/mcast.h"
#include "obj/qp.h"

struct sroce_mcast_group {
	struct list_head node;		/* in sdev->mcast_groups */
	struct in6_addr addr;
	u32 nr;				/* QPs attached */
	u32 qpn[SROCE_MAX_MCAST_QP_ATTACH];
};

void sroce_mcast_dev_init(struct sroce_dev *sdev)
{
	mutex_init(&sdev->mcast_mutex);
	spin_lock_init(&sdev->mcast_lock);
	INIT_LIST_HEAD(&sdev->mcast_groups);
}

/* Every QP has been destroyed, and with it its attachments. */
void sroce_mcast_dev_cleanup(struct sroce_dev *sdev)
{
	WARN_ON(!list_empty(&sdev->mcast_groups));
	mutex_destroy(&sdev->mcast_mutex);
}

/* Callers hold mcast_mutex or mcast_lock. */
static struct sroce_mcast_group *sroce_mcast_find(struct sroce_dev *sdev,
						  const struct in6_addr *addr)
{
	struct sroce_mcast_group *g;

	lockdep_assert(lockdep_is_held(&sdev->mcast_mutex) ||
		       lockdep_is_held(&sdev->mcast_lock));
	list_for_each_entry(g, &sdev->mcast_groups, node)
		if (ipv6_addr_equal(&g->addr, addr))
			return g;
	return NULL;
}

static int sroce_mcast_slot(const struct sroce_mcast_group *g, u32 qpn)
{
	u32 i;

	for (i = 0; i < g->nr; i++)
		if (g->qpn[i] == qpn)
			return i;
	return -1;
}

static bool sroce_mcast_addr_ok(const struct in6_addr *addr)
{
	if (ipv6_addr_v4mapped(addr))
		return ipv4_is_multicast(addr->s6_addr32[3]);
	return ipv6_addr_is_multicast(addr);
}

/* A new group, joined at the IP level; mcast_mutex held. */
static struct sroce_mcast_group *
sroce_mcast_create(struct sroce_dev *sdev, const struct in6_addr *addr)
{
	struct sroce_mcast_group *g;
	int err;

	lockdep_assert_held(&sdev->mcast_mutex);
	if (sdev->mcast_count >= SROCE_MAX_MCAST_GRP)
		return ERR_PTR(-ENOMEM);
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return ERR_PTR(-ENOMEM);
	g->addr = *addr;
	err = sroce_exec_mcast_join(sdev, addr, true);
	if (err) {
		kfree(g);
		return ERR_PTR(err);
	}
	spin_lock_bh(&sdev->mcast_lock);
	list_add(&g->node, &sdev->mcast_groups);
	spin_unlock_bh(&sdev->mcast_lock);
	sdev->mcast_count++;
	sroce_obj_get(SROCE_OBJ_MCAST);
	return g;
}

/* Take qpn out of g, and g out of the device once it is empty. */
static void sroce_mcast_remove(struct sroce_dev *sdev,
			       struct sroce_mcast_group *g, int slot)
{
	bool empty;

	lockdep_assert_held(&sdev->mcast_mutex);
	spin_lock_bh(&sdev->mcast_lock);
	g->qpn[slot] = g->qpn[--g->nr];
	empty = !g->nr;
	if (empty)
		list_del(&g->node);
	spin_unlock_bh(&sdev->mcast_lock);
	if (!empty)
		return;
	/* leaving can only fail if the netdev's IP state is gone already */
	sroce_exec_mcast_join(sdev, &g->addr, false);
	kfree(g);
	sdev->mcast_count--;
	sroce_obj_put(SROCE_OBJ_MCAST);
}

/* ib_core has checked that the QP is UD and the GID a multicast one. */
static int sroce_mcast_attach(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_dev *sdev = to_sroce_dev(ibqp->device);
	const struct in6_addr *addr = (const struct in6_addr *)gid->raw;
	struct sroce_mcast_group *g;
	int err = 0;

	if (!sroce_mcast_addr_ok(addr))
		return -EINVAL;
	mutex_lock(&sdev->mcast_mutex);
	g = sroce_mcast_find(sdev, addr);
	if (!g) {
		g = sroce_mcast_create(sdev, addr);
		if (IS_ERR(g)) {
			err = PTR_ERR(g);
			goto out;
		}
	}
	if (sroce_mcast_slot(g, ibqp->qp_num) >= 0)
		goto out;		/* attached already: nothing to do */
	if (g->nr >= SROCE_MAX_MCAST_QP_ATTACH) {
		err = -ENOMEM;
		goto out;
	}
	spin_lock_bh(&sdev->mcast_lock);
	g->qpn[g->nr++] = ibqp->qp_num;
	spin_unlock_bh(&sdev->mcast_lock);
out:
	mutex_unlock(&sdev->mcast_mutex);
	return err;
}

static int sroce_mcast_detach(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_dev *sdev = to_sroce_dev(ibqp->device);
	const struct in6_addr *addr = (const struct in6_addr *)gid->raw;
	struct sroce_mcast_group *g;
	int slot = -1, err = -EINVAL;

	mutex_lock(&sdev->mcast_mutex);
	g = sroce_mcast_find(sdev, addr);
	if (g)
		slot = sroce_mcast_slot(g, ibqp->qp_num);
	if (slot >= 0) {
		sroce_mcast_remove(sdev, g, slot);
		err = 0;
	}
	mutex_unlock(&sdev->mcast_mutex);
	return err;
}

/* destroy_qp: detach from whatever the consumer left attached. */
void sroce_mcast_qp_gone(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	struct sroce_mcast_group *g, *tmp;
	int slot;

	if (!sroce_qp_is_ud(qp))
		return;
	mutex_lock(&sdev->mcast_mutex);
	list_for_each_entry_safe(g, tmp, &sdev->mcast_groups, node) {
		slot = sroce_mcast_slot(g, qp->ibqp.qp_num);
		if (slot >= 0)
			sroce_mcast_remove(sdev, g, slot);
	}
	mutex_unlock(&sdev->mcast_mutex);
}

/**
 * sroce_mcast_members - the QPs attached to a group, for the receive path
 * @sdev: the device
 * @addr: the group's address (IPv4-mapped for IPv4)
 * @qpn: filled with the QP numbers
 *
 * Takes mcast_lock with BHs off, so any context but hard interrupt.  The
 * numbers are a snapshot: a QP may detach or be destroyed right after, so
 * the caller looks each one up (sroce_qp_get()) and skips those it does
 * not find, and a QP that attaches right after misses this datagram.
 *
 * Return: how many numbers were copied, 0 if no QP of sdev is attached.
 */
u32 sroce_mcast_members(struct sroce_dev *sdev, const struct in6_addr *addr,
			u32 qpn[SROCE_MAX_MCAST_QP_ATTACH])
{
	struct sroce_mcast_group *g;
	u32 nr = 0;

	spin_lock_bh(&sdev->mcast_lock);
	g = sroce_mcast_find(sdev, addr);
	if (g) {
		nr = g->nr;
		memcpy(qpn, g->qpn, nr * sizeof(qpn[0]));
	}
	spin_unlock_bh(&sdev->mcast_lock);
	return nr;
}

const struct ib_device_ops sroce_mcast_ops = {
	.attach_mcast = sroce_mcast_attach,
	.detach_mcast = sroce_mcast_detach,
};
