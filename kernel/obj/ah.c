// SPDX-License-Identifier: GPL-2.0
/*
 * Address handles: where a UD work request sends its datagram.
 *
 * create_ah resolves the attribute once, with the same checks a connected
 * QP's address vector gets (sroce_qp_resolve_av(); multicast destinations
 * allowed), into a struct sroce_ah_dest, and numbers it in the device's
 * ah_xa.  A user's UD WQE names the AH by that number (the provider learns
 * it from the create response); a kernel consumer's WR carries the ib_ah,
 * and post_send writes its number into the WQE the same way.  The requester
 * looks the number up when it fetches the WQE (sroce_ah_get()), checks the
 * protection domain and keeps a reference until the datagram is built.
 *
 * Contexts: ib_core may create and destroy kernel AHs in atomic context
 * (without RDMA_CREATE_AH_SLEEPABLE), and lookups run in the QPs' work
 * items, so ah_xa is taken with interrupts saved and the destination is
 * freed after an RCU grace period by its last user.
 */
#include <linux/etherdevice.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "obj/ah.h"
#include "verbs.h"

static_assert(sizeof(struct sroce_create_ah_resp) == 8);

void sroce_ah_dev_init(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
}

/* ib_core destroys every AH before the device is freed. */
void sroce_ah_dev_cleanup(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->ah_xa));
	xa_destroy(&sdev->ah_xa);
}

/**
 * sroce_ah_get - the destination of AH number ahn, with a reference
 * @sdev: the device
 * @ahn: the number the WQE names
 * @pd: the sending QP's protection domain, which the AH must share
 *
 * Callable from any context.  Return: the destination, or NULL if there is
 * no such AH (any more) or it belongs to another protection domain.
 */
struct sroce_ah_dest *sroce_ah_get(struct sroce_dev *sdev, u32 ahn,
				   const struct ib_pd *pd)
{
	struct sroce_ah_dest *dest;

	rcu_read_lock();
	dest = xa_load(&sdev->ah_xa, ahn);
	if (dest && (dest->pd != pd || !refcount_inc_not_zero(&dest->count)))
		dest = NULL;
	rcu_read_unlock();
	return dest;
}

/* Callable from any context: putting a GID attribute never sleeps. */
void sroce_ah_put(struct sroce_ah_dest *dest)
{
	if (!refcount_dec_and_test(&dest->count))
		return;
	rdma_put_gid_attr(dest->av.sgid_attr);
	kfree_rcu(dest, rcu);
	sroce_obj_put(SROCE_OBJ_AH_DEST);
}

static int sroce_ah_number(struct sroce_dev *sdev, struct sroce_ah *ah,
			   gfp_t gfp)
{
	unsigned long flags;
	int err;

	xa_lock_irqsave(&sdev->ah_xa, flags);
	err = __xa_alloc(&sdev->ah_xa, &ah->ahn, ah->dest,
			 XA_LIMIT(1, SROCE_MAX_AH), gfp);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	return err == -EBUSY ? -ENOMEM : err;
}

static void sroce_ah_unnumber(struct sroce_dev *sdev, struct sroce_ah *ah)
{
	unsigned long flags;

	xa_lock_irqsave(&sdev->ah_xa, flags);
	__xa_erase(&sdev->ah_xa, ah->ahn);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
}

static int sroce_ah_create(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			   struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibah->device);
	gfp_t gfp = init->flags & RDMA_CREATE_AH_SLEEPABLE ?
		    GFP_KERNEL : GFP_ATOMIC;
	struct sroce_ah *ah = to_sroce_ah(ibah);
	struct sroce_create_ah_resp resp = {};
	int err;

	if (udata) {
		err = sroce_verbs_check_udata(udata, sizeof(resp));
		if (err)
			return err;
	}
	ah->dest = kzalloc(sizeof(*ah->dest), gfp);
	if (!ah->dest)
		return -ENOMEM;
	err = sroce_qp_resolve_av(ibah->device, init->ah_attr, true,
				  &ah->dest->av);
	if (err)
		goto err_free;
	refcount_set(&ah->dest->count, 1);
	ah->dest->pd = ibah->pd;

	err = sroce_ah_number(sdev, ah, gfp);
	if (err)
		goto err_put_gid;
	if (udata) {
		resp.ahn = ah->ahn;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	sroce_obj_get(SROCE_OBJ_AH);
	sroce_obj_get(SROCE_OBJ_AH_DEST);
	return 0;

err_erase:
	sroce_ah_unnumber(sdev, ah);
err_put_gid:
	rdma_put_gid_attr(ah->dest->av.sgid_attr);
err_free:
	kfree(ah->dest);
	return err;
}

static int sroce_ah_query(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	const struct sroce_qp_av *av = &to_sroce_ah(ibah)->dest->av;
	union ib_gid dgid;

	memcpy(dgid.raw, &av->daddr, sizeof(dgid.raw));
	memset(attr, 0, sizeof(*attr));
	attr->type = ibah->type;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_grh(attr, &dgid, av->flow_label,
			av->sgid_attr->index, av->hop_limit,
			av->traffic_class);
	ether_addr_copy(attr->roce.dmac, av->dmac);
	return 0;
}

/* Send WQEs still holding the destination keep it until they are done. */
static int sroce_ah_destroy(struct ib_ah *ibah, u32 flags)
{
	struct sroce_dev *sdev = to_sroce_dev(ibah->device);
	struct sroce_ah *ah = to_sroce_ah(ibah);

	sroce_ah_unnumber(sdev, ah);
	sroce_ah_put(ah->dest);
	sroce_obj_put(SROCE_OBJ_AH);
	return 0;
}

const struct ib_device_ops sroce_ah_ops = {
	.create_ah = sroce_ah_create,
	.create_user_ah = sroce_ah_create,
	.query_ah = sroce_ah_query,
	.destroy_ah = sroce_ah_destroy,

	INIT_RDMA_OBJ_SIZE(ib_ah, sroce_ah, ibah),
};
