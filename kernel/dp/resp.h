/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_RESP_H
#define SROCE_RESP_H

#include "core/pkt.h"

struct sk_buff;
struct sroce_qp;

int sroce_resp_init(struct sroce_qp *qp);
void sroce_resp_cleanup(struct sroce_qp *qp);
void sroce_resp_reset(struct sroce_qp *qp);
void sroce_resp_start(struct sroce_qp *qp);
bool sroce_resp_take_rwqe(struct sroce_qp *qp);
void sroce_resp_packet(struct sroce_qp *qp, const struct sk_buff *skb,
		       const struct sroce_pkt *pkt, enum sroce_drop reason);
void sroce_resp_uc_packet(struct sroce_qp *qp, const struct sk_buff *skb,
			  const struct sroce_pkt *pkt, enum sroce_drop reason);
bool sroce_resp_take_rwqe(struct sroce_qp *qp);
void sroce_resp_send_ack(struct sroce_qp *qp);
bool sroce_resp_busy(struct sroce_qp *qp);
bool sroce_resp_flush(struct sroce_qp *qp, int budget);

#endif /* SROCE_RESP_H */
