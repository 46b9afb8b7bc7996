# SPDX-License-Identifier: GPL-2.0-or-later
"""hotfs over a real network filesystem: sshfs, served by an sshd of the
test's own (bound to 127.0.0.1 on a free port, with its own config, host
key and authorized key in the test's directory).  Two sshfs mounts of one
exported directory stand for two clients, each with a hotfs over it:

    export/  <- sshd -> sshfs a/ -> hotfs ha/     (cache ca/)
                     -> sshfs b/ -> hotfs hb/     (cache cb/)

sshfs numbers inodes in the order it looks names up, per mount, and
reports whole-second times with ctime = mtime: the traps of
include/hotfs/srcprobe.h.  Every byte read through a hotfs is compared
with what the export holds at that moment.

Skipped (with the reason) only where sshd, ssh, sshfs or /dev/fuse are
missing.  Everything (hotfs, sshfs, sshd) is torn down whatever the
outcome.
"""
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

import util

SSHD = '/usr/sbin/sshd'


def _free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _port_open(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _children(pid):
    """Pids whose parent is pid."""
    out = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rindex(')') + 2:].split()[1]) == pid:
            out.append(int(d))
    return out


class Net:
    """sshd, the export, the sshfs mounts and the hotfs over them."""

    def __init__(self, ws):
        self.ws = ws
        self.root = ws.root
        self.export = os.path.join(self.root, 'export')
        self.ssh = os.path.join(self.root, 'ssh')
        os.mkdir(self.export)
        os.mkdir(self.ssh, 0o700)
        self.port = _free_port()
        self.sshd = None
        self.sshfs = []         # (proc, mnt)
        self.hotfs = []         # (proc, mnt)
        self._keys()

    def _keys(self):
        for k in ('host_key', 'client_key'):
            subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '',
                            '-f', os.path.join(self.ssh, k)], check=True)
        shutil.copy(os.path.join(self.ssh, 'client_key.pub'),
                    os.path.join(self.ssh, 'authorized_keys'))
        self.config = os.path.join(self.ssh, 'sshd_config')
        with open(self.config, 'w') as f:
            f.write('\n'.join([
                'ListenAddress 127.0.0.1',
                'Port %d' % self.port,
                'HostKey %s/host_key' % self.ssh,
                'PidFile %s/sshd.pid' % self.ssh,
                'AuthorizedKeysFile %s/authorized_keys' % self.ssh,
                'PermitRootLogin prohibit-password',
                'PasswordAuthentication no',
                'KbdInteractiveAuthentication no',
                'UsePAM no',
                'StrictModes no',
                'Subsystem sftp internal-sftp',
                'LogLevel ERROR', '']))

    # -- sshd ---------------------------------------------------------------
    def start_sshd(self):
        os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
        log = open(os.path.join(self.ssh, 'sshd.log'), 'ab')
        self.sshd = subprocess.Popen([SSHD, '-D', '-e', '-f', self.config],
                                     stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=log)
        log.close()
        util.wait_for(lambda: _port_open(self.port) or
                      self.sshd.poll() is not None, 'sshd to listen')
        if self.sshd.poll() is not None:
            pytest.fail('sshd exited with %d' % self.sshd.returncode)

    def stop_sshd(self):
        """Stop the listener and every session it forked (as a server
        going away), and wait for them to be gone."""
        if not self.sshd:
            return
        pids = [self.sshd.pid]
        i = 0
        while i < len(pids):
            pids += _children(pids[i])
            i += 1
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.sshd.wait()
        self.sshd = None
        util.wait_for(lambda: not any(util.pid_alive(p) for p in pids),
                      'the sshd sessions to end')

    # -- sshfs --------------------------------------------------------------
    def sshfs_mount(self, name):
        mnt = os.path.join(self.root, name)
        os.makedirs(mnt, exist_ok=True)
        key = os.path.join(self.ssh, 'client_key')
        cmd = ['sshfs', '-f', '-p', str(self.port), '-F', '/dev/null',
               '-o', 'IdentityFile=%s,StrictHostKeyChecking=no,'
               'UserKnownHostsFile=/dev/null,BatchMode=yes,reconnect,'
               'ServerAliveInterval=1,ServerAliveCountMax=2' % key,
               'root@127.0.0.1:' + self.export, mnt]
        log = open(os.path.join(self.ssh, 'sshfs-%s.log' % name), 'ab')
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log)
        log.close()
        self.sshfs.append((proc, mnt))
        util.wait_for_mount(proc, mnt)
        return mnt

    def sshfs_umount(self, mnt):
        for i, (proc, m) in enumerate(self.sshfs):
            if m == mnt:
                util.unmount_cmd(mnt)
                proc.wait(timeout=util.TIMEOUT)
                del self.sshfs[i]
                return
        raise AssertionError('unknown sshfs mount')

    # -- hotfs --------------------------------------------------------------
    def hotfs_mount(self, src, name, cache, opts=''):
        mnt = os.path.join(self.root, name)
        os.makedirs(mnt, exist_ok=True)
        proc = self.ws.start(src=src, mnt=mnt,
                             cachedir=os.path.join(self.root, cache),
                             opts=opts)
        self.hotfs.append((proc, mnt))
        return mnt

    def hotfs_umount(self, mnt):
        for i, (proc, m) in enumerate(self.hotfs):
            if m == mnt:
                self.ws.stop(proc)
                del self.hotfs[i]
                return
        raise AssertionError('unknown hotfs mount')

    def up(self, opts=''):
        """Both clients: (hotfs over a, hotfs over b)."""
        self.a = self.sshfs_mount('a')
        self.b = self.sshfs_mount('b')
        self.ha = self.hotfs_mount(self.a, 'ha', 'ca', opts)
        self.hb = self.hotfs_mount(self.b, 'hb', 'cb', opts)
        return self.ha, self.hb

    def down(self):
        """hotfs first, then sshfs, then sshd: never a mount or a
        process left, whatever state the test left them in."""
        for proc, mnt in self.hotfs:
            util.cleanup_mount(proc, mnt)
        self.hotfs = []
        for proc, mnt in self.sshfs:
            util.unmount_cmd(mnt)
            try:
                proc.wait(timeout=util.TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.sshfs = []
        self.stop_sshd()

    def e(self, *p):
        return os.path.join(self.export, *p)


@pytest.fixture
def net(ws):
    for prog in (SSHD, shutil.which('ssh'), shutil.which('sshfs'),
                 shutil.which('ssh-keygen')):
        if not prog or not os.access(prog, os.X_OK):
            pytest.skip('openssh-server, openssh-client and sshfs are '
                        'needed (missing: %s)' % prog)
    if not os.path.exists('/dev/fuse'):
        pytest.skip('no /dev/fuse')
    n = Net(ws)
    try:
        n.start_sshd()
        yield n
    finally:
        n.down()


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def read(path):
    """Through the daemon, not the kernel's pages."""
    return util.read_cold(path)


def stats(mnt):
    return util.hotfs_stats(mnt)


def status(mnt):
    r = subprocess.run([os.environ.get('HOTFSCTL_BIN', 'hotfsctl'),
                        'status', mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, check=True)
    return r.stdout.decode()


def content(i, size):
    """size bytes that say which file and version they belong to."""
    tag = ('<%06d>' % i).encode()
    return (tag * (size // len(tag) + 1))[:size]


def test_remount_both_layers_200_files(net):
    """200 files of 64 KiB with one whole-second mtime, read three times
    (promoted), both layers remounted, read back in reverse order (sshfs
    now gives each file another file's old number, same size and
    mtime): every byte as the export has it."""
    n, size = 200, 64 << 10
    t = int(time.time()) - 60
    for i in range(n):
        write(net.e('f%03d' % i), content(i, size))
        os.utime(net.e('f%03d' % i), (t, t))
    ha, _ = net.up('threshold=2')
    for _ in range(3):
        for i in range(n):
            assert read(os.path.join(ha, 'f%03d' % i)) == content(i, size)
    first = stats(ha)
    assert int(first['promotions']) > 0, first
    assert 'not kept across restarts' in status(ha)
    net.hotfs_umount(ha)
    net.hotfs_umount(net.hb)
    net.sshfs_umount(net.a)
    net.sshfs_umount(net.b)
    a = net.sshfs_mount('a')
    ha = net.hotfs_mount(a, 'ha', 'ca', 'threshold=2')
    wrong = [i for i in reversed(range(n))
             if read(os.path.join(ha, 'f%03d' % i)) != content(i, size)]
    assert wrong == [], '%d of %d files wrong after the remount' % (
        len(wrong), n)
    # the numbers did move: the test showed what it meant to
    assert os.stat(os.path.join(a, 'f000')).st_ino != 2 or \
        os.stat(os.path.join(a, 'f199')).st_ino != 2 + 199
    # a read of everything once more is served from the store again
    for _ in range(3):
        for i in range(n):
            assert read(os.path.join(ha, 'f%03d' % i)) == content(i, size)
    assert int(stats(ha)['read_hits']) > 0
