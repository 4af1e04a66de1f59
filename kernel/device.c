// SPDX-License-Identifier: GPL-2.0
/*
 * Device lifetime: creation by "rdma link add", removal by "rdma link delete",
 * netdev unregistration or module unload, and port state that follows the
 * netdev.
 *
 * Locking:
 *  - link_mutex serialises newlink, so that the one-device-per-netdev check
 *    and the registration that makes the device visible are atomic.  It is
 *    held across ib_register_device(), which takes RTNL, so it must never be
 *    taken under RTNL: the netdev notifier does not take it.
 *  - The netdev notifier runs under RTNL and finds devices through ib_core's
 *    netdev index (ib_device_get_by_netdev), which holds a device reference
 *    for the duration of the event.
 *  - port_state is updated with xchg(), so the event for a transition is
 *    dispatched once whichever context notices it.
 *
 * Place in the device tree: the netdev's bus device (virtio0, a PCI function)
 * is the ib_device's parent, as for a hardware RDMA NIC, so that device/
 * leads to the NIC with device/net/<netdev>, numa_node and the PCI path that
 * topology readers (UCX, NCCL, hwloc) follow.  It is a place in sysfs only:
 * DMA stays virtual, as ib_register_device() gets no DMA device and ib_core
 * derives none from dev.parent (6.1 and 6.12 alike).  A netdev without a
 * parent (veth, lo, bridges, macvlan) leaves the device virtual.  The netdev
 * itself is never the parent: its device is deleted under RTNL, before the
 * queued unregistration can take the ib_device out of it.
 */
#include <linux/device.h>
#include <linux/if_arp.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "core/guid.h"
#include "debugfs.h"
#include "device.h"
#include "dp/net.h"
#include "dp/post.h"
#include "obj/ah.h"
#include "obj/cq.h"
#include "obj/mcast.h"
#include "obj/mr.h"
#include "obj/mw.h"
#include "obj/qp.h"
#include "obj/queue.h"
#include "obj/srq.h"
#include "stats.h"
#include "verbs.h"

static DEFINE_MUTEX(link_mutex);

struct sroce_port_status sroce_device_port_status(struct sroce_dev *sdev)
{
	struct net_device *ndev = sdev->ndev;

	return sroce_port_evaluate(netif_running(ndev), netif_carrier_ok(ndev),
				   READ_ONCE(ndev->mtu));
}

/* Announce a port state change to ib_core and its clients (and userspace). */
static void sroce_device_port_sync(struct sroce_dev *sdev)
{
	int state = sroce_device_port_status(sdev).state;
	struct ib_event event = {
		.device = &sdev->ibdev,
		.element.port_num = 1,
	};
	int old;

	old = xchg(&sdev->port_state, state);
	if (old == state)
		return;
	if (old == SROCE_PORT_ACTIVE)
		sroce_stats_inc(sdev, SROCE_STAT_LINK_DOWNED);
	event.event = state == SROCE_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
						   IB_EVENT_PORT_ERR;
	ib_dispatch_event(&event);
}

/*
 * Called by ib_core when the device is freed, after every op has returned,
 * and by ib_dealloc_device() on a failed creation: it releases only what was
 * taken.
 */
void sroce_device_dealloc_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sroce_dev(ibdev);

	sroce_qp_dev_cleanup(sdev);
	sroce_ah_dev_cleanup(sdev);
	sroce_mcast_dev_cleanup(sdev);
	sroce_mr_dev_cleanup(sdev);
	ida_destroy(&sdev->pd_ida);
	ida_destroy(&sdev->cq_ida);
	ida_destroy(&sdev->srq_ida);
	if (sdev->net_held)
		sroce_net_put();
	if (sdev->ndev)
		netdev_put(sdev->ndev, &sdev->ndev_tracker);
	sroce_stats_dev_cleanup(sdev);
	sroce_obj_put(SROCE_OBJ_DEVICE);
}

static void sroce_device_init_ibdev(struct sroce_dev *sdev,
				    struct net_device *ndev)
{
	struct ib_device *ibdev = &sdev->ibdev;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = 0;
	sroce_guid_from_mac((u8 *)&ibdev->node_guid, ndev->dev_addr);
	snprintf(ibdev->node_desc, sizeof(ibdev->node_desc), "sroce %s",
		 ndev->name);
	ida_init(&sdev->pd_ida);
	ida_init(&sdev->cq_ida);
	ida_init(&sdev->srq_ida);
	sroce_mr_dev_init(sdev);
	sroce_qp_dev_init(sdev);
	sroce_ah_dev_init(sdev);
	sroce_mcast_dev_init(sdev);
	/*
	 * The provider's doorbells are the POST_SEND and POST_RECV write
	 * commands, which ib_core leaves disabled unless the driver asks.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV);
	sdev->port_state = SROCE_PORT_DOWN;
}

/* Each object type, and posting (kernel/dp/post.c), contributes its own ops. */
static const struct ib_device_ops *const sroce_device_ops[] = {
	&sroce_verbs_ops,
	&sroce_queue_ops,
	&sroce_cq_ops,
	&sroce_mr_ops,
	&sroce_mw_ops,
	&sroce_qp_ops,
	&sroce_ah_ops,
	&sroce_mcast_ops,
	&sroce_srq_ops,
	&sroce_post_ops,
	&sroce_stats_ops,
};

static void sroce_device_set_ops(struct ib_device *ibdev)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(sroce_device_ops); i++)
		ib_set_device_ops(ibdev, sroce_device_ops[i]);
}

/*
 * The netdev's parent with a reference, or NULL if it has none.  It is read
 * under RTNL while the netdev is registered: an unregistered netdev no longer
 * pins its parent.
 */
static struct device *sroce_device_get_parent(struct net_device *ndev)
{
	struct device *parent = NULL;

	rtnl_lock();
	if (ndev->reg_state == NETREG_REGISTERED)
		parent = get_device(ndev->dev.parent);
	rtnl_unlock();
	return parent;
}

static int sroce_device_create(const char *name, struct net_device *ndev,
			       struct device *parent)
{
	struct sroce_dev *sdev;
	int err;

	sdev = ib_alloc_device(sroce_dev, ibdev);
	if (!sdev)
		return -ENOMEM;
	sroce_device_init_ibdev(sdev, ndev);
	/* From here on, ib_dealloc_device() calls dealloc_driver. */
	sroce_device_set_ops(&sdev->ibdev);
	sroce_obj_get(SROCE_OBJ_DEVICE);
	sdev->ndev = ndev;
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);

	err = sroce_stats_dev_init(sdev);
	if (err)
		goto err_dealloc;
	err = sroce_net_get();
	if (err)
		goto err_dealloc;
	sdev->net_held = true;

	err = ib_device_set_netdev(&sdev->ibdev, ndev, 1);
	if (err)
		goto err_dealloc;
	ib_mark_name_assigned_by_user(&sdev->ibdev);

	/*
	 * The initial state is taken before registration: once registered,
	 * a concurrent netdev unregistration may free the device at any time,
	 * so it is not touched again here.  query_port always reads the live
	 * state; only the event for a change during registration is lost.
	 */
	sdev->port_state = sroce_device_port_status(sdev).state;
	/* device_add() takes its own reference to the parent. */
	sdev->ibdev.dev.parent = parent;
	err = ib_register_device(&sdev->ibdev, name, NULL);
	if (err)
		goto err_dealloc;
	pr_info("%s: added on %s\n", name, ndev->name);
	return 0;

err_dealloc:
	ib_dealloc_device(&sdev->ibdev);
	return err;
}

/* rdma_link_ops.newlink: "rdma link add NAME type sroce netdev DEV". */
int sroce_device_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct ib_device *other;
	struct device *parent;
	int err;

	if (ndev->type != ARPHRD_ETHER) {
		pr_err("cannot add %s: %s is not an Ethernet device\n",
		       ibdev_name, ndev->name);
		return -EINVAL;
	}

	mutex_lock(&link_mutex);
	other = ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);
	if (other) {
		pr_err("cannot add %s: %s already has sroce device %s\n",
		       ibdev_name, ndev->name, dev_name(&other->dev));
		ib_device_put(other);
		err = -EEXIST;
		goto out;
	}
	parent = sroce_device_get_parent(ndev);
	err = sroce_device_create(ibdev_name, ndev, parent);
	put_device(parent);
out:
	mutex_unlock(&link_mutex);
	return err;
}

static void sroce_device_move_out(struct device *dev)
{
	int err;

	err = device_move(dev, NULL, DPM_ORDER_NONE);
	if (err)
		dev_warn(dev, "cannot leave %s's tree: %d\n",
			 dev_name(dev->parent), err);
}

/*
 * Moves the device, and its copies in other network namespaces, out of its
 * parent into the virtual tree.  For NETDEV_UNREGISTER: the device is
 * unregistered later by a work item, but the parent may be deleted as soon
 * as the notifier returns (a PCI function's removal unregisters its netdev,
 * then deletes the function), and a child left in a deleted parent's sysfs
 * directory warns when it is deleted in turn.  Runs under RTNL; device_move()
 * takes the device-PM list, glue-directory and kernfs locks, none of which
 * is held around an RTNL acquisition.  ib_core creates the namespace copies
 * with the device's parent under compat_devs_mutex (and takes no RTNL under
 * it), so holding that mutex across the moves lets no copy appear under the
 * old parent meanwhile.
 */
static void sroce_device_orphan(struct ib_device *ibdev)
{
	struct ib_core_device *cdev;
	unsigned long index;

	ASSERT_RTNL();
	if (!ibdev->dev.parent)
		return;
	mutex_lock(&ibdev->compat_devs_mutex);
	xa_for_each(&ibdev->compat_devs, index, cdev)
		sroce_device_move_out(&cdev->dev);
	sroce_device_move_out(&ibdev->dev);
	mutex_unlock(&ibdev->compat_devs_mutex);
}

static int sroce_device_netdev_event(struct notifier_block *nb,
				     unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);
	if (!ibdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		sroce_device_orphan(ibdev);
		/* Drops the netdev reference from the unregistration work. */
		ib_unregister_device_queued(ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_CHANGEMTU:
		sroce_device_port_sync(to_sroce_dev(ibdev));
		break;
	}
	ib_device_put(ibdev);
	return NOTIFY_OK;
}

static struct notifier_block sroce_device_netdev_nb = {
	.notifier_call = sroce_device_netdev_event,
};

int sroce_device_init(void)
{
	return register_netdevice_notifier(&sroce_device_netdev_nb);
}

void sroce_device_exit(void)
{
	unregister_netdevice_notifier(&sroce_device_netdev_nb);
}
