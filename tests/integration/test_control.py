# SPDX-License-Identifier: GPL-2.0-or-later
"""Control at run time and machine-readable output, on a real mount.

- hotfsctl set changes threshold, promote_rate, seqcutoff, writemode and
  inode_cache on a live mount (the effect shows in the stats and in what
  gets promoted), and refuses the options fixed at mount, naming them all;
  -o remount, as mount.fuse3 passes it, is refused with one line; a
  kernel-only remount (mount -i) leaves the daemon as it was.
- status shows the effective options, allow_other and default_permissions
  included, in human units; --json of every command has a fixed key set,
  the same with a store (ok) and without one (off: -o nocache).
- .hotfs/metrics and stats --prometheus pass prometheus_client's parser.
- pins lists pinned files by path; info ends with a total.
- warm keeps to promote_rate (or --rate), takes --files-from -, and says
  when what was asked does not fit in the cache.
"""
import json
import os
import subprocess
import time

import pytest

import util
from test_hotfsctl import ctl, stats, write_random

MiB = 1 << 20

STATUS_KEYS = {
    'mountpoint', 'source', 'cachedir', 'options', 'store_state',
    'store_reason', 'store_state_since', 'read_engine', 'restarts',
    'restarts_why', 'source_time_granularity_ns', 'capacity_bytes',
    'cached_bytes', 'cached_extents', 'usage_ratio', 'regions',
    'regions_used', 'pinned_files', 'promotion_queue_depth', 'index_bytes',
    'policy_bytes', 'uptime_seconds', 'version', 'footprint_bytes',
    'allow_other', 'default_permissions', 'dirty_bytes', 'oldest_dirty_age',
    'wlog_used_bytes', 'wlog_capacity_bytes', 'writeback_state',
    'writeback_reason', 'writeback_state_since', 'lost_dirty_bytes',
    'lost_dirty_files', 'wlog_checksum_failures', 'passthrough',
    'fuse_uring',
}
FILE_KEYS = {'path', 'size_bytes', 'cached_bytes', 'cached_extents',
             'extent_bytes', 'pinned', 'copy'}
TOTAL_KEYS = {'files', 'size_bytes', 'cached_bytes', 'cached_extents',
              'pinned_files'}
INFO_KEYS = {'files', 'total', 'errors'}
PINS_KEYS = {'mountpoint', 'files', 'total', 'pinned_files', 'not_found',
             'errors'}
WARM_KEYS = {'mountpoint', 'files', 'asked_bytes', 'copied_bytes',
             'cached_bytes', 'capacity_bytes', 'fits',
             'rate_bytes_per_second', 'seconds', 'errors', 'interrupted'}
LIVE_KEYS = {'time', 'interval_seconds', 'store_state', 'reads_per_second',
             'hit_percent', 'partial_hit_percent', 'miss_percent',
             'cache_read_bytes_per_second', 'source_read_bytes_per_second',
             'promotions_per_second', 'promoted_bytes_per_second',
             'evictions_per_second', 'promotion_queue_depth',
             'usage_percent', 'dirty_bytes', 'flushed_bytes_per_second'}
ANSWER_KEYS = {'ok', 'message'}
DROP_KEYS = {'files', 'dropped_bytes', 'errors'}


def opts_of(mnt):
    return dict(kv.partition('=')[::2]
                for kv in stats(mnt)['options'].split(','))


def read_once(path):
    """One cold pass through a new handle: one access per extent."""
    return util.read_cold(path)


@pytest.fixture
def tree(ws):
    for i in range(4):
        write_random(os.path.join(ws.src, 'f%d' % i), 2 * 256 * 1024, i)
    os.mkdir(os.path.join(ws.src, 'dir'))
    for i in range(3):
        write_random(os.path.join(ws.src, 'dir', 'g%d' % i), 5000 + i, i)
    return ws


def test_set_changes_a_live_mount(tree):
    ws = tree
    ws.start(opts='cachesize=64M,threshold=3')
    assert opts_of(ws.mnt)['threshold'] == '3'
    # below the threshold: one pass promotes nothing
    read_once(os.path.join(ws.mnt, 'f0'))
    s = stats(ws.mnt)
    assert s['promotions'] == 0 and s['not_promoted_below_threshold'] > 0
    r = ctl('set', ws.mnt, 'threshold=1', 'promote_rate=16M',
            'seqcutoff=1G', 'writemode=writethrough', 'inode_cache=5000')
    assert r.stdout.startswith(b'ok: threshold=1,promote_rate=16777216'), r
    o = opts_of(ws.mnt)
    assert (o['threshold'], o['promote_rate'], o['seqcutoff'],
            o['writemode'], o['inode_cache']) == \
        ('1', '16777216', str(1 << 30), 'writethrough', '5000')
    # and the new threshold is the policy's: one pass promotes now
    read_once(os.path.join(ws.mnt, 'f1'))
    util.wait_for(lambda: stats(ws.mnt)['promotions'] >= 2,
                  'f1 promoted at threshold 1')
    # status shows the effective options too
    assert 'threshold=1,' in ctl('status', ws.mnt).stdout.decode()
    assert 'threshold=1,' in ctl('status', '--json', ws.mnt).stdout.decode()


def test_set_refuses_what_is_fixed_at_mount(tree):
    ws = tree
    ws.start(opts='cachesize=64M')
    before = stats(ws.mnt)['options']
    r = ctl('set', ws.mnt, 'threshold=5', 'extent=1M', 'nocache',
            'cachedir=/tmp', check=False)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.count('\n') == 1, r
    assert 'extent, nocache, cachedir' in err and 'threshold' in err, err
    # all or nothing: threshold=5 was not applied either
    assert stats(ws.mnt)['options'] == before
    for bad, words in (('threshold=17', 'invalid threshold'),
                       ('writemode=writeback', 'not switched to while mounted'),
                       ('writemode=sometimes', 'invalid writemode'),
                       ('frobs=1', "unknown option 'frobs'")):
        r = ctl('set', ws.mnt, bad, check=False)
        assert r.returncode == 1 and words in r.stderr.decode(), r
    assert stats(ws.mnt)['options'] == before
    assert ctl('set', ws.mnt, check=False).returncode == 2


def test_set_refused_to_others(tree):
    ws = tree
    ws.start(opts='cachesize=64M,allow_other')
    r = ctl('set', ws.mnt, 'threshold=1', check=False, uid=65534)
    assert r.returncode == 1 and b'Permission denied' in r.stderr, r
    assert opts_of(ws.mnt)['threshold'] == '2'


def test_remount_options_never_reach_the_daemon(tree):
    """mount -o remount,threshold=3 MNT runs mount.fuse3, which starts
    "hotfs SRC MNT -o <the mount's options>,remount,threshold=3": a second
    daemon, refused with one line that says what to use.  The kernel
    alone (mount -i) accepts the remount and tells the daemon nothing."""
    ws = tree
    proc = ws.start(opts='cachesize=64M')
    r = subprocess.run([util.hotfs_bin(), ws.src, ws.mnt, '-o',
                        'rw,nosuid,nodev,relatime,remount,threshold=3'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.count('\n') == 1, err
    assert '-o remount' in err and 'hotfsctl set' in err, err
    r = subprocess.run(['mount', '-i', '-o', 'remount,threshold=3', ws.mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode == 0:
        assert opts_of(ws.mnt)['threshold'] == '2'
    assert proc.poll() is None and util.is_mounted(ws.mnt)
    assert open(os.path.join(ws.mnt, 'f0'), 'rb').read() == \
        open(os.path.join(ws.src, 'f0'), 'rb').read()


def test_status_effective_options_and_units(tree):
    ws = tree
    ws.start(opts='cachesize=64M,allow_other')
    out = ctl('status', ws.mnt).stdout.decode()
    line = [ln for ln in out.splitlines() if ln.startswith('options ')][0]
    assert ',allow_other,default_permissions' in line, out
    cached = [ln for ln in out.splitlines() if ln.startswith('cached ')][0]
    assert ' of 64.0 MiB, 0.0%' in cached, out
    j = json.loads(ctl('status', '--json', ws.mnt).stdout)
    assert j['allow_other'] is True and j['default_permissions'] is True
    assert j['capacity_bytes'] == 64 * MiB


def check_keys(mnt, state):
    """Every command's JSON, against the fixed key sets."""
    j = json.loads(ctl('status', mnt, '--json').stdout)
    assert set(j) == STATUS_KEYS and j['store_state'] == state, j
    s = json.loads(ctl('stats', mnt, '--json').stdout)
    assert s['store_state'] == state
    j = json.loads(ctl('info', '--json', os.path.join(mnt, 'dir')).stdout)
    assert set(j) == INFO_KEYS and set(j['total']) == TOTAL_KEYS, j
    assert len(j['files']) == 3 and \
        all(set(f) == FILE_KEYS for f in j['files']), j
    assert j['total']['size_bytes'] == 5000 + 5001 + 5002
    j = json.loads(ctl('pins', '--json', mnt).stdout)
    assert set(j) == PINS_KEYS and set(j['total']) == TOTAL_KEYS, j
    r = ctl('warm', '--json', '--rate', '0', os.path.join(mnt, 'dir'),
            check=False)
    j = json.loads(r.stdout)
    assert set(j) == WARM_KEYS, j
    assert (r.returncode == 0) == (state == 'ok'), r
    r = ctl('evict', '--json', os.path.join(mnt, 'dir'), check=False)
    assert set(json.loads(r.stdout)) == DROP_KEYS, r
    r = ctl('set', '--json', mnt, 'threshold=2')
    assert set(json.loads(r.stdout)) == ANSWER_KEYS
    # retained inodes need the store's periodic sweep
    r = ctl('set', mnt, 'inode_cache=5', check=False)
    assert (r.returncode == 0) == (state == 'ok'), r
    if state == 'off':
        assert b'the mount has no store' in r.stderr, r
    r = ctl('reset-stats', '--json', mnt)
    assert json.loads(r.stdout) == {'ok': True, 'message': ''}
    p = subprocess.Popen([os.environ['HOTFSCTL_BIN'], 'stats', mnt, '--json',
                          '-w', '0.1'], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        rows = [json.loads(p.stdout.readline()) for _ in range(3)]
    finally:
        p.terminate()
        p.communicate(timeout=10)
    assert all(set(r) == LIVE_KEYS and r['store_state'] == state
               for r in rows), rows


def test_json_keys_with_and_without_store(tree):
    ws = tree
    proc = ws.start(opts='cachesize=64M')
    check_keys(ws.mnt, 'ok')
    ws.stop(proc)
    proc = ws.start(opts='nocache', cachedir=False)
    check_keys(ws.mnt, 'off')
    ws.stop(proc)
    # a store that could not open (smaller than two regions)
    ws.start(opts='cachesize=16M', cachedir=os.path.join(ws.root, 'c16'))
    assert 'two regions' in stats(ws.mnt)['store_reason']
    check_keys(ws.mnt, 'off')


def parse_metrics(text):
    from prometheus_client.parser import text_string_to_metric_families
    return {f.name: f for f in text_string_to_metric_families(text)}


def read_virtual(path):
    """One read(2), as hotfsctl does: without open round trips
    (revalidate=never) a read past the end renders a new snapshot."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 20).decode()
    finally:
        os.close(fd)


def check_metrics(mnt, state):
    text = read_virtual(os.path.join(mnt, '.hotfs', 'metrics'))
    fams = parse_metrics(text)
    s = stats(mnt)
    other = parse_metrics(ctl('stats', '--prometheus', mnt).stdout.decode())
    assert set(other) == set(fams)
    # counters end in _total, byte amounts in _bytes(_total)
    for f in fams.values():
        for smp in f.samples:
            assert smp.labels['mountpoint'] == os.path.realpath(mnt)
            if f.type == 'counter':
                assert smp.name.endswith('_total'), smp
    hits = fams['hotfs_read_hits'].samples[0]
    assert hits.name == 'hotfs_read_hits_total' and \
        fams['hotfs_read_hits'].type == 'counter'
    assert hits.value <= s['read_hits'] + 5
    reasons = {smp.labels['reason']: smp.value
               for smp in fams['hotfs_not_promoted'].samples}
    assert set(reasons) == {'below_threshold', 'seqcutoff', 'queue_full',
                            'admission', 'race', 'store', 'racy',
                            'budget'}
    assert {smp.labels['reason']
            for smp in fams['hotfs_invalidations'].samples} == \
        {'write', 'source_changed', 'checksum', 'user', 'copied'}
    states = {smp.labels['state']: smp.value
              for smp in fams['hotfs_store_state'].samples}
    assert states == {'ok': state == 'ok', 'read-only': 0,
                      'off': state == 'off'}, states
    # no writeback here
    wstates = {smp.labels['state']: smp.value
               for smp in fams['hotfs_writeback_state'].samples}
    assert wstates == {'ok': 0, 'degraded': 0, 'writethrough': 0,
                       'off': 1}, wstates
    assert fams['hotfs_capacity_bytes'].type == 'gauge'
    assert fams['hotfs_capacity_bytes'].samples[0].value == \
        s['capacity_bytes']
    assert fams['hotfs_read_hit_bytes'].samples[0].name == \
        'hotfs_read_hit_bytes_total'
    info = fams['hotfs_info'].samples[0]
    assert info.labels['version'] == s['version'] and info.value == 1
    return reasons


def test_prometheus_metrics_parse(tree):
    ws = tree
    proc = ws.start(opts='cachesize=64M,threshold=3')
    read_once(os.path.join(ws.mnt, 'f0'))
    reasons = check_metrics(ws.mnt, 'ok')
    assert reasons['below_threshold'] > 0
    ws.stop(proc)
    proc = ws.start(opts='nocache', cachedir=False)
    check_metrics(ws.mnt, 'off')
    ws.stop(proc)
    # without open round trips the virtual files are read by snapshot
    ws.start(opts='cachesize=64M,revalidate=never')
    read_once(os.path.join(ws.mnt, 'f1'))
    check_metrics(ws.mnt, 'ok')


def test_pins_by_path_and_info_total(tree):
    ws = tree
    ws.start(opts='cachesize=64M')
    a = os.path.join(ws.mnt, 'dir', 'g1')
    b = os.path.join(ws.mnt, 'f2')
    ctl('pin', '--rate', '0', a, b)
    out = ctl('pins', ws.mnt).stdout.decode().splitlines()
    assert sorted(ln.split(':')[0] for ln in out[:-1]) == sorted([b, a])
    assert out[-1].startswith('total: 2 files,') and '2 pinned' in out[-1]
    ctl('unpin', b)
    j = json.loads(ctl('pins', '--json', ws.mnt).stdout)
    assert [f['path'] for f in j['files']] == [a] and j['not_found'] == 0
    assert j['pinned_files'] == 1
    # info: one line per file, then the total
    out = ctl('info', os.path.join(ws.mnt, 'dir')).stdout.decode()
    last = out.splitlines()[-1]
    assert out.count('\n') == 4 and last.startswith('total: 3 files, '), out
    assert '1 pinned' in last and '(' in last, out


def warm_time(*args):
    t = time.monotonic()
    r = ctl('warm', '--json', *args)
    return time.monotonic() - t, json.loads(r.stdout)


def test_warm_keeps_to_the_rate(ws):
    write_random(os.path.join(ws.src, 'a'), 8 * MiB, 1)
    write_random(os.path.join(ws.src, 'b'), 8 * MiB, 2)
    write_random(os.path.join(ws.src, 'c'), 8 * MiB, 3)
    ws.start(opts='cachesize=64M,promote_rate=4M')
    # the mount's promote_rate by default: 8 MiB at 4 MiB/s
    secs, j = warm_time(os.path.join(ws.mnt, 'a'))
    assert j['rate_bytes_per_second'] == 4 * MiB and secs >= 1.8, (secs, j)
    assert j['copied_bytes'] == 8 * MiB and j['fits'] is True
    # --rate, and the rate set while mounted
    ctl('set', ws.mnt, 'promote_rate=0')
    secs, j = warm_time('--rate', '8M', os.path.join(ws.mnt, 'b'))
    assert j['rate_bytes_per_second'] == 8 * MiB and secs >= 0.9, (secs, j)
    secs, j = warm_time(os.path.join(ws.mnt, 'c'))
    assert j['rate_bytes_per_second'] == 0 and j['copied_bytes'] == 8 * MiB
    r = ctl('warm', '--rate', 'fast', os.path.join(ws.mnt, 'c'),
            check=False)
    assert r.returncode == 2 and b'--rate' in r.stderr


def test_warm_files_from_and_fit(ws):
    for i in range(6):
        write_random(os.path.join(ws.src, 'big%d' % i), 8 * MiB, i)
    write_random(os.path.join(ws.src, 'small'), 1000, 9)
    # the smallest store: two 16 MiB regions
    ws.start(opts='cachesize=32M,promote_rate=0')
    listed = [os.path.join(ws.mnt, 'small'), os.path.join(ws.mnt, 'big0')]
    r = subprocess.run([os.environ['HOTFSCTL_BIN'], 'warm', '--files-from',
                        '-', '--json'], input=('\n'.join(listed) + '\n\n')
                       .encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, r
    j = json.loads(r.stdout)
    assert j['files'] == 2 and j['asked_bytes'] == 8 * MiB + 1000 and \
        j['fits'] is True, j
    assert b'all 8.0 MiB asked is cached' not in r.stderr   # --json
    infos = json.loads(ctl('info', '--json', os.path.join(ws.mnt, 'big1'))
                       .stdout)
    assert infos['total']['cached_bytes'] == 0
    # 48 MiB asked of a 32 MiB cache
    r = ctl('warm', ws.mnt)
    err = r.stderr.decode()
    assert 'not all of it can stay cached' in err, err
    assert 'does not fit in the cache' in err and 'only ' in err, err
    r = ctl('warm', '--json', ws.mnt)
    j = json.loads(r.stdout)
    assert j['fits'] is False and j['cached_bytes'] < j['asked_bytes'], j
    assert j['capacity_bytes'] == 32 * MiB


def test_umount_then_flock_waits_for_the_state(tree):
    """umount returns before the daemon wrote its state; flock on
    cachedir/lock waits until it has (as man/hotfs.8 says)."""
    ws = tree
    proc = ws.start(opts='cachesize=64M')
    for name in ('f0', 'f1', 'dir/g0'):
        read_once(os.path.join(ws.mnt, name))
    os.listdir(os.path.join(ws.mnt, 'dir'))
    for name in ('meta', 'counts'):
        assert not os.path.exists(os.path.join(ws.cache, name))
    subprocess.run(['umount', ws.mnt], check=True, timeout=30)
    r = subprocess.run(['flock', '-w', '30',
                        os.path.join(ws.cache, 'lock'), 'true'],
                       timeout=60)
    assert r.returncode == 0
    for name in ('meta', 'counts'):
        assert os.path.getsize(os.path.join(ws.cache, name)) > 0, name
    assert proc.wait(timeout=util.TIMEOUT) == 0


def test_set_while_reading_and_writing(tree):
    """Settings changed again and again under readers and writers: every
    read returns the source's bytes (under ThreadSanitizer in
    tests/run.sh: each part takes the new value atomically)."""
    import threading
    ws = tree
    ws.start(opts='cachesize=64M,threshold=1')
    stop = threading.Event()
    errors = []

    def reader():
        while not stop.is_set():
            for i in range(3):
                name = 'f%d' % i
                got = util.read_cold(os.path.join(ws.mnt, name))
                with open(os.path.join(ws.src, name), 'rb') as f:
                    if got != f.read():
                        errors.append(name)
            # cached, so that writes update or drop its extents
            util.read_cold(os.path.join(ws.mnt, 'f3'))

    def writer():
        n = 0
        while not stop.is_set():
            with open(os.path.join(ws.mnt, 'f3'), 'r+b') as f:
                f.seek((n * 4096) % (256 * 1024))
                f.write(bytes([n % 256]) * 4096)
            n += 1

    threads = [threading.Thread(target=reader),
               threading.Thread(target=writer)]
    for t in threads:
        t.start()
    try:
        for k in range(20):
            ctl('set', ws.mnt, 'threshold=%d' % (1 + k % 3),
                'promote_rate=%s' % ('0' if k % 2 else '1M'),
                'seqcutoff=%s' % ('0' if k % 2 else '64K'),
                'writemode=%s' % ('writethrough' if k % 2 else
                                  'writearound'),
                'inode_cache=%d' % (10 + k))
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    # f3, written through the mount in both modes, reads back as the
    # source has it
    with open(os.path.join(ws.src, 'f3'), 'rb') as f:
        assert util.read_cold(os.path.join(ws.mnt, 'f3')) == f.read()
    assert opts_of(ws.mnt)['inode_cache'] == '29'
