// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows: a remote-access key for part of an MR, bound and unbound
 * by work requests executed in SQ order (kernel/local.c).
 *
 *  - Type 1: bound with ibv_bind_mw(), which the provider turns into a bind
 *    WQE; each bind replaces the previous one and a zero-length bind
 *    unbinds.  Not invalidated by LOCAL_INV or SEND_WITH_INV.
 *  - Type 2B: bound with an IBV_WR_BIND_MW work request, only when not
 *    bound; it then serves only remote accesses arriving on the QP it was
 *    bound through, until LOCAL_INV or a peer's SEND_WITH_INV (through that
 *    QP) invalidates it.
 * The rkey's upper 24 bits are the window's index in the device's mr_xa
 * (shared with MRs, tagged SROCE_KEY_MW); each bind sets the low 8 bits the
 * consumer chose, and an access must name the key of the binding in force.
 *
 * Binding checks (IBTA 10.6.7): the window and the MR belong to the QP's
 * PD, the MR allows binds (IB_ACCESS_MW_BIND) and holds the range, the
 * window grants only remote rights (local write is accepted and ignored),
 * and remote write or atomic only on an MR with local write.  A type 2
 * window may be zero-based (IB_ZERO_BASED): remote addresses are then
 * offsets into the window instead of the MR's addresses; a type 1 window
 * may not (IBTA o10-36.2.2).  A failure completes the bind with MW_BIND_ERR.
 *
 * Lifetime and locking:
 *  - The window structure is the driver's own (struct sroce_ibmw, which
 *    ib_core frees right after dealloc_mw, only points to it) and is freed
 *    after an RCU grace period, because the data path finds it in mr_xa
 *    under rcu_read_lock() and takes a reference with
 *    refcount_inc_not_zero().  dealloc erases the index, unbinds, and waits
 *    for those references before freeing.
 *  - mw->lock guards the binding.  A bound window is counted in its MR's
 *    num_mw (sroce_mr_bind_window(), taking mr->lock inside mw->lock), which
 *    keeps dereg from freeing the MR; so a lookup holding mw->lock may take
 *    a reference on the MR.
 */
#include <linux/slab.h>

#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "obj/mw.h"
#include "obj/qp.h"
#include "verbs.h"

static_assert((int)SROCE_WC_MW_BIND_ERR == (int)IB_WC_MW_BIND_ERR);
static_assert(sizeof(((struct sroce_send_wqe *)0)->wr.bind) == 32);
static_assert(offsetof(struct sroce_send_wqe, wr.bind.new_rkey) == 56);

/* The rights a window can grant. */
#define SROCE_MW_ACCESS (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_ATOMIC)
/*
 * What a bind may ask for: zero-based addressing (type 2 only), and local
 * write, which a window cannot grant but which programs written for
 * hardware pass along with the remote rights (the MR's own flags); like
 * rdma_rxe and hardware, sroce ignores it.
 */
#define SROCE_MW_BIND_ACCESS (SROCE_MW_ACCESS | IB_ZERO_BASED | \
			      IB_ACCESS_LOCAL_WRITE)

struct sroce_mw {
	struct ib_pd *pd;
	enum ib_mw_type type;
	spinlock_t lock;		/* guards the fields below, up to ref */
	bool dead;			/* dealloc started: no more binds */
	bool bound;
	u32 rkey;			/* of the binding in force, or last */
	struct sroce_mr *mr;		/* bound: counted in mr->num_mw */
	u64 addr;
	u64 length;
	u32 access;			/* IB_ACCESS_REMOTE_*, IB_ZERO_BASED */
	u64 qp_serial;			/* type 2: QP it was bound through */
	refcount_t ref;			/* 1 for the index, 1 per lookup */
	struct completion released;	/* ref reached zero */
	struct rcu_head rcu;
};

/* What ib_core allocates and frees; the window outlives it by a grace period. */
struct sroce_ibmw {
	struct ib_mw ibmw;
	struct sroce_mw *mw;
};

static void sroce_mw_put(struct sroce_mw *mw)
{
	if (refcount_dec_and_test(&mw->ref))
		complete(&mw->released);
}

/* The window @key's index names, referenced; NULL if it names none. */
static struct sroce_mw *sroce_mw_find(struct sroce_dev *sdev, u32 key)
{
	enum sroce_key_kind kind;
	struct sroce_mw *mw;

	rcu_read_lock();
	mw = sroce_mr_key_lookup(sdev, key, &kind);
	if (mw && (kind != SROCE_KEY_MW || !refcount_inc_not_zero(&mw->ref)))
		mw = NULL;
	rcu_read_unlock();
	return mw;
}

/* End the binding in force, if any; mw->lock held. */
static void sroce_mw_unbind_locked(struct sroce_mw *mw)
{
	lockdep_assert_held(&mw->lock);
	if (mw->mr)
		sroce_mr_unbind_window(mw->mr);
	mw->mr = NULL;
	mw->bound = false;
}

static int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibmw->device);
	struct sroce_ibmw *smw = container_of(ibmw, struct sroce_ibmw, ibmw);
	struct sroce_mw *mw;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	if (udata) {
		err = sroce_verbs_check_udata(udata, 0);
		if (err)
			return err;
	}
	if (atomic_inc_return(&sdev->mw_count) > SROCE_MAX_MW) {
		err = -ENOMEM;
		goto err_count;
	}
	mw = kzalloc(sizeof(*mw), sroce_obj_gfp(udata));
	if (!mw) {
		err = -ENOMEM;
		goto err_count;
	}
	mw->pd = ibmw->pd;
	mw->type = ibmw->type;
	spin_lock_init(&mw->lock);
	refcount_set(&mw->ref, 1);
	init_completion(&mw->released);
	err = sroce_mr_key_publish(sdev, mw, SROCE_KEY_MW, &mw->rkey);
	if (err)
		goto err_free;
	ibmw->rkey = mw->rkey;
	smw->mw = mw;
	sroce_obj_get(SROCE_OBJ_MW);
	return 0;

err_free:
	kfree(mw);
err_count:
	atomic_dec(&sdev->mw_count);
	return err;
}

/* Unbinds a bound window (its MR may then be deregistered); may sleep. */
static int sroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct sroce_dev *sdev = to_sroce_dev(ibmw->device);
	struct sroce_mw *mw = container_of(ibmw, struct sroce_ibmw, ibmw)->mw;
	unsigned long flags;

	might_sleep();
	xa_erase(&sdev->mr_xa, sroce_key_index(mw->rkey));
	spin_lock_irqsave(&mw->lock, flags);
	mw->dead = true;
	sroce_mw_unbind_locked(mw);
	spin_unlock_irqrestore(&mw->lock, flags);
	sroce_mw_put(mw);
	wait_for_completion(&mw->released);

	atomic_dec(&sdev->mw_count);
	sroce_obj_put(SROCE_OBJ_MW);
	kfree_rcu(mw, rcu);
	return 0;
}

/*
 * Where a window's remote address lands in its MR: the MR address the
 * window starts at plus the offset, which is the address itself for a
 * zero-based window.  mw->lock held.  False if [va, va + len) is not all
 * inside the window.
 */
static bool sroce_mw_window_addr(const struct sroce_mw *mw, u64 va, u64 len,
				 u64 *addr)
{
	u64 off = va;

	lockdep_assert_held(&mw->lock);
	if (!(mw->access & IB_ZERO_BASED)) {
		if (va < mw->addr)
			return false;
		off = va - mw->addr;
	}
	if (len > mw->length || off > mw->length - len)
		return false;
	*addr = mw->addr + off;
	return true;
}

/* sroce_mw_get_rkey() for a window: its checks, then its MR. */
static struct sroce_mr *sroce_mw_window_mr(struct sroce_mw *mw,
					   struct sroce_qp *qp, u32 rkey,
					   u32 access, u64 va, u64 len,
					   u64 *addr,
					   enum sroce_mr_fault *fault)
{
	struct sroce_mr *mr = NULL;
	unsigned long flags;

	spin_lock_irqsave(&mw->lock, flags);
	if (!mw->bound || mw->rkey != rkey ||
	    (mw->type == IB_MW_TYPE_2 && mw->qp_serial != qp->serial))
		*fault = SROCE_MR_BAD_KEY;
	else if (mw->pd != sroce_qp_pd(qp))
		*fault = SROCE_MR_BAD_PD;
	else if ((mw->access & access) != access)
		*fault = SROCE_MR_NO_ACCESS;
	else if (!sroce_mw_window_addr(mw, va, len, addr))
		*fault = SROCE_MR_OUT_OF_BOUNDS;
	else if (!refcount_inc_not_zero(&mw->mr->ref))
		*fault = SROCE_MR_BAD_KEY;
	else
		*fault = SROCE_MR_OK;
	if (*fault == SROCE_MR_OK)
		mr = mw->mr;
	spin_unlock_irqrestore(&mw->lock, flags);
	return mr;
}

/**
 * sroce_mw_get_rkey - find the MR a remote access lands in, by rkey
 * @qp: the responder's QP: its PD, and its number for type 2 windows
 * @rkey: the R_Key of the request: an MR's or a bound window's
 * @access: IB_ACCESS_REMOTE_* rights the access needs
 * @va: first byte accessed, as the request names it
 * @len: bytes accessed
 * @addr: set to the MR address of @va, which the copy functions take: @va
 *	  itself but for a zero-based window
 * @fault: set to SROCE_MR_OK, or to why the access is refused
 *
 * Callable from any context.  Returns the MR holding [@va, @va + @len), to
 * be released with sroce_mr_put(), or NULL with @fault saying why.
 */
struct sroce_mr *sroce_mw_get_rkey(struct sroce_qp *qp, u32 rkey, u32 access,
				   u64 va, u64 len, u64 *addr,
				   enum sroce_mr_fault *fault)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	enum sroce_key_kind kind;
	struct sroce_mr *mr = NULL;
	struct sroce_mw *mw = NULL;
	void *obj;

	rcu_read_lock();
	obj = sroce_mr_key_lookup(sdev, rkey, &kind);
	if (obj && kind == SROCE_KEY_MR) {
		mr = obj;
		if (!refcount_inc_not_zero(&mr->ref))
			mr = NULL;
	} else if (obj) {
		mw = obj;
		if (!refcount_inc_not_zero(&mw->ref))
			mw = NULL;
	}
	rcu_read_unlock();

	if (mr) {
		*addr = va;
		return sroce_mr_get_ref(mr, rkey, sroce_qp_pd(qp), access, va,
					len, fault);
	}
	if (!mw) {
		*fault = SROCE_MR_BAD_KEY;
		return NULL;
	}
	mr = sroce_mw_window_mr(mw, qp, rkey, access, va, len, addr, fault);
	sroce_mw_put(mw);
	return mr;
}

/* The bind's own fields, before any lookup. */
static bool sroce_mw_bind_args_ok(const struct sroce_mw *mw,
				  struct sroce_qp *qp, u32 mw_rkey,
				  u32 new_rkey, u32 access)
{
	if (mw->pd != qp->ibqp.pd)
		return false;
	if (sroce_key_index(new_rkey) != sroce_key_index(mw_rkey))
		return false;
	if ((access & IB_ZERO_BASED) && mw->type == IB_MW_TYPE_1)
		return false;
	return !(access & ~SROCE_MW_BIND_ACCESS);
}

/* Install a binding to @mr; mw->lock held. */
static bool sroce_mw_bind_locked(struct sroce_mw *mw, struct sroce_qp *qp,
				 struct sroce_mr *mr, u64 addr, u64 length,
				 u32 access, u32 new_rkey)
{
	lockdep_assert_held(&mw->lock);
	if (mw->dead || (mw->type == IB_MW_TYPE_2 && mw->bound))
		return false;
	if (!sroce_mr_bind_window(mr))
		return false;
	sroce_mw_unbind_locked(mw);
	mw->mr = mr;
	mw->addr = addr;
	mw->length = length;
	mw->access = access;
	mw->rkey = new_rkey;
	mw->qp_serial = qp->serial;
	mw->bound = true;
	return true;
}

/* Type 1, zero length: unbind, taking the new key byte. */
static bool sroce_mw_unbind(struct sroce_mw *mw, u32 new_rkey)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&mw->lock, flags);
	ok = !mw->dead;
	if (ok) {
		sroce_mw_unbind_locked(mw);
		mw->rkey = new_rkey;
	}
	spin_unlock_irqrestore(&mw->lock, flags);
	return ok;
}

static bool sroce_mw_bind_mr(struct sroce_mw *mw, struct sroce_qp *qp,
			     const struct sroce_send_wqe *wqe)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	u32 access = wqe->wr.bind.access & ~IB_ACCESS_LOCAL_WRITE;
	enum sroce_mr_fault fault;
	struct sroce_mr *mr;
	unsigned long flags;
	bool ok;

	mr = sroce_mr_get(sdev, wqe->wr.bind.mr_lkey, qp->ibqp.pd,
			  IB_ACCESS_MW_BIND, wqe->wr.bind.addr,
			  wqe->wr.bind.length, &fault);
	if (!mr)
		return false;
	ok = !mr->dma && !mr->fast_reg;
	/* remote write and atomic need an MR the device may write */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		ok = false;
	if (ok) {
		spin_lock_irqsave(&mw->lock, flags);
		ok = sroce_mw_bind_locked(mw, qp, mr, wqe->wr.bind.addr,
					  wqe->wr.bind.length, access,
					  wqe->wr.bind.new_rkey);
		spin_unlock_irqrestore(&mw->lock, flags);
	}
	sroce_mr_put(mr);
	return ok;
}

/**
 * sroce_mw_bind - execute a bind WQE (IBV_WR_BIND_MW, or ibv_bind_mw())
 * @qp: the QP it was posted on; qp->exec_lock held
 * @wqe: the requester's copy of the WQE
 *
 * Return: SROCE_WC_SUCCESS, or SROCE_WC_MW_BIND_ERR.
 */
enum sroce_wc_status sroce_mw_bind(struct sroce_qp *qp,
				   const struct sroce_send_wqe *wqe)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	struct sroce_mw *mw;
	bool ok;

	lockdep_assert_held(&qp->exec_lock);
	mw = sroce_mw_find(sdev, wqe->wr.bind.mw_rkey);
	if (!mw)
		return SROCE_WC_MW_BIND_ERR;
	ok = sroce_mw_bind_args_ok(mw, qp, wqe->wr.bind.mw_rkey,
				   wqe->wr.bind.new_rkey, wqe->wr.bind.access);
	if (ok && mw->type == IB_MW_TYPE_1 && !wqe->wr.bind.length)
		ok = sroce_mw_unbind(mw, wqe->wr.bind.new_rkey);
	else if (ok)
		ok = sroce_mw_bind_mr(mw, qp, wqe);
	sroce_mw_put(mw);
	return ok ? SROCE_WC_SUCCESS : SROCE_WC_MW_BIND_ERR;
}

/* Invalidate a type 2 window by its key; see sroce_mw_invalidate(). */
static int sroce_mw_invalidate_window(struct sroce_mw *mw,
				      struct sroce_qp *qp, u32 key,
				      bool remote)
{
	unsigned long flags;
	int err = -EINVAL;

	spin_lock_irqsave(&mw->lock, flags);
	if (mw->type == IB_MW_TYPE_2 && mw->pd == sroce_qp_pd(qp) &&
	    mw->bound && mw->rkey == key && (!remote || mw->qp_serial == qp->serial)) {
		sroce_mw_unbind_locked(mw);
		err = 0;
	}
	spin_unlock_irqrestore(&mw->lock, flags);
	return err;
}

/**
 * sroce_mw_invalidate - LOCAL_INV or a received SEND_WITH_INV
 * @qp: the QP executing it; its PD must own the key
 * @key: a fast-register MR's key or a bound type 2 window's rkey
 * @remote: from a peer's SEND_WITH_INV: a window must be bound through @qp
 *
 * Callable from any context.  Returns 0, or -EINVAL if @key names nothing
 * this QP may invalidate.
 */
int sroce_mw_invalidate(struct sroce_qp *qp, u32 key, bool remote)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	struct sroce_mr *mr;
	struct sroce_mw *mw;
	int err;

	mw = sroce_mw_find(sdev, key);
	if (mw) {
		err = sroce_mw_invalidate_window(mw, qp, key, remote);
		sroce_mw_put(mw);
		return err;
	}
	/* in any state: invalidating an invalid MR is harmless */
	mr = sroce_mr_find(sdev, key);
	if (!mr)
		return -EINVAL;
	err = sroce_mr_invalidate(mr, key, sroce_qp_pd(qp));
	sroce_mr_put(mr);
	return err;
}

const struct ib_device_ops sroce_mw_ops = {
	.alloc_mw = sroce_alloc_mw,
	.dealloc_mw = sroce_dealloc_mw,

	INIT_RDMA_OBJ_SIZE(ib_mw, sroce_ibmw, ibmw),
};
