/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel's read-ahead for files of the mount.
 *
 * A FUSE mount has a backing device info of its own, named after the
 * mount's device number (/sys/class/bdi/0:N), whose read_ahead_kb starts
 * at the kernel's default, 128 KiB, whatever max_readahead the daemon
 * asks for at FUSE_INIT (the kernel takes the smaller).  A sequential
 * reader then gets 128-256 KiB FUSE reads, each a round trip, where a
 * disk read through the page cache gets about 1 MiB at a time.  hotfs
 * (-o read_ahead=) sets it in the init callback, before answering
 * FUSE_INIT with the same max_readahead: the kernel applies the smaller
 * of the two when it gets the answer, before any reader can use the
 * mount.
 *
 * Only root may write there: elsewhere it fails and the mount goes on
 * with the kernel's default.  Functions return 0 or -errno.
 */
#ifndef HOTFS_BDI_H
#define HOTFS_BDI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * The device number of the FUSE mount on top at mountpoint (absolute, as
 * the kernel shows it), from /proc/self/mountinfo: nothing reaches the
 * daemon, so it may be called before the session loop runs.  -ENOENT if
 * no FUSE filesystem is mounted there.
 */
int bdi_mount_dev(const char *mountpoint, dev_t *dev);
/* The same from an open mountinfo-format stream. */
int bdi_mountinfo_dev(FILE *mountinfo, const char *mountpoint, dev_t *dev);
/* Set read_ahead_kb of the bdi of dev under sysfs (normally "/sys") to
 * bytes, rounded down to KiB; *why says what failed in a few words. */
int bdi_set_read_ahead(const char *sysfs, dev_t dev, uint64_t bytes,
		       char *why, size_t whylen);
/* Read it back, in bytes. */
int bdi_get_read_ahead(const char *sysfs, dev_t dev, uint64_t *bytes);

#endif
