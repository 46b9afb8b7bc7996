#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Long runs of the torture tests, outside CI: 500 SIGKILLs during
# promotions and writes (tests/integration/test_crash.py).
#   contrib/ci/soak.sh [BUILD_DIR]      (root)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
[ -f "$B/build.ninja" ] || meson setup "$B" >/dev/null
ninja -C "$B" >/dev/null
HOTFS_BIN=$PWD/$B/hotfs HOTFS_CRASH_KILLS=${HOTFS_CRASH_KILLS:-500} \
	/usr/bin/python3 tests/integration/run_pytest.py test_crash.py -s
