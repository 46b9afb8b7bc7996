// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The read path (see include/hotfs/readpath.h).
 *
 * A FUSE read of [off, off + size) is cut at extent boundaries into
 * segments.  Each segment is an access for the policy (unless the same
 * handle touched the extent lately, or the handle is past seqcutoff:
 * hotfs/handle.h), and is looked up in the store.  If no segment is
 * cached the read is answered from the source (read into a buffer, not
 * spliced, so that a read failing part way is an error, not a short
 * read: EOF to the kernel); otherwise every segment is read at once on
 * this thread's io_uring (or one after the other with pread, where
 * io_uring is refused or not built): cached ones from the store's data
 * file (with their block checksums when the read is not the whole
 * extent), uncached ones from the source.  Cached data that fails its
 * checksum, or that the device fails to return, is read from the source
 * instead: the cache can cost speed, never correctness.  A large or
 * sequential read with every segment cached is served from whole extents
 * read ahead with O_DIRECT instead (include/hotfs/readahead.h): one
 * device read and one copy per byte, and no second copy of the file in
 * the page cache.
 *
 * A missed extent whose count reaches the threshold is queued for
 * promotion (hotfs/handle.h) before the read returns; if the read covered
 * the whole extent its bytes go with it, so the slow disk is not read
 * twice.
 *
 * A read from the source alone, or from the file's whole copy, and the
 * release of a reply are rp_reply.c's (the plan they share: readpath_i.h).
 *
 * Locks: in->m only to read the write generation and the span of writes
 * in flight; none held across I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "config.h"
#ifdef HAVE_URING
#include <liburing.h>
#endif

#include "hotfs/cache_write.h"
#include "hotfs/filecopy.h"
#include "hotfs/fileio.h"
#include "hotfs/log.h"
#include "hotfs/readpath.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/uring.h"
#include "readpath_i.h"

struct seg {
	uint64_t start, end;	/* file offsets */
	uint32_t extno;
	bool hit;
	bool promote;
	bool failed;		/* cached read failed: use the source */
	struct hotfs_loc loc;
	struct hotfs_span sp;
	char *bounce;		/* malloc'd: data (unless direct) + tab */
	char *data;		/* where the cached bytes are read to */
	bool direct;		/* data is the reply buffer itself */
	char *tab;		/* sp.tab_len bytes */
	int res_data, res_tab;
	unsigned run_last;	/* read_uring: the last segment of the run
				 * of misses this one heads, read as one */
};

#ifdef HAVE_URING
/*
 * A run of contiguous missed segments s[i..last] read as one (the blocks
 * of a random reader's larger read): each gets its share of the run's
 * result res (bytes from s[i].start, or -errno).
 */
static void run_share(struct seg *s, unsigned i, unsigned last, int res)
{
	unsigned k;

	for (k = i; k <= last; k++) {
		int64_t at = (int64_t)(s[k].start - s[i].start);
		int64_t want = (int64_t)(s[k].end - s[k].start);
		int64_t got = res < 0 ? res : (int64_t)res - at;

		if (res >= 0 && got < 0)
			got = 0;
		s[k].res_data = (int)(got > want ? want : got);
	}
}
#endif


/*
 * Read every segment one after the other with pread: the engine where
 * io_uring is refused (a seccomp profile, kernel.io_uring_disabled) or
 * not built.  Sets res_data and res_tab as read_uring does.
 */
static void read_pread(int src, struct seg *s, unsigned n,
		       char *buf, uint64_t off)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct seg *g = &s[i];
		ssize_t r;

		if (!g->hit) {
			r = pread_full(src, buf + (g->start - off),
				       g->end - g->start, (off_t)g->start);
			g->res_data = (int)r;
			g->res_tab = -ECANCELED;
			continue;
		}
		r = pread_full(g->loc.fd, g->data, g->sp.data_len,
			       (off_t)g->sp.data_off);
		g->res_data = (int)r;
		g->res_tab = -ECANCELED;
		if (r >= 0 && g->sp.tab_len) {
			r = pread_full(g->loc.fd, g->tab, g->sp.tab_len,
				       (off_t)g->sp.tab_off);
			g->res_tab = (int)r;
		}
	}
}

/*
 * Read every segment at once on this thread's ring.  Sets res_data and
 * res_tab (-ECANCELED for what was not run); never fails as a whole.
 * Without a ring (io_uring refused on this thread), with pread.
 */
static void read_uring(int src, struct seg *s, unsigned n,
		       char *buf, uint64_t off, int data_fd)
{
#ifdef HAVE_URING
	struct io_uring_cqe *cqe;
	struct io_uring *ring;
	unsigned i, nsub = 0, done = 0, submitted = 0;
	bool fixed = false;
	int r;

	ring = ur_ring(data_fd, &fixed);
	if (!ring) {
		read_pread(src, s, n, buf, off);
		return;
	}
	for (i = 0; i < n; i++)
		s[i].res_data = s[i].res_tab = -ECANCELED;
	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe;
		int fd = s[i].hit ? (fixed ? 0 : s[i].loc.fd) : src;
		bool fx = s[i].hit && fixed;
		unsigned last = i;

		if (nsub + 2 > UR_DEPTH)
			break;
		/* contiguous misses: one read of the source */
		while (!s[i].hit && last + 1 < n && !s[last + 1].hit &&
		       s[last + 1].start == s[last].end)
			last++;
		s[i].run_last = last;
		sqe = io_uring_get_sqe(ring);
		if (s[i].hit)
			io_uring_prep_read(sqe, fd, s[i].data,
					   s[i].sp.data_len, s[i].sp.data_off);
		else
			io_uring_prep_read(sqe, fd, buf + (s[i].start - off),
					   (unsigned)(s[last].end - s[i].start),
					   s[i].start);
		if (fx)
			sqe->flags |= IOSQE_FIXED_FILE;
		io_uring_sqe_set_data64(sqe, (uint64_t)i << 1);
		nsub++;
		if (s[i].hit && s[i].sp.tab_len) {
			sqe = io_uring_get_sqe(ring);
			io_uring_prep_read(sqe, fd, s[i].tab, s[i].sp.tab_len,
					   s[i].sp.tab_off);
			if (fx)
				sqe->flags |= IOSQE_FIXED_FILE;
			io_uring_sqe_set_data64(sqe, ((uint64_t)i << 1) | 1);
			nsub++;
		}
		i = last;
	}
	while (submitted < nsub) {
		r = io_uring_submit(ring);
		if (r > 0) {
			submitted += (unsigned)r;
			continue;
		}
		if (r == -EINTR || r == -EAGAIN || r == -EBUSY)
			continue;
		break;
	}
	while (done < submitted) {
		uint64_t d;

		r = io_uring_wait_cqe(ring, &cqe);
		if (r == -EINTR)
			continue;
		if (r < 0)
			break;
		d = io_uring_cqe_get_data64(cqe);
		if (d & 1)
			s[d >> 1].res_tab = cqe->res;
		else if (!s[d >> 1].hit)
			run_share(s, (unsigned)(d >> 1), s[d >> 1].run_last,
				  cqe->res);
		else
			s[d >> 1].res_data = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		done++;
	}
	if (submitted < nsub || done < submitted) {
		/* a broken ring: forget it, the segments go the slow way */
		hotfs_log(LOG_WARNING, "io_uring failed, resetting the ring\n");
		ur_discard();
	}
#else
	(void)data_fd;
	read_pread(src, s, n, buf, off);
#endif
}

/* Serve a cached segment from its bounce buffer, if it verifies. */
static bool finish_hit(struct hotfs_cache *c, struct seg *g, char *dst)
{
	uint64_t ext_base = st_rec_off(g->extno, c->extent);
	int r;

	if (g->res_data < 0 || (g->sp.tab_len && g->res_tab < 0)) {
		int e = g->res_data < 0 ? g->res_data : g->res_tab;

		if (e != -ECANCELED) {
			stats_add(&c->stats, STAT_CACHE_IO_ERR, 1);
			st_report_io_error(c->st, &g->loc, e);
		}
		return false;
	}
	/*
	 * A truncated data file: the bytes past its end are zeros, which
	 * fail the checksum and drop the entry (if they pass, zeros were
	 * what was cached), so that the extent is not looked up again.
	 */
	if ((uint32_t)g->res_data < g->sp.data_len)
		memset(g->data + g->res_data, 0,
		       g->sp.data_len - (uint32_t)g->res_data);
	if (g->sp.tab_len && (uint32_t)g->res_tab < g->sp.tab_len)
		memset(g->tab + g->res_tab, 0,
		       g->sp.tab_len - (uint32_t)g->res_tab);
	r = st_verify(c->st, &g->loc, g->sp.ext_off, g->data, g->sp.data_len,
		      g->sp.tab_len ? g->tab : NULL);
	if (r < 0) {
		if (r != -ESTALE)
			stats_add(&c->stats, STAT_CSUM_FAIL, 1);
		return false;
	}
	if (!g->direct)
		memcpy(dst, g->data + (g->start - ext_base - g->sp.ext_off),
		       g->end - g->start);
	return true;
}

/* Is this read served by whole-extent read-ahead (readahead.h)?  Large
 * reads, and reads of a handle reading on sequentially for an extent;
 * small random reads read blocks, not extents. */
static bool ra_wanted(const struct hotfs_cache *c, struct hotfs_fh *fh,
		      size_t size, bool seq, unsigned n)
{
	if (!c->ra || n > RP_IOV)
		return false;
	return size >= c->extent / 2 ||
	       (seq && seq_run(&fh->seq) >= c->extent);
}

/* Start reading the cached extents after last, up to RA_AHEAD bytes on,
 * stopping at the first that is not cached; those this run of the handle
 * has started already are not looked up again. */
static void prefetch_ahead(struct hotfs_cache *c, struct hotfs_fh *fh,
			   const struct hotfs_key *k,
			   const struct hotfs_stamp *stamp, uint32_t last)
{
	uint64_t x, ahead = RA_AHEAD >> c->ext_shift;

	if (!ahead)
		ahead = 1;
	for (x = seq_prefetch_from(&fh->seq, last);
	     x <= (uint64_t)last + ahead; x++) {
		struct hotfs_loc loc;

		if (x >= ST_EXT_LIMIT || x << c->ext_shift >= stamp->size ||
		    st_lookup(c->st, k, (uint32_t)x, stamp, &loc) < 0 ||
		    !ra_prefetch(c->ra, &loc))
			break;
	}
	seq_prefetched(&fh->seq, x);
}

/*
 * Serve a read whose n segments are all cached from whole extents read
 * with O_DIRECT.  false: nothing was sent, take the ordinary path; a
 * segment found stale or corrupt on the way is marked not cached.
 */
static bool ra_serve(struct hotfs_cache *c, struct hotfs_fh *fh,
		     const struct hotfs_key *k,
		     const struct hotfs_stamp *stamp, struct seg *s, unsigned n,
		     bool seq, struct rp_reply *out)
{
	struct ra_ref *ref = out->ref;
	struct iovec *iov = out->iov;
	uint64_t total = 0;
	unsigned i, got;
	int r = 0;

	for (i = 0; i < n; i++) {
		uint64_t base = (uint64_t)s[i].extno << c->ext_shift;

		if (!ra_eligible(c->ra, &s[i].loc) ||
		    s[i].end - base > s[i].loc.len)
			return false;
	}
	/* everything this read and the next ones need, in flight at once */
	for (i = 0; i < n; i++)
		ra_prefetch(c->ra, &s[i].loc);
	if (seq)
		prefetch_ahead(c, fh, k, stamp, s[n - 1].extno);
	for (got = 0; got < n; got++) {
		struct seg *g = &s[got];
		uint64_t base = (uint64_t)g->extno << c->ext_shift;

		r = ra_get(c->ra, &g->loc, &ref[got]);
		if (r < 0)
			break;
		iov[got].iov_base = (char *)ref[got].data + (g->start - base);
		iov[got].iov_len = g->end - g->start;
		total += g->end - g->start;
	}
	if (got < n) {
		if (r == -EBADMSG)
			stats_add(&c->stats, STAT_CSUM_FAIL, 1);
		if (r == -EBADMSG || r == -ESTALE)
			s[got].hit = false;
		for (i = 0; i < got; i++)
			ra_put(c->ra, &ref[i], false);
		return false;
	}
	stats_add(&c->stats, STAT_HIT_REQS, 1);
	stats_add(&c->stats, STAT_HIT_BYTES, total);
	stats_add(&c->stats, STAT_READ_BYTES, total);
	/* the slots are given back after the reply (rp_done) */
	out->n = (int)n;
	out->ra = c->ra;
	out->nref = n;
	for (i = 0; i < n; i++) {
		uint64_t base = (uint64_t)s[i].extno << c->ext_shift;

		out->ref_done[i] = s[i].end == base + s[i].loc.len;
	}
	return true;
}

/*
 * A record not found under the read's stamp while the store holds the
 * file's under another: dropped (the source changed behind the mount),
 * unless a write through the mount began or ended since the stamp was
 * taken (the records were carried over to the write's stamp: the read's
 * is the older one).  Decided under m, where writes restamp.
 */
static int plan_lookup(struct hotfs_cache *c, const struct plan *p,
		       struct seg *g)
{
	struct hotfs_inode *in = p->in;
	int r = st_peek(c->st, &p->k, g->extno, &p->stamp, &g->loc);

	if (r != -ESTALE || p->peek)
		return r;
	pthread_mutex_lock(&in->m);
	if (in->cw.write_gen == p->gen && !in->cw.wr_inflight)
		r = st_lookup(c->st, &p->k, g->extno, &p->stamp, &g->loc);
	pthread_mutex_unlock(&in->m);
	return r;
}

/*
 * The grain of a read (the man page's "How the grain is chosen"): a read
 * that is not sequential (hotfs/seqread.h), does not start at the file's
 * byte 0 and does not cover an extent whole goes by blocks in that
 * extent, unless the store holds the extent: each whole block it reads
 * is counted, looked up and promoted on its own, from the reader's bytes.
 * Everything else (sequential readers, whole small files, large reads)
 * goes by extents, as whole extents are what sequential readers and
 * small files are best served by.
 */
static bool block_grain(const struct plan *p, uint64_t off)
{
	return !p->seq && off != 0;
}

/*
 * May a missed record with this count be promoted?  Counts the refusals.
 * While the store has free room, a random reader's block is promoted at
 * its first miss (it costs one SSD write and no source read); once it is
 * full, the threshold (and the promoter's admission) apply.
 */
static bool want_promote(struct hotfs_cache *c, struct plan *p, unsigned cnt,
			 bool counted, bool fill, bool insertable)
{
	/* its whole copy holds it (an open beside a passthrough one's
	 * writer, or the open that asked for the copy): cached already,
	 * not a refusal */
	if (c->fc && fc_has(c->fc, &p->k, &p->stamp))
		return false;
	if (counted && cnt && !pol_promote(c->pol, cnt) && !fill)
		stats_add(&c->stats, STAT_NP_THRESHOLD, 1);
	if (!fill && (!cnt || !pol_promote(c->pol, cnt)))
		return false;
	if (!insertable) {
		/* the store would refuse it after the promoter read the
		 * source again: a degraded store costs no I/O */
		stats_add(&c->stats, STAT_NP_STORE, 1);
		return false;
	}
	if (p->racy) {
		stats_add(&c->stats, STAT_NP_RACY, 1);
		return false;
	}
	return true;
}

/* The missed part [start, end) of an extent, by blocks (block_grain). */
static void plan_blocks(struct hotfs_cache *c, struct hotfs_fh *fh,
			struct plan *p, uint64_t start, uint64_t end,
			bool count, uint64_t run, bool insertable)
{
	bool fill = insertable && st_filling(c->st);
	uint64_t b;

	for (b = start / ST_BLOCK; b * ST_BLOCK < end; b++) {
		struct seg *g = &p->s[p->n++];
		uint64_t bs = b * ST_BLOCK, h;
		unsigned cnt = 0;
		bool counted = false;

		g->start = bs > start ? bs : start;
		g->end = bs + ST_BLOCK < end ? bs + ST_BLOCK : end;
		if (b >= ST_BLK_LIMIT) {	/* the source serves it */
			g->extno = (uint32_t)(bs >> c->ext_shift);
			continue;
		}
		g->extno = ST_REC_BLOCK | (uint32_t)b;
		p->blocks++;
		h = pol_hash(&p->k, g->extno);
		if (count && !fh_seen(fh, g->extno, run)) {
			cnt = pol_access(c->pol, h);
			counted = true;
			stats_add(&c->stats, STAT_ACCESSES, 1);
		}
		if (plan_lookup(c, p, g) == 0) {
			g->hit = true;
			p->hits++;
			continue;
		}
		/* only a whole block (or the file's last bytes) is cached */
		if (g->start != bs ||
		    (g->end != bs + ST_BLOCK && g->end != p->stamp.size))
			continue;
		if (!counted && count)
			cnt = pol_estimate(c->pol, h);
		if (want_promote(c, p, cnt, counted, fill, insertable)) {
			g->promote = true;
			p->promos++;
		}
	}
}

/*
 * Cut the read into segments, count the accesses, look them up; mark
 * for promotion the missed extents and blocks the policy finds hot.
 * p->s has room for an extent's worth of segments and a block's for each
 * ST_BLOCK of the read.
 */
static int plan_segments(struct hotfs_cache *c, struct hotfs_fh *fh,
			 size_t size, off_t off, struct plan *p)
{
	bool count, insertable, blocks;
	uint64_t run, e, e0, e1;

	count = fh_counts(c, fh, size, off, &p->seq);
	run = fh_run(fh, p->seq);
	insertable = st_state(c->st) == ST_OK;
	blocks = block_grain(p, (uint64_t)off);
	e0 = (uint64_t)off >> c->ext_shift;
	e1 = (p->end - 1) >> c->ext_shift;
	p->s = calloc(e1 - e0 + 1 + (blocks ? (p->end - (uint64_t)off) /
				     ST_BLOCK + 2 : 0), sizeof(*p->s));
	if (!p->s)
		return -ENOMEM;
	p->n = 0;
	for (e = e0; e <= e1; e++) {
		struct seg *g = &p->s[p->n];
		uint64_t h, es = e << c->ext_shift, ee = (e + 1) << c->ext_shift;
		unsigned cnt = 0;
		bool whole, counted = false;

		g->extno = (uint32_t)e;
		g->start = es > (uint64_t)off ? es : (uint64_t)off;
		g->end = ee < p->end ? ee : p->end;
		whole = g->start == es &&
			(g->end == ee || g->end == p->stamp.size);
		h = pol_hash(&p->k, g->extno);
		if (count && (!blocks || whole) &&
		    !fh_seen(fh, g->extno, run)) {
			cnt = pol_access(c->pol, h);
			counted = true;
			stats_add(&c->stats, STAT_ACCESSES, 1);
		}
		if (plan_lookup(c, p, g) == 0) {
			g->hit = true;
			p->hits++;
			p->n++;
			continue;
		}
		if (blocks && !whole) {
			plan_blocks(c, fh, p, g->start, g->end, count, run,
				    insertable);
			continue;
		}
		p->n++;
		if (!counted && count)
			cnt = pol_estimate(c->pol, h);	/* same extent again */
		if (want_promote(c, p, cnt, counted, false, insertable)) {
			g->promote = true;
			p->promos++;
		}
	}
	return 0;
}

/* Queue the segments marked for promotion (hotfs/handle.h). */
static void queue_promotions(struct hotfs_cache *c, struct hotfs_inode *in,
			     struct hotfs_fh *fh, const struct plan *p,
			     const char *data, uint64_t data_off,
			     uint64_t data_len)
{
	struct fh_cand v[RP_IOV], *cand = v;
	unsigned i, n = 0;

	if (!p->promos)
		return;
	if (p->n > RP_IOV) {
		cand = malloc(p->n * sizeof(*cand));
		if (!cand)
			return;
	}
	for (i = 0; i < p->n; i++)
		if (p->s[i].promote && !p->s[i].hit) {
			cand[n].start = p->s[i].start;
			cand[n].end = p->s[i].end;
			cand[n++].extno = p->s[i].extno;
		}
	fh_queue(c, in, fh, &p->k, &p->stamp, p->gen, cand, n, data, data_off,
		 data_len);
	if (cand != v)
		free(cand);
}

/*
 * Bounce buffers for the cached segments (or the reply buffer itself,
 * when a segment is block-aligned); a segment that cannot have one is
 * read from the source.  Returns the store's data file's fd, or -1.
 */
static int prepare_hits(struct hotfs_cache *c, struct plan *p, char *buf,
			uint64_t off)
{
	int data_fd = -1;
	unsigned i;

	for (i = 0; i < p->n; i++) {
		struct seg *g = &p->s[i];
		uint64_t ext_base = st_rec_off(g->extno, c->extent);

		if (!g->hit)
			continue;
		if (st_loc_span(&g->loc, (uint32_t)(g->start - ext_base),
				(uint32_t)(g->end - g->start), &g->sp) < 0) {
			g->hit = false;
			p->hits--;
			continue;
		}
		/* block-aligned (the kernel's reads are): straight into the
		 * reply, no copy */
		g->direct = g->sp.ext_off == g->start - ext_base &&
			    g->sp.data_len == g->end - g->start;
		g->bounce = malloc((g->direct ? 0 : g->sp.data_len) +
				   g->sp.tab_len + 1);
		if (!g->bounce) {
			g->hit = false;
			p->hits--;
			continue;
		}
		g->data = g->direct ? buf + (g->start - off) : g->bounce;
		g->tab = g->bounce + (g->direct ? 0 : g->sp.data_len);
		data_fd = g->loc.fd;
	}
	return data_fd;
}

/*
 * After the reads: verify the cached segments, read the others (and the
 * failed ones) from the source.  Returns the bytes of the answer, or the
 * source's -errno.
 */
static ssize_t finish_segments(struct hotfs_cache *c, struct plan *p,
			       int src, char *buf, uint64_t off)
{
	uint64_t pos = p->end - off;
	unsigned i;

	for (i = 0; i < p->n; i++) {
		struct seg *g = &p->s[i];
		char *dst = buf + (g->start - off);
		size_t want = g->end - g->start;
		ssize_t got;

		if (g->hit && finish_hit(c, g, dst)) {
			stats_add(&c->stats, STAT_HIT_BYTES, want);
			continue;
		}
		if (g->hit)
			p->hits--;
		if (!g->hit && g->res_data >= 0 && (size_t)g->res_data == want) {
			got = g->res_data;
		} else if (src < 0) {
			return -EAGAIN;	/* cache_read_stored: not alone */
		} else if (!g->hit && g->res_data >= 0) {	/* short: finish */
			got = pread_full(src, dst + g->res_data,
					 want - (size_t)g->res_data,
					 (off_t)g->start + g->res_data);
			if (got >= 0)
				got += g->res_data;
		} else {
			got = pread_full(src, dst, want, (off_t)g->start);
		}
		/* not the bytes before the failure: a short reply is EOF to
		 * the kernel, and a reader would see the file end there */
		if (got < 0)
			return got;
		stats_add(&c->stats, STAT_MISS_BYTES, (uint64_t)got);
		if ((size_t)got < want) {	/* EOF moved: stop here */
			pos = g->start - off + (uint64_t)got;
			break;
		}
	}
	return (ssize_t)pos;
}

/* The read as planned, once something of it is cached (or to be kept). */
static int read_planned(struct hotfs_cache *c, struct hotfs_inode *in,
			struct hotfs_fh *fh, int src, struct plan *p,
			uint64_t off, struct rp_reply *out)
{
	uint64_t total = p->end - off;
	ssize_t pos;
	int data_fd;

	out->buf = malloc(total);
	if (!out->buf)
		return -ENOMEM;
	data_fd = prepare_hits(c, p, out->buf, off);
	if (c->uring)
		read_uring(src, p->s, p->n, out->buf, off, data_fd);
	else
		read_pread(src, p->s, p->n, out->buf, off);
	pos = finish_segments(c, p, src, out->buf, off);
	if (pos < 0)
		return (int)pos;
	stats_add(&c->stats, p->hits == p->n ? STAT_HIT_REQS :
			     p->hits ? STAT_PARTIAL_REQS : STAT_MISS_REQS, 1);
	stats_add(&c->stats, STAT_READ_BYTES, (uint64_t)pos);
	queue_promotions(c, in, fh, p, out->buf, off, (uint64_t)pos);
	out->iov[0].iov_base = out->buf;
	out->iov[0].iov_len = (size_t)pos;
	out->n = 1;
	return 0;
}

/*
 * Warm-up at the slow disk's bandwidth.  While the store fills and the
 * room no insert uses yet is at least a sixth of the file's size, a
 * random reader's read that misses every block it reads, within one
 * extent, reads the whole extent from the source in the same request (a
 * disk's seek costs what a read of 4 KiB does; up to the extent, the
 * bytes after it cost little more), and every whole block of the extent
 * the store does not hold is promoted from those bytes, as a block.  They
 * are not counted as accesses: the blocks never read go first when their
 * region is recycled.  (A store small beside the file would fill with
 * neighbours nobody reads: the trace simulator's bench mode, NOTEBOOK.md.)
 */
static bool extent_fill(struct hotfs_cache *c, const struct plan *p,
			uint64_t off)
{
	uint64_t ee = ((off >> c->ext_shift) + 1) << c->ext_shift;

	return p->blocks && p->promos && !p->hits && !p->racy &&
	       c->extent > ST_BLOCK &&
	       off >> c->ext_shift == (p->end - 1) >> c->ext_shift &&
	       ee / ST_BLOCK <= ST_BLK_LIMIT && st_filling(c->st) &&
	       st_room(c->st) >= p->stamp.size / 6;
}

/* The read as extent_fill has it; -errno of the source, or -ENOMEM. */
static int read_extent_fill(struct hotfs_cache *c, struct hotfs_inode *in,
			    struct hotfs_fh *fh, int src,
			    const struct plan *p, uint64_t off,
			    struct rp_reply *out)
{
	uint64_t es = off >> c->ext_shift << c->ext_shift,
		 ee = es + c->extent, b, len = 0;
	struct fh_cand *cand;
	unsigned n = 0;
	ssize_t got;
	char *buf;

	if (ee > p->stamp.size)
		ee = p->stamp.size;
	buf = malloc(ee - es);
	cand = malloc(((ee - es) / ST_BLOCK + 1) * sizeof(*cand));
	out->buf = malloc(p->end - off);
	if (!buf || !cand || !out->buf) {
		free(buf);
		free(cand);
		return -ENOMEM;
	}
	got = pread_full(src, buf, ee - es, (off_t)es);
	if (got < 0) {
		free(buf);
		free(cand);
		return (int)got;
	}
	/* the source may have ended sooner than its stamp said */
	if (es + (uint64_t)got > off)
		len = (es + (uint64_t)got < p->end ? es + (uint64_t)got :
		       p->end) - off;
	memcpy(out->buf, buf + (off - es), len);
	stats_add(&c->stats, STAT_FILL_READS, 1);
	stats_add(&c->stats, STAT_MISS_REQS, 1);
	stats_add(&c->stats, STAT_MISS_BYTES, len);
	stats_add(&c->stats, STAT_READ_BYTES, len);
	for (b = es / ST_BLOCK; b * ST_BLOCK < es + (uint64_t)got; b++) {
		uint64_t bs = b * ST_BLOCK, be = bs + ST_BLOCK;
		uint32_t extno = ST_REC_BLOCK | (uint32_t)b;

		if (be > p->stamp.size)
			be = p->stamp.size;
		/* whole blocks (or the file's last bytes) the store lacks */
		if (be > es + (uint64_t)got || st_holds(c->st, &p->k, extno))
			continue;
		cand[n].start = bs;
		cand[n].end = be;
		cand[n++].extno = extno;
		if (be <= off || bs >= p->end)
			stats_add(&c->stats, STAT_FILL_BLOCKS, 1);
	}
	fh_queue(c, in, fh, &p->k, &p->stamp, p->gen, cand, n, buf, es,
		 (uint64_t)got);
	free(buf);
	free(cand);
	out->iov[0].iov_base = out->buf;
	out->iov[0].iov_len = (size_t)len;
	out->n = 1;
	return 0;
}

/*
 * What of [off, off + size) the store may serve: false if the read goes
 * to the source alone (past the end, past the extents the store can
 * number, or where a write through the mount is in flight).
 */
static bool cacheable_at(struct hotfs_cache *c, struct hotfs_inode *in,
			 const struct stat *st, size_t size, off_t off,
			 struct plan *p)
{
	uint32_t e0, e1;
	bool busy;

	if (size == 0 || (uint64_t)off >= (uint64_t)st->st_size)
		return false;
	p->end = (uint64_t)off + size;
	if (p->end > (uint64_t)st->st_size)
		p->end = (uint64_t)st->st_size;
	/* extent numbers are 32-bit: the source alone serves reads there */
	if ((p->end - 1) >> c->ext_shift >= ST_EXT_LIMIT)
		return false;
	cache_stamp(st, &p->stamp);
	cache_key(c, in->dev, in->ino, &p->k);
	p->racy = stamp_racy_now(p->stamp.mtime_ns, p->stamp.ctime_ns);
	e0 = (uint32_t)((uint64_t)off >> c->ext_shift);
	e1 = (uint32_t)((p->end - 1) >> c->ext_shift);
	p->in = in;
	pthread_mutex_lock(&in->m);
	p->gen = in->cw.write_gen;
	/* a write in flight there: the store's copy may predate it, under
	 * a stamp that does not show it yet (same clock tick) */
	busy = cache_write_busy(in, e0, e1);
	/* elsewhere: the records are valid under the stamp they are filed
	 * under while writes are in flight (the source's may show some of
	 * them already; hotfs/inode.h) */
	if (in->cw.wr_inflight && !busy) {
		busy = !in->cw.wr_base_ok ||
		       in->cw.wr_base.size != p->stamp.size;
		p->stamp = in->cw.wr_base;
	}
	pthread_mutex_unlock(&in->m);
	return !busy;
}

/*
 * The same under the source file's attributes now.  A write through the
 * mount that ends between the stat and the plan leaves the records under
 * a newer stamp than the stat's: the plan then keeps the generation from
 * before the stat, so that neither its lookups nor its promotions take
 * the stat's stamp for the file's (they look up without dropping, and
 * promote only what the write missed).
 */
static bool cacheable(struct hotfs_cache *c, struct hotfs_inode *in,
		      int src, size_t size, off_t off, struct plan *p)
{
	struct stat st;
	uint64_t gen;

	pthread_mutex_lock(&in->m);
	gen = in->cw.write_gen;
	pthread_mutex_unlock(&in->m);
	if (fstat(src, &st) == -1 || !cacheable_at(c, in, &st, size, off, p))
		return false;
	p->gen = gen;
	return true;
}

int cache_read(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_fh *fh, int src, size_t size, off_t off,
	       struct rp_reply *out)
{
	struct plan p = { 0 };
	unsigned i;
	int r;

	memset(out, 0, sizeof(*out));
	stats_add(&c->stats, STAT_READ_REQS, 1);
	if (!cacheable(c, in, src, size, off, &p))
		goto source;
	if (rp_read_copy(c, &p, off, out) == 0)
		return 0;
	if (plan_segments(c, fh, size, off, &p) < 0)
		goto source;
	if (p.hits == p.n && !p.blocks &&
	    ra_wanted(c, fh, size, p.seq, p.n)) {
		if (ra_serve(c, fh, &p.k, &p.stamp, p.s, p.n, p.seq, out)) {
			free(p.s);
			return 0;
		}
		for (p.hits = 0, i = 0; i < p.n; i++)
			p.hits += p.s[i].hit;
	}
	if (!p.hits && !p.promos) {
		uint64_t total = p.end - (uint64_t)off;

		free(p.s);
		stats_add(&c->stats, STAT_MISS_REQS, 1);
		stats_add(&c->stats, STAT_MISS_BYTES, total);
		stats_add(&c->stats, STAT_READ_BYTES, total);
		return rp_read_source(src, size, off, out);
	}
	/* a miss to promote keeps its bytes: no second read of the source */
	if (extent_fill(c, &p, (uint64_t)off))
		r = read_extent_fill(c, in, fh, src, &p, (uint64_t)off, out);
	else
		r = read_planned(c, in, fh, src, &p, (uint64_t)off, out);
	for (i = 0; i < p.n; i++)
		free(p.s[i].bounce);
	free(p.s);
	if (r != -ENOMEM)
		return r;
	rp_done(out);
source:
	stats_add(&c->stats, STAT_MISS_REQS, 1);
	return rp_read_source(src, size, off, out);
}

int cache_read_stored(struct hotfs_cache *c, struct hotfs_inode *in,
		      struct hotfs_fh *fh, const struct stat *st, size_t size,
		      off_t off, struct rp_reply *out)
{
	struct plan p = { .peek = true };
	unsigned i;
	int r = -EAGAIN;

	memset(out, 0, sizeof(*out));
	if (!cacheable_at(c, in, st, size, off, &p))
		return -EAGAIN;
	if (rp_read_copy(c, &p, off, out) == 0) {
		stats_add(&c->stats, STAT_READ_REQS, 1);
		return 0;
	}
	if (plan_segments(c, fh, size, off, &p) < 0 || p.hits != p.n ||
	    p.promos)
		goto out;
	if (!p.blocks && ra_wanted(c, fh, size, p.seq, p.n) &&
	    ra_serve(c, fh, &p.k, &p.stamp, p.s, p.n, p.seq, out)) {
		r = 0;
		goto out;
	}
	for (p.hits = 0, i = 0; i < p.n; i++)
		p.hits += p.s[i].hit;
	if (p.hits == p.n)
		r = read_planned(c, in, fh, -1, &p, (uint64_t)off, out);
	for (i = 0; i < p.n; i++)
		free(p.s[i].bounce);
	if (r < 0)
		rp_done(out);
out:
	if (r == 0)
		stats_add(&c->stats, STAT_READ_REQS, 1);
	free(p.s);
	return r;
}
