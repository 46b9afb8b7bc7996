// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store: opening (lock, superblock, identity, recovery), closing,
 * the mutating entry points (insert, invalidate, commit, tick) and
 * statistics.  The format and its reasons are in src/store/store_i.h; reads are
 * in src/store/store_read.c, regions in src/store/store_region.c, recovery in
 * src/store/store_recover.c, and the helpers all of them share (clock, hashes,
 * I/O loops, the state) in src/store/store_util.c.
 *
 * Opening a cachedir:
 *	- the cachedir is made 0700 and every file the store opens or
 *	  creates 0600, owned by the daemon's user, whatever they were
 *	  (a cachedir once 0755 with a 0644 data file gave other users
 *	  the bytes of files they may not read); where that is impossible
 *	  the open fails;
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
 * While open, st_tick looks at the cachedir's path and data file about
 * once a second: deleted or replaced by others (their device and inode
 * changed), the store turns off, with the reason.
 * The superblock is rewritten at every open (tmp + fsync + rename) to
 * advance seq_floor, so region generations never repeat, even after a
 * crash lost the newest region.
 *
 * Invalidation must not wait behind an insert's I/O or a commit's
 * fdatasync (the write path calls it before acknowledging a write): it
 * drops the index entries under idx_lock alone, and queues the tombstone
 * under state_lock if the store mutex is busy (st_tombstone_nowait, in
 * src/store/store_region.c); the queue is drained into the summary at the next
 * insert, commit or tick.  A tombstone that is lost (queue full, store
 * read-only, crash before the commit) only matters if the source's ctime
 * did not change, since the stamp check catches the rest.
 *
 * Locks (their order is in src/store/store_i.h): st->lock in the entry points
 * that write (close, insert, commit, tick); idx_lock alone in
 * st_invalidate; state_lock, then idx_lock shared, in st_get_stats.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "hotfs/fileio.h"
#include "hotfs/log.h"
#include "hotfs/mountinfo.h"
#include "store_i.h"

#define ST_DEFAULT_COMMIT_MS	1000u
#define ST_DEFAULT_COMMIT_BYTES	(4ull << 20)

const char *st_advice(int err)
{
	switch (err) {
	case -EROFS:
		return "remount the cachedir's filesystem read-write";
	case -EACCES:
	case -EPERM:
		return "fix the cachedir's permissions (or attributes)";
	case -ENOSPC:
	case -EDQUOT:
		return "free space on the cachedir's filesystem";
	case -EIO:
	case -ENXIO:
	case -ENODEV:
		return "check the cache device (and fsck its filesystem)";
	case -EBUSY:
		return "stop the other hotfs, or give another cachedir=";
	case -ENOTDIR:
		return "give cachedir= a directory";
	}
	return NULL;
}

/*
 * The cachedir or its data file deleted, or replaced by another, while
 * the store is open: what it writes would be lost (or fill a file no
 * one sees), so it turns off.  Checked about once a second (st_tick).
 */
static void check_identity(struct hotfs_store *st)
{
	char reason[sizeof(st->reason)];
	const char *what = NULL;
	struct statvfs vfs;
	struct stat sb;

	if (atomic_load(&st->state) == ST_OFF)
		return;
	if (stat(st->path, &sb) == -1) {
		if (errno == ENOENT || errno == ENOTDIR)
			what = "was deleted";
	} else if (sb.st_dev != st->dir_st.st_dev ||
		   sb.st_ino != st->dir_st.st_ino) {
		what = "was replaced by another directory";
	} else if (fstatat(st->dirfd, "data", &sb, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			what = "lost its data file";
	} else if (sb.st_dev != st->data_st.st_dev ||
		   sb.st_ino != st->data_st.st_ino) {
		what = "had its data file replaced";
	} else if ((!fstatvfs(st->dirfd, &vfs) && (vfs.f_flag & ST_RDONLY)) ||
		   mountinfo_self_dev_ro(major(st->dir_st.st_dev),
					 minor(st->dir_st.st_dev)) == 1) {
		/* remounted read-only (errors=remount-ro after an error on
		 * it): nothing it writes would stay */
		snprintf(reason, sizeof(reason), "cachedir %s: its "
			 "filesystem went read-only while mounted (an error "
			 "on it? see the kernel's log)", st->path);
		st_set_state_reason(st, ST_OFF, -EROFS, reason);
		return;
	}
	if (!what)
		return;
	snprintf(reason, sizeof(reason), "cachedir %s %s while mounted; "
		 "remount (with reset if it is to start empty)", st->path,
		 what);
	st_set_state_reason(st, ST_OFF, -ESTALE, reason);
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
	n = pread_full(fd, buf, sizeof(buf), 0);
	err = n < 0 ? (int)n : st_sb_decode(buf, n, sb);
	close(fd);
	return err;
}

static int write_sb(struct hotfs_store *st, struct st_sb *sb)
{
	int err;

	sb->csum = XXH3_64bits(sb, offsetof(struct st_sb, csum));
	err = file_replace_at(st->dirfd, "superblock", sb, sizeof(*sb));
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
	free(st->path);
	idx_exit(st);
	free(st->regions);
	free(st->sum);
	free(st->nv);
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
		errf(err, errlen, "cachedir %s: cannot read 'superblock': "
		     "%s", dir, rc == -ELOOP ? file_private_why(rc) :
		     strerror(-rc));
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

/*
 * Take the cachedir (dirfd, opened by dir_open_owned: the daemon's user
 * owns it), make it private and lock it: the lock file, and the
 * directory itself.  0 or -errno, with err said.
 */
static int lock_cachedir(struct hotfs_store *st, int dirfd,
			 const char *cachedir, char *err, size_t errlen)
{
	char why[160];
	int rc;

	st->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	st->path = strdup(cachedir);
	if (st->dirfd < 0 || !st->path || fstat(st->dirfd, &st->dir_st)) {
		rc = st->path ? -errno : -ENOMEM;
		errf(err, errlen, "cachedir %s: %s", cachedir, strerror(-rc));
		return rc;
	}
	rc = file_make_private(st->dirfd, 0700);
	if (rc) {
		errf(err, errlen, "cannot make cachedir %s private (mode "
		     "0700): %s", cachedir, file_private_why(rc));
		return rc;
	}
	st->lockfd = file_open_private(st->dirfd, "lock", O_RDWR | O_CREAT,
				       why, sizeof(why));
	if (st->lockfd < 0) {
		rc = st->lockfd;
		st->lockfd = -1;
		errf(err, errlen, "cachedir %s: cannot use 'lock': %s",
		     cachedir, why);
		return rc;
	}
	if (flock(st->lockfd, LOCK_EX | LOCK_NB)) {
		rc = -errno;
		if (rc == -EWOULDBLOCK) {
			rc = -EBUSY;
			errf(err, errlen, "cachedir %s is in use by another "
			     "hotfs", cachedir);
		} else {
			errf(err, errlen, "cannot lock cachedir %s: %s",
			     cachedir, strerror(-rc));
		}
		return rc;
	}
	/*
	 * And the directory itself: cachedir/lock removed while a store is
	 * open must not let a second one in.  A filesystem that cannot lock
	 * a directory (NFS maps flock to POSIX locks, which a read-only
	 * descriptor cannot take) is left with the lock file alone.
	 */
	if (flock(st->dirfd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
		errf(err, errlen, "cachedir %s is in use by another hotfs",
		     cachedir);
		return -EBUSY;
	}
	return 0;
}

/*
 * A fresh store's region size: ST_REGION_DEFAULT, unless the capacity is
 * not a multiple of it and holds fewer than 64 of them; then one region
 * more, each a whole number of extent records and their summary blocks,
 * so that the capacity's last part is not lost (102 MiB in 16 MiB
 * regions would be 96: 6% fewer records, for the small caches where each
 * counts).  16 MiB itself is 63 extent records of 256 KiB and a summary
 * block, or 4,032 blocks and their 64.
 */
static uint32_t fresh_region(uint64_t cap, uint32_t extent)
{
	uint64_t n = cap / ST_REGION_DEFAULT, k, rs, rec;

	if (n < 2 || n >= 64 || !(cap % ST_REGION_DEFAULT) ||
	    st_geom_ok(extent, ST_REGION_DEFAULT))
		return ST_REGION_DEFAULT;
	rec = st_reclen(extent);
	k = cap / (n + 1) / rec;
	for (; k >= 2; k--) {
		/* whole blocks (records of small extents are 512-aligned) */
		rs = st_roundup(k * rec, ST_BLOCK) +
		     (k + ST_EPB - 1) / ST_EPB * ST_BLOCK;
		if (rs <= cap / (n + 1))
			break;
	}
	if (k < 2 || st_geom_ok(extent, (uint32_t)rs))
		return ST_REGION_DEFAULT;
	return (uint32_t)rs;
}

/*
 * Read the superblock and settle the store's geometry and capacity, in
 * st and in sb (a new one if the store starts afresh).  Returns 1 to
 * start afresh, 0 to recover what the cachedir holds, or -errno with err
 * said.
 */
static int choose_geometry(struct hotfs_store *st, const char *cachedir,
			   const struct hotfs_store_params *p,
			   struct st_sb *sb, char *err, size_t errlen)
{
	struct stat sbuf;
	uint32_t rsize;
	uint64_t cap;
	int rc, fresh;

	rc = read_sb(st, sb);
	fresh = p->reset ? 1 : sb_match(cachedir, sb, rc, p, err, errlen);
	if (fresh < 0)
		return fresh;
	if (fresh && !p->reset && rc == -ENOENT &&
	    !fstatat(st->dirfd, "data", &sbuf, AT_SYMLINK_NOFOLLOW) &&
	    sbuf.st_size) {
		errf(err, errlen, "cachedir %s has a 'data' file but no "
		     "superblock; use reset to empty it", cachedir);
		return -EEXIST;
	}
	if (!fresh && p->forget) {
		hotfs_log(LOG_NOTICE, "store: %s: emptied, the source's "
			  "inode numbers are not kept across mounts\n",
			  cachedir);
		fresh = 2;		/* empty, of the recorded geometry */
	}
	cap = p->capacity ? p->capacity : (fresh == 1 ? 0 : sb->capacity);
	if (!cap) {
		struct statvfs vfs;

		/* the default: 90% of the free space at creation */
		if (!fstatvfs(st->dirfd, &vfs))
			cap = (uint64_t)vfs.f_bavail * vfs.f_frsize / 10 * 9;
	}
	if (cap > ST_DATA_MAX) {
		hotfs_log(LOG_NOTICE, "store: %s: a store holds at most %llu "
			  "bytes; using that much\n", cachedir,
			  (unsigned long long)ST_DATA_MAX);
		cap = ST_DATA_MAX;
	}
	rsize = fresh != 1 ? sb->rsize :
		p->region ? p->region : fresh_region(cap, p->extent);
	if (st_geom_ok(p->extent, rsize)) {
		errf(err, errlen, "store: bad extent (%u) or region (%u) size",
		     p->extent, rsize);
		return -EINVAL;
	}
	if (cap < 2ull * rsize) {
		errf(err, errlen, "store: cache size %llu is less than two "
		     "regions (%u bytes each); give a larger cachesize= or "
		     "free space on the cachedir's filesystem",
		     (unsigned long long)cap, rsize);
		return -EINVAL;
	}
	if (fresh)
		sb_init(sb, p, cap, rsize);
	sb->capacity = cap;
	st->capacity = cap;
	st->g.epoch = sb->epoch;
	st->g.rsize = rsize;
	st->g.extent = p->extent;
	st->nregions = cap / rsize > UINT32_MAX - 1 ? UINT32_MAX - 1 :
		cap / rsize;
	st->next_seq = sb->seq_floor;
	return fresh;
}

/*
 * Open the data file (emptied if fresh), make it private and no longer
 * than the capacity's regions.  0 or -errno, with err said.
 */
static int open_data(struct hotfs_store *st, const char *cachedir,
		     bool fresh, char *err, size_t errlen)
{
	uint64_t max = (uint64_t)st->nregions * st->g.rsize;
	struct stat sbuf;
	char why[160];
	int rc;

	st->datafd = file_open_private(st->dirfd, "data", O_RDWR | O_CREAT |
				       (fresh ? O_TRUNC : 0), why,
				       sizeof(why));
	if (st->datafd < 0) {
		rc = st->datafd;
		st->datafd = -1;
		errf(err, errlen, "cachedir %s: cannot use 'data': %s",
		     cachedir, why);
		return rc;
	}
	if (fstat(st->datafd, &sbuf)) {
		rc = -errno;
		errf(err, errlen, "cachedir %s: data: %s", cachedir,
		     strerror(-rc));
		return rc;
	}
	st->data_st = sbuf;
	if ((uint64_t)sbuf.st_size > max && ftruncate(st->datafd, max)) {
		rc = -errno;
		errf(err, errlen, "cachedir %s: cannot shrink data: %s",
		     cachedir, strerror(-rc));
		return rc;
	}
	return 0;
}

/* The regions, the open region's summary and record tail, the index. */
static int alloc_tables(struct hotfs_store *st)
{
	int rc;

	st->regions = calloc(st->nregions, sizeof(*st->regions));
	st->sum_max = st->g.rsize / ST_ALIGN_SMALL;
	st->sum = malloc((size_t)st->sum_max * sizeof(*st->sum));
	st->tab = malloc(st->g.extent / ST_BLOCK * 8 + 2 * ST_BLOCK);
	/*
	 * Presize the file table's hash for a file a MiB: growing it is
	 * incremental, but costs each insert a little meanwhile; this costs
	 * 0.0004% of the capacity in RAM up front.  At most one record (and
	 * so one file) per 512 bytes of capacity.
	 */
	st->rec_max = st->capacity / ST_ALIGN_SMALL;
	rc = idx_init(st, st->rec_max + 1024, st->capacity >> 20);
	if (!st->regions || !st->sum || !st->tab || rc)
		return -ENOMEM;
	return 0;
}

int st_open(const char *cachedir, const struct hotfs_store_params *p,
	    struct hotfs_store **out, char *err, size_t errlen)
{
	char why[PATH_MAX + 160];
	int dirfd, rc;

	*out = NULL;
	dirfd = dir_open_owned(cachedir, 0, why, sizeof(why));
	if (dirfd < 0) {
		errf(err, errlen, "cannot open cachedir %s: %s", cachedir,
		     why);
		return dirfd;
	}
	rc = st_open_at(dirfd, cachedir, p, out, err, errlen);
	close(dirfd);
	return rc;
}

int st_open_at(int dirfd, const char *cachedir,
	       const struct hotfs_store_params *p, struct hotfs_store **out,
	       char *err, size_t errlen)
{
	struct hotfs_store *st;
	struct st_sb sb;
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
	rc = lock_cachedir(st, dirfd, cachedir, err, errlen);
	if (rc)
		goto fail;
	fresh = choose_geometry(st, cachedir, p, &sb, err, errlen);
	if (fresh < 0) {
		rc = fresh;
		goto fail;
	}
	rc = open_data(st, cachedir, fresh, err, errlen);
	if (rc)
		goto fail;
	rc = alloc_tables(st);
	if (rc) {
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
	atomic_store(&st->full, atomic_load(&st->nused) >= st->nregions);
	sb.seq_floor = st->next_seq + (1ull << 32);
	rc = write_sb(st, &sb);
	if (rc) {
		errf(err, errlen, "cachedir %s: cannot write the superblock: "
		     "%s", cachedir, strerror(-rc));
		goto fail;
	}
	st->last_commit_ns = st_now_ns();
	st->state_since = time(NULL);
	/*
	 * A store that holds no region and has no room for one could never
	 * cache anything: read-only (so said, not "ok") until the free
	 * space is back (__st_watermarks, at each tick).  Not logged here:
	 * the caller tells the user, once.
	 */
	if (!__st_has_room(st))
		st_no_room(st, false);
	*out = st;
	return 0;

fail:
	st_free(st);
	return rc;
}

int st_close(struct hotfs_store *st)
{
	int err;

	if (!st)
		return 0;
	pthread_mutex_lock(&st->lock);
	__st_drain_tombstones(st);
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

	if (!len || len > st_rec_max(extno, st->g.extent) ||
	    stamp->ino != key->ino)
		return -EINVAL;
	if (key->dev > UINT32_MAX)
		return -EOVERFLOW;
	pthread_mutex_lock(&st->lock);
	if (__atomic_load_n(&st->ntq, __ATOMIC_RELAXED))
		__st_drain_tombstones(st);
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
	n = idx_file_stamp(st, key->dev, key->ino, NULL);
	pthread_rwlock_unlock(&st->idx_lock);
	if (!n)
		return 0;
	pthread_rwlock_wrlock(&st->idx_lock);
	/* again: an eviction may have taken its extents out meanwhile */
	st_rk_note(st, key->dev, key->ino);
	n = idx_drop_file(st, key->dev, key->ino, first, count);
	pthread_rwlock_unlock(&st->idx_lock);
	if (!n)
		return 0;
	CNT_ADD(st, inval[why], n);
	st_tombstone_nowait(st, key->dev, key->ino, first, count);
	return n;
}

int st_commit(struct hotfs_store *st)
{
	int err;

	pthread_mutex_lock(&st->lock);
	__st_drain_tombstones(st);
	err = __st_commit(st, false);
	pthread_mutex_unlock(&st->lock);
	return err;
}

int st_tick(struct hotfs_store *st)
{
	int err = 0;

	pthread_mutex_lock(&st->lock);
	__st_drain_tombstones(st);
	if ((st->dirty || st->nsum_disk < st->nsum) &&
	    st_now_ns() - st->last_commit_ns >= st->commit_ns)
		err = __st_commit(st, false);
	if (!err)
		err = __st_watermarks(st);
	if (st_now_ns() - st->checked_ns >= 1000000000ull) {
		st->checked_ns = st_now_ns();
		check_identity(st);
	}
	pthread_mutex_unlock(&st->lock);
	return err < 0 ? err : 0;
}

uint64_t st_bytes_written(struct hotfs_store *st)
{
	return CNT_GET(st, bytes_written);
}

void st_get_stats(struct hotfs_store *st, struct hotfs_store_stats *s)
{
	int i;

	/* no store mutex: stats must not wait behind an fdatasync */
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&st->state_lock);
	s->state = atomic_load(&st->state);
	snprintf(s->reason, sizeof(s->reason), "%s", st->reason);
	s->state_since = st->state_since;
	pthread_mutex_unlock(&st->state_lock);
	pthread_rwlock_rdlock(&st->idx_lock);
	s->extents = idx_records(st);
	s->bytes = st->nbytes;
	s->entries_max = st->rec_max;
	s->index_bytes = idx_ram(st);
	pthread_rwlock_unlock(&st->idx_lock);
	s->capacity = st->capacity;
	s->regions = st->nregions;
	s->regions_used = atomic_load(&st->nused);
	s->regions_allowed = st_regions_allowed(st);
	s->filling = st_filling(st);
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
	s->uncommitted = atomic_load_explicit(&st->uncommitted,
					      memory_order_relaxed);
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

uint64_t st_room(struct hotfs_store *st)
{
	uint32_t used = atomic_load_explicit(&st->nused, memory_order_relaxed);
	uint32_t allowed = st_regions_allowed(st);	/* less the reserve */

	return used < allowed ? (uint64_t)(allowed - used) * st->g.rsize : 0;
}

bool st_holds(struct hotfs_store *st, const struct hotfs_key *key,
	      uint32_t extno)
{
	struct st_rec r;
	bool held;

	if (atomic_load_explicit(&st->state, memory_order_relaxed) == ST_OFF ||
	    key->dev > UINT32_MAX)
		return false;
	pthread_rwlock_rdlock(&st->idx_lock);
	held = idx_get(st, key->dev, key->ino, extno, &r) == 0;
	pthread_rwlock_unlock(&st->idx_lock);
	return held;
}
