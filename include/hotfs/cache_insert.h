/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Insert if still current: the one way data read from the source enters
 * the store (a promotion, hotfsctl warm, a writethrough's patched
 * extent).  The bytes were read at a stamp, with the inode's write
 * generation gen seen before the read; they are cached only if no write
 * through the mount began since (a write bumps in->cw.write_gen before it
 * reaches the source, and again when it ends), so that old bytes are
 * never cached under a stamp a racing write cannot change (a write within
 * one clock tick of the source's timestamps).
 *
 * Lock: takes in->m (or, __cache_insert, with it held) and calls the
 * store's insert under it, which may seal the open region (its group
 * commit: fdatasync of the cache device's data file, the summary, and
 * fdatasync again) and recycle the oldest region (reads and writes of the
 * cache device): the generation check and the insert must be one step,
 * or a write ending in between would find nothing of the file to drop
 * and leave the old bytes cached under a stamp it cannot tell from the
 * new one.  So a write or a getattr of this one file may wait for the
 * cache device's flush; no source I/O ever happens under in->m here.
 */
#ifndef HOTFS_CACHE_INSERT_H
#define HOTFS_CACHE_INSERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotfs/cache.h"
#include "hotfs/inode.h"
#include "hotfs/store.h"

/*
 * 0, -ESTALE (a write came: nothing cached) or the store's -errno.  On
 * success in->cw.cached_extents_hint covers extno.  Writes through the mount
 * since gen that missed the record's bytes do not stop it: the bytes are
 * then cached under the stamp the last of them left (each write's
 * stamps before and after must chain, hotfs_wr_notes in hotfs/inode.h);
 * a write that touched them, one not noted, or any change behind the
 * mount between does.
 */
int cache_insert(struct hotfs_store *st, struct hotfs_inode *in,
		 const struct hotfs_key *k, uint32_t extno,
		 const struct hotfs_stamp *stamp, uint64_t gen,
		 const void *buf, size_t len);
/*
 * cache_write_end: a write that began at write_gen gen (its own bump)
 * ended (in->cw.write_gen bumped again), with in->m held.  known: it
 * dropped the records holding [lo, hi) and carried the others from stamp
 * old to now; false: the file's records were dropped, or the write is not
 * known well enough to carry a promotion over it.
 */
void __cache_note_write(struct hotfs_inode *in, bool known, uint64_t gen,
			uint64_t lo, uint64_t hi, const struct hotfs_stamp *old,
			const struct hotfs_stamp *now);
/*
 * write_budget= (hotfs/budget.h): may one more candidate of len bytes be
 * written to the store now (a random draw for the share admitted near
 * the pace)?  Asked before each insert, with or without in->m.
 */
bool cache_within_budget(struct hotfs_cache *c, uint32_t len);
/* The same with in->m held. */
int __cache_insert(struct hotfs_store *st, struct hotfs_inode *in,
		   const struct hotfs_key *k, uint32_t extno,
		   const struct hotfs_stamp *stamp, uint64_t gen,
		   const void *buf, size_t len);

#endif
