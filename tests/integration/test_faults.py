# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults on the devices under hotfs, injected on ext4 filesystems on loop
devices that the test owns.  The test makes them fail with ext4's shutdown
ioctl (EXT4_IOC_SHUTDOWN, NOLOGFLUSH): from then on every read and write
on the filesystem fails with EIO, as on a disk that died.

- The cache device fails, after warm-up or during promotion.  Every read
  through the mount still returns the source's bytes, the daemon stays up,
  logs the failure once and shows it in .hotfs/stats.  After unmount,
  e2fsck and a remount of the device, hotfs comes up on the same cachedir
  and caches again.
- The source fails (EIO), is full (ENOSPC), or loses files and
  directories behind the mount.  Each call through the mount gets what the
  same call on the source gets (mergerfs's compare_calls), the daemon stays
  up, and it unmounts cleanly.  Two exceptions, both checked: a handle
  opened before the source failed may still be served the extents the
  cache holds (with the source's bytes), and an append into the room left
  in a full filesystem's last block may be a short write through the
  mount where ext4 fails the caller's whole write (see
  test_source_enospc).

Each test skips, with the reason, where loop devices, ext4 or the shutdown
ioctl are missing.  Teardown unmounts hotfs, then the ext4 filesystems,
then detaches the loop devices, whether the test passed or not.
"""
import errno
import fcntl
import json
import os
import random
import shutil
import stat
import struct
import subprocess
import threading

import pytest

import util
from util import Err

EXT = 256 * 1024
EXT4_IOC_SHUTDOWN = 0x8004587d          # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 2


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)


class LoopExt4:
    """An ext4 filesystem in an image file on a loop device, mounted on
    a directory of the workspace."""

    def __init__(self, root, name, size):
        self.img = os.path.join(root, name + '.img')
        self.dir = os.path.join(root, name)
        self.size = size
        self.dev = None
        self.mounted = False

    def create(self, mkfs_args=()):
        for tool in ('mkfs.ext4', 'losetup', 'e2fsck'):
            if not shutil.which(tool):
                pytest.skip('%s is not installed' % tool)
        with open(self.img, 'wb') as f:
            f.truncate(self.size)
        r = run(['mkfs.ext4', '-q', '-F', '-b', '4096', '-E',
                 'lazy_itable_init=0,lazy_journal_init=0'] +
                list(mkfs_args) + [self.img])
        assert r.returncode == 0, r.stdout
        r = run(['losetup', '--show', '-f', self.img])
        if r.returncode != 0:
            pytest.skip('no loop device: %s' % r.stdout.decode().strip())
        self.dev = r.stdout.decode().strip()
        os.mkdir(self.dir)
        r = run(['mount', '-t', 'ext4', self.dev, self.dir])
        if r.returncode != 0:
            pytest.skip('cannot mount ext4 on %s: %s'
                        % (self.dev, r.stdout.decode().strip()))
        self.mounted = True

    def shutdown(self):
        """Every later I/O on the filesystem fails with EIO."""
        fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN,
                        struct.pack('I', EXT4_GOING_FLAGS_NOLOGFLUSH))
        except OSError as e:
            if e.errno in (errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL):
                pytest.skip('ext4 shutdown ioctl not supported: %s' % e)
            raise
        finally:
            os.close(fd)

    def umount(self):
        """Unmount, waiting while it is busy: the files a process had
        registered with io_uring are released by the kernel a moment after
        the process exits."""
        out = []

        def done():
            r = run(['umount', self.dir])
            out[:] = [r.stdout]
            assert r.returncode == 0 or b'busy' in r.stdout, r.stdout
            return r.returncode == 0
        try:
            util.wait_for(done, 'umount %s' % self.dir)
        except pytest.fail.Exception:
            pytest.fail('umount %s: %s' % (self.dir, out))
        self.mounted = False

    def fsck_and_mount(self, opts='rw'):
        """Repair (journal replay) and mount again: healthy again."""
        r = run(['e2fsck', '-fy', self.dev])
        # 0: clean, 1: errors corrected, 2: corrected (reboot advised)
        assert r.returncode in (0, 1, 2), r.stdout
        r = run(['mount', '-t', 'ext4', '-o', opts, self.dev, self.dir])
        assert r.returncode == 0, r.stdout
        self.mounted = True

    def cleanup(self):
        if self.mounted and util.is_mounted(self.dir):
            if run(['umount', self.dir]).returncode != 0:
                run(['umount', '-l', self.dir])
        self.mounted = False
        if self.dev:
            # after a lazy unmount the device is detached when released
            run(['losetup', '-d', self.dev])
            self.dev = None


@pytest.fixture
def ext4(ws):
    """ext4(name, size) makes a LoopExt4 in the workspace.  Teardown:
    hotfs first (it holds files on them), then the filesystems, then the
    loop devices."""
    made = []

    def make(name, size, mkfs_args=()):
        fs = LoopExt4(ws.root, name, size)
        made.append(fs)
        fs.create(mkfs_args)
        return fs
    try:
        yield make
    finally:
        for p, mnt, _ in ws.daemons:
            util.cleanup_mount(p, mnt)
        for fs in reversed(made):
            fs.cleanup()


def stats(mnt):
    with open(os.path.join(mnt, '.hotfs', 'stats.json')) as f:
        return json.load(f)


def write_random(path, size, seed):
    data = random.Random(seed).randbytes(size)
    with open(path, 'wb') as f:
        f.write(data)
    return data


# sizes around the extent boundaries: tiny, a block, one extent exactly,
# one extent and a bit, several extents and a partial one
SIZES = [1, 3000, 4096, EXT, EXT + 3, 4 * EXT + 12345]


def make_tree(root, prefix='f', seed=0, sizes=SIZES):
    """Files of SIZES in root and root/sub; returns {relpath: bytes}."""
    os.makedirs(os.path.join(root, 'sub'), exist_ok=True)
    files = {}
    for i, size in enumerate(sizes):
        for d in ('', 'sub/'):
            name = '%s%s%d' % (d, prefix, i)
            files[name] = write_random(os.path.join(root, name), size,
                                       seed * 1000 + len(files))
    return files


def check_all(mnt, files):
    """Every file read cold through the mount equals the source's bytes."""
    for name, data in files.items():
        got = util.read_cold(os.path.join(mnt, name))
        assert got == data, '%s: %d bytes read, %d in the source, ' \
            'first difference at %s' % (name, len(got), len(data),
                                        next((i for i, (a, b) in
                                              enumerate(zip(got, data))
                                              if a != b), 'the end'))


def read_pieces(mnt, files):
    """4 KiB out of the middle of every extent, each through its own
    handle, from the daemon (not the page cache)."""
    for name, data in files.items():
        for off in range(EXT // 2, len(data), EXT):
            fd = os.open(os.path.join(mnt, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                assert os.pread(fd, 4096, off) == data[off:off + 4096], \
                    (name, off)
            finally:
                os.close(fd)


def warm_on_device(ws, ext4):
    """A mount whose cachedir is on a small ext4 of its own, warmed with
    make_tree's files.  Returns (device, cachedir, files, daemon)."""
    cdev = ext4('cachefs', 256 << 20)
    cache = os.path.join(cdev.dir, 'cache')
    files = make_tree(ws.src)
    proc = ws.start(cachedir=cache, opts=CACHE_OPTS)
    warm(ws.mnt, files)
    return cdev, cache, files, proc


def warm(mnt, files):
    """Read files until the store holds them and serves them."""
    check_all(mnt, files)
    check_all(mnt, files)
    util.wait_for(lambda: stats(mnt)['promotion_queue_depth'] == 0 and
                  stats(mnt)['cached_extents'] > 0,
                  'the warm-up reads to be promoted', timeout=30)
    before = stats(mnt)['read_hit_bytes']
    check_all(mnt, files)
    s = stats(mnt)
    assert s['read_hit_bytes'] > before, 'nothing served from the cache ' \
        'after warm-up: %r' % s
    return s


def store_lines(text):
    """Log lines of the cache store (the daemon prefixes them store:)."""
    return [ln for ln in text.splitlines() if 'store:' in ln]


# --------------------------------------------------------------------------
# The cache device fails

CACHE_OPTS = 'cachesize=96M,threshold=1'


def remount_and_recover(ws, cdev, cache, files, min_recovered=0):
    """hotfs was stopped: repair and remount the cache device, mount
    hotfs on the same cachedir; it comes up healthy, serves the right
    bytes (min_recovered extents or more of them from what the store
    kept) and caches again."""
    cdev.umount()
    cdev.fsck_and_mount()
    proc = ws.start(cachedir=cache, opts=CACHE_OPTS)
    s = stats(ws.mnt)
    assert s['store_state'] == 'ok', s
    recovered = s['recovered_extents']
    assert recovered >= min_recovered, s
    check_all(ws.mnt, files)
    # what survived in the store is served, and verified correct
    assert (stats(ws.mnt)['read_hit_bytes'] > 0) == (recovered > 0), \
        stats(ws.mnt)
    s = warm(ws.mnt, files)
    assert s['store_state'] == 'ok' and s['cache_io_errors'] == 0, s
    ws.stop(proc)
    print('recovered %d extents; %d cached after warm-up'
          % (recovered, s['cached_extents']))


def test_cache_device_eio(ws, ext4):
    """The cache device dies after warm-up: cached files, files promoted
    after the failure, and files written through the mount all read
    back as the source has them; one log line; store_state off."""
    cdev, cache, files, proc = warm_on_device(ws, ext4)
    # a clean unmount commits the store: these extents are durable
    ws.stop(proc)
    proc = ws.start(cachedir=cache, opts=CACHE_OPTS)
    durable = stats(ws.mnt)['recovered_extents']
    assert durable > 0, stats(ws.mnt)
    # and some more, promoted but perhaps not yet committed
    files.update(make_tree(ws.src, prefix='mid', seed=2))
    warm(ws.mnt, files)
    mark = len(ws.log_text(proc))

    cdev.shutdown()
    at = stats(ws.mnt)
    # new files, first read after the failure (promotion must fail)
    files.update(make_tree(ws.src, prefix='late', seed=1))
    for _ in range(3):
        check_all(ws.mnt, files)
        # and pieces of extents (a promotion would read the source again)
        read_pieces(ws.mnt, files)
    # writes through the mount (both the invalidation and the source
    # write must cope with the dead store)
    m = os.path.join(ws.mnt, 'f5')
    with open(m, 'r+b') as f:
        f.seek(EXT - 10)
        f.write(b'W' * 100)
    d = bytearray(files['f5'])
    d[EXT - 10:EXT + 90] = b'W' * 100
    files['f5'] = bytes(d)
    os.truncate(os.path.join(ws.mnt, 'sub/f4'), 7)
    files['sub/f4'] = files['sub/f4'][:7]
    check_all(ws.mnt, files)

    s = stats(ws.mnt)
    assert s['store_state'] == 'off', s
    assert 'Input/output error' in s['store_reason'], s
    # a dead store costs the source nothing: no promotion reads it again
    assert s['promotions_reading_source'] == at['promotions_reading_source'] \
        and s['promotion_queued'] == at['promotion_queued'], (at, s)
    assert s['not_promoted_store'] > at['not_promoted_store'], s
    assert proc.poll() is None, 'hotfs died'
    log = ws.log_text(proc)[mark:]
    lines = [ln for ln in log.splitlines() if ln.strip()]
    assert len(store_lines(log)) == 1 and len(lines) == 1, \
        'expected one log line about the cache device, got:\n' + log
    assert 'off' in lines[0], lines
    ws.stop(proc)
    # the extents made durable before the failure are still there
    remount_and_recover(ws, cdev, cache, files, min_recovered=durable)


@pytest.mark.parametrize('fault', ['eio', 'ro'])
def test_cache_device_dead_at_mount(ws, ext4, fault):
    """hotfs mounted again while the cache device is still dead (EIO),
    or mounted read-only: it comes up without the store, says why (one
    log line, store_state off) and serves the source; once the device is
    repaired, the next mount finds everything the store had committed."""
    cdev, cache, files, proc = warm_on_device(ws, ext4)
    ws.stop(proc)
    if fault == 'eio':
        cdev.shutdown()
    else:
        cdev.umount()
        cdev.fsck_and_mount('ro')
    proc = ws.start(cachedir=cache, opts=CACHE_OPTS)
    s = stats(ws.mnt)
    assert s['store_state'] == 'off', s
    why = 'Input/output error' if fault == 'eio' else 'Read-only file system'
    assert why in s['store_reason'], s
    for _ in range(3):
        check_all(ws.mnt, files)
        read_pieces(ws.mnt, files)
    lines = ws.log_text(proc).splitlines()[1:]     # after the command
    off = [ln for ln in lines if 'cache is off' in ln]
    assert len(lines) == 2 and len(off) == 1 and why in off[0] and \
        any('mounted' in ln for ln in lines), lines
    ws.stop(proc)
    remount_and_recover(ws, cdev, cache, files, min_recovered=sum(
        max(1, (len(d) + EXT - 1) // EXT) for d in files.values()))


def test_cache_device_eio_while_promoting(ws, ext4):
    """The cache device dies while readers are promoting extents (reads in
    two threads, in a loop): no reader ever sees an error or a wrong
    byte, and the store recovers on remount."""
    cdev = ext4('cachefs', 256 << 20)
    cache = os.path.join(cdev.dir, 'cache')
    files = {}
    for i in range(48):
        name = 'p%02d' % i
        size = (i % 4 + 1) * EXT - (i % 3) * 1000
        files[name] = write_random(os.path.join(ws.src, name), size, i)
    total_bytes = sum(len(d) for d in files.values())
    proc = ws.start(cachedir=cache, opts=CACHE_OPTS + ',promote_rate=4M')
    names = sorted(files)
    stop = threading.Event()
    passes_after = [0, 0]
    failures = []
    broken = threading.Event()

    def reader(k):
        """Reader 0 reads whole files (promoted from its own bytes),
        reader 1 pieces of extents (promoted by reading the source again,
        at promote_rate: they wait in the queue)."""
        order = names[k::2] + names[1 - k::2]
        try:
            while not stop.is_set():
                for n in order:
                    if k == 1:
                        read_pieces(ws.mnt, {n: files[n]})
                    elif util.read_cold(os.path.join(ws.mnt, n)) != \
                            files[n]:
                        failures.append('%s: wrong bytes' % n)
                if broken.is_set():
                    passes_after[k] += 1
        except Exception as e:      # reported to the main thread
            failures.append('reader %d: %r' % (k, e))

    threads = [threading.Thread(target=reader, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    try:
        util.wait_for(lambda: failures or stats(ws.mnt)['promotions'] >= 4,
                      'promotions to start', timeout=30)
        at = stats(ws.mnt)
        cdev.shutdown()
        broken.set()
        util.wait_for(lambda: failures or min(passes_after) >= 2,
                      'two passes of each reader after the failure',
                      timeout=120)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures, failures
    assert proc.poll() is None, 'hotfs died'
    s = stats(ws.mnt)
    assert s['store_state'] == 'off', s
    # promotions were under way when the device failed (bytes: a random
    # reader's miss caches blocks, so records are not extents)
    assert at['cached_bytes'] < total_bytes, at
    print('at the failure: %d of %d bytes cached (%d records), %d queued'
          % (at['cached_bytes'], total_bytes, at['cached_extents'],
             at['promotion_queue_depth']))
    assert len(store_lines(ws.log_text(proc))) == 1, ws.log_text(proc)
    check_all(ws.mnt, files)
    ws.stop(proc)
    remount_and_recover(ws, cdev, cache, files)


# --------------------------------------------------------------------------
# The source fails

SOURCE_MODES = {
    'store': 'threshold=1',
    'attr0': 'threshold=1,attr_timeout=0,entry_timeout=0',
    'nocache': 'nocache',
}


def populate_source(root):
    files = make_tree(root, sizes=[3000, EXT + 3])
    os.symlink('f0', os.path.join(root, 'link'))
    os.mkdir(os.path.join(root, 'emptydir'))
    os.setxattr(os.path.join(root, 'f0'), 'user.k', b'v')
    return files


def same(desc, fn, mnt, src):
    """fn(root, tag) through the mount and on the source itself (tag 'm'
    or 's', for the names a call creates): the same result or errno."""
    a = util.call(fn, mnt, 'm')
    b = util.call(fn, src, 's')
    assert a == b, '%s: through the mount %r, on the source %r' % (
        desc, a, b)
    return a


def eventually_same(desc, fn, mnt, src, timeout=util.TIMEOUT):
    """same(), allowing the kernel's entry and attribute caches of the
    mount (1 s by default) to expire first."""
    res = []

    def agree():
        res[:] = [util.call(fn, mnt, 'm'), util.call(fn, src, 's')]
        return res[0] == res[1]
    try:
        util.wait_for(agree, desc, timeout=timeout)
    except pytest.fail.Exception:
        pytest.fail('%s: through the mount %r, on the source %r' % (
            desc, res[0], res[1]))


def create(path):
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))


def read_file(path):
    with open(path, 'rb') as f:
        return f.read()


def read_range(path, off, size):
    """size bytes at off, from the daemon (not the page cache)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return os.pread(fd, size, off)
    finally:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def read_to_end(fd, off):
    """Read from off in 8 KiB calls, as cat does: (the bytes, 'EOF' or
    the Err that ended it)."""
    got = []
    while True:
        try:
            b = os.pread(fd, 8192, off)
        except OSError as e:
            return b''.join(got), Err(e.errno)
        if not b:
            return b''.join(got), 'EOF'
        got.append(b)
        off += len(b)


def write_at(path, data, off, flags=0):
    fd = os.open(path, os.O_WRONLY | flags)
    try:
        return os.pwrite(fd, data, off)
    finally:
        os.close(fd)


@pytest.mark.parametrize('mode', sorted(SOURCE_MODES))
def test_source_eio(ws, ext4, mode):
    """The source's device dies under a mounted hotfs: every call gets
    what it gets on the source (EIO, or success where ext4 still answers
    from memory), the daemon stays up and unmounts cleanly."""
    sdev = ext4('srcfs', 64 << 20)
    files = populate_source(sdev.dir)
    proc = ws.start(src=sdev.dir, opts=SOURCE_MODES[mode])
    if mode != 'nocache':
        warm(ws.mnt, files)
    else:
        check_all(ws.mnt, files)
    # a file never read, so nothing of it is cached anywhere
    write_random(os.path.join(sdev.dir, 'cold'), 2 * EXT, 99)
    # and one whose first extent only is cached
    half = write_random(os.path.join(sdev.dir, 'half'), 4 * EXT, 98)
    if mode != 'nocache':
        for _ in range(2):
            read_range(os.path.join(ws.mnt, 'half'), 0, EXT)
        util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                      'the first extent of half to be promoted')
    fds = {'m': os.open(os.path.join(ws.mnt, 'f1'), os.O_RDONLY),
           's': os.open(os.path.join(sdev.dir, 'f1'), os.O_RDONLY),
           'mcold': os.open(os.path.join(ws.mnt, 'cold'), os.O_RDONLY),
           'scold': os.open(os.path.join(sdev.dir, 'cold'), os.O_RDONLY),
           'mhalf': os.open(os.path.join(ws.mnt, 'half'), os.O_RDONLY),
           'shalf': os.open(os.path.join(sdev.dir, 'half'), os.O_RDONLY)}
    for fd in fds.values():
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    mark = len(ws.log_text(proc))
    try:
        sdev.shutdown()
        # a handle opened before the failure: EIO as on the source, except
        # that a cached extent (its stamp checked against the open file)
        # may still be served from the cache, with the source's bytes
        got = util.call(os.pread, fds['m'], 100, 0)
        assert util.call(os.pread, fds['s'], 100, 0) == Err(errno.EIO)
        assert got == Err(errno.EIO) or \
            (mode != 'nocache' and got == files['f1'][:100]), got
        # and what was not cached fails as on the source
        for off in (0, EXT - 4096):
            same('read an open, uncached file at %d' % off,
                 lambda r, t: os.pread(fds[t + 'cold'], EXT, off),
                 ws.mnt, sdev.dir)
        # reading on from the end of a cached extent into one that is
        # not: the cached bytes perhaps, then EIO, never an early EOF (a
        # short reply is EOF to the kernel: cp would copy half a file)
        for t in ('m', 's'):
            got, end = read_to_end(fds[t + 'half'], EXT - 4096)
            assert end == Err(errno.EIO), (t, len(got), end)
            assert got == half[EXT - 4096:EXT - 4096 + len(got)], t
        for desc, fn in [
                ('open and read', lambda r, t: read_file(r + '/f0')),
                ('open and read, subdir', lambda r, t:
                 read_file(r + '/sub/f1')),
                ('stat', lambda r, t: util.lstat_summary(r + '/f0')),
                ('stat, never looked up', lambda r, t:
                 os.stat(r + '/absent')),
                ('readdir', lambda r, t: sorted(os.listdir(r))),
                ('readdir, subdir', lambda r, t:
                 sorted(os.listdir(r + '/sub'))),
                ('readlink', lambda r, t: os.readlink(r + '/link')),
                ('getxattr', lambda r, t: os.getxattr(r + '/f0', 'user.k')),
                ('create', lambda r, t: create(r + '/new' + t)),
                ('write', lambda r, t: write_at(r + '/f0', b'x', 0)),
                ('append', lambda r, t: write_at(r + '/f0', b'x', 0,
                                                 os.O_APPEND)),
                ('truncate', lambda r, t: os.truncate(r + '/f0', 1)),
                ('mkdir', lambda r, t: os.mkdir(r + '/d' + t)),
                ('unlink', lambda r, t: os.unlink(r + '/sub/f0')),
                ('rmdir', lambda r, t: os.rmdir(r + '/emptydir')),
                ('rename', lambda r, t: os.rename(r + '/f0', r + '/g' + t)),
                ('symlink', lambda r, t: os.symlink('x', r + '/l' + t)),
                ('chmod', lambda r, t: os.chmod(r + '/f0', 0o600)),
                ('utime', lambda r, t: os.utime(r + '/f0', (1, 1))),
                ('setxattr', lambda r, t: os.setxattr(r + '/f0', 'user.k',
                                                      b'w')),
                ('statfs', lambda r, t: os.statvfs(r).f_blocks)]:
            same(desc, fn, ws.mnt, sdev.dir)
        assert util.call(read_file, os.path.join(ws.mnt, 'f1')) == \
            Err(errno.EIO)
        assert proc.poll() is None, 'hotfs died'
        # the cache device is fine; the source's errors are the callers'
        assert stats(ws.mnt)['store_state'] == \
            ('off' if mode == 'nocache' else 'ok')
        assert ws.log_text(proc)[mark:].strip() == '', \
            ws.log_text(proc)[mark:]
    finally:
        for fd in fds.values():
            os.close(fd)
    ws.stop(proc)


def allocate(path, size):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


def fill(root):
    """Write as root (no reserved blocks on this fs) until ENOSPC, until
    nothing is left even after the delayed allocations are settled."""
    for i in range(10):
        fd = os.open(os.path.join(root, 'filler%d' % i),
                     os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for chunk in (1 << 20, 65536, 4096):
                try:
                    while True:
                        os.write(fd, b'z' * chunk)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
            util.call(os.fsync, fd)
        finally:
            os.close(fd)
        os.sync()
        if os.statvfs(root).f_bavail == 0:
            return
    pytest.fail('%s did not fill up' % root)


@pytest.mark.parametrize('writemode', ['writearound', 'writethrough'])
def test_source_enospc(ws, ext4, writemode):
    """A full source (ext4 without reserved blocks): the writes that need
    space get ENOSPC through the mount as on the source, those that do
    not succeed alike, and the cache (warm, in both write modes) never
    serves a byte that did not reach the source."""
    sdev = ext4('srcfs', 32 << 20, mkfs_args=['-m', '0'])
    # whole blocks: an append has no room left in a last block (the mount
    # and the source are the same filesystem, so the first caller would
    # take it)
    files = make_tree(sdev.dir, sizes=[4096, 2 * EXT])
    # a file with a hole (writing into it needs space)
    sparse = os.path.join(sdev.dir, 'sparse')
    with open(sparse, 'wb') as f:
        f.write(b's' * 4096)
        f.truncate(EXT + 8192)
    files['sparse'] = b's' * 4096 + bytes(EXT + 4096)
    # room for 4091 bytes in their last block (one file each for the
    # mount and the source, so that the first caller does not take it)
    for t in 'ms':
        files['tail' + t] = write_random(os.path.join(sdev.dir, 'tail' + t),
                                         2 * EXT + 5, 7)
    proc = ws.start(src=sdev.dir,
                    opts='threshold=1,attr_timeout=0,entry_timeout=0,'
                    'writemode=' + writemode)
    warm(ws.mnt, files)
    fill(sdev.dir)
    # 8 KiB into the 4091 bytes left in a last block: ext4 writes what
    # fits (a short write), or fails the whole write when the page cache
    # folio it takes also spans the next, unallocated block (large
    # folios; it depends on the write's length and on what is cached, and
    # the daemon may write in pieces).  Either way, what the call reports
    # is what the source then holds, through the mount as directly.
    for t, r in (('m', ws.mnt), ('s', sdev.dir)):
        p = os.path.join(r, 'tail' + t)
        got = util.call(write_at, p, b'a' * 8192, 0, os.O_APPEND)
        assert got in (4091, Err(errno.ENOSPC)), (p, got)
        size = os.stat(os.path.join(sdev.dir, 'tail' + t)).st_size
        assert size == 2 * EXT + 5 + (got if got == 4091 else 0), (p, got)
    for desc, fn in [
            ('fill a hole', lambda r, t: write_at(r + '/sparse', b'h' * 8192,
                                                  EXT)),
            ('append', lambda r, t: write_at(r + '/f1', b'a' * 8192, 0,
                                             os.O_APPEND)),
            ('write past the end', lambda r, t:
             write_at(r + '/sub/f1', b'e' * 8192, 3 * EXT)),
            ('fallocate', lambda r, t: allocate(r + '/f0', 1 << 20)),
            ('mkdir', lambda r, t: os.mkdir(r + '/d' + t)),
            ('long symlink', lambda r, t: os.symlink('x' * 200,
                                                     r + '/l' + t)),
            # in place over allocated blocks: no new space needed
            ('overwrite', lambda r, t: write_at(r + '/f1',
                                                t.encode() * 5000, 100)),
            ('grow sparse', lambda r, t: os.truncate(r + '/sub/f0', 1 << 30)),
            ('shrink', lambda r, t: os.truncate(r + '/sub/f0', 1000))]:
        same(desc, fn, ws.mnt, sdev.dir)
    # what the source holds now, whatever each call did
    for name in files:
        files[name] = read_file(os.path.join(sdev.dir, name))
    check_all(ws.mnt, files)
    assert files['f1'][100:5100] == b's' * 5000
    assert proc.poll() is None, 'hotfs died'
    assert stats(ws.mnt)['store_state'] == 'ok'
    ws.stop(proc)


@pytest.mark.source_changes
@pytest.mark.parametrize('mode', ['default', 'attr0'])
def test_source_vanished(ws, mode):
    """Files and directories removed (or replaced) in the source behind
    the mount: open handles keep working as on the source, paths fail
    with ENOENT as on the source (never ESTALE), and names whose type
    changed are seen as the source has them.  With the default timeouts
    the kernel may keep a name for entry_timeout: the mount then has to
    agree with the source within a few seconds."""
    opts = 'threshold=1' + (',attr_timeout=0,entry_timeout=0'
                            if mode == 'attr0' else '')
    files = make_tree(ws.src, sizes=[3000, EXT + 3, 3 * EXT])
    os.makedirs(os.path.join(ws.src, 'd', 'sub'))
    with open(os.path.join(ws.src, 'd', 'sub', 'x'), 'w') as f:
        f.write('x')
    with open(os.path.join(ws.src, 'sub', 'tofile'), 'w'):
        pass
    os.mkdir(os.path.join(ws.src, 'todir'))
    proc = ws.start(opts=opts)
    warm(ws.mnt, files)
    for p in ('sub/tofile', 'todir', 'd/sub/x'):
        os.stat(os.path.join(ws.mnt, p))
    roots = {'m': ws.mnt, 's': ws.src}
    fds = {t: os.open(os.path.join(r, 'f2'), os.O_RDONLY)
           for t, r in roots.items()}
    dfds = {t: os.open(os.path.join(r, 'd', 'sub'), os.O_RDONLY |
                       os.O_DIRECTORY) for t, r in roots.items()}
    try:
        # behind the mount: a hot file, a whole directory tree, and two
        # names whose type changes
        os.unlink(os.path.join(ws.src, 'f2'))
        shutil.rmtree(os.path.join(ws.src, 'd'))
        os.unlink(os.path.join(ws.src, 'sub', 'tofile'))
        os.mkdir(os.path.join(ws.src, 'sub', 'tofile'))
        os.rmdir(os.path.join(ws.src, 'todir'))
        with open(os.path.join(ws.src, 'todir'), 'w') as f:
            f.write('now a file')

        def kind(p):
            return stat.S_IFMT(os.lstat(p).st_mode)
        checks = [
            ('read the open, removed file', lambda r, t:
             os.pread(fds[t], 3 * EXT, 0) == files['f2']),
            ('its link count', lambda r, t: os.fstat(fds[t]).st_nlink),
            ('stat the removed file', lambda r, t: os.stat(r + '/f2')),
            ('open it', lambda r, t: read_file(r + '/f2')),
            ('unlink it', lambda r, t: os.unlink(r + '/f2')),
            ('rename it', lambda r, t: os.rename(r + '/f2', r + '/g')),
            ('chmod it', lambda r, t: os.chmod(r + '/f2', 0o600)),
            ('create it again', lambda r, t: (create(r + '/f2'),
                                              os.unlink(r + '/f2'))),
            ('readdir the parent', lambda r, t: sorted(os.listdir(r))),
            ('stat the removed dir', lambda r, t: os.stat(r + '/d/sub')),
            ('stat in the removed dir', lambda r, t:
             os.stat(r + '/d/sub/x')),
            ('readdir the removed dir', lambda r, t: os.listdir(r + '/d')),
            ('create in the removed dir by path', lambda r, t:
             create(r + '/d/sub/n' + t)),
            ('open dir handle: stat', lambda r, t:
             os.stat('x', dir_fd=dfds[t])),
            ('open dir handle: create', lambda r, t:
             create('/proc/self/fd/%d/n%s' % (dfds[t], t))),
            ('open dir handle: mkdir', lambda r, t:
             os.mkdir('n' + t, dir_fd=dfds[t])),
            ('open dir handle: link count', lambda r, t:
             os.fstat(dfds[t]).st_nlink),
            ('file now a dir', lambda r, t: kind(r + '/sub/tofile')),
            ('file now a dir: readdir', lambda r, t:
             os.listdir(r + '/sub/tofile')),
            ('dir now a file', lambda r, t: kind(r + '/todir')),
            ('dir now a file: read', lambda r, t: read_file(r + '/todir')),
            ('dir now a file: readdir', lambda r, t:
             os.listdir(r + '/todir')),
        ]
        for desc, fn in checks:
            if mode == 'attr0':
                same(desc, fn, ws.mnt, ws.src)
                continue
            eventually_same(desc, fn, ws.mnt, ws.src)
        assert proc.poll() is None, 'hotfs died'
    finally:
        for fd in list(fds.values()) + list(dfds.values()):
            os.close(fd)
    del files['f2']
    check_all(ws.mnt, files)
    ws.stop(proc)
