// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "sealexe.h"
#include "util.h"
#include "cli.h"

extern char **environ;

#define MAX_REPEAT 1024 /* -e, --cap, -g each */
/*
 * exec's own failures (no such container, a command that can't be run,
 * a pid file that can't be written): 255, as runc, apart from any exit
 * status of the process, which is the command's result otherwise.
 */
#define EXEC_FAILED 255

static const char usage_text[] =
	"Usage: cryo exec [OPTIONS] ID [COMMAND [ARG...]]\n"
	"\n"
	"Run a new process in a running container: the container's process\n"
	"(config.json) with COMMAND and the changes below, or --process FILE.\n"
	"\n"
	"  -p, --process FILE        an OCI process JSON (the other process options are ignored)\n"
	"  -d, --detach              return once the process runs\n"
	"      --pid-file FILE       write the process's pid to FILE\n"
	"      --console-socket SOCK send the pty master to this unix socket (with -t)\n"
	"  -t, --tty                 give the process a terminal\n"
	"  -u, --user UID[:GID]      run as this user\n"
	"  -g, --additional-gids GID add a supplementary group (repeatable)\n"
	"      --cwd DIR             working directory in the container\n"
	"  -e, --env KEY=VALUE       set an environment variable (repeatable)\n"
	"  -c, --cap CAP             add a capability (repeatable)\n"
	"      --no-new-privs        set no_new_privs\n"
	"      --apparmor PROFILE    accepted (no AppArmor support)\n"
	"      --process-label LABEL accepted (no SELinux support)\n"
	"      --preserve-fds N      pass fds 3 .. 3+N-1 on to the process\n"
	"      --ignore-paused       in a paused container: start once it is resumed\n"
	"      --cgroup [CTRL[,CTRL]:]PATH\n"
	"                            put the process in sub-cgroup PATH of the container's cgroup\n"
	"                            (in the hierarchies of CTRL only; repeatable)\n"
	"\n"
	"Without --detach, returns the process's exit code (128+n when killed by signal n);\n"
	"255 when exec itself fails (no such container, a command that can't be run).\n";

static int push(char ***v, size_t *n, char *s)
{
	char **nv;

	if (*n >= MAX_REPEAT)
		return -1;
	nv = realloc(*v, (*n + 2) * sizeof(**v));
	if (!nv)
		return -1;
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

static int parse_id(const char *s, uint32_t *ret)
{
	uint64_t v;

	if (cryo_parse_u64(s, UINT32_MAX - 1, &v) < 0)
		return -1;
	*ret = (uint32_t)v;
	return 0;
}

int cmd_exec(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "process", required_argument, NULL, 'p' },
		{ "detach", no_argument, NULL, 'd' },
		{ "pid-file", required_argument, NULL, 'P' },
		{ "console-socket", required_argument, NULL, 'S' },
		{ "tty", no_argument, NULL, 't' },
		{ "user", required_argument, NULL, 'u' },
		{ "additional-gids", required_argument, NULL, 'g' },
		{ "cwd", required_argument, NULL, 'C' },
		{ "env", required_argument, NULL, 'e' },
		{ "cap", required_argument, NULL, 'c' },
		{ "no-new-privs", no_argument, NULL, 'N' },
		{ "apparmor", required_argument, NULL, 'A' },
		{ "process-label", required_argument, NULL, 'L' },
		{ "preserve-fds", required_argument, NULL, 'F' },
		{ "ignore-paused", no_argument, NULL, 'I' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_exec_opts o = { .root = cli->root };
	_cleanup_free_ char **env = NULL, **caps = NULL, **cgroups = NULL;
	_cleanup_free_ uint32_t *gids = NULL;
	size_t n_env = 0, n_caps = 0, n_cgroups = 0;
	uint64_t u;
	int c, rc, status = 0;

	while ((c = cli_getopt(argc, argv, "+p:dtu:g:e:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.process_path = optarg;
			break;
		case 'd':
			o.detach = true;
			break;
		case 'P':
			o.pid_file = optarg;
			break;
		case 'S':
			o.console_socket = optarg;
			break;
		case 't':
			o.tty = true;
			break;
		case 'u': {
			/* a copy: argv must stay as it is, the sealed re-exec reads it back from /proc */
			_cleanup_free_ char *user = strdup(optarg);
			char *colon = user ? strchr(user, ':') : NULL;

			if (colon)
				*colon = '\0';
			if (!user || parse_id(user, &o.uid) < 0 || (colon && parse_id(colon + 1, &o.gid) < 0))
				return cli_usage_error("exec", "--user `%s`: expects UID[:GID] (numbers)", optarg);
			o.has_user = true;
			break;
		}
		case 'g': {
			uint32_t *ng;

			if (o.n_additional_gids >= MAX_REPEAT)
				return cli_usage_error("exec", "too many --additional-gids");
			ng = realloc(gids, (o.n_additional_gids + 1) * sizeof(*gids));
			if (!ng)
				return cli_usage_error("exec", "out of memory");
			gids = ng;
			if (parse_id(optarg, &gids[o.n_additional_gids]) < 0)
				return cli_usage_error("exec", "--additional-gids `%s`: expects a number", optarg);
			o.n_additional_gids++;
			break;
		}
		case 'C':
			o.cwd = optarg;
			break;
		case 'e':
			if (push(&env, &n_env, optarg) < 0)
				return cli_usage_error("exec", "too many --env");
			break;
		case 'c':
			if (push(&caps, &n_caps, optarg) < 0)
				return cli_usage_error("exec", "too many --cap");
			break;
		case 'N':
			o.no_new_privs = true;
			break;
		case 'A':
		case 'L':
			break; /* accepted: no LSM support, like an unconfined runc */
		case 'F':
			if (cryo_parse_u64(optarg, CRYO_EXEC_MAX_PRESERVE_FDS, &u) < 0)
				return cli_usage_error("exec", "--preserve-fds `%s`: expects 0..%d", optarg,
						       CRYO_EXEC_MAX_PRESERVE_FDS);
			o.preserve_fds = (unsigned int)u;
			break;
		case 'I':
			o.ignore_paused = true;
			break;
		case 'G':
			if (push(&cgroups, &n_cgroups, optarg) < 0)
				return cli_usage_error("exec", "too many --cgroup");
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			return cli_usage_error("exec", "bad option");
		}
	}
	if (optind >= argc)
		return cli_usage_error("exec", "expects a container id");
	o.id = argv[optind];
	if (!o.process_path && optind + 1 >= argc)
		return cli_usage_error("exec", "expects a command after the id (or --process FILE)");
	if (o.process_path && optind + 1 < argc)
		return cli_usage_error("exec", "--process and a command: give one of them");
	o.args = argv + optind + 1;
	if (o.args[0] && strcmp(o.args[0], "--") == 0)
		o.args++; /* `exec ID -- CMD...` */
	if (!o.process_path && !o.args[0])
		return cli_usage_error("exec", "expects a command after `--`");
	o.env = env;
	o.caps = caps;
	o.cgroups = cgroups;
	o.additional_gids = gids;

	if (cryo_sealexe_ensure(environ, &err) < 0) {
		cli_fail(&err);
		return EXEC_FAILED;
	}
	rc = cryo_exec(&o, &status, &err);
	if (rc < 0 && !status) {
		cli_fail(&err);
		return EXEC_FAILED;
	}
	return cli_exit_status(rc, status, &err);
}
