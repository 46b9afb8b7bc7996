# SPDX-License-Identifier: GPL-2.0-or-later
"""hotfs_fsx (tests/fsx) through a hotfs mount.

The exerciser runs random reads, writes, truncates, fallocates, mmap and
O_DIRECT I/O on a file in the mount and checks every byte it reads back
against its own model of the file.  Here it runs with several seeds, with
files larger than one cache extent, and as four concurrent processes on
four files.  After each run the file read through the mount must equal
the file in the source tree, and the daemon must still be alive and exit 0
when unmounted.

The binary is $HOTFS_FSX, or else tests/fsx/hotfs_fsx in the build
tree that holds $HOTFS_BIN; a failure
prints the exerciser's report: the first differing byte, the last
operations and the command line that replays the run.
"""
import hashlib
import os
import subprocess

import pytest

import util

HOTFS_FSX = os.environ.get('HOTFS_FSX', '')
# operations per fsx run: fewer in the sanitizer builds' stages of
# tests/run.sh, where each costs several times as much
FSX_OPS = int(os.environ.get('HOTFS_FSX_OPS', '20000'))

#: seconds one exerciser run may take through the mount
FSX_TIMEOUT = 600

pytestmark = pytest.mark.slow


def fsx_bin():
    path = HOTFS_FSX
    if not path and util.HOTFS_BIN:
        # the same build tree as the daemon: build/tests/fsx/hotfs_fsx
        path = os.path.join(os.path.dirname(util.HOTFS_BIN), 'tests', 'fsx',
                            'hotfs_fsx')
    if not path or not os.access(path, os.X_OK):
        pytest.fail('HOTFS_FSX=%r is not an executable (run through '
                    '"meson test --suite integration")' % path)
    return path


def digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


def fsx_cmd(path, seed, numops=None, args=()):
    return [fsx_bin(), '-S', str(seed), '-N', str(numops or FSX_OPS),
            '-f', '1000',
            '-L', '60'] + list(args) + [path]


def check_result(desc, rc, out):
    if rc != 0:
        pytest.fail('%s: hotfs_fsx exited %d; its report:\n%s'
                    % (desc, rc, out[-12000:]))
    assert 'completed OK' in out, out[-4000:]


def excerpt(out):
    """An exerciser's report for a failure message: its head (why it
    stopped) and its tail (the last operations)."""
    if len(out) <= 9000:
        return out
    return out[:3000] + '\n[...]\n' + out[-6000:]


@pytest.fixture
def mount(ws):
    """hotfs over an empty src/; at the end the daemon must be alive and
    exit 0 when unmounted."""
    proc = ws.start()
    yield ws
    if proc.poll() is not None or not util.is_mounted(ws.mnt):
        pytest.fail('hotfs died during the test (exit %r)' % proc.poll())
    ws.stop(proc)


def check_source(ws, names):
    """What the mount shows is what reached the source file."""
    for name in names:
        assert digest(os.path.join(ws.mnt, name)) == \
            digest(os.path.join(ws.src, name)), name
        assert os.stat(os.path.join(ws.mnt, name)).st_size == \
            os.stat(os.path.join(ws.src, name)).st_size, name


RUNS = {
    # seed, extra arguments
    'seed1': (1, []),
    'seed2': (2, []),
    # files up to 4 MiB: ops cross several cache extents
    'seed3-4M': (3, ['-l', '4M', '-o', '512K']),
}


@pytest.mark.parametrize('run', sorted(RUNS), ids=sorted(RUNS))
def test_fsx(mount, run):
    ws = mount
    seed, extra = RUNS[run]
    name = 'fsx.' + run
    r = subprocess.run(fsx_cmd(os.path.join(ws.mnt, name), seed,
                               args=extra),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=FSX_TIMEOUT)
    check_result(name, r.returncode, r.stdout.decode(errors='replace'))
    check_source(ws, [name])


READ_HEAVY = 'read=10,dread=40,mapread=10,write=5,dwrite=3,reopen=6'


@pytest.mark.parametrize('writemode,extent', [('writearound', '64K'),
                                            ('writethrough', '64K'),
                                            ('writearound', '4K'),
                                            ('writethrough', '4K'),
                                            ('writearound', None),
                                            ('writethrough', None)])
def test_fsx_cached(ws, writemode, extent):
    """Small extents promoted on the first access and a read-heavy mix
    (O_DIRECT reads reach the daemon): reads are served from the cache
    store between writes, and writes must invalidate or update it.  4K:
    an extent of one checksum block.  The default extent (None): fsx's
    random reads promote blocks (block grain) beside extents, and writes
    must drop or update exactly the blocks they touch."""
    proc = ws.start(opts='%sthreshold=1,writemode=%s' %
                    ('extent=%s,' % extent if extent else '', writemode))
    name = 'fsx.cached'
    r = subprocess.run(fsx_cmd(os.path.join(ws.mnt, name), 11,
                               args=['-l', '2M', '-o', '256K',
                                     '-w', READ_HEAVY]),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=FSX_TIMEOUT)
    check_result(name, r.returncode, r.stdout.decode(errors='replace'))
    check_source(ws, [name])
    if extent is None:
        s = util.hotfs_stats(ws.mnt)
        assert int(s['promotions_block']) > 0, 'no block promotion'
        assert int(s['read_hit_bytes']) > 0
    ws.stop(proc)


def run_srcwrite(ws, opts, seed):
    proc = ws.start(opts=opts)
    name = 'fsx.srcwrite'
    r = subprocess.run(fsx_cmd(os.path.join(ws.mnt, name), seed,
                               args=['-l', '1M', '-o', '128K',
                                     '-w', READ_HEAVY + ',srcwrite=4',
                                     '-s', os.path.join(ws.src, name)]),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=FSX_TIMEOUT)
    out = r.stdout.decode(errors='replace')
    try:
        check_result(name, r.returncode, out)
        check_source(ws, [name])
    finally:
        ws.stop(proc)


def test_fsx_srcwrite_attr0(ws):
    """The file changes in the source tree between a close and a reopen
    through the mount; with the kernel's attribute cache off, every reopen
    must show the new content: no stale extent from the cache store, no
    stale page from the kernel's page cache."""
    run_srcwrite(ws, 'attr_timeout=0,entry_timeout=0,extent=64K,'
                 'threshold=1', 21)


def test_fsx_srcwrite_default_timeouts(ws):
    """The same with the default timeouts: revalidation on open
    (close-to-open) must make the change visible at once."""
    run_srcwrite(ws, 'extent=64K,threshold=1', 22)


def test_fsx_srcwrite_4k_extents(ws):
    """The same with extents of one block."""
    run_srcwrite(ws, 'extent=4K,threshold=1', 23)


def test_fsx_concurrent(mount):
    """Four exercisers at once, one file each."""
    ws = mount
    procs = []
    for i in range(4):
        name = 'fsx.par%d' % i
        log = open(os.path.join(ws.logs, name + '.log'), 'w+b')
        p = subprocess.Popen(fsx_cmd(os.path.join(ws.mnt, name), 100 + i),
                             stdout=log, stderr=subprocess.STDOUT)
        procs.append((name, p, log))
    failures = []
    try:
        for name, p, log in procs:
            try:
                rc = p.wait(timeout=FSX_TIMEOUT)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = 'timeout'
            log.seek(0)
            out = log.read().decode(errors='replace')
            if rc != 0 or 'completed OK' not in out:
                failures.append('%s: exit %s\n%s' % (name, rc, excerpt(out)))
    finally:
        for _, p, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    if failures:
        pytest.fail('\n\n'.join(failures))
    check_source(ws, ['fsx.par%d' % i for i in range(4)])


def test_fsx_shared_file_regions(ws):
    """Four exercisers on four 100 KiB regions of one file, with 64K
    extents promoted on first access: the regions share extents and
    pages, so promotions race writes to the neighbouring regions, and a
    write must invalidate only what it touches."""
    proc = ws.start(opts='extent=64K,threshold=1')
    path = os.path.join(ws.mnt, 'fsx.shared')
    region = 102400
    procs = []
    for i in range(4):
        log = open(os.path.join(ws.logs, 'fsx.shared%d.log' % i), 'w+b')
        cmd = [fsx_bin(), '-S', str(200 + i), '-N', str(FSX_OPS), '-f', '1000',
               '-L', '60', '-l', str(region), '-o', '30000',
               '-w', 'read=10,dread=20,mapread=10,write=10,dwrite=5,'
               'mapwrite=5,reopen=4,dropcache=6,falloc=4',
               '-r', str(i * region),
               '-V', os.path.join(ws.src, 'fsx.shared'), path]
        procs.append((i, subprocess.Popen(cmd, stdout=log,
                                          stderr=subprocess.STDOUT), log))
    failures = []
    try:
        for i, p, log in procs:
            try:
                rc = p.wait(timeout=FSX_TIMEOUT)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = 'timeout'
            log.seek(0)
            out = log.read().decode(errors='replace')
            if rc != 0 or 'completed OK' not in out:
                failures.append('region %d: exit %s\n%s'
                                % (i, rc, excerpt(out)))
    finally:
        for _, p, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    if failures:
        pytest.fail('\n\n'.join(failures))
    check_source(ws, ['fsx.shared'])
    ws.stop(proc)


def test_fsx_file_survives_remount(ws):
    """After unmount and a fresh mount (same cache store), the file reads
    back as the exerciser left it."""
    proc = ws.start()
    path = os.path.join(ws.mnt, 'fsx.remount')
    r = subprocess.run(fsx_cmd(path, 7),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=FSX_TIMEOUT)
    check_result('fsx.remount', r.returncode,
                 r.stdout.decode(errors='replace'))
    before = digest(path)
    # read it twice more so that its extents are hot enough to be cached
    digest(path)
    digest(path)
    ws.stop(proc)
    assert digest(os.path.join(ws.src, 'fsx.remount')) == before
    proc = ws.start()
    assert digest(path) == before
    assert digest(path) == before
    ws.stop(proc)


@pytest.mark.parametrize('opts,args', [
    ('revalidate=never', []),
    ('revalidate=never,extent=64K,threshold=1',
     ['-l', '2M', '-o', '256K', '-w', READ_HEAVY]),
], ids=['never', 'never-cached'])
def test_fsx_never(ws, opts, args):
    """revalidate=never: the kernel sends no open, release or flush, and
    every read, write, truncate and mapping goes without a handle."""
    proc = ws.start(opts=opts)
    name = 'fsx.never'
    r = subprocess.run(fsx_cmd(os.path.join(ws.mnt, name), 5, args=args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=FSX_TIMEOUT)
    check_result(name, r.returncode, r.stdout.decode(errors='replace'))
    check_source(ws, [name])
    assert int(util.hotfs_stats(ws.mnt)['open_requests']) <= 1
    ws.stop(proc)
