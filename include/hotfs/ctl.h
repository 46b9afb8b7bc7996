/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The virtual control directory (.hotfs by default, -o ctldir=NAME) at the
 * mount root: found by lookup, never listed by readdir, and read-only:
 *   stats        human-readable "key: value" lines
 *   stats.json   the same counters as one JSON object
 *   metrics      the same counters in Prometheus's text format
 *   ctl          the control channel for hotfsctl (root and the mounting
 *                user only)
 * Its nodes have fixed FUSE node ids below any inode address.
 */
#ifndef HOTFS_CTL_H
#define HOTFS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

#include "hotfs/ctl_keys.h"
#include "hotfs/ioctl.h"

struct hotfs;

enum {
	VINO_DIR = 2,
	VINO_STATS,
	VINO_STATS_JSON,
	VINO_CTL,
	VINO_METRICS,
	VINO__END,
};

static inline bool vd_is(fuse_ino_t ino)
{
	return ino >= VINO_DIR && ino < VINO__END;
}

/* Is (parent, name) the control directory's name at the root? */
bool vd_is_name(struct hotfs *fs, fuse_ino_t parent, const char *name);

void vd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void vd_getattr(fuse_req_t req, fuse_ino_t ino);
void vd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void vd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void vd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	      off_t off, struct fuse_file_info *fi);
void vd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* At exit: the snapshots kept for reads without open. */
void vd_free_snapshots(void);
/*
 * Without open round trips: the kernel's pages of the statistics files
 * read since the last call dropped (the tick's, every TICK_MS), so that
 * a later read from the start reaches the daemon and a new snapshot: a
 * read within the size the kernel knows comes without a getattr.
 */
void vd_expire(struct hotfs *fs);
void vd_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void vd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi, bool plus);
/* At exit: free the open virtual files the kernel never released. */
void vd_free_all(void);
void vd_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/*
 * The parsers of what callers send (src/lib/ctl_parse.c: pure functions).
 *
 * ctl_parse_cmd: one write(2) of size bytes to ctl, copied NUL-terminated
 * into cmd (cmdsz bytes) without its trailing newlines and spaces.
 * Returns a CTL_* command, -E2BIG if it does not fit in cmd, or -EINVAL
 * for an unknown command, or one with a NUL byte (cmd then holds it, up
 * to its first NUL, for the answer).
 */
enum {
	CTL_RESET_STATS,	/* "reset-stats": zero the counters */
	CTL_STORE_ON,		/* "store on": open a store that is off */
	CTL_SET,		/* "set KEY=VALUE ...": ctl_parse_set */
};
int ctl_parse_cmd(const char *buf, size_t size, char *cmd, size_t cmdsz);

/* What "set" was given: the keys of hotfs/ctl_keys.h, and their values. */
struct ctl_set {
	unsigned mask;		/* CTL_SET_*: the keys given */
	unsigned threshold;
	uint64_t promote_rate;
	uint64_t seqcutoff;
	int writemode;		/* enum hotfs_writemode */
	uint64_t inode_cache;
	uint64_t write_budget;
	unsigned dirty_high, dirty_low;	/* 1..99 each; their order is
					 * checked against the mount's */
};
/*
 * ctl_parse_set: "KEY=VALUE" words separated by spaces or commas (what
 * follows "set "), all or nothing.  Returns 0 with *s filled, or -EINVAL
 * with one line in err: the keys fixed at mount, all of them named, else
 * the first unknown key or invalid value.  A key given twice: the last.
 */
int ctl_parse_set(const char *args, struct ctl_set *s, char *err,
		  size_t errlen);
/*
 * ctl_ioc_decode: an ioctl's command, flags and buffers, as FUSE passes
 * them: 0 with *io filled, -ENOTTY if cmd is not one of hotfs's type, or
 * -EINVAL for a 32-bit caller or buffers smaller than struct hotfs_ioc.
 * The command number itself is checked by the caller.
 */
int ctl_ioc_decode(unsigned int cmd, unsigned int flags, const void *in,
		   size_t insz, size_t outsz, struct hotfs_ioc *io);
/*
 * ctl_ioc_extents: the extents [*e0, *e1) that the request's range
 * [off, off + len) (len 0: to the end) touches in a file of size bytes,
 * with extents of 1 << ext_shift bytes.  Empty (e0 == e1) if the range
 * starts at or past the end; none from ST_EXT_LIMIT on.
 */
void ctl_ioc_extents(const struct hotfs_ioc *io, uint64_t size,
		     unsigned int ext_shift, uint32_t *e0, uint32_t *e1);

/* Render the counters; *out is malloc'd.  Returns 0 or -errno. */
enum stats_fmt {
	STATS_TEXT,		/* stats: "key: value" lines */
	STATS_JSON,		/* stats.json: one flat object */
	STATS_PROM,		/* metrics: Prometheus text (hotfs/prom.h) */
};
int stats_render(struct hotfs *fs, enum stats_fmt fmt, char **out,
		 size_t *len);
void stats_reset(struct hotfs *fs);

#endif
