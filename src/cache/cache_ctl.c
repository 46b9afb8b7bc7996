// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfsctl's requests on the cache (see include/hotfs/cache_ctl.h):
 * warm, evict, info and pin of one file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/cache_ctl.h"
#include "hotfs/filecopy.h"
#include "hotfs/cache_insert.h"
#include "hotfs/ctl.h"
#include "hotfs/fileio.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"

/* Open the source file for reading, and its stamp. */
static int open_source(struct hotfs_cache *c, struct hotfs_inode *in,
		       struct hotfs_stamp *stamp)
{
	struct stat st;
	int fd, r;

	fd = ino_fd(c->it, in);
	if (fd < 0)
		return fd;
	fd = reopen_fd(c->proc_self_fd, fd, O_RDONLY | O_NOATIME);
	ino_fd_put(in);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		r = S_ISREG(st.st_mode) ? -errno : -EINVAL;
		close(fd);
		return r;
	}
	cache_stamp(&st, stamp);
	return fd;
}

static void fill_info(struct hotfs_cache *c, const struct hotfs_key *k,
		      const struct hotfs_stamp *stamp, struct hotfs_ioc *io)
{
	uint32_t e0, e1;

	io->size = stamp->size;
	io->extent = c->extent;
	ctl_ioc_extents(io, stamp->size, c->ext_shift, &e0, &e1);
	/* the blocks of a random reader count as records too */
	st_file_cached(c->st, k, stamp, e0, e1, &io->bytes, &io->extents);
	io->flags = pins_has(c->pins, k) ? HOTFS_IOC_F_PINNED : 0;
	if (c->fc && fc_has(c->fc, k, stamp)) {
		/* the file grain holds it whole: the range's bytes */
		uint64_t end = io->len ? io->off + io->len : stamp->size;

		if (end > stamp->size || end < io->off)
			end = stamp->size;
		io->bytes = io->off < end ? end - io->off : 0;
		io->flags |= HOTFS_IOC_F_COPY;
	}
}

/* The file's key and current stamp, from the source. */
static int key_and_stamp(struct hotfs_cache *c, struct hotfs_inode *in,
			 struct hotfs_key *k, struct hotfs_stamp *stamp)
{
	int fd = open_source(c, in, stamp);

	if (fd < 0)
		return fd;
	close(fd);
	cache_key(c, in->dev, in->ino, k);
	return 0;
}

/* The file's key and stamp, and what of it is cached, in io. */
static int info(struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_key *k, struct hotfs_stamp *stamp,
		struct hotfs_ioc *io)
{
	int r = key_and_stamp(c, in, k, stamp);

	if (r < 0)
		return r;
	fill_info(c, k, stamp, io);
	return 0;
}

int cache_info(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io)
{
	struct hotfs_stamp stamp;
	struct hotfs_key k;

	return info(c, in, &k, &stamp, io);
}

int cache_warm(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_ioc *io)
{
	struct hotfs_stamp stamp, now;
	struct hotfs_loc loc;
	struct hotfs_key k;
	uint32_t e, e0, e1;
	uint64_t gen;
	char *buf;
	int fd, r = 0;

	fd = open_source(c, in, &stamp);
	if (fd < 0)
		return fd;
	buf = malloc(c->extent);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	cache_key(c, in->dev, in->ino, &k);
	ctl_ioc_extents(io, stamp.size, c->ext_shift, &e0, &e1);
	io->done = 0;
	/* changed within a clock tick: nothing to cache yet (srcprobe.h) */
	if (stamp_racy_now(stamp.mtime_ns, stamp.ctime_ns)) {
		stats_add(&c->stats, STAT_NP_RACY, 1);
		e1 = e0;
	}
	for (e = e0; e < e1 && !r; e++) {
		uint32_t len = cache_ext_len(c, e, stamp.size);
		ssize_t n;
		struct stat st;

		if (st_lookup(c->st, &k, e, &stamp, &loc) == 0)
			continue;
		pthread_mutex_lock(&in->m);
		gen = in->cw.write_gen;
		pthread_mutex_unlock(&in->m);
		n = pread_full(fd, buf, len, (off_t)e << c->ext_shift);
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (fstat(fd, &st) == -1) {
			r = -errno;
			break;
		}
		cache_stamp(&st, &now);
		if ((uint32_t)n != len || !cache_stamp_eq(&now, &stamp)) {
			r = -EAGAIN;	/* changed while warming: retry */
			break;
		}
		r = cache_insert(c->st, in, &k, e, &stamp, gen, buf, len);
		if (r == -ESTALE) {
			r = -EAGAIN;	/* written meanwhile: retry */
			break;
		}
		if (r < 0) {
			stats_add(&c->stats, STAT_NP_STORE, 1);
			break;
		}
		r = 0;
		io->done += len;
		stats_add(&c->stats, STAT_PROMOTIONS, 1);
		stats_add(&c->stats, STAT_PROMO_BYTES, len);
		stats_add(&c->stats, STAT_PROMO_SRC_READS, 1);
	}
	free(buf);
	close(fd);
	fill_info(c, &k, &stamp, io);
	return r;
}

int cache_evict(struct hotfs_cache *c, struct hotfs_inode *in,
		struct hotfs_ioc *io)
{
	struct hotfs_stamp stamp;
	struct hotfs_key k;
	int r = info(c, in, &k, &stamp, io);

	if (r < 0)
		return r;
	io->done = io->bytes;
	st_invalidate(c->st, &k, 0, 0, ST_INVAL_USER);
	if (c->fc)
		fc_drop(c->fc, &k);	/* its whole copy too */
	fill_info(c, &k, &stamp, io);
	return 0;
}

int cache_pin(struct hotfs_cache *c, struct hotfs_inode *in, bool on)
{
	struct hotfs_key k;

	cache_key(c, in->dev, in->ino, &k);
	return pins_set(c->pins, &k, on);
}
