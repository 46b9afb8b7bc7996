// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FUSE handlers for directories (see src/fuse/fuse_i.h): opendir, readdir,
 * readdirplus, releasedir and fsyncdir; the listings they serve from are
 * dirlist.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuse_i.h"
#include "hotfs/ctl.h"
#include "hotfs/dirlist.h"
#include "hotfs/meta_fs.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"

/*
 * Let the kernel keep a directory's listing while the directory is
 * unchanged: its stamp (mtime, ctime) when this open began is compared
 * with the one when the last open began, before any entry was read, so a
 * change during a listing is never hidden from the next one.  Changes
 * through the mount invalidate the kernel's copy by themselves.
 */
static void dir_keep_cache(struct hotfs_inode *in, int fd,
			   struct fuse_file_info *fi, bool never)
{
	struct stat st;

	fi->cache_readdir = 0;
	fi->keep_cache = 0;
	/* a remote source: the directory's stamp comes from the lower
	 * client's cache and says nothing of another client's create */
	if ((hotfs_src.remote && !never) || fstat(fd, &st) == -1)
		return;
	pthread_mutex_lock(&in->m);
	fi->cache_readdir = 1;
	fi->keep_cache = never || stamp_same_locked(in, &st);
	stamp_take_locked(in, &st);
	pthread_mutex_unlock(&in->m);
}

/* Open the directory ino for reading from the source; -errno. */
static int dir_open(fuse_req_t req, fuse_ino_t ino, struct hotfs_dirp *d)
{
	int fd, dfd;

	dfd = ifd(req, ino);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		fd = -errno;
	iput(req, ino);
	if (fd < 0)
		return fd;
	d->dp = fdopendir(fd);
	if (!d->dp) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

void hotfs_opendir(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	struct hotfs_dirp *d = NULL;
	int fd, err;

	if (vd_is(ino)) {
		vd_opendir(req, ino, fi);
		return;
	}
	count(&hfs(req)->n_opendir);
	count_uring(req);
	/* ENOSYS is success here: the kernel sends no more opendirs */
	err = -ENOSYS;
	if (hfs(req)->no_opendir)
		goto out;
	err = -ENOMEM;
	d = dirp_new(hino(req, ino));
	if (!d)
		goto out;
	/* a remote source's listing trusted by time: no source at all
	 * (hotfs/dirlist.h); d->dp stays NULL until a rewind needs it */
	d->lst = listing_trusted(hfs(req), d->in);
	if (d->lst) {
		fi->cache_readdir = 0;
		fi->keep_cache = 0;
		err = 0;
	} else {
		fd = dir_open(req, ino, d);
		err = fd < 0 ? fd : 0;
		/* listings are checked against the stamp in every mode:
		 * the kernel's own invalidation races concurrent listers */
		if (fd >= 0) {
			dir_keep_cache(d->in, fd, fi, false);
			listing_open(hfs(req), d, fd);
		}
	}
out:
	if (!err)
		fi->fh = (uintptr_t)d;
	/* an opendir the kernel did not take (interrupted): d let go */
	if (err) {
		fuse_reply_err(req, -err);
		dirp_free(d);
	} else if (fuse_reply_open(req, fi) == -ENOENT) {
		dirp_free(d);
	}
}

static struct hotfs_dirp *dirp(struct fuse_file_info *fi)
{
	tsan_order_acquire();	/* the handle: made by opendir's request */
	return (struct hotfs_dirp *)(uintptr_t)fi->fh;
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' &&
	       (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Back to the start, with a listing current now (or the source's);
 * -errno if the source directory cannot be opened for it. */
static int rewind_dir(fuse_req_t req, fuse_ino_t ino, struct hotfs_dirp *d)
{
	struct hotfs_listing *old = d->lst;
	int fd;

	rec_stop(d);
	d->offset = 0;
	/* a remote source's listing trusted by time: no source at all */
	d->lst = listing_trusted(hfs(req), d->in);
	if (d->lst) {
		listing_put(old);
		return 0;
	}
	if (!d->dp) {
		/* opened from a listing trusted by time: the source now */
		fd = dir_open(req, ino, d);
		if (fd < 0) {
			d->lst = old;
			return fd;
		}
	}
	listing_open(hfs(req), d, dirfd(d->dp));
	listing_put(old);
	if (!d->lst) {
		seekdir(d->dp, 0);
		d->entry = NULL;
	}
	return 0;
}

/* The next entry, without consuming it: 1, 0 at the end, or -errno. */
static int peek_entry(struct hotfs_dirp *d, const char **name, uint64_t *ino,
		      unsigned char *type, off_t *next)
{
	if (d->lst) {
		const struct hotfs_lent *e;

		if (d->offset < 0 || (size_t)d->offset >= d->lst->n)
			return 0;
		e = &d->lst->ents[d->offset];
		*name = e->name;
		*ino = e->ino;
		*type = e->type;
		*next = (off_t)((uint64_t)(d->offset + 1) | d->gen_tag);
		return 1;
	}
	if (!d->entry) {
		errno = 0;
		d->entry = readdir(d->dp);
		if (!d->entry) {
			if (errno) {
				rec_stop(d);
				return -errno;
			}
			if (d->rec)
				rec_done(d);
			return 0;
		}
		if (d->rec)
			rec_add(d, d->entry);
	}
	*name = d->entry->d_name;
	*ino = d->entry->d_ino;
	*type = d->entry->d_type;
	*next = d->entry->d_off;
	return 1;
}

static void consume_entry(struct hotfs_dirp *d, off_t next)
{
	d->entry = NULL;
	/* a listing's offsets are positions (tagged with its generation
	 * when read without a handle); a stream's are the source's */
	d->offset = d->lst ? (off_t)((uint64_t)next & 0xffffffffu) : next;
}

/* Position d for a read at offset (an open directory's); -errno. */
static int dir_seek(fuse_req_t req, fuse_ino_t ino, struct hotfs_dirp *d,
		    off_t offset)
{
	if (offset == 0 && (d->offset != 0 || d->lst)) {
		/* from the start (again): a rewinddir must see what changed
		 * since opendir, and the kernel may have answered the first
		 * pass from its own cache */
		return rewind_dir(req, ino, d);
	} else if (offset != d->offset) {
		if (!d->lst) {
			seekdir(d->dp, offset);
			d->entry = NULL;
			rec_stop(d);	/* not one pass from the start */
		}
		d->offset = offset;
	}
	return 0;
}

/*
 * The next entry into [p, p + rem): its size (more than rem: it did not
 * fit, and is left for the next read), 0 if it is to be skipped, or
 * -errno.  A readdirplus entry is looked up (its lookup count raised).
 */
static ssize_t add_entry(fuse_req_t req, fuse_ino_t ino, char *p,
			 size_t rem, const char *name, uint64_t dino,
			 unsigned char type, off_t nextoff, bool plus)
{
	struct fuse_entry_param e;
	size_t entsize;
	int err;

	if (ino == FUSE_ROOT_ID && strcmp(name, hfs(req)->ctldir) == 0)
		return 0;	/* shadowed by the control directory */
	if (mark_name(ino, name))
		return 0;	/* the writeback mark (hotfs/wbmark.h) */
	if (!plus) {
		struct stat st = { .st_ino = dino, .st_mode = type << 12 };

		return (ssize_t)fuse_add_direntry(req, p, rem, name, &st,
						  nextoff);
	}
	memset(&e, 0, sizeof(e));
	if (is_dot_or_dotdot(name)) {
		e.attr.st_ino = dino;
		e.attr.st_mode = type << 12;
	} else {
		err = do_lookup(req, ino, name, &e);
		if (err == -ENOENT)
			return 0;	/* vanished since readdir: skip it */
		if (err)
			return err;
	}
	entsize = fuse_add_direntry_plus(req, p, rem, name, &e, nextoff);
	if (entsize > rem && e.ino)
		forget_one(hfs(req), e.ino, 1);	/* not sent after all */
	return (ssize_t)entsize;
}

/* Fill buf (size bytes) from d: the bytes used, or -errno if the first
 * entry failed (an error after some entries: what we have). */
static ssize_t fill_dir(fuse_req_t req, fuse_ino_t ino, struct hotfs_dirp *d,
			char *buf, size_t size, bool plus)
{
	size_t rem = size;
	ssize_t n = 0;

	for (;;) {
		unsigned char type = 0;
		const char *name = NULL;
		uint64_t dino = 0;
		off_t nextoff = 0;
		int r;

		r = peek_entry(d, &name, &dino, &type, &nextoff);
		if (r <= 0) {
			n = r;
			break;
		}
		n = add_entry(req, ino, buf + (size - rem), rem, name, dino,
			      type, nextoff, plus);
		if (n < 0 || (size_t)n > rem)
			break;
		rem -= (size_t)n;
		consume_entry(d, nextoff);
	}
	if (n < 0 && rem == size)
		return n;
	return (ssize_t)(size - rem);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t offset, struct fuse_file_info *fi, bool plus)
{
	struct hotfs_dirp *d = dirp(fi), tmp;
	char *buf = NULL;
	ssize_t n = 0;
	int err = 0;

	if (!d) {		/* no opendir: see stateless_listing() */
		memset(&tmp, 0, sizeof(tmp));
		tmp.in = hino(req, ino);
		tmp.lst = stateless_listing(hfs(req), tmp.in, offset, &err);
		if (!tmp.lst)
			goto out_err;
		tmp.offset = (off_t)((uint64_t)offset & 0xffffffffu);
		tmp.gen_tag = (uint64_t)tmp.lst->gen << 32;
		d = &tmp;
	} else {
		err = dir_seek(req, ino, d, offset);
		if (err)
			goto out_err;
	}
	err = -ENOMEM;
	buf = calloc(1, size);
	if (!buf)
		goto out_put;
	n = fill_dir(req, ino, d, buf, size, plus);
	err = n < 0 ? (int)n : 0;
out_put:
	if (d == &tmp)
		listing_put(tmp.lst);
out_err:
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void hotfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		   off_t offset, struct fuse_file_info *fi)
{
	if (vd_is(ino))
		vd_readdir(req, ino, size, offset, fi, false);
	else
		do_readdir(req, ino, size, offset, fi, false);
}

void hotfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t offset, struct fuse_file_info *fi)
{
	if (vd_is(ino))
		vd_readdir(req, ino, size, offset, fi, true);
	else
		do_readdir(req, ino, size, offset, fi, true);
}

void hotfs_releasedir(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	struct hotfs_dirp *d = dirp(fi);

	if (vd_is(ino)) {
		vd_releasedir(req, ino, fi);
		return;
	}
	dirp_free(d);
	fuse_reply_err(req, 0);
}

/* fsync a directory through a descriptor of its own; -errno. */
static int sync_dir(fuse_req_t req, fuse_ino_t ino, int datasync)
{
	int fd, dfd, r;

	dfd = ifd(req, ino);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd == -1 ? -errno : 0;
	iput(req, ino);
	if (r < 0)
		return r;
	r = (datasync ? fdatasync(fd) : fsync(fd)) == -1 ? -errno : 0;
	close(fd);
	return r;
}

void hotfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi)
{
	int err = 0, fd;

	if (vd_is(ino)) {
		/* nothing to sync */
	} else if (dirp(fi) && dirp(fi)->dp) {
		fd = dirfd(dirp(fi)->dp);
		if ((datasync ? fdatasync(fd) : fsync(fd)) == -1)
			err = -errno;
	} else {
		/* no opendir: a descriptor for this call */
		err = sync_dir(req, ino, datasync);
	}
	fuse_reply_err(req, -err);
}
