#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# plot.sh OUTDIR [FIO_MIXES]: one PNG per workload in OUTDIR/results.csv
# (written by run.sh), the judged metric against the pass number, one line
# per target: the warm-up curve of each cache, side by side with the direct
# disks.  The fio ratios (fio-N) share one plot, fio.png: IOPS (log scale)
# against the read/write mix (passes; FIO_MIXES are their read percentages,
# default "100 70 50 0"), one line per target and, for hotfs@hdd, per ratio.

set -euo pipefail

[ $# = 1 ] || [ $# = 2 ] || { echo "usage: $0 OUTDIR [FIO_MIXES]" >&2; exit 2; }
out=$1
fio_mixes=${2:-100 70 50 0}
csv=$out/results.csv
dat=$out/plot-data
mkdir -p "$dat"

# pngcairo draws nicer lines; the libgd png terminal is the fallback.
term=pngcairo
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term=png

metric_of()
{
	case $1 in
	seq) echo "mb_per_s MB/s" ;;
	rand) echo "iops IOPS" ;;
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
	gnuplot <<EOF
set terminal $term size 900,540 noenhanced
set output '$out/$wl.png'
set title '$wl'
set xlabel 'pass'
set ylabel '$label'
set xtics 1
set xrange [0.5:$np + 0.5]
set yrange [0:*]
set key outside right
set grid
plot $plotcmd
EOF
done

# fio: one line per (workload, target) pair, in the order they ran.
mapfile -t series < <(awk -F, 'NR > 1 && $1 ~ /^fio-/ && !seen[$1 "," $2]++ {
	print $1 "," $2 }' "$csv")
(( ${#series[@]} )) || exit 0
plots=()
for s in "${series[@]}"; do
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
xtics=""
for (( i = 0; i < ${#mixes[@]}; i++ )); do
	xtics+="${xtics:+, }'${mixes[i]}/$(( 100 - mixes[i] ))' $(( i + 1 ))"
done
gnuplot <<EOF
set terminal $term size 900,540 noenhanced
set output '$out/fio.png'
set title 'fio 4 KiB zipf(1.2): cache:data ratios and read/write mixes'
set xlabel 'read/write mix (%)'
set ylabel 'IOPS (log scale)'
set xtics ($xtics)
set xrange [0.5:${#mixes[@]} + 0.5]
set logscale y
set key outside right
set grid
plot $plotcmd
EOF
