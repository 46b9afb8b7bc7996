// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The file grain (hotfs/filecopy.h): whole-file copies in cachedir/files/
 * made from the store's records, their table, the copier's thread, and
 * the scrub.
 *
 * A copy's name is seven 16-digit hex fields: the key (dev, ino), the
 * stamp (ino, size, mtime_ns, ctime_ns) and the xxh3 of its bytes.
 * Temporary files start with '.'.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "hotfs/clock.h"
#include "hotfs/filecopy.h"
#include "hotfs/fileio.h"
#include "hotfs/log.h"
#include "hotfs/store.h"

#define FC_DIR		"files"
#define FC_NAME_LEN	(7 * 16 + 6)
#define FC_BUCKETS	4096u
#define FC_QUEUE	64u
#define FC_SCRUB_CHUNK	(1u << 20)
#define FC_FAILED	16u	/* copies given up, not asked again */
#define FC_RETRY_S	60	/* ... for this long */
#define FC_RFDS		64u	/* read descriptors kept (fc_read) */

struct fcopy {
	struct hotfs_key key;
	struct hotfs_stamp stamp;
	uint64_t hash;
	uint64_t last;		/* the open clock at its last open */
	int64_t used_ns;	/* CLOCK_MONOTONIC: made (or found at
				 * open), or last opened or read */
	uint64_t scrubbed;	/* the scrub clock when last checked */
	time_t checked;		/* CLOCK_MONOTONIC s: made or last checked
				 * (0: found at open, never in this run) */
	char name[FC_NAME_LEN + 1];
	struct fc_rfd *rfd;	/* reads through the daemon's (or NULL) */
	struct fcopy *next;	/* bucket chain */
};

/* The descriptor reads through the daemon use (fc_read): opened at the
 * first and kept; the copy holds it, and each read in progress, and the
 * last of them closes it (a copy dropped during a read). */
struct fc_rfd {
	int fd;
	unsigned refs;			/* under the table's m */
};

struct fc_job {
	struct hotfs_key key;
	struct hotfs_stamp stamp;
};

struct hotfs_copies {
	struct fc_params p;
	int fd;				/* files/ */
	pthread_mutex_t m;		/* everything below */
	pthread_cond_t cv;
	struct fcopy *b[FC_BUCKETS];
	uint64_t clock, scrub_clock;
	struct fc_job q[FC_QUEUE];
	unsigned nq;
	/* the last copies given up (a piece the store did not hold after
	 * all: its count of a file's bytes adds extents and the blocks
	 * within them; a full disk), not queued again for the same stamp
	 * for FC_RETRY_S (CLOCK_MONOTONIC seconds when given up) */
	struct fc_job failed[FC_FAILED];
	time_t failed_at[FC_FAILED];
	unsigned nfailed;
	bool stop, started, busy;
	pthread_t thread;
	struct fc_stats s;		/* copies and bytes: the table's */
	/* the store's laps (fc_tick): when the one going on began, and
	 * the store's evictions then (lap_ns 0: none begun) */
	int64_t lap_ns;
	uint64_t lap_evictions;
	uint64_t tmp_seq;
	unsigned nrfd;			/* read descriptors kept open */
};

static time_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static unsigned bucket(const struct hotfs_key *k)
{
	uint64_t h = k->ino * 0x9E3779B97F4A7C15ull ^ k->dev;

	return (unsigned)(h ^ h >> 29) & (FC_BUCKETS - 1);
}

static bool key_eq(const struct hotfs_key *a, const struct hotfs_key *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

static bool stamp_eq(const struct hotfs_stamp *a, const struct hotfs_stamp *b)
{
	return a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static void make_name(struct fcopy *c)
{
	snprintf(c->name, sizeof(c->name),
		 "%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64
		 "-%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64,
		 c->key.dev, c->key.ino, c->stamp.ino, c->stamp.size,
		 (uint64_t)c->stamp.mtime_ns, (uint64_t)c->stamp.ctime_ns,
		 c->hash);
}

static bool parse_name(const char *name, struct fcopy *c)
{
	uint64_t v[7];
	int i;

	if (strlen(name) != FC_NAME_LEN)
		return false;
	for (i = 0; i < 7; i++) {
		const char *f = name + i * 17;
		char *end;

		if (i < 6 && f[16] != '-')
			return false;
		errno = 0;
		v[i] = strtoull(f, &end, 16);
		if (errno || end != f + 16)
			return false;
	}
	c->key.dev = v[0];
	c->key.ino = v[1];
	c->stamp.ino = v[2];
	c->stamp.size = v[3];
	c->stamp.mtime_ns = (int64_t)v[4];
	c->stamp.ctime_ns = (int64_t)v[5];
	c->hash = v[6];
	make_name(c);
	return strcmp(c->name, name) == 0;
}

/* Under m. */
static struct fcopy **find(struct hotfs_copies *cp, const struct hotfs_key *k)
{
	struct fcopy **pp = &cp->b[bucket(k)];

	while (*pp && !key_eq(&(*pp)->key, k))
		pp = &(*pp)->next;
	return pp;
}

/* Under m: a hold on a copy's read descriptor let go. */
static void rfd_put(struct hotfs_copies *cp, struct fc_rfd *r)
{
	if (r && --r->refs == 0) {
		close(r->fd);
		free(r);
		cp->nrfd--;
	}
}

/* Under m: take *pp out of the table and remove its file. */
static void drop_at(struct hotfs_copies *cp, struct fcopy **pp)
{
	struct fcopy *c = *pp;

	*pp = c->next;
	unlinkat(cp->fd, c->name, 0);
	cp->s.copies--;
	cp->s.bytes -= c->stamp.size;
	cp->s.dropped++;
	st_set_reserve(cp->p.st, cp->s.bytes);
	rfd_put(cp, c->rfd);
	free(c);
}

static void insert(struct hotfs_copies *cp, struct fcopy *c)
{
	struct fcopy **pp = find(cp, &c->key);

	c->used_ns = clock_mono_ns();
	if (*pp)
		drop_at(cp, pp);
	c->next = cp->b[bucket(&c->key)];
	cp->b[bucket(&c->key)] = c;
	cp->s.copies++;
	cp->s.bytes += c->stamp.size;
	st_set_reserve(cp->p.st, cp->s.bytes);
}

/* Under m: the copy opened least recently (or NULL), its chain link. */
static struct fcopy **coldest(struct hotfs_copies *cp)
{
	struct fcopy **best = NULL, **pp;
	unsigned i;

	for (i = 0; i < FC_BUCKETS; i++)
		for (pp = &cp->b[i]; *pp; pp = &(*pp)->next)
			if (!best || (*pp)->last < (*best)->last)
				best = pp;
	return best;
}

/* Read back the names at open; remove what is not a copy to keep. */
static void scan(struct hotfs_copies *cp)
{
	int dfd = dup(cp->fd);
	struct dirent *de;
	DIR *d;

	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		struct fcopy *c;
		struct stat sb;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		c = calloc(1, sizeof(*c));
		if (c && !cp->p.forget && parse_name(de->d_name, c) &&
		    c->key.dev == 0 &&
		    !fstatat(cp->fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(sb.st_mode) && sb.st_nlink == 1 &&
		    (uint64_t)sb.st_size == c->stamp.size &&
		    c->stamp.size <= cp->p.max_bytes) {
			insert(cp, c);
			continue;
		}
		free(c);
		unlinkat(cp->fd, de->d_name, 0);
	}
	closedir(d);
	while (cp->s.bytes > cp->p.max_bytes)
		drop_at(cp, coldest(cp));
}

void fc_purge(int dirfd)
{
	struct hotfs_copies cp = { .p = { .forget = true } };

	cp.fd = openat(dirfd, FC_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		       O_CLOEXEC);
	if (cp.fd < 0)
		return;
	scan(&cp);		/* forget: removes every entry */
	close(cp.fd);
	unlinkat(dirfd, FC_DIR, AT_REMOVEDIR);
}

int fc_open(struct hotfs_copies **out, const struct fc_params *p,
	    char *err, size_t errlen)
{
	struct hotfs_copies *cp = calloc(1, sizeof(*cp));

	if (!cp) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	cp->p = *p;
	if (mkdirat(p->dirfd, FC_DIR, 0700) && errno != EEXIST) {
		int e = -errno;

		snprintf(err, errlen, "files/: %s", strerror(-e));
		free(cp);
		return e;
	}
	cp->fd = openat(p->dirfd, FC_DIR, O_RDONLY | O_DIRECTORY |
			O_NOFOLLOW | O_CLOEXEC);
	if (cp->fd < 0) {
		int e = -errno;

		snprintf(err, errlen, "files/: %s", strerror(-e));
		free(cp);
		return e;
	}
	pthread_mutex_init(&cp->m, NULL);
	pthread_cond_init(&cp->cv, NULL);
	scan(cp);
	*out = cp;
	return 0;
}

/* Bytes [off, off + len) of the file (len <= extent) from the store:
 * the extent's record, else its blocks'.  0 or -errno. */
static int read_span(struct hotfs_copies *cp, const struct fc_job *j,
		     uint64_t off, uint32_t len, char *buf)
{
	uint32_t e = (uint32_t)(off / cp->p.extent), done;
	ssize_t n;

	n = st_read(cp->p.st, &j->key, e, &j->stamp, 0, buf, len);
	if (n == (ssize_t)len)
		return 0;
	for (done = 0; done < len; done += ST_BLOCK) {
		uint64_t blk = (off + done) / ST_BLOCK;
		uint32_t bl = len - done < ST_BLOCK ? len - done : ST_BLOCK;

		if (blk >= ST_BLK_LIMIT)
			return -ENOENT;
		n = st_read(cp->p.st, &j->key, ST_REC_BLOCK | (uint32_t)blk,
			    &j->stamp, 0, buf + done, bl);
		if (n != (ssize_t)bl)
			return n < 0 ? (int)n : -ENOENT;
	}
	return 0;
}

/* Write the copy of job j; 0 or -errno (nothing left behind). */
static int make(struct hotfs_copies *cp, const struct fc_job *j)
{
	uint64_t size = j->stamp.size, off;
	struct fcopy *c = calloc(1, sizeof(*c));
	char *buf = malloc(cp->p.extent), tmp[32];
	XXH3_state_t *hs = XXH3_createState();
	int fd = -1, err = -ENOMEM;
	struct fcopy **pp;

	if (!c || !buf || !hs)
		goto out;
	pthread_mutex_lock(&cp->m);
	/* queued again by an open while it was being made: made again, it
	 * would be renamed over itself and its table entry's replacement
	 * would unlink that name, the new copy with it */
	pp = find(cp, &j->key);
	if (*pp && stamp_eq(&(*pp)->stamp, &j->stamp)) {
		pthread_mutex_unlock(&cp->m);
		err = 0;
		goto out;
	}
	while (cp->s.bytes + size > cp->p.max_bytes && cp->s.copies)
		drop_at(cp, coldest(cp));
	/* its room is taken from the store's once it is made (insert):
	 * taken now, the store's next tick could evict the records it is
	 * made from */
	snprintf(tmp, sizeof(tmp), ".tmp-%" PRIu64, cp->tmp_seq++);
	pthread_mutex_unlock(&cp->m);
	fd = openat(cp->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	XXH3_64bits_reset(hs);
	for (off = 0; off < size; off += cp->p.extent) {
		uint32_t len = size - off < cp->p.extent ?
			       (uint32_t)(size - off) : cp->p.extent;
		ssize_t w;

		err = read_span(cp, j, off, len, buf);
		if (err)
			goto out;
		XXH3_64bits_update(hs, buf, len);
		w = pwrite(fd, buf, len, (off_t)off);
		if (w != (ssize_t)len) {
			err = w < 0 ? -errno : -EIO;
			goto out;
		}
	}
	if (fdatasync(fd)) {
		err = -errno;
		goto out;
	}
	c->key = j->key;
	c->stamp = j->stamp;
	c->hash = XXH3_64bits_digest(hs);
	make_name(c);
	if (renameat(cp->fd, tmp, cp->fd, c->name)) {
		err = -errno;
		goto out;
	}
	fsync(cp->fd);
	pthread_mutex_lock(&cp->m);
	c->last = ++cp->clock;
	c->scrubbed = cp->scrub_clock;
	c->checked = mono_s();	/* from the store's checked records */
	insert(cp, c);
	cp->s.made++;
	cp->s.made_bytes += size;
	pthread_mutex_unlock(&cp->m);
	c = NULL;
	err = 0;
	/* the copy is the file's home now (see the header); let go after
	 * it is found (fc_has), so that a read that misses them meanwhile
	 * promotes nothing (the read path asks) */
	if (!cp->p.keep_records ||
	    !cp->p.keep_records(cp->p.keep_arg, &j->key))
		st_invalidate(cp->p.st, &j->key, 0, 0, ST_INVAL_COPIED);
out:
	if (fd >= 0) {
		close(fd);
		if (err)
			unlinkat(cp->fd, tmp, 0);
	}
	if (err) {
		pthread_mutex_lock(&cp->m);
		cp->failed_at[cp->nfailed % FC_FAILED] = mono_s();
		cp->failed[cp->nfailed++ % FC_FAILED] = *j;
		cp->s.failed++;
		pthread_mutex_unlock(&cp->m);
	}
	XXH3_freeState(hs);
	free(buf);
	free(c);
	return err;
}

/* The next copy to scrub: the one checked longest ago, if it is due;
 * its name and hash copied out.  Under m; false if none is (*wait: the
 * seconds until one is, 0: there is none). */
static bool scrub_pick(struct hotfs_copies *cp, char *name, uint64_t *hash,
		       time_t *wait)
{
	struct fcopy *best = NULL, *c;
	time_t now = mono_s();
	unsigned i;

	*wait = 0;
	for (i = 0; i < FC_BUCKETS; i++)
		for (c = cp->b[i]; c; c = c->next)
			if (!best || c->checked < best->checked ||
			    (c->checked == best->checked &&
			     c->scrubbed < best->scrubbed))
				best = c;
	if (!best)
		return false;
	if (cp->p.scrub_interval && best->checked &&
	    now - best->checked < (time_t)cp->p.scrub_interval) {
		*wait = (time_t)cp->p.scrub_interval - (now - best->checked);
		return false;
	}
	best->scrubbed = ++cp->scrub_clock;
	best->checked = now;
	memcpy(name, best->name, sizeof(best->name));
	*hash = best->hash;
	return true;
}

/* Under m: the link to the copy named name, if it is still in the
 * table; NULL if not. */
static struct fcopy **named(struct hotfs_copies *cp, const char *name)
{
	struct fcopy probe, **pp;

	if (!parse_name(name, &probe))
		return NULL;
	pp = find(cp, &probe.key);
	return *pp && !strcmp((*pp)->name, name) ? pp : NULL;
}

/* Under m: the copy named name counts as never checked (its check was
 * cut short). */
static void unchecked(struct hotfs_copies *cp, const char *name)
{
	struct fcopy **pp = named(cp, name);

	if (pp)
		(*pp)->checked = 0;
}

/* Under m: remove the copy named name, if it is still in the table. */
static void drop_named(struct hotfs_copies *cp, const char *name)
{
	struct fcopy **pp = named(cp, name);

	if (pp)
		drop_at(cp, pp);
}

/* Check one copy's bytes as the disk holds them (O_DIRECT, else after
 * dropping its cached pages), at most rate bytes a second; called and
 * returns with m held, drops it meanwhile. */
static void scrub_one(struct hotfs_copies *cp)
{
	char name[FC_NAME_LEN + 1];
	uint64_t hash, off = 0, pause_ns;
	XXH3_state_t *hs;
	void *buf = NULL;
	bool bad = false;
	time_t wait;
	int fd;

	if (!scrub_pick(cp, name, &hash, &wait)) {
		struct timespec ts;

		/* none due: until one is, a new job, or the stop */
		if (wait && !cp->nq && !cp->stop) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += wait;
			pthread_cond_timedwait(&cp->cv, &cp->m, &ts);
		}
		return;
	}
	pthread_mutex_unlock(&cp->m);
	hs = XXH3_createState();
	fd = openat(cp->fd, name, O_RDONLY | O_DIRECT | O_CLOEXEC |
		    O_NOFOLLOW);
	if (fd < 0 && errno == EINVAL) {
		fd = openat(cp->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	if (fd < 0) {
		struct timespec ts;
		int e = errno;

		/* gone (or not to be opened now): not a busy loop */
		pthread_mutex_lock(&cp->m);
		if (e == ENOENT)
			drop_named(cp, name);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec++;
		if (!cp->stop && !cp->nq)
			pthread_cond_timedwait(&cp->cv, &cp->m, &ts);
		pthread_mutex_unlock(&cp->m);
		goto out;
	}
	if (!hs || posix_memalign(&buf, 4096, FC_SCRUB_CHUNK))
		goto out;
	pause_ns = 1000000000ull * FC_SCRUB_CHUNK / cp->p.scrub_rate;
	XXH3_64bits_reset(hs);
	for (;;) {
		ssize_t n = pread(fd, buf, FC_SCRUB_CHUNK, (off_t)off);
		struct timespec ts;

		if (n < 0) {
			bad = errno == EIO;	/* what a reader gets too */
			break;
		}
		if (n == 0) {
			bad = XXH3_64bits_digest(hs) != hash;
			break;
		}
		XXH3_64bits_update(hs, buf, (size_t)n);
		off += (uint64_t)n;
		pthread_mutex_lock(&cp->m);
		cp->s.scrubbed_bytes += (uint64_t)n;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(pause_ns / 1000000000ull);
		ts.tv_nsec += (long)(pause_ns % 1000000000ull);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!cp->stop && !cp->nq)
			pthread_cond_timedwait(&cp->cv, &cp->m, &ts);
		if (cp->stop || cp->nq) {
			/* copies first; this one is checked again next */
			unchecked(cp, name);
			pthread_mutex_unlock(&cp->m);
			goto out;
		}
		pthread_mutex_unlock(&cp->m);
	}
	if (bad) {
		hotfs_log(LOG_WARNING, "cachedir: the copy %s failed its "
			  "check: removed\n", name);
		pthread_mutex_lock(&cp->m);
		cp->s.scrub_bad++;
		drop_named(cp, name);
		pthread_mutex_unlock(&cp->m);
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	XXH3_freeState(hs);
	pthread_mutex_lock(&cp->m);
}

static void *copier(void *arg)
{
	struct hotfs_copies *cp = arg;

	pthread_mutex_lock(&cp->m);
	while (!cp->stop) {
		struct fc_job j;

		if (!cp->nq) {
			if (cp->p.scrub_rate && cp->s.copies) {
				scrub_one(cp);
				if (!cp->nq && !cp->stop && cp->s.copies == 0)
					pthread_cond_wait(&cp->cv, &cp->m);
			} else {
				pthread_cond_wait(&cp->cv, &cp->m);
			}
			continue;
		}
		j = cp->q[0];
		memmove(cp->q, cp->q + 1, --cp->nq * sizeof(cp->q[0]));
		cp->busy = true;
		pthread_mutex_unlock(&cp->m);
		make(cp, &j);
		pthread_mutex_lock(&cp->m);
		cp->busy = false;
	}
	pthread_mutex_unlock(&cp->m);
	return NULL;
}

int fc_start(struct hotfs_copies *cp)
{
	int r = pthread_create(&cp->thread, NULL, copier, cp);

	if (r)
		return -r;
	cp->started = true;
	return 0;
}

void fc_close(struct hotfs_copies *cp)
{
	unsigned i;

	if (!cp)
		return;
	pthread_mutex_lock(&cp->m);
	cp->stop = true;
	pthread_cond_broadcast(&cp->cv);
	pthread_mutex_unlock(&cp->m);
	if (cp->started)
		pthread_join(cp->thread, NULL);
	for (i = 0; i < FC_BUCKETS; i++)
		while (cp->b[i]) {
			struct fcopy *c = cp->b[i];

			cp->b[i] = c->next;
			rfd_put(cp, c->rfd);
			free(c);
		}
	close(cp->fd);
	pthread_cond_destroy(&cp->cv);
	pthread_mutex_destroy(&cp->m);
	free(cp);
}

/* Queue a copy of key at stamp if the store holds every byte of it. */
static void want(struct hotfs_copies *cp, const struct hotfs_key *key,
		 const struct hotfs_stamp *stamp)
{
	uint64_t next = (stamp->size + cp->p.extent - 1) / cp->p.extent;
	uint64_t bytes, recs;
	unsigned i;

	if (stamp->size < cp->p.min_size || stamp->size > cp->p.max_bytes ||
	    next > ST_EXT_LIMIT ||
	    st_file_cached(cp->p.st, key, stamp, 0, (uint32_t)next, &bytes,
			   &recs) || bytes < stamp->size)
		return;
	pthread_mutex_lock(&cp->m);
	for (i = 0; i < FC_FAILED && i < cp->nfailed; i++)
		if (key_eq(&cp->failed[i].key, key) &&
		    stamp_eq(&cp->failed[i].stamp, stamp) &&
		    mono_s() - cp->failed_at[i] < FC_RETRY_S) {
			pthread_mutex_unlock(&cp->m);
			return;
		}
	for (i = 0; i < cp->nq; i++)
		if (key_eq(&cp->q[i].key, key))
			break;
	if (i == cp->nq && cp->nq < FC_QUEUE && !cp->stop) {
		cp->q[cp->nq].key = *key;
		cp->q[cp->nq].stamp = *stamp;
		cp->nq++;
		pthread_cond_signal(&cp->cv);
	}
	pthread_mutex_unlock(&cp->m);
}

int fc_get(struct hotfs_copies *cp, const struct hotfs_key *key,
	   const struct hotfs_stamp *stamp, bool want_one)
{
	char name[FC_NAME_LEN + 1];
	struct fcopy **pp;
	bool have = false;
	int fd;

	pthread_mutex_lock(&cp->m);
	pp = find(cp, key);
	if (*pp && !stamp_eq(&(*pp)->stamp, stamp)) {
		drop_at(cp, pp);	/* the file changed since */
	} else if (*pp) {
		(*pp)->last = ++cp->clock;
		(*pp)->used_ns = clock_mono_ns();
		memcpy(name, (*pp)->name, sizeof(name));
		have = true;
	}
	pthread_mutex_unlock(&cp->m);
	if (!have) {
		if (want_one)
			want(cp, key, stamp);
		return -ENOENT;
	}
	fd = openat(cp->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -ENOENT : fd;	/* removed meanwhile: none */
}

ssize_t fc_read(struct hotfs_copies *cp, const struct hotfs_key *key,
		const struct hotfs_stamp *stamp, void *buf, size_t size,
		off_t off)
{
	char name[FC_NAME_LEN + 1];
	struct fcopy **pp, *c;
	struct fc_rfd *r;
	ssize_t n;

	pthread_mutex_lock(&cp->m);
	pp = find(cp, key);
	c = *pp;
	if (!c || !stamp_eq(&c->stamp, stamp)) {
		pthread_mutex_unlock(&cp->m);
		return -ENOENT;
	}
	c->last = ++cp->clock;
	c->used_ns = clock_mono_ns();
	r = c->rfd;
	if (!r) {		/* the first read of this copy */
		int fd = openat(cp->fd, c->name,
				O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		r = fd < 0 ? NULL : malloc(sizeof(*r));
		if (!r) {
			if (fd >= 0)
				close(fd);
			pthread_mutex_unlock(&cp->m);
			return -ENOENT;
		}
		r->fd = fd;
		r->refs = 0;
		cp->nrfd++;
		/* kept for the next reads while few are (each copy would
		 * hold a descriptor): else this read's alone */
		if (cp->nrfd <= FC_RFDS) {
			c->rfd = r;
			r->refs++;
		}
	}
	r->refs++;
	memcpy(name, c->name, sizeof(name));
	pthread_mutex_unlock(&cp->m);
	n = pread_full(r->fd, buf, size, off);
	pthread_mutex_lock(&cp->m);
	rfd_put(cp, r);
	if (n < 0) {
		/* a damaged block (Btrfs: EIO): the copy goes, the source
		 * serves */
		pp = find(cp, key);
		if (*pp && !strcmp((*pp)->name, name)) {
			drop_at(cp, pp);
			cp->s.scrub_bad++;
		}
	}
	pthread_mutex_unlock(&cp->m);
	if (n >= 0)
		return n;
	hotfs_log(LOG_WARNING, "cachedir: the copy %s could not be read "
		  "(%s): removed\n", name, strerror((int)-n));
	return -ENOENT;
}

bool fc_has(struct hotfs_copies *cp, const struct hotfs_key *key,
	    const struct hotfs_stamp *stamp)
{
	struct fcopy **pp;
	bool have;

	pthread_mutex_lock(&cp->m);
	pp = find(cp, key);
	have = *pp && stamp_eq(&(*pp)->stamp, stamp);
	pthread_mutex_unlock(&cp->m);
	return have;
}

int fc_drop(struct hotfs_copies *cp, const struct hotfs_key *key)
{
	struct fcopy **pp;
	int n = 0;

	pthread_mutex_lock(&cp->m);
	pp = find(cp, key);
	if (*pp) {
		drop_at(cp, pp);
		n = 1;
	}
	pthread_mutex_unlock(&cp->m);
	return n;
}

void fc_tick(struct hotfs_copies *cp)
{
	struct hotfs_store_stats ss;
	int64_t now = clock_mono_ns();
	uint64_t lap;
	unsigned i;

	st_get_stats(cp->p.st, &ss);
	lap = ss.regions_allowed > 1 ? ss.regions_allowed : 1;
	pthread_mutex_lock(&cp->m);
	if (!cp->lap_ns) {
		cp->lap_ns = now;
		cp->lap_evictions = ss.evictions;
	} else if (ss.evictions - cp->lap_evictions >= lap) {
		/* the store let go of every record it held at lap_ns that
		 * no read used since: a copy no one used since is colder */
		for (i = 0; i < FC_BUCKETS; i++) {
			struct fcopy **pp = &cp->b[i];

			while (*pp) {
				if ((*pp)->used_ns < cp->lap_ns) {
					drop_at(cp, pp);
					cp->s.aged++;
				} else {
					pp = &(*pp)->next;
				}
			}
		}
		cp->lap_ns = now;
		cp->lap_evictions = ss.evictions;
	}
	pthread_mutex_unlock(&cp->m);
}

void fc_get_stats(struct hotfs_copies *cp, struct fc_stats *s)
{
	pthread_mutex_lock(&cp->m);
	*s = cp->s;
	pthread_mutex_unlock(&cp->m);
}
