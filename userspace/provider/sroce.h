/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Objects of the sroce libibverbs provider.
 *
 * Each wraps the libibverbs object it implements, embedded first as
 * base_<obj>, so libibverbs and applications hold pointers to the base and
 * the provider gets its own state back with to_sroce_<obj>().  Files: sroce.c
 * registers the provider and owns the device, context.c the context and its
 * ops table, query.c device and port queries, pd.c protection domains, mr.c
 * memory regions, cq.c completion queues, qp.c queue pairs, ah.c address
 * handles and multicast attachment, srq.c shared receive queues, wq.c
 * posting work requests into a QP's or SRQ's rings, qp_ex.c the extended
 * (ibv_wr_*) send API on the same SQ slots.  A new object adds its
 * wrapper here, its ops to the table in context.c, and its prototypes
 * below.  mw.c memory windows (plain struct ibv_mw: no provider state),
 * xrcd.c XRC domains (plain struct verbs_xrcd, likewise).
 */
#ifndef SROCE_PROVIDER_H
#define SROCE_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/sroce-abi.h>

#include "verbs_private.h"

struct sroce_ring_hdr;
struct sroce_send_wqe;

#define sroce_container_of(ptr, type, member)				\
	((type *)((char *)(ptr) - offsetof(type, member)))

/* One per ib_device bound to the provider; freed by uninit_device. */
struct sroce_device {
	struct verbs_device base_dev;
};

/* One per ibv_open_device(). */
struct sroce_context {
	struct verbs_context base_ctx;
	uint32_t features;		/* enum sroce_ucontext_features */
	uint32_t max_inline_data;	/* from the kernel, for post_send */
};

/*
 * A thread domain (pd.c): the application's promise that the objects made
 * through a parent domain naming it are used by one thread at a time.
 * users counts those parent domains; dealloc_td refuses while it is not 0.
 */
struct sroce_td {
	struct ibv_td base_td;
	unsigned int users;		/* __atomic_* */
};

/*
 * A protection domain, or a parent domain (pd.c).  A parent domain has
 * parent set to the PD it was made from and a copy of that PD's handle and
 * pdn, so every command the kernel sees carries the real PD; the kernel
 * knows nothing of parent domains.  users counts the parent domains of a
 * real PD, which dealloc_pd refuses to free while it is not 0.  The
 * allocators are accepted and kept but never called (provider.md).
 */
struct sroce_pd {
	struct ibv_pd base_pd;
	uint32_t pdn;			/* kernel's number, carried in WQEs */
	unsigned int users;		/* parent domains, __atomic_* */
	struct sroce_pd *parent;	/* parent domain: the real PD */
	struct sroce_td *td;		/* parent domain: its TD, or NULL */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

/* An address handle: UD WQEs name it by the kernel's number. */
struct sroce_ah {
	struct ibv_ah ibv_ah;
	uint32_t ahn;
};

/* libibverbs reads the verbs_mr wrapper, so the MR embeds that, not ibv_mr. */
struct sroce_mr {
	struct verbs_mr base_mr;
};

/*
 * The kernel's ring, mapped; poll_cq reads CQEs up to its producer and
 * publishes consumer (ring.h).  A CQ made by ibv_create_cq_ex is the same
 * object with its ibv_cq_ex in use; the ibv_cq at the same address serves
 * ibv_poll_cq on it.
 */
struct sroce_cq {
	union {
		struct ibv_cq base_cq;
		struct verbs_cq base_vcq;	/* create_cq_ex */
	};
	pthread_spinlock_t lock;	/* pollers; protects consumer */
	struct sroce_ring_hdr *ring;
	size_t map_len;
	uint32_t num_slots;		/* == base_cq.cqe */
	uint32_t slot_shift;
	uint32_t consumer;		/* next CQE to read */
	uint32_t cqn;
	/*
	 * Extended polling: from start_poll to end_poll, with lock held,
	 * CQEs [consumer, consumer + polled) have been read, the last into
	 * cur; avail is how many the producer offered when last read.
	 */
	uint32_t polled;
	uint32_t avail;
	struct sroce_cqe cur;
	struct sroce_cq_retired *retired;	/* rings resize_cq replaced */
};

/* An old CQ ring's address range, kept until the CQ goes (cq.c). */
struct sroce_cq_retired {
	struct sroce_cq_retired *next;
	struct sroce_ring_hdr *ring;
	size_t len;
};

/*
 * One mapped work queue ring of a QP (SQ or RQ) or SRQ, which the provider
 * produces into (wq.c).  producer is private: it starts where the kernel's
 * header put it when the ring is mapped, and from then on the copy in the
 * header is only written (release store), never read back.
 */
struct sroce_wq {
	pthread_spinlock_t lock;	/* posters; protects producer */
	struct sroce_ring_hdr *ring;
	size_t map_len;
	uint32_t num_slots;
	uint32_t slot_shift;
	uint32_t producer;		/* next slot to fill */
	uint32_t max_sge;		/* SGEs per WR, as granted at create */
	bool single_thread;		/* made with a TD: posters skip lock */
};

/*
 * The posters' lock of a work queue.  A queue made through a parent
 * domain with a thread domain is posted to by one thread at a time, the
 * application's promise: the lock only orders posters among themselves
 * (the kernel reads the ring through the header's release/acquire
 * counters, never the lock), so it is skipped.
 */
static inline void sroce_wq_lock(struct sroce_wq *wq)
{
	if (!wq->single_thread)
		pthread_spin_lock(&wq->lock);
}

static inline void sroce_wq_unlock(struct sroce_wq *wq)
{
	if (!wq->single_thread)
		pthread_spin_unlock(&wq->lock);
}

/*
 * A queue pair.  The rings are mapped at creation, and every capacity the
 * kernel granted is checked to fit its slots, so posting needs no further
 * bounds than max_sge and max_inline_data.  A ring the QP has not got is
 * never mapped (ring NULL), and posting to it fails: the RQ of a QP with
 * an SRQ or of an XRC send QP, both rings of an XRC receive QP (made or
 * opened: the kernel gives it none).
 */
struct sroce_qp {
	struct verbs_qp base_qp;
	struct sroce_wq sq;		/* not mapped for XRC_RECV */
	struct sroce_wq rq;		/* not mapped with an SRQ, for XRC */
	uint32_t max_inline_data;	/* inline bytes per send WR */

	/*
	 * The extended post API (qp_ex.c): one batch from wr_start to
	 * wr_complete or wr_abort, with sq.lock held throughout.
	 */
	struct sroce_send_wqe *wr_cur;	/* the slot the setters fill */
	uint32_t wr_first;		/* SQ producer at wr_start */
	uint32_t wr_room;		/* free slots seen, see sroce_sq_take */
	int wr_err;			/* first error of the batch */
};

/*
 * A shared receive queue: one ring of receive WQEs like a QP's RQ, which
 * every QP attached to it takes from in the kernel.  Basic and XRC SRQs
 * are the same object with the same ring; libibverbs fills in base_vsrq's
 * type, XRCD and number (create_srq_ex) and leaves them zero (basic) for
 * create_srq.
 */
struct sroce_srq {
	struct verbs_srq base_vsrq;
	struct sroce_wq rq;
	uint32_t srqn;			/* the driver's; == srq_num for XRC */
};

static inline struct sroce_device *to_sroce_dev(struct ibv_device *ibdev)
{
	return sroce_container_of(ibdev, struct sroce_device,
				  base_dev.device);
}

static inline struct sroce_context *to_sroce_ctx(struct ibv_context *ibctx)
{
	return sroce_container_of(ibctx, struct sroce_context,
				  base_ctx.context);
}

static inline struct sroce_pd *to_sroce_pd(struct ibv_pd *ibpd)
{
	return sroce_container_of(ibpd, struct sroce_pd, base_pd);
}

static inline struct sroce_td *to_sroce_td(struct ibv_td *ibtd)
{
	return sroce_container_of(ibtd, struct sroce_td, base_td);
}

static inline struct sroce_cq *to_sroce_cq(struct ibv_cq *ibcq)
{
	return sroce_container_of(ibcq, struct sroce_cq, base_cq);
}

static inline struct sroce_cq *cqx_to_sroce_cq(struct ibv_cq_ex *cqx)
{
	return sroce_container_of(cqx, struct sroce_cq, base_vcq.cq_ex);
}

static inline struct sroce_mr *to_sroce_mr(struct ibv_mr *ibmr)
{
	return sroce_container_of(ibmr, struct sroce_mr, base_mr.ibv_mr);
}

static inline struct sroce_ah *to_sroce_ah(struct ibv_ah *ibah)
{
	return sroce_container_of(ibah, struct sroce_ah, ibv_ah);
}

static inline struct sroce_qp *to_sroce_qp(struct ibv_qp *ibqp)
{
	return sroce_container_of(ibqp, struct sroce_qp, base_qp.qp);
}

static inline struct sroce_srq *to_sroce_srq(struct ibv_srq *ibsrq)
{
	return sroce_container_of(ibsrq, struct sroce_srq, base_vsrq.srq);
}

static inline struct sroce_qp *qpx_to_sroce_qp(struct ibv_qp_ex *qpx)
{
	return sroce_container_of(qpx, struct sroce_qp, base_qp.qp_ex);
}

/* Log through libibverbs (VERBS_LOG_LEVEL, VERBS_LOG_FILE). */
#define sroce_err(ctx, fmt, ...)					\
	__verbs_log(&(ctx)->base_ctx, VERBS_LOG_ERR, "sroce: %s: " fmt "\n", \
		    (ctx)->base_ctx.context.device->name, ##__VA_ARGS__)

/* context.c */
struct verbs_context *sroce_context_alloc(struct ibv_device *ibdev,
					  int cmd_fd, void *private_data);
struct verbs_context *sroce_context_import(struct ibv_device *ibdev,
					   int cmd_fd);

/* query.c */
int sroce_query_device(struct ibv_context *ibctx,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
int sroce_query_rt_values(struct ibv_context *ibctx,
			  struct ibv_values_ex *values);
int sroce_query_port(struct ibv_context *ibctx, uint8_t port_num,
		     struct ibv_port_attr *attr);

/* cq.c */
struct ibv_cq *sroce_cq_create(struct ibv_context *ibctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
struct ibv_cq_ex *sroce_cq_create_ex(struct ibv_context *ibctx,
				     struct ibv_cq_init_attr_ex *attr);
int sroce_cq_destroy(struct ibv_cq *ibcq);
int sroce_cq_poll(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int sroce_cq_req_notify(struct ibv_cq *ibcq, int solicited_only);
void sroce_cq_discard_qp(struct sroce_cq *cq, uint32_t qpn);
int sroce_cq_resize(struct ibv_cq *ibcq, int cqe);

/* pd.c */
struct ibv_pd *sroce_pd_alloc(struct ibv_context *ibctx);
int sroce_pd_dealloc(struct ibv_pd *ibpd);
struct ibv_pd *sroce_pd_import(struct ibv_context *ibctx, uint32_t pd_handle);
void sroce_pd_unimport(struct ibv_pd *ibpd);
struct ibv_pd *sroce_pdom_alloc(struct ibv_context *ibctx,
				struct ibv_parent_domain_init_attr *attr);
struct ibv_td *sroce_td_alloc(struct ibv_context *ibctx,
			      struct ibv_td_init_attr *attr);
int sroce_td_dealloc(struct ibv_td *ibtd);
bool sroce_pd_single_thread(const struct ibv_pd *ibpd);
int sroce_cq_pd_check(struct ibv_context *ibctx,
		      const struct ibv_cq_init_attr_ex *attr);

/* ah.c */
struct ibv_ah *sroce_ah_create(struct ibv_pd *ibpd, struct ibv_ah_attr *attr);
int sroce_ah_destroy(struct ibv_ah *ibah);
int sroce_mcast_attach(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid);
int sroce_mcast_detach(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid);

/* mr.c */
struct ibv_mr *sroce_mr_reg(struct ibv_pd *ibpd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int sroce_mr_dereg(struct verbs_mr *vmr);
struct ibv_mr *sroce_mr_import(struct ibv_pd *ibpd, uint32_t mr_handle);
void sroce_mr_unimport(struct ibv_mr *ibmr);
int sroce_mr_rereg(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access);

/* mw.c */
struct ibv_mw *sroce_mw_alloc(struct ibv_pd *ibpd, enum ibv_mw_type type);
int sroce_mw_dealloc(struct ibv_mw *mw);
int sroce_mw_bind(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);

/* qp.c */
struct ibv_qp *sroce_qp_create(struct ibv_pd *ibpd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *sroce_qp_create_ex(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr);
int sroce_qp_modify(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		    int attr_mask);
int sroce_qp_query(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr);
int sroce_qp_destroy(struct ibv_qp *ibqp);
struct ibv_qp *sroce_qp_open(struct ibv_context *ibctx,
			     struct ibv_qp_open_attr *attr);
int sroce_wq_map(struct sroce_context *ctx, struct sroce_wq *wq, uint64_t key,
		 uint32_t len, uint32_t slots, uint32_t shift, size_t hdr,
		 uint32_t max_sge, uint32_t min_slots);
void sroce_wq_unmap(struct sroce_wq *wq);

/* srq.c */
struct ibv_srq *sroce_srq_create(struct ibv_pd *ibpd,
				 struct ibv_srq_init_attr *attr);
int sroce_srq_modify(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int attr_mask);
int sroce_srq_query(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int sroce_srq_destroy(struct ibv_srq *ibsrq);
struct ibv_srq *sroce_srq_create_ex(struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr);
int sroce_srq_get_num(struct ibv_srq *ibsrq, uint32_t *srq_num);

/* xrcd.c */
struct ibv_xrcd *sroce_xrcd_open(struct ibv_context *ibctx,
				 struct ibv_xrcd_init_attr *attr);
int sroce_xrcd_close(struct ibv_xrcd *ibxrcd);

/* qp_ex.c */
int sroce_qp_ex_check(const struct ibv_qp_init_attr_ex *attr);
void sroce_qp_ex_init(struct sroce_qp *qp,
		      const struct ibv_qp_init_attr_ex *attr);

/* wq.c */
int sroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int sroce_post_bind_type1(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr);
int sroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
int sroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

#endif /* SROCE_PROVIDER_H */
