# SPDX-License-Identifier: GPL-2.0-or-later
"""Dirty data a writeback mount left in the cachedir (a crash), met by a
mount in another write mode: it is written to the source before that
mount, or the mount is refused with the data kept; never ignored (the
mount would serve the older bytes, and a later writeback mount would
replay them over newer ones).  A clean log (a clean unmount's) is left
as it is by such a mount, and by nocache; a leftover one is drained at
its own size; a log that cannot be resized stays as it was, and the
mount says why (ENOSPC).  ro with writemode=writeback is refused."""
import errno
import hashlib
import os
import subprocess

import util
from test_faults import ext4  # noqa: F401 (a fixture)
from test_writeback import HOLD, kill9, read


def crashed_with_dirty(ws, data=b'N' * 5000):
    """A writeback mount that holds data (not flushed) killed -9: the
    source still has the old bytes, the cachedir's log the new ones."""
    old = b'o' * 8192
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(old)
    proc = ws.start(opts=HOLD)
    with open(os.path.join(ws.mnt, 'f'), 'r+b') as f:
        f.write(data)
    kill9(ws, proc)
    assert read(os.path.join(ws.src, 'f')) == old
    return data + old[len(data):]


def test_other_mode_flushes_first(ws):
    want = crashed_with_dirty(ws)
    proc = ws.start(opts='writemode=writearound')
    # written to the source before the mount answered anything
    assert read(os.path.join(ws.src, 'f')) == want
    assert read(os.path.join(ws.mnt, 'f')) == want
    assert 'writing them to the source before this mount' in \
        ws.log_text(proc)
    # a newer write in this mode is never undone by a later writeback
    # mount: the log holds nothing to replay
    with open(os.path.join(ws.mnt, 'f'), 'r+b') as f:
        f.write(b'W' * 100)
    want = b'W' * 100 + want[100:]
    ws.stop(proc)
    proc = ws.start(opts=HOLD)
    assert util.hotfs_stats(ws.mnt)['dirty_bytes'] == '0'
    assert read(os.path.join(ws.mnt, 'f')) == want
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'f')) == want


def refused(ws, opts):
    """hotfs with opts over the workspace: it must refuse to mount; its
    output."""
    r = subprocess.run([util.hotfs_bin(), ws.src, ws.mnt, '-f', '-o',
                        'cachedir=%s,%s' % (ws.cache, opts)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    out = r.stdout.decode(errors='replace')
    assert r.returncode != 0 and not util.is_mounted(ws.mnt), out
    return out


def test_nocache_refused(ws):
    want = crashed_with_dirty(ws)
    out = refused(ws, 'nocache')
    assert out.count('\n') == 1 and 'mount without nocache' in out, out
    # kept: a writeback mount serves it and flushes it
    proc = ws.start(opts='writemode=writeback')
    assert read(os.path.join(ws.mnt, 'f')) == want
    ws.stop(proc)
    assert read(os.path.join(ws.src, 'f')) == want


def test_source_refuses_then_kept(ws):
    """The source does not take the data (the file made immutable): the
    other mode's mount is refused, saying what to do, and the data stays
    in the log for the mount that can write it."""
    want = crashed_with_dirty(ws)
    src = os.path.join(ws.src, 'f')
    r = subprocess.run(['chattr', '+i', src], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if r.returncode != 0:
        import pytest
        pytest.skip('chattr +i: %s' % r.stdout.decode().strip())
    try:
        out = refused(ws, 'writemode=writethrough')
        assert 'did not take' in out and 'writemode=writeback' in out, out
        assert read(src) == b'o' * 8192
    finally:
        subprocess.run(['chattr', '-i', src], check=True)
    proc = ws.start(opts='writemode=writethrough')
    assert read(os.path.join(ws.mnt, 'f')) == want
    ws.stop(proc)
    assert read(src) == want


# the sizes: a 200 MB cache filesystem, a log of 32 MiB; the
# default log (256 MiB) does not fit there
CACHEFS = 200 << 20
SMALL_LOG = 'writeback_log=32M'


def small_cachedir(ws, ext4):  # noqa: F811
    """A cachedir on a 200 MB ext4 whose log (32 MiB) a writeback mount
    made, wrote through and left clean; the file's bytes through it."""
    cdev = ext4('cachefs', CACHEFS)
    cache = os.path.join(cdev.dir, 'cache')
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'o' * 8192)
    proc = ws.start(cachedir=cache, opts='writemode=writeback,' + SMALL_LOG)
    with open(os.path.join(ws.mnt, 'f'), 'r+b') as f:
        f.write(b'W' * 5000)
    ws.stop(proc)
    assert os.stat(os.path.join(cache, 'wlog')).st_size == \
        (32 << 20) + 8192
    return cdev, cache, b'W' * 5000 + b'o' * 3192


def log_state(cache):
    """The log's size and a digest of its bytes."""
    with open(os.path.join(cache, 'wlog'), 'rb') as f:
        return os.fstat(f.fileno()).st_size, \
            hashlib.sha256(f.read()).hexdigest()


def free_bytes(d):
    v = os.statvfs(d)
    return v.f_bfree * v.f_frsize


def refused_once(ws, cache, opts):
    """hotfs over the workspace with opts: refused, before mounting, with
    one line; that line."""
    proc = ws.start(cachedir=cache, opts=opts, wait=False)
    util.wait_for(lambda: proc.poll() is not None or
                  util.is_mounted(ws.mnt), 'hotfs to mount or exit')
    mounted, rc = util.is_mounted(ws.mnt), proc.poll()
    lines = ws.log_text(proc).splitlines()[1:]     # after the command
    assert not mounted and rc not in (None, 0), (rc, lines)
    assert len(lines) == 1, lines
    return lines[0]


def test_clean_log_left_alone(ws, ext4):  # noqa: F811
    """Over a clean 32 MiB log on a small filesystem, mounts in the other
    modes, reset and nocache all mount and leave the log as it is, byte
    for byte (none of them needs it: nothing is dirty)."""
    cdev, cache, want = small_cachedir(ws, ext4)
    before = log_state(cache)
    for opts in ('', 'writemode=writethrough', 'reset', 'nocache'):
        proc = ws.start(cachedir=cache, opts=opts)
        assert read(os.path.join(ws.mnt, 'f')) == want, opts
        ws.stop(proc)
        assert log_state(cache) == before, opts
    # and the writeback mount of its size still serves and writes
    proc = ws.start(cachedir=cache, opts='writemode=writeback,' + SMALL_LOG)
    assert util.hotfs_stats(ws.mnt)['dirty_bytes'] == '0'
    assert read(os.path.join(ws.mnt, 'f')) == want
    ws.stop(proc)


def test_resize_that_does_not_fit(ws, ext4):  # noqa: F811
    """A writeback mount that asks the default log (256 MiB) of a
    filesystem with less room: refused with the real errno (ENOSPC),
    the log as it was and the filesystem's space given back; every mount
    after it works."""
    cdev, cache, want = small_cachedir(ws, ext4)
    before, free = log_state(cache), free_bytes(cdev.dir)
    line = refused_once(ws, cache, 'writemode=writeback')
    assert 'wlog' in line and os.strerror(errno.ENOSPC) in line, line
    assert 'writeback_log=' in line, line
    assert log_state(cache) == before
    # (the store's own files may change by a block or two)
    assert free_bytes(cdev.dir) >= free - (1 << 20), \
        (free_bytes(cdev.dir), free)
    for opts in ('writemode=writeback,' + SMALL_LOG, '', 'reset',
                 'nocache'):
        proc = ws.start(cachedir=cache, opts=opts)
        assert read(os.path.join(ws.mnt, 'f')) == want, opts
        ws.stop(proc)
        assert log_state(cache)[0] == before[0], opts


def test_leftover_drained_at_its_size(ws, ext4):  # noqa: F811
    """A 32 MiB log left with dirty data (the daemon killed) on a small
    filesystem: a writearound mount drains it at its own size (the
    default's 256 MiB do not fit there) and mounts."""
    cdev, cache, want = small_cachedir(ws, ext4)
    proc = ws.start(cachedir=cache, opts=HOLD + ',' + SMALL_LOG)
    with open(os.path.join(ws.mnt, 'f'), 'r+b') as f:
        f.write(b'D' * 100)
    want = b'D' * 100 + want[100:]
    kill9(ws, proc)
    assert read(os.path.join(ws.src, 'f')) != want
    size = os.stat(os.path.join(cache, 'wlog')).st_size
    proc = ws.start(cachedir=cache)
    assert read(os.path.join(ws.src, 'f')) == want
    assert read(os.path.join(ws.mnt, 'f')) == want
    ws.stop(proc)
    assert os.stat(os.path.join(cache, 'wlog')).st_size == size
    # nothing dirty left: nocache mounts
    proc = ws.start(cachedir=cache, opts='nocache')
    assert read(os.path.join(ws.mnt, 'f')) == want
    ws.stop(proc)


def test_read_only_writeback_refused(ws):
    """ro with writemode=writeback: refused with one line (nothing would
    be written through the mount), before any log is made."""
    line = refused_once(ws, ws.cache, 'ro,writemode=writeback')
    assert 'ro' in line and 'writeback' in line, line
    assert not os.path.exists(os.path.join(ws.cache, 'wlog'))
