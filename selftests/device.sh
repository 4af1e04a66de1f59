#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Device life cycle of sroce in one guest: module load/unload, rdma link
# add/delete, naming, attributes, GIDs, port state following the netdev,
# netdev removal, reload cycles, the UDP port clash with rdma_rxe and
# sroce-ctl on a real device.
#
# Runs inside a test-bed guest started with --no-link (see
# Documentation/testing.md); emits KTAP on stdout.

. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/gid.sh"
. "$(dirname "$0")/lib/teardown.sh"

IF=${SROCE_NETDEV:?run me through scripts/testbed}
SYS=/sys/class/infiniband
OBJS=/sys/kernel/debug/sroce/objects
CYCLES=${SROCE_CYCLES:-50}

# --- helpers ---------------------------------------------------------------

port_attr() {		# DEV ATTR -> e.g. "4: ACTIVE"
	cat "$SYS/$1/ports/1/$2"
}

port_state_is() {	# DEV STATE_WORD
	case "$(port_attr "$1" state 2>/dev/null)" in
	*": $2") return 0 ;;
	*) return 1 ;;
	esac
}

dev_exists() { [ -d "$SYS/$1" ]; }
dev_gone() { [ ! -e "$SYS/$1" ]; }

objects() {		# KIND -> live count from debugfs
	awk -v k="$1" '$1 == k { print $2 }' "$OBJS"
}

objects_all_zero() {
	awk '$2 != 0 { bad = 1 } END { exit bad }' "$OBJS"
}

unload() {
	local d
	for d in $(rdma link show 2>/dev/null | awk '{ print $2 }' | cut -d/ -f1); do
		rdma link delete "$d" || fail "rdma link delete $d"
	done
	if [ -d /sys/module/sroce ]; then
		rmmod sroce || fail "rmmod sroce"
	fi
}

fresh() {		# unload everything, load sroce
	unload
	modprobe sroce
}

add_link() {		# NAME NETDEV
	rdma link add "$1" type sroce netdev "$2"
	wait_for 30 dev_exists "$1" || fail "$1 did not appear"
}

mkdummy() {		# NAME
	ip link add "$1" type dummy
	ip link set "$1" up
}

# --- cases -----------------------------------------------------------------

t_module_load() {
	unload
	modprobe sroce
	[ -d /sys/module/sroce ] || fail "module not loaded"
	dmesg_since_case | grep -q "sroce: loaded" || fail "no load message"
	[ -r "$OBJS" ] || fail "no $OBJS"
	objects_all_zero || fail "objects not zero after load: $(cat "$OBJS")"
}

t_link_add_autoloads_module() {
	unload
	[ ! -d /sys/module/sroce ] || fail "module still loaded"
	rdma link add sroce0 type sroce netdev "$IF"
	[ -d /sys/module/sroce ] || fail "rdma-link-sroce alias did not load sroce"
	wait_for 30 dev_exists sroce0 || fail "sroce0 missing"
	rdma link show sroce0/1
	expect_match "$(rdma link show sroce0/1)" "netdev $IF\b" "rdma link show"
}

t_port_active() {
	fresh
	add_link sroce0 "$IF"
	wait_for 30 port_state_is sroce0 ACTIVE || fail "not ACTIVE: $(port_attr sroce0 state)"
	expect_eq "$(port_attr sroce0 phys_state)" "5: LinkUp" phys_state
	expect_eq "$(port_attr sroce0 link_layer)" "Ethernet" link_layer
	expect_match "$(rdma link show sroce0/1)" "state ACTIVE physical_state LINK_UP" "rdma link"
	expect_eq "$(objects devices)" 1 "live devices"
	expect_eq "$(objects udp_sockets)" 2 "UDP sockets (IPv4+IPv6)"
	grep -q ":12B7 " /proc/net/udp || fail "nothing bound to UDP 4791 (IPv4)"
	grep -q ":12B7 " /proc/net/udp6 || fail "nothing bound to UDP 4791 (IPv6)"
}

t_provider_binds() {
	fresh
	add_link sroce0 "$IF"
	ibv_devices
	ibv_devices | grep -qw sroce0 || fail "ibv_devices does not list sroce0"
	ibv_devinfo -d sroce0 || fail "ibv_devinfo -d sroce0 failed"
	expect_match "$(ibv_devinfo -d sroce0)" "state:[[:space:]]+PORT_ACTIVE" "port state"
	expect_match "$(ibv_devinfo -d sroce0)" "link_layer:[[:space:]]+Ethernet" "link layer"
	expect_match "$(ibv_devinfo -d sroce0)" "transport:[[:space:]]+InfiniBand" "transport"
}

t_node_guid() {
	local mac guid rxe
	fresh
	add_link sroce0 "$IF"
	mac=$(cat "/sys/class/net/$IF/address")
	guid=$(cat "$SYS/sroce0/node_guid")
	set -- $(echo "$mac" | tr ':' ' ')
	expect_eq "$guid" "5253:$1$2:$3$4:$5$6" node_guid
	rxe=$(printf '%02x%s:%sff:fe%s:%s%s' $((0x$1 ^ 2)) "$2" "$3" "$4" "$5" "$6")
	[ "$guid" != "$rxe" ] || fail "node GUID equals the one rdma_rxe derives"
	expect_match "$(ibv_devices)" "sroce0[[:space:]]+5253${1}${2}${3}${4}${5}${6}" "ibv_devices GUID"
}

t_device_attributes() {
	local info ver
	fresh
	add_link sroce0 "$IF"
	info=$(ibv_devinfo -v -d sroce0)
	echo "$info"
	expect_match "$info" "vendor_id:[[:space:]]+0xffffff" vendor_id
	expect_match "$info" "vendor_part_id:[[:space:]]+21330" vendor_part_id
	expect_match "$info" "max_pd:[[:space:]]+65536" max_pd
	expect_match "$info" "max_pkeys:[[:space:]]+1" max_pkeys
	expect_match "$info" "max_mtu:[[:space:]]+4096" max_mtu
	ver=$(cat /sys/module/sroce/version)
	expect_match "$info" "fw_ver:[[:space:]]+$ver\$" "fw_ver (module version $ver)"
	expect_eq "$(cat "$SYS/sroce0/fw_ver")" "$ver" "sysfs fw_ver"
	expect_eq "$(cat "$SYS/sroce0/node_type")" "1: CA" node_type
	expect_eq "$(cat "$SYS/sroce0/ports/1/pkeys/0")" "0xffff" pkey
}

t_gid_ipv4() {
	fresh
	add_link sroce0 "$IF"
	wait_for 30 has_gid sroce0 "$SROCE_IP4" || fail "no RoCE v2 GID for $SROCE_IP4"
	i=$(tb_gid_index sroce0 "$SROCE_IP4")
	expect_eq "$(cat "$SYS/sroce0/ports/1/gid_attrs/ndevs/$i")" "$IF" "GID netdev"
	ibv_devinfo -v -d sroce0 | grep -F "::ffff:$SROCE_IP4" || fail "ibv_devinfo does not show the IPv4 GID"
}

t_gid_ipv6() {
	fresh
	add_link sroce0 "$IF"
	wait_for 30 has_gid sroce0 "$SROCE_IP6" || fail "no RoCE v2 GID for $SROCE_IP6"
	wait_for 30 has_gid sroce0 "fe80:0000:0000:0000:$(link_local_suffix)" ||
		fail "no link-local GID"
	# Only RoCE v2 GIDs: every populated entry is typed RoCE v2.
	types=$(cat "$SYS"/sroce0/ports/1/gid_attrs/types/* 2>/dev/null | sort | uniq -c)
	echo "GID types: $types"
	expect_match "$types" "RoCE v2" "GID types"
	! echo "$types" | grep -v "RoCE v2" | grep -q . || fail "GIDs of another type: $types"
}

link_local_suffix() {	# the interface id of $IF's link-local address
	tb_gid_of "$(ip -6 addr show dev "$IF" scope link |
		awk '/inet6/ { sub("/.*", "", $2); print $2; exit }')" | cut -c21-
}

t_gid_follows_addresses() {
	fresh
	add_link sroce0 "$IF"
	ip addr add 198.51.100.7/24 dev "$IF"
	ip -6 addr add 2001:db8:5352::7/64 dev "$IF" nodad
	wait_for 30 has_gid sroce0 198.51.100.7 || fail "added IPv4 address has no GID"
	wait_for 30 has_gid sroce0 2001:db8:5352::7 || fail "added IPv6 address has no GID"
	ip addr del 198.51.100.7/24 dev "$IF"
	ip -6 addr del 2001:db8:5352::7/64 dev "$IF"
	wait_for 30 lacks_gid sroce0 198.51.100.7 || fail "removed IPv4 address keeps its GID"
	wait_for 30 lacks_gid sroce0 2001:db8:5352::7 || fail "removed IPv6 address keeps its GID"
	has_gid sroce0 "$SROCE_IP4" || fail "the original IPv4 GID went away"
}

active_mtu_is() {	# DEV BYTES
	ibv_devinfo -d "$1" | grep -Eq "active_mtu:[[:space:]]+$2 "
}

t_mtu_follows_netdev() {
	fresh
	mkdummy sd0
	add_link sroce_mtu sd0
	for pair in 1500:1024 9000:4096 4188:4096 4187:2048 2200:2048 1100:512 348:256; do
		ip link set sd0 mtu "${pair%%:*}"
		wait_for 20 active_mtu_is sroce_mtu "${pair#*:}" ||
			fail "netdev MTU ${pair%%:*}: $(ibv_devinfo -d sroce_mtu | grep active_mtu)"
		port_state_is sroce_mtu ACTIVE || fail "not ACTIVE at MTU ${pair%%:*}"
	done
	# Too small for any RoCE packet: the port goes down, and comes back.
	ip link set sd0 mtu 300
	wait_for 20 port_state_is sroce_mtu DOWN || fail "port still up at MTU 300"
	ip link set sd0 mtu 1500
	wait_for 20 port_state_is sroce_mtu ACTIVE || fail "port not back at MTU 1500"
	ip link del sd0
}

t_carrier_and_admin_state() {
	local ev
	fresh
	ip link add sv0 type veth peer name sv1
	ip link set sv0 up
	ip link set sv1 up
	add_link sroce_veth sv0
	wait_for 30 port_state_is sroce_veth ACTIVE || fail "not ACTIVE with carrier"
	ev=$(mktemp)
	stdbuf -oL ibv_asyncwatch -d sroce_veth >"$ev" 2>&1 &
	wpid=$!
	trap 'kill "$wpid" 2>/dev/null || true' EXIT
	wait_for 30 grep -q "async event FD" "$ev" || fail "ibv_asyncwatch did not start: $(cat "$ev")"

	ip link set sv1 down	# sv0 loses carrier
	wait_for 30 port_state_is sroce_veth DOWN || fail "still up without carrier"
	expect_eq "$(port_attr sroce_veth phys_state)" "2: Polling" "phys_state, no carrier"
	ip link set sv1 up
	wait_for 30 port_state_is sroce_veth ACTIVE || fail "not ACTIVE after carrier returned"
	ip link set sv0 down	# admin down
	wait_for 30 port_state_is sroce_veth DOWN || fail "still up when admin down"
	expect_eq "$(port_attr sroce_veth phys_state)" "3: Disabled" "phys_state, admin down"
	ip link set sv0 up
	wait_for 30 port_state_is sroce_veth ACTIVE || fail "not ACTIVE after admin up"

	wait_until 30 '[ "$(grep -c IBV_EVENT_PORT_ACTIVE "$ev")" -ge 2 ]' || true
	kill "$wpid"
	wait "$wpid" 2>/dev/null || true
	cat "$ev"
	expect_eq "$(grep -c 'IBV_EVENT_PORT_ERR' "$ev")" 2 "PORT_ERR events"
	expect_eq "$(grep -c 'IBV_EVENT_PORT_ACTIVE' "$ev")" 2 "PORT_ACTIVE events"
	rm -f "$ev"
	ip link del sv0
}

t_second_device_on_netdev_refused() {
	fresh
	add_link sroce0 "$IF"
	must_fail rdma link add sroce1 type sroce netdev "$IF"
	dev_gone sroce1 || fail "sroce1 exists"
	dmesg_since_case | grep -q "cannot add sroce1: $IF already has sroce device sroce0" ||
		fail "no clear message in the kernel log"
	port_state_is sroce0 ACTIVE || fail "sroce0 disturbed"
}

t_duplicate_name_refused() {
	fresh
	mkdummy sd0
	add_link sroce0 "$IF"
	must_fail rdma link add sroce0 type sroce netdev sd0
	expect_eq "$(objects devices)" 1 "live devices"
	ip link del sd0
}

t_any_name_binds_provider() {
	local n i=0
	fresh
	for n in sroce7 myrdma rxe_lookalike0 mlx5_0 x; do
		mkdummy "sdn$i"
		add_link "$n" "sdn$i"
		ibv_devinfo -d "$n" >/dev/null || fail "provider did not bind $n"
		expect_match "$(ibv_devinfo -d "$n")" "vendor_part_id:[[:space:]]+21330" "$n part id"
		i=$((i + 1))
	done
	must_fail rdma link add 'bad%d' type sroce netdev "$IF"
	expect_eq "$(objects devices)" 5 "live devices"
	for n in 0 1 2 3 4; do ip link del "sdn$n"; done
	wait_until 30 '[ "$(objects devices)" = 0 ]' || fail "devices left: $(objects devices)"
}

t_non_ethernet_refused() {
	fresh
	must_fail rdma link add sroce_lo type sroce netdev lo
	dmesg_since_case | grep -q "lo is not an Ethernet device" || fail "no clear message"
	must_fail rdma link add sroce_none type sroce netdev no_such_if
	expect_eq "$(objects devices)" 0 "live devices"
}

t_several_devices_coexist() {
	fresh
	mkdummy sd0
	mkdummy sd1
	add_link sroce0 "$IF"
	add_link sroce1 sd0
	add_link sroce2 sd1
	rdma link show
	expect_eq "$(rdma link show | grep -c 'state ACTIVE')" 3 "ACTIVE links"
	expect_eq "$(ibv_devices | grep -c sroce)" 3 "devices in ibv_devices"
	rdma link delete sroce1
	port_state_is sroce0 ACTIVE || fail "sroce0 disturbed"
	port_state_is sroce2 ACTIVE || fail "sroce2 disturbed"
	ip link del sd0
	ip link del sd1
}

t_link_delete() {
	fresh
	add_link sroce0 "$IF"
	rdma link delete sroce0
	wait_for 30 dev_gone sroce0 || fail "sroce0 still present"
	objects_all_zero || fail "objects left: $(cat "$OBJS")"
	! grep -q ":12B7 " /proc/net/udp || fail "UDP 4791 still bound with no device"
	must_fail rdma link delete sroce0
}

t_netdev_removal() {
	fresh
	mkdummy sd0
	add_link sroce_gone sd0
	timeout $((30 * SLOW)) ip link del sd0 || fail "netdev removal blocked"
	wait_for 30 dev_gone sroce_gone || fail "device survived its netdev"
	wait_for 30 objects_all_zero || fail "objects left: $(cat "$OBJS")"
}

# qdisc_backlog DEV: packets a device's root qdisc holds
qdisc_backlog() {
	tc -s qdisc show dev "$1" | sed -n 's/.*backlog [^ ]* \([0-9]*\)p.*/\1/p' | head -n1
}

# The test bed's veth pair into a namespace, sroce_ud0 on its near end,
# and a plug qdisc there that keeps every packet until it is released.
ud_parked_setup() {
	ip netns add sroce_ud
	ip link add sv0 type veth peer name sv1 netns sroce_ud
	ip addr add 10.77.0.1/24 dev sv0
	ip link set sv0 up
	ip -n sroce_ud addr add 10.77.0.2/24 dev sv1
	ip -n sroce_ud link set sv1 up
	add_link sroce_ud0 sv0
	wait_for 30 port_state_is sroce_ud0 ACTIVE || fail "not ACTIVE"
	wait_for 30 has_gid sroce_ud0 10.77.0.1 || fail "no GID for 10.77.0.1"
	ping -c 1 -W 10 10.77.0.2 >/dev/null || fail "no path to 10.77.0.2"
	tc qdisc add dev sv0 root plug
}

# ud_park_and_destroy: a UD QP sends until transmit backpressure stops its
# requester with the next WQE fetched, its packets parked in the plug, and
# is destroyed.  Destroy must not wait for the parked packets.
ud_park_and_destroy() {
	local tool=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/sroce_qp_lifetime
	SROCE_RDMA_DEV=sroce_ud0 timeout $((20 * SLOW)) "$tool" ud-blocked 10.77.0.1 10.77.0.2 512 ||
		fail "sroce_qp_lifetime ud-blocked failed, or destroy waited for parked packets"
	[ "$(qdisc_backlog sv0)" -gt 0 ] ||
		fail "no packet parked in the qdisc: nothing was tested"
}

# A UD QP destroyed while a qdisc keeps its packets (the plug): destroy
# returns at once (a packet holds the QP's transmit token, not the QP),
# the fetched WQE's hold on the AH's destination is dropped (or the GID
# attribute it holds keeps the netdev: a "GID entry ref leak" warning at
# link delete, "waiting for ... to become free" at netdev removal), and
# the packets' destructors run harmlessly once the plug lets them go.
t_ud_destroy_with_blocked_sends() {
	fresh
	trap 'ip netns del sroce_ud 2>/dev/null || true' EXIT
	ud_parked_setup
	ud_park_and_destroy
	cat "$OBJS"
	expect_eq "$(objects ah_dests)" 0 "AH destinations left after destroy"
	expect_eq "$(objects ahs)" 0 "AHs left after destroy"
	tc qdisc change dev sv0 root plug release_indefinite
	wait_until 30 '[ "$(qdisc_backlog sv0)" = 0 ]' || fail "the plug kept its packets"
	tc qdisc del dev sv0 root
	timeout 30 rdma link delete sroce_ud0 || fail "link delete failed or blocked"
	wait_for 30 dev_gone sroce_ud0 || fail "sroce_ud0 still present"
	timeout 30 ip link del sv0 || fail "netdev removal blocked"
	wait_for 30 objects_all_zero || fail "objects left: $(cat "$OBJS")"
	! dmesg_since_case | grep -E "GID entry ref leak|to become free" ||
		fail "a reference outlived the QP"
}

# Module exit while a qdisc still holds packets whose destructor is sroce's
# code: rmmod waits for them (they would run freed module text), and
# finishes once the plug lets them go.
t_unload_with_parked_packets() {
	fresh
	trap 'ip netns del sroce_ud 2>/dev/null || true' EXIT
	ud_parked_setup
	ud_park_and_destroy
	timeout 30 rdma link delete sroce_ud0 || fail "link delete failed or blocked"
	rmmod sroce &
	rmpid=$!
	sleep 2
	kill -0 "$rmpid" 2>/dev/null ||
		fail "rmmod finished while packets with sroce's destructor were parked"
	tc qdisc change dev sv0 root plug release_indefinite
	timeout $((30 * SLOW)) tail --pid="$rmpid" -f /dev/null ||
		fail "rmmod still waiting after the packets were released"
	wait "$rmpid" || fail "rmmod sroce failed"
	[ ! -d /sys/module/sroce ] || fail "sroce still loaded"
	[ "$(qdisc_backlog sv0)" = 0 ] || fail "the plug kept its packets"
	timeout 30 ip link del sv0 || fail "netdev removal blocked"
}

t_delete_with_open_context() {
	local ev
	fresh
	add_link sroce0 "$IF"
	ev=$(mktemp)
	stdbuf -oL ibv_asyncwatch -d sroce0 >"$ev" 2>&1 &
	wpid=$!
	trap 'kill "$wpid" 2>/dev/null || true' EXIT
	wait_for 30 grep -q "async event FD" "$ev" || fail "ibv_asyncwatch did not start: $(cat "$ev")"
	wait_until 30 '[ "$(objects ucontexts)" = 1 ]' ||
		fail "asyncwatch holds no context: $(cat "$OBJS")"
	timeout $((30 * SLOW)) rdma link delete sroce0 || fail "delete blocked by an open context"
	wait_for 30 dev_gone sroce0 || fail "sroce0 still present"
	wait_for 30 grep -q IBV_EVENT_DEVICE_FATAL "$ev" ||
		fail "process not told the device died: $(cat "$ev")"
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	cat "$ev"
	rm -f "$ev"
	wait_for 30 objects_all_zero || fail "objects left: $(cat "$OBJS")"
}

t_unload_with_devices() {
	fresh
	mkdummy sd0
	add_link sroce0 "$IF"
	add_link sroce1 sd0
	timeout $((60 * SLOW)) rmmod sroce || fail "rmmod failed or blocked"
	dev_gone sroce0 || fail "sroce0 survived unload"
	dev_gone sroce1 || fail "sroce1 survived unload"
	[ -z "$(rdma link show 2>/dev/null)" ] || fail "links left: $(rdma link show)"
	ip link del sd0
}

# Unreclaimable slab in kB, after the reclaimable caches were dropped
slab_kb() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

# An sroce device takes far more than SLAB_PER_DEVICE kB of slab (the
# ib_device, its port, GID table and sysfs objects); what 50 cycles may
# leave behind (per-CPU caches, kernfs) stays under it per cycle.
SLAB_PER_DEVICE=16

t_add_delete_cycles() {
	local i mem0 mem1
	fresh
	# a first cycle makes what the kernel keeps once made (caches)
	add_link sroce0 "$IF"
	rdma link delete sroce0
	mem0=$(slab_kb)
	for i in $(seq "$CYCLES"); do
		rdma link add sroce0 type sroce netdev "$IF" || fail "add #$i"
		ibv_devinfo -d sroce0 >/dev/null || fail "devinfo #$i"
		rdma link delete sroce0 || fail "delete #$i"
	done
	objects_all_zero || fail "objects left after $CYCLES cycles: $(cat "$OBJS")"
	mem1=$(slab_kb)
	echo "unreclaimable slab before ${mem0} kB, after ${mem1} kB" \
		"(bound: +$((CYCLES * SLAB_PER_DEVICE)) kB)"
	[ $((mem1 - mem0)) -le $((CYCLES * SLAB_PER_DEVICE)) ] ||
		fail "slab grew by $((mem1 - mem0)) kB over $CYCLES cycles"
}

t_load_unload_cycles() {
	local i users0
	unload
	users0=$(awk '$1 == "ib_core" { print $3 }' /proc/modules)
	for i in $(seq "$CYCLES"); do
		modprobe sroce || fail "load #$i"
		rdma link add sroce0 type sroce netdev "$IF" || fail "add #$i"
		rmmod sroce || fail "unload #$i"
	done
	expect_eq "$(awk '$1 == "ib_core" { print $3 }' /proc/modules)" "$users0" "ib_core users"
	[ -z "$(rdma link show 2>/dev/null)" ] || fail "links left"
	! grep -q ":12B7 " /proc/net/udp || fail "UDP 4791 still bound"
}

# A kernel ULP's PD: ib_alloc_pd() asks the driver for a DMA MR (get_dma_mr)
# when the device has no local DMA lkey; ib_srpt allocates one per device.
t_kernel_pd_dma_mr() {
	fresh
	add_link sroce0 "$IF"
	modinfo ib_srpt >/dev/null 2>&1 || skip "ib_srpt is not in this kernel"
	# ib_core's MAD layer holds a PD with a DMA MR for the GSI QP already
	local pds mrs
	pds=$(objects pds) mrs=$(objects mrs)
	[ "$pds" -ge 1 ] && [ "$mrs" -ge 1 ] ||
		fail "no PD and DMA MR of the MAD layer: $(cat "$OBJS")"
	modprobe ib_srpt
	wait_until 30 '[ "$(objects pds)" -gt "$pds" ] && [ "$(objects mrs)" -gt "$mrs" ]' ||
		fail "no kernel PD with a DMA MR: $(cat "$OBJS")"
	cat "$OBJS"
	rmmod ib_srpt
	wait_until 30 '[ "$(objects mrs)" = "$mrs" ] && [ "$(objects pds)" = "$pds" ]' ||
		fail "kernel PD or MR left after ib_srpt unloaded: $(cat "$OBJS")"
}

t_rxe_port_clash() {
	fresh
	modprobe crc32_generic 2>/dev/null || true
	# sroce holds 4791: rdma_rxe cannot load.
	add_link sroce0 "$IF"
	must_fail modprobe rdma_rxe
	[ ! -d /sys/module/rdma_rxe ] || fail "rdma_rxe loaded next to an sroce device"
	# rdma_rxe holds 4791: adding an sroce link fails and says why.
	rdma link delete sroce0
	modprobe rdma_rxe || fail "rdma_rxe does not load once sroce released the port"
	must_fail rdma link add sroce0 type sroce netdev "$IF"
	dmesg_since_case | grep -q "UDP port 4791: it is already in use (rdma_rxe" ||
		fail "no clear message about the port clash"
	expect_eq "$(objects devices)" 0 "live devices"
	rmmod rdma_rxe
	add_link sroce0 "$IF"
	wait_for 30 port_state_is sroce0 ACTIVE || fail "sroce0 not ACTIVE after rdma_rxe left"
}

# sroce-ctl (userspace/tools/ctl, built by make userspace) on a real device:
# status shows sroce0, its netdev, ACTIVE, the netdev MTU and the IPv4 GID;
# check passes the module, the device, its port and its address; with
# rdma_rxe loaded, check reports it and fails, and status does not take an
# rdma_rxe device for an sroce one.
t_sroce_ctl() {
	local ctl=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tools/sroce-ctl out rc
	[ -x "$ctl" ] || fail "$ctl is not built (make userspace)"
	fresh
	add_link sroce0 "$IF"
	wait_for 30 port_state_is sroce0 ACTIVE || fail "not ACTIVE: $(port_attr sroce0 state)"
	wait_for 30 has_gid sroce0 "$SROCE_IP4" || fail "no RoCE v2 GID for $SROCE_IP4"
	out=$("$ctl" status) || fail "sroce-ctl status failed"
	echo "$out"
	expect_match "$out" "^sroce0: netdev $IF, port ACTIVE \\(LinkUp\\), active_mtu [0-9]+, netdev mtu $(cat "/sys/class/net/$IF/mtu")\$" status
	expect_match "$out" "^  gid [0-9]+ ::ffff:$SROCE_IP4 \\(RoCE v2\\)\$" "status GID"
	expect_match "$out" "^  sent [0-9]+ packets [0-9]+ bytes, received [0-9]+ packets" "status counters"
	expect_match "$("$ctl" status -j sroce0)" "^\\{\"devices\":\\[\\{\"name\":\"sroce0\",\"netdev\":\"$IF\",\"state\":\"ACTIVE\"" "status -j"
	out=$("$ctl" check) && rc=0 || rc=$?
	echo "$out"
	expect_match "$out" "^ok: sroce module loaded \\(version $(cat /sys/module/sroce/version)\\)" "check: module"
	expect_match "$out" "^ok: sroce devices: sroce0\$" "check: device"
	expect_match "$out" "^ok: sroce0: port ACTIVE on $IF " "check: port"
	expect_match "$out" "^ok: sroce0: GIDs of the addresses .*::ffff:$SROCE_IP4" "check: address"
	expect_match "$out" "^ok: rdma_rxe not loaded\$" "check: rdma_rxe"
	# every problem (the provider, memlock here) is what makes it exit 1
	if printf '%s\n' "$out" | grep -q '^problem: '; then
		expect_eq "$rc" 1 "check exit status with a problem"
	else
		expect_eq "$rc" 0 "check exit status without a problem"
	fi

	rdma link delete sroce0
	wait_for 30 dev_gone sroce0 || fail "sroce0 still present"
	modprobe crc32_generic 2>/dev/null || true
	modprobe rdma_rxe || fail "modprobe rdma_rxe"
	rdma link add rxe0 type rxe netdev "$IF" || fail "rdma link add rxe0"
	wait_for 30 dev_exists rxe0 || fail "rxe0 did not appear"
	must_fail "$ctl" status rxe0
	expect_eq "$("$ctl" status)" "no sroce device" "status with only rxe0"
	out=$("$ctl" check) && rc=0 || rc=$?
	echo "$out"
	expect_eq "$rc" 1 "check exit status with rdma_rxe"
	expect_match "$out" "^problem: rdma_rxe is loaded: it holds UDP port 4791" "check: rdma_rxe"
	expect_match "$out" "^problem: no sroce device\$" "check: no device"
	rdma link delete rxe0
	rmmod rdma_rxe
}

# A user's rings and WQE copies are charged to its memory cgroup: a process
# in a cgroup with a small memory.max that creates CQs of 65536 CQEs and
# SRQs and QPs at the advertised maxima gets ENOMEM from a create, is not
# OOM-killed, and the cgroup never went over its limit; so does one that
# asks for a CQ of max_cqe (a 256 MiB ring, its first create).  The same
# process outside the cgroup creates a CQ of max_cqe, an SRQ and a QP at
# the maxima (about 330 MiB in the 1 GiB guest), so the limit is what
# stopped it.  Everything created is gone after each process exits, and the
# kernel log says nothing about it.
MEMCG_MAX=$((32 << 20))
# in_cgroup CG ARGS...: sroce_obj_fill ARGS... in cgroup CG; sets out, rc
in_cgroup() {
	local cg=$1
	shift
	out=$(SROCE_RDMA_DEV=sroce0 bash -c \
		'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
		"$OBJ_FILL" "$@" 2>&1) && rc=0 || rc=$?
}

# created_objects: the count sroce_obj_fill printed (in $out)
created_objects() {
	printf '%s\n' "$out" | sed -n 's/^created \([0-9]*\) objects.*/\1/p'
}

t_memcg_limits() {
	OBJ_FILL=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/sroce_obj_fill
	local cgroot=/sys/fs/cgroup cg out rc in_created out_created before
	fresh
	add_link sroce0 "$IF"
	wait_for 30 port_state_is sroce0 ACTIVE || fail "sroce0 not ACTIVE"
	if ! grep -q "^[^ ]* $cgroot cgroup2 " /proc/mounts; then
		grep -q " $cgroot " /proc/mounts && fail "$cgroot is not cgroup2"
		mount -t cgroup2 none "$cgroot" || fail "cannot mount cgroup2"
	fi
	grep -qw memory "$cgroot/cgroup.controllers" ||
		fail "no memory controller in cgroup2: $(cat "$cgroot/cgroup.controllers")"
	grep -qw memory "$cgroot/cgroup.subtree_control" ||
		echo +memory >"$cgroot/cgroup.subtree_control"
	cg=$cgroot/sroce_memcg
	mkdir "$cg"
	trap 'rmdir "'"$cg"'" 2>/dev/null || true' EXIT
	echo "$MEMCG_MAX" >"$cg/memory.max"
	[ ! -e "$cg/memory.swap.max" ] || echo 0 >"$cg/memory.swap.max"
	before=$(cat "$OBJS")

	# inside: a create fails with ENOMEM (exit 10), the process lives
	in_cgroup "$cg" 3 65536
	echo "in the cgroup (memory.max $MEMCG_MAX), CQs of 65536: $out"
	cat "$cg/memory.events"
	expect_eq "$rc" 10 "exit status in the cgroup (10: a create failed with ENOMEM)"
	[ "$(awk '$1 == "max" { print $2 }' "$cg/memory.events")" -gt 0 ] ||
		fail "the cgroup never reached memory.max"
	in_created=$(created_objects)
	[ -n "$in_created" ] || fail "no count from sroce_obj_fill"
	wait_until 30 '[ "$(cat "$OBJS")" = "$before" ]' ||
		fail "objects left after the process in the cgroup: $(cat "$OBJS")"

	# inside, a CQ of max_cqe: that first create fails with ENOMEM
	in_cgroup "$cg" 1
	echo "in the cgroup, a CQ of max_cqe: $out"
	expect_eq "$rc" 10 "exit status in the cgroup, max_cqe (10: ENOMEM)"
	expect_eq "$(created_objects)" 0 "objects created before the max_cqe CQ failed"
	expect_eq "$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")" 0 \
		"OOM kills in the cgroup"
	if [ -e "$cg/memory.peak" ]; then
		echo "memory.peak $(cat "$cg/memory.peak")"
		[ "$(cat "$cg/memory.peak")" -le "$MEMCG_MAX" ] ||
			fail "memory.peak over memory.max"
	fi
	wait_until 30 '[ "$(cat "$OBJS")" = "$before" ]' ||
		fail "objects left after the max_cqe process: $(cat "$OBJS")"

	# outside: a round at the maxima, the CQ of max_cqe included
	out=$(SROCE_RDMA_DEV=sroce0 "$OBJ_FILL" 1 2>&1) && rc=0 || rc=$?
	echo "outside: $out"
	expect_eq "$rc" 0 "exit status outside the cgroup"
	out_created=$(created_objects)
	[ "$out_created" -gt "$in_created" ] ||
		fail "outside the cgroup created $out_created, inside $in_created"
	wait_until 30 '[ "$(cat "$OBJS")" = "$before" ]' ||
		fail "objects left after the process outside: $(cat "$OBJS")"
	! dmesg_since_case | grep -Ei "oom|allocation failure|vmalloc error|call trace" ||
		fail "the kernel log complains"
}

# --- place in the device tree (Documentation/admin-guide.md) ----------------

# sysfs_parent_is DEV PARENT: DEV's device link leads to PARENT, the netdev
# $IF's bus device, and through it to $IF; DEV itself stays in the virtual
# tree (kernel/device.c says why)
sysfs_parent_is() {
	expect_eq "$(readlink -f "$SYS/$1/device")" "$2" "$1's device link"
	expect_eq "$(readlink -f "$SYS/$1")" "/sys/devices/virtual/infiniband/$1" \
		"$1's sysfs path"
	[ -d "$SYS/$1/device/net/$IF" ] || fail "no $SYS/$1/device/net/$IF"
	expect_eq "$(cat "$SYS/$1/device/net/$IF/ifindex")" \
		"$(cat "/sys/class/net/$IF/ifindex")" "ifindex through $1's device link"
	expect_match "$2" '^/sys/devices/pci[0-9a-f:]+/' "$1's parent path"
}

# wire_parent: the bus device of the wire NIC $IF (virtio-net: virtio<N>)
wire_parent() {
	readlink -f "/sys/class/net/$IF/device"
}

t_sysfs_parent_virtio() {
	local parent
	fresh
	parent=$(wire_parent)
	expect_match "$parent" '/virtio[0-9]+$' "$IF's parent"
	add_link sroce0 "$IF"
	sysfs_parent_is sroce0 "$parent"
	echo "sroce0: $(readlink -f "$SYS/sroce0")"
	rdma link delete sroce0
	wait_for 30 dev_gone sroce0 || fail "sroce0 still present"
	[ ! -e "$parent/infiniband" ] ||
		fail "$parent/infiniband left behind: $(ls "$parent/infiniband")"
	add_link sroce0 "$IF"
	sysfs_parent_is sroce0 "$parent"
	rdma link delete sroce0
	wait_for 30 dev_gone sroce0 || fail "sroce0 still present"
	[ ! -e "$parent/infiniband" ] || fail "$parent/infiniband left behind"
}

t_sysfs_parent_veth() {
	fresh
	ip link add sv0 type veth peer name sv1
	ip link set sv0 up
	ip link set sv1 up
	add_link sroce_v sv0
	[ ! -e "$SYS/sroce_v/device" ] ||
		fail "sroce_v has a device link: $(readlink -f "$SYS/sroce_v/device")"
	expect_eq "$(readlink -f "$SYS/sroce_v")" /sys/devices/virtual/infiniband/sroce_v \
		"sroce_v's sysfs path"
	expect_eq "$(cat "$SYS/sroce_v/ports/1/gid_attrs/ndevs/0")" sv0 "GID 0's netdev"
	rdma link delete sroce_v
	wait_for 30 dev_gone sroce_v || fail "sroce_v still present"
	ip link del sv0
}

# wire_restore MAC: after a PCI rescan, the wire NIC of that MAC gets back its
# name $IF and its addresses (as scripts/guest/init set them)
wire_restore() {
	local mac=$1 d nd=
	for d in /sys/class/net/*; do
		if [ "$(cat "$d/address")" = "$mac" ]; then
			nd=${d##*/}
			break
		fi
	done
	[ -n "$nd" ] || return 1
	if [ "$nd" != "$IF" ]; then
		ip link set "$nd" name "$IF" || return 1
	fi
	echo 0 >"/proc/sys/net/ipv6/conf/$IF/accept_dad"
	ip addr add "$SROCE_IP4/24" dev "$IF" || return 1
	ip -6 addr add "$SROCE_IP6/64" dev "$IF" || return 1
	ip link set "$IF" up
}

nic_back() {		# MAC
	grep -qx "$1" /sys/class/net/*/address 2>/dev/null
}

# The NIC's PCI function is hot-removed while sroce0 (with a copy in a second
# network namespace, and an open context) has its device link into it:
# sroce0 and its copy go, the process is told, nothing in the kernel log
# complains, and the function's directory goes (the link pins nothing).
# Then a rescan brings the NIC back, and a new device on it works, with its
# link.  Leaves the wire NIC as it found it.
t_sysfs_parent_removed() {
	local parent pci mac ev wpid
	fresh
	parent=$(wire_parent)
	pci=$(readlink -f "$parent/..")
	[ -e "$pci/remove" ] || fail "$parent's parent $pci is not a PCI function"
	mac=$(cat "/sys/class/net/$IF/address")
	expect_match "$(rdma system show)" 'netns shared' "rdma system"
	ip netns add sroce_ns
	add_link sroce0 "$IF"
	sysfs_parent_is sroce0 "$parent"
	# ib_core's copy in another namespace has no link (admin-guide.md)
	expect_eq "$(ip netns exec sroce_ns readlink -f "$SYS/sroce0")" \
		/sys/devices/virtual/infiniband/sroce0 "sroce0's copy in sroce_ns"
	ev=$(mktemp)
	stdbuf -oL ibv_asyncwatch -d sroce0 >"$ev" 2>&1 &
	wpid=$!
	wait_for 30 grep -q "async event FD" "$ev" || fail "ibv_asyncwatch did not start: $(cat "$ev")"

	echo "removing $pci"
	echo 1 >"$pci/remove"
	wait_for 30 dev_gone sroce0 || fail "sroce0 survived its NIC"
	wait_until 30 '[ -z "$(ip netns exec sroce_ns ls "$SYS")" ]' ||
		fail "sroce0's copy in sroce_ns survived its NIC"
	[ ! -e "$pci" ] || fail "$pci still present"
	wait_for 30 grep -q IBV_EVENT_DEVICE_FATAL "$ev" ||
		fail "process not told the device died: $(cat "$ev")"
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	rm -f "$ev"
	wait_for 30 objects_all_zero || fail "objects left: $(cat "$OBJS")"
	ip netns del sroce_ns
	! dmesg_since_case | grep -E "WARNING|BUG|kernfs|sysfs group|Call Trace" ||
		fail "the kernel log complains"

	echo 1 >/sys/bus/pci/rescan
	wait_for 30 nic_back "$mac" || fail "no NIC with $mac after the rescan"
	wire_restore "$mac" || fail "cannot give the NIC back its name and addresses"
	add_link sroce0 "$IF"
	wait_for 30 port_state_is sroce0 ACTIVE || fail "the new sroce0 is not ACTIVE"
	sysfs_parent_is sroce0 "$(wire_parent)"
	ibv_devinfo -d sroce0 | grep -q PORT_ACTIVE || fail "ibv_devinfo does not see sroce0"
	rdma link delete sroce0
	wait_for 30 dev_gone sroce0 || fail "sroce0 still present"
}

CASES=(
	t_module_load
	t_link_add_autoloads_module
	t_port_active
	t_provider_binds
	t_node_guid
	t_device_attributes
	t_gid_ipv4
	t_gid_ipv6
	t_gid_follows_addresses
	t_mtu_follows_netdev
	t_carrier_and_admin_state
	t_second_device_on_netdev_refused
	t_duplicate_name_refused
	t_any_name_binds_provider
	t_non_ethernet_refused
	t_several_devices_coexist
	t_link_delete
	t_netdev_removal
	t_ud_destroy_with_blocked_sends
	t_unload_with_parked_packets
	t_delete_with_open_context
	t_unload_with_devices
	t_add_delete_cycles
	t_load_unload_cycles
	t_kernel_pd_dma_mr
	t_rxe_port_clash
	t_sroce_ctl
	t_memcg_limits
	t_sysfs_parent_virtio
	t_sysfs_parent_veth
	t_sysfs_parent_removed
)
# A case list on the command line runs just those cases.
if [ $# -gt 0 ]; then
	ktap_main "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
