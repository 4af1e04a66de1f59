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

#endif /* SROCE_COMPAT_H */
