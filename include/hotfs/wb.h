/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * writemode=writeback on the mount (src/writeback/wb.c): the writeback log
 * (hotfs/wblog.h) and its flusher (hotfs/flush.h) joined to the inode
 * table, the store and the requests.  man/hotfs.8 (WRITEBACK) gives the
 * rules; this is where each request takes them:
 *
 *  - write: the bytes go to the log and are acknowledged from there
 *    (O_SYNC, O_DSYNC: once the log is durable); a writer that finds the
 *    log full waits for the flusher (wbf_wait_writer) however slow the
 *    source, and gives up with ENOSPC only if it cannot make room (the
 *    source failing, or a minute in which no data reached it); a write
 *    that grows the file, only if the source has room for it (else
 *    ENOSPC).
 *  - read: the file's own bytes (store or source) with the dirty ones
 *    over them, up to the size below; read again if a flush ended
 *    meanwhile (wblog_forget_gen).  Dirty bytes the log lost (damaged or
 *    unreadable copies: hotfs/wblog.h) answer EIO, never the source's
 *    older ones, and are said in the daemon's log (src/writeback/wb_lost.c).
 *  - attributes: the size is the larger of the source's and the dirty
 *    end; mtime and ctime the later of the source's and the newest dirty
 *    write's (wb_fix_attr, over every answer: the source's stat or the
 *    metadata snapshot's, whose records of the files with dirty data go
 *    at their first write and, after a replay, at mount).
 *  - fsync, fdatasync: the log durable (fsync: the source file's own
 *    fsync too, for the size changes that reached it).
 *  - the log lost or failing (wb_tick, and each fsync and O_SYNC write
 *    look): writes go to the source, what it holds is flushed at once.
 *  - truncate (setattr, O_TRUNC): trimmed in the log before the source.
 *  - fallocate other than allocating, setting times: the file flushed
 *    and sealed first.
 *  - unlink of the last link, rename over it: a file the kernel does not
 *    know has its dirty data dropped (no write of any file logs
 *    meanwhile: its inode number may be taken by a new file at once);
 *    one it knows (it may be open, or opened after the name is gone)
 *    keeps it, flushed to the unlinked file, and is sealed when the
 *    descriptor kept for it goes (no replay reaches a new file given its
 *    number).
 *  - copy_file_range, lseek's SEEK_DATA and SEEK_HOLE: answered ENOSYS
 *    (the kernel then copies through read and write, and takes the whole
 *    file for data).
 *
 * Only regular files on the source root's device are written back (the
 * log knows a file by its inode number there); files on filesystems
 * mounted inside the source are written around.  The flusher opens a file
 * by an O_PATH descriptor kept for each file with dirty data (taken at
 * its first dirty write; after a crash, found by a walk of the source at
 * mount), or by the inode table.
 *
 * Locks: wb->m (the descriptors) -> the log's wl->m; wb->gone (a rwlock:
 * writes shared, the drop at unlink exclusive) before both; wb->grow_m
 * (the growth's sum) before wb->m and wl->m, taken one at a time.  No lock is
 * held across source I/O but the flush's own (hotfs/flush.h).
 */
#ifndef HOTFS_WB_H
#define HOTFS_WB_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct hotfs_cache;
struct hotfs_inode;
struct hotfs_itable;
struct hotfs_opts;
struct rp_reply;
struct hotfs_wb;

/*
 * What writeback meets of the rest of the daemon, given at wb_open and
 * kept: no struct hotfs, no FUSE call in src/writeback/.  The flusher's
 * runs bracket themselves with the cache's (cache_write_begin, _end);
 * the two callbacks are the mount's (src/daemon/main.c).
 */
struct wb_host {
	const struct hotfs_opts *o;	/* source, cachedir, the options */
	struct hotfs_itable *it;	/* the inodes the kernel knows */
	struct hotfs_cache *cache;	/* the store, in whose cachedir the
					 * log is */
	int root_fd;			/* the source's root (O_PATH) */
	/* a change behind the mount the flusher found: the kernel's pages
	 * and attributes of in are stale (a notification, no reply) */
	void (*inval)(void *arg, struct hotfs_inode *in);
	/* the flusher wrote a file no inode names: the metadata snapshot
	 * no longer describes the tree */
	void (*changed)(void *arg);
	void *arg;
};


/*
 * Open the log in the store's cachedir and replay it (before mounting:
 * one line in err).  The files with dirty data are found in the source
 * (a walk, by inode number); one that is gone, or whose number another
 * file has taken since (its birth differs: struct wb_fid), has its dirty
 * data dropped, said in the log; one changed on the source after its
 * newest dirty write (an edit while no mount ran) has the source's
 * version copied aside first (man/hotfs.8, WRITEBACK).  The mark on the
 * source (hotfs/wbmark.h) is set before the first write is logged, now
 * if the replayed log holds dirty data, and removed by wb_stop and
 * wb_drain once everything is on the source.
 */
int wb_open(struct hotfs_wb **wbp, const struct wb_host *h, char *err,
	    size_t errlen);
/*
 * A mount in another write mode over a cachedir whose log may hold dirty
 * data (wb_leftover: a replay that writes nothing finds some, or cannot
 * read the log): wb_drain replays it at its own size and writes
 * everything to the source before the mount (0), or says in err why it
 * could not (-errno: the mount is refused, the data kept).  A log with
 * nothing dirty is left as it is.
 */
bool wb_leftover(const char *cachedir);
int wb_drain(const struct wb_host *h, char *err, size_t errlen);
/*
 * After the metadata snapshot is read (meta_fs_open): its records of the
 * files the replayed log holds dirty data of are dropped
 * (meta_fs_drop_changing asks wb_holds_dirty, if wb_dirty_files).  They
 * hold the source's attributes, which the flush changes, maybe before
 * anything looks the file up (the change is then noted by no inode's
 * record).
 */
uint64_t wb_dirty_files(struct hotfs_wb *wb);
bool wb_holds_dirty(void *wb, const struct stat *st);
/* Start the flusher (after daemonizing: proc_self_fd, the daemon's
 * /proc/self/fd, reopens files from here on). */
int wb_start(struct hotfs_wb *wb, int proc_self_fd);
/* Stop it, flushing everything (the session is over): 0, or -errno with
 * the data kept in the log for the next mount (said in the log). */
int wb_stop(struct hotfs_wb *wb);
void wb_close(struct hotfs_wb *wb);

/* dirty_high=, dirty_low= changed while mounted (hotfsctl set). */
void wb_set_watermarks(struct hotfs_wb *wb, unsigned high, unsigned low);

/* Writes to in go to the log (wb: NULL in another write mode; each
 * call below takes NULL as writeback off). */
bool wb_on(struct hotfs_wb *wb, struct hotfs_inode *in);
/*
 * The log watched (the tick's, every TICK_MS; also at each fsync and
 * O_SYNC write): deleted, replaced, no longer at CACHEDIR/wlog (the
 * cachedir moved), or its device failing or read-only: the log can keep
 * nothing more.  The mount then writes through to the source, and what
 * the log still holds (readable: its file stays open) is flushed at
 * once; said in one line and in the state (writeback_state
 * writethrough, and why: src/writeback/wb_fail.c).
 */
void wb_tick(struct hotfs_wb *wb);
/* The log has failed (wb_tick): writes go to the source. */
bool wb_failed(struct hotfs_wb *wb);

/* Write len bytes at off; bytes written or -errno; -EXDEV: the log has
 * failed (wb_failed), the file's dirty data is on the source (but for
 * bytes lost): write it there. */
ssize_t wb_write(struct hotfs_wb *wb, struct hotfs_inode *in,
		 const void *buf, size_t len, off_t off, bool sync);
/* Before a read of in: the generation wb_read_fix checks. */
uint64_t wb_read_gen(struct hotfs_wb *wb, struct hotfs_inode *in);
/* After it: lay the dirty bytes over rep (src: the source file, for its
 * size).  0, 1: read again (a flush ended meanwhile), or -errno. */
int wb_read_fix(struct hotfs_wb *wb, struct hotfs_inode *in, int src,
		size_t size, off_t off, struct rp_reply *rep, uint64_t gen);
/* The size and times through the mount into st (a source file's
 * stat). */
void wb_fix_attr(struct hotfs_wb *wb, struct stat *st);
/* fsync, fdatasync: the log durable; once it failed, in's dirty data on
 * the source (-EIO if some of it is lost). */
int wb_sync(struct hotfs_wb *wb, struct hotfs_inode *in);
/* Before in is cut to size on the source. */
int wb_truncate(struct hotfs_wb *wb, struct hotfs_inode *in, uint64_t size);
/* Cut the file fd (st: its stat) to 0, in the log first: an open with
 * O_CREAT|O_TRUNC that found it (opened without O_TRUNC).  0 or -errno. */
int wb_trunc_fd(struct hotfs_wb *wb, int fd, const struct stat *st);
/* The same in the log alone (O_RDONLY|O_TRUNC: the source is cut by the
 * open that follows). */
int wb_trunc_st(struct hotfs_wb *wb, const struct stat *st);
/* Flush and seal in's dirty data (before fallocate, setting times). */
int wb_flush_inode(struct hotfs_wb *wb, struct hotfs_inode *in);
/*
 * Around the removal of a name of st's file (known: the kernel may reach
 * the file after it, by an inode it knows or an open without OPEN):
 * wb_unlink_begin before (0 or -errno: do not remove it), wb_unlink_end
 * after with the removal's result.
 */
int wb_unlink_begin(struct hotfs_wb *wb, bool known, const struct stat *st,
		    bool *drop);
void wb_unlink_end(struct hotfs_wb *wb, const struct stat *st, bool drop,
		   int err);

/*
 * hotfsctl flush: up to max bytes of dirty data written to the source now
 * (max 0: none), in's whatever its age, or (in NULL) the whole mount's
 * written before the wall clock since_ns (0: any); *done the bytes
 * written, *left what is still dirty (in's: its dirty blocks' bytes; the
 * mount's: its dirty bytes), *oldest_ns the wall clock of the oldest
 * dirty record (0: none); lost dirty bytes (never written) are not in
 * *left.  0 or the source's -errno; -EBADMSG if what is left is lost.
 */
int wb_flush_some(struct hotfs_wb *wb, struct hotfs_inode *in,
		  int64_t since_ns, uint64_t max, uint64_t *done, uint64_t *left,
		  uint64_t *oldest_ns);

/* The counters of .hotfs/stats (all 0 without writeback; the state
 * "off"). */
#define WB_REASON_MAX	(PATH_MAX + 320)
struct wb_stats {
	uint64_t dirty_bytes, dirty_records, dirty_files;
	uint64_t flushed_bytes, flush_errors, absorbed;
	uint64_t log_used, log_capacity;
	uint64_t cleaned;		/* moved by the log's cleaner */
	uint64_t conflicts;		/* changes behind dirty data */
	uint64_t lost;			/* dirty bytes the log lost */
	uint64_t lost_files;		/* files holding lost bytes now */
	uint64_t csum_failures;		/* copies in the log failing theirs */
	double oldest_dirty_age;	/* seconds */
	double flush_rate;		/* bytes/s, the last 10 s */
	const char *state;		/* "off", "ok", "degraded",
					 * "writethrough" */
	char reason[WB_REASON_MAX];	/* why degraded or writethrough */
	uint64_t state_since;		/* wall clock, s (0: off) */
};
void wb_stats(struct hotfs_wb *wb, struct wb_stats *st);

#endif
