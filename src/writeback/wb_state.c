// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * writemode=writeback (include/hotfs/wb.h): the statistics of the log and
 * the flusher (and the state: wb_lost.c), and the dirty data a crashed
 * writeback mount left, met by a mount in another write mode (written to
 * the source first; refused if the log lost some).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/flush.h"
#include "hotfs/log.h"
#include "hotfs/wb.h"
#include "wb_i.h"

void wb_stats(struct hotfs_wb *wb, struct wb_stats *st)
{
	struct wblog_stats s;
	int64_t now = clock_real_ns();

	memset(st, 0, sizeof(*st));
	st->state = wb_state_of(wb, st->reason, sizeof(st->reason),
				&st->state_since);
	if (!wb)
		return;
	wblog_stats(wb->wl, &s);
	st->dirty_bytes = s.dirty_bytes;
	st->dirty_records = s.dirty_records;
	st->dirty_files = s.dirty_files;
	st->flushed_bytes = s.flushed_bytes;
	st->flush_errors = s.flush_errors;
	st->absorbed = s.absorbed;
	st->cleaned = s.cleaned_bytes;
	st->lost = s.lost_bytes;
	st->lost_files = s.lost_files;
	st->csum_failures = s.csum_failures;
	st->conflicts = atomic_load_explicit(&wb->conflicts,
					     memory_order_relaxed);
	st->log_used = s.log_used;
	st->log_capacity = s.log_capacity;
	st->flush_rate = wbf_flush_rate(wb->fl);
	st->oldest_dirty_age = s.oldest_dirty_ns && now > s.oldest_dirty_ns ?
			       (double)(now - s.oldest_dirty_ns) / 1e9 : 0;
}

bool wb_leftover(const char *cachedir)
{
	int dfd = open(cachedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;
	uint64_t bytes = 0;
	struct stat st;

	if (dfd < 0)
		return false;		/* no cachedir, no log */
	/* a symlink in its place is no log (wblog_open refuses it) */
	if (fstatat(dfd, WB_LOG_NAME, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(dfd);
		return false;
	}
	/* a clean log (a clean unmount's) holds nothing: the mount needs
	 * none of it and leaves it as it is */
	r = wblog_dirty(dfd, &bytes);
	close(dfd);
	/* one that cannot be read may hold some: the drain says why */
	return r < 0 || bytes > 0;
}

int wb_drain(const struct wb_host *h, char *err, size_t errlen)
{
	struct hotfs_wb *wb = NULL;
	struct wblog_stats s;
	int r = wb_open(&wb, h, err, errlen);

	if (r < 0)
		return r;
	/* before daemonizing: the flush reopens files through this one
	 * (main opens the daemon's own after the fork) */
	wb->proc_fd = open("/proc/self/fd", O_PATH | O_CLOEXEC);
	wblog_stats(wb->wl, &s);
	if (s.lost_blocks) {
		/* never written: this mount would show the source's older
		 * bytes where the log holds them lost */
		snprintf(err, errlen, "the cachedir's log holds %llu dirty "
			 "bytes of %llu files that it lost (damaged): mount "
			 "with writemode=writeback (reads of them answer EIO "
			 "until the files are written over them, truncated or "
			 "removed), or move %s/%s away to drop all its dirty "
			 "data", (unsigned long long)s.lost_held_bytes,
			 (unsigned long long)s.lost_files, h->o->cachedir,
			 WB_LOG_NAME);
		r = -EIO;
	} else if (s.dirty_bytes) {
		hotfs_log(LOG_NOTICE, "writeback: the cachedir's log holds "
			  "%llu dirty bytes of %llu files, left by a "
			  "writeback mount that did not end cleanly: writing "
			  "them to the source before this mount\n",
			  (unsigned long long)s.dirty_bytes,
			  (unsigned long long)s.dirty_files);
		r = wb_stop(wb);
		if (r < 0)
			snprintf(err, errlen, "the cachedir's log holds %llu "
				 "dirty bytes the source did not take (%s); "
				 "mount with writemode=writeback to keep them "
				 "(they are flushed while mounted), or move "
				 "%s/%s away to drop them",
				 (unsigned long long)s.dirty_bytes,
				 strerror(-r), h->o->cachedir, WB_LOG_NAME);
		else
			hotfs_log(LOG_NOTICE, "writeback: the %llu dirty "
				  "bytes are on the source\n",
				  (unsigned long long)s.dirty_bytes);
	}
	/* the mark goes once nothing of the log is dirty (it may be left
	 * by a crash after everything was flushed) */
	if (r >= 0)
		wb_mark_clean(wb);
	if (wb->proc_fd >= 0)
		close(wb->proc_fd);
	wb_close(wb);
	return r;
}
