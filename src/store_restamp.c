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
 * carry-overs, it never serves them wrongly).  If any extent of the file
 * does not have the expected old stamp, the file changed behind the
 * mount's back: everything is dropped.
 *
 * Lock: the index lock, taken for writing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

int st_restamp(struct hotfs_store *st, const struct hotfs_key *key,
	       const struct hotfs_stamp *old, const struct hotfs_stamp *now,
	       uint64_t drop_off, uint64_t drop_len)
{
	uint64_t h_old, h_new, keep_end, drop_end;
	uint32_t i, n = 0, cap = 0, kept = 0, *dead = NULL;
	bool stale = false;

	if (key->dev > UINT32_MAX)
		return 0;
	h_old = st_stamp_hash(old->ino, old->size, old->mtime_ns,
			      old->ctime_ns);
	h_new = st_stamp_hash(now->ino, now->size, now->mtime_ns,
			      now->ctime_ns);
	/* an extent survives only if it ends before both ends of file,
	 * or the size did not change */
	keep_end = old->size < now->size ? old->size : now->size;
	drop_end = drop_len == ST_TO_END || drop_off + drop_len < drop_off ?
		   UINT64_MAX : drop_off + drop_len;
	pthread_rwlock_wrlock(&st->idx_lock);
	st_rk_note(st, key->dev, key->ino);
	for (i = idx_file_first(st, key->dev, key->ino); i != ST_NIL;
	     i = st->ent[i].fnext) {
		struct st_entry *e = &st->ent[i];
		uint64_t start, end;

		if (e->ino != key->ino || e->dev != key->dev)
			continue;
		if (e->stamp != h_old) {
			stale = true;
			break;
		}
		start = st_rec_off(e->extno, st->g.extent);
		end = start + E_LEN(e);
		if ((drop_len && start < drop_end && end > drop_off) ||
		    (old->size != now->size && end > keep_end) ||
		    (old->size != now->size &&
		     E_LEN(e) < st_rec_max(e->extno, st->g.extent))) {
			if (n == cap) {
				uint32_t *d = realloc(dead, (cap ? cap * 2 :
							     64) *
						      sizeof(*dead));

				if (!d) {
					stale = true;	/* drop them all */
					break;
				}
				dead = d;
				cap = cap ? cap * 2 : 64;
			}
			dead[n++] = i;
			continue;
		}
		e->stamp = h_new;
		kept++;
	}
	if (stale) {
		n = idx_drop_file(st, key->dev, key->ino, 0, 0, false, 0);
		kept = 0;
	} else if (n) {
		/* one walk of the file's chain, however many go */
		for (i = 0; i < n; i++)
			idx_kill(st, dead[i]);
		idx_reap(st, key->dev, key->ino, false);
	}
	pthread_rwlock_unlock(&st->idx_lock);
	free(dead);
	if (n) {
		/* tombstones keep a restart from resurrecting the written
		 * extents under a stamp that may still match (same mtime
		 * tick); as in st_invalidate, queued if the store is busy */
		uint64_t first = drop_off / st->g.extent;
		uint64_t last = (drop_end - 1) / st->g.extent;
		uint32_t f = first < ST_EXT_LIMIT ? (uint32_t)first :
			     ST_EXT_LIMIT;
		uint32_t count = drop_end == UINT64_MAX ||
				 last >= ST_EXT_LIMIT ? 0 :
				 (uint32_t)(last - first + 1);

		if (stale)
			st_tombstone_nowait(st, key->dev, key->ino, 0, 0);
		else if (drop_len)
			st_tombstone_nowait(st, key->dev, key->ino, f,
					    count);
		CNT_ADD(st, inval[ST_INVAL_WRITE], n);
	}
	return (int)kept;
}
