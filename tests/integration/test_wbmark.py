# SPDX-License-Identifier: GPL-2.0-or-later
"""The writeback mark on the source (hotfs/wbmark.h): while a cachedir
holds dirty data of a source, a mount of that source with another
cachedir, a new one or nocache is refused, naming the cachedir that holds
it; a replayed log that meets a file changed on the source while no
mount ran keeps both versions; and a log left dirty for a source that
carries no mark (given up by hand) is not replayed over it.  S and C
are ext4 filesystems on loop devices of their own."""
import errno
import os
import subprocess
import time

import pytest

import util
from test_faults import ext4  # noqa: F401 (a fixture)
from test_writeback import kill9, read

WB = 'writemode=writeback,writeback_log=16M,writeback_delay=600'
MARK = '.hotfs-dirty'


def mount_refused(ws, src, opts):
    """hotfs over src with opts must refuse to mount: its output (a
    daemon that mounts instead is unmounted by the fixtures)."""
    proc = ws.start(src=src, cachedir=False, opts=opts, wait=False)
    util.wait_for(lambda: proc.poll() is not None or
                  util.is_mounted(ws.mnt), 'hotfs to exit or mount')
    out = ws.log_text(proc).split('\n', 1)[1]
    assert proc.poll() is not None and proc.returncode != 0 and \
        not util.is_mounted(ws.mnt), 'mounted: ' + out
    return out


def mark_of(src):
    with open(os.path.join(src, MARK)) as f:
        return dict(line.split('=', 1) for line in f.read().splitlines()
                    if '=' in line)


def crashed(ws, s, cdir, data):
    """A writeback mount over s writes data at 0 of f (8 KiB of 'o' on
    the source), the log made durable (sync), killed -9: the source still
    has the old bytes.  The time just after the write."""
    with open(os.path.join(s.dir, 'f'), 'wb') as f:
        f.write(b'o' * 8192)
    proc = ws.start(src=s.dir, cachedir=cdir, opts=WB)
    with open(os.path.join(ws.mnt, 'f'), 'r+b') as f:
        f.write(data)
    written = time.time_ns()
    os.sync()
    kill9(ws, proc)
    assert read(os.path.join(s.dir, 'f')) == b'o' * 8192
    return written


def test_boot_without_cache_fs(ws, ext4):  # noqa: F811
    """The issue's sequence: the cache filesystem missing at the next
    mount, the source must not be served (nor written) without it."""
    s = ext4('srcfs', 32 << 20)
    c = ext4('cachefs', 64 << 20)
    cdir = os.path.join(c.dir, 'cache')
    crashed(ws, s, cdir, b'OLD')
    want = b'OLD' + b'o' * 8189
    c.umount()
    # the cachedir's path is now an empty directory on the root fs: a
    # new cachedir there, nocache, another cachedir: refused, one line
    # naming the cachedir that holds the data and what to do
    outs = [mount_refused(ws, s.dir, opts) for opts in
            ('cachedir=%s,%s' % (cdir, WB), 'cachedir=%s' % cdir,
             'nocache', 'cachedir=%s,%s' % (ws.cache, WB))]
    for out in outs:
        assert out.count('\n') == 1, out
        assert cdir in out and 'remove %s/%s' % (s.dir, MARK) in out, out
    assert read(os.path.join(s.dir, 'f')) == b'o' * 8192
    # the cache filesystem back: the log replayed, the acknowledged
    # bytes served; the mark hidden from the mount
    c.fsck_and_mount()
    # the mark names the cachedir's identity, and the refusals said it
    with open(os.path.join(cdir, 'wlog.id')) as f:
        ident = f.read().strip()
    m = mark_of(s.dir)
    assert m['id'] == ident and m['cachedir'] == cdir, m
    assert all(ident in out for out in outs), outs
    proc = ws.start(src=s.dir, cachedir=cdir, opts=WB)
    assert read(os.path.join(ws.mnt, 'f')) == want
    assert MARK not in os.listdir(ws.mnt)
    assert not os.path.lexists(os.path.join(ws.mnt, MARK))
    for op in (lambda p: open(p, 'w'), os.mkdir,
               lambda p: os.rename(os.path.join(ws.mnt, 'f'), p),
               lambda p: os.symlink('f', p)):
        with pytest.raises(OSError) as e:
            op(os.path.join(ws.mnt, MARK))
        assert e.value.errno == errno.EPERM
    assert os.path.exists(os.path.join(s.dir, MARK))
    ws.stop(proc)
    # all written back and the source synced: the mark is gone
    assert read(os.path.join(s.dir, 'f')) == want
    assert not os.path.lexists(os.path.join(s.dir, MARK))
    # and nothing stops a mount with nocache now
    proc = ws.start(src=s.dir, cachedir=False, opts='nocache')
    assert read(os.path.join(ws.mnt, 'f')) == want
    ws.stop(proc)


def test_other_mode_clears_mark(ws, ext4):  # noqa: F811
    """A mount in another mode with the right cachedir writes the log to
    the source first, then removes the mark."""
    s = ext4('srcfs', 32 << 20)
    c = ext4('cachefs', 64 << 20)
    cdir = os.path.join(c.dir, 'cache')
    crashed(ws, s, cdir, b'N' * 5000)
    assert os.path.exists(os.path.join(s.dir, MARK))
    proc = ws.start(src=s.dir, cachedir=cdir, opts='writemode=writearound')
    assert not os.path.lexists(os.path.join(s.dir, MARK))
    assert read(os.path.join(s.dir, 'f')) == b'N' * 5000 + b'o' * 3192
    ws.stop(proc)


def test_outside_edit_kept(ws, ext4):  # noqa: F811
    """An admin's edit on the source while no mount ran, met by the
    replay: the log's acknowledged bytes win in place, the edited
    version is kept in the cachedir, counted and logged."""
    s = ext4('srcfs', 32 << 20)
    c = ext4('cachefs', 64 << 20)
    cdir = os.path.join(c.dir, 'cache')
    written = crashed(ws, s, cdir, b'N' * 5000)
    src = os.path.join(s.dir, 'f')
    with open(src, 'r+b') as f:
        f.write(b'E' * 8192)
    assert os.stat(src).st_ctime_ns > written
    ino = os.stat(src).st_ino
    proc = ws.start(src=s.dir, cachedir=cdir, opts=WB)
    want = b'N' * 5000 + b'E' * 3192
    assert read(os.path.join(ws.mnt, 'f')) == want
    kept = os.listdir(os.path.join(cdir, 'conflicts'))
    assert len(kept) == 1 and kept[0].startswith('%d-' % ino) and \
        kept[0].endswith('-f'), kept
    side = os.path.join(cdir, 'conflicts', kept[0])
    assert read(side) == b'E' * 8192
    assert util.hotfs_stats(ws.mnt)['writeback_conflicts'] == '1'
    assert side in ws.log_text(proc)
    ws.stop(proc)
    assert read(src) == want
    assert not os.path.lexists(os.path.join(s.dir, MARK))


def test_created_then_written_is_no_conflict(ws):
    """A file created through a writeback mount and written at once,
    then a kill -9 and a remount: the replay keeps no copy aside and says
    no "changed on the source" (the create's ctime, on the source's fine
    clock, came after the write's record time on the coarse one: 5 of 10
    such files were taken for edits behind the mount).  Ten files; then
    an edit right after the kill, which is one."""
    opts = 'writemode=writeback,writeback_delay=600'
    for i in range(10):
        proc = ws.start(opts=opts)
        with open(os.path.join(ws.mnt, 'f%d' % i), 'wb') as f:
            f.write(b'x')
        kill9(ws, proc)
        proc = ws.start(opts=opts)
        log = ws.log_text(proc)
        assert 'changed on the source' not in log, (i, log)
        ws.stop(proc)
    assert not os.path.exists(os.path.join(ws.cache, 'conflicts'))
    # an edit on the source as soon as the daemon is gone still is one
    proc = ws.start(opts=opts)
    with open(os.path.join(ws.mnt, 'g'), 'wb') as f:
        f.write(b'x')
    kill9(ws, proc)
    with open(os.path.join(ws.src, 'g'), 'ab') as f:
        f.write(b'edit')
    proc = ws.start(opts=opts)
    assert 'changed on the source' in ws.log_text(proc)
    assert len(os.listdir(os.path.join(ws.cache, 'conflicts'))) == 1
    ws.stop(proc)


def test_no_write_before_mark(ws, ext4):  # noqa: F811
    """No write is acknowledged before the mark is on the source: with
    the source's root immutable (no new name in it) writes fail, said
    once in the log; once it can be set, they go on."""
    s = ext4('srcfs', 32 << 20)
    c = ext4('cachefs', 64 << 20)
    cdir = os.path.join(c.dir, 'cache')
    with open(os.path.join(s.dir, 'f'), 'wb') as f:
        f.write(b'o' * 8192)
    r = subprocess.run(['chattr', '+i', s.dir], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if r.returncode != 0:
        pytest.skip('chattr +i: %s' % r.stdout.decode().strip())
    try:
        proc = ws.start(src=s.dir, cachedir=cdir, opts=WB)
        fd = os.open(os.path.join(ws.mnt, 'f'), os.O_WRONLY)
        try:
            for _ in range(2):
                with pytest.raises(OSError) as e:
                    os.pwrite(fd, b'N' * 100, 0)
                assert e.value.errno == errno.EPERM, ws.log_text(proc)
        finally:
            os.close(fd)
        assert ws.log_text(proc).count('could not be set') == 1
        assert util.hotfs_stats(ws.mnt)['dirty_bytes'] == '0'
    finally:
        subprocess.run(['chattr', '-i', s.dir], check=True)
    with open(os.path.join(ws.mnt, 'f'), 'r+b') as f:
        f.write(b'N' * 100)
    assert mark_of(s.dir)['cachedir'] == cdir
    ws.stop(proc)
    assert read(os.path.join(s.dir, 'f')) == b'N' * 100 + b'o' * 8092
    assert not os.path.lexists(os.path.join(s.dir, MARK))


def test_mark_removed_by_hand_log_not_replayed(ws, ext4):  # noqa: F811
    """The admin gave the log's data up (removed the mark by hand, as the
    refusal says) and changed the source since: the next mount with that
    cachedir does not replay the log over the source (the mark goes only
    once everything is on the source, or by hand): one line says so, the
    source's bytes stay, nothing is kept aside, and the log is emptied
    (the next mount after a kill -9 finds nothing of it).  The same
    holds in another write mode.  (The log was replayed and its bytes
    written over the source's, which went to cachedir/conflicts.)"""
    s = ext4('srcfs', 32 << 20)
    c = ext4('cachefs', 128 << 20)
    cdir = os.path.join(c.dir, 'cache')
    src = os.path.join(s.dir, 'f')
    for opts in (WB, 'writemode=writethrough'):
        crashed(ws, s, cdir, b'N' * 5000)
        os.unlink(os.path.join(s.dir, MARK))
        with open(src, 'r+b') as f:
            f.write(b'E' * 3000)
        want = b'E' * 3000 + b'o' * 5192
        proc = ws.start(src=s.dir, cachedir=cdir, opts=opts)
        assert read(os.path.join(ws.mnt, 'f')) == want
        log = ws.log_text(proc)
        line = [x for x in log.splitlines() if 'carries no mark' in x]
        assert len(line) == 1 and '5000 dirty bytes of 1 files' in \
            line[0] and 'not replayed' in line[0], log
        assert not os.path.exists(os.path.join(cdir, 'conflicts')), log
        assert util.hotfs_stats(ws.mnt).get('dirty_bytes', '0') == '0'
        assert not os.path.lexists(os.path.join(s.dir, MARK))
        kill9(ws, proc)
        assert read(src) == want
        proc = ws.start(src=s.dir, cachedir=cdir, opts=WB)
        assert read(os.path.join(ws.mnt, 'f')) == want
        assert 'carries no mark' not in ws.log_text(proc)
        ws.stop(proc)
        assert read(src) == want
