# SPDX-License-Identifier: GPL-2.0-or-later
"""writemode=writeback when the source cannot take what the mount holds:
a write that grows a file fails with ENOSPC before it is acknowledged
when the source has no room for it (as the source itself would fail it),
never later at the flush, where nobody could be told; a write within a
file never does, however slow the source that the full log waits for."""
import errno
import mmap
import os
import random
import threading
import time

import pytest

import util
from test_faults import ext4, fill  # noqa: F401 (a fixture)
from test_writeback import HOLD, drop_pages, read


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


@pytest.mark.slow
def test_overwrites_wait_for_a_slow_source(ws, ext4, throttle):  # noqa: F811
    """Random 4 KiB overwrites within a file (none grows it) on a nearly
    full source written slowly (a throttled disk), through a log that they
    fill at once: the writers wait for the flusher, longer than a minute
    in all, and none gets an error (a database aborts on one), with
    O_DIRECT and without, with fdatasync and without; every byte arrives.
    The source has less room than the log holds: overwrites are not
    taken for growth."""
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
        util.wait_for(lambda: errors or time.monotonic() > first[0] + 65,
                      '65 s of writes', timeout=90)
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
