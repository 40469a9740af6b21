// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container.h"
#include "util.h"
#include "cli.h"

#define PS_MAX_OUTPUT (16u << 20)
#define PS_MAX_ARGS 64

static const char usage_text[] =
	"Usage: cryo ps [--format table|json] ID [PS_OPTION...]\n"
	"\n"
	"List the processes of a container. table (the default): the lines of\n"
	"ps(1) run with PS_OPTION... (none given: every process, full format)\n"
	"whose PID is in the container's cgroup, under ps's own header;\n"
	"json: the pids, [1,2,...].\n";

/* The output of ps ARGS (stdout), NUL-terminated. */
static int run_ps(char **args, size_t n, char **ret, struct cryo_error *err)
{
	char *argv[PS_MAX_ARGS + 2];
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	int fds[2], status;
	pid_t pid;
	ssize_t k;

	argv[0] = (char *)"ps";
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = args[i];
	argv[n + 1] = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "ps: pipe");
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return cryo_error_set(err, errno, "ps: fork");
	}
	if (pid == 0) {
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(127);
		execvp("ps", argv);
		fprintf(stderr, "cryo ps: exec ps: %s\n", strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		if (cap - len < 4096) {
			char *nb;

			if (cap >= PS_MAX_OUTPUT)
				break;
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb)
				break;
			buf = nb;
		}
		k = read(fds[0], buf + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return cryo_error_setx(err, EIO, "ps failed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (!buf)
		return cryo_error_setx(err, EIO, "ps printed nothing");
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

/* Which whitespace-separated column of ps's header is PID. */
static int pid_column(const char *header)
{
	int col = 0;

	for (const char *p = header;;) {
		p += strspn(p, " \t");
		if (!*p)
			return -1;
		if (strncmp(p, "PID", 3) == 0 && (p[3] == ' ' || p[3] == '\t' || !p[3]))
			return col;
		p += strcspn(p, " \t");
		col++;
	}
}

static bool line_in(const char *line, int col, const pid_t *pids, size_t n)
{
	const char *p = line;
	uint64_t v;
	char num[24];
	size_t w;

	for (int i = 0; i <= col; i++) {
		p += strspn(p, " \t");
		w = strcspn(p, " \t");
		if (i == col) {
			if (!w || w >= sizeof(num))
				return false;
			memcpy(num, p, w);
			num[w] = '\0';
			if (cryo_parse_u64(num, INT32_MAX, &v) < 0)
				return false;
			for (size_t j = 0; j < n; j++)
				if (pids[j] == (pid_t)v)
					return true;
			return false;
		}
		p += w;
	}
	return false;
}

static int print_table(char **args, size_t n_args, const pid_t *pids, size_t n, struct cryo_error *err)
{
	_cleanup_free_ char *out = NULL;
	char *line, *save = NULL;
	int col, r;

	r = run_ps(args, n_args, &out, err);
	if (r < 0)
		return r;
	line = strtok_r(out, "\n", &save);
	if (!line)
		return cryo_error_setx(err, EIO, "ps printed no header");
	col = pid_column(line);
	if (col < 0)
		return cryo_error_setx(err, EINVAL, "ps: no PID column in its output (`%s`)", line);
	printf("%s\n", line);
	while ((line = strtok_r(NULL, "\n", &save)))
		if (line_in(line, col, pids, n))
			printf("%s\n", line);
	return 0;
}

int cmd_ps(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char *default_args[] = { (char *)"-ef" };
	struct cryo_error err = CRYO_ERROR_INIT;
	_cleanup_free_ pid_t *pids = NULL;
	char **args = default_args;
	size_t i, n = 0, n_args = 1;
	bool json = false;
	int c;

	/* '+': the options after the id are ps's own (`ps ID -e -x`) */
	while ((c = cli_getopt(argc, argv, "+f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") == 0)
				json = true;
			else if (strcmp(optarg, "table") != 0)
				return cli_usage_error("ps", "--format must be `table` or `json`");
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			return cli_usage_error("ps", "bad option");
		}
	}
	if (optind >= argc)
		return cli_usage_error("ps", "expects a container id");
	if (argc - optind > 1) {
		if (json)
			return cli_usage_error("ps", "ps options go with --format table only");
		if (argc - optind - 1 > PS_MAX_ARGS)
			return cli_usage_error("ps", "at most %d ps options", PS_MAX_ARGS);
		args = argv + optind + 1;
		n_args = (size_t)(argc - optind - 1);
	}
	if (cryo_container_pids(cli->root, argv[optind], &pids, &n, &err) < 0)
		return cli_fail(&err);
	if (json) {
		printf("[");
		for (i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)pids[i]);
		printf("]\n");
		return 0;
	}
	if (print_table(args, n_args, pids, n, &err) < 0)
		return cli_fail(&err);
	return 0;
}
