// SPDX-License-Identifier: GPL-2.0
/*
 * The SQ poller.
 *
 * A doorbell that runs the engine in the poster's system call keeps all of
 * a message - system call, requester, same-host delivery, responder,
 * completer - on the poster's CPU, while another CPU may have nothing to
 * do.  While a user poster streams and another CPU is idle, its send
 * doorbell instead hands the QP to its work item on that CPU, which runs
 * the engine and then polls the SQ with SROCE_SQ_NEED_WAKEUP clear, so
 * that the poster makes no system call and the engine runs beside it.
 * The work item runs sroce_poll_run() while the QP's SROCE_EXEC_POLL bit
 * is set (kernel/dp/exec.c); the rules that keep a WQE from being missed
 * are those of NEED_WAKEUP (the uapi header): whoever clears it looks at
 * the SQ again later, and a run that goes idle sets it and looks once
 * more.  Documentation/architecture.md, "The SQ poller", has the why.
 */
#include <linux/cpumask.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/stat.h>
#include <linux/tick.h>
#include <linux/workqueue.h>

#include "device.h"
#include "dp/exec.h"
#include "dp/poll.h"
#include "obj/qp.h"
#include "stats.h"

#define SROCE_POLL_MAX_NS	(1000 * NSEC_PER_USEC) /* per work run */
#define SROCE_POLL_GAP_NS	(1000 * NSEC_PER_USEC) /* doorbells apart */

/*
 * sq_poll_us: how long the poller waits for a new WQE after the last one
 * before the QP goes back to doorbells; 0 turns the poller off (every
 * doorbell runs the engine in the poster's system call).
 */
static unsigned int sq_poll_us = 50;
module_param(sq_poll_us, uint, 0644);
MODULE_PARM_DESC(sq_poll_us,
		 "poll a streaming QP's SQ on another, idle CPU for this many usec after its last WQE (0: run doorbells inline)");

/*
 * The SQ poller, in the work item.  Each round snapshots the SQ's producer
 * before it runs the engine, so that the run sees every WQE up to the
 * snapshot, then clears NEED_WAKEUP (the run's end set it) and waits for
 * the producer to move.  A WQE posted after the snapshot moves it, one
 * posted before was the run's; a poster that saw NEED_WAKEUP set in the
 * moment between rang a doorbell, which queues this work again.
 *
 * Polling ends after sq_poll_us without a new WQE, as soon as anything
 * else may run on this CPU (the work item is high priority and would
 * starve it), or when the QP dies; a last run then leaves the QP idle the
 * usual way, NEED_WAKEUP set and the SQ looked at once more.  It goes on in
 * the next run of the work item, NEED_WAKEUP still clear, when a run left
 * work and queued it, or after SROCE_POLL_MAX_NS, so that the other
 * work items of this CPU's pool get their turn.
 */
void sroce_poll_run(struct sroce_qp *qp)
{
	atomic_t *flags = sroce_queue_flags(&qp->sq);
	u64 start = local_clock(), now, last = start;
	u32 seen;

	for (;;) {
		seen = sroce_queue_peer_producer(&qp->sq);
		sroce_exec_deferred(qp);
		/* a poster seeing it late only rings once more */
		atomic_andnot(SROCE_SQ_NEED_WAKEUP, flags);
		for (;;) {
			if (work_pending(&qp->work))
				return;
			if (need_resched() || !single_task_running() ||
			    test_bit(SROCE_EXEC_DYING, &qp->events))
				goto out;
			now = local_clock();
			if (now - start > SROCE_POLL_MAX_NS) {
				sroce_exec_kick(qp);
				return;
			}
			if (sroce_queue_peer_producer(&qp->sq) != seen)
				break;
			if (now - last > READ_ONCE(sq_poll_us) * NSEC_PER_USEC)
				goto out;
			cpu_relax();
		}
		last = now;
	}
out:
	clear_bit(SROCE_EXEC_POLL, &qp->events);
	sroce_exec_deferred(qp);
}

/* Another online CPU than the caller's for the poller, or nr_cpu_ids. */
static int sroce_poll_cpu(struct sroce_qp *qp)
{
	int self = raw_smp_processor_id();
	int cpu = READ_ONCE(qp->exec_cpu);

	if (cpu != self && cpu_online(cpu))
		return cpu;
	cpu = cpumask_next(self, cpu_online_mask);
	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	return cpu == self ? nr_cpu_ids : cpu;
}

/*
 * Whether the poster streams, i.e. whether a poller would already have
 * had this WQE to run: an earlier WQE of the QP is still unretired (a
 * stream over a wire, whose ACKs take a round trip), or the last doorbell
 * came less than two polling periods ago (a stream on this host, each
 * message done within its doorbell).  A ping-pong over a wire - a latency
 * test, a request waiting for its reply - rings on an empty SQ a round
 * trip after the last doorbell; with its peer on another host the CPU
 * here may well be idle, and handing each message off would add a wake-up
 * of that CPU to every round trip.  @dt: ns since the last doorbell.
 */
static bool sroce_poll_streams(struct sroce_qp *qp, u64 dt)
{
	/* a hint: the engine moves comp under exec_lock, not taken here */
	u32 unretired = sroce_queue_peer_producer(&qp->sq) -
			READ_ONCE(qp->req.comp);

	return unretired >= 2 ||
	       dt < 2ULL * READ_ONCE(sq_poll_us) * NSEC_PER_USEC;
}

/*
 * Whether a send doorbell goes to the poller on @cpu: while the poster
 * streams (sroce_poll_streams()) and @cpu was idle at least half the time
 * since its last doorbell, at most SROCE_POLL_GAP_NS ago.  A poster whose
 * peer keeps that CPU busy - a latency test on one host, both ends
 * polling - runs the engine in its own system call: a hand-off would cost
 * it a wake-up of the other CPU per message.  The fields are hints;
 * concurrent doorbells of one QP may race on them.
 */
static bool sroce_poll_worth(struct sroce_qp *qp, int cpu)
{
	u64 now = ktime_get_ns(), idle = get_cpu_idle_time_us(cpu, NULL);
	u64 dt = now - READ_ONCE(qp->db_ns);
	u64 didle = idle - READ_ONCE(qp->db_idle_us);
	bool same = READ_ONCE(qp->db_cpu) == cpu;

	WRITE_ONCE(qp->db_ns, now);
	WRITE_ONCE(qp->db_idle_us, idle);
	WRITE_ONCE(qp->db_cpu, cpu);
	/* (u64)-1: no idle accounting (nohz off) */
	if (idle == (u64)-1 || !same || dt > SROCE_POLL_GAP_NS)
		return false;
	return didle * NSEC_PER_USEC * 2 >= dt && sroce_poll_streams(qp, dt);
}

/*
 * A user's send doorbell.  Handing off, it clears NEED_WAKEUP (the poster's
 * next WQEs need no doorbell), moves the QP's deferred work to the other
 * CPU and wakes it there, and returns; otherwise it runs the engine here.
 * The poller's CPU time is that CPU's, not the poster's: it takes only time
 * that CPU would otherwise idle away.
 */
void sroce_poll_doorbell(struct sroce_qp *qp)
{
	int cpu;

	if (!READ_ONCE(sq_poll_us)) {
		sroce_exec_doorbell(qp);
		return;
	}
	cpu = sroce_poll_cpu(qp);
	if (cpu >= nr_cpu_ids || !sroce_poll_worth(qp, cpu)) {
		sroce_exec_doorbell(qp);
		return;
	}
	sroce_stats_inc(to_sroce_dev(qp->ibqp.device), SROCE_STAT_SQ_POLL);
	WRITE_ONCE(qp->exec_cpu, cpu);
	set_bit(SROCE_EXEC_POLL, &qp->events);
	/* the poller runs and looks at the SQ before NEED_WAKEUP is set again */
	atomic_andnot(SROCE_SQ_NEED_WAKEUP, sroce_queue_flags(&qp->sq));
	sroce_exec_kick(qp);
}
