// SPDX-License-Identifier: GPL-2.0
/*
 * Driver details of a QP for "rdma res show qp -dd" and for
 * /sys/kernel/debug/sroce/qps: the engine's
 * sequence numbers, queue positions and timers, so a stuck connection can
 * be diagnosed from the command line.  The values are a snapshot read
 * without the QP's mutex (a stuck engine may hold it); they are
 * individually consistent words, not one consistent state.
 *
 * Lifetime.  ib_core may call fill_res_qp_entry while destroy_qp runs or
 * after it has returned: 6.12 drops the QP's restrack entry only after the
 * driver's destroy (6.1 from Debian drains it before), and struct sroce_qp
 * stays allocated until then, but its rings do not.  sroce_res_lock and
 * qp->res_live say whether the rings still exist: sroce_res_del_qp()
 * clears res_live under the lock before destroy_qp frees anything, and
 * every snapshot is taken under the lock with res_live set.
 *
 * Privilege.  The live PSNs and ring positions would help a local user
 * forge packets for another user's connection, so, like ib_core's raw
 * data, they go only to a caller with CAP_NET_ADMIN; the rest (counts,
 * flags, timers) is shown to everyone.
 */
#include <linux/capability.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/seq_file.h>
#include <net/netlink.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>

#include "dp/exec.h"
#include "obj/qp.h"
#include "obj/res.h"

struct sroce_res_field {
	const char *name;
	u32 value;
	bool priv;		/* a live PSN or ring position */
};

#define SROCE_RES_FIELDS 22

/* Guards sroce_res_qps and every QP's res_live; see the head of the file. */
static DEFINE_MUTEX(sroce_res_lock);
static LIST_HEAD(sroce_res_qps);

/* The snapshot, shared by netlink and debugfs. */
static void sroce_res_snapshot(struct sroce_qp *qp,
			       struct sroce_res_field *f)
{
	const struct sroce_req *req = &qp->req;
	const struct sroce_resp *resp = &qp->resp;
	const struct sroce_res_field v[SROCE_RES_FIELDS] = {
		{ "sq_comp", READ_ONCE(req->comp), true },
		{ "sq_cur", READ_ONCE(req->cur), true },
		{ "sq_fetched", READ_ONCE(req->fetched), true },
		{ "sq_producer", sroce_queue_peer_producer(&qp->sq), true },
		{ "req_psn", READ_ONCE(req->psn), true },
		{ "req_una", READ_ONCE(req->una), true },
		{ "req_snd_max", READ_ONCE(req->snd_max), true },
		{ "req_rd_atomic", READ_ONCE(req->rd_atomic) },
		{ "req_retry_left", READ_ONCE(req->retry_left) },
		{ "req_backoff", READ_ONCE(req->backoff) },
		{ "req_rnr_left", READ_ONCE(req->rnr_left) },
		{ "req_rnr_wait", READ_ONCE(req->rnr_wait) },
		{ "req_timer", timer_pending(&req->retrans_timer) },
		{ "resp_epsn", READ_ONCE(resp->st.epsn), true },
		{ "resp_nak_sent", READ_ONCE(resp->st.nak_sent) },
		{ "resp_msn", READ_ONCE(resp->msn), true },
		{ "rq_cons", READ_ONCE(resp->rq_cons), true },
		/* no RQ of its own on a QP that uses an SRQ */
		{ "rq_producer", qp->rq.hdr ?
				 sroce_queue_peer_producer(&qp->rq) : 0, true },
		{ "rd_pkts", READ_ONCE(resp->rd_pkts) },
		{ "rxq", skb_queue_len(&qp->rxq) },
		{ "tx_inflight", sroce_exec_tx_inflight(qp) },
		{ "events", (u32)READ_ONCE(qp->events) },
	};

	lockdep_assert_held(&sroce_res_lock);
	memcpy(f, v, sizeof(v));
}

/*
 * ib_core's rule for raw data (netlink_capable()), which this callback
 * cannot apply itself since it does not get the request: CAP_NET_ADMIN
 * of the task asking now and of whoever opened the netlink socket.  A
 * reply to a single-object request has no socket yet.  No audit record:
 * an unprivileged dump is normal and just gets fewer fields.
 */
static bool sroce_res_privileged(const struct sk_buff *msg)
{
	const struct sock *sk = msg->sk;

	if (!ns_capable_noaudit(&init_user_ns, CAP_NET_ADMIN))
		return false;
	return !sk || !sk->sk_socket || !sk->sk_socket->file ||
	       file_ns_capable(sk->sk_socket->file, &init_user_ns,
			       CAP_NET_ADMIN);
}

/* A snapshot of qp, or false if destroy_qp has begun to free it. */
static bool sroce_res_snapshot_live(struct sroce_qp *qp,
				    struct sroce_res_field *f)
{
	bool live;

	mutex_lock(&sroce_res_lock);
	live = qp->res_live;
	if (live)
		sroce_res_snapshot(qp, f);
	mutex_unlock(&sroce_res_lock);
	return live;
}

int sroce_res_fill_qp(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct sroce_res_field f[SROCE_RES_FIELDS];
	bool priv = sroce_res_privileged(msg);
	struct nlattr *table;
	unsigned int i;

	/* a QP being destroyed is reported without the driver's details */
	if (!sroce_res_snapshot_live(to_sroce_qp(ibqp), f))
		return 0;
	/* the rdma tool prints driver attributes found in this nest */
	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	for (i = 0; i < SROCE_RES_FIELDS; i++) {
		if (f[i].priv && !priv)
			continue;
		if (rdma_nl_put_driver_u32(msg, f[i].name, f[i].value)) {
			nla_nest_cancel(msg, table);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, table);
	return 0;
}

/* create_qp, once the QP is complete: its details may be read. */
void sroce_res_add_qp(struct sroce_qp *qp)
{
	mutex_lock(&sroce_res_lock);
	list_add_tail(&qp->res_node, &sroce_res_qps);
	qp->res_live = true;
	mutex_unlock(&sroce_res_lock);
}

/* destroy_qp, before it frees anything the snapshot reads. */
void sroce_res_del_qp(struct sroce_qp *qp)
{
	mutex_lock(&sroce_res_lock);
	list_del(&qp->res_node);
	qp->res_live = false;
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
