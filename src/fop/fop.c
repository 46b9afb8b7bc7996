// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The change bracket and the write mode (hotfs/fop.h says the order of
 * the steps and why each is where it is).  Each step is asserted to come
 * after the ones before it; the steps themselves are the subsystems'
 * (struct fop_steps).
 */
#include <assert.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>

#include "hotfs/cache.h"
#include "hotfs/fop.h"
#include "hotfs/meta_fs.h"
#include "hotfs/namecache.h"
#include "hotfs/stamp.h"
#include "hotfs/wb.h"

/* the steps, numbered as in hotfs/fop.h */
enum {
	STEP_NONE, STEP_BEGIN, STEP_NOTE, STEP_UNLINK, STEP_STAMP,
	STEP_HOOK, STEP_DATA, STEP_SETTLED, STEP_END,
};

static const struct fop_steps real_steps = {
	.nc_changed = nc_changed,
	.meta_change = meta_fs_change,
	.wb_on = wb_on,
	.wb_unlink_begin = wb_unlink_begin,
	.wb_unlink_end = wb_unlink_end,
	.ino_fd = ino_fd,
	.ino_fd_put = ino_fd_put,
	.stamp_begin = stamp_begin,
	.stamp_end = stamp_end,
	.wb_truncate = wb_truncate,
	.wb_flush = wb_flush_inode,
	.wb_trunc_st = wb_trunc_st,
	.wb_trunc_fd = wb_trunc_fd,
	.cache_write_begin = cache_write_begin,
	.cache_write_end = cache_write_end,
};

static const struct fop_steps *steps = &real_steps;

void fop_set_steps(const struct fop_steps *s)
{
	steps = s ? s : &real_steps;
}

bool fop_writeback(struct hotfs *fs, struct hotfs_inode *in)
{
	if (!in)
		return fs->wb != NULL;
	return steps->wb_on(fs->wb, in);
}

bool fop_times_ours(struct hotfs *fs)
{
	return !fop_writeback(fs, NULL);
}

void fop_attr(struct hotfs *fs, struct stat *st)
{
	wb_fix_attr(fs->wb, st);
}

/* Step to may follow the step run last (<=: the repeatable ones). */
static void step(struct fop_change *ch, int to)
{
	assert(ch->step <= to);
	ch->step = to;
}

void fop_begin(struct fop_change *ch, struct hotfs *fs)
{
	memset(ch, 0, sizeof(*ch));
	ch->fs = fs;
	step(ch, STEP_BEGIN);
	steps->nc_changed();
}

void fop_note(struct fop_change *ch, struct hotfs_inode *dir,
	      struct hotfs_inode *in)
{
	step(ch, STEP_NOTE);
	steps->meta_change(ch->fs, dir, in);
}

int fop_unlink_hook(struct fop_change *ch, struct hotfs_inode *in,
		    const struct stat *st)
{
	struct hotfs *fs = ch->fs;
	bool known;
	int r;

	step(ch, STEP_UNLINK);
	/* the kernel may reach the file once the name is gone: by an inode
	 * it knows, or by an open it sends no OPEN for */
	known = !fs->wb || in || fs->no_open ||
		ino_find(fs->it, st->st_dev, st->st_ino) != NULL;
	r = steps->wb_unlink_begin(fs->wb, known, st, &ch->drop);
	if (r == 0) {
		ch->unlinking = true;
		ch->unlink_st = st;
	}
	return r;
}

void fop_stamp(struct fop_change *ch, struct hotfs_inode *in, int fd)
{
	bool own = fd < 0;

	step(ch, STEP_STAMP);
	assert(ch->nstamp < FOP_MAX_STAMPS && !ch->data_done);
	if (!in)
		return;
	if (own)
		fd = steps->ino_fd(ch->fs->it, in);
	if (fd < 0)
		return;
	steps->stamp_begin(in, fd);
	ch->stamped[ch->nstamp] = in;
	ch->stamp_fd[ch->nstamp] = fd;
	ch->stamp_own[ch->nstamp] = own;
	ch->nstamp++;
}

int fop_wb_hook(struct fop_change *ch, struct hotfs_inode *in,
		enum fop_wb_hook hook, uint64_t size)
{
	step(ch, STEP_HOOK);
	if (!fop_writeback(ch->fs, in))
		return 0;
	return hook == FOP_WB_TRUNCATE ?
	       steps->wb_truncate(ch->fs->wb, in, size) :
	       steps->wb_flush(ch->fs->wb, in);
}

int fop_create_trunc(struct fop_change *ch, int pfd, const char *name,
		     int *flags, bool *after)
{
	struct stat st;

	step(ch, STEP_HOOK);
	/* writeback: an existing file's dirty data is cut in the log before
	 * the source is (opened without O_TRUNC, then cut) */
	*after = fop_writeback(ch->fs, NULL) && (*flags & O_TRUNC) &&
		 fop_writes(*flags);
	if (*after) {
		*flags &= ~O_TRUNC;
		return 0;
	}
	/* O_RDONLY|O_TRUNC cuts too, but leaves no descriptor to cut by:
	 * the file the name holds now, cut in the log first */
	if (fop_writeback(ch->fs, NULL) && (*flags & O_TRUNC) &&
	    fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return steps->wb_trunc_st(ch->fs->wb, &st);
	return 0;
}

int fop_create_opened(struct fop_change *ch, int fd, bool after)
{
	struct stat st;
	int r;

	step(ch, STEP_HOOK);
	if (fd < 0 || !after || fstat(fd, &st) != 0 || st.st_size < 0)
		return fd;
	r = steps->wb_trunc_fd(ch->fs->wb, fd, &st);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

void fop_data_begin(struct fop_change *ch, struct hotfs_inode *in,
		    struct hotfs_cache *c, uint64_t off, uint64_t len)
{
	step(ch, STEP_DATA);
	assert(!ch->data);
	steps->cache_write_begin(c, ch->fs->it, in, &ch->w, off, len);
	ch->data_in = in;
	ch->data = true;
}

void fop_data_end(struct fop_change *ch, struct hotfs_cache *c,
		  uint64_t off, uint64_t len, const void *data, bool no_old)
{
	assert(ch->data && ch->step == STEP_DATA);
	if (no_old)
		ch->w.have_old = false;
	/* writethrough: the bytes written patch the cached ones; else
	 * (writearound, writeback's source changes) they are dropped */
	ch->w.patch = c && atomic_load(&c->writemode) == HOTFS_WRITETHROUGH;
	steps->cache_write_end(c, ch->data_in, &ch->w, off, len, data);
	ch->data = false;
	/* another hook and data pair may follow, no stamp */
	ch->step = STEP_STAMP;
	ch->data_done = true;
}

void fop_settle(struct fop_change *ch, int err)
{
	unsigned i;

	assert(!ch->data);
	step(ch, STEP_SETTLED);
	ch->err = err;
	for (i = ch->nstamp; i-- > 0;) {
		steps->stamp_end(ch->stamped[i], ch->stamp_fd[i]);
		if (ch->stamp_own[i])
			steps->ino_fd_put(ch->stamped[i]);
	}
	ch->nstamp = 0;
	if (ch->unlinking)
		steps->wb_unlink_end(ch->fs->wb, ch->unlink_st, ch->drop, err);
	ch->unlinking = false;
}

void fop_end(struct fop_change *ch)
{
	if (ch->step < STEP_SETTLED)
		fop_settle(ch, ch->err);
	step(ch, STEP_END);
	steps->nc_changed();
}
