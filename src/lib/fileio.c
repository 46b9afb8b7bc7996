// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Small file I/O helpers (see include/hotfs/fileio.h).  A leaf: no other
 * file of src/ is called from here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
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
	if (sb.st_uid != geteuid())
		return -EACCES;
	if (S_ISREG(sb.st_mode) && sb.st_nlink > 1)
		return -EMLINK;
	if ((sb.st_mode & 07777) != mode && fchmod(fd, mode))
		return -errno;
	return 0;
}

const char *file_private_why(int err)
{
	switch (err) {
	case -ELOOP:
		return "it is a symlink, and hotfs follows none in its "
		       "cachedir";
	case -EACCES:
		return "it belongs to another user, and hotfs takes over no "
		       "one's file";
	case -EMLINK:
		return "it has other hard links, and hotfs changes no file "
		       "known by another name";
	}
	return strerror(-err);
}

static void say(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (!why || !whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

int file_open_private(int dirfd, const char *name, int flags, char *why,
		      size_t whylen)
{
	int fd, err;

	/* emptied once known to be the daemon's own */
	fd = openat(dirfd, name, (flags & ~O_TRUNC) | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd == -1) {
		err = -errno;
		say(why, whylen, "%s", err == -ELOOP ? file_private_why(err) :
		    strerror(-err));
		return err;
	}
	err = file_make_private(fd, 0600);
	if (!err && (flags & O_TRUNC) && ftruncate(fd, 0) == -1)
		err = -errno;
	if (err) {
		say(why, whylen, "%s", file_private_why(err));
		close(fd);
		return err;
	}
	return fd;
}

/* Why a walk stopped at the component path (NULL: the last, "it"). */
static void say_step(char *why, size_t whylen, const char *path, int err)
{
	const char *what = err == -ELOOP ? "is a symlink (not followed)" :
			   err == -ENOTDIR ? "is not a directory" : NULL;

	if (path && what)
		say(why, whylen, "'%s' %s", path, what);
	else if (path)
		say(why, whylen, "'%s': %s", path, strerror(-err));
	else if (what)
		say(why, whylen, "it %s", what);
	else
		say(why, whylen, "%s", strerror(-err));
}

/* Open the next component of a walk, without following it: the
 * directory's O_PATH fd, or -errno (ELOOP for a symlink). */
static int walk_step(int fd, const char *name, mode_t mkmode)
{
	struct stat sb;
	int nfd;

	nfd = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (nfd == -1 && errno == ENOENT && mkmode) {
		if (mkdirat(fd, name, mkmode) == -1 && errno != EEXIST)
			return -errno;
		nfd = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (nfd == -1)
		return -errno;
	if (fstat(nfd, &sb) == -1) {
		int err = -errno;

		close(nfd);
		return err;
	}
	if (!S_ISDIR(sb.st_mode)) {
		close(nfd);
		return S_ISLNK(sb.st_mode) ? -ELOOP : -ENOTDIR;
	}
	return nfd;
}

int dir_open_owned(const char *path, mode_t mkmode, char *why,
		   size_t whylen)
{
	char buf[PATH_MAX], *name, *next;
	struct stat sb;
	size_t len = strlen(path);
	int fd, nfd;

	if (len >= sizeof(buf)) {
		say(why, whylen, "%s", strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(buf, path, len + 1);
	fd = open(buf[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		say(why, whylen, "%s", strerror(errno));
		return -errno;
	}
	for (name = buf;; name = next) {
		bool last;
		char c;

		name += strspn(name, "/");
		if (!*name)
			break;
		next = name + strcspn(name, "/");
		last = next[strspn(next, "/")] == '\0';
		c = *next;
		*next = '\0';
		/* only the last component is made */
		nfd = walk_step(fd, name, last ? mkmode : 0);
		close(fd);
		if (nfd < 0) {
			say_step(why, whylen, last ? NULL : buf, nfd);
			return nfd;
		}
		fd = nfd;
		*next = c;
	}
	if (fstat(fd, &sb) == -1) {
		nfd = -errno;
	} else if (sb.st_uid != geteuid()) {
		say(why, whylen, "it belongs to uid %u, not to the daemon's "
		    "user (uid %u), and hotfs takes over no one's directory",
		    (unsigned)sb.st_uid, (unsigned)geteuid());
		close(fd);
		return -EACCES;
	} else {
		/* for reading: O_PATH's cannot list it, nor be locked */
		nfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (nfd == -1)
			nfd = -errno;
	}
	close(fd);
	if (nfd < 0)
		say(why, whylen, "%s", strerror(-nfd));
	return nfd;
}

int file_replace_at(int dirfd, const char *name, const void *buf,
		    size_t len)
{
	char tmp[256];
	ssize_t n;
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* one left behind (by a crash, or by someone else) is not reused:
	 * a new file, the daemon's */
	if (unlinkat(dirfd, tmp, 0) == -1 && errno != ENOENT)
		return -errno;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	if (fd == -1)
		return -errno;
	/* its mode, whatever the umask */
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
