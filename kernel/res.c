// SPDX-License-Identifier: GPL-2.0
/*
 * Driver details of a QP for "rdma res show qp -dd" and for
 * /sys/kernel/debug/sroce/qps: the engine's
 * sequence numbers, queue positions and timers, so a stuck connection can
 * be diagnosed from the command line.  The values are a snapshot read
 * without the QP's mutex (a stuck engine may hold it); they are
 * individually consistent words, not one consistent state.
 */
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <net/netlink.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>

#include "qp.h"
#include "res.h"

struct sroce_res_field {
	const char *name;
	u32 value;
};

#define SROCE_RES_FIELDS 22

/* The snapshot, shared by netlink and debugfs. */
static void sroce_res_snapshot(struct sroce_qp *qp,
			       struct sroce_res_field *f)
{
	const struct sroce_req *req = &qp->req;
	const struct sroce_resp *resp = &qp->resp;
	const struct sroce_res_field v[SROCE_RES_FIELDS] = {
		{ "sq_comp", READ_ONCE(req->comp) },
		{ "sq_cur", READ_ONCE(req->cur) },
		{ "sq_fetched", READ_ONCE(req->fetched) },
		{ "sq_producer", sroce_queue_peer_producer(&qp->sq) },
		{ "req_psn", READ_ONCE(req->psn) },
		{ "req_una", READ_ONCE(req->una) },
		{ "req_snd_max", READ_ONCE(req->snd_max) },
		{ "req_rd_atomic", READ_ONCE(req->rd_atomic) },
		{ "req_retry_left", READ_ONCE(req->retry_left) },
		{ "req_backoff", READ_ONCE(req->backoff) },
		{ "req_rnr_left", READ_ONCE(req->rnr_left) },
		{ "req_rnr_wait", READ_ONCE(req->rnr_wait) },
		{ "req_timer", timer_pending(&req->retrans_timer) },
		{ "resp_epsn", READ_ONCE(resp->st.epsn) },
		{ "resp_nak_sent", READ_ONCE(resp->st.nak_sent) },
		{ "resp_msn", READ_ONCE(resp->msn) },
		{ "rq_cons", READ_ONCE(resp->rq_cons) },
		/* no RQ of its own on a QP that uses an SRQ */
		{ "rq_producer", qp->rq.hdr ?
				 sroce_queue_peer_producer(&qp->rq) : 0 },
		{ "rd_pkts", READ_ONCE(resp->rd_pkts) },
		{ "rxq", skb_queue_len(&qp->rxq) },
		{ "tx_inflight", atomic_read(&qp->tx_inflight) },
		{ "events", (u32)READ_ONCE(qp->events) },
	};

	memcpy(f, v, sizeof(v));
}

int sroce_res_fill_qp(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct sroce_res_field f[SROCE_RES_FIELDS];
	struct nlattr *table;
	unsigned int i;

	sroce_res_snapshot(to_sroce_qp(ibqp), f);
	/* the rdma tool prints driver attributes found in this nest */
	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	for (i = 0; i < SROCE_RES_FIELDS; i++) {
		if (rdma_nl_put_driver_u32(msg, f[i].name, f[i].value)) {
			nla_nest_cancel(msg, table);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, table);
	return 0;
}

static DEFINE_MUTEX(sroce_res_lock);
static LIST_HEAD(sroce_res_qps);

void sroce_res_add_qp(struct sroce_qp *qp)
{
	mutex_lock(&sroce_res_lock);
	list_add_tail(&qp->res_node, &sroce_res_qps);
	mutex_unlock(&sroce_res_lock);
}

void sroce_res_del_qp(struct sroce_qp *qp)
{
	mutex_lock(&sroce_res_lock);
	list_del(&qp->res_node);
	mutex_unlock(&sroce_res_lock);
}

/* /sys/kernel/debug/sroce/qps: one line per QP of every device. */
int sroce_res_show_qps(struct seq_file *s, void *unused)
{
	struct sroce_res_field f[SROCE_RES_FIELDS];
	struct sroce_qp *qp;
	unsigned int i;

	mutex_lock(&sroce_res_lock);
	list_for_each_entry(qp, &sroce_res_qps, res_node) {
		sroce_res_snapshot(qp, f);
		seq_printf(s, "%s qpn %u state %d", dev_name(&qp->ibqp.device->dev),
			   qp->ibqp.qp_num, READ_ONCE(qp->state));
		for (i = 0; i < SROCE_RES_FIELDS; i++)
			seq_printf(s, " %s %u", f[i].name, f[i].value);
		seq_putc(s, '\n');
	}
	mutex_unlock(&sroce_res_lock);
	return 0;
}
