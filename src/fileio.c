// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Small file I/O helpers (see include/hotfs/fileio.h).  A leaf: no other
 * file of src/ is called from here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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
