/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hotfs promotion and admission policy.
 *
 * The read path tells the policy about every access (one open file handle
 * touching one extent; consecutive requests in the same extent through the
 * same handle are one access, the caller deduplicates them).  The policy
 * keeps approximate access counts for extents in a structure whose memory
 * is fixed at pol_new() and independent of the size of the slow tree, and
 * answers three questions:
 *   - promote?  has this extent been accessed threshold times (recently)?
 *   - admit?    the cache is full: is the candidate hotter than the victim
 *               it would displace (TinyLFU admission)?
 *   - keep?     the store recycles a region: copy this still-live extent
 *               forward instead of dropping it (CacheLib reinsertion)?
 *
 * Extents are named by a 64-bit hash (pol_hash) of (file key, extent no).
 * All functions are thread-safe and cheap (called on the read path).
 */
#ifndef HOTFS_POLICY_H
#define HOTFS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotfs/store.h"

struct hotfs_policy;

struct pol_params {
	unsigned threshold;	/* accesses before promotion, >= 1 */
	size_t counters;	/* sketch counters per row, 0 = default */
};

int pol_new(const struct pol_params *p, struct hotfs_policy **out);
void pol_free(struct hotfs_policy *p);

uint64_t pol_hash(const struct hotfs_key *key, uint32_t extno);

/* Count one access; returns the estimated count after it (saturating). */
unsigned pol_access(struct hotfs_policy *p, uint64_t h);
/* The estimated count, without counting. */
unsigned pol_estimate(struct hotfs_policy *p, uint64_t h);
/* Should an extent with this many accesses be promoted? */
bool pol_promote(const struct hotfs_policy *p, unsigned count);
/* Change the threshold while in use (hotfsctl set): 1..POL_COUNT_MAX,
 * else -EINVAL.  Counts already made are kept. */
int pol_set_threshold(struct hotfs_policy *p, unsigned threshold);
/*
 * Cache full: admit cand if it is hotter than victim, not counting the
 * access that made cand a candidate (call it right after pol_access said
 * promote), and by one access more if victim was seen at all.  victim: pol_victim(), or the extent the store drops next.
 * See src/policy/policy.c.
 */
bool pol_admit(struct hotfs_policy *p, uint64_t cand, uint64_t victim);
/* Region recycling: keep (reinsert) this extent?  hot = looked up since
 * it was written. */
bool pol_keep(struct hotfs_policy *p, uint64_t h, bool hot);

/*
 * Region recycling let this extent go without asking pol_keep: the
 * region's room for keepers was used up.  It is the victim from now on
 * (a hot one, when the store is full of hot extents).
 */
void pol_let_go(struct hotfs_policy *p, uint64_t h);

/*
 * The victim to pass to pol_admit: the last extent pol_keep declined,
 * i.e. what the cache's FIFO tail is currently letting go (0 before any:
 * then the store is not full yet).
 */
uint64_t pol_victim(const struct hotfs_policy *p);

/* Bytes of memory the policy uses (fixed after pol_new). */
size_t pol_memory(const struct hotfs_policy *p);

/*
 * Tell the policy how many extents the cache holds (capacity / extent
 * size is fine): counts then halve every POL_PERIOD_PER_EXTENT * extents
 * accesses (TinyLFU's sample size; at least counters / 64), and first
 * accesses are forgotten after one to two periods of that many accesses
 * within [POL_PERIOD_MIN, counters / 2], instead of both happening every
 * counters / 2.  Call it after st_open; any thread.
 */
int pol_set_cache(struct hotfs_policy *p, uint64_t extents);

/*
 * Counts across restarts (hotfs/policy_state.h keeps them in the
 * cachedir): the whole state as pol_state_size() bytes, and back.
 * pol_import refuses (-EINVAL) a state of another size; it is meant for
 * a policy nobody counts with yet.  pol_accesses: accesses counted.
 */
size_t pol_state_size(const struct hotfs_policy *p);
void pol_export(struct hotfs_policy *p, void *buf);
int pol_import(struct hotfs_policy *p, const void *buf, size_t len);
uint64_t pol_accesses(const struct hotfs_policy *p);

/*
 * Additions for the simulator (tests/sim) and the unit tests; the daemon
 * needs none of them.
 */
#define POL_COUNTERS_DEFAULT	(1u << 20)	/* 4 MiB of state */
#define POL_COUNTERS_MIN	1024u
#define POL_COUNTERS_MAX	(1u << 28)
#define POL_COUNT_MAX		16u	/* estimates saturate here */
#define POL_PERIOD_MIN		(1u << 17)	/* accesses */
#define POL_PERIOD_PER_EXTENT	8u

/* Reinsertion rules for pol_keep; the default is POL_KEEP_DEFAULT. */
enum pol_keep_rule {
	POL_KEEP_NONE = 0,	/* never: plain FIFO */
	POL_KEEP_HOT,		/* hot (CLOCK / second chance) */
	POL_KEEP_FREQ,		/* estimate >= threshold */
	POL_KEEP_HOT_FREQ,	/* hot and estimate >= threshold */
	POL_KEEP_NR,
};
#define POL_KEEP_DEFAULT	POL_KEEP_HOT
/* Whether the daemon should ask pol_admit before inserting into a full
 * cache (the simulator models it this way). */
#define POL_ADMIT_DEFAULT	true

int pol_set_keep(struct hotfs_policy *p, enum pol_keep_rule rule);
const char *pol_keep_name(enum pol_keep_rule rule);
/* Accesses between two aging steps (rounded up to a power of two). */
uint64_t pol_period(const struct hotfs_policy *p);
/* Accesses between two halvings of the sketch (<= pol_period). */
uint64_t pol_sketch_period(const struct hotfs_policy *p);
/* Both periods to this (within [POL_PERIOD_MIN, counters / 2]). */
int pol_set_period(struct hotfs_policy *p, uint64_t accesses);
/* Aging steps (doorkeeper rotations) done so far. */
uint64_t pol_agings(const struct hotfs_policy *p);

#endif
