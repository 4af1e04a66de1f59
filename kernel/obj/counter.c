// SPDX-License-Identifier: GPL-2.0
/*
 * Per-QP counters: the driver's side of ib_core's counter API ("rdma
 * statistic qp set ... auto", "rdma statistic qp bind/unbind", "rdma
 * statistic qp show").
 *
 * ib_core owns struct rdma_counter and its life: it allocates one, asks
 * counter_alloc_stats for its hw stats, binds QPs to it (counter_bind_qp,
 * the first time with counter->id 0: the driver gives the counter its
 * id), unbinds them (counter_unbind_qp, also just before destroy_qp), and
 * when the last QP has left, reads the counter once more
 * (counter_update_stats) to keep its counts in the port's history and
 * frees it (counter_dealloc).  It calls all of these with counter->lock
 * (a mutex) held, in process context.
 *
 * The driver's part of a counter is struct sroce_counter (stats.h): per-CPU
 * counts shared by the QPs bound to it, found by id in the device's
 * counter_xa.  Per CPU rather than atomic because the QPs of one counter
 * (auto mode gathers every QP of a type into one) run on any CPU: per-CPU
 * increments never bounce a cache line between them, as the port counters
 * do not.  A bound QP points to it through qp->counter, which the data path
 * follows under RCU (stats.h): bind and unbind publish it under qp->mutex,
 * and unbind waits for a grace period before it returns, so once ib_core
 * reads a counter whose QPs have all left, nothing adds to it any more and
 * counter_dealloc can free it at once.
 */
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_counter.h>

#include "device.h"
#include "obj/counter.h"
#include "obj/qp.h"
#include "stats.h"

void sroce_counter_dev_init(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->counter_xa, XA_FLAGS_ALLOC1);
}

/* dealloc_driver: ib_core has deallocated every counter. */
void sroce_counter_dev_cleanup(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->counter_xa));
	xa_destroy(&sdev->counter_xa);
}

static struct sroce_counter *sroce_counter_find(struct rdma_counter *counter)
{
	return xa_load(&to_sroce_dev(counter->device)->counter_xa, counter->id);
}

/* A new counter, published under a new id in counter->id. */
static struct sroce_counter *sroce_counter_new(struct rdma_counter *counter)
{
	struct sroce_dev *sdev = to_sroce_dev(counter->device);
	struct sroce_counter *c;
	u32 id;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return NULL;
	c->stats = alloc_percpu(struct sroce_stats);
	if (!c->stats)
		goto err_free;
	if (xa_alloc(&sdev->counter_xa, &id, c, xa_limit_32b, GFP_KERNEL))
		goto err_free;
	counter->id = id;
	return c;

err_free:
	free_percpu(c->stats);
	kfree(c);
	return NULL;
}

/* Point qp's data path at c (NULL: the device's counters). */
static void sroce_counter_set(struct sroce_qp *qp, struct sroce_counter *c)
{
	mutex_lock(&qp->mutex);
	rcu_assign_pointer(qp->counter, c);
	mutex_unlock(&qp->mutex);
}

/*
 * Nothing fails once the counter is made: on a failed first bind, ib_core
 * frees the counter without counter_dealloc.
 */
static int sroce_counter_bind_qp(struct rdma_counter *counter,
				 struct ib_qp *ibqp)
{
	struct sroce_counter *c;

	lockdep_assert_held(&counter->lock);
	c = counter->id ? sroce_counter_find(counter) :
			  sroce_counter_new(counter);
	if (!c)
		return counter->id ? -ENOENT : -ENOMEM;
	sroce_counter_set(to_sroce_qp(ibqp), c);
	/* ib_core leaves this to the driver, as it does clearing it */
	ibqp->counter = counter;
	return 0;
}

static int sroce_counter_unbind_qp(struct ib_qp *ibqp)
{
	lockdep_assert_held(&ibqp->counter->lock);
	sroce_counter_set(to_sroce_qp(ibqp), NULL);
	ibqp->counter = NULL;
	/*
	 * Increments that read the old pointer end before this returns: what
	 * ib_core reads from the counter next is final for this QP.
	 */
	synchronize_rcu();
	return 0;
}

/* Every QP has left (unbind waited for the data path): free it. */
static int sroce_counter_dealloc(struct rdma_counter *counter)
{
	struct sroce_counter *c;

	c = xa_erase(&to_sroce_dev(counter->device)->counter_xa, counter->id);
	if (c) {
		free_percpu(c->stats);
		kfree(c);
	}
	return 0;
}

static struct rdma_hw_stats *
sroce_counter_alloc_stats(struct rdma_counter *counter)
{
	return sroce_stats_alloc_counter();
}

static int sroce_counter_update_stats(struct rdma_counter *counter)
{
	lockdep_assert_held(&counter->lock);
	sroce_stats_read_counter(sroce_counter_find(counter), counter->stats);
	return 0;
}

const struct ib_device_ops sroce_counter_ops = {
	.counter_bind_qp = sroce_counter_bind_qp,
	.counter_unbind_qp = sroce_counter_unbind_qp,
	.counter_dealloc = sroce_counter_dealloc,
	.counter_alloc_stats = sroce_counter_alloc_stats,
	.counter_update_stats = sroce_counter_update_stats,
};
