/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File operations (src/fop/fop.c: the change bracket and the write mode;
 * src/fop/fop_data.c: a file's data; src/fop/fop_attr.c: its attributes, flush
 * and release; src/fop/fop_open.c: opening it; src/fop/fop_names.c: names
 * made and taken away): the core of the requests
 * that read or change a file, between the FUSE handlers (which
 * decode, call one fop_* function, and reply once) and the subsystems a
 * change concerns: the name cache (hotfs/namecache.h), the metadata
 * snapshot (hotfs/meta_fs.h), writeback (hotfs/wb.h), the stamps of the
 * mount's own changes (hotfs/stamp.h) and the cached data
 * (hotfs/cache_write.h).
 *
 * The write mode: fop_writeback(fs, in) is the one predicate.  True:
 * in's writes go to the writeback log (with in NULL: the mount writes
 * back, some of its files may); false: they go to the source, and the
 * cache keeps the bytes written (writethrough) or drops them
 * (writearound) in cache_write_end.
 *
 * The change bracket: a request that may change a name, attributes or
 * data through the mount runs its steps in this order, each optional,
 * and nothing else runs them:
 *
 *   fop_begin          1. the name cache's generation moves: a lookup
 *                         that overlaps the change is not kept
 *   fop_note           2. the metadata snapshot notes the change of a
 *                         directory's names or of an object (repeatable)
 *   fop_unlink_hook    3. writeback's hook for a name that goes (the
 *                         last link's dirty data): may refuse (-errno)
 *   fop_stamp          4. the change's new ctime, mtime, size are the
 *                         mount's own, not one behind it (repeatable)
 *   fop_wb_hook        5. writeback's hook for the data (the log cut
 *                         before the source is, or the file flushed and
 *                         sealed): may refuse (-errno); a create with
 *                         O_TRUNC has its own (fop_create_trunc before
 *                         the open, fop_create_opened after it)
 *   fop_data_begin     6. the cached data bracketed (cache_write_begin)
 *   ... the change on the source ...
 *   fop_data_end       6'. the cached data after it (cache_write_end);
 *                         5 to 6' may come again (setattr: size, then
 *                         times), each optional; no stamp after them
 *   fop_settle         4'. the stamps ended, the last first; 3'. the
 *                         name hook ended with the change's result
 *   fop_end            1'. the generation moves again (settles first if
 *                         that is not done), before the reply
 *
 * A step out of this order is a bug (assert).  Between fop_settle and
 * fop_end the request may look the new name up: what it learns is not
 * kept.  The second move comes before the reply (it came after it when
 * the operations table wrapped the handlers): what a lookup learns after
 * it, it learns from the source as the change left it.  Data changes the source's stamp checks depend on
 * (a write, a truncate) come in 6/6' alone: the cache's write bracket
 * marks them in flight on the inode itself.
 *
 * The steps are called through struct fop_steps (the real ones unless a
 * unit test sets its own with fop_set_steps).
 */
#ifndef HOTFS_FOP_H
#define HOTFS_FOP_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "hotfs/cache_write.h"
#include "hotfs/cred.h"
#include "hotfs/fs.h"
#include "hotfs/handle.h"
#include "hotfs/inode.h"
#include "hotfs/readpath.h"

/* The write mode (see above): in NULL asks about the mount. */
bool fop_writeback(struct hotfs *fs, struct hotfs_inode *in);
/* Whether the source's times change only at the mount's requests: not
 * with writeback, whose flusher changes them behind the requests (names
 * are then not kept for revalidate=N, hotfs/namecache.h). */
bool fop_times_ours(struct hotfs *fs);
/* The attributes through the mount into st (the source's stat of a file,
 * or the metadata snapshot's): writeback's dirty end over them
 * (hotfs/wb.h); every answer of attributes goes through it. */
void fop_attr(struct hotfs *fs, struct stat *st);

/* ---- the change bracket ---- */

/* what the data hook of step 5 does */
enum fop_wb_hook {
	FOP_WB_TRUNCATE,	/* the log cut to the size (wb_truncate) */
	FOP_WB_FLUSH,		/* the file flushed and sealed */
};

#define FOP_MAX_STAMPS	2

/* One change in flight: the caller's storage, its fields src/fop/fop.c's. */
struct fop_change {
	struct hotfs *fs;
	int step;			/* the last step run (see above) */
	/* 3: the name hook */
	bool unlinking, drop;
	const struct stat *unlink_st;
	/* 4: the objects stamped, their fds (own: taken by the bracket) */
	struct hotfs_inode *stamped[FOP_MAX_STAMPS];
	int stamp_fd[FOP_MAX_STAMPS];
	bool stamp_own[FOP_MAX_STAMPS];
	unsigned nstamp;
	/* 6: the cached data's bracket */
	struct hotfs_inode *data_in;
	struct cache_wr w;
	bool data, data_done;
	int err;			/* the change's result (fop_settle) */
};

void fop_begin(struct fop_change *ch, struct hotfs *fs);
void fop_note(struct fop_change *ch, struct hotfs_inode *dir,
	      struct hotfs_inode *in);
/* st: the stat of the file whose name goes (in: its inode, if known);
 * kept until fop_settle.  0 or -errno (do not remove it). */
int fop_unlink_hook(struct fop_change *ch, struct hotfs_inode *in,
		    const struct stat *st);
/* in's change stamped through fd (its O_PATH fd, in use by the caller),
 * or, fd < 0, through its fd taken now and put back at fop_settle; in
 * NULL or its fd not to be had: nothing. */
void fop_stamp(struct fop_change *ch, struct hotfs_inode *in, int fd);
/* Writeback's data hook (step 5; size: FOP_WB_TRUNCATE's), if in's
 * writes go to the log: 0 or -errno (do not change the source). */
int fop_wb_hook(struct fop_change *ch, struct hotfs_inode *in,
		enum fop_wb_hook hook, uint64_t size);
/* The cached data's bracket (step 6) for [off, off + len) of in
 * (hotfs/cache_write.h; c: NULL for none); fop_data_end with the range
 * touched (no_old: its end drops every record, the stamp before it is
 * not known). */
void fop_data_begin(struct fop_change *ch, struct hotfs_inode *in,
		    struct hotfs_cache *c, uint64_t off, uint64_t len);
void fop_data_end(struct fop_change *ch, struct hotfs_cache *c,
		  uint64_t off, uint64_t len, const void *data, bool no_old);
/*
 * Writeback's O_TRUNC at a create (step 5, before and after the open of
 * name in the directory pfd): fop_create_trunc may take O_TRUNC out of
 * *flags (*after: the file is cut in the log, then on the source, once
 * it is open: fop_create_opened, which returns fd, or -errno with fd
 * closed); O_RDONLY|O_TRUNC, which leaves no descriptor to cut by, has
 * the file the name holds now cut in the log first.  0 or -errno.
 */
int fop_create_trunc(struct fop_change *ch, int pfd, const char *name,
		     int *flags, bool *after);
int fop_create_opened(struct fop_change *ch, int fd, bool after);
void fop_settle(struct fop_change *ch, int err);
void fop_end(struct fop_change *ch);

/* The steps (the test of the order replaces them). */
struct fop_steps {
	void (*nc_changed)(void);
	void (*meta_change)(struct hotfs *fs, struct hotfs_inode *dir,
			    struct hotfs_inode *in);
	bool (*wb_on)(struct hotfs_wb *wb, struct hotfs_inode *in);
	int (*wb_unlink_begin)(struct hotfs_wb *wb, bool known,
			       const struct stat *st, bool *drop);
	void (*wb_unlink_end)(struct hotfs_wb *wb, const struct stat *st,
			      bool drop, int err);
	int (*ino_fd)(struct hotfs_itable *it, struct hotfs_inode *in);
	void (*ino_fd_put)(struct hotfs_inode *in);
	void (*stamp_begin)(struct hotfs_inode *in, int fd);
	void (*stamp_end)(struct hotfs_inode *in, int fd);
	int (*wb_truncate)(struct hotfs_wb *wb, struct hotfs_inode *in,
			   uint64_t size);
	int (*wb_flush)(struct hotfs_wb *wb, struct hotfs_inode *in);
	int (*wb_trunc_st)(struct hotfs_wb *wb, const struct stat *st);
	int (*wb_trunc_fd)(struct hotfs_wb *wb, int fd,
			   const struct stat *st);
	void (*cache_write_begin)(struct hotfs_cache *c,
				  struct hotfs_itable *it,
				  struct hotfs_inode *in, struct cache_wr *w,
				  uint64_t off, uint64_t len);
	void (*cache_write_end)(struct hotfs_cache *c, struct hotfs_inode *in,
				struct cache_wr *w, uint64_t off, uint64_t len,
				const void *data);
};
/* NULL: the real ones again. */
void fop_set_steps(const struct fop_steps *s);

/* ---- the operations on a file's data (src/fop/fop_data.c) ----
 *
 * fh: the request's handle, NULL when it has none (no open: the
 * operation opens the source for itself and closes it after, a failed
 * close reported as close(2) would); flags: the handle's open flags.
 * Each returns what its reply needs: a count, 0, or -errno.
 */

/* A read's answer, and what it holds until the reply is sent. */
struct fop_rd {
	struct rp_reply rep;
	struct hotfs_fh *shared;	/* the inode's shared handle (no
					 * open), released after the reply */
	int fd;
	bool tmp;
};
int fop_read(struct hotfs *fs, struct hotfs_inode *in, struct hotfs_fh *fh,
	     int flags, size_t size, off_t off, struct fop_rd *rd);
/* After the reply (the shared handle gives up what it assembled: the
 * inode is held until then). */
void fop_read_done(struct hotfs *fs, struct hotfs_inode *in,
		   struct fop_rd *rd);
ssize_t fop_write(struct hotfs *fs, struct hotfs_inode *in,
		  struct hotfs_fh *fh, int flags, struct fuse_bufvec *buf,
		  off_t off);
/* in cut to size, through hfd (a handle's source fd) or, hfd < 0, its
 * O_PATH fd (fd, in use by the caller); within ch's bracket. */
int fop_truncate(struct fop_change *ch, struct hotfs_inode *in, int fd,
		 int hfd, off_t size);
int fop_fallocate(struct hotfs *fs, struct hotfs_inode *in,
		  struct hotfs_fh *fh, int mode, off_t off, off_t len);
ssize_t fop_copy_range(struct hotfs *fs, struct hotfs_inode *in,
		       struct hotfs_fh *fh_in, off_t off_in,
		       struct hotfs_inode *out, struct hotfs_fh *fh_out,
		       int flags_out, off_t off_out, size_t len, int flags);
int fop_sync(struct hotfs *fs, struct hotfs_inode *in, struct hotfs_fh *fh,
	     bool datasync);
off_t fop_lseek(struct hotfs *fs, struct hotfs_inode *in,
		struct hotfs_fh *fh, off_t off, int whence);

/* ---- the operations on names (src/fop/fop_names.c) ---- */

/* The caller a request creates objects as (hotfs/cred.h), decoded by its
 * handler: its ids and groups, acted as (act) when the daemon runs as
 * root and the caller is not; its umask where the kernel left it to the
 * daemon (umask_set). */
struct fop_caller {
	struct cred_who who;		/* groups: in groups[] below */
	gid_t groups[CRED_MAX_GROUPS];
	bool act, umask_set;
	mode_t umask;
};

/*
 * The new name's lookup, which the three operations that make one run in
 * their bracket once the name is made (what it learns is not kept: see
 * the order above): the FUSE layer's, whose entry the reply carries.
 * look: 0 and *in, the inode it names (one lookup count taken for the
 * reply), or -errno; unlook: that count given back (no reply will take
 * it).
 */
struct fop_lookup {
	int (*look)(void *arg, struct hotfs_inode **in);
	void (*unlook)(void *arg);
	void *arg;
};

/*
 * These three each run one bracket that spans the lookup of the new name
 * (lk): they note the change of dir's names, tell the source watch the
 * event is the mount's own (hotfs/watch.h), act as the caller, and look
 * the new name up.
 */
/* mknod, mkdir (S_IFDIR in mode), symlink (S_IFLNK: link its target)
 * of name in dir; -errno. */
int fop_make(struct hotfs *fs, const struct fop_caller *who,
	     struct hotfs_inode *dir, const char *name, mode_t mode,
	     dev_t rdev, const char *link, const struct fop_lookup *lk);
/* A new name for in in dir (its new link count and ctime stamped as the
 * mount's own); -errno. */
int fop_link(struct hotfs *fs, struct hotfs_inode *in,
	     struct hotfs_inode *dir, const char *name,
	     const struct fop_lookup *lk);
/* Create (or open, without O_EXCL) name in dir with fi's flags
 * (writeback's O_TRUNC: fop_create_trunc, fop_create_opened), and the
 * new file's handle in fi as fop_open leaves it (an existing file cut by
 * O_TRUNC has its cached data dropped); *in: the inode the lookup named.
 * 0 or -errno (nothing open, no lookup count kept). */
int fop_create(struct hotfs *fs, const struct fop_caller *who,
	       struct hotfs_inode *dir, const char *name, mode_t mode,
	       struct fuse_file_info *fi, const struct fop_lookup *lk,
	       struct hotfs_inode **in);

/* unlink (flags 0) or rmdir (AT_REMOVEDIR) of name in dir; -errno. */
int fop_unlink(struct hotfs *fs, struct hotfs_inode *dir, const char *name,
	       int flags);
/* renameat2 of name in dir to newname in ndir; -errno. */
int fop_rename(struct hotfs *fs, struct hotfs_inode *dir, const char *name,
	       struct hotfs_inode *ndir, const char *newname,
	       unsigned int flags);

/* ---- the operations on attributes (src/fop/fop_attr.c) ---- */

/* setattr (FUSE_SET_ATTR_* in valid) through fh (NULL: none); -errno. */
int fop_setattr(struct hotfs *fs, struct hotfs_inode *in,
		struct hotfs_fh *fh, const struct stat *attr, int valid);
/* setxattr, or removexattr (value NULL); -errno. */
int fop_setxattr(struct hotfs *fs, struct hotfs_inode *in, const char *name,
		 const char *value, size_t size, int flags);
/*
 * FS_IOC_GETFLAGS/SETFLAGS and FS_IOC_FSGETXATTR/FSSETXATTR on in,
 * through a descriptor opened on it for the call (ioctl needs one that
 * is not O_PATH), with the sizes the kernel sent (a flags word as an
 * int, a struct fsxattr): the bytes of *out to reply with, or -errno
 * (-ENOTTY: not a regular file or directory).
 */
union fop_fileattr {
	int flags;
	char bytes[32];		/* a struct fsxattr (28 bytes) */
};
ssize_t fop_fileattr(struct hotfs *fs, struct hotfs_inode *in,
		     unsigned int cmd, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz, union fop_fileattr *out);
/* flush: the source file's write errors, as close(2) reports them. */
int fop_flush(struct hotfs *fs, struct hotfs_fh *fh);
/* release of a handle (flags: its open's; fh NULL: none): the backing
 * id (hotfs/passthrough.h) its last passthrough open leaves for the
 * caller to close, or 0. */
int fop_release(struct hotfs *fs, struct hotfs_inode *in,
		struct hotfs_fh *fh, int flags);

/* ---- opening a file (src/fop/fop_open.c) ---- */

/* Flags for the daemon's own fd on the source: the kernel has handled
 * O_NOFOLLOW and O_DIRECT. */
int fop_backing_flags(int flags);
/* revalidate=N: is in's stamp, as its last check took it from the
 * source, still trusted (unchanged by the mount since, settled)?  Under
 * in->m. */
bool fop_stamp_trusted_locked(struct hotfs *fs, struct hotfs_inode *in);
/*
 * Open in for fi (fi->fh, keep_cache, noflush set; O_TRUNC: a write
 * through the mount, in its change bracket; revalidate=N may answer a
 * read-only open without the source): 0, 1 if the file changed behind
 * the mount (close-to-open: the kernel's cached attributes are to be
 * dropped), or -errno.  A reply the kernel did not take (interrupted):
 * fop_open_undone.
 */
/*
 * Passthrough opens (hotfs/passthrough.h).  The kernel wants every open
 * of an inode to use one backing file, or none to: a mixed open gets
 * EIO.  So in->op counts the inode's opens and its passthrough ones, and
 * a read-only open of a file whose copy (hotfs/filecopy.h) is current
 * at the open's stamp is answered with the copy only while the inode has
 * no other open; the first one makes the backing id, which the others
 * share, the last release closes it.  An open the copy cannot serve (a
 * write, O_TRUNC, the file changed since the copy) of an inode with
 * passthrough opens is answered -ESTALE and the inode retired
 * (ino_retire): the kernel walks the path again with LOOKUP_REVAL,
 * meets a new node for the same source file and opens that.  The open
 * readers keep the old copy's bytes until they close (close-to-open, as
 * NFS); new opens see the change.  The kernel walks again only once: a
 * read-only open of the new node between its lookup and the retried
 * open would make that open fail ESTALE again, so an inode made while a
 * retired one of its file is known takes no passthrough open for
 * FOP_PT_HOLD_NS (its opens read the copy through the daemon).  The
 * backing id is made and the copy opened under in->m (local calls on
 * the cachedir and /dev/fuse, no source I/O), so that no two opens
 * decide apart.
 */
#define FOP_PT_HOLD_NS	2000000000LL
struct fop_backing {
	/* a backing id for fd (> 0), or 0: the kernel refused it (the
	 * caller turns passthrough off for the mount then) */
	int (*open)(void *arg, int fd);
	/* close a backing id an open the kernel did not take left behind */
	void (*close)(void *arg, int id);
	void *arg;
};
int fop_open(struct hotfs *fs, struct hotfs_inode *in,
	     struct fuse_file_info *fi, const struct fop_backing *bk);
/* The kernel did not take the reply of an open (or a create) with
 * flags: undone (a backing id made for it is kept by the inode for its
 * next passthrough open). */
void fop_open_undone(struct hotfs_inode *in, struct hotfs_fh *fh,
		     int flags);
/* Do open flags write? (the inode counts such handles: op.w) */
static inline bool fop_writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY;
}

#endif
