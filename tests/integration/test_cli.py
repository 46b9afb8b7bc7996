# SPDX-License-Identifier: GPL-2.0-or-later
"""The command line: bad options and arguments are refused with exactly
one line on stderr, a non-zero exit and nothing mounted (whether or not
-f is given: the daemonizing parent must report the error too); --help
and --version succeed; the generic fstab keywords are accepted and
ignored; nocache and ro work.  A cachedir hotfs cannot use (in use, made
for another source, of another format version, damaged, not a directory)
costs the cache, not the tree: the source is mounted without the store,
with the reason on stderr and in the stats, or with -o cache_required
the mount is refused like a bad option; the cachedir is left as it was,
to the byte.  A mount over a live hotfs mount, a dead FUSE mount or a
non-empty directory is refused, and so is a mountpoint inside the
source (the source itself may be the mountpoint).
"""
import ctypes
import ctypes.util
import errno
import hashlib
import os
import stat
import struct
import subprocess

import pytest

import util
from util import Err

RUN_TIMEOUT = 15


def run(args, **kw):
    try:
        return subprocess.run([util.hotfs_bin()] + args,
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=RUN_TIMEOUT, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail('hotfs %r did not exit within %ds (it should have '
                    'refused the arguments)' % (args, RUN_TIMEOUT))


def bad_cases(ws):
    src, mnt = ws.src, ws.mnt
    newcache = os.path.join(ws.root, 'newcache')
    cfile = os.path.join(ws.root, 'cachefile')
    with open(cfile, 'w') as f:
        f.write('not a dir')
    missing = os.path.join(ws.root, 'missing')

    def o(opts):
        return [src, mnt, '-o', 'cachedir=%s,%s' % (newcache, opts)]
    return {
        # name: (args, a word the message must contain)
        'unknown option': (o('bogus_option'), 'bogus_option'),
        'unknown option alone': (
            [src, mnt, '-o', 'cachedir=' + newcache, '-o', 'frobnicate'],
            'frobnicate'),
        'threshold=0': (o('threshold=0'), 'threshold'),
        'threshold=abc': (o('threshold=abc'), 'threshold'),
        'threshold=-1': (o('threshold=-1'), 'threshold'),
        'extent=3M': (o('extent=3M'), 'extent'),
        'extent=2K': (o('extent=2K'), 'extent'),
        'extent=8M': (o('extent=8M'), 'extent'),
        'cachesize=abc': (o('cachesize=abc'), 'cachesize'),
        'cachesize=0': (o('cachesize=0'), 'cachesize'),
        'cachesize=101%': (o('cachesize=101%'), 'cachesize'),
        'writemode=bogus': (o('writemode=bogus'), 'writemode'),
        'fuse_uring=sometimes': (
            o('fuse_uring=sometimes'),
            "invalid fuse_uring 'sometimes': on, off or auto"),
        'writemode=writeback,nocache': (
            [src, mnt, '-o', 'nocache,writemode=writeback'],
            'needs a cache store'),
        'writeback_delay without writeback': (
            o('writeback_delay=5'), 'writemode=writeback only'),
        'dirty_high without writeback': (
            o('dirty_high=60'), 'writemode=writeback only'),
        'dirty_low above dirty_high': (
            o('writemode=writeback,dirty_high=40,dirty_low=60'),
            'above dirty_high'),
        'attr_timeout=abc': (o('attr_timeout=abc'), 'attr_timeout'),
        'seqcutoff=x': (o('seqcutoff=x'), 'seqcutoff'),
        'revalidate=bogus': (o('revalidate=bogus'), 'revalidate'),
        'revalidate=-1': (o('revalidate=-1'), 'revalidate'),
        'promote_rate=fast': (o('promote_rate=fast'), 'promote_rate'),
        'entry_timeout=-1': (o('entry_timeout=-1'), 'entry_timeout'),
        'attr_timeout=nan': (o('attr_timeout=nan'), 'attr_timeout'),
        'threshold=': (o('threshold='), 'threshold'),
        'cachesize=1K': (o('cachesize=1K'), 'cachesize'),
        # a leading blank and a sign: strtoull would take them
        'cachesize=<tab>-5M': (o('cachesize=\t-5M'), 'cachesize'),
        'seqcutoff=<tab>-1M': (o('seqcutoff=\t-1M'), 'seqcutoff'),
        'promote_rate=<tab>-1M': (o('promote_rate=\t-1M'), 'promote_rate'),
        'ctldir=a/b': (o('ctldir=a/b'), 'ctldir'),
        'ctldir=..': (o('ctldir=..'), 'ctldir'),
        'inode_cache=-1': (o('inode_cache=-1'), 'inode_cache'),
        'inode_cache=x': (o('inode_cache=x'), 'inode_cache'),
        'missing cachedir': ([src, mnt], 'cachedir'),
        'empty cachedir': ([src, mnt, '-o', 'cachedir='], 'cachedir'),
        # without cache_required the tree mounts without the store
        # (test_unusable_cachedir)
        'cachedir is a file, cache_required': (
            [src, mnt, '-o', 'cachedir=%s,cache_required' % cfile],
            'cachedir'),
        'missing parent of cachedir': (
            [src, mnt, '-o', 'cachedir=' + os.path.join(missing, 'cache')],
            'does not exist'),
        'cachedir inside source': (
            [src, mnt, '-o', 'cachedir=' + os.path.join(src, 'c')],
            'cachedir'),
        'cachedir is the source': ([src, mnt, '-o', 'cachedir=' + src],
                                   'cachedir'),
        'cachedir inside mountpoint': (
            [src, mnt, '-o', 'cachedir=' + os.path.join(mnt, 'c')],
            'cachedir'),
        'cachedir contains the source': (
            [src, mnt, '-o', 'cachedir=' + ws.root], 'cachedir'),
        'missing source': ([missing, mnt, '-o', 'cachedir=' + newcache],
                           'missing'),
        'source is a file': ([cfile, mnt, '-o', 'cachedir=' + newcache],
                             'cachefile'),
        'missing mountpoint': ([src, missing, '-o', 'cachedir=' + newcache],
                               'missing'),
        'too many args': ([src, mnt, missing, '-o', 'cachedir=' + newcache],
                          'missing'),
        'one arg': ([src, '-o', 'cachedir=' + newcache], 'mountpoint'),
        'no args': ([], 'usage'),
    }


CASES = sorted([
    'unknown option', 'unknown option alone', 'threshold=0', 'threshold=abc',
    'threshold=-1', 'extent=3M', 'extent=2K', 'extent=8M', 'cachesize=abc',
    'cachesize=0', 'cachesize=101%', 'writemode=bogus', 'attr_timeout=abc',
    'fuse_uring=sometimes',
    'writemode=writeback,nocache',
    'writeback_delay without writeback',
    'dirty_high without writeback', 'dirty_low above dirty_high',
    'seqcutoff=x', 'revalidate=bogus', 'revalidate=-1', 'promote_rate=fast',
    'entry_timeout=-1', 'attr_timeout=nan', 'threshold=', 'cachesize=1K',
    'cachesize=<tab>-5M', 'seqcutoff=<tab>-1M', 'promote_rate=<tab>-1M',
    'ctldir=a/b', 'ctldir=..', 'inode_cache=-1', 'inode_cache=x',
    'missing cachedir', 'empty cachedir',
    'cachedir is a file, cache_required', 'missing parent of cachedir',
    'cachedir inside source', 'cachedir is the source',
    'cachedir inside mountpoint', 'cachedir contains the source',
    'missing source', 'source is a file', 'missing mountpoint',
    'too many args', 'one arg', 'no args'])


@pytest.mark.parametrize('fg', [True, False], ids=['foreground', 'daemon'])
@pytest.mark.parametrize('case', CASES)
def test_bad_arguments(ws, case, fg):
    cases = bad_cases(ws)
    assert set(cases) == set(CASES)
    args, word = cases[case]
    if fg:
        args = args + ['-f']
    ws.mounts.append(ws.mnt)        # cleaned up if it mounted after all
    r = run(args)
    err = r.stderr.decode(errors='replace')
    mounted = util.is_mounted(ws.mnt)
    util.cleanup_mount(None, ws.mnt)
    assert not mounted, 'hotfs %r mounted' % args
    assert r.returncode != 0, 'hotfs %r exited 0' % args
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith('\n') and lines[0].strip(), \
        'stderr of hotfs %r is not one line: %r' % (args, err)
    assert word in lines[0], 'the message %r does not name %r' % (
        lines[0], word)
    assert lines[0].count('hotfs:') <= 1, 'garbled message %r' % lines[0]
    assert not util.daemon_pids(ws.mnt)
    assert not os.path.exists(os.path.join(ws.root, 'newcache')), \
        'hotfs created the cachedir although it refused to start'
    assert not os.path.exists(os.path.join(ws.root, 'missing')), \
        'hotfs created the cachedir\'s parent'
    assert not os.path.exists(os.path.join(ws.src, 'c'))
    assert os.listdir(ws.src) == []


@pytest.mark.parametrize('flag', ['--help', '-h'])
def test_help(ws, flag):
    r = run([flag])
    assert r.returncode == 0
    out = (r.stdout + r.stderr).decode()
    for word in ('cachedir', 'cachesize', 'extent', 'threshold',
                 'writemode', 'nocache', 'seqcutoff', 'promote_rate',
                 'revalidate', 'reset', 'allow_other'):
        assert word in out, word
    assert not util.is_mounted(ws.mnt)


@pytest.mark.parametrize('flag', ['--version', '-V'])
def test_version(ws, flag):
    r = run([flag])
    assert r.returncode == 0
    out = (r.stdout + r.stderr).decode()
    assert 'hotfs' in out
    # hotfs's own line first, then libfuse's and fusermount3's (into a
    # pipe, as a script reads it)
    assert r.stdout.decode().splitlines()[0].startswith('hotfs version '), \
        out
    version = os.environ.get('HOTFS_VERSION')
    if version:
        assert r.stdout.decode().splitlines()[0] == \
            'hotfs version ' + version


def test_cachedir_created_0700(ws):
    """A missing cachedir is created (0700) in its existing parent; a
    missing parent is not made up (test_bad_arguments)."""
    os.makedirs(os.path.join(ws.root, 'a', 'b'))
    cache = os.path.join(ws.root, 'a', 'b', 'cache')
    proc = ws.start(cachedir=cache)
    st = os.stat(cache)
    assert st.st_mode & 0o777 == 0o700
    assert util.hotfs_stats(ws.mnt)['store_state'] == 'ok'
    ws.stop(proc)


def test_generic_fstab_keywords_ignored(ws):
    opts = ('rw,defaults,auto,nofail,_netdev,noauto,user,users,nouser,'
            'x-systemd.automount,x-systemd.device-timeout=10,'
            'comment=systemd.x,x-gvfs-show')
    proc = ws.start(opts=opts)
    with open(os.path.join(ws.mnt, 'f'), 'w') as f:
        f.write('works')
    with open(os.path.join(ws.src, 'f')) as f:
        assert f.read() == 'works'
    ws.stop(proc)


def test_fuse_options(ws):
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('data')
    proc = ws.start(opts='ro,attr_timeout=2.5,entry_timeout=0.5,'
                    'default_permissions')
    entry = util.mount_entry(ws.mnt)
    assert entry[2] == 'fuse.hotfs', entry
    assert 'ro' in entry[3].split(','), entry
    assert 'default_permissions' in entry[3].split(','), entry
    m = os.path.join(ws.mnt, 'f')
    with open(m) as f:
        assert f.read() == 'data'
    assert util.call(open, m, 'w') == Err(errno.EROFS)
    assert util.call(os.mkdir, m + 'd') == Err(errno.EROFS)
    assert util.call(os.chmod, m, 0o600) == Err(errno.EROFS)
    assert util.call(os.unlink, m) == Err(errno.EROFS)
    assert util.call(os.setxattr, m, 'user.x', b'1') == Err(errno.EROFS)
    assert os.listdir(ws.src) == ['f']
    ws.stop(proc)


def test_nocache(ws):
    cache = os.path.join(ws.root, 'nocache-dir')
    proc = ws.start(opts='nocache', cachedir=False)
    with open(os.path.join(ws.mnt, 'f'), 'w') as f:
        f.write('plain')
    with open(os.path.join(ws.src, 'f')) as f:
        assert f.read() == 'plain'
    assert not os.path.exists(cache)
    ws.stop(proc)


def test_cachedir_in_use(ws):
    """Two daemons never share a cache store: the second mounts the tree
    without it (store_state off, "in use"), or with cache_required is
    refused with one line."""
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('data')
    proc = ws.start()
    mnt2 = os.path.join(ws.root, 'mnt2')
    os.mkdir(mnt2)
    ws.mounts.append(mnt2)
    for fg in ([], ['-f']):
        r = run([ws.src, mnt2, '-o', 'cachedir=%s,cache_required'
                 % ws.cache] + fg)
        lines = r.stderr.decode().splitlines()
        assert r.returncode != 0
        assert len(lines) == 1 and 'in use' in lines[0], lines
        assert not util.is_mounted(mnt2)
    # also once the lock file is gone (the cachedir itself is locked)
    os.unlink(os.path.join(ws.cache, 'lock'))
    r = run([ws.src, mnt2, '-o', 'cachedir=%s,cache_required' % ws.cache,
             '-f'])
    lines = r.stderr.decode().splitlines()
    assert r.returncode != 0 and not util.is_mounted(mnt2)
    assert len(lines) == 1 and 'in use' in lines[0], lines
    # without cache_required: the tree, without the store
    p2 = ws.start(mnt=mnt2)
    s = util.hotfs_stats(mnt2)
    assert s['store_state'] == 'off' and 'in use' in s['store_reason'], s
    with open(os.path.join(mnt2, 'f')) as f:
        assert f.read() == 'data'
    ws.stop(p2)
    # the first mount is unharmed
    assert util.hotfs_stats(ws.mnt)['store_state'] == 'ok'
    with open(os.path.join(ws.mnt, 'f'), 'w') as f:
        f.write('still here')
    ws.stop(proc)


def test_foreign_cachedir(ws):
    """A store made for another source is never emptied on hotfs's own
    initiative: the tree mounts without it (state off, the reason naming
    reset), cache_required refuses with one clear line, -o reset empties
    it for this source; reads are right every time."""
    other = os.path.join(ws.root, 'othersrc')
    os.mkdir(other)
    with open(os.path.join(other, 'f'), 'w') as f:
        f.write('other source')
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('this source')
    proc = ws.start(src=other)
    for _ in range(3):
        with open(os.path.join(ws.mnt, 'f')) as f:
            assert f.read() == 'other source'
    ws.stop(proc)
    ws.mounts.append(ws.mnt)
    r = run([ws.src, ws.mnt, '-o', 'cachedir=%s,cache_required' % ws.cache,
             '-f'])
    lines = r.stderr.decode().splitlines()
    assert r.returncode != 0 and not util.is_mounted(ws.mnt)
    assert len(lines) == 1 and 'reset' in lines[0], lines
    proc = ws.start()
    s = util.hotfs_stats(ws.mnt)
    assert s['store_state'] == 'off' and 'another source' in \
        s['store_reason'] and 'reset' in s['store_reason'], s
    for _ in range(3):
        with open(os.path.join(ws.mnt, 'f')) as f:
            assert f.read() == 'this source'
    ws.stop(proc)
    proc = ws.start(opts='reset')
    assert util.hotfs_stats(ws.mnt)['store_state'] == 'ok'
    with open(os.path.join(ws.mnt, 'f')) as f:
        assert f.read() == 'this source'
    ws.stop(proc)
    # reset is needed once: the store now belongs to this source
    proc = ws.start()
    assert util.hotfs_stats(ws.mnt)['store_state'] == 'ok'
    with open(os.path.join(ws.mnt, 'f')) as f:
        assert f.read() == 'this source'
    ws.stop(proc)


def cachedir_state(path):
    """A listing of path with every file's mode, size and hash."""
    out = {}
    if os.path.isfile(path):
        with open(path, 'rb') as f:
            return {'.': hashlib.sha256(f.read()).hexdigest()}
    for dirpath, dirnames, files in os.walk(path):
        for n in dirnames + files:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            h = None
            if stat.S_ISREG(st.st_mode):
                with open(p, 'rb') as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, path)] = (st.st_mode, st.st_size, h)
    return out


def set_sb_version(cache, version):
    """Rewrite the superblock's format version (struct st_sb in
    src/store/store_i.h: u32 at offset 8), with its checksum made right again
    (xxh3 of the 4088 bytes before it), as another hotfs would have."""
    xxh = ctypes.CDLL(ctypes.util.find_library('xxhash') or
                      'libxxhash.so.0')
    xxh.XXH3_64bits.restype = ctypes.c_uint64
    xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    p = os.path.join(cache, 'superblock')
    with open(p, 'rb') as f:
        sb = bytearray(f.read())
    assert len(sb) == 4096
    struct.pack_into('<I', sb, 8, version)
    struct.pack_into('<Q', sb, 4088, xxh.XXH3_64bits(bytes(sb[:4088]),
                                                     4088))
    with open(p, 'wb') as f:
        f.write(sb)


def wait_daemon_gone(mnt):
    util.wait_for(lambda: not util.daemon_pids(mnt),
                  'the daemon on %s to exit' % mnt)


@pytest.mark.parametrize('case', [
    'in use', 'foreign', 'older version', 'newer version',
    'damaged superblock', 'data without superblock', 'not a superblock',
    'cachedir is a file'])
def test_unusable_cachedir(ws, case):
    """A cachedir hotfs cannot use costs the cache, never the tree: the
    source is mounted and read right, store_state is off with a reason
    that names the cause (and reset where it would help), and the reason
    is one line on stderr before daemonizing (the log, in the
    foreground).  With cache_required the mount is refused with that one
    line and a non-zero exit.  Nothing in the cachedir changes either way
    (a listing with every file's hash, before and after): a store is
    never reset on hotfs's own initiative."""
    data = b'x' * 300000
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(data)
    cache = ws.cache
    word = 'reset'
    proc = None
    if case == 'cachedir is a file':
        cache = os.path.join(ws.root, 'cachefile')
        with open(cache, 'w') as f:
            f.write('not a dir')
        word = 'cachedir'
    else:
        # a store with something in it
        p = ws.start(opts='threshold=1')
        for _ in range(2):
            util.read_cold(os.path.join(ws.mnt, 'f'))
        util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)
                                  ['cached_extents']) >= 2,
                      'the file cached')
        ws.stop(p)
        if case == 'in use':
            # idle: it has nothing to commit
            mnt1 = os.path.join(ws.root, 'mnt1')
            os.mkdir(mnt1)
            proc = ws.start(mnt=mnt1, opts='threshold=1')
            word = 'in use'
    src = ws.src
    if case == 'foreign':
        src = os.path.join(ws.root, 'othersrc')
        os.mkdir(src)
        with open(os.path.join(src, 'f'), 'wb') as f:
            f.write(data)
    elif case == 'older version':
        set_sb_version(cache, 0)
    elif case == 'newer version':
        set_sb_version(cache, 2)
    elif case == 'damaged superblock':
        with open(os.path.join(cache, 'superblock'), 'r+b') as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0x20]))
    elif case == 'data without superblock':
        os.unlink(os.path.join(cache, 'superblock'))
    elif case == 'not a superblock':
        with open(os.path.join(cache, 'superblock'), 'wb') as f:
            f.write(b'something else\n' * 300)
    before = cachedir_state(cache)
    mnt2 = os.path.join(ws.root, 'mnt2')
    os.mkdir(mnt2)
    ws.mounts.append(mnt2)

    def check_mounted(where):
        s = util.hotfs_stats(mnt2)
        assert s['store_state'] == 'off' and word in s['store_reason'], \
            (where, s)
        for _ in range(3):
            assert util.read_cold(os.path.join(mnt2, 'f')) == data, where

    for fg in ([], ['-f']):
        r = run([src, mnt2, '-o', 'cachedir=%s,cache_required' % cache] +
                fg)
        lines = r.stderr.decode(errors='replace').splitlines()
        assert r.returncode != 0, case
        assert not util.is_mounted(mnt2)
        assert len(lines) == 1 and word in lines[0], lines
        assert cachedir_state(cache) == before, \
            '%s: the refused start changed the cachedir' % case
    # daemonized: mounted, and the reason on stderr before detaching
    r = run([src, mnt2, '-o', 'cachedir=' + cache])
    lines = r.stderr.decode(errors='replace').splitlines()
    assert r.returncode == 0, (case, lines)
    assert len(lines) == 1 and word in lines[0] and \
        'cache is off' in lines[0], lines
    assert util.is_mounted(mnt2)
    check_mounted('daemonized')
    assert util.unmount_cmd(mnt2)
    wait_daemon_gone(mnt2)
    assert cachedir_state(cache) == before, \
        '%s: the mount without the store changed the cachedir' % case
    # in the foreground: the same line, once, in its log
    p2 = ws.start(src=src, mnt=mnt2, cachedir=cache)
    check_mounted('foreground')
    lines = [ln for ln in ws.log_text(p2).splitlines()[1:]
             if 'cache is off' in ln]
    assert len(lines) == 1 and word in lines[0], ws.log_text(p2)
    ws.stop(p2)
    assert cachedir_state(cache) == before, \
        '%s: the mount without the store changed the cachedir' % case
    if proc is not None:
        ws.stop(proc)


def test_mountpoint_in_use(ws):
    """A mount over a live hotfs mount, a dead FUSE mount or a non-empty
    directory is refused with one line (nonempty allows the first and
    the last); nothing is mounted."""
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('data')
    cache2 = os.path.join(ws.root, 'cache2')

    def mounts_on(mnt):
        with open('/proc/self/mounts') as f:
            return sum(1 for ln in f if ln.split()[1] == mnt)

    def refused(mnt, word, extra=''):
        n = mounts_on(mnt)
        for fg in ([], ['-f']):
            r = run([ws.src, mnt, '-o', 'cachedir=' + cache2 + extra] + fg)
            lines = r.stderr.decode(errors='replace').splitlines()
            assert r.returncode != 0, (mnt, word)
            assert len(lines) == 1 and word in lines[0], lines
            assert mounts_on(mnt) == n, 'mounted over %s' % mnt
            assert not os.path.exists(cache2)

    # a live hotfs mount
    proc = ws.start()
    refused(ws.mnt, 'hotfs mount already')
    ws.stop(proc)
    # a non-empty directory
    full = os.path.join(ws.root, 'full')
    os.mkdir(full)
    with open(os.path.join(full, 'x'), 'w') as f:
        f.write('hidden by a mount')
    ws.mounts.append(full)
    refused(full, 'not empty')
    p = ws.start(mnt=full, opts='nonempty')
    with open(os.path.join(full, 'f')) as f:
        assert f.read() == 'data'
    ws.stop(p)
    # a dead FUSE mount: its daemon killed
    proc = ws.start()
    proc.kill()
    proc.wait()
    util.wait_for(lambda: util.call(os.statvfs, ws.mnt) ==
                  Err(errno.ENOTCONN), 'the mount to be dead')
    refused(ws.mnt, 'dead FUSE mount')
    refused(ws.mnt, 'dead FUSE mount', ',nonempty')
    util.cleanup_mount(None, ws.mnt)


@pytest.mark.parametrize('how', ['child', 'deeper', 'symlink', 'dotdot',
                                 'bind mount'])
def test_mountpoint_inside_source(ws, how):
    """A mountpoint inside the source is refused with one line and exit
    status 1, however its path names it (through a symlink, "..", or a
    bind mount of the source): the mount would contain itself, find(1)
    would report a loop and umount would find it busy.  Nothing is
    mounted, no daemon stays, no cachedir is made."""
    os.makedirs(os.path.join(ws.src, 'd', 'mnt'))
    os.mkdir(os.path.join(ws.src, 'e'))
    bind = os.path.join(ws.root, 'bind')
    mnt = {
        'child': os.path.join(ws.src, 'e'),
        'deeper': os.path.join(ws.src, 'd', 'mnt'),
        'symlink': os.path.join(ws.root, 'link'),
        'dotdot': os.path.join(ws.mnt, '..', 'src', 'e'),
        'bind mount': os.path.join(bind, 'e'),
    }[how]
    if how == 'symlink':
        os.symlink(os.path.join(ws.src, 'd', 'mnt'), mnt)
    real = os.path.realpath(mnt)
    cache2 = os.path.join(ws.root, 'cache2')
    try:
        if how == 'bind mount':
            os.mkdir(bind)
            subprocess.run(['mount', '--bind', ws.src, bind], check=True)
        for fg in ([], ['-f']):
            r = run([ws.src, mnt, '-o', 'cachedir=' + cache2] + fg)
            mounted = util.is_mounted(real)
            util.cleanup_mount(None, real)
            lines = r.stderr.decode(errors='replace').splitlines()
            assert not mounted, 'mounted on %s' % mnt
            assert r.returncode == 1, (how, r.returncode, lines)
            assert len(lines) == 1 and 'inside the source' in lines[0], \
                lines
            assert not util.daemon_pids(real)
            assert not os.path.exists(cache2)
    finally:
        util.cleanup_mount(None, real)
        if util.is_mounted(bind):
            subprocess.run(['umount', bind], check=True)


def test_mount_over_the_source(ws):
    """The source itself as the mountpoint (a view laid over the tree,
    with nonempty) is no loop: it mounts, serves and takes writes, and
    unmounts cleanly."""
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('under the view')
    proc = ws.start(mnt=ws.src, opts='nonempty,threshold=1')
    for _ in range(2):
        assert util.read_cold(os.path.join(ws.src, 'f')) == \
            b'under the view'
    with open(os.path.join(ws.src, 'g'), 'w') as f:
        f.write('through the view')
    assert util.hotfs_stats(ws.src)['store_state'] == 'ok'
    assert sorted(os.listdir(ws.src)) == ['f', 'g']
    ws.stop(proc)
    with open(os.path.join(ws.src, 'g')) as f:
        assert f.read() == 'through the view'


def test_relative_paths_daemonized(ws):
    """Relative SOURCE, MOUNTPOINT and cachedir are taken relative to the
    directory hotfs was started in, also once it has daemonized (and left
    that directory)."""
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('relative')
    ws.mounts.append(ws.mnt)
    r = run(['src', 'mnt/', '-o', 'cachedir=./relcache'], cwd=ws.root)
    assert r.returncode == 0, r.stderr.decode()
    assert util.is_mounted(ws.mnt)
    with open(os.path.join(ws.mnt, 'f')) as f:
        assert f.read() == 'relative'
    with open(os.path.join(ws.mnt, 'g'), 'w') as f:
        f.write('new')
    assert os.path.exists(os.path.join(ws.src, 'g'))
    assert os.path.isdir(os.path.join(ws.root, 'relcache'))
    util.cleanup_mount(None, ws.mnt)
    assert not util.is_mounted(ws.mnt)


def test_awkward_paths(ws):
    """Paths with commas, spaces and other characters that mount options
    and /proc/mounts escape."""
    src = os.path.join(ws.root, 'slow tree, with commas=and\tspaces')
    mnt = os.path.join(ws.root, 'fast view, too')
    cache = os.path.join(ws.root, 'cache dir,x')
    os.mkdir(src)
    os.mkdir(mnt)
    with open(os.path.join(src, 'f'), 'w') as f:
        f.write('awkward')
    # a comma inside an -o value is escaped with a backslash (fuse_opt)
    proc = ws.start(src=src, mnt=mnt, cachedir=cache.replace(',', '\\,'))
    with open(os.path.join(mnt, 'f')) as f:
        assert f.read() == 'awkward'
    assert os.path.isdir(cache)
    ws.stop(proc)


def test_source_through_a_symlink(ws):
    link = os.path.join(ws.root, 'srclink')
    os.symlink(ws.src, link)
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('via link')
    proc = ws.start(src=link)
    with open(os.path.join(ws.mnt, 'f')) as f:
        assert f.read() == 'via link'
    # replacing the link afterwards does not move the mount
    os.unlink(link)
    os.symlink('/etc', link)
    assert os.listdir(ws.mnt) == ['f']
    ws.stop(proc)


def test_debug_option(ws):
    """-d: requests are logged to stderr and the mount works as usual."""
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('debug')
    quiet = ws.start()
    with open(os.path.join(ws.mnt, 'f')) as f:
        assert f.read() == 'debug'
    ws.stop(quiet)
    loud = ws.start(args=['-d'])
    with open(os.path.join(ws.mnt, 'f')) as f:
        assert f.read() == 'debug'
    ws.stop(loud)
    text = ws.log_text(loud)
    assert 'LOOKUP' in text and 'READ' in text, text[-2000:]
    assert len(text.splitlines()) > len(ws.log_text(quiet).splitlines()) + 10
