#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""No two files of src/ may depend on each other, directly or around a
loop (the rule of src/README.md): fails, naming them, if they do.

usage: check_cycles.py BUILD_DIR

Reads the symbols of the daemon's object files (src_*.c.o under
BUILD_DIR: the core library's and the hotfs executable's), and apart
those of hotfsctl, with nm.  An
edge a -> b means a.c uses a function or variable that b.c defines;
every strongly connected group of more than one file is a cycle.
"""
import collections
import glob
import os
import re
import subprocess
import sys


def objects(build):
    out = []
    for pat in ('libhotfs_core.a.p/src_*.c.o', 'hotfs.p/src_*.c.o'):
        out += glob.glob(os.path.join(build, pat))
    return sorted(out)


def graph_of(objs):
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        name = re.sub(r'^.*src_(.*)\.c\.o$', r'\1.c', o)
        out = subprocess.run(['nm', o], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            w = line.split()
            if len(w) == 3 and w[1] in 'TDBR':
                defs[w[2]] = name
            elif len(w) == 2 and w[0] == 'U':
                uses[name].add(w[1])
    graph = collections.defaultdict(set)
    for f, syms in uses.items():
        for s in syms:
            g = defs.get(s)
            if g and g != f:
                graph[f].add(g)
    return graph


def cycles(graph):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def sc(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                sc(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(list(graph)):
        if v not in index:
            sc(v)
    return out


def main():
    build = sys.argv[1]
    objs = objects(build)
    if len(objs) < 10:
        print('check_cycles: found %d object files under %s' %
              (len(objs), sys.argv[1]))
        return 1
    # hotfsctl is a program of its own: its files are checked apart
    ctl = sorted(glob.glob(os.path.join(build, 'hotfsctl.p', 'src_*.c.o')))
    found = cycles(graph_of(objs)) + cycles(graph_of(ctl))
    objs += ctl
    for c in found:
        print('cycle: ' + ' <-> '.join(c))
    print('%d files of src/, %d cycles' % (len(objs), len(found)))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
