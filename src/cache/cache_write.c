// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Writes through the mount and the cache (see include/hotfs/cache_write.h):
 * writearound drops the records (extents and blocks) holding a byte the
 * write touched, writethrough patches the cached ones with the written
 * bytes; the file's other records are carried over to its new stamp
 * (st_restamp), and so are promotions queued before the write whose bytes
 * it missed (cache_insert).
 *
 * Locks: in->m around the write generation, the span of writes in flight
 * and the stamp; the store's restamp, invalidation and the writethrough's
 * inserts run under it (hotfs/cache_insert.h says why, and what that
 * costs).  The source is never touched under it except for the fstat of
 * its O_PATH descriptor that stamps the change (hotfs/stamp.h: a stat
 * older than a change of the mount's own must never be taken for a change
 * behind it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hotfs/cache_insert.h"
#include "hotfs/cache_write.h"
#include "hotfs/filecopy.h"
#include "hotfs/meta_fs.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"

/*
 * The extents [*first, *last] of a write of len bytes at off (len 0, a
 * size change, or no cache to say the extent size: the whole file).
 */
static void wr_span(const struct hotfs_cache *c, uint64_t off, uint64_t len,
		    uint32_t *first, uint32_t *last)
{
	uint64_t f, l;

	*first = 0;
	*last = UINT32_MAX;
	if (!c || !len)
		return;
	f = off >> c->ext_shift;
	l = len == CACHE_WR_TO_END || off + len < off ? UINT32_MAX :
	    (off + len - 1) >> c->ext_shift;
	*first = f < UINT32_MAX ? (uint32_t)f : UINT32_MAX;
	*last = l < UINT32_MAX ? (uint32_t)l : UINT32_MAX;
}

/* The source object's attributes now, through the O_PATH fd the write
 * holds (w->fd, -1: none). */
static bool stat_inode(const struct cache_wr *w, struct stat *st)
{
	return w->fd >= 0 && fstatat(w->fd, "", st, AT_EMPTY_PATH) == 0;
}

void cache_write_begin(struct hotfs_cache *c, struct hotfs_itable *it,
		       struct hotfs_inode *in, struct cache_wr *w,
		       uint64_t off, uint64_t len)
{
	struct stat st;
	bool have;

	wr_span(c, off, len, &w->first, &w->last);
	ino_note_change(it, in);	/* before the change: see meta_fs.h */
	/* in use until cache_write_end: the fd budget never closes it
	 * meanwhile (before m: ino_fd takes it) */
	w->fd = ino_fd(it, in);
	pthread_mutex_lock(&in->m);
	w->gen = ++in->cw.write_gen;
	w->fill = false;
	w->patch = false;
	in->cw.wr_inflight++;
	w->next = in->cw.wr_list;
	in->cw.wr_list = w;
	/* under m: a change that ends meanwhile has recorded its stamp */
	have = stat_inode(w, &st);
	stamp_change_begin(in, have ? &st : NULL);
	if (in->cw.wr_inflight == 1) {
		in->cw.wr_base_ok = have;
		if (have)
			cache_stamp(&st, &in->cw.wr_base);
	}
	pthread_mutex_unlock(&in->m);
	w->have_old = c && have;
}

/* The end of a change of the mount's own (hotfs/stamp.h), w out of
 * in->cw.wr_list; m held. */
static void change_end(struct hotfs_inode *in, struct cache_wr *w)
{
	struct cache_wr **p;
	struct stat st;
	bool have;

	for (p = &in->cw.wr_list; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	in->cw.wr_inflight--;
	have = stamp_change_last(in) && stat_inode(w, &st);
	stamp_change_end(in, have ? &st : NULL);
}

bool cache_write_busy(const struct hotfs_inode *in, uint32_t first,
		      uint32_t last)
{
	const struct cache_wr *w;

	for (w = in->cw.wr_list; w; w = w->next)
		if (first <= w->last && last >= w->first)
			return true;
	return false;
}

/*
 * writethrough: the new contents of record e (an extent or a block),
 * built from its cached copy (under the stamp base) and the written
 * bytes; NULL if it was not cached.
 */
static char *patched_record(struct hotfs_cache *c, const struct hotfs_key *k,
			    const struct hotfs_stamp *base, uint32_t e,
			    uint64_t off, uint64_t len, const char *data,
			    uint64_t new_size, uint32_t *elen)
{
	uint64_t es = st_rec_off(e, c->extent), ee, ws, we;
	uint32_t n = cache_ext_len(c, e, new_size), oldn = cache_ext_len(c, e,
								   base->size);
	char *buf;
	ssize_t got;

	if (!n || n != oldn)	/* the record's length changed: drop it */
		return NULL;
	buf = malloc(n);
	if (!buf)
		return NULL;
	got = st_read(c->st, k, e, base, 0, buf, n);
	if (got != (ssize_t)n) {
		free(buf);
		return NULL;
	}
	ee = es + n;
	ws = off > es ? off : es;
	we = off + len < ee ? off + len : ee;
	if (we > ws)
		memcpy(buf + (ws - es), data + (ws - off), we - ws);
	*elen = n;
	return buf;
}

/* writethrough patches at most this many extents and blocks a write */
#define WT_EXTENTS	8u
#define WT_BLOCKS	64u

struct wt_patch {
	char *buf[WT_EXTENTS + WT_BLOCKS];
	uint32_t len[WT_EXTENTS + WT_BLOCKS];
	uint32_t rec[WT_EXTENTS + WT_BLOCKS];
	unsigned n;
};

/* The cached extents and blocks a write of [off, off + len) touched,
 * patched with its bytes. */
static void wt_build(struct hotfs_cache *c, const struct hotfs_key *k,
		     const struct hotfs_stamp *base, uint64_t off, uint64_t len,
		     const char *data, uint64_t new_size, struct wt_patch *p)
{
	uint64_t e0 = off >> c->ext_shift, e1 = (off + len - 1) >> c->ext_shift;
	uint64_t b0 = off / ST_BLOCK, b1 = (off + len - 1) / ST_BLOCK, x;

	p->n = 0;
	if (e1 - e0 < WT_EXTENTS && e1 < ST_EXT_LIMIT)
		for (x = e0; x <= e1; x++) {
			p->buf[p->n] = patched_record(c, k, base, (uint32_t)x,
						      off, len, data,
						      new_size, &p->len[p->n]);
			if (p->buf[p->n])
				p->rec[p->n++] = (uint32_t)x;
		}
	if (b1 - b0 < WT_BLOCKS && b1 < ST_BLK_LIMIT)
		for (x = b0; x <= b1; x++) {
			uint32_t r = ST_REC_BLOCK | (uint32_t)x;

			p->buf[p->n] = patched_record(c, k, base, r, off, len,
						      data, new_size,
						      &p->len[p->n]);
			if (p->buf[p->n])
				p->rec[p->n++] = r;
		}
}

/*
 * writeback's flush (w->fill): the records data covers whole, inserted
 * under now with the write's generation (in->m held, before the write
 * ends): each extent it covers, and of the extents it covers in part,
 * the blocks it covers.  Stops at the store's or the write budget's
 * first refusal.
 */
static void fill_records(struct hotfs_cache *c, struct hotfs_inode *in,
			 const struct hotfs_key *k, const struct cache_wr *w,
			 uint64_t off, uint64_t len, const char *data,
			 const struct hotfs_stamp *now)
{
	uint64_t end = off + len, e, b;

	for (e = off >> c->ext_shift; e <= (end - 1) >> c->ext_shift &&
	     e < ST_EXT_LIMIT; e++) {
		uint64_t es = e << c->ext_shift, lo, hi;
		uint32_t n = cache_ext_len(c, (uint32_t)e, now->size);

		if (!n)
			return;
		if (es >= off && es + n <= end) {
			if (!cache_within_budget(c, n) ||
			    __cache_insert(c->st, in, k, (uint32_t)e, now,
					   w->gen, data + (es - off), n) < 0)
				return;
			continue;
		}
		lo = es > off ? es : off;
		hi = es + n < end ? es + n : end;
		for (b = (lo + ST_BLOCK - 1) / ST_BLOCK;
		     b < ST_BLK_LIMIT && b * ST_BLOCK < hi; b++) {
			uint32_t r = ST_REC_BLOCK | (uint32_t)b;
			uint32_t bn = cache_ext_len(c, r, now->size);

			if (!bn || b * ST_BLOCK + bn > hi)
				break;
			if (!cache_within_budget(c, bn) ||
			    __cache_insert(c->st, in, k, r, now, w->gen,
					   data + (b * ST_BLOCK - off),
					   bn) < 0)
				return;
		}
	}
}

/*
 * The stamp a write ends at, in *now: the source's attributes through
 * its fd; false if unknown, or racy (a stamp the next change in the same
 * clock tick may keep, on a coarse or network source: what is cached is
 * then dropped, not carried over to it).
 */
static bool end_stamp(const struct cache_wr *w, struct hotfs_stamp *now)
{
	struct stat st;

	if (!w->have_old || !stat_inode(w, &st) ||
	    stamp_racy_now(ts_ns(&st.st_mtim), ts_ns(&st.st_ctim)))
		return false;
	cache_stamp(&st, now);
	return true;
}

/* The stamp the file's records are filed under while writes are in
 * flight (this one among them): false if unknown.  in->m held. */
static bool records_stamp(const struct hotfs_inode *in,
			  struct hotfs_stamp *st)
{
	*st = in->cw.wr_base;
	return in->cw.wr_base_ok;
}

/* The patched records of a write, freed. */
static void wt_free(struct wt_patch *p)
{
	unsigned i;

	for (i = 0; i < p->n; i++)
		free(p->buf[i]);
	p->n = 0;
}

/* The end of a write with no cache: its change ended, its fd let go. */
static void end_uncached(struct hotfs_inode *in, struct cache_wr *w)
{
	pthread_mutex_lock(&in->m);
	change_end(in, w);
	pthread_mutex_unlock(&in->m);
	if (w->fd >= 0)
		ino_fd_put(in);
}

/*
 * writethrough: the touched extents and blocks that were cached, patched
 * into p (read under the records' stamp now: inserted only if no other
 * write began or ended since this one began, when that stamp is still
 * the same), for the size the write leaves unless another change moved
 * it (the stamp the write ends at says); returns that size.
 */
static uint64_t wt_prepare(struct hotfs_cache *c, struct hotfs_inode *in,
			   const struct hotfs_key *k, const struct cache_wr *w,
			   uint64_t off, uint64_t len, const void *data,
			   struct wt_patch *p)
{
	struct hotfs_stamp pbase;
	uint64_t size;
	bool have_base;

	pthread_mutex_lock(&in->m);
	have_base = records_stamp(in, &pbase);
	pthread_mutex_unlock(&in->m);
	size = have_base && pbase.size > off + len ? pbase.size : off + len;
	if (have_base && w->patch && data && len &&
	    len != CACHE_WR_TO_END && off + len > off)
		wt_build(c, k, &pbase, off, len, data, size, p);
	return size;
}

/*
 * The file's records carried over from the stamp base to now but for
 * those holding a byte of [d_lo, d_hi), or all dropped if either stamp
 * is unknown (!known); then the patched records in wt inserted under now
 * with the write's generation.  in->m held, the file's hint set.
 */
static void carry_records(struct hotfs_cache *c, struct hotfs_inode *in,
			  const struct hotfs_key *k, const struct cache_wr *w,
			  bool known, const struct hotfs_stamp *base,
			  const struct hotfs_stamp *now, uint64_t d_lo,
			  uint64_t d_hi, const struct wt_patch *wt)
{
	unsigned i;

	if (!known) {
		st_invalidate(c->st, k, 0, 0, ST_INVAL_WRITE);
		in->cw.cached_extents_hint = 0;
	} else if (st_restamp(c->st, k, base, now, d_lo,
			      d_hi == UINT64_MAX ? ST_TO_END :
			      d_hi - d_lo) == 0) {
		in->cw.cached_extents_hint = 0;
	}
	/* the patched records, unless another write came since */
	for (i = 0; i < wt->n; i++)
		if (__cache_insert(c->st, in, k, wt->rec[i], now, w->gen,
				   wt->buf[i], wt->len[i]) == 0)
			stats_add(&c->stats, STAT_WRITETHROUGH, 1);
	stats_add(&c->stats, STAT_INVAL_WRITE, 1);
}

void cache_write_end(struct hotfs_cache *c, struct hotfs_inode *in,
		     struct cache_wr *w, uint64_t off, uint64_t len,
		     const void *data)
{
	struct hotfs_stamp now = { 0 }, base;
	struct hotfs_key k;
	/* the bytes whose records are dropped: [d_lo, d_hi) */
	uint64_t d_lo = 0, d_hi = 0, wt_size;
	struct wt_patch wt = { .n = 0 };
	bool have_now, have_base, fill;

	if (!c) {
		end_uncached(in, w);
		return;
	}
	cache_key(c, in->dev, in->ino, &k);
	/* a whole copy (hotfs/filecopy.h) is of the file before: its room
	 * back at once (one open of it may still read it) */
	if (c->fc)
		fc_drop(c->fc, &k);
	wt_size = wt_prepare(c, in, &k, w, off, len, data, &wt);
	/* writeback's flush: its bytes become cached data, if the store
	 * takes data now (and the write budget admits them: each record) */
	fill = w->fill && data && len && len != CACHE_WR_TO_END &&
	       off + len > off && st_state(c->st) == ST_OK;
	/*
	 * Under the inode lock, like a promotion's insert: the hint then
	 * says truly whether anything of the file is left, and a promotion
	 * either came before (and is dropped here) or sees the generation
	 * bumped below (and gives up, unless this write missed its bytes:
	 * the note below).
	 *
	 * The other writes in flight are not dropped here: their records
	 * (as they were before them, if they were cached) are carried over
	 * with the rest, are not served while those writes are in flight
	 * (cache_write_busy), and each of them drops its own when it ends,
	 * from the base it was carried to.
	 */
	pthread_mutex_lock(&in->m);
	/* the stamp again, under m, where writes end in turn: each carries
	 * the records to a stamp no older than the one before (a stat taken
	 * before another write ended may be older than the stamp that write
	 * carried them to, and the source's next stat then looks like a
	 * change behind the mount) */
	have_now = end_stamp(w, &now);
	if (!have_now || now.size != wt_size)
		wt_free(&wt);
	fill = fill && have_now;
	if (have_now && len) {
		d_lo = off;
		d_hi = len == CACHE_WR_TO_END || off + len < off ? UINT64_MAX :
		       off + len;
	}
	/* another write may have ended meanwhile, the records carried over
	 * to its stamp */
	have_base = records_stamp(in, &base);
	if (in->cw.cached_extents_hint)
		carry_records(c, in, &k, w, have_now && have_base, &base, &now,
			      d_lo, d_hi, &wt);
	/* the records are now filed under this write's stamp */
	in->cw.wr_base_ok = have_now;
	if (have_now)
		in->cw.wr_base = now;
	/* alone: another change in flight may leave the file otherwise
	 * than this write's bytes say */
	if (fill && in->cw.wr_inflight == 1)
		fill_records(c, in, &k, w, off, len, data, &now);
	/* a read that began during the write may hold bytes from before it
	 * landed: promotions it queued must not be inserted, unless this
	 * write missed their bytes (the note says which it touched) */
	in->cw.write_gen++;
	/* a file of one extent has nothing a write misses worth the notes'
	 * memory (a write there touches the record a promotion makes) */
	if (in->cw.wr_notes || (have_now && have_base &&
			     (now.size > c->extent || base.size > c->extent)))
		__cache_note_write(in, have_now && have_base, w->gen, d_lo,
				   d_hi, &base, &now);
	/* our own write: the kernel's pages and attributes followed it */
	change_end(in, w);
	pthread_mutex_unlock(&in->m);
	if (w->fd >= 0)
		ino_fd_put(in);
	wt_free(&wt);
}
