/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * writemode=writeback's state on the mount, shared by src/writeback/wb.c (the
 * requests' hooks, the flusher's operations, open and close),
 * src/writeback/wb_lost.c (dirty bytes the log lost: said, the state) and
 * wb_state.c (its statistics, and a leftover log met by a mount in
 * another mode).  include/hotfs/wb.h gives the rules and the locks.
 */
#ifndef HOTFS_WB_I_H
#define HOTFS_WB_I_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "hotfs/cache.h"
#include "hotfs/opts.h"
#include "hotfs/wb.h"
#include "hotfs/wblog.h"

#define WB_FD_BUCKETS	256
/* in the cachedir: the source's versions a replay wrote over */
#define WB_CONFLICT_DIR	"conflicts"

/* an O_PATH descriptor of a file with dirty data */
struct wb_fdent {
	struct wb_fdent *next;
	uint64_t ino;
	uint64_t birth;		/* the file's (struct wb_fid) */
	int fd;
	unsigned users;		/* writes logging now */
	bool lost_said;		/* its lost dirty bytes were logged */
	uint32_t behind;	/* the inode's count of changes behind the
				 * mount, as of its last conflict or its
				 * first dirty write (hotfs/inode.h) */
};

struct hotfs_wb {
	struct wb_host h;	/* the rest of the daemon (hotfs/wb.h) */
	int proc_fd;		/* the daemon's /proc/self/fd (wb_start),
				 * or -1 */
	struct wblog *wl;
	struct wb_flusher *fl;
	dev_t root_dev;
	pthread_mutex_t m;	/* protects fds */
	struct wb_fdent *fds[WB_FD_BUCKETS];
	pthread_rwlock_t gone;	/* writes shared, a drop at unlink alone */
	/* the source's room for growing writes (growth_room) */
	_Atomic uint64_t conflicts;	/* changes behind dirty data */
	pthread_mutex_t grow_m;
	uint64_t grow_sum;	/* bytes past the source's ends, and since */
	int64_t grow_at;	/* when the sum was taken */
	/* the log can keep nothing more (wb_fail.c): writes go to the
	 * source; why and since when (set once, under m, before failed) */
	_Atomic bool failed;
	char why[WB_REASON_MAX];
	int64_t failed_at;	/* wall clock, s */
	/* the log's path and identity, watched (wb_tick) */
	char log_path[PATH_MAX];
	dev_t log_dev;
	ino_t log_ino;
	_Atomic int64_t ro_checked;	/* mountinfo read (monotonic ns) */
	/* the state last shown (wb_state_of) and since when (wall clock,
	 * s; protected by m); when dirty bytes were last found lost */
	const char *shown;
	int64_t shown_since;
	_Atomic int64_t lost_at;
	_Atomic uint64_t fills;	/* source reads of fill */
	uint64_t src_ios;	/* op_idle's last count (the flusher's) */
	int64_t busy_at;	/* and when it last moved (the flusher's) */
	/* the mark on the source (hotfs/wbmark.h) */
	int src_dir;		/* the source's root, opened for reading */
	char id[40];		/* the cachedir's identity */
	pthread_mutex_t mark_m;	/* a leaf: held while the mark is set (the
				 * writes wait: none is acknowledged first) */
	_Atomic bool marked;	/* the mark is on the source */
	bool unmarked;		/* at open: none at all (not one that
				 * could not be read), and the cachedir had
				 * its identity before (wb_mark_open) */
	unsigned mark_said;	/* failures to set it (logged once);
				 * protected by mark_m */
};

/* ino's descriptor's slot (under wb->m) */
static inline struct wb_fdent **wb_fd_slot(struct hotfs_wb *wb, uint64_t ino)
{
	struct wb_fdent **pp = &wb->fds[ino % WB_FD_BUCKETS];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

/* src/writeback/wb_lost.c: lost dirty bytes said, the state */
/* The path of ino's source file now (its kept descriptor's), for the
 * log; "inode N" if unknown.  *said (if not NULL): set, and whether it
 * was set before, under the same lock. */
void wb_ino_path(struct hotfs_wb *wb, uint64_t ino, char *path, size_t len,
		 bool *said);
/* What the open's replay found lost or dropped, in the daemon's log. */
void wb_report_replay(struct hotfs_wb *wb);
/* ino's dirty bytes [off, off + len) (len 0: unknown) found lost (err:
 * -EBADMSG damaged, else unreadable): said once a file. */
void wb_report_lost(struct hotfs_wb *wb, uint64_t ino, uint64_t off,
		    uint64_t len, int err);
/* "off" (wb NULL), "ok", "degraded" or "writethrough" (why: the reason;
 * *since: when it began, wall clock s, 0 if off). */
const char *wb_state_of(struct hotfs_wb *wb, char *why, size_t len,
			uint64_t *since);

/* src/writeback/wb_walk.c */
/*
 * The birth of the file at dfd/path (flags: AT_EMPTY_PATH for dfd
 * itself) as struct wb_fid has it: its birth time, else its inode
 * generation (FS_IOC_GETVERSION on a descriptor open_rd gives, opened
 * read-only), else 0.
 */
uint64_t wb_birth_of(int dfd, const char *path, int flags,
		     int (*open_rd)(int dfd, const char *path, void *arg),
		     void *arg);
/* Find the files the replayed log holds dirty data of (at open, before
 * any thread: their descriptors kept). */
void wb_find_files(struct hotfs_wb *wb, const char *source);

/* src/writeback/wb_fail.c: the log watched, failed when lost */
/* At open: the log's path and identity, to watch (and the state's
 * start). */
void wb_watch_init(struct hotfs_wb *wb);
/* The log checked (wb->gone not held); failed (writes go to the source,
 * the flusher writes everything) if lost.  True if it has failed. */
bool wb_log_check(struct hotfs_wb *wb);
/* The log failed and nothing of it is dirty now: the mark on the source
 * cleared (a file's last run done, the tick). */
void wb_fail_clean(struct hotfs_wb *wb);

/* wb_mark.c: the mark (at wb_open; before a write is logged; after the
 * last flush), and an outside change met by a replay kept aside */
int wb_mark_open(struct hotfs_wb *wb, char *err, size_t errlen);
/*
 * At open, after wb_mark_open: a replayed log that holds dirty data for
 * a source with no mark at all (wb->unmarked) is not replayed over it:
 * the mark goes only once everything the log held is on the source (or
 * by an admin giving that data up), so its data is there already or
 * given up.  The log emptied of it, nothing written; one line.  0, or
 * -errno with err set (the log could not record it: the mount stops).
 */
int wb_mark_orphans(struct hotfs_wb *wb, char *err, size_t errlen);
int wb_mark_dirty(struct hotfs_wb *wb);
void wb_mark_clean(struct hotfs_wb *wb);
void wb_mark_close(struct hotfs_wb *wb);
void wb_keep_outside(struct hotfs_wb *wb, const char *path,
		     const struct stat *st, int64_t dirty_ns);

#endif
