// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The metadata snapshot in the daemon (see include/hotfs/meta_fs.h).
 *
 * What revalidate=never misses: a change made behind hotfs's back while
 * it was unmounted, in a directory the snapshot holds, is not seen until
 * something through the mount drops that directory's record (or the
 * file is deleted, or -o reset).  The default and N modes compare each
 * directory's stamp (st_dev, st_ino, size, mtime, ctime) once, at its
 * first use, so that names created, removed or renamed behind its back
 * are seen; a file's own attributes (a chmod, a rewrite) are compared
 * when it is opened, as without a snapshot (close-to-open): a stat
 * without an open may show the attributes of the last mount until then.
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <syslog.h>

#include "hotfs/fileio.h"
#include "hotfs/fs.h"
#include "hotfs/log.h"
#include "hotfs/meta.h"
#include "hotfs/meta_fs.h"
#include "hotfs/srcprobe.h"
#include "hotfs/watch.h"

struct byid {
	dev_t dev;
	ino_t ino;
	uint32_t idx;
};

struct hotfs_meta {
	struct hotfs *fs;
	int dirfd;			/* the cachedir */
	struct meta_snap *snap;		/* NULL: none loaded */
	_Atomic unsigned char *dropped;	/* per record */
	struct byid *byid;		/* records by (dev, ino) */
	/* the file on disk: current (no change since it was written)? */
	pthread_mutex_t lock;
	uint64_t change_gen;		/* under lock */
	bool clean;			/* under lock */
	_Atomic uint64_t listing_seen, inodes_seen;
	_Atomic uint64_t hits, stale, ndropped, rejected, saves, saved_dirs;
	/* the saver's own: how long until the directories it left out as
	 * changed too recently can be read (0: none left out) */
	int64_t racy_wait_ns;
	/* the writer */
	pthread_t thr;
	bool started;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stop;
};

static struct hotfs_meta *the_meta;	/* for meta_note_write */

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static int cmp_byid(const void *a, const void *b)
{
	const struct byid *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* The record of directory (dev, ino), or META_NONE. */
static uint32_t find_byid(struct hotfs_meta *m, dev_t dev, ino_t ino)
{
	struct byid key = { .dev = dev, .ino = ino }, *r;

	if (!m->snap || !m->snap->ndirs)
		return META_NONE;
	r = bsearch(&key, m->byid, m->snap->ndirs, sizeof(key), cmp_byid);
	return r ? r->idx : META_NONE;
}

static bool same_stamp(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       ts_ns(&a->st_mtim) == ts_ns(&b->st_mtim) &&
	       ts_ns(&a->st_ctim) == ts_ns(&b->st_ctim) &&
	       (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT);
}

/* ------------------------------------------------------------------ */
/* The file on disk */

/* Before a change: the file on disk no longer describes the tree. */
static void file_changed(struct hotfs_meta *m)
{
	pthread_mutex_lock(&m->lock);
	m->change_gen++;
	if (m->clean) {
		m->clean = false;
		if (unlinkat(m->dirfd, META_FILE, 0) == 0)
			fsync(m->dirfd);
	}
	pthread_mutex_unlock(&m->lock);
}

static void drop(struct hotfs_meta *m, uint32_t idx, _Atomic uint64_t *why)
{
	if (idx >= m->snap->ndirs)
		return;
	if (atomic_exchange(&m->dropped[idx], 1) == 0)
		count(why);
}

static void drop_dir(struct hotfs_meta *m, struct hotfs_inode *dir,
		     _Atomic uint64_t *why)
{
	uint32_t d1 = dir->snap_dir1;

	atomic_store(&dir->snap_state, META_ST_NONE);
	if (d1)
		drop(m, d1 - 1, why);
}

/* ino_fd found a lazily made inode's name gone or changed. */
static void on_stale(void *arg, struct hotfs_inode *in)
{
	struct hotfs_meta *m = arg;

	if (in->snap_pdir1)
		drop(m, in->snap_pdir1 - 1, &m->stale);
}

void meta_fs_open(struct hotfs *fs)
{
	struct hotfs_meta *m;
	struct stat root;
	void *buf = NULL;
	size_t len = 0;
	uint32_t i;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->fs = fs;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->stop_lock, NULL);
	pthread_cond_init(&m->stop_cond, NULL);
	m->dirfd = open(fs->o->cachedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->dirfd == -1) {
		hotfs_log(LOG_WARNING, "metadata snapshot: %s: %s\n",
			  fs->o->cachedir, strerror(errno));
		free(m);
		return;
	}
	fs->meta = m;
	the_meta = m;
	ino_set_stale_hook(fs->it, on_stale, m);
	/* its inode numbers are another mount's if the source does not
	 * keep them (include/hotfs/srcprobe.h) */
	if (fs->o->reset || !hotfs_src.ids_kept)
		unlinkat(m->dirfd, META_FILE, 0);
	r = meta_read_file(m->dirfd, META_FILE, META_MAX_BYTES, &buf, &len);
	if (r == -ENOENT)
		return;
	if (r == 0)
		r = meta_decode(buf, len, &m->snap);
	free(buf);
	if (r == 0 && (fstat(ino_root(fs->it)->fd, &root) == -1 ||
		       root.st_dev != m->snap->root.st_dev ||
		       root.st_ino != m->snap->root.st_ino)) {
		meta_snap_free(m->snap);
		m->snap = NULL;
		r = -EXDEV;
	}
	if (r == 0 && m->snap->ndirs) {
		m->dropped = calloc(m->snap->ndirs, 1);
		m->byid = calloc(m->snap->ndirs, sizeof(*m->byid));
		if (!m->dropped || !m->byid)
			r = -ENOMEM;
	}
	if (r < 0) {
		hotfs_log(LOG_WARNING, "metadata snapshot %s/%s: %s, ignored\n",
			  fs->o->cachedir, META_FILE,
			  r == -EINVAL ? "damaged or of another version" :
			  r == -EXDEV ? "of another source" : strerror(-r));
		count(&m->rejected);
		meta_snap_free(m->snap);
		m->snap = NULL;
		free((void *)m->dropped);
		free(m->byid);
		m->dropped = NULL;
		m->byid = NULL;
		return;
	}
	if (!m->snap->ndirs)
		return;
	for (i = 0; i < m->snap->ndirs; i++) {
		m->byid[i].dev = m->snap->dirs[i].st.st_dev;
		m->byid[i].ino = m->snap->dirs[i].st.st_ino;
		m->byid[i].idx = i;
	}
	qsort(m->byid, m->snap->ndirs, sizeof(*m->byid), cmp_byid);
	/* the file is current until the first change */
	m->clean = true;
	if (m->snap->dirs[0].parent == META_NONE) {
		ino_root(fs->it)->snap_dir1 = 1;
		atomic_store(&ino_root(fs->it)->snap_state, META_ST_UNCHECKED);
	}
}

/* ------------------------------------------------------------------ */
/* Answering from it */

/* dir's record, if it may answer now (the stamp is checked once). */
static const struct meta_dir *trusted(struct hotfs *fs, struct hotfs_inode *dir)
{
	struct hotfs_meta *m = fs->meta;
	const struct meta_dir *d;
	uint32_t idx;
	struct stat st;
	bool ok = false;
	int fd, s;

	if (!m || !m->snap)
		return NULL;
	s = atomic_load(&dir->snap_state);
	if (s == META_ST_NONE || !dir->snap_dir1)
		return NULL;
	idx = dir->snap_dir1 - 1;
	d = &m->snap->dirs[idx];
	if (atomic_load(&m->dropped[idx])) {
		atomic_store(&dir->snap_state, META_ST_NONE);
		return NULL;
	}
	if (s == META_ST_TRUSTED && fs->o->revalidate == HOTFS_REVAL_NEVER)
		return d;
	if (fs->o->revalidate != HOTFS_REVAL_NEVER) {
		/* the directory's own stamp: one fstat that may read its
		 * inode the first time, then on the fd held, from memory,
		 * at every use (a change while mounted shows at once) */
		fd = ino_fd(fs->it, dir);
		if (fd >= 0) {
			ok = fstat(fd, &st) == 0 && same_stamp(&st, &d->st);
			ino_fd_put(dir);
		}
		if (!ok) {
			drop_dir(m, dir, &m->stale);
			return NULL;
		}
	}
	atomic_store(&dir->snap_state, META_ST_TRUSTED);
	return d;
}

void meta_fs_attach(struct hotfs *fs, struct hotfs_inode *dir)
{
	struct hotfs_meta *m = fs->meta;
	uint32_t idx;

	if (!m || !m->snap || dir->snap_dir1)
		return;
	idx = find_byid(m, dir->dev, dir->ino);
	if (idx == META_NONE || atomic_load(&m->dropped[idx]))
		return;
	pthread_mutex_lock(&dir->m);
	if (!dir->snap_dir1) {
		dir->snap_dir1 = idx + 1;
		atomic_store(&dir->snap_state, META_ST_UNCHECKED);
	}
	pthread_mutex_unlock(&dir->m);
}

int meta_fs_lookup(struct hotfs *fs, struct hotfs_inode *dir,
		   const char *name, struct fuse_entry_param *e, int *err)
{
	struct hotfs_meta *m = fs->meta;
	const struct meta_dir *d = trusted(fs, dir);
	const struct meta_ent *ent;
	struct hotfs_inode *in;
	bool lazy;
	int fd;

	if (!d)
		return 0;
	ent = meta_find(d, name);
	if (!ent) {
		memset(e, 0, sizeof(*e));
		count(&m->hits);
		*err = -ENOENT;
		return 1;
	}
	/* a file with other names may change through them: ask */
	if (!S_ISDIR(ent->st.st_mode) && ent->st.st_nlink != 1)
		return 0;
	in = ino_get_lazy(fs->it, dir, name, &ent->st, err);
	if (!in)
		return 1;
	pthread_mutex_lock(&in->m);
	lazy = ino_lazy(in);
	if (!in->snap_pdir1)
		in->snap_pdir1 = dir->snap_dir1;
	if (lazy && !in->snap_st) {
		in->snap_st = &ent->st;
		in->snap_target = ent->target;
		if (!in->stamp_valid) {
			/* what an open compares the source with */
			in->stamp_valid = true;
			in->stamp_mtime_ns = ts_ns(&ent->st.st_mtim);
			in->stamp_ctime_ns = ts_ns(&ent->st.st_ctim);
			in->stamp_size = ent->st.st_size;
		}
	}
	if (ent->sub != META_NONE && !in->snap_dir1 &&
	    !atomic_load(&m->dropped[ent->sub])) {
		in->snap_dir1 = ent->sub + 1;
		atomic_store(&in->snap_state, META_ST_UNCHECKED);
	}
	pthread_mutex_unlock(&in->m);
	fd = -1;
	if (S_ISDIR(ent->st.st_mode) &&
	    fs->o->revalidate != HOTFS_REVAL_NEVER) {
		/* its own stamp now (the one fstat a directory costs): its
		 * attributes are its own, not the parent's record of them */
		trusted(fs, in);
		fd = ino_fd(fs->it, in);
		if (fd < 0) {		/* gone or replaced: ask the source */
			ino_forget(fs->it, in, 1);
			return 0;
		}
	} else if (!lazy) {
		/* opened before (its fd maybe closed for the budget since):
		 * its attributes now, as a source lookup would give */
		fd = ino_fd(fs->it, in);
	}
	memset(e, 0, sizeof(*e));
	if (fd < 0 || fstat(fd, &e->attr) == -1)
		e->attr = ent->st;
	if (fd >= 0)
		ino_fd_put(in);
	/* watched as a lookup from the source would watch it
	 * (fuse_ops.c's do_lookup): a change behind the mount in a
	 * directory reached through the snapshot is seen at once too */
	if (S_ISDIR(ent->st.st_mode) && fd >= 0)
		in->covered = watch_dir(fs->watch, in);
	e->ino = (uintptr_t)in;
	e->attr_timeout = fs->o->attr_timeout;
	e->entry_timeout = fs->o->entry_timeout;
	count(&m->hits);
	*err = 0;
	return 1;
}

bool meta_fs_getattr(struct hotfs *fs, struct hotfs_inode *in,
		     struct stat *st)
{
	bool ok = false;

	if (!fs->meta)
		return false;
	pthread_mutex_lock(&in->m);
	if (ino_lazy(in) && in->snap_st) {
		*st = *in->snap_st;
		ok = true;
	}
	pthread_mutex_unlock(&in->m);
	if (ok)
		count(&fs->meta->hits);
	return ok;
}

const char *meta_fs_readlink(struct hotfs *fs, struct hotfs_inode *in)
{
	const char *t = NULL;

	if (!fs->meta)
		return NULL;
	pthread_mutex_lock(&in->m);
	if (ino_lazy(in))
		t = in->snap_target;
	pthread_mutex_unlock(&in->m);
	if (t)
		count(&fs->meta->hits);
	return t;
}

static struct hotfs_listing *make_listing(struct hotfs_meta *m,
					  const struct meta_dir *d)
{
	struct hotfs_listing *l = calloc(1, sizeof(*l));
	size_t i, nb = 5;
	char *p;

	if (!l)
		return NULL;
	for (i = 0; i < d->n; i++)
		nb += strlen(d->ents[i].name) + 1;
	l->n = d->n + 2;
	l->ents = calloc(l->n, sizeof(*l->ents));
	l->names = malloc(nb);
	if (!l->ents || !l->names) {
		free(l->ents);
		free(l->names);
		free(l);
		return NULL;
	}
	p = l->names;
	strcpy(p, ".");
	l->ents[0].name = p;
	l->ents[0].ino = d->st.st_ino;
	l->ents[0].type = DT_DIR;
	p += 2;
	strcpy(p, "..");
	l->ents[1].name = p;
	l->ents[1].ino = d->parent == META_NONE ? d->st.st_ino :
			 m->snap->dirs[d->parent].st.st_ino;
	l->ents[1].type = DT_DIR;
	p += 3;
	for (i = 0; i < d->n; i++) {
		size_t len = strlen(d->ents[i].name) + 1;

		memcpy(p, d->ents[i].name, len);
		l->ents[i + 2].name = p;
		l->ents[i + 2].ino = d->ents[i].st.st_ino;
		l->ents[i + 2].type = IFTODT(d->ents[i].st.st_mode);
		p += len;
	}
	l->mtime_ns = ts_ns(&d->st.st_mtim);
	l->ctime_ns = ts_ns(&d->st.st_ctim);
	l->size = d->st.st_size;
	l->gen = listing_next_gen();
	l->bytes = sizeof(*l) + l->n * sizeof(*l->ents) + nb;
	return l;
}

struct hotfs_listing *meta_fs_listing(struct hotfs *fs,
				      struct hotfs_inode *dir, off_t off)
{
	uint32_t gen = (uint32_t)((uint64_t)off >> 32);
	const struct meta_dir *d = trusted(fs, dir);
	struct hotfs_listing *l;

	if (!d)
		return NULL;
	pthread_mutex_lock(&dir->m);
	l = dir->listing;
	if (l && (off != 0 ? l->gen == gen :
		  (!l->racy && l->mtime_ns == ts_ns(&d->st.st_mtim) &&
		   l->ctime_ns == ts_ns(&d->st.st_ctim) &&
		   l->size == d->st.st_size)))
		atomic_fetch_add(&l->refs, 1);
	else
		l = NULL;
	pthread_mutex_unlock(&dir->m);
	if (!l) {
		l = make_listing(fs->meta, d);
		if (!l)
			return NULL;
		if (listing_try_install(dir, l))
			atomic_fetch_add(&l->refs, 1);
		else
			l->bytes = 0;	/* the caller's only */
	}
	count(&fs->meta->hits);
	return l;
}

void meta_fs_change(struct hotfs *fs, struct hotfs_inode *dir,
		    struct hotfs_inode *in)
{
	struct hotfs_meta *m = fs->meta;

	if (!m)
		return;
	file_changed(m);
	if (!m->snap)
		return;
	if (dir)
		drop_dir(m, dir, &m->ndropped);
	if (in && in->snap_pdir1)
		drop(m, in->snap_pdir1 - 1, &m->ndropped);
}

void meta_note_write(struct hotfs_inode *in)
{
	if (the_meta)
		meta_fs_change(the_meta->fs, NULL, in);
}

void meta_fs_get_stats(struct hotfs *fs, struct meta_fs_stats *s)
{
	struct hotfs_meta *m = fs->meta;

	memset(s, 0, sizeof(*s));
	if (!m)
		return;
	s->dirs = m->snap ? m->snap->ndirs : 0;
	s->hits = atomic_load(&m->hits);
	s->stale = atomic_load(&m->stale);
	s->dropped = atomic_load(&m->ndropped);
	s->rejected = atomic_load(&m->rejected);
	s->saves = atomic_load(&m->saves);
	s->saved_dirs = atomic_load(&m->saved_dirs);
}

/* ------------------------------------------------------------------ */
/* Writing it */

struct item {
	uint32_t parent;		/* its parent's index in the new file */
	struct stat st;			/* its entry in the parent */
	char *name;
};

struct queue {
	struct item *v;
	size_t n, head, cap;
};

static void push(struct queue *q, uint32_t parent, const char *name,
		 const struct stat *st)
{
	if (q->n == q->cap) {
		size_t ncap = q->cap ? q->cap * 2 : 256;
		struct item *nv = realloc(q->v, ncap * sizeof(*nv));

		if (!nv)
			return;		/* left out */
		q->v = nv;
		q->cap = ncap;
	}
	q->v[q->n].name = strdup(name);
	if (!q->v[q->n].name)
		return;
	q->v[q->n].parent = parent;
	q->v[q->n].st = *st;
	q->n++;
}

/* A directory worth a record: a live listing, or a record still good. */
static bool wanted(struct hotfs_meta *m, const struct stat *st)
{
	struct hotfs_inode *in;
	uint32_t idx = find_byid(m, st->st_dev, st->st_ino);
	bool yes;

	if (idx != META_NONE && !atomic_load(&m->dropped[idx]))
		return true;
	in = ino_find_hold(m->fs->it, st->st_dev, st->st_ino);
	if (!in)
		return false;
	pthread_mutex_lock(&in->m);
	/* listed, or looked up through: hot */
	yes = !ino_lazy(in);
	pthread_mutex_unlock(&in->m);
	ino_unhold(m->fs->it, in);
	return yes;
}

/* An entry's attributes now: from its inode's fd if it has one. */
static void fresh(struct hotfs_meta *m, struct stat *st)
{
	struct hotfs_inode *in = ino_find_hold(m->fs->it, st->st_dev,
					       st->st_ino);
	struct stat now;

	if (!in)
		return;
	pthread_mutex_lock(&in->m);
	if (in->fd >= 0 && fstat(in->fd, &now) == 0 &&
	    now.st_dev == st->st_dev && now.st_ino == st->st_ino)
		*st = now;
	pthread_mutex_unlock(&in->m);
	ino_unhold(m->fs->it, in);
}

/* Entries names[0..n) of the directory fd (stamp dst): stat'ed now. */
static void enc_names(struct hotfs_meta *m, struct meta_enc *enc,
		      struct queue *q, const struct item *it, int fd,
		      const struct stat *dst, const char **names, size_t n)
{
	char target[PATH_MAX + 1];
	struct stat est;
	uint32_t me;
	size_t i;

	me = meta_enc_dir(enc, it->parent, it->name, dst);
	for (i = 0; me != META_NONE && i < n; i++) {
		const char *name = names[i];

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (fstatat(fd, name, &est, AT_SYMLINK_NOFOLLOW) == -1) {
			meta_enc_drop_dir(enc);	/* changed meanwhile */
			break;
		}
		if (S_ISLNK(est.st_mode)) {
			ssize_t len = readlinkat(fd, name, target,
						 sizeof(target) - 1);

			if (len <= 0) {
				meta_enc_drop_dir(enc);
				break;
			}
			target[len] = '\0';
		}
		if (!meta_enc_ent(enc, name, &est,
				  S_ISLNK(est.st_mode) ? target : NULL))
			me = META_NONE;
		else if (S_ISDIR(est.st_mode) && wanted(m, &est))
			push(q, me, name, &est);
	}
}

/*
 * How long until st's stamp can prove a listing read now (0: it can): a
 * change within a clock tick or two may leave the stamp as it was
 * (within 2 s with whole-second stamps, or the source's measured tick).
 */
static int64_t racy_left(const struct stat *st)
{
	struct timespec now;
	int64_t w = 50000000LL, t, left;

	if (st->st_mtim.tv_nsec == 0 && st->st_ctim.tv_nsec == 0)
		w = 2100000000LL;
	/* the source's measured tick (hotfs/srcprobe.h), if longer */
	if (hotfs_src.gran_ns + PROBE_RACY_SLACK_NS > w)
		w = hotfs_src.gran_ns + PROBE_RACY_SLACK_NS;
	clock_gettime(CLOCK_REALTIME, &now);
	t = ts_ns(&now);
	left = w - (t - ts_ns(&st->st_mtim));
	if (w - (t - ts_ns(&st->st_ctim)) > left)
		left = w - (t - ts_ns(&st->st_ctim));
	/* a stamp in the future (a clock set back): wait no longer */
	return left < 0 ? 0 : left > w ? w : left;
}

/* Read the directory fd whole and encode it, if it holds still. */
static void enc_read(struct hotfs_meta *m, struct meta_enc *enc,
		     struct queue *q, const struct item *it, int fd)
{
	struct stat before, after;
	const char **names = NULL;
	struct dirent *de;
	size_t n = 0, cap = 0;
	DIR *dp;
	int64_t left;
	int dfd;

	if (fstat(fd, &before) == -1 || !S_ISDIR(before.st_mode) ||
	    before.st_dev != it->st.st_dev || before.st_ino != it->st.st_ino)
		return;
	left = racy_left(&before);
	if (left) {
		if (left > m->racy_wait_ns)
			m->racy_wait_ns = left;
		return;
	}
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return;
	dp = fdopendir(dfd);
	if (!dp) {
		close(dfd);
		return;
	}
	while ((de = readdir(dp))) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			const char **nn = realloc(names, ncap * sizeof(*nn));

			if (!nn)
				goto out;
			names = nn;
			cap = ncap;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			goto out;
		n++;
	}
	/* the listing is the directory's as of its stamp only if the stamp
	 * did not move while it was read */
	if (fstat(fd, &after) == 0 && same_stamp(&before, &after))
		enc_names(m, enc, q, it, fd, &before, names, n);
out:
	closedir(dp);
	while (n)
		free((char *)names[--n]);
	free(names);
}

/* One directory's record and entries; its subdirectories queued. */
static void save_dir(struct hotfs_meta *m, struct meta_enc *enc,
		     struct queue *q, const struct item *it)
{
	struct hotfs_itable *t = m->fs->it;
	struct hotfs_inode *in;
	struct hotfs_listing *l = NULL;
	uint32_t idx = find_byid(m, it->st.st_dev, it->st.st_ino), me;
	const struct meta_dir *d = NULL;
	struct stat dst, est;
	size_t i;
	int fd = -1;

	if (idx != META_NONE && !atomic_load(&m->dropped[idx]))
		d = &m->snap->dirs[idx];
	in = ino_find_hold(t, it->st.st_dev, it->st.st_ino);
	if (in) {
		pthread_mutex_lock(&in->m);
		if (in->fd >= 0) {
			fd = dup(in->fd);
			l = in->listing;
			if (l)
				atomic_fetch_add(&l->refs, 1);
		}
		pthread_mutex_unlock(&in->m);
		ino_unhold(t, in);
	}
	/* the record, while the directory is as it describes */
	if (d && (fd < 0 || (fstat(fd, &dst) == 0 &&
			     same_stamp(&dst, &d->st)))) {
		me = meta_enc_dir(enc, it->parent, it->name, &d->st);
		for (i = 0; me != META_NONE && i < d->n; i++) {
			est = d->ents[i].st;
			fresh(m, &est);
			if (!meta_enc_ent(enc, d->ents[i].name, &est,
					  S_ISLNK(est.st_mode) ?
					  d->ents[i].target : NULL))
				me = META_NONE;
			else if (S_ISDIR(est.st_mode) && wanted(m, &est))
				push(q, me, d->ents[i].name, &est);
		}
		goto out;
	}
	/* else the live listing, if the directory has not changed since */
	if (l && fd >= 0 && !l->racy && fstat(fd, &dst) == 0 &&
	    l->mtime_ns == ts_ns(&dst.st_mtim) &&
	    l->ctime_ns == ts_ns(&dst.st_ctim) && l->size == dst.st_size &&
	    dst.st_dev == it->st.st_dev && dst.st_ino == it->st.st_ino) {
		const char **names = calloc(l->n ? l->n : 1, sizeof(*names));

		if (!names)
			goto out;
		for (i = 0; i < l->n; i++)
			names[i] = l->ents[i].name;
		enc_names(m, enc, q, it, fd, &dst, names, l->n);
		free(names);
		goto out;
	}
	/* else a directory looked up through but never listed (git reads
	 * paths from its index): list it now, from the fd held */
	if (fd >= 0)
		enc_read(m, enc, q, it, fd);
out:
	listing_put(l);
	if (fd >= 0)
		close(fd);
}

/* Write the file, unless something changed through the mount meanwhile
 * (then the next round tries again).  true if written (*ndirs
 * directories, *lenp bytes). */
static bool save_once(struct hotfs_meta *m, uint64_t *ndirsp, size_t *lenp)
{
	struct hotfs_inode *root = ino_root(m->fs->it);
	struct queue q = { 0 };
	struct meta_enc *enc;
	struct meta_snap *check;
	struct item it;
	uint64_t gen, ndirs = 0;
	bool written = false;
	void *buf;
	size_t len;
	int r;

	pthread_mutex_lock(&m->lock);
	gen = m->change_gen;
	pthread_mutex_unlock(&m->lock);
	if (fstat(root->fd, &it.st) == -1)
		return false;
	enc = meta_enc_new(&it.st, META_MAX_BYTES);
	if (!enc)
		return false;
	it.parent = META_NONE;
	it.name = (char *)"";
	save_dir(m, enc, &q, &it);
	for (; q.head < q.n; q.head++) {
		save_dir(m, enc, &q, &q.v[q.head]);
		free(q.v[q.head].name);
	}
	free(q.v);
	if (meta_enc_finish(enc, &buf, &len) < 0)
		return false;
	/* what cannot be read back is not written */
	r = meta_decode(buf, len, &check);
	if (r == 0) {
		ndirs = check->ndirs;
		atomic_store(&m->saved_dirs, ndirs);
		meta_snap_free(check);
		r = file_replace_at(m->dirfd, META_FILE ".new", buf, len);
	}
	free(buf);
	if (r < 0) {
		hotfs_log(LOG_WARNING, "metadata snapshot: %s\n", strerror(-r));
		return false;
	}
	pthread_mutex_lock(&m->lock);
	if (m->change_gen == gen &&
	    renameat(m->dirfd, META_FILE ".new", m->dirfd, META_FILE) == 0) {
		fsync(m->dirfd);
		m->clean = true;
		count(&m->saves);
		written = true;
		*ndirsp = ndirs;
		*lenp = len;
	} else {
		unlinkat(m->dirfd, META_FILE ".new", 0);
	}
	pthread_mutex_unlock(&m->lock);
	return written;
}

/*
 * A directory changed within a clock tick or two of the save is left out
 * (with everything under it: a change in the root just before an unmount
 * left the next mount no snapshot at all).  The periodic writer tries
 * again later; at unmount, wait that out once (50 ms, 2.1 s at most with
 * whole-second stamps) and write again.
 */
static void save(struct hotfs_meta *m, bool last)
{
	struct timespec t0, t1, ts;
	uint64_t ndirs = 0;
	size_t len = 0;
	bool written;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	m->racy_wait_ns = 0;
	written = save_once(m, &ndirs, &len);
	/* the encoder's and the check's buffers, freed: give the heap back
	 * (the daemon's trim threshold keeps it otherwise, see main.c) */
	malloc_trim(0);
	if (last && m->racy_wait_ns) {
		ts.tv_sec = m->racy_wait_ns / 1000000000LL;
		ts.tv_nsec = m->racy_wait_ns % 1000000000LL;
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
		m->racy_wait_ns = 0;
		written = save_once(m, &ndirs, &len);
	}
	/* at unmount: how long it kept the daemon, and what it holds */
	if (last && written) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		hotfs_log(LOG_INFO, "metadata snapshot: %llu directories, "
			  "%zu bytes, written in %.2f s\n",
			  (unsigned long long)ndirs, len,
			  (double)(t1.tv_sec - t0.tv_sec) +
			  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
}

/* Something to write: a change, or listings made since the last time. */
static bool dirty(struct hotfs_meta *m)
{
	uint64_t g = listing_next_gen_peek();
	uint64_t n = ino_count(m->fs->it);
	bool d;

	pthread_mutex_lock(&m->lock);
	d = !m->clean;
	pthread_mutex_unlock(&m->lock);
	if (atomic_exchange(&m->listing_seen, g) != g)
		d = true;
	/* directories looked up through (no listing made) count too */
	if (atomic_exchange(&m->inodes_seen, n) != n)
		d = true;
	return d;
}

static void *writer(void *arg)
{
	struct hotfs_meta *m = arg;
	struct timespec ts;

	pthread_mutex_lock(&m->stop_lock);
	while (!m->stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += META_SAVE_SECS;
		pthread_cond_timedwait(&m->stop_cond, &m->stop_lock, &ts);
		if (m->stop)
			break;
		pthread_mutex_unlock(&m->stop_lock);
		if (dirty(m))
			save(m, false);
		pthread_mutex_lock(&m->stop_lock);
	}
	pthread_mutex_unlock(&m->stop_lock);
	return NULL;
}

int meta_fs_start(struct hotfs *fs)
{
	struct hotfs_meta *m = fs->meta;
	int r;

	if (!m)
		return 0;
	atomic_store(&m->listing_seen, listing_next_gen_peek());
	r = pthread_create(&m->thr, NULL, writer, m);
	if (r)
		return -r;
	m->started = true;
	return 0;
}

void meta_fs_close(struct hotfs *fs)
{
	struct hotfs_meta *m = fs->meta;

	if (!m)
		return;
	if (m->started) {
		pthread_mutex_lock(&m->stop_lock);
		m->stop = true;
		pthread_cond_signal(&m->stop_cond);
		pthread_mutex_unlock(&m->stop_lock);
		pthread_join(m->thr, NULL);
	}
	/* at unmount always: what the last round saw may have grown since
	 * by inodes the count above cannot tell apart */
	if (m->started || dirty(m))
		save(m, true);
	the_meta = NULL;
	ino_set_stale_hook(fs->it, NULL, NULL);
	fs->meta = NULL;
	meta_snap_free(m->snap);
	free((void *)m->dropped);
	free(m->byid);
	close(m->dirfd);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->stop_lock);
	pthread_cond_destroy(&m->stop_cond);
	free(m);
}
