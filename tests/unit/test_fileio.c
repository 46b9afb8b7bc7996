// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the file I/O helpers (src/fileio.c): pread_full reads
 * everything up to EOF and reports errors as -errno; reopen_fd opens the
 * object an O_PATH descriptor names, following it through renames.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/fileio.h"

static void test_pread_full(void **state)
{
	char path[] = "/tmp/hotfs-fileio-XXXXXX", buf[64];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	assert_int_equal(pread_full(fd, buf, 4, 3), 4);
	assert_memory_equal(buf, "3456", 4);
	/* up to EOF: short, not an error */
	assert_int_equal(pread_full(fd, buf, sizeof(buf), 6), 4);
	assert_int_equal(pread_full(fd, buf, sizeof(buf), 100), 0);
	close(fd);
	assert_int_equal(pread_full(fd, buf, 4, 0), -EBADF);
}

static void test_reopen_follows_the_object(void **state)
{
	char dir[] = "/tmp/hotfs-fileio-XXXXXX", a[64], b[64], buf[8];
	int self, pfd, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	fd = open(a, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	self = open("/proc/self/fd", O_PATH | O_CLOEXEC);
	pfd = open(a, O_PATH | O_CLOEXEC);
	assert_true(self >= 0 && pfd >= 0);
	assert_int_equal(rename(a, b), 0);
	fd = reopen_fd(self, pfd, O_RDONLY | O_NOATIME);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* a descriptor that names nothing: -errno */
	assert_int_equal(reopen_fd(self, 999, O_RDONLY), -ENOENT);
	close(pfd);
	close(self);
	unlink(b);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pread_full),
		cmocka_unit_test(test_reopen_follows_the_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
