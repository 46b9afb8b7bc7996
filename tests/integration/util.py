# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the hotfs integration tests (in the style of sshfs's
test/util.py): start and stop a daemon, wait for conditions with a
deadline (never a fixed sleep), compare calls against a native directory
(mergerfs's compare_calls), and small ctypes wrappers for the syscalls
Python's os module does not expose.
"""
import ctypes
import ctypes.util
import errno
import os
import pickle
import shutil
import signal
import stat
import subprocess
import time

import pytest

HOTFS_BIN = os.environ.get('HOTFS_BIN', '')

#: how long a condition (a mount appearing, a daemon exiting) may take
TIMEOUT = float(os.environ.get("HOTFS_TEST_TIMEOUT", "60"))


def hotfs_bin():
    if not HOTFS_BIN or not os.access(HOTFS_BIN, os.X_OK):
        pytest.fail('HOTFS_BIN=%r is not an executable (run through '
                    '"meson test --suite integration")' % HOTFS_BIN)
    return HOTFS_BIN


PR_CAPBSET_DROP = 24
CAP_SYS_RESOURCE = 24


def daemon_wrap():
    """HOTFS_WRAP: a program every daemon is started through (meson's
    integration-no-uring run starts them under no_uring, which refuses
    io_uring as a container's seccomp profile does)."""
    w = os.environ.get('HOTFS_WRAP')
    return [w] if w else []


def drop_cap_sys_resource():
    """In a child about to exec: drop CAP_SYS_RESOURCE from the bounding
    set, so that the program cannot raise its hard rlimits (a daemon
    started by an unprivileged service manager, or in a container)."""
    libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, 'prctl(PR_CAPBSET_DROP): ' + os.strerror(e))


def wait_for(cond, what, timeout=TIMEOUT, interval=0.01):
    """Poll cond() until it is true, fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return
        if time.monotonic() > deadline:
            pytest.fail('timed out after %.1fs waiting for %s'
                        % (timeout, what))
        time.sleep(interval)
        interval = min(interval * 2, 0.1)


def _unescape(field):
    """/proc/self/mounts escapes space, tab, newline and backslash."""
    return field.replace('\\040', ' ').replace('\\011', '\t') \
        .replace('\\012', '\n').replace('\\134', '\\')


def mount_entry(mnt):
    """The last /proc/self/mounts entry (fields unescaped) for mnt, or
    None."""
    mnt = os.path.realpath(mnt)
    found = None
    with open('/proc/self/mounts') as f:
        for line in f:
            fields = [_unescape(x) for x in line.split()]
            if fields[1] == mnt:
                found = fields
    return found


def is_mounted(mnt):
    """True if mnt is a mount point listed in /proc/self/mounts.

    os.path.ismount() stats the mount point, which hangs or fails on a
    dead FUSE mount; the mount table does not."""
    return mount_entry(mnt) is not None


def wait_for_mount(proc, mnt, timeout=TIMEOUT):
    """Wait until mnt is a mount point; fail if the daemon exits first."""
    deadline = time.monotonic() + timeout
    interval = 0.01
    while True:
        if is_mounted(mnt) and os.path.ismount(mnt):
            return
        rc = proc.poll() if proc is not None else None
        if rc is not None:
            pytest.fail('hotfs exited with %d before %s was mounted'
                        % (rc, mnt))
        if time.monotonic() > deadline:
            pytest.fail('timed out waiting for %s to be mounted' % mnt)
        time.sleep(interval)
        interval = min(interval * 2, 0.1)


def unmount_cmd(mnt):
    """Detach mnt: fusermount3 -u, falling back to umount -l.  Returns
    True if it is no longer mounted."""
    if not is_mounted(mnt):
        return True
    r = subprocess.run(['fusermount3', '-u', '-q', mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0 and is_mounted(mnt):
        subprocess.run(['fusermount3', '-u', '-z', '-q', mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if is_mounted(mnt):
        subprocess.run(['umount', '-l', mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return not is_mounted(mnt)


def umount(proc, mnt, timeout=TIMEOUT):
    """Unmount mnt and assert that the daemon then exits with 0."""
    r = subprocess.run(['fusermount3', '-u', mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    busy = r.returncode != 0 and b'busy' in r.stdout
    if busy:
        # the test itself left something open in the mount: report that
        # rather than waiting for a daemon that rightly stays
        own = []
        for fd in os.listdir('/proc/self/fd'):
            try:
                t = os.readlink('/proc/self/fd/' + fd)
            except OSError:
                continue
            if t.startswith(os.path.realpath(mnt) + '/') or \
                    t == os.path.realpath(mnt):
                own.append((int(fd), t))
        for fd, _ in own:
            os.close(fd)
        if own:
            unmount_cmd(mnt)
            pytest.fail('the test left files open in the mount: %r' % own)
    if r.returncode != 0:
        # busy: detach lazily, the daemon must still exit cleanly
        r2 = subprocess.run(['umount', '-l', mnt], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
        assert r2.returncode == 0, (
            'fusermount3 -u: %s; umount -l: %s'
            % (r.stdout.decode(errors='replace'),
               r2.stdout.decode(errors='replace')))
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail('hotfs did not exit within %.0fs of unmounting %s'
                    % (timeout, mnt))
    assert rc == 0, 'hotfs exited with %d after unmount' % rc
    assert not is_mounted(mnt)


def daemon_pids(mnt):
    """Pids of hotfs processes whose command line names mnt."""
    mnt = os.path.realpath(mnt)
    pids = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % d, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if not argv or not argv[0]:
            continue
        if os.path.basename(argv[0]) != b'hotfs':
            continue
        if any(os.path.realpath(a) == mnt.encode() for a in argv[1:] if a):
            pids.append(int(d))
    return pids


def pid_alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            st = f.read()
    except OSError:
        return False
    # a zombie (state Z) has exited
    return st[st.rindex(')') + 2] != 'Z'


def kill_daemons(mnt):
    for pid in daemon_pids(mnt):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)      # ours if we were its subreaper
        except ChildProcessError:
            pass


def cleanup_mount(proc, mnt):
    """Teardown, whatever state the test left: never leaves a mount or a
    process behind.  Returns the daemon's exit status (None if it had to
    be killed)."""
    unmount_cmd(mnt)
    rc = None
    if proc is not None:
        try:
            rc = proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
    kill_daemons(mnt)
    if is_mounted(mnt):
        subprocess.run(['umount', '-l', mnt], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return rc


def fuse_conn(mnt):
    """The number of mnt's FUSE connection (its directory in
    /sys/fs/fuse/connections), from the mount table: no request reaches
    the daemon."""
    dev = mount_dev(mnt)
    return None if dev is None else (dev[0] << 20) | dev[1]


def mount_dev(mnt):
    """(major, minor) of mnt's superblock from /proc/self/mountinfo, or
    None."""
    mnt = os.path.realpath(mnt)
    found = None
    with open('/proc/self/mountinfo') as f:
        for line in f:
            fields = line.split()
            if _unescape(fields[4]) == mnt:
                found = tuple(int(x) for x in fields[2].split(':'))
    return found


FUSECTL = '/sys/fs/fuse/connections'


def abort_fuse(conn):
    """Abort FUSE connection conn (every request in flight fails, the
    daemon's /dev/fuse reads end): the only way out of a connection whose
    daemon cannot finish exiting.  fusectl is mounted for it, and
    unmounted again, if it was not."""
    mounted = False
    if not os.path.isdir(os.path.join(FUSECTL, str(conn))) and \
            mount_entry(FUSECTL) is None:
        subprocess.run(['mount', '-t', 'fusectl', 'fusectl', FUSECTL],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mounted = mount_entry(FUSECTL) is not None
    try:
        with open(os.path.join(FUSECTL, str(conn), 'abort'), 'w') as f:
            f.write('1')
    except OSError:
        pass                    # gone meanwhile
    finally:
        if mounted:
            subprocess.run(['umount', FUSECTL], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)


def thread_states(pid):
    """{tid: (state, kernel stack or wchan)} of a process's threads, for
    a report of what keeps them (empty if it is gone)."""
    out = {}
    try:
        tids = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return out
    for tid in tids:
        d = '/proc/%d/task/%s/' % (pid, tid)
        try:
            with open(d + 'stat') as f:
                st = f.read()
            state = st[st.rindex(')') + 2]
        except (OSError, ValueError):
            continue
        where = ''
        for name in ('stack', 'wchan'):
            try:
                with open(d + name) as f:
                    where = f.read().strip()
            except OSError:
                continue
            if where:
                break
        out[int(tid)] = (state, where)
    return out


def rmtree(path):
    """shutil.rmtree that also copes with read-only dirs left by a test."""
    def onerror(func, p, exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass
    if os.path.lexists(path):
        shutil.rmtree(path, onerror=onerror)


# --------------------------------------------------------------------------
# Comparing a call through the mount with the same call on a native dir

class Err:
    """An errno as a comparable result."""

    def __init__(self, e):
        self.errno = e

    def __eq__(self, other):
        return isinstance(other, Err) and other.errno == self.errno

    def __hash__(self):
        return hash(self.errno)

    def __repr__(self):
        return 'Err(%s)' % errno.errorcode.get(self.errno, self.errno)


def call(fn, *args, **kw):
    """fn(*args) or Err(errno) if it raises OSError."""
    try:
        return fn(*args, **kw)
    except OSError as e:
        return Err(e.errno)


def compare_calls(desc, fn, mnt_root, native_root):
    """Run fn(root) on the mount and on the native dir; assert the results
    (return value, or errno) are equal.  Returns the mount's result."""
    a = call(fn, mnt_root)
    b = call(fn, native_root)
    assert a == b, '%s: through the mount %r, natively %r' % (desc, a, b)
    return a


def stat_summary(st, times=False):
    """The parts of a stat result that must agree between two
    directories with the same history (inode numbers and, unless asked,
    times differ)."""
    r = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_nlink,
         st.st_uid, st.st_gid, st.st_size if not stat.S_ISDIR(st.st_mode)
         else None, st.st_rdev)
    if times:
        r += (st.st_atime_ns, st.st_mtime_ns)
    return r


def lstat_summary(path, times=False):
    return stat_summary(os.lstat(path), times)


STAT_FIELDS = ('st_mode', 'st_ino', 'st_nlink', 'st_uid', 'st_gid',
               'st_size', 'st_rdev', 'st_blocks', 'st_atime_ns',
               'st_mtime_ns', 'st_ctime_ns')


def stat_fields(st, fields=STAT_FIELDS):
    return {f: getattr(st, f) for f in fields}


#: set while a test runs with -o revalidate=never, where hotfs does not
#: ask the source again and so cannot see the atime its own reads move
IGNORE_ATIME = False


def assert_same_stat(mnt_path, src_path, fields=None, follow=False):
    """stat through the mount equals stat of the source file itself: the
    same inode number, links, size, mode, owner and times (exact, to the
    nanosecond)."""
    if fields is None:
        fields = tuple(f for f in STAT_FIELDS
                       if not (IGNORE_ATIME and f == 'st_atime_ns'))
    if follow:
        a, b = os.stat(mnt_path), os.stat(src_path)
    else:
        a, b = os.lstat(mnt_path), os.lstat(src_path)
    fa, fb = stat_fields(a, fields), stat_fields(b, fields)
    diff = {k: (fa[k], fb[k]) for k in fields if fa[k] != fb[k]}
    assert not diff, '%s vs %s: {field: (mount, source)} %r' % (
        mnt_path, src_path, diff)


def read_cold(path, limit=None):
    """The whole file, read from the filesystem and not from the kernel's
    page cache (dropped before and after with POSIX_FADV_DONTNEED), so
    that through a mount every byte comes from the daemon; failing past
    limit bytes (if given) rather than reading on forever."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        chunks, n = [], 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            n += len(b)
            if limit is not None and n > limit:
                pytest.fail('%s: more than %d bytes' % (path, limit))
            chunks.append(b)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return b''.join(chunks)
    finally:
        os.close(fd)


def hotfs_stats(mnt):
    """.hotfs/stats of a mount as {key: str}."""
    out = {}
    with open(os.path.join(mnt, '.hotfs', 'stats')) as f:
        for line in f:
            k, _, v = line.partition(':')
            out[k.strip()] = v.strip()
    return out


def tree_snapshot(root, times=False, xattrs=True, cold=False):
    """{relative path: (stat summary, content or link target, xattrs)} for
    a whole tree, to compare two trees after the same operations."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and cold:
                data = read_cold(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, 'rb') as f:
                    data = f.read()
            elif stat.S_ISLNK(st.st_mode):
                data = os.readlink(p)
            else:
                data = None
            xa = None
            if xattrs and not stat.S_ISLNK(st.st_mode):
                xa = {k: os.getxattr(p, k, follow_symlinks=False)
                      for k in sorted(os.listxattr(p, follow_symlinks=False))}
            out[rel] = (stat_summary(st, times), data, xa)
    return out


# --------------------------------------------------------------------------
# Running a function as another user (fork + setuid), result by pickle

def run_as(uid, gid, fn, *args, groups=()):
    """Run fn(*args) in a child with the given credentials; return its
    result (an OSError becomes Err(errno); any other exception fails)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            try:
                res = ('ok', call(fn, *args))
            except BaseException as e:  # report it to the parent
                res = ('exc', repr(e))
            data = pickle.dumps(res)
            with os.fdopen(w, 'wb') as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, 'rb') as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    kind, res = pickle.loads(data)
    if kind == 'exc':
        pytest.fail('child (uid %d) raised %s' % (uid, res))
    return res


# --------------------------------------------------------------------------
# ctypes wrappers

_libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6',
                    use_errno=True)

AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_COLLAPSE_RANGE = 0x08
FALLOC_FL_ZERO_RANGE = 0x10
FALLOC_FL_INSERT_RANGE = 0x20

XATTR_CREATE = 1
XATTR_REPLACE = 2


class _timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def _check(res):
    if res == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return res


def utimensat(path, atime, mtime, follow=True, dir_fd=AT_FDCWD):
    """atime/mtime: (sec, nsec) or UTIME_NOW / UTIME_OMIT."""
    def ts(t):
        if t in (UTIME_NOW, UTIME_OMIT):
            return _timespec(0, t)
        return _timespec(t[0], t[1])
    times = (_timespec * 2)(ts(atime), ts(mtime))
    _libc.utimensat.argtypes = [ctypes.c_int, ctypes.c_char_p,
                                ctypes.POINTER(_timespec), ctypes.c_int]
    return _check(_libc.utimensat(dir_fd, os.fsencode(path), times,
                                  0 if follow else AT_SYMLINK_NOFOLLOW))


def renameat2(old, new, flags, olddirfd=AT_FDCWD, newdirfd=AT_FDCWD):
    _libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                ctypes.c_char_p, ctypes.c_uint]
    return _check(_libc.renameat2(olddirfd, os.fsencode(old), newdirfd,
                                  os.fsencode(new), flags))


def fallocate(fd, mode, offset, length):
    _libc.fallocate64.argtypes = [ctypes.c_int, ctypes.c_int,
                                  ctypes.c_int64, ctypes.c_int64]
    return _check(_libc.fallocate64(fd, mode, offset, length))


def getxattr_raw(path, name, size):
    """getxattr(2) with a caller-chosen buffer size (0 = ask the size), so
    ERANGE can be provoked.  Returns the length, or bytes if size > 0."""
    _libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                               ctypes.c_void_p, ctypes.c_size_t]
    _libc.getxattr.restype = ctypes.c_ssize_t
    buf = ctypes.create_string_buffer(max(size, 1))
    n = _check(_libc.getxattr(os.fsencode(path), os.fsencode(name),
                              buf if size else None, size))
    return buf.raw[:n] if size else n


def listxattr_raw(path, size):
    _libc.listxattr.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                ctypes.c_size_t]
    _libc.listxattr.restype = ctypes.c_ssize_t
    buf = ctypes.create_string_buffer(max(size, 1))
    n = _check(_libc.listxattr(os.fsencode(path), buf if size else None,
                               size))
    return buf.raw[:n] if size else n


def mkfifoat(dir_fd, name, mode):
    return os.mkfifo(name, mode, dir_fd=dir_fd)


def cache_drops():
    """How often anyone dropped the page cache or the dentries and inodes
    since boot (drop_caches is machine-wide)."""
    n = 0
    with open('/proc/vmstat') as f:
        for line in f:
            k, _, v = line.partition(' ')
            if k in ('drop_pagecache', 'drop_slab'):
                n += int(v)
    return n


def drop_caches():
    """Write back, then drop the page cache, dentries and inodes: the
    whole machine's, so a test that does is marked drops_caches, and meson
    runs it alone (tests/integration/meson.build)."""
    if os.environ.get('HOTFS_TEST_SHARED') == '1':
        pytest.fail('drop_caches in a test that meson runs beside others: '
                    'mark it @pytest.mark.drops_caches, and list its file '
                    'in integration_split or integration_alone '
                    '(tests/integration/meson.build)')
    subprocess.run(['sync'])
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3\n')


def disk_reads(dev):
    """Reads completed by a block device (/sys/block/X/stat)."""
    with open('/sys/block/%s/stat' % os.path.basename(dev)) as f:
        return int(f.read().split()[0])


def readers(mnt, names, n):
    """n processes reading names (under mnt) cold in a loop until
    stop_readers; errors (the daemon gone) are ignored."""
    import random
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                rng = random.Random(i)
                while True:
                    try:
                        read_cold(os.path.join(mnt, rng.choice(names)))
                    except OSError:
                        pass
            finally:
                os._exit(0)
        pids.append(pid)
    return pids


def stop_readers(pids):
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for pid in pids:
        os.waitpid(pid, 0)


def source_fds(pid, src):
    """The daemon's descriptors on files and directories of the source, as
    (target, open flags) (not its io_uring rings, pipes or cache store,
    which come and go with its threads)."""
    out = []
    for fd in os.listdir('/proc/%d/fd' % pid):
        try:
            t = os.readlink('/proc/%d/fd/%s' % (pid, fd))
            with open('/proc/%d/fdinfo/%s' % (pid, fd)) as info:
                flags = int(next(ln for ln in info
                                 if ln.startswith('flags:')).split()[1], 8)
        except (OSError, StopIteration):
            continue            # closed meanwhile
        if t == src or t.startswith(src + '/'):
            out.append((t, flags))
    return out
