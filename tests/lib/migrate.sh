# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced after common.sh and bundle.sh by the migration tests: two
# "hosts" on one kernel.
#
#   source   the test's own namespaces; state root $RTROOT (rt)
#   dest     network namespace $MIG_NS (veth $MIG_IP_DST <-> $MIG_IP_SRC),
#            a cgroup namespace rooted at its own cgroup in every hierarchy
#            (fresh cgroup mounts inside), state root $MIG_ROOT_DST and
#            bundles under $MIG_BUNDLES: the same cgroupsPath there is
#            another cgroup, as on another machine
#
#   mig_hosts_setup              create the dest host (torn down at exit)
#   on_dest CMD...               run CMD as the dest host
#   rt_dst ARGS...               cryo --root $MIG_ROOT_DST ARGS as the dest host
#   mig_tls_certs DIR            CA, server cert for $MIG_IP_DST, client cert;
#                                a second CA with its own client cert (rogue)
#   mig_bundle_dir DIR [CMD...]  a bundle whose rootfs is a plain directory
#                                (tar snapshot), made from bundle_new's
#   mig_counter_run DIR ID MIB   run ID here from a bundle at DIR of that
#                                kind running the self-checking counter
#                                (workload.sh) with MIB MiB and a records file
#   mig_dst_clean ID             nothing of ID left on the dest host?
#   mig_assert_back WHAT ID STATUS  ID runs here as before, nothing of a
#                                failed attempt left on either side
#   mig_back WHAT ID             ID, migrated there from bundle $T/ID, back
#                                here: checkpointed there, restored here
#   mig_pipe_max                 fs.pipe-max-size for CRIU's lazy page server (until exit)

need_cmd ip
need_cmd unshare
need_cmd openssl

MIG_N=$(( ($$ % 200) + 20 ))
MIG_NS=cryo-mig-$$
MIG_IP_SRC=10.199.$MIG_N.1
MIG_IP_DST=10.199.$MIG_N.2
MIG_ROOT_DST=$T/root-dst
MIG_BUNDLES=$T/bundles-dst
MIG_CG=cryo-mig-host-$$

_mig_cgroup_mounts() { awk '($3 == "cgroup" || $3 == "cgroup2") && $2 ~ /^\/sys\/fs\/cgroup(\/|$)/ { print $2, $3, $4 }' /proc/self/mounts; }

_mig_teardown() {
	local mp
	# containers first (the dest's cryo sees its own cgroup view)
	for id in $(rt_dst list -q 2>/dev/null); do rt_dst delete --force "$id" >/dev/null 2>&1; done
	ip netns del "$MIG_NS" 2>/dev/null
	ip link del "vm$MIG_N" 2>/dev/null
	while read -r mp _ _; do
		[ -d "$mp/$MIG_CG" ] && cg_remove "$mp/$MIG_CG"
	done <<<"$(_mig_cgroup_mounts)"
}

# The containers' parent cgroup on the other host, made in advance as on a
# node (the soak's leak counts must not take the first container there for
# a leak)
mig_dst_parent_cgroups() {
	local mp
	while read -r mp _ _; do mkdir -p "$mp/$MIG_CG/$CGPARENT" || fail "mkdir $mp/$MIG_CG/$CGPARENT"; done <<<"$(_mig_cgroup_mounts)"
}

mig_hosts_setup() {
	local mp
	# `ip netns add` makes /run/netns a mount point the first time: undo that too
	mountpoint -q /run/netns 2>/dev/null || at_exit "rmdir /run/netns/ 2>/dev/null; umount /run/netns && rmdir /run/netns"
	at_exit _mig_teardown
	ip netns add "$MIG_NS" || fail "ip netns add"
	ip link add "vm$MIG_N" type veth peer name "vmd$MIG_N" || fail "veth"
	ip link set "vmd$MIG_N" netns "$MIG_NS"
	ip addr add "$MIG_IP_SRC/24" dev "vm$MIG_N"
	ip link set "vm$MIG_N" up
	ip -n "$MIG_NS" addr add "$MIG_IP_DST/24" dev "vmd$MIG_N"
	ip -n "$MIG_NS" link set "vmd$MIG_N" up
	ip -n "$MIG_NS" link set lo up
	while read -r mp _ _; do
		mkdir -p "$mp/$MIG_CG" || fail "mkdir $mp/$MIG_CG"
	done <<<"$(_mig_cgroup_mounts)"
	# v1 cpuset: a new cgroup has no cpus/mems until given
	if [ -e "/sys/fs/cgroup/cpuset/$MIG_CG/cpuset.cpus" ]; then
		cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$MIG_CG/cpuset.cpus"
		cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$MIG_CG/cpuset.mems"
		echo 1 >"/sys/fs/cgroup/cpuset/$MIG_CG/cgroup.clone_children"
	fi
	mkdir -p "$MIG_ROOT_DST" "$MIG_BUNDLES"
	MIG_MOUNTS=$(_mig_cgroup_mounts)
	# the dest's cgroup namespace, rooted at its cgroup (entered while empty), kept by a bind mount
	MIG_CGNS=$T/cgns
	touch "$MIG_CGNS"
	MIG_MOUNTS=$MIG_MOUNTS MIG_CG=$MIG_CG bash -c '
		while read -r mp _ _; do echo $$ >"$mp/$MIG_CG/cgroup.procs" || exit 1; done <<<"$MIG_MOUNTS"
		exec unshare --cgroup="$0" true' "$MIG_CGNS" || fail "cgroup namespace of the dest host"
	at_exit "umount '$MIG_CGNS'"
	while read -r mp _ _; do
		mkdir -p "$mp/$MIG_CG/host.init"
	done <<<"$(_mig_cgroup_mounts)"
	for c in $(cat "/sys/fs/cgroup/unified/$MIG_CG/cgroup.controllers" 2>/dev/null); do
		echo "+$c" >"/sys/fs/cgroup/unified/$MIG_CG/cgroup.subtree_control" 2>/dev/null
	done
}

# The dest host: its cgroup namespace (rooted at its own cgroup, fresh
# cgroup mounts inside), entered from its leaf host.init (the host
# cgroup itself holds no process: cgroup2's rule), its network namespace.
# Its mount namespace is a copy of ours: `ip netns exec` gives it a fresh
# /sys, but a cgroup mount of ours anywhere else stays, rooted at our root
# cgroup, and libcgroup takes the first mount of a controller it finds
# (the VM harness mirrors every cgroup mount of the host, CRIU's passing
# .criu.cgmounts.* and cgyard ones of the tests running beside it too):
# the dest would see, and join, the source's cgroups. They go first.
on_dest() {
	MIG_MOUNTS=$MIG_MOUNTS MIG_CG=$MIG_CG MIG_NS=$MIG_NS MIG_CGNS=$MIG_CGNS bash -c '
		while read -r mp _ _; do echo $$ >"$mp/$MIG_CG/host.init/cgroup.procs" || exit 1; done <<<"$MIG_MOUNTS"
		exec nsenter --cgroup="$MIG_CGNS" ip netns exec "$MIG_NS" unshare -m --propagation private bash -c "
			while read -r _ mp ty _; do
				case \$ty in cgroup | cgroup2) echo \"\$mp\" ;; esac
			done </proc/self/mounts | tac | while read -r mp; do umount -l \"\$mp\"; done
			! grep -qE \" cgroup2? \" /proc/self/mounts || { echo \"on_dest: a cgroup mount of the source host is left\" >&2; exit 1; }
			mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup || exit 1
			while read -r mp ty opts; do
				mkdir -p \"\$mp\"
				if [ \"\$ty\" = cgroup2 ]; then mount -t cgroup2 none \"\$mp\"; else mount -t cgroup -o \"\$opts\" cgroup \"\$mp\"; fi || exit 1
			done <<<\"\$MIG_MOUNTS\"
			exec \"\$@\"" dest "$@"' on_dest "$@"
}

rt_dst() { on_dest "$CRYO_BIN" --root "$MIG_ROOT_DST" "$@"; }

mig_tls_certs() {
	local d=$1 ca
	MIG_PKI=$d
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		for ca in ca rogue; do
			openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
				-subj "/CN=cryo test $ca" -keyout "$ca.key" -out "$ca.crt" 2>/dev/null || exit 1
		done
		mk() {  # name ca san
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
				-keyout "$1.key" -out "$1.csr" 2>/dev/null || exit 1
			printf 'subjectAltName=%s\n' "$3" >"$1.ext"
			openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 \
				-extfile "$1.ext" -out "$1.crt" 2>/dev/null || exit 1
		}
		mk server ca "IP:$MIG_IP_DST"
		mk client ca "DNS:cryo-source"
		mk rogue-client rogue "DNS:cryo-source"
	) || fail "openssl: making the test certificates failed"
}

# A bundle whose rootfs is a directory (not its own fs): the snapshot is a tar.
mig_bundle_dir() {
	local dir=$1
	shift
	bundle_new "$dir" "$@"
	mkdir -p "$dir/rootfs-dir"
	cp -a "$dir/rootfs/." "$dir/rootfs-dir/" || fail "copy the rootfs"
	bundle_set "$dir" "c['root']['path'] = 'rootfs-dir'; c['linux'].pop('resources', None); c['process']['env'].append('COUNTER_NEW_INODES=1')"
}

mig_counter_run() {
	local dir=$1 id=$2
	mig_bundle_dir "$dir" /counter /status "$3" /records
	cp "$WL_BIN" "$dir/rootfs-dir/counter"
	rt run -d --bundle "$dir" "$id" </dev/null >"$T/out" 2>&1 || fail "run $id: $(cat "$T/out")"
}

mig_dst_clean() {
	local id=$1 left
	left=$(rt_dst list -q 2>/dev/null)
	[ -z "$left" ] || { echo "dest still has containers: $left"; return 1; }
	[ ! -e "$MIG_BUNDLES/$id" ] || { echo "dest bundle $MIG_BUNDLES/$id left"; return 1; }
	[ -z "$(ls -A "$MIG_ROOT_DST/.migrate-in" 2>/dev/null)" ] || { echo "dest staging left: $(ls -A "$MIG_ROOT_DST/.migrate-in")"; return 1; }
	[ ! -d "/sys/fs/cgroup/freezer/$MIG_CG/$CGPARENT/$id" ] || { echo "dest cgroup left"; return 1; }
	return 0
}

# mig_assert_back WHAT ID STATUS: after an attempt that failed, ID runs
# here as before (its counter, STATUS, counts on) and nothing of the
# attempt is left on either side; WHAT names the attempt
mig_assert_back() {
	local what=$1 id=$2 status=$3 c st why
	st=$(rt freezer-state "$id") || fail "$what: freezer-state"
	[ "$st" = RUNNING ] || fail "$what: the source container is $st"
	c=$(wl_count "$status")
	wl_wait_above "$status" $((c + 5))
	why=$(mig_dst_clean "$id") || fail "$what: $why"
	[ -z "$(ls -A "$RTROOT/.migrate-out" 2>/dev/null)" ] || fail "$what: image left: $(ls -A "$RTROOT/.migrate-out")"
	[ ! -e "$RTROOT/.holds/$id.json" ] || fail "$what: the hold journal entry was left"
}

# mig_back WHAT ID: not by a migration back (the stdio transport's tests do
# that); by an image of the dest's, copied here: what the soaks need
# between two faults, ID running here again. WHAT names the failure.
mig_back() {
	local what=$1 id=$2
	rt_dst checkpoint --image-path "$MIG_ROOT_DST/back" "$id" >"$T/out" 2>&1 || fail "$what: back: $(cat "$T/out")"
	rt_dst delete "$id" >/dev/null 2>&1
	cp -a "$MIG_ROOT_DST/back" "$T/back"
	rm -rf "${MIG_BUNDLES:?}/$id" "$MIG_ROOT_DST/back"
	rt restore -d --bundle "$T/$id" --image-path "$T/back" "$id" >"$T/out" 2>&1 || fail "$what: restore here: $(cat "$T/out")"
	rm -rf "$T/back"
}

# mig_pipe_max: CRIU's lazy page server wants pipes of a few MiB; a root
# without CAP_SYS_RESOURCE (this host's) is bound by fs.pipe-max-size,
# raised to 4 MiB until the test's exit
mig_pipe_max() {
	local cur
	cur=$(cat /proc/sys/fs/pipe-max-size)
	[ "$cur" -lt 4194304 ] || return 0
	at_exit "echo $cur >/proc/sys/fs/pipe-max-size"
	echo 4194304 >/proc/sys/fs/pipe-max-size || fail "raise fs.pipe-max-size"
	log "fs.pipe-max-size raised from $cur to 4194304 until the end of this test (CRIU's lazy page server)"
}

# mig_receive OUT [ARGS...]: `cryo receive --listen` on the dest host in the
# background (pid in MIG_RPID, output in OUT) with the test's server
# certificate, once it listens. mig_receive_wait: its exit status.
MIG_PORT=7443
mig_receive() {
	local out=$1
	shift
	# emptied here, not by the redirection below: that one runs in the
	# child, maybe after the wait below read a former receive's "listening"
	: >"$out"
	rt_dst ${MIG_DST_OPTS:-} receive --listen "$MIG_IP_DST:$MIG_PORT" --cert "$MIG_PKI/server.crt" --key "$MIG_PKI/server.key" \
		--ca "$MIG_PKI/ca.crt" --bundle-dir "$MIG_BUNDLES" --accept-timeout 60000 "$@" >"$out" 2>&1 &
	MIG_RPID=$!
	for _ in $(seq 200); do
		grep -q 'listening on port' "$out" 2>/dev/null && return 0
		kill -0 "$MIG_RPID" 2>/dev/null || break
		sleep 0.05
	done
	fail "receive did not listen: $(cat "$out")"
}
# mig_receive_wait [SEC]: its exit status in MIG_RC (after SEC seconds,
# default 120, it is killed: 143). Not in $(...): it must be our child.
mig_receive_wait() {
	local rc=0 i
	for ((i = 0; i < ${1:-120} * 10; i++)); do
		kill -0 "$MIG_RPID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$MIG_RPID" 2>/dev/null
	wait "$MIG_RPID" || rc=$?
	MIG_RC=$rc
}

# rt migrate over TLS with the test's client certificate
rt_migrate() {
	rt migrate --cert "$MIG_PKI/client.crt" --key "$MIG_PKI/client.key" --ca "$MIG_PKI/ca.crt" "$@"
}
