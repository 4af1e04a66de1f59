// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce libibverbs provider: registration and device lifetime.
 *
 * libibverbs dlopen()s libsroce-rdmav34.so, whose constructor registers
 * sroce_dev_ops.  For every RDMA device it then compares the kernel's
 * driver id (netlink RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID) with our match table
 * and the uverbs ABI version with our range.  sroce matches on its private
 * driver id alone: never by device name or parent modalias, so it binds
 * every sroce device whatever it is called and nothing else.
 */
#include <stdlib.h>

#include <rdma/sroce-abi.h>

#include "sroce.h"

static const struct verbs_match_ent sroce_match_table[] = {
	{ .u.driver_id = SROCE_DRIVER_ID, .kind = VERBS_MATCH_DRIVER_ID },
	{ .kind = VERBS_MATCH_SENTINEL },
};

/*
 * The sysfs record is libibverbs'; everything the provider needs later is
 * reachable through the context, so nothing is copied from it.
 */
static struct verbs_device *sroce_device_alloc(struct verbs_sysfs_dev *sysfs)
{
	struct sroce_device *dev;

	(void)sysfs;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->base_dev;
}

/* Called by libibverbs when the last reference to the device goes. */
static void sroce_device_uninit(struct verbs_device *vdev)
{
	free(sroce_container_of(vdev, struct sroce_device, base_dev));
}

static const struct verbs_device_ops sroce_dev_ops = {
	.name = "sroce",
	.match_min_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_table = sroce_match_table,
	.alloc_device = sroce_device_alloc,
	.uninit_device = sroce_device_uninit,
	.alloc_context = sroce_context_alloc,
	.import_context = sroce_context_import,
};

static void __attribute__((constructor)) sroce_register(void)
{
	verbs_register_driver_34(&sroce_dev_ops);
}
