# SPDX-License-Identifier: GPL-2.0-or-later
"""Crash safety: SIGKILL the daemon at random moments of a mixed workload
(cold reads that promote, writes, truncates and renames through the mount,
hotfsctl-style warms), remount on the same cachedir, and compare every
file read through the mount with the source, byte for byte.

HOTFS_CRASH_KILLS sets the number of kills (default 30, the CI run;
contrib/ci/soak.sh uses 500).  HOTFS_CRASH_SEED replays a run.  The
kill moment is drawn as a number of workload operations (and sometimes
"while the promotion queue is busy"), so a seed replays the same
schedule; nothing waits for a fixed time.
"""
import fcntl
import json
import mmap
import os
import random
import signal
import struct
import subprocess

import pytest

import util

EXT = 256 * 1024
KILLS = int(os.environ.get('HOTFS_CRASH_KILLS', '30'))
SEED = int(os.environ.get('HOTFS_CRASH_SEED', random.randrange(1 << 30)))

# struct hotfs_ioc (include/hotfs/ioctl.h): 6 u64 then 2 u32
IOC_FMT = '6Q2I'
IOC_SIZE = struct.calcsize(IOC_FMT)
HOTFS_IOC_WARM = (3 << 30) | (IOC_SIZE << 16) | (ord('H') << 8) | 1


def stats(mnt):
    with open(os.path.join(mnt, '.hotfs', 'stats.json')) as f:
        return json.load(f)


COMPARED = [0, 0]      # files, bytes


def compare_all(src, mnt):
    """Every regular file through the mount equals the source's."""
    n = 0
    for dirpath, _, files in os.walk(src):
        for name in files:
            s = os.path.join(dirpath, name)
            m = os.path.join(mnt, os.path.relpath(s, src))
            with open(s, 'rb') as f:
                want = f.read()
            got = util.read_cold(m)
            assert got == want, 'differs after a crash: %s (%d vs %d ' \
                'bytes), seed %d' % (m, len(got), len(want), SEED)
            n += 1
            COMPARED[0] += 1
            COMPARED[1] += len(want)
    return n


def random_reads(rng, path):
    """A few O_DIRECT 4 KiB reads at random blocks (not block 0): the
    block grain, promoted at the first miss while the store has room."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    try:
        nblk = os.fstat(fd).st_size // 4096
        for _ in range(rng.randrange(1, 6)):
            if nblk > 1:
                os.preadv(fd, [buf], 4096 * rng.randrange(1, nblk))
    finally:
        buf.close()
        os.close(fd)


def workload(rng, src, mnt, nops):
    """nops random operations through the mount; errors after the kill
    (ENOTCONN, ECONNABORTED) end it."""
    names = sorted(os.listdir(src))
    for _ in range(nops):
        name = rng.choice(names)
        p = os.path.join(mnt, name)
        op = rng.random()
        if op < 0.40:                       # cold read: counts, promotes
            util.read_cold(p)
        elif op < 0.55:                     # random 4 KiB reads: blocks
            random_reads(rng, p)
        elif op < 0.75:                     # write somewhere
            with open(p, 'r+b') as f:
                size = os.fstat(f.fileno()).st_size
                off = rng.randrange(0, max(1, size))
                f.seek(off)
                f.write(rng.randbytes(rng.randrange(1, 3 * 4096)))
        elif op < 0.82:                     # truncate
            os.truncate(p, rng.randrange(0, 4 * EXT))
        elif op < 0.90:                     # replace by rename
            tmp = p + '.tmp'
            with open(tmp, 'wb') as f:
                f.write(rng.randbytes(rng.randrange(1, 3 * EXT)))
            os.rename(tmp, p)
        else:                               # warm now (hotfsctl warm)
            fd = os.open(p, os.O_RDONLY)
            try:
                buf = bytearray(struct.pack(IOC_FMT, 0, 0, 0, 0, 0, 0, 0,
                                            0))
                fcntl.ioctl(fd, HOTFS_IOC_WARM, buf)
            finally:
                os.close(fd)


def test_sigkill_during_promotions_and_writes(ws):
    rng = random.Random(SEED)
    print('HOTFS_CRASH_SEED=%d' % SEED)
    for i in range(12):
        with open(os.path.join(ws.src, 'f%02d' % i), 'wb') as f:
            f.write(rng.randbytes(rng.choice([700, 9000, 2 * EXT + 17,
                                              5 * EXT])))
    recovered = []
    blocks = 0
    opts = 'cachesize=32M,threshold=1'
    for k in range(KILLS):
        mnt = os.path.join(ws.root, 'm%d' % k)
        os.mkdir(mnt)
        proc = ws.start(mnt=mnt, opts=opts)
        recovered.append(stats(mnt)['recovered_extents'])
        # the files as the last crash left them
        compare_all(ws.src, mnt)
        # a random moment: after some operations, maybe mid-promotion
        nops = rng.randrange(0, 40)
        workload(rng, ws.src, mnt, nops)
        if rng.random() < 0.5:
            # kill while promotions are queued or running
            for n in sorted(os.listdir(ws.src))[:4]:
                util.read_cold(os.path.join(mnt, n))
        blocks += stats(mnt)['promotions_block']
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=util.TIMEOUT)
        util.unmount_cmd(mnt)
        assert not util.is_mounted(mnt)
    # a last mount: everything still equal, the cache still in use
    mnt = os.path.join(ws.root, 'final')
    os.mkdir(mnt)
    proc = ws.start(mnt=mnt, opts=opts)
    recovered.append(stats(mnt)['recovered_extents'])
    assert compare_all(ws.src, mnt) == 12
    print('extents recovered after each kill: %r' % recovered)
    print('%d kills; after each, every file compared: %d files, %d bytes, '
          'none wrong (seed %d)' % (KILLS, COMPARED[0], COMPARED[1], SEED))
    assert max(recovered) > 0, 'no kill left anything warm: %r' % recovered
    assert blocks > 0, 'no block was promoted before a kill'
    ws.stop(proc)
