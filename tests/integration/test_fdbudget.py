# SPDX-License-Identifier: GPL-2.0-or-later
"""A tree with more files than the daemon may open descriptors: every
inode the kernel keeps used to pin an O_PATH fd in the daemon, and a plain
walk failed with EMFILE ("Too many open files") once the daemon reached
its limit.  Past its fd budget the daemon now closes the fds of idle
inodes and reopens them by file handle on their next use (src/core/inode.c)."""
import os

import util

NOFILE = 512               # the daemon's hard limit: about 3,000 files past
NDIRS, NFILES = 20, 150    # 3,000 files


def content(d, i):
    return ('%d/%d\n' % (d, i)) * (i % 7 + 1)


def make_tree(root):
    for d in range(NDIRS):
        os.mkdir(os.path.join(root, 'd%02d' % d))
        for i in range(NFILES):
            with open(os.path.join(root, 'd%02d' % d, 'f%d' % i), 'w') as f:
                f.write(content(d, i))


def open_fds(pid):
    return len(os.listdir('/proc/%d/fd' % pid))


def nofile_limits(pid):
    with open('/proc/%d/limits' % pid) as f:
        for line in f:
            if line.startswith('Max open files'):
                return [int(x) for x in line.split()[3:5]]
    raise AssertionError('no open files limit for %d' % pid)


def test_walk_past_the_descriptor_limit(ws):
    make_tree(ws.src)
    proc = ws.start(opts='cachesize=32M', nofile_hard=NOFILE)
    assert nofile_limits(proc.pid) == [NOFILE, NOFILE]
    fds0 = open_fds(proc.pid)
    peak = fds0
    held = {}                # (d, i) -> O_PATH fd on the mount's file
    walked = 0
    try:
        # a walk that leaves the kernel holding every inode (its dentry
        # cache keeps them until memory pressure or drop_caches)
        for top, dirs, files in os.walk(ws.mnt):
            dirs.sort()
            for name in sorted(files):
                p = os.path.join(top, name)
                rel = os.path.relpath(p, ws.mnt)
                util.assert_same_stat(p, os.path.join(ws.src, rel))
                walked += 1
                d, i = int(rel[1:3]), int(name[1:])
                # early files (closed for the budget by the end): an
                # O_PATH fd keeps the kernel's inode, opens nothing
                if i % 30 == 0 and d < 4:
                    held[(d, i)] = os.open(p, os.O_PATH)
                if walked % 100 == 0:
                    peak = max(peak, open_fds(proc.pid))
        assert walked == NDIRS * NFILES
        peak = max(peak, open_fds(proc.pid))
        s = util.hotfs_stats(ws.mnt)
        print('\nfd budget: %d files walked, daemon fds %d at start, '
              'peak %d, %d after the walk (limit %d); inodes %s, inode '
              'fds %s, closed %s' % (walked, fds0, peak,
                                     open_fds(proc.pid), NOFILE,
                                     s['inodes'], s['inode_fds'],
                                     s['inode_fds_closed']))
        assert int(s['inodes']) > NOFILE        # the kernel kept them
        assert int(s['inode_fds']) <= NOFILE - NOFILE // 4
        assert int(s['inode_fds_closed']) > 0
        assert peak < NOFILE

        # every file read back through the mount: reopened by handle
        reopened0 = int(s['inode_fds_reopened'])
        for d in range(NDIRS):
            for i in range(NFILES):
                with open(os.path.join(ws.mnt, 'd%02d' % d,
                                       'f%d' % i)) as f:
                    assert f.read() == content(d, i)
            peak = max(peak, open_fds(proc.pid))
        s = util.hotfs_stats(ws.mnt)
        assert int(s['inode_fds_reopened']) > reopened0
        assert peak < NOFILE

        # renamed behind the mount's back (into another directory):
        # the kernel's inode still reaches the file, by its handle
        for (d, i), pfd in held.items():
            os.rename(os.path.join(ws.src, 'd%02d' % d, 'f%d' % i),
                      os.path.join(ws.src, 'd%02d' % (NDIRS - 1),
                                   'moved%d.%d' % (d, i)))
        reopened0 = int(util.hotfs_stats(ws.mnt)['inode_fds_reopened'])
        for (d, i), pfd in held.items():
            fd = os.open('/proc/self/fd/%d' % pfd, os.O_RDONLY)
            try:
                assert os.read(fd, 4096).decode() == content(d, i)
                moved = os.stat(os.path.join(ws.src, 'd%02d' % (NDIRS - 1),
                                             'moved%d.%d' % (d, i)))
                assert os.fstat(fd).st_ino == moved.st_ino
            finally:
                os.close(fd)
        assert (int(util.hotfs_stats(ws.mnt)['inode_fds_reopened'])
                > reopened0)
        peak = max(peak, open_fds(proc.pid))
        print('fd budget: peak %d daemon fds, %d at the end; %s fds '
              'reopened by handle' % (
                  peak, open_fds(proc.pid),
                  util.hotfs_stats(ws.mnt)['inode_fds_reopened']))
        assert peak < NOFILE
    finally:
        for pfd in held.values():
            os.close(pfd)
    ws.stop(proc)
