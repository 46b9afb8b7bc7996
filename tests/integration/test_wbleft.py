# SPDX-License-Identifier: GPL-2.0-or-later
"""Dirty data a writeback mount left in the cachedir (a crash), met by a
mount in another write mode: it is written to the source before that
mount, or the mount is refused with the data kept; never ignored (the
mount would serve the older bytes, and a later writeback mount would
replay them over newer ones)."""
import os
import subprocess

import util
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
