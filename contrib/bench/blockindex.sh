#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# blockindex.sh: what a store full of random readers' 4 KiB blocks costs
# the daemon, through a real mount.
#
#   contrib/bench/blockindex.sh [--blocks N] [--work DIR]
#
# 1. RAM: hotfs over a file of N 4 KiB blocks (default 262,144: 1 GiB),
#    read at random with O_DIRECT (fio, each block once a pass) until the
#    store holds every block; the daemon's VmRSS then, against that of a
#    daemon that made one such pass with nothing promoted (the empty
#    store: write_budget=1), both once they settle (the daemon gives freed
#    heap back every 5 s), and .hotfs/stats' index_bytes per record.
# 2. Restart: unmount, drop the page cache, mount again; how long until
#    a read of a cached block is served from the store (the mount's
#    recovery reads the region summaries, not the data).
#
# Source and cachedir are on a tmpfs under --work (default /dev/shm):
# this measures the daemon's memory and CPU, not a disk.  Needs root,
# /dev/fuse, fio and jq; HOTFS_BIN (default build/hotfs).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${HOTFS_BIN:-$repo/build/hotfs}
blocks=262144
work=/dev/shm
while (( $# )); do
	case $1 in
	--blocks) blocks=$2; shift ;;
	--work) work=$2; shift ;;
	*) echo "usage: $0 [--blocks N] [--work DIR]" >&2; exit 2 ;;
	esac
	shift
done
for t in fio jq; do
	command -v "$t" >/dev/null || { echo "blockindex: needs $t" >&2; exit 77; }
done
[ -x "$bin" ] || { echo "blockindex: no hotfs at $bin" >&2; exit 1; }

dir=$(mktemp -d "$work/hotfs-blockindex-XXXXXX")
mnt=$dir/mnt
pid=
cleanup()
{
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"
	fi
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/src" "$mnt" "$dir/cache"
size=$(( blocks * 4096 ))
# the store holds the blocks (4 KiB records) and their summaries (64
# bytes each), in 16 MiB regions, with room to spare
cachesize=$(( (size + size / 32) / 1048576 + 64 ))M
head -c "$size" /dev/urandom > "$dir/src/img"

stat_of() { jq -r ".$1" "$mnt/.hotfs/stats.json"; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }

start()
{
	"$bin" "$dir/src" "$mnt" -f \
		-o "cachedir=$dir/cache,cachesize=$cachesize${1:+,$1}" \
		2>>"$dir/log" &
	pid=$!
	until mountpoint -q "$mnt"; do
		kill -0 "$pid" || { cat "$dir/log" >&2; exit 1; }
		sleep 0.01
	done
}

stop()
{
	fusermount3 -u "$mnt"
	wait "$pid"
	pid=
}

# the empty store: the same reads, nothing promoted (a budget of one
# byte a day admits nothing), so the daemon's other memory (the policy's
# sketch, the readers' threads and buffers) is counted on both sides
settle_rss()
{
	local r low
	rss=$(rss_kib) low=$(date +%s)
	while (( $(date +%s) - low < 7 )); do
		sleep 0.5
		r=$(rss_kib)
		if (( r < rss )); then rss=$r low=$(date +%s); fi
	done
}
fill_pass()
{
	# every block once, in random order, skipping block 0 (a read at
	# byte 0 is a file read from its start: extent grain)
	fio --name=fill --filename="$mnt/img" --readonly --rw=randread \
		--bs=4k --direct=1 --ioengine=libaio --iodepth=16 \
		--offset=4k --size=$(( size - 4096 )) --output=/dev/null
	until (( $(stat_of promotion_queue_depth) == 0 )); do sleep 0.05; done
}
start write_budget=1
fill_pass
(( $(stat_of cached_extents) == 0 )) ||
	{ echo "blockindex: the empty store's run cached something" >&2; exit 1; }
settle_rss
rss0=$rss
stop
rm -rf "$dir/cache" && mkdir "$dir/cache"

start
passes=0 last=-1
# until a pass caches nothing more (the promotion queue may drop some of
# a pass's candidates when it is full)
while (( $(stat_of cached_extents) != last && passes < 8 )); do
	last=$(stat_of cached_extents)
	fill_pass
	passes=$(( passes + 1 ))
done
records=$(stat_of cached_extents)
# the daemon gives its heap's free pages back every 5 s (tick.c): the
# RSS it settles at, once it has not dropped for longer than that
settle_rss
rss1=$rss
index=$(stat_of index_bytes)
echo "records: $records 4 KiB blocks cached after $passes passes ($(stat_of promotions_block) block promotions, $(stat_of promotions_extent) extent)"
echo "RAM: VmRSS $rss0 KiB with the store empty after a pass of the same reads, $rss1 KiB full: +$(( (rss1 - rss0) / 1024 )) MiB ($(( (rss1 - rss0) * 1024 / records )) bytes a record); index_bytes $index ($(( index / records )) bytes a record)"
stop

sync
echo 3 > /proc/sys/vm/drop_caches
t0=$(date +%s.%N)
start
# the first cached block, read O_DIRECT: a hit from the store
dd if="$mnt/img" of=/dev/null bs=4k skip=1 count=1 iflag=direct status=none
t1=$(date +%s.%N)
hits=$(stat_of read_hit_bytes)
echo "restart: mounted and served a cached block in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s ($(stat_of recovered_extents) records recovered; read_hit_bytes $hits)"
(( hits >= 4096 )) || { echo "blockindex: the read after the restart was not a hit" >&2; exit 1; }
stop
