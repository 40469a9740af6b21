// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "features.h"
#include "kmod.h"
#include "step.h"
#include "version.h"

static struct json_object *string_array(const char *const *v, size_t n)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

static bool path_exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

int cryo_features_json(struct json_object **ret, struct cryo_error *err)
{
	static const char *const hooks[] = {
		"prestart", "createRuntime", "createContainer",
		"startContainer", "poststart", "poststop",
	};
	static const char *const namespaces[] = {
		"cgroup", "ipc", "mount", "network", "pid", "user", "uts",
	};
	struct json_object *o = json_object_new_object();
	struct json_object *cryo = json_object_new_object();
	struct json_object *freezer = json_object_new_object();

	if (!o || !cryo || !freezer) {
		json_object_put(o);
		json_object_put(cryo);
		json_object_put(freezer);
		return cryo_error_set(err, ENOMEM, "features");
	}

	json_object_object_add(o, "ociVersionMin", json_object_new_string("1.0.0"));
	json_object_object_add(o, "ociVersionMax", json_object_new_string(CRYO_OCI_VERSION));
	json_object_object_add(o, "hooks", string_array(hooks, sizeof(hooks) / sizeof(hooks[0])));
	json_object_object_add(o, "linux", json_object_new_object());
	json_object_object_add(json_object_object_get(o, "linux"), "namespaces",
			       string_array(namespaces, sizeof(namespaces) / sizeof(namespaces[0])));

	json_object_object_add(cryo, "version", json_object_new_string(CRYO_VERSION));
	json_object_object_add(freezer, "cgroupV1",
			       json_object_new_boolean(path_exists("/sys/fs/cgroup/freezer/freezer.state") ||
						       path_exists("/sys/fs/cgroup/freezer/tasks")));
	json_object_object_add(freezer, "cgroupV2",
			       json_object_new_boolean(path_exists("/sys/fs/cgroup/unified/cgroup.controllers") ||
						       path_exists("/sys/fs/cgroup/cgroup.controllers")));
	json_object_object_add(freezer, "kmod", json_object_new_boolean(path_exists("/dev/cryo_freezer")));
	/* which backend holds filesystem freezes (see fsfreeze.h) */
	json_object_object_add(freezer, "fsfreezeBackend",
			       json_object_new_string(cryo_kmod_available() ? "kmod" : "watchdog"));
	/* and held cgroup freezes: detached kmod holds, or the hold watchdog (hold.h) */
	json_object_object_add(freezer, "cgroupHoldBackend",
			       json_object_new_string(cryo_kmod_available() ? "kmod" : "watchdog"));
	json_object_object_add(cryo, "freezer", freezer);
	/* the step tables (step.h): names for CRYO_FAULT=<table>:<step>, in order */
	{
		struct json_object *steps = json_object_new_object();
		size_t i, j;

		for (i = 0; cryo_step_tables[i]; i++) {
			struct json_object *a = json_object_new_array();

			for (j = 0; j < cryo_step_tables[i]->n_steps; j++)
				json_object_array_add(a, json_object_new_string(cryo_step_tables[i]->steps[j].name));
			json_object_object_add(steps, cryo_step_tables[i]->name, a);
		}
		json_object_object_add(cryo, "steps", steps);
	}
	json_object_object_add(o, "org.cryo", cryo);

	*ret = o;
	return 0;
}
