#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""fio_bound.py: what a cache of a given size and caching unit could do at
best for the fio workload of run.sh, from the offsets fio itself draws.

    fio --name=z --ioengine=null --size=1g --rw=randread --bs=4k \\
        --random_distribution=zipf:1.2 --number_ios=200000 \\
        --write_iolog=z.iolog --output=/dev/null
    contrib/bench/fio_bound.py z.iolog [--cache-mib 102] [--reads 16000]

fio scatters zipf's ranks over the file (it hashes them), so the hot 4 KiB
blocks are spread over the whole file, and a caching unit (hotfs's extent)
brings in mostly cold neighbours with each hot block.  For each unit size
(4 KiB, 64 KiB, 256 KiB) this prints, for the first --reads reads, the hit
ratio of an ideal static cache (the most-read units that fit), counted
over the reads that reach the cache: every read when the page cache is
dropped before each read, else only the first read of a block since the
page cache was last dropped (every --drop-every reads; 0 = never, as in a
pass of run.sh with nobody else dropping it).  It is an upper bound for any
policy with that unit, not a simulation of hotfs's.
"""
import argparse
import collections


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("iolog")
    ap.add_argument("--cache-mib", type=int, default=102)
    ap.add_argument("--reads", type=int, default=16000)
    ap.add_argument("--drop-every", type=int, nargs="*",
                    default=[1, 1600, 0])
    a = ap.parse_args()
    blocks = []
    with open(a.iolog) as f:
        for line in f:
            w = line.split()
            if len(w) >= 5 and w[2] == "read":
                blocks.append(int(w[3]) // 4096)
    reads = blocks[:a.reads]
    cache_blocks = a.cache_mib * 1024 * 1024 // 4096
    print(f"{len(reads)} reads of 4 KiB, {len(set(reads))} distinct blocks; "
          f"cache {a.cache_mib} MiB")
    for every in a.drop_every:
        seen, reach = set(), []
        for i, b in enumerate(reads):
            if every and i % every == 0:
                seen = set()
            if b not in seen:
                seen.add(b)
                reach.append(b)
        what = ("no page cache" if every == 1 else
                f"page cache dropped every {every} reads" if every else
                "page cache kept")
        for unit in (1, 16, 64):
            count = collections.Counter(b // unit for b in reads)
            top = {u for u, _ in count.most_common(cache_blocks // unit)}
            hits = sum(1 for b in reach if b // unit in top)
            print(f"{what}: {len(reach)} reads reach the cache; "
                  f"unit {unit * 4} KiB: best hit ratio "
                  f"{hits / len(reach):.3f}, "
                  f"{len(reach) - hits} reads left for the disk")


if __name__ == "__main__":
    main()
