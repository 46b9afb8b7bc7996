/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to the FUSE layer (src/fuse_*.c): decoding a request's node
 * ids, handles and caller, and the handlers and helpers the files of the
 * layer share.  The handlers decode, call the core (hotfs/fop.h: the
 * file operations, which run every change in one bracket), and reply
 * exactly once; below them everything returns -errno.
 *
 *   fuse_ops.c    the operations table and FUSE_INIT
 *   fuse_entry.c  lookup, forget, getattr, setattr, readlink, statfs,
 *                 access: entries and attributes
 *   fuse_names.c  mknod, mkdir, symlink, link, unlink, rmdir, rename
 *   fuse_file.c   open, create, read, write, flush, fsync, release,
 *                 fallocate, copy_file_range, lseek
 *   fuse_dir.c    opendir, readdir(plus), releasedir, fsyncdir
 *   fuse_xattr.c  extended attributes and ioctls
 *
 * Node ids are inode addresses (struct hotfs_inode *), the root's is
 * FUSE_ROOT_ID; file handles are struct hotfs_fh * (hotfs/handle.h).
 * No lock is held across a reply or across source I/O, except where
 * hotfs/stamp.h says why (the stamp of a change of the mount's own).
 */
#ifndef HOTFS_FUSE_I_H
#define HOTFS_FUSE_I_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "hotfs/cred.h"
#include "hotfs/fop.h"
#include "hotfs/fs.h"
#include "hotfs/handle.h"
#include "hotfs/inode.h"
#include "hotfs/wbmark.h"

/*
 * libfuse 3.18 ends its io_uring queue threads with pthread_cancel, which
 * ends one running a handler at its next cancellation point (a read, a
 * condition wait), the locks it holds never let go: the daemon's teardown
 * then waits forever (a SIGTERM while requests came in).  A thread that
 * ran a handler is never cancelled: a queue thread ends when it sees the
 * session end, woken by libfuse; the /dev/fuse loop's workers are
 * cancelled only while they wait for a request, as libfuse has them.
 */
extern __thread bool fuse_no_cancel;

#ifdef HOTFS_TSAN_ORDER
/* ThreadSanitizer against FUSE over io_uring (src/fuse/tsan_order.c):
 * a handler sees what every reply before it published */
#include <sanitizer/tsan_interface.h>
extern char hotfs_tsan_order;
#define tsan_order_acquire()	__tsan_acquire(&hotfs_tsan_order)
#else
#define tsan_order_acquire()	do { } while (0)
#endif

static inline struct hotfs *hfs(fuse_req_t req)
{
	if (!fuse_no_cancel) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		fuse_no_cancel = true;
	}
	tsan_order_acquire();
	return fuse_req_userdata(req);
}

/* The writeback mark at the source's root (hotfs/wbmark.h): hidden, no
 * name operation reaches it. */
static inline bool mark_name(fuse_ino_t parent, const char *name)
{
	return parent == FUSE_ROOT_ID && strcmp(name, WBMARK_NAME) == 0;
}

static inline struct hotfs_inode *hino_fs(struct hotfs *fs, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return ino_root(fs->it);
	return (struct hotfs_inode *)(uintptr_t)ino;
}

static inline struct hotfs_inode *hino(fuse_req_t req, fuse_ino_t ino)
{
	return hino_fs(hfs(req), ino);
}

/* The inode's source fd, opened now if it was made from the metadata
 * snapshot or closed for the fd budget; -1 with errno if its name is
 * gone.  In use until iput(req, ino) (ino_fd_put). */
static inline int ifd(fuse_req_t req, fuse_ino_t ino)
{
	return ino_fd(hfs(req)->it, hino(req, ino));
}

static inline void iput(fuse_req_t req, fuse_ino_t ino)
{
	ino_fd_put(hino(req, ino));
}

static inline struct hotfs_fh *hfh(struct fuse_file_info *fi)
{
	tsan_order_acquire();	/* the handle: made by open's request */
	return (struct hotfs_fh *)(uintptr_t)fi->fh;
}

static inline void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* A request of those the stats count by kind (fs->n_uring): counted
 * there too if it came through FUSE over io_uring. */
static inline void count_uring(fuse_req_t req)
{
#ifdef FUSE_CAP_OVER_IO_URING
	if (fuse_req_is_uring(req))
		count(&hfs(req)->n_uring);
#else
	(void)req;
#endif
}

/* The source fd of a handle, opened or not (-1: not yet, lazy: see
 * fh_source). */
static inline int fhfd(struct fuse_file_info *fi)
{
	return atomic_load(&hfh(fi)->fd);
}

/* The name of fd under /proc/self/fd (fs->proc_self_fd). */
static inline void procname(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "%d", fd);
}

/* Act as the caller (hotfs/cred.h) until as_daemon. */
static inline void as_caller(fuse_req_t req, struct cred *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[CRED_MAX_GROUPS];
	struct cred_who w = { .uid = ctx->uid, .gid = ctx->gid,
			      .groups = groups };

	c->changed = false;
	if (!hfs(req)->as_root || (ctx->uid == 0 && ctx->gid == 0))
		return;
	w.ngroups = fuse_req_getgroups(req, CRED_MAX_GROUPS, groups);
	if (w.ngroups < 0)
		w.ngroups = 0;
	if (w.ngroups > CRED_MAX_GROUPS)
		w.ngroups = CRED_MAX_GROUPS;
	cred_enter(&w, true, c);
}

static inline void as_daemon(struct cred *c)
{
	cred_exit(c);
}

/* The caller, for the file operations that create objects as it
 * (hotfs/fop.h): its groups read only when the daemon will act as it. */
static inline void caller_of(fuse_req_t req, struct fop_caller *w)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int n;

	w->who.uid = ctx->uid;
	w->who.gid = ctx->gid;
	w->who.groups = w->groups;
	w->who.ngroups = 0;
	w->act = hfs(req)->as_root && !(ctx->uid == 0 && ctx->gid == 0);
	if (w->act) {
		n = fuse_req_getgroups(req, CRED_MAX_GROUPS, w->groups);
		w->who.ngroups = n < 0 ? 0 : n > CRED_MAX_GROUPS ?
				 CRED_MAX_GROUPS : n;
	}
	w->umask_set = hfs(req)->dont_mask;
	w->umask = ctx->umask;
}

/* fuse_entry.c */
int stat_fd(int fd, struct stat *st);
bool watched(struct hotfs *fs, fuse_ino_t dir);
double entry_timeout(struct hotfs *fs, bool dir_watched);
double attr_timeout(struct hotfs *fs, struct hotfs_inode *in);
void forget_one(struct hotfs *fs, fuse_ino_t ino, uint64_t n);
void reply_entry(fuse_req_t req, const struct fuse_entry_param *e);
int do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name,
	      struct fuse_entry_param *e);
/* The lookup of a new name the fop_* that make one run in their bracket
 * (struct fop_lookup, hotfs/fop.h): do_lookup of name in parent into
 * n->e; *lk set to run it. */
struct new_entry {
	fuse_req_t req;
	fuse_ino_t parent;
	const char *name;
	struct fuse_entry_param e;
};
void new_entry_lookup(struct new_entry *n, struct fop_lookup *lk,
		      fuse_req_t req, fuse_ino_t parent, const char *name);
/* dir's entries changed through the mount: its attributes made stale
 * before the reply (fuse_entry.c says why). */
void dir_changed(fuse_req_t req, fuse_ino_t dir);
void hotfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void hotfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void hotfs_forget_multi(fuse_req_t req, size_t count,
			struct fuse_forget_data *forgets);
void hotfs_getattr(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi);
void hotfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		   int valid, struct fuse_file_info *fi);
void hotfs_readlink(fuse_req_t req, fuse_ino_t ino);
void hotfs_statfs(fuse_req_t req, fuse_ino_t ino);
void hotfs_access(fuse_req_t req, fuse_ino_t ino, int mask);

/* fuse_names.c */
void hotfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev);
void hotfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode);
void hotfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		   const char *name);
void hotfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		const char *name);
void hotfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void hotfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void hotfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname,
		  unsigned int flags);

/* fuse_file.c */
void hotfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hotfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, struct fuse_file_info *fi);
void hotfs_release(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi);
void hotfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hotfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);
void hotfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void hotfs_write_buf(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_bufvec *in_buf, off_t off,
		     struct fuse_file_info *fi);
void hotfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
		     off_t len, struct fuse_file_info *fi);
void hotfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			   struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			   off_t off_out, struct fuse_file_info *fi_out,
			   size_t len, int flags);
void hotfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		 struct fuse_file_info *fi);

/* fuse_dir.c */
void hotfs_opendir(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi);
void hotfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void hotfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi);
void hotfs_releasedir(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi);
void hotfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi);

/* fuse_xattr.c */
void hotfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    size_t size);
void hotfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void hotfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		    const char *value, size_t size, int flags);
void hotfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void hotfs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		 void *arg, struct fuse_file_info *fi, unsigned flags,
		 const void *in_buf, size_t in_bufsz, size_t out_bufsz);

#endif
