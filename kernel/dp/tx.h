/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_TX_H
#define SROCE_TX_H

#include "core/hdr.h"
#include "core/icrc.h"
#include "core/opcode.h"

struct sk_buff;
struct sroce_qp;
struct sroce_qp_av;

/* A packet being built: BTH and extension headers, then payload. */
struct sroce_tx {
	struct sk_buff *skb;
	const struct sroce_qp_av *av;	/* where it goes */
	u32 dest_qpn;
	const struct sroce_opcode_info *op;
	u8 *bth;
	u8 *payload;			/* op->hdr_len bytes after the BTH */
	/* the payload's CRC if sroce_tx_payload_crc() took one (len > 0) */
	struct sroce_icrc_part part;
};

int sroce_tx_start_to(struct sroce_qp *qp, struct sroce_tx *tx,
		      const struct sroce_qp_av *av, u32 dest_qpn, u8 opcode,
		      u32 psn, u32 payload_len, bool ack_req, bool se);
u8 sroce_tx_resp_opcode(struct sroce_qp *qp, u8 rc_opcode);
int sroce_tx_start(struct sroce_qp *qp, struct sroce_tx *tx, u8 opcode,
		   u32 psn, u32 payload_len, bool ack_req, bool se);
u32 *sroce_tx_payload_crc(struct sroce_qp *qp, struct sroce_tx *tx, u32 len);
int sroce_tx_send(struct sroce_qp *qp, struct sroce_tx *tx);
bool sroce_tx_may_send(struct sroce_qp *qp);
bool sroce_tx_blocked(struct sroce_qp *qp);
int sroce_tx_inflight(struct sroce_qp *qp);
int sroce_tx_qp_init(struct sroce_qp *qp, gfp_t gfp);
void sroce_tx_qp_detach(struct sroce_qp *qp);
void sroce_tx_drain(void);
void sroce_tx_abort(struct sroce_tx *tx);
int sroce_tx_ack(struct sroce_qp *qp, u32 psn, u8 syndrome, u32 msn);

/* Where extension header ext of the packet goes. */
static inline u8 *sroce_tx_ext(const struct sroce_tx *tx, enum sroce_ext ext)
{
	return tx->bth + tx->op->off[ext];
}

#endif /* SROCE_TX_H */
