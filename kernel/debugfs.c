// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/sroce: object and drop counters for tests and debugging.
 * Debugfs is optional; when it is missing or locked down the counters still
 * count, they are only not visible.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "debugfs.h"
#include "dp/loop.h"
#include "obj/res.h"

atomic_t sroce_objs[SROCE_OBJ_KINDS];
atomic64_t sroce_drops[SROCE_DROP_REASONS];
atomic64_t sroce_tx_errors[SROCE_TX_ERRORS];

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
};

static const char *const drop_names[SROCE_DROP_REASONS] = {
	[SROCE_DROP_NO_QP] = "no_qp",
	[SROCE_DROP_NO_DEVICE] = "no_device",
	[SROCE_DROP_RUNT] = "runt",
	[SROCE_DROP_IP] = "unsupported_ip",
	[SROCE_DROP_ICRC] = "bad_icrc",
	[SROCE_DROP_MALFORMED] = "malformed",
	[SROCE_DROP_QP_STATE] = "qp_state",
	[SROCE_DROP_TRANSPORT] = "wrong_transport",
	[SROCE_DROP_STALE] = "stale",
	[SROCE_DROP_NO_MEM] = "no_mem",
	[SROCE_DROP_QKEY] = "bad_qkey",
	[SROCE_DROP_NO_RECV] = "no_recv_wqe",
	[SROCE_DROP_LOST_MSG] = "lost_message",
	[SROCE_DROP_NO_MCAST] = "no_mcast_group",
	[SROCE_DROP_BCAST] = "bcast",
	[SROCE_DROP_MCAST_CONN] = "mcast_to_rc_uc",
	[SROCE_DROP_BAD_SRC] = "bad_src_addr",
	[SROCE_DROP_BAD_DST] = "bad_dst_addr",
	[SROCE_DROP_RX_BACKLOG] = "rx_backlog",
};

static const char *const tx_error_names[SROCE_TX_ERRORS] = {
	[SROCE_TX_NO_ROUTE] = "no_route",
	[SROCE_TX_NO_MEM] = "no_mem",
	[SROCE_TX_DROPPED] = "dropped",
	[SROCE_TX_BAD_SKB] = "bad_skb",
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

static void show_counters(struct seq_file *s, const char *const *names,
			  const atomic64_t *counts, int n)
{
	int i;

	for (i = 0; i < n; i++)
		seq_printf(s, "%s %lld\n", names[i],
			   (long long)atomic64_read(&counts[i]));
}

static int rx_drops_show(struct seq_file *s, void *unused)
{
	show_counters(s, drop_names, sroce_drops, SROCE_DROP_REASONS);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rx_drops);

static int tx_errors_show(struct seq_file *s, void *unused)
{
	show_counters(s, tx_error_names, sroce_tx_errors, SROCE_TX_ERRORS);
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
