/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writeback flusher (flush.c): writes the writeback log's dirty
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
 * Dirty bytes whose copy in the log is lost (hotfs/wblog.h) are never
 * written: the source keeps its own there, the log keeps them lost.
 *
 * Errors: a file that no longer exists on the source (the open answers
 * -ENOENT or -ESTALE: removed behind the mount) has its dirty data
 * dropped, counted as a flush error; any other failure leaves the run
 * dirty, counted, and ends the round (the thread retries later, backing
 * off from 1 s to 30 s).  The thread paces itself by the log's use
 * (wbf_pace) and makes writers that find the log full wait for it
 * (wbf_wait_room).  The oldest run is always tried first: a file
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
	 * returns is given to end, with the run's bytes once they are
	 * durable on the source (data NULL if err) */
	void *(*begin)(void *arg, const struct wb_fid *fid, uint64_t off,
		       uint64_t len);
	void (*end)(void *arg, void *cookie, const struct wb_fid *fid,
		    uint64_t off, uint64_t len, const void *data, int err);
	/* a file's dirty data dropped (gone from the source): say which */
	void (*lost)(void *arg, const struct wb_fid *fid, int err);
	/* (may be NULL) a block of fid's dirty bytes [off, off + len) found
	 * lost when its run was taken (its copy in the log unreadable or
	 * failing its checksum): never written, kept lost; say which */
	void (*damaged)(void *arg, const struct wb_fid *fid, uint64_t off,
			uint64_t len);
	/* after a run of fid is given back to the log (may be NULL) */
	void (*done)(void *arg, const struct wb_fid *fid);
	/* how long the source has been idle, in ns (may be NULL: idle) */
	int64_t (*idle)(void *arg);
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
/* The same, stopping once max bytes are written (the run that crosses
 * max is the last); only (not NULL): that file's runs, whatever their
 * age (hotfsctl flush). */
int wbf_round_max(struct wblog *wl, const struct wb_flush_ops *ops,
		  void *arg, int64_t min_age_ns, const struct wb_fid *only,
		  uint64_t max, uint64_t *bytes);

/*
 * Pacing (dirty_high=, dirty_low=; man/hotfs.8, WRITEBACK), the thread's
 * decision before each round, a pure function of the log's use:
 *  - at or above high, and then until the use is below low: urgent, every
 *    run whatever its age, rounds back to back (writeback_delay ignored);
 *  - at or above low: runs older than delay;
 *  - below low: runs older than delay while the source has been idle for
 *    WBF_IDLE_NS, else only those older than delay + WBF_BUSY_MAX_NS (a
 *    source that is never idle delays the flush, but not forever).
 * want_room (a writer waits for room in a full log) is urgent too.
 * Returns the least age of the runs to flush; p->urgent is updated.
 */
#define WBF_IDLE_NS		1000000000LL
#define WBF_BUSY_MAX_NS		(30 * WBF_IDLE_NS)
struct wbf_pace {
	uint64_t used, capacity;	/* the log's (wblog_stats) */
	unsigned high, low;		/* percent of capacity */
	int64_t delay_ns;
	int64_t idle_ns;		/* the source's idle time */
	bool want_room;
	bool urgent;			/* in: the last round's; out */
};
int64_t wbf_pace(struct wbf_pace *p);

/*
 * The flush rate: bytes flushed per second over the last WBF_RATE_SECS
 * seconds, from samples of the flushed total taken at least a second
 * apart (wbf_rate_add keeps one a second, the newest WBF_RATE_SECS + 1).
 * Pure: the caller gives the times (monotonic ns) and the totals.
 */
#define WBF_RATE_SECS	10
struct wbf_rate {
	int64_t t[WBF_RATE_SECS + 1];
	uint64_t total[WBF_RATE_SECS + 1];
	unsigned n, next;
};
void wbf_rate_add(struct wbf_rate *r, int64_t now_ns, uint64_t total);
/* bytes/s between the oldest sample within the window (else the newest
 * one: a long round took none since) and now */
double wbf_rate_get(const struct wbf_rate *r, int64_t now_ns,
		    uint64_t total);

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
 * at least every interval_ns, and at once when the watermarks change or
 * a writer waits for room; each round writes 1% of the log (at least a
 * run), the next at once while there is more.
 */
int wbf_start(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      int64_t delay_ns, int64_t interval_ns, unsigned high,
	      unsigned low, struct wb_flusher **out);
/* New watermarks (percent, low <= high), from the next round on. */
void wbf_set_watermarks(struct wb_flusher *f, unsigned high, unsigned low);
/*
 * A writer found the log full: wbf_room_gen before its try, then
 * wbf_wait_room with that generation waits (up to timeout_ns) for the
 * thread's next round to end, the thread flushing flat out meanwhile
 * (a round writes 1% of the log, at least a run: one ends often, however
 * slow the source).  0: a round released space (try again); -ETIMEDOUT: none
 * ended in time; -ENOSPC: the round failed (the source refuses the
 * writes: no room can be made) or the thread stopped.
 */
uint64_t wbf_room_gen(struct wb_flusher *f);
int wbf_wait_room(struct wb_flusher *f, uint64_t gen, int64_t timeout_ns);
/*
 * The same for a writer, with its patience: it waits while the log's
 * data reaches the source (wblog_flushed moves), however slowly, and
 * gives up only after patience_ns in which none did.  w zeroed before
 * its first wait.  0: try again; -ENOSPC: a round failed, the thread
 * stopped, or the patience ran out.
 */
struct wbf_waiter {
	int64_t deadline;	/* monotonic ns; 0: not waited yet */
	uint64_t flushed;	/* the log's flushed bytes then */
};
int wbf_wait_writer(struct wb_flusher *f, uint64_t gen,
		    struct wbf_waiter *w, int64_t patience_ns);
/* The flush rate now (bytes/s, struct wbf_rate). */
double wbf_flush_rate(struct wb_flusher *f);
/* A round now (f may be NULL): the log failed, everything goes. */
void wbf_kick(struct wb_flusher *f);
/* Stop the thread and free f (may be NULL). */
void wbf_stop(struct wb_flusher *f);
/*
 * Flush everything, however young, with up to tries rounds that fail
 * (with no thread running: after wbf_stop, or before any start).  0:
 * nothing dirty is left but lost blocks (never written); else the last
 * error (the data stays in the log for the next mount).
 */
int wbf_drain(struct wblog *wl, const struct wb_flush_ops *ops, void *arg,
	      unsigned tries);

#endif
