# SPDX-License-Identifier: GPL-2.0-or-later
"""writemode=writeback when the source cannot take what the mount holds:
a write that grows a file fails with ENOSPC before it is acknowledged
when the source has no room for it (as the source itself would fail it),
never later at the flush, where nobody could be told; a write within a
file never does, however slow the source that the full log waits for.
And when the log cannot keep what it is given (deleted, the cachedir
moved, its device failing or read-only): what it holds goes to the
source at once, and writes after it go there too (writethrough), said
in the state and the log."""
import errno
import mmap
import os
import random
import threading
import time

import pytest

import util
from test_faults import ext4, fill  # noqa: F401 (a fixture)
from test_writeback import HOLD, drop_pages, hotfsctl, kill9, read, \
    stat_int, write_at


def test_growth_enospc(ws, ext4):  # noqa: F811
    sdev = ext4('srcfs', 32 << 20, mkfs_args=['-m', '0'])
    path = os.path.join(sdev.dir, 'a')
    with open(path, 'wb') as f:
        f.write(b'a' * 4096)
    fill(sdev.dir)
    # about 1 MiB free again
    filler = os.path.join(sdev.dir, 'filler0')
    os.truncate(filler, os.stat(filler).st_size - (1 << 20))
    os.sync()
    free = os.statvfs(sdev.dir).f_bavail * os.statvfs(sdev.dir).f_frsize
    assert (512 << 10) < free <= (2 << 20), free
    proc = ws.start(src=sdev.dir, opts=HOLD)
    m = os.path.join(ws.mnt, 'a')
    want = bytearray(b'a' * 4096)
    fd = os.open(m, os.O_WRONLY | os.O_APPEND)
    try:
        got = None
        for i in range(64):             # 4 MiB asked, ~1 MiB free
            data = bytes([65 + i % 26]) * 65536
            try:
                n = os.write(fd, data)
            except OSError as e:
                got = e.errno
                break
            want += data[:n]
            if n < len(data):
                continue
    finally:
        os.close(fd)
    assert got == errno.ENOSPC, got
    accepted = len(want) - 4096
    # refused before the source was full, not at once
    assert (256 << 10) <= accepted <= free, (accepted, free)
    # nothing of it on the source yet (held), all of it through the mount
    assert os.stat(path).st_size == 4096
    assert read(m) == bytes(want)
    s = util.hotfs_stats(ws.mnt)
    assert int(s['dirty_bytes']) == accepted, s
    # the flush at unmount finds room for every acknowledged byte
    ws.stop(proc)
    assert read(path) == bytes(want)


def test_change_behind_dirty_data(ws):
    """The source file changed behind the mount while the mount holds
    dirty data for it: detected, logged with the path, counted, and the
    dirty bytes written over the change (as a second NFS client's); the
    mount's own changes (a chmod, a truncate, a write) are none."""
    src = os.path.join(ws.src, 'f')
    with open(src, 'wb') as f:
        f.write(b'o' * 65536)
    with open(os.path.join(ws.src, 'g'), 'wb') as f:
        f.write(b'o' * 65536)
    proc = ws.start(opts=HOLD)
    m = os.path.join(ws.mnt, 'f')
    with open(m, 'r+b') as f:
        f.write(b'D' * 4096)
    # the mount's own changes of a file with dirty data
    g = os.path.join(ws.mnt, 'g')
    with open(g, 'r+b') as f:
        f.write(b'D' * 4096)
    os.chmod(g, 0o600)
    os.truncate(g, 32768)
    with open(g, 'r+b') as f:
        f.seek(8192)
        f.write(b'E' * 100)
    # behind the mount: another range of f, and its mtime
    with open(src, 'r+b') as f:
        f.seek(32768)
        f.write(b'B' * 4096)
    os.utime(src, ns=(1, 10 ** 18))
    want = b'D' * 4096 + b'o' * 28672 + b'B' * 4096 + b'o' * 28672
    assert read(m) == want
    ws.stop(proc)
    log = ws.log_text(proc)
    lines = [ln for ln in log.splitlines() if 'changed on the source' in ln]
    assert len(lines) == 1 and src in lines[0], log
    assert read(src) == want
    g_want = b'D' * 4096 + b'o' * 4096 + b'E' * 100 + b'o' * (32768 - 8292)
    assert read(os.path.join(ws.src, 'g')) == g_want


def test_own_changes_are_no_conflict(ws):
    """The mount's own changes of a file with dirty data that move its
    ctime on the source alone (setxattr, removexattr, link, rename,
    unlink of another of its names, an exchange) are none behind the
    mount, however it looks at the file after each (a stat, an open, a
    read) and whenever the flush comes: no conflict counted, no line
    logged.  A change made on the source behind the mount after them
    still is one: counted once, logged with the path."""
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'o' * 65536)
    with open(os.path.join(ws.src, 'x'), 'wb') as f:
        f.write(b'x' * 100)
    os.mkdir(os.path.join(ws.src, 'd'))
    proc = ws.start(opts=HOLD)

    def m(*p):
        return os.path.join(ws.mnt, *p)

    def look(path):
        st = os.stat(path)
        assert read(path)[:4096] == b'D' * 4096
        return st.st_ctime_ns

    write_at(m('f'), 0, b'D' * 4096)
    src = os.path.join(ws.src, 'f')
    ctimes = [os.stat(src).st_ctime_ns]
    steps = [
        lambda: os.setxattr(m('f'), 'user.k', b'v'),
        lambda: os.removexattr(m('f'), 'user.k'),
        lambda: os.link(m('f'), m('d', 'g')),
        lambda: os.rename(m('f'), m('f2')),
        lambda: os.unlink(m('d', 'g')),
        lambda: util.renameat2(m('f2'), m('x'), util.RENAME_EXCHANGE),
    ]
    path = m('f')
    for i, step in enumerate(steps):
        step()
        path = {3: m('f2'), 5: m('x')}.get(i, path)
        src = os.path.join(ws.src, os.path.relpath(path, ws.mnt))
        look(path)
        ctimes.append(os.stat(src).st_ctime_ns)
    # each moved the ctime on the source, and nothing else
    assert len(set(ctimes)) == len(ctimes), ctimes
    assert os.stat(src).st_size == 65536
    hotfsctl('flush', ws.mnt)
    assert read(src)[:4096] == b'D' * 4096
    assert stat_int(ws, 'writeback_conflicts') == 0
    assert 'changed on the source' not in ws.log_text(proc)
    # behind the mount, with dirty data again: one
    write_at(path, 0, b'E' * 4096)
    with open(src, 'r+b') as f:
        f.seek(32768)
        f.write(b'B' * 4096)
    hotfsctl('flush', ws.mnt)
    assert stat_int(ws, 'writeback_conflicts') == 1
    lines = [ln for ln in ws.log_text(proc).splitlines()
             if 'changed on the source' in ln]
    assert len(lines) == 1 and src in lines[0], lines
    assert read(src) == (b'E' * 4096 + b'o' * 28672 + b'B' * 4096 +
                         b'o' * 28672)
    ws.stop(proc)


def test_cache_device_dies_with_dirty_data(ws, ext4):  # noqa: F811
    """The cache device fails (EIO) while the log holds dirty data: a read
    of a dirty block answers EIO, never the source's older bytes; bytes
    nobody wrote through the mount still read from the source; the file
    and the bytes lost are named in the log and counted; the daemon lives
    on and the unmount does not hang."""
    cdev = ext4('cachefs', 384 << 20)
    cache = os.path.join(cdev.dir, 'cache')
    old = b'o' * 65536
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(old)
    proc = ws.start(cachedir=cache, opts=HOLD + ',writeback_log=16M')
    m = os.path.join(ws.mnt, 'f')
    with open(m, 'r+b') as f:
        f.write(b'D' * 8192)
    drop_pages(m)
    cdev.shutdown()
    fd = os.open(m, os.O_RDONLY)
    try:
        assert util.call(os.pread, fd, 100, 0) == util.Err(errno.EIO)
        assert util.call(os.pread, fd, 100, 4096) == util.Err(errno.EIO)
        # a range with no dirty byte: the source's
        assert os.pread(fd, 100, 32768) == b'o' * 100
    finally:
        os.close(fd)
    s = util.hotfs_stats(ws.mnt)
    assert int(s['lost_dirty_bytes']) == 8192, s
    log = ws.log_text(proc)
    assert os.path.join(ws.src, 'f') in log and 'lost' in log, log
    assert proc.poll() is None, 'hotfs died'
    util.cleanup_mount(proc, ws.mnt)


BLKIO = '/sys/fs/cgroup/blkio'


@pytest.fixture
def throttle(ws):
    """throttle(proc, dev, iops): proc's writes to the block device dev
    held to iops a second, by a cgroup v1 blkio group of the test's own
    (skipped where there is none); returns a function that lifts it.
    Teardown lifts it too: the daemon back in the root group, the group
    removed."""
    path = os.path.join(BLKIO, 'hotfs-itest-' + os.path.basename(ws.root))
    made = []

    def put(f, text):
        with open(f, 'w') as fh:
            fh.write(text)

    def lift():
        if not made:
            return
        with open(os.path.join(path, 'cgroup.procs')) as fh:
            pids = fh.read().split()
        for pid in pids:
            try:
                put(os.path.join(BLKIO, 'cgroup.procs'), pid)
            except ProcessLookupError:
                pass

        def removed():
            try:
                os.rmdir(path)
                return True
            except OSError as e:
                assert e.errno == errno.EBUSY, e
                return False
        util.wait_for(removed, 'rmdir ' + path)
        made.clear()

    def start(proc, dev, iops):
        if not os.path.exists(os.path.join(
                BLKIO, 'blkio.throttle.write_iops_device')):
            pytest.skip('no cgroup v1 blkio throttling at ' + BLKIO)
        try:
            os.mkdir(path)
        except OSError as e:
            pytest.skip('cannot make a blkio cgroup: %s' % e)
        made.append(path)
        rdev = os.stat(dev).st_rdev
        put(os.path.join(path, 'blkio.throttle.write_iops_device'),
            '%d:%d %d' % (os.major(rdev), os.minor(rdev), iops))
        put(os.path.join(path, 'cgroup.procs'), str(proc.pid))
        return lift
    try:
        yield start
    finally:
        lift()


# how long the slow-source writers go on after the first wait for room:
# past the minute after which a writer used to give up; shorter in the
# sanitizer builds' stages of tests/run.sh (the limit is the normal
# build's to show, the sanitizers check the waits themselves)
SLOW_SOURCE_SECS = int(os.environ.get('HOTFS_SLOW_SOURCE_SECS', '65'))


@pytest.mark.slow
def test_overwrites_wait_for_a_slow_source(ws, ext4, throttle):  # noqa: F811
    """Random 4 KiB overwrites within a file (none grows it) on a nearly
    full source written slowly (a throttled disk), through a log that they
    fill at once: the writers wait for the flusher, longer than a minute
    in all (SLOW_SOURCE_SECS), and none gets an error (a database aborts
    on one), with O_DIRECT and without, with fdatasync and without; every
    byte arrives.  The source has less room than the log holds:
    overwrites are not taken for growth."""
    sdev = ext4('srcfs', 64 << 20, mkfs_args=['-m', '0'])
    size = 16 << 20
    path = os.path.join(sdev.dir, 'db')
    want = bytearray(random.Random(11).randbytes(size))
    with open(path, 'wb') as f:
        f.write(want)
        os.fsync(f.fileno())
    fill(sdev.dir)
    filler = os.path.join(sdev.dir, 'filler0')
    os.truncate(filler, os.stat(filler).st_size - (1 << 20))
    os.sync()
    v = os.statvfs(sdev.dir)
    assert v.f_bavail * v.f_frsize <= (2 << 20)
    proc = ws.start(src=sdev.dir, opts='writemode=writeback,'
                    'writeback_log=4M')
    # a full log's worth of random blocks takes the source over 60 s
    lift = throttle(proc, sdev.dev, 4)
    m = os.path.join(ws.mnt, 'db')
    nthreads, blocks = 4, size // 4096
    errors, since = [], [None] * nthreads      # a write's start
    stop = threading.Event()

    def writer(k):
        direct = k % 2 == 0
        fd = os.open(m, os.O_WRONLY | (os.O_DIRECT if direct else 0))
        buf = mmap.mmap(-1, 4096)       # aligned, for O_DIRECT
        rnd = random.Random(k)
        try:
            while not stop.is_set():
                # each thread its own blocks: the outcome is known
                blk = rnd.randrange(k, blocks, nthreads)
                data = rnd.randbytes(4096)
                buf[:] = data
                since[k] = time.monotonic()
                try:
                    assert os.pwrite(fd, buf, blk * 4096) == 4096
                    if k >= 2:
                        os.fdatasync(fd)
                except OSError as e:
                    errors.append((k, blk, e.errno))
                    return
                since[k] = None
                want[blk * 4096:(blk + 1) * 4096] = data
        finally:
            buf.close()
            os.close(fd)
    threads = [threading.Thread(target=writer, args=(k,))
               for k in range(nthreads)]
    for t in threads:
        t.start()
    first = []

    def waiting():
        """A write on for a second or more: one waits for room."""
        now = time.monotonic()
        t = [t for t in list(since) if t is not None and now - t >= 1]
        if t and not first:
            first.append(min(t))
        return bool(first)
    try:
        # on until 65 s after the first wait for room (a writer used
        # to give up with ENOSPC after 60 s without room)
        util.wait_for(lambda: errors or waiting(), 'a wait for room',
                      timeout=60)
        util.wait_for(lambda: errors or
                      time.monotonic() > first[0] + SLOW_SOURCE_SECS,
                      '%d s of writes' % SLOW_SOURCE_SECS,
                      timeout=SLOW_SOURCE_SECS + 25)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, [(k, b, errno.errorcode[e]) for k, b, e in errors]
    s = util.hotfs_stats(ws.mnt)
    assert int(s['flush_errors']) == 0, s
    lift()
    drop_pages(m)
    assert read(m) == bytes(want)
    ws.stop(proc)
    assert read(path) == bytes(want)


MARK = '.hotfs-dirty'


def wb_state(mnt):
    s = util.hotfs_stats(mnt)
    return s.get('writeback_state'), s.get('writeback_reason', '')


def through_lines(log):
    return [ln for ln in log.splitlines()
            if 'writes go to the source from now on' in ln]


def test_log_deleted(ws):
    """The issue's steps: dirty data, the cachedir's wlog deleted, more
    written with an fsync (dd conv=fsync), kill -9, remount: every
    acknowledged byte there.  The loss is seen by the fsync, said once in
    the log and in the state; what the log held goes to the source at
    once, and later writes go straight there."""
    src, m, want, opts, proc = held_write(ws, 0)
    os.unlink(os.path.join(ws.cache, 'wlog'))
    fd = os.open(m, os.O_WRONLY)
    try:
        assert os.pwrite(fd, b'E' * 4096, 16384) == 4096
        os.fsync(fd)
    finally:
        os.close(fd)
    want[16384:20480] = b'E' * 4096
    # acknowledged durable, the log gone: the source has all of it
    assert read(src) == bytes(want)
    state, why = wb_state(ws.mnt)
    assert state == 'writethrough' and 'deleted' in why, (state, why)
    s = util.hotfs_stats(ws.mnt)
    assert s['dirty_bytes'] == '0', s
    assert abs(int(s['writeback_state_since']) - time.time()) < 60, s
    with open(os.path.join(ws.mnt, '.hotfs', 'metrics')) as f:
        assert ('hotfs_writeback_state{mountpoint="%s",'
                'state="writethrough"} 1' % os.path.realpath(ws.mnt)
                in f.read())
    # a write now goes straight to the source, no fsync needed
    write_at(m, 32768, b'F' * 100)
    want[32768:32868] = b'F' * 100
    assert read(src) == bytes(want)
    assert len(through_lines(ws.log_text(proc))) == 1, ws.log_text(proc)
    kill9(ws, proc)
    proc = ws.start(opts=opts)
    assert read(m) == bytes(want)
    assert wb_state(ws.mnt) == ('ok', '')
    ws.stop(proc)
    assert read(src) == bytes(want)


def held_write(ws, off, cachedir=True):
    """A file of 64 KiB of b'o' on the source, mounted holding writes in
    the log (HOLD), and 8 KiB of b'D' written at off, held dirty: returns
    the source's path, the mount's, the bytes the file should have, the
    options and the daemon."""
    src = os.path.join(ws.src, 'f')
    with open(src, 'wb') as f:
        f.write(b'o' * 65536)
    opts = HOLD + ',writeback_log=16M'
    proc = ws.start(cachedir=cachedir, opts=opts)
    m = os.path.join(ws.mnt, 'f')
    write_at(m, off, b'D' * 8192)
    want = bytearray(b'o' * 65536)
    want[off:off + 8192] = b'D' * 8192
    return src, m, want, opts, proc


def cachedir_moved_while_dirty(ws):
    """held_write, then the cachedir moved away: returns once the held
    data is on the source."""
    src, m, want, opts, proc = held_write(ws, 4096)
    os.rename(ws.cache, ws.cache + '.moved')
    util.wait_for(lambda: read(src) == bytes(want), 'held data on the source')
    return src, m, want, opts, proc


def test_cachedir_moved(ws):
    """The cachedir moved away while the log holds dirty data: the store
    turns off (as before) and so does the log, within the tick: the held
    data reaches the source without a flush asked for, later writes are
    not acknowledged into the moved log but written to the source, and
    a kill -9 loses nothing."""
    src, m, want, opts, proc = cachedir_moved_while_dirty(ws)
    state, why = wb_state(ws.mnt)
    assert state == 'writethrough', (state, why)
    assert 'no longer at ' + os.path.join(ws.cache, 'wlog') in why, why
    s = util.hotfs_stats(ws.mnt)
    assert s['dirty_bytes'] == '0' and s['store_state'] == 'off', s
    write_at(m, 40960, b'E' * 5000)
    want[40960:45960] = b'E' * 5000
    assert read(src) == bytes(want)
    assert len(through_lines(ws.log_text(proc))) == 1, ws.log_text(proc)
    # all on the source: the mark that names the moved cachedir goes
    util.wait_for(lambda: not os.path.exists(os.path.join(ws.src, MARK)),
                  'the mark removed')
    kill9(ws, proc)
    proc = ws.start(opts=opts)
    assert read(m) == bytes(want)
    ws.stop(proc)
    assert read(src) == bytes(want)


def test_cachedir_moved_back_no_replay(ws):
    """The cachedir moved away while the log holds dirty data, flushed
    then (as above); the daemon killed, the cachedir moved back and the
    file edited on the source: the next mount replays nothing of the
    flushed records over the edit."""
    src, m, want, opts, proc = cachedir_moved_while_dirty(ws)
    util.wait_for(lambda: util.hotfs_stats(ws.mnt)['wlog_used_bytes'] == '0',
                  'the flushed records released')
    kill9(ws, proc)
    os.rename(ws.cache + '.moved', ws.cache)
    edit = b'o' * 4096 + b'A' * 8192 + b'o' * (65536 - 12288)
    with open(src, 'wb') as f:
        f.write(edit)
    proc = ws.start(opts=opts)
    assert read(m) == edit
    ws.stop(proc)
    assert read(src) == edit


def device_fails_then_write(cdev, src, m):
    """held_write's file, its pages dropped: the cache device fails (every
    I/O EIO), and a small write after it reaches the source; the bytes
    the file should have (the held b'D' is lost with the device)."""
    drop_pages(m)
    cdev.shutdown()
    write_at(m, 40000, b'E' * 9)
    want = bytearray(b'o' * 65536)
    want[40000:40009] = b'E' * 9
    util.wait_for(lambda: read(src) == bytes(want), 'the write on the source')
    return want


def test_cache_device_fails_writes_go_to_source(ws, ext4):  # noqa: F811
    """The issue's steps: dirty data, the cache device fails (EIO), a
    small write after it: acknowledged and on the source at once (not
    left in memory, nor lost); the lost blocks read EIO and are counted;
    the state says why; hotfsctl flush writes every readable byte and
    says the rest is lost; the unmount does not claim the lost bytes
    stay in the log for the next mount."""
    cdev = ext4('cachefs', 384 << 20)
    cache = os.path.join(cdev.dir, 'cache')
    src, m, want, opts, proc = held_write(ws, 0, cachedir=cache)
    want = device_fails_then_write(cdev, src, m)
    state, why = wb_state(ws.mnt)
    assert state == 'writethrough', (state, why)
    assert 'cannot be written' in why and 'Input/output error' in why, why
    fd = os.open(m, os.O_RDONLY)
    try:
        assert util.call(os.pread, fd, 100, 0) == util.Err(errno.EIO)
        assert os.pread(fd, 9, 40000) == b'E' * 9
    finally:
        os.close(fd)
    s = util.hotfs_stats(ws.mnt)
    assert int(s['lost_dirty_bytes']) == 8192, s
    r = hotfsctl('flush', ws.mnt, check=False)
    assert r.returncode == 1 and b'lost in the writeback log' in r.stderr, r
    assert read(src) == bytes(want)
    assert len(through_lines(ws.log_text(proc))) == 1, ws.log_text(proc)
    util.cleanup_mount(proc, ws.mnt)
    log = ws.log_text(proc)
    assert 'stay in the cachedir' not in log, log
    assert 'they are lost' in log, log


def fsck_remount_not_replayed(ws, proc, cdev, cache, opts, want):
    """The mount ended, the cache filesystem checked and mounted again,
    the next writeback mount with cache: the file f reads want, the log
    was not replayed over it (one line says so), nothing kept aside, and
    the source holds want after the unmount."""
    util.cleanup_mount(proc, ws.mnt)
    cdev.umount()
    cdev.fsck_and_mount()
    proc = ws.start(cachedir=cache, opts=opts)
    assert read(os.path.join(ws.mnt, 'f')) == bytes(want)
    log = ws.log_text(proc)
    line = [x for x in log.splitlines() if 'carries no mark' in x]
    assert len(line) == 1 and 'not replayed' in line[0], log
    assert not os.path.exists(os.path.join(cache, 'conflicts')), log
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'f')) == bytes(want)


def test_failed_log_lost_blocks_not_replayed_over_newer(ws, ext4):  # noqa: F811
    """The cache device fails while the log holds synced dirty data it
    can no longer read (lost, named so); a write after it goes to the
    source.  The mark goes with the lost bytes given up (one line), so
    that after an fsck the next writeback mount does not replay the
    log's older records over the newer write.  (The mark stayed: the
    log was replayed over it, the newer version kept aside alone.)"""
    cdev = ext4('cachefs', 128 << 20)
    cache = os.path.join(cdev.dir, 'cache')
    src, m, want, opts, proc = held_write(ws, 0, cachedir=cache)
    fd = os.open(m, os.O_WRONLY)
    os.fsync(fd)
    os.close(fd)
    want = device_fails_then_write(cdev, src, m)
    # the line follows the mark's removal
    util.wait_for(lambda: 'given up' in ws.log_text(proc), 'the line')
    assert not os.path.lexists(os.path.join(ws.src, MARK))
    log = ws.log_text(proc)
    line = [x for x in log.splitlines() if 'given up' in x]
    assert len(line) == 1 and '8192 lost dirty bytes of 1 files' in line[0], \
        log
    fsck_remount_not_replayed(ws, proc, cdev, cache, opts, want)


def read_only(d):
    """Does d's filesystem refuse a new file (EROFS)?  (ext4's
    emergency_ro after an error is not in statvfs's flags.)"""
    p = os.path.join(d, '.probe')
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError as e:
        if e.errno == errno.EROFS:
            return True
        raise
    os.close(fd)
    os.unlink(p)
    return False


def test_cachedir_remounted_read_only(ws, ext4):  # noqa: F811
    """The issue's steps: the cachedir's ext4 (errors=remount-ro) hits an
    error and goes read-only while the log holds dirty data: the store's
    state names that cause (not a lack of room), with one log line; the
    log fails too: its data reaches the source, writes go on there, and
    hotfsctl flush says it succeeded."""
    cdev = ext4('cachefs', 384 << 20, mkfs_args=['-e', 'remount-ro'])
    trigger = '/sys/fs/ext4/%s/trigger_fs_error' % os.path.basename(cdev.dev)
    if not os.path.exists(trigger):
        pytest.skip('no %s' % trigger)
    cache = os.path.join(cdev.dir, 'cache')
    src, m, want, opts, proc = held_write(ws, 0, cachedir=cache)
    with open(trigger, 'w') as f:
        f.write('1')
    util.wait_for(lambda: read_only(cdev.dir), 'the cachedir read-only')
    util.wait_for(lambda: read(src) == bytes(want), 'held data on the source')
    write_at(m, 20000, b'E' * 3000)
    want[20000:23000] = b'E' * 3000
    assert read(src) == bytes(want)
    s = util.hotfs_stats(ws.mnt)
    assert s['store_state'] == 'off', s
    assert 'read-only' in s['store_reason'], s['store_reason']
    assert 'no room' not in s['store_reason'], s['store_reason']
    assert s['writeback_state'] == 'writethrough', s
    assert 'read-only' in s['writeback_reason'], s['writeback_reason']
    r = hotfsctl('flush', ws.mnt, check=False)
    assert r.returncode == 0 and b'failed' not in r.stderr, r
    assert read(m) == bytes(want)
    log = ws.log_text(proc)
    assert len(through_lines(log)) == 1, log
    assert len([ln for ln in log.splitlines()
                if 'store:' in ln and 'read-only' in ln]) == 1, log
    util.cleanup_mount(proc, ws.mnt)
    assert read(src) == bytes(want)


def test_damaged_trim_new_file_keeps_its_own(ws, ext4):  # noqa: F811
    """A file with dirty data removed through the mount, kill -9 (its
    trim record logged, at the removal or by the next mount), a new file
    made through the mount that takes its inode number, kill -9, and the
    trim record's header damaged: the
    replay reads around it, and the new file's own records tell it by
    its birth: it has its own bytes and size, never the removed file's,
    and one line says what was dropped.  (The removed file's bytes were
    laid over the new file's: the log's map knew the file by its inode
    number and took the newest record's birth.)  S: an ext4 of its own,
    which gives a freed inode number again."""
    from test_model import WR_TRIM, flip, live_records, source_fs
    from test_writeback import take_inode_number
    src = source_fs(ext4).dir
    s = os.path.join(src, 'f')
    with open(s, 'wb') as f:
        f.write(b'o' * 20000)
    ino = os.stat(s).st_ino
    proc = ws.start(src=src, opts=HOLD)
    m = os.path.join(ws.mnt, 'f')
    write_at(m, 0, b'D' * 8192)
    os.unlink(m)
    kill9(ws, proc)
    proc = ws.start(src=src, opts=HOLD)
    p = take_inode_number(ws.mnt, ino)
    if p is None:
        kill9(ws, proc)
        pytest.skip('the source filesystem gave no new file inode '
                    'number %d again in 2000 tries' % ino)
    name = os.path.basename(p)
    own = read(p)
    kill9(ws, proc)
    wlog = os.path.join(ws.cache, 'wlog')
    recs, _ = live_records(wlog)
    trims = [r for r in recs if r.type == WR_TRIM and r.ino == ino]
    assert len(trims) == 1, recs
    flip(wlog, trims[0].pos, 8)           # its sequence number
    proc = ws.start(src=src, opts=HOLD)
    got = read(os.path.join(ws.mnt, name))
    assert got == own, 'the removed file\'s bytes in the new one: %d ' \
        'bytes, its own %d' % (len(got), len(own))
    log = ws.log_text(proc)
    assert 'records whose header is damaged' in log, log
    line = [x for x in log.splitlines() if 'removed files whose' in x]
    assert len(line) == 1 and '8192 dirty bytes of 1 removed' in line[0], \
        log
    assert wb_state(ws.mnt)[0] == 'degraded'
    ws.stop(proc)
    assert read(os.path.join(src, name)) == own


def test_read_only_log_not_replayed_over_newer(ws, ext4):  # noqa: F811
    """The cachedir's ext4 goes read-only while the log holds synced
    dirty data: the data reaches the source, a later write goes there,
    the mark goes; the log's header could not record any of it.  After
    an fsck, the next writeback mount with that cachedir does not
    replay the log's older bytes over the newer ones (no mark: all of it
    is on the source), says so in one line, and keeps nothing aside.
    (They were replayed, the newer version kept in conflicts/ alone.)"""
    cdev = ext4('cachefs', 128 << 20, mkfs_args=['-e', 'remount-ro'])
    trigger = '/sys/fs/ext4/%s/trigger_fs_error' % os.path.basename(cdev.dev)
    if not os.path.exists(trigger):
        pytest.skip('no %s' % trigger)
    cache = os.path.join(cdev.dir, 'cache')
    src, m, want, opts, proc = held_write(ws, 0, cachedir=cache)
    fd = os.open(m, os.O_WRONLY)
    os.fsync(fd)
    os.close(fd)
    with open(trigger, 'w') as f:
        f.write('1')
    util.wait_for(lambda: read_only(cdev.dir), 'the cachedir read-only')
    util.wait_for(lambda: read(src) == bytes(want), 'held data on the source')
    util.wait_for(lambda: not os.path.lexists(os.path.join(ws.src, MARK)),
                  'the mark removed')
    write_at(m, 0, b'E' * 4096)
    want[0:4096] = b'E' * 4096
    assert read(src) == bytes(want)
    fsck_remount_not_replayed(ws, proc, cdev, cache, opts, want)
