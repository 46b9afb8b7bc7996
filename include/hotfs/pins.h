/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Pinned files: their extents are copied forward whenever the store
 * recycles their region, so they are never evicted.  A pin names the
 * source file by its cache key (device, inode): it follows the file
 * through renames, and ends when the file is deleted or replaced.  The
 * set is kept in the cachedir's "pins" file (written to a temporary file,
 * synced, renamed), so pins survive restarts.
 */
#ifndef HOTFS_PINS_H
#define HOTFS_PINS_H

#include <stdbool.h>
#include <stddef.h>

#include "hotfs/store.h"

struct hotfs_pins;

/*
 * Load pins from the cachedir dirfd (missing = none; reset = start
 * empty), not following a symlink; the pins keep their own descriptor.
 */
int pins_open(struct hotfs_pins **out, int dirfd, bool reset);
void pins_close(struct hotfs_pins *p);
bool pins_has(struct hotfs_pins *p, const struct hotfs_key *k);
/* Pin or unpin; persisted before it returns.  0 or -errno. */
int pins_set(struct hotfs_pins *p, const struct hotfs_key *k, bool on);
size_t pins_count(struct hotfs_pins *p);

#endif
