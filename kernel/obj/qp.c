// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: the control path (create, modify with the IB state machine,
 * query, destroy), the shared SQ and RQ rings, and finding a QP by number.
 * RC, UC, UD, the GSI QP (QP1, for ib_core's MAD layer) and XRC's
 * initiator and target QPs (see kernel/obj/qp.h).  Work
 * requests are posted in kernel/dp/post.c and executed by the engine of
 * kernel/dp/exec.c.
 *
 * Rings.  Each QP has an SQ and an RQ ring (kernel/queue.h) of struct
 * sroce_send_wqe and struct sroce_recv_wqe slots; a user QP's rings are
 * mapped by the provider, a kernel QP's live in kernel memory only.  Slot
 * sizes are the smallest power of two that holds the requested SGEs and
 * inline bytes, and the capacities are written back rounded up.  The SQ
 * starts with SROCE_SQ_NEED_WAKEUP set: no worker runs for a new QP.  A QP
 * created with an SRQ (any type) has no RQ ring: its receive capacities
 * are ignored and reported as 0, and it takes its receive WQEs from the
 * SRQ (kernel/srq.c).  Neither has an XRC QP: an initiator only sends; a
 * target, which ib_core creates without udata on behalf of its user and
 * which nothing posts to, gets an SQ ring of one slot (the engine's code
 * stays free of missing rings) and reports capacities of 0.
 *
 * Numbers and lookup.  qp_xa maps QPNs to the QP's struct sroce_qp_ref.
 * xa_alloc() hands out the lowest free number in [SROCE_QPN_MIN,
 * SROCE_QPN_MAX] (0 and 1 are the special QPs of the verbs) and reserves
 * it with a NULL entry, which lookups do not see; the entry is stored only
 * once the QP is fully built.  The rules:
 *  - sroce_qp_get() may be called from any context (the receive path runs
 *    in softirq): xa_load() under rcu_read_lock() and
 *    refcount_inc_not_zero(), no lock.  The caller uses the QP and calls
 *    sroce_qp_put(); it must not sleep or wait for process context while
 *    holding the reference, because destroy waits for it.
 *  - destroy replaces the entry with NULL (lookups fail from then on, the
 *    number stays reserved), drops the entry's reference and waits until
 *    every holder has put its own, so ib_core frees a QP nobody uses.  The
 *    sroce_qp_ref is freed after an RCU grace period: a lookup that loaded
 *    it just before the store may still try refcount_inc_not_zero() on it.
 *  - the number is freed last, after the QP's completions still unpolled
 *    in kernel CQs are gone (sroce_cq_discard_qp()): the next QP gets the
 *    same number at once, and a kernel consumer finds a CQE's QP by number.
 *  - qp_xa's own lock serialises stores and erasures, which happen in
 *    process context only.
 *
 * Attributes.  qp->mutex serialises modify_qp and query_qp, which run in
 * process context; the transition table and the required and optional
 * attribute masks are ib_core's (ib_modify_qp_is_ok()).  Attributes are
 * checked completely before any is changed, so a refused modify changes
 * nothing.  The checks and the changes are made with the engine held off
 * as well (sroce_exec_lock(): the engine may put the QP in ERR under its
 * own lock, and reads the attributes under it).  The source GID attribute
 * of the address vector is held from the modify that sets it until it is
 * replaced or the QP is destroyed.
 */
#include <linux/etherdevice.h>
#include <linux/in.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "core/port.h"
#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "dp/exec.h"
#include "obj/cq.h"
#include "obj/mcast.h"
#include "obj/qp.h"
#include "obj/res.h"
#include "verbs.h"

#define SROCE_QPN_GSI		1
#define SROCE_QPN_MIN		2
#define SROCE_QPN_MAX		(SROCE_QPN_MIN + SROCE_MAX_QP - 1)
#define SROCE_QP_24BIT		0xffffff	/* PSNs and QPNs */
#define SROCE_QP_MAX_TIMER	31		/* 5-bit timeout and RNR timer */
#define SROCE_QP_MAX_RETRY	7		/* 3-bit retry counts */
#define SROCE_QP_ACCESS		(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC | \
				 SROCE_QP_ACCESS_PLACEMENT)

/* The uapi layouts the data path and the provider agree on. */
static_assert(sizeof(struct sroce_sge) == 16);
static_assert(sizeof(struct sroce_send_wqe) == 64);
static_assert(sizeof(struct sroce_recv_wqe) == 16);
static_assert(sizeof(struct sroce_create_qp_resp) == 48);
static_assert(offsetof(struct sroce_send_wqe, wr) == 32);
/* The largest slots fit the ring code's limit of 4 KiB. */
static_assert(sizeof(struct sroce_send_wqe) +
	      SROCE_MAX_SGE * sizeof(struct sroce_sge) <= 4096);
static_assert(sizeof(struct sroce_send_wqe) + SROCE_MAX_INLINE_DATA <= 4096);
static_assert(SROCE_QPN_MAX <= SROCE_QP_24BIT);

void sroce_qp_dev_init(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC);
	atomic64_set(&sdev->qp_serial, 0);
}

/* ib_core destroys every QP before the device is freed. */
void sroce_qp_dev_cleanup(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->qp_xa));
	xa_destroy(&sdev->qp_xa);
}

/**
 * sroce_qp_get - find a QP by number and take a reference on it
 * @sdev: the device
 * @qpn: the QP number
 *
 * Callable from any context.  See the head of the file for the rules.
 *
 * Return: the QP, or NULL if no QP has that number (any more).
 */
struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp_ref *ref;
	struct sroce_qp *qp = NULL;

	rcu_read_lock();
	ref = xa_load(&sdev->qp_xa, qpn);
	if (ref && refcount_inc_not_zero(&ref->count))
		qp = ref->qp;
	rcu_read_unlock();
	return qp;
}

/*
 * The QP with number qpn, without a reference, for filling in
 * ib_wc.qp: a kernel consumer polls completions of QPs it has not
 * destroyed, so the pointer stays valid as long as it is used.
 */
struct ib_qp *sroce_qp_find(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp_ref *ref;
	struct ib_qp *ibqp = NULL;

	rcu_read_lock();
	ref = xa_load(&sdev->qp_xa, qpn);
	if (ref)
		ibqp = &ref->qp->ibqp;
	rcu_read_unlock();
	return ibqp;
}

/* Callable from any context; the last put lets a waiting destroy proceed. */
void sroce_qp_put(struct sroce_qp *qp)
{
	struct sroce_qp_ref *ref = qp->ref;

	if (refcount_dec_and_test(&ref->count))
		complete(&ref->released);
}

/* No RQ ring of its own: see sroce_qp_has_rq(). */
static bool sroce_qp_init_shares_rq(const struct ib_qp_init_attr *init)
{
	return init->srq || init->qp_type == IB_QPT_XRC_INI ||
	       init->qp_type == IB_QPT_XRC_TGT;
}

/* log2 of the smallest slot holding a header and body bytes. */
static u32 sroce_qp_slot_shift(size_t hdr, size_t body)
{
	return order_base_2(hdr + body);
}

/*
 * Size both rings from the requested capacities and write the capacities
 * the slots really have back into cap.  Zero requests still get one slot
 * of one SGE, which keeps the ring code free of empty rings; with an SRQ
 * there is no RQ ring at all (*rq_slots 0).
 */
static void sroce_qp_size(struct ib_qp_cap *cap, bool srq, u32 *sq_slots,
			  u32 *sq_shift, u32 *rq_slots, u32 *rq_shift)
{
	size_t sge = sizeof(struct sroce_sge);
	size_t room;

	*sq_slots = roundup_pow_of_two(max(cap->max_send_wr, 1U));
	*sq_shift = sroce_qp_slot_shift(sizeof(struct sroce_send_wqe),
					max_t(size_t,
					      max(cap->max_send_sge, 1U) * sge,
					      cap->max_inline_data));
	room = BIT(*sq_shift) - sizeof(struct sroce_send_wqe);
	cap->max_send_wr = *sq_slots;
	cap->max_send_sge = min_t(size_t, room / sge, SROCE_MAX_SGE);
	cap->max_inline_data = min_t(size_t, room, SROCE_MAX_INLINE_DATA);

	if (srq) {
		*rq_slots = 0;
		*rq_shift = 0;
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		return;
	}
	*rq_slots = roundup_pow_of_two(max(cap->max_recv_wr, 1U));
	*rq_shift = sroce_qp_slot_shift(sizeof(struct sroce_recv_wqe),
					max(cap->max_recv_sge, 1U) * sge);
	room = BIT(*rq_shift) - sizeof(struct sroce_recv_wqe);
	cap->max_recv_wr = *rq_slots;
	cap->max_recv_sge = min_t(size_t, room / sge, SROCE_MAX_SGE);
}

static int sroce_qp_check_type(const struct ib_qp_init_attr *init,
			       struct ib_udata *udata)
{
	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		return 0;
	case IB_QPT_GSI:
		/* ib_core's MAD layer owns QP1; users reach it through it */
		return udata ? -EINVAL : 0;
	case IB_QPT_XRC_INI:
		/* a kernel ib_send_wr cannot name the target's XRC SRQ */
		if (!udata)
			return -EOPNOTSUPP;
		return init->xrcd ? -EINVAL : 0;
	case IB_QPT_XRC_TGT:
		/* ib_core creates it without udata, for the XRC domain */
		return init->xrcd ? 0 : -EINVAL;
	default:
		return -EOPNOTSUPP;
	}
}

/*
 * The CQs and SRQ a type needs: an XRC initiator only sends, an XRC
 * target has neither (its receives complete in the CQ of the XRC SRQ each
 * request names).
 */
static int sroce_qp_check_cqs(const struct ib_qp_init_attr *init)
{
	switch (init->qp_type) {
	case IB_QPT_XRC_INI:
		return init->send_cq && !init->srq ? 0 : -EINVAL;
	case IB_QPT_XRC_TGT:
		return 0;
	default:
		return init->send_cq && init->recv_cq ? 0 : -EINVAL;
	}
}

static int sroce_qp_check_init(const struct ib_qp_init_attr *init,
			       struct ib_udata *udata)
{
	const struct ib_qp_cap *cap = &init->cap;
	int err;

	err = sroce_qp_check_type(init, udata);
	if (err)
		return err;
	/* RSS and creation flags are not implemented. */
	if (init->rwq_ind_tbl || init->create_flags)
		return -EOPNOTSUPP;
	err = sroce_qp_check_cqs(init);
	if (err)
		return err;
	/* a target has no queues of its own: its capacities mean nothing */
	if (init->qp_type == IB_QPT_XRC_TGT)
		return 0;
	if (cap->max_send_wr > SROCE_MAX_QP_WR ||
	    cap->max_send_sge > SROCE_MAX_SGE ||
	    cap->max_inline_data > SROCE_MAX_INLINE_DATA)
		return -EINVAL;
	/* The receive capacities mean nothing with an SRQ or for XRC. */
	if (!sroce_qp_init_shares_rq(init) &&
	    (cap->max_recv_wr > SROCE_MAX_QP_WR ||
	     cap->max_recv_sge > SROCE_MAX_SGE))
		return -EINVAL;
	return 0;
}

/*
 * Reserve the QP's number, invisible to lookups until stored: the lowest
 * free one for ordinary QPs, 1 for the GSI QP (one per device and port).
 */
static int sroce_qp_reserve_qpn(struct sroce_dev *sdev, enum ib_qp_type type,
				u32 *qpn)
{
	int err;

	if (type == IB_QPT_GSI) {
		*qpn = SROCE_QPN_GSI;
		err = xa_insert(&sdev->qp_xa, SROCE_QPN_GSI, NULL, GFP_KERNEL);
		return err;
	}
	err = xa_alloc(&sdev->qp_xa, qpn, NULL,
		       XA_LIMIT(SROCE_QPN_MIN, SROCE_QPN_MAX), GFP_KERNEL);
	return err == -EBUSY ? -ENOMEM : err;
}

static int sroce_qp_create(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			   struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibqp->device);
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	struct sroce_create_qp_resp resp = {};
	struct ib_ucontext *uctx;
	u32 sq_slots, sq_shift, rq_slots, rq_shift;
	struct sroce_qp_ref *ref;
	u32 qpn;
	int err;

	err = sroce_qp_check_init(init, udata);
	if (err)
		return err;
	uctx = sroce_verbs_ucontext(udata, sizeof(resp));
	if (IS_ERR(uctx))
		return PTR_ERR(uctx);

	ref = kzalloc(sizeof(*ref), sroce_obj_gfp(udata));
	if (!ref)
		return -ENOMEM;
	refcount_set(&ref->count, 1);
	init_completion(&ref->released);
	ref->qp = qp;
	qp->ref = ref;

	err = sroce_qp_reserve_qpn(sdev, init->qp_type, &qpn);
	if (err)
		goto err_free_ref;

	/* a target's SQ ring of one slot is never posted to: 0 reported */
	if (init->qp_type == IB_QPT_XRC_TGT)
		memset(&init->cap, 0, sizeof(init->cap));
	sroce_qp_size(&init->cap, sroce_qp_init_shares_rq(init), &sq_slots,
		      &sq_shift, &rq_slots, &rq_shift);
	if (init->qp_type == IB_QPT_XRC_TGT)
		memset(&init->cap, 0, sizeof(init->cap));
	err = sroce_queue_init(&qp->sq, sq_slots, sq_shift, uctx);
	if (err)
		goto err_erase;
	if (rq_slots) {
		err = sroce_queue_init(&qp->rq, rq_slots, rq_shift, uctx);
		if (err)
			goto err_cleanup_sq;
	}
	/* No worker runs yet: the first post must ring the doorbell. */
	atomic_set(sroce_queue_flags(&qp->sq), SROCE_SQ_NEED_WAKEUP);

	ibqp->qp_num = qpn;
	qp->serial = atomic64_inc_return(&sdev->qp_serial);
	qp->cap = init->cap;
	qp->sq_sig_type = init->sq_sig_type;
	qp->xrcd = init->xrcd;
	qp->user = udata;
	mutex_init(&qp->mutex);
	qp->state = IB_QPS_RESET;
	qp->pmtu = ib_mtu_enum_to_int(IB_MTU_256);
	err = sroce_exec_qp_init(qp);
	if (err)
		goto err_mutex;

	if (udata) {
		resp.sq_mmap_key = sroce_queue_mmap_key(&qp->sq);
		resp.rq_mmap_key = rq_slots ? sroce_queue_mmap_key(&qp->rq) : 0;
		resp.sq_mmap_len = qp->sq.len;
		resp.rq_mmap_len = qp->rq.len;
		resp.qpn = qpn;
		resp.sq_slots = sq_slots;
		resp.sq_slot_shift = sq_shift;
		resp.rq_slots = rq_slots;
		resp.rq_slot_shift = rq_shift;
		resp.max_inline_data = init->cap.max_inline_data;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_exec;
	}

	/* Publish last: a lookup never sees a half-built QP. */
	err = xa_err(xa_store(&sdev->qp_xa, qpn, ref, GFP_KERNEL));
	if (err)
		goto err_exec;
	sroce_res_add_qp(qp);
	sroce_obj_get(SROCE_OBJ_QP);
	return 0;

err_exec:
	sroce_exec_quiesce(qp);
	sroce_exec_cleanup(qp);
err_mutex:
	mutex_destroy(&qp->mutex);
	sroce_queue_cleanup(&qp->rq);
err_cleanup_sq:
	sroce_queue_cleanup(&qp->sq);
err_erase:
	xa_erase(&sdev->qp_xa, qpn);
err_free_ref:
	kfree(ref);
	return err;
}

/* A kernel QP's completions nobody polled; its engine has stopped. */
static void sroce_qp_discard_cqes(struct sroce_qp *qp)
{
	struct ib_cq *send_cq = qp->ibqp.send_cq;
	struct ib_cq *recv_cq = qp->ibqp.recv_cq;

	if (send_cq)
		sroce_cq_discard_qp(to_sroce_cq(send_cq), qp->ibqp.qp_num);
	if (recv_cq && recv_cq != send_cq)
		sroce_cq_discard_qp(to_sroce_cq(recv_cq), qp->ibqp.qp_num);
}

/*
 * ib_core has stopped new verbs on the QP.  Lookups by number are cut off
 * here, the engine is stopped so it transmits nothing more (packets still
 * in the network stack are cut loose from it, kernel/dp/tx.c), and the
 * reference holders - the receive path - are waited for.  The rings then
 * go (a user ring stays mapped until the provider unmaps it, see
 * kernel/queue.c), after the netlink details have been cut off
 * (kernel/res.c).
 */
static int sroce_qp_destroy(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibqp->device);
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	struct sroce_qp_ref *ref = qp->ref;

	sroce_mcast_qp_gone(qp);
	/* an allocating xarray keeps a NULL entry reserved: no lookup, no reuse */
	xa_store(&sdev->qp_xa, ibqp->qp_num, NULL, GFP_KERNEL);
	sroce_res_del_qp(qp);
	sroce_exec_quiesce(qp);
	sroce_qp_put(qp);
	wait_for_completion(&ref->released);
	kfree_rcu(ref, rcu);
	sroce_exec_cleanup(qp);
	sroce_exec_forget_route(qp);
	if (!qp->user)
		sroce_qp_discard_cqes(qp);
	xa_erase(&sdev->qp_xa, ibqp->qp_num);

	sroce_queue_cleanup(&qp->rq);
	sroce_queue_cleanup(&qp->sq);
	if (qp->av.sgid_attr)
		rdma_put_gid_attr(qp->av.sgid_attr);
	/*
	 * No mutex_destroy(): 6.12's ib_core keeps the QP in its resource
	 * tracking until after this returns, and a netlink dump may still
	 * query it (sroce_qp_query() takes the mutex); kernel/res.c.
	 */
	sroce_obj_put(SROCE_OBJ_QP);
	return 0;
}

/* Attribute values, each checked only if its mask bit is set. */
static int sroce_qp_check_attr(struct sroce_qp *qp,
			       const struct ib_qp_attr *attr, int mask)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	enum sroce_mtu active;
	bool usable;

	/* Alternate paths (APM) and rate limits are not implemented. */
	if (mask & (IB_QP_ALT_PATH | IB_QP_RATE_LIMIT))
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PATH_MIG_STATE) &&
	    attr->path_mig_state != IB_MIG_MIGRATED)
		return -EOPNOTSUPP;

	if (mask & IB_QP_PATH_MTU) {
		active = sroce_mtu_from_netdev(READ_ONCE(sdev->ndev->mtu),
					       &usable);
		if (attr->path_mtu < IB_MTU_256 ||
		    attr->path_mtu > IB_MTU_4096 ||
		    (int)attr->path_mtu > (int)active)
			return -EINVAL;
	}
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > SROCE_QP_MAX_TIMER)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) &&
	    attr->min_rnr_timer > SROCE_QP_MAX_TIMER)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > SROCE_QP_MAX_RETRY)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > SROCE_QP_MAX_RETRY)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SROCE_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SROCE_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= SROCE_PKEY_TABLE_LEN)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~SROCE_QP_ACCESS))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SROCE_QP_24BIT)
		return -EINVAL;
	return 0;
}

/* The largest payload of a packet on the port now: a datagram's limit. */
u32 sroce_qp_port_mtu(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	bool usable;

	return ib_mtu_enum_to_int((enum ib_mtu)
		sroce_mtu_from_netdev(READ_ONCE(sdev->ndev->mtu), &usable));
}

/* Address vector ids, never reused: a cached route names its av by one. */
static atomic64_t sroce_qp_av_ids = ATOMIC64_INIT(0);

/**
 * sroce_qp_resolve_av - check an address vector and resolve it
 * @ibdev: the device it is for
 * @ah: the attribute (of a modify_qp or create_ah)
 * @mcast: a multicast destination is allowed (address handles of UD)
 * @av: filled in; holds a reference to the source GID attribute on success
 *
 * ib_core has already looked up the source GID attribute from the GID
 * index (failing if the entry is empty or out of range) and, for user
 * objects, resolved the destination MAC.  The MAC is only reported back by
 * queries: the IP stack resolves the next hop of every packet itself.
 *
 * Return: 0, or -EINVAL for an attribute sroce cannot send to.
 */
int sroce_qp_resolve_av(struct ib_device *ibdev, const struct rdma_ah_attr *ah,
			bool mcast, struct sroce_qp_av *av)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid;
	bool dst_mcast;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH) ||
	    rdma_ah_get_port_num(ah) != 1)
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	sgid = grh->sgid_attr;
	if (!sgid || sgid->device != ibdev || sgid->port_num != 1 ||
	    sgid->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	/* Both ends speak the same IP version. */
	memcpy(&av->saddr, sgid->gid.raw, sizeof(av->saddr));
	memcpy(&av->daddr, grh->dgid.raw, sizeof(av->daddr));
	av->v4 = ipv6_addr_v4mapped(&av->saddr);
	dst_mcast = av->v4 ? ipv4_is_multicast(av->daddr.s6_addr32[3]) :
		    ipv6_addr_is_multicast(&av->daddr);
	if (av->v4 != ipv6_addr_v4mapped(&av->daddr) ||
	    ipv6_addr_any(&av->daddr) || (dst_mcast && !mcast) ||
	    (!dst_mcast && !is_valid_ether_addr(ah->roce.dmac)))
		return -EINVAL;
	ether_addr_copy(av->dmac, ah->roce.dmac);
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = grh->flow_label;

	/*
	 * The transmit path keeps the route of the av it last sent to under
	 * this id (kernel/dp/net.c): a UD QP's avs come and go with their
	 * address handles, and a new one may get a freed one's memory.
	 */
	av->id = atomic64_inc_return(&sroce_qp_av_ids);
	rdma_hold_gid_attr(sgid);
	av->sgid_attr = sgid;
	return 0;
}

/*
 * Store checked attributes.  If the address vector changes, av receives the
 * previous source GID attribute for the caller to put.
 */
static void sroce_qp_apply(struct sroce_qp *qp, const struct ib_qp_attr *attr,
			   int mask, struct sroce_qp_av *av)
{
	lockdep_assert_held(&qp->mutex);
	lockdep_assert_held(&qp->exec_lock);

	if (mask & IB_QP_PATH_MTU) {
		qp->path_mtu = attr->path_mtu;
		qp->pmtu = ib_mtu_enum_to_int(attr->path_mtu);
	}
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn & SROCE_QP_24BIT;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn & SROCE_QP_24BIT;
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		qp->port_num = attr->port_num;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;
	/* ib_core allows it only with RTS -> SQD: each drain asks anew */
	if ((mask & IB_QP_STATE) && attr->qp_state == IB_QPS_SQD &&
	    qp->state == IB_QPS_RTS)
		qp->en_sqd_async_notify = (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) &&
					  attr->en_sqd_async_notify;
	if (mask & IB_QP_AV) {
		qp->ah_attr = attr->ah_attr;
		/* The held reference lives in av, not in the query copy. */
		qp->ah_attr.grh.sgid_attr = NULL;
		swap(qp->av, *av);
	}
	/* the route depends on the addresses and, through ECMP, the flow */
	if (mask & (IB_QP_AV | IB_QP_DEST_QPN))
		sroce_exec_forget_route(qp);
	/* The engine resets, starts or flushes for the new state. */
	if (mask & IB_QP_STATE) {
		enum ib_qp_state cur = qp->state;

		WRITE_ONCE(qp->state, attr->qp_state);
		sroce_exec_modify(qp, cur, attr->qp_state);
	}
}

static int sroce_qp_modify(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			   int mask, struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	struct sroce_qp_av av = {};
	enum ib_qp_state cur, next;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	/* No request fields are defined yet: refuse any we'd ignore. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;

	mutex_lock(&qp->mutex);
	if (mask & IB_QP_AV) {
		err = sroce_qp_resolve_av(ibqp->device, &attr->ah_attr, false,
					  &av);
		if (err)
			goto out;
	}
	/*
	 * The engine may move the QP to ERR at any time: the state is
	 * checked and changed with it held off (kernel/dp/exec.c).
	 */
	sroce_exec_lock(qp);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	/* A caller's idea of the current state must be the right one. */
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask))
		err = -EINVAL;
	else
		err = sroce_qp_check_attr(qp, attr, mask);
	if (!err)
		sroce_qp_apply(qp, attr, mask, &av);
	sroce_exec_unlock(qp);
out:
	mutex_unlock(&qp->mutex);
	/* The old attribute after a change, the new one after a failure. */
	if (av.sgid_attr)
		rdma_put_gid_attr(av.sgid_attr);
	return err;
}

/* Reports every attribute as last set, whatever the mask asks for. */
static int sroce_qp_query(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			  int mask, struct ib_qp_init_attr *init)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	mutex_lock(&qp->mutex);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = qp->path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = qp->qkey;
	attr->rq_psn = qp->rq_psn;
	attr->sq_psn = qp->sq_psn;
	attr->dest_qp_num = qp->dest_qp_num;
	attr->qp_access_flags = qp->access;
	attr->cap = qp->cap;
	attr->ah_attr = qp->ah_attr;
	attr->pkey_index = qp->pkey_index;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->port_num = qp->port_num;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	attr->en_sqd_async_notify = qp->en_sqd_async_notify;
	attr->sq_draining = qp->state == IB_QPS_SQD && qp->req.draining;
	mutex_unlock(&qp->mutex);

	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->qp_type = ibqp->qp_type;
	init->xrcd = qp->xrcd;
	init->port_num = attr->port_num;
	return 0;
}

const struct ib_device_ops sroce_qp_ops = {
	.create_qp = sroce_qp_create,
	.modify_qp = sroce_qp_modify,
	.query_qp = sroce_qp_query,
	.destroy_qp = sroce_qp_destroy,
	.fill_res_qp_entry = sroce_res_fill_qp,

	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
};
