// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The store's reserve (st_set_reserve, hotfs/store.h): the bytes of its
 * capacity others use (the file grain's copies, hotfs/filecopy.h).  The
 * regions it leaves the store, and those that hold space (the trim at a
 * tick that evicts the oldest until the store fits: store_region.c).
 * No locks.
 */
#include <stdatomic.h>

#include "store_i.h"

/* Regions the capacity leaves the store now (st_set_reserve): at least
 * one, for the open region.  No locks. */
uint32_t st_regions_allowed(const struct hotfs_store *st)
{
	uint64_t res = atomic_load(&st->reserve);
	uint64_t nres = (res + st->g.rsize - 1) / st->g.rsize;

	return nres >= st->nregions ? 1 : st->nregions - (uint32_t)nres;
}

/* Regions holding space: FREE, OPEN or SEALED. */
uint32_t st_regions_allocated(const struct hotfs_store *st)
{
	uint32_t r, n = 0;

	for (r = 0; r < st->nregions; r++)
		n += st->regions[r].state != R_HOLE;
	return n;
}

void st_set_reserve(struct hotfs_store *st, uint64_t bytes)
{
	atomic_store(&st->reserve, bytes);
}
