// SPDX-License-Identifier: GPL-2.0
/*
 * Receiving datagrams: UD QPs and the GSI QP.
 *
 * A datagram is one SEND ONLY packet with a DETH.  It is accepted if its
 * Q_Key is the QP's (IBTA 10.2.5; the GSI QP's is 0x80010000, set by the
 * MAD layer) and a receive WQE is posted; otherwise it is dropped and
 * counted, as an unreliable service does.  The receive buffer gets the
 * 40-byte GRH area first, as on every RoCE device: the IPv6 header, or for
 * IPv4 twenty zero bytes and then the IPv4 header.  That is where
 * ib_init_ah_attr_from_wc() (the CM answering a request) and the
 * applications' ibv_init_ah_from_wc() find the sender's address, and the
 * completion says which of the two it is (network_hdr_type).
 *
 * The completion's sl says it too, the way mlx5 reports a RoCE packet's
 * L3 type there (0 RoCE v1, 1 RoCE v2 over IPv6, 2 over IPv4): UCX before
 * 1.19 picks the GRH layout by wc.sl alone and drops IPv4 datagrams if
 * it is anything else.  RoCE has no service level on the wire, so sl
 * carries nothing else; kernel consumers read network_hdr_type.
 *
 * A receive WQE too small for the datagram completes with LOC_LEN_ERR and
 * the QP carries on: a remote sender must not be able to put a datagram QP
 * (the GSI QP above all) in the error state.  A local fault of the WQE
 * itself (a bad lkey) does, as on the other transports.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

#include "dp/exec.h"
#include "dp/resp.h"
#include "dp/sgl.h"
#include "dp/ud.h"
#include "obj/cq.h"
#include "obj/qp.h"
#include "stats.h"

#define SROCE_UD_GRH_LEN	40

/* wc.sl of a RoCE v2 datagram, by its network header (mlx5's values) */
enum {
	SROCE_UD_SL_ROCE_V2_IPV6 = 1,
	SROCE_UD_SL_ROCE_V2_IPV4 = 2,
};

/* The GRH area of the receive buffer, from the packet's IP header. */
static u8 sroce_ud_grh(const struct sk_buff *skb, u8 *grh)
{
	memset(grh, 0, SROCE_UD_GRH_LEN);
	if (skb->protocol == htons(ETH_P_IP)) {
		memcpy(grh + SROCE_UD_GRH_LEN - sizeof(struct iphdr),
		       ip_hdr(skb), sizeof(struct iphdr));
		return RDMA_NETWORK_IPV4;
	}
	memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
	return RDMA_NETWORK_IPV6;
}

static enum sroce_wc_status sroce_ud_copy(struct sroce_qp *qp,
					  const struct sk_buff *skb,
					  const struct sroce_pkt *pkt,
					  u8 *net_type)
{
	const struct sroce_recv_wqe *rwqe = qp->resp.rwqe;
	const struct sroce_sge *sge = (const struct sroce_sge *)(rwqe + 1);
	enum sroce_wc_status status;
	u8 grh[SROCE_UD_GRH_LEN];

	*net_type = sroce_ud_grh(skb, grh);
	status = sroce_sgl_copy(qp, sge, rwqe->num_sge, 0, grh, sizeof(grh),
				SROCE_MR_TO_MR, NULL);
	if (status != SROCE_WC_SUCCESS)
		return status;
	return sroce_sgl_copy(qp, sge, rwqe->num_sge, sizeof(grh),
			      skb->data + pkt->payload_off, pkt->payload_len,
			      SROCE_MR_TO_MR, NULL);
}

/**
 * sroce_ud_recv - deliver a datagram to a UD or GSI QP
 * @qp: the QP, able to receive; qp->exec_lock held
 * @skb: the packet; its network header is still valid
 * @pkt: its parse, a well-formed UD request
 */
void sroce_ud_recv(struct sroce_qp *qp, const struct sk_buff *skb,
		   const struct sroce_pkt *pkt)
{
	enum sroce_wc_status status;
	struct sroce_cqe cqe = {
		.opcode = IB_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = pkt->deth.src_qp,
		.wc_flags = SROCE_CQE_WC_GRH,
		.pkey_index = 0,
		.port_num = 1,
	};

	lockdep_assert_held(&qp->exec_lock);
	if (pkt->deth.qkey != qp->qkey) {
		sroce_qp_drop(qp, SROCE_DROP_QKEY);
		return;
	}
	/* from the RQ or the SRQ, and well-formed */
	if (!sroce_resp_take_rwqe(qp))
		return;
	status = sroce_ud_copy(qp, skb, pkt, &cqe.network_hdr_type);
	cqe.sl = cqe.network_hdr_type == RDMA_NETWORK_IPV4 ?
		 SROCE_UD_SL_ROCE_V2_IPV4 : SROCE_UD_SL_ROCE_V2_IPV6;
	cqe.wr_id = qp->resp.rwqe->wr_id;
	cqe.status = status;
	if (status == SROCE_WC_SUCCESS) {
		cqe.byte_len = SROCE_UD_GRH_LEN + pkt->payload_len;
		if (pkt->op->flags & SROCE_OPF_IMM) {
			cqe.wc_flags |= SROCE_CQE_WC_WITH_IMM;
			cqe.ex = (__force u32)cpu_to_be32(pkt->imm);
		}
	}
	qp->resp.have_rwqe = false;
	if (sroce_cq_post(to_sroce_cq(qp->ibqp.recv_cq), &cqe, pkt->bth.se) ||
	    (status != SROCE_WC_SUCCESS && status != SROCE_WC_LOC_LEN_ERR))
		sroce_exec_set_error(qp, status);
	else if (status == SROCE_WC_SUCCESS)
		sroce_qp_stats_inc(qp, SROCE_STAT_RDMA_RECVS);
}
