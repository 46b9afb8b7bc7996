// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * writemode=writeback (include/hotfs/wb.h): dirty bytes the log lost, said
 * in the daemon's log and in the writeback state.  The log (hotfs/wblog.h)
 * keeps a lost block dirty and lost: its copy failed its checksum or could
 * not be read, at the replay or at a read or a flush since.  Here: what
 * the replay found (a line for each file with lost bytes, by its path, a
 * line for damage that names no file, a total), a file's bytes found lost
 * later (a line for the file, once), and the state the statistics show
 * ("degraded" while lost bytes are held, or since a replay that met damage
 * naming no file; "writethrough" once the log failed: wb_fail.c), and
 * since when.  Nothing is dropped in silence.
 *
 * Locks: wb->m (the descriptors, for a file's path), then the log's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotfs/clock.h"
#include "hotfs/log.h"
#include "hotfs/wb.h"
#include "hotfs/wblog.h"
#include "wb_i.h"

void wb_ino_path(struct hotfs_wb *wb, uint64_t ino, char *path, size_t len,
		 bool *said)
{
	struct wb_fdent *e;
	char link[32];
	ssize_t n = -1;

	pthread_mutex_lock(&wb->m);
	e = *wb_fd_slot(wb, ino);
	if (e && said) {
		bool was = e->lost_said;

		e->lost_said = true;
		*said = was;
	}
	/* (before the daemon opened its /proc/self/fd: at mount) */
	if (e) {
		snprintf(link, sizeof(link), "%s%d", wb->proc_fd < 0 ?
			 "/proc/self/fd/" : "", e->fd);
		n = readlinkat(wb->proc_fd < 0 ? AT_FDCWD :
			       wb->proc_fd, link, path, len - 1);
	}
	pthread_mutex_unlock(&wb->m);
	if (n < 0)
		snprintf(path, len, "inode %llu", (unsigned long long)ino);
	else
		path[n] = 0;
}

/* What the lost bytes of a file mean for its readers and the flusher. */
#define LOST_RULE "reads of them answer EIO and the flusher does not write " \
		  "them, until the file is written over them, truncated " \
		  "below them or removed"

void wb_report_replay(struct hotfs_wb *wb)
{
	char path[PATH_MAX];
	struct wblog_replay rp;
	struct wblog_lost *l = NULL;
	size_t n, i;

	wblog_replay_report(wb->wl, &rp);
	if (rp.torn_records)
		hotfs_log(LOG_NOTICE, "writeback: the cachedir's log ends in "
			  "%llu records past the last sync any record attests "
			  "(torn by a power loss, or never synced): dropped "
			  "whole, as writes not yet synced may be\n",
			  (unsigned long long)rp.torn_records);
	n = wblog_lost_files(wb->wl, &l);
	for (i = 0; i < n; i++) {
		bool said;

		/* said: not again at its first read */
		wb_ino_path(wb, l[i].fid.ino, path, sizeof(path), &said);
		hotfs_log(LOG_ERR, "writeback: %s: %llu dirty bytes lost "
			  "within bytes %llu to %llu: their copy in the "
			  "cachedir's log is damaged; " LOST_RULE "\n", path,
			  (unsigned long long)l[i].bytes,
			  (unsigned long long)l[i].first,
			  (unsigned long long)l[i].end);
	}
	free(l);
	if (rp.unreadable_records)
		hotfs_log(LOG_ERR, "writeback: the cachedir's log holds %llu "
			  "records whose header is damaged (%llu blocks of "
			  "the log, read around): the files whose dirty data "
			  "they held cannot be told; up to %llu bytes of it "
			  "are lost, and those files read the source's bytes "
			  "there\n", (unsigned long long)rp.unreadable_records,
			  (unsigned long long)rp.unreadable_blocks,
			  (unsigned long long)(rp.unreadable_blocks -
					       rp.unreadable_records) *
			  WB_BLOCK);
	if (rp.reborn_files)
		hotfs_log(LOG_ERR, "writeback: the cachedir's log holds %llu "
			  "dirty bytes of %llu removed files whose inode "
			  "numbers later files took, with no trim of them "
			  "found (their trim record damaged, or the files "
			  "removed behind the mount): dropped, never laid "
			  "over the later files\n",
			  (unsigned long long)rp.reborn_bytes,
			  (unsigned long long)rp.reborn_files);
	if (rp.cut)
		hotfs_log(LOG_ERR, "writeback: the cachedir's log is damaged "
			  "at record %llu, synced, and no record after it "
			  "could be found: the dirty data of the records from "
			  "it on (at least to record %llu) is lost, the files "
			  "it was of unknown\n",
			  (unsigned long long)rp.cut_seq,
			  (unsigned long long)rp.cut_synced);
	/* damage all later records wrote again loses nothing (the state
	 * stays ok): said as such, not as a loss */
	if (rp.unreadable_records || rp.cut || rp.lost_bytes)
		hotfs_log(LOG_ERR, "writeback: the cachedir's log was "
			  "damaged: %llu dirty bytes of %llu files lost, %llu "
			  "records replayed around %llu damaged blocks, %llu "
			  "records unreadable%s; the writeback state is "
			  "degraded (hotfsctl status)\n",
			  (unsigned long long)rp.lost_bytes,
			  (unsigned long long)rp.lost_files,
			  (unsigned long long)rp.damaged_records,
			  (unsigned long long)rp.csum_failures,
			  (unsigned long long)rp.unreadable_records,
			  rp.cut ? ", the records after a damaged one lost" :
			  "");
	else if (rp.damaged_records)
		hotfs_log(LOG_NOTICE, "writeback: the cachedir's log holds "
			  "%llu records with %llu damaged blocks, each written "
			  "again by a later record: nothing of them is lost, "
			  "and the writeback state stays ok\n",
			  (unsigned long long)rp.damaged_records,
			  (unsigned long long)rp.csum_failures);
}

void wb_report_lost(struct hotfs_wb *wb, uint64_t ino, uint64_t off,
		    uint64_t len, int err)
{
	char path[PATH_MAX], where[64] = "";
	bool said;

	atomic_store(&wb->lost_at, clock_real_ns() / 1000000000);
	wb_ino_path(wb, ino, path, sizeof(path), &said);
	if (said)	/* once a file: the counters go on */
		return;
	if (len)
		snprintf(where, sizeof(where), " at bytes %llu to %llu",
			 (unsigned long long)off,
			 (unsigned long long)(off + len));
	hotfs_log(LOG_ERR, "writeback: %s: dirty bytes lost%s: their copy in "
		  "the cachedir's log %s; " LOST_RULE "\n", path, where,
		  err == -EBADMSG ? "is damaged (it fails its checksum)" :
		  "cannot be read (EIO)");
}

/* The state now and since when: the first since the mount (wb_open),
 * a change when it is first seen (degraded: when the bytes were found
 * lost, if since the last state). */
static const char *noted(struct hotfs_wb *wb, const char *state,
			 uint64_t *since)
{
	int64_t now = clock_real_ns() / 1000000000, lost;

	pthread_mutex_lock(&wb->m);
	if (wb->failed) {
		wb->shown = state;
		wb->shown_since = wb->failed_at;
	} else if (!wb->shown || strcmp(wb->shown, state)) {
		lost = atomic_load(&wb->lost_at);
		if (wb->shown)
			wb->shown_since = !strcmp(state, "degraded") &&
					  lost > wb->shown_since ? lost : now;
		wb->shown = state;
	}
	if (since)
		*since = (uint64_t)wb->shown_since;
	pthread_mutex_unlock(&wb->m);
	return state;
}

const char *wb_state_of(struct hotfs_wb *wb, char *why, size_t len,
			uint64_t *since)
{
	struct wblog_replay rp;
	struct wblog_stats s;
	int n = 0;

	*why = 0;
	if (since)
		*since = 0;
	if (!wb)
		return "off";
	if (atomic_load(&wb->failed)) {
		/* why is set once, before failed */
		snprintf(why, len, "%s", wb->why);
		return noted(wb, "writethrough", since);
	}
	wblog_stats(wb->wl, &s);
	wblog_replay_report(wb->wl, &rp);
	if (s.lost_files)
		n = snprintf(why, len, "%llu dirty bytes of %llu files lost "
			     "in the cachedir's log (their reads answer EIO; "
			     "the daemon's log names them)",
			     (unsigned long long)s.lost_held_bytes,
			     (unsigned long long)s.lost_files);
	if ((rp.unreadable_records || rp.cut) && n >= 0 && (size_t)n < len)
		snprintf(why + n, len - (size_t)n, "%sthe replay at mount met "
			 "damaged records naming no file: their dirty data is "
			 "lost", n ? "; " : "");
	return noted(wb, *why ? "degraded" : "ok", since);
}
