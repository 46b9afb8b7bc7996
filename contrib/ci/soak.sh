#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Long runs of the torture tests, outside CI: 500 SIGKILLs during
# promotions and writes (tests/integration/test_crash.py), 500 SIGKILLs
# during writes in writemode=writeback (test_writeback.py), 100 SIGKILLs
# during a storm of renames through the mount, each freed by
# fusermount3 -u -z (test_writeback.py), 1000 states
# a power loss could leave in writemode=writeback (test_powerloss.py),
# 20 rounds of damage to every file of the cache store
# (test_corruption.py), 2000 random events (crashes, remounts, damage,
# source changes) checked against a model of writeback
# (test_model.py), then 16
# processes reading and writing through one mount for 5 minutes, every
# byte checked and the daemon's RSS recorded every second
# (tests/integration/test_load.py; its figures are printed).
#   contrib/ci/soak.sh [BUILD_DIR]      (root)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
[ -f "$B/build.ninja" ] || meson setup "$B" >/dev/null
ninja -C "$B" >/dev/null
HOTFS_BIN=$PWD/$B/hotfs HOTFS_CRASH_KILLS=${HOTFS_CRASH_KILLS:-500} \
	/usr/bin/python3 tests/integration/run_pytest.py test_crash.py -s
HOTFS_BIN=$PWD/$B/hotfs HOTFS_WB_KILLS=${HOTFS_WB_KILLS:-500} \
	/usr/bin/python3 tests/integration/run_pytest.py \
	test_writeback.py::test_kill9_during_writes -s
HOTFS_BIN=$PWD/$B/hotfs HOTFS_RENAME_KILLS=${HOTFS_RENAME_KILLS:-100} \
	/usr/bin/python3 tests/integration/run_pytest.py \
	test_writeback.py::test_kill9_during_rename_storm -s
HOTFS_BIN=$PWD/$B/hotfs HOTFS_LOGWRITES=$PWD/$B/tests/crash/logwrites.so \
HOTFS_POWERLOSS_STATES=${HOTFS_POWERLOSS_STATES:-1000} \
	/usr/bin/python3 tests/integration/run_pytest.py test_powerloss.py -s
HOTFS_BIN=$PWD/$B/hotfs HOTFS_CORRUPT_ROUNDS=${HOTFS_CORRUPT_ROUNDS:-20} \
	/usr/bin/python3 tests/integration/run_pytest.py test_corruption.py -s
HOTFS_BIN=$PWD/$B/hotfs HOTFSCTL_BIN=$PWD/$B/hotfsctl \
HOTFS_MODEL_EVENTS=${HOTFS_MODEL_EVENTS:-2000} HOTFS_MODEL_DAMAGE=1 \
HOTFS_MODEL_SEED=${HOTFS_MODEL_SEED:-$(( (RANDOM << 15) | RANDOM ))} \
	/usr/bin/python3 tests/integration/run_pytest.py \
	test_model.py::test_model -s
HOTFS_BIN=$PWD/$B/hotfs HOTFSCTL_BIN=$PWD/$B/hotfsctl \
HOTFS_LOAD_SECS=${HOTFS_LOAD_SECS:-300} \
	/usr/bin/python3 tests/integration/run_pytest.py test_load.py -s
