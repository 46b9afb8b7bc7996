#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh: hotfs benchmarks against an emulated HDD (the method:
# contrib/bench/README.md).
#
#   contrib/bench/run.sh [--smoke] [--out DIR] [--work DIR] [--passes N]
#                        [--targets LIST] [--keep-images] [WORKLOAD...]
#
# Workloads (default: all of them, in this order; about an hour and a half
# at full size, of which gitgrep takes ~27 min and fio ~45 min: 84 passes
# of 30 s; fio-10 alone, with its four targets, took 25 min):
#   seq      1 MiB sequential reads of one large file, page cache dropped
#   rand     4 KiB random reads (fio, psync, buffered), page cache dropped
#   meta     find and git status over a ~11.7k-file git repository with warm
#            kernel caches (one untimed warm-up run, then the timed passes,
#            each 2 s after the previous run: BENCH_META_GAP); the two appear
#            as the workloads meta-find and meta-gitstatus
#   cp       cp of the large file off the tree onto the SSD, page cache dropped
#   gitgrep  git grep -q for an absent string over the repository, page cache
#            dropped
#   gitstatus  git status over the repository, page cache dropped (the
#            cold-start metadata issue's "git status likewise"; meta's
#            git status keeps the kernel's caches warm)
#   coldgrep gitgrep's passes with a cold start before each: hotfs unmounted
#            and mounted again as well as the page cache dropped (the
#            metadata snapshot and the store are all that is warm); against
#            hdd, ssd, hotfs@hdd and hotfs-never@hdd.  Not in the default
#            list: name it
#   scan     scan resistance, with a small cache (-o cachesize=, 1/4 of the
#            large file): passes 1-3 read a hot file (1/16 of the large
#            file), pass 4 reads the large file once, pass 5 the hot file
#            again; page cache dropped before each.  The target: pass 5's
#            hit ratio at least 90% of pass 3's
#   restart  passes 1-3 read the hot file, pass 4 after a remount of hotfs:
#            does the cache survive a restart?  The target: pass 4 within
#            10% of pass 3's time
#   fio      the fio matrix (contrib/bench/README.md section 4): 4 KiB
#            zipf(1.2) random I/O (fio psync, buffered, or O_DIRECT libaio
#            with BENCH_FIO_DIRECT, fdatasync after each write) for
#            BENCH_FIO_SECS per pass, at the cache:data ratios 1:25, 1:10, 1:5 and 1:2 (the
#            workloads fio-25 fio-10 fio-5 fio-2; each may be named alone);
#            each read/write mix of 100/0 70/30 50/50 0/100
#            (BENCH_FIO_MIXES; 100/0 50/50 0/100 with --smoke) runs
#            BENCH_FIO_PASSES passes in a row (3; 2 with --smoke) on the
#            same cache, page cache dropped before each; the target is
#            judged on the last read-only pass.
#            hdd, ssd and hotfs-nocache@hdd do not depend on the cache size
#            and run only in the first of them; hotfs@hdd runs in each, with
#            -o cachesize= the file's size / the ratio (at least 32 MiB).
#            Afterwards the file read through each hotfs target (page
#            cache dropped) must have the checksum of the file on the disk
#   fiomix   writes in flight through writearound and writethrough: fio
#            4 KiB zipf(1.1) random I/O, O_DIRECT, over a file of the large
#            file's size, against hdd, ssd, hotfs-wa@hdd and hotfs-wt@hdd
#            (-o cachesize= 1/8 of the file: 128 MiB; 32 MiB with --smoke),
#            each target on a file of its own (a write through one must not
#            change another's source behind its back).  Two workloads, one
#            per engine: fiomix-aio (libaio, queue depth 16) and
#            fiomix-psync (psync, 4 jobs); each may be named alone.  Passes
#            of BENCH_FIO_SECS, page cache dropped before each:
#            BENCH_FIOMIX_WARM (4; 2 with --smoke) read-only passes
#            (randread) that warm the cache, one 70/30 pass (randrw
#            rwmixread=70), one read-only pass.  Every pass of a hotfs
#            target records, in fiomix.csv, the IOPS, the bytes fio wrote
#            and the daemon's cached_bytes, invalidations_source_changed and
#            invalidations_write before and after it (with the pass's
#            writethrough_updates and promoted_bytes).  The targets: in
#            writethrough, the read-only pass after the mix at least 0.7x
#            the IOPS of the one before it; in both modes, cached_bytes
#            falls by at most the bytes the mix wrote (promotions during
#            the pass may hide a larger drop: promoted_bytes says how much
#            came in), and invalidations_source_changed stays 0.  Then the
#            file read through each hotfs target must have the checksum of
#            its file on the disk.  Not in the default list: name it
#            (fiomix names both; about 40 min at full size, estimated)
#   directrand  4 KiB random reads of the large file with O_DIRECT at
#            queue depth 1 (fio psync, RAND_SECS), page cache dropped: a
#            file partly cached by the passes before.  Not in the default
#            list: name it
#   directjobs  the same reads from 8 jobs at once (fio psync, numjobs=8,
#            group reporting): misses wait on the slow source while hits
#            go on; with FUSE over io_uring a handler that waits holds
#            back its CPU's queue (man hotfs).  Not in the default list:
#            name it
#   untar    a tar of the Go tree (without .git, on the SSD) extracted
#            into the target, each pass into an empty directory: a
#            create-heavy job (seconds; the tar's entries must all be
#            there after).  Not in the default list: name it
#   whole, wholedirect  the large file read once with cat (MB/s), or with
#            4 KiB O_DIRECT random reads at queue depth 1 (fio psync,
#            RAND_SECS; IOPS), page cache dropped, once a hotfs target
#            holds it whole (threshold=1, read before pass 1 until
#            cached_bytes says so; hotfs-pt@hdd: and its copy made).  The
#            daemon's CPU (user + system, /proc) in each pass goes to
#            cpu.csv and a table: per GiB read, per read.  Not in the
#            default list: name them
#   wholerw  the same reads as wholedirect through a read-write open
#            (fio randrw with rwmixread=100: fio opens the file O_RDWR and
#            writes nothing): such an open takes no passthrough, so the
#            daemon serves it, from the file's copy where one is (the
#            store let the records go once the copy was made).  Not in
#            the default list: name it
#
# Every pass of a hotfs target with the cache on also records the daemon's
# read counters (.hotfs/stats, before and after the pass): hits, partial
# hits and misses in requests and bytes, and the pass's hit ratio (hit bytes
# / bytes read through the daemon), in the CSV, the tables and a
# WORKLOAD-hitratio.png beside each WORKLOAD.png (fio-hitratio.png for fio);
# the whole stats file after each pass goes to stats-WORKLOAD-TARGET.txt.
# page_cache_drops counts drop_caches by anyone during the pass (another
# job on the machine: drop_caches is global).
#
# Targets, side by side in the same run (--targets narrows them):
#   hdd, ssd                  the trees read directly
#   ssd-rw                    cp only: the SSD's file copied with read(2) and
#                             write(2) of 128 KiB (dd), as cp copies from
#                             any other filesystem; cp of the SSD's own
#                             file is one in-kernel copy_file_range
#   hotfs-nocache@hdd         hotfs -o nocache over the HDD tree (FUSE floor)
#   hotfs@hdd                 hotfs with defaults, cachedir on the SSD
#   hotfs-never@hdd           hotfs -o revalidate=never, cachedir on the SSD
#                             (meta, gitgrep and gitstatus only)
#   hotfs-wa@hdd, hotfs-wt@hdd  hotfs -o writemode=writearound and
#                             writemode=writethrough, cachedir on the SSD
#                             (fiomix only)
#   hotfs-pt@hdd              hotfs -o passthrough=on (whole and
#                             wholedirect; gitgrep and gitstatus with
#                             BENCH_PASSTHROUGH=1), and BENCH_PT_OPTS
#                             (passthrough_min=0: small files too): needs a
#                             hotfs built against libfuse >= 3.17
#   hotfs-uring@hdd           hotfs -o fuse_uring=on (FUSE over io_uring),
#                             with BENCH_FUSE_URING=1 only, in gitgrep,
#                             gitstatus, directrand, directjobs and untar: needs a
#                             hotfs built against libfuse 3.18 (HOTFS_BIN)
#                             and the kernel's enable_uring set (man hotfs);
#                             hotfs@hdd then runs with fuse_uring=off
#   hotfs-nocache@ssd, hotfs@ssd   the same over the SSD tree (FUSE overhead
#                             against a fast source; seq, rand and meta;
#                             hotfs-nocache@ssd, a plain FUSE passthrough
#                             of the SSD, also in cp, gitgrep and gitstatus)
# gitgrep and gitstatus are judged against the SSD: from pass 3 on, the
# median of hotfs@hdd at most 1.5x the SSD's and of hotfs-never@hdd at most
# 1.3x (the cold-start metadata issue's targets).  cp likewise: from pass
# 3 on, the median of hotfs@hdd at most 1.15x the SSD's (the policy
# issue's target).
#
# Sizes: a 1 GiB large file and a 1 GiB fio file, a 64 MiB hot file and the
# Go tree, on sparse 8 GiB (HDD) and 16 GiB (SSD) images.  --smoke runs every
# workload at tiny sizes (64 MiB and 4 MiB files, src/image's 170 files,
# 1 GiB images, 1-2 passes, 1 s rand, three fio mixes of 2 x 0.3 s; every
# fio ratio then gets the 32 MiB minimum cache, so by default only fio-25
# and fio-10 run): about a minute and a half, under two.  Both exit non-zero
# if any step or check failed (a pass without figures or, on a cached
# target, without its hit ratio; a missing plot; targets disagreeing on
# find's count, a wrong cp copy, git grep finding the string, fio.dat
# differing through hotfs) or anything (mount, loop device, throttle,
# daemon) was left behind.
#
# Needs root, loop devices, the cgroup-v1 blkio controller, fio, git, jq and
# gnuplot.  Exits 77 when the machine cannot run it.
#
# Environment: HOTFS_BIN (default: build/hotfs in the repository, which
# the script then builds, after installing what it needs with
# contrib/ci/deps.sh: on a fresh Debian machine run.sh is the one command),
# BENCH_HOTFS_OPTS (extra -o options for every hotfs target),
# BENCH_NOCACHE_OPTS (options that turn caching off; default "nocache"),
# BENCH_META_GAP, BENCH_FIO_SECS (above; default 30, 0.3 with --smoke),
# BENCH_FIO_PASSES, BENCH_FIO_MIXES (above), BENCH_FIO_DIRECT (fio's
# readers O_DIRECT with libaio at this queue depth; 0, the default: psync
# through the page cache), BENCH_FIOMIX_WARM (fiomix's read-only passes
# before its mix), BENCH_QUIET_SECS (how long a
# pass waits for the promotions queued before it; 120, 10 with --smoke),
# BENCH_TREE_SRC (the source tree copied into the repository; default
# /usr/share/go-1.19).

set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=contrib/bench/lib.sh
. "$here/lib.sh"

usage()
{
	sed -n '4,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit "${1:-2}"
}

# ------------------------------------------------------------- options --

BENCH_CMDLINE="contrib/bench/run.sh${*:+ $*}"
smoke=0
out=""
work=""
passes_override=""
targets_override=""
BENCH_KEEP_IMAGES=0
workloads=()
while (( $# )); do
	case $1 in
	--smoke) smoke=1 ;;
	--out) out=$2; shift ;;
	--work) work=$2; shift ;;
	--passes) passes_override=$2; shift ;;
	--targets) targets_override=$2; shift ;;
	--keep-images) BENCH_KEEP_IMAGES=1 ;;
	-h|--help) usage 0 ;;
	-*) usage ;;
	*) workloads+=("$1") ;;
	esac
	shift
done
(( ${#workloads[@]} )) ||
	workloads=(seq rand meta cp gitgrep gitstatus scan restart
		   "$( (( smoke )) && echo fio-smoke || echo fio)"
		   "$( (( smoke )) && echo wb-smoke || echo wb)")

# The fio matrix: cache:data ratios (1:N) and read percentages; the
# writeback matrix's ratios.
FIO_RATIOS=(25 10 5 2)
FIOWB_RATIOS=(10 2)

# Expand aliases and check names.
wl_list=()
for w in "${workloads[@]}"; do
	case $w in
	meta) wl_list+=(meta-find meta-gitstatus) ;;
	fio) wl_list+=("${FIO_RATIOS[@]/#/fio-}") ;;
	fio-smoke)
		# at smoke size every ratio gets the same 32 MiB minimum
		# cache: beyond the first and the judged one, the others
		# would repeat the same run
		wl_list+=(fio-25 fio-10) ;;
	fio-[1-9]|fio-[1-9][0-9]|fio-[1-9][0-9][0-9]) wl_list+=("$w") ;;
	wb) wl_list+=(wbrand wbsync "${FIOWB_RATIOS[@]/#/fiowb-}") ;;
	wb-smoke) wl_list+=(wbrand wbsync fiowb-10) ;;
	wbrand|wbsync|fiowb-[1-9]|fiowb-[1-9][0-9]) wl_list+=("$w") ;;
	fiomix) wl_list+=(fiomix-aio fiomix-psync) ;;
	fiomix-aio|fiomix-psync) wl_list+=("$w") ;;
	seq|rand|meta-find|meta-gitstatus|cp|gitgrep|gitstatus|coldgrep|scan|restart|directrand|directjobs|untar|whole|wholedirect|wholerw) wl_list+=("$w") ;;
	*) bench_die "unknown workload: $w" ;;
	esac
done

BENCH_HDD_IOPS=200
BENCH_HDD_BPS=104857600
BENCH_HOTFS_BIN=${HOTFS_BIN:-$repo/build/hotfs}
BENCH_HOTFS_OPTS=${BENCH_HOTFS_OPTS:-}
BENCH_NOCACHE_OPTS=${BENCH_NOCACHE_OPTS:-nocache}
GREP_ABSENT=hotfs-bench-string-that-is-nowhere-in-the-tree
TREE_SRC=${BENCH_TREE_SRC:-/usr/share/go-1.19}

if (( smoke )); then
	HDD_SIZE=1G SSD_SIZE=1G BIG_MIB=64 RAND_SECS=1 BENCH_VERIFY_SECS=2
	TREE_SUB=src/image
	declare -A PASSES=([seq]=1 [rand]=1 [meta-find]=1 [meta-gitstatus]=1
			   [cp]=2 [gitgrep]=2 [gitstatus]=2 [coldgrep]=2 [scan]=5 [restart]=4
			   [directrand]=2 [directjobs]=2 [untar]=2
			   [whole]=2 [wholedirect]=2 [wholerw]=2)
	FIO_SECS=${BENCH_FIO_SECS:-0.3}
	FIO_REPS=${BENCH_FIO_PASSES:-2}
	# read-only, mixed and write-only: each path once, in the time the
	# four mixes took with one pass each
	read -r -a FIO_MIXES <<< "${BENCH_FIO_MIXES:-100 50 0}"
	read -r -a FIOWB_MIXES <<< "${BENCH_FIOWB_MIXES:-50}"
	FIOMIX_WARM=${BENCH_FIOMIX_WARM:-2}
else
	HDD_SIZE=8G SSD_SIZE=16G BIG_MIB=1024 RAND_SECS=20 BENCH_VERIFY_SECS=3
	TREE_SUB=.
	declare -A PASSES=([seq]=3 [rand]=3 [meta-find]=5 [meta-gitstatus]=5
			   [cp]=8 [gitgrep]=8 [gitstatus]=8 [coldgrep]=8 [scan]=5 [restart]=4
			   [directrand]=3 [directjobs]=3 [untar]=3
			   [whole]=3 [wholedirect]=3 [wholerw]=3)
	FIO_SECS=${BENCH_FIO_SECS:-30}
	FIO_REPS=${BENCH_FIO_PASSES:-3}
	read -r -a FIO_MIXES <<< "${BENCH_FIO_MIXES:-100 70 50 0}"
	read -r -a FIOWB_MIXES <<< "${BENCH_FIOWB_MIXES:-70 50}"
	FIOMIX_WARM=${BENCH_FIOMIX_WARM:-4}
fi
PASSES[wbrand]=1
PASSES[wbsync]=1
if [ -n "$passes_override" ]; then
	# scan's and restart's passes are steps, not repetitions
	for w in "${!PASSES[@]}"; do
		[[ $w == scan || $w == restart ]] ||
			PASSES[$w]=$passes_override
	done
fi
[[ $FIO_REPS =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_FIO_PASSES: not a count: $FIO_REPS"
[[ $FIOMIX_WARM =~ ^[1-9][0-9]*$ ]] ||
	bench_die "BENCH_FIOMIX_WARM: not a count: $FIOMIX_WARM"
# fio's readers: psync through the page cache (the default), or O_DIRECT
# with libaio at a queue depth (BENCH_FIO_DIRECT=16), as the seeds' jobs
case ${BENCH_FIO_DIRECT:-0} in
0) FIO_ENGINE=(--ioengine=psync --direct=0); FIO_HOW="psync, buffered" ;;
[1-9]|[1-9][0-9]|[1-9][0-9][0-9])
	FIO_ENGINE=(--ioengine=libaio --direct=1 --iodepth="$BENCH_FIO_DIRECT")
	FIO_HOW="libaio, O_DIRECT, queue depth $BENCH_FIO_DIRECT" ;;
*) bench_die "BENCH_FIO_DIRECT: not a queue depth: $BENCH_FIO_DIRECT" ;;
esac
for m in "${FIO_MIXES[@]}"; do
	[[ $m =~ ^[0-9]+$ ]] && (( m <= 100 )) ||
		bench_die "BENCH_FIO_MIXES: not a read percentage: $m"
done
# fio's passes are its mixes, FIO_REPS in a row each (the cache stays warm
# from one to the next); the first fio workload runs the targets that do
# not depend on the cache size.
FIO_FIRST=""
FIOWB_FIRST=""
FIOMIX_ANY=0
for w in "${wl_list[@]}"; do
	case $w in
	# fiomix's passes are steps: the warm-up, the mix, the pass after it
	fiomix-*)
		PASSES[$w]=$(( FIOMIX_WARM + 2 ))
		FIOMIX_ANY=1 ;;
	fio-*)
		PASSES[$w]=$(( ${#FIO_MIXES[@]} * FIO_REPS ))
		[ -n "$FIO_FIRST" ] || FIO_FIRST=$w ;;
	fiowb-*)
		PASSES[$w]=$(( ${#FIOWB_MIXES[@]} * FIO_REPS ))
		[ -n "$FIOWB_FIRST" ] || FIOWB_FIRST=$w ;;
	esac
done
# a writeback target's dirty data is flushed before a pass of another
# target starts (it would write to the same disk meanwhile)
FLUSH_SECS=${BENCH_FLUSH_SECS:-900}

skip() { bench_log "skipped: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
[ -e /dev/loop-control ] || skip "no loop devices"
[ -d /sys/fs/cgroup/blkio ] || skip "no cgroup-v1 blkio controller"
[ -e /dev/fuse ] || skip "no /dev/fuse"
# Run on its own (no HOTFS_BIN: not from tests/run.sh, which has done
# both), the suite sets itself up on a fresh machine: the packages it
# needs, then the daemon built in build/ (ninja rebuilds what changed).
if [ -z "${HOTFS_BIN:-}" ]; then
	HOTFS_DEPS_EXTRA=1 "$repo/contrib/ci/deps.sh" ||
		skip "could not install the packages it needs (contrib/ci/deps.sh)"
	if [ ! -f "$repo/build/build.ninja" ]; then
		meson setup "$repo/build" >/dev/null ||
			bench_die "meson setup $repo/build failed"
	fi
	ninja -C "$repo/build" >/dev/null || bench_die "building hotfs failed"
fi
for t in fio git jq gnuplot losetup mkfs.ext4 lsblk; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done
[ -d "$TREE_SRC/$TREE_SUB" ] || skip "no source tree at $TREE_SRC"
[ -x "$BENCH_HOTFS_BIN" ] ||
	bench_die "no hotfs binary at $BENCH_HOTFS_BIN (build it, or set HOTFS_BIN)"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
if [ -z "$work" ]; then
	work=/var/tmp/hotfs-bench.$$
	BENCH_WORK_OWNED=$work
fi
[ -n "$out" ] || out=/var/tmp/hotfs-bench-results/$stamp
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd)
out=$(cd "$out" && pwd)
CSV=$out/results.csv
FIOMIX_CSV=$out/fiomix.csv
TABLES=$out/tables.md

bench_install_traps
bench_can_throttle "$work" || skip "$BENCH_WHY"

# -------------------------------------------------------------- targets --

ALL_TARGETS=(hdd ssd hotfs-nocache@hdd hotfs@hdd hotfs-nocache@ssd hotfs@ssd)
URING_TARGETS=()
[ "${BENCH_FUSE_URING:-0}" = 0 ] || URING_TARGETS=(hotfs-uring@hdd)
PT_TARGETS=()
[ "${BENCH_PASSTHROUGH:-0}" = 0 ] || PT_TARGETS=(hotfs-pt@hdd)
META_TARGETS=(hdd ssd hotfs-nocache@hdd hotfs@hdd hotfs-never@hdd
	      hotfs-nocache@ssd)

# The targets a workload runs against (--targets filters them).
targets_for()
{
	local t list
	case $1 in
	cp) list=(hdd ssd ssd-rw hotfs-nocache@hdd hotfs@hdd hotfs-nocache@ssd) ;;
	"$FIO_FIRST") list=(hdd ssd hotfs-nocache@hdd hotfs@hdd) ;;
	"$FIOWB_FIRST") list=(hdd ssd hotfs-nocache@hdd hotfs-wb@hdd) ;;
	# not hotfs-nocache@hdd: its source is written through the page cache
	# (the daemon opens it without O_DIRECT), so its figure is the page
	# cache's, and the gigabytes it leaves dirty take minutes to reach
	# the HDD after the pass
	wbrand) list=(hdd ssd hotfs-wb@hdd) ;;
	wbsync) list=(hdd ssd hotfs-nocache@hdd hotfs-nocache@ssd hotfs-wb@hdd) ;;
	fiowb-*) list=(hotfs-wb@hdd) ;;
	fiomix-*) list=(hdd ssd hotfs-wa@hdd hotfs-wt@hdd) ;;
	gitgrep|gitstatus) list=("${META_TARGETS[@]}" "${URING_TARGETS[@]}" "${PT_TARGETS[@]}") ;;
	directrand|directjobs|untar) list=(hdd ssd hotfs@hdd "${URING_TARGETS[@]}") ;;
	whole|wholedirect|wholerw) list=(hdd ssd hotfs@hdd hotfs-pt@hdd "${URING_TARGETS[@]}") ;;
	meta-*) list=("${ALL_TARGETS[@]}" hotfs-never@hdd) ;;
	fio-*) list=(hotfs@hdd) ;;
	scan|restart) list=(hdd hotfs-nocache@hdd hotfs@hdd) ;;
	coldgrep) list=(hdd ssd hotfs@hdd hotfs-never@hdd) ;;
	*) list=("${ALL_TARGETS[@]}") ;;
	esac
	for t in "${list[@]}"; do
		[ -z "$targets_override" ] ||
			[[ ",$targets_override," == *",$t,"* ]] || continue
		printf '%s\n' "$t"
	done
}

target_base()
{
	case $1 in
	*@*) printf '%s\n' "${1#*@}" ;;
	ssd-rw) echo ssd ;;
	*) printf '%s\n' "$1" ;;
	esac
}

# Where a target's data tree is seen.
target_root()
{
	case $1 in
	*@*) printf '%s/mnt/%s\n' "$work" "$1" ;;
	*) printf '%s/data\n' "${DISK_MNT[$(target_base "$1")]}" ;;
	esac
}

# The cache size scan and fio use, in MiB: the store wants two 16 MiB
# regions at least, which the smoke's sizes would go below.
cache_mib() { echo $(( $1 > 32 ? $1 : 32 )); }

# Options a workload adds for the cached targets.
wl_hotfs_opts()
{
	case $1 in
	scan) echo ",cachesize=$(cache_mib $(( BIG_MIB / 4 )))M" ;;
	fio-*) echo ",cachesize=$(cache_mib $(( BIG_MIB / ${1#fio-} )))M" ;;
	# writeback: the log as large as the store (at least 16 MiB)
	fiowb-*) echo ",cachesize=$(cache_mib $(( BIG_MIB / ${1#fiowb-} )))M,writeback_log=$(cache_mib $(( BIG_MIB / ${1#fiowb-} )))M" ;;
	# random writes over the whole file: a log of 2.5 x the file (each
	# 4 KiB write is a record of a header block and a data block), the
	# store at its minimum (nothing is read)
	wbrand|wbsync) echo ",cachesize=32M,writeback_log=$(( BIG_MIB * 5 / 2 ))M" ;;
	# 1:8 of the file: 128 MiB at full size
	fiomix-*) echo ",cachesize=$(cache_mib $(( BIG_MIB / 8 )))M" ;;
	# the file cached whole by one read (wl_prepare), the copy beside it
	whole|wholedirect|wholerw) echo ",threshold=1,promote_rate=0,cachesize=$(( BIG_MIB * 3 ))M" ;;
	esac
}

# mount_target WL TARGET: mount one hotfs target, keeping its cachedir; its
# log is hotfs-WL-TARGET.log (a remount appends to it).
mount_target()
{
	local wl=$1 t=$2 base cache opts
	base=$(target_base "$t")
	cache=${DISK_MNT[ssd]}/cache/$t
	case $t in
	hotfs-nocache@*) opts=cachedir=$cache,$BENCH_NOCACHE_OPTS ;;
	hotfs-never@*) opts=cachedir=$cache,revalidate=never$(wl_hotfs_opts "$wl") ;;
	hotfs-wb@*) opts=cachedir=$cache,writemode=writeback$(wl_hotfs_opts "$wl") ;;
	hotfs-wa@*) opts=cachedir=$cache,writemode=writearound$(wl_hotfs_opts "$wl") ;;
	hotfs-wt@*) opts=cachedir=$cache,writemode=writethrough$(wl_hotfs_opts "$wl") ;;
	hotfs-uring@*) opts=cachedir=$cache,fuse_uring=on$(wl_hotfs_opts "$wl") ;;
	hotfs-pt@*) opts=cachedir=$cache,passthrough=on${BENCH_PT_OPTS:+,$BENCH_PT_OPTS}$(wl_hotfs_opts "$wl") ;;
	*) opts=cachedir=$cache$(wl_hotfs_opts "$wl")
	   # beside hotfs-uring@hdd: through /dev/fuse, whatever auto says
	   [ "${BENCH_FUSE_URING:-0}" = 0 ] || opts+=,fuse_uring=off ;;
	esac
	[ -z "$BENCH_HOTFS_OPTS" ] || opts+=,$BENCH_HOTFS_OPTS
	hotfs_mount "${DISK_MNT[$base]}/data" "$(target_root "$t")" \
		"$opts" "$out/hotfs-$wl-$t.log"
}

# Each workload starts with empty caches.
mount_targets()
{
	local wl=$1 t
	shift
	for t in "$@"; do
		[[ $t == hotfs* ]] || continue
		rm -rf "${DISK_MNT[ssd]}/cache/$t"
		mount_target "$wl" "$t"
	done
}

# The daemon's own account of the workload (hits, misses, promotions and
# why not), kept beside the CSV: it explains the numbers in the tables.
# stats-WL-TARGET.txt holds one snapshot after each pass ("== after pass N"),
# then the final one ("== end"), taken after the workload's checks.
save_stats()
{
	local wl=$1 what=$2 t f
	shift 2
	for t in "$@"; do
		[[ $t == hotfs* ]] || continue
		f=$out/stats-$wl-$t.txt
		[ "$what" != "pass 1" ] || : > "$f"
		{
			printf '== %s\n' "$what"
			cat "$(target_root "$t")/.hotfs/stats" 2>/dev/null ||
				echo "(no .hotfs/stats)"
		} >> "$f"
	done
}

# hit_stat TARGET: the target's read counters, "hits partial_hits misses
# hit_bytes miss_bytes" (requests, then bytes), or "- - - - -" where there
# are none (not hotfs, or hotfs with the cache off).
hit_stat()
{
	local f
	f=$(target_root "$1")/.hotfs/stats
	[[ $1 == hotfs* ]] && [ -r "$f" ] || { echo "- - - - -"; return; }
	# without open round trips (revalidate=never) the kernel may serve a
	# read from the pages of the last one for up to a tick: a stat first
	# makes the daemon render a new snapshot (hotfs.8, .hotfs)
	stat "$f" >/dev/null 2>&1 || true
	awk -F': *' '{ v[$1] = $2 }
		END {
			if (!("read_hit_bytes" in v)) { print "- - - - -"; exit }
			print v["read_hits"], v["read_partial_hits"],
			      v["read_misses"], v["read_hit_bytes"],
			      v["read_miss_bytes"]
		}' "$f"
}

# hit_delta "BEFORE" "AFTER": the pass's share of hit_stat's counters, and
# its hit ratio in bytes (hit bytes / bytes read through the daemon; "-"
# when no read reached it).  A counter that went back (the daemon was
# restarted) counts from zero.
hit_delta()
{
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		if (x[1] == "-" || y[1] == "-") { print "- - - - - -"; exit }
		for (i = 1; i <= n; i++) {
			d[i] = y[i] - x[i]
			if (d[i] < 0) d[i] = y[i]
		}
		r = d[4] + d[5] > 0 ? sprintf("%.4f", d[4] / (d[4] + d[5])) : "-"
		print d[1], d[2], d[3], d[4], d[5], r
	}'
}

umount_targets()
{
	local wl=$1 t
	shift
	for t in "$@"; do
		[[ $t == hotfs* ]] || continue
		hotfs_umount "$(target_root "$t")" ||
			bench_die "unmounting $t failed (see $out/hotfs-$wl-$t.log)"
	done
}

# ----------------------------------------------------------- workloads --
#
# wl_NAME ROOT runs one pass over the tree at ROOT and sets RES to
# "seconds mb_per_s iops p99_us" ("-" where a column does not apply).  They run
# in this shell, not in a subshell, so that their checks can keep state.

wl_seq()
{
	local j=$out/fio-last.json bps iops p99 bytes
	fio_json "$j" --name=seq --filename="$1/big" --readonly --rw=read \
		--bs=1M --ioengine=psync --direct=0 --fadvise_hint=0 \
		--size="${BIG_MIB}M"
	read -r bps iops p99 bytes < <(fio_read_summary "$j")
	RES=$(awk -v b="$bps" -v n="$bytes" -v p="$p99" \
		'BEGIN { printf "%.3f %.1f - %.0f\n", n / b, b / 1e6, p }')
}

# rand_read DIR NAME DIRECT: 4 KiB random reads of DIR/big, psync
# (DIRECT: 0 through the page cache, 1 O_DIRECT); fio's default
# fadvise_hint: POSIX_FADV_RANDOM, as a random reader would say; the run
# ends after RAND_SECS or once every block of the file was read once
# (fio's random map: no block twice, so no page cache hits; a fast disk
# finishes early).
rand_read()
{
	local j=$out/fio-last.json bps iops p99 bytes
	local mode=(--readonly --rw=randread)
	# wholerw: a read-write open that reads only
	[ "$2" != wholerw ] || mode=(--rw=randrw --rwmixread=100)
	fio_json "$j" --name="$2" --filename="$1/big" "${mode[@]}" \
		--bs=4k --ioengine=psync --direct="$3" \
		--size="${BIG_MIB}M" --runtime="$RAND_SECS" \
		--numjobs="${4:-1}" --group_reporting
	read -r bps iops p99 bytes < <(fio_read_summary "$j")
	RES=$(awk -v b="$bps" -v i="$iops" -v p="$p99" -v n="$bytes" \
		'BEGIN { printf "%.3f %.2f %.1f %.0f\n", n / b, b / 1e6, i, p }')
}

wl_rand() { rand_read "$1" rand 0; }

wl_directrand() { rand_read "$1" directrand 1; }

wl_directjobs() { rand_read "$1" directjobs 1 8; }

# whole, wholedirect: a file the cache holds whole (wl_prepare): read once
# sequentially (seconds), or 4 KiB O_DIRECT random reads at queue depth 1
wl_whole()
{
	local t0 t1
	t0=$EPOCHREALTIME
	cat "$1/big" > /dev/null
	t1=$EPOCHREALTIME
	RES=$(awk -v a="$t0" -v b="$t1" -v m="$BIG_MIB" \
		'BEGIN { printf "%.3f %.1f - -\n", b - a, m * 1048576 / (b - a) / 1e6 }')
}

wl_wholedirect() { rand_read "$1" wholedirect 1; }

wl_wholerw() { rand_read "$1" wholerw 1; }

# A stat of a mount's .hotfs/stats, as a number (0 if absent).
mnt_stat() { awk -F': *' -v k="$2" '$1 == k { print $2 + 0; f = 1 } END { if (!f) print 0 }' "$1/.hotfs/stats"; }

# whole, wholedirect, before the first pass: the file read through a hotfs
# target until the store holds it whole, then (passthrough) opened until
# its copy is made.
whole_warm()
{
	local root=$1 t=$2 i
	for (( i = 0; i < 5; i++ )); do
		(( $(mnt_stat "$root" cached_bytes) >= BIG_MIB * 1048576 )) && break
		cat "$root/big" > /dev/null
		wait_promotions
	done
	(( $(mnt_stat "$root" cached_bytes) >= BIG_MIB * 1048576 )) ||
		bench_die "$t: the store does not hold the whole file"
	[ "${t%%@*}" = hotfs-pt ] || return 0
	if awk -F': *' '$1 == "passthrough" && $2 ~ /^off/ { f = 1 } END { exit !f }' \
		"$root/.hotfs/stats"; then
		bench_log "$t: $(grep '^passthrough:' "$root/.hotfs/stats")" \
			"(this build, kernel or user): measured without it"
		return 0
	fi
	head -c 1 "$root/big" > /dev/null
	bench_wait_until 600 "$t: the file's copy" has_copy "$root" ||
		bench_die "$t: no copy of the file was made"
}

has_copy() { (( $(mnt_stat "$1" copies) >= 1 )); }

# The daemon's CPU seconds (user + system) so far, of the target's mount.
daemon_cpu()
{
	local pid=${BENCH_HOTFS_PID[$1]:-}
	[ -n "$pid" ] || { echo 0; return; }
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); split($0, f, " ");
		printf "%.3f\n", (f[12] + f[13]) / hz }' "/proc/$pid/stat"
}

# timed CMD...: run CMD, RES gets its wall time in seconds.
timed()
{
	local t0 t1
	t0=$EPOCHREALTIME
	"$@"
	t1=$EPOCHREALTIME
	RES=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f - - -\n", b - a }')
}

find_go() { find "$1/go" -type f -name '*.go' > "$out/find-last.txt"; }

wl_meta-find()
{
	timed find_go "$1"
	check_same "find count" "$(wc -l < "$out/find-last.txt")"
}

git_status() { git -C "$1/go" status --porcelain > "$out/status-last.txt"; }

wl_meta-gitstatus()
{
	timed git_status "$1"
	[ ! -s "$out/status-last.txt" ] ||
		bench_log "warning: git status is not clean under $1: $(head -3 "$out/status-last.txt")"
}

# cp of the SSD's own file onto the SSD is one in-kernel copy
# (copy_file_range within one filesystem); from any other filesystem, a
# FUSE mount included, cp gets EXDEV and reads and writes 128 KiB at a
# time.  ssd-rw is that second way over the SSD's file: dd's read(2) and
# write(2) of the same size.
cp_big()
{
	if [ "$TARGET" = ssd-rw ]; then
		dd if="$1/big" of="${DISK_MNT[ssd]}/scratch/big.copy" \
			bs=128K status=none
	else
		cp "$1/big" "${DISK_MNT[ssd]}/scratch/big.copy"
	fi
}

wl_cp()
{
	timed cp_big "$1"
	cmp -s "${DISK_MNT[ssd]}/scratch/big.copy" "${DISK_MNT[ssd]}/data/big" ||
		bench_die "cp from $1 copied wrong data"
	rm -f "${DISK_MNT[ssd]}/scratch/big.copy"
}

git_grep()
{
	local rc=0
	git -C "$1/go" grep -q "$GREP_ABSENT" || rc=$?
	[ "$rc" = 1 ] || bench_die "git grep under $1 exited with $rc (expected 1: not found)"
}

wl_gitgrep() { timed git_grep "$1"; }

wl_gitstatus()
{
	timed git_status "$1"
	[ ! -s "$out/status-last.txt" ] ||
		bench_log "warning: git status is not clean under $1: $(head -3 "$out/status-last.txt")"
}
# untar: the tar (made once, on the SSD: untar_tar) extracted into an
# empty directory of the target (wl_prepare empties it, untimed).
untar_tar() { echo "${DISK_MNT[ssd]}/scratch/go-untar.tar"; }

untar_into() { mkdir "$1/untar" && tar -xf "$(untar_tar)" -C "$1/untar"; }

wl_untar()
{
	local t n
	t=$(untar_tar)
	if [ ! -f "$t" ]; then
		tar -cf "$t" --exclude=.git -C "${DISK_MNT[ssd]}/data" go
		tar -tf "$t" | wc -l > "$t.count"
	fi
	timed untar_into "$1"
	n=$(find "$1/untar" -mindepth 1 | wc -l)
	[ "$n" = "$(cat "$t.count")" ] ||
		bench_die "untar into $1: $n entries, the tar has $(cat "$t.count")"
}

# coldgrep: before every pass but the first (a fresh mount already) each
# hotfs target is unmounted and mounted again (wl_prepare), so a pass
# finds nothing the daemon kept in memory: what it does not read from the
# HDD comes from the cachedir on the SSD (extents, metadata snapshot).
wl_coldgrep() { timed git_grep "$1"; }

# scan: PASS (set by run_pass) picks the step.
read_file() { cat "$1" > /dev/null; }

wl_scan()
{
	if [ "$PASS" = 4 ]; then
		timed read_file "$1/big"
	else
		timed read_file "$1/hot"
	fi
}

# restart: passes 1-3 read the hot file; before pass 4 each hotfs target is
# unmounted and mounted again (wl_prepare: outside the timing and the pass's
# disk and hit counts), so pass 4 shows whether the cache survived the
# restart.
wl_restart() { timed read_file "$1/hot"; }

# The read/write mix of fio pass N: each mix runs FIO_REPS passes in a row
# (of the writeback matrix's mixes in a fiowb workload).
fio_mix()
{
	if [[ ${WL:-} == fiowb-* ]]; then
		echo "${FIOWB_MIXES[($1 - 1) / FIO_REPS]}"
	else
		echo "${FIO_MIXES[($1 - 1) / FIO_REPS]}"
	fi
}

# fio_res JSON: a mixed pass's RES from fio's JSON: seconds, MB/s, IOPS
# (reads and writes), and p99 in us of the reads, or of the writes in a
# write-only mix.
fio_res()
{
	jq -r '.jobs[0] | [ ([.read.runtime, .write.runtime] | max) / 1000,
		(.read.bw_bytes + .write.bw_bytes) / 1e6,
		.read.iops + .write.iops,
		(if .read.io_bytes > 0 then .read.clat_ns.percentile["99.000000"]
		 else .write.clat_ns.percentile["99.000000"] end) / 1000 ]
		| map(tostring) | join(" ")' "$1"
}

# fio-N (all ratios alike; the cache size is a mount option): PASS picks the
# read/write mix.
wl_fio()
{
	local j=$out/fio-last.json mix
	mix=$(fio_mix "$PASS")
	# Buffered, as through the page cache, but every write is made durable
	# (fdatasync) so that writes reach the disk under test in the pass.
	fio_json "$j" --name=zipf --filename="$1/fio.dat" --rw=randrw \
		--rwmixread="$mix" --bs=4k "${FIO_ENGINE[@]}" \
		--random_distribution=zipf:1.2 --size="${BIG_MIB}M" \
		--runtime="$(awk -v s="$FIO_SECS" 'BEGIN { printf "%dms", s * 1000 }')" \
		--time_based --fdatasync=1
	RES=$(fio_res "$j")
}

# fio_write ROOT NAME FILE ARGS...: one pass of 4 KiB random writes of a
# write-only job; RES from its writes.
fio_write()
{
	local j=$out/fio-last.json root=$1 name=$2 file=$3
	shift 3
	fio_json "$j" --name="$name" --filename="$root/$file" --rw=randwrite \
		--bs=4k --size="${BIG_MIB}M" "$@" \
		--runtime="$(awk -v s="$FIO_SECS" 'BEGIN { printf "%dms", s * 1000 }')" \
		--time_based
	RES=$(jq -r '.jobs[0].write | [ .runtime / 1000, .bw_bytes / 1e6,
		.iops, .clat_ns.percentile["99.000000"] / 1000 ]
		| map(tostring) | join(" ")' "$j")
}

# wbrand: the dm-writecache article's job (O_DIRECT, libaio, queue depth
# 32); wbsync: one writer, fdatasync after each write (a database's log).
wl_wbrand() { fio_write "$1" wbrand wb.dat --ioengine=libaio --iodepth=32 --direct=1; }
wl_wbsync() { fio_write "$1" wbsync wb.dat --ioengine=psync --direct=0 --fdatasync=1; }

# The file a write workload writes.
wl_file() { case $1 in wbrand|wbsync) echo wb.dat ;; *) echo fio.dat ;; esac; }

# fiomix: the file each target reads and writes.  hdd and ssd have
# fiomix.dat on their disks; each hotfs target over the HDD a copy of its
# own (fiomix-wa.dat, fiomix-wt.dat), so that no other target's writes
# change the source behind its mount.
fiomix_file()
{
	local t=${1%%@*}
	case $t in
	hotfs*) printf 'fiomix-%s.dat\n' "${t#hotfs-}" ;;
	*) echo fiomix.dat ;;
	esac
}

# fiomix's read percentage in pass N: read-only, but the one after the
# warm-up, 70/30.
fiomix_read() { (( $1 == FIOMIX_WARM + 1 )) && echo 70 || echo 100; }

# fio's engine in each fiomix workload: 16 requests in flight from one
# libaio job, or 4 psync jobs (one each); O_DIRECT both, as in the issue.
fiomix_engine()
{
	case $1 in
	fiomix-aio) echo "--ioengine=libaio --direct=1 --iodepth=16" ;;
	fiomix-psync) echo "--ioengine=psync --direct=1 --numjobs=4 --group_reporting" ;;
	esac
}

# mix_stat TARGET: the counters fiomix records from .hotfs/stats,
# "cached_bytes invalidations_source_changed invalidations_write
# writethrough_updates promoted_bytes", or "- - - - -" for a target that is
# not hotfs.
mix_stat()
{
	local f
	f=$(target_root "$1")/.hotfs/stats
	[[ $1 == hotfs* ]] && [ -r "$f" ] || { echo "- - - - -"; return; }
	stat "$f" >/dev/null 2>&1 || true	# a fresh snapshot (hit_stat)
	awk -F': *' '{ v[$1] = $2 }
		END {
			n = split("cached_bytes invalidations_source_changed " \
				  "invalidations_write writethrough_updates " \
				  "promoted_bytes", k, " ")
			for (i = 1; i <= n; i++)
				printf "%s%s", (k[i] in v ? v[k[i]] : "-"),
				       (i < n ? " " : "\n")
		}' "$f"
}

# fiomix (both engines; PASS picks the read/write mix): one pass over the
# target's own file, and its line in fiomix.csv: the pass's figures, the
# bytes fio read and wrote, and mix_stat's counters just before and just
# after fio (those of the pass alone: promotions it queued land after).
wl_fiomix()
{
	local j=$out/fio-last.json rd a b i bytes
	local -a s0 s1 engine rw
	rd=$(fiomix_read "$PASS")
	if (( rd == 100 )); then
		rw=(--rw=randread --readonly)
	else
		rw=(--rw=randrw --rwmixread="$rd")
	fi
	read -r -a engine <<< "$(fiomix_engine "$WL")"
	read -r -a s0 < <(mix_stat "$TARGET")
	fio_json "$j" --name="$WL" --filename="$1/$(fiomix_file "$TARGET")" \
		"${rw[@]}" --bs=4k "${engine[@]}" \
		--random_distribution=zipf:1.1 --size="${BIG_MIB}M" \
		--runtime="$(awk -v s="$FIO_SECS" 'BEGIN { printf "%dms", s * 1000 }')" \
		--time_based
	read -r -a s1 < <(mix_stat "$TARGET")
	RES=$(fio_res "$j")
	bytes=$(jq -r '.jobs[0] | "\(.read.io_bytes) \(.write.io_bytes)"' "$j")
	# cached_bytes and the invalidations before and after; the others
	# as the pass's share
	a="" b=""
	for i in 0 1 2; do
		a+=",${s0[i]},${s1[i]}"
	done
	for i in 3 4; do
		if [[ ${s0[i]} == - || ${s1[i]} == - ]]; then
			b+=",-"
		else
			b+=",$(( s1[i] - s0[i] ))"
		fi
	done
	printf '%s,%s,%s,%s,%s,%s%s%s\n' "$WL" "$TARGET" "$PASS" "$rd" \
		"$(awk -v r="$RES" 'BEGIN { split(r, f, " "); print f[3] }')" \
		"${bytes// /,}" "$a" "$b" >> "$FIOMIX_CSV"
}

# After fiomix: each hotfs target shows what the disk holds in its file
# (writethrough's updated blocks included), page cache dropped as in
# fio_check_data.
fiomix_check_data()
{
	local t base f sum want t0
	for t in "$@"; do
		[[ $t == hotfs* ]] || continue
		base=$(target_base "$t")
		f=$(fiomix_file "$t")
		bench_drop_caches
		t0=$SECONDS
		sum=$(md5sum < "$(target_root "$t")/$f")
		want=$(md5sum < "${DISK_MNT[$base]}/data/$f")
		[ "$sum" = "$want" ] ||
			bench_die "$t: $f read through hotfs differs from the file on the disk"
		bench_log "$f read through $t is identical to the file on the" \
			"disk ($(( SECONDS - t0 )) s)"
	done
}

# A writeback target's dirty data, in bytes ("" when it has no stats).
dirty_bytes()
{
	awk -F': *' '$1 == "dirty_bytes" { print $2 }' "$1/.hotfs/stats" 2>/dev/null
}

# Before a pass, every mounted writeback target has flushed what it holds
# (its flusher would write to the disk under the pass), waiting at most
# FLUSH_SECS.
wait_flushed()
{
	local m d t0=$SECONDS
	for m in "${BENCH_HOTFS_MNTS[@]}"; do
		[[ ${m##*/} == hotfs-wb@* ]] || continue
		while d=$(dirty_bytes "$m") && [[ $d =~ ^[1-9][0-9]*$ ]]; do
			if (( SECONDS - t0 >= FLUSH_SECS )); then
				bench_log "warning: ${m##*/} still holds $d dirty" \
					"bytes after ${FLUSH_SECS} s"
				return 0
			fi
			sleep 0.5
		done
	done
	(( SECONDS - t0 < 2 )) ||
		bench_log "waited $(( SECONDS - t0 )) s for writeback targets to flush"
}

# After a writeback workload: what each writeback target shows (page cache
# dropped) is what the source holds once a clean unmount has flushed it
# all (the unmount's time is logged); then it is mounted again for the
# rest of the workload's steps.
wb_check_data()
{
	local wl=$1 t base f sum want t0 d
	shift
	f=$(wl_file "$wl")
	for t in "$@"; do
		[[ $t == hotfs-wb@* ]] || continue
		base=$(target_base "$t")
		d=$(dirty_bytes "$(target_root "$t")")
		bench_drop_caches
		sum=$(md5sum < "$(target_root "$t")/$f")
		t0=$SECONDS
		hotfs_umount "$(target_root "$t")" ||
			bench_die "unmounting $t failed (see $out/hotfs-$wl-$t.log)"
		bench_log "$t: the unmount flushed ${d:-?} dirty bytes in" \
			"$(( SECONDS - t0 )) s"
		want=$(md5sum < "${DISK_MNT[$base]}/data/$f")
		[ "$sum" = "$want" ] ||
			bench_die "$t: after the flush, $f on the disk differs from what the mount showed"
		bench_log "$f on the disk after the flush is identical to what" \
			"$t showed"
		mount_target "$wl" "$t"
	done
}

# After fio's writes, each hotfs target must show the bytes the disk holds:
# a stale extent left in the cache would differ.  Each is read whole with
# the page cache dropped, so that the cached target's reads reach its cache,
# and its checksum compared with the file's read directly (afterwards: read
# side by side, the two streams would defeat readahead).
fio_check_data()
{
	local t base sum t0
	local -A want=()
	for t in "$@"; do
		[[ $t == hotfs* && $t != hotfs-wb@* ]] || continue
		base=$(target_base "$t")
		bench_drop_caches
		t0=$SECONDS
		sum=$(md5sum < "$(target_root "$t")/fio.dat")
		[ -n "${want[$base]:-}" ] ||
			want[$base]=$(md5sum < "${DISK_MNT[$base]}/data/fio.dat")
		[ "$sum" = "${want[$base]}" ] ||
			bench_die "$t: fio.dat read through hotfs differs from the file on the disk"
		bench_log "fio.dat read through $t is identical to the file on" \
			"the disk ($(( SECONDS - t0 )) s)"
	done
}

# Results must not depend on the target: the first target's answer is the
# reference for the others.
declare -A CHECK_REF=()
check_same()
{
	if [ -z "${CHECK_REF[$1]:-}" ]; then
		CHECK_REF[$1]=$2
	elif [ "${CHECK_REF[$1]}" != "$2" ]; then
		bench_die "$1 differs between targets: ${CHECK_REF[$1]} vs $2"
	fi
}

# check_result WL WHAT RES: every pass must produce its figures: the
# workload's metric a number (a rate above zero: a time may round to 0 ms),
# the other fields numbers or "-" (fio: all four numbers).
check_result()
{
	local m all=0
	[[ $1 != fio-* && $1 != fiowb-* && $1 != wb* && $1 != fiomix-* ]] || all=1
	case $(wl_metric "$1") in
	seconds) m=1 ;;
	mb_per_s) m=2 ;;
	iops) m=3 ;;
	esac
	awk -v r="$3" -v m="$m" -v all="$all" 'BEGIN {
		if (split(r, f, " ") != 4)
			exit 1
		for (i = 1; i <= 4; i++) {
			num = f[i] ~ /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/
			if (!num && (all || i == m || f[i] != "-"))
				exit 1
			if (i == m && m > 1 && f[i] + 0 <= 0)
				exit 1
		}
	}' || bench_die "$2 produced no usable figures: '$3'"
}

# How often anyone dropped the page cache since boot: drop_caches is
# machine-wide, and another job dropping it during a pass takes away the
# page-cache hits the pass would have had (each pass records the count).
drops() { awk '$1 == "drop_pagecache" { print $2; f = 1 } END { if (!f) print 0 }' /proc/vmstat; }

# A cached hotfs target must report its hit ratio for every pass whose
# reads reach the daemon: every pass with the page cache dropped, except
# fio's write-only mix (no reads at all).  Warm passes may be served by the
# kernel alone.
check_hits()
{
	local wl=$1 t=$2 pass=$3 hits=$4
	cached_target "$t" || return 0
	! wl_warm "$wl" || return 0
	[ "$wl" != untar ] || return 0		# it writes: no reads to count
	[[ $wl != fio-* ]] || [ "$(fio_mix "$pass")" != 0 ] || return 0
	[[ ${hits##* } =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		bench_die "$wl pass $pass on $t gave no hit ratio ('$hits';" \
			"its .hotfs/stats counts no reads)"
}

# A hotfs target with the cache on.
cached_target() { [[ $1 == hotfs@* || $1 == hotfs-never@* || $1 == hotfs-w[at]@* || $1 == hotfs-uring@* ]]; }

# Promotions a cached target still has queued read the disk it shares with
# the other targets: a pass starts once every mounted target's queue is
# empty (waiting at most BENCH_QUIET_SECS), so that one target's backlog is
# not charged to the pass of the next.
wait_promotions()
{
	local m d t0=$SECONDS
	for m in "${BENCH_HOTFS_MNTS[@]}"; do
		while :; do
			d=$(awk -F': *' '$1 == "promotion_queue_depth" { print $2 }' \
				"$m/.hotfs/stats" 2>/dev/null) || d=""
			[[ $d =~ ^[1-9][0-9]*$ ]] || break
			if (( SECONDS - t0 >= QUIET_SECS )); then
				bench_log "warning: ${m##*/} still has $d promotions" \
					"queued after ${QUIET_SECS} s"
				return 0
			fi
			sleep 0.2
		done
	done
	(( SECONDS - t0 < 2 )) ||
		bench_log "waited $(( SECONDS - t0 )) s for queued promotions"
}

# wl_prepare WL TARGET PASS: what a pass needs done before it, outside its
# timing and its disk and hit counts.
wl_prepare()
{
	# untar: each pass into an empty directory
	[ "$1" != untar ] || rm -rf "$(target_root "$2")/untar"
	if [[ $1 == whole* && $2 == hotfs* && $3 == 1 ]]; then
		whole_warm "$(target_root "$2")" "$2"
	fi
	if { { [ "$1" = restart ] && [ "$3" = 4 ]; } ||
	     { [ "$1" = coldgrep ] && [ "$3" -gt 1 ]; }; } &&
	   [[ $2 == hotfs* ]]; then
		hotfs_umount "$(target_root "$2")" ||
			bench_die "unmounting $2 failed"
		mount_target "$1" "$2"
	fi
}

# The function that runs one pass of a workload.
wl_func()
{
	case $1 in
	fio-*|fiowb-*) echo wl_fio ;;
	fiomix-*) echo wl_fiomix ;;
	*) echo "wl_$1" ;;
	esac
}

# Checks a workload makes once its passes are done, before the unmount.
wl_check()
{
	local wl=$1
	shift
	case $wl in
	fio-*) fio_check_data "$@" ;;
	# the writeback targets first: their flush changes the file
	fiowb-*) wb_check_data "$wl" "$@"; fio_check_data "$@" ;;
	wbrand|wbsync) wb_check_data "$wl" "$@" ;;
	fiomix-*) fiomix_check_data "$@" ;;
	esac
}

wl_desc()
{
	case $1 in
	seq) echo "1 MiB sequential reads of a ${BIG_MIB} MiB file, page cache dropped (MB/s; higher is better)" ;;
	rand) echo "4 KiB random reads of a ${BIG_MIB} MiB file (fio psync, buffered, FADV_RANDOM; ${RAND_SECS} s or each block once), page cache dropped (IOPS; higher is better)" ;;
	meta-find) echo "find -type f -name '*.go' over $TREE_FILES files, warm caches, ${META_GAP} s after the previous run (seconds; lower is better)" ;;
	meta-gitstatus) echo "git status over $TREE_FILES files, warm caches, ${META_GAP} s after the previous run (seconds; lower is better)" ;;
	cp) echo "cp of a ${BIG_MIB} MiB file onto the SSD, page cache dropped (seconds; lower is better)" ;;
	directrand) echo "4 KiB random reads of a ${BIG_MIB} MiB file (fio psync, O_DIRECT, queue depth 1; ${RAND_SECS} s or each block once), page cache dropped (IOPS; higher is better)" ;;
	directjobs) echo "4 KiB random reads of a ${BIG_MIB} MiB file from 8 jobs at once (fio psync, O_DIRECT, numjobs=8; ${RAND_SECS} s), page cache dropped (IOPS of all jobs; higher is better)" ;;
	whole) echo "a ${BIG_MIB} MiB file the cache holds whole (its copy too, for passthrough) read once with cat, page cache dropped (MB/s; higher is better)" ;;
	wholedirect) echo "4 KiB random reads at queue depth 1 of a ${BIG_MIB} MiB file the cache holds whole (fio psync, O_DIRECT; ${RAND_SECS} s), page cache dropped (IOPS; higher is better)" ;;
	wholerw) echo "the same reads as wholedirect through a read-write open (fio randrw, rwmixread=100): no passthrough for it, the daemon serves it (IOPS; higher is better)" ;;
	untar) echo "tar -x of the Go tree (without .git, from the SSD) into an empty directory (seconds; lower is better)" ;;
	gitgrep) echo "git grep -q (absent string) over $TREE_FILES files, page cache dropped (seconds; lower is better)" ;;
	gitstatus) echo "git status over $TREE_FILES files, page cache dropped (seconds; lower is better)" ;;
	coldgrep) echo "git grep -q (absent string) over $TREE_FILES files, hotfs unmounted and mounted again and page cache dropped before each pass (seconds; lower is better)" ;;
	restart) echo "passes 1-3 read a $(( BIG_MIB / 16 )) MiB hot file, pass 4 reads it after hotfs was unmounted and mounted again (seconds; lower is better)" ;;
	scan) echo "scan resistance, cachesize $(cache_mib $(( BIG_MIB / 4 ))) MiB: passes 1-3 and 5 read a $(( BIG_MIB / 16 )) MiB hot file, pass 4 the ${BIG_MIB} MiB file once (seconds; lower is better)" ;;
	fio-*) printf 'fio 4 KiB zipf(1.2) random I/O (%s, fdatasync after each write) on a %s MiB file, %s passes of %s s per mix, page cache dropped before each; cache:data 1:%s: hotfs@hdd with cachesize %s MiB' \
		"$FIO_HOW" "$BIG_MIB" "$FIO_REPS" "$FIO_SECS" "${1#fio-}" \
		"$(cache_mib $(( BIG_MIB / ${1#fio-} )))"
	   [ "$1" = "$FIO_FIRST" ] ||
		printf '; the other targets as measured in %s' "$FIO_FIRST"
	   echo ;;
	fiowb-*) printf 'writemode=writeback: fio 4 KiB zipf(1.2) random I/O (%s, fdatasync after each write) on a %s MiB file, %s passes of %s s per mix, page cache dropped before each; cache:data 1:%s: hotfs-wb@hdd with cachesize %s MiB and writeback_log the same' \
		"$FIO_HOW" "$BIG_MIB" "$FIO_REPS" "$FIO_SECS" "${1#fiowb-}" \
		"$(cache_mib $(( BIG_MIB / ${1#fiowb-} )))"
	   [ "$1" = "$FIOWB_FIRST" ] ||
		printf '; the other targets as measured in %s' "$FIOWB_FIRST"
	   echo ;;
	wbrand) echo "writemode=writeback: the dm-writecache article's job, fio 4 KiB random writes (libaio, O_DIRECT, queue depth 32) over a ${BIG_MIB} MiB file for ${FIO_SECS} s; hotfs-wb@hdd with writeback_log $(( BIG_MIB * 5 / 2 )) MiB (IOPS; higher is better)" ;;
	fiomix-*) printf 'writes in flight, writearound (hotfs-wa@hdd) and writethrough (hotfs-wt@hdd): fio 4 KiB zipf(1.1) random I/O (%s) on a %s MiB file, each target on its own; %s read-only passes, one 70/30, one read-only, %s s each, page cache dropped before each; cachesize %s MiB (IOPS; higher is better)\n' \
		"$(fiomix_engine "$1" | sed 's/--//g; s/ /, /g')" "$BIG_MIB" \
		"$FIOMIX_WARM" "$FIO_SECS" "$(cache_mib $(( BIG_MIB / 8 )))" ;;
	wbsync) echo "writemode=writeback: fio 4 KiB random writes (psync, buffered, fdatasync after each) over a ${BIG_MIB} MiB file for ${FIO_SECS} s; hotfs-wb@hdd with writeback_log $(( BIG_MIB * 5 / 2 )) MiB (IOPS; higher is better)" ;;
	esac
}

# Which CSV column a workload is judged by.
wl_metric()
{
	case $1 in
	seq|whole) echo mb_per_s ;;
	rand|directrand|directjobs|wholedirect|wholerw|fio-*|fiowb-*|fiomix-*|wbrand|wbsync) echo iops ;;
	*) echo seconds ;;
	esac
}

# The issues' targets, for hotfs over the HDD: "min R" (its metric at
# least R x the HDD's) or "max R" (at most); "keep R A B" (the hit ratio of
# pass B at least R x that of pass A); "same R A B" (pass B's metric within
# R x pass A's); "-" for none.  fio's is judged on the last pass of the
# read-only mix.
wl_goal()
{
	case $1 in
	seq|rand) echo "min 0.95" ;;
	meta-*) echo "max 1.5" ;;
	gitgrep|gitstatus) echo "ssd 3 hotfs@hdd=1.5 hotfs-never@hdd=1.3" ;;
	scan) echo "keep 0.9 3 5" ;;
	restart) echo "same 1.1 3 4" ;;
	cp) echo "ssd 3 hotfs@hdd=1.15" ;;
	fio-10|fiowb-*) echo "min 10" ;;
	wbrand) echo "min 50" ;;
	wbsync) echo "min 15 hotfs-nocache@ssd 0.75" ;;
	*) echo - ;;
	esac
}

# Warm workloads run one untimed pass per target first and keep caches.
wl_warm() { [[ $1 == meta-* ]]; }

# A warm pass starts this long after the previous run ended: longer than
# hotfs's default attr_timeout and entry_timeout (1 s), as when a person
# runs git status again.  Back to back, every pass would find the kernel's
# dentries and attributes still valid and never ask the daemon, which is
# not what a user sees.  This is think time, not a wait for a condition.
META_GAP=${BENCH_META_GAP:-$( (( smoke )) && echo 1.1 || echo 2)}
QUIET_SECS=${BENCH_QUIET_SECS:-$( (( smoke )) && echo 10 || echo 120)}

# run_pass WL TARGET PASS: one measured pass, appended to the CSV.
#
# A warm pass must not touch the disk.  When it does, something dropped the
# caches meanwhile (drop_caches is machine-wide, and other jobs may use it):
# the pass is warmed and run again, up to three times, and the log says so.
run_pass()
{
	local wl=$1 t=$2 pass=$3 root base s0 s1 h0 h1 d0 d1 hits res try=1
	local c0=() c1=() ssd= u0 u1
	PASS=$pass TARGET=$t
	root=$(target_root "$t")
	base=$(target_base "$t")
	WL=$wl
	wl_prepare "$wl" "$t" "$pass"
	wait_promotions
	wait_flushed
	wl_warm "$wl" || bench_drop_caches
	while :; do
		! wl_warm "$wl" || sleep "$META_GAP"
		read -r -a s0 < <(disk_stat "$base")
		# a hotfs target over the HDD reads its cache store on the SSD
		[ "$base" = ssd ] || read -r -a c0 < <(disk_stat ssd)
		h0=$(hit_stat "$t")
		d0=$(drops)
		u0=$(daemon_cpu "$root")
		"$(wl_func "$wl")" "$root"
		res=$RES
		u1=$(daemon_cpu "$root")
		d1=$(drops)
		h1=$(hit_stat "$t")
		read -r -a s1 < <(disk_stat "$base")
		[ "$base" = ssd ] || read -r -a c1 < <(disk_stat ssd)
		wl_warm "$wl" && (( s1[0] > s0[0] && try < 3 )) || break
		bench_log "$wl pass $pass $t read the disk ($(( s1[0] - s0[0] ))" \
			"requests) with warm caches: warming it again"
		"$(wl_func "$wl")" "$root"
		try=$(( try + 1 ))
	done
	hits=$(hit_delta "$h0" "$h1")
	check_result "$wl" "$wl pass $pass on $t" "$res"
	check_hits "$wl" "$t" "$pass" "$hits"
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$wl" "$t" "$pass" "${res// /,}" \
		"$(( s1[0] - s0[0] ))" "$(( (s1[1] - s0[1]) / 1048576 ))" \
		"$(( s1[2] - s0[2] ))" "${hits// /,}" "$(( d1 - d0 ))" >> "$CSV"
	(( d1 == d0 )) || bench_log "warning: $wl pass $pass $t: the page" \
		"cache was dropped $(( d1 - d0 )) times during the pass (not by" \
		"this run: another job on the machine)"
	save_stats "$wl" "after pass $pass" "$t"
	# the daemon's CPU in the pass: per GiB read, per read (whole*)
	[[ $t != hotfs* ]] ||
		printf '%s,%s,%s,%s,%s\n' "$wl" "$t" "$pass" \
			"$(awk -v a="$u0" -v b="$u1" 'BEGIN { printf "%.3f", b - a }')" \
			"${res// /,}" >> "$out/cpu.csv"
	[ "$base" = ssd ] || [ "${t%%@*}" = "$t" ] ||
		ssd="; SSD reads $(( c1[0] - c0[0] )), $(( (c1[1] - c0[1]) / 1048576 )) MiB"
	bench_log "$wl pass $pass $t: $res (disk reads $(( s1[0] - s0[0] ))," \
		"$(( (s1[1] - s0[1]) / 1048576 )) MiB; hit ratio ${hits##* }$ssd)"
}

# whole, wholedirect: the daemon's CPU seconds per pass (cpu.csv), per GiB
# read or per read.
cpu_table()
{
	printf '\nDaemon CPU (user + system) per pass: per GiB read (whole), per read in microseconds (wholedirect, wholerw)\n\n'
	printf '| target | pass | CPU s | per unit |\n| --- | ---: | ---: | ---: |\n'
	awk -F, -v wl="$1" -v mib="$BIG_MIB" '$1 == wl {
		if (wl == "whole") u = sprintf("%.3f s/GiB", $4 / (mib / 1024))
		else u = sprintf("%.2f us", $4 / ($5 * $7) * 1e6)
		printf "| %s | %s | %s | %s |\n", $2, $3, $4, u }' "$out/cpu.csv"
}

run_workload()
{
	local wl=$1 t p n=${PASSES[$1]} targets
	mapfile -t targets < <(targets_for "$wl")
	(( ${#targets[@]} )) || return 0
	bench_log "== $wl: $(wl_desc "$wl")"
	CHECK_REF=()
	mount_targets "$wl" "${targets[@]}"
	if wl_warm "$wl"; then
		for t in "${targets[@]}"; do
			"$(wl_func "$wl")" "$(target_root "$t")"
			for (( p = 1; p <= n; p++ )); do
				run_pass "$wl" "$t" "$p"
			done
		done
	else
		# Passes interleave across targets, so that drift in the host
		# disk hits every target alike.
		for (( p = 1; p <= n; p++ )); do
			for t in "${targets[@]}"; do
				run_pass "$wl" "$t" "$p"
			done
		done
	fi
	wl_check "$wl" "${targets[@]}"
	save_stats "$wl" end "${targets[@]}"
	umount_targets "$wl" "${targets[@]}"
	{
		printf '\n### %s\n\n%s\n\n' "$wl" "$(wl_desc "$wl")"
		if [[ $wl == fio-* ]]; then
			"$here/fio_table.sh" "$CSV" "$wl" "${FIO_MIXES[*]}" \
				"$FIO_REPS" "$(wl_goal "$wl")"
		elif [[ $wl == fiomix-* ]]; then
			"$here/fiomix_table.sh" "$FIOMIX_CSV" "$wl" \
				"$FIOMIX_WARM" 0.7
		elif [[ $wl == fiowb-* ]]; then
			"$here/fio_table.sh" "$CSV" "$wl" "${FIOWB_MIXES[*]}" \
				"$FIO_REPS" "$(wl_goal "$wl")" hotfs-wb@hdd
		else
			"$here/table.sh" "$CSV" "$wl" "$(wl_metric "$wl")" \
				"$(wl_goal "$wl")"
		fi
		[[ $wl != whole* ]] || cpu_table "$wl"
		printf '\nLoad average at the end (1, 5, 15 min): %s\n' \
			"$(cut -d' ' -f1-3 /proc/loadavg)"
	} | tee -a "$TABLES"
}

# ---------------------------------------------------------------- setup --

populate()
{
	local d=${DISK_MNT[$1]}
	mkdir -p "$d/data" "$d/scratch" "$d/cache"
	if [ "$1" = hdd ]; then
		head -c "$(( BIG_MIB * 1048576 ))" /dev/urandom > "$d/data/big"
		head -c "$(( BIG_MIB * 1048576 / 16 ))" /dev/urandom > "$d/data/hot"
		if [ -n "$FIO_FIRST$FIOWB_FIRST" ]; then
			head -c "$(( BIG_MIB * 1048576 ))" /dev/urandom > "$d/data/fio.dat"
		fi
		if [[ " ${wl_list[*]} " == *" wbrand "* || " ${wl_list[*]} " == *" wbsync "* ]]; then
			head -c "$(( BIG_MIB * 1048576 ))" /dev/urandom > "$d/data/wb.dat"
		fi
		if (( FIOMIX_ANY )); then
			head -c "$(( BIG_MIB * 1048576 ))" /dev/urandom > "$d/data/fiomix.dat"
		fi
		mkdir -p "$d/data/go"
		cp -a "$TREE_SRC/$TREE_SUB/." "$d/data/go/"
		git -C "$d/data/go" init -q
		# No automatic gc: git commit would fork "git gc --auto" into
		# the background (thousands of loose objects), which then reads
		# the throttled disk during the passes and keeps it busy.
		git -C "$d/data/go" config gc.auto 0
		git -C "$d/data/go" config maintenance.auto false
		git -C "$d/data/go" add -A
		git -C "$d/data/go" -c user.name=bench -c user.email=bench@localhost \
			commit -q -m "tree for the benchmarks"
		# Packed, as a clone would be: not ~13k loose objects.
		git -C "$d/data/go" gc -q --prune=now
	else
		cp -a "${DISK_MNT[hdd]}/data/." "$d/data/"
	fi
	# Refresh the index against this copy's inodes, so that the first
	# timed git command does not re-hash the tree.
	git -C "$d/data/go" status --porcelain >/dev/null
	sync
}

# fiomix's hotfs targets each get their own copy of the HDD's fiomix.dat
# (fiomix_file), made after the SSD's copy of the tree, which needs none.
populate_fiomix()
{
	local t f d=${DISK_MNT[hdd]}/data
	(( FIOMIX_ANY )) || return 0
	for t in hotfs-wa@hdd hotfs-wt@hdd; do
		f=$(fiomix_file "$t")
		cp "$d/fiomix.dat" "$d/$f"
	done
	sync
}

machine_info()
{
	printf 'date: %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	printf 'host: nproc %s, RAM %s MiB, kernel %s\n' "$(nproc)" \
		"$(awk '/MemTotal/ { printf "%d", $2 / 1024 }' /proc/meminfo)" \
		"$(uname -r)"
	# The binary may be older than the checkout: name it by its checksum;
	# the checkout's HEAD is only the harness's version.
	printf 'hotfs: %s (%s, sha256 %.12s)\n' "$BENCH_HOTFS_BIN" \
		"$("$BENCH_HOTFS_BIN" -V 2>&1 | grep -m1 '^hotfs version')" \
		"$(sha256sum < "$BENCH_HOTFS_BIN")"
	printf 'harness: %s\n' \
		"$(git -C "$repo" log -1 --format='%h %s' 2>/dev/null || echo unknown)"
	printf 'command: %s\n' "$BENCH_CMDLINE"
	printf 'fio: %s, git: %s\n' "$(fio --version)" "$(git --version)"
}

# Every workload must have its plot, and a hit ratio plot where a cached
# target's passes reached the daemon (check_hits required their figures).
check_plots()
{
	local wl f want
	for wl in "${wl_list[@]}"; do
		want=()
		case $wl in
		fio-*) want+=(fio.png) ;;
		*) want+=("$wl.png") ;;
		esac
		if ! wl_warm "$wl" && [ "$wl" != untar ] &&
		   [[ $'\n'$(targets_for "$wl") == *$'\n'hotfs@* ||
					 $'\n'$(targets_for "$wl") == *$'\n'hotfs-w[at]@* ]]; then
			case $wl in
			fio-*) want+=(fio-hitratio.png) ;;
			*) want+=("$wl-hitratio.png") ;;
			esac
		fi
		for f in "${want[@]}"; do
			[ -s "$out/$f" ] || bench_die "no plot $f for $wl"
		done
	done
}

# The run is one function called last, so that any failure in it, even an
# expansion error that bash does not count under set -e, ends the script
# through the EXIT trap with a non-zero status.
main()
{
	local f wl
	bench_log "work dir $work, results in $out"
	machine_info | tee "$out/machine.txt" >&2

	disk_create hdd "$HDD_SIZE" "$work"
	disk_create ssd "$SSD_SIZE" "$work"
	populate hdd
	populate ssd
	populate_fiomix
	TREE_FILES=$(git -C "${DISK_MNT[hdd]}/data/go" ls-files | wc -l)
	bench_log "populated: ${BIG_MIB} MiB file, $TREE_FILES-file git tree from $TREE_SRC/$TREE_SUB"
	bench_throttle hdd
	bench_drop_caches
	bench_verify_throttle hdd "${DISK_MNT[hdd]}/data/big" "$out"
	for f in "${BENCH_THROTTLE_FILES[@]}"; do
		printf '%s: %s\n' "$f" "$(tr '\n' ' ' < "${BENCH_THROTTLE_CGROUPS[0]}/blkio.throttle.$f")"
	done >> "$out/machine.txt"

	echo 'workload,target,pass,seconds,mb_per_s,iops,p99_us,disk_read_ios,disk_read_mib,disk_write_ios,read_hits,read_partial_hits,read_misses,read_hit_bytes,read_miss_bytes,hit_ratio,page_cache_drops' > "$CSV"
	(( ! FIOMIX_ANY )) ||
		echo 'workload,target,pass,read_pct,iops,read_bytes,write_bytes,cached_bytes_before,cached_bytes_after,invalidations_source_changed_before,invalidations_source_changed_after,invalidations_write_before,invalidations_write_after,writethrough_updates,promoted_bytes' > "$FIOMIX_CSV"
	: > "$TABLES"
	for wl in "${wl_list[@]}"; do
		run_workload "$wl"
	done

	"$here/plot.sh" "$out" "${FIO_MIXES[*]}" "$FIO_REPS" ||
		bench_die "plotting failed"
	check_plots
	rm -f "$out/fio-last.json" "$out/find-last.txt" "$out/status-last.txt"

	bench_cleanup || exit $?
	trap - EXIT
	bench_log "done: tables in $TABLES, plots and CSV in $out"
}

main
