// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * writemode=writeback (include/hotfs/wb.h): the log watched, and failed
 * when it can keep no more dirty data.  It was deleted or replaced, is no
 * longer at CACHEDIR/wlog (the cachedir moved or deleted), or its device
 * fails or went read-only (a write or the group commit failed: EIO,
 * EROFS; or the filesystem's superblock says ro in mountinfo, which
 * ext4's emergency read-only after an error is not in statvfs).  Looked
 * at by the tick (every TICK_MS) and by each fsync and O_SYNC write.
 *
 * Once failed: said in one line and in the state (writethrough, why,
 * since when: wb_lost.c), the log told (wblog_fail: nothing more is
 * appended, nothing vouched for), writes go to the source from then on
 * (wb_write answers -EXDEV), and the flusher writes everything the log
 * still holds to the source at once, whatever its age (an fsync, and a
 * write to a file with dirty data, do their file's themselves first).
 * Dirty bytes whose copy cannot be read are lost, as ever (wb_lost.c).
 * Once everything else is on the source, the mark on it goes (no write
 * logs again), and the lost bytes are given up with it (said in one
 * line): no later mount replays the log.
 *
 * Locks: wb->gone taken exclusive by wb_fail (it waits for the writes
 * logging now: none logs after it), then wb->m for why.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "hotfs/clock.h"
#include "hotfs/flush.h"
#include "hotfs/log.h"
#include "hotfs/mountinfo.h"
#include "hotfs/wb.h"
#include "wb_i.h"

/* read-only by mountinfo: looked at once a second at most */
#define RO_CHECK_NS	1000000000LL

void wb_watch_init(struct hotfs_wb *wb)
{
	struct stat st;

	/* the state's since (src/writeback/wb_lost.c) */
	wb->shown_since = clock_real_ns() / 1000000000;
	snprintf(wb->log_path, sizeof(wb->log_path), "%s/%s",
		 wb->h.o->cachedir, WB_LOG_NAME);
	if (!wblog_stat(wb->wl, &st)) {
		wb->log_dev = st.st_dev;
		wb->log_ino = st.st_ino;
	}
}

/* Once: the log failed for why (never called with wb->gone held). */
static void wb_fail(struct hotfs_wb *wb, const char *why)
{
	struct wblog_stats s;

	pthread_rwlock_wrlock(&wb->gone);
	if (atomic_load(&wb->failed)) {
		pthread_rwlock_unlock(&wb->gone);
		return;
	}
	pthread_mutex_lock(&wb->m);
	snprintf(wb->why, sizeof(wb->why), "%s", why);
	wb->failed_at = clock_real_ns() / 1000000000;
	pthread_mutex_unlock(&wb->m);
	wblog_fail(wb->wl);
	atomic_store(&wb->failed, true);
	pthread_rwlock_unlock(&wb->gone);
	wblog_stats(wb->wl, &s);
	hotfs_log(LOG_ERR, "writeback: %s: writes go to the source from now "
		  "on (writethrough), and the %llu dirty bytes held are "
		  "written there now\n", why,
		  (unsigned long long)(s.dirty_bytes - s.lost_held_bytes));
	wbf_kick(wb->fl);
}

/* Is the log still the cachedir's, linked, written without an error and
 * on a writable filesystem?  If not, what went wrong into why, and
 * true. */
static bool log_lost(struct hotfs_wb *wb, char *why, size_t len)
{
	struct statvfs v;
	struct stat a, b;
	int64_t now;
	int err = wblog_error(wb->wl);

	if (!err)
		err = wblog_stat(wb->wl, &a);
	if (err) {
		snprintf(why, len, "the writeback log %s cannot be written "
			 "(%s)", wb->log_path, strerror(-err));
		return true;
	}
	if (a.st_nlink == 0) {
		snprintf(why, len, "the writeback log %s was deleted while "
			 "mounted", wb->log_path);
		return true;
	}
	if (stat(wb->log_path, &b)) {
		if (errno != ENOENT && errno != ENOTDIR)
			return false;
		snprintf(why, len, "the writeback log is no longer at %s "
			 "(the cachedir was moved or deleted while mounted)",
			 wb->log_path);
		return true;
	}
	if (b.st_dev != wb->log_dev || b.st_ino != wb->log_ino) {
		snprintf(why, len, "the writeback log %s was replaced by "
			 "another file while mounted", wb->log_path);
		return true;
	}
	now = clock_mono_ns();
	if (now - atomic_load(&wb->ro_checked) < RO_CHECK_NS)
		return false;
	atomic_store(&wb->ro_checked, now);
	if ((!statvfs(wb->log_path, &v) && (v.f_flag & ST_RDONLY)) ||
	    mountinfo_self_dev_ro(major(a.st_dev), minor(a.st_dev)) == 1) {
		snprintf(why, len, "the writeback log %s cannot be written "
			 "(its filesystem went read-only while mounted: an "
			 "error on it? see the kernel's log)", wb->log_path);
		return true;
	}
	return false;
}

bool wb_log_check(struct hotfs_wb *wb)
{
	char why[sizeof(wb->why)];

	if (atomic_load(&wb->failed))
		return true;
	if (!log_lost(wb, why, sizeof(why)))
		return false;
	wb_fail(wb, why);
	return true;
}

void wb_fail_clean(struct hotfs_wb *wb)
{
	struct wblog_stats s;

	if (!atomic_load(&wb->failed) || !atomic_load(&wb->marked))
		return;
	/* failed, and all it held that can be read on the source: no
	 * write logs again, the mark goes (the cachedir may be gone: a
	 * mount without it is whole).  Blocks it cannot read (lost, named
	 * so) are given up with it: kept, a later mount would replay the
	 * records the log could not mark flushed over what was written to
	 * the source since (wb_mark.c wb_mark_orphans empties it). */
	wblog_stats(wb->wl, &s);
	if (s.dirty_blocks > s.lost_blocks)
		return;
	/* the tick's and the flusher's, one at a time */
	pthread_mutex_lock(&wb->mark_m);
	wb_mark_clean(wb);
	if (s.lost_blocks && !atomic_load(&wb->marked))
		hotfs_log(LOG_ERR, "writeback: everything the failed log "
			  "held that can be read is on the source; its %llu "
			  "lost dirty bytes of %llu files (named above) are "
			  "given up: the mark goes, and no later mount "
			  "replays the log over what is written since\n",
			  (unsigned long long)s.lost_held_bytes,
			  (unsigned long long)s.lost_files);
	pthread_mutex_unlock(&wb->mark_m);
}

void wb_tick(struct hotfs_wb *wb)
{
	if (wb && wb_log_check(wb))
		wb_fail_clean(wb);
}

bool wb_failed(struct hotfs_wb *wb)
{
	return wb && atomic_load(&wb->failed);
}
