#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run a libFuzzer target for SECONDS on a scratch copy of its committed
# corpus (new inputs do not land in the source tree).
#	run_fuzz.sh FUZZER [SECONDS] [CORPUS]
set -e
fuzzer=$1
secs=${2:-20}
corpus=${3:-$(dirname "$0")/corpus_store}
work=$(mktemp -d /tmp/hotfs-fuzz-corpus-XXXXXX)
trap 'rm -rf "$work"' EXIT
# a crash, a leak or a timeout fails the test (libFuzzer's own exit code
# for them is 77, which meson would take for "skipped")
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-print_final_stats=1 "$work" "$corpus"
