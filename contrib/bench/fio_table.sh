#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fio_table.sh CSV WORKLOAD [MIXES]: a markdown table of one fio ratio
# (fio-N) from run.sh's results.csv: one row per read/write mix (pass N is
# the Nth of MIXES, read percentages; default "100 70 50 0"), one column per
# target with IOPS / MB/s / p99 latency, then hotfs@hdd's IOPS against the
# direct HDD's and the disk requests each made.  Targets that do not depend
# on the cache size run only in the first fio workload: their figures are
# taken from there, and the table says so.

set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 CSV WORKLOAD [MIXES]" >&2; exit 2; }
csv=$1 wl=$2 mixes=${3:-100 70 50 0}

awk -F, -v wl="$wl" -v mixes="$mixes" '
function num(v, fmt) {
	return v == "-" || v == "" ? "-" : sprintf(fmt, v)
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$1 ~ /^fio-/ {
	t = $2
	# the first fio workload a target ran in is its source
	if (!(t in from)) { from[t] = $1; order[++nt] = t }
	if (from[t] != $1 && $1 != wl)
		next
	if (from[t] != wl && $1 == wl)
		from[t] = wl
	p = $3 + 0
	if (p > np) np = p
	iops[t, p] = $(col["iops"])
	mbs[t, p] = $(col["mb_per_s"])
	p99[t, p] = $(col["p99_us"])
	rios[t, p] = $(col["disk_read_ios"])
	wios[t, p] = $(col["disk_write_ios"])
	if ($1 == wl) nhere++
}
END {
	if (nhere == 0) { print "(no results for " wl ")"; exit 1 }
	split(mixes, mix, " ")
	line = "| mix (read/write) |"; sep = "| --- |"
	for (i = 1; i <= nt; i++) {
		line = line " " order[i] " |"; sep = sep " ---: |"
	}
	line = line " hotfs@hdd / hdd | disk requests, hotfs@hdd (hdd): reads, writes |"
	sep = sep " ---: | ---: |"
	print line; print sep
	for (p = 1; p <= np; p++) {
		line = "| " mix[p] "/" 100 - mix[p] " |"
		for (i = 1; i <= nt; i++) {
			t = order[i]
			if ((t, p) in iops)
				line = line " " num(iops[t, p], "%.0f") " / " \
				       num(mbs[t, p], "%.2f") " / " \
				       num(p99[t, p], "%.0f") " |"
			else
				line = line " |"
		}
		if (("hotfs@hdd", p) in iops && ("hdd", p) in iops &&
		    iops["hdd", p] > 0)
			r = sprintf("%.3f", iops["hotfs@hdd", p] / iops["hdd", p])
		else
			r = "-"
		d = "-"
		if (("hotfs@hdd", p) in iops) {
			d = rios["hotfs@hdd", p] ", " wios["hotfs@hdd", p]
			if (("hdd", p) in iops)
				d = d " (" rios["hdd", p] ", " wios["hdd", p] ")"
		}
		print line " " r " | " d " |"
	}
	print ""
	printf "Cells: IOPS (reads + writes) / MB/s / p99 latency in us (of the reads; of the writes at 0/100)."
	for (i = 1; i <= nt; i++)
		if (from[order[i]] != wl)
			ext = ext (ext == "" ? "" : ", ") order[i] " (" from[order[i]] ")"
	if (ext != "")
		printf "  Measured in another fio workload of this run: %s.", ext
	print ""
}' "$csv"
