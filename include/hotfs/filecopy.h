/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file grain: whole copies of files every byte of which the store
 * holds, kept as plain files in cachedir/files/ beside the region store,
 * for FUSE passthrough (an open answered with a copy as its backing file:
 * the kernel reads it without the daemon; hotfs/fop.h, man hotfs
 * "Passthrough").
 *
 * Made: fc_get finds no copy of a file at its stamp while the store
 * holds the whole file at that stamp, and the file is at least min_size:
 * it queues one for the copier, this module's thread.  The copier reads
 * every record from the store (each checked against its checksum, as a
 * cached read is), writes a temporary file, fdatasyncs it and renames it
 * to a name that carries the key, the stamp, and the xxh3 of its bytes:
 * a named copy is whole.  Nothing else writes into files/.
 *
 * Used: only by an open that found the source at the copy's stamp (the
 * open's own fstat, close-to-open); a copy of another stamp is removed
 * when an open meets it.  A copy whose bytes fail their hash (the scrub)
 * is removed.
 *
 * Capacity: the copies' bytes are taken out of the store's capacity
 * (st_set_reserve) as each is made, so copies and regions together stay
 * within cachesize (from the store's next tick on: it evicts its oldest
 * regions then); copies use at most max_bytes of it (half), and past that
 * the copies opened least recently go first; a copy unused for a lap of
 * the store (fc_tick) goes too.  Once a copy is made the
 * store's records of the file are dropped (ST_INVAL_COPIED), unless
 * keep_records says to keep them (a pinned file): left there, they would
 * hold room twice, and their counts, which reads of the copy no longer
 * raise, would keep other files out of the full store (admission).  Heat
 * is counted by opens (the daemon sees no read of a copy).
 *
 * Across restarts: the names are read back at fc_open; temporary files
 * and names that do not parse are removed, so are copies of files keyed
 * by this run's salt (other filesystems inside the source: hotfs/cache.h).
 *
 * The scrub (the copier, while it has nothing to copy):
 * each copy's bytes re-read from the disk (O_DIRECT) and hashed again,
 * at most rate bytes a second and each copy at most once an interval;
 * a copy that fails (its hash, or EIO) is removed and counted.
 *
 * Threads: every function may be called from any thread; one lock (a
 * leaf: no other lock is taken under it, and no I/O runs under it but the
 * unlink of a copy).
 */
#ifndef HOTFS_FILECOPY_H
#define HOTFS_FILECOPY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotfs/srcstamp.h"

struct hotfs_store;
struct hotfs_copies;

/* Smaller files get no copy by default (passthrough_min=): read
 * through the daemon, a small cached file costs one read request, while
 * a passthrough open costs the copy's open and the backing id's two
 * ioctls, and the copier a file and two syncs. */
#define FC_MIN_SIZE	(1ull << 20)

struct fc_params {
	int dirfd;		/* the cachedir (files/ is made in it) */
	struct hotfs_store *st;
	uint32_t extent;	/* the store's */
	uint64_t max_bytes;	/* copies use at most this much */
	uint64_t min_size;	/* smaller files get no copy */
	uint64_t scrub_rate;	/* bytes a second; 0: no scrub */
	/* a copy is checked again at most this often (seconds; 0: as
	 * fast as the rate goes); one made in this run counts as checked
	 * when made, one found at open as never */
	unsigned scrub_interval;
	bool forget;		/* remove every copy found at open */
	/* keep the store's records of a copied file (a pinned one)? */
	bool (*keep_records)(void *arg, const struct hotfs_key *key);
	void *keep_arg;
};

struct fc_stats {
	uint64_t copies, bytes;		/* now */
	uint64_t made, made_bytes;	/* since the start */
	uint64_t dropped;		/* stale, evicted or removed */
	uint64_t aged;			/* of those, unused for a lap of
					 * the store (fc_tick) */
	uint64_t failed;		/* a copy given up (store miss, I/O) */
	uint64_t scrubbed_bytes, scrub_bad;
};

int fc_open(struct hotfs_copies **out, const struct fc_params *p,
	    char *err, size_t errlen);
/* A mount without passthrough: remove the copies an earlier one left in
 * the cachedir dirfd (they would hold room no one counts). */
void fc_purge(int dirfd);
/* The copier's thread (after daemonizing). */
int fc_start(struct hotfs_copies *cp);
/* Stops the thread, frees; the copies stay on disk.  cp may be NULL. */
void fc_close(struct hotfs_copies *cp);

/*
 * The copy of key at stamp: an O_RDONLY descriptor on it (the caller
 * closes it), counted as an open of it; -ENOENT if there is none (a copy
 * of another stamp is removed; one is queued if the store holds the whole
 * file and want is true).
 */
int fc_get(struct hotfs_copies *cp, const struct hotfs_key *key,
	   const struct hotfs_stamp *stamp, bool want);
/*
 * Read [off, off + size) of the copy of key at stamp into buf, for a read
 * through the daemon of a copied file (an open that is not a passthrough
 * one: beside a writer, read-write): the bytes read (fewer at its end),
 * counted as a use of the copy; -ENOENT if there is no copy at stamp
 * (a copy of another stamp is left alone: the read's stamp may be the
 * older one).  A copy that cannot be read (EIO: Btrfs found a damaged
 * block) is removed and counted as a bad scrub; -ENOENT then too, so
 * that the source serves the read.
 */
ssize_t fc_read(struct hotfs_copies *cp, const struct hotfs_key *key,
		const struct hotfs_stamp *stamp, void *buf, size_t size,
		off_t off);
/* Is there a copy of key at stamp (no open counted)? */
bool fc_has(struct hotfs_copies *cp, const struct hotfs_key *key,
	    const struct hotfs_stamp *stamp);
/*
 * The daemon's tick, once a second: copies age with the store.  Once the
 * store has evicted as many regions as the reserve leaves it since a lap
 * began, it has let go of every record it held then that no read used
 * since (a record read meanwhile is copied forward): a copy neither
 * opened nor read since the lap began is colder, and is removed.  A lap
 * begins where one ends.
 */
void fc_tick(struct hotfs_copies *cp);
/* Remove the copies of key (hotfsctl evict); how many. */
int fc_drop(struct hotfs_copies *cp, const struct hotfs_key *key);
void fc_get_stats(struct hotfs_copies *cp, struct fc_stats *s);

#endif
