# SPDX-License-Identifier: GPL-2.0-or-later
"""hotfs mounted by root with allow_other(,default_permissions) and used by
an unprivileged user (uid/gid 65534): files it creates belong to it in the
source, it is refused what a local filesystem refuses it, and a few
operations in world-writable directories behave as natively.  Each
operation runs in a child process with the user's credentials, through
the mount and on the native directory.
"""
import errno
import os
import stat

import pytest

import util
from util import Err

NOBODY = 65534
OTHER_GID = 1234        # a group nobody is not a member of


def setup_tree(root):
    os.chmod(root, 0o755)
    os.mkdir(root + '/pub')
    os.chmod(root + '/pub', 0o777)
    os.mkdir(root + '/sticky')
    os.chmod(root + '/sticky', 0o1777)
    for name, mode in (('sticky/rootfile', 0o666), ('rootfile', 0o644),
                       ('secret', 0o600), ('pub/suid', 0o4777),
                       ('pub/rootfile', 0o644)):
        with open(root + '/' + name, 'w') as f:
            f.write('root data\n')
        os.chmod(root + '/' + name, mode)
    os.mkdir(root + '/rootdir')
    os.mkdir(root + '/sgid')
    os.chown(root + '/sgid', 0, OTHER_GID)
    os.chmod(root + '/sgid', 0o2777)
    with open(root + '/mine', 'w') as f:
        f.write('nobody owns this\n')
    os.chown(root + '/mine', NOBODY, NOBODY)
    os.setxattr(root + '/rootfile', 'user.k', b'v')


# allow_other alone is what the design's fstab example says: permissions
# must be enforced then too (hotfs adds default_permissions and runs each
# request with the caller's fs credentials)
@pytest.fixture(params=['allow_other,default_permissions', 'allow_other'])
def ufs(ws, request):
    setup_tree(ws.src)
    setup_tree(ws.native)
    proc = ws.start(opts=request.param)
    ws.proc = proc
    yield ws
    if proc.poll() is not None or not util.is_mounted(ws.mnt):
        pytest.fail('hotfs died during the test (exit %r)' % proc.poll())
    ws.stop(proc)


def as_nobody(ws, desc, fn):
    a = util.run_as(NOBODY, NOBODY, fn, ws.mnt)
    b = util.run_as(NOBODY, NOBODY, fn, ws.native)
    assert a == b, '%s as uid %d: through the mount %r, natively %r' % (
        desc, NOBODY, a, b)
    return a


def owner(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid


def test_created_files_belong_to_the_user(ufs):
    ws = ufs

    def create(r):
        out = []
        with open(r + '/pub/new', 'w') as f:
            f.write('hello')
            st = os.fstat(f.fileno())
            out.append((st.st_uid, st.st_gid))
        os.mkdir(r + '/pub/d')
        os.symlink('new', r + '/pub/l')
        os.mkfifo(r + '/pub/fifo')
        os.mknod(r + '/pub/reg', stat.S_IFREG | 0o600)
        os.link(r + '/pub/new', r + '/pub/hard')
        for n in ('new', 'd', 'l', 'fifo', 'reg', 'hard'):
            out.append(util.lstat_summary(r + '/pub/' + n))
        return out
    got = as_nobody(ws, 'create', create)
    assert got[0] == (NOBODY, NOBODY)
    for n in ('new', 'd', 'l', 'fifo', 'reg', 'hard'):
        assert owner(ws.src + '/pub/' + n) == (NOBODY, NOBODY), n
        util.assert_same_stat(ws.mnt + '/pub/' + n, ws.src + '/pub/' + n)

    # in a setgid directory the group comes from the directory
    def sgid(r):
        with open(r + '/sgid/f', 'w') as f:
            f.write('x')
        os.mkdir(r + '/sgid/d')
        return util.lstat_summary(r + '/sgid/f'), \
            util.lstat_summary(r + '/sgid/d')
    got = as_nobody(ws, 'setgid dir', sgid)
    assert owner(ws.src + '/sgid/f') == (NOBODY, OTHER_GID)
    assert owner(ws.src + '/sgid/d') == (NOBODY, OTHER_GID)
    assert os.stat(ws.src + '/sgid/d').st_mode & stat.S_ISGID

    # chmod g+s by a non-member drops the bit
    as_nobody(ws, 'chmod g+s outside the group', lambda r: (
        os.chmod(r + '/sgid/f', 0o2755), util.lstat_summary(r + '/sgid/f')))
    assert not os.stat(ws.src + '/sgid/f').st_mode & stat.S_ISGID


def test_permission_denied(ufs):
    ws = ufs
    p = lambda desc, fn: as_nobody(ws, desc, fn)     # noqa: E731
    EACCES, EPERM = Err(errno.EACCES), Err(errno.EPERM)

    def w(name, flags=os.O_WRONLY):
        def fn(r):
            fd = os.open(r + '/' + name, flags, 0o644)
            os.close(fd)
            return 'opened'
        return fn
    assert p('write a root 0644 file', w('rootfile')) == EACCES
    assert p('read a root 0600 file', w('secret', os.O_RDONLY)) == EACCES
    assert p('read a root 0644 file', w('rootfile', os.O_RDONLY)) == 'opened'
    assert p('create in a root dir', w('rootdir/x', os.O_CREAT |
                                       os.O_WRONLY)) == EACCES
    assert p('mkdir in a root dir', lambda r: os.mkdir(
        r + '/rootdir/x')) == EACCES
    assert p('truncate a root file', lambda r: os.truncate(
        r + '/rootfile', 0)) == EACCES
    assert p('chmod a root file', lambda r: os.chmod(
        r + '/rootfile', 0o666)) == EPERM
    assert p('chown own file to root', lambda r: os.chown(
        r + '/mine', 0, 0)) == EPERM
    assert p('chown own file to a foreign group', lambda r: os.chown(
        r + '/mine', -1, OTHER_GID)) == EPERM
    p('chown own file to own ids', lambda r: (os.chown(
        r + '/mine', NOBODY, NOBODY), util.lstat_summary(r + '/mine')))
    assert p('utime now, not owner, no write', lambda r: os.utime(
        r + '/rootfile')) == EACCES
    assert p('utime explicit, not owner', lambda r: os.utime(
        r + '/rootfile', ns=(1, 1))) == EPERM
    assert p('utime now, world-writable', lambda r: os.utime(
        r + '/sticky/rootfile')) is None
    assert p('unlink in a sticky dir', lambda r: os.unlink(
        r + '/sticky/rootfile')) == EPERM
    assert p('rename in a sticky dir', lambda r: os.rename(
        r + '/sticky/rootfile', r + '/sticky/x')) == EPERM
    assert p('unlink in a root dir', lambda r: os.unlink(
        r + '/rootfile')) == EACCES
    assert p('rename into a root dir', lambda r: os.rename(
        r + '/mine', r + '/rootdir/mine')) == EACCES
    p('hard link to a root file', lambda r: os.link(
        r + '/pub/rootfile', r + '/pub/hl'))
    p('setxattr on a root file', lambda r: os.setxattr(
        r + '/rootfile', 'user.x', b'1'))
    p('getxattr on a root file', lambda r: os.getxattr(
        r + '/rootfile', 'user.k'))
    p('getxattr on a root 0600 file', lambda r: os.getxattr(
        r + '/secret', 'user.k'))
    p('setxattr trusted', lambda r: os.setxattr(
        r + '/mine', 'trusted.x', b'1'))
    p('setxattr on own file', lambda r: (os.setxattr(
        r + '/mine', 'user.x', b'1'), os.getxattr(r + '/mine', 'user.x')))
    p('mknod a device', lambda r: os.mknod(
        r + '/pub/null', stat.S_IFCHR | 0o666, os.makedev(1, 3)))
    for name in ('rootfile', 'secret', 'mine', 'rootdir', 'pub', 'sticky'):
        for mode in (os.R_OK, os.W_OK, os.X_OK):
            p('access %s %d' % (name, mode),
              lambda r: os.access(r + '/' + name, mode))
    assert not util.run_as(NOBODY, NOBODY, os.access, ws.mnt + '/rootfile',
                           os.W_OK)
    # nothing above reached the source
    with open(ws.src + '/rootfile') as f:
        assert f.read() == 'root data\n'
    assert os.path.exists(ws.src + '/sticky/rootfile')
    assert os.listdir(ws.src + '/rootdir') == []
    assert owner(ws.src + '/mine') == (NOBODY, NOBODY)


def test_world_writable_parity(ufs):
    ws = ufs

    def ops(r):
        d = r + '/pub'
        out = []
        with open(d + '/a', 'w') as f:
            f.write('a' * 1000)
        os.chmod(d + '/a', 0o640)
        os.truncate(d + '/a', 10)
        os.utime(d + '/a', ns=(10**9, 2 * 10**9))
        os.rename(d + '/a', d + '/b')
        os.setxattr(d + '/b', 'user.u', b'nobody')
        out.append(util.lstat_summary(d + '/b', times=True))
        out.append(os.getxattr(d + '/b', 'user.u'))
        out.append(sorted(os.listdir(d)))
        # writing a setuid root file it may write drops the setuid bit
        with open(d + '/suid', 'a') as f:
            f.write('more')
        out.append(util.lstat_summary(d + '/suid'))
        # the sticky dir lets anyone create, and only the owner remove
        with open(r + '/sticky/own', 'w') as f:
            f.write('x')
        os.rename(r + '/sticky/own', r + '/sticky/own2')
        os.unlink(r + '/sticky/own2')
        out.append(sorted(os.listdir(r + '/sticky')))
        out.append(util.call(os.rmdir, d))
        return out
    as_nobody(ws, 'world-writable dir', ops)
    assert owner(ws.src + '/pub/b') == (NOBODY, NOBODY)
    assert not os.stat(ws.src + '/pub/suid').st_mode & stat.S_ISUID
    for n in ('pub/b', 'pub/suid', 'pub', 'sticky'):
        util.assert_same_stat(ws.mnt + '/' + n, ws.src + '/' + n)


def test_without_allow_other_others_are_refused(ws):
    with open(ws.src + '/f', 'w') as f:
        f.write('x')
    os.chmod(ws.src + '/f', 0o644)
    proc = ws.start()
    assert util.run_as(NOBODY, NOBODY, os.stat, ws.mnt + '/f') == \
        Err(errno.EACCES)
    assert os.stat(ws.mnt + '/f').st_size == 1      # root still can
    ws.stop(proc)


def test_supplementary_groups(ufs):
    """Access granted through a supplementary group works through the
    mount as natively (the daemon acts with the caller's groups too)."""
    ws = ufs
    for root in (ws.src, ws.native):
        os.mkdir(root + '/team')
        os.chown(root + '/team', 0, OTHER_GID)
        os.chmod(root + '/team', 0o770)
        with open(root + '/team/shared', 'w') as f:
            f.write('team data\n')
        os.chown(root + '/team/shared', 0, OTHER_GID)
        os.chmod(root + '/team/shared', 0o660)

    def ops(r):
        out = []
        with open(r + '/team/shared', 'a') as f:
            f.write('appended by a member\n')
        with open(r + '/team/new', 'w') as f:
            f.write('x')
        os.chown(r + '/team/new', -1, OTHER_GID)
        os.chmod(r + '/team/new', 0o2660)
        os.mkdir(r + '/team/d')
        # the owner may give a file to a group it belongs to, no other
        with open(r + '/pub/given', 'w') as f:
            f.write('g')
        os.chown(r + '/pub/given', -1, OTHER_GID)
        out.append(util.call(os.chown, r + '/pub/given', -1, 4321))
        out.append(util.lstat_summary(r + '/pub/given'))
        out.append(util.lstat_summary(r + '/team/new'))
        out.append(util.lstat_summary(r + '/team/d'))
        out.append(sorted(os.listdir(r + '/team')))
        with open(r + '/team/shared') as f:
            out.append(f.read())
        return out
    a = util.run_as(NOBODY, NOBODY, ops, ws.mnt, groups=[OTHER_GID])
    b = util.run_as(NOBODY, NOBODY, ops, ws.native, groups=[OTHER_GID])
    assert a == b
    assert not isinstance(a, Err), a
    assert owner(ws.src + '/team/new') == (NOBODY, OTHER_GID)
    assert os.stat(ws.src + '/team/new').st_mode & stat.S_ISGID
    # and without the group, the same user is refused
    assert util.run_as(NOBODY, NOBODY, os.listdir, ws.mnt + '/team') == \
        Err(errno.EACCES)


def test_acl_grants_and_denies(ufs):
    """Access that a POSIX ACL grants or denies (beyond the mode bits) is
    granted or denied through the mount as natively."""
    import subprocess
    ws = ufs
    for root in (ws.src, ws.native):
        os.mkdir(root + '/acldir')           # root 0755
        subprocess.run(['setfacl', '-m', 'u:%d:rwx' % NOBODY,
                        root + '/acldir'], check=True)
        with open(root + '/aclfile', 'w') as f:
            f.write('acl\n')                 # root 0644, readable by all
        subprocess.run(['setfacl', '-m', 'u:%d:---' % NOBODY,
                        root + '/aclfile'], check=True)

    def ops(r):
        out = []
        out.append(util.call(lambda: open(r + '/acldir/mine', 'w').close()))
        out.append(util.call(os.listdir, r + '/acldir'))
        out.append(util.call(lambda: open(r + '/aclfile').read()))
        out.append(os.access(r + '/aclfile', os.R_OK))
        out.append(os.access(r + '/acldir', os.W_OK))
        return out
    got = as_nobody(ws, 'ACL', ops)
    assert got[0] is None and got[2] == Err(errno.EACCES), got
