/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_NET_H
#define SROCE_NET_H

/* IANA-assigned UDP destination port of RoCE v2. */
#define SROCE_UDP_PORT 4791

int sroce_net_get(void);
void sroce_net_put(void);

#endif /* SROCE_NET_H */
