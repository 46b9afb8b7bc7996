/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writeback log's insides, shared by its files: wblog.c (writing,
 * group commit, reading, trims, flushing), wblog_map.c (the map of
 * dirty blocks and the records in memory), wblog_open.c (the header,
 * checksums, open and replay).  include/hotfs/wblog.h gives the design.
 */
#ifndef HOTFS_WBLOG_I_H
#define HOTFS_WBLOG_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotfs/wblog.h"

#define WL_MAGIC	"HOTFSWL2"
#define WR_MAGIC	"HOTFSWR3"	/* records of format 4 */
#define WR_MAGIC_V3	"HOTFSWR2"	/* of formats 2 and 3: still replayed */
#define WL_VERSION	4u		/* 4: a header checksum apart from a
					 * checksum per data block, the log's
					 * salt, the synced sequence */
#define WL_VERSION_MIN	2u		/* 2: records carry the file's birth */
#define WL_HDR_BLOCKS	2u		/* the two header slots */
#define WL_MIN_BLOCKS	64u
#define WL_GEN_BUCKETS	1024u

/*
 * MULTI (the cleaner's): blocks of one file that need not be adjacent; the
 * header block lists them (struct wl_mblk after the header, ascending),
 * the data blocks follow in that order.  A block listed WL_MBLK_LOST is a
 * dirty block whose copy was lost (its data block is zeros): carried
 * forward so that its bytes stay lost, never the source's older ones.
 */
enum { WR_DATA = 1, WR_TRIM = 2, WR_PAD = 3, WR_MULTI = 4 };

struct wl_super {
	char magic[8];
	uint32_t version;
	uint32_t block;
	uint64_t nblocks;	/* the area */
	uint64_t gen;		/* the newer slot wins */
	uint64_t tail_pos;	/* where replay starts (a block of the area) */
	uint64_t tail_seq;	/* and the sequence number found there */
	uint64_t epoch;		/* records from epoch_seq on carry it */
	uint64_t epoch_seq;
	uint64_t csum;
	/* version 4 (the checksum covers them; before, the fields above) */
	uint64_t salt;		/* seeds the records' header checksums */
	uint64_t synced;	/* every record up to it was durable when
				 * this header was written */
};

/*
 * A record's header (format 4).  Its block holds, after it, a MULTI
 * record's list (struct wl_mblk[nblk]), then for DATA and MULTI the
 * checksum of each data block (uint64_t[nblk], wl_blk_csum): a damaged
 * data block costs that block alone, a reader of a block checks its copy
 * without the rest of the record, and a record whose header is whole
 * names what a damaged block held.  The header's checksum covers those
 * bytes and is seeded with the log's secret salt: no file's data written
 * through the mount can pass for a record where replay looks for one
 * past a damaged header.
 */
struct wl_rec {
	char magic[8];
	uint64_t seq;
	uint64_t epoch;
	uint32_t type;
	uint32_t nblk;		/* data blocks following */
	uint64_t dev, ino;
	uint64_t birth;		/* DATA: the file's (struct wb_fid) */
	uint64_t off, len;	/* DATA: the bytes; TRIM: off = the size */
	int64_t time_ns;
	uint64_t synced;	/* every record up to it was durable when
				 * this one was appended */
	uint64_t csum;		/* wl_hdr_csum */
};

/* A record of formats 2 and 3: one checksum over header and data. */
struct wl_rec_v3 {
	char magic[8];
	uint64_t seq;
	uint64_t epoch;
	uint32_t type;
	uint32_t nblk;
	uint64_t dev, ino;
	uint64_t birth;
	uint64_t off, len;
	int64_t time_ns;
	uint64_t csum;		/* of this header (csum 0) and the data */
};

struct wl_mblk {
	uint64_t blk;		/* block of the file */
	uint16_t lo, hi;	/* its bytes in the record */
	uint32_t flags;		/* WL_MBLK_LOST (format 3: 0) */
};
#define WL_MBLK_LOST	1u
#define WL_MULTI_MAX	((WB_BLOCK - sizeof(struct wl_rec)) / \
			 (sizeof(struct wl_mblk) + sizeof(uint64_t)))
#define WL_MULTI_MAX_V3	((WB_BLOCK - sizeof(struct wl_rec_v3)) / \
			 sizeof(struct wl_mblk))
_Static_assert(sizeof(struct wl_rec) + WB_REC_MAX / WB_BLOCK *
	       sizeof(uint64_t) <= WB_BLOCK, "a DATA record's sums fit");

/* The bytes of a header block the header's checksum covers (h sane). */
static inline size_t wl_hdr_len(const struct wl_rec *h)
{
	size_t n = sizeof(*h);

	if (h->type == WR_MULTI)
		n += h->nblk * sizeof(struct wl_mblk);
	if (h->type == WR_MULTI || h->type == WR_DATA)
		n += h->nblk * sizeof(uint64_t);
	return n;
}

/* Where a header block's data checksums start. */
static inline size_t wl_sums_at(const struct wl_rec *h)
{
	return sizeof(*h) + (h->type == WR_MULTI ?
			     h->nblk * sizeof(struct wl_mblk) : 0);
}

/*----------------------------------------------------------------*/
/* the map: files and their dirty blocks */

struct wl_file {
	struct wl_file *next;	/* hash chain */
	struct wb_fid fid;	/* its birth: the newest DATA record's (a
				 * write or record of another birth drops
				 * the bytes held: wl_file_birth) */
	uint64_t nblocks;	/* dirty blocks */
	uint64_t end;		/* dirty end */
	int64_t mtime_ns;	/* its newest dirty record's wall clock */
	unsigned inflight;	/* runs being flushed */
	uint64_t nlost;		/* lost blocks */
	const void *owner;	/* whose they are (wblog_flush_next_by) */
};

struct wl_ent {
	struct wl_ent *next;	/* hash chain */
	struct wl_file *f;
	uint64_t blk;		/* block of the file */
	uint64_t pos;		/* its copy: a block of the area */
	uint64_t seq;		/* of the record holding it */
	uint64_t csum;		/* its copy's (wl_blk_csum); 0: none */
	uint16_t lo, hi;	/* dirty bytes within the block */
	bool lost;		/* its copy could not be read or failed its
				 * checksum (counted): reads answer an error,
				 * the flusher leaves it */
	bool busy;		/* in a run being flushed (this copy) */
};

/* one record in the log, oldest first */
struct wl_recmem {
	uint64_t start;		/* first block of the area it occupies */
	uint64_t nblk;		/* blocks it occupies (header included) */
	uint64_t live;		/* map entries that point into it */
	uint64_t lost;		/* of them, lost */
	int64_t time_ns;
	/* DATA: its file (valid while live: the file holds the entries)
	 * and the blocks of the file it holds */
	struct wl_file *f;
	uint64_t blk0;
	uint32_t ndata;
	uint64_t *blks;		/* MULTI: its ndata blocks (malloc'd) */
};

/* The k-th block of the file a DATA or MULTI record holds. */
static inline uint64_t wl_rec_blk(const struct wl_recmem *r, uint32_t k)
{
	return r->blks ? r->blks[k] : r->blk0 + k;
}

struct wblog {
	pthread_mutex_t m;
	pthread_cond_t cv;	/* a sync ended, a flush ended */
	int fd;
	uint64_t nblocks;	/* the area's */
	uint64_t salt;		/* the header's (struct wl_super) */
	/* the map (protected by m) */
	struct wl_file **fh;
	size_t fh_size, nfiles;
	struct wl_ent **eh;
	size_t eh_size, nents;
	/* the records between the durable tail and the head, a ring of
	 * rq_cap entries from rq_head, whose sequence number is rq_seq */
	struct wl_recmem *rq;
	size_t rq_cap, rq_head, rq_n;
	uint64_t rq_seq;
	size_t dead;		/* leading records known to have live 0 */
	uint64_t head;		/* the next record's block */
	uint64_t used;		/* blocks from the durable tail to head */
	uint64_t epoch, epoch_seq, gen;
	/* group commit */
	uint64_t appended;	/* the last record's seq */
	uint64_t synced;	/* every record up to it durable */
	bool syncing;
	int sync_err;		/* sticky: the log's state is unknown */
	bool failed;		/* wblog_fail: nothing more is logged */
	bool releasing;
	/* the cleaner (wblog_clean.c) */
	uint64_t reserve;	/* blocks a write's record leaves free */
	uint64_t cleaned;	/* bytes it copied */
	bool cleaning;
	/* counters */
	uint64_t dirty_bytes, flushed, flush_errors, absorbed, replayed;
	uint64_t lost;		/* dirty bytes found lost (counted once) */
	uint64_t lost_held;	/* dirty bytes lost now, their blocks, */
	uint64_t lost_blocks;	/* the files that hold them */
	uint64_t lost_files;
	uint64_t csum_failures;	/* copies that failed their checksum */
	uint64_t lost_seq;	/* the newest record a block found lost is
				 * in, and the header's synced: a block */
	uint64_t hdr_synced;	/* found lost is made durable as lost */
	struct wblog_replay rp;	/* what the open's replay found */
	uint64_t syncs;
	/* bumped when dirty bytes of a file are forgotten, one counter for
	 * the files whose identity hashes to it */
	uint64_t forget_gen[WL_GEN_BUCKETS];
};

static inline off_t blk_off(uint64_t pos)
{
	return (off_t)((WL_HDR_BLOCKS + pos) * WB_BLOCK);
}

/* The checksum of a data block's copy in the log. */
uint64_t wl_blk_csum(const void *blk);
/*
 * The copy of e read into blk and checked against its checksum (under
 * m): 0, or -EIO (unreadable) or -EBADMSG (damaged, or no copy: lost
 * already) with e lost, counted once (a block rewritten since is another
 * copy).
 */
int wl_read_copy(struct wblog *wl, struct wl_ent *e, void *blk);

/* the map (wblog_map.c); all under m */
struct wl_file *wl_file_find(struct wblog *wl, const struct wb_fid *fid);
struct wl_file *wl_file_get(struct wblog *wl, const struct wb_fid *fid);
void wl_file_put(struct wblog *wl, struct wl_file *f);
struct wl_ent **wl_ent_slot(struct wblog *wl, struct wl_file *f, uint64_t blk);
struct wl_ent *wl_ent_find(struct wblog *wl, struct wl_file *f, uint64_t blk);
void wl_ent_drop(struct wblog *wl, struct wl_ent **pp);
int wl_ent_set(struct wblog *wl, struct wl_file *f, uint64_t blk,
	       uint64_t pos, uint64_t seq, unsigned lo, unsigned hi,
	       uint64_t csum);
/* e's copy lost, or (lost false) no longer: the counts of what is lost
 * now follow (not the count of bytes found lost: the caller's). */
void wl_ent_lost(struct wblog *wl, struct wl_ent *e, bool lost);
/* f cut to size: the dirty bytes dropped. */
uint64_t wl_file_trim(struct wblog *wl, struct wl_file *f, uint64_t size);
/* Its bytes held dropped if they are of another birth than birth (a
 * removed file's, whose inode number a later file took): how many. */
uint64_t wl_file_birth(struct wblog *wl, struct wl_file *f, uint64_t birth);
/* The map's effect of a record whose first data block is at pos, with
 * its data blocks' checksums (a MULTI record's LOST blocks: lost). */
int wl_apply_data(struct wblog *wl, const struct wl_rec *h, uint64_t pos,
		  const uint64_t *sums);
int wl_apply_multi(struct wblog *wl, const struct wl_rec *h,
		   const struct wl_mblk *l, uint64_t pos,
		   const uint64_t *sums);
/* Forget the first n records (their space released). */
void wl_rq_drop(struct wblog *wl, size_t n);
int wl_rq_push(struct wblog *wl, uint64_t start, uint64_t nblk, int64_t t);
struct wl_recmem *wl_rec_of(struct wblog *wl, uint64_t seq);

/* Append a record (h filled but for seq, epoch, synced, csum) with data
 * of h->nblk blocks; under m.  Its first data block in *data_pos, its
 * blocks' checksums in sums (h->nblk of them; 0 for a LOST block).  all:
 * it may use the cleaner's reserve (a trim's, the cleaner's). */
int wl_append(struct wblog *wl, struct wl_rec *h, const struct wl_mblk *l,
	      const char *data, bool all, uint64_t *data_pos,
	      uint64_t *sums);
/*
 * The cleaner (wblog_clean.c): the live blocks of the oldest records
 * copied to the head, coalesced by file, and the tail released past them
 * (outside m).  Blocks of log space freed (> 0), 0: nothing to gain (the
 * log holds live blocks only), or -errno.
 */
int64_t wl_clean(struct wblog *wl);
/*
 * The cleaner's reserve for a log of nblocks: 1/16 of the log, at least
 * two records of the largest size (so a batch always makes progress), at
 * most 1/8 of a small log.
 */
static inline uint64_t wl_reserve(uint64_t nblocks)
{
	uint64_t r = nblocks / 16, rec = WB_REC_MAX / WB_BLOCK + 1;

	if (r < 2 * rec)
		r = 2 * rec;
	if (r > nblocks / 8)
		r = nblocks / 8;
	return r;
}

/* the header and checksums (wblog_open.c) */
/* A header block's checksum (its wl_hdr_len bytes, csum taken as 0). */
uint64_t wl_hdr_csum(const void *hb, uint64_t salt);
uint64_t wl_super_csum(const struct wl_super *s);
/* Formats 2 and 3: of the header and the data (MULTI: the list too). */
uint64_t wl_rec_csum_v3(const struct wl_rec_v3 *h, const void *data,
			size_t len);
uint64_t wl_multi_csum_v3(const struct wl_rec_v3 *h, const struct wl_mblk *l,
			  const void *data, size_t len);
/* Write the header (tail, and every record up to synced durable) and
 * sync the log; outside m, one at a time (wl->releasing). */
int wl_super_write(struct wblog *wl, uint64_t tail_pos, uint64_t tail_seq,
		   uint64_t synced);
/*
 * A block found lost (wl_read_copy) stays lost across a crash: once a
 * reader or the flusher met one, every record so far is synced and the
 * header says so, so that a replay takes its damaged record for damage,
 * not for a torn tail.  Without m; 0 or -errno.
 */
int wl_lost_durable(struct wblog *wl);

#endif
