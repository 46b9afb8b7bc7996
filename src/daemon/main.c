// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfs: a FUSE filesystem that mounts over a slow directory tree and
 * caches its hot extents on a fast device.
 *
 *   hotfs SOURCE MOUNTPOINT -o cachedir=DIR[,option...]
 *
 * main() parses and checks the options, opens the source, mounts, then
 * daemonizes (unless -f) and runs the multithreaded session loop.  Every
 * error before the mount is one line on stderr and exit status 1, except
 * a cache store that cannot be used (damaged, foreign, in use, read-only,
 * full, too small, a failing device): a cache must never make the tree
 * unavailable, so the source is then mounted without the store (state
 * off, with the reason: one line on stderr, and in the log), as when the
 * device fails while mounted.  -o cache_required refuses the mount
 * instead.  A store is never reset unless the user says -o reset.
 * SIGTERM, SIGINT, SIGHUP and umount end the loop; the exit status is 0.
 *
 * Decision: with allow_other, hotfs adds default_permissions, so that the
 * kernel checks permissions against the source's modes; without it any
 * user could read through the root daemon whatever the daemon can read.
 * And the mount forbids what the source's mounts forbid (nosuid, nodev,
 * noexec, ro: add_source_forbids), however it was mounted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "config.h"
#include "hotfs/bdi.h"
#include "hotfs/dirlist.h"
#include "hotfs/fileio.h"
#include "hotfs/fs.h"
#include "hotfs/handle.h"
#include "hotfs/log.h"
#include "hotfs/meta_fs.h"
#include "hotfs/mountinfo.h"
#include "hotfs/tick.h"
#include "hotfs/watch.h"
#include "hotfs/opts.h"
#include "hotfs/srcprobe.h"
#include "hotfs/wb.h"
#include "hotfs/wbmark.h"
#include "hotfs/store.h"

static void usage(const char *prog)
{
	printf("usage: %s SOURCE MOUNTPOINT -o cachedir=DIR[,options]\n\n",
	       prog);
	printf("general options:\n"
	       "    -o opt,[opt...]        mount options\n"
	       "    -h   --help            print help\n"
	       "    -V   --version         print version\n\n");
}

/*
 * One O_PATH fd per inode the kernel remembers (and per retained inode):
 * as many as the system allows.  Root may raise the hard limit up to
 * fs.nr_open.  Returns the soft limit now in force.
 */
static rlim_t raise_nofile(void)
{
	unsigned long nr_open = 0;
	struct rlimit r;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &r) != 0)
		return 1024;
	f = fopen("/proc/sys/fs/nr_open", "r");
	if (f) {
		if (fscanf(f, "%lu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	if (nr_open > r.rlim_max) {
		struct rlimit want = { nr_open, nr_open };

		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			return nr_open;
	}
	if (r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &r) != 0)
			getrlimit(RLIMIT_NOFILE, &r);
	}
	return r.rlim_cur;
}

static int add_fsname(struct fuse_args *args, const char *source)
{
	char *opts = NULL, *fsname, *abs = realpath(source, NULL);
	int r;


	r = asprintf(&fsname, "fsname=%s", abs ? abs : source);
	free(abs);
	if (r < 0)
		return -1;
	r = fuse_opt_add_opt(&opts, "subtype=hotfs");
	if (r == 0)
		r = fuse_opt_add_opt_escaped(&opts, fsname);
	free(fsname);
	if (r == 0) {
		char *arg;

		if (asprintf(&arg, "-o%s", opts) < 0)
			r = -1;
		else {
			/* first, so that a user's own fsname= wins */
			r = fuse_opt_insert_arg(args, 1, arg);
			free(arg);
		}
	}
	free(opts);
	return r;
}

/*
 * A mount of hotfs never grants more than the source's own mounts: what
 * they forbid (nosuid, nodev, noexec: the source's mount and every mount
 * below it, which the tree crosses into; ro: the source's mount) goes on
 * the FUSE mount, after the user's options so that it wins over theirs
 * and over the suid,dev that mount(8) passes for root.  The kernel, not
 * hotfs, runs a setuid file or opens a device node of a FUSE mount: only
 * the mount's flags stop it.  0, or -1 (said on stderr).
 */
static int add_source_forbids(struct fuse_args *args, struct hotfs_opts *o)
{
	const char *source = o->source;
	static const struct { long flag; const char *arg; } map[] = {
		{ ST_NOSUID, "-onosuid" }, { ST_NODEV, "-onodev" },
		{ ST_NOEXEC, "-onoexec" }, { ST_RDONLY, "-oro" },
	};
	char *dir = realpath(source, NULL);
	struct statvfs sv;
	long fl;
	FILE *f;
	size_t i;

	if (!dir)
		return 0;	/* opt_validate says why */
	f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		fprintf(stderr, "hotfs: cannot read the source's mount flags "
			"from /proc/self/mountinfo: %s\n", strerror(errno));
		free(dir);
		return -1;
	}
	fl = mountinfo_forbids(f, dir);
	fclose(f);
	if (fl >= 0 && statvfs(dir, &sv) == 0)	/* the same, by the kernel */
		fl |= (long)(sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC |
					  ST_RDONLY));
	if (fl < 0)
		fprintf(stderr, "hotfs: source '%s': no mount in "
			"/proc/self/mountinfo holds it\n", dir);
	if (fl > 0 && (fl & ST_RDONLY) && o->writemode == HOTFS_WRITEBACK) {
		fprintf(stderr, "hotfs: writemode=writeback over the "
			"read-only source '%s': nothing could be written back; "
			"mount it without writeback\n", dir);
		fl = -EROFS;
	}
	if (fl > 0 && (fl & ST_RDONLY))
		o->ro = 1;		/* as if -o ro: status shows it */
	free(dir);
	for (i = 0; fl >= 0 && i < sizeof(map) / sizeof(map[0]); i++)
		if ((fl & map[i].flag) && fuse_opt_add_arg(args, map[i].arg))
			return -1;
	return fl < 0 ? -1 : 0;
}

/* Is a FUSE filesystem (this one, aborted) still mounted on mnt? */
static bool fuse_still_mounted(const char *mnt)
{
	struct statfs sf;

	if (statfs(mnt, &sf) == -1)
		return errno == ENOTCONN;	/* aborted, not unmounted */
	return sf.f_type == 0x65735546;		/* FUSE_SUPER_MAGIC */
}

/*
 * The command line into o and copts: 0 to go on, 1 when it was all
 * answered (--help, --version), -1 on an error (said on stderr).
 */
/* FUSE over io_uring asked of libfuse, or not (hotfs/fuse_uring.h):
 * 0, or -1 said (fuse_uring=on that cannot be had). */
static int ask_fuse_uring(struct fuse_args *args, struct hotfs_opts *o)
{
	struct fuse_uring_env env = {
		.param = FUSE_URING_PARAM,
		.built = fuse_uring_built(),
	};
	struct statfs sfs;
	char err[512];
	int r;

	if (o->fuse_uring != HOTFS_FUSE_URING_OFF) {
		env.refused = fuse_uring_refused();
		/* before the mount and the source's probe: its filesystem's
		 * type alone (a statfs that fails leaves it to the mount) */
		env.remote = statfs(o->source, &sfs) == 0 &&
			     srcprobe_fs_remote((long)sfs.f_type);
	}
	r = fuse_uring_decide(o->fuse_uring, &env, &o->fuse_uring_why, err,
			      sizeof(err));
	if (r < 0) {
		fprintf(stderr, "hotfs: %s\n", err);
		return -1;
	}
	o->fuse_uring_asked = r == 1;
	if (r == 1 && fuse_opt_add_arg(args, "-oio_uring") != 0)
		return -1;
	return 0;
}

/* Passthrough wanted, or why not (hotfs/passthrough.h); the scrub's
 * rate where the user set none (Btrfs too: a copy it finds damaged
 * reads EIO, and the scrub removes it). */
static void ask_passthrough(struct hotfs_opts *o)
{
	struct pt_env env = {
		.built = pt_built(),
		.cap = pt_cap_sys_admin(),
		.checked = pt_fs_checked(o->cachedir),
		.cache = !o->nocache && o->cachedir,
		.writeback = o->writemode == HOTFS_WRITEBACK,
	};

	o->passthrough_on = pt_decide(o->passthrough, &env,
				      &o->passthrough_why);
	o->passthrough_checked = env.checked;
	if (o->scrub_rate == UINT64_MAX)
		o->scrub_rate = HOTFS_SCRUB_RATE_DEFAULT;
}

static int parse_args(struct fuse_args *args, struct fuse_cmdline_opts *copts,
		      struct hotfs_opts *o, const char *prog)
{
	char err[512];

	if (opt_parse(args, o, err, sizeof(err)) < 0) {
		fprintf(stderr, "hotfs: %s\n", err);
		return -1;
	}
	if (fuse_parse_cmdline(args, copts) != 0)
		return -1;
	if (o->show_help || copts->show_help) {
		usage(prog);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		opt_help();
		return 1;
	}
	if (o->show_version || copts->show_version) {
		printf("hotfs version %s\n", HOTFS_VERSION);
		/* the system's or the bundled one (meson -Dlibfuse=) */
		printf("libfuse version %s\n", fuse_pkgversion());
		/* before fusermount3, which prints its own line from a
		 * child process */
		fflush(stdout);
		fuse_lowlevel_version();
		return 1;
	}
	if (copts->mountpoint) {
		fprintf(stderr, "hotfs: unexpected argument '%s'\n",
			copts->mountpoint);
		return -1;
	}
	o->foreground = copts->foreground;
	o->debug = copts->debug;
	if (o->debug)
		hotfs_log_level = LOG_DEBUG;
	if (o->allow_other && !o->default_permissions &&
	    fuse_opt_add_arg(args, "-odefault_permissions") != 0)
		return -1;
	if (add_fsname(args, o->source) != 0 ||
	    add_source_forbids(args, o) != 0)
		return -1;
	ask_passthrough(o);
	return ask_fuse_uring(args, o);
}

/* Before anything looks a name up in the source (hotfs/srcprobe.h). */
static void probe_source(int root_fd, const struct hotfs_opts *o)
{
	int dfd = -1;

	if (!o->nocache && o->cachedir) {
		/* the store says why, if it is refused */
		dfd = dir_open_owned(o->cachedir, 0, NULL, 0);
		if (dfd >= 0 && o->reset)
			unlinkat(dfd, PROBE_FILE, 0);
	}
	srcprobe_run(root_fd, dfd, &hotfs_src);
	if (dfd >= 0)
		close(dfd);
}

/* writeback's host (hotfs/wb.h): the flusher found a change behind the
 * mount, the kernel's copy of in is stale */
static void wb_host_inval(void *arg, struct hotfs_inode *in)
{
	struct hotfs *fs = arg;

	if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se,
			in == ino_root(fs->it) ? FUSE_ROOT_ID :
			(uintptr_t)in, 0, 0);
}

/* the flusher wrote a file no inode names */
static void wb_host_changed(void *arg)
{
	meta_fs_change(arg, NULL, NULL);
}

/*
 * Open the store.  A cache must never make the tree unavailable: without
 * a usable store the mount goes on (the store off, said on stderr and in
 * the log), as when it fails while mounted, unless the user asked for a
 * mount with a cache or none (cache_required).  0, or -1 to refuse the
 * mount.
 */
static int open_cache(struct hotfs *fs, const struct hotfs_opts *o)
{
	/* dirty data an earlier writeback mount left (a crash): written
	 * to the source first, whatever this mount's mode, or no mount (a
	 * mount that ignored it would serve the older bytes, and a later
	 * writeback mount would replay them over newer ones) */
	bool left = o->writemode != HOTFS_WRITEBACK &&
		    wb_leftover(o->cachedir);
	struct wb_host h;
	char err[512];
	int r;

	r = cache_open(&fs->cache, o, fs->root_fd, err, sizeof(err));
	/* writeback keeps its dirty data in the cachedir: a mount without
	 * the store would lose sight of it */
	if (r < 0 && (o->cache_required || r == -ENOMEM ||
		      o->writemode == HOTFS_WRITEBACK || left)) {
		fprintf(stderr, "hotfs: %s\n", err);
		return -1;
	}
	if (r < 0) {
		fs->cache_off = strdup(err);
		clock_gettime(CLOCK_REALTIME, &fs->cache_off_since);
		/* where the user looks: the mount command's stderr (the
		 * log, in the foreground) */
		hotfs_log(LOG_ERR, "%s; cache is off (hotfsctl store on "
			  "MOUNT, once fixed)\n", err);
		return 0;
	}
	if (!cache_usable(fs->cache, err, sizeof(err))) {
		if (o->cache_required || o->writemode == HOTFS_WRITEBACK ||
		    left) {
			fprintf(stderr, "hotfs: %s\n", err);
			return -1;
		}
		hotfs_log(LOG_ERR, "%s\n", err);
	}
	/* the store is the daemon's: the source's sample goes beside it
	 * (hotfs/srcprobe.h) */
	srcprobe_save(fs->cache->dirfd, &hotfs_src);
	h = (struct wb_host){ .o = o, .it = fs->it, .cache = fs->cache,
			      .root_fd = fs->root_fd, .inval = wb_host_inval,
			      .changed = wb_host_changed, .arg = fs };
	if (o->writemode == HOTFS_WRITEBACK ?
	    wb_open(&fs->wb, &h, err, sizeof(err)) < 0 :
	    left && wb_drain(&h, err, sizeof(err)) < 0) {
		fprintf(stderr, "hotfs: %s\n", err);
		return -1;
	}
	fs->left_drained = left;
	return 0;
}

/* The mark names this cachedir, whose log is written to the source now
 * (wb_drain) or was (a crash after its last flush): removed. */
static void unmark(struct hotfs *fs, const struct hotfs_opts *o)
{
	int dfd = openat(fs->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = dfd < 0 ? -errno : wbmark_clear(dfd);

	if (dfd >= 0)
		close(dfd);
	if (r < 0)
		hotfs_log(LOG_ERR, "%s/%s could not be removed: %s\n",
			  o->source, WBMARK_NAME, strerror(-r));
}

/*
 * The cachedir and the source's mark, then the store: a log of dirty data
 * a mount would bypass refuses it, and the mark goes once its log is
 * written.  0, or -1 to refuse the mount (said on stderr).
 */
static int setup_store(struct hotfs *fs, const struct hotfs_opts *o)
{
	char err[512];
	int marked;

	if (o->nocache && o->cachedir && wb_leftover(o->cachedir)) {
		fprintf(stderr, "hotfs: the cachedir's log holds dirty data "
			"of a writeback mount: mount without nocache (it is "
			"written to the source first)\n");
		return -1;
	}
	/* a cachedir elsewhere holds dirty data of this source: refused,
	 * whatever the mode (hotfs/wbmark.h) */
	marked = wbmark_check(fs->root_fd, o->source,
			      o->nocache ? NULL : o->cachedir, err,
			      sizeof(err));
	if (marked < 0) {
		fprintf(stderr, "hotfs: %s\n", err);
		return -1;
	}
	if (!o->nocache && open_cache(fs, o) < 0)
		return -1;
	if (marked && o->writemode != HOTFS_WRITEBACK && !fs->cache_off)
		unmark(fs, o);
	free(hotfs_src.sample);		/* not kept: no store */
	hotfs_src.sample = NULL;
	return 0;
}

/* The threads, after daemonizing (threads do not survive a fork). */
static int start_threads(struct hotfs *fs, struct hotfs_tick **tick)
{
	int r;

	if (fs->cache) {
		r = cache_start(fs->cache, fs->it, fs->proc_self_fd);
		if (r < 0) {
			hotfs_log(LOG_ERR, "promotion thread: %s\n",
				  strerror(-r));
			return r;
		}
	}
	r = wb_start(fs->wb, fs->proc_self_fd);
	if (r < 0) {
		hotfs_log(LOG_ERR, "writeback flusher: %s\n", strerror(-r));
		return r;
	}
	/* the store's group commit, the inode sweep, the counts */
	r = tick_start(tick, fs);
	if (r < 0) {
		hotfs_log(LOG_ERR, "tick thread: %s\n", strerror(-r));
		return r;
	}
	r = meta_fs_start(fs);
	if (r < 0) {
		hotfs_log(LOG_ERR, "metadata snapshot thread: %s\n",
			  strerror(-r));
		return r;
	}
	if (fs->watch) {
		r = watch_start(fs->watch, fs->se);
		if (r < 0) {
			hotfs_log(LOG_ERR, "source watch thread: %s\n",
				  strerror(-r));
			return r;
		}
	}
	return 0;
}

/*
 * The daemon's own threads, started with the signals that end the loop
 * blocked (they inherit it, and so do the threads they start): those go
 * to the main thread, which waits in the loop.  libfuse's handler, run
 * on another thread, would end the session but wake no loop: the daemon
 * stayed, mounted, until the next request (libfuse's workers block every
 * signal likewise).
 */
static int start_threads_quiet(struct hotfs *fs, struct hotfs_tick **tick)
{
	sigset_t stop, old;
	int r;

	sigemptyset(&stop);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	r = start_threads(fs, tick);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* Serve until unmounted or signalled: the exit status. */
static int run_loop(struct fuse_session *se,
		    const struct fuse_cmdline_opts *copts,
		    const struct hotfs_opts *o)
{
	struct fuse_loop_config *lcfg;
	int r;

	if (copts->singlethread) {
		r = fuse_session_loop(se);
	} else {
		lcfg = fuse_loop_cfg_create();
		if (!lcfg) {
			r = -ENOMEM;
		} else {
			fuse_loop_cfg_set_clone_fd(lcfg, copts->clone_fd);
			if (copts->max_idle_threads != UINT_MAX)
				fuse_loop_cfg_set_idle_threads(lcfg,
						copts->max_idle_threads);
			fuse_loop_cfg_set_max_threads(lcfg,
				copts->max_threads > 16 ? copts->max_threads :
				16);
			r = fuse_session_loop_mt(se, lcfg);
			fuse_loop_cfg_destroy(lcfg);
		}
	}
	/* a signal handled by libfuse ends the loop with its number; an
	 * unmount that races a worker taking a request ends it with
	 * ECONNABORTED (libfuse knows only ENODEV): clean if the mount is
	 * gone, an abort (/sys/fs/fuse/connections) if it is still there */
	if (r == -ECONNABORTED && !fuse_still_mounted(o->mountpoint))
		r = 0;
	if (r == 0 || r == SIGTERM || r == SIGINT || r == SIGHUP)
		return 0;
	hotfs_log(LOG_ERR, "session loop ended: %s\n",
		  r < 0 ? strerror(-r) : strsignal(r));
	return 1;
}

/* The mount, in the log, with what the user should know of its store. */
static void announce(struct hotfs *fs, const struct hotfs_opts *o)
{
	char err[512];

	hotfs_log(LOG_INFO, "mounted %s on %s\n", o->source, o->mountpoint);
	/* said on stderr before daemonizing; now in syslog too */
	if (!o->foreground && fs->cache_off)
		hotfs_log(LOG_ERR, "%s; cache is off (hotfsctl store on "
			  "MOUNT, once fixed)\n", fs->cache_off);
	else if (!o->foreground && fs->cache &&
		 !cache_usable(fs->cache, err, sizeof(err)))
		hotfs_log(LOG_ERR, "%s\n", err);
	if (!hotfs_src.ids_kept && fs->cache)
		hotfs_log(LOG_NOTICE, "cache not kept across restarts: this "
			  "source's inode numbers are not persistent (%s)\n",
			  hotfs_src.why);
}

/*
 * Everything the mount needs before it is mounted: the source watch, the
 * listings and their snapshot, who may use the control files, and the
 * descriptor budgets.
 */
static void prepare(struct hotfs *fs, const struct hotfs_opts *o)
{
	rlim_t nofile;
	int r;

	if (o->revalidate == HOTFS_REVAL_OPEN && !o->nowatch) {
		r = watch_new(&fs->watch, fs->it);
		if (r < 0)	/* the short timeouts still hold */
			hotfs_log(LOG_WARNING, "source watch: %s\n",
				  strerror(-r));
		else
			watch_cover_dir(fs->watch, ino_root(fs->it));
	}
	/* listings live in retained inodes (swept by the promotion
	 * thread's tick): both or neither; on a remote source, whose
	 * directory stamps are the lower client's cached copies, only
	 * trusted by time (revalidate=N, hotfs/dirlist.h) */
	fs->listings = fs->cache && o->inode_cache &&
		       (!hotfs_src.remote ||
			o->revalidate == HOTFS_REVAL_SECONDS);
	/* the metadata snapshot goes with stamped ones: it is made of
	 * listings */
	if (fs->listings && !hotfs_src.remote) {
		meta_fs_open(fs);
		/* the snapshot's records of the files the replayed log
		 * holds dirty data of go (hotfs/wb.h) */
		if (wb_dirty_files(fs->wb))
			meta_fs_drop_changing(fs, wb_holds_dirty, fs->wb);
	}
	fs->as_root = geteuid() == 0;
	fs->ctldir = o->ctldir;
	fs->owner_uid = getuid();
	fs->owner_gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs->mount_time);
	umask(0);		/* the kernel applied the caller's umask */
	nofile = raise_nofile();
	/*
	 * The inode table's O_PATH fds, retained or known to the kernel,
	 * stay within three quarters of the limit (past it, retained inodes
	 * go and the fds of idle ones are closed, to be reopened by file
	 * handle: inode.c); watched directories, which hold an fd each, an
	 * eighth; the last eighth is for open files, directories being
	 * read, the store and io_uring.  (Where the hard limit cannot be
	 * raised, 20,000 say, half of it left a 13,000-inode tree partly
	 * forgotten after each drop_caches.)
	 */
	if (fs->cache)
		ino_set_retain(fs->it, o->inode_cache);
	ino_set_fd_budget(fs->it, nofile - nofile / 4);
	watch_set_max_dirs(fs->watch, nofile / 8);
}

/* The allocator's settings for a daemon of many threads, first. */
static void tune_malloc(void)
{
	/* two malloc arenas, not one per thread: with a FUSE worker pool
	 * the daemon's RSS otherwise creeps up under load (each arena keeps
	 * its own free memory) */
	mallopt(M_ARENA_MAX, 2);
	/* and read buffers (up to 1 MiB per request) taken from memory the
	 * arenas keep: with the default, dynamic thresholds each cached read
	 * grew and trimmed the heap, and faulted its pages in afresh
	 * (page faults and brk in the profile of a cached cp) */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

/*
 * What the steps from the inode table on built, freed once no request
 * comes any more: the metadata snapshot (written), the handles and
 * listings, writeback, the store, the watch, then the table.
 */
static void free_fs(struct hotfs *fs)
{
	meta_fs_close(fs);	/* writes it: the tree is still here */
	fh_free_all();
	vd_free_snapshots();
	vd_free_all();
	dir_free_all();
	/* before the table: it holds inodes ("store on" may have opened
	 * it; the session's threads are gone) */
	wb_close(fs->wb);
	fs->wb = NULL;
	cache_close(fs_cache(fs));
	watch_free(fs->watch);
	ino_table_free(fs->it);
}

/*
 * The steps in order, and their unwinding in reverse at the labels (as
 * libfuse's passthrough_ll.c): each step is a function above, and what
 * is left here is the order, which reads best in one place.
 */
int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts = { 0 };
	struct fuse_session *se = NULL;
	struct hotfs_tick *tick = NULL;
	struct hotfs_opts o = { 0 };
	struct hotfs fs = { .o = &o, .root_fd = -1, .proc_self_fd = -1,
			    .cache_lock = PTHREAD_MUTEX_INITIALIZER };
	char err[512];
	int ret = 1, r;

	tune_malloc();
	log_init();
	r = parse_args(&args, &copts, &o, argv[0]);
	if (r) {
		ret = r > 0 ? 0 : 1;
		goto out0;
	}

	se = fuse_session_new(&args, &hotfs_ll_ops, sizeof(hotfs_ll_ops),
			      &fs);
	if (!se)
		goto out0;	/* libfuse said why, through our log sink */
	fs.se = se;
	if (opt_validate(&o, err, sizeof(err)) < 0) {
		fprintf(stderr, "hotfs: %s\n", err);
		goto out1;
	}
	fs.root_fd = open(o.source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fs.root_fd == -1) {
		fprintf(stderr, "hotfs: source '%s': %s\n", o.source,
			strerror(errno));
		goto out1;
	}
	probe_source(fs.root_fd, &o);
	r = ino_table_new(&fs.it, fs.root_fd);
	if (r < 0) {
		fprintf(stderr, "hotfs: inode table: %s\n", strerror(-r));
		goto out2;
	}
	if (setup_store(&fs, &o) < 0)
		goto out3;
	fs.root_fd = -1;	/* owned by the table now */
	prepare(&fs, &o);

	if (fuse_set_signal_handlers(se) != 0)
		goto out3;
	if (fuse_session_mount(se, o.mountpoint) != 0)
		goto out4;
	/* for the kernel's read-ahead, which the init callback sets (its
	 * bdi is named after it); read from mountinfo, which asks the new
	 * mount nothing */
	fs.mount_dev_known = o.read_ahead &&
			     bdi_mount_dev(o.mountpoint, &fs.mount_dev) == 0;
	if (fuse_daemonize(o.foreground) != 0)
		goto out5;
	if (!o.foreground)
		log_to_syslog();
	/* after the fork: /proc/self is the daemon's from here on */
	fs.proc_self_fd = open("/proc/self/fd", O_PATH | O_CLOEXEC);
	if (fs.proc_self_fd == -1) {
		hotfs_log(LOG_ERR, "/proc/self/fd: %s\n", strerror(errno));
		goto out5;
	}
	if (start_threads_quiet(&fs, &tick) < 0)
		goto out5;
	announce(&fs, &o);

	ret = run_loop(se, &copts, &o);
	hotfs_log(LOG_INFO, "unmounting %s\n", o.mountpoint);
out5:
	tick_stop(tick);
	watch_stop(fs.watch);	/* it writes to the session's device */
	fuse_session_unmount(se);
	/* no request comes any more: the dirty data to the source, before
	 * the daemon exits (the source is then whole) */
	if (wb_stop(fs.wb) < 0 && !ret)
		ret = 1;
out4:
	fuse_remove_signal_handlers(se);
out3:
	free_fs(&fs);
out2:
	if (fs.proc_self_fd != -1)
		close(fs.proc_self_fd);
	if (fs.root_fd != -1)
		close(fs.root_fd);
out1:
	fuse_session_destroy(se);
out0:
	free(fs.cache_off);
	free(copts.mountpoint);
	fuse_opt_free_args(&args);
	opt_free(&o);
	return ret;
}
