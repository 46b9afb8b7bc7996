// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode table (see include/hotfs/inode.h).
 *
 * A chained hash table keyed by (dev, ino) that doubles when its load
 * passes 1.  The root inode is never freed.  The kernel's node id for an
 * inode is its address (passthrough_ll.c does the same), so an inode must
 * stay allocated until the kernel forgets every lookup of it.
 *
 * Forgotten inodes may be retained (ino_set_retain): they stay in the
 * table with nlookup == 0, on an LRU list, their O_PATH fd keeping the
 * source's dentry and inode in memory; a lookup takes them back.  Only
 * files and directories that still have a name are retained, and
 * ino_sweep closes those deleted since, so that retaining never keeps a
 * deleted file's space allocated for long.
 *
 * The fd budget (ino_set_fd_budget): every O_PATH fd counts against the
 * process's RLIMIT_NOFILE, and a walk of a big tree makes the kernel keep
 * (nlookup > 0) more inodes than that.  Over the budget, retained inodes
 * go first (__trim); then shrink() closes the fds of inodes that nothing
 * uses, chosen by a clock over the hash buckets (fd_ref is the second
 * chance: set at every ino_fd, cleared as the hand passes), down to a low
 * mark a little under the budget so that closing comes in batches.  Such
 * an inode keeps its file handle (name_to_handle_at, recorded when its
 * fd is first closed) and ino_fd reopens it with open_by_handle_at on the
 * source root's mount, checking that (st_dev, st_ino) still match.  A
 * handle survives renames; it does not survive deletion (ESTALE), so
 * files with no link left keep their fds, as do inodes with open handles
 * (op.n), background work (holds), the root, objects on another mount
 * than the root's, and everything if the source has no handles or the
 * daemon lacks CAP_DAC_READ_SEARCH (probed once, logged once).  The
 * handles, and the closing of one inode's fd, are inode_fds.c's.
 *
 * Closing an fd that another thread is about to use would hand it a
 * number the next open may reuse for an unrelated file.  ino_fd counts
 * its callers (fd_users, raised under m) until ino_fd_put; shrink()
 * swaps fd to -1 under m only when that count is zero, so a caller sees
 * either the fd pinned for it or -1 and a reopen.  A count, rather than
 * closing later (after every request in flight has ended), keeps the
 * rule local: the background users (promotions, the snapshot writer)
 * are no requests, and libfuse has no hook at a request's end.
 *
 * Lock order: table lock -> inode lock (hotfs_inode.m).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/inode.h"
#include "hotfs/namecache.h"
#include "inode_i.h"

/* Inodes whose fds one pass of shrink() may close. */
#define SHRINK_BATCH	256

static void __lru_del(struct hotfs_itable *t, struct hotfs_inode *in);
static void __hash_del(struct hotfs_itable *t, struct hotfs_inode *in);
static struct hotfs_inode *__trim(struct hotfs_itable *t);
static void free_list(struct hotfs_itable *t, struct hotfs_inode *in);
static void shrink(struct hotfs_itable *t);

static size_t hash_key(dev_t dev, ino_t ino, size_t nbuckets)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull;

	h ^= (uint64_t)dev * 0xC2B2AE3D27D4EB4Full;
	h ^= h >> 29;
	return (size_t)h & (nbuckets - 1);
}

int ino_table_new(struct hotfs_itable **tp, int root_fd)
{
	struct hotfs_itable *t;
	struct stat st;

	if (fstat(root_fd, &st) == -1)
		return -errno;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->root.fd = root_fd;
	t->nfds = 1;
	t->mount_fd = -1;
	t->root.dev = st.st_dev;
	t->root.ino = st.st_ino;
	t->root.type = S_IFDIR;
	t->root.nlookup = 2;
	pthread_mutex_init(&t->root.m, NULL);
	pthread_cond_init(&t->root.sp.inval_cv, NULL);
	t->buckets[hash_key(st.st_dev, st.st_ino, t->nbuckets)] = &t->root;
	t->count = 1;
	*tp = t;
	return 0;
}

static void free_inode(struct hotfs_itable *t, struct hotfs_inode *in)
{
	if (t->on_free)
		t->on_free(t->on_free_arg, in);
	if (in->op.nofh && t->nofh_free)
		t->nofh_free(in->op.nofh);
	listing_put(in->dir.listing);
	neg_free(in->dir.neg);
	nc_free(in->dir.names);
	if (in->fd >= 0) {
		close(in->fd);
		atomic_fetch_sub(&t->nfds, 1);
	}
	if (in->snap.lazy_parent && !t->dying)
		ino_unhold(t, in->snap.lazy_parent);
	free(in->snap.lazy_name);
	free(in->cw.wr_notes);
	free(in->fh);
	pthread_cond_destroy(&in->sp.inval_cv);
	pthread_mutex_destroy(&in->m);
	free(in);
}

void ino_table_free(struct hotfs_itable *t)
{
	size_t i;

	if (!t)
		return;
	t->dying = true;
	for (i = 0; i < t->nbuckets; i++) {
		struct hotfs_inode *in = t->buckets[i], *next;

		for (; in; in = next) {
			next = in->next;
			if (in != &t->root)
				free_inode(t, in);
		}
	}
	listing_put(t->root.dir.listing);
	neg_free(t->root.dir.neg);
	nc_free(t->root.dir.names);
	close(t->root.fd);
	if (t->mount_fd >= 0)
		close(t->mount_fd);
	pthread_cond_destroy(&t->root.sp.inval_cv);
	pthread_mutex_destroy(&t->root.m);
	pthread_mutex_destroy(&t->lock);
	free(t->buckets);
	free(t);
}

void ino_set_nofh_free(struct hotfs_itable *t, void (*fn)(void *nofh))
{
	t->nofh_free = fn;
}

void ino_set_free_hook(struct hotfs_itable *t,
		       void (*fn)(void *arg, struct hotfs_inode *in), void *arg)
{
	t->on_free = fn;
	t->on_free_arg = arg;
}

/* Called with the table lock held; *retired (if not NULL): a retired
 * inode of the object was passed on the way. */
static struct hotfs_inode *__find_seen(struct hotfs_itable *t, dev_t dev,
				       ino_t ino, bool *retired)
{
	struct hotfs_inode *in;

	for (in = t->buckets[hash_key(dev, ino, t->nbuckets)]; in;
	     in = in->next) {
		if (in->ino != ino || in->dev != dev)
			continue;
		if (!atomic_load_explicit(&in->retired, memory_order_relaxed))
			break;
		if (retired)
			*retired = true;
	}
	return in;
}

static struct hotfs_inode *__find(struct hotfs_itable *t, dev_t dev, ino_t ino)
{
	return __find_seen(t, dev, ino, NULL);
}

struct hotfs_inode *ino_find(struct hotfs_itable *t, dev_t dev, ino_t ino)
{
	struct hotfs_inode *in;

	pthread_mutex_lock(&t->lock);
	in = __find(t, dev, ino);
	pthread_mutex_unlock(&t->lock);
	return in;
}

struct hotfs_inode *ino_find_hold(struct hotfs_itable *t, dev_t dev,
				  ino_t ino)
{
	struct hotfs_inode *in;

	pthread_mutex_lock(&t->lock);
	in = __find(t, dev, ino);
	if (in)
		in->holds++;
	pthread_mutex_unlock(&t->lock);
	return in;
}

struct hotfs_inode *ino_root(struct hotfs_itable *t)
{
	return &t->root;
}

/* Called with the table lock held. */
static void __grow(struct hotfs_itable *t)
{
	size_t n = t->nbuckets * 2, i;
	struct hotfs_inode **b = calloc(n, sizeof(*b));

	if (!b)
		return;		/* longer chains, still correct */
	for (i = 0; i < t->nbuckets; i++) {
		struct hotfs_inode *in = t->buckets[i], *next;

		for (; in; in = next) {
			size_t h = hash_key(in->dev, in->ino, n);

			next = in->next;
			in->next = b[h];
			b[h] = in;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

static struct hotfs_inode *get(struct hotfs_itable *t, int fd,
			       const struct stat *st, int *err,
			       struct hotfs_inode *parent, const char *name)
{
	struct hotfs_inode *in, *nin, *dead, *lazy = NULL;
	bool succeeds = false;
	size_t h;

	/* Allocate outside the lock; usually the inode is new. */
	nin = calloc(1, sizeof(*nin));
	if (nin && name) {
		nin->snap.lazy_name = strdup(name);
		if (!nin->snap.lazy_name) {
			free(nin);
			nin = NULL;
		}
	}
	pthread_mutex_lock(&t->lock);
	in = __find_seen(t, st->st_dev, st->st_ino, &succeeds);
	h = hash_key(st->st_dev, st->st_ino, t->nbuckets);
	if (in) {
		if (in->retained)
			__lru_del(t, in);
		in->nlookup++;
		if (fd >= 0) {
			/* made from the snapshot: it has its fd now */
			pthread_mutex_lock(&in->m);
			if (in->fd < 0) {
				in->fd = fd;
				fd = -1;
				atomic_fetch_add(&t->nfds, 1);
				lazy = in->snap.lazy_parent;
				in->snap.lazy_parent = NULL;
			}
			pthread_mutex_unlock(&in->m);
		}
		in->fd_ref = true;
		dead = __trim(t);
		pthread_mutex_unlock(&t->lock);
		free_list(t, dead);
		if (lazy)
			ino_unhold(t, lazy);
		if (fd >= 0)
			close(fd);
		if (nin)
			free(nin->snap.lazy_name);
		free(nin);
		shrink(t);
		return in;
	}
	if (!nin) {
		pthread_mutex_unlock(&t->lock);
		if (fd >= 0)
			close(fd);
		*err = -ENOMEM;
		return NULL;
	}
	nin->fd = fd;
	nin->fd_ref = true;
	if (fd >= 0)
		atomic_fetch_add(&t->nfds, 1);
	if (parent) {
		parent->holds++;
		nin->snap.lazy_parent = parent;
	}
	nin->dev = st->st_dev;
	nin->ino = st->st_ino;
	nin->type = st->st_mode & S_IFMT;
	nin->nlookup = 1;
	if (succeeds)
		nin->succeeds_ns = clock_mono_ns();
	/* unknown: assume all */
	nin->cw.cached_extents_hint = UINT64_MAX;
	pthread_mutex_init(&nin->m, NULL);
	pthread_cond_init(&nin->sp.inval_cv, NULL);
	nin->next = t->buckets[h];
	t->buckets[h] = nin;
	if (++t->count > t->nbuckets)
		__grow(t);
	dead = __trim(t);		/* one more fd: maybe one retained less */
	pthread_mutex_unlock(&t->lock);
	free_list(t, dead);
	shrink(t);
	return nin;
}

struct hotfs_inode *ino_get(struct hotfs_itable *t, int fd,
			    const struct stat *st, int *err)
{
	return get(t, fd, st, err, NULL, NULL);
}

struct hotfs_inode *ino_get_known(struct hotfs_itable *t, dev_t dev,
				  ino_t ino, mode_t type)
{
	struct hotfs_inode *in, *dead;

	pthread_mutex_lock(&t->lock);
	in = __find(t, dev, ino);
	if (!in || in->type != (type & S_IFMT) || in == &t->root) {
		pthread_mutex_unlock(&t->lock);
		return NULL;
	}
	if (in->retained)
		__lru_del(t, in);
	in->nlookup++;
	in->fd_ref = true;
	dead = __trim(t);
	pthread_mutex_unlock(&t->lock);
	free_list(t, dead);
	return in;
}

struct hotfs_inode *ino_get_lazy(struct hotfs_itable *t,
				 struct hotfs_inode *parent, const char *name,
				 const struct stat *st, int *err)
{
	return get(t, -1, st, err, parent, name);
}

void ino_set_stale_hook(struct hotfs_itable *t,
			void (*fn)(void *arg, struct hotfs_inode *in), void *arg)
{
	t->on_stale = fn;
	t->on_stale_arg = arg;
}

void ino_set_change_hook(struct hotfs_itable *t,
			 void (*fn)(void *arg, struct hotfs_inode *in),
			 void *arg)
{
	t->on_change = fn;
	t->on_change_arg = arg;
}

void ino_note_change(struct hotfs_itable *t, struct hotfs_inode *in)
{
	if (t->on_change)
		t->on_change(t->on_change_arg, in);
}

/* Open a lazily made inode's fd by its name in its parent (opened the
 * same way first if need be), checked to be the same object; the fd or
 * -errno. */
static int open_lazy(struct hotfs_itable *t, struct hotfs_inode *in,
		     struct hotfs_inode *p, const char *name)
{
	struct stat st;
	int fd, pfd;

	pfd = ino_fd(t, p);
	if (pfd < 0)
		return pfd;
	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		fd = -errno;
	} else if (fstat(fd, &st) == -1 || st.st_dev != in->dev ||
		   st.st_ino != in->ino ||
		   (st.st_mode & S_IFMT) != in->type) {
		close(fd);
		fd = -ESTALE;
	}
	ino_fd_put(p);
	if (fd < 0 && t->on_stale)
		t->on_stale(t->on_stale_arg, in);
	return fd;
}

int ino_fd(struct hotfs_itable *t, struct hotfs_inode *in)
{
	struct hotfs_inode *p, *lazy = NULL;
	struct file_handle *fh;
	char *name = NULL;
	int fd;

	pthread_mutex_lock(&in->m);
	fd = in->fd;
	if (fd >= 0) {
		in->fd_users++;
		in->fd_ref = true;
		pthread_mutex_unlock(&in->m);
		return fd;
	}
	p = in->snap.lazy_parent;
	fh = in->fh;		/* set once, freed with the inode */
	if (!fh && p)
		name = strdup(in->snap.lazy_name);
	pthread_mutex_unlock(&in->m);
	if (fh) {
		fd = ino_reopen(t, in, fh);
	} else if (!p) {
		return -ESTALE;
	} else if (!name) {
		return -ENOMEM;
	} else {
		ino_hold(t, p);		/* it may get its own fd meanwhile */
		fd = open_lazy(t, in, p, name);
		free(name);
	}
	if (fd < 0) {
		if (p && !fh)
			ino_unhold(t, p);
		return fd;
	}
	pthread_mutex_lock(&in->m);
	if (in->fd >= 0) {		/* another thread was first */
		close(fd);
		fd = in->fd;
	} else {
		in->fd = fd;
		atomic_fetch_add(&t->nfds, 1);
		lazy = in->snap.lazy_parent;
		in->snap.lazy_parent = NULL;
	}
	in->fd_users++;
	in->fd_ref = true;
	pthread_mutex_unlock(&in->m);
	if (p && !fh)
		ino_unhold(t, p);
	if (lazy)
		ino_unhold(t, lazy);	/* the hold taken when it was made */
	shrink(t);
	return fd;
}

void ino_fd_put(struct hotfs_inode *in)
{
	unsigned was = atomic_fetch_sub(&in->fd_users, 1);

	(void)was;
	assert(was > 0);
}

/* May the budget close in's fd?  Table lock held. */
static bool __droppable(struct hotfs_itable *t, struct hotfs_inode *in)
{
	return in != &t->root && !in->retained && !in->holds &&
	       atomic_load(&in->fd) >= 0 && !atomic_load(&in->fd_keep);
}

/*
 * Over the fd budget: close the fds of inodes nothing uses, least
 * recently used first (a clock), down to a low mark.  Each is held while
 * its fd is closed, outside the table lock.
 */
static void shrink(struct hotfs_itable *t)
{
	struct hotfs_inode *cand[SHRINK_BATCH], *in;
	size_t budget = t->fd_budget, nf, low, want, n = 0, steps, max;

	if (!budget || atomic_load(&t->nfds) <= budget)
		return;
	if (atomic_exchange(&t->shrinking, true))
		return;		/* another thread is at it */
	if (!ino_handles_work(t))
		goto out;
	pthread_mutex_lock(&t->lock);
	nf = atomic_load(&t->nfds);
	low = budget - budget / 16;
	want = nf > low ? nf - low : 0;
	if (want > SHRINK_BATCH)
		want = SHRINK_BATCH;
	/* twice round: the first pass may only clear fd_ref bits */
	max = 2 * (t->count + t->nbuckets);
	for (steps = 0; n < want && steps < max; steps++) {
		size_t b = t->hand++ & (t->nbuckets - 1);

		for (in = t->buckets[b]; in && n < want; in = in->next) {
			steps++;
			if (!__droppable(t, in) ||
			    atomic_exchange(&in->fd_ref, false))
				continue;
			in->holds++;
			cand[n++] = in;
		}
	}
	pthread_mutex_unlock(&t->lock);
	for (size_t i = 0; i < n; i++) {
		ino_drop_fd(t, cand[i]);
		ino_unhold(t, cand[i]);
	}
out:
	atomic_store(&t->shrinking, false);
}

/* LRU of retained inodes; all called with the table lock held. */
static void __lru_del(struct hotfs_itable *t, struct hotfs_inode *in)
{
	if (in->lru_prev)
		in->lru_prev->lru_next = in->lru_next;
	else
		t->lru_head = in->lru_next;
	if (in->lru_next)
		in->lru_next->lru_prev = in->lru_prev;
	else
		t->lru_tail = in->lru_prev;
	in->lru_prev = in->lru_next = NULL;
	in->retained = false;
	t->retained--;
}

static void __lru_add(struct hotfs_itable *t, struct hotfs_inode *in)
{
	in->lru_prev = NULL;
	in->lru_next = t->lru_head;
	if (t->lru_head)
		t->lru_head->lru_prev = in;
	else
		t->lru_tail = in;
	t->lru_head = in;
	in->retained = true;
	t->retained++;
}

static void __hash_del(struct hotfs_itable *t, struct hotfs_inode *in)
{
	struct hotfs_inode **pp;

	pp = &t->buckets[hash_key(in->dev, in->ino, t->nbuckets)];
	for (; *pp; pp = &(*pp)->next)
		if (*pp == in) {
			*pp = in->next;
			break;
		}
	t->count--;
}

/* Worth keeping open?  A file or directory that still has a name. */
static bool keepable(struct hotfs_inode *in)
{
	struct stat st;

	if (!S_ISREG(in->type) && !S_ISDIR(in->type))
		return false;
	return fstat(in->fd, &st) == 0 && st.st_nlink > 0;
}

/* keepable() without the table lock: in's fd pinned meanwhile; -1 if it
 * has none (the caller asks keepable() under the lock then). */
static int keepable_pinned(struct hotfs_inode *in)
{
	struct stat st;
	bool keep;
	int fd;

	if (!S_ISREG(in->type) && !S_ISDIR(in->type))
		return 0;
	pthread_mutex_lock(&in->m);
	fd = atomic_load(&in->fd);
	if (fd >= 0)
		in->fd_users++;
	pthread_mutex_unlock(&in->m);
	if (fd < 0)
		return -1;
	keep = fstat(fd, &st) == 0 && st.st_nlink > 0;
	ino_fd_put(in);
	return keep;
}

/*
 * Let retained inodes go, least recently forgotten first, while there are
 * more than retain_max of them or the table holds more fds than its
 * budget.  Called with the table lock held; returns the inodes to free.
 */
static struct hotfs_inode *__trim(struct hotfs_itable *t)
{
	struct hotfs_inode *dead = NULL, *old, *prev;
	size_t going = 0;	/* fds closed once dead is freed */

	for (old = t->lru_tail; old &&
	     (t->retained > t->retain_max ||
	      (t->fd_budget &&
	       atomic_load(&t->nfds) - going > t->fd_budget)); old = prev) {
		prev = old->lru_prev;
		if (old->holds)		/* ino_sweep is asking about it */
			continue;
		__lru_del(t, old);
		__hash_del(t, old);
		if (old->fd >= 0)
			going++;
		old->next = dead;
		dead = old;
	}
	return dead;
}

/*
 * Called with the table lock held when in may be unused.  Returns the
 * inodes to free (a list through ->next, already out of the table).
 */
static struct hotfs_inode *__release(struct hotfs_itable *t,
				     struct hotfs_inode *in, int keep)
{
	if (in->nlookup || in->holds || in == &t->root || in->retained)
		return NULL;
	if (atomic_load(&in->retired))
		keep = 0;	/* another inode stands for its object */
	else if (keep < 0)
		keep = keepable(in);
	if (t->retain_max && keep) {
		__lru_add(t, in);
		return __trim(t);
	}
	__hash_del(t, in);
	in->next = NULL;
	return in;
}

static void free_list(struct hotfs_itable *t, struct hotfs_inode *in)
{
	struct hotfs_inode *next;

	for (; in; in = next) {
		next = in->next;
		free_inode(t, in);
	}
}

/*
 * keepable() without the table lock, in's fd pinned (-1: it has none, or
 * it is not worth asking): on a network source an fstat is a round trip,
 * and a forget must not hold every lookup up for it.
 */
static int keepable_unlocked(struct hotfs_itable *t, struct hotfs_inode *in,
			     uint64_t n)
{
	bool last;

	pthread_mutex_lock(&t->lock);
	last = t->retain_max && n >= in->nlookup && !in->holds &&
	       in != &t->root && !in->retained;
	pthread_mutex_unlock(&t->lock);
	return last ? keepable_pinned(in) : -1;
}

void ino_forget(struct hotfs_itable *t, struct hotfs_inode *in, uint64_t n)
{
	struct hotfs_inode *dead;
	int keep = keepable_unlocked(t, in, n);

	pthread_mutex_lock(&t->lock);
	if (n > in->nlookup)
		n = in->nlookup;	/* never underflow on a confused kernel */
	in->nlookup -= n;
	dead = __release(t, in, keep);
	pthread_mutex_unlock(&t->lock);
	free_list(t, dead);
}

void ino_hold(struct hotfs_itable *t, struct hotfs_inode *in)
{
	pthread_mutex_lock(&t->lock);
	in->holds++;
	pthread_mutex_unlock(&t->lock);
}

void ino_unhold(struct hotfs_itable *t, struct hotfs_inode *in)
{
	struct hotfs_inode *dead;

	pthread_mutex_lock(&t->lock);
	in->holds--;
	dead = __release(t, in, -1);
	pthread_mutex_unlock(&t->lock);
	free_list(t, dead);
}

/* Set one of the table's bounds; a lower one lets retained inodes go. */
static void set_bound(struct hotfs_itable *t, size_t *bound, size_t n)
{
	struct hotfs_inode *dead;

	pthread_mutex_lock(&t->lock);
	*bound = n;
	dead = __trim(t);
	pthread_mutex_unlock(&t->lock);
	free_list(t, dead);
	shrink(t);
}

void ino_set_retain(struct hotfs_itable *t, size_t n)
{
	set_bound(t, &t->retain_max, n);
}

void ino_set_fd_budget(struct hotfs_itable *t, size_t n)
{
	set_bound(t, &t->fd_budget, n);
}

size_t ino_sweep(struct hotfs_itable *t)
{
	struct hotfs_inode *in, **v, *dead = NULL, *d;
	size_t n = 0, k = 0, i;
	signed char *keep;

	/* held while asked about (without the table lock: on a network
	 * source each fstat is a round trip), so that nothing frees them */
	pthread_mutex_lock(&t->lock);
	v = malloc(t->retained * sizeof(*v) + 1);
	keep = malloc(t->retained + 1);
	if (v && keep)
		for (in = t->lru_tail; in; in = in->lru_prev) {
			in->holds++;
			v[k++] = in;
		}
	pthread_mutex_unlock(&t->lock);
	for (i = 0; i < k; i++)
		keep[i] = (signed char)keepable_pinned(v[i]);
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < k; i++) {
		in = v[i];
		in->holds--;
		if (in->holds || in->nlookup)
			continue;
		if (!in->retained) {
			/* looked up and forgotten again meanwhile */
			d = __release(t, in, -1);
		} else if (keep[i] == 1) {
			continue;
		} else if (keep[i] == 0 || !keepable(in)) {
			__lru_del(t, in);
			__hash_del(t, in);
			in->next = NULL;
			d = in;
			n++;
		} else {
			continue;
		}
		while (d) {
			struct hotfs_inode *next = d->next;

			d->next = dead;
			dead = d;
			d = next;
		}
	}
	d = __trim(t);		/* what it skipped while they were held */
	pthread_mutex_unlock(&t->lock);
	free_list(t, dead);
	free_list(t, d);
	free(v);
	free(keep);
	return n;
}

void ino_unretain(struct hotfs_itable *t, dev_t dev, ino_t ino)
{
	struct hotfs_inode *in;

	pthread_mutex_lock(&t->lock);
	in = __find(t, dev, ino);
	if (in && in->retained && !in->holds && !keepable(in)) {
		__lru_del(t, in);
		__hash_del(t, in);
	} else {
		in = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	if (in)
		free_inode(t, in);
}

size_t ino_retained(struct hotfs_itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->retained;
	pthread_mutex_unlock(&t->lock);
	return n;
}

size_t ino_count(struct hotfs_itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

size_t ino_fds(struct hotfs_itable *t)
{
	return atomic_load(&t->nfds);
}

uint64_t ino_fd_drops(struct hotfs_itable *t)
{
	return atomic_load(&t->fd_drops);
}

uint64_t ino_fd_reopens(struct hotfs_itable *t)
{
	return atomic_load(&t->fd_reopens);
}
