/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Watching the source for changes made behind the mount (inotify), so
 * that the kernel's caches of names and attributes can be trusted for
 * long and are still dropped within a moment of a change.
 *
 * Every directory inode hotfs knows gets a watch (up to half the
 * user's inotify budget).  A change reported in a watched directory
 * expires the kernel's entry for that name (the kernel asks again at the
 * next path walk, and keeps it if it still leads to the same node) and
 * invalidates the attributes of the object, through the FUSE
 * notification calls, which a thread of their own sends (hotfs/notify.h).
 * A change the mount makes itself is told to the kernel by the reply,
 * not again: the requests that change names say so (watch_own_add).
 * A watched directory removed behind the mount raises no event of its
 * own while hotfs holds it open: after its parent's event, the watched
 * directories with no link left are found by their descriptors and
 * their attributes invalidated.
 * Directories on network
 * filesystems (NFS, SMB, FUSE, ...) are not watched: other clients'
 * changes raise no event there.
 *
 * An entry or an attribute is "covered" when a change to it raises an
 * event hotfs sees: a name in a watched directory; the attributes of a
 * watched directory, or of a non-directory with one link found in a
 * watched directory.  Covered replies may carry the long timeout
 * (HOTFS_WATCH_TIMEOUT); the rest keep the short one.
 */
#ifndef HOTFS_WATCH_H
#define HOTFS_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "hotfs/inode.h"

/* How long the kernel may trust a covered entry or attribute: the bound
 * on staleness if an event is ever lost (a queue overflow). */
#define HOTFS_WATCH_TIMEOUT	60.0

struct hotfs_watch;

struct hotfs_watch_stats {
	uint64_t dirs;			/* directories watched now */
	uint64_t unwatched;		/* not watched: budget, fs type */
	uint64_t events;		/* events read */
	uint64_t invalidations;		/* notifications sent to the kernel */
	uint64_t overflows;		/* event queue overflows */
	uint64_t own_events;		/* events of the mount's own changes */
};

/* Returns 0 or -errno. */
int watch_new(struct hotfs_watch **wp, struct hotfs_itable *it);
/* Start the event thread; notifications go to se. */
int watch_start(struct hotfs_watch *w, struct fuse_session *se);
/* Watch at most n directories (each holds an fd); fewer if inotify's
 * own limit is lower.  w may be NULL. */
void watch_set_max_dirs(struct hotfs_watch *w, uint64_t n);
/* Stop the thread: before the session's device is closed. */
void watch_stop(struct hotfs_watch *w);
void watch_free(struct hotfs_watch *w);

/* Watch the directory in (idempotent); true if it is watched. */
bool watch_dir(struct hotfs_watch *w, struct hotfs_inode *in);

/* The directory in watched (watch_dir) and its attributes covered by
 * the watch, as a lookup or the snapshot reaches it. */
static inline void watch_cover_dir(struct hotfs_watch *w,
				   struct hotfs_inode *in)
{
	atomic_store(&in->watch.covered, watch_dir(w, in));
}

/* A file's attributes covered by the watch: its parent is watched and
 * it has no link elsewhere (false: a link elsewhere, or not known). */
static inline void watch_cover_file(struct hotfs_inode *in, bool covered)
{
	atomic_store(&in->watch.covered, covered);
}

/* Does a change of in's attributes raise an event the watch sees? */
static inline bool watch_covers(const struct hotfs_inode *in)
{
	return atomic_load(&in->watch.covered);
}

/* Is the directory in watched (its changes of names seen)? */
static inline bool watch_watched(const struct hotfs_inode *in)
{
	return atomic_load(&in->watch.wd) > 0;
}
/* The inode is being freed: drop its watch, and the notifications
 * queued for it (called by the table for every inode). */
void watch_drop(struct hotfs_watch *w, struct hotfs_inode *in);

/*
 * The mount's own changes of names.  A request that creates, removes or
 * renames a name tells the watch first, for each name it changes in a
 * watched directory, the event it will raise there (kind: IN_CREATE,
 * IN_DELETE, IN_MOVED_FROM or IN_MOVED_TO; an exchange raises both of the
 * last two for each name), and once the change returned whether it was
 * made.  The event of a change made is then taken for the mount's own
 * and sends nothing: the kernel learnt the change from the reply, and an
 * entry notification would wait for the directory's lock that the kernel
 * holds until that reply (hotfs/notify.h).  o starts zeroed; at most
 * WATCH_OWN_MAX events; w may be NULL.
 */
#define WATCH_OWN_MAX	4

struct watch_own_ent;
struct watch_own {
	struct watch_own_ent *e[WATCH_OWN_MAX];
	unsigned n;
};

void watch_own_add(struct hotfs_watch *w, struct watch_own *o,
		   struct hotfs_inode *dir, const char *name, uint32_t kind);
void watch_own_end(struct hotfs_watch *w, struct watch_own *o, bool made);

void watch_get_stats(struct hotfs_watch *w, struct hotfs_watch_stats *s);

#endif
