/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_COMP_H
#define SROCE_COMP_H

#include <linux/types.h>

#include "core/pkt.h"
#include "core/rc.h"

struct sk_buff;
struct sroce_qp;

/* Why an RC requester sends PSNs again (the sroce_retransmit tracepoint). */
enum sroce_comp_retx {
	SROCE_COMP_RETX_TIMEOUT,	/* the transport timer expired */
	SROCE_COMP_RETX_SEQ_NAK,	/* a PSN sequence error NAK */
	SROCE_COMP_RETX_RNR_NAK,	/* an RNR NAK: again after the wait */
	SROCE_COMP_RETX_IMPLICIT,	/* a READ or atomic response is missing */
};

void sroce_comp_packet(struct sroce_qp *qp, const struct sk_buff *skb,
		       const struct sroce_pkt *pkt);
void sroce_comp_retire(struct sroce_qp *qp);
void sroce_comp_fail(struct sroce_qp *qp, u32 idx,
		     enum sroce_wc_status status);
void sroce_comp_timeout(struct sroce_qp *qp);
void sroce_comp_rnr_done(struct sroce_qp *qp);
bool sroce_comp_flush(struct sroce_qp *qp, int budget);

#endif /* SROCE_COMP_H */
