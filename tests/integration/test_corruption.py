# SPDX-License-Identifier: GPL-2.0-or-later
"""Corruption of the cache store: random bit flips, zeroed ranges,
truncation (to 0, to the middle of the file, into the middle of a region)
and deletion, applied to every file found in the cachedir (the data file,
the superblock, the lock, the pins), (a) while hotfs is unmounted, then
mounted again, and (b) while it is mounted.  After each injection every
file is read through the mount, with the page cache dropped, then again
with O_DIRECT in chunks of random sizes, and compared with the source byte
for byte: never a wrong byte, never an error, the daemon stays up.

What the stats must count, worked out from the store's format (see
src/store/store_i.h: regions of 16 MiB, records growing up from a region's
start, a chain of summary blocks growing down from its end): the test
parses the summaries before the damage, so it knows which records were
live and which bytes of them changed.

    - a live record whose bytes changed (or that a truncation cut) is
      found when read: checksum_failures grows by at least one per such
      record, and by no more than the records whose checksum table alone
      changed (a table is read only for a partial read of its extent) in
      the second pass, since a failed extent is dropped;
    - (a) a region whose summary chain is damaged (its checksum fails, or
      its last block holds neither a summary nor zeros) or that a
      truncation cut is counted in recovery_dropped_regions;
    - (a) a damaged superblock costs the cache, never the tree: the
      mount comes up with store_state off and a reason naming reset,
      serves the files right, and leaves the cachedir untouched; with
      cache_required it is refused with one line naming reset, a
      non-zero exit and the cachedir untouched; -o reset then mounts
      with the store (in (b) this is seen at the next mount);
    - nothing is counted when nothing that hotfs reads was damaged (the
      lock, the pins, free space).
Damage that cannot be told from a normal state is not asserted on: a
region whose last block was zeroed whole looks free, a data file cut at
a region boundary or deleted looks shorter (recovered_extents shows the
loss).  Each case is printed (pytest -s) with what was found.

HOTFS_CORRUPT_ROUNDS sets how many times the whole matrix (kinds x files
x unmounted/mounted) runs: 1 in CI (about 20 s), 20 in
contrib/ci/soak.sh.  HOTFS_CORRUPT_SEED replays a run; the seed is
printed.  Nothing waits for a fixed time: promotions and commits are
waited for on the .hotfs/stats counters.
"""
import ctypes
import ctypes.util
import fcntl
import json
import mmap
import os
import random
import struct
import subprocess
import time

import pytest

import util

EXT = 256 * 1024
RSIZE = 16 << 20
BLOCK = 4096
SUM_MAGIC = 0x3153525346544f48
SH_SEALED = 1
SE_TOMB = 1
EPB = (BLOCK - 64) // 64
HDR = struct.Struct('<QQQIIII16xQ')         # struct st_sumhdr
ENT = struct.Struct('<QQIIIIQqqQ')          # struct st_sument

ROUNDS = int(os.environ.get('HOTFS_CORRUPT_ROUNDS', '1'))
SEED = int(os.environ.get('HOTFS_CORRUPT_SEED', random.randrange(1 << 30)))
OPTS = 'cachesize=128M,threshold=1'
KINDS = ('flip', 'zero', 'trunc0', 'truncmid', 'truncregion', 'delete')
SIZES = (100, 700, 4096, 4097, 9000, 65536 + 3, 200000, EXT,
         2 * EXT + 17, 3 * EXT + 1234, 5 * EXT)

# struct hotfs_ioc (include/hotfs/ioctl.h): 6 u64 then 2 u32
IOC_FMT = '6Q2I'
IOC_SIZE = struct.calcsize(IOC_FMT)


def ioc(nr):
    return (3 << 30) | (IOC_SIZE << 16) | (ord('H') << 8) | nr


HOTFS_IOC_EVICT, HOTFS_IOC_PIN = ioc(2), ioc(3)


def file_ioctl(path, req):
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = bytearray(struct.pack(IOC_FMT, 0, 0, 0, 0, 0, 0, 0, 0))
        fcntl.ioctl(fd, req, buf)
    finally:
        os.close(fd)


def stats(mnt):
    with open(os.path.join(mnt, '.hotfs', 'stats.json')) as f:
        return json.load(f)


def roundup(x, a):
    return (x + a - 1) // a * a


# --------------------------------------------------------------------------
# The store's data file, as src/store/store_i.h describes it

class Record:
    def __init__(self, region, e):
        dev, ino, extno, ln, off, flags, _, _, _, _ = e
        self.key = (dev, ino, extno)
        self.region = region
        self.len = ln
        base = region * RSIZE + off
        self.data = (base, base + ln)
        nb = (ln + BLOCK - 1) // BLOCK
        t = base + roundup(ln, 8)
        self.tab = (t, t + nb * 8) if nb > 1 else (t, t)


_xxh = ctypes.CDLL(ctypes.util.find_library('xxhash') or 'libxxhash.so.0')
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_xxh.XXH3_64bits_withSeed.restype = ctypes.c_uint64
_xxh.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.c_uint64]


def block_ok(blk):
    """A summary block's checksum holds (store_recover.c block_csum)."""
    h = _xxh.XXH3_64bits(blk[:56], 56)
    want = struct.unpack_from('<Q', blk, 56)[0]
    return _xxh.XXH3_64bits_withSeed(blk[64:], BLOCK - 64, h) == want


def parse_store(data):
    """(live records, {region: [(start, end) of its summary chain's
    blocks]}) of a data file's bytes, replayed as st_recover does
    (oldest region first, later entries replace earlier ones; a chain
    ends at a block that fails its checksum: damage earlier cases left
    in regions not reused since)."""
    regions = []
    for r in range(len(data) // RSIZE):
        rend = (r + 1) * RSIZE
        blocks, ents, seq = [], [], None
        for i in range(RSIZE // BLOCK):
            b0 = rend - (i + 1) * BLOCK
            h = HDR.unpack_from(data, b0)
            magic, _, hseq, index, count, flags, _, _ = h
            if magic != SUM_MAGIC or index != i or \
                    (seq is not None and hseq != seq) or \
                    not block_ok(data[b0:b0 + BLOCK]):
                break
            seq = hseq
            blocks.append((b0, b0 + BLOCK))
            for j in range(min(count, EPB)):
                ents.append(ENT.unpack_from(data, b0 + 64 + j * 64))
            if flags & SH_SEALED or count < EPB:
                break
        if blocks:
            regions.append((seq, r, blocks, ents))
    live = {}
    chains = {}
    for seq, r, blocks, ents in sorted(regions):
        chains[r] = blocks
        for e in ents:
            dev, ino, extno, ln, _, flags = e[:6]
            if flags & SE_TOMB:
                for k in [k for k in live if k[:2] == (dev, ino) and
                          k[2] >= extno and (not ln or k[2] < extno + ln)]:
                    del live[k]
            else:
                live[(dev, ino, extno)] = Record(r, e)
    return list(live.values()), chains


def changed(before, after, lo, hi):
    """Whether bytes [lo, hi) differ (bytes past the end of after are
    gone: changed)."""
    if hi <= lo:
        return False
    if after is None or hi > len(after):
        return True
    return before[lo:hi] != after[lo:hi]


def snapshot(cache):
    """{name: bytes} of the cachedir."""
    out = {}
    for n in sorted(os.listdir(cache)):
        with open(os.path.join(cache, n), 'rb') as f:
            out[n] = f.read()
    return out


# --------------------------------------------------------------------------
# Damage

def pick_offset(rng, name, size, records, chains):
    """An offset in the file, aimed (for the data file) at records, their
    checksum tables and summaries as often as anywhere."""
    if name == 'data' and records:
        what = rng.choice(('record', 'record', 'tab', 'summary', 'any'))
        if what == 'record':
            lo, hi = rng.choice(records).data
            return rng.randrange(lo, hi)
        if what == 'tab':
            tabs = [r.tab for r in records if r.tab[1] > r.tab[0]]
            if tabs:
                lo, hi = rng.choice(tabs)
                return rng.randrange(lo, hi)
        if what == 'summary' and chains:
            lo, hi = rng.choice(rng.choice(list(chains.values())))
            return rng.randrange(lo, hi)
    return rng.randrange(size)


def damage(rng, path, kind, records, chains):
    """Apply one kind of damage to path; returns a description."""
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if kind == 'delete':
        os.unlink(path)
        return 'deleted'
    if kind == 'trunc0':
        os.truncate(path, 0)
        return 'truncated to 0 (was %d)' % size
    if kind == 'truncmid':
        os.truncate(path, size // 2)
        return 'truncated to %d (was %d)' % (size // 2, size)
    if kind == 'truncregion':
        if name == 'data' and records:
            # into a record: the middle of a region that holds data
            lo, hi = rng.choice(records).data
            to = rng.randrange(lo, hi)
        else:
            to = rng.randrange(size) if size else 0
        os.truncate(path, to)
        return 'truncated to %d (was %d)' % (to, size)
    if not size:
        return 'empty: nothing to %s' % kind
    done = []
    with open(path, 'r+b') as f:
        for _ in range(rng.randint(1, 4) if kind == 'flip' else
                       rng.randint(1, 2)):
            off = pick_offset(rng, name, size, records, chains)
            f.seek(off)
            if kind == 'flip':
                bit = rng.randrange(8)
                b = f.read(1)[0] ^ (1 << bit)
                f.seek(off)
                f.write(bytes([b]))
                done.append('bit %d of byte %d' % (bit, off))
            else:
                n = min(rng.choice((1, 17, 512, BLOCK, 65536)), size - off)
                f.write(bytes(n))
                done.append('%d zeros at %d' % (n, off))
        f.flush()
        os.fsync(f.fileno())
    return ', '.join(done)


# --------------------------------------------------------------------------

class Corruptor:
    def __init__(self, ws, rng):
        self.ws = ws
        self.rng = rng
        self.proc = None
        self.mnt = None
        self.nmount = 0
        self.names = []
        self.next = 0           # extents the files have
        self.table = []         # one line per case
        self.totals = {}
        self.dropped = self.last_dropped = 0    # by the last two mounts

    def setup(self):
        for i, size in enumerate(SIZES):
            name = 'f%02d' % i
            with open(os.path.join(self.ws.src, name), 'wb') as f:
                f.write(self.rng.randbytes(size))
            self.names.append(name)
            self.next += (size + EXT - 1) // EXT
        # written only to make the store commit (see sync_store)
        with open(os.path.join(self.ws.src, 'poke'), 'wb') as f:
            f.write(self.rng.randbytes(5000))

    # -- mounting ---------------------------------------------------------
    def start(self, opts=OPTS, refused=False):
        """Mount on a new mount point; with refused, expect hotfs to mount
        without the store (state off, the reason naming reset, the files
        served right, the cachedir untouched), to refuse the cachedir
        with cache_required (one line naming reset, the cachedir
        untouched), and then mount with -o reset."""
        self.nmount += 1
        self.mnt = os.path.join(self.ws.root, 'm%d' % self.nmount)
        os.mkdir(self.mnt)
        if refused:
            before = snapshot(self.ws.cache)
            proc = self.ws.start(mnt=self.mnt, opts=opts)
            st = stats(self.mnt)
            assert st['store_state'] == 'off' and \
                'reset' in st['store_reason'], st
            for n in self.names:
                with open(os.path.join(self.ws.src, n), 'rb') as f:
                    want = f.read()
                assert util.read_cold(os.path.join(self.mnt, n)) == want, \
                    'mounted without the store: %s, seed %d' % (n, SEED)
            self.ws.stop(proc)
            assert snapshot(self.ws.cache) == before, \
                'a mount without the store changed the cachedir, ' \
                'seed %d' % SEED
            proc = self.ws.start(mnt=self.mnt, opts=opts + ',cache_required',
                                 wait=False)
            try:
                rc = proc.wait(timeout=util.TIMEOUT)
            except subprocess.TimeoutExpired:
                pytest.fail('hotfs did not refuse the damaged cachedir '
                            'with cache_required, seed %d' % SEED)
            lines = self.ws.log_text(proc).splitlines()[1:]
            assert rc != 0 and not util.is_mounted(self.mnt)
            assert len(lines) == 1 and 'reset' in lines[0], lines
            assert snapshot(self.ws.cache) == before, \
                'a refused mount changed the cachedir, seed %d' % SEED
            return self.start(opts + ',reset')
        self.proc = self.ws.start(mnt=self.mnt, opts=opts)
        st = stats(self.mnt)
        self.last_dropped, self.dropped = self.dropped, \
            st['recovery_dropped_regions']
        return st

    def stop(self):
        assert self.proc.poll() is None, 'hotfs died, seed %d' % SEED
        self.ws.stop(self.proc)
        self.proc = None

    # -- the cache's state -------------------------------------------------
    def warm(self):
        """Every extent of the files cached, one file pinned (so that the
        cachedir has a pins file too)."""
        for n in self.names:
            util.read_cold(os.path.join(self.mnt, n))
        file_ioctl(os.path.join(self.mnt, self.names[0]), HOTFS_IOC_PIN)

        def settled():
            s = stats(self.mnt)
            return s['promotion_queue_depth'] == 0 and \
                s['cached_extents'] >= self.next
        util.wait_for(settled, 'every extent cached')

    def evict_all(self):
        """Drop every file's extents (tombstones), so that damage a case
        left unread (a checksum table only a partial read looks at) is
        not found by a later case; warm() then caches fresh copies."""
        for n in self.names + ['poke']:
            file_ioctl(os.path.join(self.mnt, n), HOTFS_IOC_EVICT)

    def sync_store(self):
        """Wait until what is cached is in the on-disk summaries: evict the
        poke file's one extent (a tombstone, so a commit follows within
        a second) and wait for the commit."""
        p = os.path.join(self.mnt, 'poke')
        util.read_cold(p)
        util.wait_for(lambda: stats(self.mnt)['cached_extents'] >
                      self.next, 'the poke file cached')
        c0 = stats(self.mnt)['store_commits']
        file_ioctl(p, HOTFS_IOC_EVICT)
        util.wait_for(lambda: stats(self.mnt)['store_commits'] > c0,
                      'a commit of the store', timeout=3 * util.TIMEOUT)

    # -- reading -----------------------------------------------------------
    def read_all(self, direct):
        """Every file through the mount, compared with the source."""
        buf = mmap.mmap(-1, 1 << 20)
        for n in self.names + ['poke']:
            with open(os.path.join(self.ws.src, n), 'rb') as f:
                want = f.read()
            m = os.path.join(self.mnt, n)
            try:
                if not direct:
                    got = util.read_cold(m)
                else:
                    chunks = []
                    bs = self.rng.choice((BLOCK, 16 * BLOCK, EXT, 1 << 20))
                    fd = os.open(m, os.O_RDONLY | os.O_DIRECT)
                    try:
                        while True:
                            k = os.readv(fd, [memoryview(buf)[:bs]])
                            chunks.append(buf[:k])
                            if k < bs:
                                break
                    finally:
                        os.close(fd)
                    got = b''.join(chunks)
            except OSError as e:
                pytest.fail('%s: %s through the mount (%s), seed %d'
                            % (n, e, 'O_DIRECT' if direct else 'cached',
                               SEED))
            if got != want:
                diff = next((i for i in range(min(len(got), len(want)))
                             if got[i] != want[i]), min(len(got), len(want)))
                pytest.fail('%s: wrong bytes from %d (%d vs %d bytes), '
                            'seed %d' % (n, diff, len(got), len(want), SEED))
        buf.close()
        assert self.proc.poll() is None, 'hotfs died, seed %d' % SEED

    def two_passes(self):
        """Pass 1 buffered (each file's page cache dropped by read_cold:
        every byte from the daemon), pass 2 O_DIRECT; the checksum
        failures each pass counted."""
        c0 = stats(self.mnt)['checksum_failures']
        self.read_all(direct=False)
        c1 = stats(self.mnt)['checksum_failures']
        # the failed extents are promoted again at their next read
        self.read_all(direct=True)
        c2 = stats(self.mnt)['checksum_failures']
        return c1 - c0, c2 - c1

    # -- one case ------------------------------------------------------------
    def case(self, phase, kind, target):
        path = os.path.join(self.ws.cache, target)
        if not os.path.exists(path):
            return
        if phase == 'unmounted':
            self.stop()         # commits
        else:
            # whatever the target: the last case's evictions may be
            # committed and its fresh copies not yet (a commit follows a
            # tombstone, not a promotion), which would leave the store's
            # summaries holding nothing
            self.sync_store()
        before = snapshot(self.ws.cache)
        records, chains = parse_store(before.get('data', b''))
        assert records, 'nothing cached in the store before the damage ' \
            '(%s, %s, %s), seed %d' % (phase, kind, target, SEED)
        what = damage(self.rng, path, kind, records, chains)
        after = snapshot(self.ws.cache)
        old, new = before[target], after.get(target)
        touched = old != new
        exp = {'csum': 0, 'tabonly': 0, 'dropped': False, 'refused': False}
        if target == 'data' and phase == 'mounted':
            # the daemon's descriptor outlives a deletion of the name
            new = new if new is not None else old
            for r in records:
                if changed(old, new, *r.data):
                    exp['csum'] += 1
                elif changed(old, new, *r.tab):
                    exp['tabonly'] += 1
        elif target == 'data':
            size = len(new) if new is not None else 0
            for reg, blocks in chains.items():
                inside = (reg + 1) * RSIZE <= size
                bad = [b for b in blocks if changed(old, new, *b)]
                if not inside or not bad:
                    continue
                # a damaged chain block whose magic survived fails its
                # checksum; a last block that lost its magic counts if
                # it is not all zeros (a free region's)
                for lo, hi in bad:
                    magic = struct.unpack_from('<Q', new, lo)[0]
                    if magic == SUM_MAGIC or \
                            (lo == blocks[0][0] and new[lo:hi].count(0)
                             != hi - lo):
                        exp['dropped'] = True
            nreg = max(chains) + 1 if chains else 0
            if size % RSIZE and size < nreg * RSIZE:
                exp['dropped'] = True       # a cut region
            for r in records:
                blocks = chains[r.region]
                if (r.region + 1) * RSIZE > size or \
                        any(changed(old, new, *b) for b in blocks):
                    continue                # the region is not recovered
                if changed(old, new, *r.data):
                    exp['csum'] += 1
                elif changed(old, new, *r.tab):
                    exp['tabonly'] += 1
        elif target == 'superblock':
            exp['refused'] = touched
        if phase == 'unmounted':
            st = self.start(refused=exp['refused'])
            dropped = st['recovery_dropped_regions']
            recovered = st['recovered_extents']
        else:
            dropped = recovered = None
        p1, p2 = self.two_passes()
        line = '%-9s %-11s %-10s %-5s csum %d+%d (>= %d, tab-only %d) ' \
            'dropped %s recovered %s%s: %s' % (
                phase, kind, target, 'hit' if touched else 'miss', p1, p2,
                exp['csum'], exp['tabonly'], dropped, recovered,
                ' REFUSED' if exp['refused'] else '', what)
        self.table.append(line)
        ctx = '%s, seed %d' % (line, SEED)
        assert p1 >= exp['csum'], 'damaged records not all found: ' + ctx
        assert p2 <= exp['tabonly'], 'failed extents found again: ' + ctx
        if target != 'data':
            assert p1 + p2 == 0, 'checksum failures from nothing: ' + ctx
        if dropped is not None:
            if exp['dropped']:
                assert dropped >= 1, 'damaged region not counted: ' + ctx
            if target != 'data':
                # damaged regions not reused since are dropped again
                assert dropped <= self.last_dropped, \
                    'regions dropped for nothing: ' + ctx
        t = self.totals.setdefault((phase, kind, target), [0, 0, 0, 0, 0])
        t[0] += 1
        t[1] += touched
        t[2] += exp['csum'] + (1 if exp['refused'] else 0) + \
            (1 if exp['dropped'] else 0)
        t[3] += p1 + p2 + (1 if exp['refused'] else 0) + (dropped or 0)
        t[4] += exp['tabonly']
        if phase == 'mounted':
            # what happened while mounted is also survived at the next
            # mount (a damaged superblock is found then)
            self.stop()
            sb = after.get('superblock')
            self.start(refused=target == 'superblock' and
                       (sb is None or sb != before['superblock']))
            self.two_passes()
        self.evict_all()
        self.warm()


def test_corruption(ws):
    rng = random.Random(SEED)
    print('HOTFS_CORRUPT_SEED=%d HOTFS_CORRUPT_ROUNDS=%d' % (SEED, ROUNDS))
    c = Corruptor(ws, rng)
    c.setup()
    c.start()
    c.warm()
    t0 = time.monotonic()
    for _ in range(ROUNDS):
        for phase in ('unmounted', 'mounted'):
            for kind in KINDS:
                for target in sorted(os.listdir(ws.cache)):
                    c.case(phase, kind, target)
    c.stop()
    print('\n'.join(c.table))
    print('%-9s %-11s %-10s %6s %6s %9s %8s %8s' % (
        'phase', 'kind', 'file', 'cases', 'hit', 'expected', 'counted',
        'tab-only'))
    for k in sorted(c.totals):
        print('%-9s %-11s %-10s %6d %6d %9d %8d %8d' % (k + tuple(
            c.totals[k])))
    print('%d cases in %.1f s, seed %d' % (len(c.table),
                                          time.monotonic() - t0, SEED))
    assert len(c.table) >= 2 * len(KINDS) * 3
