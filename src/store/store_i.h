/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cache store internals: on-disk format, the store object, and the helpers
 * shared by src/store*.c (and the recovery fuzzer).
 *
 * Files under cachedir (all 0600):
 *	lock		flock(LOCK_EX) for the life of the store
 *	superblock	4 KiB, replaced atomically (write tmp, fsync, rename)
 *	data		region i at i * rsize; grows one region at a time
 *
 * Why a log of regions and not a slot per extent: most source files are a
 * few KiB, so a 256 KiB slot would hold a 4 KiB file at 1.6% efficiency.
 * Records are packed at 512 bytes (a sector: a torn write of one record
 * never shares a sector with the record before it, and O_DIRECT stays
 * possible): a 1-16 KiB file wastes 256 bytes on average (~3%), where 4 KiB
 * alignment would waste ~2 KiB (~24%) and miss the 1.3x space target.
 * Records of 64 KiB or more start 4 KiB-aligned so that a block-sized read
 * is one page; the padding is < 6% of such a record.
 *
 * Region layout (rsize bytes, default 16 MiB; see fresh_region in store.c):
 *	[record][record]...  ->        free        <-  [sum k]...[sum 1][sum 0]
 * A record is the extent's bytes, then (if longer than one ST_BLOCK) a
 * table of one 64-bit checksum per ST_BLOCK block, then padding.  Summary
 * blocks (ST_BLOCK each) are written downwards from the region's end; each
 * holds a header and up to ST_EPB entries and is checksummed on its own.
 * The last, partial summary block is rewritten in place at each commit: a
 * crash in that write loses at most its ST_EPB entries, never others.
 *
 * Checksums are xxh3 seeded with (dev, ino, extno, region generation), so
 * bytes left over from another extent or from the region's previous life
 * never verify.  The whole-record checksum is in the summary (64 bits)
 * and its low 32 bits in RAM; the block table lets a 4 KiB read out of a
 * 256 KiB extent read 4 KiB plus 8 bytes.
 *
 * The index in RAM (store_index.c, store_btree.c): a file table, (dev,
 * ino) -> file id, the file's stamp, its record count (28 bytes a file,
 * plus its hash's buckets); and a B+tree keyed by file id << 32 | record
 * number whose leaves are sorted arrays of 20-byte entries: the record's
 * location packed in 64 bits (data file offset / 512, 40 bits; length -
 * 1, 22 bits; the hot bit) and the low 32 bits of its checksum.  About
 * 21 bytes a record at any fill, plus about 30 a cached file.  A file's
 * records are one range of keys, so invalidating, restamping or counting
 * them walks that range, and eviction deletes by key.
 *
 * Invariants:
 *	- a summary entry is written only after fdatasync() of its record
 *	  (group commit: st_commit, region seal, commit_ms, commit_bytes);
 *	  extents of the open region that were not committed are lost at a
 *	  crash, so the daemon should call st_tick() every second;
 *	- a region's generation (== its sequence number, unique for the
 *	  store's life thanks to sb.seq_floor) changes before it is rewritten;
 *	  loc.gen is compared after the caller's read (st_verify);
 *	- all records of one file in the index are current for the same
 *	  stamp: the index keeps it once, in the file table;
 *	- nothing holds the place of a record in the index across a release
 *	  of idx_lock (records move within and between the tree's leaves):
 *	  keepers, the summaries and walks name records by (dev, ino, rec);
 *	- eviction is FIFO by region sequence, so a tombstone (written by
 *	  st_invalidate) always outlives the entries it kills;
 *	- at open, the newest region is reopened for appending only after
 *	  everything between its records and its summary chain is zeroed,
 *	  so no uncommitted record or stray summary block of a crashed run
 *	  can join the chain later.
 *
 * Locks.  The store's lock order, written here and nowhere else:
 *
 *	st->lock  ->  st->idx_lock  ->  st->state_lock
 *
 * A thread holding one of them takes only later ones, never an earlier
 * one (st_tombstone_nowait, called with none held, only tries st->lock).
 *	st->lock	mutex: the regions, the open region and its summary,
 *			the data file's writes and fdatasyncs, commits,
 *			evictions, tombstones.  Held across that I/O (it is
 *			what the mutex serialises): st_close, st_insert,
 *			st_commit, st_tick and st_evict take it, the __st_*
 *			functions need it.
 *	st->idx_lock	rwlock: the index (store_index.c, store_btree.c);
 *			never held across I/O.  Shared to look up
 *			(st_lookup, st_file_cached, st_iterate,
 *			st_get_stats, pick_keepers), exclusive to change
 *			records (append, eviction, st_invalidate,
 *			st_restamp, a stale or corrupt record dropped by
 *			st_lookup or st_verify).  Under the shared lock the
 *			only write is st_lookup's hot bit, an atomic OR on
 *			the location word (readers load it atomically).
 *			Shared is let go of before exclusive is taken:
 *			never an upgrade.
 *	st->state_lock	mutex, a leaf: the state and its reason, the queued
 *			tombstones (tq, ntq), the keepers' marks (st_rk_note,
 *			under idx_lock).  What it calls out to is hotfs_log
 *			alone, which takes no lock of hotfs's.
 * Callbacks run under store locks: st_keep_fn under st->lock and
 * idx_lock (shared), st_iter_fn under idx_lock (shared).  The cache's
 * keep callback takes the pins' and the policy's locks there, so those
 * locks come after idx_lock and must not be held while calling into the
 * store.  Apart from the callbacks and hotfs_log the store calls out to
 * nothing while it holds a lock, so its callers' locks all come before
 * st->lock.
 * Counters are atomics, read without locks, as are a region's gen,
 * st->state, st->nused, and st->ntq as a hint (st_insert).
 */
#ifndef HOTFS_STORE_I_H
#define HOTFS_STORE_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hotfs/fileio.h"
#include "hotfs/store.h"

#define ST_SB_MAGIC	0x3142535346544f48ull	/* "HOTFSSB1" */
#define ST_SUM_MAGIC	0x3153525346544f48ull	/* "HOTFSRS1" */
#define ST_VERSION	1u
#define ST_ALIGN_SMALL	512u
#define ST_ALIGN_LARGE	4096u
#define ST_LARGE	(64u * 1024)
#define ST_NIL		UINT32_MAX
#define ST_TQ_MAX	64

/* Superblock: host byte order (a foreign-endian store fails the magic). */
struct st_sb {
	uint64_t magic;
	uint32_t version;
	uint32_t size;		/* sizeof(struct st_sb) */
	uint64_t epoch;		/* random, new at creation and reset */
	uint64_t capacity;
	uint32_t extent;
	uint32_t rsize;
	uint64_t seq_floor;	/* next open starts region seqs at >= this */
	uint64_t created;	/* unix seconds */
	uint32_t ident_len;
	uint32_t pad;
	uint8_t ident[ST_IDENT_MAX];
	uint8_t spare[4096 - 64 - ST_IDENT_MAX - 8];
	uint64_t csum;		/* xxh3 of everything above */
};

/* Summary entry, 64 bytes. */
struct st_sument {
	uint64_t dev;
	uint64_t ino;
	uint32_t extno;		/* tombstone: first extent */
	uint32_t len;		/* tombstone: count, 0 = to the end */
	uint32_t off;		/* record offset in the region */
	uint32_t flags;
	uint64_t size;		/* source stamp (ino is the key's) */
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint64_t csum;		/* seeded xxh3 of the extent */
};
#define ST_SE_TOMB	1u

struct st_sumhdr {
	uint64_t magic;
	uint64_t epoch;
	uint64_t seq;		/* region sequence == generation */
	uint32_t index;		/* 0 = the block at the region's end */
	uint32_t count;
	uint32_t flags;
	uint32_t data_end;	/* bytes of records when written */
	uint64_t spare[2];
	uint64_t csum;		/* xxh3 of the block, this field zeroed */
};
#define ST_SH_SEALED	1u
#define ST_EPB	((ST_BLOCK - sizeof(struct st_sumhdr)) / \
		 sizeof(struct st_sument))

_Static_assert(sizeof(struct st_sb) == 4096, "superblock size");
_Static_assert(sizeof(struct st_sument) == 64, "summary entry size");
_Static_assert(sizeof(struct st_sumhdr) == 64, "summary header size");

/* What a region scan needs to know; all of it from the superblock. */
struct st_geom {
	uint64_t epoch;
	uint32_t rsize;
	uint32_t extent;
};

struct st_scan {
	uint64_t seq;		/* of block 0 */
	uint32_t blocks;	/* valid summary blocks */
	uint32_t entries;	/* valid entries passed to the callback */
	uint32_t bad_entries;
	uint32_t data_end;
	bool sealed;
	bool torn;		/* the chain ended in a damaged block */
	bool more;		/* ran out of buffer with the chain unbroken */
};

typedef int (*st_sument_fn)(void *arg, const struct st_sument *e);

/* store_recover.c: pure parsers (fuzzed), and recovery. */
int st_geom_ok(uint32_t extent, uint32_t rsize);
int st_sb_decode(const void *buf, size_t len, struct st_sb *sb);
void st_block_seal(void *blk);
int st_block_check(const void *blk, const struct st_geom *g, uint64_t seq,
		   uint32_t index);
int st_sument_check(const struct st_sument *e, const struct st_geom *g,
		    uint32_t data_end);
int st_scan_region(const void *tail, size_t tail_len,
		   const struct st_geom *g, st_sument_fn fn, void *arg,
		   struct st_scan *res);

/* ---- in-memory objects (not used by the fuzzer) ---- */

enum { R_HOLE = 0, R_FREE, R_OPEN, R_SEALED };

struct st_region {
	_Atomic uint64_t gen;	/* readable generation, 0 = none */
	uint64_t seq;		/* protected by st->lock */
	uint32_t state;		/* protected by st->lock */
	uint32_t data_end;	/* protected by st->lock */
};

/*
 * The index (store_index.c, store_btree.c; their header comments say
 * why it is built so and what it costs).  A B+tree of 64-bit keys with a
 * 64-bit value and a 32-bit word each; leaves are sorted arrays of at
 * most BT_LEAF_MAX entries (BT_ENTRY bytes each) whose capacity grows and
 * shrinks in steps of BT_STEP; inner nodes have up to BT_FAN children.
 */
#define BT_LEAF_MAX	256
#define BT_STEP		8
#define BT_FAN		64
#define BT_DEPTH_MAX	8
#define BT_ENTRY	20	/* key 8, value 8, word 4 */

struct st_bt {
	void *root;		/* NULL = empty */
	uint32_t height;	/* inner levels above the leaves */
	uint64_t n;		/* keys */
	uint64_t bytes;		/* allocated for the nodes */
	uint64_t limit;		/* bytes it may allocate, 0 = no limit */
};

/* What a walk's function returns for an entry. */
enum { BT_KEEP = 0, BT_DROP, BT_STOP };
typedef int (*bt_walk_fn)(void *arg, uint64_t key, uint64_t *val,
			  uint32_t aux);

void bt_init(struct st_bt *t);
void bt_exit(struct st_bt *t);
/* 0 added, 1 replaced, -ENOMEM (the tree unchanged). */
int bt_put(struct st_bt *t, uint64_t key, uint64_t val, uint32_t aux);
/* The entry's value and word (aux may be NULL), in place. */
bool bt_find(const struct st_bt *t, uint64_t key, uint64_t **val,
	     uint32_t **aux);
bool bt_del(struct st_bt *t, uint64_t key);
uint64_t bt_walk(struct st_bt *t, uint64_t lo, uint64_t hi, bt_walk_fn fn,
		 void *arg);
/* 0, or -EUCLEAN if an invariant does not hold (tests). */
int bt_check(const struct st_bt *t);

/* A cached file: its id is its place in st->files. */
struct st_file {
	uint64_t ino;
	uint64_t stamp;		/* st_stamp_hash() of its records' stamp */
	uint32_t dev;
	uint32_t nrec;		/* its records in the tree */
	uint32_t next;		/* hash chain, or free list */
} __attribute__((packed, aligned(4)));

/* A record, as the index gives it out and takes it in. */
struct st_rec {
	uint64_t dev, ino;
	uint64_t stamp;		/* the file's */
	uint32_t rec;		/* extent, or ST_REC_BLOCK | block */
	uint32_t region, off, len;
	uint32_t csum;		/* low 32 bits of the seeded xxh3 */
	bool hot;		/* looked up since written */
};
typedef int (*idx_walk_fn)(void *arg, const struct st_rec *r);

/* The data file's size limit: record offsets are kept in 512-byte units
 * in 40 bits (store_index.c). */
#define ST_DATA_MAX	(1ull << 49)

struct st_counters {
	_Atomic uint64_t bytes_written, bytes_inserted, inserts;
	_Atomic uint64_t evictions, evicted_extents, reinserted, culls;
	_Atomic uint64_t inval[ST_INVAL_NR];
	_Atomic uint64_t stale_reads, commits;
	_Atomic uint64_t regions_dropped, extents_recovered;
};

struct keeper;

struct hotfs_store {
	pthread_mutex_t lock;
	pthread_rwlock_t idx_lock;

	int dirfd, lockfd, datafd;
	char *path;		/* the cachedir, as opened */
	struct stat dir_st, data_st;	/* their dev and ino, at open */
	uint64_t checked_ns;	/* last look at them (st_tick) */
	struct st_geom g;
	uint64_t capacity;
	uint32_t nregions;
	struct st_region *regions;	/* [nregions] */
	uint64_t next_seq;		/* protected by lock */
	_Atomic uint32_t nused;		/* regions OPEN or SEALED */
	/* bytes of the capacity others use (st_set_reserve: the file
	 * grain's copies): fewer regions may hold space */
	_Atomic uint64_t reserve;
	/* a region was recycled for an insert, or st_next_victim found
	 * no room, since one was last freed (or every region held data at
	 * open): st_filling */
	_Atomic bool full;

	/* the open region; protected by lock */
	uint32_t open;			/* ST_NIL = none */
	struct st_sument *sum;		/* its summary, [sum_max] */
	uint32_t nsum, nsum_disk, sum_max;
	_Atomic uint32_t uncommitted;	/* nsum - nsum_disk, for the stats */
	uint64_t pend_bytes;
	uint64_t last_commit_ns;
	bool dirty;			/* written since the last fdatasync */
	bool reinserting;		/* copying keepers forward */

	/* the index; protected by idx_lock */
	struct st_bt bt;		/* (file id, rec) -> loc, csum */
	struct st_file *files;		/* mmap, [file_max] */
	uint32_t file_max, file_hwm, file_free, nfiles;
	uint64_t nbytes;		/* the records' lengths */
	uint64_t rec_max;		/* records the capacity could hold */
	uint32_t *fb, fmask;		/* file buckets */
	uint32_t *ofb, ofmask, fpos;	/* while growing: the old ones, */
					/* moved from bucket [0] upwards */
	bool idx_bulk;			/* recovery: grow at once */

	/* parameters */
	uint64_t commit_ns, commit_bytes;
	unsigned brun, bcull, bstop;
	st_keep_fn keep;
	void *keep_arg;

	pthread_mutex_t state_lock;	/* leaf: state_err to ntq */
	_Atomic int state;		/* changed under state_lock */
	int state_err;			/* errno behind ST_READONLY */
	char reason[192];
	uint64_t state_since;		/* unix seconds, last change */
	struct st_sument tq[ST_TQ_MAX];	/* tombstones awaiting st->lock */
	uint32_t ntq;

	/*
	 * While __st_evict_region copies a region's keepers forward they are
	 * out of the index, so an invalidation or a restamp of their file
	 * finds nothing of them to drop: it marks them instead (st_rk_note),
	 * and a marked keeper is not put back (it would come back with the
	 * bytes from before a write, under a stamp the write may not have
	 * moved).  rk and rk_n change under idx_lock held exclusively; the
	 * marks are set under idx_lock (either way) and state_lock, and read
	 * under idx_lock held exclusively.
	 */
	struct keeper *rk;
	uint32_t rk_n;
	const struct st_sument *rk_sum;	/* the victim's summary */

	/* st_next_victim's copy of the oldest region's summary: entries
	 * before nv_pos were read since written or gone; under lock */
	struct st_sument *nv;
	uint32_t nv_n, nv_pos, nv_region;
	uint64_t nv_seq;
	bool nv_set;			/* nv is region nv_region's at nv_seq */

	uint8_t *tab;			/* record tails; under lock */
	struct st_counters c;
};

#define CNT_ADD(st, f, n)	atomic_fetch_add_explicit(&(st)->c.f, (n), \
							  memory_order_relaxed)
#define CNT_GET(st, f)		atomic_load_explicit(&(st)->c.f, \
						     memory_order_relaxed)

static inline uint64_t st_roundup(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static inline uint32_t st_nblocks(uint32_t len)
{
	return (len + ST_BLOCK - 1) / ST_BLOCK;
}

/* Bytes a record of an extent of len bytes takes, and its alignment. */
static inline uint32_t st_align_of(uint32_t len)
{
	return len >= ST_LARGE ? ST_ALIGN_LARGE : ST_ALIGN_SMALL;
}

static inline uint32_t st_tab_rel(uint32_t len)
{
	return st_roundup(len, 8);
}

static inline uint32_t st_reclen(uint32_t len)
{
	uint32_t n = st_nblocks(len);

	return st_roundup(st_tab_rel(len) + (n > 1 ? n * 8 : 0),
			  st_align_of(len));
}

/* The extent a record is in (itself, for an extent). */
static inline uint64_t st_rec_ext(const struct hotfs_store *st, uint32_t rec)
{
	return st_rec_is_block(rec) ?
	       st_rec_off(rec, st->g.extent) / st->g.extent : rec;
}

/* The summary entries changed (st->nsum or st->nsum_disk): the stats'
 * count of those not yet committed.  Under st->lock. */
static inline void st_sum_moved(struct hotfs_store *st)
{
	atomic_store_explicit(&st->uncommitted, st->nsum - st->nsum_disk,
			      memory_order_relaxed);
}

/* Change a region's state, keeping st->nused (regions holding data). */
static inline void st_rstate(struct hotfs_store *st, uint32_t r,
			     uint32_t state)
{
	bool was = st->regions[r].state >= R_OPEN, is = state >= R_OPEN;

	st->regions[r].state = state;
	if (was != is)
		atomic_fetch_add_explicit(&st->nused, is ? 1 : -1,
					  memory_order_relaxed);
}

static inline uint64_t st_region_off(const struct hotfs_store *st,
				     uint32_t r)
{
	return (uint64_t)r * st->g.rsize;
}

/* store_util.c: the leaf every store file may use. */
uint64_t st_now_ns(void);
uint64_t st_stamp_hash(uint64_t ino, uint64_t size, int64_t mtime_ns,
		       int64_t ctime_ns);
uint64_t st_seed(uint64_t dev, uint64_t ino, uint32_t extno, uint64_t gen);
void st_set_state_reason(struct hotfs_store *st, int state, int err,
			 const char *reason);
void st_set_state(struct hotfs_store *st, int state, int err,
		  const char *what);
/* No region can be added or recycled: read-only, with the reason that
 * says to free space on the cachedir's filesystem (logged if log). */
void st_no_room(struct hotfs_store *st, bool log);
void st_clear_space_state(struct hotfs_store *st);

/* store_region.c: a file's extents change (invalidation, restamp); under
 * idx_lock, either way. */
void st_rk_note(struct hotfs_store *st, uint64_t dev, uint64_t ino);
/* store_region.c: persist a tombstone, or queue it if st->lock is busy;
 * called with no store lock held. */
void st_tombstone_nowait(struct hotfs_store *st, uint64_t dev, uint64_t ino,
			 uint32_t first, uint32_t count);

/* store_index.c: callers hold idx_lock (shared for look-ups and walks
 * that drop nothing). */
int idx_init(struct hotfs_store *st, uint64_t max_files,
	     uint64_t min_buckets);
void idx_exit(struct hotfs_store *st);
int idx_lookup(struct hotfs_store *st, uint64_t dev, uint64_t ino,
	       uint32_t rec, uint64_t stamp, struct st_rec *r);
int idx_get(const struct hotfs_store *st, uint64_t dev, uint64_t ino,
	    uint32_t rec, struct st_rec *r);
bool idx_file_stamp(const struct hotfs_store *st, uint64_t dev,
		    uint64_t ino, uint64_t *stamp);
uint32_t idx_file_records(const struct hotfs_store *st, uint64_t dev,
			  uint64_t ino);
void idx_set_stamp(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		   uint64_t stamp);
void idx_prefetch(const struct hotfs_store *st, uint64_t dev, uint64_t ino,
		  int stage);
int idx_put(struct hotfs_store *st, const struct st_rec *r);
bool idx_del_at(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		uint32_t rec, uint32_t region, uint32_t off);
uint32_t idx_walk(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		  uint32_t lo, uint32_t hi, idx_walk_fn fn, void *arg);
uint64_t idx_walk_all(struct hotfs_store *st, idx_walk_fn fn, void *arg);
uint32_t idx_drop_file(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		       uint32_t first, uint32_t count);
uint32_t idx_drop_other_stamps(struct hotfs_store *st, uint64_t dev,
			       uint64_t ino, uint64_t stamp);
uint64_t idx_records(const struct hotfs_store *st);
uint64_t idx_ram(const struct hotfs_store *st);

/* store_region.c: callers hold st->lock. */
int __st_commit(struct hotfs_store *st, bool seal);
int __st_append(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		uint32_t extno, uint64_t size, int64_t mtime_ns,
		int64_t ctime_ns, const void *buf, uint32_t len);
int __st_tombstone(struct hotfs_store *st, uint64_t dev, uint64_t ino,
		   uint32_t first, uint32_t count);
/* The tombstones st_tombstone_nowait queued go into the summary. */
void __st_drain_tombstones(struct hotfs_store *st);
int __st_evict_region(struct hotfs_store *st, uint32_t r, bool reuse,
		      bool punch);
int __st_watermarks(struct hotfs_store *st);
/* Regions the capacity leaves the store now, after the reserve
 * (st_set_reserve): at least one.  No locks. */
uint32_t st_regions_allowed(const struct hotfs_store *st);
/* Regions holding space: FREE, OPEN or SEALED (store_reserve.c). */
uint32_t st_regions_allocated(const struct hotfs_store *st);
/* Can an insert find a region at all: one allocated (free, open, or to
 * recycle), or room for one on the cachedir's filesystem? */
bool __st_has_room(struct hotfs_store *st);

/* store_recover.c */
int st_load_summary(struct hotfs_store *st, uint32_t r, st_sument_fn fn,
		    void *arg, struct st_scan *res);
int st_recover(struct hotfs_store *st);

#endif
