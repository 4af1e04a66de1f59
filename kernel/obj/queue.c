// SPDX-License-Identifier: GPL-2.0
/*
 * Shared rings: allocation, the user mapping and the lifetime of the memory.
 *
 * Who owns the ring memory:
 *  - A kernel-only queue (no user context) owns its buffer, and
 *    sroce_queue_cleanup() frees it.
 *  - A user queue hands its buffer to a struct sroce_queue_mmap, the driver
 *    side of an rdma_user_mmap_entry in the user context's mmap table.
 *    ib_core counts references to the entry: one from insertion, dropped by
 *    sroce_queue_cleanup() (rdma_user_mmap_entry_remove(), which also stops
 *    new mappings), and one that sroce_queue_mmap() holds while it maps.
 *    The last one to go calls sroce_queue_mmap_free(), which frees the
 *    buffer.
 *  - A user mapping holds no reference to the entry: remap_vmalloc_range()
 *    puts the pages into the VMA with page references of their own, which
 *    keep them alive until the munmap after the driver dropped its own.  So
 *    destroying the object and unmapping the ring may happen in either
 *    order, a process that keeps the ring mapped after destroying the
 *    object keeps only its pages (the kernel no longer writes to them), and
 *    a mapping refers to no module code or data (no vm_ops), so it may
 *    outlive the device and the module.
 *
 * Each ring is mapped once, by the provider right after creation: a second
 * mmap() of the same key fails with EBUSY, so a ring has at most one user
 * mapping to reason about.
 *
 * The buffer is a set of zeroed pages (the user never sees stale kernel
 * memory) that vmap() makes contiguous in an area marked VM_USERMAP, which
 * remap_vmalloc_range() requires.  Not vmalloc_user(): it takes no gfp
 * flags, so a user's rings could not be charged to its memory cgroup (see
 * sroce_obj_gfp()); and __vmalloc(), which takes them, makes no VM_USERMAP
 * area, while the functions that could (__vmalloc_node_range(),
 * find_vm_area()) are not exported.  All of this holds on 6.1 and 6.12.
 */
#include <linux/bitops.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>

#include "debugfs.h"
#include "device.h"
#include "obj/queue.h"

struct sroce_queue_mmap {
	struct rdma_user_mmap_entry rdma;
	void *buf;
	struct page **pages;		/* the buffer's, npages of them */
	unsigned int npages;
	unsigned long mapped;		/* bit 0: a user mapping was made */
};

static struct sroce_queue_mmap *
to_sroce_queue_mmap(struct rdma_user_mmap_entry *rdma)
{
	return container_of(rdma, struct sroce_queue_mmap, rdma);
}

/* npages zeroed pages, mapped contiguously; *pagesp receives the pages. */
static void *sroce_queue_buf_alloc(unsigned int npages, gfp_t gfp,
				   struct page ***pagesp)
{
	struct page **pages;
	unsigned int i;
	void *buf;

	pages = kvcalloc(npages, sizeof(*pages), gfp);
	if (!pages)
		return NULL;
	for (i = 0; i < npages; i++) {
		pages[i] = alloc_page(gfp | __GFP_ZERO);
		if (!pages[i])
			goto err_put_pages;
	}
	buf = vmap(pages, npages, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	if (!buf)
		goto err_put_pages;
	sroce_obj_get(SROCE_OBJ_RING);
	*pagesp = pages;
	return buf;

err_put_pages:
	while (i--)
		put_page(pages[i]);
	kvfree(pages);
	return NULL;
}

/*
 * The kernel's side of the buffer goes: its mapping and its page
 * references.  Pages a user still maps stay until the munmap (see the top
 * of the file); their memory cgroup charge goes with them.
 */
static void sroce_queue_buf_free(void *buf, struct page **pages,
				 unsigned int npages)
{
	unsigned int i;

	vunmap(buf);
	for (i = 0; i < npages; i++)
		put_page(pages[i]);
	kvfree(pages);
	sroce_obj_put(SROCE_OBJ_RING);
}

/*
 * Allocate a ring of num_slots slots of 1 << slot_shift bytes.  With a user
 * context the ring is also entered in its mmap table; the key to mmap() it
 * at is then sroce_queue_mmap_key() and its length q->len.
 */
int sroce_queue_init(struct sroce_queue *q, u32 num_slots, u32 slot_shift,
		     struct ib_ucontext *uctx)
{
	gfp_t gfp = sroce_obj_gfp(uctx);
	struct sroce_queue_mmap *qm = NULL;
	struct page **pages;
	unsigned int npages;
	size_t len;
	void *buf;
	int err;

	if (WARN_ON(!sroce_ring_size_ok(num_slots) || slot_shift > 12))
		return -EINVAL;
	len = PAGE_ALIGN(sroce_ring_bytes(num_slots, slot_shift,
					  SROCE_RING_SLOTS_OFFSET));
	npages = len >> PAGE_SHIFT;

	buf = sroce_queue_buf_alloc(npages, gfp, &pages);
	if (!buf)
		return -ENOMEM;

	q->hdr = buf;
	q->num_slots = num_slots;
	q->slot_shift = slot_shift;
	q->len = len;
	q->pages = pages;
	q->hdr->num_slots = num_slots;
	q->hdr->slot_shift = slot_shift;

	if (uctx) {
		qm = kzalloc(sizeof(*qm), gfp);
		if (!qm) {
			err = -ENOMEM;
			goto err_free_buf;
		}
		qm->buf = buf;
		qm->pages = pages;
		qm->npages = npages;
		err = rdma_user_mmap_entry_insert(uctx, &qm->rdma, len);
		if (err)
			goto err_free_qm;
	}
	q->mmap = qm;
	return 0;

err_free_qm:
	kfree(qm);
err_free_buf:
	sroce_queue_buf_free(buf, pages, npages);
	q->hdr = NULL;
	q->pages = NULL;
	return err;
}

/*
 * The kernel is done with the ring: it must not touch q->hdr after this.
 * A user ring's memory goes when its mmap entry does (see the top of the
 * file).  A queue never initialised (all zero, like the RQ of a QP that
 * uses an SRQ) has nothing to free.
 */
void sroce_queue_cleanup(struct sroce_queue *q)
{
	if (!q->hdr)
		return;
	if (q->mmap)
		rdma_user_mmap_entry_remove(&q->mmap->rdma);
	else
		sroce_queue_buf_free(q->hdr, q->pages, q->len >> PAGE_SHIFT);
	q->hdr = NULL;
	q->pages = NULL;
	q->mmap = NULL;
}

u64 sroce_queue_mmap_key(const struct sroce_queue *q)
{
	return rdma_user_mmap_get_offset(&q->mmap->rdma);
}

/*
 * ib_device_ops.mmap.  rdma_user_mmap_entry_get() refuses private mappings,
 * unknown offsets and a length other than the ring's; a ring is data, so an
 * executable mapping is refused, and the right to mprotect() it executable
 * later is taken away.
 */
static int sroce_queue_mmap(struct ib_ucontext *uctx,
			    struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma;
	struct sroce_queue_mmap *qm;
	int err;

	rdma = rdma_user_mmap_entry_get(uctx, vma);
	if (!rdma)
		return -EINVAL;
	qm = to_sroce_queue_mmap(rdma);

	if (vma->vm_flags & VM_EXEC) {
		err = -EPERM;
		goto out;
	}
	if (test_and_set_bit(0, &qm->mapped)) {
		err = -EBUSY;
		goto out;
	}
	vm_flags_clear(vma, VM_MAYEXEC);
	err = remap_vmalloc_range(vma, qm->buf, 0);
	if (err)
		clear_bit(0, &qm->mapped);
out:
	rdma_user_mmap_entry_put(rdma);
	return err;
}

/* ib_device_ops.mmap_free: the last reference to the entry is gone. */
static void sroce_queue_mmap_free(struct rdma_user_mmap_entry *rdma)
{
	struct sroce_queue_mmap *qm = to_sroce_queue_mmap(rdma);

	sroce_queue_buf_free(qm->buf, qm->pages, qm->npages);
	kfree(qm);
}

const struct ib_device_ops sroce_queue_ops = {
	.mmap = sroce_queue_mmap,
	.mmap_free = sroce_queue_mmap_free,
};
