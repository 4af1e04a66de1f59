// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions: user memory pinned by reg_user_mr, the DMA MR ib_core asks
 * for when a kernel PD is allocated (get_dma_mr), and what the data path
 * needs from them: finding an MR by key with its permission checks, copying
 * to and from MR memory, and mapping a word for atomics.
 *
 * Keys (see mr.h): a random 24-bit index into the device's mr_xa above a
 * random key byte, so a peer cannot derive a valid rkey from the ones it has
 * seen; lkey == rkey, and 0 is never used (index 0 is never drawn).  Memory
 * windows (mw.c) draw their indices from the same xarray, tagged.
 *
 * Fast-register MRs (alloc_mr, for kernel ULPs) are published invalid; the
 * ULP fills their page list with map_mr_sg and posts IB_WR_REG_MR, which
 * the requester executes in SQ order (sroce_mr_fast_reg()) and which makes
 * the MR valid under the key the WR names; IB_WR_LOCAL_INV or a remote
 * SEND_WITH_INV makes it invalid again (sroce_mr_invalidate()).  map_mr_sg
 * writes a second list, copied at IB_WR_REG_MR, so preparing the next
 * registration never changes the pages of the one in force.
 *
 * Lifetime and locking:
 *  - An MR holds one reference for its key from the moment the key is
 *    published in mr_xa until dereg erases it.  Every field of a user or
 *    DMA MR but ref is set before publication and never changes afterwards,
 *    so holders read them without locks.  The state of a fast-register MR
 *    changes under mr->lock; sroce_mr_get() checks it under the lock, and
 *    so does every copy or atomic through it, which holds the lock while
 *    it touches the pages: an invalidation (or the next registration)
 *    waits for the copy in progress, and a copy after it fails instead of
 *    touching pages the ULP may have reused, even if a new registration
 *    is already in force (the copy re-checks the key and rights its
 *    lookup was granted, not only validity).  Copies are at most a packet's
 *    payload (the path MTU), so the lock is held for a few microseconds.
 *  - A memory window bound to an MR counts in num_mw (under mr->lock, taken
 *    inside the window's lock); dereg refuses an MR with bound windows
 *    (EBUSY) and marks it dying first, so no bind slips in after the check.
 *  - The data path finds an MR with sroce_mr_get() from any context
 *    (softirq, workqueue, process): xa_load() under rcu_read_lock() and
 *    refcount_inc_not_zero(), no lock.  It calls sroce_mr_put() when done
 *    and must not keep the reference while waiting for process context,
 *    because dereg waits for it.
 *  - dereg erases the key, so lookups fail from then on, drops the key's
 *    reference and waits until every holder has put its own.  Only then does
 *    it unpin the memory: once dereg returns the device no longer touches
 *    it, as the verbs require.  The structure itself is freed after an RCU
 *    grace period, because a lookup that loaded the pointer just before the
 *    erase may still try (and fail) refcount_inc_not_zero() on it.
 *  - The MR's PD outlives every reference: ib_core refuses to free a PD that
 *    still has MRs, and dereg waits for the holders.
 *  - mr_xa's own lock serialises publication and erasure, which happen in
 *    process context only; mr_count bounds the number of MRs (max_mr).
 */
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "core/crc32.h"
#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "obj/mr.h"

/*
 * Access rights sroce implements; the optional bits are hints it ignores.
 * FLUSH_GLOBAL where ib_core knows it (kernel/compat.h).
 */
#define SROCE_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND | SROCE_ACCESS_PLACEMENT)

/* Attempts at a free random index; failing all means mr_xa is absurdly full. */
#define SROCE_MR_KEY_TRIES 16

void sroce_mr_dev_init(struct sroce_dev *sdev)
{
	xa_init(&sdev->mr_xa);
	atomic_set(&sdev->mr_count, 0);
	atomic_set(&sdev->mw_count, 0);
}

/* ib_core destroys every MR before the device is freed. */
void sroce_mr_dev_cleanup(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->mr_xa));
	xa_destroy(&sdev->mr_xa);
}

/*
 * ib_core already rejects bits it does not know and remote write or atomic
 * without local write on the uverbs path; get_dma_mr is not checked by it,
 * and bits it knows may still be ones sroce does not implement.  The
 * optional bits (relaxed ordering, which perftest always sets) may be
 * ignored by definition, so they are dropped rather than refused.
 */
static int sroce_mr_check_access(int *access)
{
	int acc = *access & ~IB_ACCESS_OPTIONAL;

	if (acc & ~SROCE_MR_ACCESS)
		return -EOPNOTSUPP;
	if ((acc & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(acc & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	*access = acc;
	return 0;
}

static struct sroce_mr *sroce_mr_alloc(struct sroce_dev *sdev,
				       struct ib_pd *ibpd, int access)
{
	struct sroce_mr *mr;

	if (atomic_inc_return(&sdev->mr_count) > SROCE_MAX_MR) {
		atomic_dec(&sdev->mr_count);
		return ERR_PTR(-ENOMEM);
	}
	/* a user PD has a uobject: its MRs are charged (sroce_obj_gfp()) */
	mr = kzalloc(sizeof(*mr), sroce_obj_gfp(ibpd->uobject));
	if (!mr) {
		atomic_dec(&sdev->mr_count);
		return ERR_PTR(-ENOMEM);
	}
	mr->pd = ibpd;
	mr->access = access;
	mr->valid = true;
	spin_lock_init(&mr->lock);
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	return mr;
}

/* Undoes sroce_mr_alloc() for an MR whose key was never published. */
static void sroce_mr_free_unpublished(struct sroce_dev *sdev,
				      struct sroce_mr *mr)
{
	kfree(mr->map);
	kfree(mr->fr_pages);
	kfree(mr);
	atomic_dec(&sdev->mr_count);
}

/**
 * sroce_mr_key_publish - give an object a fresh random key in mr_xa
 * @sdev: the device
 * @obj: the MR or memory window, fully initialised: a peer may guess the
 *	 key at once, and xa_insert() publishes with release semantics
 * @kind: what @obj is, kept as the entry's tag
 * @key: set to the key
 *
 * Process context.  Returns 0, or -ENOMEM when no free index was found.
 */
int sroce_mr_key_publish(struct sroce_dev *sdev, void *obj,
			 enum sroce_key_kind kind, u32 *key)
{
	int i, err;
	u32 k;

	for (i = 0; i < SROCE_MR_KEY_TRIES; i++) {
		k = get_random_u32();
		if (!sroce_key_index(k))
			continue;
		*key = k;
		err = xa_insert(&sdev->mr_xa, sroce_key_index(k),
				xa_tag_pointer(obj, kind), GFP_KERNEL);
		if (err != -EBUSY)
			return err;
	}
	return -ENOMEM;
}

/*
 * The MR or window a key's index names, or NULL; the caller holds
 * rcu_read_lock() and must take a reference before dropping it.  The key
 * byte is the caller's to check.
 */
void *sroce_mr_key_lookup(struct sroce_dev *sdev, u32 key,
			  enum sroce_key_kind *kind)
{
	void *entry = xa_load(&sdev->mr_xa, sroce_key_index(key));

	if (!entry)
		return NULL;
	*kind = xa_pointer_tag(entry);
	return xa_untag_pointer(entry);
}

static int sroce_mr_publish(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	int err;

	err = sroce_mr_key_publish(sdev, mr, SROCE_KEY_MR, &mr->key);
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	return err;
}

/*
 * The pages of the umem in order, for an O(1) page lookup by offset.  sroce
 * has no DMA device, so the umem's scatter table holds plain kernel pages.
 * Only a user MR has a umem: the array, up to 128 MiB, is charged.
 */
static int sroce_mr_collect_pages(struct sroce_mr *mr)
{
	struct sg_page_iter iter;
	unsigned long i = 0;

	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages),
			     sroce_obj_gfp(true));
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &iter, 0) {
		if (WARN_ON_ONCE(i >= mr->npages))
			return -EFAULT;
		mr->pages[i++] = sg_page_iter_page(&iter);
	}
	if (WARN_ON_ONCE(i != mr->npages))
		return -EFAULT;
	return 0;
}

static struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start,
				       u64 length, u64 iova, int access,
				       struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	err = sroce_mr_check_access(&access);
	if (err)
		return ERR_PTR(err);
	if (!length || length > SROCE_MAX_MR_SIZE)
		return ERR_PTR(-EINVAL);
	/* The page lookup relies on iova and start sharing the page offset. */
	if ((start ^ iova) & ~PAGE_MASK)
		return ERR_PTR(-EINVAL);

	mr = sroce_mr_alloc(sdev, ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->iova = iova;
	mr->length = length;
	mr->page_offset = start & ~PAGE_MASK;
	mr->npages = DIV_ROUND_UP(mr->page_offset + length, PAGE_SIZE);

	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}
	err = sroce_mr_collect_pages(mr);
	if (err)
		goto err_pages;
	err = sroce_mr_publish(sdev, mr);
	if (err)
		goto err_pages;
	sroce_obj_get(SROCE_OBJ_MR);
	return &mr->ibmr;

err_pages:
	kvfree(mr->pages);
	ib_umem_release(mr->umem);
err_free:
	sroce_mr_free_unpublished(sdev, mr);
	return ERR_PTR(err);
}

/*
 * The MR ib_core creates with every kernel PD (sroce has no device-wide
 * local DMA lkey): kernel ULPs put its lkey in their SGEs with the
 * addresses ib_dma_map_*() gave them, which for a device without a DMA
 * device are kernel virtual addresses.  So it spans the whole 64-bit space
 * and its "pages" are the kernel's linear mapping.
 */
static struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct sroce_dev *sdev = to_sroce_dev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	err = sroce_mr_check_access(&access);
	if (err)
		return ERR_PTR(err);
	mr = sroce_mr_alloc(sdev, ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->dma = true;
	mr->iova = 0;
	mr->length = U64_MAX;

	err = sroce_mr_publish(sdev, mr);
	if (err) {
		sroce_mr_free_unpublished(sdev, mr);
		return ERR_PTR(err);
	}
	sroce_obj_get(SROCE_OBJ_MR);
	return &mr->ibmr;
}

/*
 * Refuses an MR that memory windows are bound to (the verbs say dereg fails
 * then); otherwise marks it dying under the lock, so that no bind can
 * start afterwards, and tells whether it may go.
 */
static int sroce_mr_retire(struct sroce_mr *mr)
{
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&mr->lock, flags);
	if (mr->num_mw)
		err = -EBUSY;
	else
		mr->dying = true;
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/* Waits for the data path to let go of the MR, so it may sleep. */
static int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_sroce_mr(ibmr);
	struct sroce_dev *sdev = to_sroce_dev(mr->pd->device);
	int err;

	might_sleep();
	err = sroce_mr_retire(mr);
	if (err)
		return err;
	xa_erase(&sdev->mr_xa, sroce_key_index(mr->key));
	sroce_mr_put(mr);
	wait_for_completion(&mr->released);

	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kfree(mr->map);
	kfree(mr->fr_pages);
	atomic_dec(&sdev->mr_count);
	sroce_obj_put(SROCE_OBJ_MR);
	kfree_rcu(mr, rcu);
	return 0;
}

/* A failed rereg lets binds onto the MR again (sroce_mr_retire()). */
static void sroce_mr_unretire(struct sroce_mr *mr)
{
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	mr->dying = false;
	spin_unlock_irqrestore(&mr->lock, flags);
}

/*
 * rereg_user_mr: "conceptually, deregister followed by register"
 * (ibv_rereg_mr(3)), and done so: a whole new MR, with a new key, from the
 * old one's start, length, iova, access and PD and the ones @flags change.
 * ib_core puts it in the old one's place and deregisters the old one
 * before the command returns (rdma_assign_uobject()), which, as any
 * dereg, erases the old key and waits for the data path's references.
 * The fields of a user MR never change once published (the head of the
 * file), so the data path sees either MR whole, never one half-updated,
 * and once the command returns the old key reaches nothing.  An MR with
 * memory windows bound fails with -EBUSY, as dereg would, and takes no new
 * binds while the new MR is made (dying), so that the old one's dereg
 * cannot fail.  On failure the old MR is unchanged.  The new MR counts
 * against max_mr meanwhile: at the limit, rereg fails with -ENOMEM.  The
 * uverbs core has refused flags outside IB_MR_REREG_SUPPORTED and a
 * translation whose start and iova differ in their page offset.  Nothing
 * left to change (NULL): ib_core keeps the MR as it is.
 */
static struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags,
					 u64 start, u64 length, u64 iova,
					 int access, struct ib_pd *ibpd,
					 struct ib_udata *udata)
{
	struct sroce_mr *mr = to_sroce_mr(ibmr);
	struct ib_mr *new;
	int err;

	might_sleep();
	/* Not a change: ib_core may pass the flag for the MR's own PD (6.12). */
	if ((flags & IB_MR_REREG_PD) && ibpd == mr->pd)
		flags &= ~IB_MR_REREG_PD;
	if (!flags)
		return NULL;
	if (!mr->umem || (flags & ~IB_MR_REREG_SUPPORTED))
		return ERR_PTR(-EINVAL);
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->length;
		iova = mr->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (!(flags & IB_MR_REREG_PD))
		ibpd = mr->pd;

	err = sroce_mr_retire(mr);
	if (err)
		return ERR_PTR(err);
	new = sroce_reg_user_mr(ibpd, start, length, iova, access, udata);
	if (IS_ERR(new)) {
		sroce_mr_unretire(mr);
		return new;
	}
	/* ib_core sets these on registration, not on this path */
	new->iova = iova;
	new->length = length;
	return new;
}

static bool sroce_mr_in_bounds(const struct sroce_mr *mr, u64 iova, u64 len)
{
	u64 start = READ_ONCE(mr->iova), size = READ_ONCE(mr->length);

	return iova >= start && len <= size && iova - start <= size - len;
}

/* The checks of sroce_mr_get() on a referenced MR; mr->lock held if fr. */
static enum sroce_mr_fault sroce_mr_check(const struct sroce_mr *mr, u32 key,
					  struct ib_pd *pd, u32 access,
					  u64 iova, u64 len)
{
	if (!mr->valid || mr->key != key)
		return SROCE_MR_BAD_KEY;
	if (mr->pd != pd)
		return SROCE_MR_BAD_PD;
	if ((mr->access & access) != access)
		return SROCE_MR_NO_ACCESS;
	if (!sroce_mr_in_bounds(mr, iova, len))
		return SROCE_MR_OUT_OF_BOUNDS;
	return SROCE_MR_OK;
}

/*
 * The MR whose index @key names, referenced, whatever its state and key
 * byte; NULL if there is none.  Callable from any context.
 */
struct sroce_mr *sroce_mr_find(struct sroce_dev *sdev, u32 key)
{
	enum sroce_key_kind kind;
	struct sroce_mr *mr;

	rcu_read_lock();
	mr = sroce_mr_key_lookup(sdev, key, &kind);
	if (mr && (kind != SROCE_KEY_MR || !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * sroce_mr_get_ref - check an access against an MR found by key
 * @mr: the MR, on which the caller holds a reference it hands over
 * @key: the full key the access named
 * @pd: PD of the QP doing the access
 * @access: IB_ACCESS_* rights the access needs
 * @iova: first byte accessed
 * @len: bytes accessed
 * @fault: set to SROCE_MR_OK, or to why the access is refused
 *
 * Callable from any context.  Returns @mr with the reference, or NULL
 * (reference dropped) with @fault saying why.
 */
struct sroce_mr *sroce_mr_get_ref(struct sroce_mr *mr, u32 key,
				  struct ib_pd *pd, u32 access, u64 iova,
				  u64 len, enum sroce_mr_fault *fault)
{
	unsigned long flags;

	if (mr->fast_reg) {
		spin_lock_irqsave(&mr->lock, flags);
		*fault = sroce_mr_check(mr, key, pd, access, iova, len);
		spin_unlock_irqrestore(&mr->lock, flags);
	} else {
		*fault = sroce_mr_check(mr, key, pd, access, iova, len);
	}
	if (*fault == SROCE_MR_OK)
		return mr;
	sroce_mr_put(mr);
	return NULL;
}

/**
 * sroce_mr_get - find the MR for an access by key, with a reference
 * @sdev: device the key belongs to
 * @key: lkey or rkey from a work request or packet
 * @pd: PD of the QP doing the access; the MR must belong to it
 * @access: IB_ACCESS_* rights the access needs (0 for a local read)
 * @iova: first byte accessed
 * @len: bytes accessed
 * @fault: set to SROCE_MR_OK, or to why the access is refused
 *
 * Only MRs: a memory window's rkey is resolved by sroce_mw_get_rkey().
 * Callable from any context.  Returns the MR, to be released with
 * sroce_mr_put(), or NULL with @fault saying why.
 */
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key,
			      struct ib_pd *pd, u32 access, u64 iova, u64 len,
			      enum sroce_mr_fault *fault)
{
	struct sroce_mr *mr = sroce_mr_find(sdev, key);

	if (!mr) {
		*fault = SROCE_MR_BAD_KEY;
		return NULL;
	}
	return sroce_mr_get_ref(mr, key, pd, access, iova, len, fault);
}

/* Callable from any context; the last put lets a waiting dereg proceed. */
void sroce_mr_put(struct sroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

/*
 * A memory window is being bound to the MR (the caller holds a reference
 * and the window's lock): count it, unless dereg already started.
 */
bool sroce_mr_bind_window(struct sroce_mr *mr)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&mr->lock, flags);
	ok = !mr->dying;
	if (ok)
		mr->num_mw++;
	spin_unlock_irqrestore(&mr->lock, flags);
	return ok;
}

/* A window bound to the MR lets go of it; the caller holds its lock. */
void sroce_mr_unbind_window(struct sroce_mr *mr)
{
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	if (!WARN_ON_ONCE(!mr->num_mw))
		mr->num_mw--;
	spin_unlock_irqrestore(&mr->lock, flags);
}

/**
 * sroce_mr_invalidate - LOCAL_INV or SEND_WITH_INV of an MR's key
 * @mr: the MR, referenced by the caller
 * @key: the key to invalidate; must be the one in force
 * @pd: the PD of the QP asking
 *
 * Only fast-register MRs can be invalidated (a registered user MR stays
 * valid until dereg).  Callable from any context.  Returns 0 or -EINVAL.
 */
int sroce_mr_invalidate(struct sroce_mr *mr, u32 key, struct ib_pd *pd)
{
	unsigned long flags;
	int err = -EINVAL;

	if (!mr->fast_reg || mr->pd != pd)
		return -EINVAL;
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->key == key) {
		mr->valid = false;
		err = 0;
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/*
 * Does the prepared list cover [iova, iova + length) as ib_core set them?
 * A ULP could change them after map_mr_sg; pages past the list must never
 * be looked up.
 */
static bool sroce_mr_fast_reg_fits(const struct sroce_mr *mr)
{
	u64 size = mr->ibmr.page_size, total;

	if (!mr->map_npages || !is_power_of_2(size) || size < SZ_4K ||
	    size > SZ_2M)
		return false;
	total = (u64)mr->map_npages * size;
	return mr->ibmr.length <= total &&
	       (mr->ibmr.iova & (size - 1)) <= total - mr->ibmr.length;
}

/* Install what map_mr_sg prepared; mr->lock held, the MR invalid. */
static void sroce_mr_fast_reg_install(struct sroce_mr *mr, u32 key,
				      int access)
{
	memcpy(mr->fr_pages, mr->map, mr->map_npages * sizeof(u64));
	mr->npages = mr->map_npages;
	mr->page_shift = ilog2(mr->ibmr.page_size);
	WRITE_ONCE(mr->iova, mr->ibmr.iova);
	WRITE_ONCE(mr->length, mr->ibmr.length);
	mr->access = access;
	mr->key = key;
	mr->valid = true;
}

/**
 * sroce_mr_fast_reg - execute IB_WR_REG_MR
 * @sdev: the device
 * @pd: the PD of the posting QP; the MR must belong to it
 * @key: the key the MR takes; its index must be the MR's
 * @access: IB_ACCESS_* rights of the registration
 *
 * The MR must be a fast-register MR that is not valid, with a page list
 * from map_mr_sg (which ib_core's ib_map_mr_sg() also gave iova, length and
 * page_size).  Callable from any context.  Returns 0, or -EINVAL.
 */
int sroce_mr_fast_reg(struct sroce_dev *sdev, struct ib_pd *pd, u32 key,
		      int access)
{
	struct sroce_mr *mr;
	unsigned long flags;
	int err = -EINVAL;

	if (sroce_mr_check_access(&access))
		return -EINVAL;
	mr = sroce_mr_find(sdev, key);
	if (!mr)
		return -EINVAL;

	spin_lock_irqsave(&mr->lock, flags);
	if (mr->fast_reg && mr->pd == pd && !mr->valid &&
	    sroce_mr_fast_reg_fits(mr)) {
		sroce_mr_fast_reg_install(mr, key, access);
		err = 0;
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	sroce_mr_put(mr);
	return err;
}

/* alloc_mr: a fast-register MR of a kernel PD, invalid until IB_WR_REG_MR. */
static struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
				    u32 max_num_sg)
{
	struct sroce_dev *sdev = to_sroce_dev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > SROCE_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);
	mr = sroce_mr_alloc(sdev, ibpd, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->fast_reg = true;
	mr->valid = false;
	mr->max_pages = max_num_sg;
	mr->map = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	mr->fr_pages = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	if (!mr->map || !mr->fr_pages) {
		err = -ENOMEM;
		goto err_free;
	}
	err = sroce_mr_publish(sdev, mr);
	if (err)
		goto err_free;
	sroce_obj_get(SROCE_OBJ_MR);
	return &mr->ibmr;

err_free:
	sroce_mr_free_unpublished(sdev, mr);
	return ERR_PTR(err);
}

/* ib_sg_to_pages() callback: one page of the list being prepared. */
static int sroce_mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct sroce_mr *mr = to_sroce_mr(ibmr);

	if (mr->map_npages == mr->max_pages)
		return -ENOMEM;
	mr->map[mr->map_npages++] = addr;
	return 0;
}

/*
 * map_mr_sg: ib_core set ibmr->page_size; ib_sg_to_pages() sets iova and
 * length and hands each page address (a kernel virtual address: sroce has
 * no DMA device) to sroce_mr_set_page().  Only the prepared list changes,
 * never the registration in force.
 */
static int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
			   int sg_nents, unsigned int *sg_offset)
{
	struct sroce_mr *mr = to_sroce_mr(ibmr);

	if (!mr->fast_reg)
		return -EINVAL;
	mr->map_npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, sroce_mr_set_page);
}

/* Offset of @iova from the start of pages[0]; @iova must be in bounds. */
static u64 sroce_mr_page_off(const struct sroce_mr *mr, u64 iova)
{
	return iova - mr->iova + mr->page_offset;
}

/*
 * Kernel address of @iova in a registered fast-register MR, and the bytes
 * left in its page; NULL if the page index is past the list, which only a
 * ULP re-registering the MR under an access can cause.
 */
static void *sroce_mr_fr_va(const struct sroce_mr *mr, u64 iova, u64 *room)
{
	unsigned int shift = READ_ONCE(mr->page_shift);
	u64 mask = BIT_ULL(shift) - 1;
	u64 start = READ_ONCE(mr->iova);
	u64 off = iova - start + (start & mask);
	u64 page;

	if ((off >> shift) >= mr->max_pages)
		return NULL;
	page = READ_ONCE(mr->fr_pages[off >> shift]);
	if (!page)
		return NULL;
	*room = mask + 1 - (off & mask);
	return (void *)(uintptr_t)(page + (off & mask));
}

/*
 * Is the registration the caller's lookup granted still the one in force?
 * Checking validity alone is not enough: LOCAL_INV then IB_WR_REG_MR under
 * the next key byte (or with fewer rights) may both run between the lookup
 * and the copy, and the copy must not then reach the new registration's
 * pages through the old key.  mr->lock held.
 */
static bool sroce_mr_fr_granted(const struct sroce_mr *mr, u32 key,
				u32 access, u64 iova, u64 len)
{
	lockdep_assert_held(&mr->lock);
	return sroce_mr_check(mr, key, mr->pd, access, iova, len) ==
	       SROCE_MR_OK;
}

/*
 * One contiguous piece of a copy.  With @crc, a read from the MR folds the
 * bytes into *crc as it copies them: the transmit path's one pass over a
 * payload (kernel/core/crc32.h).
 */
static void sroce_mr_move(void *va, void *buf, size_t len,
			  enum sroce_mr_dir dir, u32 *crc)
{
	if (dir == SROCE_MR_TO_MR)
		memcpy(va, buf, len);
	else
		sroce_crc32_move(crc, buf, va, len);
}

/*
 * A copy through a fast-register MR, under mr->lock (see the head of this
 * file): -EFAULT if the MR is no longer registered under @key with @access
 * since the caller looked it up, or the range is no longer in it.  A failed
 * copy may have copied part of the range; callers discard what they copied
 * into.
 */
static int sroce_mr_fr_copy(struct sroce_mr *mr, u32 key, u32 access,
			    u64 iova, void *buf, u64 len,
			    enum sroce_mr_dir dir, u32 *crc)
{
	unsigned long flags;
	u64 room, chunk;
	int err = 0;
	void *va;

	spin_lock_irqsave(&mr->lock, flags);
	if (!sroce_mr_fr_granted(mr, key, access, iova, len))
		err = -EFAULT;
	while (!err && len) {
		va = sroce_mr_fr_va(mr, iova, &room);
		if (!va) {
			err = -EFAULT;
			break;
		}
		chunk = min(len, room);
		sroce_mr_move(va, buf, chunk, dir, crc);
		iova += chunk;
		buf += chunk;
		len -= chunk;
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/**
 * sroce_mr_copy - copy between a kernel buffer and an MR
 * @mr: MR, referenced by the caller
 * @key: the key sroce_mr_get() granted the access under
 * @access: the IB_ACCESS_* rights it was granted for
 * @iova: first MR byte
 * @buf: kernel buffer of @len bytes
 * @len: bytes to copy
 * @dir: SROCE_MR_TO_MR writes @buf into the MR, SROCE_MR_FROM_MR reads it
 * @crc: NULL, or (SROCE_MR_FROM_MR only) a crc32_le() state the bytes
 *	 copied are folded into
 *
 * Permissions are the caller's business (sroce_mr_get); the bounds are
 * checked again here, and a fast-register MR must still be registered
 * under @key with @access.  (A window's key never names one: windows exist
 * for user PDs only, fast-register MRs for kernel PDs only.)  Returns 0,
 * or -EFAULT if the range is not in the MR (any more): then part of it may
 * have been copied, and the caller must not use @buf.
 */
int sroce_mr_copy(struct sroce_mr *mr, u32 key, u32 access, u64 iova,
		  void *buf, u64 len, enum sroce_mr_dir dir, u32 *crc)
{
	u64 off;

	if (mr->fast_reg)
		return sroce_mr_fr_copy(mr, key, access, iova, buf, len, dir,
					crc);
	if (!sroce_mr_in_bounds(mr, iova, len))
		return -EFAULT;
	if (mr->dma) {
		sroce_mr_move((void *)(uintptr_t)iova, buf, len, dir, crc);
		return 0;
	}

	off = sroce_mr_page_off(mr, iova);
	while (len) {
		struct page *page = mr->pages[off >> PAGE_SHIFT];
		unsigned int pgoff = off & ~PAGE_MASK;
		unsigned int chunk = min_t(u64, len, PAGE_SIZE - pgoff);
		void *va = kmap_local_page(page);

		sroce_mr_move(va + pgoff, buf, chunk, dir, crc);
		/* user mappings of the page may alias differently */
		if (dir == SROCE_MR_TO_MR)
			flush_dcache_page(page);
		kunmap_local(va);
		off += chunk;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

/* Apply an atomic to the word at @p; returns the word's previous value. */
/*
 * An ATOMIC WRITE is one aligned 64-bit store, which no reader can see
 * half done; the release orders it after every write the responder placed
 * before it (IBTA A19.5: it is executed once the requests before it are).
 */
static u64 sroce_mr_atomic_apply(u64 *p, enum sroce_mr_atomic_op op,
				 u64 compare, u64 swap_add)
{
	u64 orig = READ_ONCE(*p);

	switch (op) {
	case SROCE_MR_FETCH_ADD:
		WRITE_ONCE(*p, orig + swap_add);
		break;
	case SROCE_MR_CMP_SWAP:
		if (orig == compare)
			WRITE_ONCE(*p, swap_add);
		break;
	case SROCE_MR_WRITE:
		/* after every earlier placement, in one piece */
		smp_store_release(p, swap_add);
		break;
	}
	return orig;
}

/* The access a remote operation on the word needs. */
static u32 sroce_mr_atomic_access(enum sroce_mr_atomic_op op)
{
	return op == SROCE_MR_WRITE ? IB_ACCESS_REMOTE_WRITE :
				      IB_ACCESS_REMOTE_ATOMIC;
}

/* An atomic through a fast-register MR, under mr->lock like a copy. */
static int sroce_mr_fr_atomic(struct sroce_mr *mr, u32 key, u64 iova,
			      enum sroce_mr_atomic_op op, u64 compare,
			      u64 swap_add, u64 *orig)
{
	unsigned long flags;
	int err = -EFAULT;
	u64 room, *p;

	spin_lock_irqsave(&mr->lock, flags);
	if (sroce_mr_fr_granted(mr, key, sroce_mr_atomic_access(op), iova,
				sizeof(u64))) {
		p = sroce_mr_fr_va(mr, iova, &room);
		if (p) {
			*orig = sroce_mr_atomic_apply(p, op, compare,
						      swap_add);
			err = 0;
		}
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/**
 * sroce_mr_atomic - an atomic operation on a word of an MR
 * @mr: MR, referenced by the caller
 * @key: the key sroce_mr_get() granted the access under (remote atomic,
 *	 or remote write for SROCE_MR_WRITE)
 * @iova: address of the word; atomics require 8-byte alignment, which also
 *	  keeps the word within one page
 * @op: fetch-and-add, compare-and-swap or an ATOMIC WRITE
 * @compare: the value compare-and-swap compares with
 * @swap_add: what is added, swapped in or written
 * @orig: set to the word's value before the operation
 *
 * Like sroce_mr_copy(), the bounds are checked again, and a fast-register
 * MR must still be registered under @key with the access, under its lock.
 * Returns 0, -EINVAL if @iova is misaligned, or -EFAULT if it is not in the
 * MR (any more).  Serialising atomics against each other is the caller's
 * job.
 */
int sroce_mr_atomic(struct sroce_mr *mr, u32 key, u64 iova,
		    enum sroce_mr_atomic_op op, u64 compare, u64 swap_add,
		    u64 *orig)
{
	u64 off, *p;

	if (!IS_ALIGNED(iova, sizeof(u64)))
		return -EINVAL;
	if (mr->fast_reg)
		return sroce_mr_fr_atomic(mr, key, iova, op, compare,
					  swap_add, orig);
	if (!sroce_mr_in_bounds(mr, iova, sizeof(u64)))
		return -EFAULT;
	if (mr->dma) {
		p = (u64 *)(uintptr_t)iova;
		*orig = sroce_mr_atomic_apply(p, op, compare, swap_add);
		return 0;
	}
	off = sroce_mr_page_off(mr, iova);
	/* an IOVA registered at another offset than the memory's */
	if (!IS_ALIGNED(off, sizeof(u64)))
		return -EINVAL;
	p = kmap_local_page(mr->pages[off >> PAGE_SHIFT]) + (off & ~PAGE_MASK);
	*orig = sroce_mr_atomic_apply(p, op, compare, swap_add);
	kunmap_local(p);
	return 0;
}

const struct ib_device_ops sroce_mr_ops = {
	.alloc_mr = sroce_alloc_mr,
	.get_dma_mr = sroce_get_dma_mr,
	.map_mr_sg = sroce_map_mr_sg,
	.reg_user_mr = sroce_reg_user_mr,
	.rereg_user_mr = sroce_rereg_user_mr,
	.dereg_mr = sroce_dereg_mr,
};
