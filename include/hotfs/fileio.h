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
 * Make fd (the cachedir or a file in it) the daemon's user's alone:
 * owned by the effective uid and of exactly this mode (0700 for the
 * cachedir, 0600 for its files), whatever it was before (another user
 * must read no byte of it).  0 or -errno (EPERM, EROFS: it cannot be
 * made private, and must not be used).
 */
int file_make_private(int fd, mode_t mode);

/*
 * Replace dirfd/name with len bytes of buf, crash-safely: written to
 * name.tmp (0600, private), fsync'ed, renamed over name, the directory
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
