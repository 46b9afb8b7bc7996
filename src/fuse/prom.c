// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Prometheus text exposition of the counters (see include/hotfs/prom.h).
 *
 * Names follow Prometheus's conventions: a hotfs_ prefix, base units
 * (bytes, seconds), _total on counters, one family with a label where
 * stats.c has one key per reason.  The counters are those of
 * .hotfs/stats, so "hotfsctl reset-stats" resets them (a scraper sees a
 * counter reset, which rate() handles).  Samples of one family are
 * written together, as the format requires.
 */
#include <stdbool.h>
#include <string.h>

#include "hotfs/prom.h"

struct pm {
	const char *key;	/* stats key */
	const char *name;	/* metric family */
	char type;		/* 'c'ounter or 'g'auge */
	const char *label;	/* label="value", or NULL */
	const char *help;	/* on the family's first entry */
};

static const struct pm table[] = {
	{ "source_remote", "hotfs_source_remote", 'g', NULL,
	  "1 if the source is a network or FUSE filesystem." },
	{ "source_ids_kept", "hotfs_source_ids_kept", 'g', NULL,
	  "1 if the source keeps inode numbers across mounts." },
	{ "source_time_granularity_ns",
	  "hotfs_source_time_granularity_seconds", 'g', NULL,
	  "The source's timestamp granularity." },
	{ "source_time_samples", "hotfs_source_time_samples", 'g', NULL,
	  "Timestamps the granularity was probed from." },
	{ "uptime_seconds", "hotfs_uptime_seconds", 'g', NULL,
	  "Seconds since the store opened (or the mount, without one)." },
	{ "counters_age_seconds", "hotfs_counters_age_seconds", 'g', NULL,
	  "Seconds since the counters were last reset." },
	{ "store_state_since", "hotfs_store_state_since_timestamp_seconds",
	  'g', NULL, "Unix time the store entered its current state." },
	{ "writeback_state_since",
	  "hotfs_writeback_state_since_timestamp_seconds", 'g', NULL,
	  "Unix time writeback entered its current state (0: off)." },
	{ "read_requests", "hotfs_read_requests_total", 'c', NULL,
	  "FUSE read requests." },
	{ "read_bytes", "hotfs_read_bytes_total", 'c', NULL,
	  "Bytes returned by read requests." },
	{ "read_hits", "hotfs_read_hits_total", 'c', NULL,
	  "Reads served entirely from the cache." },
	{ "read_partial_hits", "hotfs_read_partial_hits_total", 'c', NULL,
	  "Reads served partly from the cache." },
	{ "read_misses", "hotfs_read_misses_total", 'c', NULL,
	  "Reads served entirely from the source." },
	{ "read_hit_bytes", "hotfs_read_hit_bytes_total", 'c', NULL,
	  "Bytes served from the cache." },
	{ "read_miss_bytes", "hotfs_read_miss_bytes_total", 'c', NULL,
	  "Bytes read from the source for readers." },
	{ "hit_ratio", "hotfs_hit_ratio", 'g', NULL,
	  "Hits over reads since the counters were reset." },
	{ "byte_hit_ratio", "hotfs_byte_hit_ratio", 'g', NULL,
	  "Hit bytes over read bytes since the counters were reset." },
	{ "extent_accesses", "hotfs_extent_accesses_total", 'c', NULL,
	  "Extent accesses counted by the policy." },
	{ "promotions", "hotfs_promotions_total", 'c', NULL,
	  "Extents inserted into the store." },
	{ "promoted_bytes", "hotfs_promoted_bytes_total", 'c', NULL,
	  "Bytes inserted into the store." },
	{ "promotions_from_reader", "hotfs_promotions_from_reader_total", 'c',
	  NULL, "Promotions made from a reader's own bytes." },
	{ "promotions_reading_source",
	  "hotfs_promotions_reading_source_total", 'c', NULL,
	  "Promotions that read the source again." },
	{ "promotions_block", "hotfs_promotions_by_grain_total", 'c',
	  "grain=\"block\"", "Promotions by grain: a random reader's block "
	  "or an extent." },
	{ "promotions_extent", "hotfs_promotions_by_grain_total", 'c',
	  "grain=\"extent\"", NULL },
	{ "fill_extent_reads", "hotfs_fill_extent_reads_total", 'c', NULL,
	  "Random misses that read their whole extent while the store "
	  "filled." },
	{ "fill_ahead_blocks", "hotfs_fill_ahead_blocks_total", 'c', NULL,
	  "Blocks of those queued for promotion beside the ones read." },
	{ "promotion_queued", "hotfs_promotions_queued_total", 'c', NULL,
	  "Extents queued for promotion." },
	{ "promotion_queue_depth", "hotfs_promotion_queue_depth", 'g', NULL,
	  "Extents waiting in the promotion queue." },
	{ "not_promoted_below_threshold", "hotfs_not_promoted_total", 'c',
	  "reason=\"below_threshold\"",
	  "Extent accesses or candidates not promoted, by reason." },
	{ "not_promoted_seqcutoff", "hotfs_not_promoted_total", 'c',
	  "reason=\"seqcutoff\"", NULL },
	{ "not_promoted_queue_full", "hotfs_not_promoted_total", 'c',
	  "reason=\"queue_full\"", NULL },
	{ "not_promoted_admission", "hotfs_not_promoted_total", 'c',
	  "reason=\"admission\"", NULL },
	{ "not_promoted_race", "hotfs_not_promoted_total", 'c',
	  "reason=\"race\"", NULL },
	{ "not_promoted_store", "hotfs_not_promoted_total", 'c',
	  "reason=\"store\"", NULL },
	{ "not_promoted_racy", "hotfs_not_promoted_total", 'c',
	  "reason=\"racy\"", NULL },
	{ "not_promoted_budget", "hotfs_not_promoted_total", 'c',
	  "reason=\"budget\"", NULL },
	{ "promotion_rate_waits", "hotfs_promotion_rate_waits_total", 'c',
	  NULL, "Waits of the promotion thread for promote_rate." },
	{ "evictions", "hotfs_evicted_extents_total", 'c', NULL,
	  "Extents evicted from the store." },
	{ "evicted_regions", "hotfs_evicted_regions_total", 'c', NULL,
	  "Store regions recycled." },
	{ "reinserted_extents", "hotfs_reinserted_extents_total", 'c', NULL,
	  "Extents copied forward when their region was recycled." },
	{ "culled_regions", "hotfs_culled_regions_total", 'c', NULL,
	  "Regions dropped to keep the cache filesystem's free space." },
	{ "invalidations_write", "hotfs_invalidations_total", 'c',
	  "reason=\"write\"", "Cached extents dropped, by reason." },
	{ "invalidations_source_changed", "hotfs_invalidations_total", 'c',
	  "reason=\"source_changed\"", NULL },
	{ "invalidations_checksum", "hotfs_invalidations_total", 'c',
	  "reason=\"checksum\"", NULL },
	{ "invalidations_user", "hotfs_invalidations_total", 'c',
	  "reason=\"user\"", NULL },
	{ "invalidations_copied", "hotfs_invalidations_total", 'c',
	  "reason=\"copied\"", NULL },
	{ "writethrough_updates", "hotfs_writethrough_updates_total", 'c',
	  NULL, "Cached extents updated in place by writes." },
	{ "pinned_files", "hotfs_pinned_files", 'g', NULL,
	  "Files pinned in the cache." },
	{ "checksum_failures", "hotfs_checksum_failures_total", 'c', NULL,
	  "Cached reads that failed their checksum." },
	{ "cache_io_errors", "hotfs_cache_io_errors_total", 'c', NULL,
	  "Read errors from the cache device." },
	{ "readahead_extents", "hotfs_readahead_extents_total", 'c', NULL,
	  "Extents read ahead from the source." },
	{ "readahead_bytes", "hotfs_readahead_bytes_total", 'c', NULL,
	  "Bytes read ahead from the source." },
	{ "readahead_served", "hotfs_readahead_served_total", 'c', NULL,
	  "Reads served from read-ahead." },
	{ "readahead_waits", "hotfs_readahead_waits_total", 'c', NULL,
	  "Reads that waited for read-ahead." },
	{ "readahead_failures", "hotfs_readahead_failures_total", 'c', NULL,
	  "Read-aheads that failed." },
	{ "cached_extents", "hotfs_cached_extents", 'g', NULL,
	  "Extents in the store." },
	{ "cached_bytes", "hotfs_cached_bytes", 'g', NULL,
	  "Bytes of live data in the store." },
	{ "capacity_bytes", "hotfs_capacity_bytes", 'g', NULL,
	  "The store's capacity." },
	{ "usage_ratio", "hotfs_usage_ratio", 'g', NULL,
	  "Regions in use over regions." },
	{ "regions_used", "hotfs_regions_used", 'g', NULL,
	  "Store regions in use." },
	{ "regions", "hotfs_regions", 'g', NULL, "Store regions." },
	{ "store_filling", "hotfs_store_filling", 'g', NULL,
	  "1 while the store has room no insert has used." },
	{ "ssd_bytes_written", "hotfs_ssd_written_bytes_total", 'c', NULL,
	  "Bytes written to the cache device." },
	{ "ssd_bytes_written_today", "hotfs_ssd_written_today_bytes", 'g',
	  NULL, "Bytes written to the cache device today (UTC), since the "
	  "mount if it was today." },
	{ "write_budget_bytes", "hotfs_write_budget_bytes", 'g', NULL,
	  "The day's write budget for promotions (0: none)." },
	{ "write_amplification", "hotfs_write_amplification_ratio", 'g',
	  NULL, "Bytes written to the cache device over bytes inserted." },
	{ "store_commits", "hotfs_store_commits_total", 'c', NULL,
	  "Store index commits." },
	{ "store_uncommitted", "hotfs_store_uncommitted", 'g', NULL,
	  "Records inserted since the last commit." },
	{ "recovered_extents", "hotfs_recovered_extents", 'g', NULL,
	  "Extents found in the store when it opened." },
	{ "recovery_dropped_regions", "hotfs_recovery_dropped_regions", 'g',
	  NULL, "Regions dropped when the store opened." },
	{ "index_bytes", "hotfs_index_memory_bytes", 'g', NULL,
	  "Memory of the store's index." },
	{ "policy_bytes", "hotfs_policy_memory_bytes", 'g', NULL,
	  "Memory of the promotion policy." },
	{ "inodes", "hotfs_inodes", 'g', NULL, "Inodes in the table." },
	{ "retained_inodes", "hotfs_retained_inodes", 'g', NULL,
	  "Inodes kept after the kernel forgot them." },
	{ "inode_fds", "hotfs_inode_fds", 'g', NULL,
	  "O_PATH descriptors of the inode table." },
	{ "inode_fds_closed", "hotfs_inode_fds_closed_total", 'c', NULL,
	  "Inode descriptors closed for the descriptor budget." },
	{ "inode_fds_reopened", "hotfs_inode_fds_reopened_total", 'c', NULL,
	  "Inode descriptors reopened by file handle." },
	{ "lookup_requests", "hotfs_metadata_requests_total", 'c',
	  "op=\"lookup\"", "Metadata requests that reached the daemon." },
	{ "getattr_requests", "hotfs_metadata_requests_total", 'c',
	  "op=\"getattr\"", NULL },
	{ "open_requests", "hotfs_metadata_requests_total", 'c',
	  "op=\"open\"", NULL },
	{ "opendir_requests", "hotfs_metadata_requests_total", 'c',
	  "op=\"opendir\"", NULL },
	{ "fuse_uring_requests", "hotfs_fuse_uring_requests_total", 'c',
	  NULL, "Lookup, getattr, open, opendir and read requests that "
	  "came through FUSE over io_uring." },
	{ "passthrough_opens", "hotfs_passthrough_opens_total", 'c', NULL,
	  "Opens answered with a copy as the backing file (their reads "
	  "are not seen)." },
	{ "passthrough_new_nodes", "hotfs_passthrough_new_nodes_total", 'c',
	  NULL, "Opens answered ESTALE so that the kernel meets a new node "
	  "beside passthrough opens." },
	{ "copies", "hotfs_copies", 'g', NULL,
	  "Whole-file copies in the cachedir (passthrough)." },
	{ "copy_bytes", "hotfs_copy_bytes", 'g', NULL,
	  "Bytes of the whole-file copies." },
	{ "copies_made", "hotfs_copies_made_total", 'c', NULL,
	  "Whole-file copies made." },
	{ "copy_bytes_made", "hotfs_copy_made_bytes_total", 'c', NULL,
	  "Bytes of the whole-file copies made." },
	{ "copies_dropped", "hotfs_copies_dropped_total", 'c', NULL,
	  "Whole-file copies removed: stale, evicted or failing." },
	{ "copies_aged", "hotfs_copies_aged_total", 'c', NULL,
	  "Whole-file copies removed unused for a lap of the store." },
	{ "copy_failures", "hotfs_copy_failures_total", 'c', NULL,
	  "Whole-file copies given up while being made." },
	{ "scrubbed_bytes", "hotfs_scrubbed_bytes_total", 'c', NULL,
	  "Bytes of copies re-read and checked by the scrub." },
	{ "scrub_failures", "hotfs_scrub_failures_total", 'c', NULL,
	  "Copies the scrub found failing and removed." },
	{ "source_opens", "hotfs_source_opens_total", 'c', NULL,
	  "Source files opened for handles." },
	{ "lookups_kept", "hotfs_lookups_kept_total", 'c', NULL,
	  "Lookups answered from the names the daemon keeps." },
	{ "watched_dirs", "hotfs_watched_dirs", 'g', NULL,
	  "Source directories watched with inotify." },
	{ "unwatched_dirs", "hotfs_unwatched_dirs", 'g', NULL,
	  "Source directories past the watch budget." },
	{ "watch_events", "hotfs_watch_events_total", 'c', NULL,
	  "inotify events read." },
	{ "watch_invalidations", "hotfs_watch_invalidations_total", 'c',
	  NULL, "Kernel cache invalidations sent for source changes." },
	{ "watch_overflows", "hotfs_watch_overflows_total", 'c', NULL,
	  "inotify queue overflows." },
	{ "watch_own_events", "hotfs_watch_own_events_total", 'c', NULL,
	  "inotify events of the mount's own changes of names." },
	{ "meta_snapshot_dirs", "hotfs_meta_snapshot_dirs", 'g', NULL,
	  "Directories in the metadata snapshot." },
	{ "meta_snapshot_hits", "hotfs_meta_snapshot_hits_total", 'c', NULL,
	  "Lookups answered from the metadata snapshot." },
	{ "meta_snapshot_stale", "hotfs_meta_snapshot_stale_total", 'c',
	  NULL, "Snapshot directories found stale." },
	{ "meta_snapshot_dropped", "hotfs_meta_snapshot_dropped_total", 'c',
	  NULL, "Snapshot directories dropped." },
	{ "meta_snapshot_rejected", "hotfs_meta_snapshot_rejected_total",
	  'c', NULL, "Snapshots rejected at load." },
	{ "meta_snapshot_saves", "hotfs_meta_snapshot_saves_total", 'c',
	  NULL, "Snapshot saves." },
	{ "meta_snapshot_saved_dirs", "hotfs_meta_snapshot_saved_dirs", 'g',
	  NULL, "Directories in the last snapshot saved." },
	{ "meta_snapshot_current", "hotfs_meta_snapshot_current", 'g', NULL,
	  "1 while the snapshot on disk holds every change made through "
	  "the mount." },
	{ "dirty_bytes", "hotfs_dirty_bytes", 'g', NULL,
	  "Writeback: bytes written through the mount, not yet flushed." },
	{ "dirty_records", "hotfs_dirty_records", 'g', NULL,
	  "Writeback: log records holding dirty bytes." },
	{ "dirty_files", "hotfs_dirty_files", 'g', NULL,
	  "Writeback: files with dirty bytes." },
	{ "oldest_dirty_age", "hotfs_oldest_dirty_age_seconds", 'g', NULL,
	  "Writeback: age of the oldest dirty record." },
	{ "flushed_bytes", "hotfs_flushed_bytes_total", 'c', NULL,
	  "Writeback: bytes written back to the source." },
	{ "flush_rate", "hotfs_flush_rate_bytes_per_second", 'g', NULL,
	  "Writeback: bytes flushed per second over the last 10 s." },
	{ "flush_errors", "hotfs_flush_errors_total", 'c', NULL,
	  "Writeback: runs the source did not take, files whose dirty "
	  "data a replay dropped (another file had the inode number)." },
	{ "writes_absorbed", "hotfs_writes_absorbed_total", 'c', NULL,
	  "Writeback: blocks rewritten while dirty." },
	{ "wlog_used_bytes", "hotfs_wlog_used_bytes", 'g', NULL,
	  "Writeback: bytes of the log in use." },
	{ "wlog_capacity_bytes", "hotfs_wlog_capacity_bytes", 'g', NULL,
	  "Writeback: the log's size." },
	{ "wlog_cleaned_bytes", "hotfs_wlog_cleaned_bytes_total", 'c', NULL,
	  "Writeback: dirty bytes the log's cleaner moved forward." },
	{ "writeback_conflicts", "hotfs_writeback_conflicts_total", 'c', NULL,
	  "Writeback: files changed on the source behind the mount while "
	  "it held dirty data for them." },
	{ "lost_dirty_bytes", "hotfs_lost_dirty_bytes_total", 'c', NULL,
	  "Writeback: dirty bytes found lost: their copy in the log "
	  "damaged or unreadable." },
	{ "lost_dirty_files", "hotfs_lost_dirty_files", 'g', NULL,
	  "Writeback: files holding lost dirty bytes (reads of them answer "
	  "EIO)." },
	{ "wlog_checksum_failures", "hotfs_wlog_checksum_failures_total", 'c',
	  NULL, "Writeback: copies of dirty blocks in the log failing their "
	  "checksum." },
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

static const struct stats_kv *find(const struct stats_kv *kv, size_t n,
				   const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(kv[i].key, key) == 0)
			return &kv[i];
	return NULL;
}

static const char *str_of(const struct stats_kv *kv, size_t n,
			  const char *key)
{
	const struct stats_kv *v = find(kv, n, key);

	return v && v->kind == K_STR && v->s ? v->s : "";
}

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void value(FILE *f, const struct stats_kv *v, double scale)
{
	if (scale)
		fprintf(f, " %.9g\n", scale * (v->kind == K_U64 ?
					      (double)v->u : v->f));
	else if (v->kind == K_U64)
		fprintf(f, " %llu\n", (unsigned long long)v->u);
	else
		fprintf(f, " %.9g\n", v->f);
}

static void header(FILE *f, const char *name, const char *type,
		   const char *help)
{
	if (help)
		fprintf(f, "# HELP %s %s\n", name, help);
	fprintf(f, "# TYPE %s %s\n", name, type);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

static bool known(const char *key)
{
	for (size_t i = 0; i < NTABLE; i++)
		if (strcmp(table[i].key, key) == 0)
			return true;
	return false;
}

void prom_write(FILE *f, const struct stats_kv *kv, size_t n)
{
	static const char *const states[] = { "ok", "read-only", "off" };
	static const char *const wstates[] = { "ok", "degraded",
					       "writethrough", "off" };
	const char *mnt = str_of(kv, n, "mountpoint");
	const char *state = str_of(kv, n, "store_state");
	const char *wstate = str_of(kv, n, "writeback_state");
	const char *last = "";

	header(f, "hotfs_info", "gauge",
	       "The daemon's version and how cached bytes are read.");
	fputs("hotfs_info{mountpoint=", f);
	label_value(f, mnt);
	fputs(",version=", f);
	label_value(f, str_of(kv, n, "version"));
	fputs(",read_engine=", f);
	label_value(f, str_of(kv, n, "read_engine"));
	fputs("} 1\n", f);
	header(f, "hotfs_store_state", "gauge",
	       "The cache store's state: 1 for the current one.");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		fputs("hotfs_store_state{mountpoint=", f);
		label_value(f, mnt);
		fprintf(f, ",state=\"%s\"} %d\n", states[i],
			strcmp(state, states[i]) == 0);
	}
	for (size_t i = 0; *wstate && i < sizeof(wstates) / sizeof(*wstates);
	     i++) {
		if (!i)
			header(f, "hotfs_writeback_state", "gauge",
			       "Writeback's state: 1 for the current one "
			       "(degraded: the log lost dirty bytes; "
			       "writethrough: the log failed).");
		fputs("hotfs_writeback_state{mountpoint=", f);
		label_value(f, mnt);
		fprintf(f, ",state=\"%s\"} %d\n", wstates[i],
			strcmp(wstate, wstates[i]) == 0);
	}
	for (size_t i = 0; i < NTABLE; i++) {
		const struct pm *m = &table[i];
		const struct stats_kv *v = find(kv, n, m->key);

		if (!v || v->kind == K_STR)
			continue;
		if (strcmp(m->name, last) != 0) {
			const char *help = m->help;

			/* a family's help is on its first entry */
			for (size_t j = i; !help && j-- > 0;)
				if (strcmp(table[j].name, m->name) == 0)
					help = table[j].help;
			header(f, m->name, m->type == 'c' ? "counter" :
			       "gauge", help);
			last = m->name;
		}
		fprintf(f, "%s{mountpoint=", m->name);
		label_value(f, mnt);
		if (m->label)
			fprintf(f, ",%s", m->label);
		fputc('}', f);
		/* stats keys in nanoseconds: seconds, the base unit */
		value(f, v, ends_with(m->key, "_ns") ? 1e-9 : 0);
	}
	for (size_t i = 0; i < n; i++) {
		const struct stats_kv *v = &kv[i];

		if (v->kind == K_STR || known(v->key))
			continue;
		fprintf(f, "# TYPE hotfs_%s untyped\nhotfs_%s{mountpoint=",
			v->key, v->key);
		label_value(f, mnt);
		fputc('}', f);
		value(f, v, 0);
	}
}
