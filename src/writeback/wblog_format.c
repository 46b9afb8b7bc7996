// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writeback log's on-disk format as code: the checksums of its blocks,
 * records and header, and the header's write, shared by the append path
 * (wblog_area.c), the cleaner and the open and replay (wblog_open.c); see
 * wblog_i.h for the layout.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "hotfs/fileio.h"
#include "wblog_i.h"

uint64_t wl_blk_csum(const void *blk)
{
	return XXH3_64bits(blk, WB_BLOCK) | 1;
}

uint64_t wl_hdr_csum(const void *hb, uint64_t salt)
{
	char c[WB_BLOCK] __attribute__((aligned(8)));
	struct wl_rec *h = (struct wl_rec *)c;
	size_t n;

	memcpy(c, hb, sizeof(*h));
	n = wl_hdr_len(h);
	if (n > WB_BLOCK)	/* a count no record has: matches nothing */
		return 0;
	memcpy(c, hb, n);
	h->csum = 0;
	return XXH3_64bits_withSeed(c, n, salt) | 1;
}

uint64_t wl_rec_csum_v3(const struct wl_rec_v3 *h, const void *data,
			size_t len)
{
	struct wl_rec_v3 c = *h;

	c.csum = 0;
	/* the data's hash seeded with the header's */
	return XXH3_64bits_withSeed(len ? data : "", len,
				    XXH3_64bits(&c, sizeof(c))) | 1;
}

uint64_t wl_multi_csum_v3(const struct wl_rec_v3 *h, const struct wl_mblk *l,
			  const void *data, size_t len)
{
	struct wl_rec_v3 c = *h;

	c.csum = 0;
	/* the data's hash seeded with the list's, seeded with the header's */
	return XXH3_64bits_withSeed(len ? data : "", len,
		XXH3_64bits_withSeed(l, h->nblk * sizeof(*l),
				     XXH3_64bits(&c, sizeof(c)))) | 1;
}

uint64_t wl_super_csum(const struct wl_super *s)
{
	struct wl_super c = *s;

	c.csum = 0;
	/* before version 4, the fields before the salt */
	return XXH3_64bits(&c, s->version >= 4 ? sizeof(c) :
			   offsetof(struct wl_super, salt)) | 1;
}

/* (the slot after the newer one) */
int wl_super_write(struct wblog *wl, uint64_t tail_pos, uint64_t tail_seq,
		   uint64_t synced)
{
	char blk[WB_BLOCK] = { 0 };
	struct wl_super s = { .version = WL_VERSION, .block = WB_BLOCK };
	ssize_t n;

	memcpy(s.magic, WL_MAGIC, 8);
	s.nblocks = wl->nblocks;
	s.gen = wl->gen + 1;
	s.tail_pos = tail_pos;
	s.tail_seq = tail_seq;
	s.epoch = wl->epoch;
	s.epoch_seq = wl->epoch_seq;
	s.salt = wl->salt;
	s.synced = synced > wl->hdr_synced ? synced : wl->hdr_synced;
	s.csum = wl_super_csum(&s);
	memcpy(blk, &s, sizeof(s));
	n = pwrite_full(wl->fd, blk, WB_BLOCK, (off_t)(s.gen & 1) * WB_BLOCK);
	if (n < 0)
		return (int)n;
	if (fdatasync(wl->fd))
		return -errno;
	wl->gen = s.gen;
	wl->hdr_synced = s.synced;
	return 0;
}
