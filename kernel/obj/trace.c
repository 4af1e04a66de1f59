// SPDX-License-Identifier: GPL-2.0
/*
 * Creates the objects' tracepoints (obj/trace.h): the one translation unit
 * that includes the header with CREATE_TRACE_POINTS.
 */
#define CREATE_TRACE_POINTS
#include "obj/trace.h"
