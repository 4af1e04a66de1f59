/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version differences, all in one place.
 *
 * sroce builds against Debian's 6.1 and 6.12 kernels.  Code elsewhere uses
 * only the names defined here where the two differ.  Kbuild probes the target
 * kernel's headers for each feature (SROCE_HAVE_*) rather than trusting
 * version numbers, which distribution kernels bend with backports, and
 * force-includes this header.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

struct ib_device;
struct ib_udata;
struct uverbs_attr_bundle;

/*
 * "Pass uverbs_attr_bundle as part of .create_cq" (6.12 has it, 6.1 not)
 * changed the last argument of ib_device_ops.create_cq from the udata to the
 * attribute bundle.  SROCE_CREATE_CQ_ARG is the type of that argument and
 * sroce_create_cq_udata() recovers the udata, NULL for kernel consumers.
 */
#ifdef SROCE_HAVE_CREATE_CQ_ATTRS
#define SROCE_CREATE_CQ_ARG struct uverbs_attr_bundle
#define sroce_create_cq_udata(attrs) ({					\
	typeof(attrs) __attrs = (attrs);				\
	__attrs ? &__attrs->driver_udata : NULL;			\
})
#else
#define SROCE_CREATE_CQ_ARG struct ib_udata
#define sroce_create_cq_udata(udata) (udata)
#endif

/*
 * Newer kernels (6.12, not 6.1) let a driver record that the user chose the
 * device name (rdma link add NAME), for udev's rdma_rename to leave it alone.
 * Older ones have no such record; rdma_rename then renames only devices
 * whose "device" link leads to a PCI function (a hardware NIC's netdev,
 * kernel/device.c), which Documentation/admin-guide.md tells users how to
 * prevent.
 */
#ifndef SROCE_HAVE_NAME_ASSIGN_TYPE
static inline void ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
}
#endif

/*
 * ib_core's exclusive mode (rdma system set netns exclusive) shows a device
 * only in its own network namespace.  Newer kernels take that namespace at
 * allocation (ib_alloc_device_with_net()); 6.1 and 6.12 put every new device
 * in init_net, so a device added from inside a namespace would be invisible
 * there and could not even be deleted from it.  There the namespace is set
 * before registration, as the newer allocation does: only in exclusive mode
 * (rdma_dev_access_netns() of a device still in init_net tells which; in
 * shared mode every device stays in init_net).  The caller holds @ns until
 * registration is over, and the mode cannot change while a namespace other
 * than init_net exists.  Later, ib_core's exit of a dying namespace moves
 * its devices back to init_net, as it does for any device.
 */
#ifndef SROCE_HAVE_ALLOC_DEVICE_WITH_NET
#define ib_alloc_device_with_net(drv_struct, member, ns) ({		\
	__auto_type __d = ib_alloc_device(drv_struct, member);		\
	/* ib_alloc_device() checked that member is the first */	\
	struct ib_device *__ibdev = (struct ib_device *)__d;		\
	struct net *__ns = (ns);					\
									\
	if (__ibdev && !rdma_dev_access_netns(__ibdev, __ns))		\
		write_pnet(&__ibdev->coredev.rdma_net, __ns);		\
	__d;								\
})
#endif

/*
 * VMA flags are changed through helpers since 6.3 (6.12 has them, 6.1 not),
 * which also take the VMA write lock; on older kernels the mmap_lock the
 * caller holds is enough.
 */
#ifndef SROCE_HAVE_VM_FLAGS_CLEAR
#define vm_flags_clear(vma, flags) ((vma)->vm_flags &= ~(flags))
#endif

/*
 * A netdev that only hosts NAPI instances: allocated by alloc_netdev_dummy()
 * since 6.10 (6.12 has it), which also frees with free_netdev(); before
 * that (6.1) the caller allocated the struct and init_dummy_netdev() set
 * it up.
 */
#ifdef SROCE_HAVE_ALLOC_NETDEV_DUMMY
#define sroce_alloc_netdev_dummy() alloc_netdev_dummy(0)
#define sroce_free_netdev_dummy(dev) free_netdev(dev)
#else
#define sroce_alloc_netdev_dummy() ({					\
	struct net_device *__dev = kzalloc(sizeof(*__dev), GFP_KERNEL);	\
	if (__dev)							\
		init_dummy_netdev(__dev);				\
	__dev;								\
})
#define sroce_free_netdev_dummy(dev) kfree(dev)
#endif

/*
 * A trace event's __assign_str() takes the destination field only since
 * 6.10 (6.12), which copies the source its __string() named; 6.1's takes
 * the source again.  For dp/trace.h and obj/trace.h.
 */
#ifdef SROCE_HAVE_ASSIGN_STR_DST
#define sroce_assign_str(dst, src) __assign_str(dst)
#else
#define sroce_assign_str(dst, src) __assign_str(dst, src)
#endif

/*
 * The IBTA 1.5 memory placement extensions, ATOMIC WRITE and FLUSH: ib_core
 * knows them since 6.2 (6.12 has them, 6.1 not).  Their uverbs values are
 * ABI and named here for both kernels: work request opcodes (which the
 * provider writes into SQ slots), completion opcodes, device capability
 * bits and MR/QP access bits.
 *
 * ATOMIC WRITE needs nothing of ib_core: user QPs post into sroce's own
 * rings and the responder checks remote write access, so it works on both
 * kernels, and SROCE_DEVICE_PLACEMENT_CAPS announces it on both (6.1's
 * query_device_ex passes device_cap_flags through to device_cap_flags_ex).
 *
 * FLUSH needs the access bit IB_ACCESS_FLUSH_GLOBAL on the target MR (and
 * QP), which 6.1's ib_uverbs refuses in reg_mr (bits it does not know):
 * there no region can grant a FLUSH, a FLUSH request is refused with a
 * remote access error, and FLUSH_GLOBAL is not announced.  FLUSH_PERSISTENT
 * is announced by neither kernel, so ib_core refuses the access bit on 6.12
 * (see kernel/dp/resp.c for why).
 */
#define SROCE_UVERBS_WR_FLUSH		14
#define SROCE_UVERBS_WR_ATOMIC_WRITE	15
#define SROCE_UVERBS_WC_FLUSH		8
#define SROCE_UVERBS_WC_ATOMIC_WRITE	9
#define SROCE_DEVICE_FLUSH_GLOBAL	BIT_ULL(38)
#define SROCE_DEVICE_ATOMIC_WRITE	BIT_ULL(40)
#define SROCE_ACCESS_FLUSH_GLOBAL	BIT(8)
#define SROCE_ACCESS_FLUSH_PERSISTENT	BIT(9)

/* Where ib_core names them, the values must agree (used by verbs.c). */
#ifdef SROCE_HAVE_MEM_PLACEMENT
#define SROCE_CHECK_PLACEMENT_ABI() do {				\
	BUILD_BUG_ON(SROCE_UVERBS_WR_FLUSH != IB_UVERBS_WR_FLUSH);	\
	BUILD_BUG_ON(SROCE_UVERBS_WR_ATOMIC_WRITE !=			\
		     IB_UVERBS_WR_ATOMIC_WRITE);			\
	BUILD_BUG_ON(SROCE_UVERBS_WC_FLUSH != IB_UVERBS_WC_FLUSH);	\
	BUILD_BUG_ON(SROCE_UVERBS_WC_ATOMIC_WRITE !=			\
		     IB_UVERBS_WC_ATOMIC_WRITE);			\
	BUILD_BUG_ON(SROCE_DEVICE_FLUSH_GLOBAL != IB_DEVICE_FLUSH_GLOBAL); \
	BUILD_BUG_ON(SROCE_DEVICE_ATOMIC_WRITE != IB_DEVICE_ATOMIC_WRITE); \
	BUILD_BUG_ON(SROCE_ACCESS_FLUSH_GLOBAL != IB_ACCESS_FLUSH_GLOBAL); \
	BUILD_BUG_ON(SROCE_ACCESS_FLUSH_PERSISTENT !=			\
		     IB_ACCESS_FLUSH_PERSISTENT);			\
} while (0)
#define SROCE_DEVICE_PLACEMENT_CAPS	(SROCE_DEVICE_ATOMIC_WRITE | \
					 SROCE_DEVICE_FLUSH_GLOBAL)
#define SROCE_ACCESS_PLACEMENT		SROCE_ACCESS_FLUSH_GLOBAL
/*
 * What a QP's access flags may name: ib_cm asks for both FLUSH rights
 * whenever the device announces either (cm_init_qp_init_attr), so a QP
 * must take persistence too; no region grants it, so a FLUSH asking for it
 * is still refused.
 */
#define SROCE_QP_ACCESS_PLACEMENT	(SROCE_ACCESS_FLUSH_GLOBAL | \
					 SROCE_ACCESS_FLUSH_PERSISTENT)
#else
#define SROCE_CHECK_PLACEMENT_ABI() do { } while (0)
#define SROCE_DEVICE_PLACEMENT_CAPS	SROCE_DEVICE_ATOMIC_WRITE
#define SROCE_ACCESS_PLACEMENT		0
#define SROCE_QP_ACCESS_PLACEMENT	0
#endif

#endif /* SROCE_COMPAT_H */
