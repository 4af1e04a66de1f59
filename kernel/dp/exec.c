// SPDX-License-Identifier: GPL-2.0
/*
 * Per-QP execution context.
 *
 * Everything a QP's data path does - transmitting requests, acting on ACKs
 * and responses, executing incoming requests, timers, flushing - runs in
 * one work item per QP on sroce_wq, with qp->mutex held.  A work item never
 * runs on two CPUs at once, and modify_qp takes the same mutex, so the
 * engine's state (struct sroce_req, struct sroce_resp, the WQE copies)
 * needs no other lock and sees the attributes change only between runs.
 *
 * Who wakes the work item:
 *  - the receive path (softirq) queues the skb on qp->rxq, sroce_exec_rx();
 *  - the doorbells: a kernel consumer's post_send/post_recv and a
 *    provider's empty POST_RECV command, sroce_exec_kick(); a provider's
 *    empty POST_SEND command runs the engine in its own system call if the
 *    QP is idle, sroce_exec_doorbell();
 *  - the retransmission and RNR timers (SROCE_EXEC_* event bits);
 *  - modify_qp, when the QP enters a state with work to do.
 *
 * Lifetime.  The receive path and the multicast fan-out hold a QP reference
 * (sroce_qp_get()) while they queue, and so does every transmitted packet
 * until the stack frees it (kernel/tx.c, whose destructor may kick the work
 * just before it drops its reference); the timers hold none.  destroy_qp
 * cuts lookups off, then sroce_exec_quiesce() marks the QP dying, cancels
 * the work and shuts the timers down; then it waits for the references
 * (kernel/qp.c) and sroce_exec_cleanup() drops what is left on rxq.
 *
 * Why nothing runs or is queued after destroy: sroce_exec_kick() tests
 * SROCE_EXEC_DYING and queues the work under qp->kick_lock, and
 * sroce_exec_quiesce() sets the bit under the same lock.  A kick either
 * took the lock first - its work item is then queued before the bit is set
 * and the cancel that follows removes it or waits for its run - or takes
 * it afterwards, sees the bit and queues nothing.  There is no window in
 * between, whoever kicks (a reference holder about to put its reference, a
 * timer, the run requeueing itself).  The run in progress that the cancel
 * waits for can arm a timer, which the shutdown after the cancel stops; a
 * timer firing meanwhile only sets a bit.  So once sroce_exec_quiesce()
 * returns, no work item is queued or running and none can be queued again;
 * the reference holders still touch only rxq, the event bits and the
 * inflight count, which live in the QP that destroy_qp has not freed yet.
 * A provider's doorbell runs the engine in its own system call, which
 * ib_uverbs never lets overlap destroy_qp.
 *
 * A run is bounded (SROCE_EXEC_BUDGET packets in and out) and requeues
 * itself if work is left, so one busy QP cannot starve the others sharing
 * the workqueue's workers.
 *
 * Affiliated asynchronous events (COMM_EST, the QP error events,
 * LAST_WQE_REACHED of a QP on an SRQ) are found
 * by the engine with qp->mutex held.  It only notes them in qp->ae_pending;
 * sroce_exec_dispatch() hands them to the QP's event handler after the
 * mutex is dropped, still inside the work item or the doorbell's system
 * call.  The engine runs in process context, so this is not about atomic
 * context (ib_uverbs' handler only takes a spinlock and allocates with
 * GFP_ATOMIC): a handler may call back into the verbs on the same QP - an
 * application moving it to ERR, rdma_cm's notify - and modify_qp takes
 * qp->mutex.  destroy_qp cancels the work item, which waits for a dispatch
 * in progress, and ib_uverbs does not destroy a QP while one of its system
 * calls runs, so no event reaches a destroyed QP.
 */
#include <linux/skbuff.h>
#include <linux/workqueue.h>

#include "core/pkt.h"

#include "debugfs.h"
#include "dp/comp.h"
#include "dp/exec.h"
#include "dp/net.h"
#include "dp/req.h"
#include "dp/resp.h"
#include "dp/tx.h"
#include "dp/ud.h"
#include "obj/qp.h"

#define SROCE_EXEC_BUDGET	256	/* packets per run, each direction */
#define SROCE_EXEC_RXQ_MAX	8192	/* queued packets before dropping */

static struct workqueue_struct *sroce_wq;

/* Queue the work unless the QP is dying; see "Lifetime" above. */
static void sroce_exec_queue(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->kick_lock);
	if (!test_bit(SROCE_EXEC_DYING, &qp->events))
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

void sroce_exec_rx(struct sroce_qp *qp, struct sk_buff *skb)
{
	if (skb_queue_len(&qp->rxq) >= SROCE_EXEC_RXQ_MAX) {
		sroce_drop_count(SROCE_DROP_QP_STATE);
		kfree_skb(skb);
		return;
	}
	skb_queue_tail(&qp->rxq, skb);
	sroce_exec_kick(qp);
}

void sroce_exec_event(struct sroce_qp *qp, int bit)
{
	set_bit(bit, &qp->events);
	sroce_exec_kick(qp);
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
		sroce_drop_count(SROCE_DROP_TRANSPORT);
		return;
	}
	if (!sroce_exec_can_receive(qp->state)) {
		sroce_drop_count(SROCE_DROP_QP_STATE);
		return;
	}
	if (qp->ibqp.qp_type == IB_QPT_UC) {
		sroce_resp_uc_packet(qp, skb, pkt, reason);
		return;
	}
	if (reason != SROCE_DROP_NONE) {
		sroce_drop_count(SROCE_DROP_MALFORMED);
		return;
	}
	sroce_ud_recv(qp, skb, pkt);
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

	reason = sroce_pkt_parse(skb->data, skb->len, &pkt);
	if (reason != SROCE_DROP_NONE &&
	    !sroce_pkt_drop_is_request_error(reason)) {
		sroce_drop_count(SROCE_DROP_MALFORMED);
		goto drop;
	}
	if (pkt.op->transport != sroce_qp_transport(qp)) {
		sroce_drop_count(SROCE_DROP_TRANSPORT);
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
	if (pkt.op->transport != SROCE_TRANSPORT_RC) {
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
			sroce_drop_count(SROCE_DROP_MALFORMED);
			goto drop;
		}
		if (state != IB_QPS_RTS && state != IB_QPS_SQD)
			goto drop_state;
		sroce_comp_packet(qp, skb, &pkt);
	}
	kfree_skb(skb);
	return;

drop_state:
	sroce_drop_count(SROCE_DROP_QP_STATE);
drop:
	kfree_skb(skb);
}

/* Process received packets; responses go to the completer. */
static bool sroce_exec_rx_batch(struct sroce_qp *qp)
{
	struct sk_buff *skb;
	int n;

	for (n = 0; n < SROCE_EXEC_BUDGET; n++) {
		/* requests behind a READ being answered wait for it */
		if (sroce_resp_busy(qp))
			break;
		skb = skb_dequeue(&qp->rxq);
		if (!skb)
			break;
		sroce_exec_packet(qp, skb);
	}
	sroce_resp_send_ack(qp);
	/* a READ still being answered goes on when transmit has room */
	if (sroce_resp_busy(qp))
		return !sroce_tx_blocked(qp);
	return !skb_queue_empty(&qp->rxq);
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

static void sroce_exec_run(struct sroce_qp *qp)
{
	enum ib_qp_state state;
	bool more;

	lockdep_assert_held(&qp->mutex);
	atomic_andnot(SROCE_SQ_NEED_WAKEUP, sroce_queue_flags(&qp->sq));

	more = sroce_exec_rx_batch(qp);
	if (test_and_clear_bit(SROCE_EXEC_TIMEOUT, &qp->events))
		sroce_comp_timeout(qp);
	if (test_and_clear_bit(SROCE_EXEC_RNR, &qp->events))
		sroce_comp_rnr_done(qp);

	state = READ_ONCE(qp->state);
	if (state == IB_QPS_ERR) {
		skb_queue_purge(&qp->rxq);
		sroce_exec_flush(qp);
		more = false;
	} else if (state == IB_QPS_RTS || state == IB_QPS_SQD) {
		more |= sroce_req_run(qp, SROCE_EXEC_BUDGET);
		if (state == IB_QPS_SQD && sroce_req_drain_done(qp) &&
		    qp->en_sqd_async_notify)
			sroce_exec_raise(qp, IB_EVENT_SQ_DRAINED);
	} else if (state == IB_QPS_RESET) {
		skb_queue_purge(&qp->rxq);
		more = false;
	}

	if (more || !sroce_exec_idle(qp))
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
 * @qp: the QP; qp->mutex held
 * @ev: a QP event, one of sroce_exec_ae_order[]
 *
 * Delivered by sroce_exec_dispatch() once the mutex is dropped (see the
 * head of the file).  An event noted again before delivery is delivered
 * once.
 */
void sroce_exec_raise(struct sroce_qp *qp, enum ib_event_type ev)
{
	lockdep_assert_held(&qp->mutex);
	set_bit(ev, &qp->ae_pending);
}

/* Deliver the noted events; process context, qp->mutex not held. */
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
 * (most of a small message's latency) and costs nothing extra, since the run
 * is as bounded as the worker's and requeues the work item if work is left.
 */
void sroce_exec_doorbell(struct sroce_qp *qp)
{
	might_sleep();
	if (test_bit(SROCE_EXEC_DYING, &qp->events) ||
	    !mutex_trylock(&qp->mutex)) {
		sroce_exec_kick(qp);
		return;
	}
	sroce_exec_run(qp);
	mutex_unlock(&qp->mutex);
	sroce_exec_dispatch(qp);
}

static void sroce_exec_work(struct work_struct *work)
{
	struct sroce_qp *qp = container_of(work, struct sroce_qp, work);

	mutex_lock(&qp->mutex);
	sroce_exec_run(qp);
	mutex_unlock(&qp->mutex);
	sroce_exec_dispatch(qp);
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
	lockdep_assert_held(&qp->mutex);
	if (qp->ibqp.srq)
		set_bit(SROCE_EXEC_LAST_WQE, &qp->events);
	sroce_exec_kick(qp);
}

/**
 * sroce_exec_set_error - move the QP to the error state from the engine
 * @qp: the QP; qp->mutex held
 *
 * For an error that a work completion reports (a requester's failed WQE, a
 * receive completed in error): no asynchronous event.  The work item
 * flushes both queues on its next pass.
 */
void sroce_exec_set_error(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->mutex);
	if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_ERR)
		return;
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	sroce_exec_enter_error(qp);
}

/**
 * sroce_exec_set_error_event - the error state, reported by an event
 * @qp: the QP; qp->mutex held
 * @ev: IB_EVENT_QP_FATAL, IB_EVENT_QP_REQ_ERR or IB_EVENT_QP_ACCESS_ERR
 *
 * For an error no work completion reports (IBTA 11.6.3.1): a request the
 * responder refused without a receive WQE to complete, a completion lost
 * to a full CQ.  Only the transition into the error state raises it.
 */
void sroce_exec_set_error_event(struct sroce_qp *qp, enum ib_event_type ev)
{
	lockdep_assert_held(&qp->mutex);
	if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_ERR)
		return;
	sroce_exec_raise(qp, ev);
	sroce_exec_set_error(qp);
}

/*
 * Error state: every outstanding WQE completes with WR_FLUSH_ERR.  The RQ
 * flag is set before the last look at the RQ producer so that a receive
 * posted after it rings the doorbell (see SROCE_RQ_NEED_WAKEUP).  A QP
 * using an SRQ has no RQ; it flushes only the receive it had taken.
 */
void sroce_exec_flush(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->mutex);
	sroce_req_stop_timers(qp);
	if (!qp->ibqp.srq) {
		atomic_or(SROCE_RQ_NEED_WAKEUP, sroce_queue_flags(&qp->rq));
		/* flag store before the RQ producer load; pairs as for SQ */
		smp_mb__after_atomic();
	}
	sroce_comp_flush(qp);
	sroce_resp_flush(qp);
	/* after the flush's completions, once the run has dropped qp->mutex */
	if (test_and_clear_bit(SROCE_EXEC_LAST_WQE, &qp->events))
		sroce_exec_raise(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/*
 * modify_qp changed the state (qp->mutex held): set the engine up for the
 * new one.  RESET forgets every WQE without completing it, as the verbs
 * say; RTR and RTS start the responder and requester at the PSNs just set;
 * SQD lets the requester finish the messages it has started and no more.
 */
void sroce_exec_modify(struct sroce_qp *qp, enum ib_qp_state cur,
		       enum ib_qp_state next)
{
	lockdep_assert_held(&qp->mutex);
	if (next == cur && next != IB_QPS_RTS)
		return;
	switch (next) {
	case IB_QPS_RESET:
		sroce_req_stop_timers(qp);
		skb_queue_purge(&qp->rxq);
		sroce_req_reset(qp);
		sroce_resp_reset(qp);
		clear_bit(SROCE_EXEC_LAST_WQE, &qp->events);
		if (!qp->ibqp.srq)
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
	skb_queue_head_init(&qp->rxq);
	spin_lock_init(&qp->post_lock);
	qp->events = 0;
	qp->ae_pending = 0;
	err = sroce_req_init(qp);
	if (err)
		return err;
	err = sroce_resp_init(qp);
	if (err)
		sroce_req_cleanup(qp);
	return err;
}

/*
 * destroy_qp, once lookups are cut off: stop the engine for good, so that
 * it neither transmits (which takes QP references) nor runs again.  Timers,
 * the receive path and transmit completions may still try to wake it; the
 * DYING bit, set under kick_lock, makes that a no-op (see "Lifetime").
 */
void sroce_exec_quiesce(struct sroce_qp *qp)
{
	sroce_exec_mark_dying(qp);
	/* the last run: it may arm a timer, it cannot queue itself again */
	cancel_work_sync(&qp->work);
	sroce_req_shutdown_timers(qp);
	WARN_ON_ONCE(work_pending(&qp->work));
}

/* destroy_qp, after every QP reference is gone: free the engine's state. */
void sroce_exec_cleanup(struct sroce_qp *qp)
{
	skb_queue_purge(&qp->rxq);
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
	destroy_workqueue(sroce_wq);
}

/* The objects' hooks into the transmit path (exec.h); net.c does the work. */
void sroce_exec_forget_route(struct sroce_qp *qp)
{
	sroce_net_forget_route(qp);
}

int sroce_exec_mcast_join(struct net_device *ndev,
			  const struct in6_addr *group, bool join)
{
	return sroce_net_mcast(ndev, group, join);
}
