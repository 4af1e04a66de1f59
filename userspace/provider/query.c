// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: device and port queries.
 *
 * The kernel answers both with the generic uverbs responses; sroce adds no
 * driver data, so these only forward to libibverbs' command helpers.  The
 * device clock is read here without the kernel (sroce_query_rt_values).
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "sroce.h"

/*
 * uverbs carries the firmware version as a number; libibverbs leaves the
 * string to the provider.  sroce packs it like the other software devices:
 * major in bits 47..32, minor in 31..16, patch in 15..0.
 */
static void sroce_format_fw_ver(char *buf, size_t len, uint64_t fw_ver)
{
	snprintf(buf, len, "%u.%u.%u",
		 (unsigned int)(fw_ver >> 32) & 0xffff,
		 (unsigned int)(fw_ver >> 16) & 0xffff,
		 (unsigned int)fw_ver & 0xffff);
}

/* Backs ibv_query_device() and ibv_query_device_ex(). */
int sroce_query_device(struct ibv_context *ibctx,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	int ret;

	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size,
				       &resp, &resp_size);
	if (ret)
		return ret;

	sroce_format_fw_ver(attr->orig_attr.fw_ver,
			    sizeof(attr->orig_attr.fw_ver), resp.base.fw_ver);
	return 0;
}

int sroce_query_port(struct ibv_context *ibctx, uint8_t port_num,
		     struct ibv_port_attr *attr)
{
	struct verbs_cmd_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port_num, attr, &cmd, sizeof(cmd));
}

/*
 * ibv_query_rt_values_ex: the device clock, in the time base of the
 * completion timestamps.  That clock is CLOCK_MONOTONIC in nanoseconds
 * (sroce-abi.h), which clock_gettime() reads from the same timekeeper the
 * kernel stamps CQEs with (through the vDSO, no system call).  The value
 * goes whole into raw_clock.tv_nsec with tv_sec 0, as hardware providers
 * report their cycle counters: read as a count (tv_nsec) or as a timespec
 * (tv_sec * 10^9 + tv_nsec) it is the same number of ticks.  Like them,
 * this answers the bits of comp_mask it knows and clears the others.
 */
int sroce_query_rt_values(struct ibv_context *ibctx,
			  struct ibv_values_ex *values)
{
	uint32_t done = 0;
	struct timespec ts;

	(void)ibctx;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		if (clock_gettime(CLOCK_MONOTONIC, &ts))
			return errno;
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec =
			(long)((uint64_t)ts.tv_sec * 1000000000u +
			       (uint64_t)ts.tv_nsec);
		done |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	values->comp_mask = done;
	return 0;
}
