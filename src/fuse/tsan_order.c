// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Built into the ThreadSanitizer build against the bundled libfuse alone
 * (meson.build): the kernel's ordering of FUSE requests, told to TSan.
 *
 * Through FUSE over io_uring each queue's thread runs its handlers with
 * no lock shared with another queue's: an inode made by a lookup on one
 * queue and read by the next request for it on another are ordered by
 * the kernel (the reply carries the node id; the request naming it comes
 * after), which TSan does not see, and it reports a race on each.  The
 * /dev/fuse loop hides the same by its own lock around each request.
 * So every reply releases, and every handler acquires (hfs(), fuse_i.h),
 * one sync object; the link wraps libfuse's reply calls
 * (-Wl,--wrap=...).  The price: a race between code before a reply and
 * a handler that started after it is missed (the TSan stage against
 * the system's libfuse, without this, still sees those).
 */
#include <stddef.h>
#include <sys/uio.h>

#include "fuse_i.h"

char hotfs_tsan_order;

#define RELEASE()	__tsan_release(&hotfs_tsan_order)

/* __wrap_NAME(PARAMS): release, then libfuse's NAME(ARGS) */
#define WRAP(ret, name, params, args)			\
	ret __real_##name params;			\
	ret __wrap_##name params;			\
	ret __wrap_##name params			\
	{						\
		RELEASE();				\
		return __real_##name args;		\
	}

void __real_fuse_reply_none(fuse_req_t req);
void __wrap_fuse_reply_none(fuse_req_t req);
void __wrap_fuse_reply_none(fuse_req_t req)
{
	RELEASE();
	__real_fuse_reply_none(req);
}

WRAP(int, fuse_reply_err, (fuse_req_t req, int err), (req, err))
WRAP(int, fuse_reply_entry, (fuse_req_t req, const struct fuse_entry_param *e),
     (req, e))
WRAP(int, fuse_reply_create, (fuse_req_t req, const struct fuse_entry_param *e,
			      const struct fuse_file_info *fi), (req, e, fi))
WRAP(int, fuse_reply_attr, (fuse_req_t req, const struct stat *attr,
			    double timeout), (req, attr, timeout))
WRAP(int, fuse_reply_readlink, (fuse_req_t req, const char *link), (req, link))
WRAP(int, fuse_reply_open, (fuse_req_t req, const struct fuse_file_info *fi),
     (req, fi))
WRAP(int, fuse_reply_write, (fuse_req_t req, size_t count), (req, count))
WRAP(int, fuse_reply_buf, (fuse_req_t req, const char *buf, size_t size),
     (req, buf, size))
WRAP(int, fuse_reply_iov, (fuse_req_t req, const struct iovec *iov, int count),
     (req, iov, count))
WRAP(int, fuse_reply_statfs, (fuse_req_t req, const struct statvfs *stbuf),
     (req, stbuf))
WRAP(int, fuse_reply_xattr, (fuse_req_t req, size_t count), (req, count))
WRAP(int, fuse_reply_ioctl, (fuse_req_t req, int result, const void *buf,
			     size_t size), (req, result, buf, size))
WRAP(int, fuse_reply_lseek, (fuse_req_t req, off_t off), (req, off))
