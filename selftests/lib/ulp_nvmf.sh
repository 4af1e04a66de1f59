# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# NVMe over Fabrics under trouble, cases of selftests/ulp.sh (sourced by it;
# they use its DEV, IF, NQN, CFS, IMG, host_disk, nvmf_ctrl,
# ulp_target_check, cm_listener, ulp_resources_back and lib/netem.sh).
# They run on the target t_nvmf_target_listens set up and the controller
# t_nvmf_connect_write_read connected (reconnect_delay=1,
# ctrl_loss_tmo=NVMF_LOSS_TMO), in this order:
#
#  - t_nvmf_target_restart: guest b's writer rewrites NVMF_IO_MIB of random
#    data with O_DIRECT, pass after pass, while guest a unlinks the
#    subsystem from its port (its controller deleted, the port's rdma_cm
#    listener gone) and links it again NVMF_OUTAGE s later.  b's controller
#    must leave `live` while the writer runs and come back to it; every
#    pass must succeed (the I/O of the lost connection is retried or
#    requeued by nvme-core, not failed), the data read back must be the
#    writer's, and so must the target's RAM disk.
#  - t_nvmf_link_flap: the same writer while guest a takes its netdev down
#    for NVMF_FLAP s: a's port must go DOWN and be ACTIVE again (with its
#    addresses back, the peer answering a ping), b's controller live at the
#    end, every write successful, the data on both sides the writer's.  (Whether b's
#    controller reconnects or RC retransmission carries the I/O across the
#    gap is the driver's business; the case prints which.)
#  - t_nvmf_netem_loss: 2% loss on both guests' RoCE egress
#    (lib/netem.sh), NVMF_LOSS_MIB written and read back with O_DIRECT;
#    each guest's netem must have dropped packets.
#  - t_nvmf_disconnect_under_load: b deletes its controller while the writer
#    runs; the write may fail, but the deletion and the writer must end
#    within their time limits, the controller and its namespace must go,
#    and each guest's device resources must be back to what
#    t_nvmf_target_listens saw before the first connect.

NVMF_IO_MIB=8
NVMF_LOSS_MIB=2
NVMF_OUTAGE=3
NVMF_FLAP=2
NVMF_RUN=/tmp/ulp-nvmf

# nvmf_state CTRL: the state of controller CTRL (a sysfs directory), "gone"
# once it is deleted
nvmf_state() {
	local s
	read -r s 2>/dev/null <"$1/state" || s=gone
	echo "$s"
}

# nvmf_writer DISK DATA STOP: write DATA to /dev/DISK with O_DIRECT, one
# MiB at a time, pass after pass, until the file STOP exists after a whole
# pass has been written (at most 100 passes; each write writes DATA's own
# bytes, so the disk holds DATA whenever it stops); the first write that
# fails ends it with a failure.
nvmf_writer() {
	local n c full=0 mib=$(($(stat -c %s "$2") / 1048576))
	for n in $(seq 100); do
		for ((c = 0; c < mib; c++)); do
			# (nocreat: no regular file in /dev once the namespace is gone)
			dd if="$2" of="/dev/$1" bs=1M skip=$c seek=$c count=1 \
				oflag=direct conv=nocreat,notrunc status=none ||
				{ echo "writer: pass $n, MiB $c failed at $(_tb_up) s"; return 1; }
			[ "$full" = 0 ] || [ ! -e "$3" ] ||
				{ echo "writer: stopped in pass $n after MiB $c at $(_tb_up) s"; return 0; }
		done
		full=$n
		echo "writer: pass $n done at $(_tb_up) s"
	done
	echo "writer: still not told to stop after $n passes"
	return 1
}

# nvmf_watch CTRL LOG STOP: append each state CTRL enters to LOG (uptime,
# state), polling every 0.1 s, until the file STOP exists
nvmf_watch() {
	local s last=
	while [ ! -e "$3" ]; do
		read -r s 2>/dev/null <"$1/state" || s=gone
		[ "$s" = "$last" ] || echo "$(_tb_up) $s" >>"$2"
		last=$s
		_tb_nap 0.1
	done
}

# nvmf_writer_start DISK: NVMF_IO_MIB of random data in NVMF_RUN/data and
# the writer writing it to DISK (pid in NVMF_WRITER, log in
# NVMF_RUN/writer.log)
nvmf_writer_start() {
	head -c $((NVMF_IO_MIB * 1024 * 1024)) /dev/urandom >"$NVMF_RUN/data"
	nvmf_writer "$1" "$NVMF_RUN/data" "$NVMF_RUN/stop" >"$NVMF_RUN/writer.log" 2>&1 &
	NVMF_WRITER=$!
}

# nvmf_run_dir: a fresh NVMF_RUN, and whatever the subshell leaves running
# in the background (the writer, the watcher) stopped when it exits
nvmf_run_dir() {
	rm -rf "$NVMF_RUN"
	mkdir -p "$NVMF_RUN" || fail "cannot make $NVMF_RUN"
	NVMF_WRITER=
	NVMF_WATCHER=
	trap nvmf_bg_stop EXIT
}

nvmf_bg_stop() {
	local p
	: >"$NVMF_RUN/stop"
	: >"$NVMF_RUN/stop-watch"
	for p in ${NVMF_WRITER:-} ${NVMF_WATCHER:-}; do
		pkill -P "$p" 2>/dev/null || :
		kill "$p" 2>/dev/null || :
	done
}

# nvmf_writer_end SECONDS: tell the writer to stop, give it SECONDS to end;
# its exit status
nvmf_writer_end() {
	: >"$NVMF_RUN/stop"
	wait_until "$1" '! kill -0 $NVMF_WRITER 2>/dev/null' ||
		fail "the writer hangs: $(cat "$NVMF_RUN/writer.log"); $(dmesg_since_case | grep -i nvme | tail -5)"
	wait "$NVMF_WRITER"
}

# nvmf_dmesg: what nvme-core, nvme-rdma and nvmet said during the case
nvmf_dmesg() {
	dmesg_since_case | grep -E 'nvme|nvmet' | tail -"${1:-12}" || :
}

# Guest b's side of t_nvmf_target_restart and t_nvmf_link_flap: the writer
# runs until guest a has done its damage and repaired it ($KTAP_CASE.done)
# and the controller is live again; every pass must succeed and the data
# read back must be the writer's.  The states the controller went through
# meanwhile are left in NVMF_RUN/states.
nvmf_io_across() {
	local ctrl disk rc=0 a_done
	ctrl=$(nvmf_ctrl) || fail "no controller of $NQN (t_nvmf_connect_write_read connects it)"
	disk=$(host_disk) || fail "no namespace of $NQN"
	expect_eq "$(nvmf_state "$ctrl")" live "state of ${ctrl##*/} at the start"
	echo "/dev/$disk through ${ctrl##*/}, nvme_core multipath: $(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null || echo none)"
	nvmf_run_dir
	nvmf_watch "$ctrl" "$NVMF_RUN/states" "$NVMF_RUN/stop-watch" &
	NVMF_WATCHER=$!
	nvmf_writer_start "$disk"
	# its first MiB on the way before guest a acts
	_tb_nap 0.5
	kill -0 "$NVMF_WRITER" 2>/dev/null || fail "the writer ended at once: $(cat "$NVMF_RUN/writer.log")"
	tb_put "$KTAP_CASE.io" writing
	a_done=$(tb_get "$KTAP_CASE.done" 180) || fail "guest a did not say it was done"
	[ "$a_done" = yes ] || fail "guest a's side failed"
	wait_until 60 '[ "$(nvmf_state "$ctrl")" = live ]' ||
		fail "${ctrl##*/} not live again: $(nvmf_state "$ctrl"); $(nvmf_dmesg 5)"
	nvmf_writer_end 120 || rc=$?
	: >"$NVMF_RUN/stop-watch"
	wait "$NVMF_WATCHER" || :
	echo "controller states while writing: $(tr '\n' ' ' <"$NVMF_RUN/states")"
	cat "$NVMF_RUN/writer.log"
	nvmf_dmesg
	[ "$rc" = 0 ] || fail "a write failed across the disturbance (status $rc)"
	dd if="/dev/$disk" of="$NVMF_RUN/back" bs=1M count=$NVMF_IO_MIB iflag=direct status=none ||
		fail "read back failed"
	cmp "$NVMF_RUN/data" "$NVMF_RUN/back" || fail "read back other data"
	tb_put "$KTAP_CASE.sum" "$(sha256sum <"$NVMF_RUN/data")"
}

# Guest a's side of t_nvmf_target_restart: the port without the subsystem
# (which deletes its controllers and, as its last subsystem, disables it)
# for NVMF_OUTAGE s, then with it again and listening
nvmf_port_restart() {
	local link=$CFS/ports/1/subsystems/$NQN
	tb_get "$KTAP_CASE.io" 60 >/dev/null || fail "guest b did not start writing"
	# whatever happens, the port gets its subsystem back (expanded now:
	# link is gone when the trap runs)
	# shellcheck disable=SC2064
	trap "[ -L '$link' ] || ln -s '$CFS/subsystems/$NQN' '$link'" EXIT
	rm "$link" || fail "cannot unlink the subsystem from port 1"
	echo "port 1 without $NQN at $(_tb_up) s"
	sleep "$NVMF_OUTAGE"
	ln -s "$CFS/subsystems/$NQN" "$link" ||
		fail "the port refused the subsystem again: $(dmesg | tail -3)"
	wait_until 10 '[ -n "$(cm_listener 4420)" ]' ||
		fail "no rdma_cm listener on 4420 again: $(rdma resource show cm_id)"
	echo "port 1 with $NQN again at $(_tb_up) s, listening"
	tb_put "$KTAP_CASE.done" yes
}

# nvmf_io_case B-SIDE A-SIDE: guest b's writer across what guest a does; then a
# checks its RAM disk
nvmf_io_case() {
	local rc=0
	if [ "$SROCE_ROLE" = b ]; then
		("$1") || rc=$?
	else
		("$2") || rc=$?
		# (b is waiting for $KTAP_CASE.done: do not leave it waiting)
		[ "$rc" = 0 ] || tb_put "$KTAP_CASE.done" failed
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	ulp_target_check "$NVMF_IO_MIB"
	[ "$rc" = 0 ] || fail "this guest's side failed (above)"
}

nvmf_io_across_restart() {
	nvmf_io_across
	grep -qv ' live$' "$NVMF_RUN/states" ||
		fail "the controller never left live: the target's restart did not reach it"
	dmesg_since_case | grep -q "nvme.*Reconnecting\|nvme.*reconnect" ||
		echo "(no reconnect message from nvme-rdma in the kernel log)"
}

t_nvmf_target_restart() { nvmf_io_case nvmf_io_across_restart nvmf_port_restart; }

# port_state: the state of port 1 of the device, e.g. "4: ACTIVE"
port_state() { cat "/sys/class/infiniband/$DEV/ports/1/state"; }

# addr_back: the guest's addresses on IF, re-added if the flap removed them
# (IPv6 addresses go with the link unless keep_addr_on_down)
addr_back() {
	ip -4 addr show dev "$IF" | grep -q " $SROCE_IP4/" || {
		echo "$SROCE_IP4 went with the link: added again"
		ip addr add "$SROCE_IP4/24" dev "$IF" || fail "cannot add $SROCE_IP4 again"
	}
	ip -6 addr show dev "$IF" | grep -q " $SROCE_IP6/" || {
		echo "$SROCE_IP6 went with the link: added again"
		ip -6 addr add "$SROCE_IP6/64" dev "$IF" nodad || fail "cannot add $SROCE_IP6 again"
	}
}

# Guest a's side of t_nvmf_link_flap: its netdev down for NVMF_FLAP s, the
# port DOWN meanwhile, then up, ACTIVE, its addresses back and the peer
# reachable
nvmf_flap() {
	tb_get "$KTAP_CASE.io" 60 >/dev/null || fail "guest b did not start writing"
	trap 'ip link set "$IF" up' EXIT
	ip link set "$IF" down || fail "ip link set $IF down"
	echo "$IF down at $(_tb_up) s"
	wait_until 10 '[[ "$(port_state)" == *DOWN* ]]' ||
		fail "port 1 of $DEV not DOWN with $IF down: $(port_state)"
	echo "port 1 of $DEV: $(port_state)"
	sleep "$NVMF_FLAP"
	ip link set "$IF" up || fail "ip link set $IF up"
	echo "$IF up at $(_tb_up) s"
	tb_wait_port_active "$DEV" 30 || fail "port 1 of $DEV not ACTIVE again: $(port_state)"
	echo "port 1 of $DEV: $(port_state) at $(_tb_up) s"
	addr_back
	wait_until 30 'ping -c 1 -W 1 "$SROCE_PEER_IP4" >/dev/null' ||
		fail "no IPv4 path to the peer after the flap"
	echo "the peer answers at $(_tb_up) s"
	tb_put "$KTAP_CASE.done" yes
}

nvmf_io_across_flap() {
	nvmf_io_across
	if grep -qv ' live$' "$NVMF_RUN/states"; then
		echo "the controller reconnected"
	else
		echo "the controller stayed live: RC retransmission carried the I/O across"
	fi
}

t_nvmf_link_flap() { nvmf_io_case nvmf_io_across_flap nvmf_flap; }

# Guest b's side of t_nvmf_netem_loss
nvmf_loss_io() {
	local disk
	disk=$(host_disk) || fail "no namespace of $NQN (t_nvmf_connect_write_read connects it)"
	nvmf_run_dir
	head -c $((NVMF_LOSS_MIB * 1024 * 1024)) /dev/urandom >"$NVMF_RUN/data"
	dd if="$NVMF_RUN/data" of="/dev/$disk" bs=1M oflag=direct status=none ||
		fail "write under loss failed: $(nvmf_dmesg 5)"
	dd if="/dev/$disk" of="$NVMF_RUN/back" bs=1M count=$NVMF_LOSS_MIB iflag=direct status=none ||
		fail "read under loss failed: $(nvmf_dmesg 5)"
	cmp "$NVMF_RUN/data" "$NVMF_RUN/back" || fail "read back other data under loss"
	nvmf_dmesg
	tb_put "$KTAP_CASE.sum" "$(sha256sum <"$NVMF_RUN/data")"
}

t_nvmf_netem_loss() {
	local rc=0 dropped
	netem_begin --both loss 2%
	if [ "$SROCE_ROLE" = b ]; then
		(nvmf_loss_io) || rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	netem_seen 100 || fail "netem saw too few packets"
	dropped=$(netem_dropped)
	netem_off
	echo "netem dropped $dropped of this guest's packets"
	ulp_target_check "$NVMF_LOSS_MIB"
	[ "$rc" = 0 ] || fail "NVMe-oF I/O under 2% loss failed"
	[ "${dropped:-0}" -gt 0 ] || fail "netem dropped nothing: no loss to recover from"
}

# Guest b's side of t_nvmf_disconnect_under_load
nvmf_delete_under_load() {
	local ctrl disk dpid rc=0
	ctrl=$(nvmf_ctrl) || fail "no controller of $NQN (t_nvmf_connect_write_read connects it)"
	disk=$(host_disk) || fail "no namespace of $NQN"
	nvmf_run_dir
	nvmf_writer_start "$disk"
	_tb_nap 1
	kill -0 "$NVMF_WRITER" 2>/dev/null ||
		fail "the writer ended before the disconnect: $(cat "$NVMF_RUN/writer.log")"
	echo "deleting ${ctrl##*/} at $(_tb_up) s, the writer writing"
	(echo 1 >"$ctrl/delete_controller") &
	dpid=$!
	wait_until 60 '! kill -0 $dpid 2>/dev/null' ||
		fail "delete_controller still blocks after 60 s: $(nvmf_dmesg 5)"
	wait "$dpid" || fail "delete_controller refused"
	echo "deleted at $(_tb_up) s"
	nvmf_writer_end 60 || rc=$?
	cat "$NVMF_RUN/writer.log"
	echo "the writer ended with status $rc (its I/O may fail once the controller is gone)"
	wait_until 30 '! nvmf_ctrl >/dev/null && ! host_disk >/dev/null' ||
		fail "controller or namespace still there: $(ls /sys/class/nvme /sys/block)"
	nvmf_dmesg
}

# The device resources: back to their counts before the first connect
# (t_nvmf_target_listens) in both guests
t_nvmf_disconnect_under_load() {
	local rc=0
	if [ "$SROCE_ROLE" = b ]; then
		(nvmf_delete_under_load) || rc=$?
	fi
	tb_barrier "$KTAP_CASE" 240 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "the disconnect under load went wrong (above)"
	ulp_resources_back
}
