// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Writing the metadata snapshot (see include/hotfs/meta_fs.h): the
 * attributes and listings of the directories the daemon used, every 30 s
 * while they change (a thread of its own) and at unmount, through
 * file_replace_at, never while a change of the tree is under way.
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
#include "hotfs/clock.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/watch.h"

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
	left = stamp_racy_left(ts_ns(&before.st_mtim),
				ts_ns(&before.st_ctim), clock_real_ns());
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
			l = in->dir.listing;
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
 * again later; at unmount, wait that out (50 ms, 2.1 s at most with
 * whole-second stamps) and write again, as often as a directory that was
 * below one left out is then found changed as recently (one round per
 * level at most, SAVE_LAST_ROUNDS in all).
 */
#define SAVE_LAST_ROUNDS	8

static void save(struct hotfs_meta *m, bool last)
{
	struct timespec t0, t1, ts;
	uint64_t ndirs = 0;
	size_t len = 0;
	bool written;
	int round = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	m->racy_wait_ns = 0;
	written = save_once(m, &ndirs, &len);
	/* the encoder's and the check's buffers, freed: give the heap back
	 * (the daemon's trim threshold keeps it otherwise, see main.c) */
	malloc_trim(0);
	while (last && m->racy_wait_ns && round++ < SAVE_LAST_ROUNDS) {
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
		ts.tv_sec += (time_t)m->fs->o->snapshot_interval;
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

int meta_save_start(struct hotfs_meta *m)
{
	int r;

	atomic_store(&m->listing_seen, listing_next_gen_peek());
	r = pthread_create(&m->thr, NULL, writer, m);
	if (r)
		return -r;
	m->started = true;
	return 0;
}

void meta_save_close(struct hotfs_meta *m)
{
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
}
