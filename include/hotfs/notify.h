/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Notifications to the kernel (an entry to expire, an inode's attributes
 * or pages to drop) sent by a thread of their own, in the order queued,
 * for callers that must not wait for them: the source watch (hotfs/watch.h).
 *
 * A notification may wait in the kernel.  An entry's takes the
 * directory's lock, which the kernel holds for a rename, a create or an
 * unlink in it while the request is in flight (until the daemon's
 * answer); dropping a file's pages takes each page's lock, which a read
 * holds until its answer.  So no request, and no lock a request needs,
 * ever waits for this thread (but an inode's free, for a send about that
 * inode, which takes no lock of the kernel's: see below); it takes no
 * lock but its own, never across a send, and in a sent callback the
 * caller's.
 *
 * A kill -9 of the daemon while the thread waits so: the kernel's lock is
 * uninterruptible, and a process whose thread waits on one cannot finish
 * exiting; if the thread shared the daemon's descriptors, the session's
 * /dev/fuse (which it would keep open) would never be released, the
 * connection never aborted, and the request holding the lock never
 * answered: the mount then stays until an abort through
 * /sys/fs/fuse/connections.  The thread has a descriptor table of its own
 * instead (unshare(CLONE_FILES)), holding nothing but a clone of the
 * session's device (FUSE_DEV_IOC_CLONE) at the session's descriptor's
 * number, where libfuse's notification calls write, and stderr.  When
 * the other threads are gone the daemon's own descriptors are released:
 * the kernel ends the requests the daemon had read through them (with
 * ECONNABORTED), their locks go, and if the send then gets its lock it
 * returns, the thread dies, and with its clone the connection is
 * aborted.
 *
 * What remains, and no design of the daemon's can remove (the lock is
 * the kernel's, and the clone the send holds keeps the connection up):
 * a lock taken before the send's turn by a request the daemon has not
 * read (sent before the kill, or after it by a process that was waiting
 * for the lock ahead of the send) is held until an abort.  Such a send
 * is one of a change behind the mount, in a directory where the mount is
 * busy at that moment: the mount's own changes send nothing (the watch
 * knows them, hotfs/watch.h).  In one run of a test renaming through the
 * mount and behind it in the same directories as fast as it can, 6 kills
 * in 30 needed an abort with this table, 18 in 30 without.  If the device
 * cannot be cloned (no access to /dev/fuse) the thread shares the
 * daemon's descriptors, as any other.
 *
 * Since the thread may have no descriptor but those, nothing it runs may
 * use one: no logging, no inode's fd; a note's sent callback too.
 *
 * A note names a node id (an inode's address, inode.c): when an inode is
 * freed its queued notes go (ntf_forget), and its free waits while one is
 * being sent; the kernel has forgotten such a node, so that send takes
 * none of its locks.
 *
 * Lock: n->m, a leaf.
 */
#ifndef HOTFS_NOTIFY_H
#define HOTFS_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

struct hotfs_notify;

/* Start the thread; notifications go to se's device.  0 or -errno. */
int ntf_start(struct hotfs_notify **np, struct fuse_session *se);
/* Stop it (before the session's device is closed); the notes still
 * queued are dropped, their sent callbacks called.  n may be NULL. */
void ntf_stop(struct hotfs_notify *n);

/*
 * Queue the expiry of parent's entry name (the kernel asks again at the
 * next path walk through it, and keeps it if it still leads to the same
 * node), or the invalidation of node's attributes (off < 0) and of its
 * pages or cached listing from off on.  sent(arg), if given, is called
 * by the thread once the kernel has it (or it failed, or was dropped).
 * Never waits: may be called with locks held, and by requests.
 */
void ntf_expire(struct hotfs_notify *n, uint64_t parent, const char *name);
void ntf_inval(struct hotfs_notify *n, uint64_t node, int64_t off,
	       void (*sent)(void *arg), void *arg);

/* Wait while the queue is long (a caller that queues in bulk, holding
 * no lock: the source watch's thread). */
void ntf_wait_room(struct hotfs_notify *n);

/* node is being freed: its queued notes dropped (not their sent
 * callbacks), and one being sent waited for. */
void ntf_forget(struct hotfs_notify *n, uint64_t node);

/* Notifications sent. */
uint64_t ntf_sent(struct hotfs_notify *n);
/* Has the thread a descriptor table of its own (see above)? */
bool ntf_own_files(struct hotfs_notify *n);

#endif
