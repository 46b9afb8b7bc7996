// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE over io_uring: whether a mount asks libfuse for it (see
 * hotfs/fuse_uring.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/io_uring.h>

#include <fuse_lowlevel.h>

#include "hotfs/fuse_uring.h"

bool fuse_uring_built(void)
{
#ifdef FUSE_CAP_OVER_IO_URING
	return true;
#else
	return false;
#endif
}

int fuse_uring_refused(void)
{
	struct io_uring_params p;
	long fd;

	/* the system call itself: libfuse's rings are set up with it, and
	 * a build without liburing (-Dio_uring=disabled) may still have
	 * libfuse's */
	memset(&p, 0, sizeof(p));
	fd = syscall(__NR_io_uring_setup, 2, &p);
	if (fd < 0)
		return errno ? errno : EIO;
	close((int)fd);
	return 0;
}

/* The kernel's switch: 1 (Y), 0 (N), or -errno (no such parameter: a
 * kernel without it). */
static int param_on(const char *param)
{
	char c = 0;
	ssize_t n;
	int fd;

	fd = open(param, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, &c, 1);
	close(fd);
	if (n != 1)
		return -EIO;
	return c == 'Y' || c == 'y' || c == '1';
}

int fuse_uring_decide(enum hotfs_fuse_uring mode,
		      const struct fuse_uring_env *env, const char **why,
		      char *err, size_t errlen)
{
	int on;

	if (mode == HOTFS_FUSE_URING_OFF) {
		*why = "off";
		return 0;
	}
	if (!env->built) {
		*why = "off: not in this build's libfuse (3.18 or later: "
		       "meson setup -Dlibfuse=bundled)";
		goto missing;
	}
	on = param_on(env->param);
	if (on < 0) {
		*why = "off: not in this kernel";
		goto missing;
	}
	if (!on) {
		*why = "off: switched off in the kernel (" FUSE_URING_PARAM
		       " is N; as root: echo Y > it)";
		goto missing;
	}
	if (env->refused) {
		/* libfuse would try, fail for each queue, and go on without
		 * (its threads' failure paths are not safe to take) */
		*why = "off: io_uring refused to this process "
		       "(kernel.io_uring_disabled, a seccomp profile)";
		goto missing;
	}
	if (mode == HOTFS_FUSE_URING_AUTO && env->remote) {
		*why = "off: auto leaves it off over a network source "
		       "(slower there: man hotfs)";
		return 0;
	}
	*why = "on";
	return 1;
missing:
	if (mode != HOTFS_FUSE_URING_ON)
		return 0;
	snprintf(err, errlen, "fuse_uring=on: FUSE over io_uring is %s",
		 *why + 5);
	return -EINVAL;
}
