// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * writemode=writeback (include/hotfs/wb.h) and the mark on the source
 * (include/hotfs/wbmark.h): set before the first write a mount logs is
 * acknowledged, removed once everything is on the source; and the copy
 * kept of a file a replayed log meets changed outside the mount.  Called
 * by wb.c, wb_fail.c and wb_state.c; calls none of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/cache.h"
#include "hotfs/log.h"
#include "hotfs/wblog.h"
#include "hotfs/wbmark.h"
#include "wb_i.h"


int wb_mark_open(struct hotfs_wb *wb, char *err, size_t errlen)
{
	bool had_id;
	int r;

	pthread_mutex_init(&wb->mark_m, NULL);
	/* a cachedir with no identity yet: its log (if any) was written by
	 * a daemon that set no mark (wb_mark_orphans leaves it alone) */
	had_id = wbmark_id(wb->h.cache->dirfd, 0, wb->id) == 0;
	wb->src_dir = openat(wb->h.root_fd, ".",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = wb->src_dir < 0 ? -errno :
	    wbmark_id(wb->h.cache->dirfd, 1, wb->id);
	if (r < 0) {
		snprintf(err, errlen, "writemode=writeback: the cachedir's "
			 "identity (%s/%s) or the source's root: %s",
			 wb->h.o->cachedir, WBMARK_ID_NAME, strerror(-r));
		return r;
	}
	/* one left by an earlier mount of this cachedir (main checked
	 * whose it is) */
	r = faccessat(wb->src_dir, WBMARK_NAME, F_OK, AT_SYMLINK_NOFOLLOW);
	wb->marked = !r;
	wb->unmarked = r && errno == ENOENT && had_id;
	return 0;
}

int wb_mark_orphans(struct hotfs_wb *wb, char *err, size_t errlen)
{
	struct wblog_replay rp;
	struct wblog_stats s;
	char bad[64] = "";
	int r;

	if (!wb->unmarked)
		return 0;
	wblog_stats(wb->wl, &s);
	wblog_replay_report(wb->wl, &rp);
	/* (damage naming no file claims no lost bytes either) */
	if (!s.dirty_blocks && !rp.unreadable_records && !rp.cut)
		return 0;
	if (rp.unreadable_records || rp.cut)
		snprintf(bad, sizeof(bad), " (and %llu%s unreadable)",
			 (unsigned long long)rp.unreadable_records,
			 rp.cut ? " or more" : "");
	r = wblog_discard(wb->wl);
	if (r < 0) {
		snprintf(err, errlen, "writeback: the cachedir's log holds "
			 "dirty data that %s/%s no longer claims (it is on "
			 "the source, or was given up), and the log cannot "
			 "be emptied of it: %s", wb->h.o->source,
			 WBMARK_NAME, strerror(-r));
		return r;
	}
	hotfs_log(LOG_WARNING, "writeback: the cachedir's log holds %llu "
		  "dirty bytes of %llu files in %llu records%s, but the "
		  "source carries no mark %s/%s: it goes only once "
		  "everything the log held is on the source (the log could "
		  "not record that: its filesystem read-only or failing "
		  "then), or by hand to give that data up; so they are not "
		  "replayed over the source, and the log is emptied of "
		  "them\n",
		  (unsigned long long)s.dirty_bytes,
		  (unsigned long long)s.dirty_files,
		  (unsigned long long)s.dirty_records, bad, wb->h.o->source,
		  WBMARK_NAME);
	return 0;
}

int wb_mark_dirty(struct hotfs_wb *wb)
{
	int r = 0;

	if (atomic_load(&wb->marked))
		return 0;
	pthread_mutex_lock(&wb->mark_m);
	if (!atomic_load(&wb->marked)) {
		r = wbmark_set(wb->src_dir, wb->id, wb->h.o->cachedir);
		if (!r)
			atomic_store(&wb->marked, true);
		else if (!wb->mark_said++)
			hotfs_log(LOG_ERR, "writeback: the mark %s/%s could "
				  "not be set (%s): no write is taken\n",
				  wb->h.o->source, WBMARK_NAME,
				  strerror(-r));
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
			  "hand\n", wb->h.o->source, WBMARK_NAME,
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

/*
 * A replayed log holds dirty data of path, which changed on the source
 * after its newest dirty write (dirty_ns: an edit while no mount ran, or
 * a flush a crash cut short): the log's bytes win in place (man/hotfs.8,
 * WRITEBACK), the source's version is copied first to
 * cachedir/conflicts/<ino>-<ctime>-<name>, counted and logged.
 */
void wb_keep_outside(struct hotfs_wb *wb, const char *path,
		     const struct stat *st, int64_t dirty_ns)
{
	char name[NAME_MAX + 1], base[PATH_MAX], buf[65536];
	int dfd = wb->h.cache->dirfd, in, out, r = 0;
	ssize_t n;

	atomic_fetch_add_explicit(&wb->conflicts, 1, memory_order_relaxed);
	snprintf(base, sizeof(base), "%s", path);
	snprintf(name, sizeof(name), "%llu-%lld-%s",
		 (unsigned long long)st->st_ino, (long long)st->st_ctime,
		 basename(base));
	if (mkdirat(dfd, WB_CONFLICT_DIR, 0700) && errno != EEXIST)
		r = -errno;
	in = r ? -1 : open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (!r && in < 0)
		r = -errno;
	out = r ? -1 : openat(dfd, WB_CONFLICT_DIR, O_PATH | O_DIRECTORY |
				     O_NOFOLLOW | O_CLOEXEC);
	if (out >= 0) {
		int d = out;

		out = openat(d, name, O_WRONLY | O_CREAT | O_TRUNC |
			     O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			r = -errno;
		while (!r && (n = read(in, buf, sizeof(buf))) != 0)
			if (n < 0 || write(out, buf, (size_t)n) != n)
				r = errno ? -errno : -EIO;
		if (!r && fsync(out))
			r = -errno;
		if (out >= 0)
			close(out);
		close(d);
	} else if (!r) {
		r = -errno;
	}
	if (in >= 0)
		close(in);
	hotfs_log(LOG_WARNING, "writeback: %s changed on the source (ctime "
		  "%lld) after its newest dirty write in the log (%lld): the "
		  "log's bytes are written over it; the source's version %s "
		  "%s/%s/%s%s%s\n", path, (long long)st->st_ctime,
		  (long long)(dirty_ns / 1000000000), r ? "could not be "
		  "kept in" : "is kept as", wb->h.o->cachedir, WB_CONFLICT_DIR,
		  name, r ? ": " : "", r ? strerror(-r) : "");
}
