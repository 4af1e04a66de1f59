#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# GID predicates for guest tests, on top of the test bed's guest library
# (tb_gid_of, tb_gid_index), which reads the table with shell builtins:
# starting a process per entry costs seconds in a TCG guest.

. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/guest/lib.sh"

# has_gid DEV ADDR / lacks_gid DEV ADDR: whether port 1 of DEV has a RoCE v2
# GID for ADDR.  Quiet, so that they can be polled.
has_gid() { tb_gid_index "$1" "$2" >/dev/null 2>&1; }
lacks_gid() { ! has_gid "$1" "$2"; }
