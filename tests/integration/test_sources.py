# SPDX-License-Identifier: GPL-2.0-or-later
"""Sources that are not one plain ext4 directory: a tree with other
filesystems mounted inside it (inode numbers repeat across them), a full
filesystem (ENOSPC must come through as ENOSPC), and a read-only one
(EROFS).  Each is compared with the same operations done natively.
"""
import errno
import os
import subprocess

import pytest

import util
from util import Err


def tmpfs(ws, path, size='4m', opts=''):
    os.makedirs(path, exist_ok=True)
    subprocess.run(['mount', '-t', 'tmpfs', '-o',
                    'size=%s,mode=0755%s' % (size, opts), 'hotfs-itest',
                    path], check=True)
    ws.mounts.append(path)      # unmounted in teardown, after hotfs


def test_submounts_with_equal_inode_numbers(ws):
    # two tmpfs filled the same way hand out the same inode numbers
    for t in ('t1', 't2'):
        tmpfs(ws, os.path.join(ws.src, t))
        for i in range(5):
            with open(os.path.join(ws.src, t, 'f%d' % i), 'w') as f:
                f.write('%s file %d' % (t, i))
        os.mkdir(os.path.join(ws.src, t, 'd'))
    a = os.stat(os.path.join(ws.src, 't1', 'f3'))
    b = os.stat(os.path.join(ws.src, 't2', 'f3'))
    assert a.st_ino == b.st_ino and a.st_dev != b.st_dev
    proc = ws.start()
    for rnd in range(2):
        for t in ('t1', 't2'):
            for i in range(5):
                p = os.path.join(ws.mnt, t, 'f%d' % i)
                with open(p) as f:
                    assert f.read() == '%s file %d' % (t, i), p
                util.assert_same_stat(p, os.path.join(ws.src, t, 'f%d' % i))
    # writes and new names land in the right filesystem
    with open(os.path.join(ws.mnt, 't2', 'f3'), 'a') as f:
        f.write('+')
    with open(os.path.join(ws.src, 't1', 'f3')) as f:
        assert f.read() == 't1 file 3'
    with open(os.path.join(ws.src, 't2', 'f3')) as f:
        assert f.read() == 't2 file 3+'
    os.mkdir(os.path.join(ws.mnt, 't2', 'd', 'sub'))
    assert os.listdir(os.path.join(ws.src, 't1', 'd')) == []
    assert os.listdir(os.path.join(ws.src, 't2', 'd')) == ['sub']
    # a rename across the filesystems is refused as natively
    assert util.call(os.rename, os.path.join(ws.mnt, 't1', 'f1'),
                     os.path.join(ws.mnt, 't2', 'x')) == Err(errno.EXDEV)
    assert util.call(os.link, os.path.join(ws.mnt, 't1', 'f1'),
                     os.path.join(ws.mnt, 't2', 'x')) == Err(errno.EXDEV)
    # statfs below a submount describes that filesystem
    assert os.statvfs(os.path.join(ws.mnt, 't1')).f_blocks == \
        os.statvfs(os.path.join(ws.src, 't1')).f_blocks
    ws.stop(proc)


def fill(r):
    """Write until the filesystem is full; then what was acknowledged must
    be there, and space freed must be usable again."""
    out = []
    data = b'z' * 65536
    fd = os.open(r + '/filler', os.O_WRONLY | os.O_CREAT, 0o644)
    acked = 0
    try:
        while True:
            try:
                n = os.write(fd, data)
            except OSError as e:
                out.append(Err(e.errno))
                break
            acked += n
            if acked > (64 << 20):
                out.append('never full')
                break
        out.append(util.call(os.fsync, fd))
    finally:
        os.close(fd)
    with open(r + '/filler', 'rb') as f:
        got = f.read()
    out.append(len(got) >= acked and got[:acked] == data[:1] * acked)
    out.append(util.call(os.mkdir, r + '/newdir'))
    os.unlink(r + '/filler')
    # FUSE sends RELEASE asynchronously: the daemon may close the source
    # file a moment after our close(), and only then is its space free
    util.wait_for(lambda: os.statvfs(r).f_bfree * 2 >
                  os.statvfs(r).f_blocks,
                  'the space of the removed file to be freed')
    with open(r + '/after', 'wb') as f:
        f.write(b'room again')
    out.append(open(r + '/after', 'rb').read())
    return out


def test_enospc(ws):
    tmpfs(ws, ws.src, size='2m')
    tmpfs(ws, ws.native, size='2m')
    proc = ws.start()
    a = util.call(fill, ws.mnt)
    b = util.call(fill, ws.native)
    assert a == b
    assert a[0] == Err(errno.ENOSPC)
    ws.stop(proc)


def test_enospc_inodes(ws):
    tmpfs(ws, ws.src, size='2m', opts=',nr_inodes=50')
    tmpfs(ws, ws.native, size='2m', opts=',nr_inodes=50')
    proc = ws.start()

    def many(r):
        for i in range(100):
            try:
                open('%s/f%d' % (r, i), 'w').close()
            except OSError as e:
                return i, Err(e.errno), util.call(os.mkdir, r + '/d')
        return 'never full'
    a, b = util.call(many, ws.mnt), util.call(many, ws.native)
    assert a == b and a[1] == Err(errno.ENOSPC)
    ws.stop(proc)


def test_read_only_source(ws):
    for root in (ws.src, ws.native):
        with open(os.path.join(root, 'f'), 'w') as f:
            f.write('frozen')
        os.mkdir(os.path.join(root, 'd'))
        subprocess.run(['mount', '--bind', root, root], check=True)
        ws.mounts.append(root)
        subprocess.run(['mount', '-o', 'remount,bind,ro', root], check=True)
    proc = ws.start()
    for desc, fn in [
            ('read', lambda r: open(r + '/f').read()),
            ('write', lambda r: open(r + '/f', 'w')),
            ('create', lambda r: os.open(r + '/new', os.O_CREAT |
                                         os.O_WRONLY)),
            ('mkdir', lambda r: os.mkdir(r + '/d2')),
            ('unlink', lambda r: os.unlink(r + '/f')),
            ('rmdir', lambda r: os.rmdir(r + '/d')),
            ('rename', lambda r: os.rename(r + '/f', r + '/g')),
            ('chmod', lambda r: os.chmod(r + '/f', 0o600)),
            ('utime', lambda r: os.utime(r + '/f')),
            ('truncate', lambda r: os.truncate(r + '/f', 0)),
            ('setxattr', lambda r: os.setxattr(r + '/f', 'user.a', b'1')),
            ('symlink', lambda r: os.symlink('f', r + '/l')),
            ('access W', lambda r: os.access(r + '/f', os.W_OK))]:
        util.compare_calls(desc, fn, ws.mnt, ws.native)
    ws.stop(proc)


def test_many_files_with_a_low_fd_limit(ws):
    """Started with a soft limit of 1024 open files (what a shell or a
    systemd unit gives), hotfs still serves thousands of looked-up files
    and a thousand and more open at once."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 8192:
        pytest.fail('the hard RLIMIT_NOFILE (%d) is too low for this test'
                    % hard)
    n = 4000
    d = os.path.join(ws.src, 'many')
    os.mkdir(d)
    for i in range(n):
        with open(os.path.join(d, 'f%05d' % i), 'w') as f:
            f.write(str(i))
    proc = ws.start(nofile=1024)
    m = os.path.join(ws.mnt, 'many')
    for i in range(n):
        assert os.stat(os.path.join(m, 'f%05d' % i)).st_size == len(str(i))
    fds = []
    try:
        for i in range(1500):
            fds.append(os.open(os.path.join(m, 'f%05d' % i), os.O_RDONLY))
        for i, fd in enumerate(fds):
            assert os.pread(fd, 10, 0) == str(i).encode()
    finally:
        for fd in fds:
            os.close(fd)
    ws.stop(proc)
