#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# plot.sh OUTDIR [FIO_MIXES [FIO_REPS]]: one PNG per workload in
# OUTDIR/results.csv (written by run.sh), the judged metric against the pass
# number, one line per target: the warm-up curve of each cache, side by side
# with the direct disks; beside it WORKLOAD-hitratio.png, the hit ratio of
# each pass for the targets that record one (hotfs with the cache on).  The
# fio ratios (fio-N) share one plot, fio.png: IOPS (log scale) against the
# pass, labelled with its read/write mix (FIO_MIXES are their read
# percentages, default "100 70 50 0", each run FIO_REPS passes in a row,
# default 1), one line per target and, for hotfs@hdd, per ratio; and
# fio-hitratio.png, hotfs@hdd's hit ratio per pass and ratio.

set -euo pipefail

[ $# -ge 1 ] && [ $# -le 3 ] ||
	{ echo "usage: $0 OUTDIR [FIO_MIXES [FIO_REPS]]" >&2; exit 2; }
out=$1
fio_mixes=${2:-100 70 50 0}
fio_reps=${3:-1}
csv=$out/results.csv
dat=$out/plot-data
mkdir -p "$dat"

# pngcairo draws nicer lines; the libgd png terminal is the fallback.
term=pngcairo
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term=png

# series WL TARGET COLUMN: "pass value" lines of one target's column,
# passes without a value ("-") left out.
series()
{
	awk -F, -v wl="$1" -v t="$2" -v m="$3" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$1 == wl && $2 == t && (m in c) && $(c[m]) != "-" &&
		$(c[m]) != "" { print $3, $(c[m]) }' "$csv"
}

# hitratio_plot PNG TITLE XRANGE_MAX XTICS PLOT...: the hit ratio plot.
hitratio_plot()
{
	local png=$1 title=$2 np=$3 xtics=$4 plotcmd
	shift 4
	plotcmd=$(IFS=,; printf '%s' "$*")
	gnuplot <<EOG
set terminal $term size 900,540 noenhanced
set output '$png'
set title '$title'
set xlabel 'pass'
set ylabel 'hit ratio (bytes read through the daemon)'
$xtics
set xrange [0.5:$np + 0.5]
set yrange [0:1.05]
set key outside right
set grid
plot $plotcmd
EOG
}

metric_of()
{
	case $1 in
	seq) echo "mb_per_s MB/s" ;;
	rand|wbrand|wbsync|fiowb-*|fiomix-*) echo "iops IOPS" ;;
	*) echo "seconds seconds" ;;
	esac
}

mapfile -t wls < <(awk -F, 'NR > 1 && $1 !~ /^fio-/ && !seen[$1]++ { print $1 }' "$csv")
for wl in "${wls[@]}"; do
	read -r metric label < <(metric_of "$wl")
	mapfile -t targets < <(awk -F, -v wl="$wl" \
		'NR > 1 && $1 == wl && !seen[$2]++ { print $2 }' "$csv")
	plots=()
	for t in "${targets[@]}"; do
		awk -F, -v wl="$wl" -v t="$t" -v m="$metric" '
			NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			$1 == wl && $2 == t { print $3, $(c[m]) }' "$csv" \
			> "$dat/$wl.$t.dat"
		plots+=("'$dat/$wl.$t.dat' using 1:2 with linespoints lw 2 title '$t'")
	done
	plotcmd=$(IFS=,; printf '%s' "${plots[*]}")
	np=$(awk -F, -v wl="$wl" 'NR > 1 && $1 == wl && $3 > n { n = $3 }
				  END { print n + 0 }' "$csv")
	# the writeback workloads' targets differ by 100x and more, and
	# fiomix's (the HDD's O_DIRECT against the caches): a log scale
	yaxis="set yrange [0:*]"
	[[ $wl != wb* && $wl != fiowb-* && $wl != fiomix-* ]] ||
		yaxis="set logscale y; set yrange [10:*]"
	gnuplot <<EOF
set terminal $term size 900,540 noenhanced
set output '$out/$wl.png'
set title '$wl'
set xlabel 'pass'
set ylabel '$label'
set xtics 1
set xrange [0.5:$np + 0.5]
$yaxis
set key outside right
set grid
plot $plotcmd
EOF
	plots=()
	for t in "${targets[@]}"; do
		series "$wl" "$t" hit_ratio > "$dat/$wl.$t.hr.dat"
		[ -s "$dat/$wl.$t.hr.dat" ] || continue
		plots+=("'$dat/$wl.$t.hr.dat' using 1:2 with linespoints lw 2 title '$t'")
	done
	(( ${#plots[@]} )) || continue
	hitratio_plot "$out/$wl-hitratio.png" "$wl: hit ratio per pass" \
		"$np" "set xtics 1" "${plots[@]}"
done

# fio: one line per (workload, target) pair, in the order they ran.
mapfile -t pairs < <(awk -F, 'NR > 1 && $1 ~ /^fio-/ && !seen[$1 "," $2]++ {
	print $1 "," $2 }' "$csv")
(( ${#pairs[@]} )) || exit 0
plots=()
for s in "${pairs[@]}"; do
	wl=${s%%,*} t=${s#*,}
	awk -F, -v wl="$wl" -v t="$t" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$1 == wl && $2 == t { print $3, $(c["iops"]) }' "$csv" \
		> "$dat/$wl.$t.dat"
	title=$t
	# only the cached target depends on the cache:data ratio
	[[ $t != hotfs@* ]] || title="$t 1:${wl#fio-}"
	plots+=("'$dat/$wl.$t.dat' using 1:2 with linespoints lw 2 title '$title'")
done
plotcmd=$(IFS=,; printf '%s' "${plots[*]}")
read -r -a mixes <<< "$fio_mixes"
np=$(( ${#mixes[@]} * fio_reps ))
xtics=""
for (( p = 1; p <= np; p++ )); do
	m=${mixes[(p - 1) / fio_reps]}
	l="$m/$(( 100 - m ))"
	(( fio_reps == 1 )) || l+=" #$(( (p - 1) % fio_reps + 1 ))"
	xtics+="${xtics:+, }'$l' $p"
done
xtics="set xtics ($xtics) rotate by -45"
gnuplot <<EOF
set terminal $term size 900,540 noenhanced
set output '$out/fio.png'
set title 'fio 4 KiB zipf(1.2): cache:data ratios and read/write mixes'
set xlabel 'read/write mix (%), pass'
set ylabel 'IOPS (log scale)'
$xtics
set xrange [0.5:$np + 0.5]
set logscale y
set key outside right
set grid
plot $plotcmd
EOF

plots=()
for s in "${pairs[@]}"; do
	wl=${s%%,*} t=${s#*,}
	series "$wl" "$t" hit_ratio > "$dat/$wl.$t.hr.dat"
	[ -s "$dat/$wl.$t.hr.dat" ] || continue
	plots+=("'$dat/$wl.$t.hr.dat' using 1:2 with linespoints lw 2 title '$t 1:${wl#fio-}'")
done
(( ${#plots[@]} )) || exit 0
hitratio_plot "$out/fio-hitratio.png" \
	"fio 4 KiB zipf(1.2): hit ratio per pass (none in the write-only mix)" \
	"$np" "$xtics" "${plots[@]}"
