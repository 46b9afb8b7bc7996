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
#include "meta_fs_i.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/watch.h"


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
	uint32_t d1 = dir->snap.snap_dir1;

	atomic_store(&dir->snap.snap_state, META_ST_NONE);
	if (d1)
		drop(m, d1 - 1, why);
}

/* The inode table's change hook (ino_note_change): a write path's
 * change of in. */
static void on_write(void *arg, struct hotfs_inode *in)
{
	struct hotfs_meta *m = arg;

	meta_fs_change(m->fs, NULL, in);
}

/* ino_fd found a lazily made inode's name gone or changed. */
static void on_stale(void *arg, struct hotfs_inode *in)
{
	struct hotfs_meta *m = arg;

	if (in->snap.snap_pdir1)
		drop(m, in->snap.snap_pdir1 - 1, &m->stale);
}

void meta_fs_open(struct hotfs *fs)
{
	struct hotfs_meta *m;
	char why[PATH_MAX + 160];
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
	m->dirfd = dir_open_owned(fs->o->cachedir, 0, why, sizeof(why));
	if (m->dirfd < 0) {
		hotfs_log(LOG_WARNING, "metadata snapshot: %s: %s\n",
			  fs->o->cachedir, why);
		free(m);
		return;
	}
	fs->meta = m;
	ino_set_stale_hook(fs->it, on_stale, m);
	ino_set_change_hook(fs->it, on_write, m);
	/* its inode numbers are another mount's if the source does not
	 * keep them (include/hotfs/srcprobe.h); its sizes are older than
	 * the source's once a leftover writeback log was written there
	 * (which files it held is not known any more: all go) */
	if (fs->o->reset || !hotfs_src.ids_kept || fs->left_drained)
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
			  r == -EXDEV ? "of another source" :
			  file_private_why(r));
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
		ino_root(fs->it)->snap.snap_dir1 = 1;
		atomic_store(&ino_root(fs->it)->snap.snap_state,
			     META_ST_UNCHECKED);
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
	s = atomic_load(&dir->snap.snap_state);
	if (s == META_ST_NONE || !dir->snap.snap_dir1)
		return NULL;
	idx = dir->snap.snap_dir1 - 1;
	d = &m->snap->dirs[idx];
	if (atomic_load(&m->dropped[idx])) {
		atomic_store(&dir->snap.snap_state, META_ST_NONE);
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
	atomic_store(&dir->snap.snap_state, META_ST_TRUSTED);
	return d;
}

void meta_fs_attach(struct hotfs *fs, struct hotfs_inode *dir)
{
	struct hotfs_meta *m = fs->meta;
	uint32_t idx;

	if (!m || !m->snap || dir->snap.snap_dir1)
		return;
	idx = find_byid(m, dir->dev, dir->ino);
	if (idx == META_NONE || atomic_load(&m->dropped[idx]))
		return;
	pthread_mutex_lock(&dir->m);
	if (!dir->snap.snap_dir1) {
		dir->snap.snap_dir1 = idx + 1;
		atomic_store(&dir->snap.snap_state, META_ST_UNCHECKED);
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
	if (!in->snap.snap_pdir1)
		in->snap.snap_pdir1 = dir->snap.snap_dir1;
	if (lazy && !in->snap.snap_st) {
		in->snap.snap_st = &ent->st;
		in->snap.snap_target = ent->target;
		/* what an open compares the source with */
		if (!stamp_known_locked(in))
			stamp_take_locked(in, &ent->st);
	}
	if (ent->sub != META_NONE && !in->snap.snap_dir1 &&
	    !atomic_load(&m->dropped[ent->sub])) {
		in->snap.snap_dir1 = ent->sub + 1;
		atomic_store(&in->snap.snap_state, META_ST_UNCHECKED);
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
	 * (fuse_entry.c's do_lookup): a change behind the mount in a
	 * directory reached through the snapshot is seen at once too */
	if (S_ISDIR(ent->st.st_mode) && fd >= 0)
		watch_cover_dir(fs->watch, in);
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
	if (ino_lazy(in) && in->snap.snap_st) {
		*st = *in->snap.snap_st;
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
		t = in->snap.snap_target;
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
	l = dir->dir.listing;
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
		if (!listing_try_install(dir, l, true))
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
	if (in && in->snap.snap_pdir1)
		drop(m, in->snap.snap_pdir1 - 1, &m->ndropped);
}

void meta_fs_drop_changing(struct hotfs *fs,
			   bool (*changing)(void *arg, const struct stat *st),
			   void *arg)
{
	struct hotfs_meta *m = fs->meta;
	bool any = false;
	uint32_t i, k;

	if (!m || !m->snap)
		return;
	for (i = 0; i < m->snap->ndirs; i++) {
		const struct meta_dir *d = &m->snap->dirs[i];

		for (k = 0; k < d->n; k++)
			if (S_ISREG(d->ents[k].st.st_mode) &&
			    changing(arg, &d->ents[k].st)) {
				any = true;
				drop(m, i, &m->ndropped);
				break;
			}
	}
	if (any)
		file_changed(m);
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
	pthread_mutex_lock(&m->lock);
	s->current = m->clean;
	pthread_mutex_unlock(&m->lock);
}

void meta_fs_close(struct hotfs *fs)
{
	struct hotfs_meta *m = fs->meta;

	if (!m)
		return;
	meta_save_close(m);
	ino_set_stale_hook(fs->it, NULL, NULL);
	ino_set_change_hook(fs->it, NULL, NULL);
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

int meta_fs_start(struct hotfs *fs)
{
	return fs->meta ? meta_save_start(fs->meta) : 0;
}
