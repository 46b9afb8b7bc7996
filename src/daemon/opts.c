// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Option parsing and validation.
 *
 * hotfs's keys are parsed by one fuse_opt table into struct hotfs_opts and
 * removed from the argument list; the keywords mount(8) and mount.fuse3
 * pass from an fstab line (rw, defaults, nofail, _netdev, noauto, user,
 * x-systemd.*, comment=...) are dropped; everything else is left for
 * fuse_parse_cmdline() and fuse_session_new(), which reject what they do
 * not know.  Nothing here changes the disk: opt_validate() only looks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <fuse_opt.h>

#include "hotfs/ctl_keys.h"
#include "hotfs/textfmt.h"
#include "hotfs/mountinfo.h"
#include "hotfs/filecopy.h"
#include "hotfs/opts.h"
#include "hotfs/policy.h"

#define HOTFS_OPT(t, p, v) { t, offsetof(struct hotfs_opts, p), v }

enum {
	KEY_DISCARD,
	KEY_HELP,
	KEY_VERSION,
	KEY_ALLOW_OTHER,
	KEY_DEFAULT_PERMISSIONS,
	KEY_MAX_READ,
	KEY_REMOUNT,
	KEY_RO,
};

static const struct fuse_opt opt_table[] = {
	HOTFS_OPT("cachedir=%s", cachedir, 0),
	HOTFS_OPT("cachesize=%s", cachesize_str, 0),
	HOTFS_OPT("extent=%s", extent_str, 0),
	HOTFS_OPT("threshold=%s", threshold_str, 0),
	HOTFS_OPT("seqcutoff=%s", seqcutoff_str, 0),
	HOTFS_OPT("promote_rate=%s", promote_rate_str, 0),
	HOTFS_OPT("write_budget=%s", write_budget_str, 0),
	HOTFS_OPT("read_ahead=%s", read_ahead_str, 0),
	HOTFS_OPT("writemode=%s", writemode_str, 0),
	HOTFS_OPT("writeback_delay=%s", writeback_delay_str, 0),
	HOTFS_OPT("writeback_log=%s", writeback_log_str, 0),
	HOTFS_OPT("dirty_high=%s", dirty_high_str, 0),
	HOTFS_OPT("dirty_low=%s", dirty_low_str, 0),
	HOTFS_OPT("revalidate=%s", revalidate_str, 0),
	HOTFS_OPT("snapshot_interval=%s", snapshot_interval_str, 0),
	HOTFS_OPT("attr_timeout=%s", attr_timeout_str, 0),
	HOTFS_OPT("entry_timeout=%s", entry_timeout_str, 0),
	HOTFS_OPT("reset", reset, 1),
	HOTFS_OPT("nocache", nocache, 1),
	HOTFS_OPT("nowatch", nowatch, 1),
	HOTFS_OPT("cache_required", cache_required, 1),
	HOTFS_OPT("nonempty", nonempty, 1),
	HOTFS_OPT("ctldir=%s", ctldir, 0),
	HOTFS_OPT("inode_cache=%s", inode_cache_str, 0),
	HOTFS_OPT("fuse_uring=%s", fuse_uring_str, 0),
	HOTFS_OPT("fuse_uring", fuse_uring_flag, 1),
	HOTFS_OPT("passthrough=%s", passthrough_str, 0),
	HOTFS_OPT("scrub_rate=%s", scrub_rate_str, 0),
	HOTFS_OPT("passthrough_min=%s", passthrough_min_str, 0),
	FUSE_OPT_KEY("rw", KEY_DISCARD),
	FUSE_OPT_KEY("defaults", KEY_DISCARD),
	FUSE_OPT_KEY("auto", KEY_DISCARD),
	FUSE_OPT_KEY("noauto", KEY_DISCARD),
	FUSE_OPT_KEY("nofail", KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", KEY_DISCARD),
	FUSE_OPT_KEY("user", KEY_DISCARD),
	FUSE_OPT_KEY("nouser", KEY_DISCARD),
	FUSE_OPT_KEY("users", KEY_DISCARD),
	FUSE_OPT_KEY("owner", KEY_DISCARD),
	FUSE_OPT_KEY("group", KEY_DISCARD),
	FUSE_OPT_KEY("comment=", KEY_DISCARD),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
	FUSE_OPT_KEY("max_read=", KEY_MAX_READ),
	FUSE_OPT_KEY("remount", KEY_REMOUNT),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

struct parse_ctx {
	struct hotfs_opts *o;
	char *err;
	size_t errlen;
	int failed;
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* fuse_opt stores fields relative to its data pointer, so the
 * message buffer travels beside it rather than through it. */
static __thread struct parse_ctx *cur_ctx;

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct parse_ctx *c = cur_ctx;

	(void)data;
	(void)outargs;
	switch (key) {
	case KEY_DISCARD:
		return 0;
	case KEY_HELP:
		c->o->show_help = 1;
		return 0;
	case KEY_VERSION:
		c->o->show_version = 1;
		return 0;
	case KEY_REMOUNT:
		/* mount -o remount,... runs mount.fuse3, which starts a
		 * second daemon with these options; the running one is never
		 * told (the kernel keeps a FUSE remount's options to itself) */
		if (!c->failed) {
			char keys[256];

			ctl_keys_list(keys, sizeof(keys));
			seterr(c->err, c->errlen,
			       "-o remount: a running hotfs takes no options from mount(8); change them with: hotfsctl set MOUNTPOINT KEY=VALUE (%s; others need umount and mount)",
			       keys);
		}
		c->failed = 1;
		return -1;
	case KEY_ALLOW_OTHER:
		c->o->allow_other = 1;
		return 1;
	case KEY_DEFAULT_PERMISSIONS:
		c->o->default_permissions = 1;
		return 1;
	case KEY_RO:
		c->o->ro = 1;
		return 1;
	case KEY_MAX_READ: {
		/* a mount option of libfuse's, kept for it, that the init
		 * callback must repeat (libfuse refuses the session
		 * otherwise) */
		const char *v = arg + strlen("max_read=");
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(v, &end, 10);
		if (errno || end == v || *end || *v == '-' || n > UINT_MAX) {
			if (!c->failed)
				seterr(c->err, c->errlen,
				       "invalid max_read '%s': expected bytes",
				       v);
			c->failed = 1;
			return -1;
		}
		c->o->max_read = (unsigned)n;
		return 1;
	}
	case FUSE_OPT_KEY_OPT:
		/* x-systemd.automount, x-gvfs-show, ...: for mount(8) only */
		if (strncmp(arg, "x-", 2) == 0)
			return 0;
		return 1;
	case FUSE_OPT_KEY_NONOPT:
		if (!c->o->source) {
			c->o->source = strdup(arg);
			return c->o->source ? 0 : -1;
		}
		if (!c->o->mountpoint) {
			c->o->mountpoint = strdup(arg);
			return c->o->mountpoint ? 0 : -1;
		}
		if (!c->failed)
			seterr(c->err, c->errlen,
			       "unexpected argument '%s' (usage: hotfs SOURCE MOUNTPOINT -o cachedir=DIR)",
			       arg);
		c->failed = 1;
		return -1;
	default:
		return 1;
	}
}

static int parse_sizes(struct hotfs_opts *o, char *err, size_t errlen)
{
	uint64_t v;
	int r;

	if (o->cachesize_str) {
		r = opt_parse_size(o->cachesize_str, &o->cachesize,
				   &o->cachesize_pct);
		if (r < 0 || (!o->cachesize && !o->cachesize_pct)) {
			seterr(err, errlen,
			       "invalid cachesize '%s': expected a size (e.g. 20G) or a percentage (1%%..100%%)",
			       o->cachesize_str);
			return -EINVAL;
		}
		if (o->cachesize && o->cachesize < 16ull << 20) {
			seterr(err, errlen,
			       "invalid cachesize '%s': at least 16M",
			       o->cachesize_str);
			return -EINVAL;
		}
	}
	if (o->writeback_log_str &&
	    (opt_parse_size(o->writeback_log_str, &o->writeback_log,
			    NULL) < 0 || o->writeback_log < HOTFS_WBLOG_MIN ||
	     o->writeback_log > HOTFS_WBLOG_MAX)) {
		seterr(err, errlen,
		       "invalid writeback_log '%s': a size from 1M to 1T",
		       o->writeback_log_str);
		return -EINVAL;
	}
	o->extent = HOTFS_EXTENT_DEFAULT;
	if (o->extent_str) {
		r = opt_parse_size(o->extent_str, &v, NULL);
		if (r < 0 || v < HOTFS_EXTENT_MIN || v > HOTFS_EXTENT_MAX ||
		    (v & (v - 1))) {
			seterr(err, errlen,
			       "invalid extent '%s': a power of two from 4K to 4M",
			       o->extent_str);
			return -EINVAL;
		}
		o->extent = (uint32_t)v;
	}
	if (o->seqcutoff_str &&
	    opt_parse_size(o->seqcutoff_str, &o->seqcutoff, NULL) < 0) {
		seterr(err, errlen, "invalid seqcutoff '%s': expected a size (0 = off)",
		       o->seqcutoff_str);
		return -EINVAL;
	}
	o->promote_rate = HOTFS_PROMOTE_RATE_DEFAULT;
	if (o->promote_rate_str &&
	    opt_parse_size(o->promote_rate_str, &o->promote_rate, NULL) < 0) {
		seterr(err, errlen,
		       "invalid promote_rate '%s': expected bytes per second (e.g. 50M, 0 = unlimited)",
		       o->promote_rate_str);
		return -EINVAL;
	}
	if (o->write_budget_str &&
	    opt_parse_per_day(o->write_budget_str, &o->write_budget) < 0) {
		seterr(err, errlen,
		       "invalid write_budget '%s': expected bytes per day (e.g. 200G or 200G/day, 0 = off)",
		       o->write_budget_str);
		return -EINVAL;
	}
	o->read_ahead = HOTFS_READ_AHEAD_DEFAULT;
	if (o->read_ahead_str &&
	    (opt_parse_size(o->read_ahead_str, &o->read_ahead, NULL) < 0 ||
	     (o->read_ahead &&
	      (o->read_ahead < 4096 || o->read_ahead > HOTFS_READ_AHEAD_MAX)))) {
		seterr(err, errlen,
		       "invalid read_ahead '%s': a size from 4K to 64M (0 = the kernel's default)",
		       o->read_ahead_str);
		return -EINVAL;
	}
	return 0;
}

static int parse_long(const char *s, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	return 0;
}

/* A share of the writeback log in percent (dirty_high=, dirty_low=):
 * 1..99; 0 or -EINVAL with err. */
static int parse_pct(const char *name, const char *s, unsigned *v,
		     char *err, size_t errlen)
{
	long l;

	if (parse_long(s, &l) < 0 || l < 1 || l > 99) {
		seterr(err, errlen, "invalid %s '%s': a percentage of the "
		       "writeback log, 1..99", name, s);
		return -EINVAL;
	}
	*v = (unsigned)l;
	return 0;
}

/* dirty_high= and dirty_low= (writeback only): 0 < low <= high < 100 */
static int parse_dirty(struct hotfs_opts *o, char *err, size_t errlen)
{
	o->dirty_high = HOTFS_DIRTY_HIGH;
	o->dirty_low = HOTFS_DIRTY_LOW;
	if (o->dirty_high_str && parse_pct("dirty_high", o->dirty_high_str,
					   &o->dirty_high, err, errlen) < 0)
		return -EINVAL;
	if (o->dirty_low_str && parse_pct("dirty_low", o->dirty_low_str,
					  &o->dirty_low, err, errlen) < 0)
		return -EINVAL;
	if ((o->dirty_high_str || o->dirty_low_str) &&
	    o->writemode != HOTFS_WRITEBACK) {
		seterr(err, errlen, "%s= applies to writemode=writeback only",
		       o->dirty_high_str ? "dirty_high" : "dirty_low");
		return -EINVAL;
	}
	/* only one given: the other follows it (the gap of the defaults) */
	if (o->dirty_high_str && !o->dirty_low_str &&
	    o->dirty_low > o->dirty_high)
		o->dirty_low = o->dirty_high > HOTFS_DIRTY_HIGH -
			       HOTFS_DIRTY_LOW ? o->dirty_high -
			       (HOTFS_DIRTY_HIGH - HOTFS_DIRTY_LOW) : 1;
	if (o->dirty_low_str && !o->dirty_high_str &&
	    o->dirty_high < o->dirty_low)
		o->dirty_high = o->dirty_low;
	if (o->dirty_low > o->dirty_high) {
		seterr(err, errlen, "dirty_low=%u is above dirty_high=%u: "
		       "0 < dirty_low <= dirty_high < 100", o->dirty_low,
		       o->dirty_high);
		return -EINVAL;
	}
	return 0;
}

static int parse_secs(const char *name, const char *s, double *v,
		      char *err, size_t errlen)
{
	char *end;

	*v = 1.0;
	if (!s)
		return 0;
	errno = 0;
	*v = strtod(s, &end);
	if (errno || end == s || *end || !(*v >= 0 && *v <= 1e6)) {
		seterr(err, errlen, "invalid %s '%s': 0..1000000 seconds",
		       name, s);
		return -EINVAL;
	}
	return 0;
}

static int parse_passthrough(struct hotfs_opts *o, char *err, size_t errlen)
{
	const char *v = o->passthrough_str;

	o->passthrough = HOTFS_PT_AUTO;
	o->scrub_rate = UINT64_MAX;
	o->passthrough_min = FC_MIN_SIZE;
	if (o->passthrough_min_str &&
	    opt_parse_size(o->passthrough_min_str, &o->passthrough_min,
			   NULL) < 0) {
		seterr(err, errlen, "invalid passthrough_min '%s': expected a "
		       "size (e.g. 64K, 0 = every file)",
		       o->passthrough_min_str);
		return -EINVAL;
	}
	if (o->scrub_rate_str &&
	    opt_parse_size(o->scrub_rate_str, &o->scrub_rate, NULL) < 0) {
		seterr(err, errlen, "invalid scrub_rate '%s': expected bytes "
		       "per second (e.g. 16M, 0 = no scrub)",
		       o->scrub_rate_str);
		return -EINVAL;
	}
	if (!v || strcmp(v, "auto") == 0)
		return 0;
	if (strcmp(v, "on") == 0) {
		o->passthrough = HOTFS_PT_ON;
	} else if (strcmp(v, "off") == 0) {
		o->passthrough = HOTFS_PT_OFF;
	} else {
		seterr(err, errlen, "invalid passthrough '%s': on, off or "
		       "auto", v);
		return -EINVAL;
	}
	return 0;
}

static int parse_fuse_uring(struct hotfs_opts *o, char *err, size_t errlen)
{
	const char *v = o->fuse_uring_str;

	o->fuse_uring = o->fuse_uring_flag ? HOTFS_FUSE_URING_ON :
			HOTFS_FUSE_URING_AUTO;
	if (!v)
		return 0;
	if (strcmp(v, "on") == 0) {
		o->fuse_uring = HOTFS_FUSE_URING_ON;
	} else if (strcmp(v, "off") == 0) {
		o->fuse_uring = HOTFS_FUSE_URING_OFF;
	} else if (strcmp(v, "auto") == 0) {
		o->fuse_uring = HOTFS_FUSE_URING_AUTO;
	} else {
		seterr(err, errlen, "invalid fuse_uring '%s': on, off or auto",
		       v);
		return -EINVAL;
	}
	return 0;
}

static int parse_revalidate(struct hotfs_opts *o, char *err, size_t errlen)
{
	const char *v = o->revalidate_str;
	char *end;

	o->revalidate = HOTFS_REVAL_OPEN;
	if (!v || strcmp(v, "open") == 0)
		return 0;
	if (strcmp(v, "never") == 0) {
		o->revalidate = HOTFS_REVAL_NEVER;
		return 0;
	}
	errno = 0;
	o->revalidate_secs = strtod(v, &end);
	if (errno || end == v || *end || !(o->revalidate_secs > 0 &&
					   o->revalidate_secs <= 1e6)) {
		seterr(err, errlen,
		       "invalid revalidate '%s': open, never or seconds (0 < N <= 1000000)",
		       v);
		return -EINVAL;
	}
	o->revalidate = HOTFS_REVAL_SECONDS;
	return 0;
}

/* writemode= and writeback_delay=; 0 or -EINVAL (err said). */
static int parse_writemode(struct hotfs_opts *o, char *err, size_t errlen)
{
	if (!o->writemode_str || strcmp(o->writemode_str, "writearound") == 0)
		o->writemode = HOTFS_WRITEAROUND;
	else if (strcmp(o->writemode_str, "writethrough") == 0)
		o->writemode = HOTFS_WRITETHROUGH;
	else if (strcmp(o->writemode_str, "writeback") == 0) {
		/* the dirty data lives in the cachedir (hotfs/wblog.h) */
		if (o->nocache || !o->cachedir) {
			seterr(err, errlen, "writemode=writeback needs a cache "
			       "store (-o cachedir=DIR, not nocache): the "
			       "dirty data is kept there");
			return -EINVAL;
		}
		if (o->ro) {
			seterr(err, errlen, "writemode=writeback on a "
			       "read-only mount (ro): nothing is written "
			       "through it; mount without one of them");
			return -EINVAL;
		}
		o->writemode = HOTFS_WRITEBACK;
	} else {
		seterr(err, errlen,
		       "invalid writemode '%s': writearound, writethrough or writeback",
		       o->writemode_str);
		return -EINVAL;
	}
	o->writeback_delay = 0;
	if (o->writeback_delay_str) {
		if (parse_secs("writeback_delay", o->writeback_delay_str,
			       &o->writeback_delay, err, errlen) < 0)
			return -EINVAL;
		if (o->writemode != HOTFS_WRITEBACK) {
			seterr(err, errlen, "writeback_delay= applies to "
			       "writemode=writeback only");
			return -EINVAL;
		}
	}
	return 0;
}

int opt_parse(struct fuse_args *args, struct hotfs_opts *o,
	      char *err, size_t errlen)
{
	struct parse_ctx c = { .o = o, .err = err, .errlen = errlen };
	int r;

	if (err && errlen)
		err[0] = '\0';
	cur_ctx = &c;
	r = fuse_opt_parse(args, o, opt_table, opt_proc);
	cur_ctx = NULL;
	if (r == -1) {
		if (!c.failed)
			seterr(err, errlen, "invalid options");
		return -EINVAL;
	}
	if (o->show_help || o->show_version)
		return 0;
	o->threshold = 2;
	if (o->threshold_str) {
		long v;

		/* the policy's counts saturate at POL_COUNT_MAX */
		if (parse_long(o->threshold_str, &v) < 0 || v < 1 ||
		    v > POL_COUNT_MAX) {
			seterr(err, errlen, "invalid threshold '%s': 1..%u",
			       o->threshold_str, POL_COUNT_MAX);
			return -EINVAL;
		}
		o->threshold = (int)v;
	}
	if (parse_revalidate(o, err, errlen) < 0 ||
	    parse_fuse_uring(o, err, errlen) < 0 ||
	    parse_passthrough(o, err, errlen) < 0)
		return -EINVAL;
	if (parse_secs("attr_timeout", o->attr_timeout_str, &o->attr_timeout,
		       err, errlen) < 0 ||
	    parse_secs("entry_timeout", o->entry_timeout_str,
		       &o->entry_timeout, err, errlen) < 0)
		return -EINVAL;
	o->snapshot_interval = HOTFS_SNAPSHOT_SECS;
	if (o->snapshot_interval_str &&
	    (parse_secs("snapshot_interval", o->snapshot_interval_str,
			&o->snapshot_interval, err, errlen) < 0 ||
	     o->snapshot_interval < 1)) {
		seterr(err, errlen, "invalid snapshot_interval '%s': "
		       "1..1000000 seconds", o->snapshot_interval_str);
		return -EINVAL;
	}
	/* revalidate= sets the kernel's timeouts unless they were given */
	if (o->revalidate != HOTFS_REVAL_OPEN) {
		double t = o->revalidate == HOTFS_REVAL_NEVER ?
			   HOTFS_TIMEOUT_NEVER : o->revalidate_secs;

		if (!o->attr_timeout_str)
			o->attr_timeout = t;
		if (!o->entry_timeout_str)
			o->entry_timeout = t;
	}
	if (parse_writemode(o, err, errlen) < 0)
		return -EINVAL;
	if (parse_dirty(o, err, errlen) < 0)
		return -EINVAL;
	if (parse_sizes(o, err, errlen) < 0)
		return -EINVAL;
	if (o->writeback_log_str && o->writemode != HOTFS_WRITEBACK) {
		seterr(err, errlen, "writeback_log= applies to "
		       "writemode=writeback only");
		return -EINVAL;
	}
	o->inode_cache = HOTFS_INODE_CACHE_DEFAULT;
	if (o->inode_cache_str) {
		long v;

		if (parse_long(o->inode_cache_str, &v) < 0 || v < 0 ||
		    v > 10000000) {
			seterr(err, errlen,
			       "invalid inode_cache '%s': 0..10000000 inodes",
			       o->inode_cache_str);
			return -EINVAL;
		}
		o->inode_cache = (uint64_t)v;
	}
	if (!o->ctldir)
		o->ctldir = strdup(".hotfs");
	if (!o->ctldir || !*o->ctldir || strchr(o->ctldir, '/') ||
	    strcmp(o->ctldir, ".") == 0 || strcmp(o->ctldir, "..") == 0 ||
	    strlen(o->ctldir) > 255) {
		seterr(err, errlen,
		       "invalid ctldir '%s': a single file name",
		       o->ctldir ? o->ctldir : "");
		return -EINVAL;
	}
	if (!o->source || !o->mountpoint) {
		seterr(err, errlen,
		       "missing %s (usage: hotfs SOURCE MOUNTPOINT -o cachedir=DIR)",
		       o->source ? "mountpoint" : "source and mountpoint");
		return -EINVAL;
	}
	return 0;
}

/* Is path equal to or below dir?  Both absolute and canonical. */
static int path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return 1;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Drop the last component of the canonical path p ("/" stays). */
static void strip_last(char *p)
{
	char *last = strrchr(p, '/');

	if (last == p)
		p[1] = '\0';
	else if (last)
		*last = '\0';
}

/*
 * The cachedir made absolute and canonical, as realpath() would where it
 * exists, with "." and ".." past a missing component taken by name.  A
 * symlink on the way is followed only if root or the daemon's user owns
 * it (the rule of fs.protected_symlinks, here in every directory, sticky
 * or not): another user's would let that user choose the directory the
 * daemon makes private and writes into (cache.c opens the result
 * following no symlink at all).  The path, or NULL with errno set (EPERM:
 * such a symlink, its path and owner in bad and *bad_uid).
 */
static char *canon_cachedir(const char *p, char *bad, size_t badlen,
			    uid_t *bad_uid)
{
	char res[PATH_MAX], todo[PATH_MAX], lnk[PATH_MAX], tmp[PATH_MAX];
	bool missing = false;
	const char *rest;
	int hops = 0;

	if (strlen(p) >= sizeof(todo))
		goto too_long;
	strcpy(todo, p);
	if (p[0] == '/')
		strcpy(res, "/");
	else if (!getcwd(res, sizeof(res)))
		return NULL;
	for (rest = todo;;) {
		const char *name;
		struct stat st;
		size_t len, rl;
		ssize_t n;

		rest += strspn(rest, "/");
		if (!*rest)
			break;
		name = rest;
		len = strcspn(rest, "/");
		rest += len;
		if (len == 1 && name[0] == '.')
			continue;
		if (len == 2 && name[0] == '.' && name[1] == '.') {
			strip_last(res);	/* no symlink in res */
			missing = false;
			continue;
		}
		rl = strlen(res);
		if (rl + 1 + len >= sizeof(res))
			goto too_long;
		snprintf(res + rl, sizeof(res) - rl, "%s%.*s",
			 rl > 1 ? "/" : "", (int)len, name);
		if (missing)
			continue;
		if (lstat(res, &st) == -1) {
			if (errno != ENOENT)
				return NULL;
			missing = true;
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			if (!S_ISDIR(st.st_mode) && rest[strspn(rest, "/")]) {
				errno = ENOTDIR;
				return NULL;
			}
			continue;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			snprintf(bad, badlen, "%s", res);
			*bad_uid = st.st_uid;
			errno = EPERM;
			return NULL;
		}
		if (++hops > 40) {
			errno = ELOOP;
			return NULL;
		}
		n = readlink(res, lnk, sizeof(lnk));
		if (n < 0)
			return NULL;
		if ((size_t)n >= sizeof(lnk))
			goto too_long;
		lnk[n] = '\0';
		/* the link's text in its place, then what was left */
		strip_last(res);
		if (lnk[0] == '/')
			strcpy(res, "/");
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", lnk, rest) >=
		    sizeof(tmp))
			goto too_long;
		strcpy(todo, tmp);
		rest = todo;
	}
	return strdup(res);
too_long:
	errno = ENAMETOOLONG;
	return NULL;
}

static int check_dir(const char *what, char **pathp, char *err, size_t errlen)
{
	struct stat st;
	char *r;

	if (stat(*pathp, &st) == -1) {
		seterr(err, errlen, "%s '%s': %s", what, *pathp, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		seterr(err, errlen, "%s '%s': not a directory", what, *pathp);
		return -ENOTDIR;
	}
	r = realpath(*pathp, NULL);
	if (!r) {
		seterr(err, errlen, "%s '%s': %s", what, *pathp, strerror(errno));
		return -errno;
	}
	free(*pathp);
	*pathp = r;
	return 0;
}

/* Is dir (canonical) the mount point of a hotfs mount? */
static bool is_hotfs_mount(const char *dir)
{
	struct mountinfo_ent e;
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return false;
	while (mountinfo_next(f, &line, &cap, &e))
		if (strcmp(e.mnt, dir) == 0)	/* the last one is on top */
			found = strcmp(e.fstype, "fuse.hotfs") == 0;
	free(line);
	fclose(f);
	return found;
}

/*
 * Is the directory dir below the directory top (not top itself)?  Walked
 * up through "..", comparing each parent's device and inode with top's,
 * not names: a path through a symlink, "..", or a bind mount of top
 * (whose mounts may propagate back into top) is below it too.
 */
static bool dir_below(const char *dir, const struct stat *top)
{
	struct stat st, prev;
	bool below = false;
	int fd, up;

	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &prev) == -1)
		goto out;
	for (;;) {
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = up;
		if (fd < 0 || fstat(fd, &st) == -1)
			break;
		/* the root is its own parent */
		if (st.st_dev == prev.st_dev && st.st_ino == prev.st_ino)
			break;
		if (st.st_dev == top->st_dev && st.st_ino == top->st_ino) {
			below = true;
			break;
		}
		prev = st;
	}
out:
	if (fd >= 0)
		close(fd);
	return below;
}

/* Does dir hold anything?  1, 0 or -errno. */
static int dir_has_entries(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int r = 0;

	if (!dp)
		return -errno;
	while ((d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..")) {
			r = 1;
			break;
		}
	closedir(dp);
	return r;
}

/*
 * Mounting over a mount point in use hides what is there: a hotfs mount
 * (a second daemon on the same tree), a directory's files.  A dead FUSE
 * mount (its daemon gone) cannot even be looked at.
 */
static int check_mountpoint(struct hotfs_opts *o, char *err, size_t errlen)
{
	struct statfs sf;
	int r;

	/* statfs: stat may answer from the attributes the kernel kept */
	if (statfs(o->mountpoint, &sf) == -1 && errno == ENOTCONN) {
		seterr(err, errlen,
		       "mountpoint '%s' is a dead FUSE mount (its daemon is gone); unmount it first: fusermount3 -u '%s'",
		       o->mountpoint, o->mountpoint);
		return -ENOTCONN;
	}
	r = check_dir("mountpoint", &o->mountpoint, err, errlen);
	if (r < 0 || o->nonempty)
		return r;
	if (is_hotfs_mount(o->mountpoint)) {
		seterr(err, errlen,
		       "mountpoint '%s' is a hotfs mount already; unmount it first (or use -o nonempty to mount over it)",
		       o->mountpoint);
		return -EBUSY;
	}
	r = dir_has_entries(o->mountpoint);
	if (r < 0) {
		seterr(err, errlen, "mountpoint '%s': %s", o->mountpoint,
		       strerror(-r));
		return r;
	}
	if (r > 0) {
		seterr(err, errlen,
		       "mountpoint '%s' is not empty; use -o nonempty to mount over it",
		       o->mountpoint);
		return -ENOTEMPTY;
	}
	return 0;
}

int opt_validate(struct hotfs_opts *o, char *err, size_t errlen)
{
	char *c, bad[PATH_MAX];
	struct stat st;
	uid_t bad_uid = 0;
	int r;

	r = check_dir("source", &o->source, err, errlen);
	if (r < 0)
		return r;
	r = check_mountpoint(o, err, errlen);
	if (r < 0)
		return r;
	/* the mount would show itself inside itself: find(1) reports a
	 * loop, and umount finds it busy (its daemon holds the source,
	 * which holds the mount point); the source itself is a mount point
	 * like another (an overlay of the tree) */
	if (stat(o->source, &st) == 0 && dir_below(o->mountpoint, &st)) {
		seterr(err, errlen,
		       "mountpoint '%s' is inside the source '%s' (the mount would contain itself); give one outside it",
		       o->mountpoint, o->source);
		return -EINVAL;
	}
	if (o->nocache && !o->cachedir)
		return 0;
	if (!o->cachedir || !*o->cachedir) {
		seterr(err, errlen,
		       "missing -o cachedir=DIR (a directory on the fast device)");
		return -EINVAL;
	}
	c = canon_cachedir(o->cachedir, bad, sizeof(bad), &bad_uid);
	if (!c && errno == EPERM) {
		seterr(err, errlen,
		       "cachedir '%s': the symlink '%s' belongs to uid %u, and only root's and the daemon's user's (uid %u) are followed",
		       o->cachedir, bad, (unsigned)bad_uid,
		       (unsigned)geteuid());
		return -EPERM;
	}
	if (!c) {
		seterr(err, errlen, "cachedir '%s': %s", o->cachedir,
		       strerror(errno));
		return -EINVAL;
	}
	free(o->cachedir);
	o->cachedir = c;
	if (path_within(o->cachedir, o->source)) {
		seterr(err, errlen, "cachedir '%s' is inside the source '%s'",
		       o->cachedir, o->source);
		return -EINVAL;
	}
	if (path_within(o->cachedir, o->mountpoint)) {
		seterr(err, errlen, "cachedir '%s' is inside the mountpoint '%s'",
		       o->cachedir, o->mountpoint);
		return -EINVAL;
	}
	if (path_within(o->source, o->cachedir) ||
	    path_within(o->mountpoint, o->cachedir)) {
		seterr(err, errlen,
		       "cachedir '%s' contains the source or the mountpoint",
		       o->cachedir);
		return -EINVAL;
	}
	/* a cachedir that is not a directory, or cannot be made, is the
	 * store's problem (the tree mounts without it); a missing parent
	 * is a typo or a device not mounted, never made up here */
	if (stat(o->cachedir, &st) == -1 && errno == ENOENT) {
		char *parent = strdup(o->cachedir), *slash;

		if (!parent)
			return -ENOMEM;
		slash = strrchr(parent, '/');
		if (slash == parent)
			slash[1] = '\0';
		else if (slash)
			*slash = '\0';
		r = stat(parent, &st) == -1 ? -errno :
		    !S_ISDIR(st.st_mode) ? -ENOTDIR : 0;
		if (r < 0) {
			if (r == -ENOENT)
				seterr(err, errlen,
				       "cachedir '%s': its parent '%s' does not exist (it is not created: is the cache device mounted?)",
				       o->cachedir, parent);
			else
				seterr(err, errlen,
				       "cachedir '%s': parent '%s': %s",
				       o->cachedir, parent, strerror(-r));
			free(parent);
			return r;
		}
		free(parent);
	}
	return 0;
}

void opt_free(struct hotfs_opts *o)
{
	free(o->source);
	free(o->mountpoint);
	free(o->cachedir);
	free(o->cachesize_str);
	free(o->extent_str);
	free(o->seqcutoff_str);
	free(o->promote_rate_str);
	free(o->write_budget_str);
	free(o->read_ahead_str);
	free(o->writemode_str);
	free(o->writeback_delay_str);
	free(o->writeback_log_str);
	free(o->dirty_high_str);
	free(o->dirty_low_str);
	free(o->threshold_str);
	free(o->ctldir);
	free(o->inode_cache_str);
	free(o->fuse_uring_str);
	free(o->passthrough_str);
	free(o->scrub_rate_str);
	free(o->passthrough_min_str);
	free(o->revalidate_str);
	free(o->snapshot_interval_str);
	free(o->attr_timeout_str);
	free(o->entry_timeout_str);
	memset(o, 0, sizeof(*o));
}
