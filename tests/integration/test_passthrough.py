# SPDX-License-Identifier: GPL-2.0-or-later
"""Passthrough parity: every operation through the mount is compared with
the same operation on a native directory that started with the same
content (mergerfs's compare_calls), and every stat through the mount with
the source file's own stat (inode number, links, size, mode, owner and
times to the nanosecond).  Each test runs in every mode of conftest.MODES.

What the kernel's FUSE module itself does not forward (some fallocate
modes) is checked as "the same as natively, or EOPNOTSUPP with the file
untouched", never skipped.
"""
import ctypes
import errno
import fcntl
import mmap
import os
import random
import stat
import time

import pytest

import util
from util import Err

# --------------------------------------------------------------------------
# lookup and stat


def test_stat_matches_source(fs):
    names = ['.', 'file', 'empty', 'ro', 'exec', 'dir', 'dir/a', 'dir/b',
             'dir/sub', 'emptydir', 'link', 'dirlink', 'dangling', 'fifo',
             'sparse']
    for n in names:
        util.assert_same_stat(fs.m(n), fs.s(n))
        # twice: the second answer may come from the kernel's cache
        util.assert_same_stat(fs.m(n), fs.s(n))
    for n in ['link', 'dirlink']:
        util.assert_same_stat(fs.m(n), fs.s(n), follow=True)
    # st_ino is the source's inode number, not a FUSE node id
    assert os.stat(fs.m('file')).st_ino == os.stat(fs.s('file')).st_ino
    assert os.stat(fs.m('sparse')).st_blocks < 1024 * 1024 // 512
    # the mount is its own filesystem
    assert os.stat(fs.m('file')).st_dev != os.stat(fs.s('file')).st_dev


def test_lookup_errors(fs):
    p = fs.parity
    p('missing', lambda r: os.stat(r + '/missing'))
    p('missing in dir', lambda r: os.stat(r + '/dir/missing'))
    p('below a file', lambda r: os.stat(r + '/file/x'))
    p('trailing slash on file', lambda r: os.stat(r + '/file/'))
    p('trailing slash on link to file', lambda r: os.stat(r + '/link/'))
    p('dangling followed', lambda r: os.stat(r + '/dangling'))
    p('dangling lstat', lambda r: util.lstat_summary(r + '/dangling'))
    p('255 missing', lambda r: os.stat(r + '/' + 'n' * 255))
    p('256', lambda r: os.stat(r + '/' + 'n' * 256))
    p('256 in dir', lambda r: os.lstat(r + '/dir/' + 'n' * 256))
    p('dotdot', lambda r: util.lstat_summary(r + '/dir/sub/../a'))
    # negative lookups must not stick once the name exists
    for i in range(2):
        assert util.call(os.stat, fs.m('later')) == Err(errno.ENOENT)
    with open(fs.m('later'), 'w') as f:
        f.write('x')
    assert os.stat(fs.m('later')).st_size == 1


# --------------------------------------------------------------------------
# attributes: chmod, chown, truncate, utimens


def test_chmod(fs):
    p = fs.parity

    def chmod(name, mode, **kw):
        def fn(r):
            os.chmod(r + '/' + name, mode, **kw)
            return util.lstat_summary(r + '/' + name)
        return fn
    for mode in (0o600, 0o4755, 0o2755, 0o7777, 0, 0o644):
        p('chmod file %o' % mode, chmod('file', mode))
    p('chmod dir 1777', chmod('dir', 0o1777))
    p('chmod dir 700', chmod('dir', 0o700))
    p('chmod through symlink', chmod('link', 0o640))
    p('chmod fifo', chmod('fifo', 0o600))
    p('chmod missing', chmod('missing', 0o600))

    def fchmod(r):
        fd = os.open(r + '/exec', os.O_RDONLY)
        try:
            os.fchmod(fd, 0o711)
            return util.stat_summary(os.fstat(fd))
        finally:
            os.close(fd)
    p('fchmod', fchmod)
    fs.check_trees()


def test_chown(fs):
    p = fs.parity

    def chown(name, uid, gid, follow=True):
        def fn(r):
            os.chown(r + '/' + name, uid, gid, follow_symlinks=follow)
            return util.lstat_summary(r + '/' + name)
        return fn
    p('chown file', chown('file', 1234, 5678))
    p('chown uid only', chown('file', 4321, -1))
    p('chown gid only', chown('file', -1, 99))
    p('chown dir', chown('dir', 1000, 1000))
    p('lchown symlink', chown('link', 777, 888, follow=False))
    p('chown through symlink', chown('dirlink', 555, 666))
    p('lchown dangling', chown('dangling', 12, 13, follow=False))
    p('chown missing', chown('missing', 1, 1))

    def chown_suid(r):
        os.chmod(r + '/exec', 0o6755)
        os.chown(r + '/exec', 2000, 2000)
        return util.lstat_summary(r + '/exec')
    p('chown of a setuid file', chown_suid)

    def fchown(r):
        fd = os.open(r + '/empty', os.O_RDONLY)
        try:
            os.fchown(fd, 3, 4)
            return util.stat_summary(os.fstat(fd))
        finally:
            os.close(fd)
    p('fchown', fchown)
    fs.check_trees()


def test_truncate(fs):
    p = fs.parity

    def trunc(name, size):
        def fn(r):
            os.truncate(r + '/' + name, size)
            with open(r + '/' + name, 'rb') as f:
                return util.lstat_summary(r + '/' + name), f.read()
        return fn
    for size in (100, 0, 1 << 20, 5, 12001, 4096):
        p('truncate to %d' % size, trunc('file', size))
    p('truncate through symlink', trunc('link', 3))
    p('truncate read-only file as root', trunc('ro', 1))
    p('truncate dir', trunc('dir', 0))
    p('truncate negative', trunc('empty', -1))
    p('truncate missing', trunc('missing', 0))
    p('truncate sparse', trunc('sparse', 4096 + 10))

    def ftrunc(flags, size):
        def fn(r):
            fd = os.open(r + '/dir/b', flags)
            try:
                os.ftruncate(fd, size)
                return os.fstat(fd).st_size, os.pread(fd, 10000, 0) \
                    if flags != os.O_WRONLY else None
            finally:
                os.close(fd)
        return fn
    p('ftruncate rw', ftrunc(os.O_RDWR, 4000))
    p('ftruncate wronly grow', ftrunc(os.O_WRONLY, 6000))
    p('ftruncate rdonly', ftrunc(os.O_RDONLY, 10))
    fs.check_trees()


def _within_now(t_ns, before, after):
    # the kernel stamps with a coarse clock: allow a tick either side
    slack = 20 * 1000 * 1000
    return before - slack <= t_ns <= after + slack


def test_utimens(fs):
    p = fs.parity
    T1 = (1234567890, 123456789)
    T2 = (987654321, 999999999)

    def ns(t):
        return t[0] * 10**9 + t[1]

    def utime(name, a, m, follow=True):
        def fn(r):
            util.utimensat(r + '/' + name, a, m, follow=follow)
            st = os.lstat(r + '/' + name) if not follow \
                else os.stat(r + '/' + name)
            return st.st_atime_ns, st.st_mtime_ns
        return fn
    assert p('explicit', utime('file', T1, T2)) == (ns(T1), ns(T2))
    assert p('omit atime', utime('file', util.UTIME_OMIT, T1)) == \
        (ns(T1), ns(T1))
    assert p('omit mtime', utime('file', T2, util.UTIME_OMIT)) == \
        (ns(T2), ns(T1))
    p('omit both', utime('file', util.UTIME_OMIT, util.UTIME_OMIT))
    p('dir', utime('dir', T1, T2))
    p('symlink nofollow', utime('link', T2, T1, follow=False))
    p('through symlink', utime('dirlink', T2, T2))
    p('fifo', utime('fifo', T1, T1))
    p('missing', utime('missing', T1, T1))
    p('negative nsec', utime('file', (1, -1), T1))
    p('nsec too big', utime('file', (1, 10**9), T1))
    p('os.utime ns', lambda r: (os.utime(r + '/empty', ns=(5, 7)),
                                os.stat(r + '/empty').st_mtime_ns))

    # UTIME_NOW, and os.utime(path) (times = now)
    for name, a, m in [('file', util.UTIME_NOW, util.UTIME_OMIT),
                       ('empty', util.UTIME_OMIT, util.UTIME_NOW),
                       ('exec', util.UTIME_NOW, util.UTIME_NOW)]:
        old = os.stat(fs.m(name))
        before = time.time_ns()
        util.utimensat(fs.m(name), a, m)
        after = time.time_ns()
        st = os.stat(fs.m(name))
        if a == util.UTIME_NOW:
            assert _within_now(st.st_atime_ns, before, after)
        else:
            assert st.st_atime_ns == old.st_atime_ns
        if m == util.UTIME_NOW:
            assert _within_now(st.st_mtime_ns, before, after)
        else:
            assert st.st_mtime_ns == old.st_mtime_ns
        assert _within_now(st.st_ctime_ns, before, after)
        util.assert_same_stat(fs.m(name), fs.s(name))
    before = time.time_ns()
    os.utime(fs.m('dir/a'))
    after = time.time_ns()
    st = os.stat(fs.m('dir/a'))
    assert _within_now(st.st_mtime_ns, before, after)
    assert _within_now(st.st_atime_ns, before, after)
    util.assert_same_stat(fs.m('dir/a'), fs.s('dir/a'))

    def futimes(r):
        fd = os.open(r + '/dir/b', os.O_RDONLY)
        try:
            os.utime(fd, ns=(ns(T1), ns(T2)))
            st = os.fstat(fd)
            return st.st_atime_ns, st.st_mtime_ns
        finally:
            os.close(fd)
    p('futimens', futimes)
    fs.check_source_stats()


# --------------------------------------------------------------------------
# namespace: readlink, mknod, mkdir, unlink, rmdir, symlink, rename, link


def test_readlink(fs):
    p = fs.parity
    assert p('link', lambda r: os.readlink(r + '/link')) == 'file'
    p('dangling', lambda r: os.readlink(r + '/dangling'))
    p('not a link', lambda r: os.readlink(r + '/file'))
    p('dir', lambda r: os.readlink(r + '/dir'))
    p('missing', lambda r: os.readlink(r + '/missing'))
    long = 'x/' * 2047 + 'y'     # 4095 bytes, the most a symlink holds
    p('long target', lambda r: (os.symlink(long, r + '/longlink'),
                                os.readlink(r + '/longlink')))
    assert os.readlink(fs.m('longlink')) == long
    p('too long target', lambda r: os.symlink(long + 'zz', r + '/toolong'))
    p('binary target', lambda r: (os.symlink(b'\xff\x01 a', r.encode() +
                                             b'/binlink'),
                                  os.readlink(r.encode() + b'/binlink')))


def test_mknod(fs):
    p = fs.parity

    def node(name, mode, dev=0):
        def fn(r):
            os.mknod(r + '/' + name, mode, dev)
            return util.lstat_summary(r + '/' + name)
        return fn
    os.umask(0o027)
    p('mkfifo', lambda r: (os.mkfifo(r + '/newfifo', 0o666),
                           util.lstat_summary(r + '/newfifo')))
    p('mknod fifo', node('fifo2', stat.S_IFIFO | 0o640))
    p('mknod regular', node('reg', stat.S_IFREG | 0o600))
    p('mknod regular default type', node('reg2', 0o644))
    p('mknod char dev', node('null', stat.S_IFCHR | 0o666, os.makedev(1, 3)))
    p('mknod block dev', node('blk', stat.S_IFBLK | 0o600, os.makedev(7, 0)))
    p('mknod socket', node('sock', stat.S_IFSOCK | 0o755))
    p('mknod existing', node('file', stat.S_IFIFO | 0o600))
    p('mknod in missing dir', node('missing/x', stat.S_IFIFO | 0o600))
    p('mknod long name', node('n' * 256, stat.S_IFIFO | 0o600))
    p('mknod bad type', node('bad', 0o170000 | 0o600))
    os.umask(0o022)
    fs.check_trees()

    # a fifo made through the mount carries data between two processes
    pid = os.fork()
    if pid == 0:
        try:
            with open(fs.m('newfifo'), 'wb') as f:
                f.write(b'through the fifo')
        finally:
            os._exit(0)
    with open(fs.m('newfifo'), 'rb') as f:
        assert f.read() == b'through the fifo'
    assert os.waitpid(pid, 0)[1] == 0


def test_mkdir(fs):
    p = fs.parity

    def mkdir(name, mode=0o777):
        def fn(r):
            os.mkdir(r + '/' + name, mode)
            parent = os.path.dirname(r + '/' + name)
            return (util.lstat_summary(r + '/' + name),
                    os.stat(parent).st_nlink)
        return fn
    os.umask(0o027)
    p('mkdir', mkdir('d1'))
    p('mkdir 700', mkdir('d2', 0o700))
    p('mkdir sticky', mkdir('d3', 0o1777))
    p('mkdir setgid', mkdir('d4', 0o2775))
    p('mkdir nested', mkdir('d1/e'))
    p('mkdir existing dir', mkdir('dir'))
    p('mkdir existing file', mkdir('file'))
    p('mkdir over dangling symlink', mkdir('dangling'))
    p('mkdir missing parent', mkdir('missing/x'))
    p('mkdir below file', mkdir('file/x'))
    p('mkdir long', mkdir('d' * 256))
    p('mkdir 255', mkdir('d' * 255))
    os.umask(0o022)
    p('listdir', lambda r: sorted(os.listdir(r + '/d1')))
    fs.check_trees()


def test_unlink(fs):
    p = fs.parity

    def unlink(name):
        def fn(r):
            os.unlink(r + '/' + name)
            return util.call(os.lstat, r + '/' + name)
        return fn
    p('unlink file', unlink('empty'))
    p('unlink symlink', unlink('link'))
    p('target of unlinked symlink', lambda r: util.lstat_summary(
        r + '/file'))
    p('unlink fifo', unlink('fifo'))
    p('unlink dir', unlink('dir'))
    p('unlink missing', unlink('missing'))
    p('unlink below file', unlink('file/x'))
    p('unlink long', unlink('u' * 256))
    p('unlink trailing slash', unlink('ro/'))

    def unlink_open(r):
        # an open file outlives its name
        fd = os.open(r + '/dir/b', os.O_RDWR)
        try:
            os.unlink(r + '/dir/b')
            os.pwrite(fd, b'still here', 0)
            st = os.fstat(fd)
            return (os.pread(fd, 20, 0), st.st_nlink, st.st_size,
                    sorted(os.listdir(r + '/dir')))
        finally:
            os.close(fd)
    p('unlink an open file', unlink_open)
    fs.check_trees()


def test_rmdir(fs):
    p = fs.parity

    def rmdir(name):
        def fn(r):
            os.rmdir(r + '/' + name)
            return (util.call(os.lstat, r + '/' + name),
                    os.stat(r).st_nlink)
        return fn
    p('rmdir empty', rmdir('emptydir'))
    p('rmdir non-empty', rmdir('dir'))
    p('rmdir file', rmdir('file'))
    p('rmdir symlink to dir', rmdir('dirlink'))
    p('rmdir missing', rmdir('missing'))
    p('rmdir dot', rmdir('dir/sub/.'))
    p('rmdir nested', rmdir('dir/sub'))
    p('rmdir long', rmdir('r' * 256))

    def rmdir_cwd(r):
        # a directory removed while it is a cwd: creating in it fails
        os.mkdir(r + '/gone')
        fd = os.open(r + '/gone', os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.rmdir(r + '/gone')
            return (util.call(os.open, 'x', os.O_CREAT | os.O_WRONLY,
                              dir_fd=fd),
                    os.fstat(fd).st_nlink, os.listdir(fd))
        finally:
            os.close(fd)
    p('rmdir of an open dir', rmdir_cwd)
    fs.check_trees()


def test_symlink(fs):
    p = fs.parity

    def symlink(target, name):
        def fn(r):
            os.symlink(target, r + '/' + name)
            st = os.lstat(r + '/' + name)
            return (stat.S_IFMT(st.st_mode), st.st_size,
                    os.readlink(r + '/' + name))
        return fn
    p('symlink', symlink('file', 'newlink'))
    p('symlink to dir', symlink('dir/sub', 'sublink'))
    p('symlink absolute', symlink('/etc', 'etc'))
    p('symlink dangling', symlink('no/such/thing', 'dl'))
    p('symlink existing', symlink('file', 'exec'))
    p('symlink over symlink', symlink('file', 'link'))
    p('symlink in missing dir', symlink('file', 'missing/x'))
    p('symlink long name', symlink('file', 's' * 256))
    p('symlink empty target', symlink('', 'emptytarget'))
    p('read through new link', lambda r: open(r + '/newlink', 'rb').read())
    p('list through new link', lambda r: sorted(os.listdir(r + '/sublink')))
    fs.check_trees()


def test_rename(fs):
    p = fs.parity

    def rename(a, b, flags=None):
        def fn(r):
            if flags is None:
                os.rename(r + '/' + a, r + '/' + b)
            else:
                util.renameat2(r + '/' + a, r + '/' + b, flags)
            return (util.call(util.lstat_summary, r + '/' + a),
                    util.call(util.lstat_summary, r + '/' + b))
        return fn
    p('rename file', rename('file', 'file2'))
    p('rename over file', rename('dir/a', 'dir/b'))
    p('rename into subdir', rename('ro', 'dir/sub/ro'))
    p('rename dir over non-empty dir', rename('emptydir', 'dir'))
    p('rename file over dir', rename('exec', 'dir'))
    p('rename dir over file', rename('dir', 'exec'))
    p('rename dir into itself', rename('dir', 'dir/sub/x'))
    p('rename missing', rename('missing', 'x'))
    p('rename to missing dir', rename('exec', 'missing/x'))
    p('rename to long', rename('exec', 'l' * 256))
    p('rename symlink', rename('link', 'link2'))
    p('rename fifo', rename('fifo', 'dir/fifo'))
    p('rename to itself', rename('exec', 'exec'))
    p('rename dir', rename('dir/sub', 'sub2'))
    p('rename dir over empty dir', rename('sub2', 'emptydir'))

    def rename_hardlinks(r):
        # two names of one inode: rename does nothing
        os.link(r + '/exec', r + '/exec2')
        os.rename(r + '/exec', r + '/exec2')
        return (util.lstat_summary(r + '/exec'),
                util.lstat_summary(r + '/exec2'))
    p('rename between hard links', rename_hardlinks)

    N, X = util.RENAME_NOREPLACE, util.RENAME_EXCHANGE
    p('noreplace existing', rename('exec', 'file2', N))
    p('noreplace new', rename('exec', 'exec3', N))
    p('noreplace onto dangling symlink', rename('exec3', 'dangling', N))
    p('exchange file and dir', rename('file2', 'dir', X))
    p('exchange file and symlink', rename('dir', 'dirlink', X))
    p('exchange with missing', rename('exec3', 'nothere', X))
    p('exchange and noreplace', rename('exec3', 'exec2', X | N))
    p('unknown flag', rename('exec3', 'exec9', 0x80))
    p('contents after exchange', lambda r: (
        open(r + '/dirlink', 'rb').read(), sorted(os.listdir(r + '/file2'))))

    # the new name's stat is the moved inode, at once
    for i in range(3):
        with open(fs.m('moving%d' % i), 'w') as f:
            f.write('v%d' % i)
        ino = os.stat(fs.s('moving%d' % i)).st_ino
        util.call(os.stat, fs.m('target'))    # cache the old answer
        os.rename(fs.m('moving%d' % i), fs.m('target'))
        assert os.stat(fs.m('target')).st_ino == ino
        with open(fs.m('target')) as f:
            assert f.read() == 'v%d' % i
        assert util.call(os.stat, fs.m('moving%d' % i)) == Err(errno.ENOENT)
    os.unlink(fs.m('target'))
    fs.check_trees()


def test_link(fs):
    p = fs.parity

    def link(a, b, follow=True):
        def fn(r):
            os.link(r + '/' + a, r + '/' + b, follow_symlinks=follow)
            return (util.lstat_summary(r + '/' + a),
                    util.lstat_summary(r + '/' + b))
        return fn
    p('link', link('file', 'hard'))
    p('link again', link('hard', 'hard2'))
    p('link to existing', link('file', 'exec'))
    p('link dir', link('dir', 'dir2'))
    p('link missing', link('missing', 'x'))
    p('link symlink nofollow', link('link', 'link2', follow=False))
    p('link symlink follow', link('link', 'link3', follow=True))
    p('link fifo', link('fifo', 'fifo2'))
    p('link into missing dir', link('file', 'missing/x'))
    p('link long', link('file', 'h' * 256))
    p('nlinks', lambda r: [os.lstat(r + '/' + n).st_nlink for n in
                           ('file', 'hard', 'hard2', 'link', 'link2')])
    p('unlink one name', lambda r: (os.unlink(r + '/hard'),
                                    os.stat(r + '/file').st_nlink,
                                    os.stat(r + '/hard2').st_nlink))
    # the hard links are one inode through the mount
    assert os.stat(fs.m('file')).st_ino == os.stat(fs.m('hard2')).st_ino
    with open(fs.m('hard2'), 'ab') as f:
        f.write(b'appended')
    with open(fs.m('file'), 'rb') as f:
        assert f.read().endswith(b'appended')
    assert os.stat(fs.m('file')).st_size == os.stat(fs.s('hard2')).st_size
    with open(fs.n('hard2'), 'ab') as f:
        f.write(b'appended')
    fs.check_trees()


# --------------------------------------------------------------------------
# open, read, write


def test_open_flags(fs):
    p = fs.parity
    os.umask(0o027)

    def op(name, flags, mode=0o666, write=None, read=True):
        def fn(r):
            fd = os.open(r + '/' + name, flags, mode)
            try:
                if write is not None:
                    os.write(fd, write)
                st = os.fstat(fd)
                data = None
                if read and flags & os.O_ACCMODE != os.O_WRONLY and \
                        stat.S_ISREG(st.st_mode):
                    data = os.pread(fd, 1 << 16, 0)
                return util.stat_summary(st), data
            finally:
                os.close(fd)
        return fn
    C, X, T, A = os.O_CREAT, os.O_EXCL, os.O_TRUNC, os.O_APPEND
    W, RW, R = os.O_WRONLY, os.O_RDWR, os.O_RDONLY
    p('create excl', op('new', C | X | RW, 0o644, b'new'))
    p('create excl existing', op('new', C | X | RW))
    p('create excl over dangling symlink', op('dangling', C | X | W))
    p('create excl over symlink', op('link', C | X | W))
    p('create through dangling symlink', op('dangling', C | W, 0o600, b'x'))
    p('create existing', op('file', C | RW))
    p('create mode 0', op('mode0', C | W, 0))
    p('create mode 7777', op('mode7777', C | W, 0o7777))
    p('open mode-0 file as root', op('mode0', RW))
    p('trunc', op('file', W | T, write=b'short'))
    p('trunc rdonly', op('exec', R | T))
    p('append', op('file', W | A, write=b'-appended'))
    p('append rw', op('file', RW | A, write=b'+more'))

    def pwrite_append(r):
        # on Linux, pwrite on an O_APPEND fd appends anyway
        fd = os.open(r + '/file', os.O_WRONLY | os.O_APPEND)
        try:
            os.pwrite(fd, b'#', 0)
            return os.fstat(fd).st_size
        finally:
            os.close(fd)
    p('pwrite with append', pwrite_append)
    p('read after append', lambda r: open(r + '/file', 'rb').read())
    p('write dir', op('dir', W))
    p('read dir as file', op('dir', R))
    p('directory flag on file', op('file', R | os.O_DIRECTORY))
    p('directory flag on dir', op('dir', R | os.O_DIRECTORY))
    p('nofollow on symlink', op('link', R | os.O_NOFOLLOW))
    p('nofollow create on symlink', op('link', C | W | os.O_NOFOLLOW))
    p('nofollow on file', op('file', R | os.O_NOFOLLOW))
    p('create in missing dir', op('missing/x', C | W))
    p('create below file', op('file/x', C | W))
    p('create long', op('c' * 256, C | W))
    p('create 255', op('c' * 255, C | W, write=b'x'))
    p('missing', op('missing', R))
    p('read-only file rw as root', op('ro', RW))
    p('path', op('file', os.O_PATH, read=False))
    p('noatime', op('file', R | os.O_NOATIME))
    p('sync', op('exec', W | os.O_SYNC, write=b'#!'))
    p('dsync', op('exec', W | os.O_DSYNC, write=b'#!'))
    p('fifo nonblock', op('fifo', R | os.O_NONBLOCK, read=False))
    p('fifo nonblock wronly', op('fifo', W | os.O_NONBLOCK))
    def wrong_mode(flags, fn):
        def f(r):
            fd = os.open(r + '/empty', flags)
            try:
                return fn(fd)
            finally:
                os.close(fd)
        return f
    p('write on rdonly fd', wrong_mode(R, lambda fd: os.write(fd, b'x')))
    p('read on wronly fd', wrong_mode(W, lambda fd: os.read(fd, 1)))
    os.umask(0o022)
    fs.check_trees()


def _pattern(seed, n):
    return random.Random(seed).randbytes(n)


def test_read_write(fs):
    p = fs.parity

    def rw(name, ops):
        def fn(r):
            fd = os.open(r + '/' + name, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                out = []
                for kind, off, arg in ops:
                    if kind == 'w':
                        out.append(os.pwrite(fd, arg, off))
                    elif kind == 'r':
                        out.append(os.pread(fd, arg, off))
                    else:
                        os.ftruncate(fd, arg)
                out.append(os.fstat(fd).st_size)
                return out
            finally:
                os.close(fd)
        return fn
    sizes = [1, 4095, 4096, 4097, 65536 + 3, 128 * 1024 + 1, 1 << 20,
             (1 << 20) + 4096 * 3 + 5]
    ops = []
    off = 0
    for i, n in enumerate(sizes):
        ops.append(('w', off, _pattern(i, n)))
        off += n + 1000
    ops += [('r', 0, 1 << 22), ('r', 4000, 200), ('r', off + 100, 10),
            ('r', 1 << 30, 10)]
    ops += [('w', (1 << 24) + 7, b'beyond eof'), ('r', (1 << 24), 100)]
    p('sequence of writes and reads', rw('big', ops))

    # a seeded mix of small ops, compared at each step
    rng = random.Random(42)
    ops = []
    size = 0
    for i in range(300):
        k = rng.choice('wwwrrt')
        if k == 'w':
            off = rng.randrange(0, size + 70000)
            n = rng.randrange(1, 70000)
            ops.append(('w', off, rng.randbytes(n)))
            size = max(size, off + n)
        elif k == 'r':
            ops.append(('r', rng.randrange(0, size + 100),
                        rng.randrange(1, 200000)))
        else:
            size = rng.randrange(0, size + 10000)
            ops.append(('t', 0, size))
    p('random mix', rw('mix', ops))
    with open(fs.m('mix'), 'rb') as a, open(fs.s('mix'), 'rb') as b:
        assert a.read() == b.read()
    fs.check_trees()

    # stdio-sized sequential writes and reads through the mount
    data = _pattern(7, 3 * 1024 * 1024 + 17)
    with open(fs.m('seq'), 'wb') as f:
        for i in range(0, len(data), 8192):
            f.write(data[i:i + 8192])
    assert os.stat(fs.m('seq')).st_size == len(data)
    with open(fs.s('seq'), 'rb') as f:
        assert f.read() == data
    with open(fs.m('seq'), 'rb') as f:
        assert f.read() == data
    with open(fs.m('seq'), 'rb') as f:
        f.seek(len(data) - 100)
        assert f.read() == data[-100:]


def test_fsync(fs):
    p = fs.parity

    def sync(path, flags, fn):
        def f(r):
            fd = os.open(r + '/' + path, flags)
            try:
                if flags & os.O_ACCMODE != os.O_RDONLY:
                    os.write(fd, b'synced')
                return fn(fd)
            finally:
                os.close(fd)
        return f
    p('fsync', sync('file', os.O_WRONLY, os.fsync))
    p('fdatasync', sync('file', os.O_RDWR, os.fdatasync))
    p('fsync rdonly', sync('exec', os.O_RDONLY, os.fsync))
    p('fsync dir', sync('dir', os.O_RDONLY | os.O_DIRECTORY, os.fsync))
    p('fdatasync dir', sync('dir', os.O_RDONLY | os.O_DIRECTORY,
                            os.fdatasync))
    p('syncfs', sync('file', os.O_RDONLY,
                     lambda fd: ctypes.CDLL(None).syncfs(fd)))
    fs.check_trees()


# --------------------------------------------------------------------------
# directories


class _dirent(ctypes.Structure):
    _fields_ = [('d_ino', ctypes.c_uint64), ('d_off', ctypes.c_int64),
                ('d_reclen', ctypes.c_ushort), ('d_type', ctypes.c_ubyte),
                ('d_name', ctypes.c_char * 256)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.opendir.restype = ctypes.c_void_p
_libc.opendir.argtypes = [ctypes.c_char_p]
_libc.readdir64.restype = ctypes.POINTER(_dirent)
_libc.readdir64.argtypes = [ctypes.c_void_p]
_libc.closedir.argtypes = [ctypes.c_void_p]


def readdir_raw(path):
    """[(name, d_type, d_ino)] straight from readdir(3)."""
    d = _libc.opendir(os.fsencode(path))
    if not d:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)
    out = []
    try:
        while True:
            ctypes.set_errno(0)
            ent = _libc.readdir64(d)
            if not ent:
                if ctypes.get_errno():
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e), path)
                break
            e = ent.contents
            out.append((e.d_name.decode(errors='surrogateescape'),
                        e.d_type, e.d_ino))
    finally:
        _libc.closedir(d)
    return out


def test_readdir(fs):
    p = fs.parity

    def listing(name):
        def fn(r):
            return sorted((n, t) for n, t, _ in readdir_raw(r + '/' + name))
        return fn
    got = p('root', listing(''))
    assert ('fifo', 1) in got and ('dir', 4) in got and ('file', 8) in got \
        and ('link', 10) in got and ('.', 4) in got and ('..', 4) in got
    p('dir', listing('dir'))
    p('empty dir', listing('emptydir'))
    p('file', listing('file'))
    p('missing', listing('missing'))
    p('through symlink', listing('dirlink'))

    # d_ino is the source inode number and agrees with lstat
    for name, _, ino in readdir_raw(fs.m('')):
        if name not in ('.', '..'):
            assert ino == os.lstat(fs.s(name)).st_ino, name
            assert ino == os.lstat(fs.m(name)).st_ino, name

    # a directory larger than one readdir buffer, with long names
    def many(r):
        os.mkdir(r + '/many')
        for i in range(1500):
            name = '%04d-' % i + 'x' * (i % 200)
            if i % 3 == 0:
                os.mkdir(r + '/many/' + name)
            elif i % 3 == 1:
                os.symlink('t', r + '/many/' + name)
            else:
                open(r + '/many/' + name, 'w').close()
        return listing('many')(r)
    p('1500 entries', many)
    p('scandir types', lambda r: sorted(
        (e.name, e.is_dir(follow_symlinks=False),
         e.is_symlink(), e.is_file(follow_symlinks=False))
        for e in os.scandir(r + '/many')))
    p('listing changes at once', lambda r: (
        [os.unlink(r + '/many/%04d-' % i + 'x' * (i % 200))
         for i in range(2, 1500, 3)],
        os.rename(r + '/many/0000-', r + '/many/renamed'),
        listing('many')(r)))

    def rewind(r):
        # rewinddir sees entries created after opendir
        fd = os.open(r + '/dir', os.O_RDONLY | os.O_DIRECTORY)
        try:
            first = sorted(os.listdir(fd))
            open(r + '/dir/added', 'w').close()
            os.lseek(fd, 0, os.SEEK_SET)
            return first, sorted(os.listdir(fd))
        finally:
            os.close(fd)
    p('rewind', rewind)
    fs.check_trees()


def test_statfs(fs):
    a, b = os.statvfs(fs.mnt), os.statvfs(fs.src)
    for f in ('f_bsize', 'f_frsize', 'f_blocks', 'f_files', 'f_namemax'):
        assert getattr(a, f) == getattr(b, f), f
    # free counts move with other users of /tmp: close, not equal
    slack = (256 << 20) // b.f_frsize
    assert abs(a.f_bfree - b.f_bfree) < slack
    assert abs(a.f_bavail - b.f_bavail) < slack
    assert abs(a.f_ffree - b.f_ffree) < 10000
    assert util.call(os.statvfs, fs.m('missing')) == Err(errno.ENOENT)
    assert os.statvfs(fs.m('dir/a')).f_blocks == b.f_blocks
    st = os.statvfs(fs.m('dir'))
    assert st.f_namemax == 255


# --------------------------------------------------------------------------
# extended attributes


def test_xattr(fs):
    p = fs.parity
    F = 'file'

    def get(name, key, follow=True):
        return lambda r: os.getxattr(r + '/' + name, key,
                                     follow_symlinks=follow)

    def lst(name, follow=True):
        return lambda r: sorted(os.listxattr(r + '/' + name,
                                             follow_symlinks=follow))

    def set_(name, key, val, flags=0, follow=True):
        return lambda r: os.setxattr(r + '/' + name, key, val, flags,
                                     follow_symlinks=follow)

    def rm(name, key, follow=True):
        return lambda r: os.removexattr(r + '/' + name, key,
                                        follow_symlinks=follow)
    assert p('get', get(F, 'user.greeting')) == b'hi'
    p('list', lst(F))
    p('get missing', get(F, 'user.nope'))
    p('set', set_(F, 'user.new', b'v' * 100))
    p('get new', get(F, 'user.new'))
    p('set empty', set_(F, 'user.empty', b''))
    p('get empty', get(F, 'user.empty'))
    p('set binary', set_(F, 'user.bin', bytes(range(256))))
    p('get binary', get(F, 'user.bin'))
    p('list 4', lst(F))
    p('create existing', set_(F, 'user.new', b'x', util.XATTR_CREATE))
    p('replace missing', set_(F, 'user.other', b'x', util.XATTR_REPLACE))
    p('replace', set_(F, 'user.new', b'replaced', util.XATTR_REPLACE))
    p('get replaced', get(F, 'user.new'))
    p('create new', set_(F, 'user.other', b'o', util.XATTR_CREATE))
    p('both flags', set_(F, 'user.x', b'o', 3))
    p('remove', rm(F, 'user.other'))
    p('remove missing', rm(F, 'user.other'))
    p('get removed', get(F, 'user.other'))
    p('big value', set_(F, 'user.big', b'B' * 3000))
    p('get big', get(F, 'user.big'))
    p('too big value', set_(F, 'user.huge', b'H' * 70000))
    p('long name', set_(F, 'user.' + 'k' * 251, b'v'))
    p('too long name', set_(F, 'user.' + 'k' * 252, b'v'))
    p('no namespace', set_(F, 'nonamespace', b'v'))
    p('unknown namespace', set_(F, 'bogus.x', b'v'))
    p('trusted as root', set_(F, 'trusted.t', b'root only'))
    p('get trusted', get(F, 'trusted.t'))
    p('list all', lst(F))
    p('dir', set_('dir', 'user.d', b'on a dir'))
    p('get dir', get('dir', 'user.d'))
    p('root dir', set_('', 'user.root', b'r'))
    p('list root dir', lst(''))
    p('through symlink', set_('link', 'user.vialink', b'l'))
    p('get through symlink', get('link', 'user.vialink'))
    p('user on symlink itself', set_('link', 'user.l', b'l', follow=False))
    p('list symlink itself', lst('link', follow=False))
    p('get symlink itself', get('link', 'user.vialink', follow=False))
    p('user on fifo', set_('fifo', 'user.f', b'f'))
    p('missing file', get('missing', 'user.x'))
    p('list missing', lst('missing'))

    # sizes: ask the size, a buffer too small (ERANGE), an exact buffer
    p('size query', lambda r: util.getxattr_raw(r + '/file', 'user.new', 0))
    p('erange', lambda r: util.getxattr_raw(r + '/file', 'user.new', 3))
    p('exact buffer', lambda r: util.getxattr_raw(r + '/file', 'user.new', 8))
    p('empty value size', lambda r: util.getxattr_raw(r + '/file',
                                                      'user.empty', 0))
    p('list size', lambda r: util.listxattr_raw(r + '/file', 0))
    p('list erange', lambda r: util.listxattr_raw(r + '/file', 5))
    p('list no xattrs', lambda r: util.listxattr_raw(r + '/empty', 0))

    def fd_ops(r):
        fd = os.open(r + '/exec', os.O_RDONLY)
        try:
            os.setxattr(fd, 'user.fd', b'via fd')
            return os.getxattr(fd, 'user.fd'), sorted(os.listxattr(fd))
        finally:
            os.close(fd)
    p('fsetxattr', fd_ops)
    fs.check_trees()


# --------------------------------------------------------------------------
# access


def test_access(fs):
    p = fs.parity
    for name in ('empty', 'emptydir'):
        os.chmod(fs.m(name), 0)
        os.chmod(fs.n(name), 0)
    for name in ('file', 'ro', 'exec', 'dir', 'empty', 'emptydir', 'link',
                 'dangling', 'missing', 'fifo', 'dir/a', 'file/x'):
        for mode in (os.F_OK, os.R_OK, os.W_OK, os.X_OK,
                     os.R_OK | os.W_OK | os.X_OK):
            p('access %s %d' % (name, mode),
              lambda r: os.access(r + '/' + name, mode))
        p('faccessat nofollow %s' % name,
          lambda r: os.access(r + '/' + name, os.W_OK,
                              follow_symlinks=False))


# --------------------------------------------------------------------------
# locks


def _lock_scenario(path, kind):
    """A child takes a lock on path; the parent (another process) tries
    to take conflicting and compatible ones.  Returns what it saw."""
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fd = os.open(path, os.O_RDWR)
            if kind == 'flock':
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                # exclusive lock on bytes 0..99
                fcntl.lockf(fd, fcntl.LOCK_EX, 100, 0)
            os.write(to_parent_w, b'L')
            os.read(to_child_r, 1)          # wait until told to release
            if kind == 'flock':
                fcntl.flock(fd, fcntl.LOCK_UN)
            else:
                fcntl.lockf(fd, fcntl.LOCK_UN, 100, 0)
            os.write(to_parent_w, b'U')
            os.read(to_child_r, 1)
            code = 0
        finally:
            os._exit(code)
    out = []
    try:
        assert os.read(to_parent_r, 1) == b'L'
        fd = os.open(path, os.O_RDWR)
        try:
            if kind == 'flock':
                out.append(util.call(fcntl.flock, fd,
                                     fcntl.LOCK_EX | fcntl.LOCK_NB))
                out.append(util.call(fcntl.flock, fd,
                                     fcntl.LOCK_SH | fcntl.LOCK_NB))
                # a second open file description in the child's
                # position: flock locks belong to the description
                fd2 = os.open(path, os.O_RDONLY)
                out.append(util.call(fcntl.flock, fd2,
                                     fcntl.LOCK_SH | fcntl.LOCK_NB))
                os.close(fd2)
            else:
                out.append(util.call(fcntl.lockf, fd,
                                     fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 50))
                out.append(util.call(fcntl.lockf, fd,
                                     fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 99))
                # a range that does not overlap is free
                out.append(util.call(fcntl.lockf, fd,
                                     fcntl.LOCK_EX | fcntl.LOCK_NB, 100,
                                     100))
                out.append(util.call(fcntl.lockf, fd, fcntl.LOCK_UN, 100,
                                     100))
                # F_GETLK names the holder
                fl = fcntl.fcntl(fd, fcntl.F_GETLK, _flock(fcntl.F_WRLCK,
                                                           0, 10))
                t, wh, start, ln, lpid = _unflock(fl)
                out.append((t == fcntl.F_WRLCK, start, ln, lpid == pid))
            os.write(to_child_w, b'u')
            assert os.read(to_parent_r, 1) == b'U'
            if kind == 'flock':
                out.append(util.call(fcntl.flock, fd,
                                     fcntl.LOCK_EX | fcntl.LOCK_NB))
            else:
                out.append(util.call(fcntl.lockf, fd,
                                     fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0))
                fl = fcntl.fcntl(fd, fcntl.F_GETLK, _flock(fcntl.F_WRLCK,
                                                           0, 10))
                out.append(_unflock(fl)[0] == fcntl.F_UNLCK)
        finally:
            os.close(fd)
            os.write(to_child_w, b'x')
    finally:
        _, status = os.waitpid(pid, 0)
        for f in (to_child_r, to_child_w, to_parent_r, to_parent_w):
            os.close(f)
    assert status == 0
    return out


def _flock(typ, start, length):
    import struct
    return struct.pack('hhxxxxqqixxxx', typ, os.SEEK_SET, start, length, 0)


def _unflock(buf):
    import struct
    return struct.unpack('hhxxxxqqixxxx', buf)


@pytest.mark.parametrize('kind', ['flock', 'posix'])
def test_locks(fs, kind):
    got = fs.parity(kind, lambda r: _lock_scenario(r + '/file', kind))
    # and the scenario did see conflicts: it is not vacuous
    assert isinstance(got[0], Err) and got[0].errno in (errno.EAGAIN,
                                                        errno.EACCES)

    # a lock dies with its holder's process
    def dies(r):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                fd = os.open(r + '/exec', os.O_RDWR)
                fcntl.lockf(fd, fcntl.LOCK_EX)
                code = 0
            finally:
                os._exit(code)
        assert os.waitpid(pid, 0)[1] == 0
        fd = os.open(r + '/exec', os.O_RDWR)
        try:
            return util.call(fcntl.lockf, fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert fs.parity('released at exit', dies) is None


# --------------------------------------------------------------------------
# fallocate, copy_file_range, lseek


FALLOC_MODES = {
    'default': (0, 8192, 65536),
    'extend': (0, 60000, 200000),
    'keep_size': (util.FALLOC_FL_KEEP_SIZE, 60000, 200000),
    'punch_hole': (util.FALLOC_FL_PUNCH_HOLE | util.FALLOC_FL_KEEP_SIZE,
                   4096, 16384),
    'punch_hole_unaligned': (util.FALLOC_FL_PUNCH_HOLE |
                             util.FALLOC_FL_KEEP_SIZE, 1000, 10000),
    'punch_without_keep_size': (util.FALLOC_FL_PUNCH_HOLE, 4096, 4096),
    'zero_range': (util.FALLOC_FL_ZERO_RANGE, 5000, 20000),
    'zero_range_keep_size': (util.FALLOC_FL_ZERO_RANGE |
                             util.FALLOC_FL_KEEP_SIZE, 60000, 20000),
    'collapse_range': (util.FALLOC_FL_COLLAPSE_RANGE, 8192, 16384),
    'collapse_unaligned': (util.FALLOC_FL_COLLAPSE_RANGE, 1000, 4096),
    'insert_range': (util.FALLOC_FL_INSERT_RANGE, 8192, 4096),
    'bad_length': (0, 0, 0),
    'bad_offset': (0, -1, 10),
}

# modes the kernel's FUSE module may refuse by itself (EOPNOTSUPP without
# asking the daemon)
KERNEL_MAY_REFUSE = {'zero_range', 'zero_range_keep_size',
                     'collapse_range', 'collapse_unaligned', 'insert_range'}


def _layout(fd):
    """Data/hole map from SEEK_DATA/SEEK_HOLE."""
    size = os.fstat(fd).st_size
    out, off = [], 0
    while off < size:
        d = util.call(os.lseek, fd, off, os.SEEK_DATA)
        if isinstance(d, Err):
            break
        h = os.lseek(fd, d, os.SEEK_HOLE)
        out.append((d, h))
        off = h
    return out


@pytest.mark.parametrize('mode', sorted(FALLOC_MODES))
def test_fallocate(fs, mode):
    flags, off, length = FALLOC_MODES[mode]
    content = _pattern(3, 65536)

    def fn(r):
        path = r + '/falloc'
        with open(path, 'wb') as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        fd = os.open(path, os.O_RDWR)
        try:
            res = util.call(util.fallocate, fd, flags, off, length)
            st = os.fstat(fd)
            # the layout first: ext4 reports unwritten extents that are in
            # the page cache as data, and reading fills the page cache
            layout = _layout(fd)
            return (res, st.st_size, st.st_blocks, os.pread(fd, 1 << 20, 0),
                    layout)
        finally:
            os.close(fd)
    a = util.call(fn, fs.mnt)
    b = util.call(fn, fs.native)
    if mode in KERNEL_MAY_REFUSE and a != b:
        assert a[0] == Err(errno.EOPNOTSUPP), (a[0], b[0])
        assert a[1] == len(content) and a[3] == content
    else:
        assert a == b
    util.assert_same_stat(fs.m('falloc'), fs.s('falloc'))
    with open(fs.s('falloc'), 'rb') as f:
        assert f.read() == a[3]


def test_copy_file_range(fs):
    p = fs.parity
    data = _pattern(11, 300000)

    def cfr(count, off_in, off_out, src='cfr_in', dst='cfr_out'):
        def fn(r):
            with open(r + '/cfr_in', 'wb') as f:
                f.write(data)
            fi = os.open(r + '/' + src, os.O_RDONLY)
            try:
                fo = os.open(r + '/' + dst, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    n = os.copy_file_range(fi, fo, count, off_in, off_out)
                    return n, os.fstat(fo).st_size, os.pread(fo, 1 << 20, 0)
                finally:
                    os.close(fo)
            finally:
                os.close(fi)
        return fn
    got = p('whole', cfr(len(data), 0, 0))
    assert got[0] == len(data) and got[2] == data
    p('middle', cfr(1000, 5000, 123))
    p('past source eof', cfr(100, len(data) + 10, 0))
    p('to a hole', cfr(4096, 0, 1 << 20))
    p('same file, overlapping', cfr(10000, 0, 5000, 'cfr_in', 'cfr_in'))
    p('same file, disjoint', cfr(1000, 0, 100000, 'cfr_in', 'cfr_in'))
    p('to a dir', cfr(10, 0, 0, 'cfr_in', 'dir'))

    def wronly_src(r):
        fi = os.open(r + '/file', os.O_WRONLY)
        fo = os.open(r + '/cfr_out', os.O_RDWR)
        try:
            return os.copy_file_range(fi, fo, 10)
        finally:
            os.close(fi)
            os.close(fo)
    p('source not readable', wronly_src)
    with open(fs.s('cfr_out'), 'rb') as f:
        assert f.read() == open(fs.n('cfr_out'), 'rb').read()
    fs.check_trees()


def test_lseek_data_hole(fs):
    p = fs.parity

    def make(r):
        with open(r + '/holes', 'wb') as f:
            f.write(b'd' * 8192)
            f.seek(1 << 20)
            f.write(b'e' * 4096)
            f.seek((3 << 20) + 100)
            f.write(b'f')
            f.truncate(4 << 20)
        return os.stat(r + '/holes').st_size
    p('make', make)

    def seek(off, whence, name='holes'):
        def fn(r):
            fd = os.open(r + '/' + name, os.O_RDONLY)
            try:
                return os.lseek(fd, off, whence)
            finally:
                os.close(fd)
        return fn
    for off in (0, 100, 8191, 8192, 9000, (1 << 20) - 1, 1 << 20,
                (1 << 20) + 4095, (1 << 20) + 4096, 3 << 20, (3 << 20) + 100,
                (3 << 20) + 4096, (4 << 20) - 1, 4 << 20, 5 << 20, -1):
        for whence, w in ((os.SEEK_DATA, 'data'), (os.SEEK_HOLE, 'hole')):
            p('SEEK_%s %d' % (w.upper(), off), seek(off, whence))
    p('data in an empty file', seek(0, os.SEEK_DATA, 'empty'))
    p('hole in an empty file', seek(0, os.SEEK_HOLE, 'empty'))
    p('data in a dense file', seek(100, os.SEEK_DATA, 'file'))
    p('hole in a dense file', seek(100, os.SEEK_HOLE, 'file'))
    p('end', seek(-10, os.SEEK_END))
    p('bad whence', seek(0, 99))
    def layout(r):
        fd = os.open(r + '/sparse', os.O_RDONLY)
        try:
            return _layout(fd)
        finally:
            os.close(fd)
    p('layout of sparse', layout)


# --------------------------------------------------------------------------
# O_DIRECT and mmap


def test_o_direct(fs):
    blk = 4096

    def direct(r):
        path = r + '/direct'
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
        try:
            buf = mmap.mmap(-1, 16 * blk)
            buf.write(_pattern(5, 16 * blk))
            n1 = os.pwrite(fd, buf, 0)
            n2 = os.pwrite(fd, memoryview(buf)[:4 * blk], 32 * blk)
            rbuf = mmap.mmap(-1, 64 * blk)
            n3 = os.preadv(fd, [rbuf], 0)
            n4 = os.preadv(fd, [memoryview(rbuf)[:blk]], 33 * blk)
            fl = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT
            st = os.fstat(fd)
            return (n1, n2, n3, n4, bytes(rbuf[:blk]), st.st_size, fl != 0)
        finally:
            os.close(fd)
    got = fs.parity('O_DIRECT aligned I/O', direct)
    assert got[:4] == (16 * blk, 4 * blk, 36 * blk, blk)
    with open(fs.s('direct'), 'rb') as f:
        src = f.read()
    with open(fs.n('direct'), 'rb') as f:
        assert src == f.read()
    assert src[:16 * blk] == _pattern(5, 16 * blk)

    def mixed(r):
        # a buffered reader sees what an O_DIRECT writer wrote
        fd = os.open(r + '/file', os.O_RDWR | os.O_DIRECT)
        try:
            with open(r + '/file', 'rb') as f:
                f.read()
            buf = mmap.mmap(-1, blk)
            buf.write(b'D' * blk)
            os.pwrite(fd, buf, 0)
            with open(r + '/file', 'rb') as f:
                return f.read(blk + 10)
        finally:
            os.close(fd)
    fs.parity('O_DIRECT write then buffered read', mixed)
    util.assert_same_stat(fs.m('direct'), fs.s('direct'))


def test_mmap_shared(fs):
    def fn(r):
        path = r + '/mapped'
        with open(path, 'wb') as f:
            f.write(b'\0' * (3 * 4096 + 100))
        fd = os.open(path, os.O_RDWR)
        try:
            m = mmap.mmap(fd, 3 * 4096 + 100, mmap.MAP_SHARED,
                          mmap.PROT_READ | mmap.PROT_WRITE)
            m[0:5] = b'first'
            m[4096:4100] = b'page'
            m[3 * 4096 + 95:3 * 4096 + 100] = b'tail!'
            m.flush()
            via_fd = os.pread(fd, 1 << 16, 0)
            m.close()
            return via_fd, os.fstat(fd).st_size
        finally:
            os.close(fd)
    got = fs.parity('write through a shared mapping', fn)
    # O_NOATIME: this read behind the mount must not move the atime the
    # stats are compared on below (the mount is not told of it)
    fd = os.open(fs.s('mapped'), os.O_RDONLY | os.O_NOATIME)
    with os.fdopen(fd, 'rb') as f:
        src = f.read()
    assert src == got[0]
    assert src[:5] == b'first' and src[4096:4100] == b'page' and \
        src.endswith(b'tail!')
    with open(fs.m('mapped'), 'rb') as f:
        assert f.read() == src

    def private(r):
        fd = os.open(r + '/file', os.O_RDWR)
        try:
            m = mmap.mmap(fd, 4096, mmap.MAP_PRIVATE)
            m[0:5] = b'PRIVA'
            seen = m[0:12]
            m.close()
            return seen, os.pread(fd, 12, 0)
        finally:
            os.close(fd)
    fs.parity('a private mapping does not write back', private)

    def read_map(r):
        # a mapping sees a write() made after it was created
        fd = os.open(r + '/dir/b', os.O_RDWR)
        try:
            m = mmap.mmap(fd, 5000, mmap.MAP_SHARED, mmap.PROT_READ)
            os.pwrite(fd, b'newdata', 4000)
            v = m[3995:4010]
            m.close()
            return v
        finally:
            os.close(fd)
    fs.parity('mapping sees write()', read_map)
    util.assert_same_stat(fs.m('mapped'), fs.s('mapped'))


# --------------------------------------------------------------------------
# long names and long paths


def test_long_names(fs):
    p = fs.parity
    n255 = 'L' * 255
    n256 = 'L' * 256
    p('create 255', lambda r: (open(r + '/' + n255, 'w').write('long'),
                               util.lstat_summary(r + '/' + n255)))
    p('listed', lambda r: n255 in os.listdir(r))
    p('rename 255 to 255', lambda r: os.rename(r + '/' + n255,
                                               r + '/' + 'M' * 255))
    p('read', lambda r: open(r + '/' + 'M' * 255).read())
    C = os.O_CREAT | os.O_WRONLY
    for desc, fn in [
            ('open', lambda r: os.open(r + '/' + n256, C)),
            ('stat', lambda r: os.stat(r + '/' + n256)),
            ('mkdir', lambda r: os.mkdir(r + '/' + n256)),
            ('rmdir', lambda r: os.rmdir(r + '/' + n256)),
            ('unlink', lambda r: os.unlink(r + '/' + n256)),
            ('mkfifo', lambda r: os.mkfifo(r + '/' + n256)),
            ('symlink', lambda r: os.symlink('file', r + '/' + n256)),
            ('link', lambda r: os.link(r + '/file', r + '/' + n256)),
            ('rename to', lambda r: os.rename(r + '/file', r + '/' + n256)),
            ('rename from', lambda r: os.rename(r + '/' + n256, r + '/x')),
            ('chmod', lambda r: os.chmod(r + '/' + n256, 0o600)),
            ('setxattr', lambda r: os.setxattr(r + '/' + n256, 'user.a',
                                               b'')),
            ('in a dir', lambda r: os.open(r + '/dir/' + n256, C))]:
        got = p(desc + ' 256', fn)
        assert got == Err(errno.ENAMETOOLONG), (desc, got)
    fs.check_trees()


def _deep_chain(root, depth, name):
    """mkdir a chain of depth dirs below root using dir fds (no path ever
    longer than one name); return an fd on the deepest."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        try:
            os.mkdir(name, dir_fd=fd)
        except FileExistsError:
            pass
        nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    return fd


def test_path_longer_than_path_max(fs):
    name = 'd' * 200
    depth = 30          # 6000+ bytes of path
    assert depth * (len(name) + 1) > 4096

    def deep(r):
        fd = _deep_chain(r, depth, name)
        try:
            f = os.open('leaf', os.O_RDWR | os.O_CREAT, 0o640, dir_fd=fd)
            os.write(f, b'at the bottom')
            os.close(f)
            os.mkdir('sub', dir_fd=fd)
            os.symlink('leaf', 'ln', dir_fd=fd)
            os.rename('leaf', 'sub/leaf2', src_dir_fd=fd, dst_dir_fd=fd)
            os.link('sub/leaf2', 'hl', src_dir_fd=fd, dst_dir_fd=fd)
            f = os.open('hl', os.O_RDONLY, dir_fd=fd)
            os.setxattr(f, 'user.deep', b'yes')
            os.close(f)
            old = os.getcwd()
            os.fchdir(fd)
            try:
                with open('hl', 'rb') as f2:
                    data = f2.read()
                listing = sorted(os.listdir('.'))
            finally:
                os.chdir(old)
            st = os.stat('sub/leaf2', dir_fd=fd)
            return (data, listing, st.st_nlink, st.st_size,
                    os.readlink('ln', dir_fd=fd),
                    util.call(os.stat, os.path.join(r, *[name] * depth)))
        finally:
            os.close(fd)
    got = fs.parity('deep tree', deep)
    assert got[0] == b'at the bottom'
    assert got[5] == Err(errno.ENAMETOOLONG)
    # the files are where they should be in the source
    fd = _deep_chain(fs.src, depth, name)
    try:
        with open(os.open('hl', os.O_RDONLY, dir_fd=fd), 'rb') as f:
            assert f.read() == b'at the bottom'
        st_src = os.stat('hl', dir_fd=fd)
    finally:
        os.close(fd)
    fd = _deep_chain(fs.mnt, depth, name)
    try:
        st_mnt = os.stat('hl', dir_fd=fd)
        f = os.open('hl', os.O_RDONLY, dir_fd=fd)
        try:
            assert os.getxattr(f, 'user.deep') == b'yes'
        finally:
            os.close(f)
    finally:
        os.close(fd)
    assert (st_mnt.st_ino, st_mnt.st_nlink, st_mnt.st_mtime_ns) == \
        (st_src.st_ino, st_src.st_nlink, st_src.st_mtime_ns)

    # and the whole deep tree can be removed through the mount
    util.rmtree(fs.m(name))
    assert not os.path.exists(fs.s(name))


# --------------------------------------------------------------------------
# attributes are never stale after changes made through the mount


def test_attrs_not_stale(fs):
    m, s = fs.m, fs.s

    def same(name):
        util.assert_same_stat(m(name), s(name))
    # prime the kernel's attribute cache for every name first
    for n in ('file', 'dir', 'dir/a', 'dir/b', 'exec', '.'):
        os.stat(m(n))
    os.link(m('file'), m('hard'))
    assert os.stat(m('file')).st_nlink == 2
    same('file')
    os.link(m('hard'), m('dir/hard2'))
    assert os.stat(m('file')).st_nlink == 3
    assert os.stat(m('hard')).st_nlink == 3
    os.unlink(m('hard'))
    assert os.stat(m('file')).st_nlink == 2
    assert os.stat(m('dir/hard2')).st_nlink == 2
    same('file')
    os.rename(m('dir/hard2'), m('moved'))
    assert os.stat(m('file')).st_nlink == 2
    same('file')
    same('moved')

    with open(m('exec'), 'ab') as f:
        f.write(b'x' * 12345)
    assert os.stat(m('exec')).st_size == os.stat(s('exec')).st_size
    same('exec')
    fd = os.open(m('exec'), os.O_RDWR)
    os.pwrite(fd, b'y', 100000)
    assert os.stat(m('exec')).st_size == 100001
    assert os.fstat(fd).st_size == 100001
    os.ftruncate(fd, 10)
    assert os.stat(m('exec')).st_size == 10
    os.close(fd)
    same('exec')

    # rename over a name whose attributes are cached
    ino_a = os.stat(s('dir/a')).st_ino
    os.rename(m('dir/a'), m('dir/b'))
    assert os.stat(m('dir/b')).st_ino == ino_a
    assert os.stat(m('dir/b')).st_size == 10
    assert not os.path.exists(m('dir/a'))
    same('dir/b')

    # a directory's mtime and nlink change with its entries
    open(m('dir/new'), 'w').close()
    same('dir')
    os.mkdir(m('dir/newdir'))
    same('dir')
    assert os.stat(m('dir')).st_nlink == os.stat(s('dir')).st_nlink == 4
    os.rmdir(m('dir/newdir'))
    assert os.stat(m('dir')).st_nlink == 3
    same('dir')
    same('.')

    # ctime moves with chmod/chown/link, at once
    for op in (lambda: os.chmod(m('file'), 0o600),
               lambda: os.chown(m('file'), 42, 43),
               lambda: os.utime(m('file'), ns=(1, 2)),
               lambda: os.setxattr(m('file'), 'user.k', b'v'),
               lambda: os.truncate(m('file'), 1)):
        op()
        same('file')

    # an open file unlinked through the mount has no links
    fd = os.open(m('moved'), os.O_RDONLY)
    assert os.fstat(fd).st_nlink == 2
    os.unlink(m('moved'))
    assert os.fstat(fd).st_nlink == 1
    os.unlink(m('file'))
    assert os.fstat(fd).st_nlink == 0
    os.close(fd)


def test_dir_attrs_not_stale_under_concurrent_stat(fs):
    """A directory's times through the mount are the source's once a
    change of its entries has returned, while another thread stats it all
    along: the answer to a getattr in flight across the change (read from
    the source before it) must not stand for the attribute timeout.  The
    sequence test_attrs_not_stale runs, whose last check once failed so on
    a busy machine (the daemon now invalidates the directory's attributes
    itself: fuse_entry.c, dir_changed).  A read torn by the kernel's
    lockless read of the cached attributes is read again (below)."""
    import threading
    m, s = fs.m, fs.s
    stop = threading.Event()

    def stat_loop():
        while not stop.is_set():
            os.stat(m('.'))
    fields = ('st_mtime_ns', 'st_ctime_ns', 'st_nlink')
    th = threading.Thread(target=stat_loop)
    th.start()
    try:
        for i in range(60):
            os.link(m('file'), m('hard'))
            os.stat(m('file'))
            os.link(m('hard'), m('dir/hard2'))
            os.unlink(m('hard'))
            os.stat(m('file'))
            os.stat(m('dir/hard2'))
            os.rename(m('dir/hard2'), m('moved'))
            os.stat(m('file'))
            os.lstat(m('moved'))
            os.stat(m('exec'))
            b = util.stat_fields(os.lstat(s('.')), fields)
            # A stale answer that stands is seen on every read.  One
            # read can also see the kernel's cached attributes half
            # updated: it reads them without the inode's lock
            # (fs/fuse/dir.c, fuse_update_get_attr), and the other
            # thread's getattr reply clears the "invalid" mark before it
            # sets the new times (traced here once: no request sent, the
            # unlink's times, while the reply to the stat loop's getattr
            # sent after the rename was being applied); the next read
            # has them whole.
            seen = [util.stat_fields(os.lstat(m('.')), fields)]
            while seen[-1] != b and len(seen) < 3:
                seen.append(util.stat_fields(os.lstat(m('.')), fields))
            assert seen[-1] == b, 'round %d: the root through the mount ' \
                '%r, in the source %r' % (i, seen, b)
            os.unlink(m('moved'))
    finally:
        stop.set()
        th.join()


@pytest.mark.source_changes
def test_source_changes_visible(fs):
    """Changes made to the source behind hotfs's back show through the
    mount once the attribute timeout has passed (at once with timeouts of
    0); an open after the change sees the new content (close-to-open)."""
    m, s = fs.m, fs.s
    with open(m('file'), 'rb') as f:
        old = f.read()
    assert util.call(os.stat, m('newname')) == Err(errno.ENOENT)
    new = old.upper()
    assert len(new) == len(old) and new != old
    with open(s('file'), 'r+b') as f:
        f.write(new)
    os.utime(s('file'), ns=(10**18, 10**18))
    with open(s('newname'), 'w') as f:
        f.write('behind the back')
    os.unlink(s('empty'))
    os.chmod(s('exec'), 0o700)
    # a name that changes type, and a link count that grows
    os.stat(m('dir/a'))
    os.unlink(s('dir/a'))
    os.mkdir(s('dir/a'))
    os.stat(m('ro'))
    os.link(s('ro'), s('ro2'))
    timeout = 0.5 if fs.mode == 'attr0' else 4
    util.wait_for(lambda: os.path.exists(m('newname')),
                  'a file created in the source', timeout)
    util.wait_for(lambda: not os.path.exists(m('empty')),
                  'a file removed from the source', timeout)
    util.wait_for(lambda: os.stat(m('exec')).st_mode & 0o777 == 0o700,
                  'a chmod in the source', timeout)
    util.wait_for(lambda: os.stat(m('file')).st_mtime_ns == 10**18,
                  'an mtime set in the source', timeout)
    util.wait_for(lambda: os.path.isdir(m('dir/a')),
                  'a file replaced by a directory in the source', timeout)
    util.wait_for(lambda: os.stat(m('ro')).st_nlink == 2,
                  'a link made in the source', timeout)
    assert os.listdir(m('dir/a')) == []
    with open(m('file'), 'rb') as f:
        assert f.read() == new
    with open(m('newname')) as f:
        assert f.read() == 'behind the back'
    fs.check_source_stats()


# --------------------------------------------------------------------------
# symlinks in the source are never followed by the daemon


@pytest.mark.source_changes
def test_symlink_not_followed(fs, ws):
    outside = os.path.join(ws.root, 'outside')
    os.mkdir(outside)
    with open(os.path.join(outside, 'secret'), 'w') as f:
        f.write('outside the source')
    os.utime(outside, ns=(10**9, 10**9))
    before = os.stat(outside)
    os.symlink('/etc', fs.s('etc'))
    os.symlink(outside, fs.s('out'))
    os.symlink('../../..', fs.s('dir/up'))

    st = os.lstat(fs.m('etc'))
    assert stat.S_ISLNK(st.st_mode)
    assert os.readlink(fs.m('etc')) == '/etc'
    assert os.readlink(fs.m('dir/up')) == '../../..'
    util.assert_same_stat(fs.m('out'), fs.s('out'))
    # operations on the link itself reach the link, not its target
    os.chown(fs.m('out'), 4242, 4242, follow_symlinks=False)
    util.utimensat(fs.m('out'), (5, 0), (6, 0), follow=False)
    assert util.call(os.setxattr, fs.m('out'), 'user.x', b'1',
                     follow_symlinks=False) == Err(errno.EPERM)
    st = os.lstat(fs.s('out'))
    assert (st.st_uid, st.st_gid, st.st_mtime_ns) == (4242, 4242, 6 * 10**9)
    after = os.stat(outside)
    assert (after.st_uid, after.st_gid, after.st_mtime_ns) == \
        (before.st_uid, before.st_gid, before.st_mtime_ns)
    assert os.listxattr(outside) == []
    for flags in (os.O_RDONLY | os.O_NOFOLLOW,
                  os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW,
                  os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW):
        assert util.call(os.open, fs.m('out'), flags) == Err(errno.ELOOP)
    assert util.call(os.mkdir, fs.m('out')) == Err(errno.EEXIST)
    os.unlink(fs.m('out'))
    assert os.path.isdir(outside) and not os.path.lexists(fs.s('out'))
    # '..' below the mount stays inside the source
    with open(fs.m('dir/sub/../../made_via_dotdot'), 'w') as f:
        f.write('in')
    assert os.path.exists(fs.s('made_via_dotdot'))
    assert sorted(os.listdir(outside)) == ['secret']

    # A directory known to the kernel is swapped for a symlink to the
    # outside in the source.  Lookups below the old directory must stay
    # on the directory itself (fd-relative), exactly as natively; a
    # daemon that concatenates paths would follow the new link.
    def swapped(r):
        os.mkdir(r + '/swap')
        with open(r + '/swap/inside', 'w') as f:
            f.write('inside')
        fd = os.open(r + '/swap', os.O_RDONLY | os.O_DIRECTORY)
        try:
            return fd
        except BaseException:
            os.close(fd)
            raise
    fdm = swapped(fs.mnt)
    fdn = swapped(fs.native)
    try:
        for root in (fs.src, fs.native):
            os.rename(root + '/swap', root + '/swap.old')
            os.symlink(outside, root + '/swap')
        res = []
        for fd in (fdm, fdn):
            res.append((
                util.call(lambda: open(os.open('secret', os.O_RDONLY,
                                               dir_fd=fd)).read()),
                util.call(lambda: open(os.open('inside', os.O_RDONLY,
                                               dir_fd=fd)).read()),
                util.call(os.mkdir, 'made', dir_fd=fd),
                sorted(os.listdir(fd))))
        assert res[0] == res[1]
        assert res[0][0] == Err(errno.ENOENT)
        assert os.path.isdir(fs.s('swap.old/made'))
        assert sorted(os.listdir(outside)) == ['secret']
    finally:
        os.close(fdm)
        os.close(fdn)


# --------------------------------------------------------------------------
# classic passthrough pitfalls


def test_odd_names(fs):
    p = fs.parity
    names = [b'with space', b'tab\there', b'new\nline', b'back\\slash',
             b'\xff\xfe not utf-8', b'-leading-dash', b'.hidden', b'..dots',
             b'\xe2\x98\x83 snowman', b'colon:semi;', b"quote'\"", b'*?[',
             b'%s%n%x']
    for n in names:
        p('create %r' % n, lambda r: (os.close(os.open(
            os.fsencode(r) + b'/' + n, os.O_CREAT | os.O_WRONLY, 0o644)),
            util.lstat_summary(os.fsencode(r) + b'/' + n)))
    p('listing', lambda r: sorted(os.listdir(os.fsencode(r))))
    p('rename odd', lambda r: os.rename(os.fsencode(r) + b'/new\nline',
                                        os.fsencode(r) + b'/tab\there'))
    p('mkdir odd', lambda r: os.mkdir(os.fsencode(r) + b'/\xff dir'))
    p('listing after', lambda r: sorted(os.listdir(os.fsencode(r))))
    fs.check_trees()


def test_inode_number_reuse(fs):
    """ext4 hands a freed inode number to the next new file at once: the
    daemon must not answer for the new file with the old one's state."""
    seen = set()
    for i in range(300):
        name = fs.m('reuse%d' % (i % 3))
        data = ('generation %d ' % i).encode() * (i % 7 + 1)
        with open(name, 'wb') as f:
            f.write(data)
        st = os.stat(name)
        src = os.stat(fs.s('reuse%d' % (i % 3)))
        assert (st.st_ino, st.st_size, st.st_nlink) == \
            (src.st_ino, len(data), 1), i
        with open(name, 'rb') as f:
            assert f.read() == data, i
        seen.add(st.st_ino)
        if i % 2:
            os.unlink(name)
        else:
            os.rename(name, fs.m('moved'))
            os.unlink(fs.m('moved'))
    # numbers really were reused, or the test proved nothing
    assert len(seen) < 300


def test_rm_rf_in_one_pass(fs):
    """Removing entries while reading the directory (what rm -rf does)
    must not skip any: one pass empties it, as natively."""
    def fill_and_remove(r):
        d = r + '/big'
        os.mkdir(d)
        for i in range(1000):
            open('%s/file-with-a-long-name-%05d' % (d, i), 'w').close()
        removed = 0
        with os.scandir(d) as it:
            for e in it:
                os.unlink(e.path)
                removed += 1
        return removed, os.listdir(d)
    got = fs.parity('remove while reading', fill_and_remove)
    assert got == (1000, [])


@pytest.mark.source_changes
def test_handles_follow_renames(fs):
    """An open file or directory keeps referring to the same object after
    it (or its parent) is renamed through the mount or in the source."""
    def fn(r):
        fd = os.open(r + '/dir/a', os.O_RDWR)
        dfd = os.open(r + '/dir', os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.rename(r + '/dir/a', r + '/dir/sub/a2')
            os.rename(r + '/dir', r + '/dir2')
            os.pwrite(fd, b'AFTER', 0)
            with open(os.open('made', os.O_CREAT | os.O_WRONLY, 0o644,
                              dir_fd=dfd), 'w') as f:
                f.write('via dfd')
            return (open(r + '/dir2/sub/a2', 'rb').read(),
                    sorted(os.listdir(r + '/dir2')),
                    util.call(os.stat, r + '/dir/a'),
                    os.fstat(fd).st_size)
        finally:
            os.close(fd)
            os.close(dfd)
    fs.parity('handles after rename', fn)

    # the same when the source is renamed behind hotfs's back
    fd = os.open(fs.m('exec'), os.O_RDWR)
    try:
        os.rename(fs.s('exec'), fs.s('exec.moved'))
        os.pwrite(fd, b'#!', 0)
        assert os.pread(fd, 2, 0) == b'#!'
        os.unlink(fs.s('exec.moved'))
        # an open file outlives its last name, in the source too
        os.pwrite(fd, b'still', 0)
        assert os.pread(fd, 5, 0) == b'still'
        assert os.fstat(fd).st_nlink == 0
    finally:
        os.close(fd)
    os.unlink(fs.n('exec'))
    fs.check_trees()


def test_large_offsets(fs):
    p = fs.parity
    big = [(1 << 32) - 1, 1 << 32, (5 << 30) + 12345, (1 << 40) + 7]

    def fn(r):
        fd = os.open(r + '/huge', os.O_RDWR | os.O_CREAT, 0o644)
        try:
            out = []
            for off in big:
                out.append(os.pwrite(fd, b'@%d@' % off, off))
            for off in big:
                out.append(os.pread(fd, 30, off - 5))
            out.append(os.fstat(fd).st_size)
            out.append(os.lseek(fd, 0, os.SEEK_END))
            out.append(os.lseek(fd, 1 << 32, os.SEEK_HOLE))
            out.append(os.lseek(fd, (1 << 32) + 100, os.SEEK_DATA))
            os.ftruncate(fd, (1 << 33) + 1)
            out.append(os.fstat(fd).st_size)
            return out
        finally:
            os.close(fd)
    p('offsets past 4 GiB', fn)
    def past_max(r):
        fd = os.open(r + '/huge', os.O_WRONLY)
        try:
            return os.pwrite(fd, b'x', 1 << 62)
        finally:
            os.close(fd)
    p('past the maximum file size', past_max)
    p('truncate past the maximum', lambda r: os.truncate(r + '/huge',
                                                         1 << 62))
    util.assert_same_stat(fs.m('huge'), fs.s('huge'))


def test_exec_from_mount(fs):
    import shutil
    import subprocess
    for root in (fs.mnt, fs.native):
        shutil.copy('/bin/true', root + '/true')
        os.chmod(root + '/true', 0o755)
        with open(root + '/script', 'w') as f:
            f.write('#!/bin/sh\necho "$0 ran"\n')
        os.chmod(root + '/script', 0o755)
    assert subprocess.run([fs.m('true')]).returncode == 0
    r = subprocess.run([fs.m('script')], stdout=subprocess.PIPE)
    assert r.returncode == 0 and r.stdout == fs.m('script').encode() + \
        b' ran\n'
    assert util.call(subprocess.run, [fs.m('file')]) == Err(errno.EACCES)

    # a running program's file cannot be opened for writing (ETXTBSY)
    def busy(r):
        shutil.copy('/bin/sleep', r + '/sleep')
        os.chmod(r + '/sleep', 0o755)
        proc = subprocess.Popen([r + '/sleep', '600'])
        try:
            # exec is done once /proc shows the new program
            util.wait_for(lambda: os.path.realpath(
                '/proc/%d/exe' % proc.pid) == r + '/sleep', 'exec')
            res = util.call(os.open, r + '/sleep', os.O_WRONLY)
            if not isinstance(res, Err):
                os.close(res)
                res = 'opened'
        finally:
            proc.kill()
            proc.wait()
        fd = os.open(r + '/sleep', os.O_WRONLY)
        os.close(fd)
        return res
    assert fs.parity('write to a running program', busy) == \
        Err(errno.ETXTBSY)


_libc.telldir.restype = ctypes.c_long
_libc.telldir.argtypes = [ctypes.c_void_p]
_libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
_libc.rewinddir.argtypes = [ctypes.c_void_p]


def test_telldir_seekdir(fs):
    """Directory offsets handed out by readdir stay valid: seekdir back to
    a telldir position goes on with the same entries."""
    def fn(r):
        os.mkdir(r + '/offs')
        for i in range(700):
            open('%s/offs/entry-%04d-%s' % (r, i, 'y' * (i % 90)),
                 'w').close()
        d = _libc.opendir(os.fsencode(r + '/offs'))
        assert d

        def take(n):
            out = []
            for _ in range(n):
                ent = _libc.readdir64(d)
                if not ent:
                    break
                out.append(ent.contents.d_name)
            return out
        try:
            first = take(250)
            pos = _libc.telldir(d)
            a = take(300)
            _libc.seekdir(d, pos)
            b = take(300)
            rest = take(10000)
            _libc.rewinddir(d)
            again = take(10000)
            return (a == b, len(a), sorted(first + b + rest) ==
                    sorted(again), len(again))
        finally:
            _libc.closedir(d)
    got = fs.parity('telldir/seekdir', fn)
    assert got == (True, 300, True, 702)


def test_ofd_locks(fs):
    import struct

    def fn(r):
        a = os.open(r + '/file', os.O_RDWR)
        b = os.open(r + '/file', os.O_RDWR)
        try:
            lk = struct.pack('hhxxxxqqixxxx', fcntl.F_WRLCK, os.SEEK_SET,
                             0, 100, 0)
            fcntl.fcntl(a, fcntl.F_OFD_SETLK, lk)
            # another open file description of the same process conflicts
            r1 = util.call(fcntl.fcntl, b, fcntl.F_OFD_SETLK, lk)
            got = fcntl.fcntl(b, fcntl.F_OFD_GETLK, lk)
            t, _, start, ln, pid = struct.unpack('hhxxxxqqixxxx', got)
            os.close(a)
            a = -1
            r2 = fcntl.fcntl(b, fcntl.F_OFD_SETLK, lk) is not None
            return r1, (t, start, ln, pid), r2
        finally:
            if a >= 0:
                os.close(a)
            os.close(b)
    got = fs.parity('OFD locks', fn)
    assert isinstance(got[0], Err) and got[0].errno == errno.EAGAIN


def test_posix_acls(fs):
    """POSIX ACLs of the source (ext4 keeps them) work through the mount:
    set, read back, and the mode's group bits follow the ACL mask."""
    import subprocess

    def acl(r):
        out = []
        for args in (['-m', 'u:1234:rw-,g:99:r--', r + '/file'],
                     ['-d', '-m', 'u:1234:rwx', r + '/dir'],
                     ['-m', 'm::r--', r + '/file']):
            p = subprocess.run(['setfacl'] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            out.append(p.returncode)
        open(r + '/dir/inherits', 'w').close()
        for n in ('file', 'dir', 'dir/inherits'):
            p = subprocess.run(['getfacl', '-cn', r + '/' + n],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            out.append((p.returncode, p.stdout.decode()))
            out.append(util.lstat_summary(r + '/' + n))
        return out
    got = fs.parity('ACLs', acl)
    assert got[:3] == [0, 0, 0]
    assert 'user:1234:rw-' in got[3][1]


def test_vectored_splice_sendfile(fs):
    """preadv/pwritev, sendfile and splice (in both directions) through the
    mount give what they give natively."""
    def fn(r):
        out = []
        fd = os.open(r + '/vec', os.O_RDWR | os.O_CREAT, 0o644)
        try:
            bufs = [_pattern(i, n) for i, n in
                    enumerate((1, 4095, 70000, 3, 200000))]
            out.append(os.pwritev(fd, bufs, 1000))
            rb = [bytearray(n) for n in (10, 5000, 100000, 1 << 18)]
            out.append(os.preadv(fd, rb, 990))
            out.append([bytes(b) for b in rb])
            # sendfile from the file to another file
            dst = os.open(r + '/sent', os.O_RDWR | os.O_CREAT | os.O_TRUNC,
                          0o644)
            try:
                out.append(os.sendfile(dst, fd, 500, 150000))
                out.append(os.pread(dst, 1 << 20, 0))
            finally:
                os.close(dst)
            # splice from the file into a pipe, and from a pipe into a file
            pr, pw = os.pipe()
            try:
                n = os.splice(fd, pw, 60000, offset_src=2000)
                out.append(n)
                out.append(os.read(pr, n))
                os.write(pw, b'spliced in' * 1000)
                out.append(os.splice(pr, fd, 10000, offset_dst=300000))
            finally:
                os.close(pr)
                os.close(pw)
            out.append(os.fstat(fd).st_size)
            out.append(os.pread(fd, 20000, 295000))
        finally:
            os.close(fd)
        return out
    fs.parity('vectored, sendfile, splice', fn)
    fs.check_trees()


def test_o_tmpfile(fs):
    """O_TMPFILE works as natively (an unnamed file, given a name with
    linkat), or is refused with EOPNOTSUPP, which programs fall back
    from, and leaves nothing behind."""
    AT_EMPTY_PATH = 0x1000
    _libc.linkat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                             ctypes.c_char_p, ctypes.c_int]

    def fn(r):
        fd = os.open(r + '/dir', os.O_TMPFILE | os.O_RDWR, 0o640)
        try:
            os.write(fd, b'anonymous')
            st = os.fstat(fd)
            before = sorted(os.listdir(r + '/dir'))
            if _libc.linkat(fd, b'', util.AT_FDCWD,
                            os.fsencode(r + '/dir/named'),
                            AT_EMPTY_PATH) == -1:
                raise OSError(ctypes.get_errno(), 'linkat')
            with open(r + '/dir/named', 'rb') as f:
                return (st.st_nlink, util.stat_summary(st)[:2], before,
                        f.read(), os.stat(r + '/dir/named').st_nlink)
        finally:
            os.close(fd)
    a = util.call(fn, fs.mnt)
    b = util.call(fn, fs.native)
    assert not isinstance(b, Err), 'O_TMPFILE fails natively: %r' % b
    if a != b:
        assert a == Err(errno.EOPNOTSUPP), (a, b)
        assert sorted(os.listdir(fs.s('dir'))) == ['a', 'b', 'sub']
    else:
        fs.check_trees()


def test_atime(fs):
    """Reading updates the access time as natively (relatime: an atime
    older than the mtime moves), and an O_NOATIME read does not."""
    def fn(r, flags):
        p = r + '/dir/b'
        os.utime(p, ns=(10**9, 2 * 10**9))
        fd = os.open(p, os.O_RDONLY | flags)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.read(fd, 1 << 20)
        finally:
            os.close(fd)
        return os.stat(p).st_atime_ns > 2 * 10**9
    assert fs.parity('read', lambda r: fn(r, 0)) is True
    util.assert_same_stat(fs.m('dir/b'), fs.s('dir/b'))
    assert fs.parity('O_NOATIME read', lambda r: fn(r, os.O_NOATIME)) \
        is False
    util.assert_same_stat(fs.m('dir/b'), fs.s('dir/b'))


def test_immutable_and_append_only(fs):
    """Files made immutable (chattr +i) or append-only (+a) in the source
    refuse through the mount what they refuse natively.  With
    revalidate=never the kernel sends no open (man/hotfs.8): the refusal
    comes at the first write instead of at open, with the same errno, so
    there an open for writing also writes."""
    import subprocess
    flags = {'immutable': '+i', 'append': '+a'}
    for root in (fs.src, fs.native):
        for name, flag in flags.items():
            with open(root + '/' + name, 'w') as f:
                f.write('guarded\n')
            subprocess.run(['chattr', flag, root + '/' + name], check=True)
    try:
        p = fs.parity
        for name in flags:
            def op(flags_):
                def fn(r):
                    fd = os.open(r + '/' + name, flags_)
                    try:
                        if fs.mode == 'never':
                            os.write(fd, b'x')
                    finally:
                        os.close(fd)
                return fn
            p(name + ' write', op(os.O_WRONLY))
            def append(r):
                with open(r + '/' + name, 'a') as f:  # close flushes
                    return f.write('more\n')
            p(name + ' append', append)
            p(name + ' truncate', lambda r: os.truncate(r + '/' + name, 0))
            p(name + ' unlink', lambda r: os.unlink(r + '/' + name))
            p(name + ' rename', lambda r: os.rename(r + '/' + name,
                                                    r + '/x'))
            p(name + ' chmod', lambda r: os.chmod(r + '/' + name, 0o600))
            p(name + ' link', lambda r: os.link(r + '/' + name,
                                                r + '/' + name + '.l'))
            p(name + ' utime', lambda r: os.utime(r + '/' + name,
                                                  ns=(1, 1)))
            p(name + ' setxattr', lambda r: os.setxattr(
                r + '/' + name, 'user.x', b'1'))
            p(name + ' read', lambda r: open(r + '/' + name).read())
        fs.check_trees()
    finally:
        for root in (fs.src, fs.native):
            for name in flags:
                subprocess.run(['chattr', '-i', '-a', root + '/' + name])


def test_unix_socket(fs):
    """A unix socket bound in the mount is a socket in the source and
    carries a connection, as natively."""
    import socket

    def fn(r):
        path = r + '/dir/sock'
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            srv.bind(path)
            srv.listen(1)
            cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                cli.connect(path)
                conn, _ = srv.accept()
                with conn:
                    cli.sendall(b'over the socket')
                    got = conn.recv(100)
            finally:
                cli.close()
            return got, util.lstat_summary(path)
        finally:
            srv.close()
    got = fs.parity('unix socket', fn)
    assert got[0] == b'over the socket'
    assert stat.S_ISSOCK(os.lstat(fs.s('dir/sock')).st_mode)
    fs.check_trees()
