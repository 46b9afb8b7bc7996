# SPDX-License-Identifier: GPL-2.0-or-later
"""revalidate=never without open round trips (man/hotfs.8): the kernel
sends no open, release or flush for files, and hotfs serves reads, writes
and its control files without a handle."""
import errno
import json
import os
import time

import pytest

import util


def _stat(m, key):
    return int(util.hotfs_stats(m)[key])


def _open_first_file(m, name):
    """The first open the daemon answers ENOSYS turns opens off."""
    with open(os.path.join(m, name), 'rb') as f:
        f.read(1)


def _source_fds(m, src):
    """The daemon's descriptors of files under src: (O_PATH ones, others).
    Only those: libfuse's worker threads come and go with the load, each
    with a pipe of its own."""
    (pid,) = util.daemon_pids(m)
    fds = util.source_fds(pid, src)
    opath = sum(1 for _, flags in fds if flags & 0o10000000)    # O_PATH
    return opath, len(fds) - opath


def test_never_sends_no_open_release_or_flush(ws):
    """Files read many times and written through the mount cost no open:
    the daemon sees one (answered ENOSYS), every byte read is right, and
    files created through the mount leave no descriptor behind once
    closed (no release will ever come for them)."""
    data = {}
    for i in range(40):
        data['f%02d' % i] = os.urandom(1000 + 997 * i)
        with open(os.path.join(ws.src, 'f%02d' % i), 'wb') as f:
            f.write(data['f%02d' % i])
    ws.start(opts='revalidate=never')
    m = ws.mnt
    for _ in range(3):
        for n, d in data.items():
            assert util.read_cold(os.path.join(m, n)) == d
    assert _stat(m, 'open_requests') == 1
    assert _stat(m, 'read_requests') >= 3 * len(data)

    before = _source_fds(m, ws.src)
    n = 200
    for i in range(n):
        with open(os.path.join(m, 'new%03d' % i), 'wb') as f:
            f.write(b'%d\n' % i)
    for i in range(n):
        with open(os.path.join(ws.src, 'new%03d' % i), 'rb') as f:
            assert f.read() == b'%d\n' % i
    # the inodes' own O_PATH descriptors, and no open one left behind
    opath, other = _source_fds(m, ws.src)
    assert opath - before[0] <= n
    assert other <= before[1], (other, before[1])
    assert _stat(m, 'open_requests') == 1


def test_default_mode_still_opens(ws):
    """Close-to-open needs the open: the default mode keeps it."""
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'abc')
    ws.start()
    for _ in range(3):
        with open(os.path.join(ws.mnt, 'f'), 'rb') as f:
            assert f.read() == b'abc'
    assert _stat(ws.mnt, 'open_requests') >= 3


def test_control_files_without_open(ws):
    """stats and stats.json are fresh at every read although the kernel
    keeps file pages (each read is preceded by a getattr that renders a
    snapshot); ctl takes commands and answers them."""
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'y' * 50000)
    ws.start(opts='revalidate=never')
    m = ws.mnt
    _open_first_file(m, 'f')
    seen = []
    for _ in range(3):
        util.read_cold(os.path.join(m, 'f'))
        n = _stat(m, 'read_requests')
        with open(os.path.join(m, '.hotfs', 'stats.json')) as f:
            j = json.load(f)
        assert j['read_requests'] == n
        seen.append(n)
    assert seen[0] < seen[1] < seen[2]
    assert _stat(m, 'open_requests') == 1

    ctl = os.path.join(m, '.hotfs', 'ctl')
    with open(ctl, 'w') as f:
        f.write('reset-stats\n')
    with open(ctl) as f:
        assert f.read() == 'ok\n'
    assert _stat(m, 'read_requests') < seen[2]
    with pytest.raises(OSError) as e:
        with open(ctl, 'w') as f:
            f.write('no-such-command\n')
    assert e.value.errno == errno.EINVAL
    with open(ctl) as f:
        assert f.read() == "error: unknown command 'no-such-command'\n"
    with pytest.raises(PermissionError):
        with open(os.path.join(m, '.hotfs', 'stats'), 'w') as f:
            f.write('x')


def _settled(m):
    """Promotions queued so far are done."""
    util.wait_for(lambda: _stat(m, 'promotion_queue_depth') == 0,
                  'the promotion queue to drain')


def test_never_promotes_at_the_second_read_not_the_first(ws):
    """Without handles an access is a read of an extent the inode's reads
    had not touched in the last 200 ms (cache.h, NOFH_WINDOW_NS): a file
    read once is not promoted, read again it is, and then it is served
    from the store."""
    body = os.urandom(1 << 20)
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(body)
    ws.start(opts='revalidate=never')
    m = ws.mnt
    p = os.path.join(m, 'f')
    assert util.read_cold(p) == body
    t1 = time.monotonic()
    _settled(m)
    assert _stat(m, 'promotions') == 0
    assert _stat(m, 'cached_extents') == 0
    # the contract's window, not a guess at how long something takes
    util.wait_for(lambda: time.monotonic() - t1 > 0.25,
                  'the access window to pass')
    assert util.read_cold(p) == body
    util.wait_for(lambda: _stat(m, 'cached_extents') == 4,
                  'the four extents to be promoted')
    hits = _stat(m, 'read_hit_bytes')
    assert util.read_cold(p) == body
    assert _stat(m, 'read_hit_bytes') - hits == len(body)
    assert _stat(m, 'open_requests') == 1


def test_never_writes_without_open(ws):
    """Writes, appends, O_TRUNC and truncate without a handle reach the
    source and drop the cached extents: the next read never sees the old
    bytes."""
    old = os.urandom(600000)
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(old)
    ws.start(opts='revalidate=never,threshold=1')
    m = ws.mnt
    p = os.path.join(m, 'f')
    assert util.read_cold(p) == old
    util.wait_for(lambda: _stat(m, 'cached_extents') == 3,
                  'the file to be cached')
    assert _stat(m, 'open_requests') == 1

    with open(p, 'r+b') as f:
        f.seek(1000)
        f.write(b'N' * 5000)
    new = old[:1000] + b'N' * 5000 + old[6000:]
    assert util.read_cold(p) == new
    with open(os.path.join(ws.src, 'f'), 'rb') as f:
        assert f.read() == new

    with open(p, 'ab') as f:
        f.write(b'tail')
    new += b'tail'
    assert util.read_cold(p) == new

    fd = os.open(p, os.O_WRONLY | os.O_SYNC)
    try:
        os.pwrite(fd, b'S', 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    new = b'S' + new[1:]
    assert util.read_cold(p) == new

    os.truncate(p, 300000)
    assert util.read_cold(p) == new[:300000]
    with open(p, 'wb') as f:        # O_TRUNC comes as a setattr
        f.write(b'fresh')
    assert util.read_cold(p) == b'fresh'
    assert os.stat(p).st_size == 5
    with open(os.path.join(ws.src, 'f'), 'rb') as f:
        assert f.read() == b'fresh'
    assert _stat(m, 'open_requests') == 1
