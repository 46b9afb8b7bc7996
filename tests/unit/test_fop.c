// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the change bracket (src/fop/fop.c): the steps of a change
 * run in the order hotfs/fop.h gives, each once, the ends in reverse; a
 * hook that refuses leaves nothing to end; a step out of order is a bug
 * (the assert).  The steps are recorded through struct fop_steps
 * (fop_set_steps): no source, no writeback log, no cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/cache.h"
#include "hotfs/fop.h"

/* The steps run, as "name" or "name:arg", one string. */
static char trace[1024];
static bool wb_is_on = true;
static int refuse;		/* the hooks' answer */

static void rec(const char *what, long arg)
{
	size_t n = strlen(trace);

	snprintf(trace + n, sizeof(trace) - n, "%s%s", n ? " " : "", what);
	n = strlen(trace);
	if (arg >= 0)
		snprintf(trace + n, sizeof(trace) - n, ":%ld", arg);
}

/* an inode's number names it in the trace */
static long num(const struct hotfs_inode *in)
{
	return in ? (long)in->ino : -1;
}

static void t_nc_changed(void)
{
	rec("nc", -1);
}

static void t_meta_change(struct hotfs *fs, struct hotfs_inode *dir,
			  struct hotfs_inode *in)
{
	(void)fs;
	rec("meta", (dir ? num(dir) : 0) * 10 + (in ? num(in) : 0));
}

static bool t_wb_on(struct hotfs_wb *wb, struct hotfs_inode *in)
{
	(void)wb;
	(void)in;
	return wb_is_on;
}

static int t_wb_unlink_begin(struct hotfs_wb *wb, bool known,
			     const struct stat *st, bool *drop)
{
	(void)wb;
	(void)known;
	*drop = true;
	rec("unlink_begin", (long)st->st_ino);
	return refuse;
}

static void t_wb_unlink_end(struct hotfs_wb *wb, const struct stat *st,
			    bool drop, int err)
{
	(void)wb;
	assert_true(drop);
	rec("unlink_end", (long)st->st_ino * 100 - err);
}

static int t_ino_fd(struct hotfs_itable *it, struct hotfs_inode *in)
{
	(void)it;
	rec("ino_fd", num(in));
	return 40 + (int)num(in);
}

static void t_ino_fd_put(struct hotfs_inode *in)
{
	rec("ino_fd_put", num(in));
}

static void t_stamp_begin(struct hotfs_inode *in, int fd)
{
	rec("stamp_begin", num(in) * 100 + fd);
}

static void t_stamp_end(struct hotfs_inode *in, int fd)
{
	rec("stamp_end", num(in) * 100 + fd);
}

static int t_wb_truncate(struct hotfs_wb *wb, struct hotfs_inode *in,
			 uint64_t size)
{
	(void)wb;
	rec("wb_truncate", num(in) * 100 + (long)size);
	return refuse;
}

static int t_wb_flush(struct hotfs_wb *wb, struct hotfs_inode *in)
{
	(void)wb;
	rec("wb_flush", num(in));
	return refuse;
}

static int t_wb_trunc_st(struct hotfs_wb *wb, const struct stat *st)
{
	(void)wb;
	rec("wb_trunc_st", (long)st->st_ino);
	return refuse;
}

static int t_wb_trunc_fd(struct hotfs_wb *wb, int fd,
			 const struct stat *st)
{
	(void)wb;
	(void)st;
	rec("wb_trunc_fd", fd);
	return refuse;
}

static void t_cache_write_begin(struct hotfs_cache *c,
				struct hotfs_itable *it,
				struct hotfs_inode *in, struct cache_wr *w,
				uint64_t off, uint64_t len)
{
	(void)c;
	(void)it;
	w->have_old = true;
	rec("cw_begin", num(in) * 1000 + (long)off * 10 + (long)len);
}

static void t_cache_write_end(struct hotfs_cache *c, struct hotfs_inode *in,
			      struct cache_wr *w, uint64_t off, uint64_t len,
			      const void *data)
{
	(void)c;
	(void)data;
	rec(w->have_old ? (w->patch ? "cw_end_patch" : "cw_end") :
	    "cw_end_noold", num(in) * 1000 + (long)off * 10 + (long)len);
}

static const struct fop_steps rec_steps = {
	.nc_changed = t_nc_changed,
	.meta_change = t_meta_change,
	.wb_on = t_wb_on,
	.wb_unlink_begin = t_wb_unlink_begin,
	.wb_unlink_end = t_wb_unlink_end,
	.ino_fd = t_ino_fd,
	.ino_fd_put = t_ino_fd_put,
	.stamp_begin = t_stamp_begin,
	.stamp_end = t_stamp_end,
	.wb_truncate = t_wb_truncate,
	.wb_flush = t_wb_flush,
	.wb_trunc_st = t_wb_trunc_st,
	.wb_trunc_fd = t_wb_trunc_fd,
	.cache_write_begin = t_cache_write_begin,
	.cache_write_end = t_cache_write_end,
};

static struct hotfs fs;
static struct hotfs_inode dir, file, other;

static int setup(void **state)
{
	(void)state;
	trace[0] = '\0';
	wb_is_on = true;
	refuse = 0;
	memset(&fs, 0, sizeof(fs));
	memset(&dir, 0, sizeof(dir));
	memset(&file, 0, sizeof(file));
	memset(&other, 0, sizeof(other));
	dir.ino = 1;
	file.ino = 2;
	other.ino = 3;
	fop_set_steps(&rec_steps);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fop_set_steps(NULL);
	return 0;
}

/* setattr of size and times: one stamp over two hook and data steps */
static void test_setattr_order(void **state)
{
	struct fop_change ch;

	(void)state;
	fop_begin(&ch, &fs);
	fop_note(&ch, NULL, &file);
	fop_stamp(&ch, &file, 5);
	assert_int_equal(fop_wb_hook(&ch, &file, FOP_WB_TRUNCATE, 7), 0);
	fop_data_begin(&ch, &file, NULL, 0, 0);
	fop_data_end(&ch, NULL, 0, 0, NULL, false);
	assert_int_equal(fop_wb_hook(&ch, &file, FOP_WB_FLUSH, 0), 0);
	fop_settle(&ch, 0);
	fop_end(&ch);
	assert_string_equal(trace,
			    "nc meta:2 stamp_begin:205 wb_truncate:207 "
			    "cw_begin:2000 cw_end:2000 wb_flush:2 "
			    "stamp_end:205 nc");
}

/* a write: the cached data's bracket alone; no writeback hook when the
 * file is written around */
static void test_write_order(void **state)
{
	struct fop_change ch;

	(void)state;
	wb_is_on = false;
	fop_begin(&ch, &fs);
	assert_int_equal(fop_wb_hook(&ch, &file, FOP_WB_TRUNCATE, 0), 0);
	fop_data_begin(&ch, &file, NULL, 4, 3);
	fop_data_end(&ch, NULL, 4, 2, NULL, false);
	fop_end(&ch);
	assert_string_equal(trace, "nc cw_begin:2043 cw_end:2042 nc");
	assert_false(fop_writeback(&fs, &file));
	assert_false(fop_writeback(&fs, NULL));	/* fs.wb NULL */
}

/* the write mode decided here alone: writethrough's written bytes patch
 * the cached ones, writearound's (and no store's) do not */
static void test_write_patches_in_writethrough_alone(void **state)
{
	static const enum hotfs_writemode modes[] = {
		HOTFS_WRITETHROUGH, HOTFS_WRITEAROUND, HOTFS_WRITEBACK,
	};
	static const char *const want[] = {
		"nc cw_begin:2043 cw_end_patch:2043 nc",
		"nc cw_begin:2043 cw_end:2043 nc",
		"nc cw_begin:2043 cw_end:2043 nc",
	};
	struct hotfs_cache c;
	struct fop_change ch;
	unsigned i;

	(void)state;
	wb_is_on = false;
	for (i = 0; i < 4; i++) {
		trace[0] = '\0';
		memset(&c, 0, sizeof(c));
		if (i < 3)
			atomic_store(&c.writemode, modes[i]);
		fop_begin(&ch, &fs);
		fop_data_begin(&ch, &file, i < 3 ? &c : NULL, 4, 3);
		fop_data_end(&ch, i < 3 ? &c : NULL, 4, 3, "abc", false);
		fop_end(&ch);
		assert_string_equal(trace, want[i < 3 ? i : 1]);
	}
}

/* rename over a last link: two notes, the hook, two stamps ended the
 * last first, then the hook's end with the result */
static void test_rename_order(void **state)
{
	struct stat st = { .st_ino = 3 };
	struct fop_change ch;

	(void)state;
	fop_begin(&ch, &fs);
	fop_note(&ch, &dir, NULL);
	fop_note(&ch, &other, NULL);
	assert_int_equal(fop_unlink_hook(&ch, &other, &st), 0);
	fop_stamp(&ch, &file, -1);
	fop_stamp(&ch, NULL, -1);	/* no target known: nothing */
	fop_stamp(&ch, &other, -1);
	fop_settle(&ch, -2);
	fop_end(&ch);
	assert_string_equal(trace,
			    "nc meta:10 meta:30 unlink_begin:3 "
			    "ino_fd:2 stamp_begin:242 ino_fd:3 "
			    "stamp_begin:343 stamp_end:343 ino_fd_put:3 "
			    "stamp_end:242 ino_fd_put:2 unlink_end:302 nc");
}

/* a hook that refuses: nothing of it to end, the bracket still closes */
static void test_refused(void **state)
{
	struct stat st = { .st_ino = 2 };
	struct fop_change ch;

	(void)state;
	refuse = -EIO;
	fop_begin(&ch, &fs);
	fop_note(&ch, &dir, NULL);
	assert_int_equal(fop_unlink_hook(&ch, &file, &st), -EIO);
	fop_end(&ch);
	assert_string_equal(trace, "nc meta:10 unlink_begin:2 nc");
}

/* create with O_TRUNC under writeback: cut in the log after the open,
 * then every cached record dropped (no stamp before it known) */
static void test_create_trunc_order(void **state)
{
	struct fop_change ch;
	int flags = O_WRONLY | O_CREAT | O_TRUNC;
	bool after;
	int fd;

	(void)state;
	fs.wb = (struct hotfs_wb *)&fs;		/* never dereferenced */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	fop_begin(&ch, &fs);
	fop_note(&ch, &dir, NULL);
	assert_int_equal(fop_create_trunc(&ch, -1, "f", &flags, &after), 0);
	assert_true(after);
	assert_false(flags & O_TRUNC);
	assert_int_equal(fop_create_opened(&ch, fd, after), fd);
	fop_data_begin(&ch, &file, NULL, 0, 0);
	fop_data_end(&ch, NULL, 0, 0, NULL, true);
	fop_end(&ch);
	close(fd);
	{
		char want[256];

		snprintf(want, sizeof(want),
			 "nc meta:10 wb_trunc_fd:%d cw_begin:2000 "
			 "cw_end_noold:2000 nc", fd);
		assert_string_equal(trace, want);
	}
}

/* Run f in a child: true if it died of the bracket's assert. */
static bool aborts(void (*f)(void))
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		/* quiet: the assert's message is expected */
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		f();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void note_after_stamp(void)
{
	struct fop_change ch;

	fop_begin(&ch, &fs);
	fop_stamp(&ch, &file, 5);
	fop_note(&ch, NULL, &file);
}

static void stamp_after_data(void)
{
	struct fop_change ch;

	fop_begin(&ch, &fs);
	fop_data_begin(&ch, &file, NULL, 0, 0);
	fop_data_end(&ch, NULL, 0, 0, NULL, false);
	fop_stamp(&ch, &file, 5);
}

static void end_inside_data(void)
{
	struct fop_change ch;

	fop_begin(&ch, &fs);
	fop_data_begin(&ch, &file, NULL, 0, 0);
	fop_end(&ch);
}

static void test_out_of_order(void **state)
{
	(void)state;
	assert_true(aborts(note_after_stamp));
	assert_true(aborts(stamp_after_data));
	assert_true(aborts(end_inside_data));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_setattr_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_write_patches_in_writethrough_alone, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_rename_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_trunc_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_out_of_order, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
