# SPDX-License-Identifier: GPL-2.0-or-later
"""Several processes reading and writing through one mount at once: each
its own file, disjoint stripes of a shared file, records appended to a
shared log, a shared read-only file, and names created, renamed and
removed in a shared directory.  Every byte read is checked, and at the end
the mount and the source agree.
"""
import errno
import os
import random
import traceback

import pytest

import util
from conftest import MODES, ignore_atime_in

NPROC = 8
OWN_SIZE = 2 << 20
STRIPE = 256 * 1024 + 333          # not a multiple of any page or extent
RECORD = 64
NRECORDS = 200
COMMON_SIZE = 4 << 20
CHURN = 60


def pattern(seed, n):
    return random.Random(seed).randbytes(n)


def worker(i, mnt):
    rng = random.Random(i)

    # 1. its own file: random-sized writes, random reads, a truncate
    own = os.path.join(mnt, 'own%d' % i)
    data = bytearray(pattern(1000 + i, OWN_SIZE))
    fd = os.open(own, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    off = 0
    while off < OWN_SIZE:
        n = min(rng.randrange(1, 300000), OWN_SIZE - off)
        assert os.pwrite(fd, data[off:off + n], off) == n
        off += n
        if rng.random() < 0.1:
            os.fsync(fd)
    for _ in range(50):
        o = rng.randrange(0, OWN_SIZE)
        n = rng.randrange(1, 200000)
        got = os.pread(fd, n, o)
        assert got == bytes(data[o:o + n]), ('own', i, o, n)
    os.ftruncate(fd, OWN_SIZE // 2 + 7)
    del data[OWN_SIZE // 2 + 7:]
    new = pattern(2000 + i, 100000)
    os.pwrite(fd, new, 1000)
    data[1000:1000 + len(new)] = new
    os.close(fd)
    with open(own, 'rb') as f:
        assert f.read() == bytes(data), ('own reread', i)

    # 2. its stripe of the shared file, in random order
    shared = os.path.join(mnt, 'shared')
    fd = os.open(shared, os.O_RDWR)
    stripe = pattern(3000 + i, STRIPE)
    chunks = []
    o = 0
    while o < STRIPE:
        n = min(rng.randrange(1, 70000), STRIPE - o)
        chunks.append((o, n))
        o += n
    rng.shuffle(chunks)
    base = i * STRIPE
    done = []
    for o, n in chunks:
        assert os.pwrite(fd, stripe[o:o + n], base + o) == n
        done.append((o, n))
        co, cn = rng.choice(done)
        assert os.pread(fd, cn, base + co) == stripe[co:co + cn], \
            ('stripe', i, co, cn)
    os.close(fd)

    # 3. records appended to a shared log
    fd = os.open(os.path.join(mnt, 'log'), os.O_WRONLY | os.O_APPEND)
    for k in range(NRECORDS):
        rec = ('%d:%d:' % (i, k)).encode().ljust(RECORD - 1, b'.') + b'\n'
        assert os.write(fd, rec) == RECORD
    os.close(fd)

    # 4. the common file, read from random places
    common = pattern(7, COMMON_SIZE)
    with open(os.path.join(mnt, 'common'), 'rb') as f:
        for _ in range(40):
            o = rng.randrange(0, COMMON_SIZE)
            f.seek(o)
            n = rng.randrange(1, 300000)
            assert f.read(n) == common[o:o + n], ('common', i, o)
        f.seek(0)
        assert f.read() == common

    # 5. names in a shared directory
    d = os.path.join(mnt, 'churn')
    for k in range(CHURN):
        a = os.path.join(d, 'w%d-%d' % (i, k))
        with open(a, 'w') as f:
            f.write('%d %d' % (i, k))
        b = a + '.renamed'
        os.rename(a, b)
        assert os.stat(b).st_size == len('%d %d' % (i, k))
        names = os.listdir(d)
        assert os.path.basename(b) in names
        if k % 2:
            os.unlink(b)
        else:
            os.mkdir(a + '.dir')
            os.rmdir(a + '.dir')


def run_workers(mnt, n):
    pids = []
    for i in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                try:
                    worker(i, mnt)
                    code = 0
                except BaseException:
                    os.write(w, traceback.format_exc().encode())
            finally:
                os._exit(code)
        os.close(w)
        pids.append((i, pid, r))
    failures = []
    for i, pid, r in pids:
        with os.fdopen(r, 'rb') as f:
            report = f.read().decode(errors='replace')
        _, status = os.waitpid(pid, 0)
        if status != 0:
            failures.append('worker %d (status %d):\n%s' % (i, status, report))
    return failures


@pytest.mark.parametrize('mode', sorted(MODES))
def test_concurrent_readers_and_writers(ws, mode):
    ignore_atime_in(mode)
    with open(os.path.join(ws.src, 'common'), 'wb') as f:
        f.write(pattern(7, COMMON_SIZE))
    proc = ws.start(opts=MODES[mode])
    mnt = ws.mnt
    with open(os.path.join(mnt, 'shared'), 'wb') as f:
        f.truncate(NPROC * STRIPE)
    open(os.path.join(mnt, 'log'), 'wb').close()
    os.mkdir(os.path.join(mnt, 'churn'))

    failures = run_workers(mnt, NPROC)
    assert not failures, '\n'.join(failures)

    expect = b''.join(pattern(3000 + i, STRIPE) for i in range(NPROC))
    for root in (mnt, ws.src):
        with open(os.path.join(root, 'shared'), 'rb') as f:
            assert f.read() == expect, root
        with open(os.path.join(root, 'log'), 'rb') as f:
            log = f.read()
        assert len(log) == NPROC * NRECORDS * RECORD
        recs = [log[k:k + RECORD] for k in range(0, len(log), RECORD)]
        seen = {}
        for rec in recs:
            assert rec.endswith(b'\n') and rec.count(b'\n') == 1, rec
            i, k, _ = rec.split(b':', 2)
            seen.setdefault(int(i), []).append(int(k))
        # every process's records, whole, in its own order
        assert seen == {i: list(range(NRECORDS)) for i in range(NPROC)}
        names = sorted(os.listdir(os.path.join(root, 'churn')))
        assert names == sorted('w%d-%d.renamed' % (i, k)
                               for i in range(NPROC)
                               for k in range(0, CHURN, 2)), root
    for i in range(NPROC):
        util.assert_same_stat(os.path.join(mnt, 'own%d' % i),
                              os.path.join(ws.src, 'own%d' % i))
    util.assert_same_stat(os.path.join(mnt, 'shared'),
                          os.path.join(ws.src, 'shared'))
    ws.stop(proc)


TOLERATED = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY}
NAMES = 6
OPS = 400


def contender(i, mnt):
    """Random namespace operations on a few shared names; files are only
    ever replaced whole (write a private temporary, rename over), so a
    reader must always see one writer's whole record."""
    rng = random.Random(100 + i)
    d = os.path.join(mnt, 'arena')
    for k in range(OPS):
        name = os.path.join(d, 'n%d' % rng.randrange(NAMES))
        op = rng.random()
        try:
            if op < 0.3:
                rec = ('%d.%d|' % (i, k)).encode()
                tmp = os.path.join(d, 'tmp.%d.%d' % (i, k))
                with open(tmp, 'wb') as f:
                    f.write(rec * (rng.randrange(1, 4000) // len(rec) + 1))
                os.rename(tmp, name)
            elif op < 0.55:
                with open(name, 'rb') as f:
                    body = f.read()
                rec = body[:body.index(b'|') + 1]
                assert body == rec * (len(body) // len(rec)), \
                    ('torn file', name, body[:80])
            elif op < 0.65:
                os.unlink(name)
            elif op < 0.75:
                os.link(name, os.path.join(d, 'n%d' % rng.randrange(NAMES)))
            elif op < 0.85:
                # (nlink may already be 0: a rename can replace the name
                # between the lookup and the getattr, natively too)
                st = os.stat(name)
                assert st.st_size > 0, st
            elif op < 0.9:
                os.mkdir(name + '.d')
                os.rmdir(name + '.d')
            else:
                os.listdir(d)
        except OSError as e:
            if e.errno not in TOLERATED:
                raise


def run_contenders(mnt, n):
    pids = []
    for i in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                try:
                    contender(i, mnt)
                    code = 0
                except BaseException:
                    os.write(w, traceback.format_exc().encode())
            finally:
                os._exit(code)
        os.close(w)
        pids.append((i, pid, r))
    failures = []
    for i, pid, r in pids:
        with os.fdopen(r, 'rb') as f:
            report = f.read().decode(errors='replace')
        _, status = os.waitpid(pid, 0)
        if status != 0:
            failures.append('worker %d (status %d):\n%s' % (i, status, report))
    return failures


@pytest.mark.parametrize('mode', sorted(MODES))
def test_contended_names(ws, mode):
    ignore_atime_in(mode)
    proc = ws.start(opts=MODES[mode])
    os.mkdir(os.path.join(ws.mnt, 'arena'))
    failures = run_contenders(ws.mnt, NPROC)
    assert proc.poll() is None, 'hotfs died: %s' % ws.log_text(proc)[-3000:]
    assert not failures, '\n'.join(failures)
    a = util.tree_snapshot(os.path.join(ws.mnt, 'arena'))
    # before the source is read directly: that read moves the atime of
    # a file last read through the mount from the cache store (a read
    # behind the mount, which the mount is not told of)
    for n in os.listdir(os.path.join(ws.mnt, 'arena')):
        util.assert_same_stat(os.path.join(ws.mnt, 'arena', n),
                              os.path.join(ws.src, 'arena', n))
    b = util.tree_snapshot(os.path.join(ws.src, 'arena'))
    assert a == b
    ws.stop(proc)


def source_fds(pid, src):
    """The targets of the daemon's fds on the source (util.source_fds)."""
    return [t for t, _ in util.source_fds(pid, src)]


@pytest.mark.parametrize('mode', ['default', 'nocache'])
def test_no_fd_leak(ws, mode):
    """Files created, opened, read, renamed and removed through the mount
    leave no file descriptors behind in the daemon."""
    proc = ws.start(opts=MODES[mode])
    d = os.path.join(ws.mnt, 'churn')
    os.mkdir(d)

    def file_fds():
        # directories keep theirs while they exist (the inode's, and
        # the source watch's)
        return [t for t in source_fds(proc.pid, ws.src)
                if not os.path.isdir(t)]
    base = len(file_fds())
    for rnd in range(2):
        for i in range(1000):
            p = os.path.join(d, 'f%d' % i)
            with open(p, 'wb') as f:
                f.write(b'x' * (i * 37 % 5000 + 1))
            with open(p, 'rb') as f:
                f.read()
            if i % 3 == 0:
                os.rename(p, p + '.r')
                p += '.r'
            if i % 2 == 0:
                os.link(p, p + '.h')
                os.unlink(p + '.h')
            os.unlink(p)
        # RELEASE and FORGET are asynchronous: let them arrive
        util.wait_for(lambda: len(file_fds()) <= base + 1,
                      'the daemon to close what it opened (it started with '
                      '%d fds on the source)' % base)
    assert os.listdir(d) == []
    # the last file's RELEASE may still be on its way (the wait above
    # leaves one): a removed file's descriptor must go, not at once
    util.wait_for(lambda: not any(t.endswith(' (deleted)') for t in
                                  source_fds(proc.pid, ws.src)),
                  'the daemon to close the removed files\' descriptors')
    ws.stop(proc)


def lister(i, mnt):
    """Create, rename, make and remove directories in a shared directory,
    and after each rename list it: a process must see its own change."""
    d = os.path.join(mnt, 'shared-dir')
    for k in range(60):
        a = os.path.join(d, 'w%d-%d' % (i, k))
        with open(a, 'w') as f:
            f.write('x')
        b = a + '.renamed'
        os.rename(a, b)
        names = os.listdir(d)
        assert os.path.basename(b) in names, ('new name not listed', b)
        assert os.path.basename(a) not in names, ('old name listed', a)
        if k % 2:
            os.unlink(b)
        else:
            os.mkdir(a + '.dir')
            os.rmdir(a + '.dir')


@pytest.mark.parametrize('mode', sorted(MODES))
def test_listing_shows_own_changes(ws, mode):
    proc = ws.start(opts=MODES[mode])
    os.mkdir(os.path.join(ws.mnt, 'shared-dir'))
    pids = []
    for i in range(NPROC):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                try:
                    lister(i, ws.mnt)
                    code = 0
                except BaseException:
                    os.write(w, traceback.format_exc()[-1500:].encode())
            finally:
                os._exit(code)
        os.close(w)
        pids.append((i, pid, r))
    failures = []
    for i, pid, r in pids:
        with os.fdopen(r, 'rb') as f:
            report = f.read().decode(errors='replace')
        if os.waitpid(pid, 0)[1] != 0:
            failures.append('worker %d:\n%s' % (i, report))
    assert not failures, '\n'.join(failures)
    assert sorted(os.listdir(os.path.join(ws.mnt, 'shared-dir'))) == \
        sorted(os.listdir(os.path.join(ws.src, 'shared-dir')))
    ws.stop(proc)
