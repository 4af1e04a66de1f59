/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The part of libibverbs' private provider interface (version node
 * IBVERBS_PRIVATE_34) that the sroce provider uses.
 *
 * rdma-core does not install its provider header, and this project does not
 * copy rdma-core code, so the few structures and functions the provider
 * needs are declared here from the facts of the interface: names, member
 * order, types.  libibverbs reads and writes these structures directly, so a
 * layout that drifts from the library's corrupts memory silently.  Every
 * structure is therefore pinned below with static_assert on its size and on
 * the offset of every member the provider or libibverbs touches.
 *
 * Where the numbers come from: linux-rdma/rdma-core tag v44.0, which is the
 * source of Debian 12's rdma-core 44.0-2 (IBVERBS_PABI_VERSION "34",
 * CMakeLists.txt:84).  Structures and prototypes: libibverbs/driver.h (line
 * numbers given at each declaration); the embedded list node:
 * ccan/list.h:24-27.  The command layouts the helpers take
 * (libibverbs/kern-abi.h) and the ioctl command block
 * (libibverbs/cmd_ioctl.h) are in verbs_cmd.h, included below.  The offsets
 * were obtained by compiling the v44.0 definitions on x86_64 (LP64) and
 * printing sizeof/offsetof.
 *
 * The private ABI changes with every rdma-core release that bumps
 * IBVERBS_PABI_VERSION; such a libibverbs no longer defines
 * verbs_register_driver_34@IBVERBS_PRIVATE_34, so dlopen() of this provider
 * fails, which is the intended failure.  Porting to another PABI means
 * re-checking every number in this file and in verbs_cmd.h against that
 * release.
 *
 * This header is included by C (the provider) and C++ (its unit tests).
 */
#ifndef SROCE_VERBS_PRIVATE_H
#define SROCE_VERBS_PRIVATE_H

#include <assert.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "verbs_cmd.h"

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "layouts below are checked for LP64 targets only"
#endif

/* -- Device matching (driver.h:192-208) ----------------------------------- */

/* verbs_match_ent.kind values; sroce only ever uses DRIVER_ID. */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

/* One row of a provider's match table; a zeroed row ends the table. */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};
static_assert(sizeof(struct verbs_match_ent) == 24, "v44 verbs_match_ent");
static_assert(offsetof(struct verbs_match_ent, u.driver_id) == 8,
	      "v44 verbs_match_ent.u");
static_assert(offsetof(struct verbs_match_ent, vendor) == 16,
	      "v44 verbs_match_ent.vendor");
static_assert(offsetof(struct verbs_match_ent, device) == 18,
	      "v44 verbs_match_ent.device");
static_assert(offsetof(struct verbs_match_ent, kind) == 20,
	      "v44 verbs_match_ent.kind");

/*
 * libibverbs' record of a sysfs/netlink device (driver.h:249-266).  The
 * provider never looks inside it, so it stays incomplete here.
 */
struct verbs_sysfs_dev;

/* -- Provider registration (driver.h:269-287) ------------------------------ */

struct verbs_device;
struct verbs_context;

struct verbs_device_ops {
	const char *name;
	/* inclusive range of the uverbs ABI version the kernel reports */
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};
static_assert(sizeof(struct verbs_device_ops) == 72, "v44 verbs_device_ops");
static_assert(offsetof(struct verbs_device_ops, match_min_abi_version) == 8,
	      "v44 verbs_device_ops.match_min_abi_version");
static_assert(offsetof(struct verbs_device_ops, match_max_abi_version) == 12,
	      "v44 verbs_device_ops.match_max_abi_version");
static_assert(offsetof(struct verbs_device_ops, match_table) == 16,
	      "v44 verbs_device_ops.match_table");
static_assert(offsetof(struct verbs_device_ops, static_providers) == 24,
	      "v44 verbs_device_ops.static_providers");
static_assert(offsetof(struct verbs_device_ops, match_device) == 32,
	      "v44 verbs_device_ops.match_device");
static_assert(offsetof(struct verbs_device_ops, alloc_context) == 40,
	      "v44 verbs_device_ops.alloc_context");
static_assert(offsetof(struct verbs_device_ops, import_context) == 48,
	      "v44 verbs_device_ops.import_context");
static_assert(offsetof(struct verbs_device_ops, alloc_device) == 56,
	      "v44 verbs_device_ops.alloc_device");
static_assert(offsetof(struct verbs_device_ops, uninit_device) == 64,
	      "v44 verbs_device_ops.uninit_device");

/*
 * The registration entry point carries the PABI number in its name
 * (driver.h:464-468), so a provider built for another rdma-core fails to
 * resolve instead of misreading these structures.
 */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/* -- Device object (driver.h:290-297) -------------------------------------- */

/*
 * libibverbs updates the reference count with C11 atomics.  C++ (the tests)
 * cannot name C's atomic_int, and only needs the layout, so it sees a plain
 * int of the same size.
 */
#ifdef __cplusplus
typedef int verbs_refcount_t;
#else
#include <stdatomic.h>
typedef atomic_int verbs_refcount_t;
#endif
static_assert(sizeof(verbs_refcount_t) == 4, "v44 atomic_int refcount");

/*
 * Allocated by the provider's alloc_device (with room for its own state
 * after it) and filled in by libibverbs; ops and refcount belong to the
 * library.
 */
struct verbs_device {
	struct ibv_device device;		/* must stay first */
	const struct verbs_device_ops *ops;
	verbs_refcount_t refcount;
	struct {				/* ccan struct list_node */
		void *next;
		void *prev;
	} entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};
static_assert(sizeof(struct ibv_device) == 664, "v44 ibv_device");
static_assert(sizeof(struct verbs_device) == 712, "v44 verbs_device");
static_assert(offsetof(struct verbs_device, device) == 0,
	      "v44 verbs_device.device");
static_assert(offsetof(struct verbs_device, ops) == 664,
	      "v44 verbs_device.ops");
static_assert(offsetof(struct verbs_device, refcount) == 672,
	      "v44 verbs_device.refcount");
static_assert(offsetof(struct verbs_device, entry) == 680,
	      "v44 verbs_device.entry");
static_assert(offsetof(struct verbs_device, sysfs) == 696,
	      "v44 verbs_device.sysfs");
static_assert(offsetof(struct verbs_device, core_support) == 704,
	      "v44 verbs_device.core_support");

/* -- Memory region object (driver.h:141-152) ------------------------------ */

/* What libibverbs records about how an MR was made. */
enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

/*
 * libibverbs' wrapper of every ibv_mr a provider returns: ibv_dereg_mr()
 * reads mr_type and access through it (container_of on the ibv_mr), so the
 * provider's MR must embed it, ibv_mr first.  ibv_cmd_reg_mr() fills it.
 */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};
static_assert(sizeof(struct ibv_mr) == 48, "v44 ibv_mr");
static_assert(sizeof(struct verbs_mr) == 56, "v44 verbs_mr");
static_assert(offsetof(struct verbs_mr, mr_type) == 48,
	      "v44 verbs_mr.mr_type");
static_assert(offsetof(struct verbs_mr, access) == 52,
	      "v44 verbs_mr.access");

/* -- Completion queue object (driver.h:169-174) --------------------------- */

/*
 * libibverbs' view of a CQ made by create_cq_ex: an ibv_cq_ex, whose first
 * members are those of ibv_cq, so either may be used.  The provider's CQ
 * embeds it first; ibv_cmd_create_cq_ex() fills it.
 */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};
static_assert(sizeof(struct ibv_cq) == 128, "v44 ibv_cq");
static_assert(sizeof(struct ibv_cq_ex) == 288, "v44 ibv_cq_ex");
static_assert(offsetof(struct ibv_cq_ex, status) == 132 &&
	      offsetof(struct ibv_cq_ex, wr_id) == 136 &&
	      offsetof(struct ibv_cq_ex, start_poll) == 144,
	      "v44 ibv_cq_ex poll state");
static_assert(sizeof(struct verbs_cq) == 288, "v44 verbs_cq");

/* -- XRC domain object (driver.h:102-115) --------------------------------- */

/* verbs_xrcd.comp_mask bits, set by ibv_cmd_open_xrcd(). */
enum verbs_xrcd_mask {
	VERBS_XRCD_HANDLE = 1 << 0,
	VERBS_XRCD_RESERVED = 1 << 1,
};

/*
 * libibverbs' wrapper of an ibv_xrcd: its helpers read the kernel handle
 * through it (container_of on the ibv_xrcd) when an XRC SRQ or QP is made
 * in the domain, so the provider's XRCD must be one.  ibv_cmd_open_xrcd()
 * fills it, handle only if the size it is told covers handle.
 */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};
static_assert(sizeof(struct ibv_xrcd) == 8, "v44 ibv_xrcd");
static_assert(sizeof(struct verbs_xrcd) == 16, "v44 verbs_xrcd");
static_assert(offsetof(struct verbs_xrcd, comp_mask) == 8,
	      "v44 verbs_xrcd.comp_mask");
static_assert(offsetof(struct verbs_xrcd, handle) == 12,
	      "v44 verbs_xrcd.handle");

/* -- Shared receive queue object (driver.h:117-123) ------------------------ */

/*
 * libibverbs' wrapper of an SRQ made by create_srq_ex: ibv_cmd_create_srq_ex()
 * writes the type, and for an XRC SRQ its XRCD and the number the kernel
 * gave it (srq_num), and the CQ if one was given.  The provider's SRQ
 * embeds it first, whichever verb made it.
 */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};
static_assert(sizeof(struct ibv_srq) == 128, "v44 ibv_srq");
static_assert(sizeof(struct verbs_srq) == 160, "v44 verbs_srq");
static_assert(offsetof(struct verbs_srq, srq) == 0, "v44 verbs_srq.srq");
static_assert(offsetof(struct verbs_srq, srq_type) == 128,
	      "v44 verbs_srq.srq_type");
static_assert(offsetof(struct verbs_srq, xrcd) == 136,
	      "v44 verbs_srq.xrcd");
static_assert(offsetof(struct verbs_srq, cq) == 144, "v44 verbs_srq.cq");
static_assert(offsetof(struct verbs_srq, srq_num) == 152,
	      "v44 verbs_srq.srq_num");

/* -- Queue pair object (driver.h:124-128, 159-166) ------------------------ */

/* verbs_qp.comp_mask bits, set by libibverbs' create helpers. */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

/*
 * libibverbs' wrapper of a QP created through ibv_cmd_create_qp_ex(): the
 * provider's QP embeds it first, and the library reaches comp_mask and xrcd
 * (container_of on the ibv_qp) for extended and XRC QPs.
 */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};
static_assert(sizeof(struct ibv_qp) == 160, "v44 ibv_qp");
static_assert(sizeof(struct ibv_qp_ex) == 352, "v44 ibv_qp_ex");
static_assert(sizeof(struct verbs_qp) == 368, "v44 verbs_qp");
static_assert(offsetof(struct verbs_qp, qp) == 0 &&
	      offsetof(struct verbs_qp, qp_ex) == 0,
	      "v44 verbs_qp.qp");
static_assert(offsetof(struct verbs_qp, comp_mask) == 352,
	      "v44 verbs_qp.comp_mask");
static_assert(offsetof(struct verbs_qp, xrcd) == 360,
	      "v44 verbs_qp.xrcd");

/* -- Context operations (driver.h:311-448) --------------------------------- */

/*
 * Every operation a provider can supply.  verbs_set_ops() copies the
 * non-NULL slots and leaves libibverbs' defaults (EOPNOTSUPP/ENOSYS) in the
 * others, so the provider fills in only what it implements.  The order is
 * libibverbs'; the comment that starts each slot is its index, so slot N
 * lies at byte offset 8 * N.  A slot the provider starts to set must get a
 * VERBS_OPS_SLOT() assertion below.
 */
struct verbs_context_ops {
	/*  0 */ int (*advise_mr)(struct ibv_pd *pd,
		  enum ibv_advise_mr_advice advice, uint32_t flags,
		  struct ibv_sge *sg_list, uint32_t num_sges);
	/*  1 */ struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
		  struct ibv_alloc_dm_attr *attr);
	/*  2 */ struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd,
		  enum ibv_mw_type type);
	/*  3 */ struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	/*  4 */ struct ibv_pd *(*alloc_parent_domain)(
		  struct ibv_context *context,
		  struct ibv_parent_domain_init_attr *attr);
	/*  5 */ struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	/*  6 */ struct ibv_td *(*alloc_td)(struct ibv_context *context,
		  struct ibv_td_init_attr *init_attr);
	/*  7 */ void (*async_event)(struct ibv_context *context,
		  struct ibv_async_event *event);
	/*  8 */ int (*attach_counters_point_flow)(
		  struct ibv_counters *counters,
		  struct ibv_counter_attach_attr *attr, struct ibv_flow *flow);
	/*  9 */ int (*attach_mcast)(struct ibv_qp *qp,
		  const union ibv_gid *gid, uint16_t lid);
	/* 10 */ int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);
	/* 11 */ int (*close_xrcd)(struct ibv_xrcd *xrcd);
	/* 12 */ void (*cq_event)(struct ibv_cq *cq);
	/* 13 */ struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
		  struct ibv_ah_attr *attr);
	/* 14 */ struct ibv_counters *(*create_counters)(
		  struct ibv_context *context,
		  struct ibv_counters_init_attr *init_attr);
	/* 15 */ struct ibv_cq *(*create_cq)(struct ibv_context *context,
		  int cqe, struct ibv_comp_channel *channel, int comp_vector);
	/* 16 */ struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
		  struct ibv_cq_init_attr_ex *init_attr);
	/* 17 */ struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
		  struct ibv_flow_attr *flow_attr);
	/* 18 */ struct ibv_flow_action *(*create_flow_action_esp)(
		  struct ibv_context *context,
		  struct ibv_flow_action_esp_attr *attr);
	/* 19 */ struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
		  struct ibv_qp_init_attr *attr);
	/* 20 */ struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
		  struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	/* 21 */ struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		  struct ibv_context *context,
		  struct ibv_rwq_ind_table_init_attr *init_attr);
	/* 22 */ struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
		  struct ibv_srq_init_attr *srq_init_attr);
	/* 23 */ struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
		  struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	/* 24 */ struct ibv_wq *(*create_wq)(struct ibv_context *context,
		  struct ibv_wq_init_attr *wq_init_attr);
	/* 25 */ int (*dealloc_mw)(struct ibv_mw *mw);
	/* 26 */ int (*dealloc_pd)(struct ibv_pd *pd);
	/* 27 */ int (*dealloc_td)(struct ibv_td *td);
	/* 28 */ int (*dereg_mr)(struct verbs_mr *vmr);
	/* 29 */ int (*destroy_ah)(struct ibv_ah *ah);
	/* 30 */ int (*destroy_counters)(struct ibv_counters *counters);
	/* 31 */ int (*destroy_cq)(struct ibv_cq *cq);
	/* 32 */ int (*destroy_flow)(struct ibv_flow *flow);
	/* 33 */ int (*destroy_flow_action)(struct ibv_flow_action *action);
	/* 34 */ int (*destroy_qp)(struct ibv_qp *qp);
	/* 35 */ int (*destroy_rwq_ind_table)(
		  struct ibv_rwq_ind_table *rwq_ind_table);
	/* 36 */ int (*destroy_srq)(struct ibv_srq *srq);
	/* 37 */ int (*destroy_wq)(struct ibv_wq *wq);
	/* 38 */ int (*detach_mcast)(struct ibv_qp *qp,
		  const union ibv_gid *gid, uint16_t lid);
	/* 39 */ void (*free_context)(struct ibv_context *context);
	/* 40 */ int (*free_dm)(struct ibv_dm *dm);
	/* 41 */ int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	/* 42 */ struct ibv_dm *(*import_dm)(struct ibv_context *context,
		  uint32_t dm_handle);
	/* 43 */ struct ibv_mr *(*import_mr)(struct ibv_pd *pd,
		  uint32_t mr_handle);
	/* 44 */ struct ibv_pd *(*import_pd)(struct ibv_context *context,
		  uint32_t pd_handle);
	/* 45 */ int (*modify_cq)(struct ibv_cq *cq,
		  struct ibv_modify_cq_attr *attr);
	/* 46 */ int (*modify_flow_action_esp)(struct ibv_flow_action *action,
		  struct ibv_flow_action_esp_attr *attr);
	/* 47 */ int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		  int attr_mask);
	/* 48 */ int (*modify_qp_rate_limit)(struct ibv_qp *qp,
		  struct ibv_qp_rate_limit_attr *attr);
	/* 49 */ int (*modify_srq)(struct ibv_srq *srq,
		  struct ibv_srq_attr *srq_attr, int srq_attr_mask);
	/* 50 */ int (*modify_wq)(struct ibv_wq *wq,
		  struct ibv_wq_attr *wq_attr);
	/* 51 */ struct ibv_qp *(*open_qp)(struct ibv_context *context,
		  struct ibv_qp_open_attr *attr);
	/* 52 */ struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
		  struct ibv_xrcd_init_attr *xrcd_init_attr);
	/* 53 */ int (*poll_cq)(struct ibv_cq *cq, int num_entries,
		  struct ibv_wc *wc);
	/* 54 */ int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
	/* 55 */ int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
	/* 56 */ int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
		  struct ibv_ops_wr **bad_op);
	/* 57 */ int (*post_srq_recv)(struct ibv_srq *srq,
		  struct ibv_recv_wr *recv_wr,
		  struct ibv_recv_wr **bad_recv_wr);
	/* 58 */ int (*query_device_ex)(struct ibv_context *context,
		  const struct ibv_query_device_ex_input *input,
		  struct ibv_device_attr_ex *attr, size_t attr_size);
	/* 59 */ int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	/* 60 */ int (*query_port)(struct ibv_context *context,
		  uint8_t port_num, struct ibv_port_attr *port_attr);
	/* 61 */ int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr);
	/* 62 */ int (*query_qp_data_in_order)(struct ibv_qp *qp,
		  enum ibv_wr_opcode op, uint32_t flags);
	/* 63 */ int (*query_rt_values)(struct ibv_context *context,
		  struct ibv_values_ex *values);
	/* 64 */ int (*query_srq)(struct ibv_srq *srq,
		  struct ibv_srq_attr *srq_attr);
	/* 65 */ int (*read_counters)(struct ibv_counters *counters,
		  uint64_t *counters_value, uint32_t ncounters, uint32_t flags);
	/* 66 */ struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd,
		  struct ibv_dm *dm, uint64_t dm_offset, size_t length,
		  unsigned int access);
	/* 67 */ struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd,
		  uint64_t offset, size_t length, uint64_t iova, int fd,
		  int access);
	/* 68 */ struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr,
		  size_t length, uint64_t hca_va, int access);
	/* 69 */ int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	/* 70 */ int (*rereg_mr)(struct verbs_mr *vmr, int flags,
		  struct ibv_pd *pd, void *addr, size_t length, int access);
	/* 71 */ int (*resize_cq)(struct ibv_cq *cq, int cqe);
	/* 72 */ int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	/* 73 */ void (*unimport_dm)(struct ibv_dm *dm);
	/* 74 */ void (*unimport_mr)(struct ibv_mr *mr);
	/* 75 */ void (*unimport_pd)(struct ibv_pd *pd);
};

#define VERBS_OPS_SLOT(member, index)					\
	static_assert(offsetof(struct verbs_context_ops, member) ==	\
		      8 * (index), "v44 verbs_context_ops." #member)

static_assert(sizeof(struct verbs_context_ops) == 76 * 8,
	      "v44 verbs_context_ops has 76 slots");
VERBS_OPS_SLOT(advise_mr, 0);
VERBS_OPS_SLOT(alloc_pd, 5);
VERBS_OPS_SLOT(attach_mcast, 9);
VERBS_OPS_SLOT(close_xrcd, 11);
VERBS_OPS_SLOT(create_ah, 13);
VERBS_OPS_SLOT(create_cq, 15);
VERBS_OPS_SLOT(create_cq_ex, 16);
VERBS_OPS_SLOT(create_qp, 19);
VERBS_OPS_SLOT(create_qp_ex, 20);
VERBS_OPS_SLOT(create_srq, 22);
VERBS_OPS_SLOT(create_srq_ex, 23);
VERBS_OPS_SLOT(dealloc_pd, 26);
VERBS_OPS_SLOT(dereg_mr, 28);
VERBS_OPS_SLOT(destroy_ah, 29);
VERBS_OPS_SLOT(destroy_cq, 31);
VERBS_OPS_SLOT(destroy_qp, 34);
VERBS_OPS_SLOT(destroy_srq, 36);
VERBS_OPS_SLOT(detach_mcast, 38);
VERBS_OPS_SLOT(free_context, 39);
VERBS_OPS_SLOT(get_srq_num, 41);
VERBS_OPS_SLOT(import_mr, 43);
VERBS_OPS_SLOT(import_pd, 44);
VERBS_OPS_SLOT(modify_qp, 47);
VERBS_OPS_SLOT(modify_srq, 49);
VERBS_OPS_SLOT(open_qp, 51);
VERBS_OPS_SLOT(open_xrcd, 52);
VERBS_OPS_SLOT(poll_cq, 53);
VERBS_OPS_SLOT(post_recv, 54);
VERBS_OPS_SLOT(post_send, 55);
VERBS_OPS_SLOT(post_srq_recv, 57);
VERBS_OPS_SLOT(query_device_ex, 58);
VERBS_OPS_SLOT(query_port, 60);
VERBS_OPS_SLOT(query_qp, 61);
VERBS_OPS_SLOT(query_srq, 64);
VERBS_OPS_SLOT(reg_mr, 68);
VERBS_OPS_SLOT(req_notify_cq, 69);
VERBS_OPS_SLOT(unimport_mr, 74);
VERBS_OPS_SLOT(unimport_pd, 75);

/* -- Context setup and teardown (driver.h:484-500) ------------------------- */

/*
 * Allocates alloc_size zeroed bytes, initialises the struct verbs_context
 * found context_offset bytes into them (the offset is passed disguised as a
 * pointer), installs the default ops, and records driver_id: libibverbs puts
 * it in the header of every uverbs ioctl, and the kernel rejects a mismatch
 * with EINVAL.  Takes ownership of cmd_fd; on failure it closes it, sets
 * errno and returns NULL.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);

/* Closes cmd_fd and async_fd, drops the device reference; does not free. */
void verbs_uninit_context(struct verbs_context *context);

/* Copies the non-NULL slots of ops into the context. */
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/* -- Logging (driver.h:52-61) ---------------------------------------------- */

/* Levels for __verbs_log(); printed when VERBS_LOG_LEVEL >= level. */
enum {
	VERBS_LOG_LEVEL_NONE = 0,
	VERBS_LOG_ERR = 1,
	VERBS_LOG_WARN = 2,
	VERBS_LOG_INFO = 3,
	VERBS_LOG_DEBUG = 4,
};

void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* -- Command helpers (driver.h:508-532) ------------------------------------ */

/*
 * All return 0 or a positive errno value.  resp/resp_size cover the core
 * response plus the driver tail that follows it; the bytes after the core
 * structure are passed to the kernel as driver data (udata).
 */
int ibv_cmd_get_context(struct verbs_context *context,
			struct verbs_cmd_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
/*
 * ibv_cmd_query_device_any() treats the bytes of resp beyond its own idea of
 * the structure as driver data; the provider's copy (linux-libc-dev) must
 * therefore be exactly as large as rdma-core v44's kernel-headers copy.
 */
static_assert(sizeof(struct ib_uverbs_ex_query_device_resp) == 304,
	      "v44 ib_uverbs_ex_query_device_resp");

/*
 * driver.h:511-512.  UVERBS_METHOD_QUERY_CONTEXT on an existing ucontext
 * (an imported cmd_fd): sets the context's num_comp_vectors and the
 * device's core_support, and carries the attributes of driver (one block,
 * or NULL) with its own.  Returns 0 or an errno value.
 */
int ibv_cmd_query_context(struct ibv_context *ctx,
			  struct ibv_command_buffer *driver);

int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct verbs_cmd_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct verbs_cmd_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

/*
 * driver.h:539-549.  reg_mr fills in the command's start, length, hca_va,
 * pd_handle and access_flags itself, and vmr's handle, keys, context,
 * mr_type and access from the response; libibverbs' ibv_reg_mr() sets pd,
 * addr and length afterwards.  dereg_mr only reads vmr, the caller frees it.
 */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct verbs_cmd_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);

/*
 * driver.h:550-551.  UVERBS_METHOD_QUERY_MR of mr_handle: fills in vmr's
 * keys and length from the kernel, its handle, context and pd from the
 * arguments, addr NULL and mr_type IBV_MR_TYPE_IMPORTED_MR.  Returns 0 or
 * an errno value (ENOENT for a handle the command fd does not have).
 */
int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr,
		     uint32_t mr_handle);

/*
 * driver.h (v44).  rereg_mr fills in the whole command from its arguments
 * (pd_handle only with IBV_REREG_MR_CHANGE_PD) and sets vmr's keys from
 * the response; libibverbs' ibv_rereg_mr() updates pd, addr and length.
 */
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct verbs_cmd_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);

/*
 * driver.h:646-650.  alloc_mw fills in the command's pd_handle and mw_type
 * itself, and mw's context, pd, rkey, handle and type from the response.
 */
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct verbs_cmd_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);

/*
 * driver.h:565-569, 583.  create_cq fills in the command's user_handle, cqe,
 * comp_vector and comp_channel itself, and cq's context, handle and cqe (the
 * kernel's capacity) from the response; libibverbs' ibv_create_cq() then
 * initialises the rest of cq (channel, cq_context, event counters, locks).
 * destroy_cq waits for the kernel to drop the CQ; the caller frees it.
 */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct verbs_cmd_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);

/*
 * driver.h (v44).  resize_cq fills in the command's cq_handle and cqe and
 * sets cq->cqe from the response.
 */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe,
		      struct verbs_cmd_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size);

/*
 * driver.h:656-663 (cmd_cq.c:144-174).  create_cq_ex accepts the FLAGS and
 * PD comp_mask bits and sends the CQ_CREATE method (or the legacy command
 * it falls back to); cmd may be NULL (no driver request data).  It fills in
 * cq's context, handle and cqe; libibverbs' ibv_create_cq_ex() then
 * initialises the rest (verbs_init_cq()).  cmd_flags: 0.
 */
struct ibv_create_cq_ex;
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);

/*
 * driver.h:611-615, 628-634, 640.  create_qp_ex accepts only the PD, XRCD
 * and SEND_OPS_FLAGS comp_mask bits; it fills in the command itself, qp's
 * context, handle, qp_num, pd, CQs, SRQ, type and RESET state (pd, CQs and
 * SRQ copied from attr_ex whatever the type), records the XRCD with
 * IBV_QP_INIT_ATTR_XRCD, and writes the kernel's rounded-up capacities
 * back into attr_ex->cap.  An XRC_RECV QP needs the XRCD, whose handle
 * goes out in place of the PD's; an XRC_SEND QP goes out without a
 * receive CQ and with no receive capacities.  modify_qp and
 * query_qp fill in their commands from attr and attr_mask; the libibverbs
 * wrappers update qp->state afterwards.  destroy_qp waits for the kernel
 * to drop the QP and its events; the caller frees it.
 */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct verbs_cmd_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct verbs_cmd_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct verbs_cmd_query_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

/*
 * driver.h:623-627 (cmd.c:343-391).  open_qp needs the XRCD, NUM and TYPE
 * comp_mask bits and sends OPEN_QP with the XRCD's handle as pd_handle; it
 * fills in qp's handle, context, qp_context, qp_num and qp_type, sets pd,
 * CQs and SRQ NULL and the state IBV_QPS_UNKNOWN, and records the XRCD if
 * vqp_sz covers verbs_qp.xrcd.  The kernel's response is the core
 * create_qp_resp; OPEN_QP reaches no driver, so there is no driver tail.
 */
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct verbs_cmd_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);

/*
 * driver.h:533-538 (cmd.c:67-97, cmd_xrcd.c).  open_xrcd needs the FD and
 * OFLAGS comp_mask bits and fills in xrcd's context, and its handle if
 * vxrcd_size covers it; the response is the core open_xrcd_resp (no driver
 * data).  close_xrcd destroys the kernel's XRCD (or drops this file's
 * reference to a shared one); the caller frees xrcd.
 */
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct verbs_cmd_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);

/*
 * driver.h:589-592, 598-605 (cmd_srq.c, cmd.c).  create_srq fills in the
 * command itself, srq's context, handle, mutex and cond, and writes the
 * kernel's capacities back into attr->attr (max_wr, max_sge); libibverbs'
 * ibv_create_srq() then sets srq_context, pd and events_completed.
 * modify_srq sends attr's max_wr and srq_limit with srq_attr_mask;
 * query_srq fills in all three attributes.  destroy_srq waits for the
 * kernel to drop the SRQ and its events; the caller frees it.
 */
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct verbs_cmd_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
/*
 * driver.h:593-597 (cmd_srq.c).  create_srq_ex refuses comp_mask bits past
 * IBV_SRQ_INIT_ATTR_RESERVED (EOPNOTSUPP) and needs PD (EINVAL); an XRC
 * SRQ needs XRCD and CQ.  It does what create_srq does and also fills in
 * srq's srq_type, cq, and for XRC its xrcd and srq_num (the core
 * response's srqn).  A basic SRQ goes out as CREATE_SRQ, others as
 * CREATE_XSRQ (or the ioctl SRQ_CREATE, either way); the response is the
 * core create_srq_resp and the driver tail after it.  The legacy write
 * path reads attr_ex->srq_type even without IBV_SRQ_INIT_ATTR_TYPE.
 */
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct verbs_cmd_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct verbs_cmd_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct verbs_cmd_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

/*
 * driver.h:641-644 (cmd.c:603-748).  Marshal a list of work requests into
 * the POST_SEND or POST_RECV write command and let the kernel post them.
 * sroce uses them only as doorbells, with wr == NULL: the command then
 * carries wr_count 0 and sge_count 0, and wqe_size is still
 * sizeof(struct ib_uverbs_send_wr) or sizeof(struct ib_uverbs_recv_wr), the
 * minimum the kernel accepts.  The 4-byte response (bad_wr) is read into
 * the helper's own buffer.  Return 0 or an errno value; on failure *bad_wr
 * names the failing WR of the list (NULL for an empty list).
 */
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

/*
 * driver.h's address-handle and multicast helpers (cmd.c).  CREATE_AH
 * writes the core response (the handle) and the driver tail into resp,
 * resp_size bytes; the kernel resolves the destination MAC.  ATTACH_MCAST
 * and DETACH_MCAST take no driver data.  Return 0 or an errno value.
 */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

#ifdef __cplusplus
}
#endif

#endif /* SROCE_VERBS_PRIVATE_H */
