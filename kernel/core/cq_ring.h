/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Dropping one QP's completions from a CQ ring when the QP is destroyed: a
 * completion names its QP by number, and a freed number goes to the next
 * QP created, which would otherwise be given them.  The kernel does it for
 * its own CQs (kernel/obj/cq.c), the provider for the rings it consumes
 * (userspace/provider/cq.c).
 *
 * Pure function: the caller keeps the producer and every other consumer
 * off the slots it passes, and publishes its consumer afterwards.
 */
#ifndef SROCE_CORE_CQ_RING_H
#define SROCE_CORE_CQ_RING_H

#include <rdma/sroce-abi.h>

#include "core_env.h"
#include "ring.h"

static inline struct sroce_cqe *sroce_cq_ring_slot(void *base, u32 idx,
						   u32 num_slots,
						   u32 slot_shift)
{
	return (struct sroce_cqe *)((char *)base +
		sroce_ring_slot_offset(idx, num_slots, slot_shift,
				       SROCE_RING_SLOTS_OFFSET));
}

/*
 * Drop QP qpn's CQEs among the used entries [consumer, consumer + used) of
 * the ring at base: the others move towards the producer over the dropped
 * ones, keeping their order, so the first n slots from the consumer become
 * free.  Each slot is read once, into a private copy.  Returns n, by which
 * the caller advances its consumer.
 */
static inline u32 sroce_cq_ring_discard(void *base, u32 num_slots,
					u32 slot_shift, u32 consumer,
					u32 used, u32 qpn)
{
	struct sroce_cqe cqe;
	u32 i = consumer + used, gone = 0;

	while (i != consumer) {
		i--;
		memcpy(&cqe, sroce_cq_ring_slot(base, i, num_slots, slot_shift),
		       sizeof(cqe));
		if (cqe.qp_num == qpn)
			gone++;
		else if (gone)
			memcpy(sroce_cq_ring_slot(base, i + gone, num_slots,
						  slot_shift),
			       &cqe, sizeof(cqe));
	}
	return gone;
}

#endif /* SROCE_CORE_CQ_RING_H */
