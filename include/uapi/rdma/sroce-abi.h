/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * sroce user/kernel ABI.
 *
 * This header is the single definition of everything the sroce kernel
 * module and its libibverbs provider (libsroce) exchange: the driver id that
 * binds them, the uverbs ABI version, and the driver-private tails of verbs
 * command responses.  Both sides include it unchanged and pin every layout
 * with compile-time assertions, so a change here that moves a field breaks
 * the build on both sides instead of corrupting memory at run time.
 *
 * Rules for changing it:
 *  - fields are only ever appended, every struct stays a multiple of 8 bytes
 *    and uses explicit padding;
 *  - an incompatible change bumps SROCE_UVERBS_ABI_VERSION; the kernel
 *    reports its version through ib_device_ops.uverbs_abi_ver and the
 *    provider refuses devices outside the range it was built for.
 */
#ifndef SROCE_ABI_USER_H
#define SROCE_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/*
 * Private rdma_driver_id.  The kernel reports it over netlink and checks it in
 * every uverbs ioctl header; libibverbs matches providers on it before trying
 * names, so the sroce provider binds sroce devices whatever the user calls
 * them and no other provider (rxe's name match included) can claim them.  It
 * lies far above the upstream enum (which ends near 20) to stay clear of ids
 * added later.
 */
#define SROCE_DRIVER_ID 0x5352

/* Version of the layouts in this file, reported as the uverbs ABI version. */
#define SROCE_UVERBS_ABI_VERSION 1

/* Identity reported by query_device (see Documentation/admin-guide.md). */
#define SROCE_VENDOR_ID 0xFFFFFF	/* no IEEE OUI: software device */
#define SROCE_VENDOR_PART_ID 0x5352	/* 'SR', not a perftest-known part */

/*
 * query_device's fw_ver carries the module version, 16 bits per part:
 * major << 32 | minor << 16 | patch, printed as "major.minor.patch".
 */
#define SROCE_FW_VER_PACK(major, minor, patch) \
	(((__u64)(major) << 32) | ((__u64)(minor) << 16) | (__u64)(patch))

/* Bits of sroce_alloc_ucontext_resp.features. */
enum sroce_ucontext_features {
	SROCE_FEATURE_NONE = 0,
};

/* Driver tail of the GET_CONTEXT response. */
struct sroce_alloc_ucontext_resp {
	__u32 abi_version;	/* SROCE_UVERBS_ABI_VERSION of the kernel */
	__u32 features;		/* enum sroce_ucontext_features */
	__u32 max_inline_data;	/* bytes a WQE may carry inline */
	__u32 reserved;
};

/* Driver tail of the ALLOC_PD response. */
struct sroce_alloc_pd_resp {
	__u32 pdn;		/* device-unique protection domain number */
	__u32 reserved;
};

/*
 * Driver-specific ioctl ids (the driver namespace of ib_user_ioctl_cmds.h:
 * ids from 1 << UVERBS_ID_NS_SHIFT), for the import verbs.
 *
 * ibv_import_device() re-creates a provider context from a command fd that
 * already has a kernel ucontext: ib_core's UVERBS_METHOD_QUERY_CONTEXT then
 * carries, in SROCE_ATTR_QUERY_CONTEXT_RESP (mandatory, out), the same
 * struct sroce_alloc_ucontext_resp GET_CONTEXT returned.
 *
 * ibv_import_pd() looks a PD handle up with SROCE_METHOD_PD_QUERY, a method
 * sroce adds to UVERBS_OBJECT_PD: SROCE_ATTR_QUERY_PD_HANDLE (the PD, read)
 * in, SROCE_ATTR_QUERY_PD_RESP_PDN (__u32, the pdn ALLOC_PD returned) out.
 * An unknown handle fails as every handle lookup of ib_core does (ENOENT).
 */
enum sroce_query_context_attrs {
	SROCE_ATTR_QUERY_CONTEXT_RESP = (1U << UVERBS_ID_NS_SHIFT),
};

enum sroce_pd_methods {
	SROCE_METHOD_PD_QUERY = (1U << UVERBS_ID_NS_SHIFT),
};

enum sroce_query_pd_attrs {
	SROCE_ATTR_QUERY_PD_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	SROCE_ATTR_QUERY_PD_RESP_PDN,
};

/*
 * Shared rings.
 *
 * Every queue userspace touches directly (CQ now; SQ, RQ and SRQ with the
 * data path) is one mmap()able region: a struct sroce_ring_hdr followed, at
 * SROCE_RING_SLOTS_OFFSET, by num_slots fixed-size slots.  The create
 * command's response gives the mmap key (the offset to pass to mmap() on the
 * uverbs file descriptor) and the region's length.
 *
 * producer and consumer are free-running 32-bit counters, each written by
 * one side only and never reset: the ring is empty when they are equal and
 * full when producer - consumer == num_slots; slot i lives at
 * SROCE_RING_SLOTS_OFFSET + ((i & (num_slots - 1)) << slot_shift).  A side
 * publishes a slot by a release store of its counter after writing the slot,
 * and reads the other side's counter with an acquire load.  The kernel keeps
 * its own counter privately and never trusts the copy in shared memory, nor
 * a peer counter that claims more than num_slots entries.
 *
 * flags is a bit field both sides update with atomic read-modify-write
 * operations; its bits are per queue type.
 */
struct sroce_ring_hdr {
	__u32 producer;
	__u32 pad0[15];
	__u32 consumer;
	__u32 pad1[15];
	__u32 flags;
	__u32 pad2[15];
	__u32 num_slots;	/* power of two, set once by the kernel */
	__u32 slot_shift;	/* log2 of the slot size, set once */
	__u32 pad3[14];
};

#define SROCE_RING_SLOTS_OFFSET 256

/*
 * CQ flags: the user arms the CQ by setting one of the ARM bits
 * (ibv_req_notify_cq needs no system call); the kernel clears them when it
 * raises the completion event.  OVERFLOW is set by the kernel when a
 * completion found the ring full (the CQ is then in error).
 */
enum sroce_cq_flags {
	SROCE_CQ_ARM_NEXT = 1 << 0,
	SROCE_CQ_ARM_SOLICITED = 1 << 1,
	SROCE_CQ_OVERFLOW = 1 << 2,
};

/*
 * One work completion.  status, opcode and wc_flags use the values of
 * libibverbs' enum ibv_wc_status, enum ibv_wc_opcode and enum ibv_wc_flags,
 * which are those of the kernel's enum ib_uverbs_wc_opcode and friends.
 * ts and ts_wallclock: see "Completion timestamps" below.
 */
struct sroce_cqe {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;
	__u32 vendor_err;
	__u32 byte_len;
	__u32 ex;		/* immediate data (network order) or rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 port_num;
	__u8 network_hdr_type;	/* for UD: RoCE v2 over IPv4 or IPv6 */
	__aligned_u64 ts;		/* device clock, ns (timestamp CQs) */
	__aligned_u64 ts_wallclock;	/* CLOCK_REALTIME, ns (timestamp CQs) */
};

/* Driver tail of the CREATE_CQ (and RESIZE_CQ) response. */
struct sroce_create_cq_resp {
	__aligned_u64 mmap_key;	/* offset to mmap() the ring at */
	__u32 mmap_len;		/* bytes to map */
	__u32 cqn;
};

/*
 * Queue pairs.
 *
 * A QP has two shared rings: the send queue (SQ) and the receive queue (RQ),
 * each laid out as above.  The provider produces work requests into them
 * (it writes slots and release-stores producer); the kernel consumes them and
 * release-stores consumer once a slot may be reused.  A slot's size is
 * 1 << slot_shift bytes, a power of two large enough for the QP's SGE and
 * inline capacities; the create response gives both rings' geometry.
 */

/* One scatter/gather element, as in struct ibv_sge. */
struct sroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * An SQ slot.  opcode is a libibverbs enum ibv_wr_opcode value, send_flags a
 * set of enum ibv_send_flags bits (which equal the kernel's
 * ib_uverbs_wr_opcode and ib_uverbs_send_flags).  ex is the immediate data
 * (network order) or the rkey to invalidate, per opcode.  With
 * IBV_SEND_INLINE, inline_len bytes of payload follow the header in place of
 * the SGE array and num_sge is 0; otherwise num_sge SGEs follow.
 *
 * IBV_WR_BIND_MW (also what ibv_bind_mw() posts for a type 1 window) names
 * the window by its current rkey (bind.mw_rkey) and gives the rkey it has
 * once bound (bind.new_rkey: same upper 24 bits, the low 8 bits are the
 * consumer's) and the range of the MR (bind.mr_lkey) it exposes; a zero
 * length unbinds a type 1 window.  IBV_WR_LOCAL_INV names the key in ex.
 * These local operations carry no SGEs.
 *
 * IBV_WR_ATOMIC_WRITE (15) is addressed by rdma and carries 8 bytes of
 * payload, inline or in SGEs.  FLUSH (14, the value of the kernel's
 * IB_UVERBS_WR_FLUSH and of later libibverbs' IBV_WR_FLUSH) is addressed by
 * flush and carries no payload.
 *
 * On an XRC send QP (IBV_QPT_XRC_SEND, the kernel's IB_QPT_XRC_INI) every
 * slot also names, in xrc_srqn, the XRC SRQ at the target that the message
 * is for (24 bits: wr.qp_type.xrc.remote_srqn, or ibv_wr_set_xrc_srqn());
 * the operations and their fields are those of RC.  On every other QP type
 * xrc_srqn is 0.
 */
struct sroce_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 send_flags;
	__u32 ex;		/* imm_data or invalidate_rkey */
	__u32 num_sge;
	__u32 inline_len;
	__u32 xrc_srqn;		/* XRC send QPs: the target's XRC SRQ; else 0 */
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 ah;	/* address handle number */
			__u32 reserved;
		} ud;
		struct {
			__aligned_u64 addr;	/* first byte of the window */
			__aligned_u64 length;
			__u32 mr_lkey;		/* MR the window lies in */
			__u32 mw_rkey;		/* the window's current rkey */
			__u32 new_rkey;		/* its rkey once bound */
			__u32 access;		/* IBV_ACCESS_REMOTE_* */
		} bind;
		struct {		/* FLUSH */
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 length;		/* selectivity range */
			__u8 type;		/* placement: IB_FLUSH_GLOBAL ... */
			__u8 level;		/* IB_FLUSH_RANGE or IB_FLUSH_MR */
			__u8 reserved[6];
		} flush;
		struct {		/* IB_WR_REG_MR: kernel QPs only */
			__u32 key;		/* the MR's key once valid */
			__u32 access;		/* IB_ACCESS_* */
		} reg;
		__u8 raw[32];
	} wr;
	/* then: struct sroce_sge sge[num_sge], or inline_len bytes */
};

/* An RQ slot: num_sge SGEs follow the header. */
struct sroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	/* then: struct sroce_sge sge[num_sge] */
};

/*
 * SQ flags.
 *
 * NEED_WAKEUP: the kernel's worker for this QP is idle (the flag is set at
 * creation) and will not look at the SQ again until the provider rings the
 * doorbell: the IB_USER_VERBS_CMD_POST_SEND command (libibverbs'
 * ibv_cmd_post_send() with no work requests) for this QP with wr_count 0.
 * A doorbell fails only if the device or QP is gone.  While the flag
 * is clear the worker is running and will see newly produced WQEs without a
 * doorbell, so the provider rings it only when the flag is set.
 *
 * No lost wakeup.  The provider (1) writes the WQEs, (2) release-stores the
 * SQ producer, (3) issues a full (sequentially consistent) fence, (4) loads
 * the flags and rings if NEED_WAKEUP is set.  The worker, before it sleeps,
 * (a) sets NEED_WAKEUP with a fully ordered atomic read-modify-write, (b)
 * issues a full barrier, (c) reloads the producer and, if WQEs arrived,
 * clears the flag again and keeps running.  With full barriers between the
 * store and the load on both sides, (4) missing the flag and (c) missing the
 * WQEs cannot both happen.  The kernel clears the flag when a doorbell
 * wakes the worker; a doorbell that finds the worker running is harmless.
 */
enum sroce_sq_flags {
	SROCE_SQ_NEED_WAKEUP = 1 << 0,
};

/*
 * RQ flags.
 *
 * NEED_WAKEUP: the QP is in the error state, so receive WQEs are no longer
 * consumed by arriving packets but must be completed with
 * IBV_WC_WR_FLUSH_ERR by the kernel's worker.  While the flag is set, the
 * provider rings the RQ doorbell after posting - the command
 * IB_USER_VERBS_CMD_POST_RECV for this QP with wr_count 0 - following the
 * same order as for the SQ: release-store the producer, full fence, load the
 * flags.  The kernel sets the flag (fully ordered) before its final flush of
 * the RQ, so a receive posted after that flush always sees it.  Outside the
 * error state receives need no doorbell: the responder reads the RQ when a
 * message arrives.
 */
enum sroce_rq_flags {
	SROCE_RQ_NEED_WAKEUP = 1 << 0,
};

/* Driver tail of the CREATE_QP response. */
struct sroce_create_qp_resp {
	__aligned_u64 sq_mmap_key;	/* offset to mmap() the SQ at */
	__aligned_u64 rq_mmap_key;	/* offset to mmap() the RQ at */
	__u32 sq_mmap_len;		/* bytes to map */
	__u32 rq_mmap_len;
	__u32 qpn;
	__u32 sq_slots;			/* power of two */
	__u32 sq_slot_shift;		/* log2 of the SQ slot size */
	__u32 rq_slots;
	__u32 rq_slot_shift;
	__u32 max_inline_data;		/* bytes an SQ slot carries inline */
};

/*
 * Address handles.  A UD send WQE names its destination by the number the
 * kernel gave the AH at creation (wr.ud.ah); the kernel checks that the AH
 * belongs to the QP's protection domain.
 */
struct sroce_create_ah_resp {
	__u32 ahn;		/* device-unique address handle number */
	__u32 reserved;
};

/*
 * Shared receive queues.
 *
 * An SRQ is one shared ring of struct sroce_recv_wqe slots, laid out and
 * used exactly like a QP's RQ: the provider produces receive WQEs (one
 * producer counter, so its posters serialise among themselves) and the
 * kernel consumes them for whichever QP attached to the SRQ receives a
 * message, release-storing consumer once a slot may be reused.  The SRQ
 * ring has no flags and no doorbell: the kernel reads it only when a
 * message arrives, and an SRQ has no error state in which WQEs would have
 * to be flushed.
 *
 * A QP created with an SRQ has no RQ ring of its own: its CREATE_QP
 * response reports rq_mmap_key, rq_mmap_len, rq_slots and rq_slot_shift 0.
 */

/* Driver tail of the CREATE_SRQ response. */
struct sroce_create_srq_resp {
	__aligned_u64 mmap_key;	/* offset to mmap() the ring at */
	__u32 mmap_len;		/* bytes to map */
	__u32 srqn;		/* device-unique SRQ number */
	__u32 slots;		/* power of two */
	__u32 slot_shift;	/* log2 of the slot size */
};

/*
 * Completion timestamps.
 *
 * The device clock is the kernel's CLOCK_MONOTONIC in nanoseconds, a
 * 64-bit free-running counter: query_device reports hca_core_clock
 * SROCE_HCA_CORE_CLOCK_KHZ (1 GHz, one tick a nanosecond) and
 * completion_timestamp_mask SROCE_COMPLETION_TIMESTAMP_MASK.  The same
 * clock is what clock_gettime(CLOCK_MONOTONIC) reads in userspace (one
 * timekeeper, shared through the vDSO), so the provider answers
 * ibv_query_rt_values_ex without a system call.
 *
 * A CQ created with IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION (libibverbs
 * sets it for IBV_WC_EX_WITH_COMPLETION_TIMESTAMP; the provider sets it for
 * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK too) gets every CQE stamped
 * when the kernel publishes it, under the CQ's post lock: ts with the
 * device clock, ts_wallclock with CLOCK_REALTIME at the same instant (the
 * monotonic reading converted with the timekeeper's current offset).  So
 * the stamps of one CQ never decrease in ring order.  Other CQs get 0 in
 * both, and cost no clock read.  Kernel CQs cannot ask (struct ib_wc has
 * no timestamp).
 */
#define SROCE_HCA_CORE_CLOCK_KHZ 1000000ULL
#define SROCE_COMPLETION_TIMESTAMP_MASK (~0ULL)

/*
 * Resizing (MODIFY_SRQ with IB_SRQ_MAX_WR).  The MODIFY_SRQ command has no
 * response, so its driver request carries the address of a struct
 * sroce_create_srq_resp that the kernel fills in for the new ring (same
 * srqn and slot_shift, the new slots); a user SRQ's resize without it
 * fails with EOPNOTSUPP, as it did before resizing existed.  The kernel
 * writes the response before it swaps rings, copies the unconsumed WQEs
 * into the new ring at the same counter values (its header's producer and
 * consumer are set to them) and stops using the old ring, whose mapping
 * stays valid until the provider unmaps it.  The provider must not post
 * meanwhile: the producer is read from the old ring once, under the
 * kernel's lock.  A request without IB_SRQ_MAX_WR may leave resp_addr 0.
 */
struct sroce_modify_srq_cmd {
	__aligned_u64 resp_addr;	/* user address of the response */
};

#endif /* SROCE_ABI_USER_H */
