#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install what building and testing hotfs needs on Debian bookworm.
# Quiet and idempotent: does nothing when everything is there.
set -euo pipefail

PKGS=(build-essential meson ninja-build pkg-config
      libfuse3-dev fuse3 liburing-dev libxxhash-dev libcmocka-dev
      python3 python3-pytest python3-prometheus-client attr acl util-linux
      git e2fsprogs btrfs-progs openssh-server openssh-client sshfs
      libnuma-dev dpkg-dev debian-archive-keyring)
# libnuma-dev (with liburing-dev: libfuse's io_uring support), dpkg-dev
# (dpkg-source) and debian-archive-keyring: meson setup -Dlibfuse=bundled,
# which fetches libfuse's source with contrib/libfuse/fetch.sh
# optional extras (tests/run.sh asks for them): clang and its runtime
# libraries (libFuzzer, sanitizers; a recommends of clang) for fuzzing; fio, jq,
# gnuplot, golang-src (the tree it greps) and psmisc (fuser, when teardown
# finds a busy mount) for contrib/bench/run.sh, whose --smoke run
# tests/run.sh makes
[ "${HOTFS_DEPS_EXTRA:-0}" = 1 ] &&
	PKGS+=(clang libclang-rt-14-dev fio jq gnuplot-nox golang-src psmisc)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
	--no-install-recommends "${missing[@]}" >/dev/null
