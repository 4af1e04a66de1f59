/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_COUNTER_H
#define SROCE_COUNTER_H

#include <rdma/ib_verbs.h>

struct sroce_dev;

void sroce_counter_dev_init(struct sroce_dev *sdev);
void sroce_counter_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_counter_ops;

#endif /* SROCE_COUNTER_H */
