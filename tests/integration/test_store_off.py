# SPDX-License-Identifier: GPL-2.0-or-later
"""A cache must never make the tree unavailable.

Each cachedir below cannot hold a working store: on a read-only
filesystem, on a full one, with a lock file that cannot be opened, with a
cachesize smaller than two regions.  The tree mounts all the same and
every file reads back as the source has it; .hotfs/stats says the store
is not ok, since when, and why, in words that say what to do; the stats
have the same keys as a healthy mount's; the reason is one line in the
log.  With -o cache_required the mount is refused with that line
instead, and nothing is mounted.

The cache filesystems are ext4 images on loop devices of the test's own
(test_faults.py's helpers); teardown unmounts hotfs, then them, then
detaches the loop devices, whether the test passed or not.
"""
import json
import os
import subprocess
import time

import pytest

import util
from test_faults import ext4, fill, make_tree, check_all, stats, run  # noqa: F401

CASES = {
    # name: (words the reason must hold, expected states)
    'read-only fs': (['Read-only file system', 'read-write'], ['off']),
    'read-only fs, new cachedir': (['Read-only file system',
                                    'read-write'], ['off']),
    'full fs': (['free space'], ['off', 'read-only']),
    'lock cannot be opened': (['lock', 'Operation not permitted',
                               'permissions'], ['off']),
    'cachesize below two regions': (['two regions', 'cachesize'], ['off']),
}


def healthy_keys(ws):
    """The stats keys of a mount with a working store."""
    proc = ws.start(cachedir=os.path.join(ws.root, 'okcache'))
    keys = set(stats(ws.mnt))
    ws.stop(proc)
    return keys


@pytest.mark.parametrize('case', sorted(CASES))
def test_tree_mounts_without_store(ws, ext4, case):
    words, states = CASES[case]
    files = make_tree(ws.src)
    keys = healthy_keys(ws)
    opts = 'threshold=1'
    cdev = ext4('cachefs', 64 << 20, mkfs_args=['-m', '0'])
    cache = os.path.join(cdev.dir, 'cache')
    undo = []
    if case == 'read-only fs':
        # a store made there, then its filesystem read-only
        p = ws.start(cachedir=cache, opts='cachesize=32M,' + opts)
        ws.stop(p)
        cdev.umount()
        cdev.fsck_and_mount('ro')
    elif case == 'read-only fs, new cachedir':
        cdev.umount()
        cdev.fsck_and_mount('ro')
    elif case == 'full fs':
        fill(cdev.dir)
    elif case == 'lock cannot be opened':
        p = ws.start(cachedir=cache, opts='cachesize=32M,' + opts)
        ws.stop(p)
        lock = os.path.join(cache, 'lock')
        r = run(['chattr', '+i', lock])
        if r.returncode != 0:
            pytest.skip('chattr +i: %s' % r.stdout.decode().strip())
        undo.append(['chattr', '-i', lock])
    elif case == 'cachesize below two regions':
        opts += ',cachesize=16M'
    try:
        mnt2 = os.path.join(ws.root, 'mnt2')
        os.mkdir(mnt2)
        ws.mounts.append(mnt2)
        # cache_required: refused, one line, nothing mounted
        p = ws.start(mnt=mnt2, cachedir=cache, wait=False,
                     opts=opts + ',cache_required')
        try:
            rc = p.wait(timeout=util.TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail('%s: not refused with cache_required' % case)
        lines = ws.log_text(p).splitlines()[1:]
        assert rc != 0 and not util.is_mounted(mnt2), case
        assert len(lines) == 1 and all(w in lines[0] for w in words), lines

        # without: mounted, right bytes, the state and why
        before = time.time()
        proc = ws.start(cachedir=cache, opts=opts)
        for _ in range(3):
            check_all(ws.mnt, files)
        s = stats(ws.mnt)
        assert s['store_state'] in states, s
        assert all(w in s['store_reason'] for w in words), s
        assert before - 2 <= s['store_state_since'] <= time.time(), s
        assert set(s) == keys, 'keys differ from a healthy mount\'s: %r' \
            % (set(s) ^ keys)
        assert all(v >= 0 for v in s.values()
                   if isinstance(v, (int, float))), s
        # hotfsctl status shows the same
        r = subprocess.run([os.environ.get('HOTFSCTL_BIN', 'hotfsctl'),
                            'status', ws.mnt], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        out = r.stdout.decode()
        assert r.returncode == 0, out
        assert any(ln.split()[:2] == ['store_state', s['store_state']]
                   for ln in out.splitlines()), out
        assert 'store_state_since' in out and \
            s['store_reason'] in out, out
        log = [ln for ln in ws.log_text(proc).splitlines()[1:]
               if s['store_reason'] in ln]
        assert len(log) == 1, ws.log_text(proc)
        assert proc.poll() is None
        ws.stop(proc)
    finally:
        for cmd in undo:
            run(cmd)


def unfill_and_wait_ok(ws, cdev):
    """Remove what fill() wrote; the store says ok again by itself."""
    for name in os.listdir(cdev.dir):
        if name.startswith('filler'):
            os.unlink(os.path.join(cdev.dir, name))
    os.sync()
    util.wait_for(lambda: stats(ws.mnt)['store_state'] == 'ok',
                  'the store to take inserts again', timeout=15)


def test_full_fs_recovers(ws, ext4):
    """A store that has no room for a region says read-only, not ok; once
    space is freed it caches again, without a remount."""
    files = make_tree(ws.src)
    cdev = ext4('cachefs', 128 << 20, mkfs_args=['-m', '0'])
    cache = os.path.join(cdev.dir, 'cache')
    os.mkdir(cache)
    fill(cdev.dir)
    # room for the superblock, not for a region (16 MiB, and 7% free)
    big = max((os.path.join(cdev.dir, n) for n in os.listdir(cdev.dir)
               if n.startswith('filler')), key=os.path.getsize)
    os.truncate(big, os.path.getsize(big) - (4 << 20))
    os.sync()
    proc = ws.start(cachedir=cache, opts='cachesize=64M,threshold=1')
    s = stats(ws.mnt)
    assert s['store_state'] == 'read-only' and \
        'free space' in s['store_reason'], s
    check_all(ws.mnt, files)
    unfill_and_wait_ok(ws, cdev)
    util.wait_for(lambda: check_all(ws.mnt, files) is None and
                  stats(ws.mnt)['cached_extents'] > 0,
                  'files to be cached', timeout=15)
    check_all(ws.mnt, files)
    ws.stop(proc)


@pytest.mark.parametrize('how', ['deleted', 'replaced', 'data replaced'])
def test_cachedir_gone_while_mounted(ws, how):
    """The cachedir deleted or replaced, or its data file replaced, under
    a mounted hotfs: within a few seconds the state is off, naming the
    cachedir and what happened; every file still reads right."""
    files = make_tree(ws.src)
    proc = ws.start(opts='threshold=1')
    check_all(ws.mnt, files)
    check_all(ws.mnt, files)
    util.wait_for(lambda: stats(ws.mnt)['cached_extents'] > 0 and
                  stats(ws.mnt)['promotion_queue_depth'] == 0,
                  'the files cached')
    assert stats(ws.mnt)['store_state'] == 'ok'
    if how == 'deleted':
        util.rmtree(ws.cache)
    elif how == 'replaced':
        os.rename(ws.cache, ws.cache + '.old')
        os.mkdir(ws.cache, 0o700)
    else:
        data = os.path.join(ws.cache, 'data')
        os.rename(data, data + '.old')
        with open(data, 'wb') as f:
            f.write(b'\0' * 4096)
    util.wait_for(lambda: stats(ws.mnt)['store_state'] == 'off',
                  'the store to notice', timeout=5)
    s = stats(ws.mnt)
    word = {'deleted': 'deleted', 'replaced': 'replaced by another',
            'data replaced': 'data file replaced'}[how]
    assert ws.cache in s['store_reason'] and word in s['store_reason'], s
    assert s['store_state_since'] > 0
    for _ in range(2):
        check_all(ws.mnt, files)
    log = [ln for ln in ws.log_text(proc).splitlines()
           if s['store_reason'] in ln]
    assert len(log) == 1, ws.log_text(proc)
    ws.stop(proc)


def hotfsctl(*args):
    return subprocess.run([os.environ.get('HOTFSCTL_BIN', 'hotfsctl')] +
                          list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)


def test_store_on(ws):
    """hotfsctl store on: a store that could not open at mount (its
    cachedir in use by another hotfs) is refused again while the cause
    lasts, with the reason, and opens once it is gone, without a
    remount; from then on files are cached and served from it."""
    files = make_tree(ws.src)
    first = ws.start()
    mnt2 = os.path.join(ws.root, 'mnt2')
    os.mkdir(mnt2)
    proc = ws.start(mnt=mnt2, opts='threshold=1')
    s = stats(mnt2)
    assert s['store_state'] == 'off' and 'in use' in s['store_reason'], s
    since = s['store_state_since']
    r = hotfsctl('store', 'on', mnt2)
    err = r.stderr.decode()
    assert r.returncode == 1 and 'in use' in err and \
        len(err.splitlines()) == 1, (r.returncode, err)
    s = stats(mnt2)
    assert s['store_state'] == 'off' and 'in use' in s['store_reason'] \
        and s['store_state_since'] >= since, s
    check_all(mnt2, files)
    ws.stop(first)
    r = hotfsctl('store', 'on', mnt2)
    assert r.returncode == 0 and r.stdout.decode().startswith('ok'), \
        (r.stdout, r.stderr)
    s = stats(mnt2)
    assert s['store_state'] == 'ok' and s['store_reason'] == '', s
    check_all(mnt2, files)
    check_all(mnt2, files)
    util.wait_for(lambda: stats(mnt2)['cached_extents'] > 0 and
                  stats(mnt2)['promotion_queue_depth'] == 0,
                  'the files cached after store on')
    before = stats(mnt2)['read_hit_bytes']
    check_all(mnt2, files)
    assert stats(mnt2)['read_hit_bytes'] > before, stats(mnt2)
    # on already: said so, not an error
    r = hotfsctl('store', 'on', mnt2)
    assert r.returncode == 0 and b'already' in r.stdout, r.stdout
    ws.stop(proc)


def test_store_on_after_runtime_off(ws):
    """A store that went off while mounted (its cachedir deleted) is not
    replaced under its readers: store on says so (exit 1, naming the
    next mount) and the tree goes on from the source."""
    files = make_tree(ws.src)
    proc = ws.start(opts='threshold=1')
    check_all(ws.mnt, files)
    util.rmtree(ws.cache)
    util.wait_for(lambda: stats(ws.mnt)['store_state'] == 'off',
                  'the store to notice', timeout=5)
    r = hotfsctl('store', 'on', ws.mnt)
    assert r.returncode == 1 and b'next mount' in r.stderr, r.stderr
    check_all(ws.mnt, files)
    ws.stop(proc)


def test_fs_fills_while_mounted(ws, ext4):
    """The cachedir's filesystem filled while mounted, before the store
    held a region: the state says read-only and why as soon as an insert
    finds no region (not "ok" while every promotion is refused); warm
    says so once with a count, not once a file; a pin that could not be
    made good is not kept; once space is freed the same pin holds."""
    files = make_tree(ws.src)
    cdev = ext4('cachefs', 64 << 20, mkfs_args=['-m', '0'])
    cache = os.path.join(cdev.dir, 'cache')
    proc = ws.start(cachedir=cache, opts='cachesize=32M,threshold=1')
    assert stats(ws.mnt)['store_state'] == 'ok'
    fill(cdev.dir)
    r = hotfsctl('warm', ws.mnt)
    err = [ln for ln in r.stderr.decode().splitlines()
           if ln.startswith('hotfsctl:')]
    assert r.returncode == 1, r.stderr
    assert len(err) == 1 and ('%d files not cached' % len(files)) in err[0] \
        and 'hotfsctl status' in err[0], err
    s = stats(ws.mnt)
    assert s['store_state'] == 'read-only' and \
        'free space' in s['store_reason'], s
    assert s['cached_extents'] == 0, s
    one = os.path.join(ws.mnt, 'f0')
    r = hotfsctl('pin', one)
    assert r.returncode == 1 and b'1 file not pinned' in r.stderr, r.stderr
    r = hotfsctl('--json', 'pins', ws.mnt)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['files'] == [], r.stdout
    assert stats(ws.mnt)['pinned_files'] == 0
    check_all(ws.mnt, files)
    unfill_and_wait_ok(ws, cdev)
    r = hotfsctl('pin', one)
    assert r.returncode == 0, r.stderr
    r = hotfsctl('--json', 'pins', ws.mnt)
    assert [f['path'] for f in json.loads(r.stdout)['files']] == [one], \
        r.stdout
    check_all(ws.mnt, files)
    ws.stop(proc)
