/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hotfs options: one struct, filled from the command line by fuse_opt
 * (opt_parse) and checked against the filesystem (opt_validate).
 *
 * Every key in the table is documented in man/hotfs.8.  Functions return
 * 0 or -errno; on error they write one line to the caller's buffer.
 */
#ifndef HOTFS_OPTS_H
#define HOTFS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotfs/fuse_uring.h"
#include "hotfs/passthrough.h"
#include "hotfs/optval.h"	/* the values' syntax */

struct fuse_args;

/* What hotfs and the kernel trust without asking the source again. */
enum hotfs_revalidate {
	HOTFS_REVAL_OPEN = 0,	/* close-to-open: files at open, listings
				 * at opendir; kernel caches per timeouts */
	HOTFS_REVAL_SECONDS,	/* kernel caches for revalidate_secs */
	HOTFS_REVAL_NEVER,	/* the tree changes only through hotfs */
};

enum hotfs_writemode {
	HOTFS_WRITEAROUND = 0,
	HOTFS_WRITETHROUGH = 1,
	HOTFS_WRITEBACK = 2,	/* hotfs/wb.h; fixed while mounted */
};

/* seconds between metadata snapshots while the tree changes */
#define HOTFS_SNAPSHOT_SECS	30

struct hotfs_opts {
	char *source;		/* absolute, as given resolved by realpath() */
	char *mountpoint;	/* absolute */
	char *cachedir;		/* absolute once validated */

	char *cachesize_str;	/* raw value of cachesize= */
	uint64_t cachesize;	/* bytes; 0 = not given (store decides) */
	unsigned cachesize_pct;	/* N of "N%", 0 if given in bytes */
	char *extent_str;
	uint32_t extent;	/* bytes, power of two, 64K..4M */
	char *seqcutoff_str;
	uint64_t seqcutoff;	/* bytes, 0 = off */
	char *promote_rate_str;
	uint64_t promote_rate;	/* bytes/s, 0 = unlimited */
	char *write_budget_str;
	uint64_t write_budget;	/* bytes/day the store may write, 0 = off */
	unsigned max_read;	/* -o max_read= (libfuse's), 0 = none */
	char *read_ahead_str;
	uint64_t read_ahead;	/* the kernel's read-ahead for the mount,
				 * bytes; 0 = its default */
	char *threshold_str;
	int threshold;		/* accesses before promotion */
	char *writemode_str;
	enum hotfs_writemode writemode;
	char *writeback_delay_str;
	double writeback_delay;	/* seconds dirty data is held at least */
	char *writeback_log_str;
	uint64_t writeback_log;	/* the log's bytes; 0: HOTFS_WBLOG_DEFAULT */
	char *dirty_high_str, *dirty_low_str;
	unsigned dirty_high;	/* % of the writeback log in use: flush */
	unsigned dirty_low;	/* flat out from high down to low */
	char *revalidate_str;
	enum hotfs_revalidate revalidate;
	double revalidate_secs;
	char *snapshot_interval_str;
	double snapshot_interval; /* seconds between metadata snapshots */
	char *attr_timeout_str;
	double attr_timeout;
	char *entry_timeout_str;
	double entry_timeout;
	int reset;		/* -o reset: empty a foreign/old cachedir */
	int nocache;		/* -o nocache: plain passthrough, no store */
	int nowatch;		/* -o nowatch: no inotify on the source */
	int cache_required;	/* -o cache_required: no store, no mount */
	int nonempty;		/* -o nonempty: mount over what is there */
	char *ctldir;		/* name of the virtual control directory */
	char *inode_cache_str;
	uint64_t inode_cache;	/* forgotten inodes kept open */
	char *fuse_uring_str;	/* -o fuse_uring=on|off|auto */
	int fuse_uring_flag;	/* -o fuse_uring alone: on */
	enum hotfs_fuse_uring fuse_uring;
	bool fuse_uring_asked;	/* libfuse asked for it (-o io_uring) */
	/* fuse_uring_decide()'s why ("on", or why it is off); FUSE_INIT
	 * says when the kernel did not offer it after all */
	const char *fuse_uring_why;
	char *passthrough_str;	/* -o passthrough=on|off|auto */
	enum hotfs_passthrough passthrough;
	/* pt_decide()'s (hotfs/passthrough.h): ask the kernel for it, and
	 * why ("on", or why it is off); FUSE_INIT and the first backing
	 * file may still turn it off */
	bool passthrough_on;
	const char *passthrough_why;
	bool passthrough_checked;	/* the cachedir is Btrfs: auto's */
	char *passthrough_min_str;	/* -o passthrough_min=SIZE */
	uint64_t passthrough_min;	/* smaller files get no copy */
	char *scrub_rate_str;	/* -o scrub_rate=RATE */
	uint64_t scrub_rate;	/* bytes/s, 0: none; UINT64_MAX: as the
				 * cachedir's filesystem wants */
	int allow_other;	/* seen, and left for fuse_session_new */
	int default_permissions;
	int ro;			/* -o ro: seen, and left for libfuse */

	int foreground;
	int debug;
	int singlethread;
	int show_help;
	int show_version;
	int clone_fd;
	unsigned max_idle_threads;
};

/* "forever" for the kernel's caches: a year */
#define HOTFS_TIMEOUT_NEVER	(365.0 * 86400)

#define HOTFS_INODE_CACHE_DEFAULT 100000
/* dirty_high=, dirty_low= (dm-writecache's defaults): half the writeback
 * log absorbs bursts, and each flat-out flush frees 5% of it (13 MiB of
 * the 256 MiB log: a dozen 1 MiB runs) before the source is left alone */
#define HOTFS_DIRTY_HIGH	50u
#define HOTFS_DIRTY_LOW		45u
#define HOTFS_PROMOTE_RATE_DEFAULT (8ull << 20)
/* The kernel reads a file of a FUSE mount at most max_pages (1 MiB with
 * libfuse) per request, and ahead of a reader by its bdi's read_ahead_kb,
 * 128 KiB by default: the default makes sequential reads 128-256 KiB
 * requests. */
#define HOTFS_READ_AHEAD_DEFAULT (1ull << 20)
#define HOTFS_READ_AHEAD_MAX (64ull << 20)

#define HOTFS_EXTENT_MIN	(4u * 1024)
#define HOTFS_EXTENT_MAX	(4u * 1024 * 1024)
#define HOTFS_EXTENT_DEFAULT	(256u * 1024)
/* writeback_log= (the writeback log, hotfs/wblog.h) */
#define HOTFS_WBLOG_DEFAULT	(256ull << 20)
#define HOTFS_WBLOG_MIN		(1ull << 20)
#define HOTFS_WBLOG_MAX		(1ull << 40)

/*
 * Fill o from args (hotfs's own keys are removed from args; what remains
 * is for fuse_session_new).  Generic mount(8) keywords are dropped.
 * Returns 0, or -EINVAL with a one-line message in err.
 */
int opt_parse(struct fuse_args *args, struct hotfs_opts *o,
	      char *err, size_t errlen);

/*
 * Check o against the filesystem: source and mountpoint are directories;
 * the mountpoint is empty and not a hotfs mount already (unless
 * nonempty), nor a dead FUSE mount; cachedir is given, its parent
 * exists, and it lies neither inside the source nor inside the
 * mountpoint.  Touches nothing: the store creates the cachedir
 * (st_open's caller), and a cachedir it cannot use costs the cache, not
 * the mount.
 */
int opt_validate(struct hotfs_opts *o, char *err, size_t errlen);

void opt_free(struct hotfs_opts *o);
void opt_help(void);

#endif
