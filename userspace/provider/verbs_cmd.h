/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * How libibverbs' private command helpers take their commands: the block
 * an ioctl is built in, and the legacy write() layouts of the requests the
 * ibv_cmd_* helpers of verbs_private.h are given.  Part of the declared
 * private ABI (IBVERBS_PRIVATE_34, rdma-core v44.0), kept apart from the
 * objects and helpers only for size; verbs_private.h includes it, and its
 * rules apply here: every layout is pinned by static_assert, the numbers
 * come from compiling the v44.0 definitions on x86_64, and the citations
 * are to libibverbs/cmd_ioctl.h and libibverbs/kern-abi.h at v44.0.
 *
 * This header is included by C (the provider) and C++ (its unit tests).
 */
#ifndef SROCE_VERBS_CMD_H
#define SROCE_VERBS_CMD_H

#include <assert.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#ifdef __cplusplus
extern "C" {
#endif

/* -- ioctl command buffers (cmd_ioctl.h:85-110, 193) ---------------------- */

/*
 * libibverbs builds a uverbs ioctl in a chain of these blocks.  A block's
 * attributes are its header's flexible array: filled ones from hdr.attrs
 * up to next_attr, free room up to last_attr, so a block for n attributes
 * is the first of an array of VERBS_CMDB_LEN(n) blocks.  next links a
 * caller's block: ibv_cmd_query_context() appends the attributes of the
 * block it is given to its own, which is how a provider adds its driver
 * attributes to a core method.  uhw_in_idx and uhw_out_idx are
 * VERBS_CMDB_NO_UHW (cmd_ioctl.h:110) in a block without the write
 * fallback's driver data; the flags byte is zero.
 */
struct ibv_command_buffer {
	struct ibv_command_buffer *next;
	struct ib_uverbs_attr *next_attr;
	struct ib_uverbs_attr *last_attr;
	uint8_t uhw_in_idx;
	uint8_t uhw_out_idx;
	uint8_t uhw_in_headroom_dwords;
	uint8_t uhw_out_headroom_dwords;
	uint8_t buffer_error : 1;
	uint8_t fallback_require_ex : 1;
	uint8_t fallback_ioctl_only : 1;
	struct ib_uverbs_ioctl_hdr hdr;
};
static_assert(sizeof(struct ibv_command_buffer) == 56,
	      "v44 ibv_command_buffer");
static_assert(offsetof(struct ibv_command_buffer, next_attr) == 8,
	      "v44 ibv_command_buffer.next_attr");
static_assert(offsetof(struct ibv_command_buffer, last_attr) == 16,
	      "v44 ibv_command_buffer.last_attr");
static_assert(offsetof(struct ibv_command_buffer, uhw_in_idx) == 24,
	      "v44 ibv_command_buffer.uhw_in_idx");
static_assert(offsetof(struct ibv_command_buffer, uhw_out_idx) == 25,
	      "v44 ibv_command_buffer.uhw_out_idx");
static_assert(offsetof(struct ibv_command_buffer, hdr) == 32,
	      "v44 ibv_command_buffer.hdr");
static_assert(sizeof(struct ib_uverbs_ioctl_hdr) == 24 &&
	      sizeof(struct ib_uverbs_attr) == 16, "uverbs ioctl layouts");

enum { VERBS_CMDB_NO_UHW = 0xFF };

#define VERBS_CMDB_LEN(n)						\
	((sizeof(struct ibv_command_buffer) +				\
	  (n) * sizeof(struct ib_uverbs_attr) +				\
	  sizeof(struct ibv_command_buffer) - 1) /			\
	 sizeof(struct ibv_command_buffer))

/*
 * Linearises the chain, fills in hdr's length, num_attrs and driver_id,
 * and sends RDMA_VERBS_IOCTL on the context's cmd_fd.  Returns 0 or the
 * ioctl's errno (also left in errno).
 */
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);

/* -- Legacy command layouts (kern-abi.h:76-97, 175-209) ------------------- */

/*
 * The ibv_cmd_* helpers take the legacy write() command: the uverbs command
 * header followed by the members of the kernel's request structure, then
 * any driver data.  rdma-core generates these as struct ibv_get_context,
 * ibv_alloc_pd and ibv_query_port, spelling the kernel structure's members
 * out in place (its flexible driver_data[] cannot be embedded); the tag names
 * here are ours, the layouts theirs, checked member by member against the
 * kernel structure.  The helpers fill in the header and the response
 * pointer themselves.
 */
#define VERBS_CMD_MEMBER(cmd, kabi, member)				\
	static_assert(offsetof(struct cmd, member) ==			\
		      sizeof(struct ib_uverbs_cmd_hdr) +		\
			      offsetof(struct kabi, member),		\
		      #cmd "." #member " must match " #kabi)
#define VERBS_CMD_SIZE(cmd, kabi, size)					\
	static_assert(sizeof(struct cmd) ==				\
			      sizeof(struct ib_uverbs_cmd_hdr) +	\
			      sizeof(struct kabi) &&			\
		      sizeof(struct cmd) == (size),			\
		      "v44 size of " #cmd)

struct verbs_cmd_get_context {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};
VERBS_CMD_MEMBER(verbs_cmd_get_context, ib_uverbs_get_context, response);
VERBS_CMD_SIZE(verbs_cmd_get_context, ib_uverbs_get_context, 16);

struct verbs_cmd_alloc_pd {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};
VERBS_CMD_MEMBER(verbs_cmd_alloc_pd, ib_uverbs_alloc_pd, response);
VERBS_CMD_SIZE(verbs_cmd_alloc_pd, ib_uverbs_alloc_pd, 16);

struct verbs_cmd_query_port {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u8 port_num;
	__u8 reserved[7];
};
VERBS_CMD_MEMBER(verbs_cmd_query_port, ib_uverbs_query_port, response);
VERBS_CMD_MEMBER(verbs_cmd_query_port, ib_uverbs_query_port, port_num);
VERBS_CMD_MEMBER(verbs_cmd_query_port, ib_uverbs_query_port, reserved);
VERBS_CMD_SIZE(verbs_cmd_query_port, ib_uverbs_query_port, 24);

struct verbs_cmd_reg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 start;
	__aligned_u64 length;
	__aligned_u64 hca_va;
	__u32 pd_handle;
	__u32 access_flags;
};
VERBS_CMD_MEMBER(verbs_cmd_reg_mr, ib_uverbs_reg_mr, response);
VERBS_CMD_MEMBER(verbs_cmd_reg_mr, ib_uverbs_reg_mr, start);
VERBS_CMD_MEMBER(verbs_cmd_reg_mr, ib_uverbs_reg_mr, length);
VERBS_CMD_MEMBER(verbs_cmd_reg_mr, ib_uverbs_reg_mr, hca_va);
VERBS_CMD_MEMBER(verbs_cmd_reg_mr, ib_uverbs_reg_mr, pd_handle);
VERBS_CMD_MEMBER(verbs_cmd_reg_mr, ib_uverbs_reg_mr, access_flags);
VERBS_CMD_SIZE(verbs_cmd_reg_mr, ib_uverbs_reg_mr, 48);

/* kern-abi.h:175 (DECLARE_CMD of IB_USER_VERBS_CMD_ALLOC_MW) */
struct verbs_cmd_alloc_mw {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 pd_handle;
	__u8 mw_type;
	__u8 reserved[3];
};
VERBS_CMD_MEMBER(verbs_cmd_alloc_mw, ib_uverbs_alloc_mw, response);
VERBS_CMD_MEMBER(verbs_cmd_alloc_mw, ib_uverbs_alloc_mw, pd_handle);
VERBS_CMD_MEMBER(verbs_cmd_alloc_mw, ib_uverbs_alloc_mw, mw_type);
VERBS_CMD_MEMBER(verbs_cmd_alloc_mw, ib_uverbs_alloc_mw, reserved);
VERBS_CMD_SIZE(verbs_cmd_alloc_mw, ib_uverbs_alloc_mw, 24);

/* kern-abi.h:181 (DECLARE_CMD of IB_USER_VERBS_CMD_CREATE_CQ) */
struct verbs_cmd_create_cq {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 cqe;
	__u32 comp_vector;
	__s32 comp_channel;
	__u32 reserved;
};
VERBS_CMD_MEMBER(verbs_cmd_create_cq, ib_uverbs_create_cq, response);
VERBS_CMD_MEMBER(verbs_cmd_create_cq, ib_uverbs_create_cq, user_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_cq, ib_uverbs_create_cq, cqe);
VERBS_CMD_MEMBER(verbs_cmd_create_cq, ib_uverbs_create_cq, comp_vector);
VERBS_CMD_MEMBER(verbs_cmd_create_cq, ib_uverbs_create_cq, comp_channel);
VERBS_CMD_MEMBER(verbs_cmd_create_cq, ib_uverbs_create_cq, reserved);
VERBS_CMD_SIZE(verbs_cmd_create_cq, ib_uverbs_create_cq, 40);

/* DECLARE_CMD of IB_USER_VERBS_CMD_RESIZE_CQ */
struct verbs_cmd_resize_cq {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 cq_handle;
	__u32 cqe;
};
VERBS_CMD_MEMBER(verbs_cmd_resize_cq, ib_uverbs_resize_cq, response);
VERBS_CMD_MEMBER(verbs_cmd_resize_cq, ib_uverbs_resize_cq, cq_handle);
VERBS_CMD_MEMBER(verbs_cmd_resize_cq, ib_uverbs_resize_cq, cqe);
VERBS_CMD_SIZE(verbs_cmd_resize_cq, ib_uverbs_resize_cq, 24);

/* DECLARE_CMD of IB_USER_VERBS_CMD_REREG_MR */
struct verbs_cmd_rereg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 mr_handle;
	__u32 flags;
	__aligned_u64 start;
	__aligned_u64 length;
	__aligned_u64 hca_va;
	__u32 pd_handle;
	__u32 access_flags;
};
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, response);
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, mr_handle);
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, flags);
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, start);
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, length);
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, hca_va);
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, pd_handle);
VERBS_CMD_MEMBER(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, access_flags);
VERBS_CMD_SIZE(verbs_cmd_rereg_mr, ib_uverbs_rereg_mr, 56);

/* kern-abi.h:182 (DECLARE_CMD of IB_USER_VERBS_CMD_CREATE_QP) */
struct verbs_cmd_create_qp {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 pd_handle;
	__u32 send_cq_handle;
	__u32 recv_cq_handle;
	__u32 srq_handle;
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u8 sq_sig_all;
	__u8 qp_type;
	__u8 is_srq;
	__u8 reserved;
};
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, response);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, user_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, pd_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, send_cq_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, recv_cq_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, srq_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, max_send_wr);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, max_recv_wr);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, max_send_sge);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, max_recv_sge);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, max_inline_data);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, sq_sig_all);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, qp_type);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, is_srq);
VERBS_CMD_MEMBER(verbs_cmd_create_qp, ib_uverbs_create_qp, reserved);
VERBS_CMD_SIZE(verbs_cmd_create_qp, ib_uverbs_create_qp, 64);

/*
 * kern-abi.h:194 (DECLARE_CMDX of IB_USER_VERBS_CMD_MODIFY_QP).  The
 * provider never reads or writes the members (ibv_cmd_modify_qp() fills
 * them all from the ibv_qp_attr), so the kernel structure is carried as
 * opaque words of its exact size and alignment.
 */
struct verbs_cmd_modify_qp {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 core_payload[sizeof(struct ib_uverbs_modify_qp) / 8];
};
static_assert(sizeof(struct ib_uverbs_modify_qp) % 8 == 0 &&
	      alignof(struct ib_uverbs_modify_qp) == 8,
	      "ib_uverbs_modify_qp is a whole number of 64-bit words");
VERBS_CMD_SIZE(verbs_cmd_modify_qp, ib_uverbs_modify_qp, 120);

/* kern-abi.h:204 (DECLARE_CMD of IB_USER_VERBS_CMD_QUERY_QP) */
struct verbs_cmd_query_qp {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 qp_handle;
	__u32 attr_mask;
};
VERBS_CMD_MEMBER(verbs_cmd_query_qp, ib_uverbs_query_qp, response);
VERBS_CMD_MEMBER(verbs_cmd_query_qp, ib_uverbs_query_qp, qp_handle);
VERBS_CMD_MEMBER(verbs_cmd_query_qp, ib_uverbs_query_qp, attr_mask);
VERBS_CMD_SIZE(verbs_cmd_query_qp, ib_uverbs_query_qp, 24);

/* kern-abi.h:183 (DECLARE_CMD of IB_USER_VERBS_CMD_CREATE_SRQ) */
struct verbs_cmd_create_srq {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 pd_handle;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
};
VERBS_CMD_MEMBER(verbs_cmd_create_srq, ib_uverbs_create_srq, response);
VERBS_CMD_MEMBER(verbs_cmd_create_srq, ib_uverbs_create_srq, user_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_srq, ib_uverbs_create_srq, pd_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_srq, ib_uverbs_create_srq, max_wr);
VERBS_CMD_MEMBER(verbs_cmd_create_srq, ib_uverbs_create_srq, max_sge);
VERBS_CMD_MEMBER(verbs_cmd_create_srq, ib_uverbs_create_srq, srq_limit);
VERBS_CMD_SIZE(verbs_cmd_create_srq, ib_uverbs_create_srq, 40);

/* kern-abi.h:195 (DECLARE_CMDX of IB_USER_VERBS_CMD_MODIFY_SRQ) */
struct verbs_cmd_modify_srq {
	struct ib_uverbs_cmd_hdr hdr;
	__u32 srq_handle;
	__u32 attr_mask;
	__u32 max_wr;
	__u32 srq_limit;
};
VERBS_CMD_MEMBER(verbs_cmd_modify_srq, ib_uverbs_modify_srq, srq_handle);
VERBS_CMD_MEMBER(verbs_cmd_modify_srq, ib_uverbs_modify_srq, attr_mask);
VERBS_CMD_MEMBER(verbs_cmd_modify_srq, ib_uverbs_modify_srq, max_wr);
VERBS_CMD_MEMBER(verbs_cmd_modify_srq, ib_uverbs_modify_srq, srq_limit);
VERBS_CMD_SIZE(verbs_cmd_modify_srq, ib_uverbs_modify_srq, 24);

/* kern-abi.h:205 (DECLARE_CMD of IB_USER_VERBS_CMD_QUERY_SRQ) */
struct verbs_cmd_query_srq {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 srq_handle;
	__u32 reserved;
};
VERBS_CMD_MEMBER(verbs_cmd_query_srq, ib_uverbs_query_srq, response);
VERBS_CMD_MEMBER(verbs_cmd_query_srq, ib_uverbs_query_srq, srq_handle);
VERBS_CMD_MEMBER(verbs_cmd_query_srq, ib_uverbs_query_srq, reserved);
VERBS_CMD_SIZE(verbs_cmd_query_srq, ib_uverbs_query_srq, 24);

/* kern-abi.h:197 (DECLARE_CMD of IB_USER_VERBS_CMD_OPEN_XRCD) */
struct verbs_cmd_open_xrcd {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 fd;
	__u32 oflags;
};
VERBS_CMD_MEMBER(verbs_cmd_open_xrcd, ib_uverbs_open_xrcd, response);
VERBS_CMD_MEMBER(verbs_cmd_open_xrcd, ib_uverbs_open_xrcd, fd);
VERBS_CMD_MEMBER(verbs_cmd_open_xrcd, ib_uverbs_open_xrcd, oflags);
VERBS_CMD_SIZE(verbs_cmd_open_xrcd, ib_uverbs_open_xrcd, 24);

/*
 * kern-abi.h:184 (DECLARE_CMDX of IB_USER_VERBS_CMD_CREATE_XSRQ, whose
 * response is struct ib_uverbs_create_srq_resp, srqn included).
 */
struct verbs_cmd_create_xsrq {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 srq_type;
	__u32 pd_handle;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 max_num_tags;
	__u32 xrcd_handle;
	__u32 cq_handle;
};
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, response);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, user_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, srq_type);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, pd_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, max_wr);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, max_sge);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, srq_limit);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, max_num_tags);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, xrcd_handle);
VERBS_CMD_MEMBER(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, cq_handle);
VERBS_CMD_SIZE(verbs_cmd_create_xsrq, ib_uverbs_create_xsrq, 56);

/*
 * kern-abi.h:196 (DECLARE_CMDX of IB_USER_VERBS_CMD_OPEN_QP, whose
 * response is struct ib_uverbs_create_qp_resp).  pd_handle carries the
 * XRCD's handle.
 */
struct verbs_cmd_open_qp {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__aligned_u64 user_handle;
	__u32 pd_handle;
	__u32 qpn;
	__u8 qp_type;
	__u8 reserved[7];
};
VERBS_CMD_MEMBER(verbs_cmd_open_qp, ib_uverbs_open_qp, response);
VERBS_CMD_MEMBER(verbs_cmd_open_qp, ib_uverbs_open_qp, user_handle);
VERBS_CMD_MEMBER(verbs_cmd_open_qp, ib_uverbs_open_qp, pd_handle);
VERBS_CMD_MEMBER(verbs_cmd_open_qp, ib_uverbs_open_qp, qpn);
VERBS_CMD_MEMBER(verbs_cmd_open_qp, ib_uverbs_open_qp, qp_type);
VERBS_CMD_MEMBER(verbs_cmd_open_qp, ib_uverbs_open_qp, reserved);
VERBS_CMD_SIZE(verbs_cmd_open_qp, ib_uverbs_open_qp, 40);

#ifdef __cplusplus
}
#endif

#endif /* SROCE_VERBS_CMD_H */
