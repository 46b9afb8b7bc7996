// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Source watching (see include/hotfs/watch.h).
 *
 * One inotify instance; a watch per directory inode; a map from watch
 * descriptor to the directory's node id and a private O_PATH fd on it
 * (the inode itself may be freed while its events are still queued, so
 * the thread never touches it).  The thread translates events into
 * notifications:
 *
 *   name created, deleted, moved in or out  -> the kernel's entry for the
 *       name, and the directory's attributes and cached listing
 *   a child's attributes or data changed,   -> the child's attributes (its
 *   or a new name for it                        node id found through the
 *                                               inode table by (dev, ino))
 *   the directory's own attributes          -> the directory's attributes
 *
 * It sends none itself: it queues them for the notifier (hotfs/notify.h),
 * whose thread may wait in the kernel for a directory's lock, held by a
 * request in flight, without holding up the events, nor a request.
 *
 * A name is expired, not invalidated (FUSE_LL_EXPIRE_ONLY): the kernel
 * keeps its dentry but asks again (a lookup) at the next path walk
 * through it, and keeps it if the name still leads to the same node.
 * Invalidating it would unhash the dentry even when nothing changed: a
 * process whose working directory it is then gets ENOENT from getcwd(),
 * and /proc/PID/fd shows a file held open as "(deleted)".  A name that
 * did change behind the mount is dropped by that lookup (another node,
 * or ENOENT).
 *
 * The mount's own changes of names raise events here too (a mkdir
 * through the mount raises IN_CREATE): their requests say so first
 * (watch_own_add), and an event they announced is taken for theirs and
 * tells the kernel nothing, which learnt the change from the reply.  The
 * announcements ("registrations") are matched by directory, name and
 * event: one each.  An event that comes while its request is still in
 * flight is claimed, and told to the kernel after all if the change
 * then fails (it was another's).  A registration whose event has not
 * come OWN_TTL_MS after its change (a create that opened a file already
 * there raises none; an overflow loses it) is forgotten: meanwhile it
 * could take an outside change of the same name and kind for the
 * mount's, and the kernel would keep that name until its timeout.
 *
 * A name notification can race a lookup of the same name that is being
 * answered at that moment (the reply would put the old state back in the
 * kernel after the notification): every name notification is sent again
 * DEFER_MS later, when such a reply has long arrived.
 *
 * Node ids are inode addresses (inode.c): once an inode is freed, its
 * address may be the node id of another inode, a file where this was a
 * directory.  So a directory's node id is queued only while its watch
 * entry exists (under m), a child's while the thread holds the inode, and
 * as an inode is freed its queued notifications go and its free waits
 * for one being sent (watch_drop, ntf_forget).  The kernel may have
 * forgotten the node meanwhile; the notification then fails with ENOENT,
 * harmlessly.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/log.h"
#include "hotfs/notify.h"
#include "hotfs/stamp.h"
#include "hotfs/srcprobe.h"
#include "hotfs/watch.h"

#define WATCH_MASK	(IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | \
			 IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
			 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | \
			 IN_EXCL_UNLINK)
#define NAME_EVENTS	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define DATA_EVENTS	(IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE)
#define NBUCKETS	4096
#define DEFER_MS	50
#define NDEFER		256
#define OWN_BUCKETS	256
#define OWN_MAX		4096		/* registrations at most */
#define OWN_TTL_MS	2000

struct wentry {
	int wd;
	int fd;				/* O_PATH on the directory */
	uint64_t nodeid;
	bool removed;			/* found removed (scan_removed) */
	struct wentry *next;
};

struct deferred {
	uint64_t parent;
	struct timespec due;
	char name[NAME_MAX + 1];
};

/* A name event a change of the mount's own will raise (watch_own_add). */
struct watch_own_ent {
	struct watch_own_ent *next;	/* in its bucket */
	uint64_t dir;			/* node id */
	uint32_t kind;			/* one of NAME_EVENTS */
	bool ended;			/* made: awaits its event until */
	bool claimed;			/* its event came while in flight */
	int64_t until;			/* CLOCK_MONOTONIC ns */
	char name[];
};

struct hotfs_watch {
	int ifd;			/* inotify */
	int efd;			/* eventfd: stop the thread */
	struct hotfs_itable *it;
	struct hotfs_notify *ntf;	/* sends what the thread finds */
	pthread_t thread;
	bool started;

	pthread_mutex_t m;		/* protects the map and below */
	struct wentry *buckets[NBUCKETS];
	uint64_t ndirs, max_dirs;

	/* name notifications to send again (parent 0: dropped since) */
	struct deferred defer[NDEFER];
	unsigned dhead, dcount;
	/* the mount's own name events to come */
	struct watch_own_ent *own[OWN_BUCKETS];
	unsigned nown;
	/* a directory removed behind the mount since the last scan */
	bool dir_removed;

	_Atomic uint64_t unwatched, events, overflows, own_events;
};

static size_t bucket(int wd)
{
	return (size_t)((unsigned)wd * 2654435761u) % NBUCKETS;
}

static uint64_t read_max_watches(void)
{
	FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "r");
	unsigned long long n = 8192;

	if (f) {
		if (fscanf(f, "%llu", &n) != 1)
			n = 8192;
		fclose(f);
	}
	return n / 2;		/* leave half to the user's other programs */
}

static void drop_hook(void *arg, struct hotfs_inode *in)
{
	watch_drop(arg, in);
}

int watch_new(struct hotfs_watch **wp, struct hotfs_itable *it)
{
	struct hotfs_watch *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd == -1) {
		err = -errno;
		free(w);
		return err;
	}
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd == -1) {
		err = -errno;
		close(w->ifd);
		free(w);
		return err;
	}
	w->it = it;
	w->max_dirs = read_max_watches();
	pthread_mutex_init(&w->m, NULL);
	ino_set_free_hook(it, drop_hook, w);
	*wp = w;
	return 0;
}

void watch_set_max_dirs(struct hotfs_watch *w, uint64_t n)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->m);
	if (n < w->max_dirs)
		w->max_dirs = n;
	pthread_mutex_unlock(&w->m);
}

static uint64_t nodeid_of(struct hotfs_watch *w, struct hotfs_inode *in)
{
	return in == ino_root(w->it) ? FUSE_ROOT_ID : (uintptr_t)in;
}

bool watch_dir(struct hotfs_watch *w, struct hotfs_inode *in)
{
	struct wentry *e;
	struct statfs sfs;
	char path[64];
	int wd, fd, ifd;

	if (!w)
		return false;
	wd = atomic_load_explicit(&in->watch.wd, memory_order_relaxed);
	if (wd != 0)			/* decided already */
		return wd > 0;
	/* before w->m: ino_fd may free inodes, whose free hook takes it */
	ifd = ino_fd(w->it, in);
	if (ifd < 0)
		return false;
	pthread_mutex_lock(&w->m);
	if (in->watch.wd != 0) {		/* another thread was first */
		pthread_mutex_unlock(&w->m);
		ino_fd_put(in);
		return in->watch.wd > 0;
	}
	if (fstatfs(ifd, &sfs) == 0 && srcprobe_fs_remote(sfs.f_type))
		goto unwatched;
	if (w->ndirs >= w->max_dirs)
		goto unwatched;
	e = malloc(sizeof(*e));
	if (!e)
		goto unwatched;
	/* its own fd: the inode's may be closed for the fd budget */
	fd = fcntl(ifd, F_DUPFD_CLOEXEC, 3);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ifd);
	wd = fd == -1 ? -1 : inotify_add_watch(w->ifd, path, WATCH_MASK);
	if (wd <= 0) {
		if (fd != -1)
			close(fd);
		free(e);
		goto unwatched;
	}
	e->wd = wd;
	e->fd = fd;
	e->nodeid = nodeid_of(w, in);
	e->removed = false;
	e->next = w->buckets[bucket(wd)];
	w->buckets[bucket(wd)] = e;
	w->ndirs++;
	in->watch.wd = wd;
	pthread_mutex_unlock(&w->m);
	ino_fd_put(in);
	return true;
unwatched:
	in->watch.wd = -1;	/* not asked again for this inode */
	pthread_mutex_unlock(&w->m);
	ino_fd_put(in);
	atomic_fetch_add_explicit(&w->unwatched, 1, memory_order_relaxed);
	return false;
}

/* Called with w->m held; returns the entry, out of the map. */
static struct wentry *unmap(struct hotfs_watch *w, int wd)
{
	struct wentry **pp, *e;

	for (pp = &w->buckets[bucket(wd)]; (e = *pp); pp = &e->next)
		if (e->wd == wd) {
			*pp = e->next;
			w->ndirs--;
			return e;
		}
	return NULL;
}

/* m held: the bucket of the mount's own events in dir of name */
static struct watch_own_ent **own_bucket(struct hotfs_watch *w, uint64_t dir,
					 const char *name)
{
	uint64_t h = dir * 0x9e3779b97f4a7c15ull;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return &w->own[(h >> 32) % OWN_BUCKETS];
}

/* m held: e out of its bucket, freed. */
static void own_free(struct hotfs_watch *w, struct watch_own_ent *e)
{
	struct watch_own_ent **pp = own_bucket(w, e->dir, e->name);

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	w->nown--;
	free(e);
}

/* m held: forget the registrations that are done with their change and
 * whose event did not come (all of them, or past their time), or those
 * of the directory dir (0: any). */
static void own_sweep(struct hotfs_watch *w, bool all, uint64_t dir)
{
	int64_t now = clock_mono_ns();
	struct watch_own_ent **pp, *e;
	size_t b;

	for (b = 0; w->nown && b < OWN_BUCKETS; b++)
		for (pp = &w->own[b]; (e = *pp);) {
			if (e->ended && (dir ? e->dir == dir :
					 all || now > e->until)) {
				*pp = e->next;
				w->nown--;
				free(e);
			} else {
				pp = &e->next;
			}
		}
}

void watch_drop(struct hotfs_watch *w, struct hotfs_inode *in)
{
	struct wentry *e = NULL;
	uint64_t id;
	unsigned i;
	int wd = in->watch.wd;

	if (!w)
		return;
	id = nodeid_of(w, in);
	if (wd > 0) {
		pthread_mutex_lock(&w->m);
		for (i = 0; i < w->dcount; i++) {
			struct deferred *d =
				&w->defer[(w->dhead + i) % NDEFER];

			if (d->parent == id)
				d->parent = 0;
		}
		own_sweep(w, false, id);
		e = unmap(w, wd);
		if (e)
			inotify_rm_watch(w->ifd, wd);
		in->watch.wd = 0;
		pthread_mutex_unlock(&w->m);
	}
	/* nothing can queue id now (its entry is gone, and nobody holds
	 * the inode): what is queued goes */
	ntf_forget(w->ntf, id);
	if (e) {
		close(e->fd);
		free(e);
	}
}

void watch_get_stats(struct hotfs_watch *w, struct hotfs_watch_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!w)
		return;
	pthread_mutex_lock(&w->m);
	s->dirs = w->ndirs;
	pthread_mutex_unlock(&w->m);
	s->unwatched = atomic_load_explicit(&w->unwatched,
					    memory_order_relaxed);
	s->events = atomic_load_explicit(&w->events, memory_order_relaxed);
	s->invalidations = ntf_sent(w->ntf);
	s->overflows = atomic_load_explicit(&w->overflows,
					    memory_order_relaxed);
	s->own_events = atomic_load_explicit(&w->own_events,
					     memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* The mount's own changes of names */

void watch_own_add(struct hotfs_watch *w, struct watch_own *o,
		   struct hotfs_inode *dir, const char *name, uint32_t kind)
{
	struct watch_own_ent *e, **b;
	size_t len;

	if (!w || !w->started || o->n == WATCH_OWN_MAX ||
	    atomic_load_explicit(&dir->watch.wd, memory_order_relaxed) <= 0)
		return;
	len = strlen(name);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return;		/* its event is told to the kernel */
	memset(e, 0, sizeof(*e));
	e->dir = nodeid_of(w, dir);
	e->kind = kind;
	memcpy(e->name, name, len + 1);
	pthread_mutex_lock(&w->m);
	if (w->nown >= OWN_MAX) {
		pthread_mutex_unlock(&w->m);
		free(e);
		return;
	}
	b = own_bucket(w, e->dir, name);
	e->next = *b;
	*b = e;
	w->nown++;
	pthread_mutex_unlock(&w->m);
	o->e[o->n++] = e;
}

/* A name changed behind the mount: its entry, and its directory's
 * attributes and listing. */
static void name_changed(struct hotfs_watch *w, uint64_t dir,
			 const char *name)
{
	ntf_expire(w->ntf, dir, name);
	ntf_inval(w->ntf, dir, 0, NULL, NULL);
}

void watch_own_end(struct hotfs_watch *w, struct watch_own *o, bool made)
{
	int64_t until = clock_mono_ns() + OWN_TTL_MS * 1000000LL;
	unsigned i;

	if (!w || !o->n)
		return;
	pthread_mutex_lock(&w->m);
	for (i = 0; i < o->n; i++) {
		struct watch_own_ent *e = o->e[i];

		if (made && !e->claimed) {	/* its event is to come */
			e->ended = true;
			e->until = until;
			continue;
		}
		/* an event taken for it was another's: told now (queued:
		 * the kernel holds this request's directory locks) */
		if (!made && e->claimed)
			name_changed(w, e->dir, e->name);
		own_free(w, e);
	}
	pthread_mutex_unlock(&w->m);
	o->n = 0;
}

/* m held: is this name event one of the mount's own changes? */
static bool own_event(struct hotfs_watch *w, uint64_t dir, uint32_t kind,
		      const char *name)
{
	struct watch_own_ent *e, *next;
	int64_t now;

	if (!w->nown)
		return false;
	now = clock_mono_ns();
	for (e = *own_bucket(w, dir, name); e; e = next) {
		next = e->next;
		if (e->ended && now > e->until) {	/* too late */
			own_free(w, e);
			continue;
		}
		if (e->dir != dir || e->kind != kind || e->claimed ||
		    strcmp(e->name, name))
			continue;
		if (e->ended)
			own_free(w, e);
		else
			e->claimed = true;	/* the change says (own_end) */
		atomic_fetch_add_explicit(&w->own_events, 1,
					  memory_order_relaxed);
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* The event thread */

static int64_t ms_until(const struct timespec *due)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (due->tv_sec - now.tv_sec) * 1000 +
	       (due->tv_nsec - now.tv_nsec) / 1000000;
}

/*
 * m held: queue the oldest deferred notification if it is due (or if
 * now): false if there was none.
 */
static bool defer_send_one(struct hotfs_watch *w, bool now)
{
	struct deferred *d;
	uint64_t parent;

	for (;;) {
		if (!w->dcount)
			return false;
		d = &w->defer[w->dhead];
		parent = d->parent;
		if (parent && !now && ms_until(&d->due) > 0)
			return false;
		w->dhead = (w->dhead + 1) % NDEFER;
		w->dcount--;
		if (parent)		/* 0: the directory was freed since */
			break;
	}
	ntf_expire(w->ntf, parent, d->name);
	return true;
}

static void defer_flush(struct hotfs_watch *w, bool all)
{
	pthread_mutex_lock(&w->m);
	while (defer_send_one(w, all))
		;
	pthread_mutex_unlock(&w->m);
}

/* m held, and the queue not full. */
static void defer_add(struct hotfs_watch *w, uint64_t parent,
		      const char *name)
{
	struct deferred *d = &w->defer[(w->dhead + w->dcount) % NDEFER];

	d->parent = parent;
	snprintf(d->name, sizeof(d->name), "%s", name);
	clock_gettime(CLOCK_MONOTONIC, &d->due);
	clock_add_ms(&d->due, DEFER_MS);
	w->dcount++;
}

/* m held: the entry of wd. */
static struct wentry *find(struct hotfs_watch *w, int wd)
{
	struct wentry *e;

	for (e = w->buckets[bucket(wd)]; e; e = e->next)
		if (e->wd == wd)
			return e;
	return NULL;
}

/*
 * Events were lost: every watched directory's attributes and listing
 * are dropped now; names and other attributes the kernel holds expire
 * within HOTFS_WATCH_TIMEOUT.  The mount's own events still to come may
 * be among those lost: they are not waited for.
 */
static void overflowed(struct hotfs_watch *w)
{
	struct wentry *e;
	size_t b;

	if (atomic_fetch_add_explicit(&w->overflows, 1,
				      memory_order_relaxed) == 0)
		hotfs_log(LOG_WARNING,
			  "source watch: event queue overflow; changes made "
			  "behind the mount may show only after %g s\n",
			  HOTFS_WATCH_TIMEOUT);
	pthread_mutex_lock(&w->m);
	for (b = 0; b < NBUCKETS; b++)
		for (e = w->buckets[b]; e; e = e->next)
			ntf_inval(w->ntf, e->nodeid, 0, NULL, NULL);
	own_sweep(w, true, 0);
	pthread_mutex_unlock(&w->m);
}

static void inval_sent(void *arg)
{
	stamp_inval_sent(arg);
}

static void handle(struct hotfs_watch *w, const struct inotify_event *ev)
{
	struct hotfs_inode *child = NULL;
	struct wentry *e, *gone = NULL;
	struct stat st;
	uint64_t dir;
	bool named = ev->len && ev->name[0];
	bool name_ev = named && (ev->mask & NAME_EVENTS);
	bool own;

	atomic_fetch_add_explicit(&w->events, 1, memory_order_relaxed);
	if (ev->mask & IN_Q_OVERFLOW) {
		overflowed(w);
		return;
	}
	ntf_wait_room(w->ntf);
	pthread_mutex_lock(&w->m);
	e = find(w, ev->wd);
	if (!e) {
		pthread_mutex_unlock(&w->m);
		return;
	}
	dir = e->nodeid;
	own = name_ev && own_event(w, dir, ev->mask & NAME_EVENTS, ev->name);
	/* a new name may be a new link to a known file: its link count
	 * changed, and link() tells only the file's own watchers (not for
	 * the mount's own: the kernel learnt it from the reply) */
	if (named && !own &&
	    (ev->mask & (DATA_EVENTS | IN_CREATE | IN_MOVED_TO))) {
		/* under the lock: e->fd stays open meanwhile */
		if (fstatat(e->fd, ev->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			child = ino_find_hold(w->it, st.st_dev, st.st_ino);
	}
	if (ev->mask & IN_IGNORED)
		gone = unmap(w, ev->wd);	/* the directory went */
	/* a directory removed, or renamed over another (which goes) */
	if (name_ev && !own && (ev->mask & IN_ISDIR) &&
	    (ev->mask & (IN_DELETE | IN_MOVED_TO)))
		w->dir_removed = true;
	if (name_ev && !own) {
		name_changed(w, dir, ev->name);
		if (w->dcount == NDEFER)
			defer_send_one(w, true);
		defer_add(w, dir, ev->name);
	}
	if (!named && (ev->mask & (IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)))
		ntf_inval(w->ntf, dir, -1, NULL, NULL);
	pthread_mutex_unlock(&w->m);
	if (gone) {
		close(gone->fd);
		free(gone);
	}
	if (child) {
		/* a file changed behind the mount: its cached pages too
		 * (not for the mount's own writes: hotfs/stamp.h) */
		bool seen = false;
		bool data = S_ISREG(st.st_mode) &&
			    stamp_check_ino(child, &seen) == STAMP_CHANGED;

		/* queued while held: once it is not, a free drops it
		 * (watch_drop); nothing sent for a state an open or a
		 * getattr has seen already: an invalidation that reaches
		 * the kernel while a stat is in flight makes it drop that
		 * stat's attributes (hotfs/stamp.h,
		 * stamp_wait_inval_locked) */
		if (!seen)
			ntf_inval(w->ntf, nodeid_of(w, child), data ? 0 : -1,
				  data ? inval_sent : NULL, child);
		else if (data)
			stamp_inval_sent(child);
		ino_unhold(w->it, child);
	}
}

/*
 * A watched directory removed behind the mount raises no event of its
 * own (IN_DELETE_SELF, IN_IGNORED) while a descriptor holds it, and its
 * entry's fd and the inode's do as long as it is watched: only its
 * parent's IN_DELETE comes, which names it but cannot give its inode.
 * So after the events that removed a directory, the watched ones with
 * no link left are found by their fds and their attributes dropped (the
 * kernel would keep their link count for the covered timeout); each
 * once.  Their entries stay until their inodes are freed (watch_drop:
 * the inode holds the wd, which inotify may give again once removed).
 */
static void scan_removed(struct hotfs_watch *w)
{
	struct wentry *e;
	struct stat st;
	unsigned b;

	ntf_wait_room(w->ntf);
	pthread_mutex_lock(&w->m);
	w->dir_removed = false;
	for (b = 0; b < NBUCKETS; b++)
		for (e = w->buckets[b]; e; e = e->next)
			if (!e->removed && fstat(e->fd, &st) == 0 &&
			    st.st_nlink == 0) {
				e->removed = true;
				ntf_inval(w->ntf, e->nodeid, -1, NULL, NULL);
			}
	pthread_mutex_unlock(&w->m);
}

static void *watch_thread(void *arg)
{
	struct hotfs_watch *w = arg;
	char buf[64 * 1024]
		__attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = w->ifd, .events = POLLIN },
			{ .fd = w->efd, .events = POLLIN },
		};
		int timeout = -1;
		ssize_t n;
		char *q;

		pthread_mutex_lock(&w->m);
		if (w->dcount) {
			int64_t ms = ms_until(&w->defer[w->dhead].due);

			timeout = ms < 0 ? 0 : (int)ms + 1;
		}
		/* registrations past their time are swept */
		if (w->nown && (timeout < 0 || timeout > OWN_TTL_MS / 2))
			timeout = OWN_TTL_MS / 2;
		own_sweep(w, false, 0);
		pthread_mutex_unlock(&w->m);
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		defer_flush(w, false);
		if (!(p[0].revents & POLLIN))
			continue;
		n = read(w->ifd, buf, sizeof(buf));
		if (n <= 0)
			continue;
		for (q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const void *)q;

			handle(w, ev);
			q += sizeof(*ev) + ev->len;
		}
		if (w->dir_removed)	/* the thread's own flag */
			scan_removed(w);
	}
	defer_flush(w, true);
	return NULL;
}

int watch_start(struct hotfs_watch *w, struct fuse_session *se)
{
	int r;

	r = ntf_start(&w->ntf, se);
	if (r < 0)
		return r;
	if (!ntf_own_files(w->ntf))
		hotfs_log(LOG_NOTICE, "source watch: /dev/fuse cannot be "
			  "cloned: its notifications share the daemon's "
			  "descriptors, and a kill -9 may leave the mount to "
			  "an abort (hotfs/notify.h)\n");
	r = pthread_create(&w->thread, NULL, watch_thread, w);
	if (r) {
		ntf_stop(w->ntf);
		w->ntf = NULL;
		return -r;
	}
	w->started = true;
	return 0;
}

void watch_stop(struct hotfs_watch *w)
{
	uint64_t one = 1;

	if (!w || !w->started)
		return;
	if (write(w->efd, &one, sizeof(one)) != sizeof(one))
		hotfs_log(LOG_ERR, "source watch: cannot stop\n");
	pthread_join(w->thread, NULL);
	ntf_stop(w->ntf);
	pthread_mutex_lock(&w->m);
	w->ntf = NULL;
	w->started = false;
	own_sweep(w, true, 0);
	pthread_mutex_unlock(&w->m);
}

void watch_free(struct hotfs_watch *w)
{
	size_t b;

	if (!w)
		return;
	watch_stop(w);
	ino_set_free_hook(w->it, NULL, NULL);
	for (b = 0; b < NBUCKETS; b++) {
		struct wentry *e, *next;

		for (e = w->buckets[b]; e; e = next) {
			next = e->next;
			close(e->fd);
			free(e);
		}
	}
	close(w->ifd);
	close(w->efd);
	pthread_mutex_destroy(&w->m);
	free(w);
}
