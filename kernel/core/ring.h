/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Index arithmetic of the shared rings (struct sroce_ring_hdr in
 * include/uapi/rdma/sroce-abi.h), and the one walk over a ring's entries
 * that both sides share (sroce_ring_discard()).
 *
 * producer and consumer are free-running 32-bit counters: they are never
 * masked when stored, only when a slot is addressed, so every slot of the
 * ring is usable (no slot is sacrificed to tell full from empty) and the
 * number of entries in flight is simply producer - consumer modulo 2^32.
 * That requires num_slots to be a power of two no larger than 2^31.
 *
 * One of the two counters is always written by the other side of the
 * user/kernel boundary and can hold anything.  A counter is only meaningful
 * if it lies within num_slots of the local one; the helpers below report a
 * peer counter outside that window as "no entries" (to a consumer) or "no
 * room" (to a producer), so a corrupt counter can neither make the kernel
 * read slots that were never written nor overwrite slots that were never
 * consumed.  Callers that must tell such a counter apart use
 * sroce_ring_valid().
 *
 * Pure functions: no memory ordering here, see kernel/queue.h and
 * userspace/provider/ring.h for the loads and stores around them.
 */
#ifndef SROCE_CORE_RING_H
#define SROCE_CORE_RING_H

#include "core_env.h"

#define SROCE_RING_MAX_SLOTS	0x80000000u	/* 2^31 */

/* num_slots is a usable ring size: a power of two in [1, 2^31]. */
static inline bool sroce_ring_size_ok(u32 num_slots)
{
	return num_slots && num_slots <= SROCE_RING_MAX_SLOTS &&
	       !(num_slots & (num_slots - 1));
}

/* producer and consumer describe between 0 and num_slots entries. */
static inline bool sroce_ring_valid(u32 producer, u32 consumer, u32 num_slots)
{
	return producer - consumer <= num_slots;
}

/* Entries a consumer may read; 0 if the counters make no sense. */
static inline u32 sroce_ring_used(u32 producer, u32 consumer, u32 num_slots)
{
	u32 used = producer - consumer;

	return used <= num_slots ? used : 0;
}

/* Slots a producer may fill; 0 if the counters make no sense. */
static inline u32 sroce_ring_free(u32 producer, u32 consumer, u32 num_slots)
{
	u32 used = producer - consumer;

	return used <= num_slots ? num_slots - used : 0;
}

static inline bool sroce_ring_empty(u32 producer, u32 consumer)
{
	return producer == consumer;
}

/* Index of the slot that counter value idx addresses. */
static inline u32 sroce_ring_slot(u32 idx, u32 num_slots)
{
	return idx & (num_slots - 1);
}

/* Byte offset of that slot from the start of the shared region. */
static inline size_t sroce_ring_slot_offset(u32 idx, u32 num_slots,
					    u32 slot_shift, size_t slots_offset)
{
	return slots_offset + ((size_t)sroce_ring_slot(idx, num_slots) << slot_shift);
}

/* Bytes of a region holding the header and num_slots slots. */
static inline size_t sroce_ring_bytes(u32 num_slots, u32 slot_shift,
				      size_t slots_offset)
{
	return slots_offset + ((size_t)num_slots << slot_shift);
}

/*
 * Drop the entries whose 32-bit word at key_off is key from the used
 * entries [consumer, consumer + used) of the slots at slots (entry_len
 * bytes each in slots of 2^slot_shift): the others move towards the
 * producer over the dropped ones, keeping their order, so the first n slots
 * from the consumer become free.  Each key is read once.  Returns n, by
 * which the caller advances its consumer.  A CQ ring's CQEs of a destroyed
 * QP go this way, in the kernel (kernel CQs) and in the provider (user
 * CQs): a completion names its QP by number, and the next QP created gets
 * the freed one.  The caller keeps the producer and every other consumer
 * off these slots.
 */
static inline u32 sroce_ring_discard(void *slots, u32 num_slots, u32 slot_shift,
				     u32 consumer, u32 used, size_t entry_len,
				     size_t key_off, u32 key)
{
	u32 i = consumer + used, gone = 0, k;
	char *at;

	while (i != consumer) {
		i--;
		at = (char *)slots + sroce_ring_slot_offset(i, num_slots,
							    slot_shift, 0);
		memcpy(&k, at + key_off, sizeof(k));
		if (k == key)
			gone++;
		else if (gone)
			memcpy((char *)slots +
			       sroce_ring_slot_offset(i + gone, num_slots,
						      slot_shift, 0),
			       at, entry_len);
	}
	return gone;
}

#endif /* SROCE_CORE_RING_H */
