/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ioctls hotfsctl sends to files and directories through the mount.
 * Only root and the user who mounted may send them (EACCES otherwise).
 * A file is named by the open descriptor itself, so no path is ever
 * resolved by the daemon.  All take and return one struct hotfs_ioc.
 */
#ifndef HOTFS_IOCTL_H
#define HOTFS_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

struct hotfs_ioc {
	uint64_t off;		/* in: start of the range */
	uint64_t len;		/* in: its length, 0 = to the end */
	uint64_t bytes;		/* out: bytes cached in the range */
	uint64_t extents;	/* out: records cached in the range (extents,
				 * and blocks of random readers) */
	uint64_t size;		/* out: the file's size */
	uint64_t done;		/* out: bytes this call copied or dropped */
	uint32_t flags;		/* out: HOTFS_IOC_F_* */
	uint32_t extent;	/* out: the mount's extent size */
};

#define HOTFS_IOC_F_PINNED	1u
#define HOTFS_IOC_F_NOCACHE	2u	/* mounted with -o nocache */
/* its whole copy is in the cachedir (passthrough, hotfs/filecopy.h):
 * every byte of the range is cached, bytes says so */
#define HOTFS_IOC_F_COPY	4u

/* Promote [off, off+len) now, regardless of the threshold. */
#define HOTFS_IOC_WARM	_IOWR('H', 1, struct hotfs_ioc)
/* Drop the file's cached extents. */
#define HOTFS_IOC_EVICT	_IOWR('H', 2, struct hotfs_ioc)
/* Pin the file (its extents are never evicted; kept across restarts). */
#define HOTFS_IOC_PIN	_IOWR('H', 3, struct hotfs_ioc)
#define HOTFS_IOC_UNPIN	_IOWR('H', 4, struct hotfs_ioc)
/* How much of [off, off+len) is cached. */
#define HOTFS_IOC_INFO	_IOWR('H', 5, struct hotfs_ioc)
/*
 * writemode=writeback: write dirty data to the source now, at most len
 * bytes this call (0: none, only say what is dirty): the file's, or, sent
 * to the mount's root directory, the whole mount's written before off
 * (the wall clock in ns when the flush began; 0: any).  out: done, the
 * bytes written; bytes, what is still dirty (the file's dirty blocks'
 * bytes, or the mount's dirty bytes).  Without writeback: nothing dirty.
 */
#define HOTFS_IOC_FLUSH	_IOWR('H', 6, struct hotfs_ioc)

#endif
