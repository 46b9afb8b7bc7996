/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FUSE over io_uring (-o fuse_uring): the kernel hands requests to the
 * daemon, and takes its replies, through io_uring queues instead of
 * read(2) and write(2) on /dev/fuse.  libfuse 3.18 runs one queue per
 * CPU, each with one thread that runs the handlers of its requests in
 * turn: a handler that waits (a read of the slow source) holds back the
 * other requests of its queue, where the /dev/fuse loop would have
 * started another worker thread.
 *
 * Needs libfuse >= 3.18 (the bundled build, meson -Dlibfuse=bundled),
 * io_uring allowed to the daemon, and the kernel's parameter
 * /sys/module/fuse/parameters/enable_uring set to Y, which hotfs never
 * changes itself (man hotfs, FUSE over io_uring).  fuse_uring=on refuses
 * to mount without all three; auto (the default) uses it where all are
 * there and the source is not a network filesystem (why: below);
 * off never.
 */
#ifndef HOTFS_FUSE_URING_H
#define HOTFS_FUSE_URING_H

#include <stdbool.h>
#include <stddef.h>

enum hotfs_fuse_uring {
	HOTFS_FUSE_URING_AUTO,
	HOTFS_FUSE_URING_ON,
	HOTFS_FUSE_URING_OFF,
};

/* Why fuse_uring=auto uses FUSE over io_uring where it can, but over a
 * network source: it was faster in every workload measured
 * on local disks, many readers of uncached data at once included, and
 * 4-15% slower over sshfs (contrib/bench/RESULTS.md, FUSE over io_uring),
 * and the whole suite runs through it (tests/run.sh, the ASan stage
 * against libfuse 3.18, which found and mended a hang at exit, a freed
 * listing, libfuse's kept interrupts and its failing rings where
 * io_uring is refused). */

/* The kernel's switch. */
#define FUSE_URING_PARAM "/sys/module/fuse/parameters/enable_uring"

/* Whether this build's libfuse can run FUSE over io_uring. */
bool fuse_uring_built(void);

/* Whether this process may set up an io_uring: 0, or the errno of
 * io_uring_setup(2) (EPERM: kernel.io_uring_disabled or a seccomp
 * profile). */
int fuse_uring_refused(void);

/* What the decision looks at. */
struct fuse_uring_env {
	const char *param;	/* the kernel's switch (FUSE_URING_PARAM;
				 * a test's own file) */
	bool built;		/* fuse_uring_built() */
	int refused;		/* fuse_uring_refused() */
	bool remote;		/* the source is a network (or FUSE)
				 * filesystem: auto leaves it off there
				 * (slower over sshfs: man hotfs) */
};

/*
 * Decide for a mount: mode as the option says.  Returns 1: ask libfuse
 * for it; 0: not, with why (a static string: "off", or what is missing)
 * in *why; -EINVAL: fuse_uring=on cannot be had, one line in err.
 */
int fuse_uring_decide(enum hotfs_fuse_uring mode,
		      const struct fuse_uring_env *env, const char **why,
		      char *err, size_t errlen);

#endif
