# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by examples/demo.sh and demo-criu.sh (demo-migrate.sh uses step),
# once they set CRYO (the binary), ROOT (its state root), ID, B (the
# bundle) and WORK (their temp dir):
#
#   step TEXT       TEXT as a bold title
#   counter         what the demo container's shell wrote last to /counter
#                   ("?" while there is nothing)
#   demo_cleanup    delete the container, tear its bundle down, remove WORK

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

counter() { cat "$B/rootfs/counter" 2>/dev/null || echo "?"; }

demo_cleanup() {
	"$CRYO" --root "$ROOT" delete --force "$ID" >/dev/null 2>&1 || true
	bash "$SRC/examples/mkbundle.sh" --teardown "$B" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
