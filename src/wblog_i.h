/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writeback log's insides, shared by its files: src/wblog.c (writing,
 * group commit, reading, trims, flushing), src/wblog_map.c (the map of
 * dirty blocks and the records in memory), src/wblog_open.c (the header,
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
#define WR_MAGIC	"HOTFSWR2"
#define WL_VERSION	3u		/* 3: the cleaner's MULTI records */
#define WL_VERSION_MIN	2u		/* 2: records carry the file's birth */
#define WL_HDR_BLOCKS	2u		/* the two header slots */
#define WL_MIN_BLOCKS	64u
#define WL_GEN_BUCKETS	1024u

/*
 * MULTI (the cleaner's): blocks of one file that need not be adjacent; the
 * header block lists them (struct wl_mblk after the header, ascending),
 * the data blocks follow in that order; the checksum covers the list.
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
};

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
	uint64_t csum;		/* of this header (csum 0) and the data */
};

struct wl_mblk {
	uint64_t blk;		/* block of the file */
	uint16_t lo, hi;	/* its bytes in the record */
	uint32_t pad;
};
#define WL_MULTI_MAX	((WB_BLOCK - sizeof(struct wl_rec)) / \
			 sizeof(struct wl_mblk))

/*----------------------------------------------------------------*/
/* the map: files and their dirty blocks */

struct wl_file {
	struct wl_file *next;	/* hash chain */
	struct wb_fid fid;	/* its birth: the newest DATA record's */
	uint64_t nblocks;	/* dirty blocks */
	uint64_t end;		/* dirty end */
	int64_t mtime_ns;	/* its newest dirty record's wall clock */
	unsigned inflight;	/* runs being flushed */
	const void *owner;	/* whose they are (wblog_flush_next_by) */
};

struct wl_ent {
	struct wl_ent *next;	/* hash chain */
	struct wl_file *f;
	uint64_t blk;		/* block of the file */
	uint64_t pos;		/* its copy: a block of the area */
	uint64_t seq;		/* of the record holding it */
	uint16_t lo, hi;	/* dirty bytes within the block */
	bool lost;		/* its copy could not be read (counted) */
	bool busy;		/* in a run being flushed (this copy) */
};

/* one record in the log, oldest first */
struct wl_recmem {
	uint64_t start;		/* first block of the area it occupies */
	uint64_t nblk;		/* blocks it occupies (header included) */
	uint64_t live;		/* map entries that point into it */
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
	bool releasing;
	/* the cleaner (wblog_clean.c) */
	uint64_t reserve;	/* blocks a write's record leaves free */
	uint64_t clean_seq;	/* its last copy: durable before a release */
	uint64_t cleaned;	/* bytes it copied */
	bool cleaning;
	/* counters */
	uint64_t dirty_bytes, flushed, flush_errors, absorbed, replayed;
	uint64_t lost;		/* dirty bytes whose copy could not be read */
	uint64_t syncs;
	/* bumped when dirty bytes of a file are forgotten, one counter for
	 * the files whose identity hashes to it */
	uint64_t forget_gen[WL_GEN_BUCKETS];
};

static inline off_t blk_off(uint64_t pos)
{
	return (off_t)((WL_HDR_BLOCKS + pos) * WB_BLOCK);
}

/* The copy of e read into blk (under m): 0, or -EIO with e counted lost
 * (once: a block rewritten since is another copy). */
int wl_read_copy(struct wblog *wl, struct wl_ent *e, void *blk);

/* the map (wblog_map.c); all under m */
struct wl_file *wl_file_find(struct wblog *wl, const struct wb_fid *fid);
struct wl_file *wl_file_get(struct wblog *wl, const struct wb_fid *fid);
void wl_file_put(struct wblog *wl, struct wl_file *f);
struct wl_ent **wl_ent_slot(struct wblog *wl, struct wl_file *f, uint64_t blk);
struct wl_ent *wl_ent_find(struct wblog *wl, struct wl_file *f, uint64_t blk);
void wl_ent_drop(struct wblog *wl, struct wl_ent **pp);
int wl_ent_set(struct wblog *wl, struct wl_file *f, uint64_t blk,
	    uint64_t pos, uint64_t seq, unsigned lo, unsigned hi);
void wl_file_trim(struct wblog *wl, struct wl_file *f, uint64_t size);
int wl_apply_data(struct wblog *wl, const struct wl_rec *h, uint64_t pos);
int wl_apply_multi(struct wblog *wl, const struct wl_rec *h,
		   const struct wl_mblk *l, uint64_t pos);
/* Forget the first n records (their space released). */
void wl_rq_drop(struct wblog *wl, size_t n);
int wl_rq_push(struct wblog *wl, uint64_t start, uint64_t nblk, int64_t t);
struct wl_recmem *wl_rec_of(struct wblog *wl, uint64_t seq);

/* Append a record (h filled but for seq, epoch, csum) with data of
 * h->nblk blocks; under m.  Its first data block in *data_pos.  all: it
 * may use the cleaner's reserve (a trim's, the cleaner's). */
int wl_append(struct wblog *wl, struct wl_rec *h, const struct wl_mblk *l,
	      const char *data, bool all, uint64_t *data_pos);
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
uint64_t wl_rec_csum(const struct wl_rec *h, const void *data, size_t len);
uint64_t wl_super_csum(const struct wl_super *s);
/* MULTI: the list too */
uint64_t wl_multi_csum(const struct wl_rec *h, const struct wl_mblk *l,
		       const void *data, size_t len);
int wl_super_write(struct wblog *wl, uint64_t tail_pos, uint64_t tail_seq);

#endif
