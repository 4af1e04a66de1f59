/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Environment of the kernel-agnostic protocol core.
 *
 * Everything under kernel/core/ is plain C with no locking, no allocation and
 * no kernel services, so the same source is compiled into sroce.ko and into
 * the userspace unit tests and fuzzers.  This header is the only place that
 * knows which of the two it is being built for.
 */
#ifndef SROCE_CORE_ENV_H
#define SROCE_CORE_ENV_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#endif

#endif /* SROCE_CORE_ENV_H */
