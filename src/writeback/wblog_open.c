// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log's open and its replay (see include/hotfs/wblog.h for
 * the design, wblog_i.h for the layout; its checksums and header writes:
 * wblog_format.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "hotfs/fileio.h"
#include "wblog_i.h"

static void seterr(char *err, size_t len, const char *msg)
{
	if (err && len)
		snprintf(err, len, "%s", msg);
}

/* The newer good header slot into *s: 0, -EUCLEAN (none), or
 * -EPROTONOSUPPORT (a log of an earlier format, not read). */
static int super_read(int fd, struct wl_super *s)
{
	struct wl_super a[2];
	bool ok[2], old = false;
	int i;

	for (i = 0; i < 2; i++) {
		/* "HOTFSWL" and a format before this one's */
		old |= pread_full(fd, &a[i], sizeof(a[i]),
				  (off_t)i * WB_BLOCK) == sizeof(a[i]) &&
		       !memcmp(a[i].magic, WL_MAGIC, 7) &&
		       a[i].magic[7] >= '1' && a[i].magic[7] < WL_MAGIC[7];
		ok[i] = pread_full(fd, &a[i], sizeof(a[i]),
				   (off_t)i * WB_BLOCK) == sizeof(a[i]) &&
			!memcmp(a[i].magic, WL_MAGIC, 8) &&
			a[i].version >= WL_VERSION_MIN &&
			a[i].version <= WL_VERSION &&
			a[i].block == WB_BLOCK &&
			a[i].csum == wl_super_csum(&a[i]) &&
			a[i].nblocks >= WL_MIN_BLOCKS &&
			a[i].tail_pos <= a[i].nblocks;
	}
	if (!ok[0] && !ok[1])
		return old ? -EPROTONOSUPPORT : -EUCLEAN;
	i = !ok[0] || (ok[1] && a[1].gen > a[0].gen);
	*s = a[i];
	return 0;
}

/* A MULTI record's list: its blocks ascending, each with bytes (max: of
 * its format). */
static bool list_ok(const struct wl_rec *h, const struct wl_mblk *l,
		    uint32_t max)
{
	uint32_t k;

	if (h->off || h->len || !h->nblk || h->nblk > max)
		return false;
	for (k = 0; k < h->nblk; k++)
		if (l[k].lo >= l[k].hi || l[k].hi > WB_BLOCK ||
		    l[k].blk > UINT64_MAX / WB_BLOCK - 1 ||
		    (k && l[k].blk <= l[k - 1].blk) ||
		    (l[k].flags & ~WL_MBLK_LOST))
			return false;
	return true;
}

/* A record's fields, at pos, as its type has them (l: a MULTI's list,
 * max its length in its format). */
static bool fields_ok(const struct wblog *wl, const struct wl_rec *h,
		      const struct wl_mblk *l, uint32_t max, uint64_t pos)
{
	if (h->type == WR_PAD)
		return h->nblk == 0;
	if ((h->type != WR_DATA && h->type != WR_TRIM &&
	     h->type != WR_MULTI) ||
	    h->nblk > wl->nblocks - pos - 1 ||
	    h->nblk > WB_REC_MAX / WB_BLOCK)
		return false;
	if (h->type == WR_MULTI && !list_ok(h, l, max))
		return false;
	if (h->type == WR_DATA &&
	    (!h->len || h->off + h->len < h->off ||
	     h->nblk != (h->off + h->len - 1) / WB_BLOCK - h->off / WB_BLOCK
			+ 1))
		return false;
	return h->type != WR_TRIM || !h->nblk;
}

/* The epoch rules: records from the header's epoch_seq on carry its
 * epoch, and a record's epoch is never below its predecessor's. */
static bool epoch_ok(const struct wl_super *s, uint64_t seq, uint64_t epoch,
		     uint64_t min_epoch)
{
	return (seq < s->epoch_seq || epoch == s->epoch) && epoch >= min_epoch;
}

/* Header block hb, read at pos: a record of format 4 replay may take
 * (of any sequence number): whole by its salted checksum. */
static bool head_ok(const struct wblog *wl, const struct wl_super *s,
		    const char *hb, uint64_t pos, uint64_t min_epoch)
{
	struct wl_rec h;

	memcpy(&h, hb, sizeof(h));
	return !memcmp(h.magic, WR_MAGIC, 8) &&
	       epoch_ok(s, h.seq, h.epoch, min_epoch) &&
	       fields_ok(wl, &h, (const struct wl_mblk *)(hb + sizeof(h)),
			 WL_MULTI_MAX, pos) &&
	       h.csum == wl_hdr_csum(hb, wl->salt);
}

/* A record read by replay: its header, list, data and data checksums
 * (a record of format 3 in the same terms), and its damaged blocks. */
struct rec {
	struct wl_rec h;
	struct wl_mblk l[WL_MULTI_MAX_V3];
	uint64_t sums[WB_REC_MAX / WB_BLOCK];
	bool bad[WB_REC_MAX / WB_BLOCK];
	uint32_t nbad;
	char *data;
};

enum { REC_OK, REC_DATA_BAD, REC_BAD };

/* A record of format 3 (header block hb at pos): the one replay expects,
 * whole by its one checksum; into r. */
static bool load_v3(struct wblog *wl, const struct wl_super *s, uint64_t pos,
		    uint64_t seq, uint64_t min_epoch, const char *hb,
		    struct rec *r)
{
	const struct wl_mblk *l = (const struct wl_mblk *)
				  (hb + sizeof(struct wl_rec_v3));
	struct wl_rec_v3 o;
	size_t dlen;
	uint32_t k;

	memcpy(&o, hb, sizeof(o));
	memset(&r->h, 0, sizeof(r->h));
	memcpy(r->h.magic, WR_MAGIC, 8);
	r->h.seq = o.seq;
	r->h.epoch = o.epoch;
	r->h.type = o.type;
	r->h.nblk = o.nblk;
	r->h.dev = o.dev;
	r->h.ino = o.ino;
	r->h.birth = o.birth;
	r->h.off = o.off;
	r->h.len = o.len;
	r->h.time_ns = o.time_ns;
	if (o.seq != seq || !epoch_ok(s, o.seq, o.epoch, min_epoch) ||
	    !fields_ok(wl, &r->h, l, WL_MULTI_MAX_V3, pos))
		return false;
	if (o.type == WR_MULTI)
		memcpy(r->l, l, o.nblk * sizeof(*l));
	dlen = (size_t)o.nblk * WB_BLOCK;
	if (dlen) {
		r->data = malloc(dlen);
		if (!r->data || pread_full(wl->fd, r->data, dlen,
					   blk_off(pos + 1)) != (ssize_t)dlen)
			return false;
	}
	if (o.csum != (o.type == WR_MULTI ?
		       wl_multi_csum_v3(&o, r->l, r->data, dlen) :
		       wl_rec_csum_v3(&o, r->data, dlen)))
		return false;
	for (k = 0; k < o.nblk; k++) {
		r->sums[k] = wl_blk_csum(r->data + (size_t)k * WB_BLOCK);
		r->l[k].flags = 0;
	}
	return true;
}

/*
 * The record at pos as replay finds it, if it is the one replay expects
 * (seq; the epoch rules): REC_OK, REC_DATA_BAD (its header whole, some
 * of its data blocks unreadable or failing their checksums: r->bad),
 * REC_BAD (not the record: torn, damaged or another's), or -ENOMEM.
 */
static int rec_read(struct wblog *wl, const struct wl_super *s,
		    uint64_t pos, uint64_t seq, uint64_t min_epoch,
		    struct rec *r)
{
	char hb[WB_BLOCK] __attribute__((aligned(8)));
	size_t dlen;
	uint32_t k;
	bool io;

	free(r->data);
	r->data = NULL;
	r->nbad = 0;
	if (pread_full(wl->fd, hb, WB_BLOCK, blk_off(pos)) != WB_BLOCK)
		return REC_BAD;
	if (!memcmp(hb, WR_MAGIC_V3, 8))
		return load_v3(wl, s, pos, seq, min_epoch, hb, r) ? REC_OK :
		       REC_BAD;
	if (!head_ok(wl, s, hb, pos, min_epoch))
		return REC_BAD;
	memcpy(&r->h, hb, sizeof(r->h));
	if (r->h.seq != seq)
		return REC_BAD;
	if (r->h.type == WR_MULTI)
		memcpy(r->l, hb + sizeof(r->h), r->h.nblk * sizeof(*r->l));
	memcpy(r->sums, hb + wl_sums_at(&r->h), r->h.type == WR_DATA ||
	       r->h.type == WR_MULTI ? r->h.nblk * sizeof(*r->sums) : 0);
	dlen = (size_t)r->h.nblk * WB_BLOCK;
	if (!dlen)
		return REC_OK;
	r->data = malloc(dlen);
	if (!r->data)
		return -ENOMEM;
	io = pread_full(wl->fd, r->data, dlen, blk_off(pos + 1)) !=
	     (ssize_t)dlen;
	for (k = 0; k < r->h.nblk; k++) {
		/* a block carried forward lost is lost, not damaged */
		r->bad[k] = !(r->h.type == WR_MULTI &&
			      (r->l[k].flags & WL_MBLK_LOST)) &&
			    (io || wl_blk_csum(r->data + (size_t)k * WB_BLOCK)
				   != r->sums[k]);
		r->nbad += r->bad[k];
	}
	return r->nbad ? REC_DATA_BAD : REC_OK;
}

/*
 * After the record at pos (seq) whose header is damaged: the next record
 * replay may take.  It starts within the blocks the largest record takes
 * after pos, or at the area's start (after a padded end); a header of
 * format 4 whole by its salted checksum (no data written through the
 * mount can pass for one), of a later sequence number and the epoch
 * rules: the lowest such number, of the latest epoch.  false: none.
 */
static bool find_next(struct wblog *wl, const struct wl_super *s,
		      uint64_t pos, uint64_t seq, uint64_t min_epoch,
		      uint64_t *npos, uint64_t *nseq)
{
	uint64_t last = pos + 1 + WB_REC_MAX / WB_BLOCK, p, epoch = 0;
	char hb[WB_BLOCK] __attribute__((aligned(8)));
	bool found = false;

	if (last > wl->nblocks - 1)
		last = wl->nblocks - 1;
	for (p = pos + 1; p <= last + 1; p++) {
		uint64_t q = p == last + 1 ? 0 : p;
		struct wl_rec h;

		/* block 0 only when the window reaches the end */
		if (p == last + 1 && (pos == 0 || last + 1 < wl->nblocks))
			break;
		if (pread_full(wl->fd, hb, WB_BLOCK, blk_off(q)) != WB_BLOCK ||
		    !head_ok(wl, s, hb, q, min_epoch))
			continue;
		memcpy(&h, hb, sizeof(h));
		if (h.seq <= seq || (found && (h.seq > *nseq ||
					       (h.seq == *nseq &&
						h.epoch <= epoch))))
			continue;
		found = true;
		*npos = q;
		*nseq = h.seq;
		epoch = h.epoch;
	}
	return found;
}

/* The blocks from start to the record at npos (the area's end, if npos
 * is before start: the next one is at its start). */
static uint64_t span(const struct wblog *wl, uint64_t start, uint64_t npos)
{
	return npos > start ? npos - start : wl->nblocks - start;
}

/*
 * From the record at pos (seq) that replay cannot take, on, as replay
 * would go without applying anything: the highest synced sequence number
 * the records found attest (raised in *synced) and the sequence number
 * after the last record found (*end).
 */
static int look_ahead(struct wblog *wl, const struct wl_super *s,
		      uint64_t pos, uint64_t seq, uint64_t min_epoch,
		      struct rec *r, uint64_t *synced, uint64_t *end)
{
	uint64_t walked = 0, adv, np, nq;
	int k;

	while (walked < wl->nblocks) {
		uint64_t start = pos == wl->nblocks ? 0 : pos;

		k = rec_read(wl, s, start, seq, min_epoch, r);
		if (k < 0)
			return k;
		if (k != REC_BAD) {
			if (r->h.synced > *synced)
				*synced = r->h.synced;
			adv = r->h.type == WR_PAD ? wl->nblocks - start :
			      1 + r->h.nblk;
			min_epoch = r->h.epoch;
			seq++;
		} else if (find_next(wl, s, start, seq, min_epoch, &np, &nq)) {
			adv = span(wl, start, np);
			seq = nq;
		} else {
			break;
		}
		walked += adv;
		pos = start + adv;
	}
	*end = seq;
	return 0;
}

/* A record replay took: into the ring and the map. */
static int apply(struct wblog *wl, const struct rec *r, uint64_t start)
{
	const struct wl_rec *h = &r->h;
	int err;

	if (h->type == WR_PAD)
		return wl_rq_push(wl, start, wl->nblocks - start, h->time_ns);
	err = wl_rq_push(wl, start, 1 + h->nblk, h->time_ns);
	if (!err && h->type == WR_DATA)
		err = wl_apply_data(wl, h, start + 1, r->sums);
	if (!err && h->type == WR_MULTI)
		err = wl_apply_multi(wl, h, r->l, start + 1, r->sums);
	if (!err && h->type == WR_TRIM) {
		struct wb_fid fid = { .dev = h->dev, .ino = h->ino };
		struct wl_file *f = wl_file_find(wl, &fid);

		if (f) {
			wl_file_trim(wl, f, h->off);
			wl_file_put(wl, f);
		}
	}
	return err;
}

/* The damaged blocks of a record applied: lost in the map (unless a
 * later record of the replay writes them again). */
static void mark_lost(struct wblog *wl, const struct rec *r)
{
	struct wb_fid fid = { .dev = r->h.dev, .ino = r->h.ino };
	struct wl_file *f = wl_file_find(wl, &fid);
	uint32_t k;

	for (k = 0; f && k < r->h.nblk; k++) {
		uint64_t blk = r->h.type == WR_MULTI ? r->l[k].blk :
			       r->h.off / WB_BLOCK + k;
		struct wl_ent *e = r->bad[k] ? wl_ent_find(wl, f, blk) : NULL;

		if (e && e->seq == r->h.seq)
			wl_ent_lost(wl, e, true);
	}
	wl->rp.damaged_records++;
	wl->rp.csum_failures += r->nbad;
	wl->csum_failures += r->nbad;
}

/* The replay stops at seq: what follows is damage that names no file,
 * said as such (hotfs/wblog.h). */
static void cut_at(struct wblog *wl, uint64_t seq, uint64_t synced)
{
	wl->rp.cut = true;
	wl->rp.cut_seq = seq;
	wl->rp.cut_synced = synced;
}

/*
 * Read the records from the tail on into the map (include/hotfs/wblog.h:
 * what replay takes, drops as a torn tail, and counts as damage).  r and
 * ahead: room for a record each.
 */
static int replay_recs(struct wblog *wl, const struct wl_super *s,
		       struct rec *r, struct rec *ahead)
{
	uint64_t pos = s->tail_pos, seq = s->tail_seq, seen = 0, min_epoch = 0;
	/* what the last open replayed was synced before it wrote its
	 * header, and what the header says was synced */
	uint64_t synced = s->epoch_seq ? s->epoch_seq - 1 : 0, np, nq, q;
	uint64_t end = seq;	/* after the last record look_ahead found */
	bool looked = false;
	int k, err = 0;

	if (s->version >= 4 && s->synced > synced)
		synced = s->synced;
	wl->rq_seq = seq;
	wl->appended = seq - 1;
	while (!err && seen < wl->nblocks) {
		uint64_t start = pos == wl->nblocks ? 0 : pos, n;

		k = rec_read(wl, s, start, seq, min_epoch, r);
		if (k < 0)
			return k;
		if (k != REC_OK && !looked) {
			looked = true;
			err = look_ahead(wl, s, start, seq, min_epoch, ahead,
					 &synced, &end);
			if (err)
				return err;
		}
		/* past the last sync: a torn tail, dropped whole (and said,
		 * also after damage a sync attested) */
		if (k != REC_OK && seq > synced) {
			wl->rp.torn_records = end - seq;
			break;
		}
		if (k == REC_BAD) {
			/* damage that names no file: on from the next */
			if (!find_next(wl, s, start, seq, min_epoch, &np,
				       &nq)) {
				cut_at(wl, seq, synced);
				break;
			}
			n = span(wl, start, np);
			if (seen + n > wl->nblocks) {
				cut_at(wl, seq, synced);
				break;
			}
			err = wl_rq_push(wl, start, n, 0);
			for (q = seq + 1; !err && q < nq; q++)
				err = wl_rq_push(wl, np, 0, 0);
			wl->rp.unreadable_records += nq - seq;
			wl->rp.unreadable_blocks += n;
			seen += n;
			pos = start + n;
			wl->appended = nq - 1;
			seq = nq;
			continue;
		}
		n = r->h.type == WR_PAD ? wl->nblocks - start : 1 + r->h.nblk;
		/* a record past where the replay began (a header whose tail
		 * is not the log's): what follows is not the log's either */
		if (seen + n > wl->nblocks) {
			cut_at(wl, seq, synced);
			break;
		}
		err = apply(wl, r, start);
		if (!err && k == REC_DATA_BAD)
			mark_lost(wl, r);
		seen += n;
		pos = start + n;
		min_epoch = r->h.epoch;
		wl->appended = seq++;
		if (!err && r->h.type != WR_PAD)
			wl->replayed++;
	}
	wl->used = seen;
	wl->head = pos;
	/* what is lost is what no later record wrote again or trimmed */
	wl->lost = wl->lost_held;
	wl->rp.lost_bytes = wl->lost_held;
	wl->rp.lost_files = wl->lost_files;
	return err;
}

static int replay(struct wblog *wl, const struct wl_super *s)
{
	struct rec *r = calloc(2, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	err = replay_recs(wl, s, &r[0], &r[1]);
	free(r[0].data);
	free(r[1].data);
	free(r);
	return err;
}

void wblog_replay_report(struct wblog *wl, struct wblog_replay *r)
{
	pthread_mutex_lock(&wl->m);
	*r = wl->rp;
	pthread_mutex_unlock(&wl->m);
}

/* Write zeros over [from, size) and make them durable: the real errno
 * on failure (ENOSPC on a full filesystem). */
static int zero_fill(int fd, off_t from, off_t size)
{
	static const char z[1 << 20];
	off_t o;

	for (o = from; o < size; o += (off_t)sizeof(z)) {
		size_t n = size - o < (off_t)sizeof(z) ? (size_t)(size - o) :
			   sizeof(z);
		ssize_t w = pwrite_full(fd, z, n, o);

		if (w < 0)
			return (int)w;
	}
	return fdatasync(fd) ? -errno : 0;
}

/*
 * The log's file from old bytes to size: its blocks reserved, so that an
 * acknowledged write never finds the cachedir's filesystem full when it
 * reaches the log.  Blocks it gains are reserved first (a full
 * filesystem fails at once, having written nothing), then written with
 * zeros (the filesystem's blocks then hold data: an fdatasync of a record
 * is a data write, with no change of the file's extents to commit); the
 * area it had was written so when it was made, and a log shrinks only
 * when it is empty.  On failure the file is left at old bytes, its
 * blocks past them freed.  0 or -errno.
 */
static int area_size(int fd, off_t old, off_t size)
{
	off_t from = old > blk_off(0) ? old : blk_off(0);
	int rc;

	if (old == size) {
		rc = fallocate(fd, 0, 0, size) ? -errno : 0;
		return rc == -EOPNOTSUPP ? 0 : rc;
	}
	if (size < old)
		return ftruncate(fd, size) ? -errno : 0;
	rc = fallocate(fd, 0, from, size - from) ? -errno : 0;
	if (rc == -EOPNOTSUPP)
		rc = ftruncate(fd, size) ? -errno : 0;
	if (!rc)
		rc = zero_fill(fd, from, size);
	if (rc && ftruncate(fd, old) == 0)
		fdatasync(fd);
	return rc;
}

static int wl_init(struct wblog *wl, uint64_t nblocks)
{
	wl->nblocks = nblocks;
	wl->reserve = wl_reserve(nblocks);
	wl->fh_size = 64;
	wl->eh_size = 1024;
	wl->fh = calloc(wl->fh_size, sizeof(*wl->fh));
	wl->eh = calloc(wl->eh_size, sizeof(*wl->eh));
	if (!wl->fh || !wl->eh)
		return -ENOMEM;
	return 0;
}

static void map_free(struct wblog *wl)
{
	size_t i;

	for (i = 0; wl->eh && i < wl->eh_size; i++)
		while (wl->eh[i]) {
			struct wl_ent *e = wl->eh[i];

			wl->eh[i] = e->next;
			free(e);
		}
	for (i = 0; wl->fh && i < wl->fh_size; i++)
		while (wl->fh[i]) {
			struct wl_file *f = wl->fh[i];

			wl->fh[i] = f->next;
			free(f);
		}
	free(wl->eh);
	free(wl->fh);
	wl_rq_drop(wl, wl->rq_n);
	free(wl->rq);
}

static struct wblog *wl_new(void)
{
	struct wblog *wl = calloc(1, sizeof(*wl));

	if (!wl)
		return NULL;
	wl->fd = -1;
	pthread_mutex_init(&wl->m, NULL);
	pthread_cond_init(&wl->cv, NULL);
	return wl;
}

static void wl_free(struct wblog *wl)
{
	if (wl->fd >= 0)
		close(wl->fd);
	map_free(wl);
	pthread_cond_destroy(&wl->cv);
	pthread_mutex_destroy(&wl->m);
	free(wl);
}

/* A new log's salt: random (a user never learns it: the log is the
 * daemon's user's alone). */
static uint64_t new_salt(void)
{
	struct timespec ts;
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) == sizeof(v))
		return v;
	clock_gettime(CLOCK_REALTIME, &ts);
	return XXH3_64bits_withSeed(&ts, sizeof(ts), (uint64_t)getpid());
}

/*
 * An empty log replayed, made anew at nblocks blocks: its map and ring
 * dropped, what the replay found and the header's generation, epoch and
 * sequence kept.
 */
static int renew_empty(struct wblog *wl, const struct wl_super *s,
		       uint64_t nblocks)
{
	struct wblog_replay rp = wl->rp;
	int rc;

	map_free(wl);
	memset(&wl->fh, 0, sizeof(*wl) - offsetof(struct wblog, fh));
	wl->rp = rp;
	wl->csum_failures = rp.csum_failures;
	wl->gen = s->gen;
	wl->epoch = s->epoch;
	rc = wl_init(wl, nblocks);
	wl->rq_seq = s->tail_seq;	/* sequence goes on */
	wl->appended = s->tail_seq - 1;
	return rc;
}

/*
 * The log in wl->fd, not empty: its header read and its records replayed
 * into the map; an empty log takes the capacity asked for (if any: then
 * nblocks).  0 or -errno, said in err (but for a failure to make the
 * empty log anew).
 */
static int open_existing(struct wblog *wl, uint64_t capacity,
			 uint64_t nblocks, char *err, size_t errlen)
{
	struct wl_super s;
	int rc;

	rc = super_read(wl->fd, &s);
	if (rc == -EPROTONOSUPPORT) {
		seterr(err, errlen, "wlog: of an earlier format "
		       "(its records name files without their birth), "
		       "which this version does not read; it may hold "
		       "acknowledged writes, so it is kept (move it "
		       "away to start without them)");
		return rc;
	}
	if (rc) {
		seterr(err, errlen, "wlog: both headers damaged; it may "
		       "hold acknowledged writes, so it is kept (move "
		       "it away to start without them)");
		return rc;
	}
	/* a log of format 3 takes its salt now */
	wl->salt = s.version >= 4 && s.salt ? s.salt : new_salt();
	rc = wl_init(wl, s.nblocks);
	if (!rc) {
		wl->gen = s.gen;
		wl->epoch = s.epoch;
		rc = replay(wl, &s);
	}
	if (rc) {
		seterr(err, errlen, "wlog: out of memory replaying it");
		return rc;
	}
	/* an empty log takes the capacity asked for (if any) */
	if (capacity && !wl->nents && s.nblocks != nblocks)
		return renew_empty(wl, &s, nblocks);
	return 0;
}

/* A new log, of nblocks blocks: its salt and its map. */
static int open_new(struct wblog *wl, uint64_t nblocks)
{
	int rc;

	wl->salt = new_salt();
	rc = wl_init(wl, nblocks);
	if (rc)
		return rc;
	wl->rq_seq = 1;
	return 0;
}

/* The log's area reserved on the cachedir's filesystem (the file was
 * old bytes long); 0 or -errno, said in err. */
static int reserve_area(struct wblog *wl, off_t old, char *err,
			size_t errlen)
{
	int rc;

	rc = area_size(wl->fd, old, blk_off(wl->nblocks));
	if (rc && err && errlen)
		snprintf(err, errlen, "wlog: cannot reserve its %llu "
			 "MiB on the cachedir's filesystem (%s)%s",
			 (unsigned long long)(blk_off(wl->nblocks) >> 20),
			 strerror(-rc), old != blk_off(wl->nblocks) ?
			 "; give a smaller writeback_log=" : "");
	return rc;
}

/*
 * A new epoch from the next record on, in the order a power loss needs:
 * the replayed records durable, then the header that starts the epoch,
 * then the log's name in dirfd.  On failure (said in err) a resized file
 * goes back to the old bytes it had.  0 or -errno.
 */
static int start_epoch(struct wblog *wl, int dirfd, off_t old, char *err,
		       size_t errlen)
{
	int rc;

	/* the replayed records durable (after a kill they may be in the
	 * page cache alone: the header that says they are synced must not
	 * reach the device before them), then a new epoch from here */
	wl->epoch++;
	wl->epoch_seq = wl->appended + 1;
	wl->synced = wl->appended;
	rc = fdatasync(wl->fd) ? -errno : 0;
	if (!rc)
		rc = wl_super_write(wl, wl->rq_n ? wl->rq[wl->rq_head].start :
				    wl->head, wl->rq_seq, wl->synced);
	/* its name durable too (made by this open, or by one a power loss
	 * interrupted before the directory reached the device) */
	if (!rc && fsync(dirfd))
		rc = -errno;
	if (rc) {
		seterr(err, errlen, "wlog: cannot write its header");
		/* resized: the file back to its size (a log is resized
		 * only empty, or to the area its header names) */
		if (old != blk_off(wl->nblocks) && ftruncate(wl->fd, old) == 0)
			fdatasync(wl->fd);
	}
	return rc;
}

int wblog_open(int dirfd, uint64_t capacity, struct wblog **out,
	       char *err, size_t errlen)
{
	uint64_t nblocks = capacity / WB_BLOCK;
	struct wblog *wl;
	struct stat sb;
	char why[160];
	int rc;

	*out = NULL;
	if (nblocks < WL_MIN_BLOCKS)
		nblocks = WL_MIN_BLOCKS;
	wl = wl_new();
	if (!wl)
		return -ENOMEM;
	wl->fd = file_open_private(dirfd, WB_LOG_NAME, O_RDWR | O_CREAT, why,
				   sizeof(why));
	if (wl->fd < 0) {
		rc = wl->fd;
		if (err && errlen)
			snprintf(err, errlen, "cannot use the writeback log "
				 "'%s': %s", WB_LOG_NAME, why);
		goto fail;
	}
	rc = fstat(wl->fd, &sb) ? -errno : 0;
	if (rc)
		goto fail;
	if (sb.st_size)
		rc = open_existing(wl, capacity, nblocks, err, errlen);
	else
		rc = open_new(wl, nblocks);
	if (rc)
		goto fail;
	rc = reserve_area(wl, sb.st_size, err, errlen);
	if (rc)
		goto fail;
	rc = start_epoch(wl, dirfd, sb.st_size, err, errlen);
	if (rc)
		goto fail;
	*out = wl;
	return 0;
fail:
	wl_free(wl);
	return rc;
}

void wblog_close(struct wblog *wl)
{
	if (wl)
		wl_free(wl);
}

int wblog_dirty(int dirfd, uint64_t *bytes)
{
	struct wblog *wl = wl_new();
	struct wl_super s;
	struct stat sb;
	int rc;

	*bytes = 0;
	if (!wl)
		return -ENOMEM;
	/* read only: nothing of it changes */
	wl->fd = openat(dirfd, WB_LOG_NAME, O_RDONLY | O_CLOEXEC |
			O_NOFOLLOW);
	rc = wl->fd < 0 || fstat(wl->fd, &sb) ? -errno : 0;
	if (rc == -ENOENT)
		rc = 0;		/* no log: nothing dirty */
	else if (!rc && sb.st_size) {
		rc = super_read(wl->fd, &s);
		if (!rc) {
			wl->salt = s.version >= 4 ? s.salt : 0;
			rc = wl_init(wl, s.nblocks);
		}
		if (!rc) {
			wl->gen = s.gen;
			wl->epoch = s.epoch;
			rc = replay(wl, &s);
		}
		if (!rc)
			*bytes = wl->dirty_bytes;
	}
	wl_free(wl);
	return rc;
}
