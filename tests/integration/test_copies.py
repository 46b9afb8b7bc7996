# SPDX-License-Identifier: GPL-2.0-or-later
"""FUSE passthrough for wholly cached files (-o passthrough, man hotfs
"Passthrough"): a read-only open of a file whose whole copy the cachedir
holds (cachedir/files/, made from the store's checked extents) is
answered with the copy as its backing file, and the kernel reads it
without the daemon.  The kernel gets EIO for an open of an inode that
mixes backing and ordinary opens: the daemon never lets that happen (an
open the copy cannot serve is answered ESTALE and the kernel meets a new
node).  Without libfuse >= 3.17, the kernel's offer or CAP_SYS_ADMIN it
is off, said once in the log and in the stats, and the tree is the same.
"""
import concurrent.futures
import errno
import json
import itertools
import mmap
import os
import random
import shutil
import subprocess
import time

import pytest

import util

MiB = 1 << 20
OPTS = 'cachesize=256M,threshold=1,passthrough=on'
NOBODY = 65534


def libfuse_version():
    out = subprocess.run([util.hotfs_bin(), '--version'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         check=True).stdout.decode()
    v = next(ln.split()[-1] for ln in out.splitlines()
             if ln.startswith('libfuse version'))
    return tuple(int(x) for x in v.split('.')[:2])


BUILT = libfuse_version() >= (3, 17)
needs_pt = pytest.mark.skipif(not BUILT, reason='libfuse < 3.17: '
                              'test_said_once checks the fallback')


def stat_of(ws, key, mnt=None):
    v = util.hotfs_stats(mnt or ws.mnt)[key]
    return int(v) if v.isdigit() else v


def put(ws, name, size, seed):
    data = random.Random(seed).randbytes(size)
    with open(os.path.join(ws.src, name), 'wb') as f:
        f.write(data)
    return data


def read_all(path, flags=0):
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        out = []
        while True:
            b = os.read(fd, MiB)
            if not b:
                return b''.join(out)
            out.append(b)
    finally:
        os.close(fd)


def copied(ws, name, data):
    """Read name through the mount until an open of it is a passthrough
    one (its extents promoted, its copy made); every read checked."""
    path = os.path.join(ws.mnt, name)

    def ready():
        before = stat_of(ws, 'passthrough_opens')
        assert util.read_cold(path) == data
        return stat_of(ws, 'passthrough_opens') > before
    util.wait_for(ready, 'a passthrough open of ' + name)


def files_in(ws):
    return sorted(os.listdir(os.path.join(ws.cache, 'files')))


@pytest.mark.parametrize('opts', ['passthrough=on', '', 'passthrough=off'])
def test_said_once(ws, opts):
    """The stats say on, or off and why; the log says it once (unless
    off was asked); the tree reads the same either way."""
    data = put(ws, 'a', 3 * MiB, 1)
    proc = ws.start(opts='cachesize=64M,threshold=1' +
                    (',' + opts if opts else ''))
    for _ in range(3):
        assert util.read_cold(os.path.join(ws.mnt, 'a')) == data
    why = stat_of(ws, 'passthrough')
    log = ws.log_text(proc)
    if opts == 'passthrough=off':
        assert why == 'off' and 'passthrough:' not in log
    elif opts == '':
        # the cachedir here is not Btrfs: auto leaves it off
        assert why.startswith('off: ') and 'passthrough=on' in why or \
            not BUILT, why
    elif not BUILT:
        assert why.startswith('off: this build'), why
    else:
        assert why == 'on, scrubbed', why
    # said where asked for (auto asks on Btrfs only)
    assert log.count('passthrough: ') == (opts == 'passthrough=on'), log
    if why.startswith('off'):
        assert stat_of(ws, 'passthrough_opens') == 0
        assert stat_of(ws, 'copies') == 0


@needs_pt
def test_reads_bypass_the_daemon(ws):
    """Once copied, whole reads, mmap and O_DIRECT reads of the file give
    its bytes and no read reaches the daemon; stats count the opens."""
    data = put(ws, 'big', 8 * MiB, 2)
    put(ws, 'small', 100000, 3)
    ws.start(opts=OPTS)
    copied(ws, 'big', data)
    assert stat_of(ws, 'copies') == 1 and \
        stat_of(ws, 'copy_bytes') == len(data)
    # hotfsctl info: all of it cached, as a copy (the store lets it go
    # once the copy is found)
    def info():
        return json.loads(subprocess.run(
            [os.environ['HOTFSCTL_BIN'], 'info', '--json',
             os.path.join(ws.mnt, 'big')], check=True,
            stdout=subprocess.PIPE).stdout)['files'][0]
    util.wait_for(lambda: info()['cached_extents'] == 0,
                  "the store to let the copied file's extents go")
    i = info()
    assert i['copy'] is True and i['cached_bytes'] == len(data), i
    assert stat_of(ws, 'invalidations_copied') >= len(data) // (256 << 10)
    assert files_in(ws)[0].count('-') == 6
    reqs = stat_of(ws, 'read_requests')
    opens = stat_of(ws, 'passthrough_opens')
    path = os.path.join(ws.mnt, 'big')
    assert util.read_cold(path) == data
    with open(path, 'rb') as f, \
            mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
        assert m[:] == data
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, 65536)
        for off in (0, 3 * MiB, len(data) - 65536):
            assert os.preadv(fd, [buf], off) == 65536
            assert buf[:] == data[off:off + 65536]
    finally:
        os.close(fd)
    assert stat_of(ws, 'read_requests') == reqs
    assert stat_of(ws, 'passthrough_opens') == opens + 3
    # a file below the copies' least size is read through the daemon
    for _ in range(3):
        util.read_cold(os.path.join(ws.mnt, 'small'))
    assert stat_of(ws, 'copies') == 1


@needs_pt
def test_write_open_beside_readers(ws):
    """A write open while passthrough readers hold the file: no EIO; the
    write reaches the source; the open readers keep the bytes they
    opened (close-to-open), a new open sees the write."""
    data = put(ws, 'f', 4 * MiB, 4)
    ws.start(opts=OPTS)
    copied(ws, 'f', data)
    path = os.path.join(ws.mnt, 'f')
    r = open(path, 'rb')
    assert r.read(4096) == data[:4096]
    nodes = stat_of(ws, 'passthrough_new_nodes')
    with open(path, 'r+b') as w:
        w.write(b'N' * 4096)
        w.flush()
        os.fsync(w.fileno())
        r.seek(0)
        assert r.read(4096) == data[:4096]
        with open(path, 'rb') as r2:
            assert r2.read(4096) == b'N' * 4096
    assert stat_of(ws, 'passthrough_new_nodes') > nodes
    r.close()
    want = b'N' * 4096 + data[4096:]
    with open(os.path.join(ws.src, 'f'), 'rb') as f:
        assert f.read() == want
    assert util.read_cold(path) == want
    # O_TRUNC and O_CREAT of the held name, beside a reader again
    copied(ws, 'f', want)
    r = open(path, 'rb')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b'short')
    os.close(fd)
    assert r.read(10) == want[:10]
    r.close()
    assert util.read_cold(path) == b'short'


@needs_pt
def test_daemon_reads_from_the_copy(ws):
    """An open that is not a passthrough one (read-write) of a copied
    file, whose records the store let go, reads the copy through the
    daemon: every byte right, none from the source."""
    data = put(ws, 'f', 4 * MiB, 14)
    ws.start(opts=OPTS)
    copied(ws, 'f', data)
    util.wait_for(lambda: stat_of(ws, 'invalidations_copied') > 0,
                  'the store to let the copied file\'s records go')
    path = os.path.join(ws.mnt, 'f')
    opens = stat_of(ws, 'passthrough_opens')
    misses = stat_of(ws, 'read_miss_bytes')
    hits = stat_of(ws, 'read_hit_bytes')
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        got = b''.join(os.pread(fd, MiB, off)
                       for off in range(0, 4 * MiB, MiB))
    finally:
        os.close(fd)
    assert got == data
    assert stat_of(ws, 'passthrough_opens') == opens
    assert stat_of(ws, 'read_miss_bytes') == misses
    assert stat_of(ws, 'read_hit_bytes') >= hits + 4 * MiB
    # written through that kind of open: the copy is stale, the source
    # serves, the bytes are the new ones
    with open(path, 'r+b') as w:
        w.seek(MiB)
        w.write(b'W' * 4096)
    want = data[:MiB] + b'W' * 4096 + data[MiB + 4096:]
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(fd, 2 * MiB, 0) == want[:2 * MiB]
    finally:
        os.close(fd)


@needs_pt
def test_new_node_holds_passthrough(ws):
    """The kernel walks a path again only once after ESTALE: the new node
    a write open meets takes no passthrough open for a moment (a reader's
    there would send the write open's retry ESTALE again); its opens then
    read the copy through the daemon, and later ones are passthrough
    opens again."""
    data = put(ws, 'f', 2 * MiB, 16)
    ws.start(opts=OPTS)
    copied(ws, 'f', data)
    path = os.path.join(ws.mnt, 'f')
    for _ in range(5):
        r = os.open(path, os.O_RDONLY)
        try:
            nodes = stat_of(ws, 'passthrough_new_nodes')
            t0 = time.monotonic()
            os.close(os.open(path, os.O_RDWR))     # meets a new node
            assert stat_of(ws, 'passthrough_new_nodes') == nodes + 1
            opens = stat_of(ws, 'passthrough_opens')
            r2 = os.open(path, os.O_RDONLY)
            quick = time.monotonic() - t0 < 1.0
            try:
                assert os.pread(r2, 4096, MiB) == data[MiB:MiB + 4096]
                held = stat_of(ws, 'passthrough_opens') == opens
            finally:
                os.close(r2)
        finally:
            os.close(r)
        if quick:
            break
    else:
        pytest.fail('no try within a second of the new node')
    assert held
    copied(ws, 'f', data)


@needs_pt
def test_mixed_opens_never_eio(ws):
    """Threads open one copied file read-only, read-write and O_TRUNC-less
    for writing at random, many times over: no open or read fails, and
    every read-only open reads one of the versions written."""
    data = put(ws, 'm', 2 * MiB, 5)
    ws.start(opts=OPTS)
    copied(ws, 'm', data)
    path = os.path.join(ws.mnt, 'm')
    versions = {data[:16]}
    for i in range(4):
        versions.add(b'%016d' % i)

    def worker(seed):
        rng = random.Random(seed)
        for _ in range(60):
            kind = rng.choice(('r', 'r', 'r', 'w', 'rw'))
            if kind == 'r':
                with open(path, 'rb') as f:
                    assert f.read(16) in versions
            else:
                with open(path, 'r+b' if kind == 'rw' else 'r+b') as f:
                    f.write(b'%016d' % rng.randrange(4))
        return True
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        assert all(ex.map(worker, range(4)))
    with open(os.path.join(ws.src, 'm'), 'rb') as f:
        src = f.read()
    assert util.read_cold(path) == src and src[16:] == data[16:]


@needs_pt
def test_readers_beside_read_write_opens(ws):
    """Threads open a copied file read-only and read-write (reading only:
    the copy stays current) at random: every read-write open meets a new
    node while passthrough readers are open, and no open or read
    fails."""
    data = put(ws, 'm', 2 * MiB, 17)
    ws.start(opts=OPTS)
    copied(ws, 'm', data)
    path = os.path.join(ws.mnt, 'm')
    nodes = stat_of(ws, 'passthrough_new_nodes')

    def worker(seed):
        rng = random.Random(seed)
        for _ in range(150):
            off = rng.randrange(0, 2 * MiB - 4096)
            flags = os.O_RDWR if rng.random() < 0.3 else os.O_RDONLY
            fd = os.open(path, flags)
            try:
                assert os.pread(fd, 4096, off) == data[off:off + 4096]
            finally:
                os.close(fd)
        return True
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        assert all(ex.map(worker, range(4)))
    assert stat_of(ws, 'passthrough_new_nodes') > nodes


@needs_pt
def test_change_behind_the_mount(ws):
    """The source file changed behind the mount: the next open sees the
    new bytes (its stamp is not the copy's), an open reader the old."""
    data = put(ws, 'c', 3 * MiB, 6)
    ws.start(opts=OPTS)
    copied(ws, 'c', data)
    path = os.path.join(ws.mnt, 'c')
    with open(path, 'rb') as r:
        new = put(ws, 'c', 3 * MiB, 7)
        assert util.read_cold(path) == new
        assert r.read() == data
    # the old copy is gone, a new one made for the new bytes
    copied(ws, 'c', new)
    assert len(files_in(ws)) == 1


@pytest.mark.drops_caches
def test_after_drop_caches(ws):
    """With passthrough asked for, a cached file read after the whole
    page cache is dropped gives its bytes: from its copy where this build
    has passthrough (no read reaching the daemon), through the daemon
    where it has not."""
    data = put(ws, 'd', 3 * MiB, 22)
    ws.start(opts=OPTS)
    path = os.path.join(ws.mnt, 'd')
    if BUILT:
        copied(ws, 'd', data)
    else:
        for _ in range(3):
            assert util.read_cold(path) == data
    reqs = stat_of(ws, 'read_requests')
    util.drop_caches()
    with open(path, 'rb') as f:
        assert f.read() == data
    assert (stat_of(ws, 'read_requests') == reqs) == BUILT


@needs_pt
@pytest.mark.drops_caches
def test_evicted_copy_held_open(ws):
    """hotfsctl evict removes the copy (and its file) while a reader holds
    it: the reader reads on, the next opens read the file's bytes."""
    data = put(ws, 'e', 3 * MiB, 8)
    ws.start(opts=OPTS)
    copied(ws, 'e', data)
    path = os.path.join(ws.mnt, 'e')
    with open(path, 'rb') as r:
        assert r.read(MiB) == data[:MiB]
        subprocess.run([os.environ['HOTFSCTL_BIN'], 'evict', path],
                       check=True, stdout=subprocess.DEVNULL)
        assert stat_of(ws, 'copies') == 0 and files_in(ws) == []
        util.drop_caches()
        assert r.read() == data[MiB:]
        assert util.read_cold(path) == data
    assert util.read_cold(path) == data


@needs_pt
@pytest.mark.drops_caches
def test_corrupt_copy_ext4(ws):
    """A copy damaged on the disk (ext4 keeps no checksums): a reader can
    get the damaged bytes until the scrub finds it, which then removes
    it; the next opens read the file's bytes."""
    data = put(ws, 'x', 4 * MiB, 9)
    proc = ws.start(opts=OPTS + ',scrub_rate=0')
    copied(ws, 'x', data)
    name = os.path.join(ws.cache, 'files', files_in(ws)[0])
    with open(name, 'r+b') as f:
        f.seek(MiB)
        f.write(b'\xff' * 512)
    util.drop_caches()
    path = os.path.join(ws.mnt, 'x')
    got = util.read_cold(path)
    assert got[MiB:MiB + 512] == b'\xff' * 512   # what ext4 hands back
    ws.stop(proc)
    ws.start(opts=OPTS + ',scrub_rate=1G')
    util.wait_for(lambda: stat_of(ws, 'scrub_failures') == 1,
                  'the scrub to find the damaged copy')
    assert stat_of(ws, 'copies') == 0 and files_in(ws) == []
    assert util.read_cold(path) == data


@pytest.fixture
def btrfs(ws):
    """A Btrfs filesystem on a loop device (its image in ws.root), for a
    cachedir whose filesystem checks data; torn down after."""
    if not shutil.which('mkfs.btrfs'):
        pytest.skip('no mkfs.btrfs (btrfs-progs)')
    if shutil.which('modprobe'):    # a module, where it is one
        subprocess.run(['modprobe', '-q', 'btrfs'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open('/proc/filesystems') as f:
        if 'btrfs' not in f.read().split():
            pytest.skip('this kernel has no Btrfs')
    img = os.path.join(ws.root, 'btrfs.img')
    mnt = os.path.join(ws.root, 'btrfs')
    os.mkdir(mnt)
    with open(img, 'wb') as f:
        f.truncate(256 * MiB)
    subprocess.run(['mkfs.btrfs', '-q', img], check=True)
    dev = subprocess.run(['losetup', '--show', '-f', '--direct-io=on', img],
                         check=True, stdout=subprocess.PIPE
                         ).stdout.decode().strip()
    try:
        subprocess.run(['mount', dev, mnt], check=True)
        try:
            yield img, mnt
        finally:
            ws.cleanup()
            subprocess.run(['umount', mnt], check=True)
    finally:
        subprocess.run(['losetup', '-d', dev], check=True)


def damage_copy(ws, img, data):
    """Damage the block at 2 MiB of the one copy in ws.cache (a Btrfs on
    img, the daemon stopped), so that the copy reads EIO there."""
    # the block on the device, found by its bytes: the copy's, not the
    # store's (tried in turn: the one the copy then reads EIO at)
    block = data[2 * MiB:2 * MiB + 4096]
    with open(img, 'rb') as f:
        raw = f.read()
    places = []
    at = raw.find(block)
    while at >= 0:
        places.append(at)
        at = raw.find(block, at + 1)
    del raw
    assert places
    copy = os.path.join(ws.cache, 'files', files_in(ws)[0])
    fd = os.open(img, os.O_WRONLY)
    try:
        for at in places:
            os.pwrite(fd, b'\x00' * 4096, at)
            os.fsync(fd)
            util.drop_caches()
            try:
                with open(copy, 'rb') as f:
                    f.seek(2 * MiB)
                    f.read(4096)
            except OSError as e:
                assert e.errno == errno.EIO
                break
            os.pwrite(fd, block, at)     # the store's: as it was
            os.fsync(fd)
        else:
            pytest.fail('no block of the copy found on the device')
    finally:
        os.close(fd)


@needs_pt
@pytest.mark.drops_caches
def test_corrupt_copy_btrfs(ws, btrfs):
    """On Btrfs (auto's choice) a damaged block of a copy reads EIO,
    never other bytes; the scrub removes the copy and the next opens
    read the file's bytes."""
    img, bmnt = btrfs
    data = put(ws, 'b', 4 * MiB, 10)
    ws.cache = os.path.join(bmnt, 'cache')
    proc = ws.start(opts='cachesize=128M,threshold=1,scrub_rate=0')
    assert stat_of(ws, 'passthrough') == 'on'
    copied(ws, 'b', data)
    ws.stop(proc)
    damage_copy(ws, img, data)
    util.drop_caches()
    ws.start(opts='cachesize=128M,threshold=1,scrub_rate=0')
    path = os.path.join(ws.mnt, 'b')
    fd = os.open(path, os.O_RDONLY)
    try:
        assert stat_of(ws, 'passthrough_opens') == 1
        assert os.pread(fd, 4096, 0) == data[:4096]
        with pytest.raises(OSError) as e:
            os.pread(fd, 4096, 2 * MiB)
        assert e.value.errno == errno.EIO
    finally:
        os.close(fd)
    ws.cleanup()
    ws.start(opts='cachesize=128M,threshold=1,scrub_rate=1G')
    util.wait_for(lambda: stat_of(ws, 'scrub_failures') == 1,
                  'the scrub to find the damaged copy')
    assert util.read_cold(path) == data


@needs_pt
@pytest.mark.drops_caches
def test_corrupt_copy_btrfs_daemon_read(ws, btrfs):
    """A read through the daemon (a read-write open) of a copy with a
    damaged block on Btrfs: the copy goes (counted as a failed scrub), the
    source serves the read, every byte right."""
    img, bmnt = btrfs
    data = put(ws, 'b', 4 * MiB, 15)
    ws.cache = os.path.join(bmnt, 'cache')
    proc = ws.start(opts='cachesize=128M,threshold=1,scrub_rate=0')
    copied(ws, 'b', data)
    ws.stop(proc)
    damage_copy(ws, img, data)
    util.drop_caches()
    ws.start(opts='cachesize=128M,threshold=1,scrub_rate=0')
    assert stat_of(ws, 'copies') == 1
    fd = os.open(os.path.join(ws.mnt, 'b'), os.O_RDWR)
    try:
        assert os.pread(fd, 4096, 0) == data[:4096]
        assert os.pread(fd, 4096, 2 * MiB) == data[2 * MiB:2 * MiB + 4096]
    finally:
        os.close(fd)
    assert stat_of(ws, 'scrub_failures') == 1
    assert stat_of(ws, 'copies') == 0
    assert util.read_cold(os.path.join(ws.mnt, 'b')) == data


@needs_pt
def test_kill9_with_passthrough_open(ws):
    """kill -9 while passthrough readers are open: after a remount the
    copy is found again (warm: the first open is a passthrough one) and
    every byte is the file's."""
    data = put(ws, 'k', 6 * MiB, 11)
    proc = ws.start(opts=OPTS)
    copied(ws, 'k', data)
    with open(os.path.join(ws.mnt, 'k'), 'rb') as r:
        r.read(4096)
        proc.kill()
        proc.wait()
    util.cleanup_mount(proc, ws.mnt)
    ws.start(opts=OPTS)
    assert stat_of(ws, 'copies') == 1
    assert util.read_cold(os.path.join(ws.mnt, 'k')) == data
    assert stat_of(ws, 'passthrough_opens') == 1


@pytest.fixture
def dev_fuse_for_all():
    """/dev/fuse usable by every user (as Debian's udev rule makes it,
    0666) for a test; its mode put back after."""
    old = os.stat('/dev/fuse').st_mode & 0o7777
    os.chmod('/dev/fuse', 0o666)
    try:
        yield
    finally:
        os.chmod('/dev/fuse', old)


@needs_pt
def test_no_cap_sys_admin(ws, dev_fuse_for_all):
    """A daemon without CAP_SYS_ADMIN (an unprivileged user's mount,
    through fusermount3): passthrough off, said once; the files read the
    same."""
    data = put(ws, 'u', 3 * MiB, 12)
    os.chmod(ws.src, 0o755)
    os.chown(ws.mnt, NOBODY, NOBODY)
    cache = os.path.join(ws.root, 'ucache')
    os.mkdir(cache, 0o700)
    os.chown(cache, NOBODY, NOBODY)
    log = os.path.join(ws.logs, 'nobody.log')
    cmd = ['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % NOBODY,
           '--clear-groups', util.hotfs_bin(), ws.src, ws.mnt, '-f', '-o',
           'cachedir=%s,%s' % (cache, OPTS)]
    env = dict(os.environ)
    # a sanitizer's suppressions, where its user can read them (the
    # tree may be in a directory only root can enter)
    opts = env.get('TSAN_OPTIONS', '').split()
    for i, o in enumerate(opts):
        if o.startswith('suppressions='):
            supp = os.path.join(ws.root, 'tsan.supp')
            shutil.copyfile(o.split('=', 1)[1], supp)
            os.chmod(supp, 0o644)
            opts[i] = 'suppressions=' + supp
    if opts:
        env['TSAN_OPTIONS'] = ' '.join(opts)
    with open(log, 'wb') as lf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf,
                                stderr=lf, env=env)
    ws.daemons.append((proc, ws.mnt, log))
    # its mount is its user's alone (no allow_other): root sees no
    # more of it than its entry in the mount table
    util.wait_for(lambda: util.is_mounted(ws.mnt) or proc.poll() is not None,
                  'the mount')
    assert proc.poll() is None

    def as_user(_mnt):
        got = [util.read_cold(os.path.join(ws.mnt, 'u')) == data
               for _ in range(3)]
        return got, util.hotfs_stats(ws.mnt)
    got, s = util.run_as(NOBODY, NOBODY, as_user, ws.mnt)
    assert got == [True] * 3
    why = s['passthrough']
    assert why.startswith('off: ') and 'CAP_SYS_ADMIN' in why, why
    assert s['copies'] == '0' and s['passthrough_opens'] == '0'
    with open(log) as f:
        assert f.read().count('passthrough: off') == 1


@needs_pt
def test_unreadable_file_stays_unreadable(ws):
    """A copy never gives a user the bytes the source refuses them: an
    open by a user without read permission fails as on the source."""
    data = put(ws, 's', 2 * MiB, 13)
    os.chmod(os.path.join(ws.src, 's'), 0o600)
    ws.start(opts=OPTS + ',allow_other')
    copied(ws, 's', data)
    path = os.path.join(ws.mnt, 's')

    def try_read(_mnt):
        try:
            with open(path, 'rb') as f:
                return f.read(16)
        except OSError as e:
            return e.errno
    assert util.run_as(NOBODY, NOBODY, try_read, ws.mnt) == errno.EACCES


@needs_pt
def test_copies_charged_to_cachesize(ws):
    """The copies' bytes come out of cachesize: the store gives up
    regions for them (at its next tick), and copies take at most half of
    it, the one opened least recently going first.  The store lets a
    copied file's extents go."""
    data = {n: put(ws, n, 30 * MiB, 14 + i) for i, n in enumerate('abc')}
    ws.start(opts='cachesize=160M,threshold=1,passthrough=on,'
             'promote_rate=0')
    region = 16 * MiB

    def within():
        s = util.hotfs_stats(ws.mnt)
        return int(s['regions_used']) * region + int(s['copy_bytes']) \
            <= 160 * MiB
    for n in 'abc':
        copied(ws, n, data[n])
        util.wait_for(within, 'the store to give up room for the copies')
        assert stat_of(ws, 'invalidations_copied') > 0
    # two fit in half of 160M: a's, opened least recently, went
    assert stat_of(ws, 'copies') == 2 and stat_of(ws, 'copies_dropped') == 1
    assert all(f.split('-')[1] != '%016x' % os.stat(
        os.path.join(ws.src, 'a')).st_ino for f in files_in(ws))
    for n in 'abc':
        assert util.read_cold(os.path.join(ws.mnt, n)) == data[n]


@needs_pt
def test_copies_age_with_the_store(ws):
    """A copy no one opens while the store goes through its room twice
    (new files read through the mount) is removed: it is colder than
    anything the store kept; the file reads right after."""
    data = put(ws, 'a', 4 * MiB, 18)
    ws.start(opts='cachesize=64M,threshold=1,passthrough=on,'
             'promote_rate=0')
    copied(ws, 'a', data)
    deadline = time.monotonic() + 120      # the copies' tick: once a second
    for i in itertools.count():
        name = 'stream%d' % (i % 12)
        if i < 12:
            put(ws, name, 16 * MiB, 100 + i)
        # read-write opens: no copy of these; each read more often
        # than the one before, hotter than what the store holds
        fd = os.open(os.path.join(ws.mnt, name), os.O_RDWR)
        try:
            for _ in range(2 + i):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                for off in range(0, 16 * MiB, MiB):
                    assert len(os.pread(fd, MiB, off)) == MiB
        finally:
            os.close(fd)
        if stat_of(ws, 'copies_aged'):
            break
        if time.monotonic() > deadline:
            pytest.fail('the copy of a never aged: %r' %
                        util.hotfs_stats(ws.mnt))
    assert stat_of(ws, 'copies') == 0 and files_in(ws) == []
    assert util.read_cold(os.path.join(ws.mnt, 'a')) == data


@needs_pt
def test_trusted_opens(ws):
    """revalidate=N: an open answered without the source is a passthrough
    one too where the copy is current; a write open beside it works."""
    data = put(ws, 't', 3 * MiB, 20)
    ws.start(opts=OPTS + ',revalidate=30')
    copied(ws, 't', data)
    path = os.path.join(ws.mnt, 't')
    opens = stat_of(ws, 'passthrough_opens')
    src_opens = stat_of(ws, 'source_opens')
    r = open(path, 'rb')
    assert r.read() == data
    assert stat_of(ws, 'passthrough_opens') == opens + 1
    assert stat_of(ws, 'source_opens') == src_opens
    with open(path, 'r+b') as w:
        w.write(b'T' * 8)
    assert r.read() == b''
    r.close()
    assert util.read_cold(path) == b'T' * 8 + data[8:]


@needs_pt
def test_off_removes_copies(ws):
    """A mount without passthrough removes the copies an earlier one
    left (room no one would count); the file reads the same."""
    data = put(ws, 'o', 2 * MiB, 21)
    proc = ws.start(opts=OPTS)
    copied(ws, 'o', data)
    ws.stop(proc)
    assert len(files_in(ws)) == 1
    ws.start(opts='cachesize=256M,threshold=1,passthrough=off')
    assert not os.path.exists(os.path.join(ws.cache, 'files'))
    assert util.read_cold(os.path.join(ws.mnt, 'o')) == data


@needs_pt
def test_small_files_with_passthrough_min(ws):
    """passthrough_min=0: small files get copies too (each its own), and
    read the same; the default leaves a 100 KB file to the daemon."""
    small = {'s%d' % i: put(ws, 's%d' % i, 100000 + i, 30 + i)
             for i in range(5)}
    ws.start(opts=OPTS + ',passthrough_min=0')
    for n, d in small.items():
        copied(ws, n, d)
    assert stat_of(ws, 'copies') == 5 and len(files_in(ws)) == 5
    assert 'passthrough_min=0' in stat_of(ws, 'options')
    for n, d in small.items():
        assert util.read_cold(os.path.join(ws.mnt, n)) == d
