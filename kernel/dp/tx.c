// SPDX-License-Identifier: GPL-2.0
/*
 * Building transport packets: the BTH from the QP's attributes (or, for a
 * UD datagram, its work request's), room for the opcode's extension headers
 * and payload, and the pad to a whole number of words.  kernel/net.c adds UDP,
 * IP and the ICRC.  Called by the QP's engine (qp->exec_lock held, BHs off).
 */
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "core/pkt.h"
#include "core/uc.h"
#include "dp/exec.h"
#include "dp/net.h"
#include "dp/tx.h"
#include "obj/qp.h"

/**
 * sroce_tx_start_to - start a packet to any destination
 * @qp: the sending QP; qp->exec_lock held
 * @tx: the packet being built
 * @av: where it goes: &qp->av, or a UD datagram's address handle, which
 *	must stay valid until sroce_tx_send() or sroce_tx_abort()
 * @dest_qpn: the BTH's destination QP
 * @opcode: the BTH's opcode
 * @psn: its PSN
 * @payload_len: bytes of payload that will follow the headers
 * @ack_req: the BTH's AckReq bit
 * @se: the BTH's solicited event bit
 *
 * Return: 0, -ENOMEM, or -EINVAL for an opcode sroce does not know.
 */
int sroce_tx_start_to(struct sroce_qp *qp, struct sroce_tx *tx,
		      const struct sroce_qp_av *av, u32 dest_qpn, u8 opcode,
		      u32 psn, u32 payload_len, bool ack_req, bool se)
{
	u32 pad = (4 - (payload_len & 3)) & 3;
	struct sroce_bth bth = {
		.opcode = opcode,
		.se = se,
		.pad = pad,
		.tver = SROCE_BTH_TVER,
		.pkey = SROCE_PKEY_DEFAULT,
		.dest_qp = dest_qpn,
		.ack_req = ack_req,
		.psn = psn,
	};

	lockdep_assert_held(&qp->exec_lock);
	tx->op = sroce_opcode_lookup(opcode);
	if (WARN_ON_ONCE(!tx->op))
		return -EINVAL;
	tx->av = av;
	tx->dest_qpn = dest_qpn;
	tx->skb = sroce_net_alloc_skb(qp, av,
				      tx->op->hdr_len + payload_len + pad);
	if (!tx->skb) {
		/* the engine cannot wait for memory; its work item does */
		set_bit(SROCE_EXEC_NOMEM, &qp->events);
		return -ENOMEM;
	}
	tx->bth = tx->skb->data;
	tx->payload = tx->bth + tx->op->hdr_len;
	tx->part.len = 0;
	sroce_hdr_bth_encode(tx->bth, &bth);
	memset(tx->payload + payload_len, 0, pad);
	return 0;
}

/*
 * Payloads from this many bytes on are copied in with their CRC taken on
 * the way (kernel/core/crc32.h), if the packet is likely to need an ICRC.
 * Joining that CRC to the headers' costs a multiplication per bit set in
 * len / 4 (one for a whole MTU), which on small payloads can be more than
 * the second pass over them costs.
 */
#define SROCE_TX_ONE_PASS_MIN	512

/**
 * sroce_tx_payload_crc - shall the payload's copy take its CRC?
 * @qp: the sending QP; qp->exec_lock held
 * @tx: the packet being built, before its payload is copied in
 * @len: bytes of payload that will be copied, from tx->payload on
 *
 * Return: NULL for a plain copy, or a crc32_le() state to fold the payload
 * into as it is copied, in order (sroce_sgl_copy(), sroce_mr_copy(),
 * sroce_crc32_copy()); sroce_tx_send() hands it to the ICRC.
 */
u32 *sroce_tx_payload_crc(struct sroce_qp *qp, struct sroce_tx *tx, u32 len)
{
	if (len < SROCE_TX_ONE_PASS_MIN || !sroce_net_icrc_likely(qp, tx->av))
		return NULL;
	tx->part.off = tx->op->hdr_len;
	tx->part.len = len;
	tx->part.crc = 0;
	return &tx->part.crc;
}

/* A response of RC's, in the range of the QP's transport (RC or XRC). */
u8 sroce_tx_resp_opcode(struct sroce_qp *qp, u8 rc_opcode)
{
	return sroce_resp_opcode(sroce_qp_transport(qp), rc_opcode);
}

/* A packet of a connected QP, to its address vector and destination QP. */
int sroce_tx_start(struct sroce_qp *qp, struct sroce_tx *tx, u8 opcode,
		   u32 psn, u32 payload_len, bool ack_req, bool se)
{
	return sroce_tx_start_to(qp, tx, &qp->av, qp->dest_qp_num, opcode, psn,
				 payload_len, ack_req, se);
}

/*
 * Transmit backpressure.  Each packet on its way out counts in its QP's
 * token until the stack frees it (the driver's transmit completion, a
 * drop, or the loopback device handing it to the receive path), and in a
 * module-wide total.  The engine stops producing, and sets the token's
 * blocked bit, when its QP has SROCE_TX_INFLIGHT_MAX packets out, or when
 * all QPs together have SROCE_TX_TOTAL_MAX out and this one at least
 * SROCE_TX_INFLIGHT_MIN; the destructor that brings the QP's own count down
 * to half of what it was at the stop wakes it.  Without the per-QP bound a
 * large READ or a window of writes lands in the qdisc at once; without
 * the total, N QPs queue N times that much: on a slow link the packets'
 * wait in the qdisc then exceeds the QP's transport timeout (spurious
 * retransmissions of whole windows) and fq_codel, a common default qdisc,
 * drops them for their sojourn time (NAKs, go-back-N).  Four QPs of
 * ib_write_bw -s 65536 on the test bed's wire lost that way more than half
 * of what one QP moves (Documentation/benchmarks.md).  A QP with fewer than
 * SROCE_TX_INFLIGHT_MIN packets out always may send: none starves, and one
 * that stops has packets of its own whose destructors will wake it.
 *
 * Lifetime.  A packet holds a reference on the small token, never on the
 * QP: a qdisc may keep a packet for as long as it likes (a plug, a netem
 * delay, a stopped device), and destroy_qp must not wait for it.  Destroy
 * detaches the token once the engine is quiesced (token->qp = NULL under
 * token->lock, which the destructor holds while it kicks); a destructor
 * that runs later finds no QP.  The destructor is module text, so module
 * exit waits until every token is freed (sroce_tx_tokens), then for a
 * grace period: the destructor's body is an RCU read-side section, and
 * after it only its return remains.
 *
 * Lock order: qp->exec_lock (the stack may free a packet inside
 * sroce_net_xmit()) > token->lock > qp->kick_lock.
 */
#define SROCE_TX_INFLIGHT_MAX	128
#define SROCE_TX_INFLIGHT_MIN	8
#define SROCE_TX_TOTAL_MAX	128

/* exec-named: kernel/obj/qp.h holds a pointer, and obj names only exec's */
struct sroce_exec_tx_token {
	refcount_t ref;			/* the QP's, and one per packet */
	atomic_t inflight;		/* packets not yet freed */
	atomic_t wake_at;		/* inflight that ends a wait */
	unsigned long blocked;		/* bit 0: the engine waits */
	spinlock_t lock;		/* guards qp */
	struct sroce_qp *qp;		/* NULL once the QP is destroyed */
};

/* Tokens not yet freed, module-wide: module exit waits for zero. */
static atomic_t sroce_tx_tokens = ATOMIC_INIT(0);
/* Packets of all QPs not yet freed. */
static atomic_t sroce_tx_total = ATOMIC_INIT(0);

int sroce_tx_qp_init(struct sroce_qp *qp, gfp_t gfp)
{
	struct sroce_exec_tx_token *tok = kzalloc(sizeof(*tok), gfp);

	if (!tok)
		return -ENOMEM;
	refcount_set(&tok->ref, 1);
	spin_lock_init(&tok->lock);
	tok->qp = qp;
	atomic_inc(&sroce_tx_tokens);
	qp->tx_token = tok;
	return 0;
}

static void sroce_tx_token_put(struct sroce_exec_tx_token *tok)
{
	if (!refcount_dec_and_test(&tok->ref))
		return;
	kfree(tok);
	if (atomic_dec_and_test(&sroce_tx_tokens))
		wake_up_var(&sroce_tx_tokens);
}

/*
 * destroy_qp (or a failed create), once the engine is quiesced: packets
 * still in the network stack no longer reach the QP.
 */
void sroce_tx_qp_detach(struct sroce_qp *qp)
{
	struct sroce_exec_tx_token *tok = qp->tx_token;
	unsigned long flags;

	spin_lock_irqsave(&tok->lock, flags);
	tok->qp = NULL;
	spin_unlock_irqrestore(&tok->lock, flags);
	qp->tx_token = NULL;
	sroce_tx_token_put(tok);
}

/* Module exit, every device gone: no destructor of ours may run later. */
void sroce_tx_drain(void)
{
	while (!wait_var_event_timeout(&sroce_tx_tokens,
				       !atomic_read(&sroce_tx_tokens), 10 * HZ))
		pr_info("waiting for %d QPs' packets to leave the network stack\n",
			atomic_read(&sroce_tx_tokens));
	synchronize_rcu();
}

/*
 * Any context but hard interrupts; possibly inside sroce_net_xmit() with
 * the engine's exec_lock held on this CPU: only kick the work item, never
 * run the engine from here.
 */
static void sroce_tx_destructor(struct sk_buff *skb)
{
	struct sroce_exec_tx_token *tok = skb_shinfo(skb)->destructor_arg;
	unsigned long flags;

	rcu_read_lock();
	atomic_dec(&sroce_tx_total);
	if (atomic_dec_return(&tok->inflight) <= atomic_read(&tok->wake_at) &&
	    test_and_clear_bit(0, &tok->blocked)) {
		spin_lock_irqsave(&tok->lock, flags);
		if (tok->qp)
			sroce_exec_kick(tok->qp);
		spin_unlock_irqrestore(&tok->lock, flags);
	}
	sroce_tx_token_put(tok);
	rcu_read_unlock();
}

/* Room for one more packet of the QP with @own packets out? */
static bool sroce_tx_room(int own)
{
	if (own >= SROCE_TX_INFLIGHT_MAX)
		return false;
	return own < SROCE_TX_INFLIGHT_MIN ||
	       atomic_read(&sroce_tx_total) < SROCE_TX_TOTAL_MAX;
}

/* May the engine build another packet now?  Sets the blocked bit if not. */
bool sroce_tx_may_send(struct sroce_qp *qp)
{
	struct sroce_exec_tx_token *tok = qp->tx_token;
	int own = atomic_read(&tok->inflight);

	lockdep_assert_held(&qp->exec_lock);
	if (sroce_tx_room(own))
		return true;
	/* own >= SROCE_TX_INFLIGHT_MIN: a destructor of ours will come */
	atomic_set(&tok->wake_at, own / 2);
	set_bit(0, &tok->blocked);
	/* pairs with the ordered atomic_dec_return() of the destructor */
	smp_mb__after_atomic();
	if (sroce_tx_room(atomic_read(&tok->inflight))) {
		clear_bit(0, &tok->blocked);
		return true;
	}
	return false;
}

bool sroce_tx_blocked(struct sroce_qp *qp)
{
	return test_bit(0, &qp->tx_token->blocked);
}

/* Packets of the QP still in the network stack (for rdma res). */
int sroce_tx_inflight(struct sroce_qp *qp)
{
	return atomic_read(&qp->tx_token->inflight);
}

int sroce_tx_send(struct sroce_qp *qp, struct sroce_tx *tx)
{
	struct sroce_exec_tx_token *tok = qp->tx_token;
	struct sk_buff *skb = tx->skb;

	tx->skb = NULL;
	refcount_inc(&tok->ref);
	atomic_inc(&tok->inflight);
	atomic_inc(&sroce_tx_total);
	skb_shinfo(skb)->destructor_arg = tok;
	skb->destructor = sroce_tx_destructor;
	return sroce_net_xmit(qp, tx->av, tx->dest_qpn, skb,
			      tx->part.len ? &tx->part : NULL);
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

	err = sroce_tx_start(qp, &tx, sroce_tx_resp_opcode(qp, SROCE_OP_RC_ACK),
			     psn, 0, false, false);
	if (err)
		return err;
	sroce_hdr_aeth_encode(sroce_tx_ext(&tx, SROCE_EXT_AETH), &aeth);
	return sroce_tx_send(qp, &tx);
}
