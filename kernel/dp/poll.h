/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_POLL_H
#define SROCE_POLL_H

struct sroce_qp;

/* A user's send doorbell; process context.  Runs or hands off the engine. */
void sroce_poll_doorbell(struct sroce_qp *qp);
/* The work item while SROCE_EXEC_POLL is set: run, then poll the SQ. */
void sroce_poll_run(struct sroce_qp *qp);

#endif /* SROCE_POLL_H */
