# SPDX-License-Identifier: GPL-2.0-or-later
"""A writeback mount remounted over dirty data its log still holds (a
kill -9, or a clean unmount whose flush the source refused), with a
metadata snapshot written while the data was dirty: the snapshot holds
the source's attributes (empty files), the log the acknowledged bytes.
Every size, mtime and block count the next mount answers includes the
log's dirty state, whichever layer answers (the snapshot, the source,
the kernel's caches), before and after the flush; an append goes after
the dirty bytes, never over them."""
import os
import random
import subprocess

import pytest

import util
from test_faults import ext4  # noqa: F401 (a fixture)
from test_writeback import drop_pages, hotfsctl, kill9, read

# the periodic metadata snapshot every 2 s instead of 30
WB = 'writemode=writeback,writeback_log=16M,snapshot_interval=2'
HOLD = WB + ',writeback_delay=600'
NOW = WB + ',writeback_delay=0'
TAIL = b'APPENDED\n'
# d/file is looked up first after the remount; e/file2 (nothing of e
# asked before) only once the flusher may have written it: its first
# lookup then comes after the flush
FILES = {'d/file': random.Random(1).randbytes(1 << 20),
         'e/file2': random.Random(2).randbytes(300000)}


def stat_of(ws, name):
    return os.stat(os.path.join(ws.mnt, name))


def same(got, want, what):
    """got == want, said short: the sizes and the first byte that
    differs."""
    if got != want:
        at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                  min(len(got), len(want)))
        pytest.fail('%s: %d bytes, %d wanted, first difference at %d'
                    % (what, len(got), len(want), at))


def dirty_tree(ws, src, opts):
    """A writeback mount of src that holds FILES, written as cp writes
    them: the source has them empty.  The daemon and what a stat through
    it said of each file."""
    for d in ('d', 'e'):
        os.mkdir(os.path.join(src, d))
    proc = ws.start(src=src, opts=opts)
    for name, data in FILES.items():
        with open(os.path.join(ws.mnt, name), 'wb') as f:
            f.write(data)
    seen = {name: stat_of(ws, name) for name in FILES}
    for name, data in FILES.items():
        n = len(data)
        assert seen[name].st_size == n
        assert os.stat(os.path.join(src, name)).st_size == 0
    return proc, seen


def snapshot_written(ws, dirs=3):
    """Wait for the periodic metadata snapshot (every snapshot_interval
    while something changed) written after every change made so far: it
    records the root, d and e (dirs), with the source's files."""
    def written():
        s = util.hotfs_stats(ws.mnt)
        return int(s['meta_snapshot_saves']) >= 1 and \
            s['meta_snapshot_current'] == '1'
    util.wait_for(written, 'the metadata snapshot to be written')
    assert int(util.hotfs_stats(ws.mnt)['meta_snapshot_saved_dirs']) >= dirs


def snapshot_loaded(ws, dirs=3):
    """The mount read the snapshot (dirs directories), before anything of
    them was asked."""
    assert int(util.hotfs_stats(ws.mnt)['meta_snapshot_dirs']) >= dirs


def check_file(ws, name, seen, exact_times=True):
    """name through the mount: the acknowledged size, blocks, mtime and
    bytes (from the daemon too, not only the kernel's pages)."""
    data = FILES[name]
    n = len(data)
    st = stat_of(ws, name)
    assert st.st_size == n, (name, st.st_size)
    assert st.st_blocks * 512 >= n, (name, st.st_blocks)
    if exact_times:
        assert st.st_mtime_ns == seen[name].st_mtime_ns, name
    else:
        assert st.st_mtime_ns >= seen[name].st_mtime_ns, name
    p = os.path.join(ws.mnt, name)
    same(read(p), data, name)
    drop_pages(p)
    same(read(p), data, name + ' (from the daemon)')


def append_and_flush(ws, src):
    """An append to d/file goes after its dirty bytes; flushed, the source
    holds the acknowledged bytes followed by it."""
    p = os.path.join(ws.mnt, 'd/file')
    with open(p, 'ab') as f:
        f.write(TAIL)
    want = FILES['d/file'] + TAIL
    n = len(want)
    assert os.stat(p).st_size == n
    hotfsctl('flush', ws.mnt)
    same(read(os.path.join(src, 'd/file')), want, 'the source\'s d/file')
    same(read(p), want, 'd/file')
    same(read(os.path.join(src, 'e/file2')), FILES['e/file2'],
         'the source\'s e/file2')


@pytest.mark.slow
def test_kill9_after_snapshot(ws):
    """The issue's steps: cp, the periodic snapshot, kill -9, remount: the
    acknowledged size, blocks, mtime and bytes, and an append after
    them."""
    proc, seen = dirty_tree(ws, ws.src, HOLD)
    snapshot_written(ws)
    kill9(ws, proc)
    proc = ws.start(opts=HOLD)
    snapshot_loaded(ws)
    st = util.hotfs_stats(ws.mnt)
    assert int(st['dirty_files']) == len(FILES)
    for name in FILES:
        check_file(ws, name, seen)
    append_and_flush(ws, ws.src)
    ws.stop(proc)


@pytest.mark.slow
def test_kill9_after_snapshot_flushed_at_once(ws):
    """writeback_delay=0: the flusher writes the replayed data at once, as
    the first lookups come (d/file) or before them (e/file2): never an
    empty or short file, then or after."""
    proc, seen = dirty_tree(ws, ws.src, HOLD)
    snapshot_written(ws)
    kill9(ws, proc)
    proc = ws.start(opts=NOW)
    snapshot_loaded(ws)
    check_file(ws, 'd/file', seen, exact_times=False)
    util.wait_for(lambda: util.hotfs_stats(ws.mnt)['dirty_bytes'] == '0',
                  'the flush')
    for name, data in FILES.items():
        same(read(os.path.join(ws.src, name)), data, 'the source\'s ' + name)
    for name in ('e/file2', 'd/file'):
        check_file(ws, name, seen, exact_times=False)
    append_and_flush(ws, ws.src)
    ws.stop(proc)


@pytest.mark.slow
def test_kill9_after_snapshot_revalidate_never(ws):
    """revalidate=never: the snapshot's directories are trusted unchecked
    and the kernel keeps what it was told; right from the first answer,
    and after the flush (e/file2 first looked up then)."""
    proc, seen = dirty_tree(ws, ws.src, HOLD + ',revalidate=never')
    snapshot_written(ws)
    kill9(ws, proc)
    proc = ws.start(opts=HOLD + ',revalidate=never')
    snapshot_loaded(ws)
    check_file(ws, 'd/file', seen)
    hotfsctl('flush', ws.mnt)
    for name, data in FILES.items():
        same(read(os.path.join(ws.src, name)), data, 'the source\'s ' + name)
    for name in ('e/file2', 'd/file'):
        check_file(ws, name, seen, exact_times=False)
    append_and_flush(ws, ws.src)
    ws.stop(proc)


def test_unmount_flush_refused(ws, ext4):  # noqa: F811
    """A clean unmount whose flush the source refuses (its filesystem
    remounted read-only): the data stays in the log, the snapshot written
    at that unmount has the empty files; the next mount shows the
    acknowledged bytes, and flushes them with the append after them."""
    sdev = ext4('srcfs', 64 << 20)
    proc, seen = dirty_tree(ws, sdev.dir, HOLD)

    def remount_ro():
        # the handles' writable descriptors go at release, just after
        # close(2)
        r = subprocess.run(['mount', '-o', 'remount,ro', sdev.dir],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert r.returncode == 0 or b'busy' in r.stdout, r.stdout
        return r.returncode == 0
    util.wait_for(remount_ro, 'the source remounted read-only')
    util.unmount_cmd(ws.mnt)
    assert proc.wait(timeout=util.TIMEOUT) == 1
    n = sum(len(d) for d in FILES.values())
    assert ('at unmount 0 bytes were written to the source; %d dirty '
            'bytes of 2 files could not be written to the source '
            '(Read-only file system): they stay in the cachedir\'s wlog '
            'for the next mount' % n) in ws.log_text(proc)
    for name in FILES:
        assert os.stat(os.path.join(sdev.dir, name)).st_size == 0
    r = subprocess.run(['mount', '-o', 'remount,rw', sdev.dir],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert r.returncode == 0, r.stdout
    proc = ws.start(src=sdev.dir, opts=HOLD)
    snapshot_loaded(ws)
    for name in FILES:
        check_file(ws, name, seen)
    append_and_flush(ws, sdev.dir)
    ws.stop(proc)


@pytest.mark.drops_caches
@pytest.mark.slow
def test_flushed_after_the_inode_was_forgotten(ws):
    """A file written through the mount in a directory the snapshot holds,
    its inode forgotten by the kernel and the daemon before the flush
    (which then has no inode to note its change of the source by): looked
    up again after the flush, it has the flushed size; so it has at the
    next mount after a kill -9 (the snapshot written while it was dirty,
    with the source's older size, is not taken for current)."""
    old = b'o' * 100
    os.mkdir(os.path.join(ws.src, 'd'))
    with open(os.path.join(ws.src, 'd/f'), 'wb') as f:
        f.write(old)
    for i in range(4):
        with open(os.path.join(ws.src, 'z%d' % i), 'wb') as f:
            f.write(b'z')
    proc = ws.start(opts=HOLD)
    os.listdir(os.path.join(ws.mnt, 'd'))
    ws.stop(proc)                       # the snapshot: d/f of 100 bytes
    proc = ws.start(opts=HOLD)
    snapshot_loaded(ws, 2)
    p = os.path.join(ws.mnt, 'd/f')
    with open(p, 'ab') as f:
        f.write(FILES['d/file'])
    want = old + FILES['d/file']
    n = len(want)
    assert os.stat(p).st_size == n
    os.listdir(os.path.join(ws.mnt, 'd'))
    snapshot_written(ws, 2)             # d/f as the source has it: 100
    # one forgotten inode kept (the last forgotten): z0..z3, looked up
    # again and forgotten after d/f, push it out
    hotfsctl('set', ws.mnt, 'inode_cache=1')

    def forgotten():
        util.drop_caches()
        # the root and the one kept
        return int(util.hotfs_stats(ws.mnt)['inodes']) <= 2
    util.wait_for(forgotten, 'the kernel to forget d/f')
    for i in range(4):
        os.stat(os.path.join(ws.mnt, 'z%d' % i))
    util.wait_for(forgotten, 'the kernel to forget z0..z3')
    hotfsctl('flush', ws.mnt)
    same(read(os.path.join(ws.src, 'd/f')), want, 'the source\'s d/f')
    assert os.stat(p).st_size == n
    same(read(p), want, 'd/f')
    kill9(ws, proc)
    proc = ws.start(opts=HOLD)
    assert os.stat(p).st_size == n
    same(read(p), want, 'd/f after the remount')
    ws.stop(proc)


@pytest.mark.slow
def test_kill9_after_snapshot_then_writearound(ws):
    """A mount in another write mode writes the log's data to the source
    before it answers anything; the snapshot saved while that data was
    dirty (with the source's empty files) is not taken for current, even
    with revalidate=never (which trusts a snapshot unchecked)."""
    proc, seen = dirty_tree(ws, ws.src, HOLD + ',revalidate=never')
    snapshot_written(ws)
    kill9(ws, proc)
    proc = ws.start(opts='writemode=writearound,revalidate=never')
    assert 'writing them to the source before this mount' in \
        ws.log_text(proc)
    for name, data in FILES.items():
        same(read(os.path.join(ws.src, name)), data, 'the source\'s ' + name)
        check_file(ws, name, seen, exact_times=False)
    ws.stop(proc)
