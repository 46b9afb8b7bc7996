# SPDX-License-Identifier: GPL-2.0-or-later
"""writemode=writeback when the source cannot take what the mount holds:
a write that grows a file fails with ENOSPC before it is acknowledged
when the source has no room for it (as the source itself would fail it),
never later at the flush, where nobody could be told."""
import errno
import os

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
