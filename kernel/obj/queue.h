/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared rings: the memory of every queue userspace reads or writes directly
 * (CQ now; SQ, RQ and SRQ with the data path), laid out as struct
 * sroce_ring_hdr followed by the slots (include/uapi/rdma/sroce-abi.h).
 *
 * The same ring serves kernel consumers: a queue created without a user
 * context lives in memory nobody maps, and the same helpers apply.
 *
 * Memory ordering, as the uapi header states it: a side fills a slot, then
 * publishes it with a release store of its counter (sroce_queue_publish_*);
 * the other side reads that counter with an acquire load
 * (sroce_queue_peer_*) before it reads the slot.  The kernel's own counter
 * lives in struct sroce_queue and is only copied out; the copy in shared
 * memory is never read back.  A peer counter is checked with the helpers of
 * core/ring.h before it is used.
 */
#ifndef SROCE_QUEUE_H
#define SROCE_QUEUE_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "core/ring.h"

struct sroce_queue_mmap;

struct sroce_queue {
	struct sroce_ring_hdr *hdr;	/* start of the ring memory */
	u32 num_slots;			/* power of two */
	u32 slot_shift;
	size_t len;			/* bytes, a multiple of PAGE_SIZE */
	struct page **pages;		/* the ring's (owned by mmap if set) */
	struct sroce_queue_mmap *mmap;	/* NULL if no user maps the ring */
};

int sroce_queue_init(struct sroce_queue *q, u32 num_slots, u32 slot_shift,
		     struct ib_ucontext *uctx);
void sroce_queue_cleanup(struct sroce_queue *q);
u64 sroce_queue_mmap_key(const struct sroce_queue *q);

static inline void *sroce_queue_slot(const struct sroce_queue *q, u32 idx)
{
	return (char *)q->hdr + sroce_ring_slot_offset(idx, q->num_slots,
						       q->slot_shift,
						       SROCE_RING_SLOTS_OFFSET);
}

/*
 * Publish the kernel's producer after the slots up to it are written:
 * release, so the slots are visible before the counter that covers them.
 */
static inline void sroce_queue_publish_producer(struct sroce_queue *q, u32 val)
{
	/* pairs with the consumer's acquire load of producer */
	smp_store_release(&q->hdr->producer, val);
}

static inline void sroce_queue_publish_consumer(struct sroce_queue *q, u32 val)
{
	/* pairs with the producer's acquire load of consumer */
	smp_store_release(&q->hdr->consumer, val);
}

/*
 * The other side's counters.  Acquire: slot contents read after these loads
 * are at least as new as the counter.  The value may be anything if
 * userspace wrote it; check it with core/ring.h before use.
 */
static inline u32 sroce_queue_peer_consumer(const struct sroce_queue *q)
{
	/* pairs with the consumer's release store of consumer */
	return smp_load_acquire(&q->hdr->consumer);
}

static inline u32 sroce_queue_peer_producer(const struct sroce_queue *q)
{
	/* pairs with the producer's release store of producer */
	return smp_load_acquire(&q->hdr->producer);
}

/*
 * The shared flags word, updated by both sides with atomic read-modify-write
 * operations, is an atomic_t to the kernel.  The uapi declares it __u32 so
 * that userspace can use C11 atomics on it.
 */
static inline atomic_t *sroce_queue_flags(const struct sroce_queue *q)
{
	static_assert(sizeof(atomic_t) == sizeof(q->hdr->flags));
	return (atomic_t *)&q->hdr->flags;
}

extern const struct ib_device_ops sroce_queue_ops;

#endif /* SROCE_QUEUE_H */
