/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hotfsctl's requests (include/hotfs/ioctl.h) on the cache, each on one
 * file (src/cache/cache_ctl.c).  They run in the calling FUSE thread: warm
 * reads the source synchronously, one extent at a time, not limited by
 * promote_rate (it is explicit).  Each returns 0 or -errno.
 */
#ifndef HOTFS_CACHE_CTL_H
#define HOTFS_CACHE_CTL_H

#include <stdbool.h>

#include "hotfs/cache.h"
#include "hotfs/ioctl.h"

int cache_warm(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io);
int cache_evict(struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_ioc *io);
int cache_info(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io);
int cache_pin(struct hotfs_cache *c, struct hotfs_inode *in, bool on);

#endif
