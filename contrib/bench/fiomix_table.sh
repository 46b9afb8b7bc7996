#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fiomix_table.sh CSV WORKLOAD WARM [RATIO]: the tables of one fiomix
# workload (fiomix-aio, fiomix-psync) from run.sh's fiomix.csv.  Passes 1 to
# WARM are read-only, pass WARM+1 the 70/30 mix, pass WARM+2 read-only again.
#
# - IOPS per pass, one column per target;
# - per hotfs target and pass, the daemon's counters before and after the
#   pass (cached_bytes, invalidations_source_changed, invalidations_write)
#   beside the bytes fio wrote, and the pass's writethrough_updates and
#   promoted_bytes;
# - per hotfs target, the summary: the read-only IOPS of the pass before
#   the mix (pass WARM) and of the pass after it, their ratio; the mix's
#   cached_bytes drop against the bytes it wrote; its
#   invalidations_source_changed.
#
# The targets (the issue's): writethrough targets (hotfs-wt@*) keep at
# least RATIO (default 0.7) x the read-only IOPS after the mix; every hotfs
# target's cached_bytes falls during the mix by at most the bytes it wrote
# (a promotion during the pass adds to cached_bytes, so a drop within the
# bound does not rule out a larger one: the promoted column says by how
# much it could be hidden; and the bytes written count a block rewritten
# each time); invalidations_source_changed stays the same during the mix
# and over the whole workload.

set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 CSV WORKLOAD WARM [RATIO]" >&2; exit 2; }
csv=$1 wl=$2 warm=$3 want=${4:-0.7}

awk -F, -v wl="$wl" -v warm="$warm" -v want="$want" '
function mib(v) { return v == "-" || v == "" ? "-" : sprintf("%.2f", v / 1048576) }
function d(a, b) { return a == "-" || b == "-" || a == "" || b == "" ? "-" : b - a }
function mixname(p) { return p == warm + 1 ? "70/30" : "100/0" }
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$1 == wl {
	t = $2
	if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
	p = $3 + 0
	if (p > np) np = p
	iops[t, p] = $(col["iops"])
	wr[t, p] = $(col["write_bytes"])
	cb0[t, p] = $(col["cached_bytes_before"])
	cb1[t, p] = $(col["cached_bytes_after"])
	is0[t, p] = $(col["invalidations_source_changed_before"])
	is1[t, p] = $(col["invalidations_source_changed_after"])
	iw0[t, p] = $(col["invalidations_write_before"])
	iw1[t, p] = $(col["invalidations_write_after"])
	wt[t, p] = $(col["writethrough_updates"])
	pb[t, p] = $(col["promoted_bytes"])
}
END {
	if (nt == 0) { print "(no results for " wl ")"; exit 1 }
	mix = warm + 1; after = warm + 2
	line = "| pass (read/write) |"; sep = "| --- |"
	for (i = 1; i <= nt; i++) { line = line " " order[i] " |"; sep = sep " ---: |" }
	print line; print sep
	for (p = 1; p <= np; p++) {
		line = "| " p " (" mixname(p) ") |"
		for (i = 1; i <= nt; i++) {
			t = order[i]
			line = line " " ((t, p) in iops ? sprintf("%.0f", iops[t, p]) : "") " |"
		}
		print line
	}
	print ""
	print "Cells: IOPS (reads + writes)."
	nh = 0
	for (i = 1; i <= nt; i++)
		if (order[i] ~ /^hotfs/)
			hot[++nh] = order[i]
	if (nh == 0)
		exit 0
	print ""
	print "| target, pass (read/write) | IOPS | written, MiB | cached_bytes before -> after, MiB | change, MiB | invalidations_write before -> after | invalidations_source_changed before -> after | writethrough_updates | promoted, MiB |"
	print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for (i = 1; i <= nh; i++) {
		t = hot[i]
		for (p = 1; p <= np; p++) {
			if (!((t, p) in iops))
				continue
			c = d(cb0[t, p], cb1[t, p])
			printf "| %s, %d (%s) | %.0f | %s | %s -> %s | %s | %s -> %s | %s -> %s | %s | %s |\n",
			       t, p, mixname(p), iops[t, p], mib(wr[t, p]),
			       mib(cb0[t, p]), mib(cb1[t, p]),
			       c == "-" ? "-" : sprintf("%+.2f", c / 1048576),
			       iw0[t, p], iw1[t, p], is0[t, p], is1[t, p],
			       wt[t, p], mib(pb[t, p])
		}
	}
	print ""
	print "| target | read-only IOPS before the mix (pass " warm ") | after it (pass " after ") | after / before | mix: written, MiB | mix: cached_bytes drop, MiB | mix: promoted, MiB | mix: invalidations_write | mix: invalidations_source_changed |"
	print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for (i = 1; i <= nh; i++) {
		t = hot[i]
		r[t] = "-"
		if ((t, warm) in iops && (t, after) in iops && iops[t, warm] > 0)
			r[t] = iops[t, after] / iops[t, warm]
		drop[t] = "-"
		if ((t, mix) in iops)
			drop[t] = d(cb1[t, mix], cb0[t, mix])	# before - after
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", t,
		       (t, warm) in iops ? sprintf("%.0f", iops[t, warm]) : "-",
		       (t, after) in iops ? sprintf("%.0f", iops[t, after]) : "-",
		       r[t] == "-" ? "-" : sprintf("%.3f", r[t]),
		       mib(wr[t, mix]),
		       drop[t] == "-" ? "-" : sprintf("%.2f", drop[t] / 1048576),
		       mib(pb[t, mix]), d(iw0[t, mix], iw1[t, mix]),
		       d(is0[t, mix], is1[t, mix])
	}
	print ""
	print "The mix'"'"'s figures are the counters just before and just after fio (promotions it queued land after); written is what fio wrote, a block rewritten counted each time."
	for (i = 1; i <= nh; i++) {
		t = hot[i]
		print ""
		if (t ~ /^hotfs-wt@/) {
			if (r[t] == "-")
				printf "Target (%s: read-only IOPS after the mix >= %s x before): no figures\n", t, want
			else
				printf "Target (%s: read-only IOPS after the mix >= %s x before): %.0f against %.0f, %.3f x: %s\n",
				       t, want, iops[t, after], iops[t, warm], r[t],
				       (r[t] >= want ? "met" : "**missed**")
		}
		if (drop[t] == "-" || wr[t, mix] == "" || wr[t, mix] == "-")
			printf "Target (%s: cached_bytes falls by at most the bytes the mix wrote): no figures\n", t
		else
			printf "Target (%s: cached_bytes falls by at most the bytes the mix wrote): %.2f MiB against %.2f MiB written (%.2f MiB promoted meanwhile): %s\n",
			       t, drop[t] / 1048576, wr[t, mix] / 1048576,
			       pb[t, mix] == "-" ? 0 : pb[t, mix] / 1048576,
			       (drop[t] <= wr[t, mix] ? "met" : "**missed**")
		m = d(is0[t, mix], is1[t, mix])
		# over the whole workload: from the first pass to the last
		a = d(is0[t, 1], is1[t, np])
		if (m == "-" || a == "-")
			printf "Target (%s: invalidations_source_changed stays 0): no figures\n", t
		else
			printf "Target (%s: invalidations_source_changed stays 0): %d during the mix, %d over passes 1-%d: %s\n",
			       t, m, a, np, (m == 0 && a == 0 ? "met" : "**missed**")
	}
}' "$csv"
