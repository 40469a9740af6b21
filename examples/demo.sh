#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job: install what is needed, build cryo, and show it working:
# run a container from the example bundle, freeze it, checkpoint, restore.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
CRYO=$PWD/build/cryo

echo "== cryo $("$CRYO" --version | head -1)"
echo "== what this host supports"
"$CRYO" features
