# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# lib.sh: the benchmark harness's plumbing, sourced by run.sh.
#
# Emulated disks (contrib/bench/README.md section 1):
#   "hdd"  a loop device (--direct-io=on) on a sparse file, ext4, throttled by
#          the cgroup-v1 blkio controller to 200 read/write IOPS and 100 MiB/s;
#   "ssd"  the same without the throttle, so that both tiers are the same kind
#          of device and differ only by the throttle.
#
# Which cgroup gets the throttle: blk-throttle charges a bio to the blkio
# cgroup of the task that issues it, so the limits are written into the blkio
# cgroup this shell is in (read from /proc/self/cgroup).  Every process the
# harness starts (fio, cp, git, the hotfs daemon and its threads) inherits that
# cgroup; hotfs_mount checks that the daemon really is in it.  Writeback from
# kworkers is charged to the root cgroup, which is the same one when the shell
# runs in the root cgroup (it does on the benchmark machine); when it does not,
# bench_throttle also throttles the root cgroup.
#
# Teardown: everything the harness sets up is recorded in the BENCH_* arrays
# below as soon as it exists, and bench_cleanup (trapped on EXIT; INT and TERM
# exit through it) undoes it in reverse order: hotfs mounts (umount, then a
# lazy unmount and SIGKILL if the daemon is stuck), the loop filesystems,
# losetup -d, and "MAJ:MIN 0" into every throttle file that was written.
# bench_check_clean then verifies that none of it is left.

BENCH_LOG_PREFIX=${BENCH_LOG_PREFIX:-bench}

# State for teardown, filled in as resources appear.
BENCH_HOTFS_MNTS=()	# hotfs mountpoints now mounted
BENCH_HOTFS_ALL=()	# every hotfs mountpoint ever used (for the check)
declare -A BENCH_HOTFS_PID=()	# mountpoint -> daemon pid (foreground mode)
BENCH_LOOP_MNTS=()	# mounted loop filesystems
BENCH_LOOP_DEVS=()	# attached loop devices
BENCH_THROTTLED=()	# "cgroupdir MAJ:MIN" pairs with limits set
BENCH_CLEANED=0

# Disks by name ("hdd", "ssd").
declare -A DISK_DEV=() DISK_MNT=() DISK_MAJMIN=() DISK_IMG=()

bench_log() { printf '%s [%4ds]: %s\n' "$BENCH_LOG_PREFIX" "$SECONDS" "$*" >&2; }
bench_die() { bench_log "error: $*"; exit 1; }

# bench_wait_until TIMEOUT_S DESC CMD...: poll CMD until it succeeds.
bench_wait_until()
{
	local timeout=$1 desc=$2 deadline
	shift 2
	deadline=$(( SECONDS + timeout ))
	until "$@"; do
		(( SECONDS < deadline )) || { bench_log "timed out waiting for $desc"; return 1; }
		sleep 0.05
	done
}

bench_drop_caches()
{
	sync
	echo 3 > /proc/sys/vm/drop_caches
}

# The blkio cgroup directory of this shell (cgroup v1).
bench_blkio_cgroup()
{
	local path
	path=$(awk -F: '$2 ~ /(^|,)blkio(,|$)/ { print $3; exit }' /proc/self/cgroup)
	[ -n "$path" ] || return 1
	printf '/sys/fs/cgroup/blkio%s\n' "${path%/}"
}

bench_blkio_cgroup_of_pid()
{
	awk -F: '$2 ~ /(^|,)blkio(,|$)/ { print $3; exit }' "/proc/$1/cgroup"
}

# ---------------------------------------------------------------- disks --

# disk_create NAME SIZE WORKDIR: sparse image, loop device, ext4, mount.
disk_create()
{
	local name=$1 size=$2 work=$3 img dev mnt
	img=$work/$name.img
	mnt=$work/$name
	mkdir -p "$mnt"
	rm -f "$img"
	truncate -s "$size" "$img"
	DISK_IMG[$name]=$img
	dev=$(losetup --show -f --direct-io=on "$img")
	BENCH_LOOP_DEVS+=("$dev")
	[ "$(cat "/sys/block/${dev#/dev/}/loop/dio")" = 1 ] ||
		bench_die "$dev: direct I/O did not take (the image's filesystem refuses O_DIRECT?)"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
	mount "$dev" "$mnt"
	BENCH_LOOP_MNTS+=("$mnt")
	DISK_DEV[$name]=$dev
	DISK_MNT[$name]=$mnt
	DISK_MAJMIN[$name]=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
}

# disk_stat NAME: "read_ios read_bytes write_ios write_bytes" since attach,
# from the block layer (counts every request, throttled or not).
disk_stat()
{
	local dev=${DISK_DEV[$1]}
	awk '{ printf "%d %.0f %d %.0f\n", $1, $3 * 512, $5, $7 * 512 }' \
		"/sys/block/${dev#/dev/}/stat"
}

# ------------------------------------------------------------- throttle --

BENCH_THROTTLE_FILES=(read_iops_device write_iops_device
		      read_bps_device write_bps_device)

# bench_can_throttle WORKDIR: can this machine attach a loop device and set
# a blkio throttle on it for this shell's cgroup?  Tried on a tiny image
# before anything else, so that a machine that cannot (no loop devices in a
# container, cgroup v2 only, a kernel without blk-throttle) is told apart
# from a failure.  Writing "MAJ:MIN 0" sets no limit, but the kernel checks
# the device and the cgroup as for a real one.  On failure, BENCH_WHY says
# why.  The loop device is registered for teardown as soon as it exists.
bench_can_throttle()
{
	local img=$1/probe.img dev mm cg
	BENCH_WHY=""
	truncate -s 16M "$img"
	DISK_IMG[probe]=$img
	if ! dev=$(losetup --show -f "$img" 2>&1); then
		BENCH_WHY="cannot attach a loop device: $dev"
		return 1
	fi
	BENCH_LOOP_DEVS+=("$dev")
	mm=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
	if ! cg=$(bench_blkio_cgroup); then
		BENCH_WHY="this shell is in no cgroup-v1 blkio cgroup (/proc/self/cgroup)"
	elif [ ! -e "$cg/blkio.throttle.read_iops_device" ]; then
		BENCH_WHY="no blkio throttling in $cg (CONFIG_BLK_DEV_THROTTLING?)"
	elif ! (echo "$mm 0" > "$cg/blkio.throttle.read_iops_device") 2>/dev/null; then
		BENCH_WHY="cannot write $cg/blkio.throttle.read_iops_device"
	fi
	if losetup -d "$dev"; then
		unset 'BENCH_LOOP_DEVS[-1]'
	else
		bench_log "could not detach $dev"
	fi
	rm -f "$img"
	[ -z "$BENCH_WHY" ]
}

bench_throttle_write()
{
	local cg=$1 mm=$2 riops=$3 wiops=$4 rbps=$5 wbps=$6
	echo "$mm $riops" > "$cg/blkio.throttle.read_iops_device"
	echo "$mm $wiops" > "$cg/blkio.throttle.write_iops_device"
	echo "$mm $rbps" > "$cg/blkio.throttle.read_bps_device"
	echo "$mm $wbps" > "$cg/blkio.throttle.write_bps_device"
}

# bench_throttle NAME: the HDD limits on disk NAME, for this shell's cgroup
# (and the root cgroup, where writeback is charged, if that is another one).
bench_throttle()
{
	local mm=${DISK_MAJMIN[$1]} cg cgs
	cg=$(bench_blkio_cgroup) || bench_die "no blkio cgroup (cgroup v1) here"
	[ -w "$cg/blkio.throttle.read_iops_device" ] ||
		bench_die "$cg/blkio.throttle.read_iops_device is not writable"
	cgs=("$cg")
	[ "$cg" = /sys/fs/cgroup/blkio ] || cgs+=(/sys/fs/cgroup/blkio)
	for cg in "${cgs[@]}"; do
		BENCH_THROTTLED+=("$cg $mm")
		bench_throttle_write "$cg" "$mm" "$BENCH_HDD_IOPS" \
			"$BENCH_HDD_IOPS" "$BENCH_HDD_BPS" "$BENCH_HDD_BPS"
	done
	BENCH_THROTTLE_CGROUPS=("${cgs[@]}")
}

bench_unthrottle_all()
{
	local e cg mm f
	for e in "${BENCH_THROTTLED[@]}"; do
		cg=${e% *}
		mm=${e#* }
		for f in "${BENCH_THROTTLE_FILES[@]}"; do
			echo "$mm 0" > "$cg/blkio.throttle.$f" ||
				bench_log "could not clear $cg/blkio.throttle.$f for $mm"
		done
	done
}

# fio_json OUT ARGS...: run fio with JSON output into OUT.
fio_json()
{
	local out=$1
	shift
	fio --output-format=json --output="$out" "$@" >/dev/null
}

# Fields of the first job of a fio JSON file, for reads:
# "bytes_per_s iops p99_clat_us io_bytes".
fio_read_summary()
{
	jq -r '.jobs[0].read | [ .bw_bytes, .iops,
		((.clat_ns.percentile["99.000000"] // 0) / 1000),
		.io_bytes ] | map(tostring) | join(" ")' "$1"
}

# bench_verify_throttle NAME FILE TMPDIR: measure the throttled disk with
# O_DIRECT (4 KiB random reads, 1 MiB sequential reads), print the numbers,
# fail if the throttle is clearly not in force.
bench_verify_throttle()
{
	local name=$1 file=$2 tmp=$3 secs=${BENCH_VERIFY_SECS:-3} r iops mbs
	local s0 s1 ios
	read -r -a s0 < <(disk_stat "$name")
	fio_json "$tmp/verify-rand.json" --name=verify-rand --filename="$file" \
		--readonly --rw=randread --bs=4k --direct=1 --ioengine=psync \
		--runtime="$secs" --time_based
	read -r -a s1 < <(disk_stat "$name")
	fio_json "$tmp/verify-seq.json" --name=verify-seq --filename="$file" \
		--readonly --rw=read --bs=1M --direct=1 --ioengine=psync \
		--runtime="$secs" --time_based
	ios=$(jq '.jobs[0].read.total_ios' "$tmp/verify-rand.json")
	# Anyone else reading the disk eats into the throttle's budget.
	(( s1[0] - s0[0] <= ios + 20 )) ||
		bench_die "$name served $(( s1[0] - s0[0] )) reads for fio's $ios:" \
			"something else reads the disk"
	read -r _ iops _ _ < <(fio_read_summary "$tmp/verify-rand.json")
	read -r r _ _ _ < <(fio_read_summary "$tmp/verify-seq.json")
	mbs=$(awk -v b="$r" 'BEGIN { printf "%.1f", b / 1e6 }')
	iops=$(awk -v i="$iops" 'BEGIN { printf "%.0f", i }')
	bench_log "throttle check on $name (${DISK_DEV[$name]}, ${DISK_MAJMIN[$name]}," \
		"cgroup ${BENCH_THROTTLE_CGROUPS[*]}): 4k random O_DIRECT" \
		"$iops IOPS (limit $BENCH_HDD_IOPS), 1M sequential O_DIRECT" \
		"$mbs MB/s (limit $(( BENCH_HDD_BPS / 1000000 )) MB/s)"
	printf '%s,%s,%s\n' "$name" "$iops" "$mbs" > "$tmp/throttle.csv"
	awk -v i="$iops" -v m="$mbs" -v li="$BENCH_HDD_IOPS" \
		-v lm="$(( BENCH_HDD_BPS / 1000000 ))" \
		'BEGIN { exit !(i <= li * 1.2 && m <= lm * 1.2 &&
				i >= li * 0.8 && m >= lm * 0.8) }' ||
		bench_die "the throttle on $name is not in force as configured"
}

# ---------------------------------------------------------------- hotfs --

# hotfs_mount SRC MNT OPTS LOG: start the daemon in the foreground (so that
# its pid and exit status are ours), wait for the mount or for its death.
hotfs_mount()
{
	local src=$1 mnt=$2 opts=$3 log=$4 pid cg
	mkdir -p "$mnt"
	mountpoint -q "$mnt" && bench_die "$mnt is already a mountpoint"
	"$BENCH_HOTFS_BIN" -f "$src" "$mnt" -o "$opts" >>"$log" 2>&1 &
	pid=$!
	BENCH_HOTFS_MNTS+=("$mnt")
	BENCH_HOTFS_ALL+=("$mnt")
	BENCH_HOTFS_PID[$mnt]=$pid
	bench_wait_until 30 "hotfs mount on $mnt" \
		hotfs_up_or_dead "$mnt" "$pid" || true
	if ! mountpoint -q "$mnt"; then
		kill -0 "$pid" 2>/dev/null && kill "$pid"
		wait "$pid" 2>/dev/null || true
		sed 's/^/    /' "$log" >&2
		bench_die "hotfs did not mount $src on $mnt (-o $opts)"
	fi
	cg=$(bench_blkio_cgroup_of_pid "$pid")
	[ "/sys/fs/cgroup/blkio${cg%/}" = "$(bench_blkio_cgroup)" ] ||
		bench_die "hotfs (pid $pid) is in blkio cgroup $cg, not the throttled one"
}

hotfs_up_or_dead()
{
	mountpoint -q "$1" || ! kill -0 "$2" 2>/dev/null
}

# hotfs_umount MNT: unmount and require a clean daemon exit.
hotfs_umount()
{
	local mnt=$1 pid=${BENCH_HOTFS_PID[$1]:-} rc=0
	umount "$mnt" || return 1
	[ -z "$pid" ] || wait "$pid" || rc=$?
	unset "BENCH_HOTFS_PID[$mnt]"	# reaped: the pid may be reused
	bench_forget_mnt "$mnt"
	[ "$rc" = 0 ] || { bench_log "hotfs on $mnt exited with status $rc"; return 1; }
}

bench_forget_mnt()
{
	local m keep=()
	for m in "${BENCH_HOTFS_MNTS[@]}"; do
		[ "$m" = "$1" ] || keep+=("$m")
	done
	BENCH_HOTFS_MNTS=("${keep[@]}")
}

# Force a hotfs mount away: umount, abort the connection, lazy unmount, kill.
hotfs_force_umount()
{
	local mnt=$1 pid=${BENCH_HOTFS_PID[$1]:-} dev
	if mountpoint -q "$mnt"; then
		if ! timeout 20 umount "$mnt"; then
			dev=$(stat -c %d "$mnt" 2>/dev/null || true)
			[ -n "$dev" ] && [ -w "/sys/fs/fuse/connections/$dev/abort" ] &&
				echo 1 > "/sys/fs/fuse/connections/$dev/abort"
			umount -l "$mnt" || bench_log "could not unmount $mnt"
		fi
	fi
	if [ -n "$pid" ]; then
		timeout 10 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null || true
		unset "BENCH_HOTFS_PID[$mnt]"
	fi
}

# -------------------------------------------------------------- teardown --

# bench_is_ours DEV: is loop device DEV attached to one of our images?
bench_is_ours()
{
	local back img
	back=$(losetup -nO BACK-FILE "$1" 2>/dev/null) || return 1
	for img in "${DISK_IMG[@]}"; do
		[ "$back" = "$(realpath -m "$img")" ] && return 0
	done
	return 1
}

bench_cleanup()
{
	local rc=$? i m d
	(( BENCH_CLEANED )) && return "$rc"
	BENCH_CLEANED=1
	set +e
	trap '' INT TERM
	for (( i = ${#BENCH_HOTFS_MNTS[@]} - 1; i >= 0; i-- )); do
		hotfs_force_umount "${BENCH_HOTFS_MNTS[i]}"
	done
	BENCH_HOTFS_MNTS=()
	for (( i = ${#BENCH_LOOP_MNTS[@]} - 1; i >= 0; i-- )); do
		m=${BENCH_LOOP_MNTS[i]}
		mountpoint -q "$m" || continue
		# A daemon that just exited may still be closing its files.
		if ! bench_wait_until 10 "umount $m" umount "$m" 2>/dev/null; then
			bench_log "$m is busy; its users:"
			fuser -vm "$m" >&2
			umount -l "$m" || bench_log "could not unmount $m"
		fi
	done
	for (( i = ${#BENCH_LOOP_DEVS[@]} - 1; i >= 0; i-- )); do
		d=${BENCH_LOOP_DEVS[i]}
		# only while it still backs one of our images: once detached,
		# the device may be another job's
		bench_is_ours "$d" || continue
		losetup -d "$d" || bench_log "could not detach $d"
	done
	bench_unthrottle_all
	if [ "${BENCH_KEEP_IMAGES:-0}" = 0 ]; then
		for d in "${DISK_IMG[@]}"; do
			rm -f "$d"
		done
	fi
	# A work dir the harness made goes too, but never while anything is
	# mounted below it (rm -r would recurse into the mount).
	if [ -n "${BENCH_WORK_OWNED:-}" ] && [ "${BENCH_KEEP_IMAGES:-0}" = 0 ] &&
	   ! awk -v w="$BENCH_WORK_OWNED/" 'index($2 "/", w) == 1 { f = 1 }
				      END { exit !f }' /proc/mounts; then
		rm -rf "$BENCH_WORK_OWNED"
	fi
	if ! bench_check_clean; then
		bench_log "teardown left something behind (see above)"
		[ "$rc" = 0 ] && rc=1
	fi
	return "$rc"
}

# Nothing this run set up may remain: mounts, loop devices, throttles,
# daemons.  Only our own resources are checked (other jobs may run too).
bench_check_clean()
{
	local ok=0 m d e cg mm f pid
	for m in "${BENCH_HOTFS_ALL[@]}" "${BENCH_LOOP_MNTS[@]}"; do
		if mountpoint -q "$m" 2>/dev/null; then
			bench_log "still mounted: $m"
			ok=1
		fi
	done
	for pid in "${BENCH_HOTFS_PID[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			bench_log "hotfs daemon $pid still runs"
			ok=1
		fi
	done
	for d in "${DISK_IMG[@]}"; do
		if [ -n "$(losetup -j "$d" 2>/dev/null)" ]; then
			bench_log "still attached: $(losetup -j "$d")"
			ok=1
		fi
	done
	for e in "${BENCH_THROTTLED[@]}"; do
		cg=${e% *}
		mm=${e#* }
		for f in "${BENCH_THROTTLE_FILES[@]}"; do
			if grep -q "^$mm " "$cg/blkio.throttle.$f"; then
				bench_log "still throttled: $mm in $cg/blkio.throttle.$f"
				ok=1
			fi
		done
	done
	return "$ok"
}

bench_install_traps()
{
	trap 'bench_cleanup; exit $?' EXIT
	trap 'bench_log "interrupted"; exit 130' INT
	trap 'bench_log "terminated"; exit 143' TERM
}
