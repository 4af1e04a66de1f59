/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_REQ_H
#define SROCE_REQ_H

#include <linux/types.h>
#include <rdma/sroce-abi.h>

struct sroce_qp;
struct sroce_req;
struct sroce_swqe;

/* Consecutive timeouts stretch the transport timer up to 4x (req.c). */
#define SROCE_REQ_MAX_BACKOFF	2

int sroce_req_init(struct sroce_qp *qp);
void sroce_req_cleanup(struct sroce_qp *qp);
void sroce_req_reset(struct sroce_qp *qp);
void sroce_req_start(struct sroce_qp *qp);
void sroce_req_update(struct sroce_qp *qp);
void sroce_req_drain(struct sroce_qp *qp);
bool sroce_req_drain_done(struct sroce_qp *qp);
bool sroce_req_has_new(struct sroce_qp *qp);
bool sroce_req_fetch(struct sroce_qp *qp);
bool sroce_req_run(struct sroce_qp *qp, int budget);
void sroce_req_rewind(struct sroce_qp *qp, u32 psn);
unsigned long sroce_req_deadline(const struct sroce_req *req);
void sroce_req_arm_timer(struct sroce_qp *qp);
void sroce_req_stop_timers(struct sroce_qp *qp);
void sroce_req_shutdown_timers(struct sroce_qp *qp);
struct sroce_send_wqe *sroce_req_wqe(struct sroce_qp *qp, u32 idx);
struct sroce_swqe *sroce_req_swqe(struct sroce_qp *qp, u32 idx);
bool sroce_req_is_rd_atomic(const struct sroce_swqe *w);
void sroce_req_release(struct sroce_swqe *w);

#endif /* SROCE_REQ_H */
