#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Record the access trace of one `git grep -q` pass over a source tree
# and convert it for hotfs_sim (tests/sim/traces/gitgrep-go1.19.trace.gz
# was made with the defaults on Debian bookworm, golang-1.19-src).
#
# usage: record_gitgrep.sh [TREE [OUT]]
#	TREE	default /usr/share/go-1.19/src
#	OUT	default tests/sim/traces/gitgrep-go1.19.trace.gz
#
# The tree is copied (symlinks resolved) into a temporary git repository;
# git grep reads the worktree files and .git/index, one pass, which is
# what a hotfs mount sees per pass once the page cache is dropped.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tree=${1:-/usr/share/go-1.19/src}
out=${2:-$here/traces/gitgrep-go1.19.trace.gz}
tmp=$(mktemp -d /tmp/hotfs-gitgrep.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cp -rL "$tree" "$tmp/repo"
cd "$tmp/repo"
git init -q
git add -A
git -c user.name=sim -c user.email=sim@localhost commit -qm tree
git grep -q zzzabsent || true		# warm git's own caches
strace -f -y -qq -e trace=openat,read,pread64,close,mmap \
	-o "$tmp/strace" git grep -q zzzabsent || true
mkdir -p "$(dirname "$out")"
{
	echo "# git grep -q zzzabsent over a git repository of $tree"
	echo "# strace -f -y -e trace=openat,read,pread64,close,mmap"
	python3 "$here/strace2trace.py" "$tmp/repo" "$tmp/strace"
} | sed "s|$tmp/repo|REPO|g" | gzip -9n > "$out"
ls -l "$out"
