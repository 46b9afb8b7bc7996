// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store regions: appending records and tombstones (and the queue of
 * tombstones that could not wait for st->lock), group commit, sealing,
 * eviction with reinsertion, and the free-space watermarks.
 *
 * A region is HOLE (no space allocated), FREE (allocated, empty), OPEN (the
 * one being appended to) or SEALED.  New regions come from FREE, then from
 * HOLE while the capacity and the cachedir filesystem's free space allow
 * (fallocate one region at a time), then by recycling the oldest SEALED
 * region.  Recycling copies the extents the keep callback (default: those
 * looked up since written) wants kept to the front of the recycled region,
 * up to 5/8 of it, so hot data survives FIFO eviction (with a quarter, hot
 * extents dropped at the budget cost a cache of a quarter of a zipf
 * workload 1.4 points of misses more than LRU when popularity shifts; a
 * half still 0.1; tests/sim, contrib/bench/NOTEBOOK.md).  Recycling thus
 * writes at most 5/3 of what it frees.
 *
 * Commit order (the crash-safety argument): records are written with
 * pwrite; __st_commit fdatasyncs them, then writes the summary blocks
 * naming them, then fdatasyncs again.  A summary entry is thus never
 * durable before its record.  A region is recycled only after its first
 * summary block was overwritten and that made durable, so a crash can
 * never pair an old summary with new data (the seeded checksums would
 * catch it anyway).
 *
 * Watermarks (cachefilesd): a region is added only if the cachedir's
 * filesystem keeps bcull% free afterwards; below bcull% free, the oldest
 * regions are evicted and their space punched out until brun% is free;
 * below bstop% nothing new is allocated at all.  ENOSPC or EDQUOT on a
 * write makes the store read-only until brun% is free again; any other
 * write error turns it off.  Neither is ever returned to a reader.
 *
 * Locks (their order is in src/store/store_i.h): every function here runs
 * under st->lock (st_evict takes it; st_tombstone_nowait only tries it,
 * and st_rk_note needs idx_lock alone) and takes st->idx_lock only
 * around index look-ups and updates, never across I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <xxhash.h>

#include "store_i.h"

static int io_fail(struct hotfs_store *st, int err, const char *what)
{
	st_set_state(st, err == -ENOSPC || err == -EDQUOT ? ST_READONLY :
		     ST_OFF, err, what);
	return err;
}

static int sync_data(struct hotfs_store *st)
{
	if (!st->dirty)
		return 0;
	if (fdatasync(st->datafd))
		return io_fail(st, -errno, "fdatasync data");
	st->dirty = false;
	return 0;
}

static int write_block(struct hotfs_store *st, uint32_t r, uint32_t b,
		       const void *blk)
{
	uint64_t off = st_region_off(st, r) + st->g.rsize -
		(uint64_t)(b + 1) * ST_BLOCK;
	ssize_t n = pwrite_full(st->datafd, blk, ST_BLOCK, off);

	if (n < 0)
		return io_fail(st, n, "write summary");
	CNT_ADD(st, bytes_written, ST_BLOCK);
	st->dirty = true;
	return 0;
}

int __st_commit(struct hotfs_store *st, bool seal)
{
	uint32_t r = st->open, b, first, last;
	struct st_region *reg;
	uint8_t blk[ST_BLOCK] __attribute__((aligned(8)));
	int err;

	if (r == ST_NIL)
		return sync_data(st);
	reg = &st->regions[r];
	first = st->nsum_disk / ST_EPB;
	last = (st->nsum + ST_EPB - 1) / ST_EPB;
	if (st->nsum_disk < st->nsum || (seal && st->nsum)) {
		err = sync_data(st);
		if (err)
			return err;
		if (seal && first == last)
			first--;	/* rewrite the last block, sealed */
		for (b = first; b < last; b++) {
			struct st_sumhdr *h = (struct st_sumhdr *)blk;
			uint32_t cnt = st->nsum - b * ST_EPB;

			if (cnt > ST_EPB)
				cnt = ST_EPB;
			memset(blk, 0, sizeof(blk));
			h->magic = ST_SUM_MAGIC;
			h->epoch = st->g.epoch;
			h->seq = reg->seq;
			h->index = b;
			h->count = cnt;
			h->flags = seal && b == last - 1 ? ST_SH_SEALED : 0;
			h->data_end = reg->data_end;
			memcpy(blk + sizeof(*h), &st->sum[b * ST_EPB],
			       cnt * sizeof(struct st_sument));
			st_block_seal(blk);
			err = write_block(st, r, b, blk);
			if (err)
				return err;
		}
	}
	err = sync_data(st);
	if (err)
		return err;
	st->nsum_disk = st->nsum;
	st_sum_moved(st);
	st->pend_bytes = 0;
	st->last_commit_ns = st_now_ns();
	CNT_ADD(st, commits, 1);
	if (seal) {
		if (st->nsum) {
			st_rstate(st, r, R_SEALED);
		} else {
			st_rstate(st, r, R_FREE);
			atomic_store(&reg->gen, 0);
		}
		st->open = ST_NIL;
		st->nsum = st->nsum_disk = 0;
		st_sum_moved(st);
	}
	return 0;
}

static uint32_t oldest_sealed(const struct hotfs_store *st)
{
	uint32_t r, best = ST_NIL;

	for (r = 0; r < st->nregions; r++)
		if (st->regions[r].state == R_SEALED &&
		    (best == ST_NIL ||
		     st->regions[r].seq < st->regions[best].seq))
			best = r;
	return best;
}

/* Free space of the cachedir's filesystem, in bytes and of total. */
static int fs_space(const struct hotfs_store *st, uint64_t *avail,
		    uint64_t *total)
{
	struct statvfs vfs;

	*avail = *total = 0;
	if (fstatvfs(st->dirfd, &vfs))
		return -errno;
	*avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	*total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	return 0;
}

static uint32_t grow(struct hotfs_store *st)
{
	uint64_t avail, total, off;
	uint32_t r;

	if (st_regions_allocated(st) >= st_regions_allowed(st))
		return ST_NIL;	/* the reserve has the rest: recycle */

	for (r = 0; r < st->nregions; r++)
		if (st->regions[r].state == R_HOLE)
			break;
	if (r == st->nregions)
		return ST_NIL;
	if (!fs_space(st, &avail, &total)) {
		if (avail < st->g.rsize ||
		    (avail - st->g.rsize) * 100 < (uint64_t)st->bcull * total ||
		    avail * 100 < (uint64_t)st->bstop * total)
			return ST_NIL;
	}
	off = st_region_off(st, r);
	if (fallocate(st->datafd, 0, off, st->g.rsize)) {
		struct stat sb;

		if (errno != EOPNOTSUPP && errno != ENOSPC &&
		    errno != EDQUOT) {
			/* read-only, failing: not a matter of room */
			io_fail(st, -errno, "fallocate data");
			return ST_NIL;
		}
		if (errno != EOPNOTSUPP)
			return ST_NIL;	/* ENOSPC: recycle instead */
		if (fstat(st->datafd, &sb) ||
		    ((uint64_t)sb.st_size < off + st->g.rsize &&
		     ftruncate(st->datafd, off + st->g.rsize)))
			return ST_NIL;
	}
	st_rstate(st, r, R_FREE);
	return r;
}

static void start_region(struct hotfs_store *st, uint32_t r)
{
	struct st_region *reg = &st->regions[r];

	reg->seq = st->next_seq++;
	st_rstate(st, r, R_OPEN);
	reg->data_end = 0;
	st->open = r;
	st->nsum = st->nsum_disk = 0;
	st_sum_moved(st);
	st->pend_bytes = 0;
	atomic_store(&reg->gen, reg->seq);
}

static int open_region(struct hotfs_store *st)
{
	uint32_t r;

	for (r = 0; r < st->nregions; r++)
		if (st->regions[r].state == R_FREE)
			break;
	if (r == st->nregions)
		r = grow(st);
	if (r != ST_NIL) {
		start_region(st, r);
		return 0;
	}
	r = oldest_sealed(st);
	if (r == ST_NIL) {
		/* no region to add and none to recycle: nothing can ever be
		 * cached until the free space is back (__st_watermarks says
		 * so at a tick); read-only, said, not "ok" */
		if (!st->reinserting && st->open == ST_NIL)
			st_no_room(st, true);
		return -ENOSPC;
	}
	return __st_evict_region(st, r, true, false);
}

/* Has the open region room for a record and a summary entry? */
static bool open_has_room(const struct hotfs_store *st, uint32_t reclen,
			  uint32_t align)
{
	const struct st_region *reg;
	uint64_t start, sumb;

	if (st->open == ST_NIL)
		return false;
	reg = &st->regions[st->open];
	start = st_roundup(reg->data_end, align);
	sumb = (uint64_t)ST_BLOCK * ((st->nsum + ST_EPB) / ST_EPB);
	return st->nsum < st->sum_max && start + reclen + sumb <= st->g.rsize;
}

/* Make sure the open region has room for a record and a summary entry. */
static int ensure_room(struct hotfs_store *st, uint32_t reclen,
		       uint32_t align)
{
	int tries, err;

	for (tries = 0; tries < 3; tries++) {
		if (st->open != ST_NIL) {
			if (open_has_room(st, reclen, align))
				return 0;
			if (st->reinserting)
				return -ENOSPC;
			err = __st_commit(st, true);
			if (err)
				return err;
		}
		err = open_region(st);
		if (err)
			return err;
	}
	return -ENOSPC;
}

static int write_record(struct hotfs_store *st, uint64_t off, uint64_t seed,
			const void *buf, uint32_t len, uint32_t reclen)
{
	uint32_t nb = st_nblocks(len), tail = reclen - len, b;
	uint8_t *t = st->tab;
	struct iovec iov[2];
	ssize_t n;

	memset(t, 0, tail);
	if (nb > 1) {
		uint8_t *tab = t + (st_tab_rel(len) - len);

		for (b = 0; b < nb; b++) {
			uint32_t bl = len - b * ST_BLOCK;
			uint64_t h;

			if (bl > ST_BLOCK)
				bl = ST_BLOCK;
			h = XXH3_64bits_withSeed((const uint8_t *)buf +
						 (size_t)b * ST_BLOCK, bl,
						 seed + b + 1);
			memcpy(tab + (size_t)b * 8, &h, 8);
		}
	}
	iov[0].iov_base = (void *)buf;
	iov[0].iov_len = len;
	iov[1].iov_base = t;
	iov[1].iov_len = tail;
	n = pwritev(st->datafd, iov, tail ? 2 : 1, off);
	if (n < 0)
		return -errno;
	if ((uint32_t)n < reclen) {
		/* rare: finish the short write piecewise */
		if ((uint32_t)n < len) {
			ssize_t m = pwrite_full(st->datafd,
						   (const uint8_t *)buf + n,
						   len - n, off + n);
			if (m < 0)
				return m;
			n = len;
		}
		n = pwrite_full(st->datafd, t + (n - len), reclen - n,
				   off + n);
		if (n < 0)
			return n;
	}
	return 0;
}

/* A summary entry for extents of (dev, ino), the rest of it zeroed. */
static void sument_init(struct st_sument *se, uint64_t dev, uint64_t ino,
			uint32_t extno, uint32_t len, uint32_t flags)
{
	memset(se, 0, sizeof(*se));
	se->dev = dev;
	se->ino = ino;
	se->extno = extno;
	se->len = len;
	se->flags = flags;
}

/*
 * Append a record and index it.  stamp is the hash the index keeps: that
 * of the stamp written to the summary, except for an extent copied
 * forward after st_restamp, whose index stamp is newer than its summary's.
 */
static int append(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		  uint32_t extno, uint64_t size, int64_t mtime_ns,
		  int64_t ctime_ns, uint64_t stamp, const void *buf,
		  uint32_t len, const bool *changed)
{
	uint32_t reclen = st_reclen(len), align = st_align_of(len), r, i;
	uint64_t seed;
	struct st_region *reg;
	struct st_sument *se;
	struct st_rec t;
	uint64_t csum;
	uint32_t off;
	int err;

	if (atomic_load(&st->state) != ST_OK)
		return -EROFS;
	pthread_rwlock_wrlock(&st->idx_lock);
	/* a keeper whose file changed since it left the index (below): its
	 * stamp is older than the file's records, which it must never drop
	 * as changed behind the mount */
	if (changed && *changed) {
		pthread_rwlock_unlock(&st->idx_lock);
		return -ESTALE;
	}
	i = idx_drop_other_stamps(st, dev, ino, stamp);
	if (i)
		CNT_ADD(st, inval[ST_INVAL_SOURCE], i);
	pthread_rwlock_unlock(&st->idx_lock);

	err = ensure_room(st, reclen, align);
	if (err)
		return err;
	r = st->open;
	reg = &st->regions[r];
	off = st_roundup(reg->data_end, align);
	seed = st_seed(dev, ino, extno, reg->seq);
	err = write_record(st, st_region_off(st, r) + off, seed, buf, len,
			   reclen);
	if (err)
		return io_fail(st, err, "write extent");
	CNT_ADD(st, bytes_written, reclen + (off - reg->data_end));
	reg->data_end = off + reclen;
	st->pend_bytes += reclen;
	st->dirty = true;

	memset(&t, 0, sizeof(t));
	t.ino = ino;
	t.dev = dev;
	t.rec = extno;
	t.stamp = stamp;
	csum = XXH3_64bits_withSeed(buf, len, seed);
	t.csum = (uint32_t)csum;
	t.region = r;
	t.off = off;
	t.len = len;
	pthread_rwlock_wrlock(&st->idx_lock);
	/* a keeper whose file changed since it left the index: its bytes
	 * stay unreferenced (no index entry, no summary entry) */
	if (changed && *changed) {
		pthread_rwlock_unlock(&st->idx_lock);
		return -ESTALE;
	}
	err = idx_put(st, &t);
	pthread_rwlock_unlock(&st->idx_lock);
	if (err)
		return err;

	se = &st->sum[st->nsum++];
	st_sum_moved(st);
	sument_init(se, dev, ino, extno, len, 0);
	se->off = off;
	se->size = size;
	se->mtime_ns = mtime_ns;
	se->ctime_ns = ctime_ns;
	se->csum = csum;
	CNT_ADD(st, inserts, 1);
	CNT_ADD(st, bytes_inserted, len);
	if (!st->reinserting &&
	    (st->pend_bytes >= st->commit_bytes ||
	     st_now_ns() - st->last_commit_ns >= st->commit_ns))
		__st_commit(st, false);
	return 0;
}

int __st_append(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		uint32_t extno, uint64_t size, int64_t mtime_ns,
		int64_t ctime_ns, const void *buf, uint32_t len)
{
	return append(st, dev, ino, extno, size, mtime_ns, ctime_ns,
		      st_stamp_hash(ino, size, mtime_ns, ctime_ns), buf, len,
		      NULL);
}

int __st_tombstone(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		   uint32_t first, uint32_t count)
{
	int err;

	if (atomic_load(&st->state) != ST_OK)
		return -EROFS;
	err = ensure_room(st, 0, ST_ALIGN_SMALL);
	if (err)
		return err;
	sument_init(&st->sum[st->nsum++], dev, ino, first, count, ST_SE_TOMB);
	st_sum_moved(st);
	return 0;
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
		sument_init(&st->tq[st->ntq], dev, ino, first, count,
			    ST_SE_TOMB);
		__atomic_store_n(&st->ntq, st->ntq + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&st->state_lock);
}

/* Move queued tombstones into the summary.  Under st->lock. */
void __st_drain_tombstones(struct hotfs_store *st)
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

struct victim {
	struct st_sument *v;
	uint32_t n, cap;
};

static int collect(void *arg, const struct st_sument *e)
{
	struct victim *vc = arg;

	if (e->flags & ST_SE_TOMB)
		return 0;
	if (vc->n == vc->cap) {
		uint32_t cap = vc->cap ? vc->cap * 2 : 256;
		void *p = realloc(vc->v, cap * sizeof(*vc->v));

		if (!p)
			return -ENOMEM;
		vc->v = p;
		vc->cap = cap;
	}
	vc->v[vc->n++] = *e;
	return 0;
}

struct keeper {
	uint32_t si;		/* index in the victim's summary */
	uint32_t boff;		/* offset of its bytes in the buffer */
	uint64_t stamp;		/* the index's stamp (st_restamp moves it) */
	bool changed;		/* its file changed while it was out of the
				 * index (st_rk_note): not put back */
};

void st_rk_note(struct hotfs_store *st, uint64_t dev, uint64_t ino)
{
	uint32_t j;

	if (!st->rk_n)
		return;
	pthread_mutex_lock(&st->state_lock);
	for (j = 0; j < st->rk_n; j++) {
		const struct st_sument *e = &st->rk_sum[st->rk[j].si];

		if (e->dev == dev && e->ino == ino)
			st->rk[j].changed = true;
	}
	pthread_mutex_unlock(&st->state_lock);
}

/* The index's record of summary entry e of region r, if it is still
 * that entry's (not replaced, not dropped).  Under idx_lock. */
static bool entry_rec(struct hotfs_store *st, uint32_t r,
		      const struct st_sument *e, struct st_rec *en)
{
	return !idx_get(st, e->dev, e->ino, e->extno, en) &&
	       en->region == r && en->off == e->off;
}

/*
 * Pick the extents of region r to copy forward and read them; returns
 * how many, with their bytes in *bufp.  If the keep function declined
 * none, those past the room for keepers are shown to it too, marked
 * no_room (it cannot keep them; the policy learns that what goes is in
 * use).  Under st->lock.
 */
static uint32_t pick_keepers(struct hotfs_store *st, uint32_t r,
			     const struct victim *vc, struct keeper *k,
			     uint8_t **bufp)
{
	uint64_t gen = st->regions[r].seq, budget = st->g.rsize * 5 / 8,
		 used = 0;
	uint32_t n = 0, j, m = 0;
	bool room = true, declined = false;
	uint8_t *buf;

	pthread_rwlock_rdlock(&st->idx_lock);
	for (j = 0; j < vc->n; j++) {
		const struct st_sument *e = &vc->v[j];
		struct hotfs_extent_info x;
		struct st_rec en;

		if (!entry_rec(st, r, e, &en))
			continue;
		if (used + st_reclen(e->len) + 64 > budget)
			room = false;
		x.key.dev = e->dev;
		x.key.ino = e->ino;
		x.extno = e->extno;
		x.len = e->len;
		x.region = r;
		x.hot = en.hot;
		x.no_room = !room;
		if (!room) {
			if (declined || !st->keep)
				break;
			st->keep(st->keep_arg, &x);
			continue;
		}
		if (st->keep ? !st->keep(st->keep_arg, &x) : !x.hot) {
			declined = true;
			continue;
		}
		k[n].si = j;
		k[n].boff = used;
		k[n].stamp = en.stamp;
		k[n].changed = false;
		used += st_reclen(e->len) + 64;
		n++;
	}
	pthread_rwlock_unlock(&st->idx_lock);
	if (!n)
		return 0;
	buf = malloc(used);
	if (!buf)
		return 0;
	for (j = 0; j < n; j++) {
		const struct st_sument *e = &vc->v[k[j].si];
		uint64_t seed = st_seed(e->dev, e->ino, e->extno, gen);
		ssize_t got = pread_full(st->datafd, buf + k[j].boff,
					    e->len, st_region_off(st, r) +
					    e->off);

		if (got < 0)
			continue;	/* not worth keeping */
		if (got != (ssize_t)e->len ||
		    XXH3_64bits_withSeed(buf + k[j].boff, e->len, seed) !=
		    e->csum) {
			/* damaged on the device: found, so counted */
			CNT_ADD(st, inval[ST_INVAL_CSUM], 1);
			continue;
		}
		k[m++] = k[j];
	}
	*bufp = buf;
	return m;
}

/*
 * The keepers' stamps as the index has them now (under idx_lock,
 * exclusive): st_restamp may have moved them since pick_keepers.
 */
static void refresh_keepers(struct hotfs_store *st, uint32_t r,
			    const struct victim *vc, struct keeper *k,
			    uint32_t nk)
{
	uint32_t j;

	for (j = 0; j < nk; j++) {
		const struct st_sument *e = &vc->v[k[j].si];
		struct st_rec en;

		if (entry_rec(st, r, e, &en))
			k[j].stamp = en.stamp;
	}
}

static int in_region(void *arg, const struct st_rec *r)
{
	return r->region == *(const uint32_t *)arg ? BT_DROP : BT_KEEP;
}

/*
 * Drop region r's entries from the index (under idx_lock, exclusive).
 * alive[j] tells whether summary entry j was still live: a keeper that a
 * reader dropped meanwhile (stale stamp, bad checksum) is not copied.
 * Without a summary (scan), every record of the index is looked at.
 */
static uint32_t drop_region_entries(struct hotfs_store *st, uint32_t r,
				    const struct victim *vc, bool scan,
				    uint8_t *alive)
{
	uint32_t j, n = 0;

	if (scan)
		return idx_walk_all(st, in_region, &r);
	for (j = 0; j < vc->n; j++) {
		const struct st_sument *e = &vc->v[j];

		if (idx_del_at(st, e->dev, e->ino, e->extno, r, e->off)) {
			if (alive)
				alive[j] = 1;
			n++;
		}
	}
	return n;
}

/*
 * Evict region r: drop its extents from the index, make its generation
 * invalid, kill its summary.  reuse: make it the open region, with the
 * keepers copied to its front; punch: give its space back to the fs.
 */
int __st_evict_region(struct hotfs_store *st, uint32_t r, bool reuse,
		      bool punch)
{
	struct st_region *reg = &st->regions[r];
	struct victim vc = { NULL, 0, 0 };
	struct keeper *k = NULL;
	uint8_t *kbuf = NULL, *alive = NULL, zero[ST_BLOCK];
	uint32_t nk = 0, j;
	struct st_scan res;
	bool scan;
	int err = 0;

	if (r == st->open) {
		err = __st_commit(st, true);
		if (err)
			return err;
	}
	scan = st_load_summary(st, r, collect, &vc, &res) ||
		res.seq != reg->seq || res.torn || res.bad_entries;
	if (reuse && !scan && vc.n) {
		k = malloc(vc.n * sizeof(*k));
		alive = calloc(vc.n, 1);
		if (k && alive)
			nk = pick_keepers(st, r, &vc, k, &kbuf);
	}

	pthread_rwlock_wrlock(&st->idx_lock);
	if (nk)
		refresh_keepers(st, r, &vc, k, nk);
	CNT_ADD(st, evicted_extents,
		drop_region_entries(st, r, &vc, scan, alive));
	atomic_store(&reg->gen, 0);
	/* from here until they are back, changes to their files are noted */
	st->rk = k;
	st->rk_n = nk;
	st->rk_sum = vc.v;
	pthread_rwlock_unlock(&st->idx_lock);
	CNT_ADD(st, evictions, 1);
	/* recycled for an insert: full; freed: room again (st_filling) */
	atomic_store_explicit(&st->full, reuse, memory_order_relaxed);

	st_rstate(st, r, R_FREE);
	if (punch && !fallocate(st->datafd, FALLOC_FL_PUNCH_HOLE |
				FALLOC_FL_KEEP_SIZE, st_region_off(st, r),
				st->g.rsize)) {
		st_rstate(st, r, R_HOLE);
		st->dirty = true;
	} else {
		memset(zero, 0, sizeof(zero));
		err = write_block(st, r, 0, zero);
		if (err)
			goto out;
	}
	if (!reuse)
		goto out;
	/* the dead summary must be durable before new data lands */
	err = sync_data(st);
	if (err)
		goto out;
	start_region(st, r);
	st->reinserting = true;
	for (j = 0; j < nk; j++) {
		const struct st_sument *e = &vc.v[k[j].si];

		if (!alive[k[j].si])
			continue;
		if (!append(st, e->dev, e->ino, e->extno, e->size,
			    e->mtime_ns, e->ctime_ns, k[j].stamp,
			    kbuf + k[j].boff, e->len, &k[j].changed))
			CNT_ADD(st, reinserted, 1);
	}
	st->reinserting = false;
out:
	if (st->rk_n) {
		pthread_rwlock_wrlock(&st->idx_lock);
		st->rk = NULL;
		st->rk_n = 0;
		st->rk_sum = NULL;
		pthread_rwlock_unlock(&st->idx_lock);
	}
	free(alive);
	free(kbuf);
	free(k);
	free(vc.v);
	return err;
}

/*
 * Would an insert of len bytes recycle a region now: no free region, none
 * to grow into, and no room left in the open one?  Under st->lock.
 */
static bool must_recycle(const struct hotfs_store *st, uint32_t len)
{
	/* nused: regions OPEN or SEALED; the others are FREE or HOLE, and
	 * with a reserve (st_set_reserve) no HOLE is grown into */
	return atomic_load(&st->nused) >= st_regions_allowed(st) &&
	       !open_has_room(st, st_reclen(len), st_align_of(len));
}

/* Summary blocks a commit of the open region writes, with n entries. */
static uint64_t sum_blocks_owed(const struct hotfs_store *st, uint32_t n,
				bool seal)
{
	uint32_t first = st->nsum_disk / ST_EPB, last = (n + ST_EPB - 1) / ST_EPB;

	if (seal && n && first == last)
		first--;
	return last > first ? (uint64_t)(last - first) * ST_BLOCK : 0;
}

uint64_t st_insert_cost(struct hotfs_store *st, uint32_t len)
{
	uint32_t reclen = st_reclen(len), align = st_align_of(len);
	uint64_t cost;

	pthread_mutex_lock(&st->lock);
	if (open_has_room(st, reclen, align)) {
		const struct st_region *reg = &st->regions[st->open];

		cost = st_roundup(reg->data_end, align) - reg->data_end +
		       reclen + sum_blocks_owed(st, st->nsum + 1, false);
	} else {
		/* the open region sealed, and a new one: in a region
		 * recycled, what it keeps is copied to its front (at most
		 * the region) */
		cost = st->open == ST_NIL ? 0 :
		       sum_blocks_owed(st, st->nsum, true);
		cost += must_recycle(st, len) ? st->g.rsize :
			reclen + ST_BLOCK;
	}
	pthread_mutex_unlock(&st->lock);
	return cost;
}

int st_next_victim(struct hotfs_store *st, uint32_t len,
		   struct hotfs_key *key, uint32_t *rec)
{
	struct victim vc = { NULL, 0, 0 };
	struct st_scan res;
	uint32_t r, j, pick = ST_NIL;
	struct st_rec en;
	int err = -ENOENT;

	pthread_mutex_lock(&st->lock);
	if (atomic_load(&st->state) != ST_OK || !must_recycle(st, len))
		goto out;
	/* no room left that no insert used: st_filling says so from now
	 * (the read path stops admitting at the first miss) */
	atomic_store_explicit(&st->full, true, memory_order_relaxed);
	/* while the region it copied lives, it is the oldest (a region
	 * sealed later has a later seq): no look at every region */
	r = st->nv_region;
	if (!st->nv_set || st->regions[r].state != R_SEALED ||
	    st->regions[r].seq != st->nv_seq) {
		r = oldest_sealed(st);
		if (r == ST_NIL)
			goto out;
		free(st->nv);
		st->nv = NULL;
		st->nv_n = st->nv_pos = 0;
		/* an unreadable summary names none, and is not read again
		 * for every candidate */
		st->nv_set = true;
		st->nv_region = r;
		st->nv_seq = st->regions[r].seq;
		if (st_load_summary(st, r, collect, &vc, &res) ||
		    res.seq != st->nv_seq) {
			free(vc.v);
			goto out;
		}
		st->nv = vc.v;
		st->nv_n = vc.n;
	}
	/* entries before nv_pos were read or gone when last looked at;
	 * neither changes while the region lives */
	pthread_rwlock_rdlock(&st->idx_lock);
	for (j = st->nv_pos; j < st->nv_n; j++)
		if (entry_rec(st, r, &st->nv[j], &en) && !en.hot)
			break;
	st->nv_pos = j;
	if (j < st->nv_n)
		pick = j;
	for (j = 0; pick == ST_NIL && j < st->nv_n; j++)
		if (entry_rec(st, r, &st->nv[j], &en))
			pick = j;
	pthread_rwlock_unlock(&st->idx_lock);
	if (pick != ST_NIL) {
		key->dev = st->nv[pick].dev;
		key->ino = st->nv[pick].ino;
		*rec = st->nv[pick].extno;
		err = 0;
	}
out:
	pthread_mutex_unlock(&st->lock);
	return err;
}

bool __st_has_room(struct hotfs_store *st)
{
	uint64_t avail, total;
	uint32_t r;

	for (r = 0; r < st->nregions; r++)
		if (st->regions[r].state != R_HOLE)
			return true;
	if (fs_space(st, &avail, &total))
		return true;	/* cannot tell: the inserts will find out */
	/* as grow() decides */
	return avail >= st->g.rsize &&
	       (avail - st->g.rsize) * 100 >= (uint64_t)st->bcull * total &&
	       avail * 100 >= (uint64_t)st->bstop * total;
}

/* Give the reserve its space: punch FREE regions, then evict the oldest
 * sealed ones, while more regions hold space than it leaves. */
static int trim_to_reserve(struct hotfs_store *st)
{
	uint32_t allowed = st_regions_allowed(st), n = st_regions_allocated(st), r;
	bool evicted = false;
	int err;

	for (r = 0; r < st->nregions && n > allowed; r++) {
		if (st->regions[r].state != R_FREE ||
		    fallocate(st->datafd, FALLOC_FL_PUNCH_HOLE |
			      FALLOC_FL_KEEP_SIZE, st_region_off(st, r),
			      st->g.rsize))
			continue;
		st_rstate(st, r, R_HOLE);
		st->dirty = true;
		n--;
	}
	while (n > allowed) {
		r = oldest_sealed(st);
		if (r == ST_NIL)
			break;
		err = __st_evict_region(st, r, false, true);
		if (err)
			return err;
		evicted = true;
		n = st_regions_allocated(st);
	}
	/* the space went to the reserve, not back to the store: it has no
	 * room an insert has not used (st_filling), as before */
	if (evicted)
		atomic_store(&st->full, true);
	return 0;
}

int __st_watermarks(struct hotfs_store *st)
{
	uint64_t avail, total;
	int n = 0, err;

	err = trim_to_reserve(st);
	if (err)
		return err;
	err = fs_space(st, &avail, &total);
	if (err)
		return err;
	while (avail * 100 < (uint64_t)st->bcull * total ||
	       (n && avail * 100 < (uint64_t)st->brun * total)) {
		uint32_t r = oldest_sealed(st);

		if (r == ST_NIL)
			break;
		err = __st_evict_region(st, r, false, true);
		if (err)
			return err;
		CNT_ADD(st, culls, 1);
		n++;
		err = fs_space(st, &avail, &total);
		if (err)
			return err;
	}
	if (atomic_load(&st->state) == ST_READONLY && st->state_err &&
	    avail * 100 >= (uint64_t)st->brun * total)
		st_clear_space_state(st);
	return n;
}

int st_evict(struct hotfs_store *st, unsigned nregions)
{
	unsigned n = 0;
	int err = 0;

	pthread_mutex_lock(&st->lock);
	while (n < nregions) {
		uint32_t r = oldest_sealed(st);

		if (r == ST_NIL && st->open != ST_NIL && st->nsum)
			r = st->open;
		else if (r == ST_NIL)
			break;
		err = __st_evict_region(st, r, false, false);
		if (err)
			break;
		n++;
	}
	if (!err)
		err = sync_data(st);
	pthread_mutex_unlock(&st->lock);
	return err ? err : (int)n;
}
