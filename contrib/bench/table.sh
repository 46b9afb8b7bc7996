#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# table.sh CSV WORKLOAD METRIC [GOAL]: a markdown table of one workload from
# run.sh's results.csv: one row per pass and one column per target, then the
# median, the best pass, the ratio of each median to the direct disk under it (hotfs@hdd
# against hdd), the block requests the disk under the target saw per pass,
# and, given GOAL ("min R" or "max R"), whether each hotfs target over the
# HDD meets it.

set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 CSV WORKLOAD METRIC [GOAL]" >&2; exit 2; }
csv=$1 wl=$2 metric=$3 goal=${4:--}

awk -F, -v wl="$wl" -v metric="$metric" -v goal="$goal" '
function median(t, key,    n, p, i, j, x, a) {
	n = 0
	for (p = 1; p <= np; p++)
		if ((t, p) in key && key[t, p] != "-")
			a[++n] = key[t, p] + 0
	if (n == 0)
		return "-"
	for (i = 2; i <= n; i++) {
		x = a[i]
		for (j = i - 1; j >= 1 && a[j] > x; j--)
			a[j + 1] = a[j]
		a[j + 1] = x
	}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(v) {
	if (v == "-")
		return "-"
	if (metric == "seconds")
		return sprintf("%.3f", v)
	if (metric == "iops")
		return sprintf("%.0f", v)
	return sprintf("%.1f", v)
}
function base(t) {
	return index(t, "@") ? substr(t, index(t, "@") + 1) : t
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$1 == wl {
	t = $2
	if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
	p = $3 + 0
	if (p > np) np = p
	val[t, p] = $(col[metric])
	rios[t, p] = $(col["disk_read_ios"])
	rmib[t, p] = $(col["disk_read_mib"])
	p99[t, p] = $(col["p99_us"])
}
END {
	if (nt == 0) { print "(no results for " wl ")"; exit 1 }
	split(goal, g, " ")
	line = "| pass |"; sep = "| --- |"
	for (i = 1; i <= nt; i++) { line = line " " order[i] " |"; sep = sep " ---: |" }
	print line; print sep
	for (p = 1; p <= np; p++) {
		line = "| " p " |"
		for (i = 1; i <= nt; i++) {
			t = order[i]
			line = line " " ((t, p) in val ? fmt(val[t, p]) : "") " |"
		}
		print line
	}
	line = "| **median** |"
	for (i = 1; i <= nt; i++) { med[order[i]] = median(order[i], val); line = line " **" fmt(med[order[i]]) "** |" }
	print line
	# Load on the machine only ever slows a pass down: the best pass is
	# the closest to what the code itself costs.
	line = "| best |"
	for (i = 1; i <= nt; i++) {
		t = order[i]; b = "-"
		for (p = 1; p <= np; p++) {
			if (!((t, p) in val) || val[t, p] == "-")
				continue
			v = val[t, p] + 0
			if (b == "-" || (metric == "seconds" ? v < b : v > b))
				b = v
		}
		line = line " " fmt(b) " |"
	}
	print line
	line = "| ratio to direct |"
	for (i = 1; i <= nt; i++) {
		t = order[i]; b = base(t)
		if (t == b || !(b in med) || med[b] == "-" || med[b] == 0 || med[t] == "-")
			r = "-"
		else {
			ratio[t] = med[t] / med[b]
			r = sprintf("%.3f", ratio[t])
		}
		line = line " " r " |"
	}
	print line
	if (metric != "seconds") {
		line = "| p99 latency, us |"
		for (i = 1; i <= nt; i++) {
			v = median(order[i], p99)
			line = line " " (v == "-" ? "-" : sprintf("%.0f", v)) " |"
		}
		print line
	}
	line = "| disk reads/pass (requests, MiB) |"
	for (i = 1; i <= nt; i++)
		line = line " " median(order[i], rios) ", " median(order[i], rmib) " |"
	print line
	if (g[1] == "min" || g[1] == "max") {
		line = "| target (" (g[1] == "min" ? ">= " : "<= ") g[2] " x direct) |"
		for (i = 1; i <= nt; i++) {
			t = order[i]
			if (t !~ /^hotfs.*@hdd$/ || !(t in ratio))
				v = "-"
			else if ((g[1] == "min" && ratio[t] >= g[2]) ||
				 (g[1] == "max" && ratio[t] <= g[2]))
				v = "met"
			else
				v = "**missed**"
			line = line " " v " |"
		}
		print line
	}
}' "$csv"
