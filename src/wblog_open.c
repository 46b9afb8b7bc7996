// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log's header and checksums, its open and its replay (see
 * include/hotfs/wblog.h for the design, src/wblog_i.h for the layout).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "hotfs/fileio.h"
#include "wblog_i.h"

uint64_t wl_rec_csum(const struct wl_rec *h, const void *data,
			 size_t len)
{
	struct wl_rec c = *h;

	c.csum = 0;
	/* the data's hash seeded with the header's */
	return XXH3_64bits_withSeed(len ? data : "", len,
				    XXH3_64bits(&c, sizeof(c))) | 1;
}

uint64_t wl_multi_csum(const struct wl_rec *h, const struct wl_mblk *l,
		       const void *data, size_t len)
{
	struct wl_rec c = *h;

	c.csum = 0;
	/* the data's hash seeded with the list's, seeded with the header's */
	return XXH3_64bits_withSeed(len ? data : "", len,
		XXH3_64bits_withSeed(l, h->nblk * sizeof(*l),
				     XXH3_64bits(&c, sizeof(c)))) | 1;
}

uint64_t wl_super_csum(const struct wl_super *s)
{
	struct wl_super c = *s;

	c.csum = 0;
	return XXH3_64bits(&c, sizeof(c)) | 1;
}

/* Write the header (the slot after the newer one) and sync the log. */
int wl_super_write(struct wblog *wl, uint64_t tail_pos,
		       uint64_t tail_seq)
{
	char blk[WB_BLOCK] = { 0 };
	struct wl_super s = { .version = WL_VERSION, .block = WB_BLOCK };
	ssize_t n;

	memcpy(s.magic, WL_MAGIC, 8);
	s.nblocks = wl->nblocks;
	s.gen = wl->gen + 1;
	s.tail_pos = tail_pos;
	s.tail_seq = tail_seq;
	s.epoch = wl->epoch;
	s.epoch_seq = wl->epoch_seq;
	s.csum = wl_super_csum(&s);
	memcpy(blk, &s, sizeof(s));
	n = pwrite_full(wl->fd, blk, WB_BLOCK, (off_t)(s.gen & 1) * WB_BLOCK);
	if (n < 0)
		return (int)n;
	if (fdatasync(wl->fd))
		return -errno;
	wl->gen = s.gen;
	return 0;
}

/*----------------------------------------------------------------*/
/* open and replay */

static void seterr(char *err, size_t len, const char *msg)
{
	if (err && len)
		snprintf(err, len, "%s", msg);
}

/* The newer good header slot into *s: 0, -EUCLEAN (none), or
 * -EPROTONOSUPPORT (a log of an earlier format, not read). */
static int super_read(int fd, struct wl_super *s)
{
	struct wl_super a[2];
	bool ok[2], old = false;
	int i;

	for (i = 0; i < 2; i++) {
		/* "HOTFSWL" and a format before this one's */
		old |= pread_full(fd, &a[i], sizeof(a[i]),
				  (off_t)i * WB_BLOCK) == sizeof(a[i]) &&
		       !memcmp(a[i].magic, WL_MAGIC, 7) &&
		       a[i].magic[7] >= '1' && a[i].magic[7] < WL_MAGIC[7];
		ok[i] = pread_full(fd, &a[i], sizeof(a[i]),
				   (off_t)i * WB_BLOCK) == sizeof(a[i]) &&
			!memcmp(a[i].magic, WL_MAGIC, 8) &&
			a[i].version >= WL_VERSION_MIN &&
			a[i].version <= WL_VERSION &&
			a[i].block == WB_BLOCK &&
			a[i].csum == wl_super_csum(&a[i]) &&
			a[i].nblocks >= WL_MIN_BLOCKS &&
			a[i].tail_pos <= a[i].nblocks;
	}
	if (!ok[0] && !ok[1])
		return old ? -EPROTONOSUPPORT : -EUCLEAN;
	i = !ok[0] || (ok[1] && a[1].gen > a[0].gen);
	*s = a[i];
	return 0;
}

/* A MULTI record's list: its blocks ascending, each with bytes. */
static bool list_ok(const struct wl_rec *h, const struct wl_mblk *l)
{
	uint32_t k;

	if (h->off || h->len || !h->nblk || h->nblk > WL_MULTI_MAX)
		return false;
	for (k = 0; k < h->nblk; k++)
		if (l[k].lo >= l[k].hi || l[k].hi > WB_BLOCK ||
		    l[k].blk > UINT64_MAX / WB_BLOCK - 1 ||
		    (k && l[k].blk <= l[k - 1].blk))
			return false;
	return true;
}

/* The record at pos if it is the one replay expects (seq, the epoch
 * rule, whole by its checksum): its header block in hb (a MULTI record's
 * list after the header), its data in *data (malloc'd). */
static bool rec_load(struct wblog *wl, const struct wl_super *s,
		     uint64_t pos, uint64_t seq, char *hb, char **data)
{
	struct wl_rec *h = (struct wl_rec *)hb;
	const struct wl_mblk *l = (const struct wl_mblk *)(h + 1);
	uint64_t csum;
	size_t dlen;

	*data = NULL;
	if (pread_full(wl->fd, hb, WB_BLOCK, blk_off(pos)) != WB_BLOCK ||
	    memcmp(h->magic, WR_MAGIC, 8) || h->seq != seq)
		return false;
	if (seq >= s->epoch_seq && h->epoch != s->epoch)
		return false;
	if (h->type == WR_PAD)
		return h->nblk == 0 && h->csum == wl_rec_csum(h, NULL, 0);
	if ((h->type != WR_DATA && h->type != WR_TRIM &&
	     h->type != WR_MULTI) ||
	    h->nblk > wl->nblocks - pos - 1 ||
	    h->nblk > WB_REC_MAX / WB_BLOCK)
		return false;
	if (h->type == WR_MULTI && !list_ok(h, l))
		return false;
	if (h->type == WR_DATA &&
	    (!h->len || h->off + h->len < h->off ||
	     h->nblk != (h->off + h->len - 1) / WB_BLOCK - h->off / WB_BLOCK
			+ 1))
		return false;
	if (h->type == WR_TRIM && h->nblk)
		return false;
	dlen = (size_t)h->nblk * WB_BLOCK;
	if (dlen) {
		*data = malloc(dlen);
		if (!*data || pread_full(wl->fd, *data, dlen,
					 blk_off(pos + 1)) != (ssize_t)dlen) {
			free(*data);
			*data = NULL;
			return false;
		}
	}
	csum = h->type == WR_MULTI ? wl_multi_csum(h, l, *data, dlen) :
	       wl_rec_csum(h, *data, dlen);
	if (h->csum != csum) {
		free(*data);
		*data = NULL;
		return false;
	}
	return true;
}

/* Read the records from the tail on into the map, up to the first one
 * that is not the next. */
static int replay(struct wblog *wl, const struct wl_super *s)
{
	uint64_t pos = s->tail_pos, seq = s->tail_seq, seen = 0;
	char hb[WB_BLOCK] __attribute__((aligned(8)));
	struct wl_rec h;
	char *data;
	int err = 0;

	wl->rq_seq = seq;
	wl->appended = seq - 1;
	while (!err && seen < wl->nblocks) {
		uint64_t start = pos == wl->nblocks ? 0 : pos;

		if (!rec_load(wl, s, start, seq, hb, &data))
			break;
		memcpy(&h, hb, sizeof(h));
		if (h.type == WR_PAD) {
			err = wl_rq_push(wl, start, wl->nblocks - start,
				      h.time_ns);
			seen += wl->nblocks - start;
			pos = 0;
		} else {
			err = wl_rq_push(wl, start, 1 + h.nblk, h.time_ns);
			if (!err && h.type == WR_DATA)
				err = wl_apply_data(wl, &h, start + 1);
			if (!err && h.type == WR_MULTI)
				err = wl_apply_multi(wl, &h,
					(const struct wl_mblk *)(hb + sizeof(h)),
					start + 1);
			if (!err && h.type == WR_TRIM) {
				struct wb_fid fid = { .dev = h.dev,
						      .ino = h.ino };
				struct wl_file *f = wl_file_find(wl, &fid);

				if (f) {
					wl_file_trim(wl, f, h.off);
					wl_file_put(wl, f);
				}
			}
			seen += 1 + h.nblk;
			pos = start + 1 + h.nblk;
		}
		free(data);
		wl->appended = seq++;
		if (!err && h.type != WR_PAD)
			wl->replayed++;
	}
	wl->used = seen;
	wl->head = pos;
	return err;
}

/* Write zeros over [from, size) and make them durable: the real errno
 * on failure (ENOSPC on a full filesystem). */
static int zero_fill(int fd, off_t from, off_t size)
{
	static const char z[1 << 20];
	off_t o;

	for (o = from; o < size; o += (off_t)sizeof(z)) {
		size_t n = size - o < (off_t)sizeof(z) ? (size_t)(size - o) :
			   sizeof(z);
		ssize_t w = pwrite_full(fd, z, n, o);

		if (w < 0)
			return (int)w;
	}
	return fdatasync(fd) ? -errno : 0;
}

/*
 * The log's file from old bytes to size: its blocks reserved, so that an
 * acknowledged write never finds the cachedir's filesystem full when it
 * reaches the log.  Blocks it gains are reserved first (a full
 * filesystem fails at once, having written nothing), then written with
 * zeros (the filesystem's blocks then hold data: an fdatasync of a record
 * is a data write, with no change of the file's extents to commit); the
 * area it had was written so when it was made, and a log shrinks only
 * when it is empty.  On failure the file is left at old bytes, its
 * blocks past them freed.  0 or -errno.
 */
static int area_size(int fd, off_t old, off_t size)
{
	off_t from = old > blk_off(0) ? old : blk_off(0);
	int rc;

	if (old == size) {
		rc = fallocate(fd, 0, 0, size) ? -errno : 0;
		return rc == -EOPNOTSUPP ? 0 : rc;
	}
	if (size < old)
		return ftruncate(fd, size) ? -errno : 0;
	rc = fallocate(fd, 0, from, size - from) ? -errno : 0;
	if (rc == -EOPNOTSUPP)
		rc = ftruncate(fd, size) ? -errno : 0;
	if (!rc)
		rc = zero_fill(fd, from, size);
	if (rc && ftruncate(fd, old) == 0)
		fdatasync(fd);
	return rc;
}

static int wl_init(struct wblog *wl, uint64_t nblocks)
{
	wl->nblocks = nblocks;
	wl->reserve = wl_reserve(nblocks);
	wl->fh_size = 64;
	wl->eh_size = 1024;
	wl->fh = calloc(wl->fh_size, sizeof(*wl->fh));
	wl->eh = calloc(wl->eh_size, sizeof(*wl->eh));
	if (!wl->fh || !wl->eh)
		return -ENOMEM;
	return 0;
}

static void map_free(struct wblog *wl)
{
	size_t i;

	for (i = 0; wl->eh && i < wl->eh_size; i++)
		while (wl->eh[i]) {
			struct wl_ent *e = wl->eh[i];

			wl->eh[i] = e->next;
			free(e);
		}
	for (i = 0; wl->fh && i < wl->fh_size; i++)
		while (wl->fh[i]) {
			struct wl_file *f = wl->fh[i];

			wl->fh[i] = f->next;
			free(f);
		}
	free(wl->eh);
	free(wl->fh);
	wl_rq_drop(wl, wl->rq_n);
	free(wl->rq);
}

static struct wblog *wl_new(void)
{
	struct wblog *wl = calloc(1, sizeof(*wl));

	if (!wl)
		return NULL;
	wl->fd = -1;
	pthread_mutex_init(&wl->m, NULL);
	pthread_cond_init(&wl->cv, NULL);
	return wl;
}

static void wl_free(struct wblog *wl)
{
	if (wl->fd >= 0)
		close(wl->fd);
	map_free(wl);
	pthread_cond_destroy(&wl->cv);
	pthread_mutex_destroy(&wl->m);
	free(wl);
}

int wblog_open(int dirfd, uint64_t capacity, struct wblog **out,
	       char *err, size_t errlen)
{
	uint64_t nblocks = capacity / WB_BLOCK;
	struct wblog *wl;
	struct wl_super s;
	struct stat sb;
	char why[160];
	int rc;

	*out = NULL;
	if (nblocks < WL_MIN_BLOCKS)
		nblocks = WL_MIN_BLOCKS;
	wl = wl_new();
	if (!wl)
		return -ENOMEM;
	wl->fd = file_open_private(dirfd, WB_LOG_NAME, O_RDWR | O_CREAT, why,
				   sizeof(why));
	if (wl->fd < 0) {
		rc = wl->fd;
		if (err && errlen)
			snprintf(err, errlen, "cannot use the writeback log "
				 "'%s': %s", WB_LOG_NAME, why);
		goto fail;
	}
	rc = fstat(wl->fd, &sb) ? -errno : 0;
	if (rc)
		goto fail;
	if (sb.st_size) {
		rc = super_read(wl->fd, &s);
		if (rc == -EPROTONOSUPPORT) {
			seterr(err, errlen, "wlog: of an earlier format "
			       "(its records name files without their birth), "
			       "which this version does not read; it may hold "
			       "acknowledged writes, so it is kept (move it "
			       "away to start without them)");
			goto fail;
		}
		if (rc) {
			seterr(err, errlen, "wlog: both headers damaged; it may "
			       "hold acknowledged writes, so it is kept (move "
			       "it away to start without them)");
			goto fail;
		}
		rc = wl_init(wl, s.nblocks);
		if (!rc) {
			wl->gen = s.gen;
			wl->epoch = s.epoch;
			rc = replay(wl, &s);
		}
		if (rc) {
			seterr(err, errlen, "wlog: out of memory replaying it");
			goto fail;
		}
		/* an empty log takes the capacity asked for (if any) */
		if (capacity && !wl->nents && s.nblocks != nblocks) {
			map_free(wl);
			memset(&wl->fh, 0, sizeof(*wl) -
			       offsetof(struct wblog, fh));
			wl->gen = s.gen;
			wl->epoch = s.epoch;
			rc = wl_init(wl, nblocks);
			wl->rq_seq = s.tail_seq;	/* sequence goes on */
			wl->appended = s.tail_seq - 1;
			if (rc)
				goto fail;
		}
	} else {
		rc = wl_init(wl, nblocks);
		if (rc)
			goto fail;
		wl->rq_seq = 1;
	}
	rc = area_size(wl->fd, sb.st_size, blk_off(wl->nblocks));
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "wlog: cannot reserve its %llu "
				 "MiB on the cachedir's filesystem (%s)%s",
				 (unsigned long long)(blk_off(wl->nblocks) >>
						      20), strerror(-rc),
				 sb.st_size != blk_off(wl->nblocks) ?
				 "; give a smaller writeback_log=" : "");
		goto fail;
	}
	/* the replayed records durable, then a new epoch from here */
	wl->epoch++;
	wl->epoch_seq = wl->appended + 1;
	wl->synced = wl->appended;
	rc = wl_super_write(wl, wl->rq_n ? wl->rq[wl->rq_head].start : wl->head,
			 wl->rq_seq);
	/* its name durable too (made by this open, or by one a power loss
	 * interrupted before the directory reached the device) */
	if (!rc && fsync(dirfd))
		rc = -errno;
	if (rc) {
		seterr(err, errlen, "wlog: cannot write its header");
		/* resized: the file back to its size (a log is resized
		 * only empty, or to the area its header names) */
		if (sb.st_size != blk_off(wl->nblocks) &&
		    ftruncate(wl->fd, sb.st_size) == 0)
			fdatasync(wl->fd);
		goto fail;
	}
	*out = wl;
	return 0;
fail:
	wl_free(wl);
	return rc;
}

void wblog_close(struct wblog *wl)
{
	if (wl)
		wl_free(wl);
}

int wblog_dirty(int dirfd, uint64_t *bytes)
{
	struct wblog *wl = wl_new();
	struct wl_super s;
	struct stat sb;
	int rc;

	*bytes = 0;
	if (!wl)
		return -ENOMEM;
	/* read only: nothing of it changes */
	wl->fd = openat(dirfd, WB_LOG_NAME, O_RDONLY | O_CLOEXEC |
			O_NOFOLLOW);
	rc = wl->fd < 0 || fstat(wl->fd, &sb) ? -errno : 0;
	if (rc == -ENOENT)
		rc = 0;		/* no log: nothing dirty */
	else if (!rc && sb.st_size) {
		rc = super_read(wl->fd, &s);
		if (!rc)
			rc = wl_init(wl, s.nblocks);
		if (!rc) {
			wl->epoch = s.epoch;
			rc = replay(wl, &s);
		}
		if (!rc)
			*bytes = wl->dirty_bytes;
	}
	wl_free(wl);
	return rc;
}
