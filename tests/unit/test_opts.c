// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for option parsing and validation (src/daemon/opts.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <fuse_opt.h>

#include "hotfs/opts.h"

struct fixture {
	char dir[64];
	char src[128], mnt[128], cache[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/hotfs-opts-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->src, sizeof(f->src), "%s/src", f->dir);
	snprintf(f->mnt, sizeof(f->mnt), "%s/mnt", f->dir);
	snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
	assert_int_equal(mkdir(f->src, 0755), 0);
	assert_int_equal(mkdir(f->mnt, 0755), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Parse a NULL-terminated argv; returns opt_parse's result. */
static int parse(struct hotfs_opts *o, struct fuse_args *args, char *err,
		 size_t errlen, ...)
{
	va_list ap;
	const char *a;

	memset(o, 0, sizeof(*o));
	*args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	fuse_opt_add_arg(args, "hotfs");
	va_start(ap, errlen);
	while ((a = va_arg(ap, const char *)))
		fuse_opt_add_arg(args, a);
	va_end(ap);
	return opt_parse(args, o, err, errlen);
}

static bool args_have(struct fuse_args *args, const char *s)
{
	int i;

	for (i = 0; i < args->argc; i++)
		if (strstr(args->argv[i], s))
			return true;
	return false;
}

static void test_size(void **state)
{
	uint64_t b;
	unsigned pct;

	(void)state;
	assert_int_equal(opt_parse_size("4096", &b, NULL), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(opt_parse_size("64K", &b, NULL), 0);
	assert_int_equal(b, 65536);
	assert_int_equal(opt_parse_size("256k", &b, NULL), 0);
	assert_int_equal(b, 262144);
	assert_int_equal(opt_parse_size("3M", &b, NULL), 0);
	assert_int_equal(b, 3u << 20);
	assert_int_equal(opt_parse_size("20GiB", &b, NULL), 0);
	assert_int_equal(b, 20ull << 30);
	assert_int_equal(opt_parse_size("2T", &b, NULL), 0);
	assert_int_equal(b, 2ull << 40);
	assert_int_equal(opt_parse_size("50%", &b, &pct), 0);
	assert_int_equal(pct, 50);
	assert_int_equal(b, 0);
	assert_int_equal(opt_parse_size("50%", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("0%", &b, &pct), -EINVAL);
	assert_int_equal(opt_parse_size("101%", &b, &pct), -EINVAL);
	assert_int_equal(opt_parse_size("", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("abc", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("-1", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("\t-5", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("\n-3", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size(" 5M", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("+5", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("12X", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("1M2", &b, NULL), -EINVAL);
	assert_int_equal(opt_parse_size("99999999999T", &b, NULL), -ERANGE);
}

static void test_defaults(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256];
	char co[200];

	snprintf(co, sizeof(co), "cachedir=%s", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_string_equal(o.source, f->src);
	assert_string_equal(o.mountpoint, f->mnt);
	assert_string_equal(o.cachedir, f->cache);
	assert_int_equal(o.threshold, 2);
	assert_int_equal(o.extent, 256 * 1024);
	assert_int_equal(o.seqcutoff, 0);
	assert_int_equal(o.promote_rate, 8u << 20);
	assert_int_equal(o.read_ahead, 1u << 20);
	assert_int_equal(o.writemode, HOTFS_WRITEAROUND);
	assert_true(o.attr_timeout == 1.0);
	assert_true(o.entry_timeout == 1.0);
	assert_true(o.snapshot_interval == HOTFS_SNAPSHOT_SECS);
	assert_int_equal(o.cachesize, 0);
	/* hotfs's own keys do not reach fuse_session_new */
	assert_false(args_have(&a, "cachedir"));
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void test_values(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256];
	char co[512];

	snprintf(co, sizeof(co),
		 "cachedir=%s,cachesize=20G,extent=1M,threshold=3,"
		 "seqcutoff=4M,promote_rate=50M,read_ahead=0,"
		 "writemode=writethrough,"
		 "attr_timeout=2.5,entry_timeout=0,reset,allow_other,"
		 "snapshot_interval=5",
		 f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), "-o", co, f->src,
			       f->mnt, NULL), 0);
	assert_int_equal(o.cachesize, 20ull << 30);
	assert_int_equal(o.extent, 1u << 20);
	assert_int_equal(o.threshold, 3);
	assert_int_equal(o.seqcutoff, 4u << 20);
	assert_int_equal(o.promote_rate, 50u << 20);
	assert_int_equal(o.read_ahead, 0);
	assert_int_equal(o.max_read, 0);
	assert_int_equal(o.writemode, HOTFS_WRITETHROUGH);
	assert_true(o.attr_timeout == 2.5);
	assert_true(o.entry_timeout == 0.0);
	assert_true(o.snapshot_interval == 5.0);
	assert_int_equal(o.reset, 1);
	assert_int_equal(o.allow_other, 1);
	/* allow_other is a FUSE option: it stays for the session */
	assert_true(args_have(&a, "allow_other"));
	fuse_opt_free_args(&a);
	opt_free(&o);

	/* writeback and its delay */
	snprintf(co, sizeof(co), "cachedir=%s,writemode=writeback,"
		 "writeback_delay=2.5,writeback_log=2G", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), "-o", co, f->src,
			       f->mnt, NULL), 0);
	assert_int_equal(o.writemode, HOTFS_WRITEBACK);
	assert_true(o.writeback_delay == 2.5);
	assert_int_equal(o.writeback_log, 2ull << 30);
	assert_int_equal(o.dirty_high, HOTFS_DIRTY_HIGH);
	assert_int_equal(o.dirty_low, HOTFS_DIRTY_LOW);
	fuse_opt_free_args(&a);
	opt_free(&o);

	/* the watermarks; one given alone moves the other with it */
	snprintf(co, sizeof(co), "cachedir=%s,writemode=writeback,"
		 "dirty_high=80,dirty_low=20", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), "-o", co, f->src,
			       f->mnt, NULL), 0);
	assert_int_equal(o.dirty_high, 80);
	assert_int_equal(o.dirty_low, 20);
	fuse_opt_free_args(&a);
	opt_free(&o);
	snprintf(co, sizeof(co), "cachedir=%s,writemode=writeback,"
		 "dirty_high=30", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), "-o", co, f->src,
			       f->mnt, NULL), 0);
	assert_int_equal(o.dirty_high, 30);
	assert_int_equal(o.dirty_low, 25);
	fuse_opt_free_args(&a);
	opt_free(&o);
	snprintf(co, sizeof(co), "cachedir=%s,writemode=writeback,"
		 "dirty_low=70", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), "-o", co, f->src,
			       f->mnt, NULL), 0);
	assert_int_equal(o.dirty_high, 70);
	assert_int_equal(o.dirty_low, 70);
	fuse_opt_free_args(&a);
	opt_free(&o);

	snprintf(co, sizeof(co), "cachedir=%s,cachesize=25%%", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_int_equal(o.cachesize_pct, 25);
	fuse_opt_free_args(&a);
	opt_free(&o);
}

/* max_read is libfuse's: recorded for the init callback, which must repeat
 * it, and left in the arguments for the session */
static void test_max_read(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256], co[300];

	snprintf(co, sizeof(co), "cachedir=%s,max_read=131072", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_int_equal(o.max_read, 131072);
	assert_true(args_have(&a, "max_read=131072"));
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void test_revalidate(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256], co[300];

	snprintf(co, sizeof(co), "cachedir=%s", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_int_equal(o.revalidate, HOTFS_REVAL_OPEN);
	assert_true(o.attr_timeout == 1.0 && o.entry_timeout == 1.0);
	assert_int_equal(o.nowatch, 0);
	assert_null(o.attr_timeout_str);	/* watched: the long ones */
	fuse_opt_free_args(&a);
	opt_free(&o);

	snprintf(co, sizeof(co), "cachedir=%s,nowatch", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_int_equal(o.nowatch, 1);
	fuse_opt_free_args(&a);
	opt_free(&o);

	snprintf(co, sizeof(co), "cachedir=%s,revalidate=30", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_int_equal(o.revalidate, HOTFS_REVAL_SECONDS);
	assert_true(o.attr_timeout == 30.0 && o.entry_timeout == 30.0);
	fuse_opt_free_args(&a);
	opt_free(&o);

	/* explicit timeouts win over revalidate= */
	snprintf(co, sizeof(co),
		 "cachedir=%s,revalidate=never,attr_timeout=5", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_int_equal(o.revalidate, HOTFS_REVAL_NEVER);
	assert_true(o.attr_timeout == 5.0);
	assert_true(o.entry_timeout == HOTFS_TIMEOUT_NEVER);
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void test_fstab_keywords_dropped(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256];
	char co[300];

	snprintf(co, sizeof(co),
		 "rw,defaults,nofail,_netdev,noauto,auto,user,users,nouser,"
		 "x-systemd.automount,x-systemd.requires=foo,comment=x,"
		 "cachedir=%s", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), 0);
	assert_false(args_have(&a, "nofail"));
	assert_false(args_have(&a, "_netdev"));
	assert_false(args_have(&a, "x-systemd"));
	assert_false(args_have(&a, "defaults"));
	assert_false(args_have(&a, "comment"));
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void expect_bad(struct fixture *f, const char *opt, const char *msg)
{
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256];
	char co[300];

	snprintf(co, sizeof(co), "cachedir=%s,%s", f->cache, opt);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "-o", co, NULL), -EINVAL);
	if (!strstr(err, msg))
		fail_msg("option '%s': error '%s' lacks '%s'", opt, err, msg);
	assert_null(strchr(err, '\n'));
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void test_bad_values(void **state)
{
	struct fixture *f = *state;

	expect_bad(f, "threshold=0", "threshold");
	expect_bad(f, "threshold=abc", "threshold");
	expect_bad(f, "threshold=17", "threshold");
	expect_bad(f, "threshold=", "threshold");
	expect_bad(f, "extent=3M", "extent");
	expect_bad(f, "extent=2K", "extent");
	expect_bad(f, "extent=48K", "extent");
	expect_bad(f, "extent=8M", "extent");
	expect_bad(f, "extent=abc", "extent");
	expect_bad(f, "cachesize=abc", "cachesize");
	expect_bad(f, "cachesize=0", "cachesize");
	expect_bad(f, "cachesize=1M", "cachesize");
	expect_bad(f, "cachesize=150%", "cachesize");
	expect_bad(f, "writemode=bogus", "writemode");
	expect_bad(f, "writemode=writeback,nocache", "needs a cache store");
	expect_bad(f, "ro,writemode=writeback", "read-only mount (ro)");
	expect_bad(f, "writemode=writeback,ro", "read-only mount (ro)");
	expect_bad(f, "writemode=writeback,writeback_delay=x",
		   "invalid writeback_delay");
	expect_bad(f, "writeback_delay=5", "writemode=writeback only");
	expect_bad(f, "writeback_delay=-1", "invalid writeback_delay");
	expect_bad(f, "writeback_log=1G", "writemode=writeback only");
	expect_bad(f, "writemode=writeback,writeback_log=512K",
		   "invalid writeback_log");
	expect_bad(f, "writemode=writeback,writeback_log=lots",
		   "invalid writeback_log");
	expect_bad(f, "dirty_high=60", "writemode=writeback only");
	expect_bad(f, "dirty_low=10", "writemode=writeback only");
	expect_bad(f, "writemode=writeback,dirty_high=100",
		   "invalid dirty_high");
	expect_bad(f, "writemode=writeback,dirty_high=0", "invalid dirty_high");
	expect_bad(f, "writemode=writeback,dirty_low=x", "invalid dirty_low");
	expect_bad(f, "writemode=writeback,dirty_low=-3", "invalid dirty_low");
	expect_bad(f, "writemode=writeback,dirty_high=40,dirty_low=41",
		   "above dirty_high");
	expect_bad(f, "seqcutoff=-5", "seqcutoff");
	expect_bad(f, "promote_rate=fast", "promote_rate");
	expect_bad(f, "max_read=12x", "max_read");
	expect_bad(f, "max_read=-1", "max_read");
	expect_bad(f, "max_read=", "max_read");
	expect_bad(f, "read_ahead=1K", "read_ahead");
	expect_bad(f, "read_ahead=128M", "read_ahead");
	expect_bad(f, "read_ahead=lots", "read_ahead");
	expect_bad(f, "attr_timeout=-1", "attr_timeout");
	expect_bad(f, "snapshot_interval=0", "invalid snapshot_interval");
	expect_bad(f, "snapshot_interval=x", "invalid snapshot_interval");
	expect_bad(f, "entry_timeout=x", "entry_timeout");
	expect_bad(f, "revalidate=sometimes", "revalidate");
	expect_bad(f, "revalidate=0", "revalidate");
	expect_bad(f, "revalidate=-3", "revalidate");
	expect_bad(f, "fuse_uring=yes", "invalid fuse_uring 'yes'");
}

/* -o fuse_uring[=on|off|auto]: auto unless said; never left for libfuse
 * (main asks libfuse with its own -o io_uring once decided) */
static void test_fuse_uring(void **state)
{
	static const struct {
		const char *opt;
		enum hotfs_fuse_uring want;
	} cases[] = {
		{ "", HOTFS_FUSE_URING_AUTO },
		{ ",fuse_uring", HOTFS_FUSE_URING_ON },
		{ ",fuse_uring=on", HOTFS_FUSE_URING_ON },
		{ ",fuse_uring=off", HOTFS_FUSE_URING_OFF },
		{ ",fuse_uring=auto", HOTFS_FUSE_URING_AUTO },
	};
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256], co[300];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(co, sizeof(co), "cachedir=%s%s", f->cache,
			 cases[i].opt);
		assert_int_equal(parse(&o, &a, err, sizeof(err), f->src,
				       f->mnt, "-o", co, NULL), 0);
		assert_int_equal(o.fuse_uring, cases[i].want);
		assert_false(args_have(&a, "uring"));
		fuse_opt_free_args(&a);
		opt_free(&o);
	}
}

static void test_missing_args(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256];

	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, NULL),
			 -EINVAL);
	assert_non_null(strstr(err, "missing mountpoint"));
	fuse_opt_free_args(&a);
	opt_free(&o);
	assert_int_equal(parse(&o, &a, err, sizeof(err), NULL), -EINVAL);
	assert_non_null(strstr(err, "missing source"));
	fuse_opt_free_args(&a);
	opt_free(&o);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       "extra", NULL), -EINVAL);
	assert_non_null(strstr(err, "unexpected argument 'extra'"));
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void test_help_version(void **state)
{
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, &a, err, sizeof(err), "--help", NULL), 0);
	assert_int_equal(o.show_help, 1);
	fuse_opt_free_args(&a);
	opt_free(&o);
	assert_int_equal(parse(&o, &a, err, sizeof(err), "-V", NULL), 0);
	assert_int_equal(o.show_version, 1);
	fuse_opt_free_args(&a);
	opt_free(&o);
}

/* Parse then validate with the given cachedir; returns validate's result */
static int validate_with(struct fixture *f, const char *src, const char *mnt,
			 const char *cachedir, char *err, size_t errlen,
			 struct hotfs_opts *o)
{
	struct fuse_args a;
	char co[300];
	int r;

	snprintf(co, sizeof(co), "cachedir=%s", cachedir);
	r = parse(o, &a, err, errlen, src ? src : f->src, mnt ? mnt : f->mnt,
		  "-o", co, NULL);
	fuse_opt_free_args(&a);
	if (r)
		return r;
	return opt_validate(o, err, errlen);
}

/* validate only looks: the cachedir is made by the store (cache_open),
 * in an existing parent; a missing parent is an error */
static void test_validate_cachedir_parent(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct stat st;
	char err[256], deep[300], parent[200];

	snprintf(deep, sizeof(deep), "%s/a/b/../c//", f->dir);
	snprintf(parent, sizeof(parent), "%s/a", f->dir);
	assert_int_equal(validate_with(f, NULL, NULL, deep, err, sizeof(err),
				       &o), -ENOENT);
	assert_non_null(strstr(err, "does not exist"));
	assert_int_equal(access(parent, F_OK), -1);	/* not made up */
	opt_free(&o);

	assert_int_equal(mkdir(parent, 0755), 0);
	assert_int_equal(validate_with(f, NULL, NULL, deep, err, sizeof(err),
				       &o), 0);
	/* canonical: no "..", no trailing slash; not created here */
	snprintf(parent, sizeof(parent), "%s/a/c", f->dir);
	assert_string_equal(o.cachedir, parent);
	assert_int_equal(stat(o.cachedir, &st), -1);
	opt_free(&o);

	/* a parent that is a file */
	snprintf(parent, sizeof(parent), "%s/a/file", f->dir);
	close(open(parent, O_WRONLY | O_CREAT, 0600));
	snprintf(deep, sizeof(deep), "%s/cache", parent);
	assert_true(validate_with(f, NULL, NULL, deep, err, sizeof(err),
				  &o) < 0);
	assert_non_null(strstr(err, "cachedir"));
	assert_non_null(strstr(err, "Not a directory"));
	opt_free(&o);
}

/* Mount points that would hide something, or cannot be mounted on, or
 * would contain themselves. */
static void test_validate_mountpoint(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256], co[300], file[200];

	snprintf(file, sizeof(file), "%s/x", f->mnt);
	close(open(file, O_WRONLY | O_CREAT, 0600));
	assert_int_equal(validate_with(f, NULL, NULL, f->cache, err,
				       sizeof(err), &o), -ENOTEMPTY);
	assert_non_null(strstr(err, "not empty"));
	assert_non_null(strstr(err, "nonempty"));
	opt_free(&o);

	snprintf(co, sizeof(co), "cachedir=%s,nonempty", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt, "-o",
			       co, NULL), 0);
	assert_int_equal(o.nonempty, 1);
	assert_int_equal(opt_validate(&o, err, sizeof(err)), 0);
	fuse_opt_free_args(&a);
	opt_free(&o);

	/* inside the source, however named: the mount would contain
	 * itself; the source itself is a mount point like another */
	snprintf(file, sizeof(file), "%s/inner", f->src);
	assert_int_equal(mkdir(file, 0755), 0);
	assert_int_equal(validate_with(f, NULL, file, f->cache, err,
				       sizeof(err), &o), -EINVAL);
	assert_non_null(strstr(err, "inside the source"));
	opt_free(&o);
	snprintf(file, sizeof(file), "%s/../src/./inner/", f->mnt);
	assert_int_equal(validate_with(f, NULL, file, f->cache, err,
				       sizeof(err), &o), -EINVAL);
	opt_free(&o);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->src, "-o",
			       co, NULL), 0);
	assert_int_equal(opt_validate(&o, err, sizeof(err)), 0);
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void test_cache_required(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256], co[300];

	snprintf(co, sizeof(co), "cachedir=%s", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt, "-o",
			       co, NULL), 0);
	assert_int_equal(o.cache_required, 0);
	fuse_opt_free_args(&a);
	opt_free(&o);
	snprintf(co, sizeof(co), "cachedir=%s,cache_required", f->cache);
	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt, "-o",
			       co, NULL), 0);
	assert_int_equal(o.cache_required, 1);
	assert_false(args_have(&a, "cache_required"));
	fuse_opt_free_args(&a);
	opt_free(&o);
}

static void test_validate_rejects(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	char err[256], p[200], file[200];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/sub/cache", f->src);
	assert_int_equal(validate_with(f, NULL, NULL, p, err, sizeof(err),
				       &o), -EINVAL);
	assert_non_null(strstr(err, "inside the source"));
	assert_int_equal(access(p, F_OK), -1);	/* nothing created */
	opt_free(&o);

	snprintf(p, sizeof(p), "%s/cache", f->mnt);
	assert_int_equal(validate_with(f, NULL, NULL, p, err, sizeof(err),
				       &o), -EINVAL);
	assert_non_null(strstr(err, "inside the mountpoint"));
	opt_free(&o);

	assert_int_equal(validate_with(f, NULL, NULL, f->dir, err, sizeof(err),
				       &o), -EINVAL);
	assert_non_null(strstr(err, "contains"));
	opt_free(&o);

	snprintf(file, sizeof(file), "%s/afile", f->dir);
	fp = fopen(file, "w");
	assert_non_null(fp);
	fclose(fp);
	/* a cachedir that is a file is the store's to refuse (the tree
	 * mounts without it) */
	assert_int_equal(validate_with(f, NULL, NULL, file, err, sizeof(err),
				       &o), 0);
	opt_free(&o);

	snprintf(p, sizeof(p), "%s/nosuch", f->dir);
	assert_int_equal(validate_with(f, p, NULL, f->cache, err, sizeof(err),
				       &o), -ENOENT);
	assert_non_null(strstr(err, "source"));
	opt_free(&o);
	assert_int_equal(validate_with(f, NULL, p, f->cache, err, sizeof(err),
				       &o), -ENOENT);
	assert_non_null(strstr(err, "mountpoint"));
	opt_free(&o);
	assert_int_equal(validate_with(f, file, NULL, f->cache, err,
				       sizeof(err), &o), -ENOTDIR);
	opt_free(&o);
}

static void test_validate_symlinked_cachedir_inside_source(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	char err[256], link[200], target[300];

	/* a cachedir reached through a symlink is still inside the source */
	snprintf(target, sizeof(target), "%s/inner", f->src);
	assert_int_equal(mkdir(target, 0755), 0);
	snprintf(link, sizeof(link), "%s/alias", f->dir);
	assert_int_equal(symlink(target, link), 0);
	snprintf(target, sizeof(target), "%s/cache", link);
	assert_int_equal(validate_with(f, NULL, NULL, target, err,
				       sizeof(err), &o), -EINVAL);
	assert_non_null(strstr(err, "inside the source"));
	opt_free(&o);
}

/*
 * A symlink on the cachedir's path is followed only if root or the
 * daemon's user owns it; the path is made canonical either way.
 */
static void test_validate_cachedir_symlinks(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct stat st;
	char err[512], p[300], q[300], want[300];

	/* ours: followed, through "..", relative and absolute links */
	snprintf(p, sizeof(p), "%s/real", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/rel", f->dir);
	assert_int_equal(symlink("./real/../real", p), 0);
	snprintf(q, sizeof(q), "%s/abs", f->dir);
	assert_int_equal(symlink(p, q), 0);
	snprintf(p, sizeof(p), "%s/abs/../abs/cache", f->dir);
	assert_int_equal(validate_with(f, NULL, NULL, p, err, sizeof(err),
				       &o), 0);
	snprintf(want, sizeof(want), "%s/real/cache", f->dir);
	assert_string_equal(o.cachedir, want);
	opt_free(&o);
	/* a loop */
	snprintf(p, sizeof(p), "%s/loop", f->dir);
	assert_int_equal(symlink("loop", p), 0);
	assert_true(validate_with(f, NULL, NULL, p, err, sizeof(err),
				  &o) < 0);
	assert_non_null(strstr(err, "symbolic links"));
	opt_free(&o);
	if (geteuid() != 0)
		return;
	/* another user's, in a world-writable sticky directory, whatever it
	 * points at: refused, named; its target left alone */
	snprintf(p, sizeof(p), "%s/tmp", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(chmod(p, 01777), 0);
	snprintf(p, sizeof(p), "%s/tmp/theirs", f->dir);
	snprintf(q, sizeof(q), "%s/real", f->dir);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(lchown(p, 65534, 65534), 0);
	assert_int_equal(validate_with(f, NULL, NULL, p, err, sizeof(err),
				       &o), -EPERM);
	assert_non_null(strstr(err, "/tmp/theirs' belongs to uid 65534"));
	opt_free(&o);
	/* also as a directory on the way, and reached through ours */
	snprintf(p, sizeof(p), "%s/rel/../tmp/theirs/cache", f->dir);
	assert_int_equal(validate_with(f, NULL, NULL, p, err, sizeof(err),
				       &o), -EPERM);
	opt_free(&o);
	assert_int_equal(stat(q, &st), 0);
	assert_true(st.st_uid == 0 && (st.st_mode & 0777) == 0755);
	/* root's: followed */
	snprintf(q, sizeof(q), "%s/tmp/theirs", f->dir);
	assert_int_equal(lchown(q, 0, 0), 0);
	assert_int_equal(validate_with(f, NULL, NULL, p, err, sizeof(err),
				       &o), 0);
	assert_string_equal(o.cachedir, want);
	opt_free(&o);
}

static void test_missing_cachedir(void **state)
{
	struct fixture *f = *state;
	struct hotfs_opts o;
	struct fuse_args a;
	char err[256];

	assert_int_equal(parse(&o, &a, err, sizeof(err), f->src, f->mnt,
			       NULL), 0);
	assert_int_equal(opt_validate(&o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cachedir"));
	fuse_opt_free_args(&a);
	opt_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_help_version),
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_defaults),
		T(test_values),
		T(test_fstab_keywords_dropped),
		T(test_revalidate),
		T(test_fuse_uring),
		T(test_max_read),
		T(test_bad_values),
		T(test_missing_args),
		T(test_validate_cachedir_parent),
		T(test_validate_mountpoint),
		T(test_cache_required),
		T(test_validate_rejects),
		T(test_validate_symlinked_cachedir_inside_source),
		T(test_validate_cachedir_symlinks),
		T(test_missing_cachedir),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
