# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures for the hotfs integration tests.

Every test gets a private directory under /tmp (same filesystem as the
source, so that a native directory there is a fair reference) holding

    src/     the slow tree hotfs mounts
    mnt/     the mount point
    cache/   the cache store
    native/  a plain directory given the same starting content as src/,
             on which every operation is repeated for comparison

and every mount is unmounted and every daemon ended in teardown, whether
the test passed or not.
"""
import os
import resource
import stat
import subprocess
import tempfile

import pytest

import util


def pytest_configure(config):
    config.addinivalue_line('markers', 'slow: takes more than a second')
    config.addinivalue_line('markers', 'drops_caches: drops the machine\'s '
                            'caches (util.drop_caches): meson runs it alone '
                            '(tests/integration/meson.build)')
    config.addinivalue_line('markers', 'source_changes: changes the source '
                            'behind the mount (not run with revalidate=never)')


@pytest.fixture(autouse=True)
def _umask():
    old = os.umask(0o022)
    yield
    os.umask(old)
    util.IGNORE_ATIME = False


def ignore_atime_in(mode):
    """For tests that mount in a mode of their own (not through fs): stat
    comparisons leave atime out where the mode cannot track it."""
    util.IGNORE_ATIME = mode in ('never', 'seconds')


class Workspace:
    def __init__(self, root):
        self.root = root
        self.src = os.path.join(root, 'src')
        self.mnt = os.path.join(root, 'mnt')
        self.cache = os.path.join(root, 'cache')
        self.native = os.path.join(root, 'native')
        self.logs = os.path.join(root, 'logs')
        for d in (self.src, self.mnt, self.native, self.logs):
            os.mkdir(d)
        self.daemons = []   # (proc, mnt, log path)
        self.mounts = []    # mount points to clean up (daemonized mounts)

    # -- starting daemons -------------------------------------------------
    def start(self, src=None, mnt=None, opts='', args=(), foreground=True,
              cachedir=True, wait=True, nofile=None, cwd=None,
              nofile_hard=None):
        """Start hotfs -f on src/mnt and wait for the mount.  opts are
        added to -o (after cachedir=); nofile is a soft RLIMIT_NOFILE to
        start the daemon with; nofile_hard a limit it cannot raise (soft
        and hard, and CAP_SYS_RESOURCE dropped from its bounding set)."""
        src = src or self.src
        mnt = mnt or self.mnt
        o = []
        if cachedir:
            o.append('cachedir=' + (self.cache if cachedir is True
                                    else cachedir))
        if opts:
            o.append(opts)
        cmd = util.daemon_wrap() + [util.hotfs_bin(), src, mnt]
        if o:
            cmd += ['-o', ','.join(o)]
        if foreground:
            cmd.append('-f')
        cmd += list(args)
        log = os.path.join(self.logs, 'hotfs.%d.log' % len(self.daemons))
        with open(log, 'wb') as lf:
            lf.write(('$ %s\n' % ' '.join(cmd)).encode())
            lf.flush()
            def limit():
                if nofile:
                    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                    resource.setrlimit(resource.RLIMIT_NOFILE,
                                       (nofile, hard))
                if nofile_hard:
                    util.drop_cap_sys_resource()
                    resource.setrlimit(resource.RLIMIT_NOFILE,
                                       (nofile_hard, nofile_hard))
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                    stdout=lf, stderr=lf, cwd=cwd,
                                    preexec_fn=limit if nofile or
                                    nofile_hard else None)
        self.daemons.append((proc, mnt, log))
        if wait:
            util.wait_for_mount(proc, mnt)
        return proc

    def stop(self, proc):
        """Unmount proc's mount; assert the daemon exited 0."""
        for p, mnt, _ in self.daemons:
            if p is proc:
                util.umount(proc, mnt)
                return
        raise AssertionError('unknown daemon')

    def log_text(self, proc):
        for p, _, log in self.daemons:
            if p is proc:
                with open(log, 'rb') as f:
                    return f.read().decode(errors='replace')
        return ''

    def cleanup(self):
        """Unmount everything and end every daemon.  Returns a list of
        problems (a daemon that did not exit 0)."""
        problems = []
        for proc, mnt, log in self.daemons:
            was_running = proc.poll() is None
            rc = util.cleanup_mount(proc, mnt)
            if was_running and rc != 0:
                problems.append('hotfs on %s exited with %r at unmount'
                                % (mnt, rc))
            with open(log, 'rb') as f:
                text = f.read().decode(errors='replace')
            if text.count('\n') > 1:
                print('---- %s ----\n%s' % (log, text[-20000:]))
        for mnt in self.mounts:
            util.cleanup_mount(None, mnt)
        return problems


@pytest.fixture
def ws():
    """A private workspace; nothing mounted."""
    root = tempfile.mkdtemp(prefix='hotfs-itest-', dir='/tmp')
    os.chmod(root, 0o755)    # the unprivileged tests walk into it
    w = Workspace(root)
    try:
        yield w
    finally:
        problems = w.cleanup()
        for _, mnt, _ in w.daemons:
            assert not util.is_mounted(mnt)
        util.rmtree(root)
        assert not problems, problems


# Every parity test runs once per mode (as sshfs's test_sshfs.py is
# parametrised): default options (cache store on, cold, timeouts of 1 s),
# the kernel caching nothing, plain passthrough without a cache store, and
# a warm cache store (written around, or through).
MODES = {
    'default': '',
    'attr0': 'attr_timeout=0,entry_timeout=0',
    'nocache': 'nocache',
    # every extent promoted at its first access, and the populated tree
    # read into the cache store before the test: reads after each
    # operation are served from the store unless it invalidated them
    'warm': 'threshold=1',
    # the same with writes updating the cached extents in place
    'warmwt': 'threshold=1,writemode=writethrough',
    # hotfs trusts what it has seen: changes only through the mount (tests
    # marked source_changes, which change the source behind hotfs's back,
    # are not run in this mode)
    'never': 'revalidate=never',
    # files opened within 30 s of their last check are trusted without
    # the source (lazy handles: the source file opened at first need);
    # changes behind the mount are seen after those 30 s, so the tests
    # marked source_changes are not run in this mode either, and atime
    # is not compared (the kernel keeps attributes those 30 s)
    'seconds': 'revalidate=30',
}


def pytest_collection_modifyitems(config, items):
    """Deselect the tests that change the source behind hotfs's back in
    the modes whose contract excludes that."""
    drop = [it for it in items
            if it.get_closest_marker('source_changes') and
            getattr(it, 'callspec', None) is not None and
            it.callspec.params.get('fs') in ('never', 'seconds')]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [it for it in items if it not in drop]


class Fs:
    """A mounted hotfs over ws.src, and the native reference dir."""

    def __init__(self, ws, opts):
        self.ws = ws
        self.src, self.mnt, self.native = ws.src, ws.mnt, ws.native
        self.opts = opts
        self.proc = None

    def mount(self):
        self.proc = self.ws.start(opts=self.opts)

    def m(self, *p):
        return os.path.join(self.mnt, *p)

    def s(self, *p):
        return os.path.join(self.src, *p)

    def n(self, *p):
        return os.path.join(self.native, *p)

    def parity(self, desc, fn):
        """fn(root) through the mount and on the native dir: same result
        or same errno."""
        return util.compare_calls(desc, fn, self.mnt, self.native)

    def check_trees(self, xattrs=True):
        """The mount shows what the native dir has after the same
        operations, and every entry's stat through the mount is the
        source's own (inode, times...)."""
        a = util.tree_snapshot(self.mnt, xattrs=xattrs, cold=True)
        b = util.tree_snapshot(self.native, xattrs=xattrs)
        if a != b:
            keys = sorted(set(a) | set(b))
            diff = {k: (a.get(k), b.get(k)) for k in keys
                    if a.get(k) != b.get(k)}
            pytest.fail('mount and native trees differ '
                        '{path: (mount, native)}: %r' % diff)
        self.check_source_stats()

    def check_source_stats(self):
        for dirpath, dirnames, filenames in os.walk(self.mnt):
            for name in dirnames + filenames + ['.']:
                p = os.path.join(dirpath, name)
                rel = os.path.relpath(p, self.mnt)
                util.assert_same_stat(p, os.path.join(self.src, rel))


def populate(root):
    """The starting content given to both src/ and native/."""
    def w(name, data, mode=0o644):
        p = os.path.join(root, name)
        with open(p, 'wb') as f:
            f.write(data)
        os.chmod(p, mode)
    w('file', b'hello world\n' * 1000)
    w('empty', b'')
    w('ro', b'read only\n', 0o444)
    w('exec', b'#!/bin/sh\nexit 0\n', 0o755)
    os.mkdir(os.path.join(root, 'dir'))
    w('dir/a', b'a' * 10)
    w('dir/b', b'b' * 5000)
    os.mkdir(os.path.join(root, 'dir', 'sub'))
    os.mkdir(os.path.join(root, 'emptydir'))
    os.symlink('file', os.path.join(root, 'link'))
    os.symlink('dir', os.path.join(root, 'dirlink'))
    os.symlink('nowhere', os.path.join(root, 'dangling'))
    os.mkfifo(os.path.join(root, 'fifo'))
    with open(os.path.join(root, 'sparse'), 'wb') as f:
        f.write(b'x' * 4096)
        f.seek(1 << 20)
        f.write(b'y' * 4096)
    os.setxattr(os.path.join(root, 'file'), 'user.greeting', b'hi')


def prewarm(mnt):
    """Read every regular file of the tree through the mount until the
    cache store holds it."""
    files = []
    for dirpath, _, filenames in os.walk(mnt):
        for n in filenames:
            p = os.path.join(dirpath, n)
            if stat.S_ISREG(os.lstat(p).st_mode) and os.path.getsize(p):
                files.append(p)
    for p in files:
        util.read_cold(p)
        util.read_cold(p)

    def settled():
        st = util.hotfs_stats(mnt)
        return int(st['promotion_queue_depth']) == 0 and \
            int(st['cached_extents']) > 0
    util.wait_for(settled, 'the warm-up reads to be promoted')


@pytest.fixture(params=sorted(MODES), ids=sorted(MODES))
def fs(request, ws):
    """hotfs mounted over a populated src/ (native/ populated alike),
    once per mode: default timeouts, and attr/entry timeouts of 0."""
    populate(ws.src)
    populate(ws.native)
    f = Fs(ws, MODES[request.param])
    f.mode = request.param
    f.mount()
    if f.mode.startswith('warm'):
        prewarm(ws.mnt)
    util.IGNORE_ATIME = f.mode in ('never', 'seconds')
    try:
        yield f
    finally:
        util.IGNORE_ATIME = False
    # the daemon must still be alive and exit 0 when unmounted
    if f.proc.poll() is None and util.is_mounted(ws.mnt):
        ws.stop(f.proc)
    else:
        pytest.fail('hotfs died during the test (exit %r)' % f.proc.poll())


@pytest.fixture
def loopsrc(ws):
    """src/ on an ext4 image of its own (128 MiB) on a loop device, so
    that the slow tree's reads can be counted (util.disk_reads); yields
    the device."""
    img = os.path.join(ws.root, 'src.img')
    with open(img, 'wb') as f:
        f.truncate(128 << 20)
    subprocess.run(['mkfs.ext4', '-q', '-F', '-I', '256', img], check=True)
    r = subprocess.run(['losetup', '--show', '-f', img],
                       stdout=subprocess.PIPE)
    if r.returncode != 0:
        pytest.skip('no loop device')
    dev = r.stdout.decode().strip()
    try:
        subprocess.run(['mount', dev, ws.src], check=True)
        try:
            # mkfs made it seconds ago with whole-second times: hotfs
            # would (rightly) not trust its stamp for 2 s
            os.rmdir(os.path.join(ws.src, 'lost+found'))
            yield dev
        finally:
            for p, mnt, _ in ws.daemons:
                util.cleanup_mount(p, mnt)
            subprocess.run(['umount', ws.src])
    finally:
        subprocess.run(['losetup', '-d', dev])
