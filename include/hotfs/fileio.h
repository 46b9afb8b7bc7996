/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small file I/O helpers shared by the daemon's modules (a leaf: it calls
 * no other file of src/).  All return -errno, never leave it in errno.
 */
#ifndef HOTFS_FILEIO_H
#define HOTFS_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* pread all of [off, off + len) unless EOF: the bytes read, or -errno. */
ssize_t pread_full(int fd, void *buf, size_t len, off_t off);

/*
 * Open the object the descriptor fd names (an O_PATH one will do) anew
 * with flags, through /proc/self/fd (proc_self_fd: an O_PATH descriptor
 * on that directory): the new descriptor, or -errno.  O_NOATIME in flags
 * is dropped where the caller may not use it (EPERM: not the owner).
 */
int reopen_fd(int proc_self_fd, int fd, int flags);

#endif
