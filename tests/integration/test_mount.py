# SPDX-License-Identifier: GPL-2.0-or-later
"""Mounting and ending hotfs: through mount(8) and an fstab line (which
runs mount.fuse3, which runs "hotfs" from PATH), with mount -t fuse.hotfs,
daemonized (no -f), and ended by umount, SIGTERM and SIGINT.

The examples shipped in contrib/ (the fstab line, also in the README and
the man page, and the systemd mount unit) mount nosuid,nodev and after
the cachedir's and the source's filesystems, and the fstab line mounts
as written.  No file of the repository cites a document outside it.

A daemonized hotfs is not our child; this process makes itself a child
subreaper (prctl PR_SET_CHILD_SUBREAPER) so that the orphaned daemon is
re-parented to it and its exit status can still be checked.
"""
import configparser
import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import stat
import subprocess
import time

import pytest

import util
from util import Err

PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)


@pytest.fixture
def subreaper():
    assert _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    try:
        yield
    finally:
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def wait_exit_status(pid, timeout=util.TIMEOUT):
    """Exit status of pid, which must have become our child (subreaper)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            wpid, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pytest.fail('hotfs (pid %d) is not a child of the test: '
                        'cannot see its exit status' % pid)
        if wpid == pid:
            return status
        if time.monotonic() > deadline:
            pytest.fail('hotfs (pid %d) did not exit within %.0fs'
                        % (pid, timeout))
        time.sleep(0.02)


def the_daemon(mnt):
    pids = util.daemon_pids(mnt)
    assert len(pids) == 1, 'hotfs processes for %s: %r' % (mnt, pids)
    return pids[0]


def check_works(ws):
    with open(os.path.join(ws.mnt, 'via-mount'), 'w') as f:
        f.write('hello')
    with open(os.path.join(ws.src, 'via-mount')) as f:
        assert f.read() == 'hello'
    with open(os.path.join(ws.src, 'from-src'), 'w') as f:
        f.write('there')
    with open(os.path.join(ws.mnt, 'from-src')) as f:
        assert f.read() == 'there'


SBIN_LINK = '/usr/local/sbin/hotfs'
SBIN_LOCK = '/run/lock/hotfs-itest-sbin.lock'


@contextlib.contextmanager
def hotfs_on_default_path(ws):
    """Make "hotfs" in the default PATH the build's binary while mount(8)
    runs.

    mount(8) drops PATH from the environment of its helpers, so
    mount.fuse3's "/bin/sh -c hotfs ..." searches the shell's default
    path, whatever PATH the test sets.  A symlink in /usr/local/sbin (the
    first directory of that path) is made for the length of the mount
    command only, under a lock so that concurrent runs of the suite take
    turns, and removed at once."""
    binary = os.path.realpath(util.hotfs_bin())
    with open(SBIN_LOCK, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = False
        try:
            if os.path.lexists(SBIN_LINK):
                if os.path.realpath(SBIN_LINK) != binary:
                    pytest.fail('%s exists and is not this build\'s hotfs: '
                                'remove it to run this test' % SBIN_LINK)
            else:
                os.makedirs(os.path.dirname(SBIN_LINK), exist_ok=True)
                os.symlink(binary, SBIN_LINK)
                made = True
            env = dict(os.environ)
            # what a user's PATH would say, and does not reach hotfs anyway
            env['PATH'] = os.path.dirname(binary) + ':' + \
                env.get('PATH', '/usr/bin:/bin')
            yield env
        finally:
            if made:
                os.unlink(SBIN_LINK)


def mount_cmd(ws, args, fstype="fuse.hotfs"):
    ws.mounts.append(ws.mnt)
    with hotfs_on_default_path(ws) as env:
        r = subprocess.run(args, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=30)
    assert r.returncode == 0, '%r: %s' % (args, r.stdout.decode())
    util.wait_for_mount(None, ws.mnt)
    entry = util.mount_entry(ws.mnt)
    assert entry[2] == fstype, entry
    # the daemon that answers is this build's
    pid = the_daemon(ws.mnt)
    assert os.readlink('/proc/%d/exe' % pid) == \
        os.path.realpath(util.hotfs_bin())
    return pid


def umount_and_check(ws, pid, cmd):
    r = subprocess.run(cmd + [ws.mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    assert r.returncode == 0, r.stdout.decode()
    status = wait_exit_status(pid)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, \
        'hotfs ended with wait status %#x' % status
    assert not util.is_mounted(ws.mnt)


def test_fstab(ws, subreaper):
    cache = os.path.join(ws.root, 'fstab-cache')
    fstab = os.path.join(ws.root, 'fstab')
    with open(fstab, 'w') as f:
        f.write('# test fstab\n%s %s fuse.hotfs cachedir=%s,nofail,_netdev,'
                'noauto 0 0\n' % (ws.src, ws.mnt, cache))
    pid = mount_cmd(ws, ['mount', '-T', fstab, ws.mnt])
    check_works(ws)
    assert os.path.isdir(cache)
    umount_and_check(ws, pid, ['umount'])


REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), '..', '..'))


def repo_text(path):
    with open(os.path.join(REPO, path)) as f:
        return f.read()


def fstab_example():
    """contrib/fstab.example's one entry, as its fields."""
    lines = [l for l in repo_text('contrib/fstab.example').splitlines()
             if l.strip() and not l.lstrip().startswith('#')]
    assert len(lines) == 1, lines
    return lines[0].split()


def opts_of(field):
    return field.split(',')


def cachedir_of(opts):
    dirs = [o[len('cachedir='):] for o in opts if o.startswith('cachedir=')]
    assert len(dirs) == 1, opts
    return dirs[0]


def test_examples_mount_safely():
    """The fstab example and the systemd unit: nosuid,nodev, and the
    cachedir's and the source's filesystems mounted first (without the
    cachedir's, hotfs would make a new, empty cache beneath it)."""
    fields = fstab_example()
    assert len(fields) == 6 and fields[2] == 'fuse.hotfs', fields
    opts = opts_of(fields[3])
    assert 'nosuid' in opts and 'nodev' in opts, opts
    first = [o[len('x-systemd.requires-mounts-for='):] for o in opts
             if o.startswith('x-systemd.requires-mounts-for=')]
    assert sorted(first) == sorted([cachedir_of(opts), fields[0]]), opts
    # the README and the man page show the same line
    line = ' '.join(fields)
    for doc in ('README.md', 'man/hotfs.8'):
        text = repo_text(doc).replace('\\-', '-')
        assert line in [' '.join(l.split()) for l in text.splitlines()], \
            '%s does not show the fstab example: %s' % (doc, line)

    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str
    unit.read_string(repo_text('contrib/mnt-fast\\x2dview.mount'))
    opts = opts_of(unit['Mount']['Options'])
    assert 'nosuid' in opts and 'nodev' in opts, opts
    first = unit['Unit'].get('RequiresMountsFor', '').split()
    for path in (cachedir_of(opts), unit['Mount']['What']):
        assert path in first, 'RequiresMountsFor=%s lacks %s' % (
            ' '.join(first), path)


def test_no_citation_outside_repo():
    """A reader has only the repository: no file in it cites the design
    document that lived outside it."""
    name = ('DESIGN' + '.md').encode()     # not this file's own hit
    r = subprocess.run(['git', '-C', REPO, 'ls-files', '-z'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        pytest.skip('not a git checkout: %s' % r.stderr.decode().strip())
    files = [f for f in r.stdout.decode().split('\0') if f]
    assert files
    citing = []
    for f in files:
        path = os.path.join(REPO, f)
        if not os.path.isfile(path):
            continue
        with open(path, 'rb') as fh:
            if name in fh.read():
                citing.append(f)
    assert not citing, 'cite %s: %s' % (name.decode(), citing)


def test_fstab_allow_other(ws, subreaper):
    """contrib/fstab.example's line mounts as written (its paths replaced):
    nosuid and nodev in force, and allow_other lets other users in."""
    fields = fstab_example()
    paths = {fields[0]: ws.src, fields[1]: ws.mnt,
             cachedir_of(opts_of(fields[3])): ws.cache}
    opts = ','.join(
        o.split('=', 1)[0] + '=' + paths[o.split('=', 1)[1]]
        if '=' in o and o.split('=', 1)[1] in paths else o
        for o in opts_of(fields[3]))
    assert 'allow_other' in opts_of(opts), opts
    fstab = os.path.join(ws.root, 'fstab')
    with open(fstab, 'w') as f:
        f.write(' '.join([ws.src, ws.mnt, fields[2], opts] + fields[4:])
                + '\n')
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('for everyone')
    os.chmod(os.path.join(ws.src, 'f'), 0o644)
    pid = mount_cmd(ws, ['mount', '-T', fstab, ws.mnt])
    flags = util.mount_entry(ws.mnt)[3].split(',')
    assert 'nosuid' in flags and 'nodev' in flags, flags

    def read(p):
        with open(p) as f:
            return f.read()
    assert util.run_as(65534, 65534, read,
                       os.path.join(ws.mnt, 'f')) == 'for everyone'
    umount_and_check(ws, pid, ['fusermount3', '-u'])


def test_mount_t(ws, subreaper):
    pid = mount_cmd(ws, ['mount', '-t', 'fuse.hotfs', ws.src, ws.mnt, '-o',
                         'cachedir=' + ws.cache])
    check_works(ws)
    umount_and_check(ws, pid, ['umount'])


def test_mount_t_fuse_prog(ws, subreaper):
    """The older form: -t fuse with PROGRAM#SOURCE (no PATH involved)."""
    pid = mount_cmd(ws, ['mount', '-t', 'fuse',
                         util.hotfs_bin() + '#' + ws.src, ws.mnt, '-o',
                         'cachedir=' + ws.cache + ',noatime'])
    check_works(ws)
    umount_and_check(ws, pid, ['fusermount3', '-u'])


def test_daemonized(ws, subreaper):
    """Without -f hotfs returns once the mount is there (and does not keep
    our stdout/stderr open), and umount ends it with exit 0."""
    args = [util.hotfs_bin(), ws.src, ws.mnt, '-o', 'cachedir=' + ws.cache]
    ws.mounts.append(ws.mnt)
    try:
        r = subprocess.run(args, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=util.TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail('hotfs without -f did not return (or kept its '
                    'stdout/stderr open)')
    assert r.returncode == 0, r.stderr.decode()
    # mounted when it returns: no waiting
    assert util.is_mounted(ws.mnt)
    pid = the_daemon(ws.mnt)
    # a daemon leaves its session and its working directory
    assert os.getsid(pid) == pid
    assert os.readlink('/proc/%d/cwd' % pid) == '/'
    check_works(ws)
    umount_and_check(ws, pid, ['umount'])


def test_daemonized_sigterm(ws, subreaper):
    args = [util.hotfs_bin(), ws.src, ws.mnt, '-o', 'cachedir=' + ws.cache]
    ws.mounts.append(ws.mnt)
    r = subprocess.run(args, stdin=subprocess.DEVNULL, timeout=util.TIMEOUT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert r.returncode == 0
    pid = the_daemon(ws.mnt)
    check_works(ws)
    os.kill(pid, signal.SIGTERM)
    status = wait_exit_status(pid)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, \
        'hotfs ended with wait status %#x' % status
    util.wait_for(lambda: not util.is_mounted(ws.mnt), 'the mount to go')


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT],
                         ids=['SIGTERM', 'SIGINT'])
def test_signal_ends_cleanly(ws, sig):
    proc = ws.start()
    check_works(ws)
    proc.send_signal(sig)
    try:
        rc = proc.wait(timeout=util.TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail('hotfs ignored %s' % signal.Signals(sig).name)
    assert rc == 0
    util.wait_for(lambda: not util.is_mounted(ws.mnt), 'the mount to go')
    assert not os.path.ismount(ws.mnt)
    # the source is untouched by the shutdown
    assert sorted(os.listdir(ws.src)) == ['from-src', 'via-mount']


def test_sigterm_while_busy(ws):
    """SIGTERM while a file is open and a process works in the mount: the
    daemon still exits 0 and the mount goes; the open file then fails
    cleanly instead of hanging."""
    proc = ws.start()
    check_works(ws)
    fd = os.open(os.path.join(ws.mnt, 'via-mount'), os.O_RDWR)
    child = subprocess.Popen(['sleep', '600'], cwd=ws.mnt)
    try:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=util.TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail('hotfs did not exit on SIGTERM with a busy mount')
        assert rc == 0
        util.wait_for(lambda: not util.is_mounted(ws.mnt), 'the mount to go')
        r = util.call(os.pread, fd, 5, 0)
        assert isinstance(r, util.Err) and r.errno in (errno.ENOTCONN,
                                                       errno.EIO), r
    finally:
        util.call(os.close, fd)     # ENOTCONN: the mount is gone
        child.kill()
        child.wait()


def test_unmount_by_umount(ws):
    proc = ws.start()
    check_works(ws)
    r = subprocess.run(['umount', ws.mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    assert r.returncode == 0, r.stdout
    assert proc.wait(timeout=util.TIMEOUT) == 0
    assert not util.is_mounted(ws.mnt)


def test_remount_same_cachedir(ws):
    """Unmount and mount again over the same cache store: data intact."""
    proc = ws.start()
    check_works(ws)
    for i in range(3):
        with open(os.path.join(ws.mnt, 'via-mount'), 'rb') as f:
            f.read()
    ws.stop(proc)
    proc = ws.start()
    with open(os.path.join(ws.mnt, 'via-mount')) as f:
        assert f.read() == 'hello'
    ws.stop(proc)


def test_mount_unmount_cycles(ws):
    """Mounting again at once over the same cache store, ten times, each
    time with some I/O: every daemon starts, serves and exits 0, and no
    start has to wait for the previous one (a start that finds the
    store's lock still held retries for up to 5 s, and says so)."""
    for i in range(10):
        proc = ws.start()
        with open(os.path.join(ws.mnt, 'f%d' % i), 'w') as f:
            f.write('cycle %d' % i)
        for j in range(i + 1):
            with open(os.path.join(ws.mnt, 'f%d' % j)) as f:
                assert f.read() == 'cycle %d' % j
        ws.stop(proc)
        assert 'for the previous daemon' not in ws.log_text(proc), i
    assert sorted(os.listdir(ws.src)) == ['f%d' % i for i in range(10)]


@contextlib.contextmanager
def source_on_tmpfs(ws, opts):
    """ws.src as a tmpfs mounted with opts, unmounted (lazily: a daemon
    that is still exiting may hold it) at the end."""
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=16m,mode=0755,'
                        + opts, 'tmpfs', ws.src], stderr=subprocess.PIPE)
    if r.returncode != 0:
        pytest.fail('cannot mount a tmpfs: %s' % r.stderr.decode())
    try:
        yield
    finally:
        for p, mnt, _ in ws.daemons:
            util.cleanup_mount(p, mnt)
        for mnt in ws.mounts:
            util.cleanup_mount(None, mnt)
        subprocess.run(['umount', '-l', ws.src])


def setuid_id_and_zero(d):
    """A setuid-root copy of id(1) and a device node (/dev/zero's) in d."""
    idc = os.path.join(d, 'id')
    with open('/usr/bin/id', 'rb') as f, open(idc, 'wb') as o:
        o.write(f.read())
    os.chown(idc, 0, 0)
    os.chmod(idc, 0o4755)
    zero = os.path.join(d, 'zero')
    os.mknod(zero, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    os.chmod(zero, 0o666)
    return idc, zero


def euid_of(idc):
    """The effective uid id(1) at idc reports, run as user nobody."""
    r = subprocess.run([idc, '-u'], user=65534, group=65534,
                       extra_groups=[], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr.decode()
    return int(r.stdout)


def open_as_nobody(path):
    def opened(p):
        os.close(os.open(p, os.O_RDONLY))
        return 'opened'
    return util.run_as(65534, 65534, opened, path)


def test_mount_t_forbids_what_the_source_forbids(ws, subreaper):
    """mount(8) passes suid,dev for root; over a source mounted
    nosuid,nodev the mount is nosuid,nodev all the same: user nobody runs
    a setuid-root binary through it without privilege and cannot open a
    device node, as on the source itself."""
    with source_on_tmpfs(ws, 'nosuid,nodev'):
        idc, zero = setuid_id_and_zero(ws.src)
        # what the source itself allows
        assert euid_of(idc) == 65534
        assert open_as_nobody(zero) == Err(errno.EACCES)
        pid = mount_cmd(ws, ['mount', '-t', 'fuse.hotfs', ws.src, ws.mnt,
                             '-o', 'cachedir=%s,allow_other' % ws.cache])
        flags = util.mount_entry(ws.mnt)[3].split(',')
        assert 'nosuid' in flags and 'nodev' in flags, flags
        m_id, m_zero = (os.path.join(ws.mnt, n) for n in ('id', 'zero'))
        assert os.stat(m_id).st_mode & stat.S_ISUID
        assert euid_of(m_id) == 65534
        assert open_as_nobody(m_zero) == Err(errno.EACCES)
        umount_and_check(ws, pid, ['umount'])


def test_explicit_suid_dev_do_not_win_over_the_source(ws):
    """Run directly with -o suid,dev over a nosuid,nodev,noexec source
    that is read-only: the mount is nosuid,nodev,noexec,ro."""
    with source_on_tmpfs(ws, 'nosuid,nodev,noexec'):
        idc, _ = setuid_id_and_zero(ws.src)
        subprocess.run(['mount', '-o', 'remount,ro', ws.src], check=True)
        proc = ws.start(opts='suid,dev,exec,rw,allow_other')
        flags = util.mount_entry(ws.mnt)[3].split(',')
        for f in ('nosuid', 'nodev', 'noexec', 'ro'):
            assert f in flags, flags
        assert util.call(subprocess.run,
                         [os.path.join(ws.mnt, 'id')]) == Err(errno.EACCES)
        # the status's options say ro
        opts = util.hotfs_stats(ws.mnt)['options'].split(',')
        assert 'ro' in opts, opts
        ws.stop(proc)
        # writeback over a read-only source: refused, in one line
        r = subprocess.run([util.hotfs_bin(), ws.src, ws.mnt, '-o',
                            'cachedir=%s,writemode=writeback' % ws.cache],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=util.TIMEOUT)
        assert r.returncode == 1
        err = r.stderr.decode()
        assert err.count('\n') == 1 and 'read-only source' in err, err
        assert not util.is_mounted(ws.mnt)


def test_a_mount_below_the_source_counts(ws):
    """The tree crosses into the mounts below its root: a nosuid,nodev
    one there makes the whole mount nosuid,nodev."""
    sub = os.path.join(ws.src, 'sub')
    os.mkdir(sub)
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o',
                        'size=1m,nosuid,nodev', 'tmpfs', sub],
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        pytest.fail('cannot mount a tmpfs: %s' % r.stderr.decode())
    try:
        idc, zero = setuid_id_and_zero(sub)
        proc = ws.start(opts='suid,dev,allow_other')
        flags = util.mount_entry(ws.mnt)[3].split(',')
        assert 'nosuid' in flags and 'nodev' in flags, flags
        assert euid_of(os.path.join(ws.mnt, 'sub', 'id')) == 65534
        assert open_as_nobody(os.path.join(ws.mnt, 'sub', 'zero')) == \
            Err(errno.EACCES)
        ws.stop(proc)
    finally:
        for p, mnt, _ in ws.daemons:
            util.cleanup_mount(p, mnt)
        subprocess.run(['umount', '-l', sub])
