/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small file I/O helpers shared by the daemon's modules (a leaf: it calls
 * no other file of src/).  All return -errno, never leave it in errno.
 */
#ifndef HOTFS_FILEIO_H
#define HOTFS_FILEIO_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* pread all of [off, off + len) unless EOF: the bytes read, or -errno. */
ssize_t pread_full(int fd, void *buf, size_t len, off_t off);
/* pwrite all of buf at off: len, or -errno (-EIO if nothing moves). */
ssize_t pwrite_full(int fd, const void *buf, size_t len, off_t off);

/*
 * Make fd (the cachedir or a file in it) the daemon's user's alone: of
 * exactly this mode (0700 for the cachedir, 0600 for its files), whatever
 * it was before (another user must read no byte of it).  Only if the
 * daemon's user (the effective uid) owns it: nothing is chowned, and
 * nothing of another user's is changed: -EACCES.  Nor a file with other
 * hard links (one planted in place of hotfs's own would carry the change
 * to the file it names): -EMLINK.  0 or -errno (those, or EPERM, EROFS
 * of fchmod: it cannot be made private, and must not be used).
 */
int file_make_private(int fd, mode_t mode);

/*
 * Why file_make_private refused (or an O_NOFOLLOW open of a name, with
 * ELOOP), for a message: "it belongs to another user, ...".
 */
const char *file_private_why(int err);

/*
 * Open dirfd/name (a file of the cachedir) with flags (O_CREAT makes it
 * 0600), without following a symlink (-ELOOP), and make it private
 * (file_make_private); O_TRUNC empties it only then.  The fd, or -errno
 * with why said ("it is a symlink, ...") if why is not NULL.
 */
int file_open_private(int dirfd, const char *name, int flags, char *why,
		      size_t whylen);

/*
 * Open the directory path (the cachedir) for reading, following no
 * symlink on the way: each component is opened O_NOFOLLOW, so a symlink
 * is refused (-ELOOP), not followed.  opt_validate resolved the path,
 * following only symlinks root or the daemon's user owns: one found here
 * was put there since.  Only a directory the daemon's user owns is
 * opened (-EACCES otherwise: hotfs takes over no one's directory).
 * With mkmode, a missing last component is made with it, in its parent
 * as opened.  The fd, or -errno with why said (naming the component
 * that failed) if why is not NULL.
 */
int dir_open_owned(const char *path, mode_t mkmode, char *why,
		   size_t whylen);

/*
 * Replace dirfd/name with len bytes of buf, crash-safely: written to
 * name.tmp (made anew, 0600), fsync'ed, renamed over name, the directory
 * fsync'ed.  After a crash the file is the old one or the new one, whole.
 * 0 or -errno (name.tmp removed).
 */
int file_replace_at(int dirfd, const char *name, const void *buf,
		    size_t len);

/*
 * Open the object the descriptor fd names (an O_PATH one will do) anew
 * with flags, through /proc/self/fd (proc_self_fd: an O_PATH descriptor
 * on that directory): the new descriptor, or -errno.  O_NOATIME in flags
 * is dropped where the caller may not use it (EPERM: not the owner).
 */
int reopen_fd(int proc_self_fd, int fd, int flags);

#endif
