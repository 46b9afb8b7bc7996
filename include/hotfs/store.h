/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hotfs cache store: hot extents of source files kept on an SSD.
 *
 * The store is a log: one data file ("data") under the cachedir, divided
 * into regions (16 MiB by default).  Extents of any length up to the extent
 * size are appended into the open region, packed at 512-byte alignment
 * (4 KiB for extents of 64 KiB or more); each region ends with summary
 * blocks listing what it holds.  The in-memory index is rebuilt from the
 * summaries at open; whole regions are evicted oldest first.  See
 * src/store/store_i.h for the on-disk format and the reasons behind it.
 *
 * Calling convention: every function returns 0 (or a count) on success and
 * -errno on failure, and never leaves anything in errno.  A failing cache
 * device never makes a reader fail: lookups then miss, and the state
 * (st_get_stats) says why.
 *
 * Read path, with io_uring:
 *	st_lookup()		-> struct hotfs_loc (fd, offset, length, ...)
 *	st_loc_span()		-> which bytes to read for a byte range
 *	read data (and the block checksums, span.tab_off/tab_len)
 *	st_verify()		-> 0, or the caller reads the source instead
 * st_read() does all of that with pread, for tests and the fallback path.
 *
 * Durability: inserts become durable in groups (st_commit, a region
 * filling up, commit_bytes, or commit_ms checked at each insert and by
 * st_tick).  The daemon calls st_tick() about once a second: it commits
 * what is due and applies the free-space watermarks.  A kill -9 or a
 * power cut loses at most the inserts since the last commit (commit_ms),
 * plus, if it tears a commit's write, the rest of that region's last
 * summary block (< 64 extents); a restart reopens the region the last run
 * was appending to.
 *
 * Threads: every function may be called from any thread.  st_lookup and
 * st_verify take the index lock shared; inserts, commits and evictions
 * serialise on the store mutex; st_invalidate takes the index lock alone
 * (it never waits behind an insert's I/O or an fdatasync).  Lock order:
 * store mutex, then index rwlock, then the state lock (a leaf); the
 * details are in src/store/store_i.h.
 * Callbacks (st_keep_fn, st_iter_fn) run with store locks held: they must
 * not call back into the store, nor take a lock that anyone holds while
 * calling into the store.
 */
#ifndef HOTFS_STORE_H
#define HOTFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotfs/srcstamp.h"	/* struct hotfs_key, hotfs_stamp */

struct hotfs_store;


/*
 * Where a cached extent lives.  Filled by st_lookup; the caller may read
 * from fd (owned by the store: do not close it) and must pass the same loc
 * to st_verify.  Valid until st_close; reading it after the region was
 * reused is caught by st_verify (-ESTALE).
 */
struct hotfs_loc {
	int fd;			/* the data file */
	uint32_t len;		/* extent length in bytes */
	uint64_t off;		/* offset of the extent's byte 0 in fd */
	uint64_t tab_off;	/* offset of its block checksums, 0 = none */
	uint64_t gen;		/* region generation at lookup */
	uint64_t csum;		/* checksum of the whole extent: its low
				 * 32 bits, what the index keeps */
	uint32_t region;
	uint32_t extno;
	struct hotfs_key key;
};

/* Block size of the per-block checksums. */
#define ST_BLOCK		4096u

/*
 * The bytes to read to serve [off, off + len) of an extent: whole
 * ST_BLOCK blocks, plus (only if not the whole extent) the checksums of
 * those blocks.
 */
struct hotfs_span {
	uint64_t data_off;	/* file offset to read from */
	uint32_t data_len;	/* bytes to read (block-rounded, clipped) */
	uint32_t ext_off;	/* extent offset of data_off (block-aligned) */
	uint64_t tab_off;	/* file offset of the checksums, 0 = none */
	uint32_t tab_len;	/* bytes of checksums to read */
};

enum hotfs_store_state {
	ST_OK = 0,
	ST_READONLY,		/* no more inserts, lookups still served */
	ST_OFF,			/* every lookup misses, until reopened */
};

enum hotfs_inval_reason {
	ST_INVAL_WRITE = 0,	/* write through the mount */
	ST_INVAL_SOURCE,	/* source stamp changed */
	ST_INVAL_CSUM,		/* data failed its checksum */
	ST_INVAL_USER,		/* hotfsctl evict */
	ST_INVAL_COPIED,	/* the file's whole copy holds them now
				 * (hotfs/filecopy.h) */
	ST_INVAL_NR,
};

/* One cached extent, as shown to callbacks. */
struct hotfs_extent_info {
	struct hotfs_key key;
	uint32_t extno;
	uint32_t len;
	uint32_t region;
	bool hot;		/* looked up since inserted (or reinserted) */
	bool no_room;		/* st_keep_fn: the region's room for keepers
				 * is used up and none was declined: it goes
				 * whatever the answer */
};

/*
 * Reinsertion: called for each live extent of a region about to be
 * recycled; return true to have the store copy it forward.  NULL keeps
 * the extents that were looked up since they were written.
 */
typedef bool (*st_keep_fn)(void *arg, const struct hotfs_extent_info *x);
/* Iteration: return nonzero to stop (st_iterate returns that value). */
typedef int (*st_iter_fn)(void *arg, const struct hotfs_extent_info *x);

struct hotfs_store_params {
	const void *ident;	/* identity of the source (opaque bytes) */
	size_t ident_len;	/* 1..ST_IDENT_MAX */
	uint64_t capacity;	/* bytes; 0 = as recorded in the cachedir,
				 * or 90% of its fs's free space if new */
	uint32_t extent;	/* power of two, 4K..4M */
	uint32_t region;	/* 0 = ST_REGION_DEFAULT, or as recorded */
	bool reset;		/* empty whatever the cachedir holds */
	bool forget;		/* start empty (a store of this source keeps
				 * its size): what it holds cannot be
				 * trusted, the source's inode numbers are
				 * not kept across mounts */
	unsigned commit_ms;	/* group commit interval, 0 = 1000 */
	uint64_t commit_bytes;	/* or after this much data, 0 = 4 MiB */
	/* free space of the cachedir fs, percent (cachefilesd): 0 = 10/7/3 */
	unsigned brun, bcull, bstop;
	st_keep_fn keep;
	void *keep_arg;
};

#define ST_IDENT_MAX		1024u
#define ST_REGION_DEFAULT	(16u << 20)
/*
 * Record numbers.  A record is either an extent or a block of a file:
 *	extno			bytes [extno * extent, + len), len <= extent
 *	ST_REC_BLOCK | blkno	bytes [blkno * ST_BLOCK, + len), len <=
 *				ST_BLOCK (a random reader's block: the
 *				read path chooses the grain, hotfs/cache.h)
 * Both kinds of one file may hold the same bytes at once (both current:
 * the index keeps one stamp per file); an invalidation or a tombstone of
 * extents [first, first + count) drops the blocks within them as well.
 * Extent numbers are below ST_EXT_LIMIT and block numbers below
 * ST_BLK_LIMIT: a file's bytes from 2^31 extents on (2^49 bytes with
 * 256K extents, only sparse files get there) are never cached, nor as
 * blocks from 8 TiB on (there the extent grain is used).
 */
#define ST_REC_BLOCK		0x80000000u
#define ST_EXT_LIMIT		ST_REC_BLOCK
#define ST_BLK_LIMIT		ST_REC_BLOCK

static inline bool st_rec_is_block(uint32_t rec)
{
	return rec & ST_REC_BLOCK;
}

/* The file offset of a record's byte 0 (extent size extent). */
static inline uint64_t st_rec_off(uint32_t rec, uint32_t extent)
{
	return st_rec_is_block(rec) ?
	       (uint64_t)(rec & ~ST_REC_BLOCK) * ST_BLOCK :
	       (uint64_t)rec * extent;
}

/* The longest a record of this number can be. */
static inline uint32_t st_rec_max(uint32_t rec, uint32_t extent)
{
	return st_rec_is_block(rec) ? ST_BLOCK : extent;
}

struct hotfs_store_stats {
	enum hotfs_store_state state;
	char reason[192];	/* why not ST_OK, and what to do */
	uint64_t state_since;	/* unix seconds: opened, or last change */
	uint64_t capacity;	/* bytes the store may use */
	uint64_t regions;	/* regions the capacity allows */
	uint64_t regions_used;	/* holding data (open + sealed) */
	uint64_t regions_allowed; /* of regions, what the reserve leaves
				   * (st_set_reserve) */
	bool filling;		/* st_filling */
	uint64_t extents;	/* cached extents */
	uint64_t bytes;		/* their payload bytes */
	uint64_t bytes_written;	/* to the SSD: data, padding, metadata */
	uint64_t bytes_inserted; /* payload handed to st_insert */
	uint64_t inserts;
	uint64_t evictions;	/* regions evicted or recycled */
	uint64_t evicted_extents;
	uint64_t reinserted;	/* extents copied forward at eviction */
	uint64_t culls;		/* regions freed for the watermarks */
	uint64_t invalidations[ST_INVAL_NR];
	uint64_t stale_reads;	/* st_verify saw the region reused */
	uint64_t commits;
	uint64_t uncommitted;	/* records inserted since the last commit */
	uint64_t regions_dropped; /* torn/corrupt at recovery */
	uint64_t extents_recovered;
	uint64_t entries_max;	/* records the capacity could hold */
	uint64_t index_bytes;	/* RAM the index uses now (allocated
				 * nodes, touched pages), not a reserve */
};

/*
 * Open (creating, recovering, or with p->reset emptying) the store in
 * the directory dirfd (opened by dir_open_owned, hotfs/fileio.h: the
 * daemon's user owns it; the store keeps its own descriptor), named
 * cachedir in messages.  Its files are opened relative to it, following
 * no symlink: one found in place of a file of the store refuses it (as
 * does a file of another user's or with other hard links).  On failure
 * *err gets one line for the user: -EBUSY another process has it,
 * -EEXIST it caches another source (or holds files that are not a
 * store), -EUCLEAN its superblock is damaged, -EINVAL bad parameters;
 * reset overrides the last three.
 */
int st_open_at(int dirfd, const char *cachedir,
	       const struct hotfs_store_params *p, struct hotfs_store **out,
	       char *err, size_t errlen);
/* The same, opening the existing directory cachedir (dir_open_owned). */
int st_open(const char *cachedir, const struct hotfs_store_params *p,
	    struct hotfs_store **out, char *err, size_t errlen);
/*
 * What the user can do about st_open's (or a cachedir's) error err, for
 * the errors whose message does not say it already (a damaged or foreign
 * store names reset, a too small one cachesize): NULL for the others.
 */
const char *st_advice(int err);
/* Commit, release the cachedir and free; st may be NULL. */
int st_close(struct hotfs_store *st);

/*
 * Find record extno (an extent or ST_REC_BLOCK | a block) of key, cached
 * for exactly this stamp.  0 and *loc,
 * or -ENOENT (a stamp that differs also drops the file's extents).
 */
int st_lookup(struct hotfs_store *st, const struct hotfs_key *key,
	      uint32_t extno, const struct hotfs_stamp *stamp,
	      struct hotfs_loc *loc);
/* The same without dropping anything: for a stamp that may be older
 * than the records' (a revalidate=N read, hotfs/readpath.h); -ESTALE
 * where the extent is cached under another stamp. */
int st_peek(struct hotfs_store *st, const struct hotfs_key *key,
	    uint32_t extno, const struct hotfs_stamp *stamp,
	    struct hotfs_loc *loc);
/* The extent size the store was made with. */
uint32_t st_extent(const struct hotfs_store *st);
/* The data file (as in struct hotfs_loc), for readers that open it again
 * (O_DIRECT); it never changes while the store is open. */
int st_data_fd(const struct hotfs_store *st);
/* The bytes to read for [off, off + len) of loc's extent; -EINVAL if off
 * is past its end. */
int st_loc_span(const struct hotfs_loc *loc, uint32_t off, uint32_t len,
		struct hotfs_span *sp);
/*
 * Check what the caller read for a span (buf = span.data_len bytes from
 * span.data_off, tab = span.tab_len bytes from span.tab_off, or NULL to
 * have them read here).  0 = serve it; -ESTALE = the region was reused
 * meanwhile; -EBADMSG = corrupt (counted, entry dropped); -EINVAL = not a
 * span of this extent.  On any error, read the source instead.
 */
int st_verify(struct hotfs_store *st, const struct hotfs_loc *loc,
	      uint32_t ext_off, const void *buf, uint32_t len,
	      const void *tab);
/* The caller's read of loc failed with err: EIO and the like turn the
 * store off (every lookup misses until it is reopened). */
void st_report_io_error(struct hotfs_store *st, const struct hotfs_loc *loc,
			int err);
/* peek + pread + verify of [off, off + len): bytes copied, or -errno
 * (-ESTALE: the file's records are under another stamp; none dropped). */
ssize_t st_read(struct hotfs_store *st, const struct hotfs_key *key,
		uint32_t extno, const struct hotfs_stamp *stamp, uint32_t off,
		void *buf, size_t len);

/*
 * Cache len (1..st_rec_max) bytes as record extno of key, read from the
 * source at this stamp; replaces the extent, drops the file's extents of
 * other stamps.  -EROFS when the store is read-only or off, -ENOSPC when
 * there is no room at all; neither is worth retrying soon.
 */
int st_insert(struct hotfs_store *st, const struct hotfs_key *key,
	      uint32_t extno, const struct hotfs_stamp *stamp,
	      const void *buf, size_t len);
/* Drop extents [first, first + count) of key (count 0: to the end); a
 * tombstone keeps them dropped after the next commit and a restart.
 * Returns how many were cached. */
int st_invalidate(struct hotfs_store *st, const struct hotfs_key *key,
		  uint32_t first, uint32_t count,
		  enum hotfs_inval_reason why);
/*
 * A write through the mount changed the file from stamp old to now: the
 * records holding any byte of [drop_off, drop_off + drop_len) were
 * written and are dropped (drop_len 0: none, ST_TO_END: to the end of
 * the file), so are the ones a size change makes partial; the others
 * take the new stamp (in memory only).  Everything is dropped if any
 * record did not have the old stamp.  Returns the records kept, or
 * -errno.
 */
#define ST_TO_END	UINT64_MAX
int st_restamp(struct hotfs_store *st, const struct hotfs_key *key,
	       const struct hotfs_stamp *old, const struct hotfs_stamp *now,
	       uint64_t drop_off, uint64_t drop_len);
/*
 * Bytes of the capacity used by others (the file grain's copies,
 * hotfs/filecopy.h): the store holds at most the rest, in whole regions
 * (at least one).  A lower figure takes effect at once, a higher one at
 * the next st_tick, which evicts the oldest regions (and punches their
 * space out) until it fits.
 */
void st_set_reserve(struct hotfs_store *st, uint64_t bytes);
/* Evict the nregions oldest regions (no reinsertion); returns how many. */
int st_evict(struct hotfs_store *st, unsigned nregions);
/* What of key is cached for this stamp in extents [first, end), the
 * blocks within them included: payload bytes and records. */
int st_file_cached(struct hotfs_store *st, const struct hotfs_key *key,
		   const struct hotfs_stamp *stamp, uint32_t first,
		   uint32_t end, uint64_t *bytes, uint64_t *records);
/* Call fn for every cached extent, under the index lock (shared). */
int st_iterate(struct hotfs_store *st, st_iter_fn fn, void *arg);

/* Make every insert and invalidation so far durable. */
int st_commit(struct hotfs_store *st);
/* Periodic work, about once a second: due commits, watermarks. */
int st_tick(struct hotfs_store *st);

void st_get_stats(struct hotfs_store *st, struct hotfs_store_stats *s);
/*
 * What an insert of len bytes now would add to bytes_written, with the
 * commit it owes: the record and its padding, the summary blocks the
 * next commit writes (those of the inserts not yet committed too), and
 * where the open region has no room, sealing it and the next region (a
 * whole region's size if that one is recycled: what it keeps is copied
 * forward).  For the write budget; an upper bound.
 */
uint64_t st_insert_cost(struct hotfs_store *st, uint32_t len);
/* bytes_written of st_get_stats alone (no locks). */
uint64_t st_bytes_written(struct hotfs_store *st);
/* Has the store room left that no insert has used yet: no region was
 * recycled to make room, nor found full by st_next_victim, since one was
 * last freed (or since the store opened with a free one)?  No locks: a
 * hint for the read path. */
bool st_filling(struct hotfs_store *st);
/* Bytes of the regions no insert uses (free or never used), less those
 * the reserve takes (st_set_reserve).  No locks: a hint. */
uint64_t st_room(struct hotfs_store *st);
/*
 * The record the next recycling would let go first, for admission while
 * no record was let go yet: of the oldest region, the first not read
 * since it was written, else its first.  -ENOENT when an insert of len
 * bytes would not recycle a region now (there is room), or there is
 * none to name.  Finding the store full makes st_filling false.
 */
int st_next_victim(struct hotfs_store *st, uint32_t len,
		   struct hotfs_key *key, uint32_t *rec);
/* Does the index hold a record of extno of key, under any stamp?  Unlike
 * st_lookup, it does not count as a look-up (the record stays cold). */
bool st_holds(struct hotfs_store *st, const struct hotfs_key *key,
	      uint32_t extno);
/* The state alone, without locks (for the read path). */
enum hotfs_store_state st_state(struct hotfs_store *st);
const char *st_state_name(enum hotfs_store_state s);
/* pct% of the size (or, of_free, of the free space) of dir's fs. */
int st_size_from_fs(const char *dir, unsigned pct, bool of_free,
		    uint64_t *bytes);

#endif
