/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the test modules of selftests/kmod share: the step report that
 * selftests/kulp.sh counts ("ok N name" or "not ok N name: why" in the
 * kernel log, under the module's pr_fmt) and polling a CQ with a time
 * limit.  A module defines pr_fmt before including this.
 */
#ifndef SROCE_KTEST_H
#define SROCE_KTEST_H

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/printk.h>
#include <rdma/ib_verbs.h>

struct ktest_log {
	int step;
	int failed;
};

static inline void ktest_report(struct ktest_log *log, bool ok,
				const char *name, const char *why)
{
	log->step++;
	if (ok) {
		pr_info("ok %d %s\n", log->step, name);
		return;
	}
	log->failed++;
	pr_err("not ok %d %s: %s\n", log->step, name, why);
}

/* The next completion of cq within ms milliseconds; false if none came. */
static inline bool ktest_poll(struct ib_cq *cq, struct ib_wc *wc,
			      unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	do {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return true;
		usleep_range(200, 1000);
	} while (time_before(jiffies, end));
	return false;
}

#endif /* SROCE_KTEST_H */
