# SPDX-License-Identifier: GPL-2.0-or-later
"""-o inode_cache: source inodes the kernel forgot stay open in the
daemon, so that after drop_caches (or the kernel's own reclaim) lookups
and stats through the mount cost no read of the source's disk; a file
deleted through the mount or in the source still frees its space.

The source is a real ext4 on a loop device, so that its disk reads can be
counted (/sys/block/loopN/stat); the device is always detached."""
import os

import pytest

import util

# every test here drops the machine's caches: meson runs the file alone
pytestmark = pytest.mark.drops_caches


def make_tree(root):
    for d in range(20):
        os.makedirs(os.path.join(root, 'd%02d' % d))
        for i in range(50):
            with open(os.path.join(root, 'd%02d' % d, 'f%d' % i), 'w') as f:
                f.write('x' * i)


def stat_all(mnt):
    n = 0
    for d in range(20):
        for i in range(50):
            os.lstat(os.path.join(mnt, 'd%02d' % d, 'f%d' % i))
            n += 1
    return n


@pytest.mark.parametrize('keep', [True, False])
def test_lookups_after_drop_caches_read_nothing(ws, loopsrc, keep):
    make_tree(ws.src)
    ws.start(opts='cachesize=32M' + ('' if keep else ',inode_cache=0'))
    stat_all(ws.mnt)
    util.drop_caches()         # the kernel forgets; hotfs keeps (or not)
    if keep:
        util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)
                                  ['retained_inodes']) >= 1000,
                      'the kernel to forget the inodes')
    else:
        util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)['inodes'])
                      < 100, 'the kernel to forget the inodes')
    util.drop_caches()         # now what hotfs did not keep is gone
    before = util.disk_reads(loopsrc)
    assert stat_all(ws.mnt) == 1000
    reads = util.disk_reads(loopsrc) - before
    if keep:
        assert reads == 0, '%d disk reads for lookups' % reads
    else:
        assert reads > 0


def nofile_limits(pid):
    with open('/proc/%d/limits' % pid) as f:
        for line in f:
            if line.startswith('Max open files'):
                return [int(x) for x in line.split()[3:5]]
    raise AssertionError('no open files limit for %d' % pid)


def test_kept_within_a_limit_the_daemon_cannot_raise(ws, loopsrc):
    """Where the daemon cannot raise its descriptor limit (a hard limit
    of 2,000 and no CAP_SYS_RESOURCE), it still keeps all 1,020 forgotten
    inodes of the tree open: retaining is bounded by the descriptors the
    whole inode table holds (three quarters of the limit), not by half
    the limit (1,000), which let some go at every drop_caches and made
    their lookups read the disk again."""
    make_tree(ws.src)
    proc = ws.start(opts='cachesize=32M', nofile_hard=2000)
    assert nofile_limits(proc.pid) == [2000, 2000]
    def forgotten():
        s = util.hotfs_stats(ws.mnt)
        return int(s['inodes']) - int(s['retained_inodes']) <= 1  # root
    for _ in range(2):
        stat_all(ws.mnt)
        util.drop_caches()
        util.wait_for(forgotten, 'the kernel to forget the inodes')
        assert int(util.hotfs_stats(ws.mnt)['retained_inodes']) == 1020
    util.drop_caches()
    before = util.disk_reads(loopsrc)
    assert stat_all(ws.mnt) == 1000
    reads = util.disk_reads(loopsrc) - before
    assert reads == 0, '%d disk reads for lookups' % reads


def test_deleted_files_free_their_space(ws, loopsrc):
    big = os.path.join(ws.src, 'big')
    with open(big, 'wb') as f:
        f.write(os.urandom(40 << 20))
    other = os.path.join(ws.src, 'other')
    with open(other, 'wb') as f:
        f.write(os.urandom(40 << 20))
    ws.start(opts='cachesize=32M')
    os.lstat(os.path.join(ws.mnt, 'big'))
    os.lstat(os.path.join(ws.mnt, 'other'))
    util.drop_caches()
    util.wait_for(lambda: util.hotfs_stats(ws.mnt)['retained_inodes']
                  != '0', 'the kernel to forget the inodes')
    free0 = os.statvfs(ws.src).f_bfree

    def freed(mb):
        st = os.statvfs(ws.src)
        return (st.f_bfree - free0) * st.f_frsize >= mb << 20
    kept = int(util.hotfs_stats(ws.mnt)['retained_inodes'])
    # through the mount: hotfs lets go at once (ext4 then frees the
    # blocks at its next journal commit)
    os.unlink(os.path.join(ws.mnt, 'big'))
    assert int(util.hotfs_stats(ws.mnt)['retained_inodes']) == kept - 1
    util.wait_for(lambda: freed(39), 'the space of a file deleted through '
                  'the mount to be freed', timeout=20)
    # in the source, behind hotfs's back: within the sweep period
    os.unlink(other)
    util.wait_for(lambda: freed(78), 'the space of a file deleted in the '
                  'source to be freed', timeout=20)


def walk(mnt):
    out = []
    for dirpath, dirs, files in os.walk(mnt):
        dirs.sort()
        out.append((os.path.relpath(dirpath, mnt), sorted(files)))
    return out


def test_listings_after_drop_caches_read_nothing(ws, loopsrc):
    """A warm tree walked again after drop_caches: its listings come
    from the daemon's memory, its names and attributes from the source
    inodes it keeps: no read of the source's disk at all.  (A directory
    changed within a clock tick or two of its listing is read again: its
    stamp could not tell a change in the same tick.)"""
    import time
    make_tree(ws.src)
    t0 = time.time()
    util.wait_for(lambda: time.time() - t0 > 0.1,
                  'the tree to be older than a clock tick or two', 1)
    ws.start(opts='cachesize=32M')
    want = walk(ws.mnt)
    walk(ws.mnt)
    util.drop_caches()
    util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)['retained_inodes'])
                  >= 1000, 'the kernel to forget the inodes')
    util.drop_caches()
    before = util.disk_reads(loopsrc)
    assert walk(ws.mnt) == want
    reads = util.disk_reads(loopsrc) - before
    assert reads == 0, '%d disk reads for a warm walk' % reads
    # and a change in the source still shows in the listing (the source
    # watch drops the kernel's copy within a moment)
    open(os.path.join(ws.src, 'd03', 'new'), 'w').close()
    util.wait_for(lambda: 'new' in os.listdir(os.path.join(ws.mnt, 'd03')),
                  'a file created in the source to be listed', 3)


def test_absent_names_after_drop_caches_read_nothing(ws, loopsrc):
    """git probes names that do not exist (.gitattributes in every
    directory).  Once found absent in an unchanged directory, such a name
    is answered by the daemon even after drop_caches, without reading the
    directory's blocks; a file created later under that name, in the
    source or through the mount, is found."""
    import errno
    import time
    make_tree(ws.src)
    t0 = time.time()
    util.wait_for(lambda: time.time() - t0 > 0.1,
                  'the tree to be older than a clock tick or two', 1)
    ws.start(opts='cachesize=32M')

    def probe():
        for d in range(20):
            p = os.path.join(ws.mnt, 'd%02d' % d, '.gitattributes')
            assert util.call(os.lstat, p) == util.Err(errno.ENOENT)
    probe()
    util.drop_caches()
    util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)['retained_inodes'])
                  >= 20, 'the kernel to forget the directories')
    util.drop_caches()
    before = util.disk_reads(loopsrc)
    probe()
    reads = util.disk_reads(loopsrc) - before
    assert reads == 0, '%d disk reads for absent names' % reads
    # created behind the mount, and through it: found
    open(os.path.join(ws.src, 'd01', '.gitattributes'), 'w').close()
    util.wait_for(lambda: os.path.exists(
        os.path.join(ws.mnt, 'd01', '.gitattributes')),
        'a name created in the source to be found', 3)
    util.drop_caches()
    assert os.path.exists(os.path.join(ws.mnt, 'd01', '.gitattributes'))
    open(os.path.join(ws.mnt, 'd02', '.gitattributes'), 'w').close()
    util.drop_caches()
    assert os.path.exists(os.path.join(ws.mnt, 'd02', '.gitattributes'))
