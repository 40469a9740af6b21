// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "spec.h"
#include "testlib.h"

static struct cryo_spec *parse_ok(const char *text)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *s = NULL;

	if (cryo_spec_parse(text, strlen(text), &s, &err) < 0)
		fail_msg("parse failed: %s", err.msg);
	return s;
}

static void expect_error(const char *text, const char *want)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *s = NULL;

	assert_int_equal(cryo_spec_parse(text, strlen(text), &s, &err), -EINVAL);
	assert_null(s);
	if (!strstr(err.msg, want))
		fail_msg("error `%s` does not contain `%s`", err.msg, want);
	cryo_error_clear(&err);
}

static void test_default_spec(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *s;
	char *text = NULL;
	size_t i;

	assert_int_equal(cryo_spec_default_json(false, &text, &err), 0);
	s = parse_ok(text);
	assert_string_equal(s->oci_version, "1.0.2");
	assert_string_equal(s->root_path, "rootfs");
	assert_true(s->root_readonly);
	assert_int_equal(s->n_args, 1);
	assert_string_equal(s->args[0], "sh");
	assert_null(s->args[1]);
	assert_string_equal(s->cwd, "/");
	assert_true(s->no_new_privileges);
	assert_true(s->caps.present);
	assert_int_equal(s->rlimits.n, 1);
	assert_string_equal(s->hostname, "cryo");
	assert_true(s->n_mounts >= 5);
	assert_string_equal(s->mounts[0].destination, "/proc");
	for (i = 0; i < s->n_mounts; i++) {
		if (strcmp(s->mounts[i].destination, "/dev/pts") == 0) {
			assert_true(s->mounts[i].flags & MS_NOSUID);
			assert_true(s->mounts[i].flags & MS_NOEXEC);
			assert_string_equal(s->mounts[i].data, "newinstance,ptmxmode=0666,mode=0620,gid=5");
		}
	}
	assert_true(s->namespaces[CRYO_NS_PID].enabled);
	assert_true(s->namespaces[CRYO_NS_MOUNT].enabled);
	assert_false(s->namespaces[CRYO_NS_USER].enabled);
	assert_int_equal(s->n_masked_paths, 10);
	cryo_spec_free(s);
	free(text);

	/* the rootless variant has a user namespace with mappings */
	assert_int_equal(cryo_spec_default_json(true, &text, &err), 0);
	s = parse_ok(text);
	assert_true(s->namespaces[CRYO_NS_USER].enabled);
	assert_int_equal(s->n_uid_mappings, 1);
	assert_int_equal(s->uid_mappings[0].size, 1);
	cryo_spec_free(s);
	free(text);
}

#define MIN_HEAD "{\"ociVersion\": \"1.0.0\", \"root\": {\"path\": \"r\"}, "
#define MIN_PROC "\"process\": {\"args\": [\"a\"], \"cwd\": \"/\"}"

static void test_fields(void **state)
{
	struct cryo_spec *s = parse_ok(MIN_HEAD MIN_PROC ", \"unknownField\": {\"x\": 1},"
		"\"mounts\": [{\"destination\": \"/b\", \"source\": \"/src\", \"options\": [\"rbind\", \"ro\", \"rslave\", \"size=1\"]}],"
		"\"annotations\": {\"org.cryo.freezer\": \"v1\"},"
		"\"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"/proc/1/ns/net\"}, {\"type\": \"mount\"}],"
		" \"resources\": {\"memory\": {\"limit\": 1048576}, \"cpu\": {\"shares\": 100, \"quota\": 5000, \"period\": 10000},"
		"  \"pids\": {\"limit\": -1}},"
		" \"cgroupsPath\": \"/a/b\", \"sysctl\": {\"net.ipv4.ip_forward\": \"1\"},"
		" \"devices\": [{\"path\": \"/dev/fuse\", \"type\": \"c\", \"major\": 10, \"minor\": 229, \"fileMode\": 438}]}}");

	assert_true(s->mounts[0].bind && s->mounts[0].recursive_bind);
	assert_true(s->mounts[0].flags & MS_RDONLY);
	assert_int_equal(s->mounts[0].propagation, MS_SLAVE | MS_REC);
	assert_string_equal(s->mounts[0].data, "size=1");
	assert_string_equal(cryo_spec_annotation(s, "org.cryo.freezer"), "v1");
	assert_null(cryo_spec_annotation(s, "nope"));
	assert_string_equal(s->namespaces[CRYO_NS_NET].path, "/proc/1/ns/net");
	assert_true(s->resources.has_memory_limit);
	assert_int_equal(s->resources.memory_limit, 1048576);
	assert_int_equal(s->resources.cpu_shares, 100);
	assert_int_equal(s->resources.cpu_quota, 5000);
	assert_int_equal(s->resources.cpu_period, 10000);
	assert_int_equal(s->resources.pids_limit, -1);
	assert_string_equal(s->cgroups_path, "/a/b");
	assert_int_equal(s->n_sysctls, 1);
	assert_string_equal(s->sysctls[0].key, "net.ipv4.ip_forward");
	assert_int_equal(s->n_devices, 1);
	assert_int_equal(s->devices[0].file_mode, 0666);
	assert_int_equal(s->env[0] == NULL, 1);
	cryo_spec_free(s);
}

/* runc's recursive options: MOUNT_ATTR_* for the whole tree; the last of an atime mode wins */
static void test_mount_recursive_attrs(void **state)
{
	struct cryo_spec *s = parse_ok(MIN_HEAD MIN_PROC ", \"mounts\": ["
		"{\"destination\": \"/a\", \"source\": \"/s\", \"options\": [\"rbind\", \"rro\", \"rnosuid\", \"rexec\"]},"
		"{\"destination\": \"/b\", \"source\": \"/s\", \"options\": [\"rbind\", \"rro\", \"rrw\", \"rnoatime\", \"rrelatime\"]},"
		"{\"destination\": \"/c\", \"source\": \"/s\", \"options\": [\"bind\", \"ro\"]}]}");

	(void)state;
	assert_int_equal(s->mounts[0].attr_set, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID);
	assert_int_equal(s->mounts[0].attr_clr, MOUNT_ATTR_NOEXEC);
	assert_null(s->mounts[0].data);
	assert_int_equal(s->mounts[1].attr_set, MOUNT_ATTR_RELATIME);
	assert_int_equal(s->mounts[1].attr_clr, MOUNT_ATTR_RDONLY | MOUNT_ATTR__ATIME);
	assert_int_equal(s->mounts[2].attr_set | s->mounts[2].attr_clr, 0);
	assert_true(s->mounts[2].flags & MS_RDONLY);
	cryo_spec_free(s);
}

/* config.json of MIN_HEAD MIN_PROC whose linux.resources is {R} */
#define RESOURCES(r) MIN_HEAD MIN_PROC ", \"linux\": {\"resources\": {" r "}}}"

static void test_v1_resources(void **state)
{
	struct cryo_spec *s = parse_ok(MIN_HEAD MIN_PROC ", \"linux\": {\"resources\": {"
		"\"cpu\": {\"cpus\": \"0-1\", \"mems\": \"0\", \"realtimeRuntime\": 950000, \"realtimePeriod\": 1000000},"
		"\"memory\": {\"reservation\": 4096, \"kernel\": -1, \"kernelTCP\": 8192, \"swappiness\": 10,"
		" \"disableOOMKiller\": true},"
		"\"devices\": [{\"allow\": false, \"access\": \"rwm\"}, {\"allow\": true, \"type\": \"b\", \"major\": 8,"
		" \"access\": \"r\"}],"
		"\"blockIO\": {\"weight\": 500, \"weightDevice\": [{\"major\": 8, \"minor\": 0, \"leafWeight\": 20}],"
		" \"throttleWriteIOPSDevice\": [{\"major\": 7, \"minor\": 1, \"rate\": 300}]}},"
		" \"devices\": [{\"path\": \"/dev/fuse\", \"type\": \"c\", \"major\": 10, \"minor\": 229}]}}");
	const struct cryo_spec_resources *r = &s->resources;

	assert_string_equal(r->cpuset_cpus, "0-1");
	assert_string_equal(r->cpuset_mems, "0");
	assert_true(r->has_cpu_rt_runtime && r->cpu_rt_runtime == 950000);
	assert_true(r->has_cpu_rt_period && r->cpu_rt_period == 1000000);
	assert_true(r->has_memory_reservation && r->memory_reservation == 4096);
	assert_true(r->has_memory_kernel && r->memory_kernel == -1);
	assert_true(r->has_memory_kernel_tcp && r->memory_kernel_tcp == 8192);
	assert_true(r->has_memory_swappiness && r->memory_swappiness == 10);
	assert_true(r->disable_oom_killer);
	/* the listed rules in order; a linux.devices node gets no rule of its own (runc's dev.bats) */
	assert_int_equal(r->n_dev_rules, 2);
	assert_true(!r->dev_rules[0].allow && r->dev_rules[0].type == 'a');
	assert_string_equal(r->dev_rules[0].access, "rwm");
	assert_true(r->dev_rules[1].allow && r->dev_rules[1].type == 'b' && r->dev_rules[1].major == 8);
	assert_int_equal(r->dev_rules[1].minor, -1);
	assert_string_equal(r->dev_rules[1].access, "r");
	assert_int_equal(r->blkio_weight, 500);
	assert_int_equal(r->blkio_leaf_weight, 0);
	assert_int_equal(r->n_blkio[CRYO_BLKIO_WEIGHT_DEVICE], 1);
	assert_int_equal(r->blkio[CRYO_BLKIO_WEIGHT_DEVICE][0].weight, 0);
	assert_int_equal(r->blkio[CRYO_BLKIO_WEIGHT_DEVICE][0].leaf_weight, 20);
	assert_int_equal(r->n_blkio[CRYO_BLKIO_THROTTLE_WRITE_IOPS], 1);
	assert_int_equal(r->blkio[CRYO_BLKIO_THROTTLE_WRITE_IOPS][0].major, 7);
	assert_int_equal(r->blkio[CRYO_BLKIO_THROTTLE_WRITE_IOPS][0].rate, 300);
	assert_int_equal(r->n_blkio[CRYO_BLKIO_THROTTLE_READ_BPS], 0);
	cryo_spec_free(s);

	s = parse_ok(RESOURCES("\"network\": {\"classID\": 1048577,"
			       " \"priorities\": [{\"name\": \"eth0\", \"priority\": 5}, {\"name\": \"lo\", \"priority\": 2}]}"));
	r = &s->resources;
	assert_true(r->has_net_classid && r->net_classid == 1048577);
	assert_int_equal(r->n_net_prios, 2);
	assert_string_equal(r->net_prios[0].name, "eth0");
	assert_int_equal(r->net_prios[0].priority, 5);
	assert_string_equal(r->net_prios[1].name, "lo");
	cryo_spec_free(s);

	s = parse_ok(RESOURCES("\"hugepageLimits\": [{\"pageSize\": \"2MB\", \"limit\": 4194304},"
			       " {\"pageSize\": \"1GB\", \"limit\": 0}]"));
	r = &s->resources;
	assert_int_equal(r->n_hugepages, 2);
	assert_string_equal(r->hugepages[0].page_size, "2MB");
	assert_int_equal(r->hugepages[0].limit, 4194304);
	assert_string_equal(r->hugepages[1].page_size, "1GB");
	cryo_spec_free(s);
}

static void test_v1_resources_bad(void **state)
{
	static const struct {
		const char *json, *want;
	} bad[] = {
		{ RESOURCES("\"memory\": {\"swappiness\": 101}"),
		  "linux.resources.memory.swappiness" },
		{ RESOURCES("\"devices\": [{\"type\": \"c\"}]"),
		  "linux.resources.devices[0]: needs allow" },
		{ RESOURCES("\"devices\": [{\"allow\": true, \"type\": \"p\"}]"),
		  "linux.resources.devices[0]: type must be a, c or b" },
		{ RESOURCES("\"devices\": [{\"allow\": true, \"access\": \"rwx\"}]"),
		  "access must be made of r, w and m" },
		{ RESOURCES("\"blockIO\": {\"weight\": 5}"),
		  "linux.resources.blockIO.weight" },
		{ RESOURCES("\"blockIO\": {\"throttleReadBpsDevice\": [{\"major\": 8}]}"),
		  "linux.resources.blockIO.throttleReadBpsDevice[0]: needs major, minor and rate" },
		{ RESOURCES("\"network\": {\"classID\": -1}"),
		  "linux.resources.network.classID" },
		/* an ifpriomap line is "name prio": a name with a blank would smuggle a second field */
		{ RESOURCES("\"network\": {\"priorities\": [{\"name\": \"eth0 9\", \"priority\": 1}]}"),
		  "linux.resources.network.priorities[0]: needs an interface name and a priority" },
		{ RESOURCES("\"network\": {\"priorities\": [{\"name\": \"averyveryverylongname\", \"priority\": 1}]}"),
		  "linux.resources.network.priorities[0]: longer than 15 bytes" },
		{ RESOURCES("\"network\": {\"priorities\": [{\"name\": \"lo\"}]}"),
		  "linux.resources.network.priorities[0]: needs an interface name and a priority" },
		/* the page size becomes part of a cgroup file name: nothing but a number and a unit */
		{ RESOURCES("\"hugepageLimits\": [{\"pageSize\": \"2MB/../../x\", \"limit\": 1}]"),
		  "linux.resources.hugepageLimits[0]: pageSize must be a number and KB, MB or GB" },
		{ RESOURCES("\"hugepageLimits\": [{\"pageSize\": \"2MB\"}]"),
		  "linux.resources.hugepageLimits[0]: needs pageSize and limit" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		expect_error(bad[i].json, bad[i].want);
}

static void test_errors(void **state)
{
	expect_error("", "config.json: invalid JSON");
	expect_error("{", "unexpected end of file");
	expect_error("{} x", "config.json: invalid JSON");
	expect_error("[]", "config.json: must be a JSON object");
	expect_error("{\"ociVersion\": \"2.0\"}", "ociVersion: `2.0` is not a runtime-spec 1.x version");
	expect_error("{\"ociVersion\": \"1.0\"}", "config.json: root: is required");
	expect_error(MIN_HEAD "\"process\": {\"args\": [], \"cwd\": \"/\"}}", "process.args: must be a non-empty array of strings");
	expect_error(MIN_HEAD "\"process\": {\"args\": [\"\"], \"cwd\": \"/\"}}", "process.args[0]: must not be empty");
	expect_error(MIN_HEAD "\"process\": {\"args\": [\"a\"]}}", "process.cwd: is required");
	expect_error(MIN_HEAD "\"process\": {\"args\": [\"a\"], \"cwd\": \"/\", \"user\": {\"uid\": 99999999999}}}",
		     "process.user.uid: 99999999999 is out of range");
	expect_error(MIN_HEAD "\"process\": {\"args\": [\"a\"], \"cwd\": \"/\", \"user\": {\"umask\": 4095}}}",
		     "process.user.umask: must be at most 0777");
	expect_error(MIN_HEAD MIN_PROC ", \"mounts\": {}}", "config.json: mounts: must be an array");
	expect_error(MIN_HEAD MIN_PROC ", \"mounts\": [{\"destination\": \"/x\", \"type\": \"tmpfs\", \"options\": [\"a,b\"]}]}",
		     "mounts[0].options[0]: `a,b` is not one option");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"pid\", \"path\": \"rel\"}]}}",
		     "linux.namespaces[0].path: must be an absolute path");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"user\"}]}}",
		     "a new user namespace needs uidMappings and gidMappings");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"resources\": {\"cpu\": {\"quota\": 10}}}}",
		     "linux.resources.cpu.quota: must be -1 or at least 1000");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"devices\": [{\"path\": \"/dev/x\", \"type\": \"c\"}]}}",
		     "major and minor are required");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"rootfsPropagation\": \"weird\"}}",
		     "linux.rootfsPropagation: unknown propagation `weird`");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"sysctl\": {\"../x\": \"1\"}}}", "is not a sysctl name");
	/* sysctls global to the host, or of a namespace the container does not have, never get written */
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"ipc\"}, {\"type\": \"network\"}],"
		     " \"sysctl\": {\"vm.swappiness\": \"1\"}}}",
		     "linux.sysctl: `vm.swappiness` is not in a namespace of the container: it would change the host");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"ipc\"}], \"sysctl\": {\"kernel/threads-max\": \"1\"}}}",
		     "`kernel/threads-max` is not in a namespace of the container");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"sysctl\": {\"kernel.shmmax\": \"1\"}}}",
		     "`kernel.shmmax` needs the container to have its own ipc namespace");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"ipc\"}], \"sysctl\": {\"net.ipv4.ip_forward\": \"1\"}}}",
		     "`net.ipv4.ip_forward` needs the container to have its own network namespace");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"uts\"}], \"sysctl\": {\"kernel.hostname\": \"x\"}}}",
		     "`kernel.hostname`: use the `hostname` field");
	expect_error(MIN_HEAD MIN_PROC ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_NOPE\"}}}",
		     "config.json: linux.seccomp");
	expect_error(MIN_HEAD MIN_PROC ", \"hooks\": {\"prestart\": [{\"path\": \"rel\"}]}}", "config.json: hooks");
	expect_error("{\"a\":" "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
		     "config.json: invalid JSON");
}

static void test_sysctl_namespaces(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *s;

	assert_int_equal(cryo_spec_sysctl_namespace("kernel.shmmax"), CRYO_NS_IPC);
	assert_int_equal(cryo_spec_sysctl_namespace("kernel/msgmnb"), CRYO_NS_IPC);
	assert_int_equal(cryo_spec_sysctl_namespace("fs.mqueue.msg_max"), CRYO_NS_IPC);
	assert_int_equal(cryo_spec_sysctl_namespace("net.ipv4.ip_forward"), CRYO_NS_NET);
	assert_int_equal(cryo_spec_sysctl_namespace("kernel.domainname"), CRYO_NS_UTS);
	assert_int_equal(cryo_spec_sysctl_namespace("user.max_user_namespaces"), CRYO_NS_USER);
	assert_int_equal(cryo_spec_sysctl_namespace("vm.swappiness"), -1);
	assert_int_equal(cryo_spec_sysctl_namespace("kernel.shmmaxx"), -1);
	assert_int_equal(cryo_spec_sysctl_namespace("fs.file-max"), -1);
	assert_int_equal(cryo_spec_sysctl_namespace("kernel.hostname"), -1);

	s = parse_ok(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"ipc\"}, {\"type\": \"network\"},"
		     " {\"type\": \"uts\"}], \"sysctl\": {\"fs.mqueue.msg_max\": \"20\", \"net.core.somaxconn\": \"64\","
		     " \"kernel.domainname\": \"d\"}}}");
	assert_int_equal(s->n_sysctls, 3);
	assert_int_equal(cryo_spec_check_sysctl_paths(s, &err), 0);
	cryo_spec_free(s);

	/* a joined namespace that is the runtime's own is the host's */
	s = parse_ok(MIN_HEAD MIN_PROC ", \"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"/proc/self/ns/net\"}],"
		     " \"sysctl\": {\"net.ipv4.ip_forward\": \"1\"}}}");
	assert_int_equal(cryo_spec_check_sysctl_paths(s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "is the runtime's own"));
	cryo_error_clear(&err);
	cryo_spec_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysctl_namespaces),
		cmocka_unit_test(test_default_spec),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_mount_recursive_attrs),
		cmocka_unit_test(test_v1_resources),
		cmocka_unit_test(test_v1_resources_bad),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
