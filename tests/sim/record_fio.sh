#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Record the offsets fio's zipf(1.2) 4 KiB random-read job draws over a
# 1 GiB file and convert them for hotfs_sim, one access per 4 KiB block
# read (tests/sim/traces/fio-zipf1.2-4k.trace.gz was made with the
# defaults, fio 3.33 on Debian bookworm).
#
# usage: record_fio.sh [OUT [IO_SIZE]]
#	OUT	default tests/sim/traces/fio-zipf1.2-4k.trace.gz
#	IO_SIZE	bytes read in all, default 3072M: three times the file,
#		786,432 reads (the trace stays under 2 MB gzipped)
#
# The job is contrib/bench/run.sh's fio job read-only (psync, buffered,
# bs=4k, random_distribution=zipf:1.2, fio's own generator and default
# seed) over a sparse file in /var/tmp: no mount is needed, only the
# offsets matter.  fio seeds where zipf's ranks land from the file's
# name too: the same path gives the same offsets every run, another path
# other blocks with the same statistics; so the path is fixed.  Each read is one access: a
# random reader with the page cache dropped (or O_DIRECT) reaches the
# daemon with every read.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/traces/fio-zipf1.2-4k.trace.gz}
io_size=${2:-3072M}
tmp=/var/tmp/hotfs-sim-fio
mkdir "$tmp"
trap 'rm -rf "$tmp"' EXIT

truncate -s 1G "$tmp/fio.dat"
fio --name=zipf --filename="$tmp/fio.dat" --rw=randread --bs=4k \
	--ioengine=psync --direct=0 --random_distribution=zipf:1.2 \
	--size=1024M --io_size="$io_size" --write_iolog="$tmp/iolog" \
	--output=/dev/null
mkdir -p "$(dirname "$out")"
{
	echo "# fio $(fio --version | sed 's/^fio-//'): --rw=randread --bs=4k" \
	     "--ioengine=psync --random_distribution=zipf:1.2 --size=1024M" \
	     "--io_size=$io_size --write_iolog"
	echo "# hotfs_sim trace: file extent length (extent 4096)"
	echo "# grain 4096"
	echo "# pass 262144"	# reads of 4 KiB in 1 GiB
	awk '$3 == "read" { print 0, int($4 / 4096), $5 }' "$tmp/iolog"
} | gzip -9n > "$out"
ls -l "$out"
