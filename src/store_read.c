// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store read side: lookup, what to read, verification, the
 * synchronous st_read helper, and iteration.
 *
 * The read path is: st_lookup under the shared index lock (plus an atomic
 * "hot" mark for reinsertion), the caller's own read of the data file, then
 * st_verify.  st_verify checks the seeded xxh3 of the whole extent, or of
 * each ST_BLOCK block against the record's checksum table, and then the
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

static void fill_loc(struct hotfs_store *st, const struct st_entry *e,
		     uint32_t len, struct hotfs_loc *loc)
{
	loc->fd = st->datafd;
	loc->len = len;
	loc->off = st_region_off(st, e->region) + e->off;
	loc->tab_off = st_nblocks(len) > 1 ? loc->off + st_tab_rel(len) : 0;
	loc->gen = atomic_load(&st->regions[e->region].gen);
	loc->csum = e->csum;
	loc->region = e->region;
	loc->extno = e->extno;
	loc->key.dev = e->dev;
	loc->key.ino = e->ino;
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

/*
 * 0 and *loc if extent extno of key is cached for this stamp; -ENOENT
 * otherwise.  A stamp that differs drops every extent of the file.
 */
int st_lookup(struct hotfs_store *st, const struct hotfs_key *key,
	      uint32_t extno, const struct hotfs_stamp *stamp,
	      struct hotfs_loc *loc)
{
	uint64_t h;
	uint32_t i, n;
	struct st_entry *e;

	if (atomic_load_explicit(&st->state, memory_order_relaxed) == ST_OFF ||
	    key->dev > UINT32_MAX)
		return -ENOENT;
	h = st_stamp_hash(stamp->ino, stamp->size, stamp->mtime_ns,
			  stamp->ctime_ns);
	pthread_rwlock_rdlock(&st->idx_lock);
	i = idx_find(st, key->dev, key->ino, extno);
	if (i == ST_NIL) {
		pthread_rwlock_unlock(&st->idx_lock);
		return -ENOENT;
	}
	e = &st->ent[i];
	if (e->stamp == h) {
		uint32_t lf = __atomic_fetch_or(lenfl_of(e), E_HOT,
						__ATOMIC_RELAXED);

		fill_loc(st, e, lf & 0xffffffu, loc);
		pthread_rwlock_unlock(&st->idx_lock);
		return 0;
	}
	pthread_rwlock_unlock(&st->idx_lock);
	pthread_rwlock_wrlock(&st->idx_lock);
	n = idx_drop_file(st, key->dev, key->ino, 0, 0, true, h);
	pthread_rwlock_unlock(&st->idx_lock);
	CNT_ADD(st, inval[ST_INVAL_SOURCE], n);
	return -ENOENT;
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
	uint32_t i;

	pthread_rwlock_wrlock(&st->idx_lock);
	i = idx_find(st, loc->key.dev, loc->key.ino, loc->extno);
	if (i != ST_NIL && st->ent[i].region == loc->region &&
	    st_region_off(st, loc->region) + st->ent[i].off == loc->off) {
		idx_del(st, i);
		CNT_ADD(st, inval[ST_INVAL_CSUM], 1);
	}
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
		bad = XXH3_64bits_withSeed(buf, len, seed) != loc->csum;
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

	err = st_lookup(st, key, extno, stamp, &loc);
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

int st_file_cached(struct hotfs_store *st, const struct hotfs_key *key,
		   const struct hotfs_stamp *stamp, uint32_t first,
		   uint32_t end, uint64_t *bytes, uint64_t *records)
{
	uint64_t h = st_stamp_hash(stamp->ino, stamp->size, stamp->mtime_ns,
				   stamp->ctime_ns);
	uint32_t i;

	*bytes = *records = 0;
	if (key->dev > UINT32_MAX)
		return 0;
	pthread_rwlock_rdlock(&st->idx_lock);
	for (i = idx_file_first(st, key->dev, key->ino); i != ST_NIL;
	     i = st->ent[i].fnext) {
		const struct st_entry *e = &st->ent[i];
		uint64_t x;

		if (e->ino != key->ino || e->dev != key->dev ||
		    e->stamp != h)
			continue;
		x = st_rec_ext(st, e->extno);
		if (x < first || x >= end)
			continue;
		/* st_lookup marks entries hot under the shared lock too */
		*bytes += __atomic_load_n(lenfl_of(e), __ATOMIC_RELAXED) &
			  0xffffffu;
		(*records)++;
	}
	pthread_rwlock_unlock(&st->idx_lock);
	return 0;
}

int st_iterate(struct hotfs_store *st, st_iter_fn fn, void *arg)
{
	uint32_t i;
	int ret = 0;

	pthread_rwlock_rdlock(&st->idx_lock);
	for (i = 0; i < st->ent_hwm && !ret; i++) {
		struct st_entry *e = &st->ent[i];
		uint32_t lf = __atomic_load_n(lenfl_of(e), __ATOMIC_RELAXED);
		struct hotfs_extent_info x;

		if (!(lf & E_VALID))
			continue;
		x.key.dev = e->dev;
		x.key.ino = e->ino;
		x.extno = e->extno;
		x.len = lf & 0xffffffu;
		x.region = e->region;
		x.hot = lf & E_HOT;
		x.no_room = false;
		ret = fn(arg, &x);
	}
	pthread_rwlock_unlock(&st->idx_lock);
	return ret;
}
