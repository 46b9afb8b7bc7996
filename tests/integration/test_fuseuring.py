# SPDX-License-Identifier: GPL-2.0-or-later
"""FUSE over io_uring (-o fuse_uring, man hotfs): asked of libfuse only
where this build has it (libfuse 3.18, meson -Dlibfuse=bundled) and the
kernel's switch is on; fuse_uring=on refuses the mount in one line
otherwise (a bad value: test_cli.py's bad arguments); the stats say
which and why, and count the requests that came through the queues.  The tests that need the kernel's switch set it
and put it back as it was (hotfs itself never changes it)."""
import concurrent.futures
import os
import random
import subprocess

import pytest

import util

PARAM = '/sys/module/fuse/parameters/enable_uring'


def built_with_uring():
    out = subprocess.run([util.hotfs_bin(), '--version'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         check=True).stdout.decode()
    v = next(ln.split()[-1] for ln in out.splitlines()
             if ln.startswith('libfuse version'))
    return tuple(int(x) for x in v.split('.')[:2]) >= (3, 18)


@pytest.fixture
def switch():
    """Set the kernel's switch (Y/N) for a test; put back after.  Named
    before ws by the tests: put back after their mounts are gone (the
    kernel refuses a queue's command with the switch off: a daemon whose
    queues meet it at its unmount ends its loop with EOPNOTSUPP).  The
    file runs alone (tests/integration/meson.build): no other test's
    mount sees the switch move."""
    if not os.path.exists(PARAM):
        pytest.skip('this kernel has no FUSE over io_uring')
    with open(PARAM) as f:
        old = f.read().strip()

    def set_to(v):
        with open(PARAM, 'w') as f:
            f.write(v)
    yield set_to
    set_to(old)


def refused(ws, opts, words):
    """hotfs -o opts exits non-zero, unmounted, with one line naming
    words."""
    proc = ws.start(opts=opts, wait=False)
    try:
        rc = proc.wait(timeout=util.TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail('hotfs -o %s did not refuse to mount' % opts)
    lines = ws.log_text(proc).splitlines()[1:]
    assert rc != 0 and not util.is_mounted(ws.mnt)
    assert len(lines) == 1, lines
    for w in words:
        assert w in lines[0], lines


def files(ws, n=24):
    rng = random.Random(7)
    data = {}
    for i in range(n):
        d = rng.randbytes(rng.choice((100, 5000, 70000, 300000)))
        name = 'f%02d' % i
        with open(os.path.join(ws.src, name), 'wb') as f:
            f.write(d)
        data[name] = d
    return data


def test_off_and_default_say_why(ws):
    """off: off; the default (auto): off with the reason, or on, as the
    build and the kernel have it; the tree served the same."""
    data = files(ws, 4)
    proc = ws.start(opts='fuse_uring=off')
    s = util.hotfs_stats(ws.mnt)
    assert s['fuse_uring'] == 'off' and int(s['fuse_uring_requests']) == 0
    ws.stop(proc)
    ws.start()
    for n, d in data.items():
        assert util.read_cold(os.path.join(ws.mnt, n)) == d
    s = util.hotfs_stats(ws.mnt)
    assert s['fuse_uring'] == 'on' or s['fuse_uring'].startswith('off: ')
    if not built_with_uring():
        assert 'libfuse' in s['fuse_uring'], s['fuse_uring']


def test_on_without_libfuse_refused(ws):
    if built_with_uring():
        pytest.skip('this build has FUSE over io_uring (libfuse 3.18)')
    refused(ws, 'fuse_uring=on', ['fuse_uring=on', '-Dlibfuse=bundled'])
    refused(ws, 'fuse_uring', ['fuse_uring=on', '-Dlibfuse=bundled'])


def test_on_with_the_switch_off_refused(switch, ws):
    if not built_with_uring():
        pytest.skip('needs a build against libfuse 3.18')
    switch('N')
    refused(ws, 'fuse_uring=on', ['fuse_uring=on', PARAM])
    # auto mounts, through /dev/fuse, and says why
    ws.start()
    s = util.hotfs_stats(ws.mnt)
    assert s['fuse_uring'].startswith('off: switched off'), s


def test_io_uring_refused_to_the_daemon(switch, ws, monkeypatch):
    """Where io_uring is refused to the daemon (a seccomp profile, as a
    container's; kernel.io_uring_disabled), on refuses to mount saying
    so, and auto mounts through /dev/fuse, saying why: libfuse is not
    asked for queues it cannot set up."""
    wrap = os.environ.get('HOTFS_NO_URING')
    if not wrap:
        pytest.skip('HOTFS_NO_URING is not set (run through meson)')
    if not built_with_uring():
        pytest.skip('needs a build against libfuse 3.18')
    switch('Y')
    monkeypatch.setenv('HOTFS_WRAP', wrap)
    data = files(ws, 4)
    refused(ws, 'fuse_uring=on', ['fuse_uring=on', 'io_uring refused'])
    ws.start()
    s = util.hotfs_stats(ws.mnt)
    assert s['fuse_uring'].startswith('off: io_uring refused'), s
    for n, d in data.items():
        assert util.read_cold(os.path.join(ws.mnt, n)) == d
    assert int(util.hotfs_stats(ws.mnt)['fuse_uring_requests']) == 0


def test_on_serves_through_the_queues(switch, ws):
    """fuse_uring=on: files read right from several threads at once,
    cached and not, through the queues; the counter counts them."""
    if not built_with_uring():
        pytest.skip('needs a build against libfuse 3.18')
    switch('Y')
    data = files(ws)
    ws.start(opts='fuse_uring=on,threshold=1')
    s = util.hotfs_stats(ws.mnt)
    assert s['fuse_uring'] == 'on', s

    def check(name):
        for _ in range(3):
            got = util.read_cold(os.path.join(ws.mnt, name))
            assert got == data[name], name
        return name
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        assert sorted(ex.map(check, data)) == sorted(data)
    # and a write, a rename and a listing
    p = os.path.join(ws.mnt, 'new')
    with open(p, 'wb') as f:
        f.write(b'x' * 10000)
    os.rename(p, p + '2')
    assert sorted(os.listdir(ws.mnt)) == sorted(list(data) + ['new2'])
    with open(os.path.join(ws.src, 'new2'), 'rb') as f:
        assert f.read() == b'x' * 10000
    s = util.hotfs_stats(ws.mnt)
    assert int(s['fuse_uring_requests']) >= len(data) * 3, s


def test_auto_takes_it_where_it_can(switch, ws):
    """The default (auto), with the build and the kernel's switch for
    it: on, and requests come through the queues; the switch off: off,
    saying so (test_on_with_the_switch_off_refused)."""
    if not built_with_uring():
        pytest.skip('needs a build against libfuse 3.18')
    switch('Y')
    data = files(ws, 4)
    ws.start()
    assert util.hotfs_stats(ws.mnt)['fuse_uring'] == 'on'
    for n, d in data.items():
        assert util.read_cold(os.path.join(ws.mnt, n)) == d
    assert int(util.hotfs_stats(ws.mnt)['fuse_uring_requests']) >= \
        len(data)


def test_auto_leaves_it_off_over_a_network_source(switch, ws):
    """Over a network or FUSE source (here another hotfs: FUSE, as
    sshfs), auto leaves it off and says why (it measured slower over
    sshfs: man hotfs); on still asks for it."""
    if not built_with_uring():
        pytest.skip('needs a build against libfuse 3.18')
    switch('Y')
    data = files(ws, 4)
    inner = os.path.join(ws.root, 'inner')
    os.mkdir(inner)
    ws.start(mnt=inner, cachedir=False, opts='nocache,fuse_uring=off')
    outer = os.path.join(ws.root, 'outer')
    os.mkdir(outer)
    for opts, want in (('', 'off: auto leaves it off over a network'),
                       ('fuse_uring=on', 'on')):
        proc = ws.start(src=inner, mnt=outer, opts=opts,
                        cachedir=os.path.join(ws.root, 'cache2'))
        s = util.hotfs_stats(outer)
        assert s['source_remote'] == '1', s
        assert s['fuse_uring'].startswith(want), s
        for n, d in data.items():
            assert util.read_cold(os.path.join(outer, n)) == d
        ws.stop(proc)


def test_sigterm_while_busy_exits(switch, ws):
    """fuse_uring=on, SIGTERM while readers keep every queue busy: the
    daemon exits 0 within the timeout (libfuse 3.18 cancels its queue
    threads; one cancelled inside a handler would keep its locks and
    hang the teardown: src/fuse/fuse_i.h, hfs()).  Five rounds: the hang
    came one run in two before."""
    import signal
    if not built_with_uring():
        pytest.skip('needs a build against libfuse 3.18')
    switch('Y')
    rng = random.Random(3)
    names = ['big%d' % i for i in range(8)]
    for n in names:
        with open(os.path.join(ws.src, n), 'wb') as f:
            f.write(rng.randbytes(700000))
    for r in range(5):
        # a cachedir of its own each round: promotions while it stops
        cache = os.path.join(ws.root, 'cache%d' % r)
        os.mkdir(cache)
        proc = ws.start(opts='fuse_uring=on,threshold=1', cachedir=cache)
        assert util.hotfs_stats(ws.mnt)['fuse_uring'] == 'on'
        pids = util.readers(ws.mnt, names, 4)
        try:
            util.wait_for(lambda: int(util.hotfs_stats(ws.mnt)
                                      ['fuse_uring_requests']) > 200 and
                          int(util.hotfs_stats(ws.mnt)['promotions']) >= 4,
                          'requests through the queues, promotions')
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=util.TIMEOUT)
            except subprocess.TimeoutExpired:
                pytest.fail('hotfs did not exit on SIGTERM while busy '
                            '(fuse_uring=on)')
            assert rc == 0
        finally:
            util.stop_readers(pids)
        util.unmount_cmd(ws.mnt)
        assert not util.is_mounted(ws.mnt)
