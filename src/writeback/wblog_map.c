// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log's map (see src/writeback/wblog_i.h): files and their dirty
 * blocks in two chained hash tables of power-of-two size, and the records
 * between the log's tail and head in a ring, oldest first, each with the
 * count of map entries that point into it (0: it may be released).  All
 * under the log's m.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "wblog_i.h"

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

struct wl_file *wl_file_find(struct wblog *wl, const struct wb_fid *fid)
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

struct wl_file *wl_file_get(struct wblog *wl, const struct wb_fid *fid)
{
	struct wl_file *f = wl_file_find(wl, fid);
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
void wl_file_put(struct wblog *wl, struct wl_file *f)
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

struct wl_ent **wl_ent_slot(struct wblog *wl, struct wl_file *f,
				uint64_t blk)
{
	struct wl_ent **pp;

	for (pp = &wl->eh[ehash(wl, f, blk)]; *pp; pp = &(*pp)->next)
		if ((*pp)->f == f && (*pp)->blk == blk)
			break;
	return pp;
}

struct wl_ent *wl_ent_find(struct wblog *wl, struct wl_file *f,
			       uint64_t blk)
{
	return *wl_ent_slot(wl, f, blk);
}

struct wl_recmem *wl_rec_of(struct wblog *wl, uint64_t seq)
{
	if (seq < wl->rq_seq || seq - wl->rq_seq >= wl->rq_n)
		return NULL;
	return &wl->rq[(wl->rq_head + (seq - wl->rq_seq)) % wl->rq_cap];
}

static void rec_unref(struct wblog *wl, uint64_t seq)
{
	struct wl_recmem *r = wl_rec_of(wl, seq);

	if (r && r->live)
		r->live--;
}

void wl_ent_lost(struct wblog *wl, struct wl_ent *e, bool lost)
{
	struct wl_recmem *r;

	if (e->lost == lost)
		return;
	r = wl_rec_of(wl, e->seq);
	e->lost = lost;
	if (lost) {
		wl->lost_held += e->hi - e->lo;
		wl->lost_blocks++;
		wl->lost_files += !e->f->nlost++;
		if (r)
			r->lost++;
	} else {
		wl->lost_held -= e->hi - e->lo;
		wl->lost_blocks--;
		wl->lost_files -= !--e->f->nlost;
		if (r && r->lost)
			r->lost--;
	}
}

/* Drop entry e (its slot pp) from the map. */
void wl_ent_drop(struct wblog *wl, struct wl_ent **pp)
{
	struct wl_ent *e = *pp;

	wl_ent_lost(wl, e, false);
	*pp = e->next;
	rec_unref(wl, e->seq);
	wl->dirty_bytes -= e->hi - e->lo;
	e->f->nblocks--;
	wl->nents--;
	free(e);
}

/* Block blk of f is now the copy at pos of record seq (its checksum
 * csum), [lo, hi) dirty. */
int wl_ent_set(struct wblog *wl, struct wl_file *f, uint64_t blk,
	       uint64_t pos, uint64_t seq, unsigned lo, unsigned hi,
	       uint64_t csum)
{
	struct wl_ent **pp = wl_ent_slot(wl, f, blk), *e = *pp;
	struct wl_recmem *r = wl_rec_of(wl, seq);

	if (e) {
		wl_ent_lost(wl, e, false);
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
	e->csum = csum;
	e->busy = false;
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

/* Drop f's dirty bytes at and past size (under m): how many. */
uint64_t wl_file_trim(struct wblog *wl, struct wl_file *f, uint64_t size)
{
	uint64_t dropped = 0;
	size_t i;

	for (i = 0; i < wl->eh_size && f->nblocks; i++) {
		struct wl_ent **pp = &wl->eh[i];

		while (*pp) {
			struct wl_ent *e = *pp;
			uint64_t base = e->blk * WB_BLOCK;

			if (e->f != f || base + e->hi <= size) {
				pp = &e->next;
			} else if (base + e->lo >= size) {
				dropped += e->hi - e->lo;
				wl_ent_drop(wl, pp);
			} else {
				dropped += base + e->hi - size;
				wl->dirty_bytes -= base + e->hi - size;
				if (e->lost)
					wl->lost_held -= base + e->hi - size;
				e->hi = (uint16_t)(size - base);
				pp = &e->next;
			}
		}
	}
	if (f->end > size)
		f->end = size;
	return dropped;
}

/*----------------------------------------------------------------*/
/* the records */

int wl_rq_push(struct wblog *wl, uint64_t start, uint64_t nblk,
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
	r->lost = 0;
	r->time_ns = t;
	r->f = NULL;
	r->blk0 = 0;
	r->ndata = 0;
	r->blks = NULL;
	return 0;
}

void wl_rq_drop(struct wblog *wl, size_t n)
{
	size_t i;

	for (i = 0; i < n && wl->rq_n; i++) {
		struct wl_recmem *r = &wl->rq[wl->rq_head];

		free(r->blks);
		r->blks = NULL;
		wl->rq_head = (wl->rq_head + 1) % wl->rq_cap;
		wl->rq_n--;
		wl->rq_seq++;
	}
}

/*
 * A record of birth for f, which holds dirty bytes of another birth: a
 * later file's (records come in sequence order).  The earlier file was
 * removed, its inode number given to this one, and the trim that dropped
 * its dirty bytes at the removal is not in the map (damaged, found
 * unreadable at replay; or the file was removed behind the log).  Its
 * bytes are dropped, never laid over the later file's, and counted (they
 * are no file's now: not lost bytes of a file); the later birth is f's.
 * The bytes dropped.
 */
uint64_t wl_file_birth(struct wblog *wl, struct wl_file *f, uint64_t birth)
{
	uint64_t dropped;

	if (!wb_births_differ(f->fid.birth, birth))
		return 0;
	dropped = wl_file_trim(wl, f, 0);
	if (dropped) {
		wl->rp.reborn_files++;
		wl->rp.reborn_bytes += dropped;
		wl->flush_errors++;	/* as wblog_drop */
	}
	f->end = 0;
	f->mtime_ns = 0;
	f->fid.birth = birth;
	return dropped;
}

/* The file a DATA or MULTI record h is of, its time and birth taken in;
 * *r: the record in memory (NULL if not there). */
static struct wl_file *rec_file(struct wblog *wl, const struct wl_rec *h,
				struct wl_recmem **r)
{
	struct wb_fid fid = { .dev = h->dev, .ino = h->ino };
	struct wl_file *f = wl_file_get(wl, &fid);

	if (!f)
		return NULL;
	wl_file_birth(wl, f, h->birth);
	if (h->time_ns > f->mtime_ns)
		f->mtime_ns = h->time_ns;
	if (h->birth)
		f->fid.birth = h->birth;
	*r = wl_rec_of(wl, h->seq);
	return f;
}

int wl_apply_multi(struct wblog *wl, const struct wl_rec *h,
		   const struct wl_mblk *l, uint64_t pos,
		   const uint64_t *sums)
{
	struct wl_recmem *r;
	struct wl_file *f = rec_file(wl, h, &r);
	uint32_t k;

	if (!f)
		return -ENOMEM;
	if (r) {
		r->blks = malloc(h->nblk * sizeof(*r->blks));
		if (!r->blks)
			return -ENOMEM;
		for (k = 0; k < h->nblk; k++)
			r->blks[k] = l[k].blk;
		r->f = f;
		r->ndata = h->nblk;
	}
	for (k = 0; k < h->nblk; k++) {
		int err = wl_ent_set(wl, f, l[k].blk, pos + k, h->seq,
				     l[k].lo, l[k].hi,
				     l[k].flags & WL_MBLK_LOST ? 0 : sums[k]);

		if (err)
			return err;
		if (l[k].flags & WL_MBLK_LOST)
			wl_ent_lost(wl, wl_ent_find(wl, f, l[k].blk), true);
	}
	return 0;
}

int wl_apply_data(struct wblog *wl, const struct wl_rec *h, uint64_t pos,
		  const uint64_t *sums)
{
	uint64_t b0 = h->off / WB_BLOCK, end = h->off + h->len, i;
	struct wl_recmem *r;
	struct wl_file *f = rec_file(wl, h, &r);

	if (!f)
		return -ENOMEM;
	if (r) {
		r->f = f;
		r->blk0 = b0;
		r->ndata = h->nblk;
	}
	for (i = 0; i < h->nblk; i++) {
		uint64_t base = (b0 + i) * WB_BLOCK;
		unsigned lo = h->off > base ? (unsigned)(h->off - base) : 0;
		unsigned hi = end < base + WB_BLOCK ? (unsigned)(end - base) :
			      WB_BLOCK;
		int err = wl_ent_set(wl, f, b0 + i, pos + i, h->seq, lo, hi,
				     sums[i]);

		if (err)
			return err;
	}
	return 0;
}
