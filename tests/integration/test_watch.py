# SPDX-License-Identifier: GPL-2.0-or-later
"""The source watch and the names the kernel holds.

The watch tells the kernel of every name created, removed or moved
behind the mount in a watched source directory; of the mount's own
changes, which the kernel learnt from the replies, nothing.  A name whose
source object is still the one the kernel was given must stay as it is:
a process whose working directory was made or renamed through the mount
keeps its getcwd(), a file created through the mount and held open keeps
its /proc/PID/fd path, as on the source's own filesystem.  Its
notifications must never name a node the kernel no longer holds as the
daemon meant it (a node id whose inode was freed and reused), and every
directory reached through the metadata snapshot is watched as on a fresh
mount.  The file attribute ioctls (lsattr, chattr) reach the source."""
import errno
import fcntl
import os
import stat
import struct
import subprocess
import sys
import time

import pytest

import util

# every revalidate mode, with and without the watch, with the cache on
# and off (the watch is on by default in revalidate=open only)
MODES = {
    'default': '',
    'nowatch': 'nowatch',
    'nocache': 'nocache',
    'nocache-nowatch': 'nocache,nowatch',
    'seconds': 'revalidate=30',
    'never': 'revalidate=never',
    'warmwt': 'threshold=1,writemode=writethrough',
}

# a child that goes into a directory made (mkdir) or renamed (rename)
# through the mount and prints getcwd() at once, 0.1 s and 1 s later (the
# delays the watch's notifications take to arrive: at once and 50 ms
# later)
GETCWD = r'''
import os, sys, time
mnt, how = sys.argv[1], sys.argv[2]
if how == "mkdir":
    os.mkdir(os.path.join(mnt, "d"))
    os.chdir(os.path.join(mnt, "d"))
else:
    os.chdir(os.path.join(mnt, "a"))
    os.rename(os.path.join(mnt, "a"), os.path.join(mnt, "b"))
t0 = time.monotonic()
for at in (0, 0.1, 1.0):
    time.sleep(max(0, t0 + at - time.monotonic()))
    try:
        print(os.getcwd())
    except OSError as e:
        print("ERR", e.errno)
'''


def getcwd_after(ws, how, want):
    out = subprocess.run([sys.executable, '-c', GETCWD, ws.mnt, how],
                         capture_output=True, text=True, check=True,
                         timeout=util.TIMEOUT).stdout.split('\n')[:3]
    assert out == [want] * 3, 'getcwd at 0, 0.1 and 1 s: %r' % out


@pytest.mark.parametrize('mode', sorted(MODES))
def test_getcwd_in_a_directory_made_through_the_mount(ws, mode):
    ws.start(opts=MODES[mode])
    getcwd_after(ws, 'mkdir', os.path.join(ws.mnt, 'd'))


@pytest.mark.parametrize('mode', sorted(MODES))
def test_getcwd_in_a_directory_renamed_through_the_mount(ws, mode):
    os.mkdir(os.path.join(ws.src, 'a'))
    ws.start(opts=MODES[mode])
    getcwd_after(ws, 'rename', os.path.join(ws.mnt, 'b'))


@pytest.mark.parametrize('mode', sorted(MODES))
def test_proc_fd_of_a_file_created_through_the_mount(ws, mode):
    ws.start(opts=MODES[mode])
    os.mkdir(os.path.join(ws.mnt, 'sub'))
    path = os.path.join(ws.mnt, 'sub', 'held')
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        t0 = time.monotonic()
        for at in (0, 0.2, 1.0):
            time.sleep(max(0, t0 + at - time.monotonic()))
            assert os.readlink('/proc/self/fd/%d' % fd) == path, at
    finally:
        os.close(fd)


def test_changes_behind_the_mount_still_seen_at_once(ws):
    """What the watch is for, with names expired rather than dropped: a
    name created, removed or replaced behind the mount is seen within a
    moment although the kernel trusts watched names for 60 s."""
    os.mkdir(os.path.join(ws.src, 'd'))
    with open(os.path.join(ws.src, 'd', 'old'), 'w') as f:
        f.write('old')
    ws.start()
    d = os.path.join(ws.mnt, 'd')
    assert not os.path.exists(os.path.join(d, 'new'))
    with open(os.path.join(d, 'old')) as f:
        assert f.read() == 'old'
    sd = os.path.join(ws.src, 'd')
    with open(os.path.join(sd, 'new'), 'w') as f:
        f.write('new')
    with open(os.path.join(sd, 'tmp'), 'w') as f:
        f.write('replaced')
    os.rename(os.path.join(sd, 'tmp'), os.path.join(sd, 'old'))
    util.wait_for(lambda: os.path.exists(os.path.join(d, 'new')),
                  'a name created behind the mount', 3)

    def replaced():
        with open(os.path.join(d, 'old')) as f:
            return f.read() == 'replaced'
    util.wait_for(replaced, 'a file replaced by rename behind the mount', 3)
    os.unlink(os.path.join(sd, 'new'))
    util.wait_for(lambda: not os.path.exists(os.path.join(d, 'new')),
                  'a name removed behind the mount', 3)
    # a directory a process is in, removed behind the mount: a path walk
    # through it finds it gone
    os.mkdir(os.path.join(sd, 'gone'))
    assert os.path.isdir(os.path.join(d, 'gone'))
    os.rmdir(os.path.join(sd, 'gone'))
    util.wait_for(lambda: not os.path.exists(os.path.join(d, 'gone')),
                  'a directory removed behind the mount', 3)
    # a watched directory held open through the mount, removed behind
    # it: its link count too (the kernel raises no event of its own while
    # hotfs holds it; the watch finds it after its parent's)
    os.mkdir(os.path.join(sd, 'held'))
    fd = os.open(os.path.join(d, 'held'), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.listdir(os.path.join(d, 'held'))
        assert os.fstat(fd).st_nlink == 2
        os.rmdir(os.path.join(sd, 'held'))
        util.wait_for(lambda: os.fstat(fd).st_nlink == 0,
                      'the link count of a directory removed behind the '
                      'mount', 3)
    finally:
        os.close(fd)


def watch_counts(mnt):
    s = util.hotfs_stats(mnt)
    return (int(s['watch_events']), int(s['watch_invalidations']),
            int(s['watch_own_events']))


def test_own_changes_of_names_send_nothing(ws):
    """Names made, linked, renamed (in a directory, to another, over a
    name, exchanged) and removed through the mount raise events in the
    watched source directories: each is taken for the mount's own, and
    the kernel, which learnt the change from the reply, is sent nothing
    (an entry notification would wait for the directory's lock the kernel
    holds for such a request in flight).  The same changes made behind
    the mount are still sent, and seen through it at once."""
    for d in ('a', 'b'):
        os.mkdir(os.path.join(ws.src, d))
    ws.start()
    a, b = os.path.join(ws.mnt, 'a'), os.path.join(ws.mnt, 'b')
    assert os.listdir(a) == [] and os.listdir(b) == []
    ev0, inv0, own0 = watch_counts(ws.mnt)
    os.mkdir(os.path.join(a, 'sub'))
    os.mknod(os.path.join(a, 'fifo'), stat.S_IFIFO | 0o600)
    os.symlink('target', os.path.join(a, 'ln'))
    os.mknod(os.path.join(a, 'f'), stat.S_IFREG | 0o600)
    os.mknod(os.path.join(b, 'h'), stat.S_IFREG | 0o600)
    os.close(os.open(os.path.join(b, 'c'),
                     os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.link(os.path.join(a, 'f'), os.path.join(b, 'g'))
    os.rename(os.path.join(a, 'f'), os.path.join(a, 'f2'))
    os.rename(os.path.join(a, 'f2'), os.path.join(b, 'f3'))
    os.rename(os.path.join(b, 'f3'), os.path.join(b, 'h'))
    util.renameat2(os.path.join(a, 'ln'), os.path.join(a, 'fifo'),
                   util.RENAME_EXCHANGE)
    os.unlink(os.path.join(b, 'g'))
    # one event each, two for a rename, four for an exchange
    n = 6 + 1 + 2 * 3 + 4 + 1
    util.wait_for(lambda: watch_counts(ws.mnt)[2] - own0 >= n,
                  'the watch to read the events of the mount\'s changes')
    ev, inv, own = watch_counts(ws.mnt)
    assert (ev - ev0, inv - inv0, own - own0) == (n, 0, n)
    assert sorted(os.listdir(a)) == ['fifo', 'ln', 'sub']
    assert sorted(os.listdir(b)) == ['c', 'h']
    # behind the mount: sent, and seen at once
    os.rename(os.path.join(ws.src, 'a', 'fifo'),
              os.path.join(ws.src, 'b', 'fifo'))
    util.wait_for(lambda: os.path.lexists(os.path.join(b, 'fifo')) and
                  not os.path.lexists(os.path.join(a, 'fifo')),
                  'a name moved behind the mount', 3)
    ev, inv2, own2 = watch_counts(ws.mnt)
    assert inv2 > inv and own2 == own


def test_notifications_hold_the_device_alone(ws):
    """The thread that sends the watch's notifications, which may wait in
    the kernel for a lock a request in flight holds, has a descriptor
    table of its own with the session's /dev/fuse (a clone) and stderr
    alone: a kill -9 that finds it waiting releases the daemon's own
    descriptors, and so ends the requests the daemon had read
    (hotfs/notify.h)."""
    proc = ws.start()
    pid = proc.pid
    tids = []
    for tid in os.listdir('/proc/%d/task' % pid):
        with open('/proc/%d/task/%s/comm' % (pid, tid)) as f:
            if f.read().strip() == 'hotfs-notify':
                tids.append(tid)
    assert len(tids) == 1, tids
    d = '/proc/%d/task/%s/fd/' % (pid, tids[0])
    fds = {int(fd): os.readlink(d + fd) for fd in os.listdir(d)}
    assert sorted(fds) == [2, min(k for k in fds if k > 2)], fds
    assert [v for k, v in fds.items() if k != 2] == ['/dev/fuse'], fds
    assert len(os.listdir('/proc/%d/fd' % pid)) > len(fds)


STRESS = r'''
import os, sys
root, me, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(rounds):
    d = os.path.join(root, "%s-%d" % (me, i))
    os.mkdir(d)
    for j in range(4):
        with open(os.path.join(d, "f%d" % j), "w") as f:
            f.write("x")
    os.rename(os.path.join(d, "f0"), os.path.join(d, "g0"))
    os.mkdir(os.path.join(d, "sub"))
    os.rename(os.path.join(d, "sub"), os.path.join(d, "sub2"))
    for n in os.listdir(d):
        p = os.path.join(d, n)
        if os.path.isdir(p):
            os.rmdir(p)
        else:
            os.unlink(p)
    os.rmdir(d)
    # files in the freed directories' place, under the same names
    with open(d, "w") as f:
        f.write("now a file")
    os.unlink(d)
'''


@pytest.mark.slow
@pytest.mark.parametrize('mode', ['default', 'nocache'])
def test_no_notification_for_a_node_the_kernel_lost(ws, mode):
    """Directories made and removed through the mount by several
    processes: the watch's notifications (sent at once and again 50 ms
    later) must never name a node id that was freed and given to another
    inode, which the kernel reports as "writing device: Not a directory"
    (a file where a directory was named) in the daemon's log."""
    proc = ws.start(opts=MODES[mode])
    procs = [subprocess.Popen([sys.executable, '-c', STRESS, ws.mnt,
                               'p%d' % k, '150'])
             for k in range(4)]
    for p in procs:
        assert p.wait(timeout=util.TIMEOUT * 4) == 0
    st = util.hotfs_stats(ws.mnt)
    assert int(st['watch_events']) > 1000, st['watch_events']
    # every deferred notification is due 50 ms after its event: wait for
    # the watch to be quiet, then for the last of them
    last = [None]

    def quiet():
        n = util.hotfs_stats(ws.mnt)['watch_invalidations']
        same = n == last[0]
        last[0] = n
        return same
    util.wait_for(quiet, 'the watch to send its last notifications', 10,
                  interval=0.2)
    ws.stop(proc)
    log = ws.log_text(proc)
    assert 'writing device' not in log, log[-2000:]


@pytest.mark.drops_caches
def test_snapshot_remount_watches_every_directory(ws):
    """After a remount that loads the metadata snapshot, the directories
    the kernel reaches are watched as on a fresh mount: a file replaced
    by rename behind the mount is seen at once, not after the timeout."""
    for d in ('a', 'a/b', 'c'):
        os.mkdir(os.path.join(ws.src, d))
        with open(os.path.join(ws.src, d, 'f'), 'w') as f:
            f.write('old ' + d)

    def walk():
        for dirpath, dirs, files in os.walk(ws.mnt):
            for n in files:
                os.stat(os.path.join(dirpath, n))
    proc = ws.start(opts='cachesize=32M')
    walk()
    walk()
    fresh = int(util.hotfs_stats(ws.mnt)['watched_dirs'])
    ws.stop(proc)
    assert os.path.isfile(os.path.join(ws.cache, 'meta'))
    util.drop_caches()
    ws.start(opts='cachesize=32M')
    walk()
    st = util.hotfs_stats(ws.mnt)
    assert int(st['meta_snapshot_hits']) > 0
    assert int(st['watched_dirs']) == fresh == 4, (st['watched_dirs'], fresh)
    p = os.path.join(ws.mnt, 'a', 'b', 'f')
    with open(p) as f:
        assert f.read() == 'old a/b'
    with open(os.path.join(ws.src, 'a', 'b', 'tmp'), 'w') as f:
        f.write('new a/b')
    os.rename(os.path.join(ws.src, 'a', 'b', 'tmp'),
              os.path.join(ws.src, 'a', 'b', 'f'))

    def seen():
        with open(p) as f:
            return f.read() == 'new a/b'
    # well within the 1 s short timeout: only the watch can do it
    util.wait_for(seen, 'a rename behind the mount, after a remount', 0.5)


FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_APPEND_FL = 0x20


def getflags(fd):
    return struct.unpack('i', fcntl.ioctl(fd, FS_IOC_GETFLAGS,
                                          b'\0' * 4))[0]


def test_chattr_lsattr_reach_the_source(ws):
    """FS_IOC_GETFLAGS/SETFLAGS (and lsattr/chattr, which use them) act
    on the source: chattr +a through the mount makes a write fail with
    EPERM, and -a undoes it."""
    src = os.path.join(ws.src, 'f')
    with open(src, 'w') as f:
        f.write('data')
    try:
        with open(src) as f:
            getflags(f.fileno())
    except OSError as e:
        pytest.skip('the source does not support file flags: %s' % e)
    ws.start()
    p = os.path.join(ws.mnt, 'f')
    with open(p) as f:
        with open(src) as g:
            assert getflags(f.fileno()) == getflags(g.fileno())
    r = subprocess.run(['lsattr', p], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    try:
        subprocess.run(['chattr', '+a', p], check=True)
        with open(src) as g:
            assert getflags(g.fileno()) & FS_APPEND_FL
        assert 'a' in subprocess.run(['lsattr', p], capture_output=True,
                                     text=True, check=True).stdout.split()[0]
        assert util.call(lambda: open(p, 'w')) == util.Err(errno.EPERM)
        with open(p, 'a') as f:
            f.write('+')
    finally:
        subprocess.run(['chattr', '-a', p])
        with open(src) as g:
            fl = getflags(g.fileno())
        if fl & FS_APPEND_FL:       # leave nothing the teardown can't rm
            with open(src) as g:
                fcntl.ioctl(g.fileno(), FS_IOC_SETFLAGS,
                            struct.pack('i', fl & ~FS_APPEND_FL))
    with open(src) as g:
        assert not getflags(g.fileno()) & FS_APPEND_FL
    with open(p, 'w') as f:
        f.write('new')
    with open(src) as f:
        assert f.read() == 'new'
    # a directory's flags too
    os.mkdir(os.path.join(ws.src, 'd'))
    r = subprocess.run(['lsattr', '-d', os.path.join(ws.mnt, 'd')],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_unsupported_ioctl_is_enotty(ws):
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('data')
    ws.start()
    with open(os.path.join(ws.mnt, 'f')) as f:
        # FIGETBSZ is answered by the kernel; FS_IOC_GETVERSION is not
        # one the daemon passes on
        assert util.call(fcntl.ioctl, f.fileno(), 0x80087601, b'\0' * 8) \
            == util.Err(errno.ENOTTY)


def test_chown_without_ids_moves_ctime_as_the_source(ws):
    """chown(path, -1, -1) changes ctime on ext4: through the mount it
    reaches the source, which does what it does."""
    src = os.path.join(ws.src, 'f')
    with open(src, 'w') as f:
        f.write('x')
    ws.start(opts='attr_timeout=0')
    p = os.path.join(ws.mnt, 'f')
    before = os.stat(src).st_ctime_ns
    util.wait_for(lambda: time.time_ns() > before + 20000000,
                  'a clock tick past the ctime', 1)
    os.chown(p, -1, -1)
    after = os.stat(src).st_ctime_ns
    assert after > before
    assert os.stat(p).st_ctime_ns == after
