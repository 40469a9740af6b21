// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo receive: the destination of `cryo migrate`. One migration per
 * run: over ssh (--stdio, started by the source through sshd) or on a
 * mutual-TLS socket (--listen). With --stdio, stdout is the channel:
 * nothing else may be written there.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "migrate-common.h"
#include "util.h"

enum {
	OPT_STDIO = 0x200,
	OPT_LISTEN,
	OPT_BUNDLE_DIR,
	OPT_VERIFY_KEY,
	OPT_ALLOW_UNSIGNED,
	OPT_ACCEPT_TIMEOUT,
};

#define DEFAULT_BUNDLE_DIR "/var/lib/cryo/bundles"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: cryo receive --stdio [OPTIONS]\n"
		"       cryo receive --listen ADDR --cert FILE --key FILE --ca FILE [OPTIONS]\n"
		"\n"
		"Take one container migrated by `cryo migrate`: check this host can run it,\n"
		"receive the image, verify it, restore it into <bundle-dir>/<ID> (this host's\n"
		"bundle; nothing in the image names a path here) and keep it frozen until the\n"
		"source commits; then run it. On any failure everything made here is removed.\n"
		"\n"
		"Options:\n"
		"  --stdio                   the channel is stdin/stdout (run by ssh)\n"
		"  --listen ADDR             accept one mutual-TLS connection on host:port\n"
		"  --cert FILE --key FILE    our certificate and key\n"
		"  --ca FILE                 the CA a client certificate must chain to; a client\n"
		"                            without one is refused before it can send anything\n"
		"  --bundle-dir DIR          where bundles of received containers go\n"
		"                            (default " DEFAULT_BUNDLE_DIR ")\n"
		"  --verify-key FILE         the key the image's signature must verify with\n"
		"  --allow-unsigned          accept an image without a signature\n"
		"  --timeout MS              longest wait for the source (default 120000)\n"
		"  --accept-timeout MS       --listen: give up when no one connects (default: wait)\n"
		"  --list-steps              print the phases (CRYO_FAULT=receive:<phase>)\n"
		"\n"
		"Refused: a config.json with hooks, bind mounts, namespace paths or devices,\n"
		"an absolute or escaping root.path, an id that exists here.\n"
		"\n"
		"Exit status: 0 received (running here), or a dry run answered; 1 failed,\n"
		"nothing is left here; 2 usage.\n");
}

static void listening(unsigned port, void *userdata)
{
	fprintf(stderr, "cryo receive: listening on port %u\n", port);
}

int cmd_receive(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "bundle-dir", required_argument, NULL, OPT_BUNDLE_DIR },
		{ "verify-key", required_argument, NULL, OPT_VERIFY_KEY },
		{ "allow-unsigned", no_argument, NULL, OPT_ALLOW_UNSIGNED },
		{ "accept-timeout", required_argument, NULL, OPT_ACCEPT_TIMEOUT },
		CLI_MIGRATE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_receive_opts o = { .root = cli->root, .bundle_dir = DEFAULT_BUNDLE_DIR };
	const struct cli_migrate_args ma = { &o.tls, &o.timeout_ms, &cryo_receive_step_table };
	struct cryo_receive_result res;
	struct cli_progress pc = { .json = cli->log_json, .tty = isatty(STDERR_FILENO) };
	int c, r;

	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STDIO:
			o.stdio = true;
			break;
		case OPT_LISTEN:
			o.listen = optarg;
			break;
		case OPT_BUNDLE_DIR:
			o.bundle_dir = optarg;
			break;
		case OPT_VERIFY_KEY:
			o.verify_key = optarg;
			break;
		case OPT_ALLOW_UNSIGNED:
			o.allow_unsigned = true;
			break;
		case OPT_ACCEPT_TIMEOUT:
			if (cli_migrate_parse_ms("receive", "accept-timeout", optarg, &o.accept_timeout_ms))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			r = cli_migrate_opt("receive", c, optarg, &ma);
			if (r != CLI_GO_ON)
				return r;
			break;
		}
	}
	if (optind != argc)
		return cli_usage_error("receive", "takes no operands");
	if (o.stdio == !!o.listen)
		return cli_usage_error("receive", "give exactly one of --stdio and --listen ADDR");
	if (o.listen && (!o.tls.cert || !o.tls.key || !o.tls.ca))
		return cli_usage_error("receive", "--listen needs --cert, --key and --ca (mutual TLS)");
	if (!o.bundle_dir || o.bundle_dir[0] != '/')
		return cli_usage_error("receive", "--bundle-dir must be an absolute path");
	if (!o.verify_key && !o.allow_unsigned)
		return cli_usage_error("receive", "images from elsewhere must be signed: give --verify-key FILE (or --allow-unsigned)");
	o.listening = listening;
	/* under ssh, our stderr is the source's terminal: progress only as JSON records */
	pc.quiet = o.stdio && !pc.json;
	o.progress = cli_migrate_progress;
	o.userdata = &pc;

	cli_stream_begin();
	r = cryo_receive(&o, &res, &err);
	cli_progress_end(&pc);
	if (r < 0) {
		cli_migrate_failed("receive", res.failed_phase, "source", res.peer_phase, "nothing is left here");
		cryo_receive_result_done(&res);
		return cli_fail(&err);
	}
	if (res.dry_run)
		fprintf(stderr, "cryo receive: dry run for `%s` answered\n", res.id ? res.id : "?");
	else if (pc.json) {
		_cleanup_free_ char *steps = cryo_migrate_timeline_json(&res.steps);

		fprintf(stderr, "{\"received\":\"%s\",\"downtime_usec\":%" PRIu64 ",\"downtime_steps\":%s}\n", res.id,
			res.downtime_us, steps ? steps : "[]");
	} else {
		fprintf(stderr, "cryo receive: `%s` runs here; downtime %.1f ms\n", res.id, (double)res.downtime_us / 1e3);
	}
	cryo_receive_result_done(&res);
	return 0;
}
