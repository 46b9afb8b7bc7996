// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store: carry a file's extents over a write made through the
 * mount (st_restamp, see include/hotfs/store.h).
 *
 * A write changes the file's stamp (mtime, ctime, maybe size), which would
 * make every cached extent of the file stale.  The extents the write did
 * not touch still hold the file's bytes, so they are given the new stamp
 * in the in-memory index; the touched ones, and any the size change makes
 * partial or out of range, are dropped: records (extents or blocks) that
 * hold a written byte, so a 4 KiB write costs one block record, or the
 * extent record it falls in.  Only memory changes: the region
 * summaries keep the old stamp, so after a restart these extents are
 * stale and dropped at their first lookup (a restart forgets writes'
 * carry-overs, it never serves them wrongly).  If the file's records
 * do not have the expected old stamp (the index keeps one stamp a file),
 * the file changed behind the mount's back: everything is dropped.
 *
 * What it walks: the records that hold the written bytes (a range of
 * extents and a range of blocks: the file's records are ordered by
 * record number in the index), or every record of the file if the size
 * changed; a write of a 4 KiB block of a file with a million cached
 * blocks looks at a few of them, not all.
 *
 * Lock: the index lock, taken for writing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

struct restamp {
	const struct hotfs_store *st;
	uint64_t drop_off, drop_end, keep_end;
	bool drop, resize;
	uint32_t kept;		/* the file's records left */
};

/* Drop a record that holds a written byte or that the size change makes
 * partial or out of range; the others stay (under the file's stamp). */
static int restamp_one(void *arg, const struct st_rec *r)
{
	struct restamp *rs = arg;
	uint64_t start = st_rec_off(r->rec, rs->st->g.extent);
	uint64_t end = start + r->len;

	if ((rs->drop && start < rs->drop_end && end > rs->drop_off) ||
	    (rs->resize && (end > rs->keep_end ||
			    r->len < st_rec_max(r->rec, rs->st->g.extent))))
		return BT_DROP;
	return BT_KEEP;
}

/*
 * Walk the records a write of [drop_off, drop_end) may have touched: the
 * extents and the blocks that hold its bytes, or, if the size changed,
 * every record of the file.  Returns how many were dropped.
 */
static uint32_t restamp_walk(struct hotfs_store *st,
			     const struct hotfs_key *key, struct restamp *rs)
{
	uint64_t e0, e1, b0, b1;
	uint32_t n;

	if (!rs->resize && !rs->drop)
		return 0;
	if (rs->resize)
		return idx_walk(st, key->dev, key->ino, 0, UINT32_MAX,
				restamp_one, rs);
	e0 = rs->drop_off / st->g.extent;
	e1 = (rs->drop_end - 1) / st->g.extent;
	b0 = rs->drop_off / ST_BLOCK;
	b1 = (rs->drop_end - 1) / ST_BLOCK;
	n = 0;
	if (e0 < ST_EXT_LIMIT)
		n += idx_walk(st, key->dev, key->ino, e0,
			      e1 < ST_EXT_LIMIT ? e1 : ST_EXT_LIMIT - 1,
			      restamp_one, rs);
	if (b0 < ST_BLK_LIMIT)
		n += idx_walk(st, key->dev, key->ino, ST_REC_BLOCK | b0,
			      ST_REC_BLOCK | (b1 < ST_BLK_LIMIT ? b1 :
					      ST_BLK_LIMIT - 1),
			      restamp_one, rs);
	return n;
}

int st_restamp(struct hotfs_store *st, const struct hotfs_key *key,
	       const struct hotfs_stamp *old, const struct hotfs_stamp *now,
	       uint64_t drop_off, uint64_t drop_len)
{
	uint64_t h_old, h_new, cur;
	struct restamp rs;
	uint32_t n = 0;
	bool stale = false;

	if (key->dev > UINT32_MAX)
		return 0;
	h_old = st_stamp_hash(old->ino, old->size, old->mtime_ns,
			      old->ctime_ns);
	h_new = st_stamp_hash(now->ino, now->size, now->mtime_ns,
			      now->ctime_ns);
	memset(&rs, 0, sizeof(rs));
	rs.st = st;
	rs.drop = drop_len != 0;
	rs.drop_off = drop_off;
	rs.drop_end = drop_len == ST_TO_END || drop_off + drop_len < drop_off ?
		      UINT64_MAX : drop_off + drop_len;
	rs.resize = old->size != now->size;
	/* a record survives only if it ends before both ends of file, or
	 * the size did not change */
	rs.keep_end = old->size < now->size ? old->size : now->size;
	pthread_rwlock_wrlock(&st->idx_lock);
	st_rk_note(st, key->dev, key->ino);
	if (!idx_file_stamp(st, key->dev, key->ino, &cur)) {
		pthread_rwlock_unlock(&st->idx_lock);
		return 0;
	}
	if (cur != h_old) {
		/* the file changed behind the mount: drop everything */
		stale = true;
		n = idx_drop_file(st, key->dev, key->ino, 0, 0);
	} else {
		n = restamp_walk(st, key, &rs);
		idx_set_stamp(st, key->dev, key->ino, h_new);
		rs.kept = idx_file_records(st, key->dev, key->ino);
	}
	pthread_rwlock_unlock(&st->idx_lock);
	if (n) {
		/* tombstones keep a restart from resurrecting the written
		 * records under a stamp that may still match (same mtime
		 * tick); as in st_invalidate, queued if the store is busy */
		uint64_t first = drop_off / st->g.extent;
		uint64_t last = (rs.drop_end - 1) / st->g.extent;
		uint32_t f = first < ST_EXT_LIMIT ? (uint32_t)first :
			     ST_EXT_LIMIT;
		uint32_t count = rs.drop_end == UINT64_MAX ||
				 last >= ST_EXT_LIMIT ? 0 :
				 (uint32_t)(last - first + 1);

		if (stale)
			st_tombstone_nowait(st, key->dev, key->ino, 0, 0);
		else if (drop_len)
			st_tombstone_nowait(st, key->dev, key->ino, f,
					    count);
		CNT_ADD(st, inval[ST_INVAL_WRITE], n);
	}
	return stale ? 0 : (int)rs.kept;
}
