// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions: user memory pinned by reg_user_mr, the DMA MR ib_core asks
 * for when a kernel PD is allocated (get_dma_mr), and what the data path
 * needs from them: finding an MR by key with its permission checks, copying
 * to and from MR memory, and mapping a word for atomics.
 *
 * Keys.  lkey and rkey are the same random 32-bit value, so a peer cannot
 * derive a valid rkey from the ones it has seen; 0 is never used.  Each
 * device maps keys to MRs in mr_xa; a collision draws a new key.
 *
 * Lifetime and locking:
 *  - An MR holds one reference for its key from the moment the key is
 *    published in mr_xa until dereg erases it.  Every field but ref is set
 *    before publication and never changes afterwards, so holders read them
 *    without locks.
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

#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "mr.h"

/* Access rights sroce implements; the optional bits are hints it ignores. */
#define SROCE_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND)

/* Attempts at a free random key; failing all means mr_xa is absurdly full. */
#define SROCE_MR_KEY_TRIES 16

void sroce_mr_dev_init(struct sroce_dev *sdev)
{
	xa_init(&sdev->mr_xa);
	atomic_set(&sdev->mr_count, 0);
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
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		atomic_dec(&sdev->mr_count);
		return ERR_PTR(-ENOMEM);
	}
	mr->pd = ibpd;
	mr->access = access;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	return mr;
}

/* Undoes sroce_mr_alloc() for an MR whose key was never published. */
static void sroce_mr_free_unpublished(struct sroce_dev *sdev,
				      struct sroce_mr *mr)
{
	kfree(mr);
	atomic_dec(&sdev->mr_count);
}

/*
 * Makes the MR visible to lookups under a fresh random key: the last step
 * of a registration, since a peer may guess the key at once.  xa_insert()
 * publishes with release semantics, so a lookup sees every field set.
 */
static int sroce_mr_publish(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	int i, err;
	u32 key;

	for (i = 0; i < SROCE_MR_KEY_TRIES; i++) {
		key = get_random_u32();
		if (!key)
			continue;
		mr->ibmr.lkey = key;
		mr->ibmr.rkey = key;
		err = xa_insert(&sdev->mr_xa, key, mr, GFP_KERNEL);
		if (err != -EBUSY)
			return err;
	}
	return -ENOMEM;
}

/*
 * The pages of the umem in order, for an O(1) page lookup by offset.  sroce
 * has no DMA device, so the umem's scatter table holds plain kernel pages.
 */
static int sroce_mr_collect_pages(struct sroce_mr *mr)
{
	struct sg_page_iter iter;
	unsigned long i = 0;

	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL);
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

/* Waits for the data path to let go of the MR, so it may sleep. */
static int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_sroce_mr(ibmr);
	struct sroce_dev *sdev = to_sroce_dev(mr->pd->device);

	might_sleep();
	xa_erase(&sdev->mr_xa, mr->ibmr.lkey);
	sroce_mr_put(mr);
	wait_for_completion(&mr->released);

	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->pages);
	atomic_dec(&sdev->mr_count);
	sroce_obj_put(SROCE_OBJ_MR);
	kfree_rcu(mr, rcu);
	return 0;
}

static bool sroce_mr_in_bounds(const struct sroce_mr *mr, u64 iova, u64 len)
{
	return iova >= mr->iova && len <= mr->length &&
	       iova - mr->iova <= mr->length - len;
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
 * Callable from any context.  Returns the MR, to be released with
 * sroce_mr_put(), or NULL with @fault saying why.
 */
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key,
			      struct ib_pd *pd, u32 access, u64 iova, u64 len,
			      enum sroce_mr_fault *fault)
{
	struct sroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, key);
	if (mr && !refcount_inc_not_zero(&mr->ref))
		mr = NULL;
	rcu_read_unlock();

	if (!mr)
		*fault = SROCE_MR_BAD_KEY;
	else if (mr->pd != pd)
		*fault = SROCE_MR_BAD_PD;
	else if ((mr->access & access) != access)
		*fault = SROCE_MR_NO_ACCESS;
	else if (!sroce_mr_in_bounds(mr, iova, len))
		*fault = SROCE_MR_OUT_OF_BOUNDS;
	else
		*fault = SROCE_MR_OK;

	if (mr && *fault != SROCE_MR_OK) {
		sroce_mr_put(mr);
		mr = NULL;
	}
	return mr;
}

/* Callable from any context; the last put lets a waiting dereg proceed. */
void sroce_mr_put(struct sroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

/* Offset of @iova from the start of pages[0]; @iova must be in bounds. */
static u64 sroce_mr_page_off(const struct sroce_mr *mr, u64 iova)
{
	return iova - mr->iova + mr->page_offset;
}

/**
 * sroce_mr_copy - copy between a kernel buffer and an MR
 * @mr: MR, referenced by the caller
 * @iova: first MR byte
 * @buf: kernel buffer of @len bytes
 * @len: bytes to copy
 * @dir: SROCE_MR_TO_MR writes @buf into the MR, SROCE_MR_FROM_MR reads it
 *
 * Permissions are the caller's business (sroce_mr_get); the bounds are
 * checked again here.  Returns 0 or -EFAULT if the range is not in the MR.
 */
int sroce_mr_copy(struct sroce_mr *mr, u64 iova, void *buf, u64 len,
		  enum sroce_mr_dir dir)
{
	u64 off;

	if (!sroce_mr_in_bounds(mr, iova, len))
		return -EFAULT;
	if (mr->dma) {
		void *va = (void *)(uintptr_t)iova;

		if (dir == SROCE_MR_TO_MR)
			memcpy(va, buf, len);
		else
			memcpy(buf, va, len);
		return 0;
	}

	off = sroce_mr_page_off(mr, iova);
	while (len) {
		struct page *page = mr->pages[off >> PAGE_SHIFT];
		unsigned int pgoff = off & ~PAGE_MASK;
		unsigned int chunk = min_t(u64, len, PAGE_SIZE - pgoff);
		void *va = kmap_local_page(page);

		if (dir == SROCE_MR_TO_MR) {
			memcpy(va + pgoff, buf, chunk);
			/* user mappings of the page may alias differently */
			flush_dcache_page(page);
		} else {
			memcpy(buf, va + pgoff, chunk);
		}
		kunmap_local(va);
		off += chunk;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

/**
 * sroce_mr_atomic_map - map the 64-bit word an atomic operation targets
 * @mr: MR, referenced by the caller
 * @iova: address of the word; atomics require 8-byte alignment, which also
 *	  keeps the word within one page
 *
 * Returns a pointer to release with sroce_mr_atomic_unmap() in the same
 * context (it is a local kmap), or NULL if @iova is misaligned or outside
 * the MR.  Serialising atomics against each other is the caller's job.
 */
u64 *sroce_mr_atomic_map(struct sroce_mr *mr, u64 iova)
{
	u64 off;

	if (!IS_ALIGNED(iova, sizeof(u64)) ||
	    !sroce_mr_in_bounds(mr, iova, sizeof(u64)))
		return NULL;
	if (mr->dma)
		return (u64 *)(uintptr_t)iova;
	off = sroce_mr_page_off(mr, iova);
	return kmap_local_page(mr->pages[off >> PAGE_SHIFT]) +
	       (off & ~PAGE_MASK);
}

void sroce_mr_atomic_unmap(struct sroce_mr *mr, u64 *p)
{
	if (!mr->dma)
		kunmap_local(p);
}

const struct ib_device_ops sroce_mr_ops = {
	.get_dma_mr = sroce_get_dma_mr,
	.reg_user_mr = sroce_reg_user_mr,
	.dereg_mr = sroce_dereg_mr,
};
