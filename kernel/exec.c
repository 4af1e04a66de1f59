// SPDX-License-Identifier: GPL-2.0
/*
 * Per-QP execution context.  Placeholder until the data path lands: every
 * packet handed over is dropped and counted.
 */
#include <linux/skbuff.h>

#include "debugfs.h"
#include "exec.h"

void sroce_exec_rx(struct sroce_qp *qp, struct sk_buff *skb)
{
	sroce_drop_count(SROCE_DROP_QP_STATE);
	kfree_skb(skb);
}
