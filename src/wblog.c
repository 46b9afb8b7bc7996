// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log: dirty data of writemode=writeback in CACHEDIR/wlog,
 * its map in memory, group commit and replay.  include/hotfs/wblog.h
 * gives the design (layout, what is durable when, locks); this file keeps
 * its sections: the on-disk formats, the map (files and blocks, two hash
 * tables), the records (a queue in sequence order), writing, replay, and
 * flushing.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "hotfs/fileio.h"
#include "hotfs/wblog.h"

#define WL_MAGIC	"HOTFSWL1"
#define WR_MAGIC	"HOTFSWR1"
#define WL_VERSION	1u
#define WL_HDR_BLOCKS	2u		/* the two header slots */
#define WL_MIN_BLOCKS	64u

enum { WR_DATA = 1, WR_TRIM = 2, WR_PAD = 3 };

struct wl_super {
	char magic[8];
	uint32_t version;
	uint32_t block;
	uint64_t nblocks;	/* the area */
	uint64_t gen;		/* the newer slot wins */
	uint64_t tail_pos;	/* where replay starts (a block of the area) */
	uint64_t tail_seq;	/* and the sequence number found there */
	uint64_t epoch;		/* records from epoch_seq on carry it */
	uint64_t epoch_seq;
	uint64_t csum;
};

struct wl_rec {
	char magic[8];
	uint64_t seq;
	uint64_t epoch;
	uint32_t type;
	uint32_t nblk;		/* data blocks following */
	uint64_t dev, ino;
	uint64_t off, len;	/* DATA: the bytes; TRIM: off = the size */
	int64_t time_ns;
	uint64_t csum;		/* of this header (csum 0) and the data */
};

/*----------------------------------------------------------------*/
/* the map: files and their dirty blocks */

struct wl_file {
	struct wl_file *next;	/* hash chain */
	struct wb_fid fid;
	uint64_t nblocks;	/* dirty blocks */
	uint64_t end;		/* dirty end */
	unsigned inflight;	/* runs being flushed */
};

struct wl_ent {
	struct wl_ent *next;	/* hash chain */
	struct wl_file *f;
	uint64_t blk;		/* block of the file */
	uint64_t pos;		/* its copy: a block of the area */
	uint64_t seq;		/* of the record holding it */
	uint16_t lo, hi;	/* dirty bytes within the block */
};

/* one record in the log, oldest first */
struct wl_recmem {
	uint64_t start;		/* first block of the area it occupies */
	uint64_t nblk;		/* blocks it occupies (header included) */
	uint64_t live;		/* map entries that point into it */
	int64_t time_ns;
};

struct wblog {
	pthread_mutex_t m;
	pthread_cond_t cv;	/* a sync ended, a flush ended */
	int fd;
	uint64_t nblocks;	/* the area's */
	/* the map (protected by m) */
	struct wl_file **fh;
	size_t fh_size, nfiles;
	struct wl_ent **eh;
	size_t eh_size, nents;
	/* the records between the durable tail and the head, a ring of
	 * rq_cap entries; rq_first's sequence number is rq_seq */
	struct wl_recmem *rq;
	size_t rq_cap, rq_head, rq_n;
	uint64_t rq_seq;
	uint64_t head;		/* the next record's block */
	uint64_t used;		/* blocks from the durable tail to head */
	uint64_t epoch, epoch_seq, gen;
	/* group commit */
	uint64_t appended;	/* the last record's seq */
	uint64_t synced;	/* every record up to it durable */
	bool syncing;
	int sync_err;		/* sticky: the log's state is unknown */
	bool releasing;
	/* counters */
	uint64_t dirty_bytes, flushed, flush_errors, absorbed, replayed;
	uint64_t syncs;
};

static int64_t now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	return XXH3_64bits_withSeed(&a, sizeof(a), b);
}

static size_t fhash(const struct wblog *wl, const struct wb_fid *fid)
{
	return mix(fid->dev, fid->ino) & (wl->fh_size - 1);
}

static size_t ehash(const struct wblog *wl, const struct wl_file *f,
		    uint64_t blk)
{
	return mix((uintptr_t)f, blk) & (wl->eh_size - 1);
}

static struct wl_file *file_find(struct wblog *wl, const struct wb_fid *fid)
{
	struct wl_file *f;

	for (f = wl->fh[fhash(wl, fid)]; f; f = f->next)
		if (f->fid.dev == fid->dev && f->fid.ino == fid->ino)
			return f;
	return NULL;
}

/* Double a power-of-two chained table when it is as full as it is long;
 * a failed allocation keeps the longer chains. */
static void grow(void ***tab, size_t *size, size_t n, size_t (*h)(
		 struct wblog *, void *), struct wblog *wl, void **(*nextp)(
		 void *))
{
	size_t old = *size, i;
	void **t = *tab, **nt;

	if (n < old)
		return;
	nt = calloc(old * 2, sizeof(*nt));
	if (!nt)
		return;
	*tab = nt;
	*size = old * 2;
	for (i = 0; i < old; i++)
		while (t[i]) {
			void *x = t[i];
			void **np = nextp(x);
			size_t j = h(wl, x);

			t[i] = *np;
			*np = nt[j];
			nt[j] = x;
		}
	free(t);
}

static size_t fh_of(struct wblog *wl, void *x)
{
	return fhash(wl, &((struct wl_file *)x)->fid);
}

static void **fnext(void *x)
{
	return (void **)&((struct wl_file *)x)->next;
}

static size_t eh_of(struct wblog *wl, void *x)
{
	struct wl_ent *e = x;

	return ehash(wl, e->f, e->blk);
}

static void **enext(void *x)
{
	return (void **)&((struct wl_ent *)x)->next;
}

static struct wl_file *file_get(struct wblog *wl, const struct wb_fid *fid)
{
	struct wl_file *f = file_find(wl, fid);
	size_t i;

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fid = *fid;
	i = fhash(wl, fid);
	f->next = wl->fh[i];
	wl->fh[i] = f;
	wl->nfiles++;
	grow((void ***)&wl->fh, &wl->fh_size, wl->nfiles, fh_of, wl, fnext);
	return f;
}

/* Forget f if it has nothing dirty and nothing in flight. */
static void file_put(struct wblog *wl, struct wl_file *f)
{
	struct wl_file **pp;

	if (f->nblocks || f->inflight)
		return;
	for (pp = &wl->fh[fhash(wl, &f->fid)]; *pp != f; pp = &(*pp)->next)
		;
	*pp = f->next;
	wl->nfiles--;
	free(f);
}

static struct wl_ent **ent_slot(struct wblog *wl, struct wl_file *f,
				uint64_t blk)
{
	struct wl_ent **pp;

	for (pp = &wl->eh[ehash(wl, f, blk)]; *pp; pp = &(*pp)->next)
		if ((*pp)->f == f && (*pp)->blk == blk)
			break;
	return pp;
}

static struct wl_ent *ent_find(struct wblog *wl, struct wl_file *f,
			       uint64_t blk)
{
	return *ent_slot(wl, f, blk);
}

static struct wl_recmem *rec_of(struct wblog *wl, uint64_t seq)
{
	if (seq < wl->rq_seq || seq - wl->rq_seq >= wl->rq_n)
		return NULL;
	return &wl->rq[(wl->rq_head + (seq - wl->rq_seq)) % wl->rq_cap];
}

static void rec_unref(struct wblog *wl, uint64_t seq)
{
	struct wl_recmem *r = rec_of(wl, seq);

	if (r && r->live)
		r->live--;
}

/* Drop entry e (its slot pp) from the map. */
static void ent_drop(struct wblog *wl, struct wl_ent **pp)
{
	struct wl_ent *e = *pp;

	*pp = e->next;
	rec_unref(wl, e->seq);
	wl->dirty_bytes -= e->hi - e->lo;
	e->f->nblocks--;
	wl->nents--;
	free(e);
}

/* Block blk of f is now the copy at pos of record seq, [lo, hi) dirty. */
static int ent_set(struct wblog *wl, struct wl_file *f, uint64_t blk,
		   uint64_t pos, uint64_t seq, unsigned lo, unsigned hi)
{
	struct wl_ent **pp = ent_slot(wl, f, blk), *e = *pp;
	struct wl_recmem *r = rec_of(wl, seq);

	if (e) {
		rec_unref(wl, e->seq);
		wl->dirty_bytes -= e->hi - e->lo;
		wl->absorbed++;
	} else {
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->f = f;
		e->blk = blk;
		e->next = wl->eh[ehash(wl, f, blk)];
		wl->eh[ehash(wl, f, blk)] = e;
		f->nblocks++;
		wl->nents++;
	}
	e->pos = pos;
	e->seq = seq;
	e->lo = (uint16_t)lo;
	e->hi = (uint16_t)hi;
	wl->dirty_bytes += hi - lo;
	if (r)
		r->live++;
	if (blk * WB_BLOCK + hi > f->end)
		f->end = blk * WB_BLOCK + hi;
	grow((void ***)&wl->eh, &wl->eh_size, wl->nents, eh_of, wl, enext);
	return 0;
}

/* Drop f's dirty bytes at and past size (under m). */
static void file_trim(struct wblog *wl, struct wl_file *f, uint64_t size)
{
	size_t i;

	for (i = 0; i < wl->eh_size && f->nblocks; i++) {
		struct wl_ent **pp = &wl->eh[i];

		while (*pp) {
			struct wl_ent *e = *pp;
			uint64_t base = e->blk * WB_BLOCK;

			if (e->f != f || base + e->hi <= size) {
				pp = &e->next;
			} else if (base + e->lo >= size) {
				ent_drop(wl, pp);
			} else {
				wl->dirty_bytes -= base + e->hi - size;
				e->hi = (uint16_t)(size - base);
				pp = &e->next;
			}
		}
	}
	if (f->end > size)
		f->end = size;
}

/*----------------------------------------------------------------*/
/* the records */

static int rq_push(struct wblog *wl, uint64_t start, uint64_t nblk,
		   int64_t t)
{
	struct wl_recmem *r;

	if (wl->rq_n == wl->rq_cap) {
		size_t cap = wl->rq_cap ? wl->rq_cap * 2 : 64, i;
		struct wl_recmem *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (i = 0; i < wl->rq_n; i++)
			n[i] = wl->rq[(wl->rq_head + i) % wl->rq_cap];
		free(wl->rq);
		wl->rq = n;
		wl->rq_cap = cap;
		wl->rq_head = 0;
	}
	r = &wl->rq[(wl->rq_head + wl->rq_n++) % wl->rq_cap];
	r->start = start;
	r->nblk = nblk;
	r->live = 0;
	r->time_ns = t;
	return 0;
}

static off_t blk_off(uint64_t pos)
{
	return (off_t)((WL_HDR_BLOCKS + pos) * WB_BLOCK);
}

static uint64_t rec_csum(const struct wl_rec *h, const void *data,
			 size_t len)
{
	struct wl_rec c = *h;

	c.csum = 0;
	/* the data's hash seeded with the header's */
	return XXH3_64bits_withSeed(len ? data : "", len,
				    XXH3_64bits(&c, sizeof(c))) | 1;
}

static uint64_t super_csum(const struct wl_super *s)
{
	struct wl_super c = *s;

	c.csum = 0;
	return XXH3_64bits(&c, sizeof(c)) | 1;
}

/* Write the header (the slot after the newer one) and sync the log. */
static int super_write(struct wblog *wl, uint64_t tail_pos,
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
	s.csum = super_csum(&s);
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
/* writing */

/* The blocks a record needs at head, or -ENOSPC; *pad: blocks skipped
 * at the end of the area to fit it. */
static int room(const struct wblog *wl, uint64_t need, uint64_t *pad)
{
	*pad = 0;
	if (wl->head + need > wl->nblocks)
		*pad = wl->nblocks - wl->head;
	if (wl->used + *pad + need > wl->nblocks)
		return -ENOSPC;
	return 0;
}

/* Append a record (h filled but for seq, epoch, csum) with data of
 * h->nblk blocks; under m.  Its first data block in *data_pos. */
static int append(struct wblog *wl, struct wl_rec *h, const char *data,
		  uint64_t *data_pos)
{
	uint64_t pad, need = 1 + h->nblk, start;
	char hb[WB_BLOCK];
	struct iovec iov[2];
	ssize_t n;
	int err;

	if (wl->sync_err)
		return wl->sync_err;
	err = room(wl, need, &pad);
	if (err)
		return err;
	start = wl->head;
	if (pad) {
		struct wl_rec p = { .type = WR_PAD, .seq = wl->appended + 1,
				    .epoch = wl->epoch,
				    .time_ns = h->time_ns };

		memcpy(p.magic, WR_MAGIC, 8);
		p.csum = rec_csum(&p, NULL, 0);
		memset(hb, 0, sizeof(hb));
		memcpy(hb, &p, sizeof(p));
		n = pwrite_full(wl->fd, hb, WB_BLOCK, blk_off(wl->head));
		if (n < 0)
			return (int)n;
		err = rq_push(wl, start, pad, h->time_ns);
		if (err)
			return err;
		wl->appended++;
		wl->used += pad;
		wl->head = 0;
		start = 0;
	} else if (wl->head == wl->nblocks) {
		wl->head = start = 0;
	}
	memcpy(h->magic, WR_MAGIC, 8);
	h->seq = wl->appended + 1;
	h->epoch = wl->epoch;
	h->csum = rec_csum(h, data, (size_t)h->nblk * WB_BLOCK);
	memset(hb, 0, sizeof(hb));
	memcpy(hb, h, sizeof(*h));
	iov[0].iov_base = hb;
	iov[0].iov_len = WB_BLOCK;
	iov[1].iov_base = (void *)data;
	iov[1].iov_len = (size_t)h->nblk * WB_BLOCK;
	n = pwritev(wl->fd, iov, h->nblk ? 2 : 1, blk_off(start));
	if (n != (ssize_t)(need * WB_BLOCK))	/* nothing of it counts */
		return n < 0 ? -errno : -EIO;
	err = rq_push(wl, start, need, h->time_ns);
	if (err)
		return err;
	wl->appended = h->seq;
	wl->used += need;
	wl->head = start + need;
	*data_pos = start + 1;
	return 0;
}

/* The map's effect of a DATA record (seq, first data block pos). */
static int apply_data(struct wblog *wl, const struct wl_rec *h,
		      uint64_t pos)
{
	struct wb_fid fid = { h->dev, h->ino };
	struct wl_file *f = file_get(wl, &fid);
	uint64_t b0 = h->off / WB_BLOCK, end = h->off + h->len, i;

	if (!f)
		return -ENOMEM;
	for (i = 0; i < h->nblk; i++) {
		uint64_t base = (b0 + i) * WB_BLOCK;
		unsigned lo = h->off > base ? (unsigned)(h->off - base) : 0;
		unsigned hi = end < base + WB_BLOCK ? (unsigned)(end - base) :
			      WB_BLOCK;
		int err = ent_set(wl, f, b0 + i, pos + i, h->seq, lo, hi);

		if (err)
			return err;
	}
	return 0;
}

/*
 * The gaps a write of [off, off + len) would leave within its first and
 * last blocks beside their dirty bytes: up to two ranges of the file
 * (g[k][0], length g[k][1]); under m.
 */
static unsigned gaps(struct wblog *wl, struct wl_file *f, uint64_t off,
		     uint64_t len, uint64_t g[2][2])
{
	uint64_t end = off + len, b0 = off / WB_BLOCK,
		 b1 = (end - 1) / WB_BLOCK;
	struct wl_ent *e;
	unsigned n = 0;

	if (!f)
		return 0;
	e = ent_find(wl, f, b0);
	if (e && b0 * WB_BLOCK + e->hi < off) {
		g[n][0] = b0 * WB_BLOCK + e->hi;
		g[n][1] = off - g[n][0];
		n++;
	}
	e = ent_find(wl, f, b1);
	if (e && b1 * WB_BLOCK + e->lo > end) {
		g[n][0] = end;
		g[n][1] = b1 * WB_BLOCK + e->lo - end;
		n++;
	}
	return n;
}

/*
 * Build and append one record for [off, off + len) (within WB_REC_MAX of
 * blocks), taking in the dirty bytes beside it in its first and last
 * blocks (and the gap bytes in gb); under m.
 */
static int write_one(struct wblog *wl, const struct wb_fid *fid,
		     uint64_t off, const char *src, size_t len,
		     uint64_t g[2][2], char *gb[2], unsigned ng)
{
	uint64_t end = off + len, b0 = off / WB_BLOCK,
		 b1 = (end - 1) / WB_BLOCK, lo = off, hi = end, pos;
	struct wl_file *f = file_get(wl, fid);
	struct wl_rec h = { .type = WR_DATA };
	struct wl_ent *e0, *e1;
	char *data;
	unsigned k;
	int err;

	if (!f)
		return -ENOMEM;
	data = calloc(b1 - b0 + 1, WB_BLOCK);
	if (!data) {
		file_put(wl, f);
		return -ENOMEM;
	}
	/* the first and last blocks' dirty bytes around the write */
	e0 = ent_find(wl, f, b0);
	e1 = b1 != b0 ? ent_find(wl, f, b1) : NULL;
	err = 0;
	if (e0 && pread_full(wl->fd, data, WB_BLOCK, blk_off(e0->pos)) !=
	    WB_BLOCK)
		err = -EIO;
	if (e1 && pread_full(wl->fd, data + (b1 - b0) * WB_BLOCK, WB_BLOCK,
			     blk_off(e1->pos)) != WB_BLOCK)
		err = -EIO;
	if (err)
		goto out;
	if (e0 && b0 * WB_BLOCK + e0->lo < lo)
		lo = b0 * WB_BLOCK + e0->lo;
	if (e0 && b1 == b0 && b0 * WB_BLOCK + e0->hi > hi)
		hi = b0 * WB_BLOCK + e0->hi;
	if (e1 && b1 * WB_BLOCK + e1->hi > hi)
		hi = b1 * WB_BLOCK + e1->hi;
	for (k = 0; k < ng; k++)
		memcpy(data + (g[k][0] - b0 * WB_BLOCK), gb[k], g[k][1]);
	memcpy(data + (off - b0 * WB_BLOCK), src, len);
	h.dev = fid->dev;
	h.ino = fid->ino;
	h.off = lo;
	h.len = hi - lo;
	h.nblk = (uint32_t)(b1 - b0 + 1);
	h.time_ns = now_real_ns();
	err = append(wl, &h, data, &pos);
	if (!err)
		err = apply_data(wl, &h, pos);
out:
	free(data);
	file_put(wl, f);
	return err;
}

int wblog_write(struct wblog *wl, const struct wb_fid *fid, uint64_t off,
		const void *buf, size_t len, wblog_fill_fn fill, void *arg,
		uint64_t *seq)
{
	const char *p = buf;
	int err = 0;

	if (off + len < off)
		return -EFBIG;
	while (len && !err) {
		/* a record ends at a block boundary within WB_REC_MAX */
		uint64_t lim = WB_REC_MAX - off % WB_BLOCK;
		size_t n = len < lim ? len : (size_t)lim;
		uint64_t g[2][2];
		char *gb[2] = { NULL, NULL };
		unsigned ng, tries;

		uint64_t had[2][2];
		unsigned nhad = 0;

		pthread_mutex_lock(&wl->m);
		for (tries = 0;; tries++) {
			unsigned k;

			ng = gaps(wl, file_find(wl, fid), off, n, g);
			/* the bytes read for the same gaps are still the
			 * file's own (a gap is not dirty) */
			if (!ng || (ng == nhad &&
				    !memcmp(g, had, ng * sizeof(g[0]))))
				break;
			/* the file's bytes between, read without m */
			err = !fill ? -EINVAL : tries > 8 ? -EAGAIN : 0;
			if (err)
				break;
			memcpy(had, g, sizeof(had));
			nhad = ng;
			pthread_mutex_unlock(&wl->m);
			for (k = 0; k < ng && !err; k++) {
				free(gb[k]);
				gb[k] = malloc(g[k][1]);
				err = gb[k] ? fill(arg, fid, g[k][0], gb[k],
						   g[k][1]) : -ENOMEM;
			}
			pthread_mutex_lock(&wl->m);
			if (err)
				break;
		}
		if (!err)
			err = write_one(wl, fid, off, p, n, g, gb, ng);
		if (!err && seq)
			*seq = wl->appended;
		pthread_mutex_unlock(&wl->m);
		free(gb[0]);
		free(gb[1]);
		off += n;
		p += n;
		len -= n;
	}
	return err;
}

/*
 * Group commit: the first caller to find no fdatasync running runs one
 * for every record appended so far; the others wait for it, and run the
 * next one if theirs came after it began.
 */
int wblog_sync(struct wblog *wl, uint64_t seq)
{
	int err;

	pthread_mutex_lock(&wl->m);
	if (!seq)
		seq = wl->appended;
	for (;;) {
		uint64_t target;

		err = wl->sync_err;
		if (err || wl->synced >= seq)
			break;
		if (wl->syncing) {
			pthread_cond_wait(&wl->cv, &wl->m);
			continue;
		}
		wl->syncing = true;
		target = wl->appended;
		pthread_mutex_unlock(&wl->m);
		err = fdatasync(wl->fd) ? -errno : 0;
		pthread_mutex_lock(&wl->m);
		wl->syncs++;
		wl->syncing = false;
		/* after a failed fdatasync the kernel may have dropped the
		 * pages' error: nothing appended before can be vouched for */
		if (err)
			wl->sync_err = -EIO;
		else if (target > wl->synced)
			wl->synced = target;
		pthread_cond_broadcast(&wl->cv);
	}
	pthread_mutex_unlock(&wl->m);
	return err;
}

/*----------------------------------------------------------------*/
/* reading */

ssize_t wblog_overlay(struct wblog *wl, const struct wb_fid *fid,
		      uint64_t off, void *buf, size_t len)
{
	uint64_t end = off + len, b, b0, b1;
	struct wl_file *f;
	ssize_t done = 0;
	char blk[WB_BLOCK];

	if (!len || end < off)
		return 0;
	b0 = off / WB_BLOCK;
	b1 = (end - 1) / WB_BLOCK;
	pthread_mutex_lock(&wl->m);
	f = file_find(wl, fid);
	for (b = b0; f && f->nblocks && b <= b1; b++) {
		struct wl_ent *e = ent_find(wl, f, b);
		uint64_t s, t, base = b * WB_BLOCK;

		if (!e)
			continue;
		s = base + e->lo > off ? base + e->lo : off;
		t = base + e->hi < end ? base + e->hi : end;
		if (s >= t)
			continue;
		if (pread_full(wl->fd, blk, WB_BLOCK, blk_off(e->pos)) !=
		    WB_BLOCK) {
			done = -EIO;
			break;
		}
		memcpy((char *)buf + (s - off), blk + (s - base), t - s);
		done += (ssize_t)(t - s);
	}
	pthread_mutex_unlock(&wl->m);
	return done;
}

uint64_t wblog_dirty_end(struct wblog *wl, const struct wb_fid *fid)
{
	struct wl_file *f;
	uint64_t end;

	pthread_mutex_lock(&wl->m);
	f = file_find(wl, fid);
	end = f && f->nblocks ? f->end : 0;
	pthread_mutex_unlock(&wl->m);
	return end;
}

int wblog_trim(struct wblog *wl, const struct wb_fid *fid, uint64_t size)
{
	struct wl_rec h = { .type = WR_TRIM };
	struct wl_file *f;
	uint64_t pos, seq = 0;
	int err = 0;

	pthread_mutex_lock(&wl->m);
	f = file_find(wl, fid);
	if (f) {
		f->inflight++;	/* kept while waiting */
		while (f->inflight > 1)
			pthread_cond_wait(&wl->cv, &wl->m);
		f->inflight--;
	}
	/* nothing dirty at or past size: nothing a replay could bring
	 * back either (the map holds every record's newest bytes) */
	if (f && f->nblocks && f->end > size) {
		h.dev = fid->dev;
		h.ino = fid->ino;
		h.off = size;
		h.time_ns = now_real_ns();
		err = append(wl, &h, NULL, &pos);
		if (!err) {
			file_trim(wl, f, size);
			seq = h.seq;
		}
	}
	if (f)
		file_put(wl, f);
	pthread_mutex_unlock(&wl->m);
	return err || !seq ? err : wblog_sync(wl, seq);
}

/*----------------------------------------------------------------*/
/* flushing */

/* The first record with a dirty block old enough, or NULL; under m. */
static struct wl_recmem *oldest_live(struct wblog *wl, uint64_t *seq)
{
	size_t i;

	for (i = 0; i < wl->rq_n; i++) {
		struct wl_recmem *r = &wl->rq[(wl->rq_head + i) % wl->rq_cap];

		if (r->live) {
			*seq = wl->rq_seq + i;
			return r;
		}
	}
	return NULL;
}

int wblog_flush_next(struct wblog *wl, int64_t min_age_ns, size_t max,
		     struct wb_run *r)
{
	struct wl_recmem *rec;
	struct wl_rec h;
	struct wl_ent *e = NULL;
	uint64_t seq, b, first, last, i;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (max < WB_BLOCK)
		max = WB_BLOCK;
	pthread_mutex_lock(&wl->m);
	rec = oldest_live(wl, &seq);
	if (!rec || rec->time_ns > now_real_ns() - min_age_ns)
		goto out;
	/* its header says which file and blocks */
	ret = -EIO;
	if (pread_full(wl->fd, &h, sizeof(h), blk_off(rec->start)) !=
	    sizeof(h))
		goto out;
	{
		struct wb_fid fid = { h.dev, h.ino };
		struct wl_file *f = file_find(wl, &fid);

		for (b = h.off / WB_BLOCK, i = 0; f && i < h.nblk; i++) {
			e = ent_find(wl, f, b + i);
			if (e && e->seq == seq)
				break;
			e = NULL;
		}
	}
	ret = 0;
	if (!e)			/* cannot be: live counts its blocks */
		goto out;
	/* the adjacent dirty blocks of the file, within max */
	first = last = e->blk;
	while ((last - first + 1) * WB_BLOCK < max) {
		struct wl_ent *n = ent_find(wl, e->f, last + 1),
			      *l = ent_find(wl, e->f, last);

		if (!n || l->hi != WB_BLOCK || n->lo != 0)
			break;
		last++;
	}
	while ((last - first + 1) * WB_BLOCK < max && first) {
		struct wl_ent *p = ent_find(wl, e->f, first - 1),
			      *f0 = ent_find(wl, e->f, first);

		if (!p || p->hi != WB_BLOCK || f0->lo != 0)
			break;
		first--;
	}
	r->fid = e->f->fid;
	r->first_blk = first;
	r->nblk = (uint32_t)(last - first + 1);
	r->seq = calloc(r->nblk, sizeof(*r->seq));
	r->buf = malloc((size_t)r->nblk * WB_BLOCK);
	ret = -ENOMEM;
	if (!r->seq || !r->buf)
		goto fail;
	for (b = first; b <= last; b++) {
		struct wl_ent *x = ent_find(wl, e->f, b);

		ret = -EIO;
		if (pread_full(wl->fd, r->buf + (b - first) * WB_BLOCK,
			       WB_BLOCK, blk_off(x->pos)) != WB_BLOCK)
			goto fail;
		r->seq[b - first] = x->seq;
		if (b == first)
			r->off = b * WB_BLOCK + x->lo;
		if (b == last)
			r->len = (size_t)(b * WB_BLOCK + x->hi - r->off);
	}
	/* the run's bytes from its first dirty one */
	memmove(r->buf, r->buf + (r->off - first * WB_BLOCK), r->len);
	e->f->inflight++;
	ret = 1;
	goto out;
fail:
	free(r->seq);
	free(r->buf);
	memset(r, 0, sizeof(*r));
out:
	pthread_mutex_unlock(&wl->m);
	return ret;
}

void wblog_flush_done(struct wblog *wl, struct wb_run *r, int err)
{
	struct wl_file *f;
	uint32_t i;

	pthread_mutex_lock(&wl->m);
	f = file_find(wl, &r->fid);
	for (i = 0; f && !err && i < r->nblk; i++) {
		struct wl_ent **pp = ent_slot(wl, f, r->first_blk + i);

		/* rewritten or trimmed since: the newer bytes stay */
		if (*pp && (*pp)->seq == r->seq[i])
			ent_drop(wl, pp);
	}
	if (err)
		wl->flush_errors++;
	else
		wl->flushed += r->len;
	if (f) {
		f->inflight--;
		file_put(wl, f);
	}
	pthread_cond_broadcast(&wl->cv);
	pthread_mutex_unlock(&wl->m);
	free(r->seq);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

int wblog_release(struct wblog *wl)
{
	uint64_t n = 0, blocks = 0, tail_pos, tail_seq;
	size_t i;
	int err;

	pthread_mutex_lock(&wl->m);
	while (wl->releasing)
		pthread_cond_wait(&wl->cv, &wl->m);
	for (i = 0; i < wl->rq_n; i++) {
		struct wl_recmem *r = &wl->rq[(wl->rq_head + i) % wl->rq_cap];

		if (r->live)
			break;
		blocks += r->nblk;
		n++;
	}
	/* the records up to the head must be durable before the tail
	 * passes them: a replay must find the sequence it names */
	tail_seq = wl->rq_seq + n;
	tail_pos = n < wl->rq_n ?
		   wl->rq[(wl->rq_head + n) % wl->rq_cap].start : wl->head;
	if (!n || wl->sync_err) {
		err = wl->sync_err;
		pthread_mutex_unlock(&wl->m);
		return err;
	}
	wl->releasing = true;
	pthread_mutex_unlock(&wl->m);
	err = wblog_sync(wl, tail_seq - 1);
	if (!err)
		err = super_write(wl, tail_pos, tail_seq);
	pthread_mutex_lock(&wl->m);
	wl->releasing = false;
	if (!err) {
		/* appends only add at the back meanwhile */
		wl->rq_head = (wl->rq_head + n) % wl->rq_cap;
		wl->rq_n -= n;
		wl->rq_seq += n;
		wl->used -= blocks;
	}
	pthread_cond_broadcast(&wl->cv);
	pthread_mutex_unlock(&wl->m);
	return err;
}

void wblog_stats(struct wblog *wl, struct wblog_stats *s)
{
	struct wl_recmem *r;
	uint64_t seq;
	size_t i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&wl->m);
	s->dirty_bytes = wl->dirty_bytes;
	s->dirty_blocks = wl->nents;
	for (i = 0; i < wl->rq_n; i++)
		if (wl->rq[(wl->rq_head + i) % wl->rq_cap].live)
			s->dirty_records++;
	s->dirty_files = 0;
	for (i = 0; i < wl->fh_size; i++) {
		struct wl_file *f;

		for (f = wl->fh[i]; f; f = f->next)
			s->dirty_files += f->nblocks != 0;
	}
	s->log_used = wl->used * WB_BLOCK;
	s->log_capacity = wl->nblocks * WB_BLOCK;
	s->flushed_bytes = wl->flushed;
	s->flush_errors = wl->flush_errors;
	s->absorbed = wl->absorbed;
	s->replayed_records = wl->replayed;
	s->syncs = wl->syncs;
	r = oldest_live(wl, &seq);
	s->oldest_dirty_ns = r ? r->time_ns : 0;
	pthread_mutex_unlock(&wl->m);
}

/*----------------------------------------------------------------*/
/* open and replay */

static void seterr(char *err, size_t len, const char *msg)
{
	if (err && len)
		snprintf(err, len, "%s", msg);
}

/* The newer good header slot into *s: 0, or -EUCLEAN (none). */
static int super_read(int fd, struct wl_super *s)
{
	struct wl_super a[2];
	bool ok[2];
	int i;

	for (i = 0; i < 2; i++) {
		ok[i] = pread_full(fd, &a[i], sizeof(a[i]),
				   (off_t)i * WB_BLOCK) == sizeof(a[i]) &&
			!memcmp(a[i].magic, WL_MAGIC, 8) &&
			a[i].version == WL_VERSION &&
			a[i].block == WB_BLOCK &&
			a[i].csum == super_csum(&a[i]) &&
			a[i].nblocks >= WL_MIN_BLOCKS &&
			a[i].tail_pos <= a[i].nblocks;
	}
	if (!ok[0] && !ok[1])
		return -EUCLEAN;
	i = !ok[0] || (ok[1] && a[1].gen > a[0].gen);
	*s = a[i];
	return 0;
}

/* The record at pos if it is the one replay expects (seq, the epoch
 * rule, whole by its checksum): its data in *data (malloc'd). */
static bool rec_load(struct wblog *wl, const struct wl_super *s,
		     uint64_t pos, uint64_t seq, struct wl_rec *h,
		     char **data)
{
	size_t dlen;

	*data = NULL;
	if (pread_full(wl->fd, h, sizeof(*h), blk_off(pos)) != sizeof(*h) ||
	    memcmp(h->magic, WR_MAGIC, 8) || h->seq != seq)
		return false;
	if (seq >= s->epoch_seq && h->epoch != s->epoch)
		return false;
	if (h->type == WR_PAD)
		return h->nblk == 0 && h->csum == rec_csum(h, NULL, 0);
	if ((h->type != WR_DATA && h->type != WR_TRIM) ||
	    h->nblk > wl->nblocks - pos - 1 ||
	    h->nblk > WB_REC_MAX / WB_BLOCK)
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
	if (h->csum != rec_csum(h, *data, dlen)) {
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
	struct wl_rec h;
	char *data;
	int err = 0;

	wl->rq_seq = seq;
	wl->appended = seq - 1;
	while (!err && seen < wl->nblocks) {
		uint64_t start = pos == wl->nblocks ? 0 : pos;

		if (!rec_load(wl, s, start, seq, &h, &data))
			break;
		if (h.type == WR_PAD) {
			err = rq_push(wl, start, wl->nblocks - start,
				      h.time_ns);
			seen += wl->nblocks - start;
			pos = 0;
		} else {
			err = rq_push(wl, start, 1 + h.nblk, h.time_ns);
			if (!err && h.type == WR_DATA)
				err = apply_data(wl, &h, start + 1);
			if (!err && h.type == WR_TRIM) {
				struct wb_fid fid = { h.dev, h.ino };
				struct wl_file *f = file_find(wl, &fid);

				if (f) {
					file_trim(wl, f, h.off);
					file_put(wl, f);
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

static int wl_init(struct wblog *wl, uint64_t nblocks)
{
	wl->nblocks = nblocks;
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
	free(wl->rq);
}

int wblog_open(int dirfd, uint64_t capacity, struct wblog **out,
	       char *err, size_t errlen)
{
	uint64_t nblocks = capacity / WB_BLOCK;
	struct wblog *wl;
	struct wl_super s;
	struct stat sb;
	int rc;

	*out = NULL;
	if (nblocks < WL_MIN_BLOCKS)
		nblocks = WL_MIN_BLOCKS;
	wl = calloc(1, sizeof(*wl));
	if (!wl)
		return -ENOMEM;
	pthread_mutex_init(&wl->m, NULL);
	pthread_cond_init(&wl->cv, NULL);
	wl->fd = openat(dirfd, WB_LOG_NAME, O_RDWR | O_CREAT | O_CLOEXEC |
			O_NOFOLLOW, 0600);
	rc = wl->fd < 0 ? -errno : file_make_private(wl->fd, 0600);
	if (rc) {
		seterr(err, errlen, "wlog: cannot open it privately");
		goto fail;
	}
	rc = fstat(wl->fd, &sb) ? -errno : 0;
	if (rc)
		goto fail;
	if (sb.st_size) {
		rc = super_read(wl->fd, &s);
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
		/* an empty log takes the capacity asked for */
		if (!wl->nents && s.nblocks != nblocks) {
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
	if (ftruncate(wl->fd, blk_off(wl->nblocks))) {
		rc = -errno;
		seterr(err, errlen, "wlog: cannot size it");
		goto fail;
	}
	/* the replayed records durable, then a new epoch from here */
	wl->epoch++;
	wl->epoch_seq = wl->appended + 1;
	wl->synced = wl->appended;
	rc = super_write(wl, wl->rq_n ? wl->rq[wl->rq_head].start : wl->head,
			 wl->rq_seq);
	if (rc) {
		seterr(err, errlen, "wlog: cannot write its header");
		goto fail;
	}
	*out = wl;
	return 0;
fail:
	if (wl->fd >= 0)
		close(wl->fd);
	map_free(wl);
	pthread_cond_destroy(&wl->cv);
	pthread_mutex_destroy(&wl->m);
	free(wl);
	return rc;
}

void wblog_close(struct wblog *wl)
{
	if (!wl)
		return;
	close(wl->fd);
	map_free(wl);
	pthread_cond_destroy(&wl->cv);
	pthread_mutex_destroy(&wl->m);
	free(wl);
}
