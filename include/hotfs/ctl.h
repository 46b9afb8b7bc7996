/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The virtual control directory (.hotfs by default, -o ctldir=NAME) at the
 * mount root: found by lookup, never listed by readdir, and read-only:
 *   stats        human-readable "key: value" lines
 *   stats.json   the same counters as one JSON object
 *   ctl          the control channel for hotfsctl (root and the mounting
 *                user only)
 * Its nodes have fixed FUSE node ids below any inode address.
 */
#ifndef HOTFS_CTL_H
#define HOTFS_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include <fuse_lowlevel.h>

struct hotfs;

enum {
	VINO_DIR = 2,
	VINO_STATS,
	VINO_STATS_JSON,
	VINO_CTL,
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
void vd_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void vd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi, bool plus);
/* At exit: free the open virtual files the kernel never released. */
void vd_free_all(void);
void vd_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* Render the counters; *out is malloc'd.  Returns 0 or -errno. */
int stats_render(struct hotfs *fs, bool json, char **out, size_t *len);
void stats_reset(struct hotfs *fs);

#endif
