// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the file I/O helpers (src/lib/fileio.c): pread_full reads
 * everything up to EOF and reports errors as -errno; reopen_fd opens the
 * object an O_PATH descriptor names, following it through renames; the
 * cachedir and its files are opened following no symlink, and nothing of
 * another user's (or linked elsewhere) is changed or emptied.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/fileio.h"
#include "unit_util.h"

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

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void assert_text(const char *path, const char *text, mode_t mode)
{
	char buf[64] = "";
	struct stat st;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_string_equal(buf, text);
	assert_int_equal(st.st_mode & 07777, mode);
}

static void test_dir_open_owned(void **state)
{
	char dir[] = "/tmp/hotfs-fileio-XXXXXX", p[128], why[256];
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* a missing last component is made, with the mode */
	snprintf(p, sizeof(p), "%s//cache/", dir);
	fd = dir_open_owned(p, 0700, why, sizeof(why));
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	close(fd);
	/* only the last */
	snprintf(p, sizeof(p), "%s/no/cache", dir);
	assert_int_equal(dir_open_owned(p, 0700, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "/no'"));
	/* a symlink anywhere on the path: refused, named, not followed */
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_int_equal(symlink("cache", p), 0);
	assert_int_equal(dir_open_owned(p, 0700, why, sizeof(why)), -ELOOP);
	assert_string_equal(why, "it is a symlink (not followed)");
	snprintf(p, sizeof(p), "%s/link/sub", dir);
	assert_int_equal(dir_open_owned(p, 0700, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "/link' is a symlink"));
	snprintf(p, sizeof(p), "%s/cache/sub", dir);
	assert_int_equal(access(p, F_OK), -1);
	/* a file */
	snprintf(p, sizeof(p), "%s/file", dir);
	put(p, "x", 0600);
	assert_int_equal(dir_open_owned(p, 0, NULL, 0), -ENOTDIR);
	/* another user's directory: refused, left as it was */
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/theirs", dir);
		assert_int_equal(mkdir(p, 0755), 0);
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(dir_open_owned(p, 0700, why, sizeof(why)),
				 -EACCES);
		assert_non_null(strstr(why, "uid 65534"));
		assert_int_equal(stat(p, &st), 0);
		assert_true(st.st_uid == 65534 && (st.st_mode & 0777) == 0755);
	}
	assert_int_equal(ut_rm_tree(dir), 0);
}

static void test_file_open_private(void **state)
{
	char dir[] = "/tmp/hotfs-fileio-XXXXXX", p[128], q[128], why[256];
	struct stat st;
	int dfd, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	/* made 0600; an old 0644 one of the daemon's made 0600 */
	fd = file_open_private(dfd, "new", O_RDWR | O_CREAT, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/new", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(p, sizeof(p), "%s/old", dir);
	put(p, "old", 0644);
	fd = file_open_private(dfd, "old", O_RDWR | O_CREAT | O_TRUNC, why,
			       sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	assert_text(p, "", 0600);
	/* a symlink in a file's place is not followed: its target is not
	 * created, emptied or made 0600 */
	snprintf(p, sizeof(p), "%s/target", dir);
	put(p, "theirs", 0644);
	assert_int_equal(symlinkat("target", dfd, "data"), 0);
	assert_int_equal(file_open_private(dfd, "data", O_RDWR | O_CREAT |
					   O_TRUNC, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symlink"));
	assert_text(p, "theirs", 0644);
	assert_int_equal(symlinkat("missing", dfd, "lock"), 0);
	assert_int_equal(file_open_private(dfd, "lock", O_RDWR | O_CREAT,
					   NULL, 0), -ELOOP);
	assert_int_equal(faccessat(dfd, "missing", F_OK, 0), -1);
	/* nor a hard link to another file */
	snprintf(q, sizeof(q), "%s/hard", dir);
	assert_int_equal(link(p, q), 0);
	assert_int_equal(file_open_private(dfd, "hard", O_RDWR | O_TRUNC,
					   why, sizeof(why)), -EMLINK);
	assert_non_null(strstr(why, "hard links"));
	assert_text(p, "theirs", 0644);
	/* nor another user's file */
	if (geteuid() == 0) {
		assert_int_equal(unlink(q), 0);
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(file_open_private(dfd, "target", O_RDWR |
						   O_TRUNC, why, sizeof(why)),
				 -EACCES);
		assert_non_null(strstr(why, "another user"));
		assert_text(p, "theirs", 0644);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_uid, 65534);
	}
	/* a temporary file left in the way is replaced, not followed */
	assert_int_equal(symlinkat("target", dfd, "meta.tmp"), 0);
	assert_int_equal(file_replace_at(dfd, "meta", "new", 3), 0);
	assert_text(p, "theirs", 0644);
	snprintf(q, sizeof(q), "%s/meta", dir);
	assert_text(q, "new", 0600);
	close(dfd);
	assert_int_equal(ut_rm_tree(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pread_full),
		cmocka_unit_test(test_reopen_follows_the_object),
		cmocka_unit_test(test_dir_open_owned),
		cmocka_unit_test(test_file_open_private),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
