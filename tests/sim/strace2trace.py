#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Convert `strace -f -y -e trace=openat,read,pread64,close,mmap` output into
a hotfs_sim trace: one "file extent length" line per access, where an
access is one open file handle (or one mmap) touching one extent, as the
daemon counts them (the page cache absorbs re-reads within a handle).

Only files under ROOT are kept (the tree hotfs would be mounted over);
files are numbered in first-seen order, and extent lengths come from the
files' sizes (stat after the run: the tree must not change meanwhile).

usage: strace2trace.py ROOT STRACE_OUTPUT [EXTENT_BYTES] > trace
"""
import os
import re
import sys

LINE = re.compile(r'^(\d+)\s+(.*)$')
CALL = re.compile(r'^(\w+)\((.*)\)\s+=\s+(-?\d+|0x[0-9a-f]+)')
FDPATH = re.compile(r'(\d+)<([^>]*)>')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    root = os.path.realpath(sys.argv[1]) + '/'
    ext = int(sys.argv[3]) if len(sys.argv) > 3 else 256 << 10
    pending = {}
    ids = {}
    sizes = {}
    handles = {}            # fd -> [path, pos, set of extents]
    out = sys.stdout
    out.write('# hotfs_sim trace: file extent length (extent %d)\n' % ext)
    out.write('# converted by tests/sim/strace2trace.py\n')
    naccess = 0

    def fid(path):
        if path not in ids:
            ids[path] = len(ids)
            try:
                sizes[path] = os.stat(path).st_size
            except OSError:
                sizes[path] = 0
        return ids[path]

    def touch(h, off, n):
        nonlocal naccess
        path, _, seen = h
        size = sizes[path]
        first = off // ext
        last = (off + n - 1) // ext
        for e in range(first, last + 1):
            if e in seen or e * ext >= size:
                continue
            seen.add(e)
            out.write('%d %d %d\n' % (fid(path), e,
                                      min(ext, size - e * ext)))
            naccess += 1

    for raw in open(sys.argv[2], errors='replace'):
        m = LINE.match(raw.rstrip('\n'))
        if not m:
            continue
        pid, text = m.groups()
        if text.endswith('<unfinished ...>'):
            pending[pid] = text[:-len('<unfinished ...>')].rstrip()
            continue
        r = re.match(r'^<\.\.\. \w+ resumed>(.*)$', text)
        if r:
            text = pending.pop(pid, '') + r.group(1)
        c = CALL.match(text)
        if not c:
            continue
        name, args, ret = c.groups()
        ret = int(ret, 0)
        if name == 'openat':
            fp = re.search(r'=\s+(\d+)<([^>]*)>\s*$', text)
            if ret >= 0 and fp and fp.group(2).startswith(root):
                fid(fp.group(2))
                handles[int(fp.group(1))] = [fp.group(2), 0, set()]
            elif ret >= 0:
                handles.pop(ret, None)
            continue
        fp = FDPATH.search(args)
        if not fp:
            continue
        fd = int(fp.group(1))
        if name == 'close':
            handles.pop(fd, None)
            continue
        if name == 'mmap':
            if not fp.group(2).startswith(root) or ret == -1:
                continue
            parts = [a.strip() for a in args.split(',')]
            fid(fp.group(2))
            touch([fp.group(2), 0, set()], int(parts[-1], 0),
                  int(parts[1], 0))
            continue
        h = handles.get(fd)
        if not h or ret <= 0:
            continue
        if name == 'read':
            touch(h, h[1], ret)
            h[1] += ret
        elif name == 'pread64':
            off = int(args.rsplit(',', 1)[1].strip(), 0)
            touch(h, off, ret)
    total = sum(sizes.values())
    out.write('# %d files, %d bytes, %d accesses\n' %
              (len(ids), total, naccess))


if __name__ == '__main__':
    main()
