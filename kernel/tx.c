// SPDX-License-Identifier: GPL-2.0
/*
 * Building transport packets of a connected QP: the BTH from the QP's
 * attributes, room for the opcode's extension headers and payload, and the
 * pad to a whole number of words.  kernel/net.c adds UDP, IP and the ICRC.
 * Called from the QP's work item (qp->mutex held).
 */
#include <linux/skbuff.h>

#include "core/pkt.h"
#include "net.h"
#include "qp.h"
#include "tx.h"

int sroce_tx_start(struct sroce_qp *qp, struct sroce_tx *tx, u8 opcode,
		   u32 psn, u32 payload_len, bool ack_req, bool se)
{
	u32 pad = (4 - (payload_len & 3)) & 3;
	struct sroce_bth bth = {
		.opcode = opcode,
		.se = se,
		.pad = pad,
		.tver = SROCE_BTH_TVER,
		.pkey = SROCE_PKEY_DEFAULT,
		.dest_qp = qp->dest_qp_num,
		.ack_req = ack_req,
		.psn = psn,
	};

	lockdep_assert_held(&qp->mutex);
	tx->op = sroce_opcode_lookup(opcode);
	if (WARN_ON_ONCE(!tx->op))
		return -EINVAL;
	tx->skb = sroce_net_alloc_skb(qp, tx->op->hdr_len + payload_len + pad);
	if (!tx->skb)
		return -ENOMEM;
	tx->bth = tx->skb->data;
	tx->payload = tx->bth + tx->op->hdr_len;
	sroce_hdr_bth_encode(tx->bth, &bth);
	memset(tx->payload + payload_len, 0, pad);
	return 0;
}

int sroce_tx_send(struct sroce_qp *qp, struct sroce_tx *tx)
{
	struct sk_buff *skb = tx->skb;

	tx->skb = NULL;
	return sroce_net_xmit(qp, skb);
}

void sroce_tx_abort(struct sroce_tx *tx)
{
	kfree_skb(tx->skb);
	tx->skb = NULL;
}

/* An ACK or NAK: BTH and AETH. */
int sroce_tx_ack(struct sroce_qp *qp, u32 psn, u8 syndrome, u32 msn)
{
	struct sroce_aeth aeth = { .syndrome = syndrome, .msn = msn };
	struct sroce_tx tx;
	int err;

	err = sroce_tx_start(qp, &tx, SROCE_OP_RC_ACK, psn, 0, false, false);
	if (err)
		return err;
	sroce_hdr_aeth_encode(sroce_tx_ext(&tx, SROCE_EXT_AETH), &aeth);
	return sroce_tx_send(qp, &tx);
}
