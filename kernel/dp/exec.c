// SPDX-License-Identifier: GPL-2.0
/*
 * Per-QP execution context.
 *
 * Everything a QP's data path does - transmitting requests, acting on ACKs
 * and responses, executing incoming requests, timers, flushing - is "the
 * engine", sroce_exec_run(), which runs with qp->exec_lock held (a spinlock
 * taken with BHs off).  The lock makes runs of one QP mutually exclusive
 * and modify_qp takes it too, so the engine's state (struct sroce_req,
 * struct sroce_resp, the WQE copies) needs no other lock and sees the
 * attributes change only between runs.  The engine never sleeps: it
 * allocates with GFP_ATOMIC (a failure sets SROCE_EXEC_NOMEM, and the work
 * item waits a tick before it runs again), takes only spinlocks and maps
 * pages with kmap_local.
 *
 * Where it runs (run to completion).  Whoever brings the engine input
 * runs it right there if nobody else is running it:
 *  - the receive softirq, sroce_exec_rx(): the packet is queued on rxq and
 *    processed at once, its ACK, READ response or completion included;
 *  - a provider's send doorbell (sroce_exec_doorbell(), its system call)
 *    and a kernel consumer's post_send, or post_recv in ERR
 *    (sroce_exec_post(), unless called with interrupts off); while a user
 *    poster streams and another CPU is idle, its send doorbell hands the QP
 *    to the SQ poller in the work item instead (kernel/dp/poll.c).
 * A run is bounded (SROCE_EXEC_BUDGET_INLINE packets in and out, a flush
 * as many WQEs; SROCE_EXEC_BUDGET in the work item); whatever is left, and
 * whatever needs process context, goes to the QP's work item on sroce_wq,
 * queued on a CPU chosen for the QP at creation (round robin over the
 * online CPUs, so that the deferred work of several QPs spreads over the
 * CPUs), sroce_exec_kick().  The work item is also what the retransmission
 * and RNR timers, transmit completions (kernel/dp/tx.c) and modify_qp
 * wake: timers fire in loss recovery only, where a wake-up is nothing next
 * to the timeout, and a transmit completion may come inside
 * sroce_net_xmit() with this CPU holding the lock.  A run that finds this
 * CPU already running an engine (a completion handler posting, a packet
 * delivered synchronously) does not nest: it defers to the work item.
 *
 * No lost wake-ups.  Whoever brings input (a packet on rxq, WQEs in a
 * ring, an event bit) publishes it, sets SROCE_EXEC_PENDING, issues a full
 * barrier and tries the lock.  A runner clears PENDING with a fully
 * ordered test_and_clear_bit() after taking the lock and before it looks
 * at any input; after dropping the lock it issues a full barrier and tests
 * PENDING again, running once more if it is set (at most
 * SROCE_EXEC_ROUNDS runs, then the work item takes over).  A producer
 * whose trylock fails saw the lock held; the holder's unlock comes after
 * that, and of "producer: store PENDING, barrier, load lock" and "holder:
 * store unlock, barrier, load PENDING" at least one sees the other's
 * store.  So either the holder sees PENDING and runs again, or the
 * producer's trylock succeeds; and a run that cleared PENDING sees every
 * input published before it was set.  The work item runs the same way,
 * so a kick that finds the engine busy is not lost either.
 *
 * Lock order: qp->mutex (modify_qp) > qp->exec_lock > the locks the engine
 * takes: srq->lock, cq->post_lock (and a CQ's comp_handler, as in an
 * interrupt), mr->lock, mw->lock, the atomic lock of kernel/dp/resp.c,
 * rxq's lock, and qp->kick_lock, innermost.  A kernel poster's post_lock is
 * dropped before the engine runs.  The data path only ever trylocks
 * exec_lock; spin_lock_bh() waits for it in modify_qp and destroy only,
 * which hold nothing the engine takes.
 *
 * Lifetime.  The receive path and the multicast fan-out hold a QP reference
 * (sroce_qp_get()) while they queue and run; the timers hold none, and
 * transmitted packets hold a reference on the QP's transmit token, not on
 * the QP (kernel/dp/tx.c: a qdisc may keep a packet indefinitely).
 * destroy_qp cuts lookups off, then sroce_exec_quiesce() marks the QP dying,
 * waits for a run in progress, cancels the work, shuts the timers down and
 * detaches the token, so a packet freed later kicks nothing; then destroy
 * waits for the references (kernel/obj/qp.c) and sroce_exec_cleanup()
 * drops what is left on rxq.
 *
 * Why nothing runs or is queued after destroy: sroce_exec_kick() tests
 * SROCE_EXEC_DYING and queues the work under qp->kick_lock, and
 * sroce_exec_quiesce() sets the bit under the same lock.  A kick either
 * took the lock first - its work item is then queued before the bit is set
 * and the cancel that follows removes it or waits for its run - or takes
 * it afterwards, sees the bit and queues nothing.  There is no window in
 * between, whoever kicks (a reference holder about to put its reference, a
 * timer, a run leaving work).  A run tests DYING after taking exec_lock,
 * and quiesce takes and drops exec_lock once after setting the bit: a run
 * that had the lock then has finished when quiesce gets it, and one that
 * takes it later sees the bit and does nothing.  The runs that quiesce
 * waited for can arm a timer, which the shutdown after the cancel stops;
 * a timer firing meanwhile only sets a bit.  So once sroce_exec_quiesce()
 * returns, no run is in progress or will start and no work item is queued
 * or running; a runner past its unlock (the softirq of another CPU) still
 * touches the event bits, and the reference holders rxq and the event
 * bits, all in the QP that destroy_qp has not freed yet.
 * A provider's doorbell runs in its own system call, which ib_uverbs never
 * lets overlap destroy_qp, and a kernel consumer does not post to a QP it
 * destroys.
 *
 * Affiliated asynchronous events (COMM_EST, the QP error events,
 * LAST_WQE_REACHED of a QP on an SRQ) are found by the engine with
 * exec_lock held.  It only notes them in qp->ae_pending; sroce_exec_dispatch()
 * hands them to the QP's event handler with no lock held, in process
 * context: in the work item, which a run that noted one in softirq or for a
 * kernel poster kicks, or in a provider's doorbell system call after its
 * run.  A handler may sleep and call back into the verbs on the same QP -
 * an application moving it to ERR, rdma_cm's notify - and modify_qp takes
 * qp->mutex and exec_lock.  destroy_qp cancels the work item, which waits
 * for a dispatch in progress, and ib_uverbs does not destroy a QP while one
 * of its system calls runs, so no event reaches a destroyed QP.
 *
 * The receive backlog is bounded per QP (SROCE_EXEC_RXQ_MAX packets,
 * SROCE_EXEC_RXQ_BYTES of truesize) and per device
 * (SROCE_EXEC_DEV_BYTES); a packet beyond a bound is dropped and counted
 * as rx_backlog.
 */
#include <linux/cpumask.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>

#include "core/pkt.h"

#include "device.h"
#include "dp/comp.h"
#include "dp/exec.h"
#include "dp/net.h"
#include "dp/poll.h"
#include "dp/req.h"
#include "dp/resp.h"
#include "dp/tx.h"
#include "dp/ud.h"
#include "obj/qp.h"
#include "obj/trace.h"
#include "stats.h"

#define SROCE_EXEC_BUDGET	256	/* packets per run, each direction */
#define SROCE_EXEC_BUDGET_INLINE 64	/* the same in softirq or a poster */
#define SROCE_EXEC_ROUNDS	4	/* runs in the caller before deferring */
#define SROCE_EXEC_RXQ_MAX	8192	/* queued packets before dropping */
#define SROCE_EXEC_RXQ_BYTES	(8 << 20)	/* and queued bytes, per QP */
#define SROCE_EXEC_DEV_BYTES	(64L << 20)	/* and per device */

static struct workqueue_struct *sroce_wq;
/* the CPU the next QP's work item is given */
static atomic_t sroce_exec_next_cpu = ATOMIC_INIT(0);
/* an engine runs on this CPU (BHs are off while it does) */
static DEFINE_PER_CPU(unsigned int, sroce_exec_depth);

/*
 * Queue the work unless the QP is dying; see "Lifetime" above.  On the
 * QP's CPU if it is online; queue_work() picks another if not.
 */
static void sroce_exec_queue(struct sroce_qp *qp)
{
	int cpu = READ_ONCE(qp->exec_cpu);

	lockdep_assert_held(&qp->kick_lock);
	if (test_bit(SROCE_EXEC_DYING, &qp->events))
		return;
	if (cpu_online(cpu))
		queue_work_on(cpu, sroce_wq, &qp->work);
	else
		queue_work(sroce_wq, &qp->work);
}

void sroce_exec_kick(struct sroce_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->kick_lock, flags);
	sroce_exec_queue(qp);
	spin_unlock_irqrestore(&qp->kick_lock, flags);
}

/* No kick queues the work from here on. */
static void sroce_exec_mark_dying(struct sroce_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->kick_lock, flags);
	set_bit(SROCE_EXEC_DYING, &qp->events);
	spin_unlock_irqrestore(&qp->kick_lock, flags);
}

/* Charge a received packet to the backlogs; false if one is full. */
static bool sroce_exec_rxq_add(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	unsigned long flags;
	bool ok = false;

	if (atomic_long_add_return(skb->truesize, &sdev->rx_backlog) >
	    SROCE_EXEC_DEV_BYTES)
		goto out;
	spin_lock_irqsave(&qp->rxq.lock, flags);
	if (skb_queue_len(&qp->rxq) < SROCE_EXEC_RXQ_MAX &&
	    qp->rxq_bytes + skb->truesize <= SROCE_EXEC_RXQ_BYTES) {
		__skb_queue_tail(&qp->rxq, skb);
		qp->rxq_bytes += skb->truesize;
		ok = true;
	}
	spin_unlock_irqrestore(&qp->rxq.lock, flags);
out:
	if (!ok)
		atomic_long_sub(skb->truesize, &sdev->rx_backlog);
	return ok;
}

/* The oldest received packet, uncharged; NULL if there is none. */
static struct sk_buff *sroce_exec_rxq_take(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	struct sk_buff *skb;
	unsigned long flags;

	spin_lock_irqsave(&qp->rxq.lock, flags);
	skb = __skb_dequeue(&qp->rxq);
	if (skb)
		qp->rxq_bytes -= skb->truesize;
	spin_unlock_irqrestore(&qp->rxq.lock, flags);
	if (skb)
		atomic_long_sub(skb->truesize, &sdev->rx_backlog);
	return skb;
}

static void sroce_exec_rxq_purge(struct sroce_qp *qp)
{
	struct sk_buff *skb;

	while ((skb = sroce_exec_rxq_take(qp)))
		kfree_skb(skb);
}

static bool sroce_exec_can_receive(enum ib_qp_state state)
{
	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
}

/* A request to a UC, UD or GSI QP: nothing ever answers it. */
static void sroce_exec_unreliable(struct sroce_qp *qp, struct sk_buff *skb,
				  const struct sroce_pkt *pkt,
				  enum sroce_drop reason)
{
	if (!(pkt->op->flags & SROCE_OPF_REQUEST)) {
		sroce_qp_drop(qp, SROCE_DROP_TRANSPORT);
		return;
	}
	if (!sroce_exec_can_receive(qp->state)) {
		sroce_qp_drop(qp, SROCE_DROP_QP_STATE);
		return;
	}
	if (qp->ibqp.qp_type == IB_QPT_UC) {
		sroce_resp_uc_packet(qp, skb, pkt, reason);
		return;
	}
	if (reason != SROCE_DROP_NONE) {
		sroce_qp_drop(qp, SROCE_DROP_MALFORMED);
		return;
	}
	sroce_ud_recv(qp, skb, pkt);
}

/*
 * An XRC initiator has no responder and a target no requester: requests
 * reach only targets, responses only initiators.
 */
static bool sroce_exec_xrc_direction_ok(struct sroce_qp *qp,
					const struct sroce_opcode_info *op)
{
	bool request = op->flags & SROCE_OPF_REQUEST;

	switch (qp->ibqp.qp_type) {
	case IB_QPT_XRC_INI:
		return !request;
	case IB_QPT_XRC_TGT:
		return request;
	default:
		return true;
	}
}

/*
 * A packet the engine has acted on.  Its sk_buff goes back to this CPU's
 * NAPI cache, where sroce_net_alloc_skb() takes the next packet's
 * (kernel/dp/net.c), instead of to the slab; the cache belongs to the
 * CPU's bottom half, which is off while exec_lock is held.  To the skb
 * tracepoints it is consumed, not dropped.
 */
static void sroce_exec_consume(struct sk_buff *skb)
{
	lockdep_assert_in_softirq();
	/* any non-zero budget: the caller may use the NAPI caches */
	napi_consume_skb(skb, 1);
}

/*
 * One received packet: validate it and give it to the responder (requests)
 * or the completer (responses).  Malformed packets are dropped silently,
 * as IBTA 9.6 requires, but counted.
 */
void sroce_exec_packet(struct sroce_qp *qp, struct sk_buff *skb)
{
	enum ib_qp_state state = qp->state;
	enum sroce_drop reason;
	struct sroce_pkt pkt;

	lockdep_assert_held(&qp->exec_lock);
	reason = sroce_pkt_parse(skb->data, skb->len, &pkt);
	if (reason != SROCE_DROP_NONE &&
	    !sroce_pkt_drop_is_request_error(reason)) {
		sroce_qp_drop(qp, SROCE_DROP_MALFORMED);
		goto drop;
	}
	if (pkt.op->transport != sroce_qp_transport(qp) ||
	    !sroce_exec_xrc_direction_ok(qp, pkt.op)) {
		sroce_qp_drop(qp, SROCE_DROP_TRANSPORT);
		goto drop;
	}
	/*
	 * A connected QP's peer is the one of its address vector, which every
	 * state that receives has; before anything acts on the packet (a UC
	 * responder resynchronises to any FIRST or ONLY).
	 */
	if (pkt.op->transport != SROCE_TRANSPORT_UD &&
	    sroce_exec_can_receive(state) && !sroce_net_rx_from_peer(qp, skb))
		goto drop;
	/*
	 * The path MTU bounds a connected QP's requests; a UD QP has none
	 * (its messages are bounded by the port's MTU).
	 */
	if (reason == SROCE_DROP_NONE &&
	    pkt.op->transport != SROCE_TRANSPORT_UD &&
	    (pkt.op->flags & SROCE_OPF_REQUEST))
		reason = sroce_pkt_check_pmtu(&pkt, qp->pmtu);
	if (!sroce_transport_is_reliable((enum sroce_transport)
					 pkt.op->transport)) {
		sroce_exec_unreliable(qp, skb, &pkt, reason);
		kfree_skb(skb);
		return;
	}
	if (pkt.op->flags & SROCE_OPF_REQUEST) {
		if (!sroce_exec_can_receive(state))
			goto drop_state;
		/* IBTA 11.6.3.1: the first packet received in RTR */
		if (state == IB_QPS_RTR && !qp->comm_est) {
			qp->comm_est = true;
			sroce_exec_raise(qp, IB_EVENT_COMM_EST);
		}
		sroce_resp_packet(qp, skb, &pkt, reason);
	} else {
		if (reason != SROCE_DROP_NONE) {
			sroce_qp_drop(qp, SROCE_DROP_MALFORMED);
			goto drop;
		}
		if (state != IB_QPS_RTS && state != IB_QPS_SQD)
			goto drop_state;
		sroce_comp_packet(qp, skb, &pkt);
	}
	sroce_exec_consume(skb);
	return;

drop_state:
	sroce_qp_drop(qp, SROCE_DROP_QP_STATE);
drop:
	kfree_skb(skb);
}

/* Process received packets; responses go to the completer. */
static bool sroce_exec_rx_batch(struct sroce_qp *qp, int budget)
{
	struct sk_buff *skb;
	int n;

	for (n = 0; n < budget; n++) {
		/* requests behind a READ being answered wait for it */
		if (sroce_resp_busy(qp))
			break;
		skb = sroce_exec_rxq_take(qp);
		if (!skb)
			break;
		sroce_exec_packet(qp, skb);
	}
	sroce_resp_send_ack(qp);
	/* a READ still being answered goes on when transmit has room */
	if (sroce_resp_busy(qp))
		return !sroce_tx_blocked(qp);
	return !skb_queue_empty_lockless(&qp->rxq);
}

/*
 * Going idle: ask user posters for a doorbell, then look once more, with
 * the full barrier the SROCE_SQ_NEED_WAKEUP protocol requires between our
 * flag store and the producer load.
 */
static bool sroce_exec_idle(struct sroce_qp *qp)
{
	atomic_t *flags = sroce_queue_flags(&qp->sq);
	enum ib_qp_state state = qp->state;

	atomic_or(SROCE_SQ_NEED_WAKEUP, flags);
	/* flag store before producer load; pairs with the provider's fence */
	smp_mb__after_atomic();
	/* only RTS and ERR act on new WQEs; other states wait for modify */
	if ((state != IB_QPS_RTS && state != IB_QPS_ERR) ||
	    !sroce_req_has_new(qp))
		return true;
	atomic_andnot(SROCE_SQ_NEED_WAKEUP, flags);
	return false;
}

/*
 * One bounded run of the engine.  Returns true if work is left for
 * another run.  While it runs, user posters need no doorbell.
 */
static bool sroce_exec_run(struct sroce_qp *qp, int budget)
{
	enum ib_qp_state state;
	bool more;

	lockdep_assert_held(&qp->exec_lock);
	atomic_andnot(SROCE_SQ_NEED_WAKEUP, sroce_queue_flags(&qp->sq));

	more = sroce_exec_rx_batch(qp, budget);
	if (test_and_clear_bit(SROCE_EXEC_TIMEOUT, &qp->events))
		sroce_comp_timeout(qp);
	if (test_and_clear_bit(SROCE_EXEC_RNR, &qp->events))
		sroce_comp_rnr_done(qp);

	state = READ_ONCE(qp->state);
	if (state == IB_QPS_ERR) {
		sroce_exec_rxq_purge(qp);
		more = sroce_exec_flush(qp, budget);
	} else if (state == IB_QPS_RTS || state == IB_QPS_SQD) {
		more |= sroce_req_run(qp, budget);
		if (state == IB_QPS_SQD && sroce_req_drain_done(qp) &&
		    qp->en_sqd_async_notify)
			sroce_exec_raise(qp, IB_EVENT_SQ_DRAINED);
	} else if (state == IB_QPS_RESET) {
		sroce_exec_rxq_purge(qp);
		more = false;
	}
	/* no packet could be allocated: the work item retries after a tick */
	if (test_bit(SROCE_EXEC_NOMEM, &qp->events))
		return true;
	return more || !sroce_exec_idle(qp);
}

/*
 * Take exec_lock and run once, unless someone holds it (they will see
 * PENDING) or the QP is dying.  Returns false if it did not run; *more
 * tells whether the run left work.
 */
static bool sroce_exec_try_run(struct sroce_qp *qp, int budget, bool *more)
{
	if (!spin_trylock_bh(&qp->exec_lock))
		return false;
	if (test_bit(SROCE_EXEC_DYING, &qp->events)) {
		spin_unlock_bh(&qp->exec_lock);
		return false;
	}
	/* fully ordered: the run sees all input published before PENDING */
	test_and_clear_bit(SROCE_EXEC_PENDING, &qp->events);
	__this_cpu_inc(sroce_exec_depth);
	*more = sroce_exec_run(qp, budget);
	__this_cpu_dec(sroce_exec_depth);
	spin_unlock_bh(&qp->exec_lock);
	return true;
}

/*
 * Input is published: run the engine here if nobody else is running it,
 * again while PENDING shows more input came meanwhile, then leave what is
 * left to the work item (see "No lost wake-ups").  Returns true if events
 * were noted for dispatch; the caller dispatches them or kicks.
 */
static bool sroce_exec_drive(struct sroce_qp *qp, int budget)
{
	bool more = false;
	int round;

	/* the caller's input is published before PENDING */
	smp_mb__before_atomic();
	set_bit(SROCE_EXEC_PENDING, &qp->events);
	/* PENDING before the lock word is read; pairs with the unlock's */
	smp_mb__after_atomic();
	/* a run inside a run on this CPU would nest: defer */
	if (this_cpu_read(sroce_exec_depth)) {
		sroce_exec_kick(qp);
		return false;
	}
	for (round = 0; round < SROCE_EXEC_ROUNDS; round++) {
		if (!sroce_exec_try_run(qp, budget, &more))
			break;
		if (more)
			break;
		/* unlock before the PENDING load; pairs with the producer's */
		smp_mb();
		if (!test_bit(SROCE_EXEC_PENDING, &qp->events))
			break;
	}
	if (more || round == SROCE_EXEC_ROUNDS)
		sroce_exec_kick(qp);
	return READ_ONCE(qp->ae_pending);
}

void sroce_exec_rx(struct sroce_qp *qp, struct sk_buff *skb)
{
	if (!sroce_exec_rxq_add(qp, skb)) {
		sroce_qp_drop(qp, SROCE_DROP_RX_BACKLOG);
		kfree_skb(skb);
		return;
	}
	/* events go to process context: the work item */
	if (sroce_exec_drive(qp, SROCE_EXEC_BUDGET_INLINE))
		sroce_exec_kick(qp);
}

void sroce_exec_event(struct sroce_qp *qp, int bit)
{
	set_bit(bit, &qp->events);
	sroce_exec_kick(qp);
}

/* The order in which events noted together are delivered. */
static const enum ib_event_type sroce_exec_ae_order[] = {
	IB_EVENT_COMM_EST,
	IB_EVENT_SQ_DRAINED,
	IB_EVENT_QP_REQ_ERR,
	IB_EVENT_QP_ACCESS_ERR,
	IB_EVENT_QP_FATAL,
	IB_EVENT_QP_LAST_WQE_REACHED,
};

/**
 * sroce_exec_raise - note an affiliated asynchronous event of the QP
 * @qp: the QP; qp->exec_lock held
 * @ev: a QP event, one of sroce_exec_ae_order[]
 *
 * Delivered by sroce_exec_dispatch() in process context, with no lock
 * held (see the head of the file).  An event noted again before delivery is delivered
 * once.
 */
void sroce_exec_raise(struct sroce_qp *qp, enum ib_event_type ev)
{
	lockdep_assert_held(&qp->exec_lock);
	set_bit(ev, &qp->ae_pending);
}

/* Deliver the noted events; process context, no lock held. */
static void sroce_exec_dispatch(struct sroce_qp *qp)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
	};
	int i;

	if (!READ_ONCE(qp->ae_pending))
		return;
	for (i = 0; i < ARRAY_SIZE(sroce_exec_ae_order); i++) {
		ev.event = sroce_exec_ae_order[i];
		if (!test_and_clear_bit(ev.event, &qp->ae_pending) ||
		    !qp->ibqp.event_handler)
			continue;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

/*
 * A user's doorbell arrives in its own system call: run the engine right
 * there when nobody else is running it, which saves the wake-up of a worker
 * (most of a small message's latency), and deliver what the run noted: the
 * system call is process context and holds no lock.
 */
void sroce_exec_doorbell(struct sroce_qp *qp)
{
	might_sleep();
	if (sroce_exec_drive(qp, SROCE_EXEC_BUDGET_INLINE))
		sroce_exec_dispatch(qp);
}

/*
 * A kernel consumer posted.  It may do so with interrupts off or in a hard
 * interrupt, where BHs cannot be disabled: the work item runs then.  It may
 * also hold locks its event handler takes, so events go to the work item.
 */
void sroce_exec_post(struct sroce_qp *qp)
{
	if (in_hardirq() || irqs_disabled()) {
		sroce_exec_kick(qp);
		return;
	}
	if (sroce_exec_drive(qp, SROCE_EXEC_BUDGET_INLINE))
		sroce_exec_kick(qp);
}

/**
 * sroce_exec_lock - hold the engine off, for modify_qp
 * @qp: the QP; qp->mutex held
 *
 * Waits for a run in progress.  Input that arrives meanwhile finds the lock
 * taken and leaves PENDING set, which sroce_exec_unlock() looks at.
 */
void sroce_exec_lock(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->mutex);
	spin_lock_bh(&qp->exec_lock);
}

void sroce_exec_unlock(struct sroce_qp *qp)
{
	spin_unlock_bh(&qp->exec_lock);
	/* unlock before the PENDING load, as a runner does */
	smp_mb();
	if (test_bit(SROCE_EXEC_PENDING, &qp->events))
		sroce_exec_kick(qp);
}

/* One deferred run and the events it noted; process context. */
void sroce_exec_deferred(struct sroce_qp *qp)
{
	sroce_exec_drive(qp, SROCE_EXEC_BUDGET);
	sroce_exec_dispatch(qp);
}

/*
 * The deferred run, in process context: what a run in the receive softirq
 * or a poster's context left, timers, transmit completions, modify_qp.
 */
static void sroce_exec_work(struct work_struct *work)
{
	struct sroce_qp *qp = container_of(work, struct sroce_qp, work);

	/* the last run could not allocate: give reclaim a tick */
	if (test_and_clear_bit(SROCE_EXEC_NOMEM, &qp->events))
		schedule_timeout_uninterruptible(1);
	if (test_bit(SROCE_EXEC_POLL, &qp->events)) {
		sroce_poll_run(qp);
		return;
	}
	sroce_exec_deferred(qp);
}

/*
 * The QP has just entered the error state: the work item flushes.  A QP
 * attached to an SRQ also owes its owner IB_EVENT_QP_LAST_WQE_REACHED
 * (IBA 11.6.3.1), raised after the flush has completed the WQE it had
 * taken from the SRQ, so that a consumer draining the QP (6.12's
 * ib_drain_qp() waits for this event) finds that completion in the CQ.
 */
static void sroce_exec_enter_error(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->exec_lock);
	if (qp->ibqp.srq)
		set_bit(SROCE_EXEC_LAST_WQE, &qp->events);
	sroce_exec_kick(qp);
}

/* The engine moves the QP to ERR, for the reason the tracepoint shows. */
static void sroce_exec_to_error(struct sroce_qp *qp, int status, int event)
{
	trace_sroce_qp_state(&qp->ibqp, qp->state, IB_QPS_ERR, status, event);
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	sroce_exec_enter_error(qp);
}

/**
 * sroce_exec_set_error - move the QP to the error state from the engine
 * @qp: the QP; qp->exec_lock held
 * @status: the status of the completion that reports the error
 *
 * For an error that a work completion reports (a requester's failed WQE, a
 * receive completed in error): no asynchronous event.  The work item
 * flushes both queues on its next pass.
 */
void sroce_exec_set_error(struct sroce_qp *qp, enum sroce_wc_status status)
{
	lockdep_assert_held(&qp->exec_lock);
	if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_ERR)
		return;
	sroce_exec_to_error(qp, status, SROCE_QP_STATE_NO_CAUSE);
}

/**
 * sroce_exec_set_error_event - the error state, reported by an event
 * @qp: the QP; qp->exec_lock held
 * @ev: IB_EVENT_QP_FATAL, IB_EVENT_QP_REQ_ERR or IB_EVENT_QP_ACCESS_ERR
 *
 * For an error no work completion reports (IBTA 11.6.3.1): a request the
 * responder refused without a receive WQE to complete, a completion lost
 * to a full CQ.  Only the transition into the error state raises it.
 */
void sroce_exec_set_error_event(struct sroce_qp *qp, enum ib_event_type ev)
{
	lockdep_assert_held(&qp->exec_lock);
	if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_ERR)
		return;
	sroce_exec_raise(qp, ev);
	sroce_exec_to_error(qp, SROCE_QP_STATE_NO_CAUSE, ev);
}

/*
 * Error state: every outstanding WQE completes with WR_FLUSH_ERR, at most
 * budget of each queue per run (userspace may keep posting).  Returns true
 * if more are left.  The RQ flag is set before the last look at the RQ
 * producer so that a receive posted after it rings the doorbell (see
 * SROCE_RQ_NEED_WAKEUP).  A QP using an SRQ has no RQ; it flushes only the
 * receive it had taken.
 */
bool sroce_exec_flush(struct sroce_qp *qp, int budget)
{
	bool more;

	lockdep_assert_held(&qp->exec_lock);
	sroce_req_stop_timers(qp);
	if (sroce_qp_has_rq(qp)) {
		atomic_or(SROCE_RQ_NEED_WAKEUP, sroce_queue_flags(&qp->rq));
		/* flag store before the RQ producer load; pairs as for SQ */
		smp_mb__after_atomic();
	}
	more = sroce_comp_flush(qp, budget);
	more |= sroce_resp_flush(qp, budget);
	if (more)
		return true;
	/* after the flush's completions, delivered once the run is over */
	if (test_and_clear_bit(SROCE_EXEC_LAST_WQE, &qp->events))
		sroce_exec_raise(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	return false;
}

/*
 * modify_qp changed the state (qp->mutex and qp->exec_lock held): set the
 * engine up for the
 * new one.  RESET forgets every WQE without completing it, as the verbs
 * say; RTR and RTS start the responder and requester at the PSNs just set;
 * SQD lets the requester finish the messages it has started and no more.
 */
void sroce_exec_modify(struct sroce_qp *qp, enum ib_qp_state cur,
		       enum ib_qp_state next)
{
	lockdep_assert_held(&qp->mutex);
	lockdep_assert_held(&qp->exec_lock);
	if (next != cur)
		trace_sroce_qp_state(&qp->ibqp, cur, next,
				     SROCE_QP_STATE_NO_CAUSE,
				     SROCE_QP_STATE_NO_CAUSE);
	if (next == cur && next != IB_QPS_RTS)
		return;
	switch (next) {
	case IB_QPS_RESET:
		sroce_req_stop_timers(qp);
		sroce_exec_rxq_purge(qp);
		sroce_req_reset(qp);
		sroce_resp_reset(qp);
		clear_bit(SROCE_EXEC_LAST_WQE, &qp->events);
		if (sroce_qp_has_rq(qp))
			atomic_andnot(SROCE_RQ_NEED_WAKEUP,
				      sroce_queue_flags(&qp->rq));
		break;
	case IB_QPS_RTR:
		if (cur != IB_QPS_RTR) {
			sroce_resp_start(qp);
			qp->comm_est = false;
		}
		break;
	case IB_QPS_RTS:
		if (cur == IB_QPS_RTR)
			sroce_req_start(qp);
		else
			sroce_req_update(qp);
		sroce_exec_kick(qp);
		break;
	case IB_QPS_SQD:
		/* the run that finds the SQ drained raises SQ_DRAINED */
		if (cur == IB_QPS_RTS) {
			sroce_req_drain(qp);
			sroce_exec_kick(qp);
		}
		break;
	case IB_QPS_ERR:
		sroce_exec_enter_error(qp);
		break;
	default:
		break;
	}
}

int sroce_exec_qp_init(struct sroce_qp *qp)
{
	int err;

	INIT_WORK(&qp->work, sroce_exec_work);
	spin_lock_init(&qp->kick_lock);
	spin_lock_init(&qp->exec_lock);
	skb_queue_head_init(&qp->rxq);
	qp->rxq_bytes = 0;
	/* spread the QPs' work items over the CPUs */
	qp->exec_cpu = cpumask_local_spread(atomic_inc_return(&sroce_exec_next_cpu),
					    NUMA_NO_NODE);
	qp->db_cpu = -1;
	spin_lock_init(&qp->post_lock);
	qp->events = 0;
	qp->ae_pending = 0;
	err = sroce_tx_qp_init(qp, qp->user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	if (err)
		return err;
	err = sroce_req_init(qp);
	if (err)
		goto err_tx;
	err = sroce_resp_init(qp);
	if (err)
		goto err_req;
	return 0;

err_req:
	sroce_req_cleanup(qp);
err_tx:
	sroce_tx_qp_detach(qp);
	return err;
}

/*
 * destroy_qp, once lookups are cut off: stop the engine for good, so that
 * it neither transmits (which takes QP references) nor runs again.  Timers,
 * the receive path and transmit completions may still try to wake or run
 * it; the DYING bit, set under kick_lock and tested by runs under
 * exec_lock, makes that a no-op (see "Lifetime").
 */
void sroce_exec_quiesce(struct sroce_qp *qp)
{
	sroce_exec_mark_dying(qp);
	/* a run in progress (a softirq of another CPU) finishes first */
	spin_lock_bh(&qp->exec_lock);
	spin_unlock_bh(&qp->exec_lock);
	/* the last work item: it may arm a timer, it cannot queue itself */
	cancel_work_sync(&qp->work);
	sroce_req_shutdown_timers(qp);
	WARN_ON_ONCE(work_pending(&qp->work));
	/* it transmits nothing more; packets in the stack let go of it */
	sroce_tx_qp_detach(qp);
}

/* destroy_qp, after every QP reference is gone: free the engine's state. */
void sroce_exec_cleanup(struct sroce_qp *qp)
{
	sroce_exec_rxq_purge(qp);
	sroce_resp_cleanup(qp);
	sroce_req_cleanup(qp);
}

int sroce_exec_init(void)
{
	/* Storage ULPs (NVMe-oF, NFS/RDMA) run over sroce: reclaim-safe. */
	sroce_wq = alloc_workqueue("sroce", WQ_MEM_RECLAIM | WQ_HIGHPRI, 0);
	return sroce_wq ? 0 : -ENOMEM;
}

void sroce_exec_exit(void)
{
	sroce_tx_drain();
	destroy_workqueue(sroce_wq);
}

int sroce_exec_tx_inflight(struct sroce_qp *qp)
{
	return sroce_tx_inflight(qp);
}

/* The objects' hooks into the transmit path (exec.h); net.c does the work. */
void sroce_exec_forget_route(struct sroce_qp *qp)
{
	sroce_net_forget_route(qp);
}

int sroce_exec_mcast_join(struct sroce_dev *sdev,
			  const struct in6_addr *group, bool join)
{
	return sroce_net_mcast(sdev, group, join);
}
