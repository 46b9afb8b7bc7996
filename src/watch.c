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
 * A name is expired, not invalidated (FUSE_LL_EXPIRE_ONLY): the kernel
 * keeps its dentry but asks again (a lookup) at the next path walk
 * through it, and keeps it if the name still leads to the same node.
 * Invalidating it would unhash the dentry even when nothing changed, as
 * after every change the mount makes itself (a mkdir through the mount
 * raises IN_CREATE here too): a process whose working directory it is
 * then gets ENOENT from getcwd(), and /proc/PID/fd shows a file held
 * open as "(deleted)".  A name that did change behind the mount is
 * dropped by that lookup (another node, or ENOENT).
 *
 * A name notification can race a lookup of the same name that is being
 * answered at that moment (the reply would put the old state back in the
 * kernel after the notification): every name notification is sent again
 * DEFER_MS later, when such a reply has long arrived.
 *
 * Node ids are inode addresses (inode.c): once an inode is freed, its
 * address may be the node id of another inode, a file where this was a
 * directory.  So a directory's node id is used only while its watch entry
 * exists, and the inode cannot be freed while the thread is notifying for
 * it: the thread marks the node id busy under m while it notifies, and
 * watch_drop (called as the inode is freed) waits for that and removes
 * the inode's deferred notifications.  The kernel may have forgotten the
 * node meanwhile; the notification then fails with ENOENT, harmlessly.
 *
 * Notifications are never sent with a lock held: the kernel may hold the
 * directory's lock while a worker waits for ours (watch_dir from a
 * create), and a notification of an entry takes that lock.  watch_drop's
 * wait cannot deadlock on that: the node being freed is one the kernel
 * has forgotten, so a notification for it takes no lock of the kernel's.
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

#include "hotfs/log.h"
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

struct wentry {
	int wd;
	int fd;				/* O_PATH on the directory */
	uint64_t nodeid;
	struct wentry *next;
};

struct deferred {
	uint64_t parent;
	struct timespec due;
	char name[NAME_MAX + 1];
};

struct hotfs_watch {
	int ifd;			/* inotify */
	int efd;			/* eventfd: stop the thread */
	struct hotfs_itable *it;
	struct fuse_session *se;
	pthread_t thread;
	bool started;

	pthread_mutex_t m;		/* protects the map and below */
	struct wentry *buckets[NBUCKETS];
	uint64_t ndirs, max_dirs;

	/* name notifications to send again (parent 0: dropped since) */
	struct deferred defer[NDEFER];
	unsigned dhead, dcount;
	/* the directory's node id the thread is notifying for, if any */
	uint64_t busy;
	pthread_cond_t idle;		/* busy went back to 0 */

	_Atomic uint64_t unwatched, events, invalidations, overflows;
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
	pthread_cond_init(&w->idle, NULL);
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
	wd = atomic_load_explicit(&in->wd, memory_order_relaxed);
	if (wd != 0)			/* decided already */
		return wd > 0;
	/* before w->m: ino_fd may free inodes, whose free hook takes it */
	ifd = ino_fd(w->it, in);
	if (ifd < 0)
		return false;
	pthread_mutex_lock(&w->m);
	if (in->wd != 0) {		/* another thread was first */
		pthread_mutex_unlock(&w->m);
		ino_fd_put(in);
		return in->wd > 0;
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
	e->next = w->buckets[bucket(wd)];
	w->buckets[bucket(wd)] = e;
	w->ndirs++;
	in->wd = wd;
	pthread_mutex_unlock(&w->m);
	ino_fd_put(in);
	return true;
unwatched:
	in->wd = -1;			/* not asked again for this inode */
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

void watch_drop(struct hotfs_watch *w, struct hotfs_inode *in)
{
	struct wentry *e;
	uint64_t id;
	unsigned i;
	int wd = in->wd;

	if (!w || wd <= 0)
		return;
	id = nodeid_of(w, in);
	pthread_mutex_lock(&w->m);
	while (w->busy == id)
		pthread_cond_wait(&w->idle, &w->m);
	for (i = 0; i < w->dcount; i++) {
		struct deferred *d = &w->defer[(w->dhead + i) % NDEFER];

		if (d->parent == id)
			d->parent = 0;
	}
	e = unmap(w, wd);
	if (e)
		inotify_rm_watch(w->ifd, wd);
	in->wd = 0;
	pthread_mutex_unlock(&w->m);
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
	s->invalidations = atomic_load_explicit(&w->invalidations,
						memory_order_relaxed);
	s->overflows = atomic_load_explicit(&w->overflows,
					    memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* The event thread */

static void counted(struct hotfs_watch *w)
{
	atomic_fetch_add_explicit(&w->invalidations, 1, memory_order_relaxed);
}

/* m held: notify for the directory id until unbusy(). */
static void busy(struct hotfs_watch *w, uint64_t id)
{
	w->busy = id;
}

static void unbusy(struct hotfs_watch *w)
{
	pthread_mutex_lock(&w->m);
	w->busy = 0;
	pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->m);
}

static void expire_entry(struct hotfs_watch *w, uint64_t parent,
			 const char *name)
{
	int r;

	r = fuse_lowlevel_notify_expire_entry(w->se, parent, name,
					      strlen(name),
					      FUSE_LL_EXPIRE_ONLY);
	if (r == -ENOSYS)	/* a kernel without it: the older way */
		fuse_lowlevel_notify_inval_entry(w->se, parent, name,
						 strlen(name));
	counted(w);
}

static void inval_attr(struct hotfs_watch *w, uint64_t nodeid, bool data)
{
	/* attributes only (offset < 0), or the directory's cached listing
	 * too (offset 0, length 0: all of it) */
	fuse_lowlevel_notify_inval_inode(w->se, nodeid, data ? 0 : -1, 0);
	counted(w);
}

static int64_t ms_until(const struct timespec *due)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (due->tv_sec - now.tv_sec) * 1000 +
	       (due->tv_nsec - now.tv_nsec) / 1000000;
}

/*
 * Send the oldest deferred notification if it is due (or if now): false
 * if there was none to send.
 */
static bool defer_send_one(struct hotfs_watch *w, bool now)
{
	char name[NAME_MAX + 1];
	struct deferred *d;
	uint64_t parent;

	pthread_mutex_lock(&w->m);
	for (;;) {
		if (!w->dcount) {
			pthread_mutex_unlock(&w->m);
			return false;
		}
		d = &w->defer[w->dhead];
		parent = d->parent;
		if (parent && !now && ms_until(&d->due) > 0) {
			pthread_mutex_unlock(&w->m);
			return false;
		}
		w->dhead = (w->dhead + 1) % NDEFER;
		w->dcount--;
		if (parent)		/* 0: the directory was freed since */
			break;
	}
	memcpy(name, d->name, sizeof(name));
	busy(w, parent);
	pthread_mutex_unlock(&w->m);
	expire_entry(w, parent, name);
	unbusy(w);
	return true;
}

static void defer_flush(struct hotfs_watch *w, bool all)
{
	while (defer_send_one(w, all))
		;
}

/* m held, and the queue not full (handle makes room first). */
static void defer_add(struct hotfs_watch *w, uint64_t parent,
		      const char *name)
{
	struct deferred *d = &w->defer[(w->dhead + w->dcount) % NDEFER];

	d->parent = parent;
	snprintf(d->name, sizeof(d->name), "%s", name);
	clock_gettime(CLOCK_MONOTONIC, &d->due);
	d->due.tv_nsec += DEFER_MS * 1000000L;
	if (d->due.tv_nsec >= 1000000000L) {
		d->due.tv_sec++;
		d->due.tv_nsec -= 1000000000L;
	}
	w->dcount++;
}

/*
 * Events were lost: every watched directory's attributes and listing
 * are dropped now; names and other attributes the kernel holds expire
 * within HOTFS_WATCH_TIMEOUT.
 */
/* m held: the entry of wd, if it is still the directory id's. */
static struct wentry *find(struct hotfs_watch *w, int wd, uint64_t id)
{
	struct wentry *e;

	for (e = w->buckets[bucket(wd)]; e; e = e->next)
		if (e->wd == wd)
			return !id || e->nodeid == id ? e : NULL;
	return NULL;
}

static void overflowed(struct hotfs_watch *w)
{
	struct wentry *e;
	uint64_t n = 0, i;
	size_t b;
	struct {
		int wd;
		uint64_t id;
	} *dirs;

	if (atomic_fetch_add_explicit(&w->overflows, 1,
				      memory_order_relaxed) == 0)
		hotfs_log(LOG_WARNING,
			  "source watch: event queue overflow; changes made "
			  "behind the mount may show only after %g s\n",
			  HOTFS_WATCH_TIMEOUT);
	pthread_mutex_lock(&w->m);
	dirs = malloc((w->ndirs + 1) * sizeof(*dirs));
	for (b = 0; dirs && b < NBUCKETS; b++)
		for (e = w->buckets[b]; e; e = e->next) {
			dirs[n].wd = e->wd;
			dirs[n++].id = e->nodeid;
		}
	pthread_mutex_unlock(&w->m);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&w->m);
		e = find(w, dirs[i].wd, dirs[i].id);
		if (e)
			busy(w, dirs[i].id);
		pthread_mutex_unlock(&w->m);
		if (!e)			/* freed meanwhile */
			continue;
		inval_attr(w, dirs[i].id, true);
		unbusy(w);
	}
	free(dirs);
}

static void handle(struct hotfs_watch *w, const struct inotify_event *ev)
{
	struct hotfs_inode *child = NULL;
	struct wentry *e, *gone = NULL;
	struct stat st;
	uint64_t dir = 0;
	bool named = ev->len && ev->name[0];
	bool name_ev = named && (ev->mask & NAME_EVENTS);

	atomic_fetch_add_explicit(&w->events, 1, memory_order_relaxed);
	if (ev->mask & IN_Q_OVERFLOW) {
		overflowed(w);
		return;
	}
	if (name_ev && w->dcount == NDEFER)	/* only this thread adds */
		defer_send_one(w, true);
	pthread_mutex_lock(&w->m);
	e = find(w, ev->wd, 0);
	if (e) {
		dir = e->nodeid;
		/* a new name may be a new link to a known file: its link
		 * count changed, and link() tells only the file's own
		 * watchers */
		if (named && (ev->mask & (DATA_EVENTS | IN_CREATE |
					  IN_MOVED_TO))) {
			/* under the lock: e->fd stays open meanwhile */
			if (fstatat(e->fd, ev->name, &st,
				    AT_SYMLINK_NOFOLLOW) == 0)
				child = ino_find_hold(w->it, st.st_dev,
						      st.st_ino);
		}
		if (ev->mask & IN_IGNORED)
			gone = unmap(w, ev->wd);	/* the directory went */
		/* the directory cannot be freed until unbusy() */
		busy(w, dir);
		if (name_ev)
			defer_add(w, dir, ev->name);
	}
	pthread_mutex_unlock(&w->m);
	if (gone) {
		close(gone->fd);
		free(gone);
	}
	if (!dir)
		return;
	if (name_ev) {
		expire_entry(w, dir, ev->name);
		inval_attr(w, dir, true);
	}
	if (!named && (ev->mask & (IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)))
		inval_attr(w, dir, false);
	unbusy(w);
	if (child) {
		/* a file changed behind the mount: its cached pages too
		 * (not for the mount's own writes: hotfs/stamp.h) */
		bool seen = false;
		bool data = S_ISREG(st.st_mode) &&
			    stamp_check_ino(child, &seen) == STAMP_CHANGED;
		uint64_t id = nodeid_of(w, child);

		/* held (a reference, not a lock) until the kernel has it;
		 * nothing sent for a state an open or a getattr has seen
		 * already: an invalidation that reaches the kernel while a
		 * stat is in flight makes it drop that stat's attributes
		 * (hotfs/stamp.h, stamp_wait_inval_locked) */
		if (!seen)
			inval_attr(w, id, data);
		if (data)
			stamp_inval_sent(child);
		ino_unhold(w->it, child);
	}
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
	}
	defer_flush(w, true);
	return NULL;
}

int watch_start(struct hotfs_watch *w, struct fuse_session *se)
{
	int r;

	w->se = se;
	r = pthread_create(&w->thread, NULL, watch_thread, w);
	if (r)
		return -r;
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
	w->started = false;
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
	pthread_cond_destroy(&w->idle);
	pthread_mutex_destroy(&w->m);
	free(w);
}
