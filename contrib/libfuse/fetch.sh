#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fetch libfuse >= 3.18 (Debian's fuse3 source package, from sid) into
# SUBPROJECTS/libfuse, for meson setup -Dlibfuse=bundled (meson.build runs
# this at configure time).
#
#   contrib/libfuse/fetch.sh SUBPROJECTS_DIR APT_STATE_DIR
#
# apt runs with a private configuration under APT_STATE_DIR (its own
# sources.list, lists, cache and an empty dpkg status): the system's apt
# state is never read for packages nor written.  The deb-src entry reuses
# the URI of the machine's configured Debian archive; apt checks the
# signed Release file against debian-archive-keyring.  Nothing is done
# when SUBPROJECTS_DIR/libfuse already holds a version >= 3.18.
#
# libfuse is linked statically into hotfs and none of its files is to be
# installed by hotfs's meson install, which meson (1.0) cannot ask of a
# subproject: every install in the unpacked libfuse's meson.build files
# is turned off here (install: true made false; install_headers(),
# install_*(), add_install_script() and pkgconfig's generate() commented
# out), and NO_INSTALL_MARK records it.
set -euo pipefail

MIN=3.18
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
NO_INSTALL_MARK=.hotfs-no-install

die() {
	echo "libfuse fetch: $*" >&2
	exit 1
}

[ $# -eq 2 ] || die "usage: $0 SUBPROJECTS_DIR APT_STATE_DIR"
sub=$(realpath -m "$1")
state=$(realpath -m "$2")
dest=$sub/libfuse

# libfuse's version, from its meson.build's project()
src_version() {
	sed -n "/^project(/,/)/s/.*version *: *'\([0-9.]*\)'.*/\1/p" \
		"$1/meson.build" 2>/dev/null | head -1
}

# Turn off every install in the meson.build files under $1.
no_install() {
	local f
	find "$1" -name meson.build -print0 |
	while IFS= read -r -d '' f; do
		sed -i 's/\binstall *: *true\b/install: false/g' "$f"
		awk '
		# a call that installs, commented out to its closing paren
		!inside && /^[ \t]*(install_[a-z_]+|meson\.add_install_script|[a-z_]+\.generate)[ \t]*\(/ {
			inside = 1
			depth = 0
		}
		inside {
			line = $0
			depth += gsub(/\(/, "", line)
			depth -= gsub(/\)/, "", line)
			print "# (hotfs: not installed) " $0
			if (depth <= 0)
				inside = 0
			next
		}
		{ print }
		' "$f" > "$f.tmp"
		mv "$f.tmp" "$f"
	done
	if grep -rEn --include=meson.build \
	   '^[^#]*(install *: *true|install_[a-z_]+ *\(|add_install_script|\.generate *\()' \
	   "$1"; then
		die "an install left in libfuse's meson.build files (above)"
	fi
	touch "$1/$NO_INSTALL_MARK"
}

if [ -f "$dest/meson.build" ] && [ -f "$dest/$NO_INSTALL_MARK" ]; then
	v=$(src_version "$dest")
	if [ -n "$v" ] && dpkg --compare-versions "$v" ge "$MIN"; then
		echo "libfuse $v already in $dest"
		exit 0
	fi
	echo "libfuse ${v:-of unknown version} in $dest is older than $MIN:" \
		"fetching again"
fi

for t in apt-get dpkg-source; do
	command -v "$t" >/dev/null || die "$t not found (apt, dpkg-dev)"
done
[ -r "$KEYRING" ] || die "$KEYRING not found (debian-archive-keyring)"

# The URI of the Debian archive this machine uses: the deb822 stanza (or
# the one-line entry) whose suite is a release's main suite (bookworm,
# not bookworm-updates nor bookworm-security).
archive_uri() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk '
		function flush() {
			if (uri != "" && main) { print uri; found = 1; exit }
			uri = ""; main = 0
		}
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		tolower($1) == "uris:" { uri = $2 }
		tolower($1) == "suites:" {
			for (i = 2; i <= NF; i++)
				if ($i ~ /^[a-z]+$/ && $i != "experimental")
					main = 1
		}
		END { if (!found) flush() }
		' "$f"
	done
	if [ -r /etc/apt/sources.list ]; then
		# deb [options] URI SUITE COMPONENT...
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' /etc/apt/sources.list |
		awk '($1 == "deb" || $1 == "deb-src") && $3 ~ /^[a-z]+$/ &&
		     $3 != "experimental" { print $2 }'
	fi
}
uri=$(archive_uri | grep -v -e '-security' | head -1 || true)
[ -n "$uri" ] || die "no Debian archive found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"

mkdir -p "$state/lists/partial" "$state/cache/archives/partial" \
	"$state/download"
echo "deb-src [signed-by=$KEYRING] $uri sid main" > "$state/sources.list"
: > "$state/status"
apt_opts=(-q -o Dir::Etc::SourceList="$state/sources.list"
	  -o Dir::Etc::SourceParts=/dev/null
	  -o Dir::State::Lists="$state/lists"
	  -o Dir::Cache="$state/cache"
	  -o Dir::State::status="$state/status")

echo "fetching Debian's fuse3 source (sid) from $uri into $state"
apt-get "${apt_opts[@]}" update >"$state/update.log" 2>&1 ||
	die "apt-get update failed: see $state/update.log"
rm -rf "$state"/download/*
(cd "$state/download" &&
 apt-get "${apt_opts[@]}" source --download-only fuse3) \
	>"$state/source.log" 2>&1 ||
	die "apt-get source fuse3 failed: see $state/source.log"

dsc=$(ls "$state"/download/fuse3_*.dsc 2>/dev/null | head -1)
[ -n "$dsc" ] || die "no fuse3_*.dsc downloaded: see $state/source.log"
deb_version=$(sed -n 's/^Version: *//p' "$dsc")
upstream=${deb_version#*:}
upstream=${upstream%-*}
dpkg --compare-versions "$upstream" ge "$MIN" ||
	die "Debian sid's fuse3 is $deb_version, hotfs needs libfuse >= $MIN"

tmp=$state/download/libfuse
rm -rf "$tmp"
dpkg-source -q -x "$dsc" "$tmp" >"$state/unpack.log" 2>&1 ||
	die "dpkg-source -x $dsc failed: see $state/unpack.log"
v=$(src_version "$tmp")
[ "$v" = "$upstream" ] ||
	die "unpacked libfuse says version '$v', the package $deb_version"
no_install "$tmp"
mkdir -p "$sub"
rm -rf "$dest"
mv "$tmp" "$dest"
echo "libfuse $v (Debian $deb_version) unpacked into $dest"
