/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Writing send queue slots: the one implementation behind both ways of
 * posting sends, ibv_post_send() (wq.c) and the extended ibv_wr_*() API
 * (qp_ex.c).
 *
 * Everything here runs with qp->sq.lock held.  A poster takes a slot with
 * sroce_sq_take(), which advances the private producer, fills it with the
 * setters below, and checks the finished slot with sroce_sq_check(); a slot
 * that fails its checks, or a whole batch that is abandoned, is given back
 * by moving the producer back (sroce_sq_untake(), sroce_sq_rewind()), which
 * is safe because nothing past the published producer is the kernel's.
 * sroce_sq_publish() then releases the producer and sroce_sq_ring() rings
 * the doorbell if the kernel asked for one, after the lock is dropped.
 */
#ifndef SROCE_PROVIDER_WQ_H
#define SROCE_PROVIDER_WQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/sroce-abi.h>

#include "sroce.h"

/* The SQ accepts work requests in RTS, SQD, SQE and ERR. */
bool sroce_sq_open(enum ibv_qp_state state);

/*
 * The next free slot, header zeroed, or NULL if the ring is full.  *room
 * caches the free slots this batch has seen; start it at 0.
 */
struct sroce_send_wqe *sroce_sq_take(struct sroce_qp *qp, uint32_t *room);
/* Give back the slot taken last. */
void sroce_sq_untake(struct sroce_qp *qp, uint32_t *room);
/* Give back every slot taken since the producer was start. */
void sroce_sq_rewind(struct sroce_qp *qp, uint32_t start);

/* The operation; send_flags outside what a slot carries are dropped. */
void sroce_sq_set_op(struct sroce_send_wqe *wqe, uint64_t wr_id,
		     uint32_t opcode, unsigned int send_flags);
/* Immediate data (network order, as given) or the rkey to invalidate. */
void sroce_sq_set_ex(struct sroce_send_wqe *wqe, uint32_t ex);
void sroce_sq_set_rdma(struct sroce_send_wqe *wqe, uint32_t rkey,
		       uint64_t remote_addr);
void sroce_sq_set_atomic(struct sroce_send_wqe *wqe, uint32_t rkey,
			 uint64_t remote_addr, uint64_t compare_add,
			 uint64_t swap);
void sroce_sq_set_ud(struct sroce_send_wqe *wqe, uint32_t ahn,
		     uint32_t remote_qpn, uint32_t remote_qkey);
/* XRC send QPs: the XRC SRQ at the target the message is for. */
void sroce_sq_set_xrc(struct sroce_send_wqe *wqe, uint32_t remote_srqn);

/* Forget the data set so far: no SGEs, no inline bytes. */
void sroce_sq_clear_data(struct sroce_send_wqe *wqe);
/* The SGE list; EINVAL if it is longer than max_send_sge. */
int sroce_sq_put_sges(const struct sroce_qp *qp, struct sroce_send_wqe *wqe,
		      const struct ibv_sge *sg, size_t num_sge);
/*
 * Append len bytes of inline payload; EINVAL, with nothing written, if the
 * slot's inline bytes would exceed max_inline_data.
 */
int sroce_sq_put_inline(const struct sroce_qp *qp,
			struct sroce_send_wqe *wqe, const void *addr,
			size_t len);

/*
 * A window bind: type 2 windows through the send queue, type 1 windows only
 * from ibv_bind_mw() (type1 set), where a zero length without an MR
 * unbinds; 0 or EINVAL.  The rest (PDs, rights, range) is checked by the
 * kernel, which completes a bad bind with IBV_WC_MW_BIND_ERR.
 */
int sroce_sq_check_bind(const struct ibv_mw *mw,
			const struct ibv_mw_bind_info *info, bool type1);
/* Bind mw, under the new key rkey, as info says. */
void sroce_sq_set_bind(struct sroce_send_wqe *wqe, const struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *info);

/* Local operations (BIND_MW, LOCAL_INV): a header, no payload. */
bool sroce_sq_is_local(uint32_t opcode);
/* What the QP type and the opcode require of a finished slot: 0 or EINVAL. */
int sroce_sq_check(const struct sroce_qp *qp, const struct sroce_send_wqe *wqe);

/* Publish every slot taken so far (release store of the producer). */
void sroce_sq_publish(struct sroce_qp *qp);
/* After publishing, lock dropped: the doorbell if the kernel wants one. */
int sroce_sq_ring(struct sroce_qp *qp);

#endif /* SROCE_PROVIDER_WQ_H */
