# SPDX-License-Identifier: GPL-2.0-or-later
"""The consistency contract of -o revalidate= (man/hotfs.8): what a change
made in the source behind hotfs's back looks like through the mount in
each mode, and that changes made through the mount are seen at once in
every mode."""
import os

import pytest

import util


def through_mount_changes_seen(ws):
    m = ws.mnt
    with open(os.path.join(m, 'new'), 'w') as f:
        f.write('via mount')
    assert 'new' in os.listdir(m)
    os.chmod(os.path.join(m, 'new'), 0o600)
    assert os.stat(os.path.join(m, 'new')).st_mode & 0o777 == 0o600
    os.rename(os.path.join(m, 'new'), os.path.join(m, 'renamed'))
    assert sorted(os.listdir(m)) == sorted(os.listdir(ws.src))
    with open(os.path.join(m, 'renamed'), 'a') as f:
        f.write(' more')
    assert os.stat(os.path.join(m, 'renamed')).st_size == 14
    with open(os.path.join(m, 'renamed')) as f:
        assert f.read() == 'via mount more'
    os.unlink(os.path.join(m, 'renamed'))
    assert not os.path.exists(os.path.join(m, 'renamed'))


@pytest.mark.parametrize('mode', ['open', '30', 'never'])
def test_changes_through_the_mount(ws, mode):
    with open(os.path.join(ws.src, 'a'), 'w') as f:
        f.write('a')
    ws.start(opts='revalidate=' + mode)
    through_mount_changes_seen(ws)


def test_open_mode_sees_source_changes(ws):
    """revalidate=open: a listing is checked at each opendir, a file's
    data at each open; attributes within attr_timeout (1 s)."""
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('one')
    ws.start(opts='revalidate=open')
    m = ws.mnt
    assert os.listdir(m) == ['f']
    with open(os.path.join(ws.src, 'g'), 'w') as f:
        f.write('new file')
    assert sorted(os.listdir(m)) == ['f', 'g']           # at once
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('two!')
    util.wait_for(lambda: open(os.path.join(m, 'f')).read() == 'two!',
                  'the new content within attr_timeout', timeout=5)


def test_seconds_mode_trusts_for_that_long(ws):
    with open(os.path.join(ws.src, 'f'), 'w') as f:
        f.write('x')
    ws.start(opts='revalidate=2')
    m = ws.mnt
    assert os.stat(os.path.join(m, 'f')).st_mode & 0o777 == 0o644
    os.chmod(os.path.join(ws.src, 'f'), 0o600)
    # seen after at most 2 s (the kernel's attribute cache expires)
    util.wait_for(lambda: os.stat(os.path.join(m, 'f')).st_mode & 0o777
                  == 0o600, 'the chmod to show', timeout=6)


def test_never_mode_trusts_the_kernel_caches(ws):
    """revalidate=never: for trees that change only through hotfs.  The
    kernel keeps names, attributes and file pages without asking: a file
    read once is read again from the page cache, with no request to the
    daemon, even after it was closed."""
    import json
    with open(os.path.join(ws.src, 'f'), 'wb') as f:
        f.write(b'x' * 300000)
    ws.start(opts='revalidate=never')
    m = ws.mnt

    def reads():
        with open(os.path.join(m, '.hotfs', 'stats.json')) as f:
            return json.load(f)['read_requests']
    with open(os.path.join(m, 'f'), 'rb') as f:
        assert f.read() == b'x' * 300000
    n = reads()
    for _ in range(3):
        with open(os.path.join(m, 'f'), 'rb') as f:
            assert f.read() == b'x' * 300000
    assert reads() == n
    with open(os.path.join(m, '.hotfs', 'stats')) as f:
        assert 'revalidate=never' in f.read()
