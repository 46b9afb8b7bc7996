// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * logwrites.so: an LD_PRELOAD recorder of a process's writes, durability
 * points and metadata changes to the files under some directories, in the
 * manner of dm-log-writes (which records the block device's writes and
 * flushes; this kernel has no device-mapper).  test_powerloss.py
 * replays prefixes of the trace onto copies of the files taken before, to
 * build the states a power loss could leave.
 *
 *   LOGWRITES_TRACE=FILE LOGWRITES_DIRS=DIR[:DIR...] \
 *   LD_PRELOAD=logwrites.so CMD
 *
 * Recorded, for a descriptor or a path under one of the directories:
 * write, pwrite, pwritev(2) and writev (the bytes written, at the offset
 * they went to), fsync, fdatasync, sync_file_range and syncfs, ftruncate,
 * fallocate, rename(at)(2), unlink(at), and opens with O_CREAT or O_TRUNC.
 * One lock is held across each call and its record, so that the trace's
 * order is the order in which the calls returned: a write recorded before
 * an fdatasync of its file returned before that fdatasync began.
 *
 * What it cannot see: I/O through io_uring or mmap, and system calls made
 * without libc (hotfs writes its log, its store and the source with
 * pwrite/pwritev; io_uring only reads).
 *
 * A record: struct lw_rec, then path, path2 (a rename's target) and the
 * data of a write (rec.len bytes).  ret is the call's result (-errno on
 * failure).  Nothing is recorded for a call that failed before it reached
 * a file under the directories.
 */
/* the wrappers define both the plain and the 64 names of libc */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum lw_type {
	LW_WRITE = 1,		/* off, len, data; flags: LWF_SYNC */
	LW_FSYNC = 2,
	LW_FDATASYNC = 3,
	LW_SYNC_RANGE = 4,	/* off, len */
	LW_SYNCFS = 5,		/* path: a file of the filesystem */
	LW_TRUNCATE = 6,	/* off: the new size */
	LW_FALLOCATE = 7,	/* flags: mode; off, len */
	LW_RENAME = 8,		/* path -> path2; flags: renameat2's */
	LW_UNLINK = 9,
	LW_OPEN = 10,		/* flags: the open's flags (O_CREAT|O_TRUNC) */
};

#define LW_MAGIC	0x52544c50u	/* "PLTR" */
#define LWF_SYNC	1u		/* the descriptor has O_SYNC/O_DSYNC */

struct lw_rec {
	uint32_t magic;
	uint16_t type;
	uint16_t pathlen;
	uint16_t path2len;
	uint16_t pad;
	uint32_t flags;
	int64_t ret;
	uint64_t off;
	uint64_t len;
};

static pthread_mutex_t lw_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t lw_once = PTHREAD_ONCE_INIT;
static int lw_fd = -1;
static char *lw_dirs[8];
static size_t lw_ndirs;

#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (!real_##name) \
		real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

static ssize_t raw_write(const void *buf, size_t len)
{
	REAL(write);
	const char *p = buf;

	while (len) {
		ssize_t n = real_write(lw_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* a trace with a hole would build false states */
			fprintf(stderr, "logwrites: cannot write the trace\n");
			abort();
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void lw_init(void)
{
	REAL(open);
	const char *t = getenv("LOGWRITES_TRACE"), *d = getenv("LOGWRITES_DIRS");
	char *s, *tok, *save = NULL;
	int fd;

	if (!t || !d)
		return;
	fd = real_open(t, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "logwrites: %s: %s\n", t, strerror(errno));
		abort();
	}
	/* out of the way of the program's own low descriptors */
	lw_fd = fcntl(fd, F_DUPFD_CLOEXEC, 900);
	close(fd);
	if (lw_fd < 0)
		abort();
	s = strdup(d);
	for (tok = strtok_r(s, ":", &save); tok && lw_ndirs < 8;
	     tok = strtok_r(NULL, ":", &save))
		lw_dirs[lw_ndirs++] = tok;
}

static int under(const char *path)
{
	size_t i;

	pthread_once(&lw_once, lw_init);
	if (lw_fd < 0)
		return 0;
	for (i = 0; i < lw_ndirs; i++) {
		size_t n = strlen(lw_dirs[i]);

		if (!strncmp(path, lw_dirs[i], n) &&
		    (path[n] == '/' || path[n] == '\0'))
			return 1;
	}
	return 0;
}

/* fd's path if it is under the directories (into buf), else NULL */
static const char *fd_path(int fd, char *buf)
{
	char l[64];
	ssize_t n;

	if (fd < 0)
		return NULL;
	snprintf(l, sizeof(l), "/proc/self/fd/%d", fd);
	n = readlink(l, buf, PATH_MAX - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return under(buf) ? buf : NULL;
}

/* dirfd + name as an absolute path (not resolved further) */
static const char *at_path(int dirfd, const char *name, char *buf)
{
	char d[PATH_MAX];

	buf[0] = '\0';
	if (name[0] == '/') {
		snprintf(buf, PATH_MAX, "%s", name);
	} else if (dirfd == AT_FDCWD) {
		if (!getcwd(d, sizeof(d)))
			return NULL;
		if (snprintf(buf, PATH_MAX, "%s/%s", d, name) >= PATH_MAX)
			return NULL;
	} else {
		char l[64];
		ssize_t n;

		snprintf(l, sizeof(l), "/proc/self/fd/%d", dirfd);
		n = readlink(l, d, sizeof(d) - 1);
		if (n <= 0)
			return NULL;
		d[n] = '\0';
		if (snprintf(buf, PATH_MAX, "%s/%s", d, name) >= PATH_MAX)
			return NULL;
	}
	return under(buf) ? buf : NULL;
}

/* one record; lw_m held */
static void emit(uint16_t type, const char *path, const char *path2,
		 uint32_t flags, int64_t ret, uint64_t off,
		 const struct iovec *iov, int iovcnt, uint64_t len)
{
	struct lw_rec r = {
		.magic = LW_MAGIC, .type = type, .flags = flags, .ret = ret,
		.off = off, .len = len,
	};
	uint64_t left = len;
	int i;

	r.pathlen = (uint16_t)strlen(path);
	r.path2len = path2 ? (uint16_t)strlen(path2) : 0;
	raw_write(&r, sizeof(r));
	raw_write(path, r.pathlen);
	if (path2)
		raw_write(path2, r.path2len);
	for (i = 0; i < iovcnt && left; i++) {
		size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;

		raw_write(iov[i].iov_base, n);
		left -= n;
	}
}

static int64_t res(ssize_t n)
{
	return n < 0 ? -(int64_t)errno : (int64_t)n;
}

static uint32_t sync_flag(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & (O_SYNC | O_DSYNC)) ? LWF_SYNC : 0;
}

/*
 * A write of iov at off (-1: at the descriptor's position, or its end
 * with O_APPEND), made by call() under the lock and recorded.
 */
#define WRAP_WRITE(fd, off, iov, iovcnt, call) do { \
	char p_[PATH_MAX]; \
	const char *path_ = fd_path(fd, p_); \
	off_t at_ = (off); \
	ssize_t n_; \
	int e_; \
	if (!path_) \
		return call; \
	pthread_mutex_lock(&lw_m); \
	if (at_ < 0) { \
		struct stat st_; \
		int fl_ = fcntl(fd, F_GETFL); \
		if (fl_ >= 0 && (fl_ & O_APPEND) && !fstat(fd, &st_)) \
			at_ = st_.st_size; \
		else \
			at_ = lseek(fd, 0, SEEK_CUR); \
	} \
	n_ = call; \
	e_ = errno; \
	if (n_ > 0) \
		emit(LW_WRITE, path_, NULL, sync_flag(fd), n_, \
		     (uint64_t)at_, iov, iovcnt, (uint64_t)n_); \
	pthread_mutex_unlock(&lw_m); \
	errno = e_; \
	return n_; \
} while (0)

ssize_t write(int fd, const void *buf, size_t len)
{
	REAL(write);
	struct iovec v = { (void *)buf, len };

	WRAP_WRITE(fd, -1, &v, 1, real_write(fd, buf, len));
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	REAL(writev);

	WRAP_WRITE(fd, -1, iov, iovcnt, real_writev(fd, iov, iovcnt));
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	REAL(pwrite);
	struct iovec v = { (void *)buf, len };

	WRAP_WRITE(fd, off, &v, 1, real_pwrite(fd, buf, len, off));
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	REAL(pwrite64);
	struct iovec v = { (void *)buf, len };

	WRAP_WRITE(fd, off, &v, 1, real_pwrite64(fd, buf, len, off));
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
	REAL(pwritev);

	WRAP_WRITE(fd, off, iov, iovcnt, real_pwritev(fd, iov, iovcnt, off));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off64_t off)
{
	REAL(pwritev64);

	WRAP_WRITE(fd, off, iov, iovcnt,
		   real_pwritev64(fd, iov, iovcnt, off));
}

ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off,
		 int flags)
{
	REAL(pwritev2);

	WRAP_WRITE(fd, off, iov, iovcnt,
		   real_pwritev2(fd, iov, iovcnt, off, flags));
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt,
		    off64_t off, int flags)
{
	REAL(pwritev64v2);

	WRAP_WRITE(fd, off, iov, iovcnt,
		   real_pwritev64v2(fd, iov, iovcnt, off, flags));
}

/* a call on fd that changes no bytes, recorded after it returned */
#define WRAP_FD(fd, type, flags, off, len, call) do { \
	char p_[PATH_MAX]; \
	const char *path_ = fd_path(fd, p_); \
	int r_, e_; \
	if (!path_) \
		return call; \
	pthread_mutex_lock(&lw_m); \
	r_ = call; \
	e_ = errno; \
	emit(type, path_, NULL, flags, res(r_), off, NULL, 0, len); \
	pthread_mutex_unlock(&lw_m); \
	errno = e_; \
	return r_; \
} while (0)

int fsync(int fd)
{
	REAL(fsync);

	WRAP_FD(fd, LW_FSYNC, 0, 0, 0, real_fsync(fd));
}

int fdatasync(int fd)
{
	REAL(fdatasync);

	WRAP_FD(fd, LW_FDATASYNC, 0, 0, 0, real_fdatasync(fd));
}

int sync_file_range(int fd, off64_t off, off64_t len, unsigned int flags)
{
	REAL(sync_file_range);

	WRAP_FD(fd, LW_SYNC_RANGE, flags, (uint64_t)off, (uint64_t)len,
		real_sync_file_range(fd, off, len, flags));
}

int syncfs(int fd)
{
	REAL(syncfs);

	WRAP_FD(fd, LW_SYNCFS, 0, 0, 0, real_syncfs(fd));
}

int ftruncate(int fd, off_t size)
{
	REAL(ftruncate);

	WRAP_FD(fd, LW_TRUNCATE, 0, (uint64_t)size, 0,
		real_ftruncate(fd, size));
}

int ftruncate64(int fd, off64_t size)
{
	REAL(ftruncate64);

	WRAP_FD(fd, LW_TRUNCATE, 0, (uint64_t)size, 0,
		real_ftruncate64(fd, size));
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	REAL(fallocate);

	WRAP_FD(fd, LW_FALLOCATE, (uint32_t)mode, (uint64_t)off,
		(uint64_t)len, real_fallocate(fd, mode, off, len));
}

int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	REAL(fallocate64);

	WRAP_FD(fd, LW_FALLOCATE, (uint32_t)mode, (uint64_t)off,
		(uint64_t)len, real_fallocate64(fd, mode, off, len));
}

/* a call on paths (a rename's second, else NULL), recorded after it
 * returned; r: its result */
struct lw_paths {
	char a[PATH_MAX], b[PATH_MAX];
	const char *pa, *pb;
};

static int paths_of(struct lw_paths *p, int d1, const char *n1, int d2,
		    const char *n2)
{
	p->pa = at_path(d1, n1, p->a);
	p->pb = n2 ? at_path(d2, n2, p->b) : NULL;
	if (!p->pa && !p->pb)
		return 0;
	pthread_mutex_lock(&lw_m);
	return 1;
}

static int paths_done(struct lw_paths *p, uint16_t type, int has2,
		      unsigned int flags, int r)
{
	int e = errno;

	emit(type, p->a, has2 ? p->b : NULL, flags, res(r), 0, NULL, 0, 0);
	pthread_mutex_unlock(&lw_m);
	errno = e;
	return r;
}

int rename(const char *from, const char *to)
{
	REAL(rename);
	struct lw_paths p;

	if (!paths_of(&p, AT_FDCWD, from, AT_FDCWD, to))
		return real_rename(from, to);
	return paths_done(&p, LW_RENAME, 1, 0, real_rename(from, to));
}

int renameat(int d1, const char *from, int d2, const char *to)
{
	REAL(renameat);
	struct lw_paths p;

	if (!paths_of(&p, d1, from, d2, to))
		return real_renameat(d1, from, d2, to);
	return paths_done(&p, LW_RENAME, 1, 0,
			  real_renameat(d1, from, d2, to));
}

int renameat2(int d1, const char *from, int d2, const char *to,
	      unsigned int flags)
{
	REAL(renameat2);
	struct lw_paths p;

	if (!paths_of(&p, d1, from, d2, to))
		return real_renameat2(d1, from, d2, to, flags);
	return paths_done(&p, LW_RENAME, 1, flags,
			  real_renameat2(d1, from, d2, to, flags));
}

int unlink(const char *name)
{
	REAL(unlink);
	struct lw_paths p;

	if (!paths_of(&p, AT_FDCWD, name, AT_FDCWD, NULL))
		return real_unlink(name);
	return paths_done(&p, LW_UNLINK, 0, 0, real_unlink(name));
}

int unlinkat(int d, const char *name, int flags)
{
	REAL(unlinkat);
	struct lw_paths p;

	if (!paths_of(&p, d, name, AT_FDCWD, NULL))
		return real_unlinkat(d, name, flags);
	return paths_done(&p, LW_UNLINK, 0, (unsigned int)flags,
			  real_unlinkat(d, name, flags));
}

/*
 * Opens that may create or cut a file under the directories: under the
 * lock, recorded after they returned (flags in the record; ret the
 * descriptor or -errno).
 */
#define WRAP_OPEN(d, name, flags, call) do { \
	struct lw_paths p_; \
	int fd_; \
	if (!((flags) & (O_CREAT | O_TRUNC)) || \
	    !paths_of(&p_, d, name, AT_FDCWD, NULL)) \
		return call; \
	fd_ = call; \
	return paths_done(&p_, LW_OPEN, 0, (unsigned int)(flags), fd_); \
} while (0)

static mode_t open_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

int open(const char *name, int flags, ...)
{
	REAL(open);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	WRAP_OPEN(AT_FDCWD, name, flags, real_open(name, flags, mode));
}

int open64(const char *name, int flags, ...)
{
	REAL(open64);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	WRAP_OPEN(AT_FDCWD, name, flags, real_open64(name, flags, mode));
}

int openat(int d, const char *name, int flags, ...)
{
	REAL(openat);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	WRAP_OPEN(d, name, flags, real_openat(d, name, flags, mode));
}

int openat64(int d, const char *name, int flags, ...)
{
	REAL(openat64);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	WRAP_OPEN(d, name, flags, real_openat64(d, name, flags, mode));
}
