// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * writemode=writeback on the mount: see include/hotfs/wb.h for what each
 * request does, man/hotfs.8 (WRITEBACK) for the rules.  This file keeps
 * the descriptors of the files with dirty data, the flusher's operations
 * (open by identity, the mount's own change around each run), and the
 * requests' hooks; src/writeback/wb_walk.c the walk that finds the files a
 * replayed log names, src/writeback/wb_fail.c the log watched.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "hotfs/cache_write.h"
#include "hotfs/clock.h"
#include "hotfs/fileio.h"
#include "hotfs/flush.h"
#include "hotfs/inode.h"
#include "hotfs/log.h"
#include "hotfs/meta_fs.h"
#include "hotfs/readpath.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/wb.h"
#include "hotfs/wblog.h"
#include "hotfs/wbmark.h"

#include "wb_i.h"

/* growth_room's sum of the files' growth is taken again this often */
#define WB_GROW_EVERY_NS	100000000LL
/* how long a writer waits for room in a full log while the flusher
 * writes nothing (wbf_wait_writer) */
#define WB_ROOM_WAIT_NS	(60 * 1000000000LL)

static struct wb_fid fid_of(uint64_t ino)
{
	return (struct wb_fid){ .ino = ino };
}

/* open_rd for birth_of: an O_PATH descriptor (dfd) opened anew */
static int open_rd_fd(int dfd, const char *path, void *arg)
{
	struct hotfs_wb *wb = arg;

	(void)path;
	return reopen_fd(wb->proc_fd, dfd,
			 O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

/* Add a descriptor for in (dup'd from its O_PATH fd) if it has none, and
 * count a writer on it; 0 or -errno, and the file's birth in *birth. */
static int fd_get(struct hotfs_wb *wb, struct hotfs_inode *in,
		  uint64_t *birth)
{
	struct wb_fdent **pp, *e;
	int fd, dup;

	pthread_mutex_lock(&wb->m);
	pp = wb_fd_slot(wb, in->ino);
	if (*pp) {
		(*pp)->users++;
		*birth = (*pp)->birth;
		pthread_mutex_unlock(&wb->m);
		return 0;
	}
	pthread_mutex_unlock(&wb->m);
	fd = ino_fd(wb->h.it, in);
	if (fd < 0)
		return fd;
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	ino_fd_put(in);
	if (dup < 0)
		return -errno;
	e = calloc(1, sizeof(*e));
	if (!e) {
		close(dup);
		return -ENOMEM;
	}
	e->ino = in->ino;
	e->fd = dup;
	pthread_mutex_lock(&in->m);
	e->behind = stamp_behind_locked(in);
	pthread_mutex_unlock(&in->m);
	e->birth = wb_birth_of(dup, "", AT_EMPTY_PATH, open_rd_fd, wb);
	pthread_mutex_lock(&wb->m);
	pp = wb_fd_slot(wb, in->ino);
	if (*pp) {		/* another writer's came first */
		close(dup);
		free(e);
		e = *pp;
	} else {
		*pp = e;
	}
	e->users++;
	*birth = e->birth;
	pthread_mutex_unlock(&wb->m);
	return 0;
}

static void fd_put(struct hotfs_wb *wb, uint64_t ino)
{
	struct wb_fdent *e;

	pthread_mutex_lock(&wb->m);
	e = *wb_fd_slot(wb, ino);
	if (e && e->users)
		e->users--;
	pthread_mutex_unlock(&wb->m);
}

/*
 * Let go of ino's descriptor: always (drop), or if nothing of the file
 * is dirty and no write is logging.  A file with no link left is sealed
 * first (wblog_seal): once the descriptor is closed the source may give
 * its inode number to a new file, which a replay of its old records must
 * not reach.
 */
static void fd_forget(struct hotfs_wb *wb, uint64_t ino, bool drop)
{
	struct wb_fid f = fid_of(ino);
	struct wb_fdent **pp, *e = NULL;
	struct stat st;
	int r;

	pthread_mutex_lock(&wb->m);
	pp = wb_fd_slot(wb, ino);
	if (*pp && (drop || (!(*pp)->users &&
			     !wblog_dirty_end(wb->wl, &f)))) {
		e = *pp;
		*pp = e->next;
	}
	pthread_mutex_unlock(&wb->m);
	if (!e)
		return;
	if (!drop && fstat(e->fd, &st) == 0 && st.st_nlink == 0) {
		/* -EAGAIN: written meanwhile (the writer keeps its own
		 * descriptor: sealed when that one goes) */
		r = wblog_seal(wb->wl, &f);
		if (r && r != -EAGAIN)
			hotfs_log(LOG_ERR, "writeback: removed inode %llu "
				  "could not be sealed (%s)\n",
				  (unsigned long long)ino, strerror(-r));
	}
	close(e->fd);
	free(e);
}

/* The file opened anew with flags: by its descriptor here, else by the
 * inode table; -ENOENT if neither knows it. */
static int open_ino(struct hotfs_wb *wb, uint64_t ino, int flags)
{
	struct hotfs_inode *in;
	struct wb_fdent *e;
	int fd = -ENOENT, pfd;

	pthread_mutex_lock(&wb->m);
	e = *wb_fd_slot(wb, ino);
	if (e)
		fd = reopen_fd(wb->proc_fd, e->fd, flags);
	pthread_mutex_unlock(&wb->m);
	if (e)
		return fd;
	in = ino_find_hold(wb->h.it, wb->root_dev, (ino_t)ino);
	if (!in)
		return -ENOENT;
	pfd = ino_fd(wb->h.it, in);
	if (pfd >= 0) {
		fd = reopen_fd(wb->proc_fd, pfd, flags);
		ino_fd_put(in);
	} else {
		fd = pfd;
	}
	ino_unhold(wb->h.it, in);
	return fd;
}

/*----------------------------------------------------------------*/
/* the flusher's operations */

static int op_open(void *arg, const struct wb_fid *fid)
{
	return open_ino(arg, fid->ino, O_WRONLY | O_CLOEXEC);
}

struct wb_cookie {
	struct hotfs_inode *in;
	struct cache_wr w;
};

/*
 * Before a run of in is written: did the file change behind the mount
 * while the mount held dirty data for it (seen now, or by an open, a
 * getattr or the source watch since)?  Counted once a change, and the
 * path logged; the dirty bytes are then written over it (man/hotfs.8,
 * WRITEBACK).  A change seen now also drops the kernel's pages of it, as
 * the watch would.
 */
static void conflict(struct hotfs_wb *wb, struct hotfs_inode *in)
{
	char path[PATH_MAX];
	struct wb_fdent *e;
	uint32_t now, was = 0;
	bool seen, known;

	if (stamp_check_ino(in, &seen) == STAMP_CHANGED) {
		if (wb->h.inval)
			wb->h.inval(wb->h.arg, in);
		stamp_inval_sent(in);
	}
	pthread_mutex_lock(&in->m);
	now = stamp_behind_locked(in);
	pthread_mutex_unlock(&in->m);
	pthread_mutex_lock(&wb->m);
	e = *wb_fd_slot(wb, in->ino);
	known = e != NULL;
	if (e) {
		was = e->behind;
		e->behind = now;
	}
	pthread_mutex_unlock(&wb->m);
	if (!known || now == was)
		return;
	atomic_fetch_add_explicit(&wb->conflicts, 1, memory_order_relaxed);
	wb_ino_path(wb, in->ino, path, sizeof(path), NULL);
	hotfs_log(LOG_WARNING, "writeback: %s changed on the source while "
		  "the mount held dirty data for it: the mount's dirty bytes "
		  "are written over the change\n", path);
}

/* The run is the mount's own change: cache_write_begin and _end as for a
 * write through it (a promotion that read the old bytes gives up, the
 * cached records it touches are dropped, the stamp is ours), and the
 * written bytes are cached under the stamp it leaves (cache_wr.fill). */
static void *op_begin(void *arg, const struct wb_fid *fid, uint64_t off,
		      uint64_t len)
{
	struct hotfs_wb *wb = arg;
	struct wb_cookie *ck;
	struct hotfs_inode *in;

	in = ino_find_hold(wb->h.it, wb->root_dev, (ino_t)fid->ino);
	if (!in) {
		/* the metadata snapshot's file no longer describes the
		 * tree (cache_write_begin says so of a known inode); its
		 * records of this file went when the write was logged, or
		 * at mount (wb_holds_dirty) */
		if (wb->h.changed)
			wb->h.changed(wb->h.arg);
		return NULL;
	}
	conflict(wb, in);
	ck = calloc(1, sizeof(*ck));
	if (!ck) {
		ino_unhold(wb->h.it, in);
		return NULL;
	}
	ck->in = in;
	cache_write_begin(wb->h.cache, wb->h.it, in, &ck->w, off, len);
	ck->w.fill = true;
	return ck;
}

static void op_end(void *arg, void *cookie, const struct wb_fid *fid,
		   uint64_t off, uint64_t len, const void *data, int err)
{
	struct hotfs_wb *wb = arg;
	struct hotfs_cache *c = wb->h.cache;
	struct wb_cookie *ck = cookie;
	struct hotfs_key k;

	(void)err;
	if (ck) {
		/* written and durable: its bytes become clean cached data
		 * (data is NULL if not) */
		cache_write_end(c, ck->in, &ck->w, off, len, data);
		ino_unhold(wb->h.it, ck->in);
		free(ck);
	} else if (c) {
		/* not in the table: no promotion of it in flight; what the
		 * store holds of it is old */
		cache_key(c, wb->root_dev, (ino_t)fid->ino, &k);
		st_invalidate(c->st, &k, 0, 0, ST_INVAL_WRITE);
	}
}

static void op_lost(void *arg, const struct wb_fid *fid, int err)
{
	struct hotfs_wb *wb = arg;

	hotfs_log(LOG_ERR, "writeback: inode %llu is gone from the source "
		  "(%s): its dirty data is dropped\n",
		  (unsigned long long)fid->ino, strerror(-err));
	fd_forget(wb, fid->ino, true);
}

static void op_damaged(void *arg, const struct wb_fid *fid, uint64_t off,
		       uint64_t len)
{
	wb_report_lost(arg, fid->ino, off, len, -EBADMSG);
}

static void op_done(void *arg, const struct wb_fid *fid)
{
	fd_forget(arg, fid->ino, false);
	wb_fail_clean(arg);
}

/*
 * The source is idle while the mount reads none of its file data: the
 * counters of reads that reach it (a reader's miss or partial hit, a
 * promotion or a fill reading it again, the log's fills) have not moved
 * since the flusher last looked.  Metadata requests do not count.
 */
static int64_t op_idle(void *arg)
{
	struct hotfs_wb *wb = arg;
	struct hotfs_cache *c = wb->h.cache;
	int64_t now = clock_mono_ns();
	uint64_t n = atomic_load_explicit(&wb->fills, memory_order_relaxed);

	if (c)
		n += stats_get(&c->stats, STAT_MISS_REQS) +
		     stats_get(&c->stats, STAT_PARTIAL_REQS) +
		     stats_get(&c->stats, STAT_PROMO_SRC_READS) +
		     stats_get(&c->stats, STAT_FILL_READS);
	if (n != wb->src_ios) {
		wb->src_ios = n;
		wb->busy_at = now;
	}
	return wb->busy_at ? now - wb->busy_at : INT64_MAX;
}

static const struct wb_flush_ops wb_ops = {
	.open = op_open, .begin = op_begin, .end = op_end,
	.lost = op_lost, .damaged = op_damaged, .done = op_done,
	.idle = op_idle,
};

/*----------------------------------------------------------------*/
/* open, replay, start, stop */

int wb_open(struct hotfs_wb **wbp, const struct wb_host *h, char *err,
	    size_t errlen)
{
	struct hotfs_cache *c = h->cache;
	const struct hotfs_opts *o = h->o;
	pthread_rwlockattr_t ra;
	struct wblog_stats s;
	struct hotfs_wb *wb;
	int r;

	if (!c) {
		snprintf(err, errlen, "writemode=writeback: the cache store "
			 "cannot be used");
		return -EINVAL;
	}
	if (!hotfs_src.ids_kept) {
		snprintf(err, errlen, "writemode=writeback: the source's inode "
			 "numbers are not kept (%s)", hotfs_src.why);
		return -EINVAL;
	}
	wb = calloc(1, sizeof(*wb));
	if (!wb)
		return -ENOMEM;
	wb->h = *h;
	wb->proc_fd = -1;
	wb->root_dev = c->root_dev;
	wb->src_dir = -1;
	pthread_mutex_init(&wb->m, NULL);
	pthread_mutex_init(&wb->grow_m, NULL);
	/* an unlink waits for the writes logging now, not for all to come
	 * (no write takes it twice) */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
				PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&wb->gone, &ra);
	pthread_rwlockattr_destroy(&ra);
	/* another mode's (a drain): the log at its own size */
	r = wblog_open(c->dirfd, o->writemode != HOTFS_WRITEBACK ? 0 :
		       o->writeback_log ? o->writeback_log :
		       HOTFS_WBLOG_DEFAULT, &wb->wl, err, errlen);
	if (r < 0) {
		pthread_rwlock_destroy(&wb->gone);
		pthread_mutex_destroy(&wb->grow_m);
		pthread_mutex_destroy(&wb->m);
		free(wb);
		return r;
	}
	wb_watch_init(wb);
	r = wb_mark_open(wb, err, errlen);
	if (!r)
		r = wb_mark_orphans(wb, err, errlen);
	if (r < 0) {
		wb_close(wb);
		return r;
	}
	*wbp = wb;
	wb_find_files(wb, o->source);
	wb_report_replay(wb);
	/* a log of an earlier mount left dirty data: the source says so */
	wblog_stats(wb->wl, &s);
	r = s.dirty_bytes ? wb_mark_dirty(wb) : 0;
	if (r < 0)
		snprintf(err, errlen, "writeback: the mark %s/%s could not be "
			 "set: %s", o->source, WBMARK_NAME, strerror(-r));
	return r;
}

uint64_t wb_dirty_files(struct hotfs_wb *wb)
{
	struct wblog_stats s;

	if (!wb)
		return 0;
	wblog_stats(wb->wl, &s);
	return s.dirty_files;
}

/* meta_fs_drop_changing's question: does the log hold dirty data of st's
 * file? */
bool wb_holds_dirty(void *arg, const struct stat *st)
{
	struct hotfs_wb *wb = arg;
	struct wb_fid f = fid_of((uint64_t)st->st_ino);

	return st->st_dev == wb->root_dev && wblog_dirty_end(wb->wl, &f);
}

int wb_start(struct hotfs_wb *wb, int proc_self_fd)
{
	const struct hotfs_opts *o;
	int64_t delay, every;

	if (!wb)
		return 0;
	o = wb->h.o;
	delay = (int64_t)(o->writeback_delay * 1e9);
	every = delay > 0 && delay < 1000000000 ? delay : 100000000;
	wb->proc_fd = proc_self_fd;
	return wbf_start(wb->wl, &wb_ops, wb, delay, every,
			 o->dirty_high, o->dirty_low, &wb->fl);
}

int wb_stop(struct hotfs_wb *wb)
{
	struct wblog_stats before, s;
	uint64_t flushed;
	int r;

	if (!wb)
		return 0;
	/* everything, however young: the source is then whole */
	wbf_stop(wb->fl);
	wb->fl = NULL;
	wblog_stats(wb->wl, &before);
	r = wbf_drain(wb->wl, &wb_ops, wb, 3);
	wblog_stats(wb->wl, &s);
	flushed = s.flushed_bytes - before.flushed_bytes;
	/* what the unmount wrote, and what stays: in one line either way */
	if ((r < 0 || s.lost_blocks) && atomic_load(&wb->failed)) {
		hotfs_log(LOG_ERR, "writeback: at unmount %llu bytes were "
			  "written to the source; %llu dirty bytes of %llu "
			  "files could not be (%s), and the log that held "
			  "them failed (%s): they are lost\n",
			  (unsigned long long)flushed,
			  (unsigned long long)s.dirty_bytes,
			  (unsigned long long)s.dirty_files,
			  r < 0 ? strerror(-r) : "their copy in it is lost",
			  wb->why);
		return r < 0 ? r : -EIO;
	}
	if (r < 0) {
		hotfs_log(LOG_ERR, "writeback: at unmount %llu bytes were "
			  "written to the source; %llu dirty bytes of %llu "
			  "files could not be written to the source (%s): "
			  "they stay in the cachedir's wlog for the next "
			  "mount\n",
			  (unsigned long long)flushed,
			  (unsigned long long)(s.dirty_bytes -
					       s.lost_held_bytes),
			  (unsigned long long)s.dirty_files, strerror(-r));
		return r;
	}
	if (s.lost_blocks) {
		hotfs_log(LOG_ERR, "writeback: at unmount %llu bytes were "
			  "written to the source; %llu dirty bytes of %llu "
			  "files are lost (their copy in the cachedir's log is "
			  "damaged or unreadable): the source keeps its older "
			  "bytes there; they stay in the wlog, lost, and the "
			  "next mount names them again\n",
			  (unsigned long long)flushed,
			  (unsigned long long)s.lost_held_bytes,
			  (unsigned long long)s.lost_files);
		return -EIO;
	}
	hotfs_log(LOG_NOTICE, "writeback: at unmount %llu dirty bytes of "
		  "%llu files were written to the source; none stays\n",
		  (unsigned long long)flushed,
		  (unsigned long long)before.dirty_files);
	wb_mark_clean(wb);
	return 0;
}

void wb_set_watermarks(struct hotfs_wb *wb, unsigned high, unsigned low)
{
	if (wb && wb->fl)
		wbf_set_watermarks(wb->fl, high, low);
}

void wb_close(struct hotfs_wb *wb)
{
	unsigned i;

	if (!wb)
		return;
	wbf_stop(wb->fl);
	for (i = 0; i < WB_FD_BUCKETS; i++)
		while (wb->fds[i]) {
			struct wb_fdent *e = wb->fds[i];

			wb->fds[i] = e->next;
			close(e->fd);
			free(e);
		}
	wblog_close(wb->wl);
	wb_mark_close(wb);
	pthread_rwlock_destroy(&wb->gone);
	pthread_mutex_destroy(&wb->grow_m);
	pthread_mutex_destroy(&wb->m);
	free(wb);
}

/*----------------------------------------------------------------*/
/* the requests */

bool wb_on(struct hotfs_wb *wb, struct hotfs_inode *in)
{
	return wb && in->dev == wb->root_dev && S_ISREG(in->type);
}

/* The file's own bytes (the source's; zeros past its end). */
static int fill(void *arg, const struct wb_fid *fid, uint64_t off,
		void *buf, size_t len)
{
	ssize_t n;
	int fd = open_ino(arg, fid->ino, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fd;
	atomic_fetch_add_explicit(&((struct hotfs_wb *)arg)->fills, 1,
				  memory_order_relaxed);
	n = pread_full(fd, buf, len, (off_t)off);
	close(fd);
	if (n < 0)
		return (int)n;
	memset((char *)buf + n, 0, len - (size_t)n);
	return 0;
}

/* The source file of ino (its descriptor kept while it is dirty): its
 * stat and its filesystem's; 0 or -errno. */
static int src_stat(struct hotfs_wb *wb, uint64_t ino, struct stat *st,
		    struct statvfs *vfs)
{
	struct wb_fdent *e;
	int err = -ENOENT;

	pthread_mutex_lock(&wb->m);
	e = *wb_fd_slot(wb, ino);
	if (e)
		err = fstat(e->fd, st) || (vfs && fstatvfs(e->fd, vfs)) ?
		      -errno : 0;
	pthread_mutex_unlock(&wb->m);
	return err;
}

/* The dirty bytes past the source's end of every file with dirty data. */
static uint64_t pending_growth(struct hotfs_wb *wb)
{
	struct wb_fid *files = NULL;
	size_t n = wblog_files(wb->wl, &files), i;
	uint64_t sum = 0;

	for (i = 0; i < n; i++) {
		uint64_t end = wblog_dirty_end(wb->wl, &files[i]);
		struct stat st;

		if (end && !src_stat(wb, files[i].ino, &st, NULL) &&
		    end > (uint64_t)st.st_size)
			sum += end - (uint64_t)st.st_size;
	}
	free(files);
	return sum;
}

/*
 * A write that grows in's file is acknowledged only if the source has
 * room for it (ENOSPC as the source would give, not at the flush): this
 * write's bytes past the file's end, with those of every file's dirty
 * data past its end on the source, within the source's free space for a
 * user who is not root (f_bavail).  The sum over the files is taken
 * again every WB_GROW_EVERY_NS, the growth acknowledged meanwhile added
 * to it.  Writes within a file's size (holes too) are not checked.
 */
static int growth_room(struct hotfs_wb *wb, struct hotfs_inode *in,
		       uint64_t off, size_t len)
{
	struct wb_fid f = fid_of(in->ino);
	uint64_t end = off + len, have, grow;
	struct statvfs vfs;
	struct stat st;
	int64_t now;
	int err = 0;

	if (src_stat(wb, in->ino, &st, &vfs))
		return 0;	/* the flush will tell */
	have = wblog_dirty_end(wb->wl, &f);
	if ((uint64_t)st.st_size > have)
		have = (uint64_t)st.st_size;
	if (end <= have)
		return 0;
	grow = end - have;
	pthread_mutex_lock(&wb->grow_m);
	now = clock_mono_ns();
	if (!wb->grow_at || now - wb->grow_at >= WB_GROW_EVERY_NS) {
		wb->grow_sum = pending_growth(wb);
		wb->grow_at = now;
	}
	if ((uint64_t)vfs.f_bavail * vfs.f_frsize < wb->grow_sum + grow)
		err = -ENOSPC;
	else
		wb->grow_sum += grow;
	pthread_mutex_unlock(&wb->grow_m);
	return err;
}

/* After the log failed: f's dirty data written to the source now (before
 * a write of f goes there: no older byte may follow it); 0, -EIO if some
 * of it is left (lost), or the source's -errno. */
static int flush_now(struct hotfs_wb *wb, const struct wb_fid *f)
{
	int r = wbf_round_max(wb->wl, &wb_ops, wb, 0, f, UINT64_MAX, NULL);
	uint64_t lost;

	return !r && wblog_dirty_blocks(wb->wl, f, &lost) ? -EIO : r;
}

ssize_t wb_write(struct hotfs_wb *wb, struct hotfs_inode *in,
		 const void *buf, size_t len, off_t off, bool sync)
{
	struct wb_fid f = fid_of(in->ino);
	struct wbf_waiter ww = { 0 };
	uint64_t seq = 0;
	ssize_t n;
	int err, tries;

	if (off < 0)
		return -EINVAL;
	err = fd_get(wb, in, &f.birth);
	if (err)
		return err;
	if (atomic_load(&wb->failed)) {
		n = -ESTALE;
		goto failed;
	}
	err = wb_mark_dirty(wb);
	if (!err)
		err = growth_room(wb, in, (uint64_t)off, len);
	if (err) {
		fd_put(wb, in->ino);
		return err;
	}
	/* a change through the mount, as cache_write_begin notes one: the
	 * snapshot's record of the file, of the source's attributes, goes
	 * before the flush changes them (it may find the inode forgotten) */
	ino_note_change(wb->h.it, in);
	for (tries = 0;; tries++) {
		uint64_t gen = wb->fl ? wbf_room_gen(wb->fl) : 0;

		pthread_rwlock_rdlock(&wb->gone);
		n = atomic_load(&wb->failed) ? -ESTALE :
		    wblog_write(wb->wl, &f, (uint64_t)off, buf, len, fill, wb,
				&seq);
		pthread_rwlock_unlock(&wb->gone);
		/* the log's device failing (not the source's fill) */
		if (n < 0 && n != -ENOSPC && wb_log_check(wb))
			n = -ESTALE;
		if (n != -ENOSPC)
			break;
		/* the log is full: wait for the flusher to make room (an
		 * unlink does not wait for us meanwhile) while it gets data
		 * to the source, however slowly */
		if (wb->fl) {
			if (wbf_wait_writer(wb->fl, gen, &ww, WB_ROOM_WAIT_NS))
				break;
		} else if (tries >= 3 ||
			   wbf_round(wb->wl, &wb_ops, wb, 0, NULL)) {
			break;
		}
	}
	if (n > 0 && sync) {
		err = wblog_sync(wb->wl, seq);
		/* durable in a log that is still there, or on the source */
		if (wb_log_check(wb))
			err = flush_now(wb, &f);
		if (err)
			n = err;
	}
failed:
	if (n == -ESTALE) {
		/* the log failed: this write goes to the source, after the
		 * file's dirty data */
		flush_now(wb, &f);
		n = -EXDEV;
	}
	fd_put(wb, in->ino);
	return n;
}

uint64_t wb_read_gen(struct hotfs_wb *wb, struct hotfs_inode *in)
{
	struct wb_fid f = fid_of(in->ino);

	return wb ? wblog_forget_gen(wb->wl, &f) : 0;
}

int wb_read_fix(struct hotfs_wb *wb, struct hotfs_inode *in, int src,
		size_t size, off_t off, struct rp_reply *rep, uint64_t gen)
{
	struct wb_fid f = fid_of(in->ino);
	uint64_t end = wblog_dirty_end(wb->wl, &f), msize;
	size_t want, got = 0;
	struct stat st;
	ssize_t n;
	char *buf;
	int i;

	if (!end)	/* nothing dirty now: but was it just flushed? */
		return wblog_forget_gen(wb->wl, &f) != gen;
	if (fstat(src, &st))
		return -errno;
	msize = (uint64_t)st.st_size > end ? (uint64_t)st.st_size : end;
	want = (uint64_t)off >= msize ? 0 :
	       msize - (uint64_t)off < size ? (size_t)(msize - off) : size;
	buf = malloc(want ? want : 1);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < rep->n && got < want; i++) {
		size_t k = rep->iov[i].iov_len < want - got ?
			   rep->iov[i].iov_len : want - got;

		memcpy(buf + got, rep->iov[i].iov_base, k);
		got += k;
	}
	memset(buf + got, 0, want - got);	/* a hole the dirty end made */
	n = wblog_overlay(wb->wl, &f, (uint64_t)off, buf, want);
	if (n == -EIO || n == -EBADMSG) {
		/* lost: the source's older bytes must not stand in for them */
		wb_report_lost(wb, in->ino, 0, 0, (int)n);
		n = -EIO;
	}
	if (n < 0 || wblog_forget_gen(wb->wl, &f) != gen) {
		free(buf);
		return n < 0 ? (int)n : 1;
	}
	rp_done(rep);
	memset(rep, 0, sizeof(*rep));
	rep->buf = buf;
	rep->iov[0].iov_base = buf;
	rep->iov[0].iov_len = want;
	rep->n = 1;
	return 0;
}

void wb_fix_attr(struct hotfs_wb *wb, struct stat *st)
{
	struct wb_fid f = fid_of((uint64_t)st->st_ino);
	int64_t mt;
	uint64_t end;

	if (!wb || !S_ISREG(st->st_mode) || st->st_dev != wb->root_dev)
		return;
	end = wblog_dirty_info(wb->wl, &f, &mt);
	if (end > (uint64_t)st->st_size) {
		st->st_size = (off_t)end;
		if ((blkcnt_t)((end + 511) / 512) > st->st_blocks)
			st->st_blocks = (blkcnt_t)((end + 511) / 512);
	}
	/* the dirty writes' time (the flush gives the source a later one:
	 * the times never go back) */
	if (end && mt > clock_ts_ns(&st->st_mtim)) {
		st->st_mtim.tv_sec = mt / 1000000000;
		st->st_mtim.tv_nsec = mt % 1000000000;
	}
	if (end && mt > clock_ts_ns(&st->st_ctim)) {
		st->st_ctim.tv_sec = mt / 1000000000;
		st->st_ctim.tv_nsec = mt % 1000000000;
	}
}

int wb_sync(struct hotfs_wb *wb, struct hotfs_inode *in)
{
	struct wb_fid f = fid_of(in->ino);
	int err;

	if (!wb)
		return 0;
	err = wblog_sync(wb->wl, 0);
	/* durable in a log that is still there, or the file's dirty data on
	 * the source */
	if (wb_log_check(wb))
		err = flush_now(wb, &f);
	return err;
}

int wb_truncate(struct hotfs_wb *wb, struct hotfs_inode *in, uint64_t size)
{
	struct wb_fid f = fid_of(in->ino);

	if (!wb || in->dev != wb->root_dev || !S_ISREG(in->type))
		return 0;
	return wblog_trim(wb->wl, &f, size);
}

int wb_trunc_st(struct hotfs_wb *wb, const struct stat *st)
{
	struct wb_fid f = fid_of((uint64_t)st->st_ino);

	/* empty and nothing dirty: new, or cut already (a trim record is in
	 * the log if it ever held records of it) */
	if (wb && S_ISREG(st->st_mode) && st->st_dev == wb->root_dev &&
	    (st->st_size > 0 || wblog_dirty_end(wb->wl, &f)))
		return wblog_trim(wb->wl, &f, 0);
	return 0;
}

int wb_trunc_fd(struct hotfs_wb *wb, int fd, const struct stat *st)
{
	int r = wb_trunc_st(wb, st);

	if (!r && st->st_size > 0 && ftruncate(fd, 0))
		r = -errno;
	return r;
}

int wb_flush_inode(struct hotfs_wb *wb, struct hotfs_inode *in)
{
	struct wb_fid f = fid_of(in->ino);

	if (!wb || in->dev != wb->root_dev || !S_ISREG(in->type))
		return 0;
	return wbf_flush_file(wb->wl, &wb_ops, wb, &f);
}

int wb_flush_some(struct hotfs_wb *wb, struct hotfs_inode *in,
		  int64_t since_ns, uint64_t max, uint64_t *done, uint64_t *left,
		  uint64_t *oldest_ns)
{
	struct wblog_stats s;
	struct wb_fid f;
	uint64_t lost;
	int64_t age = 0;
	int r = 0;

	*done = *left = *oldest_ns = 0;
	if (!wb || (in && !wb_on(wb, in)))
		return 0;
	if (in)
		f = fid_of(in->ino);
	else if (since_ns > 0)
		age = clock_real_ns() - since_ns;
	if (max)
		r = wbf_round_max(wb->wl, &wb_ops, wb, age > 0 ? age : 0,
				  in ? &f : NULL, max, done);
	wblog_stats(wb->wl, &s);
	if (in) {
		/* what can still be written: not the lost blocks */
		*left = (wblog_dirty_blocks(wb->wl, &f, &lost) - lost) *
			WB_BLOCK;
	} else {
		lost = s.lost_blocks;
		*left = s.dirty_bytes - s.lost_held_bytes;
		*oldest_ns = s.oldest_dirty_ns > 0 ?
			     (uint64_t)s.oldest_dirty_ns : 0;
	}
	/* all that is left is lost: the flush cannot end well */
	return !r && lost && !*left ? -EBADMSG : r;
}

int wb_unlink_begin(struct hotfs_wb *wb, bool known, const struct stat *st,
		    bool *drop)
{

	*drop = false;
	if (!wb || !S_ISREG(st->st_mode) || st->st_dev != wb->root_dev ||
	    st->st_nlink != 1)
		return 0;
	/*
	 * Known to the kernel (in the table): a process may hold it open, or
	 * open it after the name is gone (looked up before), and read and
	 * write it: its dirty data stays, and is flushed to the unlinked
	 * file, whose inode the descriptor kept for it holds (its number is
	 * nobody else's meanwhile); sealed when that descriptor goes.
	 * Unknown: nothing can reach it once its last name is gone (the
	 * kernel holds the directory while the name is removed: no lookup of
	 * it meanwhile): dropped.
	 */
	if (known)
		return 0;
	pthread_rwlock_wrlock(&wb->gone);
	*drop = true;
	return 0;
}

void wb_unlink_end(struct hotfs_wb *wb, const struct stat *st, bool drop,
		   int err)
{
	struct wb_fid f = fid_of((uint64_t)st->st_ino);
	int r;

	if (!drop)
		return;
	if (!err) {
		r = wblog_trim(wb->wl, &f, 0);
		if (r)
			hotfs_log(LOG_ERR, "writeback: the dirty data of "
				  "removed inode %llu could not be dropped "
				  "(%s)\n", (unsigned long long)f.ino,
				  strerror(-r));
		fd_forget(wb, f.ino, true);
	}
	pthread_rwlock_unlock(&wb->gone);
}
