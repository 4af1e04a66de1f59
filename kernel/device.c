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
 * Network namespaces: a device lives in its netdev's namespace (sdev->net,
 * read when it is created), where it holds the UDP endpoint (dp/net.c).  In
 * ib_core's shared mode every namespace sees every device, as with any RDMA
 * device; in exclusive mode only that namespace does (compat.h's
 * ib_alloc_device_with_net()).  "rdma dev set NAME netns NS" (exclusive
 * mode, ib_core's doing) changes only who sees the device: its packets stay
 * in its netdev's namespace.  A netdev that leaves its namespace, on its own
 * or because the namespace is deleted, is unregistered there first
 * (NETDEV_UNREGISTER), and the device goes with it; newlink checks once more
 * after registration for a move it could not have seen.
 *
 * Place in sysfs: the device stays in the virtual tree, as upstream's rxe
 * and siw do, and a "device" link leads to the netdev's bus device (virtio0,
 * a PCI function), as a hardware RDMA NIC's does, so that device/net/<netdev>,
 * numa_node and the PCI path that topology readers (UCX, NCCL) follow are
 * there.  A link, not the parent: a child of the bus device would have to
 * leave it before it is deleted (a hot-removed NIC unregisters its netdev,
 * then deletes the function at once, while the ib_device's unregistration
 * is still queued), and moving it out (device_move()) leaves the old glue
 * directory, and so the bus device, referenced for good.  A sysfs link pins
 * no device; it is made in enable_driver, before ib_core announces the device
 * (KOBJ_ADD), so udev's rules see it from the start, and dropped at the
 * netdev's unregistration.  DMA stays virtual: ib_register_device() gets no
 * DMA device.  A netdev without a parent (veth, lo, bridges, macvlan) gets
 * no link; neither do ib_core's copies of the device in other network
 * namespaces.
 */
#include <linux/device.h>
#include <linux/if_arp.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <linux/sysfs.h>
#include <rdma/ib_verbs.h>

#include "core/guid.h"
#include "debugfs.h"
#include "device.h"
#include "dp/net.h"
#include "dp/post.h"
#include "obj/ah.h"
#include "obj/counter.h"
#include "obj/cq.h"
#include "obj/mcast.h"
#include "obj/mr.h"
#include "obj/mw.h"
#include "obj/qp.h"
#include "obj/queue.h"
#include "obj/srq.h"
#include "obj/xrcd.h"
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
	sroce_counter_dev_cleanup(sdev);
	ida_destroy(&sdev->pd_ida);
	ida_destroy(&sdev->cq_ida);
	ida_destroy(&sdev->srq_ida);
	WARN_ON(!xa_empty(&sdev->xsrq_xa));
	xa_destroy(&sdev->xsrq_xa);
	if (sdev->net_held)
		sroce_net_put(sdev->net);
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
	xa_init(&sdev->xsrq_xa);
	sroce_mr_dev_init(sdev);
	sroce_qp_dev_init(sdev);
	sroce_ah_dev_init(sdev);
	sroce_mcast_dev_init(sdev);
	sroce_counter_dev_init(sdev);
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
	&sroce_xrcd_ops,
	&sroce_post_ops,
	&sroce_stats_ops,
	&sroce_counter_ops,
};

static void sroce_device_set_ops(struct ib_device *ibdev)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(sroce_device_ops); i++)
		ib_set_device_ops(ibdev, sroce_device_ops[i]);
	/* The import verbs' query methods (kernel/verbs.c). */
	ibdev->driver_def = sroce_verbs_uapi_defs;
}

/*
 * The netdev's parent (NULL if it has none) and namespace, each with a
 * reference.  They are read under RTNL while the netdev is registered: an
 * unregistered netdev no longer pins its parent, and its namespace may be
 * gone.  -ENODEV if it is not registered or its namespace is being
 * dismantled.
 */
static int sroce_device_get_env(struct net_device *ndev,
				struct device **parent, struct net **net)
{
	int err = -ENODEV;

	rtnl_lock();
	if (ndev->reg_state == NETREG_REGISTERED) {
		*net = maybe_get_net(dev_net(ndev));
		if (*net) {
			*parent = get_device(ndev->dev.parent);
			err = 0;
		}
	}
	rtnl_unlock();
	return err;
}

static int sroce_device_create(const char *name, struct net_device *ndev,
			       struct device *parent, struct net *net)
{
	struct sroce_dev *sdev;
	int err;

	sdev = ib_alloc_device_with_net(sroce_dev, ibdev, net);
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
	sdev->net = net;
	err = sroce_net_get(net);
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
	/* for enable_driver, which runs inside ib_register_device() */
	sdev->link_parent = parent;
	err = ib_register_device(&sdev->ibdev, name, NULL);
	if (err)
		goto err_dealloc;
	pr_info("%s: added on %s\n", name, ndev->name);
	return 0;

err_dealloc:
	ib_dealloc_device(&sdev->ibdev);
	return err;
}

/*
 * A netdev that moved to another namespace (or went away) while its device
 * was being registered: the netdev notifier found no device then.  Under
 * RTNL, so that a move now or later is the notifier's.
 */
static void sroce_device_recheck(struct net_device *ndev, struct net *net)
{
	struct ib_device *ibdev;

	rtnl_lock();
	ibdev = ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);
	if (ibdev && (ndev->reg_state != NETREG_REGISTERED ||
		      !net_eq(dev_net(ndev), net))) {
		sysfs_remove_link(&ibdev->dev.kobj, "device");
		ib_unregister_device_queued(ibdev);
	}
	if (ibdev)
		ib_device_put(ibdev);
	rtnl_unlock();
}

/*
 * rdma_link_ops.newlink: "rdma link add NAME type sroce netdev DEV", DEV
 * looked up in the caller's network namespace.
 */
int sroce_device_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct ib_device *other;
	struct device *parent;
	struct net *net;
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
	err = sroce_device_get_env(ndev, &parent, &net);
	if (err)
		goto out;
	err = sroce_device_create(ibdev_name, ndev, parent, net);
	if (!err)
		sroce_device_recheck(ndev, net);
	put_device(parent);
	put_net(net);
out:
	mutex_unlock(&link_mutex);
	return err;
}

/**
 * sroce_device_enable_driver - ib_device_ops.enable_driver
 * @ibdev: the device being registered, already in sysfs, not yet announced
 *
 * Makes the "device" link (see the head of this file).  The target is
 * referenced by the caller of ib_register_device() for as long as
 * registration runs, and forgotten here: ib_core calls enable_driver again
 * when the device changes network namespace, long after that reference is
 * gone.  A link that cannot be made is no reason to refuse the device.
 */
int sroce_device_enable_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sroce_dev(ibdev);
	struct device *parent = sdev->link_parent;
	int err;

	sdev->link_parent = NULL;
	if (!parent)
		return 0;
	err = sysfs_create_link(&ibdev->dev.kobj, &parent->kobj, "device");
	if (err)
		dev_warn(&ibdev->dev, "no device link to %s: %d\n",
			 dev_name(parent), err);
	return 0;
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
		/* the bus device may be deleted as soon as this returns */
		sysfs_remove_link(&ibdev->dev.kobj, "device");
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
