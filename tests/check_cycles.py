#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The rules of src/README.md on the files of src/: no two files depend on
each other, directly or around a loop; and no file calls a file of a
layer above its own (LAYERS, from the top down: each folder of src/ is a
layer).  Fails, naming the files, if either is broken.

usage: check_cycles.py BUILD_DIR
       check_cycles.py --self-test

Reads the symbols of the object files of the daemon (libhotfs_core's and
the hotfs executable's) and, apart, of hotfsctl, with nm.  An edge a -> b
means a.c uses a function or variable that b.c defines; every strongly
connected group of more than one file is a cycle.  --self-test runs both
checks on made-up graphs that break them, and fails unless each is
caught.
"""
import collections
import glob
import os
import re
import subprocess
import sys

# The layers of src/, from the top down: a file may call its own layer's
# files and those below it, never one above.  hotfsctl is a program of
# its own, over lib/ alone.
LAYERS = ['daemon', 'fuse', 'fop', 'writeback', 'cache', 'core', 'policy',
          'store', 'lib']
CTL_LAYERS = ['hotfsctl', 'lib']

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src')


def sources():
    """{object name meson gives it: 'folder/file.c'} for src/*/*.c; a
    file of src/ outside a folder, or in a folder no list names, is an
    error."""
    out, bad = {}, []
    for p in sorted(glob.glob(os.path.join(SRC, '**', '*.c'),
                              recursive=True)):
        rel = os.path.relpath(p, SRC)
        parts = rel.split(os.sep)
        if len(parts) != 2 or parts[0] not in LAYERS + CTL_LAYERS:
            bad.append(rel)
            continue
        out['src_%s_%s.o' % (parts[0], parts[1])] = '/'.join(parts)
    return out, bad


def objects(build, dirs, known):
    """{'folder/file.c': object path} under build/<dir> for dir in dirs,
    for the files src/ has (a build directory may keep objects of files
    since moved)."""
    out = {}
    for d in dirs:
        for o in glob.glob(os.path.join(build, d, 'src_*.c.o')):
            name = known.get(os.path.basename(o))
            if name:
                out[name] = o
    return out


def graph_of(objs):
    defs, uses = {}, collections.defaultdict(set)
    for name, o in sorted(objs.items()):
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


def upward(graph, layers):
    """['a.c -> b.c'] for each call from a file to one of a layer above
    its own (or of a layer the list does not name)."""
    out = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            la, lb = a.split('/')[0], b.split('/')[0]
            if la not in layers or lb not in layers or \
                    layers.index(lb) < layers.index(la):
                out.append('%s (%s) -> %s (%s)' % (a, la, b, lb))
    return out


def self_test():
    g = collections.defaultdict(set)
    g['fuse/a.c'] |= {'store/b.c'}          # down: allowed
    g['store/b.c'] |= {'lib/c.c'}
    ok = not upward(g, LAYERS) and not cycles(g)
    g['lib/c.c'] |= {'fuse/a.c'}            # up, and a loop through it
    up, cyc = upward(g, LAYERS), cycles(g)
    ok = ok and up == ['lib/c.c (lib) -> fuse/a.c (fuse)'] and \
        cyc == [['fuse/a.c', 'lib/c.c', 'store/b.c']]
    h = collections.defaultdict(set)
    h['cache/x.c'] |= {'writeback/y.c'}     # cache is below writeback
    ok = ok and upward(h, LAYERS) == \
        ['cache/x.c (cache) -> writeback/y.c (writeback)']
    print('self-test: %s' % ('both rules caught' if ok else 'MISSED'))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    build = sys.argv[1]
    known, bad = sources()
    for b in bad:
        print('src/%s: not in a folder of the layer list' % b)
    daemon = objects(build, ['libhotfs_core.a.p', 'hotfs.p'], known)
    ctl = objects(build, ['hotfsctl.p'], known)
    if len(daemon) < 10 or not ctl:
        print('check_cycles: found %d object files under %s' %
              (len(daemon) + len(ctl), build))
        return 1
    gd, gc = graph_of(daemon), graph_of(ctl)
    found = cycles(gd) + cycles(gc)
    up = upward(gd, LAYERS) + upward(gc, CTL_LAYERS)
    for c in found:
        print('cycle: ' + ' <-> '.join(c))
    for u in up:
        print('a call up the layers: ' + u)
    print('%d files of src/ in %d layers, %d cycles, %d calls up' %
          (len(daemon) + len(ctl), len(LAYERS) + 1, len(found), len(up)))
    return 1 if found or up or bad else 0


if __name__ == '__main__':
    sys.exit(main())
