# SPDX-License-Identifier: GPL-2.0-or-later
"""Power loss under writemode=writeback, in the manner of dm-log-writes
and CrashMonkey: the real daemon runs a workload with its writes and
flushes recorded (tests/crash/logwrites.so, LD_PRELOAD), then the states a
power loss could leave are built from copies taken before, and each is
mounted by the real daemon and checked.

A kill -9 (test_writeback.py) leaves the kernel's page cache, so every
write that returned is kept; a power loss keeps only what reached the
device.  Here a state is a prefix of the recorded calls, cut at a
durability point or between two, in which the writes to each file after
that file's last completed fsync/fdatasync before the cut (and not made
through an O_SYNC/O_DSYNC descriptor) may each be kept, dropped, or torn
(only some of their 512-byte sectors, or of their 4 KiB pages, kept).
Files modelled: the writeback log (CACHEDIR/wlog) and the source file.
The cache store is left out of the model: the workload promotes nothing
(threshold=16, no reads), and each state's cachedir holds the store's
files as they were before the workload.  A truncate of a modelled file is
applied in order; a rename, an unlink or an O_TRUNC open of one fails
the test (the model does not cover them, and the daemon makes none here).
The source's mark (SOURCE/.hotfs-dirty, without which a dirty log is
not replayed) is in a state from the call that renames it into place to
the one that removes it; the daemon sets it, durably, before the first
write it acknowledges.

The workload: one source file of 2 MiB, random writes through the mount
(4 KiB aligned, multi-block, and unaligned ones at any 8-byte offset with
any length in 8 bytes), fsync or fdatasync at random, some writes through
an O_SYNC descriptor; writeback_delay=0, so that the flusher writes the
source, fdatasyncs it and moves the log's tail during the workload.  Each
8-byte word of a write holds a mix of (write id, word number): a word read
back names the write that put it there and its place, or nothing.  A
write is acknowledged once an fsync issued after it (or its own O_SYNC
write) returned; the trace's length then is where that happened.

Checked in each state, through the mount: (a) every word of a write
acknowledged before the cut holds that write or a later one, never an
older one; (b) every word holds the initial bytes or a write's to that
very place; (c) within each 4 KiB block, a write is all or nothing: if
one of its words is there, so is each of its others in that block (or a
later write's); then after a clean unmount the source is byte for byte
what the mount showed.

The cuts: a third after durability points, a third right after writes
of the log's header (where the tail moves past records, and an open
vouches for the records it replayed: the header may reach the device
while the writes since the last sync do not), the rest anywhere.

HOTFS_POWERLOSS_STATES sets the number of states (default 150, the CI run;
contrib/ci/soak.sh uses 1000), HOTFS_POWERLOSS_WRITES the workload's
writes (default 300), HOTFS_POWERLOSS_SEED replays a run's workload and
choices (the daemon's timing, so its trace, may differ from run to run).
"""
import os
import random
import shutil
import struct
import time

import pytest

import util

STATES = int(os.environ.get('HOTFS_POWERLOSS_STATES', '100'))
WRITES = int(os.environ.get('HOTFS_POWERLOSS_WRITES', '300'))
SEED = int(os.environ.get('HOTFS_POWERLOSS_SEED', random.randrange(1 << 30)))

SIZE = 2 << 20
BLOCK = 4096
SECTOR = 512
M64 = (1 << 64) - 1

# tests/crash/logwrites.c
LW_HDR = struct.Struct('<IHHHHIqQQ')
LW_MAGIC = 0x52544c50
LW_WRITE, LW_FSYNC, LW_FDATASYNC, LW_SYNC_RANGE, LW_SYNCFS = 1, 2, 3, 4, 5
LW_TRUNCATE, LW_FALLOCATE, LW_RENAME, LW_UNLINK, LW_OPEN = 6, 7, 8, 9, 10
LWF_SYNC = 1
DURABLE = (LW_FSYNC, LW_FDATASYNC)


def mix(x):
    """splitmix64's finalizer: a bijection of 64-bit numbers."""
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def pattern(w, off, length):
    """Write w's bytes of [off, off + length) (8-byte aligned)."""
    i0, n = off // 8, length // 8
    return struct.pack('<%dQ' % n,
                       *[mix((w << 32) | i) for i in range(i0, i0 + n)])


def logwrites():
    p = os.environ.get('HOTFS_LOGWRITES', '')
    if not p or not os.path.exists(p):
        pytest.fail('HOTFS_LOGWRITES=%r is not the built logwrites.so (run '
                    'through "meson test --suite integration")' % p)
    return p


class Event:
    __slots__ = ('type', 'path', 'path2', 'flags', 'ret', 'off', 'data',
                 'end')


def parse_trace(path):
    """The recorded calls, in order; end: the trace's length after each."""
    with open(path, 'rb') as f:
        buf = f.read()
    out, pos = [], 0
    while pos < len(buf):
        (magic, typ, plen, p2len, _, flags, ret, off,
         length) = LW_HDR.unpack_from(buf, pos)
        assert magic == LW_MAGIC, 'trace damaged at %d' % pos
        pos += LW_HDR.size
        e = Event()
        e.type, e.flags, e.ret, e.off = typ, flags, ret, off
        e.path = buf[pos:pos + plen].decode()
        pos += plen
        e.path2 = buf[pos:pos + p2len].decode() if p2len else None
        pos += p2len
        e.data = None
        if typ == LW_WRITE:
            e.data = buf[pos:pos + length]
            pos += length
        e.end = pos
        out.append(e)
    assert pos == len(buf)
    return out


class Image:
    """A file's bytes as 4 KiB pages (a sparse file: absent = zeros)."""

    def __init__(self, pages=None, size=0):
        self.pages = dict(pages or {})
        self.size = size

    @classmethod
    def read(cls, path):
        img = cls(size=os.path.getsize(path))
        fd = os.open(path, os.O_RDONLY)
        try:
            pos = 0
            while pos < img.size:
                try:
                    pos = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError:
                    break
                end = os.lseek(fd, pos, os.SEEK_HOLE)
                pos -= pos % BLOCK
                while pos < end:
                    img.pages[pos // BLOCK] = bytearray(
                        os.pread(fd, BLOCK, pos).ljust(BLOCK, b'\0'))
                    pos += BLOCK
        finally:
            os.close(fd)
        return img

    def copy(self):
        return Image({k: bytearray(v) for k, v in self.pages.items()},
                     self.size)

    def write(self, off, data, units=None):
        """data at off; units: the (start, end) pieces of it to keep (None:
        all)."""
        self.size = max(self.size, off + len(data))
        for a, b in [(0, len(data))] if units is None else units:
            pos = off + a
            while pos < off + b:
                pg = pos // BLOCK
                n = min(off + b, (pg + 1) * BLOCK) - pos
                page = self.pages.get(pg)
                if page is None:
                    page = self.pages[pg] = bytearray(BLOCK)
                page[pos - pg * BLOCK:pos - pg * BLOCK + n] = \
                    data[pos - off:pos - off + n]
                pos += n

    def truncate(self, size):
        for pg in [p for p in self.pages if p * BLOCK >= size]:
            del self.pages[pg]
        if size % BLOCK and size // BLOCK in self.pages:
            page = self.pages[size // BLOCK]
            page[size % BLOCK:] = bytes(BLOCK - size % BLOCK)
        self.size = size

    def save(self, path, fd=None):
        """Into path (created), or over the file open at fd."""
        own = fd is None
        if own:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, 0)
            os.ftruncate(fd, self.size)
            for pg, page in self.pages.items():
                n = min(BLOCK, self.size - pg * BLOCK)
                if n > 0:
                    os.pwrite(fd, bytes(page[:n]), pg * BLOCK)
        finally:
            if own:
                os.close(fd)

    def bytes(self):
        out = bytearray(self.size)
        for pg, page in self.pages.items():
            n = min(BLOCK, self.size - pg * BLOCK)
            if n > 0:
                out[pg * BLOCK:pg * BLOCK + n] = page[:n]
        return bytes(out)


def units_of(off, length, grain, rng):
    """A random strict subset of a write's grain-aligned pieces (none of
    a write within one grain: torn, it is lost)."""
    cuts = list(range(off - off % grain + grain, off + length, grain))
    edges = [off] + cuts + [off + length]
    pieces = [(a - off, b - off) for a, b in zip(edges, edges[1:])]
    keep = rng.randrange(len(pieces))
    return sorted(rng.sample(pieces, keep))


def build_state(events, files, cut, rng, keep_all=False):
    """Each modelled file's image at a power loss after events[:cut]; the
    writes that may have been lost or torn are chosen with rng (keep_all:
    all kept).  Returns ({path: Image}, counts of kept/dropped/torn
    writes)."""
    last_sync = {p: 0 for p in files}
    for i in range(cut):
        e = events[i]
        if e.path in files and e.type in DURABLE and e.ret == 0:
            last_sync[e.path] = i + 1
        elif e.type == LW_SYNCFS and e.ret == 0:
            for p in files:
                last_sync[p] = i + 1
    imgs = {p: img.copy() for p, img in files.items()}
    n = {'kept': 0, 'dropped': 0, 'torn': 0}
    for i in range(cut):
        e = events[i]
        if e.path not in files:
            continue
        img = imgs[e.path]
        if e.type == LW_WRITE:
            if i < last_sync[e.path] or e.flags & LWF_SYNC:
                img.write(e.off, e.data)
                continue
            r = 0 if keep_all else rng.random()
            if r < 0.4:
                img.write(e.off, e.data)
                n['kept'] += 1
            elif r < 0.7:
                n['dropped'] += 1
            else:
                grain = rng.choice([SECTOR, BLOCK])
                img.write(e.off, e.data,
                          units_of(e.off, len(e.data), grain, rng))
                n['torn'] += 1
        elif e.type == LW_TRUNCATE and e.ret == 0:
            img.truncate(e.off)
    return imgs, n


class Workload:
    """The writes made through the mount, and when each was acknowledged
    (the trace's length once the fsync after it returned; None: never)."""

    def __init__(self, rng, waits=True):
        self.rng = rng
        self.waits = waits
        self.writes = [(0, SIZE)]       # id -> (off, len); 0: the initial
        self.acked = [None]

    def choose(self):
        rng = self.rng
        r = rng.random()
        if r < 0.6:
            return rng.randrange(SIZE // BLOCK) * BLOCK, BLOCK
        if r < 0.8:
            n = rng.randint(2, 16)
            return rng.randrange(SIZE // BLOCK - n + 1) * BLOCK, n * BLOCK
        off = rng.randrange(SIZE // 8) * 8
        return off, min(rng.randint(1, 2560) * 8, SIZE - off)

    def run(self, mnt, trace):
        """The writes through mnt/f; now and then, it waits for a round of
        the flusher (it runs every 100 ms: else the writes would all be
        made before its first)."""
        rng = self.rng
        path = os.path.join(mnt, 'f')
        fd = os.open(path, os.O_WRONLY)
        sfd = os.open(path, os.O_WRONLY | os.O_SYNC)
        unacked = []
        try:
            for _ in range(WRITES):
                w = len(self.writes)
                off, length = self.choose()
                osync = rng.random() < 0.05
                assert os.pwrite(sfd if osync else fd,
                                 pattern(w, off, length), off) == length
                self.writes.append((off, length))
                self.acked.append(None)
                if osync:
                    self.acked[w] = os.path.getsize(trace)
                else:
                    unacked.append(w)
                if rng.random() < 1 / 20 and self.waits:
                    had = flushed(mnt)[0]
                    util.wait_for(lambda: flushed(mnt)[0] > had or
                                  not flushed(mnt)[1], 'a flush')
                if rng.random() < 1 / 8:
                    (os.fsync if rng.random() < 0.5 else os.fdatasync)(fd)
                    pos = os.path.getsize(trace)
                    for v in unacked:
                        self.acked[v] = pos
                    unacked = []
        finally:
            os.close(fd)
            os.close(sfd)

    def final(self):
        out = bytearray(pattern(0, 0, SIZE))
        for w, (off, length) in enumerate(self.writes[1:], 1):
            out[off:off + length] = pattern(w, off, length)
        return bytes(out)


def flushed(mnt):
    """The bytes flushed so far, and the bytes dirty now."""
    s = util.hotfs_stats(mnt)
    return int(s['flushed_bytes']), int(s['dirty_bytes'])


def owners(data):
    """Per 8-byte word: the id of the write whose bytes it holds there
    (0: the initial), or -1: bytes no write put at that place."""
    out = []
    for i, v in enumerate(struct.unpack('<%dQ' % (len(data) // 8), data)):
        x = UNMIX.get(v)
        out.append(x >> 32 if x is not None and (x & 0xffffffff) == i
                   else -1)
    return out


UNMIX = {}


def check(ow, wl, cut_pos):
    """The violations of (a), (b), (c) in one state: a list of lines."""
    bad = []
    nb = ow.count(-1)
    if nb:
        i = ow.index(-1)
        bad.append('(b) %d words hold bytes never written there (first at '
                   'byte %d)' % (nb, i * 8))
    for w, (off, length) in enumerate(wl.writes[1:], 1):
        a, b = off // 8, (off + length) // 8
        sl = ow[a:b]
        ack = wl.acked[w]
        if ack is not None and ack <= cut_pos and min(sl) < w:
            i = a + next(j for j, x in enumerate(sl) if x < w)
            bad.append('(a) write %d (acknowledged at trace %d) lost: byte '
                       '%d holds write %d' % (w, ack, i * 8, ow[i]))
        if w not in sl:
            continue
        pos = off
        while pos < off + length:
            end = min(off + length, (pos // BLOCK + 1) * BLOCK)
            piece = ow[pos // 8:end // 8]
            if w in piece and min(piece) < w:
                bad.append('(c) write %d half there in block %d: %r'
                           % (w, pos // BLOCK, sorted(set(piece))[:6]))
            pos = end
    return bad


def cut_points(events, files, n, rng, log):
    """n cuts: after durability points of the modelled files (a third,
    or all of them if fewer), right after writes of the log's header (a
    third: where the tail moves past records and an open vouches for
    them; the header may be kept while the writes since the last sync
    are not), the rest anywhere."""
    sync = [i + 1 for i, e in enumerate(events)
            if e.path in files and e.type in DURABLE]
    hdr = [i + 1 for i, e in enumerate(events)
           if e.path == log and e.type == LW_WRITE and e.off < 2 * BLOCK]
    k = min(len(sync), n // 3)
    h = min(len(hdr), n // 3)
    cuts = rng.sample(sync, k) + rng.sample(hdr, h)
    cuts += [rng.randrange(len(events) + 1) for _ in range(n - k - h)]
    return sorted(cuts)


# the source's mark, set while the log holds dirty data (man hotfs: a
# log left dirty for a source with no mark is not replayed over it)
MARK = '.hotfs-dirty'


def mark_span(events, rsrc_dir):
    """The cuts after which the mark is on the source: after its rename
    into place, up to its removal (at the clean unmount)."""
    rmark = os.path.join(rsrc_dir, MARK)
    on = next((i + 1 for i, e in enumerate(events)
               if e.type == LW_RENAME and e.path2 == rmark), None)
    off = next((i + 1 for i, e in enumerate(events)
                if e.type == LW_UNLINK and e.path == rmark), len(events) + 1)
    assert on is not None, 'the mark was never set'
    return on, off


def mount_and_check(ws, so, init, state_c, imgs, wl, cut_pos, mark=None):
    """The state imgs ({path: Image} of the source file and the log) and
    the source's mark (its bytes, or None: none) in place, mounted, read
    through the mount, checked, unmounted; the violations found (a list
    of lines)."""
    src = os.path.join(ws.src, 'f')
    if mark is None:
        util.call(os.unlink, os.path.join(ws.src, MARK))
    else:
        with open(os.path.join(ws.src, MARK), 'wb') as f:
            f.write(mark)
    util.rmtree(state_c)
    shutil.copytree(init, state_c, symlinks=True)
    imgs[os.path.realpath(os.path.join(ws.cache, 'wlog'))].save(
        os.path.join(state_c, 'wlog'))
    fd = os.open(src, os.O_WRONLY)     # in place: the log names its inode
    try:
        imgs[os.path.realpath(src)].save(None, fd)
    finally:
        os.close(fd)
    p = ws.start(opts=so + ',writeback_delay=3600', cachedir=state_c,
                 wait=False)
    try:
        util.wait_for_mount(p, ws.mnt)
    except BaseException:
        util.cleanup_mount(p, ws.mnt)
        return ['no mount: %s' % ws.log_text(p)[-400:]]
    try:
        with open(os.path.join(ws.mnt, 'f'), 'rb') as f:
            shown = f.read()
    finally:
        ws.stop(p)
    if len(shown) != SIZE:
        bad = ['size %d' % len(shown)]
    else:
        bad = check(owners(shown), wl, cut_pos)
    with open(src, 'rb') as f:
        if f.read() != shown:
            bad.append('the source after the unmount is not what the '
                       'mount showed')
    return bad


def control(ws, so, init, state_c, events, files, wl, mark):
    """The check must see a loss: at the first fdatasync of the log after
    which an acknowledged write is not on the source yet, the state with
    every write kept but the log as it was before the workload (its
    records lost) must show that write lost."""
    rwlog = os.path.realpath(os.path.join(ws.cache, 'wlog'))
    rsrc = os.path.realpath(os.path.join(ws.src, 'f'))
    for i, e in enumerate(events):
        if e.path != rwlog or e.type not in DURABLE:
            continue
        imgs, _ = build_state(events, files, i + 1, None, keep_all=True)
        bad = check(owners(imgs[rsrc].bytes()), wl, e.end)
        if any(b.startswith('(a)') for b in bad):
            imgs[rwlog] = files[rwlog]
            seen = mount_and_check(ws, so, init, state_c, imgs, wl, e.end,
                                   mark)
            assert any(b.startswith('(a)') for b in seen), seen
            return i + 1
    pytest.fail('no state of the trace has an acknowledged write that is '
                'not on the source yet: the workload tests nothing')


# the log's size, the options of the traced mount, and whether the
# workload waits for the flusher now and then: the default log, which the
# workload never fills; and the smallest, with the flusher holding the
# data until a writer finds the log full: the workload (2 MiB of live
# data at most, 4 MiB written) fills it over and over, so writers run
# the cleaner (its copies must be durable before the tail passes the
# records they come from), then wait for the flusher's flat-out rounds
LOGS = {'default': ('256M', ',writeback_delay=0', True),
        'cleaned': ('1M', ',writeback_delay=3600,dirty_high=99,'
                    'dirty_low=99', False)}


@pytest.mark.slow
@pytest.mark.parametrize('log', sorted(LOGS))
def test_powerloss_states(ws, monkeypatch, log):
    print('HOTFS_POWERLOSS_SEED=%d STATES=%d WRITES=%d'
          % (SEED, STATES, WRITES))
    t0 = time.monotonic()
    rng = random.Random(SEED)
    so = 'writemode=writeback,threshold=16,writeback_log=' + LOGS[log][0]
    src = os.path.join(ws.src, 'f')
    with open(src, 'wb') as f:
        f.write(pattern(0, 0, SIZE))
    # a first mount makes the cachedir and its log; its clean unmount
    # leaves the images every state starts from
    ws.stop(ws.start(opts=so))
    init = os.path.join(ws.root, 'cache.init')
    shutil.copytree(ws.cache, init, symlinks=True,
                    ignore=shutil.ignore_patterns('wlog'))
    wlog = os.path.join(ws.cache, 'wlog')
    rsrc, rwlog = os.path.realpath(src), os.path.realpath(wlog)
    files = {rsrc: Image.read(src), rwlog: Image.read(wlog)}

    trace = os.path.join(ws.root, 'trace')
    monkeypatch.setenv('LOGWRITES_TRACE', trace)
    monkeypatch.setenv('LOGWRITES_DIRS', '%s:%s' % (
        os.path.realpath(ws.src), os.path.realpath(ws.cache)))
    monkeypatch.setenv('LD_PRELOAD', logwrites())
    # an ASan build's runtime is then not first in the list of libraries
    # (the recorder's calls go on to its interceptors all the same)
    asan = os.environ.get('ASAN_OPTIONS')
    monkeypatch.setenv('ASAN_OPTIONS', (asan + ':' if asan else '') +
                       'verify_asan_link_order=0')
    proc = ws.start(opts=so + LOGS[log][1])
    for k in ('LD_PRELOAD', 'LOGWRITES_TRACE', 'LOGWRITES_DIRS'):
        monkeypatch.delenv(k)
    if asan is None:
        monkeypatch.delenv('ASAN_OPTIONS')
    else:
        monkeypatch.setenv('ASAN_OPTIONS', asan)
    wl = Workload(rng, waits=LOGS[log][2])
    wl.run(ws.mnt, trace)
    with open(os.path.join(ws.src, MARK), 'rb') as f:
        mark = f.read()
    workload_end = os.path.getsize(trace)
    cleaned = int(util.hotfs_stats(ws.mnt)['wlog_cleaned_bytes'])
    print('the cleaner moved %d bytes' % cleaned)
    assert log != 'cleaned' or cleaned > 0, 'the cleaner never ran'
    ws.stop(proc)
    final = wl.final()
    with open(src, 'rb') as f:
        assert f.read() == final, 'the clean unmount lost writes'

    events = parse_trace(trace)
    for e in events:
        assert not (e.type in (LW_RENAME, LW_UNLINK) and
                    (e.path in files or e.path2 in files)), \
            'a rename or unlink of a modelled file: not in the model'
        assert not (e.type == LW_OPEN and e.flags & os.O_TRUNC and
                    e.path in files), \
            'an open with O_TRUNC of a modelled file: not in the model'
    # the premise: the flusher wrote, synced the source and moved the
    # log's tail while the workload ran
    during = [e for e in events if e.end <= workload_end]
    src_w = sum(1 for e in during if e.path == rsrc and e.type == LW_WRITE)
    src_s = sum(1 for e in during if e.path == rsrc and e.type in DURABLE)
    hdr = sum(1 for e in during if e.path == rwlog and
              e.type == LW_WRITE and e.off < 2 * BLOCK)
    log_s = sum(1 for e in during if e.path == rwlog and e.type in DURABLE)
    other = sum(1 for e in events if e.path not in files)
    print('trace: %d calls; during the workload: %d source writes, %d '
          'source syncs, %d log header writes, %d log syncs; %d calls on '
          'other files (not modelled)' % (len(events), src_w, src_s, hdr,
                                          log_s, other))
    assert src_w and src_s and hdr > 1 and log_s

    for w, (off, length) in enumerate(wl.writes):
        for i in range(off // 8, (off + length) // 8):
            UNMIX[mix((w << 32) | i)] = (w << 32) | i

    state_c = os.path.join(ws.root, 'cache.state')
    print('control: the log lost after trace call %d: the loss is seen'
          % control(ws, so, init, state_c, events, files, wl, mark))
    mark_on, mark_off = mark_span(events, os.path.realpath(ws.src))
    totals = {'kept': 0, 'dropped': 0, 'torn': 0}
    violations = []
    for s, cut in enumerate(cut_points(events, files, STATES, rng, rwlog)):
        imgs, n = build_state(events, files, cut, rng)
        for k in totals:
            totals[k] += n[k]
        cut_pos = events[cut - 1].end if cut else 0
        bad = mount_and_check(ws, so, init, state_c, imgs, wl, cut_pos,
                              mark if mark_on <= cut < mark_off else None)
        violations += ['state %d (cut %d of %d): %s' % (s, cut, len(events),
                                                         b) for b in bad]
    util.rmtree(state_c)
    print('states: %d, writes after the last sync kept %d, dropped %d, '
          'torn %d; violations: %d; %.0f s' % (
              STATES, totals['kept'], totals['dropped'], totals['torn'],
              len(violations), time.monotonic() - t0))
    for v in violations[:20]:
        print(v)
    assert not violations, violations[:20]
