#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fio_table.sh CSV WORKLOAD [MIXES [REPS [GOAL [CACHED]]]]: a markdown table of one fio
# ratio (fio-N) from run.sh's results.csv: one row per pass (each read/write
# mix of MIXES, read percentages, default "100 70 50 0", runs REPS passes in
# a row, default 1), one column per target with IOPS / MB/s / p99 latency,
# then hotfs@hdd's hit ratio in the pass (bytes, of the reads that reached
# the daemon), its IOPS against the direct HDD's and the disk requests each
# made.  Targets that do not depend on the cache size run only in the first
# fio workload: their figures are taken from there, and the table says so.
# Given GOAL "min R", the last pass of the read-only mix (100) is judged:
# hotfs@hdd's IOPS at least R x the HDD's in the same pass; without a
# read-only mix, the last pass of each mix.  CACHED names the cached
# target (hotfs@hdd; hotfs-wb@hdd for the writeback matrix).

set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 CSV WORKLOAD [MIXES [REPS [GOAL]]]" >&2; exit 2; }
csv=$1 wl=$2 mixes=${3:-100 70 50 0} reps=${4:-1} goal=${5:--}
cached=${6:-hotfs@hdd}

awk -F, -v wl="$wl" -v mixes="$mixes" -v reps="$reps" -v goal="$goal" \
    -v C="$cached" '
function num(v, fmt) {
	return v == "-" || v == "" ? "-" : sprintf(fmt, v)
}
BEGIN { kind = wl ~ /^fiowb-/ ? "^fiowb-" : "^fio-" }
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$1 ~ kind {
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
	hr[t, p] = "hit_ratio" in col ? $(col["hit_ratio"]) : "-"
	if (("page_cache_drops" in col) && $(col["page_cache_drops"]) > 0 && $1 == wl)
		drops = drops (drops == "" ? "" : ", ") t " pass " p " (" $(col["page_cache_drops"]) ")"
	if ($1 == wl) nhere++
}
END {
	if (nhere == 0) { print "(no results for " wl ")"; exit 1 }
	split(mixes, mix, " ")
	split(goal, g, " ")
	line = "| mix (read/write), pass |"; sep = "| --- |"
	for (i = 1; i <= nt; i++) {
		line = line " " order[i] " |"; sep = sep " ---: |"
	}
	line = line " " C " hit ratio | " C " / hdd | disk requests, " C " (hdd): reads, writes |"
	sep = sep " ---: | ---: | ---: |"
	print line; print sep
	for (p = 1; p <= np; p++) {
		m = mix[int((p - 1) / reps) + 1]
		rep = (p - 1) % reps + 1
		if (m == 100)
			judged = p	# the last pass of the read-only mix
		if (rep == reps)
			last[++nlast] = p	# the last pass of each mix
		line = "| " m "/" 100 - m (reps > 1 ? ", " rep : "") " |"
		for (i = 1; i <= nt; i++) {
			t = order[i]
			if ((t, p) in iops)
				line = line " " num(iops[t, p], "%.0f") " / " \
				       num(mbs[t, p], "%.2f") " / " \
				       num(p99[t, p], "%.0f") " |"
			else
				line = line " |"
		}
		h = (C, p) in hr ? num(hr[C, p], "%.3f") : "-"
		if ((C, p) in iops && ("hdd", p) in iops &&
		    iops["hdd", p] > 0)
			r = sprintf("%.3f", iops[C, p] / iops["hdd", p])
		else
			r = "-"
		d = "-"
		if ((C, p) in iops) {
			d = rios[C, p] ", " wios[C, p]
			if (("hdd", p) in iops)
				d = d " (" rios["hdd", p] ", " wios["hdd", p] ")"
		}
		print line " " h " | " r " | " d " |"
	}
	print ""
	printf "Cells: IOPS (reads + writes) / MB/s / p99 latency in us (of the reads; of the writes at 0/100)."
	if (reps > 1)
		printf "  Each mix ran %d passes in a row on the same cache, the page cache dropped before each.", reps
	for (i = 1; i <= nt; i++)
		if (from[order[i]] != wl)
			ext = ext (ext == "" ? "" : ", ") order[i] " (" from[order[i]] ")"
	if (ext != "")
		printf "  Measured in another fio workload of this run: %s.", ext
	print ""
	if (drops != "")
		print "\nAnother job dropped the page cache during: " drops "."
	if (g[1] == "min" && judged) {
		nlast = 1
		last[1] = judged
	}
	for (k = 1; g[1] == "min" && k <= nlast; k++) {
		p = last[k]
		m = mix[int((p - 1) / reps) + 1]
		w = m "/" 100 - m ", last pass: " C " >= " g[2] " x hdd"
		print ""
		if ((C, p) in iops && ("hdd", p) in iops && iops["hdd", p] > 0) {
			r = iops[C, p] / iops["hdd", p]
			printf "Target (%s): %.0f against %.0f IOPS, %.3f x: %s\n",
			       w, iops[C, p], iops["hdd", p], r,
			       (r >= g[2] ? "met" : "**missed**")
		} else
			printf "Target (%s): no figures for both targets\n", w
	}
}' "$csv"
