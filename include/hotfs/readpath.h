/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The read path (src/cache/readpath.c): a read through the mount, answered from
 * the store where it can be and from the source elsewhere.  It returns
 * the bytes (struct rp_reply); the FUSE handler replies with them, once,
 * and gives the reply back with rp_done.
 */
#ifndef HOTFS_READPATH_H
#define HOTFS_READPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "hotfs/cache.h"
#include "hotfs/handle.h"
#include "hotfs/readahead.h"

/* At most this many extents in one request for the read-ahead path. */
#define RP_IOV	8

/* A read's answer: iov[0..n) (fewer bytes than asked at EOF). */
struct rp_reply {
	struct iovec iov[RP_IOV];
	int n;
	char *buf;			/* owned: freed by rp_done */
	/* read-ahead slots the iovecs point into (given back by rp_done) */
	struct hotfs_ra *ra;
	struct ra_ref ref[RP_IOV];
	bool ref_done[RP_IOV];		/* the reader is past that extent */
	unsigned nref;
};

/*
 * Read [off, off + size) of in through handle fh: the source file is
 * src (readable; fh->fd unless fh is shared).  0 with the bytes in *out,
 * or -errno (the source's error: never a short read where the source
 * failed part way, which the kernel would take for the end of the file).
 * Promotions the read makes are queued before it returns.  rp_done(out)
 * after the reply, whatever was returned.
 */
int cache_read(struct hotfs_cache *c, struct hotfs_inode *in,
	       struct hotfs_fh *fh, int src, size_t size, off_t off,
	       struct rp_reply *out);
/*
 * The same from the store alone, without the source file: *st is the
 * file's stamp as an earlier check took it from the source (revalidate=N,
 * src/fop/fop_open.c); its records are looked up without dropping others.
 * -EAGAIN when any of the read needs the source (a miss, a promotion,
 * a store copy that does not verify): then cache_read with the source.
 */
int cache_read_stored(struct hotfs_cache *c, struct hotfs_inode *in,
		      struct hotfs_fh *fh, const struct stat *st, size_t size,
		      off_t off, struct rp_reply *out);
/* The same from the source alone (no store). */
int rp_read_source(int src, size_t size, off_t off, struct rp_reply *out);
void rp_done(struct rp_reply *r);

#endif
