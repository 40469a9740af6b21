// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "restore.h"
#include "cli.h"
#include "criu-flags.h"

int cmd_restore(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_CRIU_IMAGE_OPTIONS,
		{ "bundle", required_argument, NULL, 'b' },
		{ "detach", no_argument, NULL, 'd' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "tcp-close", no_argument, NULL, 'C' },
		{ "keep-paused", no_argument, NULL, 'k' },
		{ "verify-key", required_argument, NULL, 'K' },
		{ "require-signature", no_argument, NULL, 'R' },
		CLI_CRIU_FLAG_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_restore_opts o = { .root = cli->root, .bundle = "." };
	struct cli_criu_args ca = { "restore", &o.criu, &o.image_path, &o.work_path, &o.verify_key, "CRYO_VERIFY_KEY", 2 };
	pid_t pid = 0;
	int c, r, status = 0;

	while ((c = cli_criu_getopt(&ca, argc, argv, "db:h", opts)) != -1) {
		switch (c) {
		case 'b':
			o.bundle = optarg;
			break;
		case 'd':
			o.detach = true;
			break;
		case 'p':
			o.pid_file = optarg;
			break;
		case 'c':
			o.console_socket = optarg;
			break;
		case 'C':
			o.tcp_close = true;
			break;
		case 'K':
			o.verify_key = optarg;
			break;
		case 'R':
			o.require_signature = true;
			break;
		case 'k':
			o.keep_paused = true;
			break;
		case 'h':
			printf("Usage: cryo restore [OPTIONS] ID\n\n"
			       "Verify a checkpoint image (manifest and every file's digest), put the rootfs\n"
			       "back from its snapshot into the bundle and restore the container with CRIU.\n"
			       "The bundle and rootfs are --bundle's (the image's config.json is only compared).\n\n"
			       "  --image-path DIR   the image (default ./checkpoint)\n"
			       "  --work-path DIR    CRIU's work dir and log (default <root>/.restore/<ID>;\n"
			       "                     once restored the log moves to <root>/<ID>/criu)\n"
			       "  -b, --bundle DIR   bundle (default: the current directory, as runc)\n"
			       "  -d, --detach       return once restored\n"
			       "  --pid-file FILE    write the init's pid\n"
			       "  --console-socket S process.terminal: send the restored terminal's new pty\n"
			       "                     master to the unix socket S (runc's protocol)\n"
			       "  --tcp-close        drop established TCP connections\n"
			       "  --keep-paused      a container paused at checkpoint comes back paused\n"
			       "                     (default: running, as runc)\n"
			       "  --verify-key FILE  the image must be signed with this key (Ed25519 public key\n"
			       "                     PEM or the HMAC key) and is verified before anything else\n"
			       "  --require-signature refuse an image that is not verified with --verify-key\n"
			       "  (without --verify-key: $CRYO_VERIFY_KEY, if set, with --require-signature: an\n"
			       "  image from containerd, CRI-O or Podman must be signed by the node's key)\n"
			       CLI_CRIU_FLAG_HELP);
			return 0;
		default:
			return ca.status;
		}
	}
	r = cli_criu_operand(&ca, argc, argv, &o.id);
	if (r > 1)
		return r;
	/* a node's key from the environment also makes a signature a must */
	if (r == 1)
		o.require_signature = true;
	if (cryo_restore(&o, &pid, o.detach ? NULL : &status, &err) < 0)
		return cli_fail(&err);
	return o.detach ? 0 : status;
}
