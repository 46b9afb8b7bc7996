// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Small file I/O helpers (see include/hotfs/fileio.h).  A leaf: no other
 * file of src/ is called from here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/fileio.h"

ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  off + (off_t)done);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
				   off + (off_t)done);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int file_make_private(int fd, mode_t mode)
{
	struct stat sb;

	if (fstat(fd, &sb))
		return -errno;
	if (sb.st_uid != geteuid() && fchown(fd, geteuid(), getegid()))
		return -errno;
	if ((sb.st_mode & 07777) != mode && fchmod(fd, mode))
		return -errno;
	return 0;
}

int file_replace_at(int dirfd, const char *name, const void *buf,
		    size_t len)
{
	char tmp[256];
	ssize_t n;
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	if (fd == -1)
		return -errno;
	/* one left behind keeps its mode through O_CREAT */
	err = file_make_private(fd, 0600);
	if (!err) {
		n = pwrite_full(fd, buf, len, 0);
		err = n < 0 ? (int)n : 0;
	}
	if (!err && fsync(fd) == -1)
		err = -errno;
	if (close(fd) == -1 && !err)
		err = -errno;
	if (!err && renameat(dirfd, tmp, dirfd, name) == -1)
		err = -errno;
	if (err) {
		unlinkat(dirfd, tmp, 0);
		return err;
	}
	return fsync(dirfd) == -1 ? -errno : 0;
}

int reopen_fd(int proc_self_fd, int fd, int flags)
{
	char pn[32];
	int r;

	snprintf(pn, sizeof(pn), "%d", fd);
	r = openat(proc_self_fd, pn, flags | O_CLOEXEC);
	if (r == -1 && errno == EPERM && (flags & O_NOATIME))
		r = openat(proc_self_fd, pn, (flags & ~O_NOATIME) | O_CLOEXEC);
	return r == -1 ? -errno : r;
}
