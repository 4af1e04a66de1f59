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

#endif /* SROCE_ABI_USER_H */
