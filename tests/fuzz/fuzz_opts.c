// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the option strings (src/daemon/opts.c): the command line
 * and the -o list, which reach hotfs from fstab lines and from mount(8).
 *
 * The input is split at NUL bytes into arguments (at most 64).  If bit 0
 * of the first byte is set, they follow "hotfs SOURCE MOUNTPOINT -o", so
 * that the first one is an option list; otherwise they follow "hotfs".
 * They go through what main() does before touching the disk:
 * opt_parse(), then fuse_parse_cmdline() and fuse_session_new() with
 * what is left (a session that is never mounted), and everything is
 * freed.  opt_validate() is left out: it resolves paths and creates the
 * cachedir.  Each argument is also given to opt_parse_size() alone, and
 * so is what follows its first '='.
 *
 * Checked, beyond "no crash, no sanitizer report, no leak": options that
 * parse are within the ranges the man page gives (threshold, extent,
 * cachesize, timeouts, revalidate, inode_cache, ctldir, source and
 * mountpoint given), and a parsed size is what the string says.
 *
 * Build: meson setup build-fuzz -Dfuzz=true (CC=clang); run:
 * tests/fuzz/run_fuzz.sh build-fuzz/tests/fuzz/fuzz_opts 10 tests/fuzz/corpus_opts
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>
#include <fuse_opt.h>

#include "hotfs/opts.h"

#define MAX_ARGS	64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* libfuse says what it rejects, on every input */
	fuse_set_log_func(quiet);
	return 0;
}

static void check_size(const char *s)
{
	uint64_t bytes = 12345;
	unsigned pct = 77;

	if (opt_parse_size(s, &bytes, &pct) == 0) {
		if (pct > 100 || (pct && bytes))
			abort();
		if (!pct && !strchr(s, '%') && strchr(s, '-'))
			abort();	/* no negative sizes */
	}
	if (opt_parse_size(s, &bytes, NULL) == 0 && strchr(s, '%'))
		abort();
}

static void check_opts(const struct hotfs_opts *o)
{
	if (o->threshold < 1 || o->threshold > 255)
		abort();
	if (o->extent < HOTFS_EXTENT_MIN || o->extent > HOTFS_EXTENT_MAX ||
	    (o->extent & (o->extent - 1)))
		abort();
	if (o->cachesize_pct > 100 || (o->cachesize_pct && o->cachesize) ||
	    (o->cachesize && o->cachesize < (16ull << 20)))
		abort();
	if (!(o->attr_timeout >= 0 && o->attr_timeout <= HOTFS_TIMEOUT_NEVER) ||
	    !(o->entry_timeout >= 0 &&
	      o->entry_timeout <= HOTFS_TIMEOUT_NEVER))
		abort();
	if (o->revalidate == HOTFS_REVAL_SECONDS &&
	    !(o->revalidate_secs > 0 && o->revalidate_secs <= 1e6))
		abort();
	if (o->writemode != HOTFS_WRITEAROUND &&
	    o->writemode != HOTFS_WRITETHROUGH &&
	    (o->writemode != HOTFS_WRITEBACK || !o->cachedir || o->nocache))
		abort();
	/* writeback_log=: writeback's alone, within its range */
	if (o->writeback_log && (o->writemode != HOTFS_WRITEBACK ||
				 o->writeback_log < HOTFS_WBLOG_MIN ||
				 o->writeback_log > HOTFS_WBLOG_MAX))
		abort();
	if (o->inode_cache > 10000000)
		abort();
	/* dirty_high=, dirty_low= (defaults when not given) */
	if (o->dirty_low < 1 || o->dirty_low > o->dirty_high ||
	    o->dirty_high > 99)
		abort();
	if (!o->ctldir || !*o->ctldir || strchr(o->ctldir, '/') ||
	    strlen(o->ctldir) > 255 || !strcmp(o->ctldir, ".") ||
	    !strcmp(o->ctldir, ".."))
		abort();
	if (!o->source || !o->mountpoint)
		abort();
}

static void run(int argc, char **argv)
{
	static const struct fuse_lowlevel_ops ops;
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts;
	struct fuse_session *se;
	struct hotfs_opts o;
	char err[512];

	memset(&o, 0, sizeof(o));
	memset(&copts, 0, sizeof(copts));
	err[0] = 'x';
	if (opt_parse(&args, &o, err, sizeof(err)) < 0) {
		if (!err[0] || !memchr(err, '\0', sizeof(err)))
			abort();	/* a failure always says why */
		goto out;
	}
	if (o.show_help || o.show_version)
		goto out;
	check_opts(&o);
	if (fuse_parse_cmdline(&args, &copts) != 0)
		goto out;
	if (copts.show_help || copts.show_version || copts.mountpoint)
		goto out;
	if (o.allow_other && !o.default_permissions &&
	    fuse_opt_add_arg(&args, "-odefault_permissions") != 0)
		abort();
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (se)
		fuse_session_destroy(se);
out:
	free(copts.mountpoint);
	fuse_opt_free_args(&args);
	opt_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char prog[] = "hotfs", src[] = "/src", mnt[] = "/mnt",
		    dash_o[] = "-o";
	char *argv[MAX_ARGS + 5], *buf, *p, *end;
	int argc = 0;

	if (!size)
		return 0;
	/* a copy with a NUL after the last argument */
	buf = malloc(size);
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	argv[argc++] = prog;
	if (data[0] & 1) {
		argv[argc++] = src;
		argv[argc++] = mnt;
		argv[argc++] = dash_o;
	}
	for (p = buf, end = buf + size - 1; p <= end && argc < MAX_ARGS + 4;
	     p += strlen(p) + 1) {
		char *eq = strchr(p, '=');

		argv[argc++] = p;
		check_size(p);
		if (eq)
			check_size(eq + 1);
	}
	argv[argc] = NULL;
	run(argc, argv);
	free(buf);
	return 0;
}
