// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store index: (dev, ino, extno) -> location, in RAM.
 *
 * Entries (struct st_entry, 52 bytes) come out of one array reserved with
 * mmap(MAP_NORESERVE) for the worst case (every record 512 bytes); only the
 * pages actually used cost RAM, and freed entries are reused first (LIFO
 * free list) so the touched part stays compact.  No malloc per extent.
 *
 * Two chained hash tables share the entries: the extent table (next) finds
 * one extent, the file table (fnext) finds all extents of a file for
 * invalidation.  Both grow by doubling, the extent table at a load of 2
 * and the file table kept at half its size: the index costs at most
 * 52 + 4 + 2 = 58 bytes per extent (and at least 52 + 2 + 1).  Growing is
 * incremental (as in redis): the old tables stay until each idx_add has
 * moved a few of their buckets, so no single operation rehashes millions
 * of entries with the lock held; a bucket not moved yet is looked up in
 * the old table (ext_head, file_head).  Entries and
 * buckets ask for transparent huge pages: lookups are random accesses
 * over tens of MB, where 4 KiB pages make every one a TLB miss.
 *
 * Invariants: an entry is linked in both chains iff E_VALID is set; all
 * valid entries of one file have the same stamp (callers keep that).
 * Locks: every function here needs st->idx_lock, exclusive except for
 * idx_find, idx_file_first and idx_ram (shared is enough).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "store_i.h"

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static inline uint32_t ext_hash(uint64_t dev, uint64_t ino, uint32_t extno)
{
	return fmix64(ino * 0x9e3779b97f4a7c15ull + dev * 0xbf58476d1ce4e5b9ull
		      + extno * 0x94d049bb133111ebull);
}

static inline uint32_t file_hash(uint64_t dev, uint64_t ino)
{
	return fmix64(ino * 0x9e3779b97f4a7c15ull ^
		      dev * 0xbf58476d1ce4e5b9ull);
}

/* Bucket arrays: whole pages, huge pages if the kernel allows. */
static size_t bucket_bytes(uint32_t n)
{
	return st_roundup((uint64_t)n * sizeof(uint32_t), 4096);
}

/* The chain a hash lives in, in the old table if not moved yet. */
static inline uint32_t *ext_head(const struct hotfs_store *st, uint32_t h)
{
	if (st->ohb && (h & st->ohmask) >= st->hpos)
		return &st->ohb[h & st->ohmask];
	return &st->hb[h & st->hmask];
}

static inline uint32_t *file_head(const struct hotfs_store *st, uint32_t h)
{
	if (st->ofb && (h & st->ofmask) >= st->fpos)
		return &st->ofb[h & st->ofmask];
	return &st->fb[h & st->fmask];
}

static int alloc_buckets(uint32_t **b, uint32_t n)
{
	void *p = mmap(NULL, bucket_bytes(n), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -ENOMEM;
	madvise(p, bucket_bytes(n), MADV_HUGEPAGE);
	memset(p, 0xff, (size_t)n * sizeof(uint32_t));	/* ST_NIL */
	*b = p;
	return 0;
}

static void free_buckets(uint32_t *b, uint32_t n)
{
	if (b)
		munmap(b, bucket_bytes(n));
}

/* Is record rec within extents [first, first + count) (count 0: to the
 * end)?  A block is within the extent that holds it. */
static bool rec_in(const struct hotfs_store *st, uint32_t rec,
		   uint32_t first, uint32_t count)
{
	uint64_t x = st_rec_ext(st, rec);

	return x >= first && (count == 0 || x - first < count);
}

/*
 * max_entries bounds the index (one entry per 512 bytes of capacity);
 * min_buckets presizes the tables, which saves growing them.
 */
int idx_init(struct hotfs_store *st, uint64_t max_entries,
	     uint64_t min_buckets)
{
	uint32_t nb = 1024;
	size_t len;
	void *p;
	int err;

	if (max_entries > UINT32_MAX - 1)
		max_entries = UINT32_MAX - 1;
	for (;;) {
		len = st_roundup(max_entries * sizeof(struct st_entry), 4096);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED) {
			/* the index is walked at random: spare the TLB */
			madvise(p, len, MADV_HUGEPAGE);
			break;
		}
		/* strict overcommit: settle for 4 KiB per record */
		if (max_entries < 4096)
			return -ENOMEM;
		max_entries /= 8;
	}
	st->ent = p;
	st->ent_max = max_entries;
	st->ent_hwm = 0;
	st->ent_free = ST_NIL;
	st->nent = 0;
	st->nbytes = 0;
	while (nb < min_buckets && nb < (1u << 30))
		nb *= 2;
	err = alloc_buckets(&st->hb, nb);
	if (err)
		goto bad_hb;
	st->hmask = nb - 1;
	err = alloc_buckets(&st->fb, nb / 2);
	if (err)
		goto bad_fb;
	st->fmask = nb / 2 - 1;
	return 0;

bad_fb:
	free_buckets(st->hb, nb);
bad_hb:
	munmap(st->ent, len);
	st->ent = NULL;
	return err;
}

void idx_exit(struct hotfs_store *st)
{
	if (st->ent)
		munmap(st->ent, st_roundup((uint64_t)st->ent_max *
					   sizeof(struct st_entry), 4096));
	free_buckets(st->hb, st->hmask + 1);
	free_buckets(st->fb, st->fmask + 1);
	if (st->ohb) {
		free_buckets(st->ohb, st->ohmask + 1);
		free_buckets(st->ofb, st->ofmask + 1);
	}
	st->ent = NULL;
	st->hb = st->fb = st->ohb = st->ofb = NULL;
}

uint64_t idx_ram(const struct hotfs_store *st)
{
	uint64_t b = (uint64_t)(st->hmask + 1) + (st->fmask + 1);

	if (st->ohb)
		b += (uint64_t)(st->ohmask + 1) + (st->ofmask + 1);
	return (uint64_t)st->ent_hwm * sizeof(struct st_entry) + b * 4;
}

/*
 * Prefetch what idx_find and idx_file_first will touch: stage 0 the
 * buckets, stage 1 the chains' first entries (reading the buckets).  For
 * batches, where the index's cache misses would otherwise come one by one.
 */
void idx_prefetch(const struct hotfs_store *st, uint64_t dev, uint64_t ino,
		  uint32_t extno, int stage)
{
	const uint32_t *hb = ext_head(st, ext_hash(dev, ino, extno));
	const uint32_t *fb = file_head(st, file_hash(dev, ino));

	if (stage == 0) {
		__builtin_prefetch(hb);
		__builtin_prefetch(fb);
		return;
	}
	if (*hb != ST_NIL)
		__builtin_prefetch(&st->ent[*hb]);
	if (*fb != ST_NIL)
		__builtin_prefetch(&st->ent[*fb]);
}

uint32_t idx_find(const struct hotfs_store *st, uint64_t dev, uint64_t ino,
		  uint32_t extno)
{
	uint32_t i = *ext_head(st, ext_hash(dev, ino, extno));

	while (i != ST_NIL) {
		const struct st_entry *e = &st->ent[i];

		if (e->ino == ino && e->extno == extno && e->dev == dev)
			return i;
		i = e->next;
	}
	return ST_NIL;
}

uint32_t idx_file_first(const struct hotfs_store *st, uint64_t dev,
			uint64_t ino)
{
	uint32_t i = *file_head(st, file_hash(dev, ino));

	while (i != ST_NIL) {
		const struct st_entry *e = &st->ent[i];

		if (e->ino == ino && e->dev == dev)
			return i;
		i = e->fnext;
	}
	return ST_NIL;
}

#define GROW_STEP	64	/* buckets moved per idx_add */

/* Move up to n buckets of each old table; free them when done. */
static void migrate(struct hotfs_store *st, uint32_t n)
{
	while (st->ohb && n--) {
		uint32_t i;

		if (st->hpos <= st->ohmask) {
			i = st->ohb[st->hpos];
			st->ohb[st->hpos++] = ST_NIL;
			while (i != ST_NIL) {
				struct st_entry *e = &st->ent[i];
				uint32_t nx = e->next, *hd;

				hd = &st->hb[ext_hash(e->dev, e->ino,
						      e->extno) & st->hmask];
				e->next = *hd;
				*hd = i;
				i = nx;
			}
		}
		if (st->fpos <= st->ofmask) {
			i = st->ofb[st->fpos];
			st->ofb[st->fpos++] = ST_NIL;
			while (i != ST_NIL) {
				struct st_entry *e = &st->ent[i];
				uint32_t nx = e->fnext, *hd;

				hd = &st->fb[file_hash(e->dev, e->ino) &
					     st->fmask];
				e->fnext = *hd;
				*hd = i;
				i = nx;
			}
		}
		if (st->hpos > st->ohmask && st->fpos > st->ofmask) {
			free_buckets(st->ohb, st->ohmask + 1);
			free_buckets(st->ofb, st->ofmask + 1);
			st->ohb = st->ofb = NULL;
		}
	}
}

/*
 * Relink every entry into new tables at once, walking the entry array in
 * memory order: twice as fast in all as moving chains bucket by bucket
 * (whose entries are scattered), for recovery, where nobody waits.
 */
static void rehash_bulk(struct hotfs_store *st, uint32_t *hb, uint32_t hn,
			uint32_t *fb, uint32_t fn)
{
	uint32_t i;

	for (i = 0; i < st->ent_hwm; i++) {
		struct st_entry *e = &st->ent[i];
		uint32_t h;

		if (!(e->lenfl & E_VALID))
			continue;
		h = ext_hash(e->dev, e->ino, e->extno) & (hn - 1);
		e->next = hb[h];
		hb[h] = i;
		h = file_hash(e->dev, e->ino) & (fn - 1);
		e->fnext = fb[h];
		fb[h] = i;
	}
	free_buckets(st->hb, st->hmask + 1);
	free_buckets(st->fb, st->fmask + 1);
	st->hb = hb;
	st->hmask = hn - 1;
	st->fb = fb;
	st->fmask = fn - 1;
}

/* Start doubling both tables; on ENOMEM stay as we are. */
static void grow(struct hotfs_store *st)
{
	uint32_t hn = 2 * (st->hmask + 1), fn = 2 * (st->fmask + 1);
	uint32_t *hb, *fb;

	migrate(st, UINT32_MAX);	/* finish the last one first */
	if (alloc_buckets(&hb, hn))
		return;
	if (alloc_buckets(&fb, fn)) {
		free_buckets(hb, hn);
		return;
	}
	if (st->idx_bulk) {
		rehash_bulk(st, hb, hn, fb, fn);
		return;
	}
	st->ohb = st->hb;
	st->ohmask = st->hmask;
	st->hpos = 0;
	st->ofb = st->fb;
	st->ofmask = st->fmask;
	st->fpos = 0;
	st->hb = hb;
	st->hmask = hn - 1;
	st->fb = fb;
	st->fmask = fn - 1;
}

uint32_t idx_add(struct hotfs_store *st, const struct st_entry *tmpl)
{
	struct st_entry *e;
	uint32_t i, *hd;

	if (st->ent_free != ST_NIL) {
		i = st->ent_free;
		st->ent_free = st->ent[i].next;
	} else if (st->ent_hwm < st->ent_max) {
		i = st->ent_hwm++;
	} else {
		return ST_NIL;
	}
	e = &st->ent[i];
	*e = *tmpl;
	e->lenfl = E_LEN(tmpl) | E_VALID;
	hd = ext_head(st, ext_hash(e->dev, e->ino, e->extno));
	e->next = *hd;
	*hd = i;
	hd = file_head(st, file_hash(e->dev, e->ino));
	e->fnext = *hd;
	*hd = i;
	st->nent++;
	st->nbytes += E_LEN(e);
	if (st->nent > 2 * (st->hmask + 1) && st->hmask < (1u << 30))
		grow(st);
	else if (st->ohb)
		migrate(st, GROW_STEP);
	return i;
}

/*
 * Add tmpl, or overwrite the entry already there for its key and extno:
 * in place, the chains stay as they are (unlinking it from a big file's
 * chain would cost a walk of the chain).
 */
uint32_t idx_put(struct hotfs_store *st, const struct st_entry *tmpl)
{
	uint32_t i = idx_find(st, tmpl->dev, tmpl->ino, tmpl->extno);
	struct st_entry *e;

	if (i == ST_NIL)
		return idx_add(st, tmpl);
	e = &st->ent[i];
	st->nbytes += E_LEN(tmpl);
	st->nbytes -= E_LEN(e);
	e->stamp = tmpl->stamp;
	e->csum = tmpl->csum;
	e->region = tmpl->region;
	e->off = tmpl->off;
	e->lenfl = E_LEN(tmpl) | E_VALID;
	return i;
}

static void unlink_ext(struct hotfs_store *st, uint32_t i)
{
	struct st_entry *e = &st->ent[i];
	uint32_t *pp = ext_head(st, ext_hash(e->dev, e->ino, e->extno));

	while (*pp != ST_NIL && *pp != i)
		pp = &st->ent[*pp].next;
	if (*pp == i)
		*pp = e->next;
}

static void unlink_file(struct hotfs_store *st, uint32_t i)
{
	struct st_entry *e = &st->ent[i];
	uint32_t *pp = file_head(st, file_hash(e->dev, e->ino));

	while (*pp != ST_NIL && *pp != i)
		pp = &st->ent[*pp].fnext;
	if (*pp == i)
		*pp = e->fnext;
}

static void free_entry(struct hotfs_store *st, uint32_t i)
{
	struct st_entry *e = &st->ent[i];

	st->nent--;
	st->nbytes -= E_LEN(e);
	e->lenfl = 0;
	e->next = st->ent_free;
	st->ent_free = i;
}

/*
 * Dropping many extents of one big file one by one would walk its file
 * chain once each (a 10 GB file cached in 256 KiB extents is 40,000
 * entries long).  Eviction instead kills the entries (out of the extent
 * chain at once, marked E_DEAD) and then reaps the dead from each file
 * chain in one walk.  Both under idx_lock, exclusive, in one hold.
 */
void idx_kill(struct hotfs_store *st, uint32_t i)
{
	unlink_ext(st, i);
	st->ent[i].lenfl |= E_DEAD;
}

static void reap_chain(struct hotfs_store *st, uint32_t *pp)
{
	while (*pp != ST_NIL) {
		uint32_t i = *pp;
		struct st_entry *e = &st->ent[i];

		if (!(e->lenfl & E_DEAD)) {
			pp = &e->fnext;
			continue;
		}
		*pp = e->fnext;
		free_entry(st, i);
	}
}

/* Reap the dead in the file chain of (dev, ino), or everywhere. */
void idx_reap(struct hotfs_store *st, uint64_t dev, uint64_t ino, bool all)
{
	uint32_t b;

	if (!all) {
		reap_chain(st, file_head(st, file_hash(dev, ino)));
		return;
	}
	for (b = 0; b <= st->fmask; b++)
		reap_chain(st, &st->fb[b]);
	for (b = st->fpos; st->ofb && b <= st->ofmask; b++)
		reap_chain(st, &st->ofb[b]);
}

void idx_del(struct hotfs_store *st, uint32_t i)
{
	unlink_ext(st, i);
	unlink_file(st, i);
	free_entry(st, i);
}

/*
 * Drop the extents [first, first + count) of a file (count 0: all), or,
 * with keep_stamp, every extent of the file whose stamp differs.
 * Returns how many were dropped.
 */
uint32_t idx_drop_file(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		       uint32_t first, uint32_t count, bool keep_stamp,
		       uint64_t stamp)
{
	uint32_t *pp = file_head(st, file_hash(dev, ino));
	uint32_t n = 0;

	while (*pp != ST_NIL) {
		uint32_t i = *pp;
		struct st_entry *e = &st->ent[i];
		bool drop;

		if (e->ino != ino || e->dev != dev)
			drop = false;
		else if (keep_stamp)
			drop = e->stamp != stamp;
		else
			drop = rec_in(st, e->extno, first, count);
		if (!drop) {
			pp = &e->fnext;
			continue;
		}
		*pp = e->fnext;
		unlink_ext(st, i);
		free_entry(st, i);
		n++;
	}
	return n;
}

/*
 * Drop the file's extents if they carry a stamp other than this one (a
 * file's extents all carry the same, so its first tells).  Returns how
 * many were dropped.
 */
uint32_t idx_drop_other_stamps(struct hotfs_store *st, uint64_t dev,
			       uint64_t ino, uint64_t stamp)
{
	uint32_t i = idx_file_first(st, dev, ino);

	if (i == ST_NIL || st->ent[i].stamp == stamp)
		return 0;
	return idx_drop_file(st, dev, ino, 0, 0, true, stamp);
}
