#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The built-in demo: what hotfs is for, in under a minute.
#
# A slow tree on an emulated HDD (a loop device throttled by the cgroup-v1
# blkio controller to 200 IOPS and 100 MB/s, as contrib/bench does), a
# cache store on the machine's own disk, hotfs mounted over the slow tree.
# The same work is done in passes with the page cache dropped before each:
# pass 1 runs at the HDD's speed (hotfs counts accesses), pass 2 promotes
# what was read again (from the readers' own buffers), pass 3 on is served
# from the cache store at the SSD's speed.  Then the stats' hit ratio.
# Everything is torn down afterwards (mounts, loop device, throttle).  On a
# machine without loop devices or blkio throttling the demo says so and
# runs the same passes over a plain directory, which shows the mechanics
# but not the speed-up.
#
#   contrib/demo.sh            # as root; installs deps and builds first
#   HOTFS_BIN=... contrib/demo.sh   # with a daemon built elsewhere
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

contrib/ci/deps.sh
if [ -z "${HOTFS_BIN:-}" ]; then
	if [ ! -f build/build.ninja ]; then
		meson setup build >/dev/null
	fi
	ninja -C build >/dev/null
	HOTFS_BIN=$repo/build/hotfs
fi
[ "$(id -u)" = 0 ] || { echo "demo: run as root (mounts, loop devices)"; exit 1; }

BENCH_LOG_PREFIX=demo
BENCH_HDD_IOPS=200
BENCH_HDD_BPS=104857600
BENCH_HOTFS_BIN=$HOTFS_BIN
# shellcheck source=contrib/bench/lib.sh
. "$repo/contrib/bench/lib.sh"

work=$(mktemp -d /var/tmp/hotfs-demo.XXXXXX)
BENCH_WORK_OWNED=$work
bench_install_traps
mnt=$work/view cache=$work/cache

if bench_can_throttle "$work"; then
	disk_create hdd 2G "$work"
	src=${DISK_MNT[hdd]}/slow
	hdd=1
else
	echo "== no emulated HDD here ($BENCH_WHY): a plain directory stands in"
	echo "   for the slow tree, so the passes show the mechanics, not the speed"
	src=$work/slow
	hdd=0
fi

echo "== a slow tree in $src"
mkdir -p "$src/docs" "$src/data"
for d in $(seq 1 20); do
	mkdir -p "$src/docs/d$d"
	for i in $(seq 1 25); do
		printf 'document %d.%d\nhotfs demo line\n' "$d" "$i" \
			> "$src/docs/d$d/doc$i.txt"
	done
done
head -c $((64 << 20)) /dev/urandom > "$src/data/big.bin"
want=$(md5sum < "$src/data/big.bin" | cut -d' ' -f1)
echo "   $(find "$src" -type f | wc -l) files, $(du -sh "$src" | cut -f1)"
if [ "$hdd" = 1 ]; then
	sync
	bench_throttle hdd
	echo "   on ${DISK_DEV[hdd]}, throttled to $BENCH_HDD_IOPS IOPS" \
		"and $(( BENCH_HDD_BPS / 1000000 )) MB/s"
fi

echo "== hotfs $src $mnt -o cachedir=$cache"
hotfs_mount "$src" "$mnt" "cachedir=$cache,cachesize=256M" "$work/hotfs.log"

ms() { echo $(( ($2 - $1) / 1000000 )); }
echo "== five passes, the page cache dropped before each"
printf '   %-6s %12s %16s\n' pass "big.bin (ms)" "grep -r docs (ms)"
for pass in 1 2 3 4 5; do
	bench_drop_caches
	t0=$(date +%s%N)
	sum=$(md5sum < "$mnt/data/big.bin" | cut -d' ' -f1)
	t1=$(date +%s%N)
	n=$(grep -rl 'hotfs demo' "$mnt/docs" | wc -l)
	t2=$(date +%s%N)
	[ "$sum" = "$want" ] || bench_die "big.bin differs from the source"
	[ "$n" = 500 ] || bench_die "grep found $n documents, not 500"
	printf '   %-6s %12s %16s\n' "$pass" "$(ms "$t0" "$t1")" "$(ms "$t1" "$t2")"
	# promotion is asynchronous: let pass 2's finish before pass 3
	[ "$pass" = 2 ] && bench_wait_until 30 "the promotions" \
		awk '/^promotion_queue_depth:/ { exit $2 != 0 }' \
		"$mnt/.hotfs/stats"
done
echo "   every pass read the same bytes as the source"

echo "== writing through the mount"
echo "written through hotfs" > "$mnt/docs/new.txt"
echo "   the source now has: $(cat "$src/docs/new.txt")"

echo "== $mnt/.hotfs/stats (excerpt)"
grep -E '^(store_state|read_engine|read_requests|read_hits|read_misses|hit_ratio|promotions|cached_bytes|capacity_bytes):' \
	"$mnt/.hotfs/stats" | sed 's/^/   /'

echo "== umount $mnt"
hotfs_umount "$mnt"
echo "demo done (torn down: mounts, loop device, throttle)"
