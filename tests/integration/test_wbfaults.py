# SPDX-License-Identifier: GPL-2.0-or-later
"""writemode=writeback when the source cannot take what the mount holds:
a write that grows a file fails with ENOSPC before it is acknowledged
when the source has no room for it (as the source itself would fail it),
never later at the flush, where nobody could be told."""
import errno
import os

import util
from test_faults import ext4, fill  # noqa: F401 (a fixture)
from test_writeback import HOLD, read


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
