// SPDX-License-Identifier: GPL-2.0
/*
 * Creates the data path's tracepoints (dp/trace.h): the one translation
 * unit that includes the header with CREATE_TRACE_POINTS.  stats.h first:
 * it declares sroce_stats_drop_name(), which names the drop reasons.
 */
#include "stats.h"

#define CREATE_TRACE_POINTS
#include "dp/trace.h"
