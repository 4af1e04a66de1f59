/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_RES_H
#define SROCE_RES_H

struct ib_qp;
struct seq_file;
struct sk_buff;
struct sroce_qp;

int sroce_res_fill_qp(struct sk_buff *msg, struct ib_qp *ibqp);
void sroce_res_add_qp(struct sroce_qp *qp);
void sroce_res_del_qp(struct sroce_qp *qp);
int sroce_res_show_qps(struct seq_file *s, void *unused);

#endif /* SROCE_RES_H */
