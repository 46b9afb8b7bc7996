// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store helpers shared by src/store*.c: the clock, the seeded
 * hashes, whole-buffer pread/pwrite, and the store's state (ok,
 * read-only, off) with its reason.
 *
 * A leaf: it calls nothing in the other store files, so each of them may
 * use it without the files depending on each other both ways.
 *
 * Locks: st->state_lock (a leaf, see src/store/store_i.h) around the state and
 * its reason.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "hotfs/clock.h"
#include "hotfs/log.h"
#include "store_i.h"

uint64_t st_now_ns(void)
{
	return (uint64_t)clock_mono_ns();
}

uint64_t st_stamp_hash(uint64_t ino, uint64_t size, int64_t mtime_ns,
		       int64_t ctime_ns)
{
	uint64_t v[4] = { ino, size, (uint64_t)mtime_ns, (uint64_t)ctime_ns };

	return XXH3_64bits(v, sizeof(v));
}

uint64_t st_seed(uint64_t dev, uint64_t ino, uint32_t extno, uint64_t gen)
{
	uint64_t v[4] = { dev, ino, extno, gen };

	return XXH3_64bits(v, sizeof(v));
}

enum hotfs_store_state st_state(struct hotfs_store *st)
{
	return atomic_load_explicit(&st->state, memory_order_relaxed);
}

const char *st_state_name(enum hotfs_store_state s)
{
	switch (s) {
	case ST_OK:
		return "ok";
	case ST_READONLY:
		return "read-only";
	case ST_OFF:
		return "off";
	}
	return "?";
}

/* Move to a worse state, for this reason; log once. */
void st_set_state_reason(struct hotfs_store *st, int state, int err,
			 const char *reason)
{
	pthread_mutex_lock(&st->state_lock);
	if (state > atomic_load(&st->state)) {
		atomic_store(&st->state, state);
		st->state_since = time(NULL);
		st->state_err = state == ST_READONLY ? err : 0;
		snprintf(st->reason, sizeof(st->reason), "%s", reason);
		hotfs_log(LOG_ERR, "store: %s; cache is now %s\n", reason,
			  st_state_name(state));
	}
	pthread_mutex_unlock(&st->state_lock);
}

/* Move to a worse state (never back: see st_clear_space_state); log once. */
void st_set_state(struct hotfs_store *st, int state, int err,
		  const char *what)
{
	char reason[sizeof(st->reason)];

	snprintf(reason, sizeof(reason), "%s: %s", what, strerror(-err));
	st_set_state_reason(st, state, err, reason);
}

void st_no_room(struct hotfs_store *st, bool log)
{
	char reason[sizeof(st->reason)];

	snprintf(reason, sizeof(reason), "cachedir %s: no room for a region "
		 "(%u bytes) within the free-space watermarks of its "
		 "filesystem; free space there", st->path, st->g.rsize);
	if (log) {
		st_set_state_reason(st, ST_READONLY, -ENOSPC, reason);
		return;
	}
	atomic_store(&st->state, ST_READONLY);
	st->state_err = -ENOSPC;
	memcpy(st->reason, reason, sizeof(st->reason));
}

void st_clear_space_state(struct hotfs_store *st)
{
	pthread_mutex_lock(&st->state_lock);
	if (atomic_load(&st->state) == ST_READONLY && st->state_err) {
		atomic_store(&st->state, ST_OK);
		st->state_since = time(NULL);
		st->state_err = 0;
		st->reason[0] = '\0';
		hotfs_log(LOG_NOTICE, "store: free space is back, caching "
			  "resumes\n");
	}
	pthread_mutex_unlock(&st->state_lock);
}
