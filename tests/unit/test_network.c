// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "network.h"
#include "util.h"
#include "testlib.h"

static void test_parse_valid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_network_spec spec;
	struct json_object *ann;
	char buf[INET_ADDRSTRLEN];

	assert_int_equal(cryo_network_parse_string("veth:cryo0:10.88.0.2/24:gw=10.88.0.1:host=10.88.0.1/24:name=net0:mtu=1400",
						   &spec, &err),
			 0);
	assert_true(spec.present);
	assert_string_equal(spec.host_ifname, "cryo0");
	assert_string_equal(spec.ifname, "net0");
	assert_string_equal(inet_ntop(AF_INET, &spec.addr, buf, sizeof(buf)), "10.88.0.2");
	assert_int_equal(spec.prefix, 24);
	assert_true(spec.has_gw);
	assert_string_equal(inet_ntop(AF_INET, &spec.gw, buf, sizeof(buf)), "10.88.0.1");
	assert_true(spec.has_host_addr);
	assert_int_equal(spec.host_prefix, 24);
	assert_int_equal(spec.mtu, 1400);

	assert_int_equal(cryo_network_parse_string("veth:v0:192.168.7.9/32", &spec, &err), 0);
	assert_string_equal(spec.ifname, "eth0");
	assert_false(spec.has_gw);
	assert_false(spec.has_host_addr);
	assert_int_equal(spec.mtu, 0);

	ann = json_tokener_parse("{\"other\": \"x\"}");
	assert_int_equal(cryo_network_parse(ann, &spec, &err), 0);
	assert_false(spec.present);
	json_object_put(ann);
	ann = json_tokener_parse("{\"org.cryo.network\": \"veth:h1:10.0.0.2/8\"}");
	assert_int_equal(cryo_network_parse(ann, &spec, &err), 0);
	assert_true(spec.present);
	assert_string_equal(spec.host_ifname, "h1");
	json_object_put(ann);
	assert_int_equal(cryo_network_parse(NULL, &spec, &err), 0);
	assert_false(spec.present);
}

static void expect_error(const char *value, const char *msg)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_network_spec spec;

	tl_expect_error(value, cryo_network_parse_string(value, &spec, &err), -EINVAL, &err, msg);
	assert_false(spec.present);
}

#define A "annotation org.cryo.network: "

static void test_parse_invalid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_network_spec spec;
	struct json_object *ann;

	expect_error("bridge:br0:10.0.0.2/24", A "unknown kind `bridge` (expected veth:HOSTIF:ADDR/PREFIX[:gw=A][:host=A/P][:name=IF][:mtu=N])");
	expect_error("veth", A "`veth` is not veth:HOSTIF:ADDR/PREFIX[:key=value...]");
	expect_error("veth:cryo0", A "`veth:cryo0` is not veth:HOSTIF:ADDR/PREFIX[:key=value...]");
	expect_error("veth::10.0.0.2/24", A "invalid host interface name ``");
	expect_error("veth:averyveryverylongname:10.0.0.2/24", A "invalid host interface name `averyveryverylongname`");
	expect_error("veth:a b:10.0.0.2/24", A "invalid host interface name `a b`");
	expect_error("veth:c0:10.0.0.2", A "container address `10.0.0.2` is not ADDRESS/PREFIX");
	expect_error("veth:c0:10.0.0.300/24", A "container address `10.0.0.300/24` is not an IPv4 address");
	expect_error("veth:c0:10.0.0.2/33", A "container address `10.0.0.2/33` needs a prefix length 1..32");
	expect_error("veth:c0:10.0.0.2/0", A "container address `10.0.0.2/0` needs a prefix length 1..32");
	expect_error("veth:c0:10.0.0.2/24:gw=nope", A "gw `nope` is not an IPv4 address");
	expect_error("veth:c0:10.0.0.2/24:gw=10.0.0.1:gw=10.0.0.3", A "option `gw` given twice");
	expect_error("veth:c0:10.0.0.2/24:gw=10.0.1.1", A "gw 10.0.1.1 is not another address on the container's /24 subnet");
	expect_error("veth:c0:10.0.0.2/24:gw=10.0.0.2", A "gw 10.0.0.2 is not another address on the container's /24 subnet");
	expect_error("veth:c0:10.0.0.2/24:host=10.0.0.1", A "host address `10.0.0.1` is not ADDRESS/PREFIX");
	expect_error("veth:c0:10.0.0.2/24:mtu=20", A "mtu `20` is not in 68..65535");
	expect_error("veth:c0:10.0.0.2/24:name=../x", A "invalid interface name `../x`");
	expect_error("veth:c0:10.0.0.2/24:vlan=3", A "unknown option `vlan` (known: gw, host, name, mtu)");
	expect_error("veth:c0:10.0.0.2/24:gw", A "option `gw` is not KEY=VALUE");

	ann = json_tokener_parse("{\"org.cryo.network\": 5}");
	assert_int_equal(cryo_network_parse(ann, &spec, &err), -EINVAL);
	assert_string_equal(err.msg, "annotation org.cryo.network: must be a string");
	cryo_error_clear(&err);
	json_object_put(ann);
}

/*
 * ---- on the real kernel, in network namespaces of our own ----
 * Each namespace is held by a child that unshare()d it: no `ip netns add`,
 * whose /run/netns bind mount would outlive the test.
 */

static pid_t ns_a = -1, ns_b = -1, ns_c = -1;
static char hostif[16], hostif2[16];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char *cmd = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	assert_true(r > 0);
	r = system(cmd);
	free(cmd);
	return r == 0 ? 0 : -1;
}

/* "nsenter --net=/proc/PID/ns/net": run a command inside holder pid's netns */
#define IN "nsenter --net=/proc/%d/ns/net "

static int enter(pid_t holder)
{
	char path[64];
	int fd, r;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", holder);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = setns(fd, CLONE_NEWNET);
	close(fd);
	return r;
}

/* A process that sits in a new netns, like a container init would. */
static pid_t hold(void)
{
	int p[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

struct call {
	const char *value;
	pid_t pid;          /* apply: the container; teardown: whose netns to look in (0: none) */
	bool teardown;
	bool undo;          /* apply, then undo what it made */
	int want;
	const char *want_msg;
};

/* Run apply/teardown from a child that sits in netns A: A plays the host. */
static int run_in_a(struct call *c)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct cryo_error err = CRYO_ERROR_INIT;
		struct cryo_network_spec spec;
		int r;

		if (enter(ns_a) < 0)
			_exit(90);
		if (cryo_network_parse_string(c->value, &spec, &err) < 0) {
			fprintf(stderr, "parse: %s\n", err.msg);
			_exit(91);
		}
		if (c->teardown) {
			char path[64];
			int fd = -1;

			snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)c->pid);
			if (c->pid > 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
				_exit(94);
			r = cryo_network_teardown(&spec, fd, &err);
		} else {
			struct cryo_network_link link = { .host_ifindex = -1 };

			r = cryo_network_apply(&spec, c->pid ? c->pid : getpid(), &link, &err);
			/* a failed apply made nothing: its undo must touch nothing */
			if (r < 0 && link.host_ifindex != 0)
				_exit(95);
			if ((c->undo || r < 0) && cryo_network_undo(&link, &err) < 0)
				_exit(96);
		}
		if (r != c->want) {
			fprintf(stderr, "got %d (%s), want %d\n", r, err.msg ? err.msg : "", c->want);
			_exit(92);
		}
		if (c->want_msg && (!err.msg || !strstr(err.msg, c->want_msg))) {
			fprintf(stderr, "message: %s\nwant: %s\n", err.msg ? err.msg : "(none)", c->want_msg);
			_exit(93);
		}
		cryo_error_clear(&err);
		_exit(0);
	}
	return tl_wait(pid);
}

static int setup_netns(void **state)
{
	snprintf(hostif, sizeof(hostif), "cspec%d", getpid() % 1000000);
	snprintf(hostif2, sizeof(hostif2), "cspecx%d", getpid() % 1000000);
	return 0;
}

static void unhold(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

/* the last holder gone, the kernel destroys the netns and the veths in it */
static int teardown_netns(void **state)
{
	unhold(&ns_a);
	unhold(&ns_b);
	unhold(&ns_c);
	return 0;
}

static void test_veth(void **state)
{
	char value[160];
	struct call c = { 0 };

	if (geteuid() != 0 || sh("command -v ip >/dev/null && command -v ping >/dev/null && command -v nsenter >/dev/null") < 0)
		skip();
	ns_a = hold();
	ns_b = hold();
	ns_c = hold();

	/* the "runtime" in A wires up the "container" in B */
	snprintf(value, sizeof(value), "veth:%s:10.88.0.2/24:gw=10.88.0.1:host=10.88.0.1/24:mtu=1400", hostif);
	c = (struct call){ .value = value, .pid = ns_b, .want = 0 };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh(IN "ip -4 -o addr show dev eth0 | grep -q 'inet 10.88.0.2/24'", ns_b), 0);
	assert_int_equal(sh(IN "ip route show default | grep -q '^default via 10.88.0.1 dev eth0'", ns_b), 0);
	assert_int_equal(sh(IN "ip link show eth0 | grep -q 'mtu 1400'", ns_b), 0);
	assert_int_equal(sh(IN "ip link show lo | grep -q 'UP'", ns_b), 0);
	assert_int_equal(sh(IN "ip -4 -o addr show dev %s | grep -q 'inet 10.88.0.1/24'", ns_a, hostif), 0);
	/* the end isn't in the host's (or the test's) netns */
	assert_int_equal(sh("ip link show %s >/dev/null 2>&1", hostif), -1);
	assert_int_equal(sh(IN "ping -c 1 -W 1 10.88.0.2 >/dev/null", ns_a), 0);
	/* through the default route: an address A has only on its loopback */
	assert_int_equal(sh(IN "ip link set lo up && " IN "ip addr add 192.0.2.1/32 dev lo", ns_a, ns_a), 0);
	assert_int_equal(sh(IN "ping -c 1 -W 1 192.0.2.1 >/dev/null", ns_b), 0);

	/* the same host name again: refused, the first pair untouched */
	c.pid = ns_c;
	c.want = -EEXIST;
	c.want_msg = "network: create veth pair `";
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh(IN "ping -c 1 -W 1 10.88.0.2 >/dev/null", ns_a), 0);

	/* a failure inside the container's netns unwinds the pair on both sides */
	snprintf(value, sizeof(value), "veth:%s:10.89.0.2/24:gw=10.89.0.1", hostif2);
	c = (struct call){ .value = value, .pid = ns_c, .want = -EIO,
			   .want_msg = "network: in the container's netns: fault injected at network-inside" };
	setenv("CRYO_FAULT", "network-inside", 1);
	assert_int_equal(run_in_a(&c), 0);
	unsetenv("CRYO_FAULT");
	assert_int_equal(sh(IN "ip link show %s >/dev/null 2>&1", ns_a, hostif2), -1);
	assert_int_equal(sh(IN "ip link show eth0 >/dev/null 2>&1", ns_c), -1);

	/* the container in the runtime's own netns is refused */
	c = (struct call){ .value = value, .pid = 0, .want = -EINVAL,
			   .want_msg = "network: the container shares the runtime's network namespace" };
	assert_int_equal(run_in_a(&c), 0);

	/* undo of an apply: by what it made */
	snprintf(value, sizeof(value), "veth:%s:10.89.0.2/24", hostif2);
	c = (struct call){ .value = value, .pid = ns_c, .undo = true, .want = 0 };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh(IN "ip link show %s >/dev/null 2>&1", ns_a, hostif2), -1);
	assert_int_equal(sh(IN "ip link show eth0 >/dev/null 2>&1", ns_c), -1);

	/* teardown of a netns without our end (C's, after its create failed): B's pair untouched */
	snprintf(value, sizeof(value), "veth:%s:10.88.0.2/24", hostif);
	c = (struct call){ .value = value, .pid = ns_c, .teardown = true, .want = 0 };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh(IN "ping -c 1 -W 1 10.88.0.2 >/dev/null", ns_a), 0);
	/* nor with no netns at all */
	c.pid = 0;
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh(IN "ip link show %s >/dev/null 2>&1", ns_a, hostif), 0);

	/* an interface that is not a veth names no peer: nothing is deleted */
	c = (struct call){ .value = "veth:lo:10.88.0.2/24:name=lo", .pid = ns_b, .teardown = true, .want = 0 };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh(IN "ip link show lo >/dev/null", ns_a), 0);
	assert_int_equal(sh(IN "ip link show %s >/dev/null 2>&1", ns_a, hostif), 0);

	/* teardown through B's netns: gone on both sides; twice is fine */
	c = (struct call){ .value = value, .pid = ns_b, .teardown = true, .want = 0 };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh(IN "ip link show %s >/dev/null 2>&1", ns_a, hostif), -1);
	assert_int_equal(sh(IN "ip link show eth0 >/dev/null 2>&1", ns_b), -1);
	assert_int_equal(run_in_a(&c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test_setup_teardown(test_veth, setup_netns, teardown_netns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
