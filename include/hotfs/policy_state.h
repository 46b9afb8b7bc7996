/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy's access counts kept across restarts: cachedir/counts holds
 * the whole counting state (pol_export), so that a tree read once before
 * an unmount, a reboot or a crash is promoted at its next read after it,
 * as it would have been without the restart.
 *
 * The file: "HOTFSCNT", a version, a tag the caller derives from what the
 * counts are about (the source's identity and the extent size: counts of
 * another source or another extent size mean nothing here), the state's
 * length, the state, and an xxh3 of all of that.  Written crash-safely
 * (file_replace_at: temporary file, fsync, rename).
 */
#ifndef HOTFS_POLICY_STATE_H
#define HOTFS_POLICY_STATE_H
#include <stddef.h>
#include <stdint.h>

#include "hotfs/policy.h"

#define POL_STATE_FILE "counts"

/* Write p's counts as dirfd/POL_STATE_FILE.  0 or -errno. */
int pol_state_save(struct hotfs_policy *p, int dirfd, uint64_t tag);
/*
 * Load them into p (before anything counts with it).  0 when loaded;
 * -ENOENT when there is no file; -EINVAL when the file is damaged or
 * about something else (why says which, in a few words); other -errno
 * when it cannot be read.  p is unchanged unless 0 is returned.
 */
int pol_state_load(struct hotfs_policy *p, int dirfd, uint64_t tag,
		   char *why, size_t whylen);
/* The state file's contents for p's state (for the tests). */
int pol_state_encode(struct hotfs_policy *p, uint64_t tag, void **buf,
		     size_t *len);
int pol_state_decode(struct hotfs_policy *p, uint64_t tag, const void *buf,
		     size_t len, char *why, size_t whylen);
#endif
