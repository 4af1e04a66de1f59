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
 * Extended polling holds the lock from start_poll to end_poll.  Arming
 * is an atomic OR, under the lock only so that it lands in the ring in
 * force while resize_cq swaps rings.
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

static void sroce_cq_ex_ops(struct sroce_cq *cq);

/* A CQ before its create command: zeroed, lock ready; NULL with errno. */
static struct sroce_cq *sroce_cq_alloc(void)
{
	struct sroce_cq *cq = calloc(1, sizeof(*cq));
	int ret;

	if (!cq)
		return NULL;
	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	return cq;
}

/*
 * After a successful create command: map the ring, or destroy the kernel
 * CQ again (nothing to do if that fails too: the context's close reaps it).
 */
static int sroce_cq_map_or_destroy(struct sroce_context *ctx,
				   struct sroce_cq *cq,
				   const struct sroce_create_cq_resp *resp)
{
	int ret = sroce_cq_map(ctx, cq, resp);

	if (ret)
		ibv_cmd_destroy_cq(&cq->base_cq);
	return ret;
}

/* What sroce_cq_alloc() made, once no kernel CQ or ring is left. */
static void sroce_cq_free(struct sroce_cq *cq)
{
	pthread_spin_destroy(&cq->lock);
	free(cq);
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

	cq = sroce_cq_alloc();
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->base_cq,
				&cmd, sizeof(cmd), &reply.core, sizeof(reply));
	if (!ret)
		ret = sroce_cq_map_or_destroy(ctx, cq, &reply.tail.drv);
	if (ret) {
		sroce_cq_free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->base_cq;
}

/*
 * What ibv_create_cq_ex may ask for: every field a CQE carries, and the
 * completion timestamps of the device clock and of CLOCK_REALTIME (the
 * kernel stamps both on a CQ created with the timestamp flag, see
 * sroce-abi.h).  Refused (EOPNOTSUPP): CVLAN, flow tags and tag matching
 * (no such features) and
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (an overrun puts the CQ in error for
 * good, see kernel/obj/cq.c).  pkey_index, which ibv_poll_cq reports, has no
 * read_* callback in libibverbs 44.  A parent domain (MASK_PD) is checked
 * by sroce_cq_pd_check() (pd.c).
 */
#define SROCE_CQ_WC_TS (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |		\
			IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define SROCE_CQ_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |	\
			   IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |	\
			   IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |		\
			   IBV_WC_EX_WITH_DLID_PATH_BITS | SROCE_CQ_WC_TS)

static int sroce_cq_ex_check(const struct ibv_cq_init_attr_ex *attr)
{
	if (attr->wc_flags & ~(uint64_t)SROCE_CQ_WC_FLAGS)
		return EOPNOTSUPP;
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD))
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && attr->flags)
		return EOPNOTSUPP;
	return 0;
}

/*
 * The same kernel CQ and ring as sroce_cq_create(); the extended command
 * carries no driver request, the response the same sroce tail.  libibverbs
 * turns IBV_WC_EX_WITH_COMPLETION_TIMESTAMP into the kernel's
 * IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION; the command is given it for a
 * CQ that asks only for the wall clock as well, since the kernel stamps
 * both clocks or neither.
 */
struct ibv_cq_ex *sroce_cq_create_ex(struct ibv_context *ibctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct sroce_context *ctx = to_sroce_ctx(ibctx);
	union sroce_create_cq_ex_reply reply = {};
	struct ibv_cq_init_attr_ex cmd_attr;
	struct sroce_cq *cq;
	int ret;

	ret = sroce_cq_ex_check(attr);
	if (!ret)
		ret = sroce_cq_pd_check(ibctx, attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	cmd_attr = *attr;
	if (cmd_attr.wc_flags & SROCE_CQ_WC_TS)
		cmd_attr.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	cq = sroce_cq_alloc();
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq_ex(ibctx, &cmd_attr, &cq->base_vcq, NULL, 0,
				   &reply.core, sizeof(reply), 0);
	if (!ret)
		ret = sroce_cq_map_or_destroy(ctx, cq, &reply.tail.drv);
	if (ret) {
		sroce_cq_free(cq);
		errno = ret;
		return NULL;
	}
	sroce_cq_ex_ops(cq);
	return &cq->base_vcq.cq_ex;
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
	while (cq->retired) {
		struct sroce_cq_retired *r = cq->retired;

		cq->retired = r->next;
		munmap(r->ring, r->len);
		free(r);
	}
	sroce_cq_free(cq);
	return 0;
}

/*
 * A ring replaced by resize_cq.  sroce_cq_poll() reads the ring's counters
 * without the lock, so a poller may still hold the old address: it is
 * mapped over with zeroed anonymous memory (which reads as an empty ring
 * and costs no memory until written) rather than unmapped, and the address
 * range is released with the CQ.  If even that fails, the old ring stays.
 */
static void sroce_cq_retire(struct sroce_cq *cq, struct sroce_ring_hdr *old,
			    size_t len)
{
	struct sroce_cq_retired *r = malloc(sizeof(*r));

	if (!r)
		return;
	if (mmap(old, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) == MAP_FAILED) {
		free(r);
		return;
	}
	r->ring = old;
	r->len = len;
	r->next = cq->retired;
	cq->retired = r;
}

/*
 * The kernel copies the unpolled CQEs into a new ring at the same counters
 * and swaps rings; the old ring then receives nothing more.  The lock keeps
 * this process's pollers and arming off both rings meanwhile (the kernel
 * reads the consumer counter from the old one and carries the flags over).
 * If the new ring cannot be mapped after the kernel swapped, the CQ is
 * lost to this process (an error is logged); it can still be destroyed.
 */
int sroce_cq_resize(struct ibv_cq *ibcq, int cqe)
{
	struct sroce_context *ctx = to_sroce_ctx(ibcq->context);
	struct sroce_cq *cq = to_sroce_cq(ibcq);
	struct verbs_cmd_resize_cq cmd = {};
	union sroce_resize_cq_reply reply = {};
	struct sroce_ring_hdr *old;
	size_t old_len;
	int ret;

	pthread_spin_lock(&cq->lock);
	old = cq->ring;
	old_len = cq->map_len;
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &reply.core,
				sizeof(reply));
	if (!ret) {
		ret = sroce_cq_map(ctx, cq, &reply.tail.drv);
		if (ret)
			sroce_err(ctx, "CQ %u: resized ring not mapped (%d)",
				  cq->cqn, ret);
		else
			sroce_cq_retire(cq, old, old_len);
	}
	pthread_spin_unlock(&cq->lock);
	return ret;
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

/*
 * A destroyed QP's unpolled completions go (sroce_ring_discard() says
 * why).  Called once DESTROY_QP has returned: the kernel posts nothing more
 * for the QP, and no QP has its number yet unless another thread created
 * one in between, a window hardware providers leave open too.  Only the
 * slots between the consumer and the producer read here are rewritten; the
 * kernel writes only past that producer, so the moves race with nothing,
 * and the slots freed at the consumer's end are released.  A receive
 * completion of an SRQ goes too, and its WQE with it: ibv_destroy_qp(3)
 * asks for the CQ to be drained first.
 */
void sroce_cq_discard_qp(struct sroce_cq *cq, uint32_t qpn)
{
	uint32_t gone;

	pthread_spin_lock(&cq->lock);
	gone = sroce_ring_discard(
		sroce_cq_slot(cq, 0), cq->num_slots, cq->slot_shift,
		cq->consumer,
		sroce_ring_used(sroce_ring_load_acquire(&cq->ring->producer),
				cq->consumer, cq->num_slots),
		sizeof(struct sroce_cqe), offsetof(struct sroce_cqe, qp_num),
		qpn);
	if (gone) {
		cq->consumer += gone;
		/* Release: the moves land before the kernel reuses a slot. */
		sroce_ring_store_release(&cq->ring->consumer, cq->consumer);
	}
	pthread_spin_unlock(&cq->lock);
}

/* No system call: the kernel reads the ARM bits when it posts a CQE. */
int sroce_cq_req_notify(struct ibv_cq *ibcq, int solicited_only)
{
	struct sroce_cq *cq = to_sroce_cq(ibcq);

	pthread_spin_lock(&cq->lock);
	sroce_ring_flags_set(&cq->ring->flags, solicited_only ?
			     SROCE_CQ_ARM_SOLICITED : SROCE_CQ_ARM_NEXT);
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* -- Extended polling (ibv_start_poll() ... ibv_end_poll()) ---------------- */

/*
 * The same ring, counter and lock as sroce_cq_poll(), so both may be used
 * on one CQ.  start_poll takes the lock and end_poll drops it, publishing
 * the consumer past every CQE read in between (ibv_start_poll(3)); each
 * CQE is copied out whole, so the read_* callbacks read the copy.
 */
static void sroce_cq_ex_load(struct sroce_cq *cq)
{
	memcpy(&cq->cur, sroce_cq_slot(cq, cq->consumer + cq->polled),
	       sizeof(cq->cur));
	cq->polled++;
	cq->base_vcq.cq_ex.wr_id = cq->cur.wr_id;
	/* the uapi carries libibverbs' own values */
	cq->base_vcq.cq_ex.status = (enum ibv_wc_status)cq->cur.status;
}

/* Acquire: the CQEs up to the producer are written before we read them. */
static uint32_t sroce_cq_ex_avail(struct sroce_cq *cq)
{
	return sroce_ring_used(sroce_ring_load_acquire(&cq->ring->producer),
			       cq->consumer, cq->num_slots);
}

static int sroce_cq_start_poll(struct ibv_cq_ex *cqx,
			       struct ibv_poll_cq_attr *attr)
{
	struct sroce_cq *cq = cqx_to_sroce_cq(cqx);

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	cq->polled = 0;
	cq->avail = sroce_cq_ex_avail(cq);
	if (!cq->avail) {
		/* no end_poll follows an ENOENT */
		pthread_spin_unlock(&cq->lock);
		return ENOENT;
	}
	sroce_cq_ex_load(cq);
	return 0;
}

static int sroce_cq_next_poll(struct ibv_cq_ex *cqx)
{
	struct sroce_cq *cq = cqx_to_sroce_cq(cqx);

	if (cq->polled == cq->avail) {
		cq->avail = sroce_cq_ex_avail(cq);
		if (cq->polled >= cq->avail)
			return ENOENT;
	}
	sroce_cq_ex_load(cq);
	return 0;
}

static void sroce_cq_end_poll(struct ibv_cq_ex *cqx)
{
	struct sroce_cq *cq = cqx_to_sroce_cq(cqx);

	cq->consumer += cq->polled;
	/* Release: the kernel may reuse the slots once we are done. */
	sroce_ring_store_release(&cq->ring->consumer, cq->consumer);
	cq->polled = 0;
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode sroce_cq_read_opcode(struct ibv_cq_ex *cqx)
{
	return (enum ibv_wc_opcode)cqx_to_sroce_cq(cqx)->cur.opcode;
}

static uint32_t sroce_cq_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.vendor_err;
}

static uint32_t sroce_cq_read_byte_len(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.byte_len;
}

/* Also ibv_wc_read_invalidated_rkey(): the same bits. */
static __be32 sroce_cq_read_imm_data(struct ibv_cq_ex *cqx)
{
	return (__be32)cqx_to_sroce_cq(cqx)->cur.ex;
}

static uint32_t sroce_cq_read_qp_num(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.qp_num;
}

static uint32_t sroce_cq_read_src_qp(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.src_qp;
}

static unsigned int sroce_cq_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.wc_flags;
}

static uint32_t sroce_cq_read_slid(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.slid;
}

static uint8_t sroce_cq_read_sl(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.sl;
}

static uint8_t sroce_cq_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.dlid_path_bits;
}

/* The device clock (CLOCK_MONOTONIC) in ns: what ibv_query_rt_values_ex reads. */
static uint64_t sroce_cq_read_completion_ts(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.ts;
}

static uint64_t sroce_cq_read_completion_wallclock_ns(struct ibv_cq_ex *cqx)
{
	return cqx_to_sroce_cq(cqx)->cur.ts_wallclock;
}

/*
 * Every reader is set: a CQE always carries every field; the timestamps
 * only on a CQ that asked for them (0 otherwise, never read: libibverbs'
 * readers are only valid for the wc_flags the CQ was created with).
 */
static void sroce_cq_ex_ops(struct sroce_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->base_vcq.cq_ex;

	cqx->start_poll = sroce_cq_start_poll;
	cqx->next_poll = sroce_cq_next_poll;
	cqx->end_poll = sroce_cq_end_poll;
	cqx->read_opcode = sroce_cq_read_opcode;
	cqx->read_vendor_err = sroce_cq_read_vendor_err;
	cqx->read_byte_len = sroce_cq_read_byte_len;
	cqx->read_imm_data = sroce_cq_read_imm_data;
	cqx->read_qp_num = sroce_cq_read_qp_num;
	cqx->read_src_qp = sroce_cq_read_src_qp;
	cqx->read_wc_flags = sroce_cq_read_wc_flags;
	cqx->read_slid = sroce_cq_read_slid;
	cqx->read_sl = sroce_cq_read_sl;
	cqx->read_dlid_path_bits = sroce_cq_read_dlid_path_bits;
	cqx->read_completion_ts = sroce_cq_read_completion_ts;
	cqx->read_completion_wallclock_ns =
		sroce_cq_read_completion_wallclock_ns;
}
