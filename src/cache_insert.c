// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Insert if still current (see include/hotfs/cache_insert.h).
 */
#include <errno.h>
#include <pthread.h>

#include "hotfs/cache_insert.h"

int __cache_insert(struct hotfs_store *st, struct hotfs_inode *in,
		   const struct hotfs_key *k, uint32_t extno,
		   const struct hotfs_stamp *stamp, uint64_t gen,
		   const void *buf, size_t len)
{
	int r;

	if (in->write_gen != gen)
		return -ESTALE;
	r = st_insert(st, k, extno, stamp, buf, len);
	if (r < 0)
		return r;
	if (in->cached_extents_hint <= extno)
		in->cached_extents_hint = (uint64_t)extno + 1;
	return 0;
}

int cache_insert(struct hotfs_store *st, struct hotfs_inode *in,
		 const struct hotfs_key *k, uint32_t extno,
		 const struct hotfs_stamp *stamp, uint64_t gen,
		 const void *buf, size_t len)
{
	int r;

	pthread_mutex_lock(&in->m);
	r = __cache_insert(st, in, k, extno, stamp, gen, buf, len);
	pthread_mutex_unlock(&in->m);
	return r;
}
