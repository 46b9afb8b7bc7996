// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * writemode=writeback (include/hotfs/wb.h) and the mark on the source
 * (include/hotfs/wbmark.h): set before the first write a mount logs is
 * acknowledged, removed once everything is on the source.  Called by
 * src/wb.c and src/wb_state.c; calls neither.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/cache.h"
#include "hotfs/log.h"
#include "hotfs/wbmark.h"
#include "wb_i.h"


int wb_mark_open(struct hotfs_wb *wb, char *err, size_t errlen)
{
	struct hotfs *fs = wb->fs;
	int r;

	pthread_mutex_init(&wb->mark_m, NULL);
	wb->src_dir = openat(fs->root_fd, ".",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = wb->src_dir < 0 ? -errno :
	    wbmark_id(fs_cache(fs)->dirfd, 1, wb->id);
	if (r < 0) {
		snprintf(err, errlen, "writemode=writeback: the cachedir's "
			 "identity (%s/%s) or the source's root: %s",
			 fs->o->cachedir, WBMARK_ID_NAME, strerror(-r));
		return r;
	}
	/* one left by an earlier mount of this cachedir (main checked
	 * whose it is) */
	wb->marked = !faccessat(wb->src_dir, WBMARK_NAME, F_OK,
				AT_SYMLINK_NOFOLLOW);
	return 0;
}

int wb_mark_dirty(struct hotfs_wb *wb)
{
	int r = 0;

	if (atomic_load(&wb->marked))
		return 0;
	pthread_mutex_lock(&wb->mark_m);
	if (!atomic_load(&wb->marked)) {
		r = wbmark_set(wb->src_dir, wb->id, wb->fs->o->cachedir);
		if (r < 0)
			hotfs_log(LOG_ERR, "writeback: the mark %s/%s could "
				  "not be set (%s): no write is taken\n",
				  wb->fs->o->source, WBMARK_NAME,
				  strerror(-r));
		else
			atomic_store(&wb->marked, true);
	}
	pthread_mutex_unlock(&wb->mark_m);
	return r;
}

/* After everything is written to the source (nothing can log since). */
void wb_mark_clean(struct hotfs_wb *wb)
{
	int r;

	if (!atomic_load(&wb->marked))
		return;
	r = wbmark_clear(wb->src_dir);
	if (r < 0)
		hotfs_log(LOG_ERR, "writeback: the mark %s/%s could not be "
			  "removed (%s): the source is whole; remove it by "
			  "hand\n", wb->fs->o->source, WBMARK_NAME,
			  strerror(-r));
	else
		atomic_store(&wb->marked, false);
}

void wb_mark_close(struct hotfs_wb *wb)
{
	if (wb->src_dir >= 0)
		close(wb->src_dir);
	pthread_mutex_destroy(&wb->mark_m);
}
