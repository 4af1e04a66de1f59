/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_EXEC_H
#define SROCE_EXEC_H

struct sk_buff;
struct sroce_qp;

/*
 * Hand a received packet to its QP.  Callable from softirq.  The caller
 * holds a reference on qp (sroce_qp_get()) for the duration of the call;
 * the skb is consumed.  Contract: the skb is linear, skb->data is the BTH,
 * skb->len is the UDP payload (BTH through ICRC), the ICRC has been
 * verified, and the BTH's destination QP is qp's number.  The network
 * header is still valid.
 */
void sroce_exec_rx(struct sroce_qp *qp, struct sk_buff *skb);

#endif /* SROCE_EXEC_H */
