# SPDX-License-Identifier: GPL-2.0-or-later
"""No user but the daemon's can read a cached byte out of the cachedir.

A source file readable by root alone (0600) is warmed into the store; a
process of an unprivileged user (uid 65534, in a forked child) then tries
to list the cachedir and to open and read every file in it.  It must get
nothing, after a fresh start, after -o reset and after a remount, where
the cachedir and its files started out world-readable (0755 and 0644, as
a careless admin or an older hotfs left them).  As root, the test checks
that the secret bytes really are in the store (so that the refusal is
what protects them) and that the cachedir is 0700 and its files 0600.

Nothing of another user's is taken over: a cachedir that belongs to
another user is neither chowned nor chmodded nor used, and a symlink
(or a hard link) put in place of one of the store's files is not
followed: the file it names stays as it was, and the store is refused
with one line saying what and why.
"""
import os
import stat
import subprocess

import pytest

import util
from util import Err

NOBODY = 65534
SECRET = b'the root-only bytes of a 0600 file\n' * 3000


def make_public(cache):
    """The cachedir 0755 and every file in it 0644."""
    os.chmod(cache, 0o755)
    for name in os.listdir(cache):
        p = os.path.join(cache, name)
        if stat.S_ISREG(os.lstat(p).st_mode):
            os.chmod(p, 0o644)


def warm_secret(ws):
    """Read the 0600 file through the mount until the store holds it."""
    m = os.path.join(ws.mnt, 'secret')
    for _ in range(2):
        assert util.read_cold(m) == SECRET
    util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)['cached_bytes'])
                  >= len(SECRET) and
                  int(util.hotfs_stats(ws.mnt)['promotion_queue_depth'])
                  == 0, 'the secret file cached')


def try_read_everything(cache):
    """As the unprivileged user: what could be listed and read of the
    cachedir, file by file (bytes or Err)."""
    got = {'.': util.call(os.listdir, cache)}
    for name in ('data', 'superblock', 'lock', 'pins', 'counts', 'meta'):
        def read(p=os.path.join(cache, name)):
            with open(p, 'rb') as f:
                return f.read()
        got[name] = util.call(read)
    return got


def assert_private(ws, when):
    cache = ws.cache
    st = os.stat(cache)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == 0, \
        '%s: cachedir mode %o uid %d' % (when, st.st_mode, st.st_uid)
    for name in os.listdir(cache):
        st = os.lstat(os.path.join(cache, name))
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0, \
            '%s: %s mode %o uid %d' % (when, name, st.st_mode, st.st_uid)
    # the bytes are there, as root sees them ...
    with open(os.path.join(cache, 'data'), 'rb') as f:
        assert SECRET[:4096] in f.read(), \
            '%s: the secret is not in the store' % when
    # ... and out of an unprivileged user's reach
    got = util.run_as(NOBODY, NOBODY, try_read_everything, cache)
    assert all(v == Err(13) for v in got.values()), \
        '%s: uid %d got %r' % (when, NOBODY,
                               {k: v if isinstance(v, Err) else
                                'read %d bytes' % len(v)
                                for k, v in got.items()})


@pytest.fixture
def secret_src(ws):
    p = os.path.join(ws.src, 'secret')
    with open(p, 'wb') as f:
        f.write(SECRET)
    os.chmod(p, 0o600)
    # a world-readable cachedir, there before hotfs
    os.mkdir(ws.cache)
    os.chmod(ws.cache, 0o755)
    return ws


def test_fresh_start(secret_src):
    ws = secret_src
    proc = ws.start(opts='threshold=1')
    warm_secret(ws)
    assert_private(ws, 'fresh start, mounted')
    ws.stop(proc)
    assert_private(ws, 'fresh start, unmounted')


@pytest.mark.parametrize('how', ['remount', 'reset'])
def test_public_store_made_private(secret_src, how):
    """A store left world-readable (0755, 0644) is made private by the
    next mount, before it serves or caches anything."""
    ws = secret_src
    proc = ws.start(opts='threshold=1')
    warm_secret(ws)
    ws.stop(proc)
    # every file there was, including the snapshot, counts and pins
    for name in ('pins', 'counts', 'meta', 'superblock.tmp'):
        p = os.path.join(ws.cache, name)
        if not os.path.exists(p):
            with open(p, 'wb'):
                pass
    make_public(ws.cache)
    assert util.run_as(NOBODY, NOBODY, try_read_everything,
                       ws.cache)['data'] != Err(13)
    proc = ws.start(opts='threshold=1' + (',reset' if how == 'reset'
                                          else ''))
    # at once, before any read
    st = os.stat(ws.cache)
    assert stat.S_IMODE(st.st_mode) == 0o700, oct(st.st_mode)
    for name in ('data', 'superblock', 'lock'):
        st = os.stat(os.path.join(ws.cache, name))
        assert stat.S_IMODE(st.st_mode) == 0o600, (name, oct(st.st_mode))
    warm_secret(ws)
    assert_private(ws, how + ', mounted')
    ws.stop(proc)
    assert_private(ws, how + ', unmounted')


# -- nothing of another user's is taken over, no symlink is followed ------

RUN_TIMEOUT = 15


def run_hotfs(ws, cache, opts='', mnt=None):
    """hotfs daemonized on ws.src: (exit status, stderr's lines).  A
    mount it made is cleaned up with the workspace."""
    mnt = mnt or ws.mnt
    ws.mounts.append(mnt)
    o = 'cachedir=' + cache + (',' + opts if opts else '')
    r = subprocess.run([util.hotfs_bin(), ws.src, mnt, '-o', o],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
    return r.returncode, r.stderr.decode(errors='replace').splitlines()


def unmount_daemon(mnt):
    assert util.unmount_cmd(mnt)
    util.wait_for(lambda: not util.daemon_pids(mnt),
                  'the daemon on %s to exit' % mnt)


def owner_mode(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def test_foreign_cachedir_not_taken_over(ws):
    """A cachedir that exists and belongs to another user is neither
    chowned nor chmodded nor written into: with cache_required the mount
    is refused with one line naming the owner; without it the tree
    mounts without the store, that line on stderr and in the stats."""
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('data')
    os.mkdir(ws.cache)
    os.chown(ws.cache, NOBODY, NOBODY)
    os.chmod(ws.cache, 0o755)
    before = owner_mode(ws.cache)
    rc, lines = run_hotfs(ws, ws.cache, 'cache_required')
    assert rc == 1 and not util.is_mounted(ws.mnt), (rc, lines)
    assert len(lines) == 1 and 'uid %d' % NOBODY in lines[0], lines
    assert owner_mode(ws.cache) == before
    assert os.listdir(ws.cache) == []
    rc, lines = run_hotfs(ws, ws.cache)
    assert rc == 0 and util.is_mounted(ws.mnt), (rc, lines)
    assert len(lines) == 1 and 'uid %d' % NOBODY in lines[0] and \
        'cache is off' in lines[0], lines
    s = util.hotfs_stats(ws.mnt)
    assert s['store_state'] == 'off' and \
        'uid %d' % NOBODY in s['store_reason'], s
    with open(os.path.join(ws.mnt, 'f')) as f:
        assert f.read() == 'data'
    unmount_daemon(ws.mnt)
    assert owner_mode(ws.cache) == before
    assert os.listdir(ws.cache) == []


@pytest.mark.parametrize('name', ['data', 'lock', 'superblock',
                                  'data, a hard link', 'wlog'])
def test_planted_in_the_cachedir(ws, name):
    """A symlink put in place of one of the store's files (pointing out of
    the cachedir, at another user's file), or a hard link to a file
    outside: the file outside is never written, emptied, chmodded or
    chowned, and the store (or, for writeback, the mount that needs its
    log) is refused with one line that says what and why."""
    link = name.split(',')[0]
    wb = link == 'wlog'
    opts = 'writemode=writeback' if wb else ''
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('data')
    # a store with all its files
    proc = ws.start(opts=opts)
    ws.stop(proc)
    target = os.path.join(ws.root, 'target')
    with open(target, 'w') as f:
        f.write('not the store\'s\n')
    os.chmod(target, 0o644)
    if 'hard link' in name:
        # root's own file: only its other name gives it away
        why = 'hard links'
        os.unlink(os.path.join(ws.cache, link))
        os.link(target, os.path.join(ws.cache, link))
    else:
        why = 'symlink'
        os.chown(target, NOBODY, NOBODY)
        os.unlink(os.path.join(ws.cache, link))
        os.symlink(target, os.path.join(ws.cache, link))
    def state():
        with open(target) as f:
            return owner_mode(target), f.read()

    before = state()
    # writeback cannot go without its log
    rc, lines = run_hotfs(ws, ws.cache, opts if wb else 'cache_required')
    assert rc == 1 and not util.is_mounted(ws.mnt), (rc, lines)
    assert len(lines) == 1 and "'%s'" % link in lines[0] and \
        why in lines[0], lines
    assert state() == before
    if not wb:
        rc, lines = run_hotfs(ws, ws.cache)
        assert rc == 0 and util.is_mounted(ws.mnt), (rc, lines)
        assert len(lines) == 1 and why in lines[0] and \
            'cache is off' in lines[0], lines
        s = util.hotfs_stats(ws.mnt)
        assert s['store_state'] == 'off' and why in s['store_reason'], s
        with open(os.path.join(ws.mnt, 'f')) as f:
            assert f.read() == 'data'
        unmount_daemon(ws.mnt)
    else:
        # writearound needs no log: it mounts with its store, and leaves
        # the symlink alone
        proc = ws.start()
        assert util.hotfs_stats(ws.mnt)['store_state'] == 'ok'
        ws.stop(proc)
        assert os.path.islink(os.path.join(ws.cache, link))
    assert state() == before


@pytest.mark.parametrize('owner', ['nobody', 'root'])
def test_cachedir_through_another_users_symlink(ws, owner):
    """A cachedir named through a symlink another user made (in a
    world-writable sticky directory, as /tmp), as the cachedir or as a
    directory on its path, is refused like a bad option: one line naming
    the symlink, exit status 1, nothing mounted; the directory it points
    at (another user's, or root's) keeps its owner, mode and contents.
    The same symlink made by root is followed."""
    sticky = os.path.join(ws.root, 'tmp')
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    target = os.path.join(ws.root, 'target')
    os.mkdir(target)
    os.chmod(target, 0o755)
    if owner == 'nobody':
        os.chown(target, NOBODY, NOBODY)
    link = os.path.join(sticky, 'cache')
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOBODY)
    before = owner_mode(target)
    for cache in (link, os.path.join(link, 'sub')):
        for opts in ('', 'cache_required'):
            rc, lines = run_hotfs(ws, cache, opts)
            assert rc == 1 and not util.is_mounted(ws.mnt), (rc, lines)
            assert len(lines) == 1 and "'%s'" % link in lines[0] and \
                'uid %d' % NOBODY in lines[0], lines
            assert owner_mode(target) == before
            assert os.listdir(target) == []
    if owner == 'root':
        os.lchown(link, 0, 0)
        proc = ws.start(cachedir=link)
        assert util.hotfs_stats(ws.mnt)['store_state'] == 'ok'
        ws.stop(proc)
        assert owner_mode(target) == (0, 0, 0o700)
        assert 'data' in os.listdir(target)
