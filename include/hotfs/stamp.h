/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stamp the kernel's cached pages and attributes of a file go with,
 * and the mount's own changes to the file.
 *
 * A file's stamp (mtime, ctime, size) is recorded when it is opened.  The
 * kernel's copy of its pages is dropped only when the file changed
 * behind the mount: at an open that finds another stamp (close-to-open),
 * at a getattr that finds one, or at a source watch event for it.  A
 * change the mount makes itself (a write, a truncate, a chmod; a
 * setxattr, a link, a rename or an unlink, which move the ctime alone: a
 * "change" from stamp_change_begin to stamp_change_end) moves the
 * recorded stamp along instead, when the last change in flight ends, if
 * the first of them started from the recorded stamp.  (With writeback,
 * a change behind the mount to a file with dirty data is a conflict: an
 * unbracketed change of the mount's own would be counted as one.)
 *
 * Dropping the kernel's pages of a file while one of its writes is in
 * flight loses data: the kernel's write(2) puts the new bytes in pages
 * and sends them; a drop removes those pages, a concurrent read of the
 * same range (another reader's readahead) makes new ones from the
 * source before the write lands there, and the stale pages stay, to be
 * read, or written back over the new bytes by a shared mapping.  So a
 * stamp seen while a change of the mount's own is in flight is taken as
 * the mount's own (STAMP_SAME), and the kernel's own invalidation on a
 * new mtime (FUSE_CAP_AUTO_INVAL_DATA), which cannot tell, is off.
 *
 * Functions named _locked, and stamp_change_*, take the inode's m held;
 * the others take it themselves.
 */
#ifndef HOTFS_STAMP_H
#define HOTFS_STAMP_H

#include <stdbool.h>
#include <sys/stat.h>

#include "hotfs/inode.h"

/*
 * The racy rule, written here alone: a stamp (mtime and ctime, ns) that
 * changed within a clock tick of now proves nothing about a change in
 * the same tick, which may leave it as it is.  The window: the source's
 * measured tick plus slack (hotfs/srcprobe.h), at least RACY_NS, and 2.1
 * s for whole-second stamps (a filesystem or server with 1 or 2 s
 * stamps).  Used for directories' listings and absent names
 * (hotfs/negcache.h, hotfs/dirlist.h, the metadata snapshot) and, on a
 * source where it counts (srcprobe_coarse), for files' data.
 */
#define RACY_NS		50000000LL	/* 50 ms: a few clock ticks */

/* How long from now (ns, CLOCK_REALTIME) until the stamp is no longer
 * racy: 0 if it is not, at most the window (a stamp in the future, a
 * clock set back: the whole window). */
int64_t stamp_racy_left(int64_t mtime_ns, int64_t ctime_ns, int64_t now);
static inline bool stamp_racy_ns(int64_t mtime_ns, int64_t ctime_ns,
				 int64_t now)
{
	return stamp_racy_left(mtime_ns, ctime_ns, now) > 0;
}
static inline bool stamp_racy(const struct stat *st, int64_t now)
{
	return stamp_racy_ns(ts_ns(&st->st_mtim), ts_ns(&st->st_ctim), now);
}
/* A file's data stamp racy now, on a source where that counts (a network
 * source, or a clock ticking a millisecond or more: hotfs/srcprobe.h). */
bool stamp_racy_now(int64_t mtime_ns, int64_t ctime_ns);

enum stamp_verdict {
	STAMP_SAME,	/* as recorded, or a change of the mount in flight */
	STAMP_NEW,	/* nothing was recorded: now it is */
	STAMP_CHANGED,	/* changed behind the mount: now recorded */
};

/*
 * The source's stamp st (fstat of the file) against the recorded one:
 * records st unless a change of the mount's own is in flight.  Takes m.
 */
enum stamp_verdict stamp_check(struct hotfs_inode *in, const struct stat *st);

/*
 * The same with the source's stat taken under m through fd (an O_PATH
 * one will do): no change of the mount's own can end between the stat
 * and the check, so that a stat older than such a change is never taken
 * for a change behind the mount.  STAMP_SAME if the stat fails.
 */
enum stamp_verdict stamp_check_fd(struct hotfs_inode *in, int fd);

/*
 * stamp_check_fd and stamp_check_ino record a change (STAMP_CHANGED)
 * before their caller's invalidation reaches the kernel: until it says
 * so with stamp_inval_sent, the change is pending, and an open that
 * comes meanwhile (finding the stamp it records, STAMP_SAME) must still
 * drop the kernel's pages and attributes itself (stamp_inval_pending).
 */
void stamp_inval_sent(struct hotfs_inode *in);
/*
 * m held: wait (at most a second) until no invalidation is pending.  An
 * open that found one pending waits for it before its answer: sent after
 * the answer, it would reach the kernel while the opener's next stat is
 * in flight, and the kernel would drop that stat's attributes as older
 * than the invalidation, keeping the old size (a mapping past it faults,
 * an O_DIRECT read there reads nothing) while the stat shows the new one.
 */
void stamp_wait_inval_locked(struct hotfs_inode *in);
/* m held. */
static inline bool stamp_inval_pending(const struct hotfs_inode *in)
{
	return in->sp.inval_pending != 0;
}

/*
 * The same through the inode's own O_PATH fd, read under m (where the fd
 * budget closes it): STAMP_SAME if it has none open.  Not reopened for
 * this: an inode whose fd the budget closed has no open file handle, and
 * its next open checks the stamp anyway (close-to-open).  *seen: the
 * stat was taken and is the recorded one, recorded by an open, a getattr
 * or this watch, which has already given it to the kernel or told the
 * kernel to drop what it had: nothing to tell it again.  (Not after a
 * change of the mount's own: the kernel learnt that one from the change,
 * not from a stat, and is still told, as before, for the times the
 * source set meanwhile, such as the access time.)
 */
enum stamp_verdict stamp_check_ino(struct hotfs_inode *in, bool *seen);

/* Is st the recorded stamp (times and size)?  m held. */
bool stamp_same_locked(const struct hotfs_inode *in, const struct stat *st);
/* The stamp st gives recorded as the one the kernel's pages and
 * attributes go with (stamp_ours, stamp_settled left as they are: a
 * directory's listing, a snapshot's record); m held.  The only writer
 * of in->stamp but the change bracket's. */
void stamp_take_locked(struct hotfs_inode *in, const struct stat *st);
/* The recorded stamp as a stat's times, size and inode number (the rest
 * of st untouched); m held. */
void stamp_stat_locked(const struct hotfs_inode *in, struct stat *st);

/* Same as stamp_check, m held. */
enum stamp_verdict stamp_check_locked(struct hotfs_inode *in,
				      const struct stat *st);

/*
 * The mount begins a change of the file; st is the source's stat taken
 * under m just now (NULL if it failed).  m held.
 */
void stamp_change_begin(struct hotfs_inode *in, const struct stat *st);

/*
 * The change ended.  If it was the last in flight (stamp_change_last()
 * said so before), st is the source's stat taken under m just now (NULL
 * if it failed); otherwise it is not looked at.  m held.
 */
void stamp_change_end(struct hotfs_inode *in, const struct stat *st);

/*
 * Both, for a change that is not a write (chmod, chown, utimes): take m
 * and stat the source through fd (an O_PATH one will do) themselves.
 */
void stamp_begin(struct hotfs_inode *in, int fd);
void stamp_end(struct hotfs_inode *in, int fd);

/* Is the change about to end the last in flight?  m held. */
static inline bool stamp_change_last(const struct hotfs_inode *in)
{
	return in->sp.chg_inflight == 1;
}

/* Is a change of the mount's own in flight?  m held. */
static inline bool stamp_change_busy(const struct hotfs_inode *in)
{
	return in->sp.chg_inflight != 0;
}

/* Is a stamp recorded (by an open, a getattr, a listing or the
 * snapshot)?  m held. */
static inline bool stamp_known_locked(const struct hotfs_inode *in)
{
	return in->sp.stamp_valid;
}

/* The count of changes behind the mount seen so far (hotfs/inode.h);
 * m held. */
static inline uint32_t stamp_behind_locked(const struct hotfs_inode *in)
{
	return in->sp.behind;
}

/*
 * An open's look at the source through fd, m held (a write of the
 * mount's own that ends meanwhile has recorded its stamp): may the
 * kernel keep its pages (*keep; never: always)?  An invalidation on its
 * way (a getattr or the source watch saw a change first) is waited for:
 * the open must not keep what it will drop, nor return before the
 * kernel's copy is gone.  True if the file changed behind the mount
 * since it was last seen (close-to-open then drops the kernel's cached
 * attributes too), unless never.
 *
 * writers: other handles of the file are open for writing.  The same
 * stamp, recorded within its clock tick, is otherwise dropped at the
 * open (a version of the same tick may hide behind it); with writers
 * open it is kept, and the first open after they closed drops it: a
 * write(2) puts its bytes in the kernel's pages before it sends them,
 * and a drop then loses them as the comment at the top says, a change
 * of the mount's own in flight that the daemon has not seen yet.  (A
 * change behind the mount within that tick, while the mount writes
 * the file too, is seen at the first open after the writers close.)
 */
bool stamp_open_locked(struct hotfs_inode *in, int fd, bool never,
		       bool writers, bool *keep);

/*
 * revalidate=N's trust in the recorded stamp without asking the source:
 * recorded and settled, taken from the source by an open less than
 * limit_ns ago, no change of the mount's own in flight and no
 * invalidation on its way.  m held.
 */
bool stamp_fresh_locked(const struct hotfs_inode *in, int64_t limit_ns);

#endif
