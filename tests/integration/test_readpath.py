# SPDX-License-Identifier: GPL-2.0-or-later
"""The cache through a real mount: promotion after the threshold, hits,
scan resistance, coherence with writes and with changes behind hotfs's
back, checksums, restarts, and the .hotfs control directory.

Page cache: every pass drops the kernel's cached pages of the file with
posix_fadvise(DONTNEED) on the mount, so each pass reaches the daemon
(the same effect as drop_caches, limited to the test's files).  Waits are
on counters in .hotfs/stats.json, never fixed sleeps.
"""
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


def wait_stat(mnt, key, at_least, what=None):
    util.wait_for(lambda: stats(mnt)[key] >= at_least,
                  what or '%s >= %d' % (key, at_least))


def read_pass(path, bs=1 << 20):
    """Read the whole file cold (kernel pages dropped first)."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while True:
            b = os.read(fd, bs)
            if not b:
                break
            h.update(b)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return h.hexdigest()


def sha(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_random(path, size, seed=1):
    import random
    r = random.Random(seed)
    with open(path, 'wb') as f:
        f.write(r.randbytes(size))


@pytest.fixture
def cached(ws):
    """A mount with a 64 MiB cache over a few files."""
    write_random(os.path.join(ws.src, 'big'), 3 * EXT + 1234, seed=1)
    os.mkdir(os.path.join(ws.src, 'small'))
    for i in range(10):
        write_random(os.path.join(ws.src, 'small', 'f%d' % i),
                     100 + 1500 * i, seed=10 + i)
    ws.proc = ws.start(opts='cachesize=64M')
    return ws


def test_threshold_then_hits(cached):
    ws = cached
    m = os.path.join(ws.mnt, 'big')
    want = sha(os.path.join(ws.src, 'big'))
    assert read_pass(m) == want
    s = stats(ws.mnt)
    assert s['promotions'] == 0, 'one read must not promote'
    assert s['not_promoted_below_threshold'] >= 4
    assert s['read_hits'] == 0
    assert read_pass(m) == want          # second access: promote
    wait_stat(ws.mnt, 'promotions', 4)
    before = stats(ws.mnt)
    assert read_pass(m) == want
    after = stats(ws.mnt)
    # the kernel may read the last page twice: at least the file's size
    assert after['read_hit_bytes'] - before['read_hit_bytes'] >= 3 * EXT + 1234
    assert after['read_miss_bytes'] == before['read_miss_bytes']
    assert after['cached_extents'] == 4
    # the reader's buffers were reused: the source was read once per pass
    assert after['promotions_from_reader'] == 4
    assert after['promotions_reading_source'] == 0


def test_cached_reads_without_io_uring(ws, monkeypatch):
    """Where io_uring is refused (a seccomp profile refuses it here, as
    a container's does), cached bytes are still served, read with pread,
    and the stats say which engine reads them."""
    wrap = os.environ.get('HOTFS_NO_URING')
    if not wrap:
        pytest.skip('HOTFS_NO_URING is not set (run through meson)')
    monkeypatch.setenv('HOTFS_WRAP', wrap)
    write_random(os.path.join(ws.src, 'big'), 3 * EXT + 1234, seed=3)
    ws.start(opts='cachesize=64M,threshold=1')
    m = os.path.join(ws.mnt, 'big')
    want = sha(os.path.join(ws.src, 'big'))
    assert read_pass(m) == want
    wait_stat(ws.mnt, 'promotions', 4)
    before = stats(ws.mnt)
    assert before['read_engine'] == 'pread'
    assert read_pass(m) == want
    after = stats(ws.mnt)
    assert after['read_hit_bytes'] - before['read_hit_bytes'] >= 3 * EXT + 1234
    assert after['read_miss_bytes'] == before['read_miss_bytes']
    st = subprocess.run([os.environ.get('HOTFSCTL_BIN', 'hotfsctl'),
                         'status', ws.mnt], capture_output=True, text=True)
    assert st.returncode == 0, st.stderr
    assert 'read_engine' in st.stdout and 'pread' in st.stdout, st.stdout


def test_read_engine_is_io_uring_where_it_works(cached):
    """io_uring where it is built and allowed, pread elsewhere."""
    s = stats(cached.mnt)
    if os.environ.get('HOTFS_WRAP') or \
            os.environ.get('HOTFS_HAVE_URING') == '0':
        assert s['read_engine'] == 'pread'
    else:
        assert s['read_engine'] == 'io_uring'


def test_small_files_packed(cached):
    ws = cached
    d = os.path.join(ws.mnt, 'small')
    for _ in range(2):
        for n in sorted(os.listdir(d)):
            read_pass(os.path.join(d, n))
    wait_stat(ws.mnt, 'promotions', 10)
    for n in sorted(os.listdir(d)):
        assert read_pass(os.path.join(d, n)) == \
            sha(os.path.join(ws.src, 'small', n))
    s = stats(ws.mnt)
    total = sum(os.path.getsize(os.path.join(ws.src, 'small', n))
                for n in os.listdir(os.path.join(ws.src, 'small')))
    assert s['cached_bytes'] == total
    assert s['read_hits'] >= 10


def test_scan_does_not_promote(cached):
    ws = cached
    write_random(os.path.join(ws.src, 'scan'), 40 * EXT, seed=7)
    read_pass(os.path.join(ws.mnt, 'scan'))
    s = stats(ws.mnt)
    assert s['promotions'] == 0
    assert s['promotion_queued'] == 0
    assert s['not_promoted_below_threshold'] >= 40


def test_sequential_requests_in_one_extent_are_one_access(cached):
    ws = cached
    fd = os.open(os.path.join(ws.mnt, 'big'), os.O_RDONLY | os.O_DIRECT
                 if False else os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        # 16 small reads inside extent 0 through one handle: one access
        for i in range(16):
            os.pread(fd, 4096, i * 8192)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    s = stats(ws.mnt)
    assert s['promotions'] == 0 and s['promotion_queued'] == 0
    assert s['extent_accesses'] == 1


def test_write_through_mount_invalidates(cached):
    """writearound: a write drops the extents it touches, and only them."""
    ws = cached
    m = os.path.join(ws.mnt, 'big')
    read_pass(m)
    read_pass(m)
    wait_stat(ws.mnt, 'promotions', 4)
    with open(m, 'r+b') as f:
        f.seek(EXT + 10)
        f.write(b'NEW DATA')
    s = stats(ws.mnt)
    assert s['invalidations_write'] == 1
    assert s['cached_extents'] == 3
    before = s['read_miss_bytes']
    assert read_pass(m) == sha(os.path.join(ws.src, 'big'))
    with open(m, 'rb') as f:
        f.seek(EXT + 10)
        assert f.read(8) == b'NEW DATA'
    # only the written extent came from the source
    assert stats(ws.mnt)['read_miss_bytes'] - before <= EXT + 8192


def test_writethrough_updates_cached_extents(ws):
    write_random(os.path.join(ws.src, 'big'), 3 * EXT + 1234, seed=1)
    ws.start(opts='cachesize=64M,writemode=writethrough')
    m = os.path.join(ws.mnt, 'big')
    src = os.path.join(ws.src, 'big')
    read_pass(m)
    read_pass(m)
    wait_stat(ws.mnt, 'promotions', 4)
    with open(m, 'r+b') as f:
        f.seek(EXT - 3)             # across extents 0 and 1
        f.write(b'written through')
        f.seek(3 * EXT + 100)       # in the partial last extent
        f.write(b'tail')
    s = stats(ws.mnt)
    assert s['writethrough_updates'] == 3
    assert s['cached_extents'] == 4
    before = s['read_miss_bytes']
    assert read_pass(m) == sha(src)
    assert stats(ws.mnt)['read_miss_bytes'] == before   # all from cache
    # a size change drops what it makes partial, data stays right
    with open(m, 'ab') as f:
        f.write(b'appended')
    assert read_pass(m) == sha(src)
    os.truncate(m, EXT + 5)
    assert read_pass(m) == sha(src)


def test_written_file_after_restart(ws):
    """Extents carried over a write are in memory only: after a restart
    they are stale, never served."""
    write_random(os.path.join(ws.src, 'big'), 3 * EXT + 1234, seed=1)
    ws.start(opts='cachesize=64M')
    m = os.path.join(ws.mnt, 'big')
    read_pass(m)
    read_pass(m)
    wait_stat(ws.mnt, 'promotions', 4)
    with open(m, 'r+b') as f:
        f.seek(2 * EXT)
        f.write(b'X' * 100)
    ws.stop(ws.daemons[-1][0])
    mnt2 = os.path.join(ws.root, 'mnt2')
    os.mkdir(mnt2)
    ws.start(mnt=mnt2, opts='cachesize=64M')
    assert read_pass(os.path.join(mnt2, 'big')) == \
        sha(os.path.join(ws.src, 'big'))


def test_change_behind_hotfs_back(ws):
    """A file rewritten, truncated, replaced or touched directly in the
    source is never served from its old extents."""
    write_random(os.path.join(ws.src, 'big'), 3 * EXT + 1234, seed=1)
    # entry_timeout=0: a rename in the source is seen at the next lookup
    ws.start(opts='cachesize=64M,entry_timeout=0,attr_timeout=0')
    m = os.path.join(ws.mnt, 'big')
    src = os.path.join(ws.src, 'big')

    def warm():
        read_pass(m)
        read_pass(m)
        util.wait_for(lambda: stats(ws.mnt)['cached_extents'] >= 1,
                      'an extent of big cached')
    warm()
    # same size, new content
    with open(src, 'r+b') as f:
        f.seek(5)
        f.write(b'behind the back')
    assert read_pass(m) == sha(src)
    assert stats(ws.mnt)['invalidations_source_changed'] >= 1
    # truncated
    warm()
    os.truncate(src, EXT + 7)
    assert read_pass(m) == sha(src)
    # replaced by rename
    warm()
    write_random(src + '.new', 3 * EXT, seed=99)
    os.rename(src + '.new', src)
    assert read_pass(m) == sha(src)
    # same content rewritten: mtime moves, old extents are not used
    warm()
    os.utime(src, ns=(0, 10**18))
    before = stats(ws.mnt)['read_miss_bytes']
    assert read_pass(m) == sha(src)
    assert stats(ws.mnt)['read_miss_bytes'] > before


def test_checksum_failure_reads_source(cached):
    ws = cached
    m = os.path.join(ws.mnt, 'big')
    want = sha(os.path.join(ws.src, 'big'))
    read_pass(m)
    read_pass(m)
    wait_stat(ws.mnt, 'promotions', 4)
    # corrupt the cached data in place (the store's data file)
    data = os.path.join(ws.cache, 'data')
    with open(data, 'r+b') as f:
        buf = bytearray(f.read(8 * EXT))
        for off in range(0, len(buf), 4096):
            buf[off] ^= 0xff
        f.seek(0)
        f.write(buf)
    assert read_pass(m) == want
    s = stats(ws.mnt)
    assert s['checksum_failures'] >= 1
    assert read_pass(m) == want


def direct_io_ok(path):
    """Does the filesystem under path take O_DIRECT (tmpfs does not)?"""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
        return True
    except OSError:
        return False


def test_readahead_serves_sequential_reads(ws):
    """Large sequential reads of a cached file are served from whole
    extents read ahead with O_DIRECT (src/cache/readahead.c); small random
    reads are not, and read only the blocks they need."""
    n = 16
    write_random(os.path.join(ws.src, 'seq'), n * EXT - 777, seed=5)
    ws.proc = ws.start(opts='cachesize=64M,threshold=1')
    if not direct_io_ok(os.path.join(ws.cache, 'data')):
        pytest.skip('the cachedir filesystem refuses O_DIRECT')
    if stats(ws.mnt)['read_engine'] != 'io_uring':
        pytest.skip('no read-ahead of cached extents without io_uring '
                    '(test_cached_reads_without_io_uring covers hits)')
    m = os.path.join(ws.mnt, 'seq')
    want = sha(os.path.join(ws.src, 'seq'))
    assert read_pass(m) == want
    wait_stat(ws.mnt, 'cached_extents', n)
    before = stats(ws.mnt)
    assert read_pass(m) == want
    after = stats(ws.mnt)
    assert after['read_miss_bytes'] == before['read_miss_bytes']
    assert after['read_hit_bytes'] - before['read_hit_bytes'] >= n * EXT - 777
    assert after['readahead_served'] > before['readahead_served']
    # every extent read whole at least once, none twice over
    got = after['readahead_extents'] - before['readahead_extents']
    assert n <= got <= 2 * n
    assert after['readahead_failures'] == 0
    # 4 KiB reads without the kernel's readahead: the block path
    import random
    r = random.Random(3)
    src = open(os.path.join(ws.src, 'seq'), 'rb')
    fd = os.open(m, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        before = stats(ws.mnt)
        for _ in range(20):
            off = r.randrange(0, n * EXT - 5000) & ~4095
            src.seek(off)
            assert os.pread(fd, 4096, off) == src.read(4096)
        after = stats(ws.mnt)
    finally:
        os.close(fd)
        src.close()
    assert after['read_hits'] > before['read_hits']
    assert after['readahead_served'] == before['readahead_served']


def test_readahead_write_then_read(ws):
    """A write through the mount between two sequential passes: the second
    pass sees the new bytes, never the extent read ahead before it."""
    n = 8
    path = os.path.join(ws.src, 'w')
    write_random(path, n * EXT, seed=6)
    ws.proc = ws.start(opts='cachesize=64M,threshold=1')
    m = os.path.join(ws.mnt, 'w')
    read_pass(m)
    wait_stat(ws.mnt, 'cached_extents', n)
    read_pass(m)                    # the slots now hold every extent
    with open(m, 'r+b') as f:
        f.seek(3 * EXT + 100)
        f.write(b'\xab' * 5000)
    assert read_pass(m) == sha(path)
    with open(m, 'rb') as f:
        f.seek(3 * EXT + 100)
        assert f.read(5000) == b'\xab' * 5000


def bdi_read_ahead_kb(mnt):
    st = os.stat(mnt)
    with open('/sys/class/bdi/%d:%d/read_ahead_kb' %
              (os.major(st.st_dev), os.minor(st.st_dev))) as f:
        return int(f.read())


def read_requests_of_pass(ws, path, bs=128 * 1024):
    before = stats(ws.mnt)['read_requests']
    read_pass(path, bs=bs)
    return stats(ws.mnt)['read_requests'] - before


@pytest.mark.parametrize('opt,kb', [('', 1024), ('read_ahead=4M', 4096),
                                    ('read_ahead=256K', 256)])
def test_kernel_read_ahead(ws, opt, kb):
    """-o read_ahead sets the kernel's read-ahead for the mount (its bdi's
    read_ahead_kb): a sequential reader reading 128 KiB at a time then
    reaches the daemon in requests of up to 1 MiB (the FUSE maximum), not
    the 128-256 KiB of the kernel's default."""
    n = 16
    write_random(os.path.join(ws.src, 'f'), n << 20, seed=9)
    ws.proc = ws.start(opts=','.join(x for x in ('cachesize=64M', opt) if x))
    assert bdi_read_ahead_kb(ws.mnt) == kb
    assert stats(ws.mnt)['options'].count('read_ahead=%d' % (kb * 1024)) == 1
    reqs = read_requests_of_pass(ws, os.path.join(ws.mnt, 'f'))
    if kb >= 1024:
        # about 1 MiB each (16-18 on a quiet machine; with the daemon
        # starved of CPU the kernel splits some windows: 20 seen), far
        # from the 64-128 of 128-256 KiB requests
        assert reqs <= 2 * n, reqs
    else:
        assert reqs >= (n << 20) // (kb << 10), reqs


def test_seqcutoff_with_concurrent_read_ahead(ws):
    """With read_ahead=4M the kernel sends a window of four 1 MiB requests
    at once, and the daemon's threads take them in any order: a pass is
    still one sequential run (src/cache/seqread.c), so seqcutoff= leaves all but
    the run's first bytes uncounted and uncached.  (Told by the exact
    start of the previous request, a reordered request started a new run,
    and its extents were counted and promoted.)"""
    mib = 32
    path = os.path.join(ws.src, 'f')
    write_random(path, mib << 20, seed=12)
    ws.proc = ws.start(opts='cachesize=64M,read_ahead=4M,seqcutoff=2M')
    m = os.path.join(ws.mnt, 'f')
    want = sha(path)
    for _ in range(4):
        assert read_pass(m, bs=128 * 1024) == want
    util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                  'the promotion queue drained')
    s = stats(ws.mnt)
    assert s['not_promoted_seqcutoff'] > 0
    # counted: the requests that ended within the first 2 MiB of a pass,
    # which with a window in any order lie within its first 2 + 4 MiB
    assert s['promotions'] <= (6 << 20) // EXT, s['promotions']
    before = stats(ws.mnt)
    read_pass(m)
    after = stats(ws.mnt)
    assert after['read_miss_bytes'] - before['read_miss_bytes'] >= \
        (mib - 6) << 20


def test_kernel_read_ahead_left_alone(ws):
    """read_ahead=0 leaves the kernel's default (128 KiB today)."""
    write_random(os.path.join(ws.src, 'f'), 4 << 20, seed=9)
    ws.proc = ws.start(opts='cachesize=64M,read_ahead=0')
    kb = bdi_read_ahead_kb(ws.mnt)
    assert kb < 1024
    assert 'read_ahead=0' in stats(ws.mnt)['options']
    assert read_pass(os.path.join(ws.mnt, 'f')) == \
        sha(os.path.join(ws.src, 'f'))


def test_max_read_option(ws):
    """-o max_read (a mount option of libfuse's) mounts, and caps the
    kernel's read requests."""
    write_random(os.path.join(ws.src, 'f'), 2 << 20, seed=4)
    ws.proc = ws.start(opts='cachesize=64M,max_read=131072')
    before = stats(ws.mnt)['read_requests']
    assert read_pass(os.path.join(ws.mnt, 'f')) == \
        sha(os.path.join(ws.src, 'f'))
    assert stats(ws.mnt)['read_requests'] - before >= 16


def test_restart_stays_warm(cached):
    ws = cached
    m = os.path.join(ws.mnt, 'big')
    want = sha(os.path.join(ws.src, 'big'))
    read_pass(m)
    read_pass(m)
    wait_stat(ws.mnt, 'promotions', 4)
    ws.stop(ws.proc)
    # a second mount point: the harness cleans up each mount once
    mnt2 = os.path.join(ws.root, 'mnt2')
    os.mkdir(mnt2)
    ws.start(mnt=mnt2, opts='cachesize=64M')
    assert stats(mnt2)['recovered_extents'] >= 4
    assert read_pass(os.path.join(mnt2, 'big')) == want
    s = stats(mnt2)
    assert s['read_hit_bytes'] >= 3 * EXT + 1234
    assert s['read_miss_bytes'] == 0


def test_nocache_mount_has_no_store(ws):
    write_random(os.path.join(ws.src, 'f'), EXT, seed=3)
    ws.start(opts='nocache', cachedir=False)
    for _ in range(3):
        assert read_pass(os.path.join(ws.mnt, 'f')) == \
            sha(os.path.join(ws.src, 'f'))
    s = stats(ws.mnt)
    assert s['store_state'] == 'off'
    assert not os.path.exists(ws.cache)


def test_ctldir_hidden_and_protected(cached):
    ws = cached
    root = ws.mnt
    assert '.hotfs' not in os.listdir(root)
    assert sorted(os.listdir(os.path.join(root, '.hotfs'))) == \
        ['ctl', 'metrics', 'stats', 'stats.json']
    with open(os.path.join(root, '.hotfs', 'stats')) as f:
        text = f.read()
    assert 'read_hits:' in text and 'store_state:' in text
    for fn, err in [
            (lambda: os.mkdir(os.path.join(root, '.hotfs')), 'EEXIST'),
            (lambda: os.rmdir(os.path.join(root, '.hotfs')), 'EPERM'),
            (lambda: os.rename(os.path.join(root, '.hotfs'),
                               os.path.join(root, 'x')), 'EPERM'),
            (lambda: os.rename(os.path.join(root, 'big'),
                               os.path.join(root, '.hotfs')), 'EISDIR'),
            (lambda: os.rename(os.path.join(root, 'small'),
                               os.path.join(root, '.hotfs')), 'EPERM'),
            (lambda: os.unlink(os.path.join(root, '.hotfs', 'stats')),
             'EPERM'),
            (lambda: open(os.path.join(root, '.hotfs', 'new'), 'w'),
             'EACCES'),
            (lambda: open(os.path.join(root, '.hotfs', 'stats'), 'w'),
             'EACCES')]:
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == getattr(__import__('errno'), err), fn
    # a source entry named .hotfs is shadowed, not listed
    assert not os.path.exists(os.path.join(ws.src, '.hotfs'))


def test_ctl_reset_stats(cached):
    ws = cached
    read_pass(os.path.join(ws.mnt, 'big'))
    assert stats(ws.mnt)['read_requests'] > 0
    fd = os.open(os.path.join(ws.mnt, '.hotfs', 'ctl'), os.O_RDWR)
    try:
        os.write(fd, b'reset-stats\n')
        assert os.pread(fd, 100, 0) == b'ok\n'
        with pytest.raises(OSError):
            os.write(fd, b'no-such-command\n')
        # a command is the whole write (not up to a NUL byte)
        with pytest.raises(OSError):
            os.write(fd, b'reset-stats\0junk\n')
    finally:
        os.close(fd)
    assert stats(ws.mnt)['read_requests'] == 0


def test_ctl_refused_to_other_users(ws):
    ws.start(opts='cachesize=64M,allow_other')
    ctl = os.path.join(ws.mnt, '.hotfs', 'ctl')
    st = os.path.join(ws.mnt, '.hotfs', 'stats')

    def try_ctl():
        try:
            os.close(os.open(ctl, os.O_RDWR))
            return 'opened'
        except OSError as e:
            return e.errno

    def read_stats():
        with open(st) as f:
            return 'read_hits' in f.read()

    assert util.run_as(65534, 65534, try_ctl) == __import__('errno').EACCES
    assert util.run_as(65534, 65534, read_stats) is True


def test_ctldir_option_renames(ws):
    os.mkdir(os.path.join(ws.src, '.hotfs'))
    with open(os.path.join(ws.src, '.hotfs', 'mine'), 'w') as f:
        f.write('user data')
    ws.start(opts='ctldir=.hotfs-ctl')
    assert os.path.exists(os.path.join(ws.mnt, '.hotfs', 'mine'))
    assert os.path.exists(os.path.join(ws.mnt, '.hotfs-ctl', 'stats'))
    assert '.hotfs' in os.listdir(ws.mnt)


def test_directory_listing_cached_and_revalidated(ws):
    """Listings are kept by the kernel while the directory is unchanged,
    and a change in the source behind hotfs's back shows at the next
    opendir: no stale listing, no waiting for a timeout."""
    d = os.path.join(ws.src, 'd')
    os.mkdir(d)
    for i in range(50):
        open(os.path.join(d, 'f%d' % i), 'w').close()
    ws.start(opts='cachesize=64M,entry_timeout=60,attr_timeout=60')
    m = os.path.join(ws.mnt, 'd')
    assert sorted(os.listdir(m)) == sorted(os.listdir(d))
    assert sorted(os.listdir(m)) == sorted(os.listdir(d))
    for step in range(5):
        open(os.path.join(d, 'new%d' % step), 'w').close()
        os.unlink(os.path.join(d, 'f%d' % step))
        assert sorted(os.listdir(m)) == sorted(os.listdir(d)), step
    # and changes through the mount, at once
    open(os.path.join(m, 'via-mount'), 'w').close()
    os.rename(os.path.join(m, 'f10'), os.path.join(m, 'g10'))
    assert sorted(os.listdir(m)) == sorted(os.listdir(d))


def test_hot_set_survives_a_scan(ws):
    """A one-time read of a file several times the cache size does not
    displace a hot set: afterwards the hot set is still read from the
    cache, not the source."""
    hot = {}
    for i in range(4):
        hot['h%d' % i] = os.path.join(ws.src, 'h%d' % i)
        write_random(hot['h%d' % i], 2 << 20, seed=i)
    write_random(os.path.join(ws.src, 'scan'), 100 << 20, seed=99)
    ws.start(opts='cachesize=32M')
    for _ in range(3):
        for n in hot:
            read_pass(os.path.join(ws.mnt, n))
    util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0 and
                  stats(ws.mnt)['cached_bytes'] >= 8 << 20,
                  'the hot set to be cached')
    read_pass(os.path.join(ws.mnt, 'scan'))     # once, 3x the cache
    before = stats(ws.mnt)['read_miss_bytes']
    for n, p in hot.items():
        assert read_pass(os.path.join(ws.mnt, n)) == sha(p)
    s = stats(ws.mnt)
    assert s['read_miss_bytes'] == before, 'the hot set was evicted'
    assert s['cached_bytes'] >= 8 << 20


def test_concurrent_readers_during_promotion(ws):
    """Readers of one file while its extents are being promoted all get
    the right bytes (promotion, stitching and the cached path at once)."""
    import threading
    path = os.path.join(ws.src, 'f')
    write_random(path, 40 * EXT + 333, seed=5)
    want = sha(path)
    ws.start(opts='cachesize=64M,threshold=2')
    bad = []

    def reader():
        for _ in range(4):
            got = read_pass(os.path.join(ws.mnt, 'f'), bs=128 * 1024)
            if got != want:
                bad.append(got)
    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    util.wait_for(lambda: stats(ws.mnt)['promotion_queue_depth'] == 0,
                  'promotions to finish')
    assert stats(ws.mnt)['promotions'] > 0
    assert read_pass(os.path.join(ws.mnt, 'f')) == want
