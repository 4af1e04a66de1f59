// SPDX-License-Identifier: GPL-2.0
/*
 * Per-device counters: what each port's hw_counters directory and
 * "rdma statistic show link DEV/1" list (ib_core's hw-stats interface), and
 * the sums over all devices that debugfs's rx_drops and tx_errors show.
 *
 * The data path counts with the inline helpers of stats.h into per-CPU
 * copies (struct sroce_stats), which readers sum.  A device's counters
 * live from its creation to dealloc_driver; there they are folded into
 * the module's totals of devices gone, so that the debugfs sums never go
 * back.  stats_mutex guards the list of devices and those totals.
 */
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <rdma/ib_verbs.h>

#include "stats.h"

#define SROCE_DROP_PREFIX "rx_drop_"
#define SROCE_TX_ERR_PREFIX "tx_err_"

#define SROCE_DROP_DESC(why, str) \
	[SROCE_STAT_DROP + (why)].name = SROCE_DROP_PREFIX str
#define SROCE_TX_ERR_DESC(why, str) \
	[SROCE_STAT_TX_ERROR + (why)].name = SROCE_TX_ERR_PREFIX str

/* The names of rdma_rxe's counters where sroce's mean the same. */
static const struct rdma_stat_desc sroce_stats_descs[] = {
	[SROCE_STAT_SENT_PKTS].name = "sent_pkts",
	[SROCE_STAT_RCVD_PKTS].name = "rcvd_pkts",
	[SROCE_STAT_SENT_BYTES].name = "sent_bytes",
	[SROCE_STAT_RCVD_BYTES].name = "rcvd_bytes",
	[SROCE_STAT_RDMA_SENDS].name = "rdma_sends",
	[SROCE_STAT_RDMA_RECVS].name = "rdma_recvs",
	[SROCE_STAT_DUP_REQ].name = "duplicate_request",
	[SROCE_STAT_OUT_OF_SEQ_REQ].name = "out_of_seq_request",
	[SROCE_STAT_RCVD_RNR].name = "rcvd_rnr_err",
	[SROCE_STAT_SEND_RNR].name = "send_rnr_err",
	[SROCE_STAT_RCVD_SEQ_ERR].name = "rcvd_seq_err",
	[SROCE_STAT_RETRY_EXCEEDED].name = "retry_exceeded_err",
	[SROCE_STAT_RNR_RETRY_EXCEEDED].name = "retry_rnr_exceeded_err",
	[SROCE_STAT_COMP_RETRY].name = "completer_retry_err",
	[SROCE_STAT_SEND_ERR].name = "send_err",
	[SROCE_STAT_LINK_DOWNED].name = "link_downed",
	[SROCE_STAT_REQ_ACCESS_ERR].name = "req_remote_access_errors",
	[SROCE_STAT_RESP_ACCESS_ERR].name = "resp_remote_access_errors",
	[SROCE_STAT_SQ_POLL].name = "sq_poll_handoffs",
	SROCE_DROP_DESC(SROCE_DROP_NO_QP, "no_qp"),
	SROCE_DROP_DESC(SROCE_DROP_RUNT, "runt"),
	SROCE_DROP_DESC(SROCE_DROP_IP, "unsupported_ip"),
	SROCE_DROP_DESC(SROCE_DROP_ICRC, "bad_icrc"),
	SROCE_DROP_DESC(SROCE_DROP_MALFORMED, "malformed"),
	SROCE_DROP_DESC(SROCE_DROP_QP_STATE, "qp_state"),
	SROCE_DROP_DESC(SROCE_DROP_TRANSPORT, "wrong_transport"),
	SROCE_DROP_DESC(SROCE_DROP_STALE, "stale"),
	SROCE_DROP_DESC(SROCE_DROP_NO_MEM, "no_mem"),
	SROCE_DROP_DESC(SROCE_DROP_QKEY, "bad_qkey"),
	SROCE_DROP_DESC(SROCE_DROP_NO_RECV, "no_recv_wqe"),
	SROCE_DROP_DESC(SROCE_DROP_LOST_MSG, "lost_message"),
	SROCE_DROP_DESC(SROCE_DROP_NO_MCAST, "no_mcast_group"),
	SROCE_DROP_DESC(SROCE_DROP_BCAST, "bcast"),
	SROCE_DROP_DESC(SROCE_DROP_MCAST_CONN, "mcast_to_rc_uc"),
	SROCE_DROP_DESC(SROCE_DROP_BAD_SRC, "bad_src_addr"),
	SROCE_DROP_DESC(SROCE_DROP_BAD_DST, "bad_dst_addr"),
	SROCE_DROP_DESC(SROCE_DROP_RX_BACKLOG, "rx_backlog"),
	SROCE_TX_ERR_DESC(SROCE_TX_NO_ROUTE, "no_route"),
	SROCE_TX_ERR_DESC(SROCE_TX_NO_MEM, "no_mem"),
	SROCE_TX_ERR_DESC(SROCE_TX_DROPPED, "dropped"),
	SROCE_TX_ERR_DESC(SROCE_TX_BAD_SKB, "bad_skb"),
};

static_assert(ARRAY_SIZE(sroce_stats_descs) == SROCE_STATS);

static DEFINE_MUTEX(stats_mutex);
static LIST_HEAD(stats_devices);
static u64 stats_gone[SROCE_STATS];
/* datagrams for no device (SROCE_DROP_NO_DEVICE) */
static DEFINE_PER_CPU(u64, stats_no_device);

void sroce_stats_no_device_drop(void)
{
	this_cpu_inc(stats_no_device);
}

/* A drop reason's name: its rx_drop_ counter's without the prefix. */
const char *sroce_stats_drop_name(unsigned int why)
{
	if (why < SROCE_DROP_DEV_REASONS)
		return sroce_stats_descs[SROCE_STAT_DROP + why].name +
		       strlen(SROCE_DROP_PREFIX);
	return why == SROCE_DROP_NO_DEVICE ? "no_device" : "?";
}

/* Add the per-CPU counters pc, summed over the CPUs, to sum. */
static void sroce_stats_sum_percpu(const struct sroce_stats __percpu *pc,
				   u64 *sum)
{
	const struct sroce_stats *c;
	int cpu, i;

	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(pc, cpu);
		for (i = 0; i < SROCE_STATS; i++)
			sum[i] += READ_ONCE(c->count[i]);
	}
}

/* Add the device's counters, summed over the CPUs, to sum. */
static void sroce_stats_sum(struct sroce_dev *sdev, u64 *sum)
{
	sroce_stats_sum_percpu(sdev->stats, sum);
}

int sroce_stats_dev_init(struct sroce_dev *sdev)
{
	sdev->stats = alloc_percpu(struct sroce_stats);
	if (!sdev->stats)
		return -ENOMEM;
	mutex_lock(&stats_mutex);
	list_add_tail(&sdev->stats_node, &stats_devices);
	mutex_unlock(&stats_mutex);
	return 0;
}

/* dealloc_driver: nothing counts any more; keep the counts for debugfs. */
void sroce_stats_dev_cleanup(struct sroce_dev *sdev)
{
	if (!sdev->stats)
		return;
	mutex_lock(&stats_mutex);
	list_del(&sdev->stats_node);
	sroce_stats_sum(sdev, stats_gone);
	mutex_unlock(&stats_mutex);
	free_percpu(sdev->stats);
	sdev->stats = NULL;
}

/* Every counter summed over all devices, present and gone. */
static void sroce_stats_sum_all(u64 *sum)
{
	struct sroce_dev *sdev;

	mutex_lock(&stats_mutex);
	memcpy(sum, stats_gone, sizeof(stats_gone));
	list_for_each_entry(sdev, &stats_devices, stats_node)
		sroce_stats_sum(sdev, sum);
	mutex_unlock(&stats_mutex);
}

static void sroce_stats_show_range(struct seq_file *s, const u64 *sum,
				   int first, int n, size_t prefix_len)
{
	int i;

	for (i = first; i < first + n; i++)
		seq_printf(s, "%s %llu\n",
			   sroce_stats_descs[i].name + prefix_len, sum[i]);
}

/* debugfs rx_drops: "REASON COUNT" lines, no_device included. */
void sroce_stats_show_drops(struct seq_file *s)
{
	u64 *sum, no_device = 0;
	int cpu;

	sum = kcalloc(SROCE_STATS, sizeof(*sum), GFP_KERNEL);
	if (!sum)
		return;
	sroce_stats_sum_all(sum);
	for_each_possible_cpu(cpu)
		no_device += READ_ONCE(*per_cpu_ptr(&stats_no_device, cpu));
	sroce_stats_show_range(s, sum, SROCE_STAT_DROP, SROCE_DROP_DEV_REASONS,
			       strlen(SROCE_DROP_PREFIX));
	seq_printf(s, "no_device %llu\n", no_device);
	kfree(sum);
}

/* debugfs tx_errors: "REASON COUNT" lines. */
void sroce_stats_show_tx_errors(struct seq_file *s)
{
	u64 *sum;

	sum = kcalloc(SROCE_STATS, sizeof(*sum), GFP_KERNEL);
	if (!sum)
		return;
	sroce_stats_sum_all(sum);
	sroce_stats_show_range(s, sum, SROCE_STAT_TX_ERROR, SROCE_TX_ERRORS,
			       strlen(SROCE_TX_ERR_PREFIX));
	kfree(sum);
}

/* One port, no device-wide counters: ib_core asks for port 1 only. */
static struct rdma_hw_stats *
sroce_stats_alloc_port(struct ib_device *ibdev, u32 port_num)
{
	return rdma_alloc_hw_stats_struct(sroce_stats_descs, SROCE_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* Fills every counter, whichever index was asked for. */
static int sroce_stats_get(struct ib_device *ibdev,
			   struct rdma_hw_stats *stats, u32 port, int index)
{
	struct sroce_dev *sdev = to_sroce_dev(ibdev);

	memset(stats->value, 0, sizeof(u64) * SROCE_STATS);
	sroce_stats_sum(sdev, stats->value);
	return SROCE_STATS;
}

/*
 * The counters that have a meaning per QP, the ones a QP's counter
 * ("rdma statistic qp") shows; the data path counts them with the
 * sroce_qp_stats_*() helpers of stats.h.  The others (drops before a QP is
 * known, transmit errors, link_downed) stay the device's.
 */
bool sroce_stats_per_qp(enum sroce_stat s)
{
	switch (s) {
	case SROCE_STAT_SENT_PKTS ... SROCE_STAT_COMP_RETRY:
	case SROCE_STAT_REQ_ACCESS_ERR:
	case SROCE_STAT_RESP_ACCESS_ERR:
		return true;
	default:
		return false;
	}
}

/*
 * The hw stats of a QP counter.  ib_core indexes them as the port's (it
 * adds a counter's values to the port's, index by index, and reads every
 * port index from it), so they have all the port's counters; those
 * without a per-QP meaning, always zero, are disabled so that "rdma
 * statistic qp show" does not list them.
 */
struct rdma_hw_stats *sroce_stats_alloc_counter(void)
{
	struct rdma_hw_stats *stats;
	int i;

	stats = rdma_alloc_hw_stats_struct(sroce_stats_descs, SROCE_STATS,
					   RDMA_HW_STATS_DEFAULT_LIFESPAN);
	if (!stats)
		return NULL;
	for (i = 0; i < SROCE_STATS; i++)
		if (!sroce_stats_per_qp(i))
			set_bit(i, stats->is_disabled);
	return stats;
}

/* Fill a QP counter's hw stats from its per-CPU counts (all zero if !c). */
void sroce_stats_read_counter(const struct sroce_counter *c,
			      struct rdma_hw_stats *stats)
{
	memset(stats->value, 0, sizeof(u64) * SROCE_STATS);
	if (c)
		sroce_stats_sum_percpu(c->stats, stats->value);
}

const struct ib_device_ops sroce_stats_ops = {
	.alloc_hw_port_stats = sroce_stats_alloc_port,
	.get_hw_stats = sroce_stats_get,
};
