# SPDX-License-Identifier: GPL-2.0-or-later
"""The mount's own writes, many in flight at once, are never taken for
changes behind it: a write drops (writearound) or updates (writethrough)
the records it touches and no others, and the file's other cached bytes
stay cached through the mix; a change behind the mount during the same
mix is still caught.

The shape of the seeds' mixed fio pass (direct=1, libaio, queue depth
16, 70/30 reads and writes) in small: a 4 MiB file cached whole, then
threads writing and reading 4 KiB blocks through O_DIRECT descriptors,
so that writes overlap in time."""
import mmap
import os
import random
import shutil
import subprocess
import threading

import pytest

import util
from test_writeback import hotfsctl, read

SIZE = 4 << 20
EXTENT = 64 << 10
BLOCK = 4096


def source_file(ws):
    """src/f: SIZE random bytes.  Returns its path."""
    path = os.path.join(ws.src, 'f')
    with open(path, 'wb') as f:
        f.write(random.Random(1).randbytes(SIZE))
    return path


def warm_whole(ws, m):
    """m read through hotfsctl warm until the store holds all of it."""
    hotfsctl('warm', m)
    util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)['cached_bytes']) >=
                  SIZE and util.hotfs_stats(ws.mnt)
                  ['promotion_queue_depth'] == '0',
                  'the file cached whole')


def mix(m, want, writers=8, readers=4, writes=60, reads=150, seed=0,
        between=None):
    """Threads writing (each its own blocks, never the file's last) and
    reading 4 KiB blocks of m through O_DIRECT, at once.  Updates want;
    returns the set of blocks written and the blocks read whose bytes
    were not want's although no writer wrote them.  between(): called
    once halfway, while every writer waits and none is in flight."""
    nblocks = SIZE // BLOCK
    written, bad, errors = set(), [], []
    lock = threading.Lock()
    start = threading.Barrier(writers + readers)
    half = threading.Barrier(writers, action=between)

    def writer(k):
        rnd = random.Random(seed * 100 + k)
        buf = mmap.mmap(-1, BLOCK)      # aligned, for O_DIRECT
        fd = os.open(m, os.O_WRONLY | os.O_DIRECT)
        try:
            start.wait()
            for i in range(writes):
                if i == writes // 2:
                    half.wait()
                b = rnd.randrange(k, nblocks - 1, writers)
                data = rnd.randbytes(BLOCK)
                buf[:] = data
                with lock:
                    written.add(b)
                    want[b * BLOCK:(b + 1) * BLOCK] = data
                assert os.pwrite(fd, buf, b * BLOCK) == BLOCK
        except Exception as e:          # noqa: BLE001 (reported below)
            errors.append(e)
            half.abort()
        finally:
            buf.close()
            os.close(fd)

    def reader(k):
        rnd = random.Random(seed * 100 + 50 + k)
        buf = mmap.mmap(-1, BLOCK)
        fd = os.open(m, os.O_RDONLY | os.O_DIRECT)
        try:
            start.wait()
            for _ in range(reads):
                b = rnd.randrange(nblocks)
                assert os.preadv(fd, [buf], b * BLOCK) == BLOCK
                with lock:
                    if b not in written and \
                       bytes(buf) != want[b * BLOCK:(b + 1) * BLOCK]:
                        bad.append(b)
        except Exception as e:          # noqa: BLE001 (reported below)
            errors.append(e)
        finally:
            buf.close()
            os.close(fd)
    threads = [threading.Thread(target=writer, args=(k,))
               for k in range(writers)]
    threads += [threading.Thread(target=reader, args=(k,))
                for k in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return written, bad


@pytest.mark.parametrize('mode', ['writearound', 'writethrough'])
def test_own_writes_in_flight_keep_the_cache(ws, mode):
    """Writes in flight together through the mount: no record of the
    file is dropped as changed behind the mount, the cached bytes fall by
    at most the extents the writes touched (writearound: each written
    block's extent; writethrough: none need go), and every byte reads as
    written, from the cache and after the cache is bypassed."""
    path = source_file(ws)
    want = bytearray(read(path))
    ws.start(opts='writemode=%s,extent=64K,threshold=1' % mode)
    m = os.path.join(ws.mnt, 'f')
    warm_whole(ws, m)
    s0 = util.hotfs_stats(ws.mnt)
    written, bad = mix(m, want)
    s1 = util.hotfs_stats(ws.mnt)
    assert not bad, bad
    assert s1['invalidations_source_changed'] == \
        s0['invalidations_source_changed'], (s0, s1)
    touched = {b * BLOCK // EXTENT for b in written}
    lost = int(s0['cached_bytes']) - int(s1['cached_bytes'])
    assert lost <= len(touched) * EXTENT, \
        '%d bytes no longer cached, %d extents written' % (lost,
                                                           len(touched))
    assert read(m) == bytes(want)
    assert read(path) == bytes(want)


@pytest.mark.parametrize('mode', ['writearound', 'writethrough'])
def test_fio_queue_depth_16_keeps_the_cache(ws, mode):
    """The seeds' mixed pass itself, small: fio, O_DIRECT, libaio with 16
    in flight, 70/30 zipf(1.1) 4 KiB reads and writes of a cached file
    for 3 s.  No record is dropped as changed behind the mount, and the
    mount and the source then read alike.  (Writes ending together took
    the source's stamp outside the inode's lock and could carry the
    records to an older stamp than the last one: the next read's stat
    then dropped the whole file; writethrough's patches read the records
    under a stamp a write had moved on from, which dropped them too:
    thousands in 3 s.)"""
    if not shutil.which('fio'):
        pytest.fail('fio is not installed (contrib/ci/deps.sh installs it)')
    path = source_file(ws)
    ws.start(opts='writemode=%s,extent=64K,threshold=1' % mode)
    m = os.path.join(ws.mnt, 'f')
    warm_whole(ws, m)
    s0 = util.hotfs_stats(ws.mnt)
    r = subprocess.run(['fio', '--name=mix', '--filename=' + m,
                        '--rw=randrw', '--rwmixread=70', '--bs=4k',
                        '--direct=1', '--ioengine=libaio', '--iodepth=16',
                        '--random_distribution=zipf:1.1',
                        '--size=%d' % SIZE, '--runtime=3', '--time_based'],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert r.returncode == 0, r.stdout
    s1 = util.hotfs_stats(ws.mnt)
    assert s1['invalidations_source_changed'] == \
        s0['invalidations_source_changed'], (s0, s1)
    assert int(s1['invalidations_write']) > 0, s1   # the mix wrote
    got = b''.join(read_block(m, b) for b in range(SIZE // BLOCK))
    assert got == read(path)


def test_change_behind_the_mount_during_the_mix_is_caught(ws):
    """The same mix, and halfway through it, while no write of the
    mount's is in flight, the file's last block changed on the source
    directly: the mount reads the source's new bytes there once the
    watch has seen it, never the cached old ones, and the writes after
    it do not hide it.  (A change behind the mount made while a write of
    the mount's own to the same file is in flight is taken for part of
    that write: man hotfs, revalidate.)"""
    path = source_file(ws)
    want = bytearray(read(path))
    ws.start(opts='writemode=writethrough,extent=64K,threshold=1')
    m = os.path.join(ws.mnt, 'f')
    warm_whole(ws, m)
    last = SIZE // BLOCK - 1
    behind = random.Random(2).randbytes(BLOCK)

    def change():
        with open(path, 'r+b') as f:
            f.seek(last * BLOCK)
            f.write(behind)
        want[last * BLOCK:] = behind
        util.wait_for(lambda: read_block(m, last) == behind,
                      'the change behind the mount seen through it')
    mix(m, want, between=change)
    assert read_block(m, last) == behind
    assert read(m) == bytes(want)


def read_block(m, b):
    """Block b of m, read through O_DIRECT (past the kernel's pages)."""
    buf = mmap.mmap(-1, BLOCK)
    fd = os.open(m, os.O_RDONLY | os.O_DIRECT)
    try:
        assert os.preadv(fd, [buf], b * BLOCK) == BLOCK
        return bytes(buf)
    finally:
        os.close(fd)
        buf.close()
