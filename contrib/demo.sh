#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The built-in demo: build hotfs, make a small "slow" tree, mount hotfs
# over it, use it, show what happened, unmount and clean up.
set -euo pipefail
cd "$(dirname "$0")/.."

contrib/ci/deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build >/dev/null
fi
ninja -C build >/dev/null
HOTFS=$PWD/build/hotfs

work=$(mktemp -d /tmp/hotfs-demo.XXXXXX)
src=$work/slow mnt=$work/view cache=$work/cache
cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then
		umount "$mnt" 2>/dev/null || fusermount3 -u "$mnt" || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "== a demo slow tree in $src"
mkdir -p "$src/docs" "$src/data" "$mnt"
for i in $(seq 1 200); do
	printf 'document %d\nhotfs demo line\n' "$i" > "$src/docs/doc$i.txt"
done
head -c $((32 << 20)) /dev/urandom > "$src/data/big.bin"
ln -s docs/doc1.txt "$src/latest"
echo "   $(find "$src" -type f | wc -l) files, $(du -sh "$src" | cut -f1)"

echo "== hotfs $src $mnt -o cachedir=$cache"
"$HOTFS" "$src" "$mnt" -o "cachedir=$cache"
mount | grep " $mnt " || { echo "not mounted"; exit 1; }

echo "== reading through the mount"
ls "$mnt"
cat "$mnt/latest"
echo "   $(grep -rl 'hotfs demo' "$mnt/docs" | wc -l) documents match 'hotfs demo'"
for pass in 1 2 3; do
	sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
	t0=$(date +%s%N)
	sum=$(md5sum < "$mnt/data/big.bin" | cut -d' ' -f1)
	t1=$(date +%s%N)
	echo "   pass $pass: big.bin md5 $sum in $(( (t1 - t0) / 1000000 )) ms"
done
[ "$sum" = "$(md5sum < "$src/data/big.bin" | cut -d' ' -f1)" ] &&
	echo "   identical to the source"

echo "== writing through the mount"
echo "written through hotfs" > "$mnt/docs/new.txt"
echo "   source now has: $(cat "$src/docs/new.txt")"

if [ -r "$mnt/.hotfs/stats" ]; then
	echo "== $mnt/.hotfs/stats"
	cat "$mnt/.hotfs/stats"
fi
echo "== cache store in $cache"
ls -la "$cache"

echo "== umount $mnt"
umount "$mnt"
echo "demo done"
