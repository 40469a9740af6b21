// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "digest.h"
#include "util.h"
#include "cli.h"
#include "criu-flags.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: cryo checkpoint [OPTIONS] ID\n"
		"\n"
		"Freeze the container, snapshot its rootfs under FIFREEZE, dump it with CRIU\n"
		"and commit the image atomically; then thaw it (--leave-running) or stop it.\n"
		"\n"
		"  --image-path DIR          where the image goes (default ./checkpoint)\n"
		"  --work-path DIR           CRIU's work dir and log (default <root>/<ID>/criu)\n"
		"  --leave-running           keep the container running afterwards\n"
		CLI_CRIU_FLAG_HELP
		"  --pre-dump                memory pre-dump only (container keeps running)\n"
		"  --parent-path DIR         previous (pre-)dump, relative to the image path\n"
		"  --timeout MS              cgroup freeze timeout (default 5000)\n"
		"  --freeze-deadline MS      longest frozen window: past it the container and its rootfs\n"
		"                            thaw and the checkpoint fails, also if cryo dies (default %d)\n"
		"  --fs-freeze MODE          auto (default), required or off\n"
		"  --sign-key FILE           sign the manifest: Ed25519 private key (PEM) or HMAC key\n"
		"                            (default: $CRYO_SIGN_KEY, for clients that pass no such option:\n"
		"                            containerd, CRI-O, Podman)\n"
		"  --digest ALG              the image files' digest: blake3 (default) or sha256\n"
		"                            (sha256: an image a cryo of manifest format 1 can read)\n",
		CRYO_CHECKPOINT_FREEZE_DEADLINE_MS);
}

int cmd_checkpoint(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_CRIU_IMAGE_OPTIONS,
		{ "leave-running", no_argument, NULL, 'l' },
		CLI_CRIU_FLAG_OPTIONS,
		{ "pre-dump", no_argument, NULL, 'P' },
		{ "parent-path", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "freeze-deadline", required_argument, NULL, 'D' },
		{ "fs-freeze", required_argument, NULL, 'F' },
		{ "sign-key", required_argument, NULL, 'K' },
		{ "digest", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_checkpoint_opts o = { .root = cli->root };
	struct cli_criu_args ca = { "checkpoint", &o.criu, &o.image_path, &o.work_path, &o.sign_key, "CRYO_SIGN_KEY", 2 };
	uint64_t v;
	int c, rc;

	while ((c = cli_criu_getopt(&ca, argc, argv, "h", opts)) != -1) {
		switch (c) {
		case 'l':
			o.leave_running = true;
			break;
		case 'P':
			o.pre_dump = true;
			break;
		case 'p':
			o.parent_path = optarg;
			break;
		case 'T':
			if (cryo_parse_u64(optarg, 3600000, &v) < 0 || v == 0)
				return cli_usage_error("checkpoint", "--timeout takes milliseconds (1..3600000), not `%s`", optarg);
			o.freeze_timeout_ms = (int64_t)v;
			break;
		case 'D':
			if (cryo_parse_u64(optarg, 24ULL * 3600000, &v) < 0 || v == 0)
				return cli_usage_error("checkpoint", "--freeze-deadline takes milliseconds > 0, not `%s`",
						       optarg);
			o.freeze_deadline_ms = (int64_t)v;
			break;
		case 'F':
			if (cryo_fs_freeze_mode_from_string(optarg, &o.fs_freeze, &err) < 0) {
				rc = cli_usage_error("checkpoint", "%s", err.msg);
				cryo_error_clear(&err);
				return rc;
			}
			break;
		case 'K':
			o.sign_key = optarg;
			break;
		case 'd': {
			enum cryo_digest_alg alg;

			if (cryo_digest_alg_from_name(optarg, &alg) < 0)
				return cli_usage_error("checkpoint", "--digest takes blake3 or sha256, not `%s`", optarg);
			o.digest = optarg;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			return ca.status;
		}
	}
	if (cli_criu_operand(&ca, argc, argv, &o.id) > 1)
		return 2;
	if (cryo_checkpoint(&o, &err) < 0)
		return cli_fail(&err);
	return cli_criu_flags_finish();
}
