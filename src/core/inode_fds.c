// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode table's file handles, for the fd budget (see inode.c's
 * header): whether the source has usable ones (probed once), the handle
 * recorded as the budget closes an inode's fd, and the reopen by it that
 * ino_fd does, checked to be the same object.  Inodes without a usable
 * handle (deleted, on another mount than the root's) keep their fds.
 *
 * Locks: the inode's m to swap its fd and record its handle; the table
 * lock never (the shrinker holds the inode instead).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hotfs/inode.h"
#include "hotfs/log.h"
#include "inode_i.h"

/* A file handle for fd, sized to fit; NULL with errno. */
static struct file_handle *make_handle(int fd, int *mnt_id)
{
	struct file_handle *fh, *small;

	fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	if (!fh)
		return NULL;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", fh, mnt_id, AT_EMPTY_PATH) == -1) {
		int e = errno;

		free(fh);
		errno = e;
		return NULL;
	}
	small = realloc(fh, sizeof(*fh) + fh->handle_bytes);
	return small ? small : fh;
}

/* Reopen an inode whose fd the budget closed; the fd or -errno. */
int ino_reopen(struct hotfs_itable *t, struct hotfs_inode *in,
	       struct file_handle *fh)
{
	struct stat st;
	int fd;

	fd = open_by_handle_at(t->mount_fd, fh, O_PATH | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	/* a handle names one object for its lifetime, but a filesystem
	 * may reuse inode numbers: check it is the object we had */
	if (fstat(fd, &st) == -1 || st.st_dev != in->dev ||
	    st.st_ino != in->ino || (st.st_mode & S_IFMT) != in->type) {
		close(fd);
		return -ESTALE;
	}
	atomic_fetch_add(&t->fd_reopens, 1);
	return fd;
}

/*
 * Whether inodes can be reopened by handle here: the root's handle
 * opened on the root's mount.  Probed once, by the shrinker.
 */
bool ino_handles_work(struct hotfs_itable *t)
{
	struct file_handle *fh;
	int fd = -1, e;

	if (t->handles)
		return t->handles > 0;
	/* open_by_handle_at wants an fd it can use as a file: O_PATH's
	 * is refused (EBADF) */
	t->mount_fd = openat(t->root.fd, ".",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fh = t->mount_fd < 0 ? NULL : make_handle(t->root.fd, &t->mnt_id);
	if (fh)
		fd = open_by_handle_at(t->mount_fd, fh, O_PATH | O_CLOEXEC);
	e = errno;
	free(fh);
	if (fd >= 0) {
		close(fd);
		t->handles = 1;
		return true;
	}
	hotfs_log(LOG_WARNING, "source has no usable file handles (%s%s): "
		  "every inode the kernel knows keeps an open fd, past the "
		  "fd budget of %zu\n", strerror(e),
		  e == EPERM ? ", CAP_DAC_READ_SEARCH is needed" : "",
		  t->fd_budget);
	if (t->mount_fd >= 0)
		close(t->mount_fd);
	t->mount_fd = -1;
	t->handles = -1;
	return false;
}

/* Why an inode keeps its fd: logged once. */
static void keep_fd(struct hotfs_itable *t, struct hotfs_inode *in, int e)
{
	atomic_store(&in->fd_keep, true);
	if (!e || t->warned_keep)
		return;
	t->warned_keep = true;
	hotfs_log(LOG_WARNING, "inode %llu: no file handle (%s): it and "
		  "others like it keep their fds past the fd budget\n",
		  (unsigned long long)in->ino, strerror(e));
}

/*
 * Close in's fd for the budget if nothing is using it; in is held.  Only
 * shrink() closes an fd that is >= 0 and the hold keeps free_inode off,
 * so in->fd cannot change under us until we swap it under m.
 */
void ino_drop_fd(struct hotfs_itable *t, struct hotfs_inode *in)
{
	struct file_handle *fh = NULL;
	struct stat st;
	bool have, dropped = false;
	int fd = atomic_load(&in->fd), mnt;

	if (fd < 0)
		return;
	/* deleted: a handle would not find it again (ESTALE) */
	if (fstat(fd, &st) == -1 || st.st_nlink == 0) {
		keep_fd(t, in, 0);
		return;
	}
	pthread_mutex_lock(&in->m);
	have = in->fh != NULL;
	pthread_mutex_unlock(&in->m);
	if (!have) {
		fh = make_handle(fd, &mnt);
		if (!fh || mnt != t->mnt_id) {
			/* a mount inside the source: the root's mount_fd
			 * would not decode it */
			keep_fd(t, in, fh ? 0 : errno);
			free(fh);
			return;
		}
	}
	pthread_mutex_lock(&in->m);
	if (!in->fh) {
		in->fh = fh;
		fh = NULL;
	}
	if (in->fd == fd && !in->fd_users && !in->op.n) {
		in->fd = -1;
		/* opened once: the snapshot's attributes no longer count */
		in->snap.snap_st = NULL;
		in->snap.snap_target = NULL;
		dropped = true;
	}
	pthread_mutex_unlock(&in->m);
	free(fh);
	if (dropped) {
		close(fd);
		atomic_fetch_sub(&t->nfds, 1);
		atomic_fetch_add(&t->fd_drops, 1);
	}
}
