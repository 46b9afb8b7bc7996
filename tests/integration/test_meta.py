# SPDX-License-Identifier: GPL-2.0-or-later
"""The metadata snapshot (cachedir/meta): the attributes and listings of
the directories hotfs has listed, written at unmount, so that a cold start
(a remount, a reboot) answers lookups, getattr and readdirplus of a warm
tree without reading the slow tree's metadata.

The source is a real ext4 on a loop device whose reads are counted
(/sys/block/loopN/stat), with the kernel's caches dropped after the
remount: what the walk reads from the source's disk is what hotfs asked
the source for.  Every test compares what the mount shows with the source
itself (inode numbers, sizes, modes, times to the nanosecond), so a
snapshot trusted when it must not be fails the test."""
import errno
import os
import signal
import stat
import subprocess
import time

import pytest

import util

# most tests here drop the machine's caches: meson runs the file alone
pytestmark = pytest.mark.drops_caches

NDIRS = 12
NFILES = 40


def make_tree(root):
    """NDIRS directories of NFILES files, one nested level, a symlink and
    an empty directory; then wait until the newest stamp is older than a
    clock tick or two (hotfs rightly trusts no stamp of a directory that
    changed within one)."""
    for d in range(NDIRS):
        dd = os.path.join(root, 'd%02d' % d)
        os.makedirs(os.path.join(dd, 'sub'))
        for i in range(NFILES):
            with open(os.path.join(dd, 'f%d' % i), 'w') as f:
                f.write('x' * i)
        with open(os.path.join(dd, 'sub', 'deep'), 'w') as f:
            f.write('deep')
        os.symlink('f1', os.path.join(dd, 'link'))
    os.mkdir(os.path.join(root, 'empty'))
    t0 = time.time()
    util.wait_for(lambda: time.time() - t0 > 0.1,
                  'the tree to be older than a clock tick or two', 1)


FIELDS = ('st_mode', 'st_ino', 'st_nlink', 'st_uid', 'st_gid', 'st_size',
          'st_blocks', 'st_mtime_ns', 'st_ctime_ns')


def tree_stats(root):
    """{relative path: stat fields} of every name under root, and every
    directory's listing, as `ls -lR` would see them (readdir, then lstat
    of each name)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(dirpath, root)
        out[rel + '/'] = sorted(dirs + files)
        for name in dirs + files:
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.join(rel, name)] = tuple(getattr(st, f)
                                                 for f in FIELDS)
    return out


def assert_same_tree(mnt, src):
    got = tree_stats(mnt)
    want = tree_stats(src)
    assert sorted(got) == sorted(want)
    bad = [(k, got[k], want[k]) for k in sorted(got) if got[k] != want[k]]
    assert not bad, 'through the mount vs the source: %r' % bad[:5]


def kill9_and_remount(ws, proc, opts):
    """Kill the daemon, mount again from a cold kernel cache."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    util.cleanup_mount(proc, ws.mnt)
    util.drop_caches()
    ws.start(opts=opts)


def warm(ws, opts):
    """Mount, list and stat everything twice, unmount: the snapshot is
    written.  Returns the snapshot's path."""
    proc = ws.start(opts=opts)
    tree_stats(ws.mnt)
    tree_stats(ws.mnt)
    ws.stop(proc)
    path = os.path.join(ws.cache, 'meta')
    assert os.path.isfile(path), 'no snapshot written at unmount'
    return path


def cold_walk(ws, dev):
    """Drop every cache, walk the mount; the source's disk reads it
    took."""
    util.drop_caches()
    before = util.disk_reads(dev)
    got = tree_stats(ws.mnt)
    return got, util.disk_reads(dev) - before


def stats(ws):
    return util.hotfs_stats(ws.mnt)


def test_stats_keys(ws):
    ws.start()
    s = stats(ws)
    for k in ('meta_snapshot_dirs', 'meta_snapshot_hits',
              'meta_snapshot_stale'):
        assert k in s, k


def test_cold_start_never_reads_nothing(ws, loopsrc):
    """revalidate=never: a remounted warm tree is walked and stat'ed
    without a single read of the source's disk, and shows exactly what the
    source holds."""
    make_tree(ws.src)
    opts = 'cachesize=32M,revalidate=never'
    warm(ws, opts)
    util.drop_caches()
    ws.start(opts=opts)
    assert int(stats(ws)['meta_snapshot_dirs']) >= NDIRS * 2 + 1
    got, reads = cold_walk(ws, loopsrc)
    assert reads == 0, '%d disk reads for a warm tree after a remount' % reads
    assert int(stats(ws)['meta_snapshot_hits']) > 0
    want = tree_stats(ws.src)
    assert got == want
    # and a name the source does not have is absent without a read
    util.drop_caches()
    before = util.disk_reads(loopsrc)
    assert util.call(os.lstat, os.path.join(ws.mnt, 'd03', 'nope')) == \
        util.Err(errno.ENOENT)
    assert util.disk_reads(loopsrc) - before == 0
    # reading a file (its fd opened only now, through its parents) works
    with open(os.path.join(ws.mnt, 'd05', 'sub', 'deep')) as f:
        assert f.read() == 'deep'
    assert os.readlink(os.path.join(ws.mnt, 'd05', 'link')) == 'f1'


def test_cold_start_default_one_read_per_directory(ws, loopsrc):
    """The default mode checks each directory's own stamp once: at most
    about one read per directory, far fewer than without the snapshot."""
    make_tree(ws.src)
    opts = 'cachesize=32M'
    warm(ws, opts)
    ndirs = NDIRS * 2 + 2
    # without a snapshot, for comparison
    os.unlink(os.path.join(ws.cache, 'meta'))
    util.drop_caches()
    proc = ws.start(opts=opts)
    got, reads_without = cold_walk(ws, loopsrc)
    ws.stop(proc)
    util.drop_caches()
    ws.start(opts=opts)
    got, reads = cold_walk(ws, loopsrc)
    print('disk reads for a cold walk of %d directories: %d without the '
          'snapshot, %d with it' % (ndirs, reads_without, reads))
    # one path lookup per directory (its parent's block, its inode's,
    # each shared with its neighbours), and the inode-table blocks the
    # kernel reads ahead: about one read a directory, none per file
    assert reads <= ndirs + 2, '%d disk reads for %d directories' % (
        reads, ndirs)
    assert reads < reads_without
    assert got == tree_stats(ws.src)


@pytest.mark.parametrize('mode', ['open', 'never'])
def test_changes_through_the_mount_survive_a_remount(ws, loopsrc, mode):
    make_tree(ws.src)
    opts = 'cachesize=32M' + (',revalidate=never' if mode == 'never' else '')
    warm(ws, opts)
    proc = ws.start(opts=opts)
    tree_stats(ws.mnt)
    m = lambda *p: os.path.join(ws.mnt, *p)
    with open(m('d00', 'f3'), 'a') as f:        # size and mtime
        f.write('more')
    os.chmod(m('d00', 'f4'), 0o600)
    os.truncate(m('d01', 'f10'), 0)
    os.utime(m('d01', 'f11'), ns=(1, 2))
    os.rename(m('d02', 'f1'), m('d03', 'moved'))
    os.unlink(m('d04', 'f2'))
    with open(m('d04', 'new'), 'w') as f:
        f.write('new')
    os.mkdir(m('d05', 'newdir'))
    os.rename(m('d06'), m('d06-renamed'))
    os.symlink('x', m('d07', 'sub', 'l2'))
    os.link(m('d08', 'f5'), m('d08', 'f5-link'))
    os.setxattr(m('d09', 'f6'), 'user.hotfs', b'1')   # its ctime
    os.rmdir(m('empty'))
    ws.stop(proc)
    util.drop_caches()
    ws.start(opts=opts)
    assert_same_tree(ws.mnt, ws.src)


def test_changes_while_unmounted_seen_by_default(ws, loopsrc):
    """Changes made in the source while hotfs is unmounted show after the
    remount in the default mode: a directory's stamp catches its names and
    its own attributes, a file's own stamp its attributes once it is
    opened (close-to-open, as documented in hotfs.8)."""
    make_tree(ws.src)
    opts = 'cachesize=32M'
    warm(ws, opts)
    s = lambda *p: os.path.join(ws.src, *p)
    with open(s('d00', 'created'), 'w') as f:
        f.write('c')
    os.unlink(s('d01', 'f1'))
    os.rename(s('d02', 'f2'), s('d02', 'f2-renamed'))
    with open(s('d03', 'f3'), 'w') as f:        # rewritten in place
        f.write('rewritten, longer')
    os.chmod(s('d04', 'f4'), 0o640)
    os.chown(s('d04', 'f5'), 123, 456)
    # a directory replaced by another of the same name
    subprocess.run(['rm', '-rf', s('d05')], check=True)
    os.mkdir(s('d05'))
    with open(s('d05', 'other'), 'w') as f:
        f.write('other')
    os.unlink(s('d06', 'sub', 'deep'))          # a nested directory
    util.drop_caches()
    ws.start(opts=opts)
    # close-to-open: a file's own stamp is compared when it is opened
    # (its directory's stamp does not change with its attributes)
    for p in (('d03', 'f3'), ('d04', 'f4'), ('d04', 'f5')):
        with open(os.path.join(ws.mnt, *p)) as f:
            f.read()
    assert_same_tree(ws.mnt, ws.src)
    assert int(stats(ws)['meta_snapshot_stale']) > 0


@pytest.mark.parametrize('damage', ['bitflip', 'truncated', 'foreign',
                                    'empty'])
def test_damaged_snapshot_is_ignored(ws, loopsrc, damage):
    """A damaged snapshot is never trusted, even with revalidate=never: a
    file chmod-ed while unmounted shows its new mode (a trusted snapshot
    would show the old one)."""
    make_tree(ws.src)
    opts = 'cachesize=32M,revalidate=never'
    path = warm(ws, opts)
    with open(path, 'rb') as f:
        data = bytearray(f.read())
    if damage == 'bitflip':
        data[len(data) // 2] ^= 0x10
    elif damage == 'truncated':
        data = data[:len(data) - 100]
    elif damage == 'foreign':
        data = bytearray(b'not a hotfs snapshot\n' * 100)
    else:
        data = bytearray()
    with open(path, 'wb') as f:
        f.write(data)
    os.chmod(os.path.join(ws.src, 'd02', 'f7'), 0o600)
    proc = ws.start(opts=opts)
    assert int(stats(ws)['meta_snapshot_dirs']) == 0
    assert_same_tree(ws.mnt, ws.src)
    ws.stop(proc)
    log = ws.log_text(proc)
    assert 'snapshot' in log, log


def test_kill9_then_remount(ws, loopsrc):
    """A daemon killed after changes through the mount leaves no snapshot
    that misses them: the remount (revalidate=never, trusting what it
    finds) shows the changes."""
    make_tree(ws.src)
    opts = 'cachesize=32M,revalidate=never'
    warm(ws, opts)
    proc = ws.start(opts=opts)
    tree_stats(ws.mnt)
    m = lambda *p: os.path.join(ws.mnt, *p)
    os.chmod(m('d00', 'f4'), 0o600)
    with open(m('d01', 'new'), 'w') as f:
        f.write('new')
    os.unlink(m('d02', 'f3'))
    os.setxattr(m('d04', 'f6'), 'user.hotfs', b'1')   # its ctime
    with open(m('d03', 'f9'), 'a') as f:
        f.write('grown')
    kill9_and_remount(ws, proc, opts)
    assert_same_tree(ws.mnt, ws.src)


@pytest.mark.parametrize('mode', ['open', 'never'])
def test_renamed_before_opened(ws, loopsrc, mode):
    """A file and a directory known only from the snapshot (no source fd
    yet) renamed through the mount are opened afterwards by their new
    names: they must not be looked for under the old ones."""
    make_tree(ws.src)
    opts = 'cachesize=32M' + (',revalidate=never' if mode == 'never' else '')
    warm(ws, opts)
    ws.start(opts=opts)
    m = lambda *p: os.path.join(ws.mnt, *p)
    os.lstat(m('d01', 'f3'))
    os.lstat(m('d02', 'sub', 'deep'))
    os.lstat(m('d03', 'f4'))
    os.rename(m('d01', 'f3'), m('d04', 'moved'))
    os.rename(m('d02', 'sub'), m('d05', 'sub2'))
    os.rename(m('d03'), m('d03-renamed'))
    with open(m('d04', 'moved')) as f:
        assert f.read() == 'xxx'
    with open(m('d05', 'sub2', 'deep')) as f:
        assert f.read() == 'deep'
    with open(m('d03-renamed', 'f4')) as f:
        assert f.read() == 'xxxx'
    assert_same_tree(ws.mnt, ws.src)


def test_cold_start_paths_looked_up_without_listing(ws, loopsrc):
    """Directories only looked up through (git reads its paths from its
    index and never lists them) are in the snapshot too: after a remount
    the same stats read nothing from the source's disk."""
    make_tree(ws.src)
    opts = 'cachesize=32M,revalidate=never'
    paths = [os.path.join('d%02d' % d, 'f%d' % i)
             for d in range(NDIRS) for i in range(0, NFILES, 3)]
    proc = ws.start(opts=opts)
    for p in paths:
        os.lstat(os.path.join(ws.mnt, p))
    ws.stop(proc)
    util.drop_caches()
    ws.start(opts=opts)
    assert int(stats(ws)['meta_snapshot_dirs']) >= NDIRS + 1
    util.drop_caches()
    before = util.disk_reads(loopsrc)
    got = [os.lstat(os.path.join(ws.mnt, p)) for p in paths]
    assert util.disk_reads(loopsrc) - before == 0
    want = [os.lstat(os.path.join(ws.src, p)) for p in paths]
    assert [tuple(getattr(s, f) for f in FIELDS) for s in got] == \
        [tuple(getattr(s, f) for f in FIELDS) for s in want]


def test_kill9_after_an_xattr_change(ws, loopsrc):
    """A change of an extended attribute moves the file's ctime: the
    snapshot on disk goes before it is made, so a daemon killed right
    after leaves none that shows the old ctime."""
    make_tree(ws.src)
    opts = 'cachesize=32M,revalidate=never'
    warm(ws, opts)
    proc = ws.start(opts=opts)
    tree_stats(ws.mnt)
    os.setxattr(os.path.join(ws.mnt, 'd04', 'f6'), 'user.hotfs', b'1')
    kill9_and_remount(ws, proc, opts)
    assert_same_tree(ws.mnt, ws.src)


@pytest.mark.parametrize('mode', ['open', 'never'])
def test_change_just_before_unmount_keeps_the_tree(ws, loopsrc, mode):
    """A directory changed through the mount just before the unmount (a
    clock tick or two: its stamp cannot prove a listing read then) is
    written once that has passed, not left out with everything under
    it: a file created in the root right before the unmount used to
    leave the next mount no snapshot at all."""
    make_tree(ws.src)
    opts = 'cachesize=32M' + (',revalidate=never' if mode == 'never' else '')
    warm(ws, opts)
    proc = ws.start(opts=opts)
    tree_stats(ws.mnt)
    with open(os.path.join(ws.mnt, 'rootfile'), 'w') as f:
        f.write('r')
    ws.stop(proc)
    ws.start(opts=opts)
    assert int(stats(ws)['meta_snapshot_dirs']) >= NDIRS * 2 + 1
    assert_same_tree(ws.mnt, ws.src)
