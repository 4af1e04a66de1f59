/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_VERSION_H
#define SROCE_VERSION_H

/* Kbuild passes the git description when building from a checkout. */
#ifndef SROCE_VERSION
#define SROCE_VERSION "0.1.0"
#endif

#endif /* SROCE_VERSION_H */
