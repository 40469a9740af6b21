# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced first by the guest scripts of tests/vm/*.vmpair (run as
# `tests/vm/run bash SCRIPT SHARE`): the VM test helpers and common.sh, the
# fresh guest made ready for containers (bundle.sh, workload.sh), a CRIU
# that works checked, and S, the scratch dir both guests see ($1).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
vm_containers_setup
. "$CRYO_SRC/tests/lib/bundle.sh"
. "$CRYO_SRC/tests/lib/workload.sh"
S=${1:?usage: SCRIPT SHARE}
need_cmd criu
"$CRYO_BIN" check >"$T/check.out" 2>&1 || fail "cryo check: $(cat "$T/check.out")"
