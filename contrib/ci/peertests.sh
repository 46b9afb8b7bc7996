#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# peertests.sh: run peer filesystem test suites through a hotfs mount and
# on a plain directory of the same filesystem, and report every failure that
# happens through hotfs but not natively.
#
# It RUNS suites that were built elsewhere (see PEERTESTS.md); it builds and
# downloads nothing.  Each suite runs only if its variable is set:
#
#   PJDFSTEST_DIR  a built pjdfstest tree (holds ./pjdfstest and ./tests/)
#   FSX_BIN        xfstests' ltp/fsx, built standalone
#   HOTFS_FSX      tests/fsx/hotfs_fsx from a hotfs build
#
# Other variables:
#   HOTFS_BIN      the daemon (default: build/hotfs beside this repo)
#   HOTFS_OPTS     extra -o options for the mount (appended)
#   FSX_OPS        operations per fsx run (default 100000)
#   PJD_FILTER     only pjdfstest files whose path (e.g. chmod/00.t)
#                  matches this extended regex
#   PJD_FSTYPE     pjdfstest picks some tests by the filesystem type that
#                  `df -PT .` names: "source" (default) makes df name the
#                  source's type (ext4...) instead of fuse.hotfs, since hotfs
#                  passes its source's semantics through (rename/22.t, ctime
#                  on rename, runs only on ext4/ufs/zfs); "fuse" leaves it
#   KNOWN          known-failures baseline (default: peertests.known-failures
#                  beside this script)
#   WORKDIR        where the trees go (default: a new dir under /tmp, the
#                  same filesystem for source and native runs); kept when
#                  KEEP=1, else removed
#
# Exit status: 0 when every hotfs-only failure is listed in the baseline,
# 1 when there are new ones, 2 on a setup error, 77 when not root or no
# /dev/fuse.  The mount is always unmounted and the daemon always ended.
#
# Result lines, also written to $WORKDIR/results.txt:
#   NEW      <suite> <test>   fails through hotfs only, not in the baseline
#   KNOWN    <suite> <test>   fails through hotfs only, in the baseline
#   FIXED    <suite> <test>   in the baseline but passes now
#   BOTH     <suite> <test>   fails natively too (not hotfs's doing)
#   DIFF     pjdfstest <test> a TODO test (allowed to fail) that ends
#                             differently natively and through hotfs
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
HOTFS_BIN=${HOTFS_BIN:-$repo/build/hotfs}
HOTFS_OPTS=${HOTFS_OPTS:-}
FSX_OPS=${FSX_OPS:-100000}
PJD_FILTER=${PJD_FILTER:-}
KNOWN=${KNOWN:-$here/peertests.known-failures}
KEEP=${KEEP:-0}

if [ "$(id -u)" != 0 ] || [ ! -w /dev/fuse ]; then
	echo "peertests: needs root and /dev/fuse; skipped"
	exit 77
fi
if [ ! -x "$HOTFS_BIN" ]; then
	echo "peertests: HOTFS_BIN=$HOTFS_BIN is not an executable" >&2
	exit 2
fi
if [ -z "${PJDFSTEST_DIR:-}${FSX_BIN:-}${HOTFS_FSX:-}" ]; then
	echo "peertests: set PJDFSTEST_DIR, FSX_BIN and/or HOTFS_FSX" >&2
	exit 2
fi

WORKDIR=${WORKDIR:-$(mktemp -d /tmp/hotfs-peertests.XXXXXX)}
mkdir -p "$WORKDIR"/{src,mnt,native,logs} || exit 2
chmod 755 "$WORKDIR" "$WORKDIR"/{src,mnt,native}
SRC=$WORKDIR/src
MNT=$WORKDIR/mnt
NATIVE=$WORKDIR/native
LOGS=$WORKDIR/logs
daemon_pid=

log() { echo "peertests: $*"; }

is_mounted() { grep -q " $1 fuse" /proc/self/mounts; }

unmount_hotfs()
{
	local i

	[ -n "$daemon_pid" ] || return 0
	if is_mounted "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null ||
			fusermount3 -u -z "$MNT" 2>/dev/null ||
			umount -l "$MNT" 2>/dev/null
	fi
	for i in $(seq 100); do
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$daemon_pid" 2>/dev/null; then
		log "hotfs did not exit after unmount; killing pid $daemon_pid"
		kill -KILL "$daemon_pid" 2>/dev/null
	fi
	wait "$daemon_pid"
	daemon_rc=$?
	daemon_pid=
	if [ "$daemon_rc" != 0 ]; then
		log "hotfs exited with $daemon_rc (see $LOGS/hotfs.log)"
		echo "NEW      hotfs daemon-exit-$daemon_rc" >>"$WORKDIR/daemon.txt"
	fi
}

cleanup()
{
	cd /
	unmount_hotfs
	if is_mounted "$MNT"; then
		umount -l "$MNT" 2>/dev/null
	fi
	if [ "$KEEP" = 1 ]; then
		log "kept $WORKDIR"
	else
		rm -rf "$WORKDIR"
	fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM

mount_hotfs()
{
	local i opts="cachedir=$WORKDIR/cache,allow_other,default_permissions"

	[ -n "$HOTFS_OPTS" ] && opts="$opts,$HOTFS_OPTS"
	log "mount: $HOTFS_BIN $SRC $MNT -o $opts -f"
	"$HOTFS_BIN" "$SRC" "$MNT" -o "$opts" -f >>"$LOGS/hotfs.log" 2>&1 &
	daemon_pid=$!
	for i in $(seq 100); do
		if is_mounted "$MNT"; then
			return 0
		fi
		if ! kill -0 "$daemon_pid" 2>/dev/null; then
			wait "$daemon_pid"
			log "hotfs exited ($?) before mounting:"
			cat "$LOGS/hotfs.log"
			daemon_pid=
			exit 2
		fi
		sleep 0.1
	done
	log "timed out waiting for the mount"
	exit 2
}

# ---- pjdfstest -------------------------------------------------------------
make_df_shim()
{
	local realdf srcfs

	realdf=$(command -v df)
	srcfs=$("$realdf" -PT "$SRC" | awk 'END {print $2}')
	mkdir -p "$WORKDIR/shim"
	cat >"$WORKDIR/shim/df" <<-EOF
	#!/bin/sh
	"$realdf" "\$@" | sed 's/fuse\.hotfs[^ ]* /$srcfs /'
	EOF
	chmod 755 "$WORKDIR/shim/df"
	log "pjdfstest: df reports $srcfs for the mount (PJD_FSTYPE=fuse: off)"
}

# Writes "<file> <n> <message>" lines for each failing test (or
# "<file> <plan|exit> ..." when a file did not run to the end).
run_pjdfstest()
{
	local where=$1 out=$2 t rel rc
	local dir="$where/pjd" pjdpath=$PATH

	mkdir -p "$dir"
	: >"$out"
	: >"$out.todo"
	if [ "$where" = "$MNT" ] && [ "${PJD_FSTYPE:-source}" = source ]; then
		make_df_shim
		pjdpath=$WORKDIR/shim:$PATH
	fi
	(cd "$PJDFSTEST_DIR/tests" && find . -name '*.t' | sed 's|^\./||' |
		sort) | while read -r rel; do
		if [ -n "$PJD_FILTER" ] && ! [[ $rel =~ $PJD_FILTER ]]; then
			continue
		fi
		t=$PJDFSTEST_DIR/tests/$rel
		(cd "$dir" && PATH=$pjdpath timeout 600 prove -v "$t") \
			>"$LOGS/pjd.tmp" 2>&1
		rc=$?
		grep -E '^not ok [0-9]+' "$LOGS/pjd.tmp" |
			grep -v '# TODO' |
			sed -E "s|^not ok ([0-9]+)( - )?|$rel \\1 |" >>"$out"
		if [ $rc != 0 ] && ! grep -qE '^not ok [0-9]+' "$LOGS/pjd.tmp"
		then
			echo "$rel exit prove exited $rc: $(grep -E 'Bad plan|Dubious|Wstat' "$LOGS/pjd.tmp" | head -2 | tr '\n' ' ')" >>"$out"
		fi
		# TODO tests: expected to fail on some systems; record how each
		# ended, to list those that end differently through hotfs
		grep -E '^(not )?ok [0-9]+ # TODO' "$LOGS/pjd.tmp" |
			sed -E -e "s|^not ok ([0-9]+) # TODO|$rel \\1 FAIL|" \
			-e "s|^ok ([0-9]+) # TODO|$rel \\1 PASS|" >>"$out.todo"
		cat "$LOGS/pjd.tmp" >>"$out.log"
	done
	rm -f "$LOGS/pjd.tmp"
	# pjdfstest leaves nothing behind when it passes; clear what is left
	rm -rf "$dir"
}

# ---- fsx ---------------------------------------------------------------------
# Each configuration: a name and fsx arguments.
fsx_configs=(
	"fsx.default|-S 1"
	"fsx.mmap-4M|-S 2 -l 4194304 -o 524288"
	"fsx.odirect|-S 3 -Z -R -W -r 4096 -w 4096 -t 4096"
	"fsx.closeopen|-S 4 -c 20"
)

run_fsx()
{
	local where=$1 out=$2 c name args rc

	: >"$out"
	for c in "${fsx_configs[@]}"; do
		name=${c%%|*}
		args=${c#*|}
		# shellcheck disable=SC2086
		(cd "$where" && "$FSX_BIN" -N "$FSX_OPS" $args \
			-P "$LOGS" "$where/$name") >"$LOGS/$name.tmp" 2>&1
		rc=$?
		cat "$LOGS/$name.tmp" >>"$out.log"
		if [ $rc != 0 ]; then
			echo "$name exit $rc: $(grep -m1 -iE 'error|bad|fail' "$LOGS/$name.tmp")" >>"$out"
		fi
		rm -f "$LOGS/$name.tmp" "$where/$name"
	done
}

# @SRC@ is the file's path in the source tree (natively: the file itself)
hotfs_fsx_configs=(
	"hotfs_fsx.seed1|-S 1 -N 30000"
	"hotfs_fsx.seed2-4M|-S 2 -N 30000 -l 4M -o 512K"
	"hotfs_fsx.small|-S 3 -N 30000 -l 16K -o 3000 -f 100"
	"hotfs_fsx.readheavy|-S 4 -N 30000 -l 2M -o 256K -w read=10,dread=40,mapread=10,write=5,dwrite=3,reopen=6"
	"hotfs_fsx.srcwrite|-S 5 -N 30000 -l 1M -o 128K -w read=10,dread=40,mapread=10,write=5,dwrite=3,reopen=6,srcwrite=4 -s @SRC@"
)

run_hotfs_fsx()
{
	local where=$1 out=$2 c name args rc

	: >"$out"
	for c in "${hotfs_fsx_configs[@]}"; do
		name=${c%%|*}
		args=${c#*|}
		if [ "$where" = "$MNT" ]; then
			args=${args//@SRC@/$SRC/$name}
		else
			args=${args//@SRC@/$where/$name}
		fi
		# shellcheck disable=SC2086
		"$HOTFS_FSX" -q $args -u "$where/$name" >"$LOGS/$name.tmp" 2>&1
		rc=$?
		cat "$LOGS/$name.tmp" >>"$out.log"
		if [ $rc != 0 ]; then
			echo "$name exit $rc: $(grep -m1 -E 'FAILED|MISMATCH' "$LOGS/$name.tmp")" >>"$out"
		fi
		rm -f "$LOGS/$name.tmp"
	done
}

# ---- compare -----------------------------------------------------------------
# compare SUITE NATIVE_FILE HOTFS_FILE: print NEW/KNOWN/BOTH lines.
compare()
{
	local suite=$1 nat=$2 hot=$3 key line

	while read -r line; do
		[ -n "$line" ] || continue
		key=$(echo "$line" | awk '{print $1, $2}')
		if awk '{print $1, $2}' "$nat" | grep -qxF "$key"; then
			echo "BOTH     $suite $line"
		elif grep -v '^#' "$KNOWN" 2>/dev/null |
			awk '{print $1, $2, $3}' | grep -qxF "$suite $key"; then
			echo "KNOWN    $suite $line"
		else
			echo "NEW      $suite $line"
		fi
	done <"$hot"
	# baseline entries of this suite that did not fail this time
	grep -v '^#' "$KNOWN" 2>/dev/null | awk -v s="$suite" '$1 == s' |
	while read -r s file n _; do
		awk '{print $1, $2}' "$hot" | grep -qxF "$file $n" ||
			echo "FIXED    $suite $file $n"
	done
}

# todo_diff NATIVE HOTFS: pjdfstest TODO tests (allowed to fail) that end
# differently through hotfs: behaviour that differs from the native
# filesystem's, reported but never fatal.
todo_diff()
{
	local nat=$1 hot=$2

	[ -f "$nat.todo" ] && [ -f "$hot.todo" ] || return 0
	awk 'NR == FNR { st[$1 " " $2] = $3; next }
	     ($1 " " $2) in st && st[$1 " " $2] != $3 {
		msg = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", msg)
		printf "DIFF     pjdfstest %s %s native %s, hotfs %s (TODO: %s)\n",
			$1, $2, st[$1 " " $2], $3, msg
	     }' "$nat.todo" "$hot.todo"
}

suites=()
[ -n "${PJDFSTEST_DIR:-}" ] && suites+=(pjdfstest)
[ -n "${FSX_BIN:-}" ] && suites+=(fsx)
[ -n "${HOTFS_FSX:-}" ] && suites+=(hotfs_fsx)

for s in "${suites[@]}"; do
	log "$s: native run in $NATIVE"
	case $s in
	pjdfstest) run_pjdfstest "$NATIVE" "$WORKDIR/$s.native" ;;
	fsx) run_fsx "$NATIVE" "$WORKDIR/$s.native" ;;
	hotfs_fsx) run_hotfs_fsx "$NATIVE" "$WORKDIR/$s.native" ;;
	esac
done

mount_hotfs
for s in "${suites[@]}"; do
	log "$s: run through hotfs in $MNT"
	case $s in
	pjdfstest) run_pjdfstest "$MNT" "$WORKDIR/$s.hotfs" ;;
	fsx) run_fsx "$MNT" "$WORKDIR/$s.hotfs" ;;
	hotfs_fsx) run_hotfs_fsx "$MNT" "$WORKDIR/$s.hotfs" ;;
	esac
done
unmount_hotfs

: >"$WORKDIR/results.txt"
for s in "${suites[@]}"; do
	compare "$s" "$WORKDIR/$s.native" "$WORKDIR/$s.hotfs" \
		>>"$WORKDIR/results.txt"
done
if [ -n "${PJDFSTEST_DIR:-}" ]; then
	todo_diff "$WORKDIR/pjdfstest.native" "$WORKDIR/pjdfstest.hotfs" \
		>>"$WORKDIR/results.txt"
fi
[ -f "$WORKDIR/daemon.txt" ] && cat "$WORKDIR/daemon.txt" >>"$WORKDIR/results.txt"

echo
echo "suite       native-failures  hotfs-failures  hotfs-only(new/known)"
for s in "${suites[@]}"; do
	printf '%-11s %15d %15d  %d/%d\n' "$s" \
		"$(grep -c . "$WORKDIR/$s.native")" \
		"$(grep -c . "$WORKDIR/$s.hotfs")" \
		"$(grep -c "^NEW      $s " "$WORKDIR/results.txt")" \
		"$(grep -c "^KNOWN    $s " "$WORKDIR/results.txt")"
done
echo
cat "$WORKDIR/results.txt"
new=$(grep -c '^NEW' "$WORKDIR/results.txt")
fixed=$(grep -c '^FIXED' "$WORKDIR/results.txt")
echo
echo "peertests: $new new hotfs-only failures, $fixed baseline entries now pass"
[ "$new" = 0 ] && exit 0
exit 1
