/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's periodic work (src/daemon/tick.c), on a thread of its own: the
 * store's group commit (st_tick, every TICK_MS), letting go of retained
 * inodes whose file was deleted and giving the heap's free pages back
 * (ino_sweep, malloc_trim: every TICK_SWEEP_MS) and
 * saving the policy's access counts (every CACHE_COUNTS_SAVE_S).  It
 * follows fs_cache(), so a store turned on while mounted is ticked too.
 */
#ifndef HOTFS_TICK_H
#define HOTFS_TICK_H

#define TICK_MS		100
#define TICK_SWEEP_MS	5000
#define TICK_COPIES_MS	1000	/* the copies' aging (fc_tick) */

struct hotfs;
struct hotfs_tick;

/* After daemonizing (a thread).  Returns 0 or -errno. */
int tick_start(struct hotfs_tick **out, struct hotfs *fs);
/* Stop and free it (before the cache is closed); t may be NULL. */
void tick_stop(struct hotfs_tick *t);

#endif
