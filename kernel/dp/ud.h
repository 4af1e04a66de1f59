/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_UD_H
#define SROCE_UD_H

#include "core/pkt.h"

struct sk_buff;
struct sroce_qp;

void sroce_ud_recv(struct sroce_qp *qp, const struct sk_buff *skb,
		   const struct sroce_pkt *pkt);

#endif /* SROCE_UD_H */
