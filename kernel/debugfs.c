// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/sroce: object counts and QP state for tests and
 * debugging, and the drop and transmit error counters of all devices summed
 * (stats.c; each device's own are its port's hw_counters).  Debugfs is
 * optional; when it is missing or locked down the counters still count, they
 * are only not visible here.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "debugfs.h"
#include "dp/loop.h"
#include "obj/res.h"
#include "stats.h"

atomic_t sroce_objs[SROCE_OBJ_KINDS];

static const char *const obj_names[SROCE_OBJ_KINDS] = {
	[SROCE_OBJ_DEVICE] = "devices",
	[SROCE_OBJ_UCONTEXT] = "ucontexts",
	[SROCE_OBJ_PD] = "pds",
	[SROCE_OBJ_UDP_SOCKET] = "udp_sockets",
	[SROCE_OBJ_CQ] = "cqs",
	[SROCE_OBJ_RING] = "rings",
	[SROCE_OBJ_MR] = "mrs",
	[SROCE_OBJ_QP] = "qps",
	[SROCE_OBJ_AH] = "ahs",
	[SROCE_OBJ_AH_DEST] = "ah_dests",
	[SROCE_OBJ_MCAST] = "mcast_groups",
	[SROCE_OBJ_SRQ] = "srqs",
	[SROCE_OBJ_MW] = "mws",
	[SROCE_OBJ_XRCD] = "xrcds",
};

static struct dentry *sroce_dir;

static int qps_show(struct seq_file *s, void *unused)
{
	return sroce_res_show_qps(s, unused);
}
DEFINE_SHOW_ATTRIBUTE(qps);

static int objects_show(struct seq_file *s, void *unused)
{
	int i;

	for (i = 0; i < SROCE_OBJ_KINDS; i++)
		seq_printf(s, "%s %d\n", obj_names[i], atomic_read(&sroce_objs[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(objects);

static int rx_drops_show(struct seq_file *s, void *unused)
{
	sroce_stats_show_drops(s);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rx_drops);

static int tx_errors_show(struct seq_file *s, void *unused)
{
	sroce_stats_show_tx_errors(s);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tx_errors);

void sroce_debugfs_init(void)
{
	sroce_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("objects", 0444, sroce_dir, NULL, &objects_fops);
	debugfs_create_file("rx_drops", 0444, sroce_dir, NULL, &rx_drops_fops);
	debugfs_create_file("tx_errors", 0444, sroce_dir, NULL, &tx_errors_fops);
	debugfs_create_file("qps", 0444, sroce_dir, NULL, &qps_fops);
	sroce_loop_debugfs(sroce_dir);
}

void sroce_debugfs_exit(void)
{
	debugfs_remove(sroce_dir);
}
