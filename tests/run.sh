#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run every test of hotfs: unit tests (cmocka) and integration tests that
# mount a real hotfs (pytest), first in a normal build (the default:
# libfuse 3.18, bundled where the system's is older, as on bookworm),
# with FUSE over io_uring where the kernel has it, followed by the
# benchmark harness's smoke run against that build's daemon (passthrough's
# benchmarks too), a build without io_uring and one against the system's
# libfuse (3.14 on bookworm); then the tests again in a build with
# AddressSanitizer and UndefinedBehaviorSanitizer against the system's
# libfuse (so that the whole suite runs against both libfuses, the first
# through the queues);
# then the concurrency and crash tests under ThreadSanitizer (against
# each libfuse, the second through the queues), and a short
# run of the libFuzzer targets.
#
#   tests/run.sh            # everything (needs root for the mounts)
#   tests/run.sh --quick    # normal build and benchmark smoke run only
set -euo pipefail
cd "$(dirname "$0")/.."

HOTFS_DEPS_EXTRA=${HOTFS_DEPS_EXTRA:-1} contrib/ci/deps.sh

quick=0
[ "${1:-}" = --quick ] && quick=1

# a stage's name, and how long the run has taken when it starts
stage() {
	echo "== $1 == ($SECONDS s in)"
}

# a set-up or build command, quiet when it succeeds; when it fails, the
# end of what it printed (a compiler's or linker's error), and its status
quietly() {
	local out rc=0
	out=$(mktemp /var/tmp/hotfs-build.XXXXXX)
	"$@" >"$out" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		echo "FAILED ($rc): $*"
		tail -n 60 "$out"
	fi
	rm -f "$out"
	return "$rc"
}

# meson test with its arguments, failing when it selects no test, runs
# none, or skips one (a stage that runs nothing must not pass: every
# stage here runs as root, with /dev/fuse, where nothing skips)
checked_test() {
	local out rc=0 ok skipped
	out=$(mktemp /var/tmp/hotfs-meson-test.XXXXXX)
	meson test "$@" 2>&1 | tee "$out" || rc=$?
	ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$out" | tail -1)
	skipped=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$out" | tail -1)
	rm -f "$out"
	[ "$rc" = 0 ] || return "$rc"
	if [ -z "$ok" ] || [ "$ok" = 0 ]; then
		echo "FAILED: meson test $* ran no test"
		return 1
	fi
	if [ "${skipped:-0}" != 0 ]; then
		echo "FAILED: meson test $* skipped $skipped test(s)"
		return 1
	fi
}

# warnings are errors in every build here (-Dwerror=true), not as a
# default that would break distribution builds on newer compilers
run_suite() {
	local dir=$1; shift
	if [ ! -f "$dir/build.ninja" ]; then
		quietly meson setup "$dir" -Dwerror=true "$@"
	fi
	quietly ninja -C "$dir"
	checked_test -C "$dir" --print-errorlogs --num-processes 2
}

# contrib/bench/run.sh --smoke: every benchmark at tiny sizes (about a
# minute) against the emulated HDD, so that the harness never rots; it
# fails on a wrong result or on anything left behind.  77 means this
# machine cannot emulate the HDD (no loop devices, no cgroup-v1 blkio
# throttling, a tool missing): a skip.  The log is printed on failure, and
# the results are kept then.
# bench_smoke [BUILD [WORKLOAD...]]: with BUILD's hotfs (build-test), the
# default workloads or those named.
bench_smoke() {
	local out rc=0 t0=$SECONDS bin=$PWD/${1:-build-test}/hotfs
	shift || true
	out=$(mktemp -d /var/tmp/hotfs-bench-smoke.XXXXXX)
	HOTFS_BIN=$bin contrib/bench/run.sh --smoke "$@" \
		--out "$out" > "$out/run.log" 2>&1 || rc=$?
	case $rc in
	0)
		echo "benchmark smoke run passed ($(( SECONDS - t0 )) s)"
		rm -rf "$out" ;;
	77)
		echo "benchmark smoke run SKIPPED:" \
			"$(sed -n 's/.*skipped: //p' "$out/run.log")"
		rm -rf "$out" ;;
	*)
		cat "$out/run.log"
		echo "benchmark smoke run FAILED (exit $rc); results in $out"
		return "$rc" ;;
	esac
}

# contrib/demo.sh, the README's first command, with this build's daemon:
# it must keep working (its output is printed on failure)
demo() {
	local log rc=0
	log=$(mktemp /var/tmp/hotfs-demo-log.XXXXXX)
	HOTFS_BIN=$PWD/build-test/hotfs contrib/demo.sh > "$log" 2>&1 || rc=$?
	if [ "$rc" = 0 ]; then
		grep -A7 '^== five passes' "$log"
		echo "demo passed"
	else
		cat "$log"
		echo "demo FAILED (exit $rc)"
	fi
	rm -f "$log"
	return "$rc"
}

# The sanitizer builds' stages run the long loops shorter (each step
# costs them several times as much; the normal build runs them whole):
# fsx runs of 5,000 operations instead of 20,000, 30 power-loss states
# instead of 100, the slow-source writers 10 s past their first wait
# instead of 65, the load test 10 s instead of 30.
sanitizer_loops() {
	HOTFS_FSX_OPS=5000 HOTFS_POWERLOSS_STATES=30 \
	HOTFS_SLOW_SOURCE_SECS=10 HOTFS_LOAD_SECS=10 "$@"
}
# The kernel's switch for FUSE over io_uring, which hotfs never sets
# itself: set for the stages that run the suite through the queues, and
# put back as it was when the stage ends, also when it fails.
URING_PARAM=/sys/module/fuse/parameters/enable_uring
uring_was=
uring_restore() {
	[ -z "$uring_was" ] || echo "$uring_was" > "$URING_PARAM"
	uring_was=
	trap - EXIT
}
uring_on() {
	if [ ! -w "$URING_PARAM" ]; then
		echo "(no FUSE over io_uring in this kernel: $URING_PARAM;" \
			"the stage runs through /dev/fuse)"
		return 0
	fi
	uring_was=$(cat "$URING_PARAM")
	trap uring_restore EXIT
	echo Y > "$URING_PARAM"
}

# the default build: libfuse 3.18 (bundled on bookworm), with the
# kernel's switch on: fuse_uring=auto takes the queues
stage "normal build (libfuse 3.18), FUSE over io_uring"
uring_on
run_suite build-test
uring_restore
v=$(build-test/hotfs --version | sed -n 's/^libfuse version //p')
if ! dpkg --compare-versions "${v:-0}" ge 3.18; then
	echo "FAILED: build-test/hotfs runs libfuse '$v', not >= 3.18"
	exit 1
fi
stage "benchmark smoke run (contrib/bench/run.sh --smoke)"
bench_smoke
# passthrough's benchmarks at smoke size: the copy made, measured
bench_smoke build-test whole wholedirect wholerw
stage "the demo (contrib/demo.sh)"
demo
if [ $quick = 0 ]; then
	# without liburing: it must build, and cached reads go through pread
	stage "build without io_uring (-Dio_uring=disabled)"
	if [ ! -f build-nouring/build.ninja ]; then
		quietly meson setup build-nouring -Dwerror=true -Dio_uring=disabled
	fi
	quietly ninja -C build-nouring
	checked_test -C build-nouring --print-errorlogs --num-processes 2 \
		--suite unit
	checked_test -C build-nouring --print-errorlogs integration.readpath \
		integration.cache
	# against the system's libfuse (3.14 on bookworm: no passthrough, no
	# FUSE over io_uring): it must build, and the daemon behave the
	# same (the whole suite runs against it in the ASan stage)
	stage "build against the system's libfuse (-Dlibfuse=system)"
	if [ ! -f build-sys/build.ninja ]; then
		quietly meson setup build-sys -Dwerror=true -Dlibfuse=system
	fi
	quietly ninja -C build-sys
	checked_test -C build-sys --print-errorlogs --num-processes 2 \
		--suite unit
	checked_test -C build-sys --print-errorlogs integration.mount \
		integration.noopen integration.fuseuring integration.copies
fi
if [ $quick = 0 ]; then
	# against the system's libfuse (as the stage above builds it)
	stage "ASan + UBSan build, the system's libfuse"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	sanitizer_loops run_suite build-asan -Db_sanitize=address,undefined \
		-Db_lundef=false -Dlibfuse=system
fi
if [ $quick = 0 ]; then
	# the concurrency, crash and fault tests, the policy's thread test and
	# the store's (readers against inserts, evictions, invalidations: the
	# index's hot bit is set under its shared lock), under
	# ThreadSanitizer (tests/tsan.supp says what is suppressed)
	stage "ThreadSanitizer: concurrency, crash and read-path tests"
	if [ ! -f build-tsan/build.ninja ]; then
		quietly meson setup build-tsan -Dwerror=true -Db_sanitize=thread \
			-Db_lundef=false -Dlibfuse=system
	fi
	quietly ninja -C build-tsan
	export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=0 exitcode=66"
	checked_test -C build-tsan --print-errorlogs unit.policy unit.opts \
		unit.store unit.wblog unit.flush unit.inode unit.namecache \
		unit.seqread unit.watch unit.wb unit.readpath
	# meson's integration tests of this build run its daemon, two files
	# at a time, those that drop the machine's caches alone
	tsan_integration=(integration.concurrency integration.crash
		integration.readpath integration.cache integration.hotfsctl
		integration.control integration.faults integration.noopen
		integration.watch integration.watch.alone
		integration.blockgrain integration.writeback
		integration.writeback.alone integration.wbfaults
		integration.wbleft integration.revalidate
		integration.revalidate.alone integration.ownwrites)
	sanitizer_loops checked_test -C build-tsan --print-errorlogs \
		--num-processes 2 "${tsan_integration[@]}"
	HOTFS_BIN=$PWD/build-tsan/hotfs HOTFSCTL_BIN=$PWD/build-tsan/hotfsctl \
	HOTFS_NO_URING=$PWD/build-tsan/tests/integration/no_uring \
		sanitizer_loops /usr/bin/python3 tests/integration/run_pytest.py \
		test_network.py::test_revalidate_seconds_daemon_keeps_names \
		test_network.py::test_revalidate_seconds_cached_file_from_store_alone
	# the same integration tests through FUSE over io_uring, against
	# libfuse 3.18 (src/fuse/tsan_order.c tells TSan the kernel's order
	# of requests, which no lock shows between the queues' threads)
	stage "ThreadSanitizer, libfuse 3.18, FUSE over io_uring"
	if [ ! -f build-tsan318/build.ninja ]; then
		quietly meson setup build-tsan318 -Dwerror=true -Db_sanitize=thread \
			-Db_lundef=false -Dlibfuse=bundled
	fi
	quietly ninja -C build-tsan318
	uring_on
	sanitizer_loops checked_test -C build-tsan318 --print-errorlogs \
		--num-processes 2 "${tsan_integration[@]}" \
		integration.fuseuring integration.copies \
		integration.copies.alone
	uring_restore
	unset TSAN_OPTIONS
fi
if [ $quick = 0 ] && command -v clang >/dev/null; then
	# libFuzzer targets for the parsers of untrusted bytes, a short run
	# each with the corpus kept in tests/fuzz/
	stage "fuzzing (clang, libFuzzer)"
	if [ ! -f build-fuzz/build.ninja ]; then
		CC=clang quietly meson setup build-fuzz -Dwerror=true -Dfuzz=true \
			-Dlibfuse=system
	fi
	quietly ninja -C build-fuzz
	checked_test -C build-fuzz --suite fuzz --print-errorlogs
fi
echo "all test runs passed in $SECONDS s"
