/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writeback flusher (src/flush.c): writes the writeback log's dirty
 * data back to the source, oldest first, each run of a file's adjacent
 * dirty blocks as one write (hotfs/wblog.h), then releases the log's
 * space.
 *
 * A run's records are made durable in the log first (wblog_sync: a
 * write of the source torn by a power loss is then repaired by the
 * replay).  It is written with pwrite to a descriptor the caller's ops
 * open on the source file of its identity, made durable there
 * (fdatasync), and only then forgotten by the log; the log's tail moves past it at the end
 * of the round (wblog_release).  A crash at any point leaves the run in
 * the log, flushed again after the replay: the same bytes.
 *
 * Errors: a file that no longer exists on the source (the open answers
 * -ENOENT or -ESTALE: removed behind the mount) has its dirty data
 * dropped, counted as a flush error; any other failure leaves the run
 * dirty, counted, and ends the round (the thread retries later, backing
 * off from 1 s to 30 s).  The oldest run is always tried first: a file
 * whose writes keep failing holds back the others (a later step flushes
 * around it).
 *
 * All functions return 0 (or a count) or -errno.
 */
#ifndef HOTFS_FLUSH_H
#define HOTFS_FLUSH_H

#include <stdbool.h>
#include <stdint.h>

#include "hotfs/wblog.h"

struct wb_flush_ops {
	/* a descriptor open for writing on fid's source file, or -errno */
	int (*open)(void *arg, const struct wb_fid *fid);
	/* around the run's write to the source (may be NULL): the mount's
	 * own change of the file (stamps, cached extents); what begin
	 * returns is given to end */
	void *(*begin)(void *arg, const struct wb_fid *fid, uint64_t off,
		       uint64_t len);
	void (*end)(void *arg, void *cookie, const struct wb_fid *fid,
		    uint64_t off, uint64_t len, int err);
	/* a file's dirty data dropped (gone from the source): say which */
	void (*lost)(void *arg, const struct wb_fid *fid, int err);
	/* after a run of fid is given back to the log (may be NULL) */
	void (*done)(void *arg, const struct wb_fid *fid);
};

/* the largest run written at once */
#define WBF_RUN_MAX	(1u << 20)

/*
 * One round: every run whose record is at least min_age_ns old, oldest
 * first, then the log's space released.  The bytes written in *bytes (may
 * be NULL); 0 or the first error that ended the round.
 */
int wbf_round(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      int64_t min_age_ns, uint64_t *bytes);

/*
 * Flush fid's dirty data now, whatever its age, after the thread's run of
 * it in flight, and seal it (wblog_seal: a replay never writes its old
 * records again): when this returns 0, none of fid's bytes is dirty or
 * on its way to the source.  For an operation that must reach the source
 * after the file's data (fallocate's punching and zeroing, setting
 * times).  -EAGAIN: writes kept coming.  The space is released by the
 * next round.
 */
int wbf_flush_file(struct wblog *wl, const struct wb_flush_ops *ops,
		   void *arg, const struct wb_fid *fid);

struct wb_flusher;

/*
 * A thread running rounds for data older than delay_ns (writeback_delay=),
 * at least every interval_ns, and at once after wbf_kick.
 */
int wbf_start(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      int64_t delay_ns, int64_t interval_ns, struct wb_flusher **out);
void wbf_kick(struct wb_flusher *f);
/*
 * Stop the thread; drain: first flush everything, however young, with up
 * to tries rounds that fail.  0: nothing dirty is left; else the last
 * error (the data stays in the log for the next mount).
 */
int wbf_stop(struct wb_flusher *f, bool drain, unsigned tries);

#endif
