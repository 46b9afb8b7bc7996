# SPDX-License-Identifier: GPL-2.0-or-later
"""writemode=writeback against a model, across crashes and remounts.

Random operations through the mount on a few files (writes, O_SYNC,
O_DSYNC and O_DIRECT writes, appends, truncates, O_TRUNC, fallocate of
each kind, renames, unlinks, links, creates, fsync and fdatasync of files
and directories, writes through a shared mapping made durable with
msync) are applied to a model of what was acknowledged: each file's
bytes and names.  Between them, events chosen at random:

- kill -9 and remount: man/hotfs.8 (What is durable when) promises that
  a kill of the daemon loses nothing acknowledged, fsync'd or not (the
  kernel keeps the log's pages): every byte, size, name and link count
  must be the model's;
- clean unmount and remount: the source alone, then, is the model, and
  the mark .hotfs-dirty is gone;
- a remount in writethrough or writearound: the log is written to the
  source before the mount answers (the source is the model then), and
  back to writeback at the next remount;
- remounts with revalidate=never or revalidate=2;
- a flush the source refuses (its ext4 remounted read-only before the
  unmount): the daemon exits 1 saying that the dirty bytes stay in the
  log, or 0 if none were left; the next mount has everything;
- hotfsctl flush: the source then holds what the mount shows;
- a damaged log (a byte flipped in a live record of cachedir/wlog after
  a kill -9): a byte may differ from the model only if the daemon says
  so: a read of it answers EIO and the file is named lost, or the log
  says records were dropped or unreadable, and then the byte is one
  written to that place since the last clean unmount (or its size one
  the file had); the lost blocks are then written again from the model
  (the administrator's restore), and the state is ok again;
- a deleted log (rm cachedir/wlog while mounted): everything the log
  held reaches the source at once, the state says writethrough, the
  mark goes, nothing acknowledged is lost;
- a change on the source while unmounted (a range overwritten, an
  append, a file created or removed): where the log held dirty bytes of
  the range they win, and then the source's version is kept whole in
  cachedir/conflicts/; every other byte is the edit's.

After each event every name, size, link count and byte is checked; at
the end, after a clean unmount, the source equals the model.  The cache
filesystem going read-only is a test of its own (it needs an fsck
after).  HOTFS_MODEL_SEED replays a run's choices (the daemon's timing
may differ): the test command runs one seed, the soak run
(contrib/ci/soak.sh) a new one each time; HOTFS_MODEL_EVENTS sets the
number of events (the soak run makes 2000); damaged logs are among the
events unless HOTFS_MODEL_DAMAGE=0.
"""
import errno
import mmap
import os
import random
import re
import struct
import subprocess

import pytest

import util
from test_faults import ext4  # noqa: F401 (a fixture)
from test_wbfaults import MARK, read_only, wb_state
from test_writeback import hotfsctl, kill9, read

SEED = int(os.environ.get('HOTFS_MODEL_SEED', '265522278'))
# damaged logs: on unless HOTFS_MODEL_DAMAGE=0
DAMAGE = os.environ.get('HOTFS_MODEL_DAMAGE', '1') != '0'
EVENTS = int(os.environ.get('HOTFS_MODEL_EVENTS', '400'))
MAXSIZE = 256 << 10
BLOCK = 4096
NAMES = ('a', 'b', 'c', 'e', 'd/x', 'd/y', 'd/z')
MAXFILES = 5
WB = 'writemode=writeback,writeback_log=16M'

# the log's format (src/writeback/wblog_i.h): two header slots, then the area.
# A slot: magic, version, block, nblocks, gen, tail_pos, tail_seq,
# epoch, epoch_seq, csum, salt, synced
WL_SUPER = struct.Struct('<8sIIQQQQQQQQQ')
# a record: magic, seq, epoch, type, nblk, dev, ino, birth, off, len,
# time, synced
WL_REC = struct.Struct('<8sQQIIQQQQQqQ')
WR_DATA, WR_TRIM, WR_PAD, WR_MULTI = 1, 2, 3, 4


class Obj:
    """A file as acknowledged: its bytes; and since the log last held
    nothing (a clean unmount), what was put at each place (each write's
    bytes, or zeros): what a damaged log may leave, where the daemon
    says it is damaged."""

    def __init__(self, data=b''):
        self.data = bytearray(data)
        self.forget()

    def forget(self):
        self.base = bytes(self.data)
        self.puts = []              # (offset, bytes or None: zeros, len)

    def put(self, off, data):
        if off > len(self.data):
            self.zero(len(self.data), off - len(self.data))
        self.data[off:off + len(data)] = data
        self.puts.append((off, bytes(data), len(data)))

    def zero(self, off, n):
        end = off + n
        if end > len(self.data):
            self.data.extend(bytes(end - len(self.data)))
        self.data[off:end] = bytes(n)
        self.puts.append((off, None, n))

    def resize(self, n):
        old = len(self.data)
        if n < old:
            del self.data[n:]
        else:
            self.zero(old, n - old)

    def was(self, i, v):
        """Was v ever put at byte i (since the last clean unmount)?"""
        if v == 0 or (i < len(self.base) and self.base[i] == v):
            return True
        for off, data, n in self.puts:
            if off <= i < off + n and data is not None and \
                    data[i - off] == v:
                return True
        return False


def first_diff(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                min(len(a), len(b)))


class Rec:
    __slots__ = ('pos', 'seq', 'type', 'nblk', 'ino', 'off', 'len',
                 'synced')

    def __repr__(self):
        return 'record %d (type %d, inode %d, %d+%d, %d blocks at %d)' % (
            self.seq, self.type, self.ino, self.off, self.len, self.nblk,
            self.pos)


def live_records(wlog):
    """The records of the log from its tail on, as replay walks them
    (by the newer header slot), and the last sequence number the header
    says was synced."""
    try:
        with open(wlog, 'rb') as f:
            buf = f.read()
    except FileNotFoundError:       # a mount in another mode removed it
        return [], 0
    slots = [WL_SUPER.unpack_from(buf, k * BLOCK) for k in (0, 1)]
    slots = [x for x in slots if x[0] == b'HOTFSWL2']
    if not slots:
        return [], 0
    sup = max(slots, key=lambda x: x[4])
    nblocks, pos, seq = sup[3], sup[5], sup[6]
    epoch, epoch_seq = sup[7], sup[8]
    synced = max(sup[11], epoch_seq - 1 if epoch_seq else 0)
    out, walked, min_epoch = [], 0, 0
    while walked < nblocks:
        pos = 0 if pos == nblocks else pos
        h = WL_REC.unpack_from(buf, (2 + pos) * BLOCK)
        # the epoch rules (src/writeback/wblog_open.c epoch_ok): a record left
        # from before the last open's replay is not one of the log's
        if h[0] != b'HOTFSWR3' or h[1] != seq or h[2] < min_epoch or \
                (seq >= epoch_seq and h[2] != epoch):
            break
        # a record's blocks lie in the area (a padding record fills its
        # end): a header damaged by an earlier event, which the replay
        # read around by its checksum, may name more; the walk ends there
        if h[3] != WR_PAD and pos + 1 + h[4] > nblocks:
            break
        min_epoch = h[2]
        r = Rec()
        r.pos, r.seq, r.type, r.nblk = pos, seq, h[3], h[4]
        r.ino, r.off, r.len, r.synced = h[6], h[8], h[9], h[11]
        if r.type != WR_PAD:
            out.append(r)
        n = nblocks - pos if r.type == WR_PAD else 1 + r.nblk
        walked += n
        pos += n
        seq += 1
    return out, synced


def attested(recs, synced, seq):
    """Does a sync that the log attests (its header, or a record after
    seq) cover record seq?  If not, its damage is a torn tail."""
    return seq <= max([synced] + [r.synced for r in recs if r.seq > seq])


def flip(wlog, blk, at):
    """One byte of the log's area block blk flipped (at: within it)."""
    with open(wlog, 'r+b') as f:
        f.seek((2 + blk) * BLOCK + at)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x5a]))


class Run:
    """A model-based run over a source S (an ext4 of its own) and the
    workspace's cachedir (or cache)."""

    def __init__(self, ws, sdev, seed, cache=None):
        self.ws, self.sdev = ws, sdev
        self.cache = cache or ws.cache
        self.rng = random.Random(seed)
        self.seed = seed
        self.names = {}             # name -> Obj
        self.proc = None
        self.mode = self.reval = None
        self.log_gone = False       # the log deleted: writes go through
        self.edited = False         # the source changed behind us
        self.steps = []
        self.failed = False
        self.n = dict(events=0, ops=0, checked=0, lost=0, wrong=0)
        os.mkdir(self.s('d'))

    # -- paths and reports ----------------------------------------------
    def m(self, name=''):
        return os.path.join(self.ws.mnt, name)

    def s(self, name=''):
        return os.path.join(self.sdev.dir, name)

    def step(self, text):
        self.steps.append(text)

    def fail(self, what):
        self.n['wrong'] += 1
        self.failed = True
        pytest.fail('seed %d, event %d: %s\nlast steps:\n  %s'
                    % (self.seed, self.n['events'], what,
                       '\n  '.join(self.steps[-60:])))

    def objs(self):
        return list({id(o): o for o in self.names.values()}.values())

    def names_of(self, o):
        return sorted(n for n, x in self.names.items() if x is o)

    # -- mounts -----------------------------------------------------------
    def mount(self, mode='writeback', reval=None, check=True):
        """Start the daemon: mode writeback (a delay at random: held or
        flushing), writethrough or writearound; reval None, 'never' or
        '2'.  In another mode the source is then the model (unless
        check is False: changed behind the model)."""
        if mode == 'writeback':
            delay = self.rng.choice((0, 1, self.rng.randint(2, 600)))
            opts = WB + ',writeback_delay=%d' % delay
        else:
            opts = 'writemode=' + mode
        if reval:
            opts += ',revalidate=' + reval
        self.step('mount ' + opts)
        self.proc = self.ws.start(src=self.sdev.dir, cachedir=self.cache,
                                  opts=opts)
        self.mode, self.reval, self.log_gone = mode, reval, False
        if mode != 'writeback' and check:
            # the log written to the source before the mount answered
            self.check_source('the %s mount' % mode)

    def remount(self, mode=None, reval=None, check=True):
        """The next mount: writeback again after another mode; else at
        random, another mode now and then."""
        if mode is None:
            mode = 'writeback'
            if self.mode == 'writeback' and self.rng.random() < 0.2:
                mode = self.rng.choice(('writethrough', 'writearound'))
        if reval is None and self.rng.random() < 0.3:
            reval = self.rng.choice(('never', '2'))
        if reval == 'never' and self.edited:
            reval = '2'
        self.mount(mode, reval, check)

    def stop(self):
        """A clean unmount: exit 0; the source is the model."""
        self.step('clean unmount')
        try:
            self.ws.stop(self.proc)
        except AssertionError as e:
            self.fail('the clean unmount: %s' % e)
        self.clean()

    def clean(self, mark=True):
        """After an unmount that exited 0."""
        self.check_source('after a clean unmount')
        if mark and os.path.lexists(self.s(MARK)):
            self.fail('the mark is left after a clean unmount')
        for o in self.objs():
            o.forget()
        if self.reval != 'never':
            self.edited = False

    def kill(self):
        self.step('kill -9')
        kill9(self.ws, self.proc)

    def end(self):
        """End the mount at random: kill -9 or a clean unmount."""
        if self.rng.random() < 0.5:
            self.kill()
        else:
            self.stop()

    def stats(self):
        return util.hotfs_stats(self.ws.mnt)

    # -- operations -------------------------------------------------------
    def pick(self):
        name = self.rng.choice(sorted(self.names))
        return name, self.names[name]

    def free_name(self):
        free = [n for n in NAMES if n not in self.names]
        return self.rng.choice(free) if free else None

    def length(self, off):
        n = self.rng.choice((1, 100, 4096, 5000, 20000, 70000))
        return max(1, min(self.rng.randint(1, n), MAXSIZE - off))

    def ops(self, count):
        for _ in range(count):
            self.op()

    def op(self):
        if len(self.objs()) < 3 or not self.names:
            kind = 'create'
        else:
            kind = self.rng.choice(
                ('write',) * 6 + ('append', 'append', 'truncate',
                                  'fallocate', 'fallocate', 'rename',
                                  'unlink', 'link', 'create', 'sync',
                                  'sync', 'mmap', 'direct'))
        getattr(self, 'op_' + kind)()
        self.n['ops'] += 1

    def op_create(self):
        name = self.free_name()
        if name is None or len(self.objs()) >= MAXFILES:
            return self.op_unlink()
        data = self.rng.randbytes(self.length(0))
        self.step('create %s %d' % (name, len(data)))
        fd = os.open(self.m(name), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     0o644)
        try:
            assert os.write(fd, data) == len(data)
        finally:
            os.close(fd)
        o = Obj()
        o.put(0, data)
        self.names[name] = o

    def op_write(self, flags=0):
        name, o = self.pick()
        off = self.rng.randrange(min(len(o.data) + 8192, MAXSIZE))
        data = self.rng.randbytes(self.length(off))
        if not flags:
            flags = self.rng.choice((0, 0, 0, 0, os.O_SYNC, os.O_DSYNC))
        self.step('write %s %d+%d flags %#x' % (name, off, len(data),
                                                 flags))
        fd = os.open(self.m(name), os.O_WRONLY | flags)
        try:
            assert os.pwrite(fd, data, off) == len(data)
        finally:
            os.close(fd)
        o.put(off, data)

    def op_direct(self):
        """An O_DIRECT write: whole blocks from an aligned buffer."""
        name, o = self.pick()
        blk = self.rng.randrange(min(len(o.data) // BLOCK + 2,
                                     MAXSIZE // BLOCK))
        n = self.rng.randint(1, min(8, MAXSIZE // BLOCK - blk))
        data = self.rng.randbytes(n * BLOCK)
        self.step('direct write %s %d+%d' % (name, blk * BLOCK, len(data)))
        buf = mmap.mmap(-1, len(data))
        buf[:] = data
        fd = os.open(self.m(name), os.O_WRONLY | os.O_DIRECT)
        try:
            assert os.pwritev(fd, [buf], blk * BLOCK) == len(data)
        finally:
            os.close(fd)
            buf.close()
        o.put(blk * BLOCK, data)

    def op_append(self):
        name, o = self.pick()
        data = self.rng.randbytes(self.length(len(o.data)))
        if len(o.data) >= MAXSIZE:
            return self.op_truncate()
        self.step('append %s %d' % (name, len(data)))
        fd = os.open(self.m(name), os.O_WRONLY | os.O_APPEND)
        try:
            assert os.write(fd, data) == len(data)
        finally:
            os.close(fd)
        o.put(len(o.data), data)

    def op_truncate(self):
        name, o = self.pick()
        if self.rng.random() < 0.1:
            self.step('open %s O_TRUNC' % name)
            os.close(os.open(self.m(name), os.O_WRONLY | os.O_TRUNC))
            o.resize(0)
            return
        size = self.rng.randrange(MAXSIZE)
        self.step('truncate %s %d' % (name, size))
        os.truncate(self.m(name), size)
        o.resize(size)

    def op_fallocate(self):
        name, o = self.pick()
        mode = self.rng.choice((0, util.FALLOC_FL_KEEP_SIZE,
                                util.FALLOC_FL_PUNCH_HOLE |
                                util.FALLOC_FL_KEEP_SIZE,
                                util.FALLOC_FL_ZERO_RANGE,
                                util.FALLOC_FL_ZERO_RANGE |
                                util.FALLOC_FL_KEEP_SIZE))
        off = self.rng.randrange(min(len(o.data) + 8192, MAXSIZE))
        n = self.length(off)
        self.step('fallocate %s mode %#x %d+%d' % (name, mode, off, n))
        fd = os.open(self.m(name), os.O_WRONLY)
        try:
            util.fallocate(fd, mode, off, n)
        finally:
            os.close(fd)
        keep = mode & util.FALLOC_FL_KEEP_SIZE
        end = off + n if not keep else min(off + n, len(o.data))
        if mode & (util.FALLOC_FL_PUNCH_HOLE | util.FALLOC_FL_ZERO_RANGE):
            if end > off:
                o.zero(off, end - off)
        elif end > len(o.data):
            o.resize(end)

    def op_rename(self):
        name, o = self.pick()
        to = self.rng.choice([n for n in NAMES if n != name])
        self.step('rename %s %s' % (name, to))
        os.rename(self.m(name), self.m(to))
        if self.names.get(to) is o:
            return                  # two links of one file: nothing
        self.names[to] = self.names.pop(name)

    def op_unlink(self):
        name, _ = self.pick()
        self.step('unlink %s' % name)
        os.unlink(self.m(name))
        del self.names[name]

    def op_link(self):
        name, o = self.pick()
        to = self.free_name()
        if to is None:
            return self.op_unlink()
        self.step('link %s %s' % (name, to))
        os.link(self.m(name), self.m(to))
        self.names[to] = o

    def op_sync(self):
        name, _ = self.pick()
        how = self.rng.choice(('fsync', 'fdatasync', 'dir'))
        self.step('%s %s' % (how, name))
        if how == 'dir':
            fd = os.open(os.path.dirname(self.m(name)), os.O_RDONLY)
        else:
            fd = os.open(self.m(name), os.O_WRONLY)
        try:
            (os.fdatasync if how == 'fdatasync' else os.fsync)(fd)
        finally:
            os.close(fd)

    def op_mmap(self):
        """A write through a shared mapping, made durable by msync."""
        name, o = self.pick()
        if not o.data:
            return self.op_write()
        off = self.rng.randrange(len(o.data))
        data = self.rng.randbytes(min(self.length(off), len(o.data) - off))
        self.step('mmap write %s %d+%d' % (name, off, len(data)))
        with open(self.m(name), 'r+b') as f:
            mm = mmap.mmap(f.fileno(), len(o.data))
            try:
                mm[off:off + len(data)] = data
                mm.flush()
            finally:
                mm.close()
        o.put(off, data)

    # -- checks -----------------------------------------------------------
    def listing(self, root, what):
        """The names under root (and d/) must be the model's."""
        got = set()
        for d in ('', 'd'):
            for n in os.listdir(os.path.join(root, d)):
                got.add(os.path.join(d, n))
        got -= {'d', 'lost+found', MARK}
        if got != set(self.names):
            self.fail('%s: names %s, the model has %s'
                      % (what, sorted(got), sorted(self.names)))

    def same(self, name, o, got, nlink, what):
        self.n['checked'] += len(got)
        want = len(self.names_of(o))
        if nlink != want:
            self.fail('%s: %s has %d links, the model %d'
                      % (what, name, nlink, want))
        if got != o.data:
            self.fail('%s: %s: %d bytes, the model has %d, first '
                      'difference at %d' % (what, name, len(got),
                                            len(o.data),
                                            first_diff(got, o.data)))

    def check_source(self, what):
        """The source itself is the model (no mount in between, or one
        that holds nothing dirty)."""
        self.listing(self.s(), what + ' (source)')
        for name, o in sorted(self.names.items()):
            st = os.stat(self.s(name))
            self.same(name, o, read(self.s(name)), st.st_nlink,
                      what + ' (source)')

    def check(self, what):
        """Through the mount, every name, link count and byte is the
        model's (read from the daemon, not the kernel's pages)."""
        self.listing(self.m(), what)
        for name, o in sorted(self.names.items()):
            got, st = self.read_mount(name)
            self.same(name, o, got, st.st_nlink, what)

    def read_mount(self, name):
        """A file's bytes through the mount after an open (close-to-open:
        a change on the source is seen there), and its fstat."""
        fd = os.open(self.m(name), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            st = os.fstat(fd)
            chunks = []
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                chunks.append(b)
            got = bytearray(b''.join(chunks))
            if len(got) != st.st_size:
                self.fail('%s: fstat says %d bytes, %d read'
                          % (name, st.st_size, len(got)))
            return got, st
        finally:
            os.close(fd)

    def read_blocks(self, name):
        """A file through the mount block by block, O_DIRECT (a read of
        a lost dirty byte answers EIO): its bytes, the lost blocks'
        zeros, and the list of those."""
        fd = os.open(self.m(name), os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, BLOCK)
        out, lost = bytearray(), []
        try:
            size = os.fstat(fd).st_size
            for off in range(0, size, BLOCK):
                n = min(BLOCK, size - off)
                try:
                    k = os.preadv(fd, [buf], off)
                    assert k == n, (name, off, k, n)
                    out += buf[:n]
                except OSError as e:
                    if e.errno != errno.EIO:
                        raise
                    lost.append(off)
                    out += bytes(n)
        finally:
            buf.close()
            os.close(fd)
        return out, lost

    # -- events -----------------------------------------------------------
    def event(self):
        kinds = ['kill9', 'kill9', 'clean', 'mode', 'revalidate', 'edit',
                 'edit'] + ['damage', 'damage'] * DAMAGE
        if self.mode == 'writeback':
            kinds.append('flush')
            # (revalidate=never: the kernel sends no release, the
            # daemon keeps its descriptors: the source stays busy)
            if self.reval != 'never':
                kinds.append('refused')
            if not self.log_gone:
                kinds.append('dellog')
        kind = self.rng.choice(kinds)
        self.n['events'] += 1
        self.step('event %d: %s' % (self.n['events'], kind))
        getattr(self, 'ev_' + kind)()

    def ev_kill9(self):
        self.kill()
        self.remount()
        self.check('after kill -9 and remount')

    def ev_clean(self):
        self.stop()
        self.remount()
        self.check('after a clean remount')

    def ev_mode(self):
        self.end()
        mode = 'writeback'
        if self.mode == 'writeback':
            mode = self.rng.choice(('writethrough', 'writearound'))
        self.remount(mode)
        self.check('after a remount in ' + mode)

    def ev_revalidate(self):
        self.end()
        self.remount('writeback', self.rng.choice(('never', '2')))
        self.check('after a remount with revalidate=' + self.reval)

    def ev_flush(self):
        hotfsctl('flush', self.ws.mnt)
        self.check_source('after hotfsctl flush')

    def ev_refused(self):
        """The source refuses the flush at the unmount: the data stays
        in the log, for the next mount."""
        if self.holds_removed():
            # a removed file the kernel still holds keeps the source busy
            # (EBUSY): its files made immutable instead
            how = self.refuse_immutable()
        else:
            how = self.refuse_read_only()
        self.step('unmount')
        try:
            util.unmount_cmd(self.ws.mnt)
            rc = self.proc.wait(timeout=util.TIMEOUT)
        finally:
            how()
        log = self.ws.log_text(self.proc)
        stay = re.findall(r'(\d+) dirty bytes of \d+ files could not be '
                          r'written to the source \([^)]*\): they stay in '
                          r'the cachedir', log)
        if rc == 0 and not stay:
            # nothing was dirty; the mark may stay (a read-only source):
            # the next mount removes it
            self.clean(mark=False)
        elif rc != 1 or len(stay) != 1:
            self.fail('the unmount over a refusing source exited %d, '
                      'and said %r' % (rc, stay))
        self.remount()
        self.check('after a refused flush and a remount')

    def holds_removed(self):
        """Does the daemon hold a source file removed since?"""
        fds = '/proc/%d/fd' % self.proc.pid
        for fd in os.listdir(fds):
            try:
                t = os.readlink(os.path.join(fds, fd))
            except OSError:
                continue
            if t.startswith(self.s()) and t.endswith(' (deleted)'):
                return True
        return False

    def refuse_read_only(self):
        """The source's ext4 remounted read-only (once the daemon's
        writable descriptors are closed); returns what undoes it."""
        def remount(how):
            r = subprocess.run(['mount', '-o', 'remount,' + how,
                                self.sdev.dir], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            assert r.returncode == 0 or b'busy' in r.stdout, r.stdout
            return r.returncode == 0
        self.step('source read-only')
        util.wait_for(lambda: remount('ro'), 'the source read-only')

        def read_write():
            util.wait_for(lambda: remount('rw'), 'the source writable')
        return read_write

    def refuse_immutable(self):
        """Every file of the model immutable on the source (chattr +i);
        returns what undoes it."""
        paths = [self.s(n) for n in sorted(self.names)]

        def chattr(flag):
            for p in paths:
                subprocess.run(['chattr', flag, p], check=True)
        self.step('source files immutable')
        chattr('+i')

        def mutable():
            chattr('-i')
        return mutable

    def ev_dellog(self):
        """The log deleted while mounted: what it holds goes to the
        source at once, and later writes too."""
        self.step('rm wlog')
        os.unlink(os.path.join(self.cache, 'wlog'))
        self.log_gone = True
        util.wait_for(lambda: wb_state(self.ws.mnt)[0] == 'writethrough',
                      'the writeback state writethrough')
        util.wait_for(lambda: self.stats()['dirty_bytes'] == '0',
                      'the log\'s data on the source')
        self.check_source('after the log was deleted')
        util.wait_for(lambda: not os.path.lexists(self.s(MARK)),
                      'the mark removed')
        self.ops(self.rng.randint(1, 6))
        self.check_source('writes after the log was deleted')
        self.check('after the log was deleted')

    def ev_edit(self):
        """The source changed while no daemon ran."""
        self.end()
        edits = {}
        for name in self.rng.sample(sorted(self.names),
                                    min(2, len(self.names))):
            if name in self.names:
                self.edit(name, edits)
        # the version a conflict keeps is the file's after every edit
        # (another name of it may have been edited after this one)
        for name, e in edits.items():
            edits[name] = e[:3] + (read(self.s(name)),) + e[4:]
        if self.rng.random() < 0.3:
            name = self.free_name()
            if name and len(self.objs()) < MAXFILES:
                data = self.rng.randbytes(self.length(0))
                self.step('source: create %s %d' % (name, len(data)))
                with open(self.s(name), 'wb') as f:
                    f.write(data)
                self.names[name] = Obj(data)
        self.edited = True
        self.remount(reval=self.rng.choice((None, '2')), check=False)
        self.check_edits(edits)
        if self.mode != 'writeback':
            self.check_source('the %s mount' % self.mode)
        self.check('after a change on the source')

    def edit(self, name, edits):
        o = self.names[name]
        size = os.stat(self.s(name)).st_size
        kind = self.rng.choice(('overwrite', 'overwrite', 'append',
                                'unlink'))
        if kind == 'unlink':
            self.step('source: unlink %s' % name)
            os.unlink(self.s(name))
            del self.names[name]
        elif kind == 'append' and size == len(o.data) and size < MAXSIZE:
            data = self.rng.randbytes(self.length(size))
            self.step('source: append %s %d' % (name, len(data)))
            with open(self.s(name), 'ab') as f:
                f.write(data)
            o.put(size, data)
        elif min(size, len(o.data)) > 0 and \
                all(e[0] is not o for e in edits.values()):
            off = self.rng.randrange(min(size, len(o.data)))
            n = min(self.length(off), min(size, len(o.data)) - off)
            data = self.rng.randbytes(n)
            self.step('source: overwrite %s %d+%d' % (name, off, n))
            with open(self.s(name), 'r+b') as f:
                f.seek(off)
                f.write(data)
            st = os.stat(self.s(name))
            edits[name] = (o, off, data, read(self.s(name)), st.st_ino)

    def check_edits(self, edits):
        """Each byte of an overwritten range is the edit's or the log's
        (the model's); where the log's won, the source's version is
        kept whole in cachedir/conflicts/."""
        kept = os.path.join(self.cache, 'conflicts')
        for name, (o, off, data, version, ino) in edits.items():
            got, _ = self.read_mount(name)
            if len(got) != len(o.data):
                self.fail('%s after an edit on the source: %d bytes, the '
                          'model has %d' % (name, len(got), len(o.data)))
            won = 0
            for i, v in enumerate(got[off:off + len(data)]):
                if v != data[i]:
                    if v != o.data[off + i]:
                        self.fail('%s, byte %d: neither the edit\'s nor '
                                  'the log\'s' % (name, off + i))
                    won += 1
            if won and not any(
                    k.startswith('%d-' % ino) and
                    read(os.path.join(kept, k)) == version
                    for k in (os.listdir(kept) if os.path.isdir(kept)
                              else ())):
                self.fail('%s: the log\'s bytes won over %d bytes of an '
                          'edit on the source, and the edited version is '
                          'not kept in %s' % (name, won, kept))
            self.n['checked'] += len(data)
            # the edit was written there too: where the log's bytes won,
            # a later damage of the log's copy may leave the source's
            o.put(off, data)
            o.put(off, got[off:off + len(data)])

    def ev_damage(self):
        """A byte flipped in a live record of the log after a kill -9."""
        self.kill()
        wlog = os.path.join(self.cache, 'wlog')
        recs, synced = live_records(wlog)
        torn = silent = False
        if recs:
            r = self.rng.choice(recs)
            torn = not attested(recs, synced, r.seq)
            blk, at = r.pos, self.rng.randrange(8, 96)
            if r.type in (WR_DATA, WR_MULTI) and r.nblk and \
                    self.rng.random() < 0.7:
                blk = r.pos + 1 + self.rng.randrange(r.nblk)
                at = self.rng.randrange(BLOCK)
            # a torn last record whose header is gone: no record at all
            silent = torn and blk == r.pos and r is recs[-1]
            self.step('damage %r at block %d (%s)' % (
                r, blk, 'torn' if torn else 'attested'))
            flip(wlog, blk, at)
        self.remount('writeback', None)
        self.check_damaged(torn, silent)
        self.check('after a damaged log and the restore')

    def check_damaged(self, torn, silent):
        """Differences only where the daemon says the log was damaged:
        EIO for a file named lost, or records dropped or unreadable and
        then bytes once written there, at any size (a write may span
        records).  torn: the damaged record was past the last sync the
        log attests, which a line must say unless silent (its header
        gone, and it the last: no record at all).  The lost blocks are
        written again from the model; the model takes what else
        differs."""
        log = self.ws.log_text(self.proc)
        said = 'past the last sync' in log
        if torn and not silent and not said:
            self.fail('a torn tail dropped, and the log does not say so')
        told = said or silent or any(s in log for s in (
            'whose header is damaged',
            'no record after it could be found'))
        self.listing(self.m(), 'after a damaged log')
        restore = False
        for name, o in sorted(self.names.items()):
            got, lost = self.read_blocks(name)
            self.n['checked'] += len(got)
            if lost and not any(
                    re.search(re.escape(self.s(n)) + r': \d+ dirty bytes '
                              r'lost', log) for n in self.names_of(o)):
                self.fail('%s: blocks %s read EIO, and the log does not '
                          'name it lost' % (name, lost))
            diff = [i for i in range(len(got))
                    if (i >= len(o.data) or got[i] != o.data[i]) and
                    i // BLOCK * BLOCK not in lost]
            if len(got) != len(o.data) and not told:
                self.fail('%s after a damaged log: %d bytes, the model '
                          'has %d, the source %d'
                          % (name, len(got), len(o.data),
                             os.stat(self.s(name)).st_size))
            if diff and not told:
                self.fail('%s after a damaged log: %d bytes differ from '
                          'byte %d, none said lost' % (name, len(diff),
                                                       diff[0]))
            bad = [i for i in diff if not o.was(i, got[i])]
            if bad:
                self.fail('%s after a damaged log: byte %d never written '
                          'there' % (name, bad[0]))
            for off in lost:
                end = min(off + BLOCK, len(got))
                got[off:end] = o.data[off:end].ljust(end - off, b'\0')
                self.write_back(name, off, bytes(got[off:end]))
                restore = True
            self.n['lost'] += len(diff) + sum(
                min(BLOCK, len(got) - off) for off in lost)
            o.data[:] = got
        if restore and not told:
            state, why = wb_state(self.ws.mnt)
            if state != 'ok':
                self.fail('the lost blocks written again, the state is '
                          '%s: %s' % (state, why))

    def write_back(self, name, off, data):
        self.step('restore %s %d+%d' % (name, off, len(data)))
        fd = os.open(self.m(name), os.O_WRONLY)
        try:
            assert os.pwrite(fd, data, off) == len(data)
        finally:
            os.close(fd)

    def run(self, events):
        try:
            self.mount()
            self.ops(self.rng.randint(4, 10))
            for _ in range(events):
                self.event()
                self.ops(self.rng.randint(2, 14))
            self.stop()
        except (OSError, AssertionError, pytest.fail.Exception) as e:
            if self.failed:
                raise
            self.fail(repr(e))
        print('seed %d: %d events, %d operations, %d bytes checked, %d '
              'lost (reported), %d wrong' % (
                  self.seed, self.n['events'], self.n['ops'],
                  self.n['checked'], self.n['lost'], self.n['wrong']))


def source_fs(ext4):  # noqa: F811
    sdev = ext4('srcfs', 64 << 20)
    # mkfs made it seconds ago with whole-second times: hotfs would
    # (rightly) not trust its stamp for 2 s
    os.rmdir(os.path.join(sdev.dir, 'lost+found'))
    return sdev


@pytest.mark.slow
def test_model(ws, ext4):  # noqa: F811
    """Random operations and events (above) checked against the model,
    HOTFS_MODEL_EVENTS of them."""
    print('HOTFS_MODEL_SEED=%d' % SEED)
    Run(ws, source_fs(ext4), SEED).run(EVENTS)


@pytest.mark.slow
def test_model_cache_read_only(ws, ext4):  # noqa: F811
    """A run whose cache filesystem (errors=remount-ro) fails and goes
    read-only while the log holds dirty data: all of it reaches the
    source, later writes go there; after an fsck of the cache
    filesystem, the next writeback mount over that cachedir shows the
    model, and the source after its clean unmount is the model."""
    print('HOTFS_MODEL_SEED=%d' % SEED)
    sdev = source_fs(ext4)
    cdev = ext4('cachefs', 128 << 20, mkfs_args=['-e', 'remount-ro'])
    trigger = '/sys/fs/ext4/%s/trigger_fs_error' % os.path.basename(cdev.dev)
    if not os.path.exists(trigger):
        pytest.skip('no %s' % trigger)
    r = Run(ws, sdev, SEED, cache=os.path.join(cdev.dir, 'cache'))
    r.mount('writeback')
    r.ops(r.rng.randint(10, 30))
    r.step('the cache filesystem read-only')
    with open(trigger, 'w') as f:
        f.write('1')
    util.wait_for(lambda: read_only(cdev.dir), 'the cachedir read-only')
    util.wait_for(lambda: wb_state(ws.mnt)[0] == 'writethrough',
                  'the writeback state writethrough')
    util.wait_for(lambda: r.stats()['dirty_bytes'] == '0',
                  'the log\'s data on the source')
    r.check_source('after the cache went read-only')
    r.ops(r.rng.randint(5, 15))
    r.check_source('writes after the cache went read-only')
    r.check('after the cache went read-only')
    util.cleanup_mount(r.proc, ws.mnt)
    r.check_source('after the unmount')
    cdev.umount()
    cdev.fsck_and_mount()
    r.mount('writeback')
    r.check('after an fsck of the cache filesystem')
    r.ops(r.rng.randint(5, 15))
    r.stop()


def test_torn_tail_after_damage_said(ws):
    """A log with damage that a sync attests (its bytes then lost, said)
    and, after it, a last record whose damage nothing attests (a torn
    tail): that record is dropped, and one line says so.  (The line was
    missing: the records past the last sync were counted at the first
    bad record only.)"""
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'o' * 65536)
    proc = ws.start(opts=WB + ',writeback_delay=600')
    m = os.path.join(ws.mnt, 'f')
    fd = os.open(m, os.O_WRONLY)
    try:
        for k, c in enumerate(b'ABC'):
            os.pwrite(fd, bytes([c]) * BLOCK, k * 4 * BLOCK)
            os.fsync(fd)
    finally:
        os.close(fd)
    kill9(ws, proc)
    wlog = os.path.join(ws.cache, 'wlog')
    recs, synced = live_records(wlog)
    data = [r for r in recs if r.type == WR_DATA]
    assert [r.off for r in data] == [0, 4 * BLOCK, 8 * BLOCK], recs
    assert attested(recs, synced, data[0].seq)
    assert not attested(recs, synced, data[2].seq)
    flip(wlog, data[0].pos + 1, 100)      # A: attested by B's record
    flip(wlog, data[2].pos + 1, 100)      # C: the last, attested by none
    proc = ws.start(opts=WB + ',writeback_delay=600')
    log = ws.log_text(proc)
    assert 'ends in 1 records past the last sync' in log, log
    assert re.search(re.escape(os.path.join(ws.src, 'f')) +
                     r': 4096 dirty bytes lost', log), log
    fd = os.open(m, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, BLOCK)
    try:
        assert util.call(os.preadv, fd, [buf], 0) == util.Err(errno.EIO)
        assert os.preadv(fd, [buf], 4 * BLOCK) == BLOCK
        assert buf[:] == b'B' * BLOCK
    finally:
        buf.close()
        os.close(fd)
    util.cleanup_mount(proc, ws.mnt)

