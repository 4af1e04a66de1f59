// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: completion queues.
 *
 * The kernel allocates each CQ's ring and returns the key to mmap() it on
 * the uverbs descriptor.  Polling and arming then happen in shared memory
 * without system calls: poll_cq copies CQEs out and releases the consumer
 * counter, req_notify_cq sets an ARM bit that the kernel clears when it
 * raises the completion event.  Events reach the application through
 * libibverbs' completion channel (ibv_get_cq_event() reads the uverbs event
 * file); the kernel has already disarmed the CQ by then, so the cq_event op
 * has nothing to do and keeps libibverbs' default.
 *
 * Locking: cq->lock serialises the process's pollers, which share the
 * private consumer counter; a poll that finds the ring empty takes no lock.
 * Arming needs no lock (an atomic OR).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "abi.h"
#include "ring.h"
#include "sroce.h"

static struct sroce_cqe *sroce_cq_slot(struct sroce_cq *cq, uint32_t idx)
{
	return (struct sroce_cqe *)((char *)cq->ring +
		sroce_ring_slot_offset(idx, cq->num_slots, cq->slot_shift,
				       SROCE_RING_SLOTS_OFFSET));
}

/*
 * Map the ring and check that the geometry the kernel wrote into its header
 * fits the mapping and the capacity it reported, so that no later index can
 * address memory outside the mapping.
 */
static int sroce_cq_map(struct sroce_context *ctx, struct sroce_cq *cq,
			const struct sroce_create_cq_resp *resp)
{
	struct sroce_ring_hdr *hdr;
	uint32_t num_slots, shift;

	hdr = mmap(NULL, resp->mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ctx->base_ctx.context.cmd_fd, (off_t)resp->mmap_key);
	if (hdr == MAP_FAILED)
		return errno;

	num_slots = hdr->num_slots;
	shift = hdr->slot_shift;
	if (!sroce_ring_size_ok(num_slots) || shift > 12 ||
	    (1u << shift) < sizeof(struct sroce_cqe) ||
	    sroce_ring_bytes(num_slots, shift, SROCE_RING_SLOTS_OFFSET) >
		    resp->mmap_len ||
	    num_slots != (uint32_t)cq->base_cq.cqe) {
		sroce_err(ctx, "CQ %u: bad ring (%u slots of 2^%u, %u bytes)",
			  resp->cqn, num_slots, shift, resp->mmap_len);
		munmap(hdr, resp->mmap_len);
		return EPROTO;
	}

	cq->ring = hdr;
	cq->map_len = resp->mmap_len;
	cq->num_slots = num_slots;
	cq->slot_shift = shift;
	cq->consumer = sroce_ring_load_acquire(&hdr->consumer);
	cq->cqn = resp->cqn;
	return 0;
}

struct ibv_cq *sroce_cq_create(struct ibv_context *ibctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct sroce_context *ctx = to_sroce_ctx(ibctx);
	struct verbs_cmd_create_cq cmd = {};
	union sroce_create_cq_reply reply = {};
	struct sroce_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->base_cq,
				&cmd, sizeof(cmd), &reply.core, sizeof(reply));
	if (ret)
		goto err_lock;

	ret = sroce_cq_map(ctx, cq, &reply.tail.drv);
	if (ret)
		goto err_destroy;
	return &cq->base_cq;

err_destroy:
	/* Nothing to do if this fails too: the context's close reaps it. */
	ibv_cmd_destroy_cq(&cq->base_cq);
err_lock:
	pthread_spin_destroy(&cq->lock);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

/*
 * The kernel stops writing to the ring before DESTROY_CQ returns, so the
 * ring is unmapped only then; on failure the CQ stays whole.
 */
int sroce_cq_destroy(struct ibv_cq *ibcq)
{
	struct sroce_cq *cq = to_sroce_cq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	munmap(cq->ring, cq->map_len);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

static void sroce_cq_to_wc(const struct sroce_cqe *slot, struct ibv_wc *wc)
{
	struct sroce_cqe cqe;

	memcpy(&cqe, slot, sizeof(cqe));
	*wc = (struct ibv_wc){
		.wr_id = cqe.wr_id,
		/* the uapi carries libibverbs' own values */
		.status = (enum ibv_wc_status)cqe.status,
		.opcode = (enum ibv_wc_opcode)cqe.opcode,
		.vendor_err = cqe.vendor_err,
		.byte_len = cqe.byte_len,
		.imm_data = cqe.ex,	/* or invalidated_rkey: same bits */
		.qp_num = cqe.qp_num,
		.src_qp = cqe.src_qp,
		.wc_flags = cqe.wc_flags,
		.pkey_index = cqe.pkey_index,
		.slid = cqe.slid,
		.sl = cqe.sl,
		.dlid_path_bits = cqe.dlid_path_bits,
	};
}

int sroce_cq_poll(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct sroce_cq *cq = to_sroce_cq(ibcq);
	uint32_t avail, n;

	if (num_entries <= 0)
		return 0;
	/*
	 * Applications spin here on an empty CQ; answer that without the
	 * lock.  The shared consumer counter is what the last poller
	 * released, so an empty answer is exact but for a race with another
	 * poller, which a poll is free to lose.
	 */
	if (sroce_ring_load_acquire(&cq->ring->producer) ==
	    sroce_ring_load_acquire(&cq->ring->consumer))
		return 0;

	pthread_spin_lock(&cq->lock);
	/* Acquire: the CQEs up to the producer are written before we read. */
	avail = sroce_ring_used(sroce_ring_load_acquire(&cq->ring->producer),
				cq->consumer, cq->num_slots);
	for (n = 0; n < (uint32_t)num_entries && n < avail; n++)
		sroce_cq_to_wc(sroce_cq_slot(cq, cq->consumer + n), &wc[n]);
	if (n) {
		cq->consumer += n;
		/* Release: the kernel may reuse the slots once we are done. */
		sroce_ring_store_release(&cq->ring->consumer, cq->consumer);
	}
	pthread_spin_unlock(&cq->lock);
	return (int)n;
}

/* No system call: the kernel reads the ARM bits when it posts a CQE. */
int sroce_cq_req_notify(struct ibv_cq *ibcq, int solicited_only)
{
	struct sroce_cq *cq = to_sroce_cq(ibcq);

	sroce_ring_flags_set(&cq->ring->flags, solicited_only ?
			     SROCE_CQ_ARM_SOLICITED : SROCE_CQ_ARM_NEXT);
	return 0;
}
