// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo migrate ID DEST: move a running container to another host (see
 * runtime/migrate.h for the phases and what a failure leaves behind).
 * Progress goes to stderr: a live line on a terminal, JSON records with
 * --log-format json, one line per phase otherwise.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "criu-flags.h"
#include "migrate-common.h"
#include "util.h"

enum {
	OPT_SSH = 0x200,
	OPT_REMOTE_CRYO,
	OPT_REMOTE_OPTS,
	OPT_SIGN_KEY,
	OPT_DRY_RUN,
	OPT_FREEZE_DEADLINE,
	OPT_PRE_COPY,
	OPT_LAZY,
};

/* exit statuses (documented in usage) */
#define EXIT_FAILED 1
#define EXIT_NOT_READY 3
#define EXIT_IN_DOUBT 4
#define EXIT_NOT_RESUMED 5
#define EXIT_STOP_FAILED 6

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: cryo migrate [OPTIONS] ID DEST\n"
		"\n"
		"Move a running container to another host: freeze it (held, with a deadline),\n"
		"checkpoint it, send the image to `cryo receive` there, which verifies and\n"
		"restores it into a bundle of its own, keeps it frozen until this side commits,\n"
		"then runs it; only then is the container stopped here. Any failure before the\n"
		"commit resumes it here exactly as it was and the destination removes all it made.\n"
		"\n"
		"DEST:\n"
		"  ssh://[user@]host[:port]  runs `cryo receive` there through ssh(1)\n"
		"                            (your keys, known_hosts and ssh_config apply)\n"
		"  tls://host:port           a `cryo receive` listening there, mutual TLS\n"
		"\n"
		"Options:\n"
		"  --dry-run                 check both ends (kernel, CRIU, cgroups, space, rootfs)\n"
		"                            and stop\n"
		"  --cert FILE --key FILE --ca FILE\n"
		"                            tls://: our certificate and key, and the CA the\n"
		"                            destination's certificate must chain to\n"
		"  --ssh PROG                ssh program (default ssh)\n"
		"  --remote-cryo CMD         cryo on the destination (default `cryo`; may carry\n"
		"                            global options: `cryo --root /run/cryo`)\n"
		"  --remote-opts OPTS        more options for the remote `receive`\n"
		"  --sign-key FILE           sign the image (the destination verifies it)\n"
		"  --pre-copy N              up to N memory rounds while it runs (1-8; CRIU\n"
		"                            tracks dirty pages), so the frozen dump is small;\n"
		"                            stops early when a round no longer shrinks\n"
		"  --lazy                    post-copy: the copy there runs at once and pulls\n"
		"                            its memory from here (frozen) through the channel;\n"
		"                            refused where CRIU's lazy pages do not work\n"
		"  --freeze-deadline MS      thaw here by itself if not committed by then\n"
		"                            (default 300000)\n"
		"  --timeout MS              longest wait for the destination (default 120000)\n"
		"  --list-steps              print the phases (CRYO_FAULT=migrate:<phase>)\n"
		CLI_CRIU_FLAG_HELP
		"\n"
		"Exit status: 0 migrated (runs there, stopped here); 1 failed, the container\n"
		"runs here as before; 2 usage; 3 --dry-run: an end is not ready; 4 in doubt: the\n"
		"commit was sent but not confirmed, the container is left PAUSED here (check the\n"
		"destination, then resume or delete it here); 5 failed and the\n"
		"container could not be resumed here (see the warnings); 6 migrated, but the\n"
		"copy here could not be stopped: it is left frozen here (delete it).\n");
}

static void print_facts(const char *end, const struct cryo_migrate_facts *f)
{
	printf("%-12s kernel %s, CRIU %s%s, cryo %s, cgroups %s", end, f->kernel[0] ? f->kernel : "?",
	       f->criu_version[0] ? f->criu_version : "none",
	       f->criu_checked ? (f->criu_check_ok ? " (check ok)" : " (check FAILS)") : "", f->cryo_version,
	       f->cgroup_layout);
	if (f->rootfs_kind[0])
		printf(", rootfs %s, freezer %s, ~%" PRIu64 " MiB to send", f->rootfs_kind, f->freezer_backend,
		       f->need_bytes >> 20);
	else
		printf(", %" PRIu64 " MiB free", f->free_bytes >> 20);
	printf(", soft-dirty %s (pre-copy), userfaultfd %s (lazy pages)\n", f->soft_dirty ? "yes" : "NO",
	       f->userfaultfd ? "yes" : "NO");
}

/*
 * Where the downtime went, a line per step of either host (timeline.h):
 * when it started (ms since the freeze) and how long it took; a step
 * nested in another (checkpoint's in migrate's) is indented.
 */
static void print_steps(FILE *out, const struct cryo_migrate_timeline *tl)
{
	size_t i, j;

	if (!tl->n)
		return;
	fprintf(out, "downtime by step (ms since the freeze; here: this host, there: the destination):\n");
	fprintf(out, "  %9s %9s  %-5s %s\n", "at", "took", "host", "step");
	for (i = 0; i < tl->n; i++) {
		const struct cryo_migrate_timed *t = &tl->t[i];
		int depth = 0;

		/* inside an earlier step of the same host that lasts past its start */
		for (j = 0; j < i; j++)
			if (tl->t[j].dest == t->dest && strcmp(tl->t[j].table, t->table) != 0 &&
			    tl->t[j].start_us <= t->start_us && tl->t[j].start_us + tl->t[j].usec >= t->start_us + t->usec)
				depth = 1;
		fprintf(out, "  %9.1f %9.1f  %-5s %*s%s:%s\n", (double)t->start_us / 1e3, (double)t->usec / 1e3,
			t->dest ? "there" : "here", depth * 2, "", t->table, t->step);
	}
}

int cmd_migrate(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ssh", required_argument, NULL, OPT_SSH },
		{ "remote-cryo", required_argument, NULL, OPT_REMOTE_CRYO },
		{ "remote-opts", required_argument, NULL, OPT_REMOTE_OPTS },
		{ "sign-key", required_argument, NULL, OPT_SIGN_KEY },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "freeze-deadline", required_argument, NULL, OPT_FREEZE_DEADLINE },
		{ "pre-copy", required_argument, NULL, OPT_PRE_COPY },
		{ "lazy", no_argument, NULL, OPT_LAZY },
		CLI_MIGRATE_OPTIONS,
		CLI_CRIU_FLAG_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_migrate_opts o = { .root = cli->root };
	const struct cli_migrate_args ma = { &o.tls, &o.timeout_ms, &cryo_migrate_step_table };
	struct cli_criu_args ca = { .cmd = "migrate", .flags = &o.criu };
	struct cryo_migrate_result res;
	struct cli_progress pc = { .json = cli->log_json, .tty = isatty(STDERR_FILENO) };
	const char *remote_cryo = "cryo", *remote_opts = NULL;
	_cleanup_free_ char *remote_cmd = NULL;
	uint64_t v;
	int c, r;

	while ((c = cli_criu_getopt(&ca, argc, argv, "h", opts)) != -1) {
		switch (c) {
		case OPT_SSH:
			o.ssh = optarg;
			break;
		case OPT_REMOTE_CRYO:
			remote_cryo = optarg;
			break;
		case OPT_REMOTE_OPTS:
			remote_opts = optarg;
			break;
		case OPT_SIGN_KEY:
			o.sign_key = optarg;
			break;
		case OPT_DRY_RUN:
			o.dry_run = true;
			break;
		case OPT_FREEZE_DEADLINE:
			if (cryo_parse_u64(optarg, 24ULL * 3600 * 1000, &v) < 0 || v < 1000)
				return cli_usage_error("migrate", "--freeze-deadline takes milliseconds (>= 1000), not `%s`", optarg);
			o.freeze_deadline_ms = (int64_t)v;
			break;
		case OPT_PRE_COPY:
			if (cryo_parse_u64(optarg, CRYO_MIGRATE_MAX_ROUNDS, &v) < 0 || v == 0)
				return cli_usage_error("migrate", "--pre-copy takes a number of rounds from 1 to %u, not `%s`",
						       CRYO_MIGRATE_MAX_ROUNDS, optarg);
			o.pre_copy = (unsigned)v;
			break;
		case OPT_LAZY:
			o.lazy = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			r = c == '?' ? ca.status : cli_migrate_opt("migrate", c, optarg, &ma);
			if (r != CLI_GO_ON)
				return r;
			break;
		}
	}
	if (optind + 2 != argc)
		return cli_usage_error("migrate", "expects a container id and a destination");
	/* the lazy dump's pages come from the tasks, not from a chain of pre-dumps */
	if (o.lazy && o.pre_copy)
		return cli_usage_error("migrate", "--lazy and --pre-copy exclude each other");
	o.id = argv[optind];
	o.dest = argv[optind + 1];
	if (asprintf(&remote_cmd, "%s receive --stdio%s%s", remote_cryo, remote_opts ? " " : "",
		     remote_opts ? remote_opts : "") < 0)
		return cli_usage_error("migrate", "out of memory");
	o.remote_cmd = remote_cmd;
	o.progress = cli_migrate_progress;
	o.userdata = &pc;

	cli_stream_begin();
	r = cryo_migrate(&o, &res, &err);
	cli_progress_end(&pc);
	if (o.dry_run && (res.local.kernel[0] || res.remote.kernel[0])) {
		print_facts("here:", &res.local);
		if (res.remote.kernel[0])
			print_facts("destination:", &res.remote);
	}
	if (r < 0) {
		bool in_doubt = res.in_doubt, not_resumed = res.resume_failed;

		if (res.stop_failed) {
			fprintf(stderr, "cryo migrate: `%s` runs at %s, but stopping it here failed: it is left frozen here\n",
				o.id, o.dest);
			cryo_migrate_result_done(&res);
			cli_fail(&err);
			return EXIT_STOP_FAILED;
		}

		cli_migrate_failed("migrate", res.failed_phase, "destination", res.peer_phase,
				   in_doubt      ? "the container is left PAUSED here (in doubt)" :
				   not_resumed ? "the container could NOT be resumed here" :
						 "the container runs here as before");
		cryo_migrate_result_done(&res);
		cli_fail(&err);
		if (in_doubt)
			return EXIT_IN_DOUBT;
		if (not_resumed)
			return EXIT_NOT_RESUMED;
		return o.dry_run ? EXIT_NOT_READY : EXIT_FAILED;
	}
	if (o.dry_run) {
		printf("dry run: both ends are ready\n");
	} else if (cli->log_json) {
		_cleanup_free_ char *steps = cryo_migrate_timeline_json(&res.steps);

		printf("{\"migrated\":\"%s\",\"dest\":\"%s\",\"downtime_usec\":%" PRIu64 ",\"total_usec\":%" PRIu64
		       ",\"bytes\":%" PRIu64 ",\"pages_bytes\":%" PRIu64 ",\"precopy_rounds\":%u,\"precopy_bytes\":%" PRIu64
		       ",\"first_round_pages\":%" PRIu64 ",\"early_bytes\":%" PRIu64 ",\"early_files\":%u"
		       ",\"resent_files\":%u,\"lazy_bytes\":%" PRIu64 ",\"downtime_steps\":%s}\n",
		       o.id, o.dest, res.downtime_us, res.total_us, res.bytes, res.pages_bytes, res.precopy_rounds,
		       res.precopy_bytes, res.first_round_pages, res.early_bytes, res.early_files, res.resent_files,
		       res.lazy_bytes, steps ? steps : "[]");
	} else {
		printf("migrated `%s` to %s: downtime %.1f ms, total %.1f ms, %.1f MiB sent", o.id, o.dest,
		       (double)res.downtime_us / 1e3, (double)res.total_us / 1e3,
		       (double)(res.bytes + res.precopy_bytes) / 1048576.0);
		if (res.precopy_rounds)
			printf(" (%u pre-copy rounds %.1f MiB, first %.1f MiB of pages; frozen dump %.1f MiB, %.1f MiB of pages)",
			       res.precopy_rounds, (double)res.precopy_bytes / 1048576.0,
			       (double)res.first_round_pages / 1048576.0, (double)res.bytes / 1048576.0,
			       (double)res.pages_bytes / 1048576.0);
		if (res.early_bytes)
			printf(", %.1f MiB of it while CRIU dumped", (double)res.early_bytes / 1048576.0);
		if (o.lazy)
			printf(" (lazy: %.1f MiB of page stream after it ran there)", (double)res.lazy_bytes / 1048576.0);
		printf("\n");
		print_steps(stdout, &res.steps);
	}
	cryo_migrate_result_done(&res);
	return 0;
}
