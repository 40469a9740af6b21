# SPDX-License-Identifier: GPL-2.0-only
# Sourced after common.sh by the host/cri_* tests and tests/bench/cri.sh:
# Kubernetes nodes made of containerd 2.x's CRI (tests/setup-cri.sh), each
# in a network namespace of its own, driven by tests/cri/cri.py.
#
#   cri_need                 skip unless containerd 2.x, gRPC for Python,
#                            docker-registry and the CNI plugins are there
#   cri_need_criu            skip unless CRIU dumps on this host (`cryo check`)
#   cri_one_node             both, then node `a` (pods in 10.213.1.0/24) with the images
#   cri_images               build the pause and counter images (busybox-static
#                            and tests/tools/cryo-test-counter), pushed to the
#                            first node's registry (call after the first cri_node)
#   cri_node NAME N          node NAME: a network namespace, bridge cbr<N>-<pid>, pods in
#                            10.213.N.0/24, a docker-registry on its localhost:5000
#                            (storage shared by every node), and its containerd
#                            with runtime handlers `cryo` and `runc`; all torn
#                            down at exit (pods, shims, mounts, cgroups, netns)
#   cri NAME ARGS...         cri.py against node NAME
#   cri_pod NAME POD HANDLER [UID]   pod config -> $T/NAME-POD.pod.json; prints the pod id
#   cri_ctr_config NAME POD CTR IMAGE   container config -> $T/NAME-POD-CTR.json, as the
#                            kubelet makes it (its own pid namespace; CRI_PIDNS=POD: the
#                            pod's, as with shareProcessNamespace); COUNTER_NEW_INODES=1:
#                            a restore gives its status file a new inode (a new overlay)
#   cri_count NAME CID       the counter's count, read by ExecSync (cat /status)
#   cri_in NODE CMD...       CMD in the node's network namespace
#   cri_ns NAME              a network namespace alone (a host outside the nodes)
#   cri_wire A ADDR B ADDR   a veth pair between two of them
#   cri_tcp_status NODE ADDR the counter's status line from its listener (port 8080),
#                            asked from NODE's network namespace
#   cri_cryo NAME ARGS...    cryo with node NAME's cryo root (what the shim uses)
#   cri_fault NAME VAR=VALUE ...   environment for the next cryo/runc calls of that
#                            node's shims (empty: none)
#   cri_calls NAME           the runtime calls the shims made (argv => exit code [start end ns])
#   cri_counter NODE POD HANDLER    a pod and the counter in it, counting: sets CRI_POD, CRI_CID
#                                   and CRI_IP (the pod's address)
#   cri_restore NODE POD HANDLER IMAGE   a new pod and, in it, CreateContainer with IMAGE (a
#                            checkpoint archive or checkpoint image) + StartContainer: sets
#                            CRI_POD, CRI_CID (fails the test when either call fails)
#   cri_wait_count NODE CID N   wait (10 s) until the counter's count is above N
#   cri_archive_json OUT     the archive path of kubelet-checkpoint's output
#
# The cryo handler signs its checkpoints with the test's Ed25519 key
# ($T/node-key.pem) and restores only what that key signed (CRYO_SIGN_KEY,
# CRYO_VERIFY_KEY in its wrapper): a node's configuration, not the CRI's.
need_root
need_cmd nsenter
need_cmd ip

CRI_PREFIX=${CRYO_CRI_PREFIX:-/opt/cryo-containerd}
CRI_PY=/usr/bin/python3
CRI_CLIENT="$CRYO_SRC/tests/cri/cri.py"
CRI_IMAGE_PY="$CRYO_SRC/tests/cri/image.py"
CRI_CRIU=${CRYO_CRIU:-/opt/cryo-criu4/sbin/criu}
CRI_CG="cryo-cri-$$"
CRI_REG="localhost:5000"
CRI_NODES=""
export CRYO_CRI_GEN="$CRYO_BUILD/tests/cri"

cri_need() {
	[ -x "$CRI_PREFIX/bin/containerd" ] ||
		skip "no containerd 2.x in $CRI_PREFIX: tests/setup-cri.sh fetches it from Debian testing (it failed or was not run)"
	"$CRI_PY" -c 'import grpc, grpc_tools' 2>/dev/null || skip "needs python3-grpcio and python3-grpc-tools (tests/setup.sh)"
	command -v docker-registry >/dev/null || skip "needs docker-registry (tests/setup.sh)"
	local p
	for p in bridge host-local loopback; do
		[ -x "/usr/lib/cni/$p" ] || skip "needs the CNI plugin $p (containernetworking-plugins)"
	done
	[ -x /bin/busybox ] || skip "needs busybox-static"
	[ -x "$CRYO_BUILD/tests/tools/cryo-test-counter" ] || skip "cryo-test-counter is not built"
	# compile api.proto now: a failure here is the test's, not a step's
	"$CRI_PY" "$CRI_CLIENT" --help >/dev/null || fail "cri.py does not run"
}

cri_need_criu() {
	[ -x "$CRI_CRIU" ] || skip "no CRIU 4 at $CRI_CRIU (tests/setup-criu4.sh)"
	CRYO_CRIU=$CRI_CRIU "$CRYO_BIN" check >"$T/check.out" 2>&1 ||
		skip "CRIU does not work on this host: $(tail -1 "$T/check.out")"
}

cri() {
	local n=$1
	shift
	"$CRI_PY" "$CRI_CLIENT" -r "unix://$T/$n/containerd.sock" "$@"
}

cri_cryo() {
	local n=$1
	shift
	CRYO_CRIU=$CRI_CRIU "$CRYO_BIN" --root "$T/$n/cryo-root/k8s.io" "$@"
}

cri_fault() {
	local n=$1
	shift
	printf '%s\n' "$@" >"$T/$n/fault.env"
}

cri_calls() { sed "s|$T|\$T|g" "$T/$1/calls.log" 2>/dev/null; }

# The runtimes the shims run: argv and exit code logged, CRIU 4 for both,
# and the variables of $D/fault.env (cri_fault) for the next calls.
_cri_wrappers() {
	local D=$1
	mkdir -p "$D/bin"
	cat >"$D/bin/criu" <<EOF
#!/bin/sh
CRIU_FAULT=\${CRIU_FAULT:-130} exec "$CRI_CRIU" "\$@"
EOF
	local rt bin
	for rt in cryo runc; do
		bin=$CRYO_BIN
		[ $rt = runc ] && bin=$(command -v runc)
		cat >"$D/bin/$rt" <<EOF
#!/bin/sh
export CRYO_CRIU="$CRI_CRIU" PATH="$D/bin:\$PATH"
export CRYO_SIGN_KEY="$T/node-key.pem" CRYO_VERIFY_KEY="$T/node-key.pub"
if [ -s "$D/fault.env" ]; then
	while read -r kv; do [ -n "\$kv" ] && export "\$kv"; done <"$D/fault.env"
fi
t0=\$(date +%s%N)
"$bin" "\$@"
rc=\$?
printf '%s %s => %s [%s %s]\n' "$rt" "\$*" \$rc "\$t0" "\$(date +%s%N)" >>"$D/calls.log"
# the runtime's own log of a failed call (the shim's bundle goes away with it)
if [ \$rc != 0 ]; then
	while [ \$# -gt 1 ]; do
		[ "\$1" = --log ] && cat "\$2" >>"$D/failed-calls.log" 2>/dev/null
		shift
	done
fi
exit \$rc
EOF
	done
	chmod 755 "$D/bin/criu" "$D/bin/cryo" "$D/bin/runc"
}

_cri_config() {
	local n=$1 N=$2 D=$T/$1
	mkdir -p "$D/cni" "$D/certs.d/$CRI_REG" "$D/tmp" "$D/opt"
	cat >"$D/certs.d/$CRI_REG/hosts.toml" <<EOF
server = "http://$CRI_REG"
[host."http://$CRI_REG"]
  capabilities = ["pull", "resolve"]
EOF
	cat >"$D/cni/10-cryo.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "cryo-cri-$n", "plugins": [
  {"type": "bridge", "bridge": "cbr$N-$$", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$D/ipam", "ranges": [[{"subnet": "10.213.$N.0/24"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
EOF
	local rt runtimes=""
	for rt in cryo runc; do
		runtimes="$runtimes
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.$rt]
        runtime_type = 'io.containerd.runc.v2'
        runtime_path = '$CRI_PREFIX/bin/containerd-shim-runc-v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.$rt.options]
          BinaryName = '$D/bin/$rt'
          Root = '$D/$rt-root'"
	done
	cat >"$D/config.toml" <<EOF
version = 3
root = '$D/root'
state = '$D/state'
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.tracing.processor.v1.otlp',
  'io.containerd.internal.v1.tracing', 'io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.zfs',
  'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.blockfile', 'io.containerd.snapshotter.v1.erofs']
[grpc]
  address = '$D/containerd.sock'
[ttrpc]
  address = '$D/containerd.sock.ttrpc'
[debug]
  address = '$D/debug.sock'
  level = 'info'
[metrics]
  address = ''
[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = '$D/opt'
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '$CRI_REG/cryo/pause:1'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '$D/certs.d'
  [plugins.'io.containerd.cri.v1.runtime']
    netns_mounts_under_state_dir = true
    enable_cdi = false
    # this host's bounding set may lack CAP_SYS_RESOURCE: no oom_score_adj below containerd's own
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'$runtimes
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '$D/cni'
      max_conf_num = 1
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
EOF
}

# cri_ns NAME: a network namespace of its own for NAME (a node, or a host
# with no containerd), held by a process (no /run/netns: `ip netns add`
# would mount it on the host); removed at exit
cri_ns() {
	local n=$1 D=$T/$1 i
	mkdir -p "$D"
	unshare --net sleep 2147483647 </dev/null >/dev/null 2>&1 &
	echo $! >"$D/netns.pid"
	CRI_NODES="$CRI_NODES $n"
	for i in $(seq 50); do
		[ "$(readlink "/proc/$(cat "$D/netns.pid")/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.02
	done
	echo "/proc/$(cat "$D/netns.pid")/ns/net" >"$D/netns"
	cri_in "$n" ip link set lo up
	# forwarding between a node's pods and its wires to other nodes
	cri_in "$n" sysctl -qw net.ipv4.ip_forward=1
}

# cri_wire A ADDR_A B ADDR_B: a veth pair between two namespaces (ADDR: x.y.z.w/len)
cri_wire() {
	local a=$1 aa=$2 b=$3 ba=$4 la="w$$$1$3" lb="w$$$3$1"
	ip link add "$la" type veth peer name "$lb" || fail "ip link add $la"
	at_exit "ip link del $la"
	ip link set "$la" netns "$(cat "$T/$a/netns.pid")" || fail "move $la"
	ip link set "$lb" netns "$(cat "$T/$b/netns.pid")" || fail "move $lb"
	cri_in "$a" ip addr add "$aa" dev "$la"
	cri_in "$b" ip addr add "$ba" dev "$lb"
	cri_in "$a" ip link set "$la" up
	cri_in "$b" ip link set "$lb" up
}

cri_node() {
	local n=$1 N=$2 D=$T/$1 i
	cri_ns "$n"
	# the cluster's checkpoint key: cryo signs with it and restores only what it signed
	if [ ! -e "$T/node-key.pem" ]; then
		(umask 077 && openssl genpkey -algorithm ed25519 -out "$T/node-key.pem" 2>/dev/null) || fail "openssl genpkey"
		openssl pkey -in "$T/node-key.pem" -pubout -out "$T/node-key.pub" 2>/dev/null || fail "openssl pkey"
	fi
	_cri_wrappers "$D"
	_cri_config "$n" "$N"
	cat >"$D/registry.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $T/registry
http:
  addr: 127.0.0.1:5000
EOF
	mkdir -p "$T/registry"
	# nsenter itself, not cri_in: backgrounded, a function runs in a subshell
	# whose pid is not the registry's (nsenter execs it: $! is the registry)
	nsenter --net="$(cat "$T/$n/netns")" docker-registry serve "$D/registry.yml" >"$D/registry.log" 2>&1 &
	echo $! >"$D/registry.pid"
	# containerd and its shims: TMPDIR and PATH of ours (the runtimes' CRIU, and the
	# `criu` containerd's CRI looks for before it checkpoints)
	TMPDIR="$D/tmp" PATH="$D/bin:$PATH" cri_in "$n" \
		"$CRI_PREFIX/bin/containerd" --config "$D/config.toml" >"$D/containerd.log" 2>&1 &
	echo $! >"$D/containerd.pid"
	for i in $(seq 150); do
		cri "$n" -t 2 version >/dev/null 2>&1 && break
		kill -0 "$(cat "$D/containerd.pid")" 2>/dev/null || fail "containerd on $n died: $(tail -5 "$D/containerd.log")"
		sleep 0.1
	done
	cri "$n" -t 5 version >/dev/null || fail "containerd on $n did not come up: $(tail -5 "$D/containerd.log")"
	for i in $(seq 50); do
		cri_in "$n" "$CRI_PY" -c 'import socket; socket.create_connection(("127.0.0.1", 5000), 1)' \
			2>/dev/null && return 0
		sleep 0.1
	done
	fail "the registry on $n did not come up: $(tail -5 "$D/registry.log")"
}

# cri_in NODE CMD...: CMD in the node's network namespace
cri_in() {
	local n=$1
	shift
	nsenter --net="$(cat "$T/$n/netns")" "$@"
}

# Everything a node made, in the order that frees it: pods (through the
# CRI, as the kubelet would), then whatever is left by force.
_cri_node_down() {
	local n=$1 D=$T/$1 p
	# a runtime a failed test left stopped (CRYO_PAUSE_AT) would hold its container's lock
	for p in $(pgrep -f -- "--root $D/(cryo|runc)-root/" 2>/dev/null); do kill -9 "$p"; done
	if [ -S "$D/containerd.sock" ] && kill -0 "$(cat "$D/containerd.pid" 2>/dev/null)" 2>/dev/null; then
		for p in $(cri "$n" -t 30 pods -q 2>/dev/null); do
			cri "$n" -t 30 stopp "$p" >/dev/null 2>&1
			cri "$n" -t 30 rmp "$p" >/dev/null 2>&1
		done
	fi
	[ -f "$D/containerd.pid" ] && kill "$(cat "$D/containerd.pid")" 2>/dev/null
	[ -f "$D/registry.pid" ] && kill "$(cat "$D/registry.pid")" 2>/dev/null
	wait "$(cat "$D/containerd.pid" 2>/dev/null)" 2>/dev/null
	# shims outlive containerd by design: ours name our socket
	for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $D/containerd.sock" 2>/dev/null); do kill -9 "$p"; done
	# containers a failed test left: their cryo and runc states, then their cgroups (below)
	for p in $(CRYO_CRIU=$CRI_CRIU "$CRYO_BIN" --root "$D/cryo-root/k8s.io" list -q 2>/dev/null); do
		"$CRYO_BIN" --root "$D/cryo-root/k8s.io" delete --force "$p"
	done
	for p in $(runc --root "$D/runc-root/k8s.io" list -q 2>/dev/null); do
		runc --root "$D/runc-root/k8s.io" delete --force "$p"
	done
	grep -o " $D/[^ ]*" /proc/self/mountinfo | sort -r | while read -r p; do umount -l "$p"; done
	[ -f "$D/netns.pid" ] && kill "$(cat "$D/netns.pid")" 2>/dev/null
}

_cri_cleanup() {
	local n d
	for n in $CRI_NODES; do
		_cri_node_down "$n"
	done
	for d in /sys/fs/cgroup/*/"$CRI_CG"; do
		[ -d "$d" ] && cg_remove "$d"
	done
	# the shims' sockets live in /run/containerd/s whatever the config says
	find /run/containerd -depth -type d -empty -delete 2>/dev/null
	true
}
at_exit _cri_cleanup

# A busybox-static rootfs with the counter in it.
_cri_rootfs() {
	local r=$1 a
	mkdir -p "$r/bin" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/etc" "$r/data"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh cat echo ls sleep true false ps kill mkdir rm grep wc id hostname; do
		ln -sf busybox "$r/bin/$a"
	done
	cp "$CRYO_BUILD/tests/tools/cryo-test-counter" "$r/bin/cryo-test-counter"
	echo "cryo-cri image" >"$r/etc/motd"
}

cri_images() {
	local first=${CRI_NODES%% *}
	[ -n "$first" ] || first=${CRI_NODES# }
	first=${first%% *}
	_cri_rootfs "$T/img-rootfs"
	cri_in "$first" "$CRI_PY" "$CRI_IMAGE_PY" push --registry 127.0.0.1:5000 --repo cryo/pause --tag 1 \
		--rootfs "$T/img-rootfs" --entrypoint '["/bin/sleep", "2147483647"]' >/dev/null || fail "push the pause image"
	# the counter: 16 MiB checked, its status in the rootfs, the count on TCP port 8080
	cri_in "$first" "$CRI_PY" "$CRI_IMAGE_PY" push --registry 127.0.0.1:5000 --repo cryo/counter --tag 1 \
		--rootfs "$T/img-rootfs" --entrypoint '["/bin/cryo-test-counter", "/data/status", "16", "-", "-", "8080"]' \
		>/dev/null || fail "push the counter image"
}

# cri_pod NODE POD HANDLER [UID]: RunPodSandbox as the kubelet would (pod
# cgroup made first, in this test's own parent); prints the pod id
cri_pod() {
	local n=$1 pod=$2 handler=$3 uid=${4:-$(cat /proc/sys/kernel/random/uuid)} h
	for h in /sys/fs/cgroup/*/; do
		[ -e "$h/cgroup.procs" ] && mkdir -p "$h$CRI_CG/pod$uid"
	done
	cat >"$T/$n-$pod.pod.json" <<EOF
{"metadata": {"name": "$pod", "namespace": "cryo-test", "uid": "$uid", "attempt": 0},
 "hostname": "$pod", "log_directory": "$T/$n/logs/cryo-test_${pod}_$uid",
 "linux": {"cgroup_parent": "/$CRI_CG/pod$uid",
           "security_context": {"namespace_options": {"network": "POD", "pid": "CONTAINER", "ipc": "POD"}}}}
EOF
	cri "$n" runp --runtime "$handler" "$T/$n-$pod.pod.json"
}

cri_ctr_config() {
	local n=$1 pod=$2 ctr=$3 image=$4
	cat >"$T/$n-$pod-$ctr.json" <<EOF
{"metadata": {"name": "$ctr", "attempt": 0}, "image": {"image": "$image"},
 "envs": [{"key": "COUNTER_NEW_INODES", "value": "1"}],
 "log_path": "$ctr/0.log",
 "linux": {"resources": {"memory_limit_in_bytes": 268435456},
           "security_context": {"namespace_options": {"network": "POD", "pid": "${CRI_PIDNS:-CONTAINER}", "ipc": "POD"}}}}
EOF
}

cri_count() {
	local out
	out=$(cri "$1" -t 20 exec -s --timeout 10 "$2" cat /data/status 2>/dev/null) || { echo 0; return; }
	case $out in *" ok "*) echo "${out%% *}" ;; *) echo "0 $out" ;; esac
}

# the counter's status line over TCP, from a network namespace that reaches ADDR
cri_tcp_status() {
	local n=$1 addr=$2
	cri_in "$n" "$CRI_PY" -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 8080), 2)
s.settimeout(2)
print(s.recv(200).decode().strip())' "$addr" 2>/dev/null
}

cri_pod_ip() {
	cri "$1" inspectp "$2" | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["status"]["network"]["ip"])'
}

cri_ctr_state() {
	cri "$1" inspect "$2" | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["status"]["state"])'
}

cri_wait_count() {
	local n=$1 cid=$2 above=$3 c i
	for i in $(seq 50); do
		c=$(cri_count "$n" "$cid")
		case $c in *" "*) ;; *) [ "$c" -gt "$above" ] && return 0 ;; esac
		sleep 0.2
	done
	return 1
}

cri_counter() {
	local n=$1 pod=$2 h=$3
	CRI_POD=$(cri_pod "$n" "$pod" "$h") || fail "RunPodSandbox ($h) on $n failed"
	cri_ctr_config "$n" "$pod" counter "$CRI_REG/cryo/counter:1"
	CRI_CID=$(cri "$n" create --with-pull "$CRI_POD" "$T/$n-$pod-counter.json" "$T/$n-$pod.pod.json") ||
		fail "CreateContainer ($h) on $n failed"
	cri "$n" start "$CRI_CID" >/dev/null || fail "StartContainer ($h) on $n failed: $(tail -3 "$T/$n/failed-calls.log" 2>/dev/null)"
	cri_wait_count "$n" "$CRI_CID" 0 || fail "the counter ($h) does not count: $(cri_count "$n" "$CRI_CID")"
	CRI_IP=$(cri_pod_ip "$n" "$CRI_POD")
}

cri_restore() {
	local n=$1 pod=$2 h=$3 image=$4
	CRI_POD=$(cri_pod "$n" "$pod" "$h") || fail "RunPodSandbox ($h) on $n failed"
	cri_ctr_config "$n" "$pod" counter "$image"
	CRI_CID=$(cri "$n" create "$CRI_POD" "$T/$n-$pod-counter.json" "$T/$n-$pod.pod.json") ||
		fail "CreateContainer ($h) from $image on $n failed"
	cri "$n" start "$CRI_CID" >/dev/null ||
		fail "StartContainer ($h) of the restored container on $n failed: $(tail -3 "$T/$n/failed-calls.log" 2>/dev/null)"
}

cri_archive_json() { printf '%s' "$1" | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["items"][0])'; }

cri_one_node() {
	cri_need
	cri_need_criu
	cri_node a 1
	cri_images
}
