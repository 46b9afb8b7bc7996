# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults on the cache device: a cachedir on a filesystem that fills up
(by hotfs or by others), or that is removed while mounted.
hotfs keeps serving every read from the source, correct to the byte,
shows the degraded state in .hotfs/stats, and recovers when space comes
back (or on remount)."""
import hashlib
import json
import os
import subprocess

import pytest

import util

EXT = 256 * 1024


def stats(mnt):
    with open(os.path.join(mnt, '.hotfs', 'stats.json')) as f:
        return json.load(f)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def write_random(path, size, seed):
    import random
    data = random.Random(seed).randbytes(size)
    with open(path, 'wb') as f:
        f.write(data)
    return data


@pytest.fixture
def small_fs(ws):
    """A 48 MiB tmpfs for the cachedir, always unmounted."""
    d = os.path.join(ws.root, 'cachefs')
    os.mkdir(d)
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=48m', 'tmpfs',
                        d], stderr=subprocess.PIPE)
    if r.returncode != 0:
        pytest.skip('cannot mount a tmpfs: %s' % r.stderr.decode())
    try:
        yield d
    finally:
        for p, mnt, _ in ws.daemons:
            util.cleanup_mount(p, mnt)
        subprocess.run(['umount', '-l', d])


def read_all(mnt, files):
    for name, data in files.items():
        assert util.read_cold(os.path.join(mnt, name)) == data, name


def test_cache_device_full(ws, small_fs):
    """cachesize larger than the filesystem: the store keeps within the
    space there is (the free-space watermarks recycle regions) and the
    cache works."""
    cache = os.path.join(small_fs, 'cache')
    files = {'f%d' % i: write_random(os.path.join(ws.src, 'f%d' % i),
                                     2 << 20, i) for i in range(10)}
    files.update({'g%d' % i: write_random(os.path.join(ws.src, 'g%d' % i),
                                          4 << 20, 50 + i)
                  for i in range(8)})
    ws.start(cachedir=cache, opts='cachesize=200M,threshold=1')
    # more than fits: the g files once, then the f files again and again
    read_all(ws.mnt, {k: v for k, v in files.items() if k[0] == 'g'})
    f_files = {k: v for k, v in files.items() if k[0] == 'f'}
    for _ in range(3):
        read_all(ws.mnt, f_files)
    util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                  'promotions to settle', timeout=60)
    s = stats(ws.mnt)
    assert s['evicted_regions'] + s['culled_regions'] > 0 or \
        s['store_state'] == 'read-only', s
    # the f files displace the g files once admission finds them hotter
    # (how many passes that takes is the policy's business: at most 8)
    before = s['read_hit_bytes']
    for _ in range(8):
        read_all(ws.mnt, f_files)
        util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                      'promotions to settle', timeout=60)
        if stats(ws.mnt)['read_hit_bytes'] > before:
            break
    assert stats(ws.mnt)['read_hit_bytes'] > before, stats(ws.mnt)
    assert os.statvfs(small_fs).f_bavail > 0
    read_all(ws.mnt, files)


def test_cache_device_filled_by_others(ws, small_fs):
    """Another user of the SSD fills it: hotfs degrades, never fails a
    read, and comes back when the space is freed."""
    cache = os.path.join(small_fs, 'cache')
    files = {'f%d' % i: write_random(os.path.join(ws.src, 'f%d' % i),
                                     2 << 20, i) for i in range(4)}
    ws.start(cachedir=cache, opts='cachesize=32M,threshold=1')
    read_all(ws.mnt, files)
    filler = os.path.join(small_fs, 'filler')
    with open(filler, 'wb', buffering=0) as f:
        try:
            while True:
                f.write(b'\1' * (1 << 20))
        except OSError:
            pass
    for _ in range(2):
        read_all(ws.mnt, files)
    s = stats(ws.mnt)
    assert s['store_state'] in ('ok', 'read-only'), s
    os.unlink(filler)
    read_all(ws.mnt, files)


def test_cachedir_removed_while_mounted(ws, small_fs):
    cache = os.path.join(small_fs, 'cache')
    files = {'f%d' % i: write_random(os.path.join(ws.src, 'f%d' % i),
                                     EXT + 3, i) for i in range(5)}
    proc = ws.start(cachedir=cache, opts='cachesize=32M,threshold=1')
    read_all(ws.mnt, files)
    read_all(ws.mnt, files)
    subprocess.run(['rm', '-rf', cache], check=True)
    for _ in range(2):
        read_all(ws.mnt, files)
    ws.stop(proc)
    # a remount makes a new, empty store and works
    mnt2 = os.path.join(ws.root, 'mnt2')
    os.mkdir(mnt2)
    ws.start(mnt=mnt2, cachedir=cache, opts='cachesize=32M,threshold=1')
    assert stats(mnt2)['cached_extents'] == 0
    read_all(mnt2, files)
    read_all(mnt2, files)
