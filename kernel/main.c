// SPDX-License-Identifier: GPL-2.0
/*
 * sroce: a software RoCE v2 RDMA device over any Ethernet netdev.
 *
 * Module init and exit only.  Devices are created by "rdma link add NAME
 * type sroce netdev DEV" (the rdma-link-sroce alias loads the module on
 * demand) and removed by "rdma link delete", by the netdev going away or by
 * unloading the module.
 */
#include <linux/module.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/sroce-abi.h>

#include "core/crc32.h"
#include "debugfs.h"
#include "device.h"
#include "dp/exec.h"
#include "dp/loop.h"
#include "dp/net.h"
#include "version.h"

static struct rdma_link_ops sroce_link_ops = {
	.type = "sroce",
	.newlink = sroce_device_newlink,
};

static int __init sroce_init(void)
{
	int err;

	/* tables of the transmit path's copy-and-CRC, before any device */
	sroce_crc32_init();
	/* before debugfs, which shows its counters */
	err = sroce_loop_init();
	if (err)
		return err;
	sroce_debugfs_init();
	err = sroce_exec_init();
	if (err)
		goto err_debugfs;
	err = sroce_net_init();
	if (err)
		goto err_exec;
	err = sroce_device_init();
	if (err)
		goto err_net;
	rdma_link_register(&sroce_link_ops);
	pr_info("loaded, version %s (git %s)\n", SROCE_VERSION, SROCE_GIT);
	return 0;

err_net:
	sroce_net_cleanup();
err_exec:
	sroce_exec_exit();
err_debugfs:
	sroce_debugfs_exit();
	sroce_loop_exit();
	return err;
}

/*
 * No new device can appear once the link type is gone; unregistering the
 * driver then removes every device and waits until each one, including those
 * queued by a netdev unregistration, is fully freed.  Only after that may the
 * netdev notifier go.
 */
static void __exit sroce_exit(void)
{
	rdma_link_unregister(&sroce_link_ops);
	ib_unregister_driver(SROCE_DRIVER_ID);
	sroce_device_exit();
	sroce_net_cleanup();
	sroce_exec_exit();
	sroce_debugfs_exit();
	sroce_loop_exit();
	pr_info("unloaded\n");
}

module_init(sroce_init);
module_exit(sroce_exit);

MODULE_DESCRIPTION("Software RoCE v2 RDMA device over Ethernet");
MODULE_LICENSE("GPL");
MODULE_VERSION(SROCE_VERSION);
MODULE_ALIAS_RDMA_LINK("sroce");
