// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cgtarget.h"
#include "cli.h"
#include "util.h"


/* FNV-1a: a stable journal name for a cgroup path */
static uint64_t hash_path(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int open_target(struct cgtarget *t, const char *root, const char *id, const char *cgroup, bool lock,
		       struct cryo_error *err)
{
	int r;

	*t = (struct cgtarget){ .lock_fd = -1 };
	if (cgroup) {
		snprintf(t->hold_name, sizeof(t->hold_name), "cgroup-%016llx", (unsigned long long)hash_path(cgroup));
		snprintf(t->what, sizeof(t->what), "cgroup `%s`", cgroup);
		return cryo_freezer_open_path(cgroup, &t->f, err);
	}
	r = cryo_validate_id(id, err);
	if (r < 0)
		return r;
	snprintf(t->hold_name, sizeof(t->hold_name), "%s", id);
	snprintf(t->what, sizeof(t->what), "container `%s`", id);
	r = lock ? cryo_state_lock(root, id, CRYO_STATE_LOCK_TIMEOUT_MS, &t->lock_fd, err) : 0;
	if (r < 0)
		return r;
	r = cryo_state_load(root, id, &t->st, err);
	if (r < 0)
		goto fail;
	cryo_state_refresh(t->st);
	/* a stopped container's cgroup may be gone: say what is wrong */
	if (t->st->status == CRYO_STATUS_STOPPED || t->st->status == CRYO_STATUS_CREATING) {
		r = cryo_error_setx(err, EINVAL, "container `%s` is %s, not running", id, cryo_status_names[t->st->status]);
		goto fail;
	}
	r = cryo_freezer_open_for(t->st->freezer_backend, t->st->cgroup_v2, t->st->cgroup_v1_freezer, &t->f, err);
	if (r < 0) {
		cryo_error_prefix(err, "container `%s`", id);
		goto fail;
	}
	return 0;
fail:
	cgtarget_close(t);
	return r;
}

int cgtarget_open(struct cgtarget *t, const char *root, const char *id, const char *cgroup, struct cryo_error *err)
{
	return open_target(t, root, id, cgroup, true, err);
}

int cgtarget_open_query(struct cgtarget *t, const char *root, const char *id, const char *cgroup,
			struct cryo_error *err)
{
	return open_target(t, root, id, cgroup, false, err);
}

int cgtarget_opt(const char *name, int c, const char *arg, uint64_t *timeout, const char **cgroup)
{
	switch (c) {
	case 't':
		if (cryo_parse_u64(arg, 24ULL * 3600 * 1000, timeout) < 0)
			return cli_usage_error(name, "--timeout wants milliseconds, not `%s`", arg);
		return CLI_GO_ON;
	case 'c':
		*cgroup = arg;
		return CLI_GO_ON;
	default:
		return cli_usage_error(name, "unknown option");
	}
}

int cgtarget_parse(const struct cgtarget_cmd *cmd, int argc, char **argv, uint64_t *timeout, const char **cgroup,
		   const char **ret_id)
{
	int c, r;

	while ((c = cli_getopt(argc, argv, "h", cmd->opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			cmd->usage(cmd->name, stdout);
			return 0;
		case 't':
		case 'c':
			r = cgtarget_opt(cmd->name, c, optarg, timeout, cgroup);
			break;
		default:
			r = cmd->opt ? cmd->opt(cmd->name, c, optarg, cmd->userdata) : cli_usage_error(cmd->name, "unknown option");
			break;
		}
		if (r != CLI_GO_ON)
			return r;
	}
	r = cgtarget_operands(cmd->name, cmd->plain, cmd->oci, argc, argv, *cgroup, ret_id);
	return r ? r : CLI_GO_ON;
}

int cgtarget_operands(const char *name, const char *plain, bool oci, int argc, char **argv, const char *cgroup,
		      const char **ret_id)
{
	const char *id = NULL;

	if (optind < argc)
		id = argv[optind++];
	if (optind < argc)
		return cli_usage_error(name, "unexpected argument `%s`", argv[optind]);
	if (!!id == !!cgroup)
		return cli_usage_error(name, "give a container ID or --cgroup PATH (exactly one)");
	if (oci && cgroup)
		return cli_usage_error(name, "works on containers; use `cryo %s --cgroup`", plain);
	*ret_id = id;
	return 0;
}

int cgtarget_open_live(struct cgtarget *t, const char *root, const char *id, const char *cgroup, const char *state,
		       struct cryo_error *err)
{
	int r;

	r = cgtarget_open(t, root, id, cgroup, err);
	if (r < 0)
		return r;
	if (t->st && t->st->status != CRYO_STATUS_RUNNING && t->st->status != CRYO_STATUS_PAUSED) {
		r = cryo_error_setx(err, EINVAL, "container `%s` is %s, not %s", id, cryo_status_names[t->st->status],
				    state);
		cgtarget_close(t);
		return r;
	}
	return 0;
}

int cgtarget_set_status(struct cgtarget *t, const char *root, enum cryo_status status, struct cryo_error *err)
{
	if (!t->st)
		return 0;
	t->st->status = status;
	return cryo_state_save(root, t->st, err);
}

void cgtarget_close(struct cgtarget *t)
{
	cryo_freezer_close(t->f);
	t->f = NULL;
	cryo_state_free(t->st);
	t->st = NULL;
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	t->lock_fd = -1;
}

int cgtarget_fail(int r, struct cryo_error *err)
{
	cli_fail(err);
	return r == -EBUSY ? CLI_EXIT_BUSY : 1;
}
