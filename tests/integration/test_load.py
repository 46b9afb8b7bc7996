# SPDX-License-Identifier: GPL-2.0-or-later
"""Load: 16 processes reading and writing overlapping files through one
mount with a small cache store, for HOTFS_LOAD_SECS seconds (30 in CI;
contrib/ci/soak.sh runs 300), every byte read checked.

The files, all made of 4 KiB cells that say what they are (a header naming
file, cell and version, then bytes drawn from a shared pool by those
three), so that the expected content of any range is known exactly:

    shared*   read and written by everyone: each worker owns one stripe of
              cells in each and rewrites cells of it; the current version
              of every cell lives in shared memory.  A writer holds a POSIX
              write lock on its cells from the write until their versions
              are updated, a reader a read lock on its whole range, so each
              read is checked against exactly the versions it must see:
              with O_DIRECT, to the byte; through the page cache, every
              cell must be a whole version of itself, not newer than the
              latest, and older ones are counted (a FUSE kernel race, not
              hotfs's: see Worker.read_shared);
    common*   read by everyone, never written: they become hot, are
              promoted, and are served by the store (page cache dropped
              before half the reads, so those reach the daemon);
    own<i>    one worker's own file: written, truncated, replaced by
              rename, read back against the worker's model.

Sometimes a worker also evicts a file's extents or warms one
(hotfsctl's ioctls), and fsyncs.  The store is 32M for ~60M of data, so
extents are promoted, evicted and invalidated all along.

Checked: no worker sees an error or wrong data; every worker ends by the
deadline (a hang fails the test, with the stuck workers' kernel stacks);
at the end every file is the same through the mount and in the source,
and equal to the model; promotions and evictions happened, also after the
warm-up; and the daemon's RSS, sampled every second, is flat after the
warm-up (the first third, or longer until the daemon has started all
its FUSE worker threads, of which there are at most 16): over the rest,
the second half's median and peak are within 10% + 8 MiB of the highest
RSS before that half, warm-up included (relative, so that it holds for a
sanitizer build too; the promotion queue's biggest burst, which sets the
RSS glibc keeps, may come after the warm-up).  The samples (with the daemon's thread
count and promotion queue depth) and the figures are printed: pytest -s
shows them.

What the RSS check can see: a 30 s run only gross growth (several MB/s),
the 300 s soak run (contrib/ci/soak.sh) slower growth; leaks of
unreachable memory are LeakSanitizer's job (the ASan build of this test).
The RSS follows the promotion queue (its items carry readers' copies of
extents, at most 64 MiB of them) and the FUSE worker threads, which keep
being added until about 20 s into a CI run on 2 CPUs.
"""
import errno
import fcntl
import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import random
import struct
import threading
import time
import traceback

import pytest

import util

SECS = float(os.environ.get('HOTFS_LOAD_SECS', '30'))
NPROC = 16
CELL = 4096
HDR = struct.Struct('<4sIIII')          # magic, file, cell, version, owner
MAGIC = b'HLC1'
POOL = random.Random(20261201).randbytes(1 << 20)

NSHARED = 8
STRIPE = 32                              # cells each worker owns per file
SHARED_CELLS = NPROC * STRIPE            # 2 MiB a file
NCOMMON = 8
COMMON_CELLS = 768                       # 3 MiB a file
OWN_MAX = 1 << 20
COMMON_BASE = 100                        # file numbers in cell headers
OPTS = 'cachesize=32M'                   # 2 regions of 16M, threshold 2

# struct hotfs_ioc (include/hotfs/ioctl.h): 6 u64 then 2 u32
IOC_FMT = '6Q2I'
IOC_SIZE = struct.calcsize(IOC_FMT)


def _iowr(nr):
    return (3 << 30) | (IOC_SIZE << 16) | (ord('H') << 8) | nr


HOTFS_IOC_WARM = _iowr(1)
HOTFS_IOC_EVICT = _iowr(2)


def cell(fileno, c, version, owner):
    h = HDR.pack(MAGIC, fileno, c, version, owner)
    o = (fileno * 1000003 + c * 9176 + version * 2654435761) % \
        (len(POOL) - CELL)
    return h + POOL[o:o + CELL - len(h)]


def shared_owner(c):
    return c // STRIPE


def shared_name(f):
    return 'shared%d' % f


def common_name(f):
    return 'common%d' % f


def common_bytes(f, c0, c1):
    return b''.join(cell(COMMON_BASE + f, c, 0, 0) for c in range(c0, c1))


def shared_bytes(f, c0, c1, versions):
    base = f * SHARED_CELLS
    return b''.join(cell(f, c, versions[base + c], shared_owner(c))
                    for c in range(c0, c1))


def explain(got, want, c0, what):
    """The first differing cell, decoded, for the failure message."""
    for k in range(0, max(len(got), len(want)), CELL):
        a, b = got[k:k + CELL], want[k:k + CELL]
        if a != b:
            def dec(x):
                if len(x) < HDR.size:
                    return 'short (%d bytes)' % len(x)
                m, f, c, v, o = HDR.unpack_from(x)
                return 'file %d cell %d version %d owner %d%s' % (
                    f, c, v, o, '' if m == MAGIC else ' (bad magic)')
            return '%s: cell %d: read %s, expected %s (%d vs %d bytes)' % (
                what, c0 + k // CELL, dec(a), dec(b), len(got), len(want))
    return '%s: equal?' % what


def drop_cache(fd, off=0, n=0):
    os.posix_fadvise(fd, off, n, os.POSIX_FADV_DONTNEED)


def pread_all(fd, n, off):
    out = []
    while n:
        b = os.pread(fd, n, off)
        if not b:
            break
        out.append(b)
        n -= len(b)
        off += len(b)
    return b''.join(out)


def ioc(fd, cmd):
    buf = bytearray(struct.pack(IOC_FMT, 0, 0, 0, 0, 0, 0, 0, 0))
    fcntl.ioctl(fd, cmd, buf)


class Worker:
    def __init__(self, i, mnt, src, versions, deadline):
        self.i = i
        self.mnt = mnt
        self.src = src
        self.versions = versions
        self.deadline = deadline
        self.rng = random.Random(1000 + i)
        self.ops = {}
        self.verified = 0
        self.stale = 0
        self.own = bytearray()
        self.own_path = os.path.join(mnt, 'own%d' % i)

    def count(self, op):
        self.ops[op] = self.ops.get(op, 0) + 1

    def check(self, got, want, c0, what, cells=True):
        if got != want:
            if cells:
                why = explain(got, want, c0, what)
            else:
                k = next((k for k in range(min(len(got), len(want)))
                          if got[k] != want[k]), min(len(got), len(want)))
                why = '%s: differs from byte %d (%d vs %d bytes)' % (
                    what, k, len(got), len(want))
            raise AssertionError('worker %d: %s' % (self.i, why))
        self.verified += len(got)

    # -- the shared files: own stripe written, any range read -----------
    def write_shared(self):
        f = self.rng.randrange(NSHARED)
        n = self.rng.randrange(1, 9)
        c0 = self.i * STRIPE + self.rng.randrange(STRIPE - n + 1)
        base = f * SHARED_CELLS
        fd = os.open(os.path.join(self.mnt, shared_name(f)), os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX, n * CELL, c0 * CELL)
            new = [self.versions[base + c] + 1 for c in range(c0, c0 + n)]
            data = b''.join(cell(f, c0 + k, v, self.i)
                            for k, v in enumerate(new))
            assert os.pwrite(fd, data, c0 * CELL) == len(data)
            if self.rng.random() < 0.05:
                os.fsync(fd)
            for k, v in enumerate(new):
                self.versions[base + c0 + k] = v
            fcntl.lockf(fd, fcntl.LOCK_UN, n * CELL, c0 * CELL)
        finally:
            os.close(fd)
        self.count('write_shared')

    def read_shared(self):
        """Half the reads with O_DIRECT, checked exactly: every byte is
        the latest version of its cell.  The other half through the page
        cache, where a cell may be an older version of itself: the
        kernel marks a page written through the mount up to date and
        unlocks it before the daemon has the WRITE, so a page dropped in
        that window (an open without keep_cache, an attribute refresh
        with auto_inval_data, DONTNEED) and read again by a third
        process's readahead may hold the bytes from before the write,
        until the next invalidation.  FUSE itself, not hotfs: it happens
        with -o nocache too, not with O_DIRECT (no page cache).  Such
        cells are counted (the count is printed) and must still be whole
        versions of themselves."""
        f = self.rng.randrange(NSHARED)
        if self.rng.random() < 0.1:
            c0, c1 = 0, SHARED_CELLS
        else:
            c0 = self.rng.randrange(SHARED_CELLS)
            c1 = min(SHARED_CELLS, c0 + self.rng.randrange(1, 96))
        direct = self.rng.random() < 0.5
        fd = os.open(os.path.join(self.mnt, shared_name(f)),
                     os.O_RDONLY | (os.O_DIRECT if direct else 0))
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH, (c1 - c0) * CELL, c0 * CELL)
            dropped = not direct and self.rng.random() < 0.5
            if dropped:
                drop_cache(fd, c0 * CELL, (c1 - c0) * CELL)
            got = pread_all(fd, (c1 - c0) * CELL, c0 * CELL)
            want = shared_bytes(f, c0, c1, self.versions)
            if got != want:
                stale = None if direct or len(got) != len(want) else \
                    self.older(f, c0, got)
                if stale is None:
                    self.diagnose(fd, f, c0, got, want, direct, dropped)
                self.stale += stale
            fcntl.lockf(fd, fcntl.LOCK_UN, (c1 - c0) * CELL, c0 * CELL)
        finally:
            os.close(fd)
        self.verified += len(got)
        self.count('read_shared_direct' if direct else 'read_shared')

    def older(self, f, c0, got):
        """How many cells of got are older versions of themselves, or None
        if one is anything else."""
        base = f * SHARED_CELLS
        n = 0
        for k in range(0, len(got), CELL):
            c = c0 + k // CELL
            x = got[k:k + CELL]
            if len(x) != CELL:
                return None
            m, xf, xc, v, o = HDR.unpack_from(x)
            if (m, xf, xc, o) != (MAGIC, f, c, shared_owner(c)) or \
                    v > self.versions[base + c] or x != cell(f, c, v, o):
                return None
            n += v < self.versions[base + c]
        return n

    def diagnose(self, fd, f, c0, got, want, direct, dropped):
        """Still under the read lock: where the wrong bytes come from.
        The source, then the mount again with the page cache dropped."""
        k = next((k for k in range(0, len(want), CELL)
                  if got[k:k + CELL] != want[k:k + CELL]),
                 min(len(got), len(want) - CELL) // CELL * CELL)
        off = c0 * CELL + k
        with open(os.path.join(self.src, shared_name(f)), 'rb') as sf:
            sf.seek(off)
            in_src = sf.read(CELL)
        again = os.pread(fd, CELL, off)
        drop_cache(fd, off, CELL)
        cold = os.pread(fd, CELL, off)
        w = want[k:k + CELL]
        raise AssertionError(
            'worker %d: %s\n  (%s) at offset %d the source has the '
            'expected cell: %s; read again: %s; read again with the page '
            'cache dropped: %s' % (
                self.i, explain(got, want, c0, '%s [%d, %d)' % (
                    shared_name(f), c0, c0 + len(want) // CELL)),
                'O_DIRECT' if direct else 'page cache %s before the read' %
                ('dropped' if dropped else 'kept'), off, in_src == w,
                again == w, cold == w))

    # -- the read-only files, skewed towards the first ones -------------
    def read_common(self):
        f = min(int(self.rng.expovariate(0.5)), NCOMMON - 1)
        c0 = self.rng.randrange(COMMON_CELLS)
        c1 = min(COMMON_CELLS, c0 + self.rng.randrange(1, 128))
        fd = os.open(os.path.join(self.mnt, common_name(f)), os.O_RDONLY)
        try:
            if self.rng.random() < 0.5:
                drop_cache(fd, c0 * CELL, (c1 - c0) * CELL)
            got = pread_all(fd, (c1 - c0) * CELL, c0 * CELL)
        finally:
            os.close(fd)
        self.check(got, common_bytes(f, c0, c1), c0,
                   '%s [%d, %d)' % (common_name(f), c0, c1))
        self.count('read_common')

    # -- the worker's own file: writes, truncates, replacement ----------
    def own_op(self):
        r = self.rng.random()
        p = self.own_path
        if r < 0.4:
            off = self.rng.randrange(0, min(len(self.own) + CELL,
                                            OWN_MAX - 1))
            n = min(self.rng.randrange(1, 200000), OWN_MAX - off)
            data = self.rng.randbytes(n)
            fd = os.open(p, os.O_WRONLY)
            try:
                assert os.pwrite(fd, data, off) == n
            finally:
                os.close(fd)
            if off > len(self.own):
                self.own += bytes(off - len(self.own))
            self.own[off:off + n] = data
            self.count('own_write')
        elif r < 0.6:
            size = self.rng.randrange(0, OWN_MAX)
            os.truncate(p, size)
            if size < len(self.own):
                del self.own[size:]
            else:
                self.own += bytes(size - len(self.own))
            self.count('own_truncate')
        elif r < 0.75:
            data = self.rng.randbytes(self.rng.randrange(0, OWN_MAX))
            tmp = p + '.tmp'
            with open(tmp, 'wb') as fo:
                fo.write(data)
            os.rename(tmp, p)
            self.own = bytearray(data)
            self.count('own_replace')
        else:
            got = util.read_cold(p)
            self.check(got, bytes(self.own), 0, 'own%d' % self.i, False)
            self.count('own_read')

    # -- hotfsctl's ioctls, under load -----------------------------------
    def ctl_op(self):
        if self.rng.random() < 0.5:
            f = self.rng.randrange(NSHARED + NCOMMON)
            p = os.path.join(self.mnt, shared_name(f) if f < NSHARED else
                             common_name(f - NSHARED))
            cmd, op = HOTFS_IOC_EVICT, 'evict'
        else:
            p = os.path.join(self.mnt, common_name(
                self.rng.randrange(NCOMMON)))
            cmd, op = HOTFS_IOC_WARM, 'warm'
        fd = os.open(p, os.O_RDONLY)
        try:
            ioc(fd, cmd)
        except OSError as e:
            # warm: the file changed meanwhile, or no room right now
            if cmd != HOTFS_IOC_WARM or e.errno not in (errno.EAGAIN,
                                                        errno.ENOSPC):
                raise
            op += '_' + errno.errorcode[e.errno]
        finally:
            os.close(fd)
        self.count(op)

    def run(self):
        with open(self.own_path, 'wb'):
            pass
        while time.monotonic() < self.deadline:
            r = self.rng.random()
            if r < 0.25:
                self.write_shared()
            elif r < 0.55:
                self.read_shared()
            elif r < 0.85:
                self.read_common()
            elif r < 0.98:
                self.own_op()
            else:
                self.ctl_op()
        got = util.read_cold(self.own_path)
        self.check(got, bytes(self.own), 0, 'own%d at the end' % self.i,
                   False)
        return {'ops': self.ops, 'verified': self.verified,
                'stale': self.stale,
                'own': hashlib.sha256(self.own).hexdigest(),
                'own_size': len(self.own)}


def worker_main(i, mnt, src, versions, deadline, conn):
    try:
        res = Worker(i, mnt, src, versions, deadline).run()
        conn.send(('ok', res))
    except BaseException:
        conn.send(('error', traceback.format_exc()[-4000:]))
    finally:
        conn.close()


def median(v):
    return sorted(v)[len(v) // 2]


def rss_kib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise AssertionError('no VmRSS for %d' % pid)


def nthreads(pid):
    """The daemon's own threads (main, background, FUSE workers), not the
    kernel's io_uring workers that come and go in its thread group."""
    n = 0
    for t in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/comm' % (pid, t)) as f:
                n += not f.read().startswith('iou-')
        except OSError:
            pass
    return n


def stats(mnt):
    with open(os.path.join(mnt, '.hotfs', 'stats.json')) as f:
        return json.load(f)


class Hung(Exception):
    pass


def within(what, timeout, fn, *args):
    """fn(*args) in a thread; raise Hung if it takes longer than timeout
    (a hung daemon must fail the test, not hang it)."""
    box = []

    def run():
        try:
            box.append(('ok', fn(*args)))
        except BaseException:
            box.append(('error', traceback.format_exc()[-4000:]))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if not box:
        raise Hung('%s: no answer within %.0fs' % (what, timeout))
    kind, res = box[0]
    if kind != 'ok':
        raise AssertionError('%s:\n%s' % (what, res))
    return res


def hang_report(proc, why, workers):
    """Say where everyone is stuck, then kill the daemon: its requests
    then fail (ENOTCONN), so workers and teardown are not stuck too
    (teardown's unmount itself stats the mount point)."""
    msg = ['hotfs hung: %s' % why]
    for i, p in workers:
        msg.append('worker %d (pid %d), kernel stack:\n%s'
                   % (i, p.pid, kernel_stack(p.pid)))
    try:
        for t in sorted(os.listdir('/proc/%d/task' % proc.pid), key=int):
            with open('/proc/%d/task/%s/comm' % (proc.pid, t)) as f:
                comm = f.read().strip()
            msg.append('hotfs thread %s (%s), kernel stack:\n%s' % (
                t, comm, kernel_stack(int(t))))
    except OSError:
        pass
    proc.kill()
    for _, p in workers:
        p.kill()
    return '\n'.join(msg)


def kernel_stack(pid):
    try:
        with open('/proc/%d/stack' % pid) as f:
            return f.read()
    except OSError as e:
        return '(%s)' % e


def populate(src):
    for f in range(NSHARED):
        with open(os.path.join(src, shared_name(f)), 'wb') as fo:
            fo.write(shared_bytes(f, 0, SHARED_CELLS,
                                  [0] * (NSHARED * SHARED_CELLS)))
    for f in range(NCOMMON):
        with open(os.path.join(src, common_name(f)), 'wb') as fo:
            fo.write(common_bytes(f, 0, COMMON_CELLS))


def final_check(ws, versions, results):
    """Every file, through the mount and in the source, equals the model.
    Returns the bytes compared."""
    mnt, src = ws.mnt, ws.src
    # the same names and stats through the mount as in the source (before
    # the source is read directly below, which may move its atimes)
    names = sorted(os.listdir(mnt))
    assert names == sorted(os.listdir(src))
    for n in names:
        util.assert_same_stat(os.path.join(mnt, n), os.path.join(src, n))

    # every file, through the mount and in the source, equals the model
    final = 0
    for f in range(NSHARED):
        want = shared_bytes(f, 0, SHARED_CELLS, versions)
        for root in (mnt, src):
            got = util.read_cold(os.path.join(root, shared_name(f)))
            assert got == want, explain(got, want, 0, '%s in %s' % (
                shared_name(f), root))
            final += len(got)
    for f in range(NCOMMON):
        want = common_bytes(f, 0, COMMON_CELLS)
        for root in (mnt, src):
            got = util.read_cold(os.path.join(root, common_name(f)))
            assert got == want, explain(got, want, 0, '%s in %s' % (
                common_name(f), root))
            final += len(got)
    for i in range(NPROC):
        res = results[i][1]
        for root in (mnt, src):
            got = util.read_cold(os.path.join(root, 'own%d' % i))
            assert (len(got), hashlib.sha256(got).hexdigest()) == \
                (res['own_size'], res['own']), ('own%d' % i, root)
            final += len(got)
    return final


@pytest.mark.slow
def test_load(ws):
    populate(ws.src)
    proc = ws.start(opts=OPTS)
    mnt = ws.mnt
    ctx = multiprocessing.get_context('fork')
    versions = ctx.Array('L', NSHARED * SHARED_CELLS, lock=False)
    t0 = time.monotonic()
    deadline = t0 + SECS
    warm_end = t0 + SECS / 3
    # an operation may be slow (a sanitizer build, 2 CPUs); a worker that
    # has not ended this long after the deadline is hung
    hang = deadline + max(60.0, SECS / 5)
    workers = []
    for i in range(NPROC):
        r, w = ctx.Pipe(duplex=False)
        p = ctx.Process(target=worker_main, args=(i, mnt, ws.src,
                                                  versions, deadline, w))
        p.start()
        w.close()
        workers.append((i, p, r))

    samples = []    # (s since start, RSS KiB, own threads, queue depth)
    at_warm = None
    results = {}
    pending = {p.sentinel: (i, p, r) for i, p, r in workers}
    readers = {r: i for i, _, r in workers}
    nxt = t0
    try:
        while pending or readers:
            now = time.monotonic()
            if now >= nxt:
                st = within('reading stats.json', 30, stats, mnt)
                samples.append((round(now - t0, 1), rss_kib(proc.pid),
                                nthreads(proc.pid),
                                st['promotion_queue_depth']))
                if at_warm is None and now >= warm_end:
                    at_warm = st
                nxt = max(nxt + 1.0, now)
            if now > hang:
                raise Hung('%d workers still running %.0fs after the '
                           'deadline' % (len(pending), now - deadline))
            ready = multiprocessing.connection.wait(
                list(pending) + list(readers), timeout=max(0.0, nxt - now))
            for x in ready:
                if x in readers:
                    try:
                        results[readers[x]] = x.recv()
                    except EOFError:
                        pass
                    del readers[x]
                else:
                    i, p, _ = pending.pop(x)
                    p.join()
        end = within('reading stats.json', 30, stats, mnt)
        rss_end = rss_kib(proc.pid)
    except Hung as e:
        pytest.fail(hang_report(proc, e, [(i, p) for i, p, _ in
                                          pending.values()]))
    finally:
        # on any failure, end the workers left
        for _, p, _ in pending.values():
            p.kill()
    assert proc.poll() is None, 'hotfs died: %s' % ws.log_text(proc)[-3000:]

    failures = ['worker %d:\n%s' % (i, res)
                for i, (kind, res) in sorted(results.items())
                if kind != 'ok']
    failures += ['worker %d exited %r without a report' % (i, p.exitcode)
                 for i, p, _ in workers if i not in results]
    failures += ['worker %d exited %r' % (i, p.exitcode)
                 for i, p, _ in workers if p.exitcode != 0]
    assert not failures, '\n'.join(failures)
    try:
        final = within('the final check', 120, final_check, ws, versions,
                       results)
    except Hung as e:
        pytest.fail(hang_report(proc, e, []))

    ops = {}
    for _, res in results.values():
        for k, v in res['ops'].items():
            ops[k] = ops.get(k, 0) + v
    verified = sum(res['verified'] for _, res in results.values())
    stale = sum(res['stale'] for _, res in results.values())
    # the warm-up: the first third, and until the daemon has all the FUSE
    # workers it will start (each brings buffers and a malloc arena; on a
    # busy machine the last ones come late), keeping at least 6 samples
    most = max(s[2] for s in samples)
    warm = max(SECS / 3, next(s[0] for s in samples if s[2] == most))
    warm = min(warm, samples[-6][0])
    after = [s[1] for s in samples if s[0] >= warm]
    half = len(after) // 2
    a, b = after[:half], after[half:]
    # the highest RSS before the second half, warm-up included: the
    # promotion queue's bursts raise it (glibc keeps what they freed),
    # and the run's biggest burst may come after the warm-up
    ref = max(s[1] for s in samples[:len(samples) - len(b)])
    print('\nload: %d processes, %.0fs (warm-up %.0fs), %s' % (
        NPROC, SECS, warm, OPTS))
    print('ops: %d %r' % (sum(ops.values()), dict(sorted(ops.items()))))
    print('bytes verified: %d by workers, %d at the end; older versions '
          'of cells read through the page cache: %d' % (verified, final,
                                                        stale))
    keys = ('promotions', 'evictions', 'evicted_regions', 'read_hits',
            'read_misses', 'invalidations_write', 'invalidations_user',
            'not_promoted_admission', 'cached_bytes', 'inodes',
            'retained_inodes', 'index_bytes', 'policy_bytes')
    print('stats at a third:     %r' % {k: at_warm[k] for k in keys})
    print('stats at the end:     %r' % {k: end[k] for k in keys})
    print('daemon (t, RSS KiB, threads, promotion queue) every second: %r'
          % samples)
    print('RSS after warm-up: min %d, max %d KiB; first half median %d, '
          'max %d; highest before the second half %d; second half median '
          '%d, max %d; after the final check %d KiB'
          % (min(after), max(after), median(a), max(a), ref, median(b),
             max(b), rss_end))

    # the cache was exercised, also while RSS was measured
    assert end['promotions'] > at_warm['promotions'] > 0, (at_warm, end)
    assert end['evictions'] > at_warm['evictions'] > 0, (at_warm, end)
    assert end['read_hits'] > 0
    for op in ('write_shared', 'read_shared', 'read_shared_direct',
               'read_common', 'own_read'):
        assert ops.get(op, 0) > 0, ops

    # main, promotion, the periodic work (tick.c), metadata snapshot,
    # source watch, the kernel's notifications (notify.c), cached-extent
    # read-ahead and at most 16 FUSE workers (main.c: max_threads)
    assert most <= 23, 'the daemon has %d threads' % most
    # RSS flat after the warm-up: the second half of the rest neither
    # settles (median) nor peaks (max) beyond 10% + 8 MiB of the highest
    # RSS before it (relative: a sanitizer build has a bigger RSS)
    assert len(a) >= 3, samples
    assert median(b) <= ref * 1.10 + 8192, (
        'daemon RSS grew after the warm-up: highest before %d, second '
        'half median %d KiB' % (ref, median(b)))
    assert max(b) <= ref * 1.10 + 8192, (
        'daemon RSS peaked higher after the warm-up: %d -> %d KiB'
        % (ref, max(b)))
    ws.stop(proc)
