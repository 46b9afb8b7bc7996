# SPDX-License-Identifier: GPL-2.0-or-later
"""Block grain through a real mount: a random reader's 4 KiB reads promote
the blocks it read (from its own bytes, at the first miss while the store
has room), and while the room no insert uses is at least a sixth of the
file, a miss reads its whole extent and promotes every block of it; a
sequential reader still promotes whole extents, writes through the mount
cost only the records they touch, a change behind the mount still drops
everything, and once the store is full a block read once is not promoted.

Readers use O_DIRECT (every read reaches the daemon, as the seeds' fio
jobs do) or buffered reads with the kernel's pages dropped before each
pass.  Waits are on counters in .hotfs/stats.json, never fixed sleeps.
"""
import json
import mmap
import os
import random
import subprocess
import time

import pytest

import util

BLK = 4096
EXT = 256 * 1024


def stats(mnt):
    with open(os.path.join(mnt, '.hotfs', 'stats.json')) as f:
        return json.load(f)


def settled(mnt, key, at_least):
    util.wait_for(lambda: stats(mnt)[key] >= at_least and
                  stats(mnt)['promotion_queue_depth'] == 0,
                  '%s >= %d' % (key, at_least))


def make(path, size, seed):
    with open(path, 'wb') as f:
        f.write(random.Random(seed).randbytes(size))
    with open(path, 'rb') as f:
        return f.read()


class Direct:
    """An O_DIRECT reader (and writer) of one file through the mount."""

    def __init__(self, path, write=False):
        self.fd = os.open(path, (os.O_RDWR if write else os.O_RDONLY) |
                          os.O_DIRECT)
        self.buf = mmap.mmap(-1, 1 << 20)

    def read(self, off, n=BLK):
        got = os.preadv(self.fd, [memoryview(self.buf)[:n]], off)
        return bytes(self.buf[:got])

    def write(self, off, data):
        self.buf[:len(data)] = data
        assert os.pwritev(self.fd, [memoryview(self.buf)[:len(data)]],
                          off) == len(data)

    def close(self):
        os.close(self.fd)
        self.buf.close()


def all_regions_used(ws, mib=52):
    """Put every region of a 64 MiB store (four of 16 MiB) in use, none
    recycled yet, with the extents of a file read twice from its start:
    the store still has room, but no unused region, so random misses
    promote only their own blocks from here on.  The stats after."""
    path = os.path.join(ws.mnt, 'filler')
    with open(os.path.join(ws.src, 'filler'), 'wb') as f:
        f.write(random.Random(99).randbytes(mib << 20))
    for _ in range(2):
        util.read_cold(path)
    settled(ws.mnt, 'promotions_extent', (mib << 20) // EXT)
    s = stats(ws.mnt)
    assert s['regions_used'] == s['regions'], s
    assert s['store_filling'] == 1 and s['evicted_regions'] == 0, s
    return s


def read_alone(path, off, n=BLK):
    """A read on a handle of its own: its first read, so random (a read
    carrying on where the handle's reads went would go by extents)."""
    r = Direct(path)
    try:
        return r.read(off, n)
    finally:
        r.close()


def blocks_of(n, nblocks, seed):
    """n distinct block numbers, none of them block 0 (a read at byte 0
    is a file read from its start: extent grain)."""
    return random.Random(seed).sample(range(1, nblocks), n)


def test_random_reads_promote_blocks(ws):
    size = 16 << 20
    data = make(os.path.join(ws.src, 'img'), size, 1)
    proc = ws.start(opts='cachesize=64M')
    s0 = all_regions_used(ws)
    r = Direct(os.path.join(ws.mnt, 'img'))
    try:
        picks = blocks_of(64, size // BLK, 2)
        for b in picks:
            assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        # one read each is enough while the store has room
        settled(ws.mnt, 'promotions_block', 64)
        s = stats(ws.mnt)
        assert s['promotions_extent'] == s0['promotions_extent']
        assert s['promotions_reading_source'] == 0
        assert s['fill_extent_reads'] == 0
        assert s['cached_extents'] == s0['cached_extents'] + 64
        # the blocks, not extents
        assert s['cached_bytes'] == s0['cached_bytes'] + 64 * BLK
        # a 16 KiB read promotes its four blocks
        assert r.read(size - 8 * BLK, 4 * BLK) == \
            data[size - 8 * BLK:size - 4 * BLK]
        settled(ws.mnt, 'promotions_block', 68)
        # hotfsctl info counts the blocks as what of the file is cached
        info = json.loads(subprocess.run(
            [os.environ['HOTFSCTL_BIN'], 'info', '--json',
             os.path.join(ws.mnt, 'img')], check=True,
            stdout=subprocess.PIPE).stdout)
        assert info['files'][0]['cached_bytes'] == 68 * BLK, info
        before = stats(ws.mnt)
        for b in picks:
            assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        assert r.read(size - 8 * BLK, 4 * BLK) == \
            data[size - 8 * BLK:size - 4 * BLK]
        after = stats(ws.mnt)
        assert after['read_hit_bytes'] - before['read_hit_bytes'] == \
            68 * BLK
        assert after['read_miss_bytes'] == before['read_miss_bytes']
        # a read straddling two cached blocks and an uncached one
        b = picks[0]
        assert r.read(b * BLK + 100, 2 * BLK) == \
            data[b * BLK + 100:b * BLK + 100 + 2 * BLK]
    finally:
        r.close()
    ws.stop(proc)


def test_buffered_random_reader(ws):
    """A buffered reader (fio's psync) reads blocks as well: the kernel
    sends its random 4 KiB reads as they are (POSIX_FADV_RANDOM)."""
    size = 8 << 20
    data = make(os.path.join(ws.src, 'db'), size, 3)
    proc = ws.start(opts='cachesize=64M')
    fd = os.open(os.path.join(ws.mnt, 'db'), os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        picks = blocks_of(32, size // BLK, 4)
        for b in picks:
            assert os.pread(fd, BLK, b * BLK) == data[b * BLK:(b + 1) * BLK]
        settled(ws.mnt, 'promotions_block', 32)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        before = stats(ws.mnt)
        for b in picks:
            assert os.pread(fd, BLK, b * BLK) == data[b * BLK:(b + 1) * BLK]
        after = stats(ws.mnt)
        assert after['read_miss_bytes'] == before['read_miss_bytes']
        assert after['read_hit_bytes'] - before['read_hit_bytes'] >= 32 * BLK
        assert after['promotions_extent'] == 0
    finally:
        os.close(fd)
    ws.stop(proc)


@pytest.mark.parametrize('mode', ['writearound', 'writethrough'])
def test_random_miss_fills_its_extent(ws, mode):
    """While the store's unused room is at least a sixth of the file, a
    random miss reads its whole extent from the source in the same
    request and promotes every block of it (the warm-up at the slow
    disk's bandwidth); the blocks not read are not counted as accesses.  The rest of the extent is then
    served from the store, a write drops (or updates) only the block it
    touches, and the file's partial last extent is filled to its end."""
    size = 16 * EXT + 3 * BLK + 123
    data = bytearray(make(os.path.join(ws.src, 'db'), size, 20))
    proc = ws.start(opts='cachesize=64M,writemode=' + mode)
    r = Direct(os.path.join(ws.mnt, 'db'), write=True)
    try:
        s0 = stats(ws.mnt)
        b = 5 * (EXT // BLK) + 17               # a block in extent 5
        assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        settled(ws.mnt, 'promotions_block', EXT // BLK)
        s = stats(ws.mnt)
        assert s['fill_extent_reads'] == 1
        assert s['fill_ahead_blocks'] == EXT // BLK - 1
        assert s['promotions_block'] == EXT // BLK
        assert s['promotions_extent'] == 0
        assert s['promotions_reading_source'] == 0
        assert s['cached_extents'] == EXT // BLK      # records: blocks
        assert s['cached_bytes'] == EXT
        # one access counted: the block read, not its neighbours
        assert s['extent_accesses'] - s0['extent_accesses'] == 1
        # every block of extent 5 from the store, none from the source
        m = os.path.join(ws.mnt, 'db')
        before = stats(ws.mnt)
        for x in range(5 * EXT, 6 * EXT, BLK):
            assert read_alone(m, x) == data[x:x + BLK]
        assert read_alone(m, 5 * EXT + 3 * BLK, 8 * BLK) == \
            data[5 * EXT + 3 * BLK:5 * EXT + 11 * BLK]
        after = stats(ws.mnt)
        assert after['read_miss_bytes'] == before['read_miss_bytes']
        assert after['read_hit_bytes'] - before['read_hit_bytes'] == \
            EXT + 8 * BLK
        # extent 4 and 6 were not read ahead
        assert read_alone(m, 4 * EXT + BLK) == data[4 * EXT + BLK:4 * EXT + 2 * BLK]
        assert stats(ws.mnt)['read_miss_bytes'] == \
            after['read_miss_bytes'] + BLK
        settled(ws.mnt, 'promotions_block', 2 * EXT // BLK)
        # a write to one block of extent 5: the other 63 stay served
        new = random.Random(21).randbytes(BLK)
        w = 5 * EXT + 40 * BLK
        r.write(w, new)
        data[w:w + BLK] = new
        s = stats(ws.mnt)
        want = 2 * EXT // BLK - (0 if mode == 'writethrough' else 1)
        assert s['cached_extents'] == want
        before = stats(ws.mnt)
        for x in range(5 * EXT, 6 * EXT, BLK):
            assert read_alone(m, x) == data[x:x + BLK]
        after = stats(ws.mnt)
        miss = 0 if mode == 'writethrough' else BLK
        assert after['read_miss_bytes'] - before['read_miss_bytes'] == miss
        # the last, partial extent: filled to the file's end
        tail = 16 * EXT
        assert read_alone(m, tail + BLK) == data[tail + BLK:tail + 2 * BLK]
        settled(ws.mnt, 'promotions_block', 2 * EXT // BLK + 4 +
                (0 if mode == 'writethrough' else 1))
        before = stats(ws.mnt)
        for x in range(tail, size, BLK):        # the last one: 123 bytes
            assert read_alone(m, x) == data[x:x + BLK]
        after = stats(ws.mnt)
        assert after['read_miss_bytes'] == before['read_miss_bytes']
        assert after['read_hit_bytes'] - before['read_hit_bytes'] == \
            size - tail
    finally:
        r.close()
    with open(os.path.join(ws.src, 'db'), 'rb') as f:
        assert f.read() == data
    ws.stop(proc)


def test_fill_stops(ws):
    """The extent fill stops once the room no insert uses is less than a
    sixth of the file's size: from then on a random miss promotes only
    its block, and a file read once from start to end still promotes
    nothing."""
    size = 128 << 20
    data = make(os.path.join(ws.src, 'big'), size, 22)
    proc = ws.start(opts='cachesize=64M')
    r = Direct(os.path.join(ws.mnt, 'big'))
    try:
        rng = random.Random(23)
        exts = rng.sample(range(size // EXT), size // EXT)
        n = 0
        # random misses in extents not yet cached, while a sixth of the
        # file (21.3 MiB: two of the store's four regions of 16 MiB) is
        # unused
        while (stats(ws.mnt)['regions'] -
               stats(ws.mnt)['regions_used']) * (16 << 20) >= size // 6:
            x = exts[n] * EXT + BLK
            assert r.read(x) == data[x:x + BLK]
            n += 1
            settled(ws.mnt, 'promotions_block', n * EXT // BLK)
            assert n < len(exts)
        s0 = stats(ws.mnt)
        assert s0['fill_extent_reads'] == n
        assert s0['store_filling'] == 1
        x = exts[n] * EXT + BLK
        assert r.read(x) == data[x:x + BLK]
        settled(ws.mnt, 'promotions_block', s0['promotions_block'] + 1)
        s = stats(ws.mnt)
        assert s['fill_extent_reads'] == n
        assert s['promotions_block'] == s0['promotions_block'] + 1
        assert s['cached_bytes'] == s0['cached_bytes'] + BLK
    finally:
        r.close()
    # a file read once from start to end: counted, nothing promoted
    make(os.path.join(ws.src, 'scan'), 8 << 20, 24)
    util.read_cold(os.path.join(ws.mnt, 'scan'))
    util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                  'the queue to drain')
    assert stats(ws.mnt)['promotions_extent'] == 0
    ws.stop(proc)


def test_sequential_reads_promote_extents(ws):
    size = 4 * EXT + 1000
    data = make(os.path.join(ws.src, 'seq'), size, 5)
    proc = ws.start(opts='cachesize=64M')
    m = os.path.join(ws.mnt, 'seq')
    for _ in range(2):
        assert util.read_cold(m) == data
    settled(ws.mnt, 'promotions_extent', 5)
    s = stats(ws.mnt)
    assert s['promotions_block'] == 0
    assert s['cached_extents'] == 5
    assert s['cached_bytes'] == size
    ws.stop(proc)


@pytest.mark.parametrize('mode', ['writearound', 'writethrough'])
def test_write_keeps_other_blocks(ws, mode):
    size = 4 << 20
    data = bytearray(make(os.path.join(ws.src, 'vm'), size, 6))
    proc = ws.start(opts='cachesize=64M,writemode=' + mode)
    s0 = all_regions_used(ws)
    r = Direct(os.path.join(ws.mnt, 'vm'), write=True)
    try:
        picks = blocks_of(16, size // BLK, 7)
        for b in picks:
            r.read(b * BLK)
        settled(ws.mnt, 'promotions_block', 16)
        # one block written, and 100 bytes of another through the page
        # cache (not O_DIRECT): both drop exactly their own blocks
        new = random.Random(8).randbytes(BLK)
        r.write(picks[0] * BLK, new)
        data[picks[0] * BLK:(picks[0] + 1) * BLK] = new
        with open(os.path.join(ws.mnt, 'vm'), 'r+b') as f:
            f.seek(picks[1] * BLK + 7)
            f.write(b'x' * 100)
        data[picks[1] * BLK + 7:picks[1] * BLK + 107] = b'x' * 100
        s = stats(ws.mnt)
        want = 16 if mode == 'writethrough' else 14
        assert s['cached_extents'] - s0['cached_extents'] == want, \
            s['cached_extents']
        before = stats(ws.mnt)
        for b in picks[2:]:
            assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        after = stats(ws.mnt)
        # the other blocks come from the store: no byte from the source
        assert after['read_miss_bytes'] == before['read_miss_bytes']
        assert after['read_hit_bytes'] - before['read_hit_bytes'] == 14 * BLK
        # the written blocks read back the new bytes
        for b in picks[:2]:
            assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        end = stats(ws.mnt)
        if mode == 'writethrough':      # updated in the store
            assert end['read_miss_bytes'] == after['read_miss_bytes']
            assert end['writethrough_updates'] >= 2
    finally:
        r.close()
    with open(os.path.join(ws.src, 'vm'), 'rb') as f:
        assert f.read() == data
    ws.stop(proc)


@pytest.mark.source_changes
def test_change_behind_the_mount_drops_all(ws):
    size = 4 << 20
    src = os.path.join(ws.src, 'vm')
    data = bytearray(make(src, size, 9))
    proc = ws.start(opts='cachesize=64M')
    all_regions_used(ws)
    r = Direct(os.path.join(ws.mnt, 'vm'))
    try:
        picks = blocks_of(8, size // BLK, 10)
        for b in picks:
            r.read(b * BLK)
        settled(ws.mnt, 'promotions_block', 8)
        with open(src, 'r+b') as f:     # one other block, behind it
            f.seek(BLK)
            f.write(b'behind')
        data[BLK:BLK + 6] = b'behind'
        before = stats(ws.mnt)
        for b in picks:
            assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        assert r.read(BLK) == data[BLK:2 * BLK]
        after = stats(ws.mnt)
        assert after['read_hit_bytes'] == before['read_hit_bytes']
    finally:
        r.close()
    ws.stop(proc)


def test_full_store_needs_the_threshold(ws):
    """Once the store is full (an insert would recycle a region), a
    block read once is not promoted (a one-time random reader does not
    pollute it, nor does a scan), and one read again and again is."""
    big = 64 << 20
    make(os.path.join(ws.src, 'fill'), big, 11)
    size = 4 << 20
    data = make(os.path.join(ws.src, 'cold'), size, 12)
    proc = ws.start(opts='cachesize=48M')
    fill = os.path.join(ws.mnt, 'fill')
    util.wait_for(lambda: util.read_cold(fill) is not None and
                  stats(ws.mnt)['store_filling'] == 0,
                  'the store to be full')
    r = Direct(os.path.join(ws.mnt, 'cold'))
    try:
        s0 = stats(ws.mnt)
        picks = blocks_of(16, size // BLK, 13)
        for b in picks:
            assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        s1 = stats(ws.mnt)
        assert s1['promotions_block'] == s0['promotions_block']
        assert s1['not_promoted_below_threshold'] >= \
            s0['not_promoted_below_threshold'] + 16
        # nor does a file read once from start to end (a scan)
        scan = make(os.path.join(ws.src, 'scan'), 8 << 20, 25)
        assert util.read_cold(os.path.join(ws.mnt, 'scan')) == scan
        util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                      'the queue to drain')
        s2 = stats(ws.mnt)
        assert s2['promotions_extent'] == s1['promotions_extent']
        assert s2['fill_extent_reads'] == s1['fill_extent_reads']
        # hot blocks win their admission against the extents read twice
        for _ in range(4):
            for b in picks:
                r.read(b * BLK)
        settled(ws.mnt, 'promotions_block', s0['promotions_block'] + 1)
    finally:
        r.close()
    ws.stop(proc)


def test_write_budget(ws):
    """write_budget=: promotions stop at the day's pace (at most the
    budget), the refusals are counted, and hotfsctl set lifts it."""
    size = 8 << 20
    data = make(os.path.join(ws.src, 'img'), size, 14)
    proc = ws.start(opts='cachesize=64M,write_budget=1M/day')
    r = Direct(os.path.join(ws.mnt, 'img'))
    try:
        picks = blocks_of(768, size // BLK, 15)
        for b in picks[:512]:
            assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                      'the promotions to settle')
        # and their commit (its summary blocks count too)
        util.wait_for(lambda: stats(ws.mnt)['store_uncommitted'] == 0,
                      'the inserts to be committed')
        s = stats(ws.mnt)
        assert s['write_budget_bytes'] == 1 << 20
        assert s['not_promoted_budget'] > 0
        # every admission weighed what its insert and the commit it owed
        # would write: never past the pace (the day's share for the time
        # gone and an hour, at most the budget), at any hour
        secs = min(86400, int(time.time()) % 86400 + 3600)
        assert s['ssd_bytes_written_today'] <= (1 << 20) * secs // 86400
        assert s['ssd_bytes_written_today'] == s['ssd_bytes_written']
        assert s['promotions_block'] < 512
        out = subprocess.run([os.environ['HOTFSCTL_BIN'], 'status', ws.mnt],
                             check=True, stdout=subprocess.PIPE).stdout
        assert b'written today of 1.0 MiB/day' in out, out
        subprocess.run([os.environ['HOTFSCTL_BIN'], 'set', ws.mnt,
                        'write_budget=0'], check=True,
                       stdout=subprocess.DEVNULL)
        for b in picks[512:]:
            r.read(b * BLK)
        settled(ws.mnt, 'promotions_block', s['promotions_block'] + 256)
        assert stats(ws.mnt)['write_budget_bytes'] == 0
    finally:
        r.close()
    ws.stop(proc)


def test_mixed_reads_and_the_end(ws):
    """Reads that cover cached and uncached blocks in any pattern (the
    uncached ones next to each other read from the source as one), and
    the file's last, partial block: the bytes are always the source's."""
    size = 2 << 20
    size += 1234                      # a partial last block
    data = make(os.path.join(ws.src, 'f'), size, 16)
    proc = ws.start(opts='cachesize=64M')
    all_regions_used(ws)
    r = Direct(os.path.join(ws.mnt, 'f'))
    try:
        # some blocks cached, scattered
        for b in blocks_of(64, size // BLK, 18):
            r.read(b * BLK)
        settled(ws.mnt, 'promotions_block', 32)
        assert stats(ws.mnt)['fill_extent_reads'] == 0
        rng = random.Random(17)
        for _ in range(200):
            off = rng.randrange(1, size // BLK) * BLK
            n = rng.choice([BLK, 3 * BLK, 8 * BLK, 16 * BLK])
            assert r.read(off, n) == data[off:off + n], (off, n)
    finally:
        r.close()
    # the tail: a read past the end (the first read of a handle is
    # random), then the partial last block is cached (the file's last
    # extent, whole from its start to the end: by extents)
    tail = size // BLK * BLK
    util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                  'the queue to drain')
    promoted = stats(ws.mnt)['promotions']
    r = Direct(os.path.join(ws.mnt, 'f'))
    try:
        assert r.read(tail - BLK, 4 * BLK) == data[tail - BLK:]
        settled(ws.mnt, 'promotions', promoted + 1)
        before = stats(ws.mnt)
        assert r.read(tail, BLK) == data[tail:]
        assert stats(ws.mnt)['read_hit_bytes'] == \
            before['read_hit_bytes'] + size - tail
    finally:
        r.close()
    ws.stop(proc)


def test_repeats_stay_blocks(ws):
    """fio's zipf reader at queue depth 16 reads its hottest blocks twice
    in a row, often: such a repeat is not a sequential reader, so its
    blocks are counted and promoted as blocks, never as the extent around
    them (which would fill the store with 63 blocks nobody reads)."""
    size = 16 << 20
    data = make(os.path.join(ws.src, 'img'), size, 11)
    proc = ws.start(opts='cachesize=64M')
    s0 = all_regions_used(ws)
    picks = blocks_of(16, size // BLK, 12)
    for _ in range(3):
        r = Direct(os.path.join(ws.mnt, 'img'))
        try:
            for b in picks:
                for _ in range(2):
                    assert r.read(b * BLK) == data[b * BLK:(b + 1) * BLK]
        finally:
            r.close()
    settled(ws.mnt, 'promotions_block', s0['promotions_block'] + 16)
    s = stats(ws.mnt)
    assert s['promotions_extent'] == s0['promotions_extent'], s
    assert s['cached_bytes'] == s0['cached_bytes'] + 16 * BLK, s
    ws.stop(proc)
