/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Full uverbs responses as the sroce provider receives them: the core
 * response defined by the kernel's <rdma/ib_user_verbs.h>, immediately
 * followed by the sroce driver tail from <rdma/sroce-abi.h>.
 *
 * The kernel writes the driver tail at the first byte after the core
 * response as the uverbs core sizes it (the method's declared response
 * length on the write() path, the UHW_OUT attribute on the ioctl path; both
 * start at offsetof(core, driver_data)).  libibverbs splits the buffer at
 * sizeof(core).  The assertions make sure the compiler put the tail exactly
 * there: a tail whose alignment exceeds the core's size (for example a __u64
 * after the 4-byte ALLOC_PD response) would be padded away from where the
 * kernel writes it.
 *
 * The core structures end in a flexible driver_data[] array and so cannot be
 * followed by another member; each reply is therefore a union of the core
 * response and a view that skips it to reach the tail.  Pass &reply.core and
 * sizeof(reply) to the ibv_cmd_* helper, read the tail as reply.tail.drv.
 *
 * Requests carry no driver data, so they use the plain command layouts of
 * verbs_cmd.h, except MODIFY_SRQ's (below).
 */
#ifndef SROCE_PROVIDER_ABI_H
#define SROCE_PROVIDER_ABI_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/sroce-abi.h>

#include "verbs_private.h"

#define SROCE_REPLY(name, core_type, drv_type)				\
	union name {							\
		core_type core;						\
		struct {						\
			uint8_t skip_core[sizeof(core_type)];		\
			drv_type drv;					\
		} tail;							\
	};								\
	static_assert(offsetof(union name, tail.drv) ==			\
			      offsetof(core_type, driver_data) &&	\
		      sizeof(union name) ==				\
			      sizeof(core_type) + sizeof(drv_type),	\
		      #name ": driver tail not right after the core response")

/* GET_CONTEXT (ibv_open_device) */
SROCE_REPLY(sroce_get_context_reply, struct ib_uverbs_get_context_resp,
	    struct sroce_alloc_ucontext_resp);
static_assert(sizeof(union sroce_get_context_reply) == 24,
	      "8-byte core response + 16-byte sroce tail");
static_assert(offsetof(struct sroce_alloc_ucontext_resp, abi_version) == 0 &&
	      offsetof(struct sroce_alloc_ucontext_resp, features) == 4 &&
	      offsetof(struct sroce_alloc_ucontext_resp, max_inline_data) == 8,
	      "sroce_alloc_ucontext_resp layout");

/* ALLOC_PD (ibv_alloc_pd) */
SROCE_REPLY(sroce_alloc_pd_reply, struct ib_uverbs_alloc_pd_resp,
	    struct sroce_alloc_pd_resp);
static_assert(sizeof(union sroce_alloc_pd_reply) == 12,
	      "4-byte core response + 8-byte sroce tail");
static_assert(offsetof(struct sroce_alloc_pd_resp, pdn) == 0,
	      "sroce_alloc_pd_resp layout");

/* CREATE_CQ (ibv_create_cq) */
SROCE_REPLY(sroce_create_cq_reply, struct ib_uverbs_create_cq_resp,
	    struct sroce_create_cq_resp);
static_assert(sizeof(union sroce_create_cq_reply) == 24,
	      "8-byte core response + 16-byte sroce tail");
static_assert(offsetof(struct sroce_create_cq_resp, mmap_key) == 0 &&
	      offsetof(struct sroce_create_cq_resp, mmap_len) == 8 &&
	      offsetof(struct sroce_create_cq_resp, cqn) == 12,
	      "sroce_create_cq_resp layout");

/* RESIZE_CQ (ibv_resize_cq): the CREATE_CQ tail, for the new ring */
SROCE_REPLY(sroce_resize_cq_reply, struct ib_uverbs_resize_cq_resp,
	    struct sroce_create_cq_resp);
static_assert(sizeof(union sroce_resize_cq_reply) == 24,
	      "8-byte core response + 16-byte sroce tail");

/* CREATE_AH (ibv_create_ah) */
SROCE_REPLY(sroce_create_ah_reply, struct ib_uverbs_create_ah_resp,
	    struct sroce_create_ah_resp);
static_assert(sizeof(union sroce_create_ah_reply) == 12,
	      "4-byte core response + 8-byte sroce tail");
static_assert(offsetof(struct sroce_create_ah_resp, ahn) == 0,
	      "sroce_create_ah_resp layout");

/*
 * CREATE_CQ through ibv_create_cq_ex: the extended core response, which has
 * no driver_data member (the driver's bytes follow the whole structure, in
 * the ioctl's UHW_OUT attribute), then the same tail as CREATE_CQ.
 */
union sroce_create_cq_ex_reply {
	struct ib_uverbs_ex_create_cq_resp core;
	struct {
		uint8_t skip_core[sizeof(struct ib_uverbs_ex_create_cq_resp)];
		struct sroce_create_cq_resp drv;
	} tail;
};
static_assert(sizeof(struct ib_uverbs_ex_create_cq_resp) == 16 &&
	      offsetof(union sroce_create_cq_ex_reply, tail.drv) == 16 &&
	      sizeof(union sroce_create_cq_ex_reply) == 32,
	      "16-byte extended core response + 16-byte sroce tail");

/*
 * CREATE_QP (ibv_create_qp, ibv_create_qp_ex).  An XRC_RECV QP is made by
 * ib_core without udata, so the kernel writes no tail for it: only the
 * core response is asked for.
 */
SROCE_REPLY(sroce_create_qp_reply, struct ib_uverbs_create_qp_resp,
	    struct sroce_create_qp_resp);
static_assert(sizeof(union sroce_create_qp_reply) == 80,
	      "32-byte core response + 48-byte sroce tail");
static_assert(offsetof(struct sroce_create_qp_resp, sq_mmap_key) == 0 &&
	      offsetof(struct sroce_create_qp_resp, rq_mmap_key) == 8 &&
	      offsetof(struct sroce_create_qp_resp, sq_mmap_len) == 16 &&
	      offsetof(struct sroce_create_qp_resp, rq_mmap_len) == 20 &&
	      offsetof(struct sroce_create_qp_resp, qpn) == 24 &&
	      offsetof(struct sroce_create_qp_resp, sq_slots) == 28 &&
	      offsetof(struct sroce_create_qp_resp, sq_slot_shift) == 32 &&
	      offsetof(struct sroce_create_qp_resp, rq_slots) == 36 &&
	      offsetof(struct sroce_create_qp_resp, rq_slot_shift) == 40 &&
	      offsetof(struct sroce_create_qp_resp, max_inline_data) == 44 &&
	      sizeof(struct sroce_create_qp_resp) == 48,
	      "sroce_create_qp_resp layout");

/*
 * CREATE_SRQ (ibv_create_srq), and CREATE_XSRQ (ibv_create_srq_ex, basic
 * and XRC): the same core response, whose srqn only CREATE_XSRQ fills in,
 * and the same tail.
 */
SROCE_REPLY(sroce_create_srq_reply, struct ib_uverbs_create_srq_resp,
	    struct sroce_create_srq_resp);
static_assert(sizeof(union sroce_create_srq_reply) == 40,
	      "16-byte core response + 24-byte sroce tail");
static_assert(offsetof(struct sroce_create_srq_resp, mmap_key) == 0 &&
	      offsetof(struct sroce_create_srq_resp, mmap_len) == 8 &&
	      offsetof(struct sroce_create_srq_resp, srqn) == 12 &&
	      offsetof(struct sroce_create_srq_resp, slots) == 16 &&
	      offsetof(struct sroce_create_srq_resp, slot_shift) == 20 &&
	      sizeof(struct sroce_create_srq_resp) == 24,
	      "sroce_create_srq_resp layout");

/*
 * MODIFY_SRQ (ibv_modify_srq with IBV_SRQ_MAX_WR): the command has no
 * response, so the driver request, right after the core request, carries
 * the address where the kernel writes the CREATE_SRQ tail for the new ring.
 */
struct sroce_modify_srq_req {
	struct verbs_cmd_modify_srq core;
	struct sroce_modify_srq_cmd drv;
};
static_assert(offsetof(struct sroce_modify_srq_req, drv) ==
		      sizeof(struct verbs_cmd_modify_srq) &&
	      offsetof(struct sroce_modify_srq_cmd, resp_addr) == 0 &&
	      sizeof(struct sroce_modify_srq_cmd) == 8 &&
	      sizeof(struct sroce_modify_srq_req) == 32,
	      "24-byte core request + 8-byte sroce request");

/* Work-request slots of the SQ, RQ and SRQ rings. */
static_assert(sizeof(struct sroce_sge) == 16 &&
	      offsetof(struct sroce_sge, length) == 8 &&
	      offsetof(struct sroce_sge, lkey) == 12,
	      "sroce_sge layout");
static_assert(sizeof(struct sroce_send_wqe) == 64 &&
	      offsetof(struct sroce_send_wqe, opcode) == 8 &&
	      offsetof(struct sroce_send_wqe, send_flags) == 12 &&
	      offsetof(struct sroce_send_wqe, ex) == 16 &&
	      offsetof(struct sroce_send_wqe, num_sge) == 20 &&
	      offsetof(struct sroce_send_wqe, inline_len) == 24 &&
	      offsetof(struct sroce_send_wqe, xrc_srqn) == 28 &&
	      offsetof(struct sroce_send_wqe, wr) == 32 &&
	      offsetof(struct sroce_send_wqe, wr.atomic.swap) == 48 &&
	      offsetof(struct sroce_send_wqe, wr.atomic.rkey) == 56 &&
	      offsetof(struct sroce_send_wqe, wr.ud.ah) == 40 &&
	      offsetof(struct sroce_send_wqe, wr.bind.length) == 40 &&
	      offsetof(struct sroce_send_wqe, wr.bind.mr_lkey) == 48 &&
	      offsetof(struct sroce_send_wqe, wr.bind.new_rkey) == 56 &&
	      offsetof(struct sroce_send_wqe, wr.bind.access) == 60,
	      "sroce_send_wqe layout");
/* A CQ ring slot: the timestamps fill its last 16 bytes. */
static_assert(sizeof(struct sroce_cqe) == 64 &&
	      offsetof(struct sroce_cqe, wc_flags) == 36 &&
	      offsetof(struct sroce_cqe, network_hdr_type) == 47 &&
	      offsetof(struct sroce_cqe, ts) == 48 &&
	      offsetof(struct sroce_cqe, ts_wallclock) == 56,
	      "sroce_cqe layout");
static_assert(sizeof(struct sroce_recv_wqe) == 16 &&
	      offsetof(struct sroce_recv_wqe, num_sge) == 8,
	      "sroce_recv_wqe layout");

#endif /* SROCE_PROVIDER_ABI_H */
