# SPDX-License-Identifier: GPL-2.0-or-later
"""Run the integration suite: /usr/bin/python3 run_pytest.py [pytest args]

Exits 77 (meson's "skipped") when this machine cannot mount FUSE as root,
and turns pytest's "no tests collected" (5), or a run where no test
passed (all skipped), into a failure: a suite that silently runs nothing
must not pass.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))


def check_registered(listed):
    """Every test_*.py here is one of meson's integration tests."""
    have = sorted(f for f in os.listdir(here)
                  if f.startswith('test_') and f.endswith('.py'))
    missing = sorted(set(have) - set(listed))
    gone = sorted(set(listed) - set(have))
    if missing or gone:
        print('tests/integration/meson.build: not registered: %s; '
              'registered but missing: %s' % (missing, gone))
        return 1
    return 0


def main():
    if sys.argv[1:2] == ['--check-registered']:
        return check_registered(sys.argv[2:])
    if os.geteuid() != 0:
        print('integration tests need root (mount, chown, setuid)')
        return 77
    if not os.path.exists('/dev/fuse') or not os.access('/dev/fuse', os.W_OK):
        print('integration tests need /dev/fuse')
        return 77
    try:
        import pytest
    except ImportError:
        print('python3-pytest is not installed for %s' % sys.executable)
        return 1
    os.environ.setdefault('PYTHONDONTWRITEBYTECODE', '1')
    sys.dont_write_bytecode = True
    extra = sys.argv[1:]
    # test files named on the command line replace the whole directory
    named = [a for a in extra if not a.startswith('-') and
             os.path.exists(os.path.join(here, a.split('::')[0]))]
    if named:
        os.chdir(here)
    args = ['-v', '-p', 'no:cacheprovider', '-rfE'] + \
        ([] if named else [here]) + extra
    counted = Outcomes()
    rc = int(pytest.main(args, plugins=[counted]))
    if rc == pytest.ExitCode.NO_TESTS_COLLECTED:
        print('pytest collected no tests: failing')
        return 1
    if rc == 0 and counted.passed == 0:
        print('pytest passed no test (%d skipped): failing'
              % counted.skipped)
        return 1
    return rc


class Outcomes:
    """Counts the tests that passed and were skipped: a run whose every
    test skipped ran nothing."""

    def __init__(self):
        self.passed = self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.passed and report.when == 'call':
            self.passed += 1
        elif report.skipped:
            self.skipped += 1


if __name__ == '__main__':
    sys.exit(main())
