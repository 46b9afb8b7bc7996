// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Rendering of .hotfs/stats, .hotfs/stats.json and .hotfs/metrics (the
 * same keys in Prometheus's text format: src/fuse/prom.c).
 *
 * The vocabulary follows dmsetup status and bcache's sysfs: hits, misses
 * and partial hits in requests and bytes, promotions, evictions,
 * invalidations by reason, extents not promoted by reason, bytes written
 * to the SSD, usage out of capacity, queue depth and the store's state.
 * The text form is "key: value" lines with aligned values; the JSON form
 * is one flat object with the same keys (numbers as numbers).
 *
 * Reads of the counters are relaxed atomic loads: a snapshot may mix
 * moments a few microseconds apart, never torn values.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "hotfs/textfmt.h"
#include "hotfs/cache.h"
#include "hotfs/ctl.h"
#include "hotfs/filecopy.h"
#include "hotfs/fs.h"
#include "hotfs/meta_fs.h"
#include "hotfs/promote.h"
#include "hotfs/prom.h"
#include "hotfs/readahead.h"
#include "hotfs/settings.h"
#include "hotfs/srcprobe.h"
#include "hotfs/watch.h"
#include "hotfs/wb.h"

#define MAX_KV 160

struct kvlist {
	struct stats_kv v[MAX_KV];
	unsigned n;
};

static void add_u(struct kvlist *l, const char *k, uint64_t u)
{
	if (l->n < MAX_KV)
		l->v[l->n++] = (struct stats_kv){ .key = k, .kind = K_U64, .u = u };
}

static void add_f(struct kvlist *l, const char *k, double f)
{
	if (l->n < MAX_KV)
		l->v[l->n++] = (struct stats_kv){ .key = k, .kind = K_F64, .f = f };
}

static void add_s(struct kvlist *l, const char *k, const char *s)
{
	if (l->n < MAX_KV)
		l->v[l->n++] = (struct stats_kv){ .key = k, .kind = K_STR, .s = s };
}

static double secs_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

/* The inode table's O_PATH fds, and those the fd budget closed and
 * reopened by file handle (inode.c). */
static void add_inode_fds(struct hotfs *fs, struct kvlist *l)
{
	add_u(l, "inode_fds", ino_fds(fs->it));
	add_u(l, "inode_fds_closed", ino_fd_drops(fs->it));
	add_u(l, "inode_fds_reopened", ino_fd_reopens(fs->it));
}

/* Metadata: requests that reached the daemon, and the source watch. */
static void add_watch(struct hotfs *fs, struct kvlist *l)
{
	struct hotfs_watch_stats ws;

	add_u(l, "lookup_requests", atomic_load_explicit(&fs->n_lookup,
							 memory_order_relaxed));
	add_u(l, "getattr_requests", atomic_load_explicit(&fs->n_getattr,
							  memory_order_relaxed));
	add_u(l, "open_requests", atomic_load_explicit(&fs->n_open,
						       memory_order_relaxed));
	add_u(l, "source_opens", atomic_load_explicit(&fs->n_src_open,
						      memory_order_relaxed));
	add_u(l, "lookups_kept", atomic_load_explicit(&fs->n_lookup_kept,
						      memory_order_relaxed));
	add_u(l, "opendir_requests", atomic_load_explicit(&fs->n_opendir,
							  memory_order_relaxed));
	add_s(l, "fuse_uring", fs->o->fuse_uring_why ? fs->o->fuse_uring_why :
	      "off");
	add_u(l, "fuse_uring_requests",
	      atomic_load_explicit(&fs->n_uring, memory_order_relaxed));
	watch_get_stats(fs->watch, &ws);
	add_u(l, "watched_dirs", ws.dirs);
	add_u(l, "unwatched_dirs", ws.unwatched);
	add_u(l, "watch_events", ws.events);
	add_u(l, "watch_invalidations", ws.invalidations);
	add_u(l, "watch_overflows", ws.overflows);
	add_u(l, "watch_own_events", ws.own_events);
}

/* Passthrough (hotfs/passthrough.h) and the file grain's copies
 * (hotfs/filecopy.h): present, 0, without them. */
static void add_passthrough(struct hotfs *fs, struct hotfs_cache *c,
			    struct kvlist *l)
{
	struct fc_stats f = { 0 };
	const char *why = atomic_load(&fs->pt_why);

	if (c && c->fc)
		fc_get_stats(c->fc, &f);
	add_s(l, "passthrough", why ? why : "off");
	add_u(l, "passthrough_opens", atomic_load_explicit(&fs->n_pt_open,
							   memory_order_relaxed));
	add_u(l, "passthrough_new_nodes",
	      atomic_load_explicit(&fs->n_pt_stale, memory_order_relaxed));
	add_u(l, "copies", f.copies);
	add_u(l, "copy_bytes", f.bytes);
	add_u(l, "copies_made", f.made);
	add_u(l, "copy_bytes_made", f.made_bytes);
	add_u(l, "copies_dropped", f.dropped);
	add_u(l, "copies_aged", f.aged);
	add_u(l, "copy_failures", f.failed);
	add_u(l, "scrubbed_bytes", f.scrubbed_bytes);
	add_u(l, "scrub_failures", f.scrub_bad);
}

/* writemode=writeback (hotfs/wb.h): present, 0, in every mode (w: the
 * caller's, it holds the strings) */
static void add_writeback(struct hotfs *fs, struct kvlist *l,
			  struct wb_stats *w)
{
	wb_stats(fs->wb, w);
	add_s(l, "writeback_state", w->state);
	add_s(l, "writeback_reason", w->reason);
	add_u(l, "writeback_state_since", w->state_since);
	add_u(l, "dirty_bytes", w->dirty_bytes);
	add_u(l, "dirty_records", w->dirty_records);
	add_u(l, "dirty_files", w->dirty_files);
	add_f(l, "oldest_dirty_age", w->oldest_dirty_age);
	add_u(l, "flushed_bytes", w->flushed_bytes);
	add_f(l, "flush_rate", w->flush_rate);
	add_u(l, "flush_errors", w->flush_errors);
	add_u(l, "writes_absorbed", w->absorbed);
	add_u(l, "wlog_used_bytes", w->log_used);
	add_u(l, "wlog_capacity_bytes", w->log_capacity);
	add_u(l, "wlog_cleaned_bytes", w->cleaned);
	add_u(l, "writeback_conflicts", w->conflicts);
	add_u(l, "lost_dirty_bytes", w->lost);
	add_u(l, "lost_dirty_files", w->lost_files);
	add_u(l, "wlog_checksum_failures", w->csum_failures);
}

/* The metadata snapshot (hotfs/meta_fs.h). */
static void add_meta(struct hotfs *fs, struct kvlist *l)
{
	struct meta_fs_stats ms;

	meta_fs_get_stats(fs, &ms);
	add_u(l, "meta_snapshot_dirs", ms.dirs);
	add_u(l, "meta_snapshot_hits", ms.hits);
	add_u(l, "meta_snapshot_stale", ms.stale);
	add_u(l, "meta_snapshot_dropped", ms.dropped);
	add_u(l, "meta_snapshot_rejected", ms.rejected);
	add_u(l, "meta_snapshot_saves", ms.saves);
	add_u(l, "meta_snapshot_saved_dirs", ms.saved_dirs);
	add_u(l, "meta_snapshot_current", ms.current);
}

/* What the source probe found (hotfs/srcprobe.h). */
static void add_source(struct hotfs *fs, struct kvlist *l)
{
	if (!fs_cache(fs))
		add_s(l, "restarts", "no store");
	else if (hotfs_src.ids_kept)
		add_s(l, "restarts", "cache kept across restarts (the "
		      "source's inode numbers are persistent)");
	else
		add_s(l, "restarts", "cache not kept across restarts: this "
		      "source's inode numbers are not persistent");
	add_s(l, "restarts_why", hotfs_src.ids_kept ? "" : hotfs_src.why);
	add_u(l, "source_remote", hotfs_src.remote);
	add_u(l, "source_ids_kept", hotfs_src.ids_kept);
	add_u(l, "source_time_granularity_ns", (uint64_t)hotfs_src.gran_ns);
	add_u(l, "source_time_samples", hotfs_src.nstamps);
}

/* Seconds since a CLOCK_REALTIME moment (the mount, without a store). */
static double secs_since_real(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* The store's state, with a store: its counters' ages and its engine. */
static void add_store_on(struct hotfs_cache *c, struct kvlist *l,
			 struct hotfs_store_stats *ss)
{
	struct hotfs_stats *s = &c->stats;

	st_get_stats(c->st, ss);
	add_f(l, "uptime_seconds", secs_since(&s->started));
	add_f(l, "counters_age_seconds", secs_since(&s->reset));
	add_s(l, "store_state", st_state_name(ss->state));
	add_s(l, "store_reason", ss->reason);
	add_u(l, "store_state_since", ss->state_since);
	/* how cached bytes are read (hotfs/uring.h) */
	add_s(l, "read_engine", c->uring ? "io_uring" : "pread");
}

/* The same keys without a store: off, and why (off: the caller's, it
 * holds the reason). */
static void add_store_off(struct hotfs *fs, struct kvlist *l, char *off,
			  size_t offlen)
{
	uint64_t since = (uint64_t)fs->mount_time.tv_sec;

	add_f(l, "uptime_seconds", secs_since_real(&fs->mount_time));
	add_f(l, "counters_age_seconds",
	      secs_since_real(&fs->mount_time));
	/* "store on" may replace it meanwhile */
	pthread_mutex_lock(&fs->cache_lock);
	snprintf(off, offlen, "%s", fs->cache_off ? fs->cache_off :
		 "mounted with -o nocache");
	if (fs->cache_off)
		since = (uint64_t)fs->cache_off_since.tv_sec;
	pthread_mutex_unlock(&fs->cache_lock);
	add_s(l, "store_state", "off");
	add_s(l, "store_reason", off);
	add_u(l, "store_state_since", since);
	add_s(l, "read_engine", "none");
}

/* Reads: hits, partial hits and misses, in requests and bytes. */
static void add_reads(struct hotfs_stats *s, struct kvlist *l)
{
	uint64_t hit_r, part_r, miss_r, hit_b, miss_b, reqs;

	reqs = stats_get(s, STAT_READ_REQS);
	hit_r = stats_get(s, STAT_HIT_REQS);
	part_r = stats_get(s, STAT_PARTIAL_REQS);
	miss_r = stats_get(s, STAT_MISS_REQS);
	hit_b = stats_get(s, STAT_HIT_BYTES);
	miss_b = stats_get(s, STAT_MISS_BYTES);
	add_u(l, "read_requests", reqs);
	add_u(l, "read_bytes", stats_get(s, STAT_READ_BYTES));
	add_u(l, "read_hits", hit_r);
	add_u(l, "read_partial_hits", part_r);
	add_u(l, "read_misses", miss_r);
	add_u(l, "read_hit_bytes", hit_b);
	add_u(l, "read_miss_bytes", miss_b);
	add_f(l, "hit_ratio", ratio(hit_r, hit_r + part_r + miss_r));
	add_f(l, "byte_hit_ratio", ratio(hit_b, hit_b + miss_b));
}

/* Promotions, and the extents not promoted by reason. */
static void add_promotions(struct hotfs_cache *c, struct hotfs_stats *s,
			   struct kvlist *l)
{
	add_u(l, "extent_accesses", stats_get(s, STAT_ACCESSES));
	add_u(l, "promotions", stats_get(s, STAT_PROMOTIONS));
	add_u(l, "promoted_bytes", stats_get(s, STAT_PROMO_BYTES));
	add_u(l, "promotions_from_reader", stats_get(s, STAT_PROMO_REUSED));
	add_u(l, "promotions_reading_source",
	      stats_get(s, STAT_PROMO_SRC_READS));
	add_u(l, "promotions_block", stats_get(s, STAT_PROMO_BLOCKS));
	add_u(l, "promotions_extent", stats_get(s, STAT_PROMO_EXTENTS));
	add_u(l, "fill_extent_reads", stats_get(s, STAT_FILL_READS));
	add_u(l, "fill_ahead_blocks", stats_get(s, STAT_FILL_BLOCKS));
	add_u(l, "promotion_queued", stats_get(s, STAT_PROMO_QUEUED));
	add_u(l, "promotion_queue_depth", c ? pr_depth(c->pr) : 0);
	add_u(l, "not_promoted_below_threshold",
	      stats_get(s, STAT_NP_THRESHOLD));
	add_u(l, "not_promoted_seqcutoff", stats_get(s, STAT_NP_SEQCUTOFF));
	add_u(l, "not_promoted_queue_full", stats_get(s, STAT_NP_QUEUE_FULL));
	add_u(l, "not_promoted_admission", stats_get(s, STAT_NP_ADMISSION));
	add_u(l, "not_promoted_race", stats_get(s, STAT_NP_RACE));
	add_u(l, "not_promoted_store", stats_get(s, STAT_NP_STORE));
	add_u(l, "not_promoted_racy", stats_get(s, STAT_NP_RACY));
	add_u(l, "not_promoted_budget", stats_get(s, STAT_NP_BUDGET));
	add_u(l, "promotion_rate_waits", stats_get(s, STAT_NP_RATE));
}

/* Evictions, invalidations by reason, errors, and the read-ahead. */
static void add_evictions(struct hotfs_cache *c, struct hotfs_stats *s,
			  struct kvlist *l,
			  const struct hotfs_store_stats *ss)
{
	struct ra_counts rc;

	add_u(l, "evictions", ss->evicted_extents);
	add_u(l, "evicted_regions", ss->evictions);
	add_u(l, "reinserted_extents", ss->reinserted);
	add_u(l, "culled_regions", ss->culls);
	add_u(l, "invalidations_write", ss->invalidations[ST_INVAL_WRITE]);
	add_u(l, "invalidations_source_changed",
	      ss->invalidations[ST_INVAL_SOURCE]);
	add_u(l, "invalidations_checksum", ss->invalidations[ST_INVAL_CSUM]);
	add_u(l, "invalidations_user", ss->invalidations[ST_INVAL_USER]);
	add_u(l, "invalidations_copied", ss->invalidations[ST_INVAL_COPIED]);
	add_u(l, "writethrough_updates", stats_get(s, STAT_WRITETHROUGH));
	add_u(l, "pinned_files", c ? pins_count(c->pins) : 0);
	add_u(l, "checksum_failures", stats_get(s, STAT_CSUM_FAIL));
	add_u(l, "cache_io_errors", stats_get(s, STAT_CACHE_IO_ERR));
	ra_get_counts(c ? c->ra : NULL, &rc);
	add_u(l, "readahead_extents", rc.reads);
	add_u(l, "readahead_bytes", rc.bytes);
	add_u(l, "readahead_served", rc.served);
	add_u(l, "readahead_waits", rc.waited);
	add_u(l, "readahead_failures", rc.failed);
}

/* What the store holds and has written, and the memory it uses. */
static void add_usage(struct hotfs_cache *c, struct kvlist *l,
		      const struct hotfs_store_stats *ss)
{
	add_u(l, "cached_extents", ss->extents);
	add_u(l, "cached_bytes", ss->bytes);
	add_u(l, "capacity_bytes", ss->capacity);
	add_f(l, "usage_ratio", ratio(ss->regions_used, ss->regions));
	add_u(l, "regions_used", ss->regions_used);
	add_u(l, "regions", ss->regions);
	add_u(l, "store_filling", ss->filling);
	add_u(l, "ssd_bytes_written", ss->bytes_written);
	if (c)
		budget_note(&c->budget, (uint64_t)time(NULL),
			    ss->bytes_written);
	add_u(l, "ssd_bytes_written_today", c ? budget_used(&c->budget) : 0);
	add_u(l, "write_budget_bytes",
	      c ? atomic_load(&c->budget.per_day) : 0);
	add_f(l, "write_amplification",
	      ratio(ss->bytes_written, ss->bytes_inserted));
	add_u(l, "store_commits", ss->commits);
	add_u(l, "store_uncommitted", ss->uncommitted);
	add_u(l, "recovered_extents", ss->extents_recovered);
	add_u(l, "recovery_dropped_regions", ss->regions_dropped);
	add_u(l, "index_bytes", ss->index_bytes);
	add_u(l, "policy_bytes", c ? pol_memory(c->pol) : 0);
}

/*
 * The keys are the same whatever the store's state (a store that never
 * opened, or -o nocache, shows zeros), so that a reader of the JSON or
 * of hotfsctl stats -w never misses one.  The order they are shown in is
 * the order of the calls here, one group of keys each.
 */
static void collect(struct hotfs *fs, struct kvlist *l,
		    struct hotfs_store_stats *ss, char *off, size_t offlen,
		    const char *opts, struct wb_stats *w)
{
	static struct hotfs_stats none;
	struct hotfs_cache *c = fs_cache(fs);
	struct hotfs_stats *s = c ? &c->stats : &none;

	add_s(l, "version", HOTFS_VERSION);
	add_s(l, "mountpoint", fs->o->mountpoint);
	add_s(l, "source", fs->o->source);
	add_s(l, "options", opts ? opts : "");
	add_s(l, "cachedir", fs->o->cachedir ? fs->o->cachedir : "");
	add_source(fs, l);
	if (c)
		add_store_on(c, l, ss);
	else
		add_store_off(fs, l, off, offlen);
	add_reads(s, l);
	add_promotions(c, s, l);
	add_evictions(c, s, l, ss);
	add_usage(c, l, ss);
	add_u(l, "inodes", ino_count(fs->it));
	add_u(l, "retained_inodes", ino_retained(fs->it));
	add_inode_fds(fs, l);
	add_watch(fs, l);
	add_passthrough(fs, c, l);
	add_meta(fs, l);
	add_writeback(fs, l, w);
}

/* JSON string escaping for the few free-text values. */
int stats_render(struct hotfs *fs, enum stats_fmt fmt, char **out,
		 size_t *len)
{
	struct hotfs_store_stats ss;
	struct kvlist l = { .n = 0 };
	struct wb_stats wbs;
	bool json = fmt == STATS_JSON;
	char off[512], *opts = fs_opts_summary(fs);
	size_t w = 0;
	unsigned i;
	FILE *f;

	memset(&ss, 0, sizeof(ss));
	collect(fs, &l, &ss, off, sizeof(off), opts, &wbs);
	f = open_memstream(out, len);
	if (!f) {
		free(opts);
		return -ENOMEM;
	}
	if (fmt == STATS_PROM) {
		prom_write(f, l.v, l.n);
		free(opts);
		return fclose(f) != 0 ? -ENOMEM : 0;
	}
	for (i = 0; i < l.n; i++)
		if (strlen(l.v[i].key) > w)
			w = strlen(l.v[i].key);
	if (json)
		fputs("{", f);
	for (i = 0; i < l.n; i++) {
		const struct stats_kv *v = &l.v[i];

		if (json) {
			fprintf(f, "%s\n  \"%s\": ", i ? "," : "", v->key);
			if (v->kind == K_U64)
				fprintf(f, "%llu", (unsigned long long)v->u);
			else if (v->kind == K_F64)
				fprintf(f, "%.4f", v->f);
			else
				json_put_str(f, v->s);
			continue;
		}
		fprintf(f, "%s:%*s", v->key, (int)(w + 1 - strlen(v->key)), "");
		if (v->kind == K_U64)
			fprintf(f, "%llu\n", (unsigned long long)v->u);
		else if (v->kind == K_F64)
			fprintf(f, "%.4f\n", v->f);
		else
			fprintf(f, "%s\n", v->s);
	}
	if (json)
		fputs("\n}\n", f);
	free(opts);
	if (fclose(f) != 0)
		return -ENOMEM;
	return 0;
}

void stats_reset(struct hotfs *fs)
{
	struct hotfs_cache *c = fs_cache(fs);
	unsigned i;

	atomic_store_explicit(&fs->n_lookup, 0, memory_order_relaxed);
	atomic_store_explicit(&fs->n_getattr, 0, memory_order_relaxed);
	atomic_store_explicit(&fs->n_open, 0, memory_order_relaxed);
	atomic_store_explicit(&fs->n_opendir, 0, memory_order_relaxed);
	atomic_store_explicit(&fs->n_src_open, 0, memory_order_relaxed);
	atomic_store_explicit(&fs->n_lookup_kept, 0, memory_order_relaxed);
	atomic_store_explicit(&fs->n_uring, 0, memory_order_relaxed);
	if (!c)
		return;
	for (i = 0; i < STAT__NR; i++)
		atomic_store_explicit(&c->stats.c[i], 0, memory_order_relaxed);
	clock_gettime(CLOCK_MONOTONIC, &c->stats.reset);
}
