// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The read path's answers (see include/hotfs/readpath.h): a read from the
 * source alone, a read from a file's whole copy (hotfs/filecopy.h), and
 * giving a reply back once it is sent (its buffer, its read-ahead slots).
 * The planned reads from the store are readpath.c's.
 *
 * Locks: none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "hotfs/filecopy.h"
#include "hotfs/fileio.h"
#include "hotfs/readpath.h"
#include "readpath_i.h"

int rp_read_source(int src, size_t size, off_t off, struct rp_reply *out)
{
	ssize_t n;

	memset(out, 0, sizeof(*out));
	out->buf = malloc(size ? size : 1);
	if (!out->buf)
		return -ENOMEM;
	n = pread_full(src, out->buf, size, off);
	if (n < 0)
		return (int)n;
	out->iov[0].iov_base = out->buf;
	out->iov[0].iov_len = (size_t)n;
	out->n = 1;
	return 0;
}

void rp_done(struct rp_reply *r)
{
	unsigned i;

	for (i = 0; i < r->nref; i++)
		ra_put(r->ra, &r->ref[i], r->ref_done[i]);
	r->nref = 0;
	free(r->buf);
	r->buf = NULL;
}

/*
 * A read through the daemon of a file whose whole copy is current (an
 * open that is not a passthrough one; the store let the file's records
 * go when the copy was made): from the copy.  -ENOENT without one.
 */
int rp_read_copy(struct hotfs_cache *c, const struct plan *p, off_t off,
		 struct rp_reply *out)
{
	size_t len = (size_t)(p->end - (uint64_t)off);
	ssize_t n;

	if (!c->fc)
		return -ENOENT;
	out->buf = malloc(len ? len : 1);
	if (!out->buf)
		return -ENOMEM;
	n = fc_read(c->fc, &p->k, &p->stamp, out->buf, len, off);
	if (n < 0) {
		free(out->buf);
		out->buf = NULL;
		return (int)n;
	}
	stats_add(&c->stats, STAT_HIT_REQS, 1);
	stats_add(&c->stats, STAT_HIT_BYTES, (uint64_t)n);
	stats_add(&c->stats, STAT_READ_BYTES, (uint64_t)n);
	out->iov[0].iov_base = out->buf;
	out->iov[0].iov_len = (size_t)n;
	out->n = 1;
	return 0;
}
