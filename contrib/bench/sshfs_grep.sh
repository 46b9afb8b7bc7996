#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# grep -r of a source tree over sshfs (an sshd of this script's own on
# 127.0.0.1), side by side: the local disk, plain sshfs, and hotfs over
# sshfs for each hotfs binary given.  Passes follow one another without
# dropping the page cache unless DROP=1 (drop_caches disturbs others on a
# shared machine); sshfs drops its own pages at every open.
#
#   contrib/bench/sshfs_grep.sh TREE PASSES HOTFS [HOTFS...]
#
# HOTFS_OPTS: more -o options for every hotfs (e.g. revalidate=30); a
# HOTFS of the form PATH,OPTS adds OPTS for that one (build/hotfs
# build/hotfs,revalidate=30: defaults and revalidate=30 in one run).
# DROP=1: drop the page cache before each pass (sync; echo 3 >
# /proc/sys/vm/drop_caches), as issue-style comparisons want: the local
# disk then reads from its device, hotfs from its store's.
#
# Everything it starts is stopped and unmounted on exit.
set -euo pipefail

TREE=${1:?tree}
PASSES=${2:?passes}
shift 2
W=$(mktemp -d /tmp/hotfs-sshfs-grep.XXXXXX)
SSHD_PID=
MNTS=()

cleanup() {
	local m
	for ((i = ${#MNTS[@]} - 1; i >= 0; i--)); do
		m=${MNTS[$i]}
		fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			true
	done
	[ -n "$SSHD_PID" ] && kill "$SSHD_PID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

mkdir -p "$W/ssh" "$W/export" /run/sshd
cp -a "$TREE" "$W/export/tree"
ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/client_key"
cp "$W/ssh/client_key.pub" "$W/ssh/authorized_keys"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$W/ssh/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $PORT
HostKey $W/ssh/host_key
PidFile $W/ssh/sshd.pid
AuthorizedKeysFile $W/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
LogLevel ERROR
EOF
/usr/sbin/sshd -D -e -f "$W/ssh/sshd_config" 2>"$W/ssh/sshd.log" &
SSHD_PID=$!
for _ in $(seq 100); do
	(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
	sleep 0.1
done

sshfs_mount() {
	mkdir -p "$1"
	sshfs -p "$PORT" -F /dev/null -o "IdentityFile=$W/ssh/client_key" \
		-o StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null \
		-o BatchMode=yes "root@127.0.0.1:$W/export" "$1"
	MNTS+=("$1")
}

passes() {
	local label=$1 dir=$2 p t0 t1
	for ((p = 1; p <= PASSES; p++)); do
		if [ "${DROP:-0}" = 1 ]; then
			sync
			echo 3 > /proc/sys/vm/drop_caches
		fi
		t0=$(date +%s.%N)
		grep -r -q zzqq_absent_string_qqzz "$dir" || true
		t1=$(date +%s.%N)
		printf '%-28s pass %d  %6.2f s\n' "$label" "$p" \
			"$(echo "$t1 - $t0" | bc)"
	done
}

echo "tree: $TREE ($(find "$TREE" -type f | wc -l) files)"
passes local "$W/export/tree"
sshfs_mount "$W/plain"
passes sshfs "$W/plain/tree"
n=0
for arg in "$@"; do
	n=$((n + 1))
	bin=${arg%%,*}
	opts=${HOTFS_OPTS:-}
	if [ "$arg" != "$bin" ]; then
		opts=${opts:+$opts,}${arg#*,}
	fi
	sshfs_mount "$W/s$n"
	mkdir -p "$W/h$n"
	"$bin" "$W/s$n" "$W/h$n" -o "cachedir=$W/c$n${opts:+,$opts}"
	MNTS+=("$W/h$n")
	passes "hotfs#$n $opts" "$W/h$n/tree"
	fusermount3 -u "$W/h$n"
done
