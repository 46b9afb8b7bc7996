# SPDX-License-Identifier: GPL-2.0-or-later
"""hotfsctl on a real mount: every verb, with its effect checked through
the counters and through what reaches the source (read_miss_bytes: bytes
read from the source for readers)."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

import util

EXT = 256 * 1024
CTL = os.environ.get('HOTFSCTL_BIN', '')


def ctl(*args, check=True, uid=None):
    if not CTL or not os.access(CTL, os.X_OK):
        pytest.fail('HOTFSCTL_BIN=%r is not an executable' % CTL)
    kw = {}
    binary = CTL
    if uid is not None:
        # the build tree may not be reachable by that user (a 0700 clone):
        # run a copy from a world-readable place
        tmp = tempfile.mkdtemp(prefix='hotfsctl-', dir='/tmp')
        os.chmod(tmp, 0o755)
        binary = os.path.join(tmp, 'hotfsctl')
        shutil.copy(CTL, binary)
        os.chmod(binary, 0o755)
        # and the sanitizers' suppression files it is told to read
        env = dict(os.environ)
        for var in ('TSAN_OPTIONS', 'LSAN_OPTIONS', 'ASAN_OPTIONS',
                    'UBSAN_OPTIONS'):
            def reachable(m):
                copy = os.path.join(tmp, var + '.supp')
                shutil.copy(m.group(1), copy)
                os.chmod(copy, 0o644)
                return 'suppressions=' + copy
            if 'suppressions=' in env.get(var, ''):
                env[var] = re.sub(r'suppressions=([^ :]+)', reachable,
                                  env[var])
        kw['env'] = env
        kw['preexec_fn'] = lambda: (os.setgroups([]), os.setgid(uid),
                                    os.setuid(uid))
    try:
        r = subprocess.run([binary] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120, **kw)
    finally:
        if binary != CTL:
            shutil.rmtree(os.path.dirname(binary))
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def stats(mnt):
    with open(os.path.join(mnt, '.hotfs', 'stats.json')) as f:
        return json.load(f)


def write_random(path, size, seed):
    import random
    with open(path, 'wb') as f:
        f.write(random.Random(seed).randbytes(size))


def misses_while_reading(mnt, name):
    """Bytes the daemon read from the source to serve a cold read."""
    before = stats(mnt)['read_miss_bytes']
    data = util.read_cold(os.path.join(mnt, name))
    return stats(mnt)['read_miss_bytes'] - before, data


@pytest.fixture
def tree(ws):
    write_random(os.path.join(ws.src, 'big'), 10 * EXT + 99, 1)
    os.mkdir(os.path.join(ws.src, 'dir'))
    for i in range(20):
        write_random(os.path.join(ws.src, 'dir', 'f%d' % i), 3000 + i, i)
    return ws


def test_warm_then_evict(tree):
    ws = tree
    ws.start(opts='cachesize=64M')
    src = open(os.path.join(ws.src, 'big'), 'rb').read()
    miss, data = misses_while_reading(ws.mnt, 'big')
    assert data == src and miss >= len(src)      # cold: from the source
    r = ctl('warm', os.path.join(ws.mnt, 'big'), os.path.join(ws.mnt, 'dir'))
    assert b'21/21 files' in r.stderr             # progress lines
    s = stats(ws.mnt)
    assert s['cached_extents'] == 11 + 20
    miss, data = misses_while_reading(ws.mnt, 'big')
    assert data == src and miss == 0              # warm: never the source
    for i in range(20):
        assert misses_while_reading(ws.mnt, 'dir/f%d' % i)[0] == 0
    r = ctl('info', os.path.join(ws.mnt, 'big'))
    assert b'(11 extents of 256 KiB)' in r.stdout
    ctl('evict', os.path.join(ws.mnt, 'big'))
    assert stats(ws.mnt)['invalidations_user'] == 11
    assert b'0 B of' in ctl('info', os.path.join(ws.mnt, 'big')).stdout
    miss, data = misses_while_reading(ws.mnt, 'big')
    assert data == src and miss >= len(src)      # evicted: source again
    # (still hot for the policy: this read promotes it again)


def test_pin_survives_scan_and_remount(tree):
    ws = tree
    # the smallest store: two 16 MiB regions
    ws.start(opts='cachesize=32M,threshold=1')
    pinned = os.path.join(ws.mnt, 'dir', 'f3')
    ctl('pin', pinned)
    assert b'pinned' in ctl('info', pinned).stdout
    # a scan several times the cache size, forced into the store
    write_random(os.path.join(ws.src, 'scan'), 100 << 20, 7)
    ctl('warm', '--rate', '0', os.path.join(ws.mnt, 'scan'))
    s = stats(ws.mnt)
    assert s['evicted_regions'] >= 2, s
    assert b'1 extents' in ctl('info', pinned).stdout
    assert misses_while_reading(ws.mnt, 'dir/f3')[0] == 0
    # across a restart (a second mount point: the harness cleans each once)
    ws.stop(ws.daemons[-1][0])
    mnt2 = os.path.join(ws.root, 'mnt2')
    os.mkdir(mnt2)
    ws.start(mnt=mnt2, opts='cachesize=32M')
    out = ctl('info', os.path.join(mnt2, 'dir', 'f3')).stdout
    assert b'pinned' in out and b'1 extents' in out
    ctl('unpin', os.path.join(mnt2, 'dir', 'f3'))
    # the file's line (the total's says "0 pinned")
    assert b'pinned' not in ctl('info', os.path.join(mnt2, 'dir',
                                                     'f3')).stdout \
        .splitlines()[0]
    assert stats(mnt2)['pinned_files'] == 0


def test_status_stats_reset(tree):
    ws = tree
    ws.start(opts='cachesize=64M,threshold=3')
    out = ctl('status', ws.mnt).stdout.decode()
    assert 'source                 %s' % ws.src in out
    assert 'cachedir               %s' % ws.cache in out
    assert 'threshold=3' in out and 'store_state            ok' in out
    util.read_cold(os.path.join(ws.mnt, 'big'))
    text = ctl('stats', ws.mnt).stdout.decode()
    assert 'read_requests:' in text
    j = json.loads(ctl('stats', ws.mnt, '--json').stdout)
    assert j['read_requests'] > 0
    assert ctl('reset-stats', ws.mnt).stdout == b'ok\n'
    assert stats(ws.mnt)['read_requests'] == 0


def test_stats_live_view(tree):
    ws = tree
    ws.start(opts='cachesize=64M')
    p = subprocess.Popen([CTL, 'stats', ws.mnt, '-w', '0.1'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    try:
        for _ in range(3):
            util.read_cold(os.path.join(ws.mnt, 'big'))
            lines.append(p.stdout.readline())
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    assert lines[0].split()[:2] == [b'reads/s', b'hit%']
    assert lines[0].split()[-2:] == [b'dirtyMB', b'flushMB/s']
    assert len(lines[1].split()) == 13


def test_control_refused_to_others_stats_readable(tree):
    ws = tree
    ws.start(opts='cachesize=64M,allow_other')
    r = ctl('warm', os.path.join(ws.mnt, 'big'), check=False, uid=65534)
    assert r.returncode == 1 and b'Permission denied' in r.stderr
    r = ctl('evict', os.path.join(ws.mnt, 'big'), check=False, uid=65534)
    assert r.returncode == 1 and b'Permission denied' in r.stderr
    r = ctl('reset-stats', ws.mnt, check=False, uid=65534)
    assert r.returncode == 1
    assert stats(ws.mnt)['cached_extents'] == 0
    r = ctl('stats', ws.mnt, uid=65534)
    assert b'read_requests:' in r.stdout


def test_bad_usage(ws):
    ws.start(opts='cachesize=64M')
    assert ctl(check=False).returncode == 2
    assert ctl('frobnicate', check=False).returncode == 2
    r = ctl('stats', '/tmp', check=False)
    assert r.returncode == 1 and b'not on a hotfs mount' in r.stderr
    r = ctl('warm', os.path.join(ws.mnt, 'missing'), check=False)
    assert r.returncode == 1


# The keys "hotfsctl set" takes: one list (src/lib/ctl_keys.c), which
# hotfsctl's usage prints; README.md and the man pages must name the same.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
USAGE_COL = 37


def usage_set_keys():
    out = ctl('--help').stdout.decode()
    lines = out.splitlines()
    i = [n for n, ln in enumerate(lines) if ln.startswith('  set MOUNT')][0]
    text = lines[i]
    for ln in lines[i + 1:]:
        if not ln.startswith(' ' * USAGE_COL):
            break
        text += ' ' + ln.strip()
    return {k.strip() for k in text.split('while mounted:')[1].split(',')}


def mount_options():
    r = subprocess.run([util.hotfs_bin(), '--help'], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    return set(re.findall(r'-o (\w+)', r.stdout.decode()))


def doc_slice(path, start, end):
    """The lines of path from the first that matches start to the first
    after it that matches end, both included."""
    with open(os.path.join(REPO, path)) as f:
        lines = f.read().splitlines()
    i = [n for n, ln in enumerate(lines) if re.search(start, ln)][0]
    j = [n for n, ln in enumerate(lines[i:]) if re.search(end, ln)][0]
    return lines[i:i + j + 1]


def troff_bold(lines):
    """The words set in bold: .B's, .BR's and .BI's even arguments, .RB's
    and .IB's odd ones, and \\fB...\\fR."""
    import shlex
    words = []
    for ln in lines:
        words += re.findall(r'\\fB(.*?)\\f[RP]', ln)
        m = re.match(r'\.(B|BR|BI|RB|IB)\s+(.*)', ln)
        if not m:
            continue
        args = shlex.split(m.group(2).replace('\\', '\\\\'))
        if m.group(1) == 'B':
            words += ' '.join(args).split()
        else:
            words += args[m.group(1).startswith('B') ^ 1::2]
    return words


def backticked(lines):
    return re.findall(r'`([^`]*)`', ' '.join(lines))


def test_set_keys_documented():
    keys = usage_set_keys()
    opts = mount_options()
    assert keys and keys <= opts, (keys, opts)
    table = [ln for ln in doc_slice('README.md', r'^\| option \|',
                                    r'^$')
             if ln.startswith('| `') and '(live' in ln]
    docs = {
        'README.md, hotfsctl set':
            backticked(doc_slice('README.md', r'`hotfsctl set` changes',
                                 r'on a live mount')),
        "README.md, the options marked (live)":
            [w.split('=')[0] for ln in table
             for w in backticked([ln.split(' | ')[0]])],
        'man/hotfs.8, Changing options while mounted':
            troff_bold(doc_slice('man/hotfs.8',
                                 r'^\.SS Changing options while mounted',
                                 r'can change on a live mount')),
        'man/hotfsctl.8, set':
            troff_bold(doc_slice('man/hotfsctl.8', r'^\.BI "set "',
                                 r'^\(with the values')),
    }
    for where, words in docs.items():
        named = set(words) & opts
        assert named == keys, '%s: missing %s, not settable %s' % (
            where, sorted(keys - named), sorted(named - keys))
