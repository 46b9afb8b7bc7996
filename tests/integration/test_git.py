# SPDX-License-Identifier: GPL-2.0-or-later
"""A git work tree on the mount, the workload the design is measured on:
git's index trusts stat data (inode, size, mtime, ctime), so a status
that is not clean right after a commit, or that misses a change made in
the source, means hotfs passed attributes through wrong or kept them
stale.
"""
import os
import shutil
import subprocess

import pytest

import util
from conftest import MODES

GIT = shutil.which('git') or '/usr/bin/git'


def git(cwd, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t',
               GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@t',
               GIT_CONFIG_NOSYSTEM='1', HOME=cwd)
    r = subprocess.run([GIT, '-c', 'gc.auto=0', '-c', 'core.trustctime=true',
                        '-c', 'core.checkStat=default'] + list(args),
                       cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    assert r.returncode == 0, 'git %s: %s' % (' '.join(args),
                                              r.stdout.decode())
    return r.stdout.decode()


@pytest.mark.parametrize('mode', ['default', 'warm'])
def test_git_status_clean_and_sees_changes(ws, mode):
    if not os.access(GIT, os.X_OK):
        pytest.fail('git is needed for this test (apt-get install git)')
    # a tree written in the source before mounting
    for d in range(10):
        os.makedirs(os.path.join(ws.src, 'repo', 'dir%d' % d))
        for f in range(30):
            with open(os.path.join(ws.src, 'repo', 'dir%d' % d,
                                   'file%d.c' % f), 'w') as fh:
                fh.write('int f%d_%d(void) { return %d; }\n' % (d, f, f) * 20)
    proc = ws.start(opts=MODES[mode])
    repo = os.path.join(ws.mnt, 'repo')
    git(repo, 'init', '-q')
    git(repo, 'add', '-A')
    git(repo, 'commit', '-q', '-m', 'initial')
    for _ in range(3):
        assert git(repo, 'status', '--porcelain') == ''
    assert git(repo, 'fsck', '--no-progress').strip() == ''
    assert 'absent-string' not in git(repo, 'grep', '-c', 'return 7', '--',
                                      'dir3')

    # a change through the mount, and one in the source behind its back
    with open(os.path.join(repo, 'dir1', 'file1.c'), 'a') as f:
        f.write('/* via mount */\n')
    with open(os.path.join(ws.src, 'repo', 'dir2', 'file2.c'), 'r+') as f:
        f.write('/* in src */')
    os.unlink(os.path.join(ws.src, 'repo', 'dir3', 'file3.c'))
    want = ' M dir1/file1.c\n M dir2/file2.c\n D dir3/file3.c\n'
    util.wait_for(lambda: git(repo, 'status', '--porcelain') == want,
                  'git status to show the three changes: %r'
                  % git(repo, 'status', '--porcelain'))
    git(repo, 'commit', '-q', '-a', '-m', 'second')
    assert git(repo, 'status', '--porcelain') == ''
    # the repository is as valid in the source as through the mount
    assert git(os.path.join(ws.src, 'repo'), 'fsck', '--no-progress') \
        .strip() == ''
    assert git(os.path.join(ws.src, 'repo'), 'log', '--oneline').count(
        '\n') == 2
    ws.stop(proc)
