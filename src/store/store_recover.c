// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store recovery: parse the superblock and the region summaries,
 * and rebuild the index from them at open.
 *
 * The parsers (st_sb_decode, st_block_check, st_sument_check,
 * st_scan_region) are pure functions of a buffer, so that
 * tests/fuzz/fuzz_store_recover.c can feed them anything; whatever they
 * accept is within the region and the extent size, so a corrupt summary
 * can cost cache contents but never point outside the data file.
 *
 * Recovery reads the first summary block of every region, sorts the valid
 * regions by sequence (oldest first) and replays their entries in order:
 * a later entry for the same extent replaces an earlier one, a later stamp
 * for a file drops the file's other stamps, a tombstone drops what came
 * before it.  Nothing but the cachedir is read: no source file is stat'ed
 * (stamps are checked by st_lookup).  A region whose first summary block
 * is torn is dropped whole; a chain that breaks keeps the blocks before
 * the break.  Both are counted (regions_dropped), as is a region whose
 * last block is neither a summary nor zeros (a free region's is zeros:
 * its summary was killed or never written), since only damage puts
 * anything else there.  The newest region, unless sealed, is reopened
 * for appending (resume_newest).
 *
 * Locks: st_recover runs inside st_open, before the store is shared.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "store_i.h"

/* 0 if an extent size and a region size can make a store. */
int st_geom_ok(uint32_t extent, uint32_t rsize)
{
	if (extent < ST_BLOCK || extent > (4u << 20) ||
	    (extent & (extent - 1)))
		return -EINVAL;
	if (rsize % ST_BLOCK || rsize > (1u << 30) ||
	    (uint64_t)rsize < 2ull * st_reclen(extent) + 4ull * ST_BLOCK)
		return -EINVAL;
	return 0;
}

int st_sb_decode(const void *buf, size_t len, struct st_sb *sb)
{
	if (len < sizeof(*sb))
		return -ENODATA;
	memcpy(sb, buf, sizeof(*sb));
	if (sb->magic != ST_SB_MAGIC)
		return -ENODATA;
	if (XXH3_64bits(sb, offsetof(struct st_sb, csum)) != sb->csum)
		return -EBADMSG;
	if (sb->version != ST_VERSION)
		return -EPROTONOSUPPORT;
	if (sb->size != sizeof(*sb) || !sb->epoch)
		return -EBADMSG;
	if (!sb->ident_len || sb->ident_len > ST_IDENT_MAX)
		return -EBADMSG;
	if (st_geom_ok(sb->extent, sb->rsize))
		return -EBADMSG;
	if (sb->capacity < 2ull * sb->rsize)
		return -EBADMSG;
	return 0;
}

static uint64_t block_csum(const uint8_t *blk)
{
	uint64_t h = XXH3_64bits(blk, offsetof(struct st_sumhdr, csum));

	return XXH3_64bits_withSeed(blk + sizeof(struct st_sumhdr),
				    ST_BLOCK - sizeof(struct st_sumhdr), h);
}

void st_block_seal(void *blk)
{
	struct st_sumhdr *h = blk;

	h->csum = block_csum(blk);
}

/*
 * 0 if blk is summary block number index of a region of sequence seq
 * (0: any); -ENODATA if it is not a summary block at all, -EBADMSG if it
 * is a damaged one, -ESTALE if it belongs to another life of the region.
 */
int st_block_check(const void *blk, const struct st_geom *g, uint64_t seq,
		   uint32_t index)
{
	struct st_sumhdr h;

	memcpy(&h, blk, sizeof(h));
	if (h.magic != ST_SUM_MAGIC)
		return -ENODATA;
	if (block_csum(blk) != h.csum)
		return -EBADMSG;
	if (h.epoch != g->epoch || !h.seq || (seq && h.seq != seq))
		return -ESTALE;
	if (h.index != index || h.count > ST_EPB || (h.flags & ~ST_SH_SEALED))
		return -EBADMSG;
	if (h.data_end % ST_ALIGN_SMALL ||
	    (uint64_t)h.data_end + (uint64_t)(index + 1) * ST_BLOCK > g->rsize)
		return -EBADMSG;
	return 0;
}

int st_sument_check(const struct st_sument *e, const struct st_geom *g,
		    uint32_t data_end)
{
	if (e->flags & ~ST_SE_TOMB)
		return -EBADMSG;
	if (e->dev > UINT32_MAX)
		return -EBADMSG;
	if (e->flags & ST_SE_TOMB)
		return 0;
	if (!e->len || e->len > st_rec_max(e->extno, g->extent))
		return -EBADMSG;
	if (e->off % st_align_of(e->len))
		return -EBADMSG;
	if ((uint64_t)e->off + st_reclen(e->len) > data_end)
		return -EBADMSG;
	return 0;
}

/*
 * Walk the summary chain at the end of a region.  tail holds the last
 * tail_len bytes of the region (a multiple of ST_BLOCK).  Valid entries go
 * to fn (if not NULL).  Returns 0 with res filled, or the error of block 0
 * (the region holds nothing usable).
 */
int st_scan_region(const void *tail, size_t tail_len,
		   const struct st_geom *g, st_sument_fn fn, void *arg,
		   struct st_scan *res)
{
	const uint8_t *end = (const uint8_t *)tail + tail_len;
	size_t nb = tail_len / ST_BLOCK;
	size_t i;
	int err;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < nb; i++) {
		const uint8_t *blk = end - (i + 1) * ST_BLOCK;
		struct st_sumhdr h;
		uint32_t j;

		err = st_block_check(blk, g, res->seq, i);
		if (err) {
			if (i == 0)
				return err;
			res->torn = err == -EBADMSG;
			return 0;
		}
		memcpy(&h, blk, sizeof(h));
		if (h.data_end < res->data_end) {
			res->torn = true;
			return 0;
		}
		res->seq = h.seq;
		for (j = 0; j < h.count; j++) {
			struct st_sument e;

			memcpy(&e, blk + sizeof(h) + j * sizeof(e), sizeof(e));
			if (st_sument_check(&e, g, h.data_end)) {
				res->bad_entries++;
				continue;
			}
			res->entries++;
			if (fn) {
				err = fn(arg, &e);
				if (err)
					return err;
			}
		}
		res->blocks++;
		res->data_end = h.data_end;
		if (h.flags & ST_SH_SEALED) {
			res->sealed = true;
			return 0;
		}
		if (h.count < ST_EPB)
			return 0;
	}
	res->more = (uint64_t)nb * ST_BLOCK < g->rsize;
	return 0;
}

/*
 * Read and scan region r's summary, growing the read (towards the region's
 * start, reading only what is new) until the chain ends.  fn sees each
 * valid entry once.
 */
int st_load_summary(struct hotfs_store *st, uint32_t r, st_sument_fn fn,
		    void *arg, struct st_scan *res)
{
	uint64_t rend = st_region_off(st, r) + st->g.rsize;
	size_t len = 0, want = 16 * ST_BLOCK;
	uint8_t *buf = NULL;
	int err;

	for (;;) {
		ssize_t n;
		void *p;

		if (want > st->g.rsize)
			want = st->g.rsize;
		p = realloc(buf, want);
		if (!p) {
			err = -ENOMEM;
			break;
		}
		buf = p;
		memmove(buf + want - len, buf, len);
		n = pread_full(st->datafd, buf, want - len, rend - want);
		if (n < 0) {
			err = n;
			break;
		}
		if ((size_t)n < want - len)
			memset(buf + n, 0, want - len - n);
		len = want;
		err = st_scan_region(buf, len, &st->g, NULL, NULL, res);
		if (err || !res->more || len == st->g.rsize) {
			if (!err && fn)
				err = st_scan_region(buf, len, &st->g, fn, arg,
						     res);
			break;
		}
		want = len * 4;
	}
	free(buf);
	return err;
}

#define REPLAY_BATCH	32

/* Entries are applied in batches, to overlap the index's cache misses. */
struct replay {
	struct hotfs_store *st;
	uint32_t region;
	uint32_t n;
	struct st_sument b[REPLAY_BATCH];
};

static void replay_apply(struct hotfs_store *st, uint32_t region,
			 const struct st_sument *e)
{
	struct st_rec t;

	if (e->flags & ST_SE_TOMB) {
		idx_drop_file(st, e->dev, e->ino, e->extno, e->len);
		return;
	}
	memset(&t, 0, sizeof(t));
	t.ino = e->ino;
	t.dev = e->dev;
	t.rec = e->extno;
	t.stamp = st_stamp_hash(e->ino, e->size, e->mtime_ns, e->ctime_ns);
	t.csum = (uint32_t)e->csum;
	t.region = region;
	t.off = e->off;
	t.len = e->len;
	/* drops the file's records of other stamps; fails only if memory
	 * is short (the record is then not cached) */
	idx_put(st, &t);
}

static void replay_flush(struct replay *rp)
{
	uint32_t i;
	int stage;

	for (stage = 0; stage < 2; stage++)
		for (i = 0; i < rp->n; i++)
			idx_prefetch(rp->st, rp->b[i].dev, rp->b[i].ino,
				     stage);
	for (i = 0; i < rp->n; i++)
		replay_apply(rp->st, rp->region, &rp->b[i]);
	rp->n = 0;
}

static int replay_one(void *arg, const struct st_sument *e)
{
	struct replay *rp = arg;

	rp->b[rp->n++] = *e;
	if (rp->n == REPLAY_BATCH)
		replay_flush(rp);
	return 0;
}

struct sumload {
	struct hotfs_store *st;
	bool overflow;
};

static int load_open(void *arg, const struct st_sument *e)
{
	struct sumload *sl = arg;
	struct hotfs_store *st = sl->st;

	if (st->nsum == st->sum_max) {
		sl->overflow = true;
		return 0;
	}
	st->sum[st->nsum++] = *e;
	return 0;
}

/*
 * Make the newest region, if it was not sealed, the open region again, so
 * that each restart does not strand a partly used region.  Its summary
 * goes back into st->sum (the last block will be rewritten in place, so it
 * must be exactly what is on disk), and everything between its records
 * and its summary chain is zeroed first: records that were written but
 * never committed, and summary blocks of a commit a crash cut short, must
 * not come back to life when the chain grows over them.
 */
static void resume_newest(struct hotfs_store *st, uint32_t r)
{
	struct st_region *reg = &st->regions[r];
	struct sumload sl = { st, false };
	uint64_t start, end, off = st_region_off(st, r);
	struct st_scan res;

	st->nsum = 0;
	if (st_load_summary(st, r, load_open, &sl, &res) || res.sealed ||
	    res.bad_entries || sl.overflow || res.seq != reg->seq ||
	    st->nsum != res.entries)
		goto no;
	start = st_roundup(res.data_end, ST_BLOCK);
	end = st->g.rsize - (uint64_t)res.blocks * ST_BLOCK;
	if (start < end &&
	    fallocate(st->datafd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		      off + start, end - start) &&
	    (fallocate(st->datafd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       off + start, end - start) ||
	     fallocate(st->datafd, FALLOC_FL_KEEP_SIZE, off + start,
		       end - start)))
		goto no;
	if (fdatasync(st->datafd))
		goto no;
	st_rstate(st, r, R_OPEN);
	reg->data_end = res.data_end;
	st->open = r;
	st->nsum_disk = st->nsum;
	st_sum_moved(st);
	return;
no:
	st->nsum = 0;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

struct rseq {
	uint64_t seq;
	uint32_t r;
};

static int rseq_cmp(const void *a, const void *b)
{
	const struct rseq *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The regions among the first inside ones whose last block is a valid
 * first summary block: their numbers and sequences into v, how many into
 * *n.  Counts the damaged ones.  0, or a read's -errno once the store
 * was turned off for it (a failing cache device must not stop the mount).
 */
static int find_regions(struct hotfs_store *st, uint32_t inside,
			uint8_t *blk, struct rseq *v, uint32_t *n)
{
	uint32_t r;

	*n = 0;
	/*
	 * Cold, these are random 4 KiB reads, one per region: let the
	 * kernel queue them all at once rather than one at a time.
	 */
	for (r = 0; r < inside; r++)
		posix_fadvise(st->datafd, st_region_off(st, r) + st->g.rsize -
			      ST_BLOCK, ST_BLOCK, POSIX_FADV_WILLNEED);
	for (r = 0; r < inside; r++) {
		uint64_t off = st_region_off(st, r) + st->g.rsize - ST_BLOCK;
		ssize_t got = pread_full(st->datafd, blk, ST_BLOCK, off);
		int rc;

		if (got < 0) {
			st_set_state(st, ST_OFF, got, "recovery read");
			return got;
		}
		if (got < ST_BLOCK)
			continue;
		rc = st_block_check(blk, &st->g, 0, 0);
		if (rc == 0) {
			v[*n].seq = ((struct st_sumhdr *)blk)->seq;
			v[*n].r = r;
			(*n)++;
		} else if (rc == -EBADMSG ||
			   (rc == -ENODATA && !all_zero(blk, ST_BLOCK))) {
			/* a free region's last block is zeros (killed or
			 * never written): anything else there is damage */
			CNT_ADD(st, regions_dropped, 1);
		}
	}
	return 0;
}

int st_recover(struct hotfs_store *st)
{
	struct replay *rp = NULL;
	uint8_t *blk;
	struct rseq *v;
	struct stat sb;
	uint32_t r, n = 0, inside, ahead;
	uint64_t maxseq = 0;
	int err = 0;

	if (fstat(st->datafd, &sb))
		return -errno;
	inside = sb.st_size / st->g.rsize;
	if (inside > st->nregions)
		inside = st->nregions;
	if ((uint64_t)sb.st_size % st->g.rsize && inside < st->nregions) {
		/* a truncated last region */
		CNT_ADD(st, regions_dropped, 1);
	}
	blk = malloc(ST_BLOCK);
	v = calloc(inside ? inside : 1, sizeof(*v));
	rp = malloc(sizeof(*rp));
	if (!blk || !v || !rp) {
		err = -ENOMEM;
		goto out;
	}
	if (find_regions(st, inside, blk, v, &n))
		goto out;	/* the store is off: nothing to recover */
	qsort(v, n, sizeof(*v), rseq_cmp);
	st->idx_bulk = true;
	ahead = st->g.rsize < 32 * ST_BLOCK ? st->g.rsize : 32 * ST_BLOCK;
	for (r = 0; r < n; r++)
		posix_fadvise(st->datafd, st_region_off(st, v[r].r) +
			      st->g.rsize - ahead, ahead, POSIX_FADV_WILLNEED);
	for (r = 0; r < n; r++) {
		struct st_region *reg = &st->regions[v[r].r];
		struct st_scan res;
		int rc;

		rp->st = st;
		rp->region = v[r].r;
		rp->n = 0;
		rc = st_load_summary(st, v[r].r, replay_one, rp, &res);
		replay_flush(rp);
		if (rc == -ENOMEM) {
			err = rc;
			goto out;
		}
		if (rc == -EIO) {
			st_set_state(st, ST_OFF, rc, "recovery read");
			goto out;
		}
		if (rc || res.seq != v[r].seq) {
			CNT_ADD(st, regions_dropped, 1);
			continue;
		}
		if (res.torn)
			CNT_ADD(st, regions_dropped, 1);
		reg->seq = res.seq;
		st_rstate(st, v[r].r, R_SEALED);
		reg->data_end = res.data_end;
		atomic_store(&reg->gen, res.seq);
		if (res.seq > maxseq)
			maxseq = res.seq;
	}
	if (n && st->regions[v[n - 1].r].state == R_SEALED)
		resume_newest(st, v[n - 1].r);
	CNT_ADD(st, extents_recovered, idx_records(st));
	if (maxseq + 1 > st->next_seq)
		st->next_seq = maxseq + 1;
out:
	st->idx_bulk = false;
	free(rp);
	free(blk);
	free(v);
	return err;
}
