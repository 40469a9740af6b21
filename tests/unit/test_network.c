// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "network.h"
#include "util.h"

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

	assert_int_equal(cryo_network_parse_string(value, &spec, &err), -EINVAL);
	assert_non_null(err.msg);
	if (strcmp(err.msg, msg) != 0)
		fail_msg("for %s\n got: %s\nwant: %s", value, err.msg, msg);
	assert_false(spec.present);
	cryo_error_clear(&err);
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

/* ---- on the real kernel, in network namespaces of our own ---- */

static char ns_a[64], ns_b[64], ns_c[64], hostif[16], hostif2[16];
static pid_t holder_b = -1, holder_c = -1;

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

static int enter(const char *ns)
{
	char path[128];
	int fd, r;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = setns(fd, CLONE_NEWNET);
	close(fd);
	return r;
}

/* A process that just sits in netns ns, like a container init would. */
static pid_t hold(const char *ns)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (enter(ns) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	/* wait until it has switched */
	for (int i = 0; i < 500; i++) {
		char a[64], b[128];
		ssize_t n;

		snprintf(a, sizeof(a), "/proc/%d/ns/net", pid);
		n = readlink(a, b, sizeof(b) - 1);
		if (n > 0) {
			char self[128];
			ssize_t m = readlink("/proc/self/ns/net", self, sizeof(self) - 1);

			if (m > 0 && (n != m || memcmp(b, self, (size_t)n) != 0))
				break;
		}
		usleep(10000);
	}
	return pid;
}

struct call {
	const char *value;
	pid_t pid;
	bool teardown;
	int want;
	const char *want_msg;
};

/* Run apply/teardown from a child that sits in netns A: A plays the host. */
static int run_in_a(struct call *c)
{
	pid_t pid = fork();
	int st;

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
		r = c->teardown ? cryo_network_teardown(&spec, &err)
				: cryo_network_apply(&spec, c->pid ? c->pid : getpid(), &err);
		if (r != c->want) {
			fprintf(stderr, "got %d (%s), want %d\n", r, err.msg ? err.msg : "", c->want);
			_exit(92);
		}
		if (c->want_msg && (!err.msg || !strstr(err.msg, c->want_msg))) {
			fprintf(stderr, "message: %s\nwant: %s\n", err.msg ? err.msg : "(none)", c->want_msg);
			_exit(93);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int setup_netns(void **state)
{
	snprintf(ns_a, sizeof(ns_a), "cryo-spec-a-%d", getpid());
	snprintf(ns_b, sizeof(ns_b), "cryo-spec-b-%d", getpid());
	snprintf(ns_c, sizeof(ns_c), "cryo-spec-c-%d", getpid());
	snprintf(hostif, sizeof(hostif), "cspec%d", getpid() % 1000000);
	snprintf(hostif2, sizeof(hostif2), "cspecx%d", getpid() % 1000000);
	return 0;
}

static int teardown_netns(void **state)
{
	if (holder_b > 0) {
		kill(holder_b, SIGKILL);
		waitpid(holder_b, NULL, 0);
	}
	if (holder_c > 0) {
		kill(holder_c, SIGKILL);
		waitpid(holder_c, NULL, 0);
	}
	/* deleting the namespaces takes the veth pairs with them */
	(void)sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ns_a,
		 ns_b, ns_c);
	return 0;
}

static void test_veth(void **state)
{
	char value[160];
	struct call c = { 0 };

	if (geteuid() != 0 || sh("command -v ip >/dev/null && command -v ping >/dev/null") < 0)
		skip();
	if (sh("ip netns add %s && ip netns add %s && ip netns add %s", ns_a, ns_b, ns_c) < 0)
		skip();
	holder_b = hold(ns_b);
	holder_c = hold(ns_c);

	/* the "runtime" in A wires up the "container" in B */
	snprintf(value, sizeof(value), "veth:%s:10.88.0.2/24:gw=10.88.0.1:host=10.88.0.1/24:mtu=1400", hostif);
	c = (struct call){ .value = value, .pid = holder_b, .want = 0 };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh("ip -n %s -4 -o addr show dev eth0 | grep -q 'inet 10.88.0.2/24'", ns_b), 0);
	assert_int_equal(sh("ip -n %s route show default | grep -q '^default via 10.88.0.1 dev eth0'", ns_b), 0);
	assert_int_equal(sh("ip -n %s link show eth0 | grep -q 'mtu 1400'", ns_b), 0);
	assert_int_equal(sh("ip -n %s link show lo | grep -q 'UP'", ns_b), 0);
	assert_int_equal(sh("ip -n %s -4 -o addr show dev %s | grep -q 'inet 10.88.0.1/24'", ns_a, hostif), 0);
	/* the end isn't in the host's (or the test's) netns */
	assert_int_equal(sh("ip link show %s >/dev/null 2>&1", hostif), -1);
	assert_int_equal(sh("ip netns exec %s ping -c 1 -W 1 10.88.0.2 >/dev/null", ns_a), 0);
	/* through the default route: an address A has only on its loopback */
	assert_int_equal(sh("ip -n %s link set lo up && ip -n %s addr add 192.0.2.1/32 dev lo", ns_a, ns_a), 0);
	assert_int_equal(sh("ip netns exec %s ping -c 1 -W 1 192.0.2.1 >/dev/null", ns_b), 0);

	/* the same host name again: refused, the first pair untouched */
	c.pid = holder_c;
	c.want = -EEXIST;
	c.want_msg = "network: create veth pair `";
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh("ip netns exec %s ping -c 1 -W 1 10.88.0.2 >/dev/null", ns_a), 0);

	/* a failure inside the container's netns unwinds the pair on both sides */
	snprintf(value, sizeof(value), "veth:%s:10.89.0.2/24:gw=10.99.0.1", hostif2);
	c = (struct call){ .value = value, .pid = holder_c, .want = -EIO,
			   .want_msg = "network: in the container's netns: add default route via the gateway on `eth0`" };
	if (run_in_a(&c) != 0) {
		/* kernels differ in the errno for an unreachable gateway; the unwind is what matters */
		c.want = -ENETUNREACH;
		c.want_msg = "network: in the container's netns:";
		assert_int_equal(run_in_a(&c), 0);
	}
	assert_int_equal(sh("ip -n %s link show %s >/dev/null 2>&1", ns_a, hostif2), -1);
	assert_int_equal(sh("ip -n %s link show eth0 >/dev/null 2>&1", ns_c), -1);

	/* the container in the runtime's own netns is refused */
	c = (struct call){ .value = value, .pid = 0, .want = -EINVAL,
			   .want_msg = "network: the container shares the runtime's network namespace" };
	assert_int_equal(run_in_a(&c), 0);

	/* teardown: gone on both sides; twice is fine; never a non-veth */
	snprintf(value, sizeof(value), "veth:%s:10.88.0.2/24", hostif);
	c = (struct call){ .value = value, .teardown = true, .want = 0 };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh("ip -n %s link show %s >/dev/null 2>&1", ns_a, hostif), -1);
	assert_int_equal(sh("ip -n %s link show eth0 >/dev/null 2>&1", ns_b), -1);
	assert_int_equal(run_in_a(&c), 0);
	c = (struct call){ .value = "veth:lo:10.88.0.2/24", .teardown = true, .want = -EINVAL,
			   .want_msg = "network teardown: `lo` is not a veth, refusing to delete it" };
	assert_int_equal(run_in_a(&c), 0);
	assert_int_equal(sh("ip -n %s link show lo >/dev/null", ns_a), 0);
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
