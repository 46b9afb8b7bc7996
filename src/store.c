// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store: opening (lock, superblock, identity, recovery), closing,
 * the mutating entry points (insert, invalidate, commit, tick), state and
 * statistics.  The format and its reasons are in src/store_i.h; reads are
 * in src/store_read.c, regions in src/store_region.c, recovery in
 * src/store_recover.c.
 *
 * Opening a cachedir:
 *	- flock(LOCK_EX | LOCK_NB) on cachedir/lock and on cachedir itself,
 *	  held until st_close: a second store on the same cachedir gets
 *	  -EBUSY, also if the lock file was removed meanwhile;
 *	- no superblock: a new store (a "data" file without a superblock is
 *	  not ours and is refused), of params.capacity bytes or, if 0, 90%
 *	  of the free space of the cachedir's filesystem;
 *	- a superblock for another source identity: -EEXIST, unless reset;
 *	- a different extent or region size: the store is emptied (extents
 *	  are numbered in units of the extent size), with a notice;
 *	- otherwise the index is rebuilt from the region summaries.
 * The superblock is rewritten at every open (tmp + fsync + rename) to
 * advance seq_floor, so region generations never repeat, even after a
 * crash lost the newest region.
 *
 * Invalidation must not wait behind an insert's I/O or a commit's
 * fdatasync (the write path calls it before acknowledging a write): it
 * drops the index entries under idx_lock alone, and queues the tombstone
 * under state_lock if the store mutex is busy; the queue is drained into
 * the summary at the next insert, commit or tick.  A tombstone that is
 * lost (queue full, store read-only, crash before the commit) only
 * matters if the source's ctime did not change, since the stamp check
 * catches the rest.
 *
 * Locks: st->lock, then st->idx_lock; st->state_lock is a leaf.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "hotfs/log.h"
#include "store_i.h"

#define ST_DEFAULT_COMMIT_MS	1000u
#define ST_DEFAULT_COMMIT_BYTES	(4ull << 20)

uint64_t st_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t st_stamp_hash(uint64_t ino, uint64_t size, int64_t mtime_ns,
		       int64_t ctime_ns)
{
	uint64_t v[4] = { ino, size, (uint64_t)mtime_ns, (uint64_t)ctime_ns };

	return XXH3_64bits(v, sizeof(v));
}

uint64_t st_seed(uint64_t dev, uint64_t ino, uint32_t extno, uint64_t gen)
{
	uint64_t v[4] = { dev, ino, extno, gen };

	return XXH3_64bits(v, sizeof(v));
}

ssize_t st_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done,
				  off + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

ssize_t st_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const uint8_t *)buf + done,
				   len - done, off + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += n;
	}
	return done;
}

bool st_device_error(int err)
{
	return err == -EIO || err == -ENXIO || err == -ENODEV ||
	       err == -EROFS || err == -ENOSPC || err == -EDQUOT;
}

enum hotfs_store_state st_state(struct hotfs_store *st)
{
	return atomic_load_explicit(&st->state, memory_order_relaxed);
}

const char *st_state_name(enum hotfs_store_state s)
{
	switch (s) {
	case ST_OK:
		return "ok";
	case ST_READONLY:
		return "read-only";
	case ST_OFF:
		return "off";
	}
	return "?";
}

/* Move to a worse state (never back: see st_clear_space_state); log once. */
void st_set_state(struct hotfs_store *st, int state, int err,
		  const char *what)
{
	pthread_mutex_lock(&st->state_lock);
	if (state > atomic_load(&st->state)) {
		atomic_store(&st->state, state);
		st->state_err = state == ST_READONLY ? err : 0;
		snprintf(st->reason, sizeof(st->reason), "%s: %s", what,
			 strerror(-err));
		hotfs_log(LOG_ERR, "store: %s: %s; cache is now %s\n", what,
			  strerror(-err), st_state_name(state));
	}
	pthread_mutex_unlock(&st->state_lock);
}

void st_clear_space_state(struct hotfs_store *st)
{
	pthread_mutex_lock(&st->state_lock);
	if (atomic_load(&st->state) == ST_READONLY && st->state_err) {
		atomic_store(&st->state, ST_OK);
		st->state_err = 0;
		st->reason[0] = '\0';
		hotfs_log(LOG_NOTICE, "store: free space is back, caching "
			  "resumes\n");
	}
	pthread_mutex_unlock(&st->state_lock);
}

static void errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int read_sb(struct hotfs_store *st, struct st_sb *sb)
{
	uint8_t buf[sizeof(*sb)];
	ssize_t n;
	int fd, err;

	fd = openat(st->dirfd, "superblock", O_RDONLY | O_CLOEXEC |
		    O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = st_pread_full(fd, buf, sizeof(buf), 0);
	err = n < 0 ? (int)n : st_sb_decode(buf, n, sb);
	close(fd);
	return err;
}

static int write_sb(struct hotfs_store *st, struct st_sb *sb)
{
	ssize_t n;
	int fd, err = 0;

	sb->csum = XXH3_64bits(sb, offsetof(struct st_sb, csum));
	fd = openat(st->dirfd, "superblock.tmp", O_WRONLY | O_CREAT |
		    O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	n = st_pwrite_full(fd, sb, sizeof(*sb), 0);
	if (n < 0)
		err = n;
	else if (fdatasync(fd))
		err = -errno;
	close(fd);
	if (!err && renameat(st->dirfd, "superblock.tmp", st->dirfd,
			     "superblock"))
		err = -errno;
	if (!err && fsync(st->dirfd))
		err = -errno;
	if (!err)
		CNT_ADD(st, bytes_written, sizeof(*sb));
	return err;
}

static void sb_init(struct st_sb *sb, const struct hotfs_store_params *p,
		    uint64_t capacity, uint32_t rsize)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = ST_SB_MAGIC;
	sb->version = ST_VERSION;
	sb->size = sizeof(*sb);
	while (!sb->epoch)
		if (getrandom(&sb->epoch, sizeof(sb->epoch), 0) < 0)
			sb->epoch = st_now_ns() ^ (uint64_t)getpid() << 32;
	sb->capacity = capacity;
	sb->extent = p->extent;
	sb->rsize = rsize;
	sb->seq_floor = 1;
	sb->created = time(NULL);
	sb->ident_len = p->ident_len;
	memcpy(sb->ident, p->ident, p->ident_len);
}

static void st_free(struct hotfs_store *st)
{
	if (st->datafd >= 0)
		close(st->datafd);
	if (st->lockfd >= 0)
		close(st->lockfd);	/* releases the flock */
	if (st->dirfd >= 0)
		close(st->dirfd);
	idx_exit(st);
	free(st->regions);
	free(st->sum);
	free(st->tab);
	pthread_rwlock_destroy(&st->idx_lock);
	pthread_mutex_destroy(&st->lock);
	pthread_mutex_destroy(&st->state_lock);
	free(st);
}

/* Check the superblock against the caller's wishes; 1 = start afresh. */
static int sb_match(const char *dir, const struct st_sb *sb, int rc,
		    const struct hotfs_store_params *p, char *err,
		    size_t errlen)
{
	switch (rc) {
	case 0:
		break;
	case -ENOENT:
		return 1;
	case -ENODATA:
		errf(err, errlen, "cachedir %s: 'superblock' is not a hotfs "
		     "superblock; use reset to empty the cachedir", dir);
		return -EEXIST;
	case -EBADMSG:
		errf(err, errlen, "cachedir %s: the superblock is damaged; "
		     "use reset to empty the cachedir", dir);
		return -EUCLEAN;
	case -EPROTONOSUPPORT:
		errf(err, errlen, "cachedir %s: unsupported store format "
		     "version; use reset to empty the cachedir", dir);
		return rc;
	default:
		errf(err, errlen, "cachedir %s: cannot read the superblock: "
		     "%s", dir, strerror(-rc));
		return rc;
	}
	if (sb->ident_len != p->ident_len ||
	    memcmp(sb->ident, p->ident, p->ident_len)) {
		errf(err, errlen, "cachedir %s caches another source; use "
		     "reset to empty it for this one", dir);
		return -EEXIST;
	}
	if (sb->extent != p->extent || (p->region && p->region != sb->rsize)) {
		hotfs_log(LOG_NOTICE, "store: %s: extent or region size "
			  "changed, emptying the cache\n", dir);
		return 1;
	}
	return 0;
}

static int set_params(struct hotfs_store *st,
		      const struct hotfs_store_params *p)
{
	st->commit_ns = (uint64_t)(p->commit_ms ? p->commit_ms :
				   ST_DEFAULT_COMMIT_MS) * 1000000ull;
	st->commit_bytes = p->commit_bytes ? p->commit_bytes :
		ST_DEFAULT_COMMIT_BYTES;
	if (!p->brun && !p->bcull && !p->bstop) {
		st->brun = 10;
		st->bcull = 7;
		st->bstop = 3;
	} else {
		st->brun = p->brun;
		st->bcull = p->bcull;
		st->bstop = p->bstop;
	}
	if (st->bstop > st->bcull || st->bcull > st->brun || st->brun >= 100)
		return -EINVAL;
	st->keep = p->keep;
	st->keep_arg = p->keep_arg;
	return 0;
}

int st_open(const char *cachedir, const struct hotfs_store_params *p,
	    struct hotfs_store **out, char *err, size_t errlen)
{
	struct hotfs_store *st;
	struct st_sb sb;
	struct stat sbuf;
	uint32_t rsize;
	uint64_t cap;
	int rc, fresh;

	*out = NULL;
	if (!p->ident || !p->ident_len || p->ident_len > ST_IDENT_MAX) {
		errf(err, errlen, "store: source identity must be 1..%u bytes",
		     ST_IDENT_MAX);
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->dirfd = st->lockfd = st->datafd = -1;
	st->open = ST_NIL;
	pthread_mutex_init(&st->lock, NULL);
	pthread_mutex_init(&st->state_lock, NULL);
	pthread_rwlock_init(&st->idx_lock, NULL);
	rc = set_params(st, p);
	if (rc) {
		errf(err, errlen, "store: watermarks need bstop <= bcull <= "
		     "brun < 100");
		goto fail;
	}

	st->dirfd = open(cachedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dirfd < 0) {
		rc = -errno;
		errf(err, errlen, "cannot open cachedir %s: %s", cachedir,
		     strerror(errno));
		goto fail;
	}
	st->lockfd = openat(st->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC |
			    O_NOFOLLOW, 0600);
	if (st->lockfd < 0 || flock(st->lockfd, LOCK_EX | LOCK_NB)) {
		rc = -errno;
		if (rc == -EWOULDBLOCK) {
			rc = -EBUSY;
			errf(err, errlen, "cachedir %s is in use by another "
			     "hotfs", cachedir);
		} else {
			errf(err, errlen, "cannot lock cachedir %s: %s",
			     cachedir, strerror(-rc));
		}
		goto fail;
	}
	/*
	 * And the directory itself: cachedir/lock removed while a store is
	 * open must not let a second one in.  A filesystem that cannot lock
	 * a directory (NFS maps flock to POSIX locks, which a read-only
	 * descriptor cannot take) is left with the lock file alone.
	 */
	if (flock(st->dirfd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
		rc = -EBUSY;
		errf(err, errlen, "cachedir %s is in use by another hotfs",
		     cachedir);
		goto fail;
	}

	rc = read_sb(st, &sb);
	fresh = p->reset ? 1 : sb_match(cachedir, &sb, rc, p, err, errlen);
	if (fresh < 0) {
		rc = fresh;
		goto fail;
	}
	if (fresh && !p->reset && rc == -ENOENT &&
	    !fstatat(st->dirfd, "data", &sbuf, AT_SYMLINK_NOFOLLOW) &&
	    sbuf.st_size) {
		errf(err, errlen, "cachedir %s has a 'data' file but no "
		     "superblock; use reset to empty it", cachedir);
		rc = -EEXIST;
		goto fail;
	}
	if (!fresh && p->forget) {
		hotfs_log(LOG_NOTICE, "store: %s: emptied, the source's "
			  "inode numbers are not kept across mounts\n",
			  cachedir);
		fresh = 2;		/* empty, of the recorded geometry */
	}
	rsize = fresh == 1 ? (p->region ? p->region : ST_REGION_DEFAULT) :
		sb.rsize;
	cap = p->capacity ? p->capacity : (fresh == 1 ? 0 : sb.capacity);
	if (!cap) {
		struct statvfs vfs;

		/* the default: 90% of the free space at creation */
		if (!fstatvfs(st->dirfd, &vfs))
			cap = (uint64_t)vfs.f_bavail * vfs.f_frsize / 10 * 9;
	}
	if (st_geom_ok(p->extent, rsize)) {
		errf(err, errlen, "store: bad extent (%u) or region (%u) size",
		     p->extent, rsize);
		rc = -EINVAL;
		goto fail;
	}
	if (cap < 2ull * rsize) {
		errf(err, errlen, "store: cache size %llu is less than two "
		     "regions (%u bytes each)", (unsigned long long)cap,
		     rsize);
		rc = -EINVAL;
		goto fail;
	}
	if (fresh)
		sb_init(&sb, p, cap, rsize);
	sb.capacity = cap;
	st->capacity = cap;
	st->g.epoch = sb.epoch;
	st->g.rsize = rsize;
	st->g.extent = p->extent;
	st->nregions = cap / rsize > UINT32_MAX - 1 ? UINT32_MAX - 1 :
		cap / rsize;
	st->next_seq = sb.seq_floor;

	st->datafd = openat(st->dirfd, "data", O_RDWR | O_CREAT | O_CLOEXEC |
			    O_NOFOLLOW | (fresh ? O_TRUNC : 0), 0600);
	if (st->datafd < 0 || fstat(st->datafd, &sbuf)) {
		rc = -errno;
		errf(err, errlen, "cachedir %s: cannot open data: %s",
		     cachedir, strerror(-rc));
		goto fail;
	}
	if ((uint64_t)sbuf.st_size > (uint64_t)st->nregions * rsize &&
	    ftruncate(st->datafd, (uint64_t)st->nregions * rsize)) {
		rc = -errno;
		errf(err, errlen, "cachedir %s: cannot shrink data: %s",
		     cachedir, strerror(-rc));
		goto fail;
	}
	st->regions = calloc(st->nregions, sizeof(*st->regions));
	st->sum_max = rsize / ST_ALIGN_SMALL;
	st->sum = malloc((size_t)st->sum_max * sizeof(*st->sum));
	st->tab = malloc(p->extent / ST_BLOCK * 8 + 2 * ST_BLOCK);
	/*
	 * Presize the index's tables for 64 KiB a record: growing them is
	 * incremental, but costs each insert a little meanwhile; this
	 * costs 0.01% of the capacity in RAM up front.
	 */
	rc = idx_init(st, cap / ST_ALIGN_SMALL + 1024, cap / 65536);
	if (!st->regions || !st->sum || !st->tab || rc) {
		rc = -ENOMEM;
		errf(err, errlen, "store: out of memory");
		goto fail;
	}
	if (!fresh) {
		rc = st_recover(st);
		if (rc) {
			errf(err, errlen, "cachedir %s: recovery failed: %s",
			     cachedir, strerror(-rc));
			goto fail;
		}
	}
	sb.seq_floor = st->next_seq + (1ull << 32);
	rc = write_sb(st, &sb);
	if (rc) {
		errf(err, errlen, "cachedir %s: cannot write the superblock: "
		     "%s", cachedir, strerror(-rc));
		goto fail;
	}
	st->last_commit_ns = st_now_ns();
	*out = st;
	return 0;

fail:
	st_free(st);
	return rc;
}

/* Move queued tombstones into the summary.  Under st->lock. */
static void drain_tombstones(struct hotfs_store *st)
{
	struct st_sument q[ST_TQ_MAX];
	uint32_t n, i;

	pthread_mutex_lock(&st->state_lock);
	n = st->ntq;
	memcpy(q, st->tq, n * sizeof(q[0]));
	__atomic_store_n(&st->ntq, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&st->state_lock);
	for (i = 0; i < n; i++)
		__st_tombstone(st, q[i].dev, q[i].ino, q[i].extno, q[i].len);
}

int st_close(struct hotfs_store *st)
{
	int err;

	if (!st)
		return 0;
	pthread_mutex_lock(&st->lock);
	drain_tombstones(st);
	err = __st_commit(st, false);
	pthread_mutex_unlock(&st->lock);
	st_free(st);
	return err;
}

int st_insert(struct hotfs_store *st, const struct hotfs_key *key,
	      uint32_t extno, const struct hotfs_stamp *stamp,
	      const void *buf, size_t len)
{
	int err;

	if (!len || len > st->g.extent || stamp->ino != key->ino)
		return -EINVAL;
	if (key->dev > UINT32_MAX)
		return -EOVERFLOW;
	pthread_mutex_lock(&st->lock);
	if (__atomic_load_n(&st->ntq, __ATOMIC_RELAXED))
		drain_tombstones(st);
	err = __st_append(st, key->dev, key->ino, extno, stamp->size,
			  stamp->mtime_ns, stamp->ctime_ns, buf, len);
	pthread_mutex_unlock(&st->lock);
	return err;
}

int st_invalidate(struct hotfs_store *st, const struct hotfs_key *key,
		  uint32_t first, uint32_t count,
		  enum hotfs_inval_reason why)
{
	uint32_t n;

	if ((unsigned)why >= ST_INVAL_NR)
		return -EINVAL;
	if (key->dev > UINT32_MAX)
		return 0;
	/* cheap when nothing of the file is cached: callers may always call */
	pthread_rwlock_rdlock(&st->idx_lock);
	st_rk_note(st, key->dev, key->ino);
	n = idx_file_first(st, key->dev, key->ino) != ST_NIL;
	pthread_rwlock_unlock(&st->idx_lock);
	if (!n)
		return 0;
	pthread_rwlock_wrlock(&st->idx_lock);
	/* again: an eviction may have taken its extents out meanwhile */
	st_rk_note(st, key->dev, key->ino);
	n = idx_drop_file(st, key->dev, key->ino, first, count, false, 0);
	pthread_rwlock_unlock(&st->idx_lock);
	if (!n)
		return 0;
	CNT_ADD(st, inval[why], n);
	st_tombstone_nowait(st, key->dev, key->ino, first, count);
	return n;
}

/*
 * Persist a tombstone without waiting for the store mutex: append it if
 * the mutex is free, else queue it for the next insert, commit or tick.
 */
void st_tombstone_nowait(struct hotfs_store *st, uint64_t dev, uint64_t ino,
			 uint32_t first, uint32_t count)
{
	if (!pthread_mutex_trylock(&st->lock)) {
		__st_tombstone(st, dev, ino, first, count);
		pthread_mutex_unlock(&st->lock);
		return;
	}
	pthread_mutex_lock(&st->state_lock);
	if (st->ntq < ST_TQ_MAX) {
		struct st_sument *q = &st->tq[st->ntq];

		memset(q, 0, sizeof(*q));
		q->dev = dev;
		q->ino = ino;
		q->extno = first;
		q->len = count;
		q->flags = ST_SE_TOMB;
		__atomic_store_n(&st->ntq, st->ntq + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&st->state_lock);
}

int st_commit(struct hotfs_store *st)
{
	int err;

	pthread_mutex_lock(&st->lock);
	drain_tombstones(st);
	err = __st_commit(st, false);
	pthread_mutex_unlock(&st->lock);
	return err;
}

int st_tick(struct hotfs_store *st)
{
	int err = 0;

	pthread_mutex_lock(&st->lock);
	drain_tombstones(st);
	if ((st->dirty || st->nsum_disk < st->nsum) &&
	    st_now_ns() - st->last_commit_ns >= st->commit_ns)
		err = __st_commit(st, false);
	if (!err)
		err = __st_watermarks(st);
	pthread_mutex_unlock(&st->lock);
	return err < 0 ? err : 0;
}

void st_get_stats(struct hotfs_store *st, struct hotfs_store_stats *s)
{
	int i;

	/* no store mutex: stats must not wait behind an fdatasync */
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&st->state_lock);
	s->state = atomic_load(&st->state);
	memcpy(s->reason, st->reason, sizeof(s->reason));
	pthread_mutex_unlock(&st->state_lock);
	pthread_rwlock_rdlock(&st->idx_lock);
	s->extents = st->nent;
	s->bytes = st->nbytes;
	s->entries_max = st->ent_max;
	s->index_bytes = idx_ram(st);
	pthread_rwlock_unlock(&st->idx_lock);
	s->capacity = st->capacity;
	s->regions = st->nregions;
	s->regions_used = atomic_load(&st->nused);
	s->bytes_written = CNT_GET(st, bytes_written);
	s->bytes_inserted = CNT_GET(st, bytes_inserted);
	s->inserts = CNT_GET(st, inserts);
	s->evictions = CNT_GET(st, evictions);
	s->evicted_extents = CNT_GET(st, evicted_extents);
	s->reinserted = CNT_GET(st, reinserted);
	s->culls = CNT_GET(st, culls);
	for (i = 0; i < ST_INVAL_NR; i++)
		s->invalidations[i] = CNT_GET(st, inval[i]);
	s->stale_reads = CNT_GET(st, stale_reads);
	s->commits = CNT_GET(st, commits);
	s->regions_dropped = CNT_GET(st, regions_dropped);
	s->extents_recovered = CNT_GET(st, extents_recovered);
}

/*
 * Size helper for cachesize=N% and the default: pct percent of the
 * filesystem holding dir, or of its free space (of_free).
 */
int st_size_from_fs(const char *dir, unsigned pct, bool of_free,
		    uint64_t *bytes)
{
	struct statvfs vfs;
	uint64_t base;

	if (!pct || pct > 100)
		return -EINVAL;
	if (statvfs(dir, &vfs))
		return -errno;
	base = (uint64_t)(of_free ? vfs.f_bavail : vfs.f_blocks) *
		vfs.f_frsize;
	*bytes = base / 100 * pct;
	return 0;
}
