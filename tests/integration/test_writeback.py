# SPDX-License-Identifier: GPL-2.0-or-later
"""writemode=writeback on a real mount (man/hotfs.8, WRITEBACK).

Writes are acknowledged from the writeback log in the cachedir; with
writeback_delay=3600 the flusher holds them, so the tests see the source
still holding the old bytes while the mount shows the new ones (buffered,
O_DIRECT and mmap reads).  A clean unmount writes everything back: the
source is then byte for byte what the mount showed.  A kill -9 loses
nothing that was written: the next mount replays the log, serves the
dirty data and flushes it, to the file written and not to a new one that
took its inode number after the crash.  Truncate, unlink and rename of
files with dirty data follow the rules of the man page; fsx runs in
writeback mode.
"""
import contextlib
import errno
import hashlib
import json
import mmap
import os
import pty
import random
import re
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

import util
import test_concurrency as concurrency
from test_fsx import FSX_TIMEOUT, check_result, fsx_cmd

HOLD = 'writemode=writeback,writeback_delay=3600'


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def read_direct(path, size):
    """size bytes (a multiple of 4096) from the start, O_DIRECT."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, size)
        n = os.readv(fd, [buf])
        return bytes(buf[:n])
    finally:
        os.close(fd)


def write_at(path, off, data, flags=0):
    fd = os.open(path, os.O_WRONLY | flags)
    try:
        assert os.pwrite(fd, data, off) == len(data)
    finally:
        os.close(fd)


def drop_pages(path):
    """The kernel's cached pages of the file through the mount gone: the
    next read reaches the daemon."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def kill9(ws, proc):
    """The daemon killed; its mount cleaned up (the kernel's pages of the
    cachedir's files survive, as after a crash of the daemon alone)."""
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    util.cleanup_mount(None, ws.mnt)
    util.wait_for(lambda: not util.is_mounted(ws.mnt), 'unmounted')


@pytest.fixture
def held(ws):
    """A mount that holds dirty data (no flush before the unmount)."""
    old = bytes(range(256)) * 64                 # 16 KiB
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(old)
    proc = ws.start(opts=HOLD)
    yield ws, proc, old
    if proc.poll() is None and util.is_mounted(ws.mnt):
        ws.stop(proc)


def test_read_your_writes(held):
    ws, proc, old = held
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    new = bytearray(old)
    write_at(m, 100, b'A' * 5000)
    new[100:5100] = b'A' * 5000
    write_at(m, 9000, b'B' * 10)                 # a gap in a block
    new[9000:9010] = b'B' * 10
    write_at(m, len(old) + 3000, b'C' * 20)      # past the end: a hole
    new += bytes(3000) + b'C' * 20
    new = bytes(new)
    assert read(s) == old, 'the source changed before any flush'
    assert os.stat(m).st_size == len(new)
    assert os.stat(s).st_size == len(old)
    assert read(m) == new
    drop_pages(m)                                # from the daemon
    assert read(m) == new
    assert read_direct(m, 8192 * 3)[:len(new)] == new
    with open(m, 'rb') as f:
        mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        try:
            assert mm[:] == new
        finally:
            mm.close()
    # writes through a shared mapping come as writes too
    with open(m, 'r+b') as f:
        mm = mmap.mmap(f.fileno(), 0)
        mm[200:204] = b'MMAP'
        mm.flush()
        mm.close()
    new = new[:200] + b'MMAP' + new[204:]
    drop_pages(m)
    assert read(m) == new
    assert read(s) == old
    # a clean unmount writes it all back
    ws.stop(proc)
    assert read(s) == new


def test_o_direct_and_sync_writes(held):
    ws, proc, old = held
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    buf = mmap.mmap(-1, 4096)
    buf.write(b'D' * 4096)
    fd = os.open(m, os.O_WRONLY | os.O_DIRECT)
    try:
        assert os.pwritev(fd, [buf], 4096) == 4096
    finally:
        os.close(fd)
    write_at(m, 0, b'S' * 10, os.O_SYNC)
    fd = os.open(m, os.O_RDWR)
    try:
        os.pwrite(fd, b'F' * 10, 20)
        os.fsync(fd)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    new = b'S' * 10 + old[10:20] + b'F' * 10 + old[30:4096] + \
        b'D' * 4096 + old[8192:]
    assert read_direct(m, len(old)) == new
    assert read(s) == old
    ws.stop(proc)
    assert read(s) == new


def test_kill9_then_remount(ws):
    old = b'o' * 100000
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(old)
    proc = ws.start(opts=HOLD)
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    write_at(m, 5000, b'K' * 70000)
    with open(os.path.join(ws.mnt, 'g'), 'wb') as f:
        f.write(b'new file ' * 1000)
    fd = os.open(m, os.O_RDWR)
    os.fsync(fd)
    os.close(fd)
    new = old[:5000] + b'K' * 70000 + old[75000:]
    kill9(ws, proc)
    assert read(s) == old
    assert read(os.path.join(ws.src, 'g')) == b''
    # the log replayed: served before any flush
    proc = ws.start(opts=HOLD)
    assert read(m) == new
    assert read(os.path.join(ws.mnt, 'g')) == b'new file ' * 1000
    assert read(s) == old
    ws.stop(proc)
    assert read(s) == new
    assert read(os.path.join(ws.src, 'g')) == b'new file ' * 1000
    # and flushed by the flusher on its own (no delay)
    proc = ws.start(opts='writemode=writeback')
    write_at(m, 0, b'Z' * 10)
    util.wait_for(lambda: read(s)[:10] == b'Z' * 10, 'the flush')
    ws.stop(proc)


def take_inode_number(d, ino, tries=2000):
    """Make files in d until one gets inode number ino (a local
    filesystem gives a freed number again soon); the others are removed.
    Its path, or None."""
    made = []
    try:
        for i in range(tries):
            p = os.path.join(d, 'n%d' % i)
            with open(p, 'wb') as f:
                f.write(b'new %d ' % i * 1000)
            if os.stat(p).st_ino == ino:
                return p
            made.append(p)
        return None
    finally:
        for p in made:
            os.unlink(p)


def test_kill9_inode_number_reused(ws):
    """A file with dirty data removed on the source between a crash and
    the next mount, its inode number taken by a new file: the replay
    tells the new file by its birth and leaves it its own bytes; an
    unchanged file's dirty data is replayed as ever."""
    s = lambda n: os.path.join(ws.src, n)    # noqa: E731
    m = lambda n: os.path.join(ws.mnt, n)    # noqa: E731
    for n in ('f', 'g'):
        with open(s(n), 'wb') as f:
            f.write(b'o' * 20000)
    proc = ws.start(opts=HOLD)
    write_at(m('f'), 0, b'D' * 8192)
    write_at(m('g'), 100, b'G' * 5000)
    for n in ('f', 'g'):
        fd = os.open(m(n), os.O_RDWR)
        os.fsync(fd)
        os.close(fd)
    kill9(ws, proc)
    ino = os.stat(s('f')).st_ino
    os.unlink(s('f'))
    p = take_inode_number(ws.src, ino)
    if p is None:
        pytest.skip('the source filesystem gave no new file inode '
                    'number %d again in 2000 tries' % ino)
    own = read(p)
    proc = ws.start(opts=HOLD)
    name = os.path.basename(p)
    assert read(m(name)) == own, 'the removed file\'s dirty data applied'
    assert read(m('g')) == b'o' * 100 + b'G' * 5000 + b'o' * 14900
    st = util.hotfs_stats(ws.mnt)
    assert int(st['dirty_bytes']) == 5000
    assert int(st['dirty_files']) == 1
    assert int(st['flush_errors']) == 1
    text = ws.log_text(proc)
    line = [x for x in text.splitlines() if 'is another file' in x]
    assert len(line) == 1, text[-3000:]
    assert p in line[0] and '8192 dirty bytes' in line[0], line[0]
    ws.stop(proc)
    assert read(p) == own
    assert read(s('g')) == b'o' * 100 + b'G' * 5000 + b'o' * 14900
    # nothing of it comes back at the next mount either
    proc = ws.start(opts=HOLD)
    assert read(m(name)) == own
    assert int(util.hotfs_stats(ws.mnt)['dirty_bytes']) == 0
    ws.stop(proc)


def test_truncate_unlink_rename(held):
    ws, proc, old = held
    m = lambda n: os.path.join(ws.mnt, n)    # noqa: E731
    s = lambda n: os.path.join(ws.src, n)    # noqa: E731
    # truncate: the dirty bytes past the cut are gone, then written anew
    write_at(m('f'), 10000, b'T' * 4000)
    os.truncate(m('f'), 12000)
    assert os.stat(m('f')).st_size == 12000
    write_at(m('f'), 13000, b'U' * 10)
    want_f = old[:10000] + b'T' * 2000 + bytes(1000) + b'U' * 10
    assert read(m('f')) == want_f
    # unlink of the last link: dropped; a new file of the name is empty
    with open(m('u'), 'wb') as f:
        f.write(b'gone' * 1000)
    os.unlink(m('u'))
    with open(m('u'), 'wb') as f:
        f.write(b'x')
    # rename: the dirty data follows the file
    with open(m('r'), 'wb') as f:
        f.write(b'renamed' * 100)
    os.rename(m('r'), m('r2'))
    # rename over a file with dirty data
    with open(m('v'), 'wb') as f:
        f.write(b'victim' * 100)
    with open(m('w'), 'wb') as f:
        f.write(b'winner' * 100)
    os.rename(m('w'), m('v'))
    # a file unlinked while open keeps its bytes for its handle
    fd = os.open(m('o'), os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, b'open' * 100, 0)
    os.unlink(m('o'))
    os.pwrite(fd, b'more', 400)
    assert os.pread(fd, 404, 0) == b'open' * 100 + b'more'
    os.close(fd)
    assert read(m('f')) == want_f
    assert read(m('u')) == b'x'
    assert read(m('r2')) == b'renamed' * 100
    assert read(m('v')) == b'winner' * 100
    assert sorted(os.listdir(ws.mnt)) == ['f', 'r2', 'u', 'v']
    kill9(ws, proc)
    # nothing comes back that was cut or removed
    proc = ws.start(opts=HOLD)
    assert read(m('f')) == want_f
    assert read(m('u')) == b'x'
    assert read(m('r2')) == b'renamed' * 100
    assert read(m('v')) == b'winner' * 100
    ws.stop(proc)
    assert read(s('f')) == want_f
    assert read(s('u')) == b'x'
    assert read(s('r2')) == b'renamed' * 100
    assert read(s('v')) == b'winner' * 100


def test_setattr_and_fallocate_flush_first(held):
    ws, proc, old = held
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    write_at(m, 0, b'P' * 8192)
    # setting the times flushes first: the times stay as set
    os.utime(m, (1000000000, 1000000000))
    assert read(s)[:8192] == b'P' * 8192
    assert os.stat(m).st_mtime == 1000000000
    write_at(m, 8192, b'Q' * 4096)
    fd = os.open(m, os.O_RDWR)
    try:
        util.fallocate(fd, 0x02 | 0x01, 4096, 4096)   # PUNCH_HOLE|KEEP
    finally:
        os.close(fd)
    want = b'P' * 4096 + bytes(4096) + b'Q' * 4096 + old[12288:]
    assert read(m) == want
    assert read(s) == want
    ws.stop(proc)
    assert read(s) == want


def test_refused_without_store_and_live(ws):
    r = subprocess.run([util.hotfs_bin(), ws.src, ws.mnt, '-o',
                        'nocache,writemode=writeback', '-f'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    assert r.returncode != 0
    assert b'needs a cache store' in r.stderr
    assert not util.is_mounted(ws.mnt)
    proc = ws.start(opts=HOLD)
    ctl = os.environ.get('HOTFSCTL_BIN') or os.path.join(
        os.path.dirname(util.hotfs_bin()), 'hotfsctl')
    r = subprocess.run([ctl, 'set', ws.mnt, 'writemode=writearound'],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    assert r.returncode != 0
    assert b'fixed while mounted with writemode=writeback' in r.stdout
    ws.stop(proc)


@pytest.mark.slow
@pytest.mark.parametrize('opts', [HOLD, 'writemode=writeback'],
                         ids=['held', 'flushing'])
def test_fsx_writeback(ws, opts):
    """fsx's model of the file against the mount, the log holding the
    data or the flusher writing it back under the exerciser; then the
    source after the unmount."""
    proc = ws.start(opts=opts + ',threshold=1')
    name = 'fsx.wb'
    r = subprocess.run(fsx_cmd(os.path.join(ws.mnt, name), 31,
                               args=['-l', '2M', '-o', '256K']),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=FSX_TIMEOUT)
    check_result(name, r.returncode, r.stdout.decode(errors='replace'))
    shown = read(os.path.join(ws.mnt, name))
    ws.stop(proc)
    assert read(os.path.join(ws.src, name)) == shown


WB_KEYS = ('dirty_bytes', 'dirty_records', 'dirty_files', 'oldest_dirty_age',
           'flushed_bytes', 'flush_rate', 'flush_errors', 'writes_absorbed',
           'wlog_used_bytes', 'wlog_capacity_bytes', 'wlog_cleaned_bytes',
           'writeback_conflicts', 'lost_dirty_bytes')


def test_stats(ws):
    """The keys in every mode; in writeback, what is dirty and flushed."""
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'o' * 8192)
    proc = ws.start()
    s = util.hotfs_stats(ws.mnt)
    assert all(float(s[k]) == 0 for k in WB_KEYS), s
    ws.stop(proc)
    proc = ws.start(opts=HOLD)
    m = os.path.join(ws.mnt, 'f')
    write_at(m, 0, b'a' * 5000)
    write_at(m, 100, b'b' * 10)
    s = util.hotfs_stats(ws.mnt)
    assert int(s['dirty_bytes']) == 5000
    assert int(s['dirty_files']) == 1
    assert int(s['dirty_records']) == 2
    assert int(s['writes_absorbed']) >= 1
    assert float(s['oldest_dirty_age']) >= 0
    assert int(s['wlog_used_bytes']) > 0
    assert int(s['wlog_capacity_bytes']) == 256 << 20
    assert int(s['flushed_bytes']) == 0 and int(s['flush_errors']) == 0
    with open(os.path.join(ws.mnt, '.hotfs', 'stats.json')) as f:
        j = json.load(f)
    assert all(k in j for k in WB_KEYS), j
    ws.stop(proc)
    # the flusher without a delay: flushed, then nothing dirty
    proc = ws.start(opts='writemode=writeback')
    write_at(m, 0, b'c' * 3000)
    util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)['dirty_bytes']) == 0
                  and int(util.hotfs_stats(ws.mnt)['flushed_bytes']) >= 3000,
                  'the flush')
    assert read(os.path.join(ws.src, 'f'))[:3000] == b'c' * 3000
    ws.stop(proc)


@pytest.mark.slow
@pytest.mark.parametrize('opts', [HOLD, 'writemode=writeback'],
                         ids=['held', 'flushing'])
def test_concurrency_writeback(ws, opts):
    """test_concurrency's workers (own files, stripes of a shared file,
    records appended to a shared log with O_APPEND, names churned) and
    its contenders (files replaced whole by rename, unlinked, linked)
    through a writeback mount: every byte they read is checked; the mount
    shows the result, and after the unmount the source holds it."""
    with open(os.path.join(ws.src, 'common'), 'wb') as f:
        f.write(concurrency.pattern(7, concurrency.COMMON_SIZE))
    proc = ws.start(opts=opts)
    mnt = ws.mnt
    n = concurrency.NPROC
    with open(os.path.join(mnt, 'shared'), 'wb') as f:
        f.truncate(n * concurrency.STRIPE)
    open(os.path.join(mnt, 'log'), 'wb').close()
    os.mkdir(os.path.join(mnt, 'churn'))
    os.mkdir(os.path.join(mnt, 'arena'))
    failures = concurrency.run_workers(mnt, n)
    failures += concurrency.run_contenders(mnt, n)
    assert proc.poll() is None, 'hotfs died: %s' % ws.log_text(proc)[-3000:]
    assert not failures, '\n'.join(failures)
    expect = b''.join(concurrency.pattern(3000 + i, concurrency.STRIPE)
                      for i in range(n))
    rec = concurrency.RECORD

    def check(root):
        assert read(os.path.join(root, 'shared')) == expect, root
        log = read(os.path.join(root, 'log'))
        assert len(log) == n * concurrency.NRECORDS * rec, root
        seen = {}
        for k in range(0, len(log), rec):
            r = log[k:k + rec]
            assert r.endswith(b'\n') and r.count(b'\n') == 1, r
            i, j, _ = r.split(b':', 2)
            seen.setdefault(int(i), []).append(int(j))
        assert seen == {i: list(range(concurrency.NRECORDS))
                        for i in range(n)}, root
        names = sorted(os.listdir(os.path.join(root, 'churn')))
        assert names == sorted('w%d-%d.renamed' % (i, k) for i in range(n)
                               for k in range(0, concurrency.CHURN, 2))

    check(mnt)
    shown = {}
    for d in ('', 'arena', 'churn'):
        for name in os.listdir(os.path.join(mnt, d)):
            p = os.path.join(d, name)
            if os.path.isfile(os.path.join(mnt, p)):
                shown[p] = read(os.path.join(mnt, p))
    ws.stop(proc)
    check(ws.src)
    for p, data in shown.items():
        assert read(os.path.join(ws.src, p)) == data, p


def test_revalidate_never(ws):
    """Without open round trips (handle-less requests) the same rules."""
    old = b'n' * 10000
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(old)
    proc = ws.start(opts=HOLD + ',revalidate=never')
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    write_at(m, 5000, b'N' * 6000)
    new = old[:5000] + b'N' * 6000
    drop_pages(m)
    assert read(m) == new and read(s) == old
    with open(os.path.join(ws.mnt, 'g'), 'wb') as f:
        f.write(b'g' * 100)
    os.unlink(os.path.join(ws.mnt, 'g'))
    os.truncate(m, 7000)
    ws.stop(proc)
    assert read(s) == new[:7000]
    assert os.listdir(ws.src) == ['f']


BLOCK = 4096
NBLOCKS = 256


def block_of(tag, n):
    return (b'%08d:%08d|' % (tag, n)) * (BLOCK // 18) + b'.' * (BLOCK % 18)


def tag_of(got, b):
    """The write (tag) whose bytes block b holds, or None: bytes no write
    put there (another block's, a mix, zeros)."""
    try:
        tag, n = (int(x) for x in got[:17].split(b':'))
    except ValueError:
        return None
    return tag if n == b and got == block_of(tag, b) else None


# HOTFS_WB_KILLS: the kills of test_kill9_during_writes (4 in CI;
# contrib/ci/soak.sh runs 500); HOTFS_WB_SEED replays a run.
WB_KILLS = int(os.environ.get('HOTFS_WB_KILLS', '4'))
WB_SEED = int(os.environ.get('HOTFS_WB_SEED', '2326'))


@pytest.mark.slow
def test_kill9_during_writes(ws):
    """The daemon killed at a random moment of random block writes with an
    fsync every 8: at the next mount every block holds the last write to
    it that returned, or one issued after it; never an older one (lost),
    another block's or a mix of two (wrong).  kill -9 leaves the kernel's
    pages of the log, so a write that returned is kept even without its
    fsync."""
    rng = random.Random(WB_SEED)
    print('HOTFS_WB_KILLS=%d HOTFS_WB_SEED=%d' % (WB_KILLS, WB_SEED))
    path = os.path.join(ws.src, 'f')
    with open(path, 'wb') as f:
        for b in range(NBLOCKS):
            f.write(block_of(0, b))
    # per block: the writes (tags) it may hold (the last write that
    # returned, and those issued after it)
    allowed = {b: {0} for b in range(NBLOCKS)}
    lost = wrong = writes = 0
    tag = 0

    def check(shown, when):
        nonlocal lost, wrong
        for b in range(NBLOCKS):
            t = tag_of(shown[b * BLOCK:(b + 1) * BLOCK], b)
            if t is None:
                wrong += 1
                print('%s: block %d holds bytes no write put there' %
                      (when, b))
            elif t not in allowed[b]:
                lost += 1
                print('%s: block %d holds write %d, not one of %r' %
                      (when, b, t, sorted(allowed[b])))
            allowed[b] = {t}

    for rnd in range(WB_KILLS):
        proc = ws.start(opts='writemode=writeback,writeback_delay=%d' %
                        rng.choice([0, 3600]))
        check(read(os.path.join(ws.mnt, 'f')), 'kill %d' % rnd)
        killer = threading.Timer(rng.uniform(0.2, 1.5),
                                 lambda: proc.send_signal(signal.SIGKILL))
        killer.start()
        n = 0
        try:
            fd = os.open(os.path.join(ws.mnt, 'f'), os.O_WRONLY)
            while True:
                tag += 1
                b = rng.randrange(NBLOCKS)
                allowed[b].add(tag)              # issued
                os.pwrite(fd, block_of(tag, b), b * BLOCK)
                allowed[b] = {tag}               # returned
                n += 1
                if tag % 8 == 0:
                    os.fsync(fd)
        except OSError:
            pass
        finally:
            killer.join()
            try:
                os.close(fd)
            except OSError:
                pass
        assert n > 0
        writes += n
        proc.wait(timeout=30)
        util.cleanup_mount(None, ws.mnt)
        util.wait_for(lambda: not util.is_mounted(ws.mnt), 'unmounted')
    proc = ws.start(opts='writemode=writeback')
    shown = read(os.path.join(ws.mnt, 'f'))
    check(shown, 'the last mount')
    ws.stop(proc)
    print('kills: %d, writes: %d, blocks lost: %d, wrong: %d' %
          (WB_KILLS, writes, lost, wrong))
    assert lost == 0 and wrong == 0
    assert read(path) == shown


def test_open_with_o_trunc(held):
    """O_TRUNC at open cuts the dirty data too (write and read-only
    opens); the file's later writes stand."""
    ws, proc, old = held
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    write_at(m, 0, b'W' * 9000)
    fd = os.open(m, os.O_WRONLY | os.O_TRUNC)
    os.pwrite(fd, b'after', 3)
    os.close(fd)
    assert read(m) == bytes(3) + b'after'
    write_at(m, 100, b'X' * 100)
    os.close(os.open(m, os.O_RDONLY | os.O_TRUNC))
    assert read(m) == b'' and os.stat(m).st_size == 0
    # O_CREAT|O_TRUNC of a file that exists (an open, as the kernel
    # looks the name up first)
    write_at(m, 0, b'Y' * 5000)
    drop_pages(m)
    with open(os.path.join(ws.mnt, 'f'), 'wb') as f:
        f.write(b'z')
    assert read(m) == b'z'
    ws.stop(proc)
    assert read(s) == b'z'


def test_times_follow_dirty_writes(held):
    """A dirty write moves mtime and ctime through the mount at once; the
    flush moves the source's later still."""
    ws, proc, old = held
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    os.utime(m, (1000000000, 1000000000))
    assert os.stat(s).st_mtime == 1000000000
    before = os.stat(m)
    write_at(m, 10, b't')
    after = os.stat(m)
    assert after.st_mtime_ns > before.st_mtime_ns
    assert after.st_ctime_ns >= before.st_ctime_ns
    assert os.stat(s).st_mtime == 1000000000
    ws.stop(proc)
    assert os.stat(s).st_mtime_ns >= after.st_mtime_ns


@pytest.mark.slow
def test_log_full(ws):
    """More than the log holds, with the delay holding everything: above
    dirty_high the flusher writes flat out, a writer that finds the log
    full waits for it and goes on (writers wait, never fail);
    the mount and then the source hold every byte."""
    proc = ws.start(opts=HOLD)
    m = os.path.join(ws.mnt, 'big')
    h = hashlib.sha256()
    chunk = 1 << 20
    with open(m, 'wb') as f:
        for i in range(300):              # 300 MiB: the log is 256
            data = (b'%08d' % i) * (chunk // 8)
            h.update(data)
            f.write(data)
    s = util.hotfs_stats(ws.mnt)
    assert int(s['flushed_bytes']) > 0 and int(s['flush_errors']) == 0
    assert int(s['wlog_used_bytes']) <= int(s['wlog_capacity_bytes'])

    def digest(path):
        d = hashlib.sha256()
        with open(path, 'rb') as f:
            for block in iter(lambda: f.read(chunk), b''):
                d.update(block)
        return d.hexdigest()

    assert digest(m) == h.hexdigest()
    ws.stop(proc)
    assert digest(os.path.join(ws.src, 'big')) == h.hexdigest()


def test_log_cleaned_not_waiting(ws):
    """Random 4 KiB writes over a 4 MiB file, five times the size of a
    16 MiB log, with the flusher holding everything: the cleaner moves
    the live blocks forward, so no write waits for the source (nothing
    is flushed until the unmount) and every byte is as written, through
    the mount, after a kill -9 and remount, and on the source at the
    end."""
    opts = HOLD + ',writeback_log=16M,dirty_high=99,dirty_low=99'
    size = 4 << 20
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'.' * size)
    proc = ws.start(opts=opts)
    m = os.path.join(ws.mnt, 'f')
    want = bytearray(b'.' * size)
    rnd = random.Random(5)
    fd = os.open(m, os.O_WRONLY)
    try:
        for i in range(20000):
            off = rnd.randrange(size // 4096) * 4096
            data = struct.pack('<Q', i) * 512
            os.pwrite(fd, data, off)
            want[off:off + 4096] = data
    finally:
        os.close(fd)
    s = util.hotfs_stats(ws.mnt)
    assert int(s['wlog_cleaned_bytes']) > 0
    assert int(s['flushed_bytes']) == 0 and int(s['flush_errors']) == 0
    assert int(s['wlog_used_bytes']) <= int(s['wlog_capacity_bytes'])
    assert read(m) == want
    # the cleaned log after a crash: the page cache holds it, so this is
    # the replay's test (power loss: test_powerloss.py)
    kill9(ws, proc)
    proc = ws.start(opts=opts)
    assert read(m) == want
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'f')) == want
MIB = 1 << 20


def stat_int(ws, key):
    return int(util.hotfs_stats(ws.mnt)[key])


def test_watermarks_flush_above_high(ws):
    """Above dirty_high the flusher writes flat out, however young the
    data, oldest first, until the log's use is below dirty_low; there it
    stops (the rest is younger than writeback_delay)."""
    proc = ws.start(opts=HOLD + ',writeback_log=8M,dirty_high=50,'
                    'dirty_low=25')
    m = os.path.join(ws.mnt, 'f')
    with open(m, 'wb') as f:
        for i in range(5):                     # 5 MiB: 62% of the log
            f.write(bytes([ord('a') + i]) * MIB)
    cap = stat_int(ws, 'wlog_capacity_bytes')
    assert cap == 8 * MIB
    util.wait_for(lambda: stat_int(ws, 'wlog_used_bytes') * 100 < 25 * cap,
                  'the flush down to dirty_low')
    s = util.hotfs_stats(ws.mnt)
    assert int(s['flushed_bytes']) >= 3 * MIB and int(s['flush_errors']) == 0
    # the rate over the last 10 s, in all three forms
    assert float(s['flush_rate']) > 0
    with open(os.path.join(ws.mnt, '.hotfs', 'stats.json')) as f:
        assert json.load(f)['flush_rate'] > 0
    with open(os.path.join(ws.mnt, '.hotfs', 'metrics')) as f:
        rate = [line for line in f.read().split('\n')
                if line.startswith('hotfs_flush_rate_bytes_per_second')]
    assert len(rate) == 1 and float(rate[0].split()[-1]) > 0, rate
    # stopped there: the youngest data stays dirty
    assert int(s['dirty_bytes']) >= MIB
    src = read(os.path.join(ws.src, 'f'))
    assert src[:3 * MIB] == b'a' * MIB + b'b' * MIB + b'c' * MIB
    assert read(m) == b''.join(bytes([ord('a') + i]) * MIB
                               for i in range(5))
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'f')) == b''.join(
        bytes([ord('a') + i]) * MIB for i in range(5))


BUSY_READER = """
import mmap, os, sys
src, mnt = sys.argv[1], sys.argv[2]
buf = mmap.mmap(-1, 8192)
i = 0
while True:
    i += 1
    fd = os.open(src, os.O_WRONLY)
    os.pwrite(fd, b'%08d' % i, 0)
    os.close(fd)
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECT)
    os.readv(fd, [buf])
    os.close(fd)
"""


def test_watermarks_busy_source_holds(ws):
    """Below dirty_low, old enough data waits while the mount reads the
    source, and is flushed once the source has been idle for a second."""
    with open(os.path.join(ws.src, 'busy'), 'wb') as f:
        f.write(b'x' * 8192)
    proc = ws.start(opts='writemode=writeback,writeback_log=8M,'
                    'writeback_delay=0,'
                    'dirty_high=90,dirty_low=80')
    busy_src = os.path.join(ws.src, 'busy')
    # a process of its own (no lock shared with this one): a change
    # behind the mount before each read, so that every read misses the
    # store and reads the source
    reader = subprocess.Popen([sys.executable, '-c', BUSY_READER, busy_src,
                               os.path.join(ws.mnt, 'busy')])
    misses = stat_int(ws, 'read_misses')
    try:
        util.wait_for(lambda: stat_int(ws, 'read_misses') > misses + 20,
                      'the reader reaching the source')
        write_at(os.path.join(ws.mnt, 'busy'), 4096, b'D' * 4096)
        dirty = stat_int(ws, 'dirty_bytes')
        assert dirty == 4096
        # three seconds of a busy source: nothing flushed
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert stat_int(ws, 'dirty_bytes') == dirty
            assert stat_int(ws, 'flushed_bytes') == 0
            assert reader.poll() is None
            time.sleep(0.05)
    finally:
        reader.terminate()
        reader.wait(timeout=30)
    util.wait_for(lambda: stat_int(ws, 'dirty_bytes') == 0,
                  'the flush once the source is idle')
    assert read(busy_src)[4096:] == b'D' * 4096
    ws.stop(proc)


def test_writer_waits_for_room(ws):
    """A log filled faster than it is flushed (dirty_high at 99%, the
    delay holding everything): writers wait for the flusher to make room
    and every write succeeds; the data is whole on the mount and then on
    the source."""
    proc = ws.start(opts=HOLD + ',writeback_log=4M,dirty_high=99,'
                    'dirty_low=99')
    m = os.path.join(ws.mnt, 'big')
    data = b''.join((b'%07d\n' % i) * (MIB // 8) for i in range(16))
    with open(m, 'wb') as f:
        for i in range(16):                    # four times the log
            f.write(data[i * MIB:(i + 1) * MIB])
    s = util.hotfs_stats(ws.mnt)
    assert int(s['flushed_bytes']) >= 12 * MIB
    assert int(s['flush_errors']) == 0
    assert int(s['wlog_used_bytes']) <= 4 * MIB
    drop_pages(m)
    assert read(m) == data
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'big')) == data


def hotfsctl(*args, check=True, cwd=None, stderr=subprocess.PIPE):
    r = subprocess.run([util_ctl()] + list(args), stdout=subprocess.PIPE,
                       stderr=stderr, timeout=120, cwd=cwd)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def util_ctl():
    c = os.environ.get('HOTFSCTL_BIN', '')
    if not c or not os.access(c, os.X_OK):
        pytest.fail('HOTFSCTL_BIN=%r is not an executable' % c)
    return c


def test_hotfsctl_flush(held):
    """hotfsctl flush: one file, a tree, the whole mount (its root, or no
    PATH from inside it); each returns once the source holds what the mount
    shows; status shows what is dirty."""
    ws, proc, old = held
    os.makedirs(os.path.join(ws.src, 'd', 'sub'))
    files = {'f': old, 'a': b'', 'd/b': b'', 'd/sub/c': b''}
    for name in files:
        data = bytes([ord('A') + len(name)]) * (MIB + 4097 * len(name))
        write_at(os.path.join(ws.mnt, name), 0, data, os.O_CREAT)
        files[name] = data

    def src(name):
        return read(os.path.join(ws.src, name))

    assert all(src(n) != files[n] for n in files)
    out = hotfsctl('status', ws.mnt).stdout.decode()
    assert re.search(r'^dirty +\S+ MiB in 4 files$', out, re.M), out
    assert re.search(r'^oldest_dirty_age +[0-9.]+ s$', out, re.M), out
    j = json.loads(hotfsctl('status', ws.mnt, '--json').stdout)
    assert j['dirty_bytes'] == stat_int(ws, 'dirty_bytes') > 0
    assert j['oldest_dirty_age'] >= 0
    # one file
    r = hotfsctl('flush', os.path.join(ws.mnt, 'a'))
    assert b'written to the source' in r.stderr
    assert src('a') == files['a']
    assert src('d/b') != files['d/b'] and src('f') != files['f']
    # a tree, with --json
    j = json.loads(hotfsctl('flush', os.path.join(ws.mnt, 'd'),
                            '--json').stdout)
    assert j['files'] == 2 and j['errors'] == 0
    assert j['flushed_bytes'] == len(files['d/b']) + len(files['d/sub/c'])
    assert j['dirty_bytes'] == stat_int(ws, 'dirty_bytes') > 0
    assert src('d/b') == files['d/b'] and src('d/sub/c') == files['d/sub/c']
    assert src('f') != files['f']
    # the whole mount by its root
    j = json.loads(hotfsctl('--json', 'flush', ws.mnt).stdout)
    assert j['dirty_bytes'] == 0 and j['errors'] == 0
    assert j['flushed_bytes'] == len(files['f'])
    assert all(src(n) == files[n] for n in files)
    assert stat_int(ws, 'dirty_bytes') == 0
    # no PATH: the mount of the current directory, whole
    write_at(os.path.join(ws.mnt, 'd', 'b'), 10, b'again')
    files['d/b'] = files['d/b'][:10] + b'again' + files['d/b'][15:]
    hotfsctl('flush', cwd=os.path.join(ws.mnt, 'd', 'sub'))
    assert src('d/b') == files['d/b']
    assert stat_int(ws, 'dirty_bytes') == 0
    out = hotfsctl('status', ws.mnt).stdout.decode()
    assert re.search(r'^dirty +0 B in 0 files$', out, re.M), out
    assert all(read(os.path.join(ws.mnt, n)) == files[n] for n in files)


def test_hotfsctl_flush_progress_on_a_tty(held):
    """On a terminal, flush draws warm's progress bar."""
    ws, proc, old = held
    write_at(os.path.join(ws.mnt, 'f'), 0, b'p' * (4 * MIB))
    master, slave = pty.openpty()
    try:
        r = hotfsctl('flush', ws.mnt, stderr=slave)
        os.close(slave)
        slave = -1
        out = b''
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:             # EIO: the other side is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert r.returncode == 0
    assert re.search(rb'\r\[#{30}\] 100% ', out), out
    assert read(os.path.join(ws.src, 'f')) == b'p' * (4 * MIB)


@contextlib.contextmanager
def full_tmpfs(ws, sparse):
    """A 1 MiB tmpfs as a source, holding 'big', a sparse file of sparse
    bytes (writes within its size are taken, and their flush finds the
    source full: test_wbfaults.py has the write that grows a file);
    unmounted at the end."""
    src = os.path.join(ws.root, 'small')
    os.makedirs(src)
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', src],
                   check=True)
    try:
        with open(os.path.join(src, 'big'), 'wb') as f:
            f.truncate(sparse)
        yield src
    finally:
        subprocess.run(['umount', src], check=True)


def test_hotfsctl_flush_fails_on_a_full_source(ws):
    """A flush the source refuses (a full filesystem): hotfsctl flush says
    so in one line and exits 1; the data stays dirty, and is dropped by a
    truncate so that the unmount is clean."""
    with full_tmpfs(ws, 2 * MIB) as src:
        proc = ws.start(src=src, opts=HOLD)
        try:
            m = os.path.join(ws.mnt, 'big')
            write_at(m, 0, b'x' * (2 * MIB))
            r = hotfsctl('flush', ws.mnt, check=False)
            assert r.returncode == 1, r
            lines = r.stderr.decode().strip().split('\n')
            assert len(lines) == 1, lines
            assert lines[0] == ('hotfsctl: %s: flush failed: No space left '
                                'on device' % ws.mnt), lines
            assert stat_int(ws, 'dirty_bytes') > 0
            assert stat_int(ws, 'flush_errors') > 0
            os.truncate(m, 0)
            hotfsctl('flush', ws.mnt)
        finally:
            ws.stop(proc)


def test_flushed_data_stays_cached(held):
    """A flushed block becomes clean cached data under the file's new
    stamp: a read after the flush is a store hit, the source is not read;
    a change behind the mount afterwards is seen, not the cached bytes."""
    ws, proc, old = held
    m, s = os.path.join(ws.mnt, 'new'), os.path.join(ws.src, 'new')
    data = bytes(random.Random(7).getrandbits(8) for _ in range(MIB))
    write_at(m, 0, data, os.O_CREAT)            # four whole extents
    # and three whole blocks in the first extent of a file with cached
    # extents, whose other bytes stay cached under the new stamp
    f = os.path.join(ws.mnt, 'f')
    hotfsctl('warm', f)
    write_at(f, 4096, b'W' * 3 * 4096)
    want_f = old[:4096] + b'W' * 3 * 4096 + old[4 * 4096:]
    hotfsctl('flush', ws.mnt)
    assert read(s) == data and read(os.path.join(ws.src, 'f')) == want_f
    before = util.hotfs_stats(ws.mnt)
    drop_pages(m)
    drop_pages(f)
    assert read_direct(m, MIB) == data
    # (the blocks serve a random reader: one that does not start at 0)
    fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, 3 * 4096)
        assert os.preadv(fd, [buf], 4096) == 3 * 4096
        assert bytes(buf) == b'W' * 3 * 4096
    finally:
        os.close(fd)
    after = util.hotfs_stats(ws.mnt)
    assert int(after['read_miss_bytes']) == int(before['read_miss_bytes'])
    assert int(after['read_misses']) == int(before['read_misses'])
    assert int(after['read_partial_hits']) == int(before['read_partial_hits'])
    assert (int(after['read_hit_bytes']) - int(before['read_hit_bytes']) ==
            MIB + 3 * 4096)
    assert read(f) == want_f
    # never a stale byte: a change behind the mount is read from there
    write_at(s, 0, b'behind')
    drop_pages(m)
    assert read(m) == b'behind' + data[6:]


def test_watermarks_set_while_mounted(ws):
    """hotfsctl set moves the watermarks of a live mount: the flusher
    follows them at once; a low above the high in force, or the keys on a
    mount without writeback, are refused with one line."""
    proc = ws.start(opts=HOLD + ',writeback_log=8M')
    m = os.path.join(ws.mnt, 'f')
    write_at(m, 0, b'w' * (3 * MIB), os.O_CREAT)   # 37%: below 50
    cap = stat_int(ws, 'wlog_capacity_bytes')
    assert stat_int(ws, 'flushed_bytes') == 0
    out = hotfsctl('status', ws.mnt).stdout.decode()
    assert 'writeback_delay=3600,dirty_high=50,dirty_low=45,' in out, out
    r = hotfsctl('set', ws.mnt, 'dirty_low=60', check=False)
    assert r.returncode == 1 and r.stderr.decode().count('\n') == 1, r
    assert b'dirty_low=60 would be above dirty_high=50' in r.stderr
    r = hotfsctl('set', ws.mnt, 'dirty_high=30', 'dirty_low=10')
    assert b'dirty_high=30,dirty_low=10' in r.stdout, r
    util.wait_for(lambda: stat_int(ws, 'wlog_used_bytes') * 100 < 10 * cap,
                  'the flush down to the new dirty_low')
    assert stat_int(ws, 'flushed_bytes') >= 2 * MIB
    out = hotfsctl('status', ws.mnt).stdout.decode()
    assert 'dirty_high=30,dirty_low=10,' in out, out
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'f')) == b'w' * (3 * MIB)
    proc = ws.start()
    r = hotfsctl('set', ws.mnt, 'dirty_high=30', check=False)
    assert r.returncode == 1, r
    assert r.stderr == (b'hotfsctl: error: dirty_high: applies to '
                        b'writemode=writeback only\n'), r
    ws.stop(proc)


def test_full_log_and_failing_source_enospc(ws):
    """A writer that finds the log full while the source refuses the
    flush (it is full) gets ENOSPC once a round fails, instead of waiting
    for room that cannot come; what it wrote before stays readable, and
    reaches the source once it has room again."""
    with full_tmpfs(ws, 16 * MIB) as src:
        proc = ws.start(src=src, opts=HOLD + ',writeback_log=4M')
        try:
            m = os.path.join(ws.mnt, 'big')
            written = 0
            fd = os.open(m, os.O_WRONLY)
            try:
                with pytest.raises(OSError) as e:
                    for i in range(16):          # four times the log
                        assert os.pwrite(fd, bytes([65 + i]) * MIB,
                                         i * MIB) == MIB
                        written += MIB
            finally:
                os.close(fd)
            assert e.value.errno == errno.ENOSPC
            # the log's worth, and what the source took before it filled
            assert 3 * MIB <= written <= 5 * MIB
            assert stat_int(ws, 'flush_errors') > 0
            drop_pages(m)
            want = b''.join(bytes([65 + i]) * MIB
                            for i in range(written // MIB))
            got = read(m)
            assert got[:len(want)] == want
            assert got[len(want):] == bytes(16 * MIB - len(want))
        finally:
            # room on the source again: the flush, then a clean unmount
            subprocess.run(['mount', '-o', 'remount,size=64m', src],
                           check=True)
            hotfsctl('flush', ws.mnt)
            ws.stop(proc)
        got = read(os.path.join(src, 'big'))
        assert got[:len(want)] == want
        assert got[len(want):] == bytes(16 * MIB - len(want))


# HOTFS_RENAME_KILLS: the kills of test_kill9_during_rename_storm (12 in
# CI; contrib/ci/soak.sh runs 100); HOTFS_RENAME_SEED replays a run.
RENAME_KILLS = int(os.environ.get('HOTFS_RENAME_KILLS', '12'))
RENAME_SEED = int(os.environ.get('HOTFS_RENAME_SEED',
                                 random.randrange(1 << 30)))
RENAME_DIRS, RENAMERS, RENAME_FILES = 4, 4, 16
#: how long a killed daemon may take to be gone once its mount is detached
GONE_TIMEOUT = 20

# One renamer: its own files (w<me>_<k>, or w<me>_<k>.b) moved between
# the directories, and renamed within one, through descriptors of the
# mount's directories, as fast as it can; 1 + its count of renames in its
# slot of the counter file once it has started.  It ends at the first
# error of a rename (the daemon gone).
RENAMER = r"""
import mmap, os, random, struct, sys
root, me, seed, ndirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4])
dirs = [os.open(os.path.join(root, 'd%d' % i), os.O_RDONLY | os.O_DIRECTORY)
        for i in range(ndirs)]
where = {}
for i, d in enumerate(dirs):
    for name in os.listdir(d):
        if name.split('.')[0].split('_')[0] == 'w%d' % me:
            where[name.split('.')[0]] = (i, name)
with open(sys.argv[5], 'r+b') as f:
    counter = mmap.mmap(f.fileno(), 0)
rng = random.Random(seed)
bases = sorted(where)
n = 1
struct.pack_into('Q', counter, me * 8, n)
while True:
    base = rng.choice(bases)
    a, old = where[base]
    b = rng.randrange(ndirs)
    new = base if old != base else base + '.b'
    try:
        os.rename(old, new, src_dir_fd=dirs[a], dst_dir_fd=dirs[b])
    except OSError:
        sys.exit(0)
    where[base] = (b, new)
    n += 1
    struct.pack_into('Q', counter, me * 8, n)
"""


def renamer_files(root):
    """{base name: [paths under root]} of the renamers' files."""
    got = {}
    for i in range(RENAME_DIRS):
        d = 'd%d' % i
        for name in os.listdir(os.path.join(root, d)):
            got.setdefault(name.split('.')[0], []).append(
                os.path.join(d, name))
    return got


@pytest.mark.slow
def test_kill9_during_rename_storm(ws):
    """The daemon killed while several processes rename files between
    directories through the mount as fast as they can (its source watch
    hears every rename): each time, fusermount3 -u -z frees the mount and
    the daemon is gone (every thread of it) within GONE_TIMEOUT, without
    an abort of the connection.  A round that needs one is aborted here,
    counted and reported with the daemon's threads and where they wait.
    Every file is then in one place, under one name."""
    rng = random.Random(RENAME_SEED)
    print('HOTFS_RENAME_KILLS=%d HOTFS_RENAME_SEED=%d' %
          (RENAME_KILLS, RENAME_SEED))
    for i in range(RENAME_DIRS):
        os.mkdir(os.path.join(ws.src, 'd%d' % i))
    for me in range(RENAMERS):
        for k in range(RENAME_FILES):
            with open(os.path.join(ws.src, 'd%d' % rng.randrange(
                    RENAME_DIRS), 'w%d_%d' % (me, k)), 'wb') as f:
                f.write(b'%d %d\n' % (me, k))
    counter = os.path.join(ws.root, 'renames')
    stuck, renames = [], 0
    for rnd in range(RENAME_KILLS):
        with open(counter, 'wb') as f:
            f.write(bytes(8 * RENAMERS))
        proc = ws.start(opts='writemode=writeback')
        conn = util.fuse_conn(ws.mnt)
        workers = []
        aborted = False
        try:
            for me in range(RENAMERS):
                workers.append(subprocess.Popen(
                    [sys.executable, '-c', RENAMER, ws.mnt, str(me),
                     str(rng.randrange(1 << 30)), str(RENAME_DIRS),
                     counter]))

            def counts():
                with open(counter, 'rb') as f:
                    return struct.unpack('%dQ' % RENAMERS, f.read())

            def done():
                return sum(counts()) - RENAMERS

            def at(cond):
                return cond() or any(w.poll() is not None for w in workers)
            util.wait_for(lambda: at(lambda: all(counts())),
                          'the renamers to start')
            target = rng.randrange(20, 400)
            util.wait_for(lambda: at(lambda: done() >= target),
                          '%d renames' % target)
            assert all(w.poll() is None for w in workers), \
                'a renamer ended before the kill'
            proc.send_signal(signal.SIGKILL)
            r = subprocess.run(['fusermount3', '-u', '-z', ws.mnt],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=GONE_TIMEOUT)
            assert r.returncode == 0, r.stdout
            assert not util.is_mounted(ws.mnt)
            try:
                proc.wait(timeout=GONE_TIMEOUT)
            except subprocess.TimeoutExpired:
                stuck.append((rnd, util.thread_states(proc.pid)))
                util.abort_fuse(conn)
                aborted = True
                proc.wait(timeout=GONE_TIMEOUT)
            for w in workers:
                w.wait(timeout=GONE_TIMEOUT)
            renames += done()
        finally:
            # whatever failed: nothing left waiting on this connection
            # (aborted while the daemon is there: once it is gone, so is
            # the connection, and its number may be another mount's)
            if proc.poll() is None:
                if not aborted:
                    util.abort_fuse(conn)
                proc.kill()
                proc.wait(timeout=GONE_TIMEOUT)
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.wait(timeout=GONE_TIMEOUT)
            util.cleanup_mount(None, ws.mnt)
    print('kills: %d, renames: %d, rounds that needed an abort: %d' %
          (RENAME_KILLS, renames, len(stuck)))
    for rnd, threads in stuck[:1]:
        print('round %d, the daemon\'s threads left:' % rnd)
        for tid, (state, where) in sorted(threads.items()):
            print('  %d %s %s' % (tid, state, where.replace('\n', ' | ')))
    assert not stuck, 'rounds whose daemon stayed until an abort: %r' % (
        [rnd for rnd, _ in stuck])
    proc = ws.start(opts='writemode=writeback')
    got = renamer_files(ws.mnt)
    ws.stop(proc)
    assert got == renamer_files(ws.src)
    assert sorted(got) == sorted('w%d_%d' % (me, k) for me in range(RENAMERS)
                                 for k in range(RENAME_FILES))
    assert all(len(p) == 1 for p in got.values()), got


def test_stats_live_view_dirty_and_flush(ws):
    """hotfsctl stats -w shows writeback's dirty bytes and the flush's
    rate: 2 MiB dirty, then, once flushed, a row with a flush rate and
    none dirty."""
    proc = ws.start(opts=HOLD)
    write_at(os.path.join(ws.mnt, 'f'), 0, b'd' * (2 * MIB), os.O_CREAT)
    p = subprocess.Popen([os.environ['HOTFSCTL_BIN'], 'stats', ws.mnt,
                          '-w', '0.2'], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        head = p.stdout.readline().split()
        assert head[-2:] == [b'dirtyMB', b'flushMB/s'], head
        row = p.stdout.readline().split()
        assert float(row[-2]) == pytest.approx(2 * MIB / 1e6, abs=0.01), row
        hotfsctl('flush', ws.mnt)
        rows = []
        # the flush falls in one interval: the rows up to it and the one
        # after it, at most a few
        while not rows or float(rows[-1][-1]) == 0:
            line = p.stdout.readline().split()
            if line[0] != b'reads/s':   # the header, every 20 rows
                rows.append(line)
            assert len(rows) < 50, rows
        assert float(rows[-1][-1]) > 0, rows
        assert float(rows[-1][-2]) == 0, rows
    finally:
        p.terminate()
        p.communicate(timeout=util.TIMEOUT)
    ws.stop(proc)


def test_unmount_says_what_it_flushed(ws):
    """The unmount of a writeback mount says in one log line how much it
    wrote to the source and that nothing stays."""
    proc = ws.start(opts=HOLD)
    write_at(os.path.join(ws.mnt, 'f'), 0, b'u' * 5000, os.O_CREAT)
    write_at(os.path.join(ws.mnt, 'g'), 0, b'v' * 3000, os.O_CREAT)
    ws.stop(proc)
    assert 'writeback: at unmount 8000 dirty bytes of 2 files were ' \
        'written to the source; none stays' in ws.log_text(proc)


def test_status_lists_writeback_log_and_ro(ws):
    """hotfsctl status's options name the log's size in force, and ro."""
    proc = ws.start(opts=HOLD + ',writeback_log=8M')
    out = hotfsctl('status', ws.mnt).stdout.decode()
    assert ',writeback_log=8388608,' in out, out
    assert ',ro' not in out, out
    ws.stop(proc)
    proc = ws.start(opts='ro')
    opts = util.hotfs_stats(ws.mnt)['options'].split(',')
    assert 'ro' in opts, opts
    ws.stop(proc)


# the mount of the log's damage tests, as it was reported
WB_DAMAGE = 'writemode=writeback,writeback_log=16M,writeback_delay=600'


def read_block(path, off):
    """4096 bytes at off, O_DIRECT: exactly that block reaches the daemon
    (the page cache would read around it); b'' or an Err."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, 4096)
        return util.call(lambda: bytes(buf[:os.preadv(fd, [buf], off)]))
    finally:
        os.close(fd)


def unmount_status(proc, mnt):
    """Unmount; the daemon's exit status (it may not be 0)."""
    util.unmount_cmd(mnt)
    return proc.wait(timeout=util.TIMEOUT)


def test_damaged_record_written_again_not_a_loss(ws):
    """A damaged data block of a record whose bytes a later record wrote
    again: the file reads the later bytes, nothing is counted lost, the
    state stays ok, and the one line about it says so (it said the
    state was degraded, at every mount while the record stayed)."""
    from test_model import flip, live_records, WR_DATA
    m = os.path.join(ws.mnt, 'f')
    proc = ws.start(opts=WB_DAMAGE)
    open(m, 'wb').close()
    write_at(m, 0, b'A' * 4096, os.O_SYNC)
    write_at(m, 0, b'B' * 4096, os.O_SYNC)
    kill9(ws, proc)
    recs, _ = live_records(os.path.join(ws.cache, 'wlog'))
    data = [r for r in recs if r.type == WR_DATA and r.nblk]
    assert len(data) == 2, recs
    flip(os.path.join(ws.cache, 'wlog'), data[0].pos + 1, 100)
    for _ in range(2):              # and again at the next mount
        proc = ws.start(opts=WB_DAMAGE)
        assert read(m) == b'B' * 4096
        s = util.hotfs_stats(ws.mnt)
        assert s['writeback_state'] == 'ok', s
        assert int(s['lost_dirty_bytes']) == 0, s
        log = ws.log_text(proc)
        assert 'degraded' not in log, log
        line = [x for x in log.splitlines() if 'damaged blocks' in x]
        assert len(line) == 1 and 'nothing of them is lost' in line[0], log
        kill9(ws, proc)
    proc = ws.start(opts=WB_DAMAGE)
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'f')) == b'B' * 4096


def test_damaged_log_block_replayed_around(ws):
    """One damaged block of the log (4 bytes overwritten in the first
    file's data) after a kill -9 of a mount whose writes were fsync'd:
    the replay applies every record around it (every other file whole),
    the damaged block's bytes answer EIO, never the source's, they are
    counted (bytes, files), the file is named in the log with a total,
    hotfsctl status says the state is degraded, and they are never
    flushed.  They stay lost across a remount (the unmount says so and
    exits 1) until the file is written over them."""
    blob = os.path.join(ws.root, 'blob')
    files = {}
    proc = ws.start(opts=WB_DAMAGE)
    for i in range(10):
        with open(blob, 'wb') as f:
            f.write(os.urandom(100 * 1024))
        name = 'f%d' % i
        subprocess.run(['dd', 'if=' + blob, 'of=' + os.path.join(ws.mnt, name),
                        'bs=100k', 'count=1', 'conv=fsync', 'status=none'],
                       check=True)
        files[name] = read(blob)
    kill9(ws, proc)
    fd = os.open(os.path.join(ws.cache, 'wlog'), os.O_WRONLY)
    try:
        os.pwrite(fd, b'\xde\xad\xbe\xef', 5 * 4096 + 100)
    finally:
        os.close(fd)
    proc = ws.start(opts=WB_DAMAGE)

    def bad_blocks():
        """(name, offset) of every block that does not read back."""
        bad = []
        for name, data in sorted(files.items()):
            m = os.path.join(ws.mnt, name)
            size, want = os.stat(m).st_size, len(data)
            assert size == want, '%s: %d bytes' % (name, size)
            for off in range(0, len(data), 4096):
                got = read_block(m, off)
                if got != data[off:off + 4096]:
                    assert got == util.Err(errno.EIO), (name, off)
                    bad.append((name, off))
        return bad

    bad = bad_blocks()
    assert len(bad) == 1, bad
    name, off = bad[0]
    path = os.path.join(ws.src, name)
    s = util.hotfs_stats(ws.mnt)
    assert int(s['lost_dirty_bytes']) == 4096, s
    assert int(s['lost_dirty_files']) == 1, s
    assert int(s['wlog_checksum_failures']) == 1, s
    assert s['writeback_state'] == 'degraded', s
    log = ws.log_text(proc)
    lines = [ln for ln in log.splitlines() if path in ln and 'lost' in ln]
    assert len(lines) == 1 and '4096 dirty bytes lost' in lines[0], log
    assert '4096 dirty bytes of 1 files lost' in log, log
    out = hotfsctl('status', ws.mnt).stdout.decode()
    assert re.search(r'^writeback_state +degraded \(', out, re.M), out
    assert re.search(r'^lost_dirty +4\.0 KiB found lost', out, re.M), out
    j = json.loads(hotfsctl('status', ws.mnt, '--json').stdout)
    assert j['writeback_state'] == 'degraded' and j['lost_dirty_files'] == 1
    with open(os.path.join(ws.mnt, '.hotfs', 'metrics')) as f:
        assert 'hotfs_writeback_state{mountpoint="%s",state="degraded"} 1' \
            % os.path.realpath(ws.mnt) in f.read()
    # the flush writes everything else, never those bytes
    r = hotfsctl('flush', ws.mnt, check=False)
    assert r.returncode == 1 and b'lost in the writeback log' in r.stderr, r
    for n, data in files.items():
        if n != name:
            assert read(os.path.join(ws.src, n)) == data, n
    hole = read(path)[off:off + 4096]     # the source's own: nothing
    assert hole == bytes(len(hole))
    assert read_block(os.path.join(ws.mnt, name), off) == \
        util.Err(errno.EIO)
    # an unmount keeps them lost, and says so; the next mount again
    assert unmount_status(proc, ws.mnt) == 1
    assert 'are lost' in ws.log_text(proc)
    proc = ws.start(opts=WB_DAMAGE)
    assert bad_blocks() == [(name, off)]
    assert util.hotfs_stats(ws.mnt)['writeback_state'] == 'degraded'
    # written over: whole again, and flushed at the unmount
    write_at(os.path.join(ws.mnt, name), off, files[name][off:off + 4096])
    assert bad_blocks() == []
    s = util.hotfs_stats(ws.mnt)
    assert s['writeback_state'] == 'ok' and int(s['lost_dirty_files']) == 0
    ws.stop(proc)
    for n, data in files.items():
        assert read(os.path.join(ws.src, n)) == data, n


@pytest.mark.drops_caches
def test_damaged_dirty_data_not_read_nor_flushed(ws):
    """14 bytes of a file's dirty data overwritten in the log while
    mounted, the page cache dropped: a read of them answers EIO (never the
    damaged bytes, nor the source's), the rest reads back; hotfsctl flush
    writes the rest and not them, and fails; the checksum failure and the
    bytes lost are counted and the file named in the log.  Written over,
    the file is whole again and flushed."""
    proc = ws.start(opts=WB_DAMAGE)
    m, s = os.path.join(ws.mnt, 'f'), os.path.join(ws.src, 'f')
    data = os.urandom(40 * 1024)
    with open(m, 'wb') as f:
        f.write(data)
    wlog = os.path.join(ws.cache, 'wlog')
    at = read(wlog).find(data[:4096])
    assert at > 0 and at % 4096 == 0, at
    fd = os.open(wlog, os.O_WRONLY)
    try:
        os.pwrite(fd, b'X' * 14, at + 200)
    finally:
        os.close(fd)
    util.drop_caches()
    got = util.call(read, m)
    eio = got == util.Err(errno.EIO)
    assert eio, ('read %s' % got if isinstance(got, util.Err) else
                 'read, differing at byte %d (cmp\'s count)' % next(
                     (i + 1 for i, (a, b) in enumerate(zip(got, data))
                      if a != b), min(len(got), len(data)) + 1))
    assert read_block(m, 0) == util.Err(errno.EIO)
    for off in range(4096, len(data), 4096):
        assert read_block(m, off) == data[off:off + 4096], off
    st = util.hotfs_stats(ws.mnt)
    assert int(st['wlog_checksum_failures']) == 1, st
    assert int(st['lost_dirty_bytes']) == 4096, st
    assert int(st['lost_dirty_files']) == 1, st
    assert st['writeback_state'] == 'degraded', st
    assert int(st['checksum_failures']) == 0, st     # the store's own
    log = ws.log_text(proc)
    lines = [ln for ln in log.splitlines() if s in ln and 'lost' in ln]
    assert len(lines) == 1 and 'checksum' in lines[0], log
    r = hotfsctl('flush', ws.mnt, check=False)
    assert r.returncode == 1 and b'lost in the writeback log' in r.stderr, r
    got = read(s)
    assert got[4096:] == data[4096:]
    assert b'X' * 14 not in got, 'the damaged bytes were flushed'
    assert got[:4096] == bytes(4096)
    assert read_block(m, 0) == util.Err(errno.EIO)
    # written over: whole, flushed
    write_at(m, 0, data[:4096])
    assert read_block(m, 0) == data[:4096]
    assert util.hotfs_stats(ws.mnt)['writeback_state'] == 'ok'
    hotfsctl('flush', ws.mnt)
    assert read(s) == data
    ws.stop(proc)
