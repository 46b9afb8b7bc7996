// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store index: (dev, ino, rec) -> where the record is, in RAM.
 *
 * Two parts:
 *   - the file table: (dev, ino) -> a file id, the file's stamp (the
 *     st_stamp_hash of the source stamp its records were cached at) and
 *     its record count.  struct st_file, 28 bytes, in one array reserved
 *     with mmap(MAP_NORESERVE) for the worst case (one file per 512 bytes
 *     of capacity); only the pages touched cost RAM, freed ids are reused
 *     first (LIFO), so the touched part stays compact.  Found through a
 *     chained hash (next links, 32-bit buckets) that doubles at a load of
 *     2, incrementally (as in redis): until each change has moved a few
 *     buckets of the old table, a bucket not moved yet is looked up there
 *     (file_head).  About 30-32 bytes a cached file.
 *   - the records: a B+tree (store_btree.c) keyed by file id << 32 | rec,
 *     whose value is the record's location packed in 64 bits (its offset
 *     in the data file in 512-byte units, 40 bits: 512 TiB; its length
 *     - 1, 22 bits: up to 4 MiB; the hot bit) and whose 32-bit word is
 *     the low half of the record's seeded xxh3 (the summary on the SSD
 *     keeps all 64 bits: recovery and copying forward check those).
 *     20 bytes a record, 21-23 with the leaves' slack and the inner nodes
 *     at any fill (contrib/bench/RESULTS.md has the measured figures).
 *     A file's records are one range of keys.
 *
 * Invariants: a file is in the table iff it has records (nrec > 0, the
 * number of its keys in the tree); every record of a file is current for
 * the file's one stamp (putting a record of another stamp drops the
 * others first); st->nbytes is the sum of the records' lengths.
 *
 * Locks: every function here needs st->idx_lock, exclusive except for
 * idx_lookup, idx_get, idx_file_stamp, idx_walk and idx_walk_all with a
 * function that never drops, and idx_ram (shared is enough).  Under the
 * shared lock idx_lookup sets the hot bit with an atomic OR, and readers
 * of a location word load it atomically; records move in the tree only
 * under the exclusive lock, so nobody keeps an entry's address across a
 * release of the lock: callers hold keys (dev, ino, rec), never places.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "store_i.h"

#define LOC_ADDR_BITS	40
#define LOC_ADDR_MASK	((1ull << LOC_ADDR_BITS) - 1)
#define LOC_LEN_SHIFT	LOC_ADDR_BITS
#define LOC_LEN_MASK	((1ull << 22) - 1)
#define LOC_HOT		(1ull << 62)

_Static_assert(ST_DATA_MAX <= (LOC_ADDR_MASK + 1) * ST_ALIGN_SMALL,
	       "data file offsets fit the location word");
_Static_assert((4u << 20) - 1 <= LOC_LEN_MASK, "lengths fit");

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static inline uint32_t file_hash(uint64_t dev, uint64_t ino)
{
	return fmix64(ino * 0x9e3779b97f4a7c15ull ^
		      dev * 0xbf58476d1ce4e5b9ull);
}

static inline uint64_t key_of(uint32_t fid, uint32_t rec)
{
	return (uint64_t)fid << 32 | rec;
}

static uint64_t loc_pack(const struct hotfs_store *st, uint32_t region,
			 uint32_t off, uint32_t len)
{
	uint64_t a = (st_region_off(st, region) + off) / ST_ALIGN_SMALL;

	return a | (uint64_t)(len - 1) << LOC_LEN_SHIFT;
}

static void loc_unpack(const struct hotfs_store *st, uint64_t v,
		       struct st_rec *r)
{
	uint64_t a = (v & LOC_ADDR_MASK) * ST_ALIGN_SMALL;

	r->region = a / st->g.rsize;
	r->off = a % st->g.rsize;
	r->len = ((v >> LOC_LEN_SHIFT) & LOC_LEN_MASK) + 1;
	r->hot = v & LOC_HOT;
}

static inline uint32_t loc_len(uint64_t v)
{
	return ((v >> LOC_LEN_SHIFT) & LOC_LEN_MASK) + 1;
}

/* Bucket arrays: whole pages, huge pages if the kernel allows. */
static size_t bucket_bytes(uint32_t n)
{
	return st_roundup((uint64_t)n * sizeof(uint32_t), 4096);
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

/* The chain a hash lives in, in the old table if not moved yet. */
static inline uint32_t *file_head(const struct hotfs_store *st, uint32_t h)
{
	if (st->ofb && (h & st->ofmask) >= st->fpos)
		return &st->ofb[h & st->ofmask];
	return &st->fb[h & st->fmask];
}

static size_t files_bytes(uint32_t n)
{
	return st_roundup((uint64_t)n * sizeof(struct st_file), 4096);
}

/*
 * max_files bounds the file table (one file per 512 bytes of capacity);
 * min_buckets presizes its hash, which saves growing it.
 */
int idx_init(struct hotfs_store *st, uint64_t max_files,
	     uint64_t min_buckets)
{
	uint32_t nb = 1024;
	size_t len;
	void *p;
	int err;

	if (max_files > UINT32_MAX - 1)
		max_files = UINT32_MAX - 1;
	for (;;) {
		len = files_bytes(max_files);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED)
			break;
		/* strict overcommit: settle for 4 KiB per file */
		if (max_files < 4096)
			return -ENOMEM;
		max_files /= 8;
	}
	st->files = p;
	st->file_max = max_files;
	st->file_hwm = 0;
	st->file_free = ST_NIL;
	st->nfiles = 0;
	st->nbytes = 0;
	bt_init(&st->bt);
	while (nb < min_buckets && nb < (1u << 30))
		nb *= 2;
	err = alloc_buckets(&st->fb, nb);
	if (err) {
		munmap(st->files, len);
		st->files = NULL;
		return err;
	}
	st->fmask = nb - 1;
	return 0;
}

void idx_exit(struct hotfs_store *st)
{
	bt_exit(&st->bt);
	if (st->files)
		munmap(st->files, files_bytes(st->file_max));
	free_buckets(st->fb, st->fmask + 1);
	if (st->ofb)
		free_buckets(st->ofb, st->ofmask + 1);
	st->files = NULL;
	st->fb = st->ofb = NULL;
}

uint64_t idx_ram(const struct hotfs_store *st)
{
	uint64_t b = bucket_bytes(st->fmask + 1);

	if (st->ofb)
		b += bucket_bytes(st->ofmask + 1);
	return st->bt.bytes + files_bytes(st->file_hwm) + b;
}

/* The file's id, or ST_NIL. */
static uint32_t file_find(const struct hotfs_store *st, uint64_t dev,
			  uint64_t ino)
{
	uint32_t i = *file_head(st, file_hash(dev, ino));

	while (i != ST_NIL) {
		const struct st_file *f = &st->files[i];

		if (f->ino == ino && f->dev == dev)
			return i;
		i = f->next;
	}
	return ST_NIL;
}

/*
 * Prefetch what a look-up of the file will touch: stage 0 its bucket,
 * stage 1 the chain's first file (reading the bucket).  For recovery's
 * batches, where the file table's cache misses would otherwise come one
 * by one.  (Prefetching the record's leaf as well, a third stage, cost
 * recovery more than it saved: the walk down the tree is done twice.)
 */
void idx_prefetch(const struct hotfs_store *st, uint64_t dev, uint64_t ino,
		  int stage)
{
	const uint32_t *fb = file_head(st, file_hash(dev, ino));

	if (stage == 0)
		__builtin_prefetch(fb);
	else if (*fb != ST_NIL)
		__builtin_prefetch(&st->files[*fb]);
}

#define GROW_STEP	64	/* buckets moved per file added */

/* Move up to n buckets of the old table; free it when done. */
static void migrate(struct hotfs_store *st, uint32_t n)
{
	while (st->ofb && n--) {
		uint32_t i = st->ofb[st->fpos];

		st->ofb[st->fpos++] = ST_NIL;
		while (i != ST_NIL) {
			struct st_file *f = &st->files[i];
			uint32_t nx = f->next, *hd;

			hd = &st->fb[file_hash(f->dev, f->ino) & st->fmask];
			f->next = *hd;
			*hd = i;
			i = nx;
		}
		if (st->fpos > st->ofmask) {
			free_buckets(st->ofb, st->ofmask + 1);
			st->ofb = NULL;
		}
	}
}

/* Start doubling the hash; on ENOMEM stay as we are. */
static void grow(struct hotfs_store *st)
{
	uint32_t n = 2 * (st->fmask + 1), *fb;

	migrate(st, UINT32_MAX);	/* finish the last one first */
	if (alloc_buckets(&fb, n))
		return;
	st->ofb = st->fb;
	st->ofmask = st->fmask;
	st->fpos = 0;
	st->fb = fb;
	st->fmask = n - 1;
	if (st->idx_bulk)	/* recovery: nobody waits */
		migrate(st, UINT32_MAX);
}

static uint32_t file_add(struct hotfs_store *st, uint64_t dev, uint64_t ino,
			 uint64_t stamp)
{
	struct st_file *f;
	uint32_t i, *hd;

	if (st->file_free != ST_NIL) {
		i = st->file_free;
		st->file_free = st->files[i].next;
	} else if (st->file_hwm < st->file_max) {
		i = st->file_hwm++;
	} else {
		return ST_NIL;
	}
	f = &st->files[i];
	f->ino = ino;
	f->dev = dev;
	f->stamp = stamp;
	f->nrec = 0;
	hd = file_head(st, file_hash(dev, ino));
	f->next = *hd;
	*hd = i;
	st->nfiles++;
	if (st->nfiles > 2 * (st->fmask + 1) && st->fmask < (1u << 30))
		grow(st);
	else if (st->ofb)
		migrate(st, GROW_STEP);
	return i;
}

/* A file whose last record went: out of the table. */
static void file_free(struct hotfs_store *st, uint32_t i)
{
	struct st_file *f = &st->files[i];
	uint32_t *pp = file_head(st, file_hash(f->dev, f->ino));

	while (*pp != ST_NIL && *pp != i)
		pp = &st->files[*pp].next;
	if (*pp == i)
		*pp = f->next;
	f->ino = 0;
	f->dev = 0;
	f->next = st->file_free;
	st->file_free = i;
	st->nfiles--;
}

/* A record of file fid left the tree (len bytes). */
static void rec_gone(struct hotfs_store *st, uint32_t fid, uint32_t len)
{
	st->nbytes -= len;
	if (--st->files[fid].nrec == 0)
		file_free(st, fid);
}

static void fill_rec(const struct hotfs_store *st, uint32_t fid,
		     uint64_t key, uint64_t v, uint32_t csum,
		     struct st_rec *r)
{
	const struct st_file *f = &st->files[fid];

	r->dev = f->dev;
	r->ino = f->ino;
	r->stamp = f->stamp;
	r->rec = (uint32_t)key;
	r->csum = csum;
	loc_unpack(st, v, r);
}

/*
 * Record rec of (dev, ino): 0 and *r if it is cached for stamp (marked
 * hot), -ESTALE if it is cached for another stamp, -ENOENT if not.
 */
int idx_lookup(struct hotfs_store *st, uint64_t dev, uint64_t ino,
	       uint32_t rec, uint64_t stamp, struct st_rec *r)
{
	uint32_t fid = file_find(st, dev, ino), *aux;
	uint64_t *val, v;

	if (fid == ST_NIL || !bt_find(&st->bt, key_of(fid, rec), &val, &aux))
		return -ENOENT;
	if (st->files[fid].stamp != stamp)
		return -ESTALE;
	v = __atomic_fetch_or(val, LOC_HOT, __ATOMIC_RELAXED);
	fill_rec(st, fid, key_of(fid, rec), v, *aux, r);
	return 0;
}

/* Record rec of (dev, ino), whatever its stamp (in r->stamp): 0, or
 * -ENOENT. */
int idx_get(const struct hotfs_store *st, uint64_t dev, uint64_t ino,
	    uint32_t rec, struct st_rec *r)
{
	uint32_t fid = file_find(st, dev, ino), *aux;
	uint64_t *val;

	if (fid == ST_NIL || !bt_find(&st->bt, key_of(fid, rec), &val, &aux))
		return -ENOENT;
	fill_rec(st, fid, key_of(fid, rec),
		 __atomic_load_n(val, __ATOMIC_RELAXED), *aux, r);
	return 0;
}

/* Has the file records?  Their stamp in *stamp (if not NULL). */
bool idx_file_stamp(const struct hotfs_store *st, uint64_t dev,
		    uint64_t ino, uint64_t *stamp)
{
	uint32_t fid = file_find(st, dev, ino);

	if (fid == ST_NIL)
		return false;
	if (stamp)
		*stamp = st->files[fid].stamp;
	return true;
}

/* How many records the file has. */
uint32_t idx_file_records(const struct hotfs_store *st, uint64_t dev,
			  uint64_t ino)
{
	uint32_t fid = file_find(st, dev, ino);

	return fid == ST_NIL ? 0 : st->files[fid].nrec;
}

/* Give the file's records a new stamp (st_restamp). */
void idx_set_stamp(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		   uint64_t stamp)
{
	uint32_t fid = file_find(st, dev, ino);

	if (fid != ST_NIL)
		st->files[fid].stamp = stamp;
}

struct walk {
	struct hotfs_store *st;
	idx_walk_fn fn;
	void *arg;
};

static int walk_one(void *arg, uint64_t key, uint64_t *val, uint32_t aux)
{
	struct walk *w = arg;
	uint32_t fid = key >> 32;
	uint64_t v = __atomic_load_n(val, __ATOMIC_RELAXED);
	struct st_rec r;
	int ret;

	if (!w->fn) {
		ret = BT_DROP;
	} else {
		fill_rec(w->st, fid, key, v, aux, &r);
		ret = w->fn(w->arg, &r);
	}
	if (ret == BT_DROP)
		rec_gone(w->st, fid, loc_len(v));
	return ret;
}

/*
 * Call fn for the records [lo, hi] of (dev, ino) in order (fn NULL:
 * drop them all); fn returns BT_KEEP, BT_DROP (only with idx_lock held
 * exclusively) or BT_STOP.  Returns how many were dropped.
 */
uint32_t idx_walk(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		  uint32_t lo, uint32_t hi, idx_walk_fn fn, void *arg)
{
	uint32_t fid = file_find(st, dev, ino);
	struct walk w = { st, fn, arg };

	if (fid == ST_NIL || lo > hi)
		return 0;
	return bt_walk(&st->bt, key_of(fid, lo), key_of(fid, hi), walk_one,
		       &w);
}

/* The same over every record of the index, file by file. */
uint64_t idx_walk_all(struct hotfs_store *st, idx_walk_fn fn, void *arg)
{
	struct walk w = { st, fn, arg };

	return bt_walk(&st->bt, 0, UINT64_MAX, walk_one, &w);
}

/* The records of (dev, ino) in extents [first, first + count) (count 0:
 * to the end): the extents', and the blocks' within them. */
uint32_t idx_drop_file(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		       uint32_t first, uint32_t count)
{
	uint64_t end = count ? (uint64_t)first + count : ST_EXT_LIMIT;
	uint64_t bpe = st->g.extent / ST_BLOCK, b0 = first * bpe;
	uint64_t b1 = end * bpe;
	uint32_t n;

	if (end > ST_EXT_LIMIT)
		end = ST_EXT_LIMIT;
	if (b1 > ST_BLK_LIMIT)
		b1 = ST_BLK_LIMIT;
	if (first >= ST_EXT_LIMIT)
		return 0;
	n = idx_walk(st, dev, ino, first, end - 1, NULL, NULL);
	if (b0 < b1)
		n += idx_walk(st, dev, ino, ST_REC_BLOCK | b0,
			      ST_REC_BLOCK | (b1 - 1), NULL, NULL);
	return n;
}

/* Drop the file's records if they are cached for another stamp; how
 * many were. */
uint32_t idx_drop_other_stamps(struct hotfs_store *st, uint64_t dev,
			       uint64_t ino, uint64_t stamp)
{
	uint64_t s;

	if (!idx_file_stamp(st, dev, ino, &s) || s == stamp)
		return 0;
	return idx_walk(st, dev, ino, 0, UINT32_MAX, NULL, NULL);
}

/*
 * Add r (dev, ino, rec, stamp, region, off, len, csum) or replace the
 * record there.  Records of the file cached for another stamp are
 * dropped first.  0, or -ENOSPC (file table full), -ENOMEM.
 */
int idx_put(struct hotfs_store *st, const struct st_rec *r)
{
	uint32_t fid = file_find(st, r->dev, r->ino), *aux;
	uint64_t *val, v = loc_pack(st, r->region, r->off, r->len);
	int rc;

	if (fid != ST_NIL && st->files[fid].stamp != r->stamp) {
		idx_drop_other_stamps(st, r->dev, r->ino, r->stamp);
		fid = file_find(st, r->dev, r->ino);
	}
	if (fid != ST_NIL &&
	    bt_find(&st->bt, key_of(fid, r->rec), &val, &aux)) {
		st->nbytes += r->len;
		st->nbytes -= loc_len(*val);
		*val = v;
		*aux = r->csum;
		return 0;
	}
	if (fid == ST_NIL) {
		fid = file_add(st, r->dev, r->ino, r->stamp);
		if (fid == ST_NIL)
			return -ENOSPC;
	}
	rc = bt_put(&st->bt, key_of(fid, r->rec), v, r->csum);
	if (rc < 0) {
		if (!st->files[fid].nrec)
			file_free(st, fid);
		return rc;
	}
	st->files[fid].nrec++;
	st->nbytes += r->len;
	return 0;
}

/* Drop record rec of (dev, ino) if it is the one at (region, off). */
bool idx_del_at(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		uint32_t rec, uint32_t region, uint32_t off)
{
	uint32_t fid = file_find(st, dev, ino), *aux;
	uint64_t *val, v;

	if (fid == ST_NIL || !bt_find(&st->bt, key_of(fid, rec), &val, &aux))
		return false;
	v = *val;
	if ((v & LOC_ADDR_MASK) !=
	    (st_region_off(st, region) + off) / ST_ALIGN_SMALL)
		return false;
	bt_del(&st->bt, key_of(fid, rec));
	rec_gone(st, fid, loc_len(v));
	return true;
}

uint64_t idx_records(const struct hotfs_store *st)
{
	return st->bt.n;
}
