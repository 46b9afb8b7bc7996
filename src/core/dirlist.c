// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Directory listings kept in memory (see include/hotfs/dirlist.h):
 * recording a listing while a directory is read from the source, serving
 * an open directory from its last listing while the directory is
 * unchanged, and the listings of handle-less reads (no opendir).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/dirlist.h"
#include "hotfs/meta_fs.h"
#include "hotfs/namecache.h"
#include "hotfs/negcache.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"

/* Is l the directory's current listing, by its stamp st? */
bool listing_fresh(const struct hotfs_listing *l, const struct stat *st)
{
	return !l->racy && times_same(l->mtime_ns, l->ctime_ns, st) &&
	       l->size == st->st_size;
}

/* Listings by time: a remote source's (see hotfs/dirlist.h). */
static bool by_time(struct hotfs *fs)
{
	return hotfs_src.remote && fs->o->revalidate == HOTFS_REVAL_SECONDS;
}

struct hotfs_listing *listing_trusted(struct hotfs *fs,
				      struct hotfs_inode *in)
{
	int64_t limit = (int64_t)(fs->o->revalidate_secs * 1e9);
	struct hotfs_listing *l;

	if (!fs->listings || !by_time(fs))
		return NULL;
	pthread_mutex_lock(&in->m);
	l = in->dir.listing;
	if (l && l->made_ns && l->nc_gen == nc_gen() &&
	    clock_mono_ns() - l->made_ns < limit)
		atomic_fetch_add(&l->refs, 1);
	else
		l = NULL;
	pthread_mutex_unlock(&in->m);
	return l;
}

/* Serve from the last listing if the directory has not changed since. */
void listing_open(struct hotfs *fs, struct hotfs_dirp *d, int fd)
{
	struct hotfs_listing *l;
	struct stat st;

	if (fs->listings && by_time(fs)) {
		/* its stamp proves nothing: the time from here on (the
		 * caller found no listing_trusted) */
		d->open_ns = clock_mono_ns();
		d->nc_gen = nc_gen();
		d->rec = true;
		return;
	}
	d->stamp_ns = clock_real_ns();
	if (!fs->listings || fstat(fd, &st) == -1)
		return;
	d->mtime_ns = ts_ns(&st.st_mtim);
	d->ctime_ns = ts_ns(&st.st_ctim);
	d->size = st.st_size;
	pthread_mutex_lock(&d->in->m);
	l = d->in->dir.listing;
	if (l && listing_fresh(l, &st)) {
		atomic_fetch_add(&l->refs, 1);
		d->lst = l;
	}
	pthread_mutex_unlock(&d->in->m);
	d->rec = !d->lst;
}

void rec_stop(struct hotfs_dirp *d)
{
	d->rec = false;
	free(d->rents);
	free(d->rnames);
	d->rents = NULL;
	d->rnames = NULL;
	d->rn = d->rcap = d->rnlen = d->rncap = 0;
}

void rec_add(struct hotfs_dirp *d, const struct dirent *de)
{
	size_t len = strlen(de->d_name) + 1;

	if (d->rn == d->rcap) {
		size_t cap = d->rcap ? d->rcap * 2 : 64;
		struct hotfs_lent *e = realloc(d->rents, cap * sizeof(*e));

		if (!e) {
			rec_stop(d);
			return;
		}
		d->rents = e;
		d->rcap = cap;
	}
	if (d->rnlen + len > d->rncap) {
		size_t cap = d->rncap ? d->rncap * 2 : 1024;
		char *n;

		while (cap < d->rnlen + len)
			cap *= 2;
		n = realloc(d->rnames, cap);
		if (!n) {
			rec_stop(d);
			return;
		}
		d->rnames = n;
		d->rncap = cap;
	}
	memcpy(d->rnames + d->rnlen, de->d_name, len);
	d->rents[d->rn].ino = de->d_ino;
	d->rents[d->rn].type = de->d_type;
	d->rents[d->rn].name = (const char *)(uintptr_t)d->rnlen;
	d->rn++;
	d->rnlen += len;
}

/* The whole directory was read: make the listing (NULL: no memory). */
static struct hotfs_listing *rec_make(struct hotfs_dirp *d)
{
	struct hotfs_listing *l;
	size_t i;

	l = calloc(1, sizeof(*l));
	if (!l) {
		rec_stop(d);
		return NULL;
	}
	l->mtime_ns = d->mtime_ns;
	l->ctime_ns = d->ctime_ns;
	l->size = d->size;
	l->gen = listing_next_gen();
	l->racy = stamp_racy_ns(d->mtime_ns, d->ctime_ns, d->stamp_ns);
	if (d->open_ns) {	/* by time: never by its (empty) stamp */
		l->racy = true;
		l->made_ns = d->open_ns;
		l->nc_gen = d->nc_gen;
	}
	l->n = d->rn;
	l->ents = d->rents;
	l->names = d->rnames;
	for (i = 0; i < l->n; i++)
		l->ents[i].name = l->names + (uintptr_t)l->ents[i].name;
	l->bytes = sizeof(*l) + d->rcap * sizeof(*l->ents) + d->rncap;
	d->rents = NULL;
	d->rnames = NULL;
	d->rec = false;
	return l;
}

/* The whole directory was read from the source: keep it. */
void rec_done(struct hotfs_dirp *d)
{
	struct hotfs_listing *l = rec_make(d);

	if (l)
		listing_install(d->in, l);
}

/* ------------------------------------------------------------------ */
/*
 * Directories without opendir (FUSE_CAP_NO_OPENDIR_SUPPORT).  Once
 * hotfs answers an opendir with ENOSYS the kernel opens directories by
 * itself, keeps their entries in its page cache (FOPEN_CACHE_DIR:
 * dropped when the directory's mtime changes, when the source watch
 * reports a change, or by a change through the mount) and sends readdir
 * without a handle: no opendir/releasedir round trips per directory.
 * Such a readdir is answered from the directory's listing, checked
 * against the directory's stamp when a pass starts (offset 0); offsets
 * are positions in it.  Listings over the memory bound are kept in a
 * small ring, for the passes under way.
 */
#define NTRANSIENT 16

struct transient {
	dev_t dev;
	ino_t ino;
	struct hotfs_listing *l;
};

static pthread_mutex_t transient_lock = PTHREAD_MUTEX_INITIALIZER;
static struct transient transient[NTRANSIENT];
static unsigned transient_next;


/* A referenced transient listing of in: fresh for st, or of generation
 * gen if st is NULL. */
static struct hotfs_listing *transient_get(struct hotfs_inode *in,
					   const struct stat *st, uint32_t gen)
{
	struct hotfs_listing *l = NULL;
	unsigned i;

	pthread_mutex_lock(&transient_lock);
	for (i = 0; i < NTRANSIENT; i++) {
		struct transient *t = &transient[i];

		if (t->l && t->dev == in->dev && t->ino == in->ino &&
		    (st ? listing_fresh(t->l, st) : t->l->gen == gen)) {
			l = t->l;
			atomic_fetch_add(&l->refs, 1);
			break;
		}
	}
	pthread_mutex_unlock(&transient_lock);
	return l;
}

/* Keep l (its reference is taken over) in the ring. */
static void transient_add(struct hotfs_inode *in, struct hotfs_listing *l)
{
	struct hotfs_listing *old;
	struct transient *t;

	pthread_mutex_lock(&transient_lock);
	t = &transient[transient_next++ % NTRANSIENT];
	old = t->l;
	t->dev = in->dev;
	t->ino = in->ino;
	t->l = l;
	pthread_mutex_unlock(&transient_lock);
	listing_put(old);
}

static pthread_mutex_t open_dirs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hotfs_dirp *open_dirs;	/* under open_dirs_lock */

struct hotfs_dirp *dirp_new(struct hotfs_inode *in)
{
	struct hotfs_dirp *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->in = in;
	pthread_mutex_lock(&open_dirs_lock);
	d->next = open_dirs;
	if (open_dirs)
		open_dirs->prev = d;
	open_dirs = d;
	pthread_mutex_unlock(&open_dirs_lock);
	return d;
}

void dirp_free(struct hotfs_dirp *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&open_dirs_lock);
	if (d->prev)
		d->prev->next = d->next;
	else
		open_dirs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	pthread_mutex_unlock(&open_dirs_lock);
	if (d->dp)
		closedir(d->dp);
	listing_put(d->lst);
	rec_stop(d);
	free(d);
}

size_t dirp_open_count(void)
{
	struct hotfs_dirp *d;
	size_t n = 0;

	pthread_mutex_lock(&open_dirs_lock);
	for (d = open_dirs; d; d = d->next)
		n++;
	pthread_mutex_unlock(&open_dirs_lock);
	return n;
}

void dir_free_all(void)
{
	unsigned i;

	while (open_dirs)
		dirp_free(open_dirs);
	for (i = 0; i < NTRANSIENT; i++) {
		listing_put(transient[i].l);
		transient[i].l = NULL;
	}
}

/* Read the whole directory (dfd: its O_PATH fd); st is its stamp from
 * before, taken after CLOCK_REALTIME read stamp_ns.  NULL with -errno in
 * *err. */
static struct hotfs_listing *listing_read(struct hotfs_inode *in, int dfd,
					  const struct stat *st,
					  int64_t stamp_ns, int *err)
{
	struct hotfs_dirp d = { .in = in, .rec = true, .stamp_ns = stamp_ns };
	struct hotfs_listing *l;
	struct dirent *de;
	DIR *dp;
	int fd;

	d.mtime_ns = ts_ns(&st->st_mtim);
	d.ctime_ns = ts_ns(&st->st_ctim);
	d.size = st->st_size;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		*err = -errno;
		return NULL;
	}
	dp = fdopendir(fd);
	if (!dp) {
		*err = -errno;
		close(fd);
		return NULL;
	}
	*err = 0;
	for (;;) {
		errno = 0;
		de = readdir(dp);
		if (!de) {
			*err = -errno;
			break;
		}
		rec_add(&d, de);
		if (!d.rec) {
			*err = -ENOMEM;
			break;
		}
	}
	closedir(dp);
	if (*err) {
		rec_stop(&d);
		return NULL;
	}
	l = rec_make(&d);
	if (!l)
		*err = -ENOMEM;
	return l;
}

/*
 * The listing a handle-less readdir at off is answered from, referenced.
 * A pass goes on with the listing it started with (its generation is in
 * the offsets), even if a newer one was made meanwhile for another
 * reader: the old one is kept in the ring for that.
 */
struct hotfs_listing *stateless_listing(struct hotfs *fs,
				       struct hotfs_inode *in, off_t off,
				       int *err)
{
	uint32_t gen = (uint32_t)((uint64_t)off >> 32);
	struct hotfs_listing *l, *old;
	int64_t stamp_ns;
	struct stat st;
	int fd;

	l = meta_fs_listing(fs, in, off);
	if (l)
		return l;
	fd = ino_fd(fs->it, in);
	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	stamp_ns = clock_real_ns();
	if (fstat(fd, &st) == -1) {
		*err = -errno;
		ino_fd_put(in);
		return NULL;
	}
	pthread_mutex_lock(&in->m);
	l = in->dir.listing;
	if (l && (off != 0 ? l->gen == gen : listing_fresh(l, &st)))
		atomic_fetch_add(&l->refs, 1);
	else
		l = NULL;
	pthread_mutex_unlock(&in->m);
	if (!l)
		l = transient_get(in, off ? NULL : &st, gen);
	if (l) {
		ino_fd_put(in);
		return l;
	}
	/* a new pass, or one whose listing is gone (then it may see an
	 * entry twice or miss one, as after a seekdir across a change) */
	l = listing_read(in, fd, &st, stamp_ns, err);
	ino_fd_put(in);
	if (!l)
		return NULL;
	pthread_mutex_lock(&in->m);
	old = in->dir.listing;
	if (old)
		atomic_fetch_add(&old->refs, 1);
	pthread_mutex_unlock(&in->m);
	if (listing_try_install(in, l, true)) {
		if (old)
			transient_add(in, old);	/* for passes under way */
	} else {
		listing_put(old);
		l->bytes = 0;
		/* the ring's reference beside ours, before it is seen */
		atomic_fetch_add(&l->refs, 1);
		transient_add(in, l);
	}
	return l;
}
