// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store read side: lookup, what to read, verification, the
 * synchronous st_read helper, and iteration.
 *
 * The read path is: st_lookup under the shared index lock (plus an atomic
 * "hot" mark for reinsertion), the caller's own read of the data file, then
 * st_verify.  st_verify checks the seeded xxh3 of the whole extent (its
 * low 32 bits: what the index keeps in RAM, as btrfs keeps a crc32c a
 * block; the summary on the SSD has all 64), or of each ST_BLOCK block
 * against the record's checksum table (64 bits each), and then the
 * region's generation: a region recycled while the caller was reading
 * changes generation before it is rewritten, so such a read is reported
 * -ESTALE and not trusted even if it happened to look right.  Data that
 * fails its checksum is counted and its entry dropped (-EBADMSG).  Any
 * negative return means "read the source instead".
 *
 * Locks: st->idx_lock, shared; exclusive only to drop an entry.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "store_i.h"

static void fill_loc(struct hotfs_store *st, const struct st_rec *r,
		     struct hotfs_loc *loc)
{
	loc->fd = st->datafd;
	loc->len = r->len;
	loc->off = st_region_off(st, r->region) + r->off;
	loc->tab_off = st_nblocks(r->len) > 1 ?
		       loc->off + st_tab_rel(r->len) : 0;
	loc->gen = atomic_load(&st->regions[r->region].gen);
	loc->csum = r->csum;
	loc->region = r->region;
	loc->extno = r->rec;
	loc->key.dev = r->dev;
	loc->key.ino = r->ino;
}

bool st_filling(struct hotfs_store *st)
{
	return atomic_load_explicit(&st->state, memory_order_relaxed) ==
	       ST_OK &&
	       !atomic_load_explicit(&st->full, memory_order_relaxed);
}

uint32_t st_extent(const struct hotfs_store *st)
{
	return st->g.extent;
}

int st_data_fd(const struct hotfs_store *st)
{
	return st->datafd;
}

/* st_lookup, and st_peek (drop: false) */
static int lookup(struct hotfs_store *st, const struct hotfs_key *key,
		  uint32_t extno, const struct hotfs_stamp *stamp,
		  struct hotfs_loc *loc, bool drop)
{
	struct st_rec r;
	uint64_t h;
	uint32_t n;
	int rc;

	if (atomic_load_explicit(&st->state, memory_order_relaxed) == ST_OFF ||
	    key->dev > UINT32_MAX)
		return -ENOENT;
	h = st_stamp_hash(stamp->ino, stamp->size, stamp->mtime_ns,
			  stamp->ctime_ns);
	pthread_rwlock_rdlock(&st->idx_lock);
	rc = idx_lookup(st, key->dev, key->ino, extno, h, &r);
	pthread_rwlock_unlock(&st->idx_lock);
	if (rc == 0) {
		fill_loc(st, &r, loc);
		return 0;
	}
	if (rc == -ENOENT)
		return -ENOENT;
	if (!drop)
		return -ESTALE;
	pthread_rwlock_wrlock(&st->idx_lock);
	n = idx_drop_other_stamps(st, key->dev, key->ino, h);
	pthread_rwlock_unlock(&st->idx_lock);
	CNT_ADD(st, inval[ST_INVAL_SOURCE], n);
	return -ENOENT;
}

/*
 * 0 and *loc if extent extno of key is cached for this stamp; -ENOENT
 * otherwise.  A stamp that differs drops every extent of the file.
 */
int st_lookup(struct hotfs_store *st, const struct hotfs_key *key,
	      uint32_t extno, const struct hotfs_stamp *stamp,
	      struct hotfs_loc *loc)
{
	return lookup(st, key, extno, stamp, loc, true);
}

int st_peek(struct hotfs_store *st, const struct hotfs_key *key,
	    uint32_t extno, const struct hotfs_stamp *stamp,
	    struct hotfs_loc *loc)
{
	return lookup(st, key, extno, stamp, loc, false);
}

int st_loc_span(const struct hotfs_loc *loc, uint32_t off, uint32_t len,
		struct hotfs_span *sp)
{
	uint64_t end = (uint64_t)off + len;
	uint32_t b0, b1;

	if (off >= loc->len || !len)
		return -EINVAL;
	if (end > loc->len)
		end = loc->len;
	memset(sp, 0, sizeof(*sp));
	if (!loc->tab_off || (off == 0 && end == loc->len)) {
		sp->data_off = loc->off;
		sp->data_len = loc->len;
		return 0;
	}
	b0 = off / ST_BLOCK;
	b1 = (end + ST_BLOCK - 1) / ST_BLOCK;
	sp->ext_off = b0 * ST_BLOCK;
	sp->data_off = loc->off + sp->ext_off;
	sp->data_len = (b1 * ST_BLOCK < loc->len ? b1 * ST_BLOCK : loc->len) -
		sp->ext_off;
	sp->tab_off = loc->tab_off + (uint64_t)b0 * 8;
	sp->tab_len = (b1 - b0) * 8;
	return 0;
}

static void drop_loc(struct hotfs_store *st, const struct hotfs_loc *loc)
{
	pthread_rwlock_wrlock(&st->idx_lock);
	if (idx_del_at(st, loc->key.dev, loc->key.ino, loc->extno,
		       loc->region, loc->off - st_region_off(st, loc->region)))
		CNT_ADD(st, inval[ST_INVAL_CSUM], 1);
	pthread_rwlock_unlock(&st->idx_lock);
}

/* Nonzero if the blocks in buf do not match their checksums. */
static int blocks_bad(struct hotfs_store *st, const struct hotfs_loc *loc,
		      uint64_t seed, uint32_t ext_off, const uint8_t *buf,
		      uint32_t len, const uint8_t *tab)
{
	uint32_t b0 = ext_off / ST_BLOCK, nb = st_nblocks(len), b;
	uint8_t *own = NULL;
	int bad = 0;

	if (!tab) {
		ssize_t n;

		own = malloc((size_t)nb * 8);
		if (!own)
			return -ENOMEM;
		n = pread_full(loc->fd, own, (size_t)nb * 8,
				  loc->tab_off + (uint64_t)b0 * 8);
		if (n < 0)
			st_report_io_error(st, loc, n);
		if (n != (ssize_t)nb * 8) {
			free(own);
			return 1;
		}
		tab = own;
	}
	for (b = 0; b < nb && !bad; b++) {
		uint32_t bl = len - b * ST_BLOCK;
		uint64_t want;

		if (bl > ST_BLOCK)
			bl = ST_BLOCK;
		memcpy(&want, tab + (size_t)b * 8, 8);
		bad = XXH3_64bits_withSeed(buf + (size_t)b * ST_BLOCK, bl,
					   seed + b0 + b + 1) != want;
	}
	free(own);
	return bad;
}

/*
 * Check bytes the caller read for [ext_off, ext_off + len) of loc's
 * extent: either the whole extent, or whole blocks (the last one may end
 * at the extent's end) with tab holding their checksums as read from
 * span.tab_off (NULL: st_verify reads them).  0 = good; -ESTALE = the
 * region was reused meanwhile; -EBADMSG = corrupt, entry dropped.
 */
int st_verify(struct hotfs_store *st, const struct hotfs_loc *loc,
	      uint32_t ext_off, const void *buf, uint32_t len,
	      const void *tab)
{
	uint64_t seed = st_seed(loc->key.dev, loc->key.ino, loc->extno,
				loc->gen);
	uint64_t end = (uint64_t)ext_off + len;
	int bad;

	if (loc->region >= st->nregions)
		return -EINVAL;
	if (ext_off == 0 && len == loc->len) {
		/* the index keeps the low half of the checksum */
		bad = (uint32_t)XXH3_64bits_withSeed(buf, len, seed) !=
		      (uint32_t)loc->csum;
	} else {
		if (!loc->tab_off || ext_off % ST_BLOCK || !len ||
		    end > loc->len || (end < loc->len && len % ST_BLOCK))
			return -EINVAL;
		bad = blocks_bad(st, loc, seed, ext_off, buf, len, tab);
		if (bad < 0)
			return bad;
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&st->regions[loc->region].gen) != loc->gen) {
		CNT_ADD(st, stale_reads, 1);
		return -ESTALE;
	}
	if (!bad)
		return 0;
	drop_loc(st, loc);
	return -EBADMSG;
}

/* The caller's read of the data file failed: a dying SSD turns us off. */
void st_report_io_error(struct hotfs_store *st, const struct hotfs_loc *loc,
			int err)
{
	(void)loc;
	if (err > 0)
		err = -err;
	if (err == -EIO || err == -ENXIO || err == -ENODEV || err == -EBADF)
		st_set_state(st, ST_OFF, err, "read");
}

/*
 * Synchronous read of [off, off + len) of a cached extent, verified.
 * Returns the bytes copied (short at the extent's end), or -errno:
 * -ENOENT for a miss, -EBADMSG/-ESTALE/-EIO when the source must be read.
 * It never drops the file's records: under another stamp they answer
 * -ESTALE (st_peek), as a caller's stamp may be older than the records'
 * (writethrough's patch reads under the stamp the records had, and a
 * write ending meanwhile carries them to its own: they are not changed
 * behind the mount).
 */
ssize_t st_read(struct hotfs_store *st, const struct hotfs_key *key,
		uint32_t extno, const struct hotfs_stamp *stamp, uint32_t off,
		void *buf, size_t len)
{
	struct hotfs_loc loc;
	struct hotfs_span sp;
	uint8_t *tmp;
	size_t cnt;
	ssize_t n, nt;
	int err;

	err = st_peek(st, key, extno, stamp, &loc);
	if (err)
		return err;
	if (off >= loc.len || !len)
		return 0;
	if (len > UINT32_MAX)
		len = UINT32_MAX;
	st_loc_span(&loc, off, len, &sp);
	tmp = malloc((size_t)sp.data_len + sp.tab_len);
	if (!tmp)
		return -ENOMEM;
	n = pread_full(loc.fd, tmp, sp.data_len, sp.data_off);
	nt = n >= 0 && sp.tab_len ? pread_full(loc.fd, tmp + sp.data_len,
						 sp.tab_len, sp.tab_off) : 0;
	if (n < 0 || nt < 0) {
		n = n < 0 ? n : nt;
		st_report_io_error(st, &loc, n);
		free(tmp);
		return n;
	}
	/* a short read (truncated data file) fails verification below */
	if (n < sp.data_len || nt < sp.tab_len)
		memset(tmp, 0, (size_t)sp.data_len + sp.tab_len);
	err = st_verify(st, &loc, sp.ext_off, tmp, sp.data_len,
			sp.tab_len ? tmp + sp.data_len : NULL);
	if (err) {
		free(tmp);
		return err;
	}
	cnt = loc.len - off < len ? loc.len - off : len;
	memcpy(buf, tmp + (off - sp.ext_off), cnt);
	free(tmp);
	return cnt;
}

struct cached {
	uint64_t bytes, records;
};

static int count_rec(void *arg, const struct st_rec *r)
{
	struct cached *c = arg;

	c->bytes += r->len;
	c->records++;
	return BT_KEEP;
}

int st_file_cached(struct hotfs_store *st, const struct hotfs_key *key,
		   const struct hotfs_stamp *stamp, uint32_t first,
		   uint32_t end, uint64_t *bytes, uint64_t *records)
{
	uint64_t h = st_stamp_hash(stamp->ino, stamp->size, stamp->mtime_ns,
				   stamp->ctime_ns), s;
	uint64_t bpe = st->g.extent / ST_BLOCK, b0 = first * bpe,
		 b1 = (uint64_t)end * bpe;
	struct cached c = { 0, 0 };

	*bytes = *records = 0;
	if (key->dev > UINT32_MAX || first >= end)
		return 0;
	if (end > ST_EXT_LIMIT)
		end = ST_EXT_LIMIT;
	if (b1 > ST_BLK_LIMIT)
		b1 = ST_BLK_LIMIT;
	pthread_rwlock_rdlock(&st->idx_lock);
	if (idx_file_stamp(st, key->dev, key->ino, &s) && s == h) {
		/* the extents, then the blocks within them */
		if (first < end)
			idx_walk(st, key->dev, key->ino, first, end - 1,
				 count_rec, &c);
		if (b0 < b1)
			idx_walk(st, key->dev, key->ino, ST_REC_BLOCK | b0,
				 ST_REC_BLOCK | (b1 - 1), count_rec, &c);
	}
	pthread_rwlock_unlock(&st->idx_lock);
	*bytes = c.bytes;
	*records = c.records;
	return 0;
}

struct iter {
	st_iter_fn fn;
	void *arg;
	int ret;
};

static int iter_one(void *arg, const struct st_rec *r)
{
	struct iter *it = arg;
	struct hotfs_extent_info x;

	x.key.dev = r->dev;
	x.key.ino = r->ino;
	x.extno = r->rec;
	x.len = r->len;
	x.region = r->region;
	x.hot = r->hot;
	x.no_room = false;
	it->ret = it->fn(it->arg, &x);
	return it->ret ? BT_STOP : BT_KEEP;
}

int st_iterate(struct hotfs_store *st, st_iter_fn fn, void *arg)
{
	struct iter it = { fn, arg, 0 };

	pthread_rwlock_rdlock(&st->idx_lock);
	idx_walk_all(st, iter_one, &it);
	pthread_rwlock_unlock(&st->idx_lock);
	return it.ret;
}
