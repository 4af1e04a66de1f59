/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_POST_H
#define SROCE_POST_H

#include <rdma/ib_verbs.h>

/* post_send, post_recv and post_srq_recv; kernel/device.c registers them. */
extern const struct ib_device_ops sroce_post_ops;

#endif /* SROCE_POST_H */
