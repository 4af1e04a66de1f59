/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The provider's side of the shared rings (struct sroce_ring_hdr in
 * <rdma/sroce-abi.h>, kernel side in kernel/obj/queue.h).
 *
 * The kernel and the provider are the two parties of the ring protocol;
 * C11 atomics give the provider the orderings it needs:
 *  - the other side's counter is read with an acquire load, so the slots
 *    read after it are at least as new as the counter;
 *  - our own counter is published with a release store after the slots it
 *    covers were read (CQ) or written (SQ, RQ);
 *  - the flags word is changed by atomic read-modify-write only.
 * Threads of one process are serialised by the owning object's lock, not
 * here.  The index arithmetic is kernel/core/ring.h, shared with the kernel.
 *
 * The uapi declares the shared words as plain __u32; they are accessed here
 * as _Atomic uint32_t, which has the same size and representation.
 */
#ifndef SROCE_PROVIDER_RING_H
#define SROCE_PROVIDER_RING_H

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/ring.h"

static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t),
	      "shared ring words are plain 32-bit words");

static inline _Atomic uint32_t *sroce_ring_word(uint32_t *p)
{
	return (_Atomic uint32_t *)p;
}

/* The other side's counter. */
static inline uint32_t sroce_ring_load_acquire(uint32_t *p)
{
	return atomic_load_explicit(sroce_ring_word(p), memory_order_acquire);
}

/* Our own counter, after the slots it covers are done with. */
static inline void sroce_ring_store_release(uint32_t *p, uint32_t val)
{
	atomic_store_explicit(sroce_ring_word(p), val, memory_order_release);
}

static inline uint32_t sroce_ring_flags_read(uint32_t *flags)
{
	return atomic_load_explicit(sroce_ring_word(flags),
				    memory_order_relaxed);
}

/*
 * Set bits in the flags word and order that store before every later load,
 * the producer counter's in particular.  This is the consumer's half of the
 * lost-wakeup argument in kernel/obj/cq.c: the kernel publishes its producer,
 * runs a full barrier, then reads the flags; with a full barrier here too,
 * either the kernel sees the ARM bit or our next poll sees the CQE.  The
 * fence is explicit because a sequentially consistent read-modify-write
 * alone does not order later plain loads on every architecture.
 */
static inline void sroce_ring_flags_set(uint32_t *flags, uint32_t bits)
{
	atomic_fetch_or_explicit(sroce_ring_word(flags), bits,
				 memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
}

#endif /* SROCE_PROVIDER_RING_H */
