/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writeback log (wblog.c): the dirty data of writemode=writeback,
 * kept in its own file of the cachedir, CACHEDIR/wlog (0600, the daemon's
 * user's alone), apart from the cache store.
 *
 * On disk: two header slots (blocks 0 and 1, written alternately, the one
 * with the higher generation and a good checksum wins: a torn header write
 * leaves the other) and a circular area of WB_BLOCK blocks.  Each record
 * is one header block (magic, sequence number, epoch, type, the file's
 * identity with its birth, the byte range, its wall-clock time, the
 * sequence number known durable when it was appended, a checksum of each
 * data block, and a checksum of the header itself seeded with the log's
 * secret salt) followed by the data: the file's blocks [off / 4096,
 * (off + len - 1) / 4096], each 4 KiB-aligned in the log as in the file,
 * holding the record's bytes of that block.  Types: DATA (a write), TRIM
 * (the file cut to off: a truncate, or 0 at unlink), PAD (the rest of the
 * area is unused, the next record is at its start), MULTI (the cleaner's).
 *
 * Durable when: an appended record is in the kernel's page cache of the
 * log (a kill of the daemon loses nothing of it); wblog_sync(seq) returns
 * once every record up to seq is on the device (fdatasync of the log;
 * group commit: callers arriving while one fdatasync runs wait for it and
 * share the next, so N concurrent fsyncs cost at most two).
 *
 * Replay (at open) reads the log from its tail in sequence order.  A
 * record that is not the next one whole (wrong sequence, wrong epoch, a
 * header or a data block failing its checksum) is either a torn tail or
 * damage, told apart by the synced sequence numbers the records carry
 * (and the header's: what the last open replayed was synced):
 *  - past the last sync any record found attests (a power loss tore it,
 *    or it was never acknowledged durable): it and everything after it
 *    is dropped whole, never half applied (wblog_replay counts them);
 *  - at or before it (acknowledged): damage.  A record with a whole
 *    header is applied but for its damaged blocks, which stay in the map
 *    lost; one with a damaged header names no file: the next record is
 *    found among the blocks a record can span after it (a header of
 *    format 4 with its salted checksum, a later sequence number, the
 *    epoch rules) and replay goes on from there, the blocks between
 *    counted unreadable.  Nothing found after it: the acknowledged
 *    records from it on are counted lost (wblog_replay.cut).
 * Each open begins a new epoch (written to the header after the replayed
 * records are synced): a record of an earlier life past the replayed
 * end, torn off from the records that led to it, is never taken for a
 * successor.  A log of format 3 (one checksum over a record's header and
 * data) is replayed as before and written in format 4 from then on.
 *
 * Lost blocks (damaged at replay, or found unreadable or failing their
 * checksum when read: every read of a copy checks it) stay in the map,
 * dirty: a read of their bytes answers -EBADMSG (-EIO: unreadable), never
 * the file's own older bytes, the flusher never writes them
 * (wblog_flush_next says which it met), the cleaner carries them forward
 * as lost, and a replay finds them lost again.  They go when the file is
 * written over them (the whole dirty range of the block), cut below them
 * or dropped.
 *
 * In memory: file -> dirty blocks, each the newest record's copy of that
 * block and the bytes [lo, hi) of it that are dirty (always one range: a
 * write whose bytes would leave a gap within a block beside the block's
 * dirty bytes asks the caller's fill for the bytes between, what the file
 * holds there, and logs the whole range).  The newest record of a block
 * wins; an older one is dead for that block.  A file's dirty end is the
 * end of its furthest dirty byte; through the mount the file is at least
 * that long.
 *
 * A full log: the writer runs the cleaner (src/writeback/wblog_clean.c), which
 * copies the oldest records' live blocks to the head and moves the tail
 * past them; writes leave it a reserve.  -ENOSPC only when the log holds
 * live blocks alone.
 *
 * Flushing (flush.c drives it): wblog_flush_next hands out the oldest
 * record's dirty blocks of one file, with the file's adjacent dirty blocks
 * coalesced into one run; wblog_flush_done forgets the blocks that were
 * not rewritten meanwhile, once the caller has made them durable on the
 * source; wblog_release then moves the log's tail past the records left
 * with no dirty block (every record appended synced first, then the
 * header written and synced), and their space is reused.  Flushed data
 * is forgotten here (the mount caches it in the
 * store: src/writeback/wb.c, cache_write.h's fill).  A record replayed after a
 * crash whose bytes had been flushed before is flushed again: the same
 * bytes.
 *
 * Locks: wl->m guards the map, the records and the log's writes and reads
 * (a read of the log under it hits the page cache: records are read soon
 * after they are written); the group commit's fdatasync and the header's
 * write run outside it.  A file's trim waits for a flush of it in flight
 * (one run of the file's bytes written to the source after the truncate
 * would bring them back).
 *
 * All functions return 0 (or a count) or -errno and leave nothing in
 * errno.
 */
#ifndef HOTFS_WBLOG_H
#define HOTFS_WBLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define WB_BLOCK	4096u
#define WB_LOG_NAME	"wlog"
/* the largest record's data: a larger write is logged as several */
#define WB_REC_MAX	(256u * WB_BLOCK)

/*
 * A source file's identity (its inode, not its path: a rename changes
 * nothing).  The log knows a file by dev and ino; birth tells a file from
 * a later one given the same inode number after it was removed: its birth
 * time in ns (statx STATX_BTIME), else (bit 63 set) its inode generation
 * (FS_IOC_GETVERSION), else 0 (unknown: the number alone).  Each DATA
 * record carries the writer's; wblog_files gives the newest one replayed,
 * for the caller to check against the file it finds by the number.  A
 * write or record of another birth than the dirty bytes the number holds
 * is the later file's: those bytes (the removed file's, whose trim is not
 * in the map: damaged at replay, or the file removed behind the log) are
 * dropped first, never laid over it (wblog_replay.reborn_*).
 */
struct wb_fid {
	uint64_t dev;
	uint64_t ino;
	uint64_t birth;		/* not part of the key */
};
#define WB_BIRTH_GEN	(1ull << 63)

/* Two births of files with the same inode number: different files?  (An
 * unknown one, or births of two kinds, tell nothing.) */
static inline bool wb_births_differ(uint64_t a, uint64_t b)
{
	return a && b && (a & WB_BIRTH_GEN) == (b & WB_BIRTH_GEN) && a != b;
}

struct wblog;

/*
 * The file's own bytes of [off, off + len) as they are without the dirty
 * data (the source's, zeros past its end): 0 or -errno.  Called without
 * the log's lock.
 */
typedef int (*wblog_fill_fn)(void *arg, const struct wb_fid *fid,
			     uint64_t off, void *buf, size_t len);

/*
 * Open (create) dirfd/wlog with room for capacity bytes of records
 * (rounded down to blocks, at least 64 blocks), and replay what it holds.
 * An existing log keeps its own capacity unless it is empty; capacity 0:
 * it keeps it in any case.  A log resized that cannot be (the cachedir's
 * filesystem full: -ENOSPC) is left at its size.  Headers both damaged in
 * a log that is not empty: -EUCLEAN; a log of an earlier format:
 * -EPROTONOSUPPORT; either with one line in err (the log is never reset
 * silently: it may hold acknowledged writes).
 */
int wblog_open(int dirfd, uint64_t capacity, struct wblog **out,
	       char *err, size_t errlen);
/*
 * The dirty bytes dirfd/wlog holds, found by a replay that writes
 * nothing (no log, or an empty file: 0); -errno as wblog_open (-EUCLEAN,
 * -EPROTONOSUPPORT), or the open's.
 */
int wblog_dirty(int dirfd, uint64_t *bytes);
/* Close (nothing is flushed or synced: what was appended stays). */
void wblog_close(struct wblog *wl);

/*
 * Log a write of len bytes at off to fid and make it the newest copy of
 * the bytes: len, fewer if the log filled after some of its records (each
 * record at most WB_REC_MAX, whole or not at all), or -errno; *seq (if
 * not NULL): the last record's sequence number, for wblog_sync.  fill may
 * be NULL if the caller knows no write leaves a gap (-EINVAL if one
 * would).  -ENOSPC: no room in the log now.
 */
ssize_t wblog_write(struct wblog *wl, const struct wb_fid *fid,
		    uint64_t off, const void *buf, size_t len,
		    wblog_fill_fn fill, void *arg, uint64_t *seq);
/* Every record up to seq durable (0: every record appended so far). */
int wblog_sync(struct wblog *wl, uint64_t seq);

/*
 * Copy the dirty bytes of fid within [off, off + len) over buf (holding
 * the file's own bytes there); the number of bytes copied, or -errno.
 */
ssize_t wblog_overlay(struct wblog *wl, const struct wb_fid *fid,
		      uint64_t off, void *buf, size_t len);
/* The end of fid's furthest dirty byte; 0: nothing dirty. */
uint64_t wblog_dirty_end(struct wblog *wl, const struct wb_fid *fid);
/* The same, and the wall clock of fid's newest dirty write (0: none). */
uint64_t wblog_dirty_info(struct wblog *wl, const struct wb_fid *fid,
			  int64_t *mtime_ns);
/* fid's dirty blocks (each with at least one dirty byte), and in *lost
 * those of them lost, read together. */
uint64_t wblog_dirty_blocks(struct wblog *wl, const struct wb_fid *fid,
			    uint64_t *lost);

/*
 * fid is cut to size (a truncate; size 0 and drop: an unlink of its last
 * link, everything forgotten): the dirty bytes at and past size are
 * dropped, after any flush of the file in flight, and a TRIM record makes
 * that durable before this returns (the caller then changes the source:
 * a replay never brings the bytes back, not even those of records
 * flushed already but still in the log).  An empty log logs nothing.
 */
int wblog_trim(struct wblog *wl, const struct wb_fid *fid, uint64_t size);

/*
 * fid has nothing dirty (else -EAGAIN; -EIO if all it has is lost): a
 * replay is never to write its records still in the log (flushed
 * already) to the source again.  For an operation that changes the
 * file's bytes on the source itself (fallocate's punching, zeroing,
 * collapsing, inserting), after the file's dirty data is flushed
 * (wbf_flush_file does both).  Durable when it returns.
 */
int wblog_seal(struct wblog *wl, const struct wb_fid *fid);

/* One run of dirty bytes to write back to the source. */
struct wb_run {
	struct wb_fid fid;
	uint64_t off;
	size_t len;
	char *buf;		/* len bytes */
	uint64_t first_blk;	/* the blocks it covers and the sequence */
	uint32_t nblk;		/* numbers of their copies */
	uint64_t *seq;
};

/*
 * The oldest dirty run whose record is at least min_age_ns old (by the
 * wall clock, across restarts; 0 or less: any), at most max bytes, of a
 * file with no run in flight (one file's runs go one at a time: an older
 * run written after a newer one would put old bytes back): 1 and *r
 * filled (give it back with wblog_flush_done), 0: none.  only (not NULL):
 * that file's oldest run, whatever its age, once its run in flight (if
 * any) is done.  Lost blocks are never in a run; 2: a block found lost
 * now (its copy unreadable or damaged): r->fid, r->off and r->len say
 * whose bytes (nothing to give back; ask again).
 */
int wblog_flush_next(struct wblog *wl, int64_t min_age_ns, size_t max,
		     const struct wb_fid *only, struct wb_run *r);
/*
 * The same for a caller that writes several runs before it makes them
 * durable (one fdatasync a file for all): runs of a file whose runs in
 * flight are all owner's are handed out too (never a block already in
 * one of them), and the caller writes them in the order they came (a
 * block rewritten meanwhile comes again in a later run, newer).
 */
int wblog_flush_next_by(struct wblog *wl, int64_t min_age_ns, size_t max,
			const struct wb_fid *only, const void *owner,
			struct wb_run *r);
/*
 * The run's write to the source ended with err (0: written and durable
 * there): its blocks not rewritten since are forgotten (err 0), or stay
 * dirty (counted as a flush error).  Frees r's buffers.
 */
void wblog_flush_done(struct wblog *wl, struct wb_run *r, int err);
/* Move the log's tail past the records with no dirty block left: their
 * space is reused.  The records' bytes must be durable on the source (or
 * held by later records: every record appended is synced before the
 * header moves the tail). */
int wblog_release(struct wblog *wl);

/*
 * Bumped whenever dirty bytes of fid are forgotten (flushed or trimmed;
 * other files share its counter now and then).  A reader takes it before
 * reading the file's own bytes and reads again if it moved by the time
 * the dirty bytes are laid over them: a flush that ended in between may
 * have left the reader the source's old bytes and no dirty ones.
 */
uint64_t wblog_forget_gen(struct wblog *wl, const struct wb_fid *fid);
/*
 * fid's dirty data dropped (the file that had it is gone; a file found by
 * its number is another): trimmed to 0 as wblog_trim does, and counted as
 * a flush error if it had any.  The dirty bytes dropped, or -errno.
 */
int64_t wblog_drop(struct wblog *wl, const struct wb_fid *fid);
/* The files with dirty data (*out malloc'd, each with the birth its
 * newest DATA record gave): their number. */
size_t wblog_files(struct wblog *wl, struct wb_fid **out);

struct wblog_stats {
	uint64_t dirty_bytes;		/* dirty bytes in the map */
	uint64_t dirty_blocks;
	uint64_t dirty_records;		/* records with a dirty block */
	uint64_t dirty_files;
	uint64_t log_used;		/* bytes of the area in use */
	uint64_t log_capacity;		/* bytes of the area */
	uint64_t flushed_bytes;		/* written back since open */
	uint64_t flush_errors;		/* and files dropped (wblog_drop) */
	uint64_t absorbed;		/* writes over a dirty block */
	uint64_t cleaned_bytes;		/* moved forward by the cleaner */
	uint64_t lost_bytes;		/* dirty bytes found lost since open
					 * (replay, reads, flushes) */
	uint64_t lost_held_bytes;	/* dirty bytes lost now (in
					 * dirty_bytes), their blocks (in
					 * dirty_blocks) and files */
	uint64_t lost_blocks;
	uint64_t lost_files;
	uint64_t csum_failures;		/* copies failing their checksum */
	uint64_t replayed_records;	/* found at open */
	uint64_t syncs;			/* the group commit's fdatasyncs */
	int64_t oldest_dirty_ns;	/* wall clock of the oldest record
					 * with a dirty block not lost; 0:
					 * none */
};
void wblog_stats(struct wblog *wl, struct wblog_stats *s);
/* Its flushed_bytes alone (cheap: for a writer waiting for room). */
uint64_t wblog_flushed(struct wblog *wl);

/* What the open's replay found besides the records it applied. */
struct wblog_replay {
	uint64_t damaged_records;	/* applied but for damaged blocks */
	uint64_t csum_failures;		/* their damaged blocks */
	uint64_t unreadable_records;	/* header damaged: files unknown */
	uint64_t unreadable_blocks;	/* the log's blocks they took */
	uint64_t torn_records;		/* dropped: a torn tail */
	uint64_t lost_bytes;		/* dirty bytes lost after replay */
	uint64_t lost_files;
	/* records of a file met after those of an earlier file of its
	 * inode number (another birth) that nothing trimmed: the earlier
	 * one's dirty bytes dropped, never laid over the later file */
	uint64_t reborn_files;
	uint64_t reborn_bytes;
	/* damage at cut_seq with no record found after it: the records
	 * from it to cut_synced (acknowledged) are lost, and any after */
	bool cut;
	uint64_t cut_seq, cut_synced;
};
void wblog_replay_report(struct wblog *wl, struct wblog_replay *r);

/* A file with lost dirty bytes: how many, and the range they are in. */
struct wblog_lost {
	struct wb_fid fid;
	uint64_t bytes;
	uint64_t first, end;		/* the first lost byte, the last
					 * one's end */
};
/* The files holding lost bytes now (*out malloc'd): their number. */
size_t wblog_lost_files(struct wblog *wl, struct wblog_lost **out);

/*
 * Everything the log holds dropped, none of it written anywhere: the
 * caller knows the source has it already or that it was given up (a
 * log left dirty for a source that no longer carries the mark,
 * hotfs/wbmark.h).  The map emptied (counters of lost bytes and the
 * replay's report too: no file's bytes are lost by it) and the tail
 * moved past every record, durably: a later replay finds none of them.
 * For a log nothing else uses yet (at mount); 0 or -errno.
 */
int wblog_discard(struct wblog *wl);

/*
 * The log can keep nothing more (deleted or replaced, its device failing
 * or read-only: wb_fail.c decides): from now on nothing is appended
 * (-ESTALE), a trim or a seal changes the map alone, wblog_sync returns
 * at once (nothing is vouched for: the flusher writes what the log still
 * holds, durable or not).  What it holds is still read (a copy that
 * cannot be is lost, as ever) and flushed, and the tail moved past the
 * records flushed if the log still takes its header (errors there are
 * ignored).
 */
void wblog_fail(struct wblog *wl);
bool wblog_failed(struct wblog *wl);
/* The group commit's sticky error (an fdatasync or a write of the log
 * failed: EIO, EROFS), or 0. */
int wblog_error(struct wblog *wl);
/* fstat of the log's own file (its identity, its links). */
int wblog_stat(struct wblog *wl, struct stat *st);

#endif
