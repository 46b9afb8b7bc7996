// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfsctl's per-file commands over files and trees: warm, pin, unpin,
 * evict, info, pins and flush, as ioctls on each file opened through the
 * mount (include/hotfs/ioctl.h; flush of a whole mount: one ioctl on its
 * root, repeated), with a progress bar on a terminal, warm paced at the
 * mount's promote_rate (or --rate), and a summary at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "hotfs/ioctl.h"
#include "hotfs/mountinfo.h"

#include "hotfsctl_i.h"

#define CHUNK (16ull << 20)	/* warm or flush this much per ioctl */
/* a flush's EBADMSG: what is left is lost (hotfs(8), WRITEBACK) */
#define LOST_MSG "dirty bytes are lost in the writeback log (damaged " \
		 "or unreadable); 'hotfsctl status' and the daemon's log " \
		 "say which"

struct progress {
	bool tty;
	uint64_t total_bytes, total_files;
	uint64_t bytes, files;
	uint64_t copied;		/* bytes read from the source */
	double start, last;
};

static struct progress prog;
static enum fcmd cur_cmd;
/* Files warm or pin could not cache because the store refused them (it is
 * read-only, off, or its filesystem is full): said once, with a count,
 * not once a file; the first such error. */
static unsigned store_refused;
static int store_err;
static uint64_t warm_rate;	/* bytes/s, 0 = unlimited */

/* What info, pins and warm's last check add up. */
static struct {
	uint64_t files, size, bytes, extents, pinned;
	bool any;		/* JSON: an entry is out already */
} tot;

static void show_progress(bool final)
{
	double t = now_s(), el = t - prog.start, rate;
	char a[32], b[32], r[32];
	int pct;

	if (!final && t - prog.last < (prog.tty ? 0.2 : 5.0))
		return;
	prog.last = t;
	rate = el > 0 ? (double)prog.bytes / el : 0;
	pct = prog.total_bytes ? (int)(100.0 * (double)prog.bytes /
				       (double)prog.total_bytes) : 100;
	human(a, sizeof(a), (double)prog.bytes);
	human(b, sizeof(b), (double)prog.total_bytes);
	human(r, sizeof(r), rate);
	if (prog.tty) {
		char bar[31];
		int i, fill = pct * 30 / 100;
		double eta = rate > 0 ? (double)(prog.total_bytes -
						 prog.bytes) / rate : 0;

		for (i = 0; i < 30; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[30] = '\0';
		fprintf(stderr, "\r[%s] %3d%% %s/%s %llu/%llu files %s/s ETA %d:%02d ",
			bar, pct, a, b, (unsigned long long)prog.files,
			(unsigned long long)prog.total_files, r,
			(int)(eta / 60), (int)eta % 60);
		if (final)
			fputc('\n', stderr);
	} else {
		fprintf(stderr, "%s: %d%% %s/%s %llu/%llu files %s/s\n",
			cur_cmd == F_FLUSH ? "flush" : "warm",
			pct, a, b, (unsigned long long)prog.files,
			(unsigned long long)prog.total_files, r);
	}
}

static int do_ioctl(int fd, unsigned long cmd, struct hotfs_ioc *io)
{
	int r;

	do
		r = ioctl(fd, cmd, io);
	while (r < 0 && errno == EAGAIN && !interrupted);
	return r;
}

/* HOTFS_IOC_INFO; without a store the daemon fills in nothing, so the
 * size is the file's own. */
static int info(int fd, struct hotfs_ioc *io)
{
	struct stat st;

	if (do_ioctl(fd, HOTFS_IOC_INFO, io) < 0)
		return -1;
	if ((io->flags & HOTFS_IOC_F_NOCACHE) && fstat(fd, &st) == 0)
		io->size = (uint64_t)st.st_size;
	return 0;
}

/* One file of info or pins: a line, or an element of a JSON array. */
static void report_file(const char *path, const struct hotfs_ioc *io)
{
	char a[32], b[32];

	tot.files++;
	tot.size += io->size;
	tot.bytes += io->bytes;
	tot.extents += io->extents;
	tot.pinned += !!(io->flags & HOTFS_IOC_F_PINNED);
	if (json) {
		printf("%s\n    {\"path\": ", tot.any ? "," : "");
		jput(stdout, path);
		printf(", \"size_bytes\": %llu, \"cached_bytes\": %llu, "
		       "\"cached_extents\": %llu, \"extent_bytes\": %u, "
		       "\"pinned\": %s, \"copy\": %s}",
		       (unsigned long long)io->size,
		       (unsigned long long)io->bytes,
		       (unsigned long long)io->extents, io->extent,
		       io->flags & HOTFS_IOC_F_PINNED ? "true" : "false",
		       io->flags & HOTFS_IOC_F_COPY ? "true" : "false");
		tot.any = true;
		return;
	}
	human(a, sizeof(a), (double)io->bytes);
	human(b, sizeof(b), (double)io->size);
	printf("%s: %s of %s cached (%llu extents of %u KiB)%s%s\n", path, a,
	       b, (unsigned long long)io->extents, io->extent / 1024,
	       io->flags & HOTFS_IOC_F_COPY ? ", a whole copy" : "",
	       io->flags & HOTFS_IOC_F_PINNED ? ", pinned" : "");
}

/* warm at warm_rate: sleep until the bytes copied so far are due */
static void pace(void)
{
	double due;

	if (!warm_rate)
		return;
	due = prog.start + (double)prog.copied / (double)warm_rate;
	while (!interrupted && now_s() < due) {
		double left = due - now_s();

		usleep((useconds_t)((left < 0.2 ? left : 0.2) * 1e6) + 1);
		show_progress(false);
	}
}

/* How much of the file to ask for at once: at a low rate, steps of
 * about a quarter of a second, so that the pace is even. */
static uint64_t chunk(void)
{
	uint64_t c = CHUNK;

	while (warm_rate && c > (1u << 20) && c > warm_rate / 4)
		c >>= 1;
	return c;
}

/*
 * flush of one file: CHUNK at a time until nothing of it is dirty, or
 * what was dirty when it began is written (writes that keep coming do not
 * keep it going); -1 with errno.
 */
static int flush_file(int fd)
{
	struct hotfs_ioc io;
	uint64_t first, left, written = 0;

	memset(&io, 0, sizeof(io));
	if (do_ioctl(fd, HOTFS_IOC_FLUSH, &io) < 0)
		return -1;
	first = left = io.bytes;
	while (left && written < first && !interrupted) {
		memset(&io, 0, sizeof(io));
		io.len = CHUNK;
		if (do_ioctl(fd, HOTFS_IOC_FLUSH, &io) < 0)
			return -1;
		written += io.done;
		tot.bytes += io.done;
		prog.bytes += left > io.bytes ? left - io.bytes : 0;
		left = io.bytes;
		show_progress(false);
		if (!io.done)
			break;
	}
	return 0;
}

/*
 * flush of a whole mount: what was written before it began, CHUNK at a
 * time, through its root directory, until what is still dirty is all
 * younger (io.size: the oldest dirty record's wall clock); 0 or -1 with
 * errno (ETIMEDOUT: a minute without a byte written, the old data in
 * flight elsewhere all along).
 */
static int flush_mount(const char *mount)
{
	struct hotfs_ioc io;
	struct timespec ts;
	uint64_t since, left;
	double moved = now_s();
	int fd, r = 0;

	fd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	since = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	memset(&io, 0, sizeof(io));
	if (do_ioctl(fd, HOTFS_IOC_FLUSH, &io) < 0)
		goto fail;
	prog.total_bytes += io.bytes;
	left = io.bytes;
	while (left && io.size && io.size < since && !interrupted) {
		memset(&io, 0, sizeof(io));
		io.off = since;
		io.len = CHUNK;
		if (do_ioctl(fd, HOTFS_IOC_FLUSH, &io) < 0)
			goto fail;
		tot.bytes += io.done;
		prog.bytes += left > io.bytes ? left - io.bytes : 0;
		left = io.bytes;
		show_progress(false);
		if (io.done) {
			moved = now_s();
		} else if (left && io.size && io.size < since) {
			/* the flusher's own run of it is in flight */
			if (now_s() - moved > 60) {
				errno = ETIMEDOUT;
				goto fail;
			}
			usleep(20000);
		}
	}
	close(fd);
	return r;
fail:
	r = errno;
	close(fd);
	errno = r;
	return -1;
}

/* warm of one file, step by step at warm_rate; -1 with errno */
static int warm_file(int fd)
{
	struct hotfs_ioc io;
	uint64_t off, step = chunk();

	for (off = 0;; off += step) {
		memset(&io, 0, sizeof(io));
		io.off = off;
		io.len = step;
		if (do_ioctl(fd, HOTFS_IOC_WARM, &io) < 0)
			return -1;
		prog.bytes += off + step < io.size ? step :
			      io.size > off ? io.size - off : 0;
		prog.copied += io.done;
		show_progress(false);
		if (off + step >= io.size || interrupted)
			break;
		pace();
	}
	pace();
	prog.files++;
	return 0;
}

/* pin or unpin of one file: a pinned file is promoted now; -1 with errno */
static int pin_file(int fd)
{
	struct hotfs_ioc io;
	int e;

	memset(&io, 0, sizeof(io));
	if (do_ioctl(fd, cur_cmd == F_PIN ? HOTFS_IOC_PIN : HOTFS_IOC_UNPIN,
		     &io) < 0)
		return -1;
	if (cur_cmd == F_UNPIN) {
		tot.files++;
		return 0;
	}
	if (warm_file(fd) == 0)
		return 0;
	/* a pin that could not be made good is not kept */
	e = errno;
	memset(&io, 0, sizeof(io));
	do_ioctl(fd, HOTFS_IOC_UNPIN, &io);
	errno = e;
	return -1;
}

/*
 * The commands of one ioctl a file: evict, info and pins, and what flush
 * and warm count before and after their work; -1 with errno.
 */
static int ask_file(const char *path, int fd)
{
	struct hotfs_ioc io;

	memset(&io, 0, sizeof(io));
	switch (cur_cmd) {
	case F_EVICT:
		if (do_ioctl(fd, HOTFS_IOC_EVICT, &io) < 0)
			return -1;
		tot.files++;
		tot.bytes += io.done;
		break;
	case F_INFO:
		if (info(fd, &io) < 0)
			return -1;
		report_file(path, &io);
		break;
	case F_PINS:
		if (info(fd, &io) < 0)
			return -1;
		if (io.flags & HOTFS_IOC_F_PINNED)
			report_file(path, &io);
		break;
	case F_DIRTY:	/* before flush: how much of it is dirty */
		io.len = 0;
		if (do_ioctl(fd, HOTFS_IOC_FLUSH, &io) < 0)
			return -1;
		prog.total_bytes += io.bytes;
		break;
	case F_CHECK:	/* after warm: how much of it is cached now */
		if (info(fd, &io) < 0)
			return -1;
		tot.files++;
		tot.size += io.size;
		tot.bytes += io.bytes;
		break;
	default:
		break;
	}
	return 0;
}

/*
 * A file's failure (errno), said and counted: each of these closes fd
 * and gives one_file's return, 1 where every file would fail the same
 * way (the walk stops).
 */
static int flush_failed(const char *path, int fd)
{
	fprintf(stderr, "%shotfsctl: %s: flush failed: %s\n",
		prog.tty ? "\n" : "", path, errno == ENOTTY ?
		"not on a hotfs mount" : errno == EBADMSG ? LOST_MSG :
		strerror(errno));
	failures++;
	close(fd);
	return errno == EACCES ? 1 : 0;
}

/* warm's and pin's: their other errors are said as flush's are */
static int store_failed(const char *path, int fd)
{
	/* warm reads the source and writes the store, pin the cachedir's
	 * list: these are the store's */
	if (errno == EROFS || errno == ENOSPC || errno == EDQUOT) {
		if (!store_refused++)
			store_err = errno;
		failures++;
		close(fd);
		return 0;
	}
	return flush_failed(path, fd);
}

/* ask_file's: no store is said as such, and stops the walk */
static int ask_failed(const char *path, int fd)
{
	fprintf(stderr, "%shotfsctl: %s: %s\n", prog.tty ? "\n" : "", path,
		errno == ENOTTY ? "not on a hotfs mount" :
		errno == EOPNOTSUPP ? "the mount has no cache store" :
		strerror(errno));
	failures++;
	close(fd);
	/* EACCES: the control channel is refused for every file; no store:
	 * for every file too */
	return errno == EACCES || errno == EOPNOTSUPP ? 1 : 0;
}

static int one_file(const char *path)
{
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%shotfsctl: %s: %s\n", prog.tty ? "\n" : "",
			path, strerror(errno));
		failures++;
		return 0;
	}
	switch (cur_cmd) {
	case F_PIN:
	case F_UNPIN:
		if (pin_file(fd) < 0)
			return store_failed(path, fd);
		break;
	case F_WARM:
		if (warm_file(fd) < 0)
			return store_failed(path, fd);
		break;
	case F_FLUSH:
		if (flush_file(fd) < 0)
			return flush_failed(path, fd);
		prog.files++;
		break;
	default:
		if (ask_file(path, fd) < 0)
			return ask_failed(path, fd);
		break;
	}
	close(fd);
	return 0;
}

static int count_cb(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)ftw;
	if (cur_cmd == F_DIRTY) {
		if (type == FTW_F && S_ISREG(st->st_mode)) {
			prog.total_files++;
			one_file(path);
		}
		return interrupted;
	}
	if (type == FTW_F && S_ISREG(st->st_mode)) {
		prog.total_files++;
		prog.total_bytes += (uint64_t)st->st_size;
	}
	return interrupted;
}

static int file_cb(const char *path, const struct stat *st, int type,
		   struct FTW *ftw)
{
	(void)ftw;
	if (interrupted)
		return 1;
	if (type == FTW_F && S_ISREG(st->st_mode))
		return one_file(path);
	return 0;
}

/* The paths to work on: the arguments, then --files-from's lines. */
struct paths {
	char **v;
	size_t n, cap;
};

static int paths_add(struct paths *p, const char *s)
{
	char *copy = strdup(s);

	if (!copy)
		return -1;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		char **v = realloc(p->v, cap * sizeof(*v));

		if (!v) {
			free(copy);
			return -1;
		}
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = copy;
	return 0;
}

static void paths_free(struct paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
}

/* One path a line ("-": standard input); empty lines are skipped. */
static int read_list(struct paths *p, const char *file)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	if (!f) {
		fprintf(stderr, "hotfsctl: %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (r == 0 && (n = getline(&line, &cap, f)) >= 0) {
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n)
			r = paths_add(p, line);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return r;
}

static int walk(const struct paths *p)
{
	int r = 0;

	for (size_t i = 0; i < p->n && !interrupted && !r; i++)
		r = nftw(p->v[i], file_cb, 64, FTW_PHYS | FTW_MOUNT);
	return r;
}

/* The mount's promote_rate (stats' options), 0 if unknown. */
static uint64_t mount_rate(const char *mount)
{
	char *j = mount_stats(mount), *opts, *v;
	uint64_t rate = 0;

	if (!j)
		return 0;
	opts = jstr(j, "options");
	v = opt_of(opts, "promote_rate");
	if (v && parse_size(v, &rate) < 0)
		rate = 0;
	free(v);
	free(opts);
	free(j);
	return rate;
}

static void json_total(void)
{
	printf("\"total\": {\"files\": %llu, \"size_bytes\": %llu, "
	       "\"cached_bytes\": %llu, \"cached_extents\": %llu, "
	       "\"pinned_files\": %llu}",
	       (unsigned long long)tot.files, (unsigned long long)tot.size,
	       (unsigned long long)tot.bytes, (unsigned long long)tot.extents,
	       (unsigned long long)tot.pinned);
}

static void human_total(void)
{
	char a[32], b[32];

	human(a, sizeof(a), (double)tot.bytes);
	human(b, sizeof(b), (double)tot.size);
	printf("total: %llu files, %s of %s cached (%.1f%%), %llu extents, "
	       "%llu pinned\n", (unsigned long long)tot.files, a, b,
	       tot.size ? 100.0 * (double)tot.bytes / (double)tot.size :
	       0.0, (unsigned long long)tot.extents,
	       (unsigned long long)tot.pinned);
}

/*
 * After warm or pin: how much of what was asked is cached now, said
 * plainly when it is not all of it (a cache too small for it evicts the
 * first files to take the last).
 */
static void warm_summary(const struct paths *p, const char *mount,
			 bool fits_before, double cap, double secs, int ret)
{
	enum fcmd was = cur_cmd;
	bool fits;
	char a[32], b[32], c[32];

	cur_cmd = F_CHECK;
	memset(&tot, 0, sizeof(tot));
	if (!interrupted)
		walk(p);
	cur_cmd = was;
	fits = fits_before && tot.bytes >= tot.size;
	human(a, sizeof(a), (double)tot.bytes);
	human(b, sizeof(b), (double)tot.size);
	human(c, sizeof(c), cap);
	if (json) {
		printf("{\"mountpoint\": ");
		jput(stdout, mount);
		printf(", \"files\": %llu, \"asked_bytes\": %llu, "
		       "\"copied_bytes\": %llu, \"cached_bytes\": %llu, "
		       "\"capacity_bytes\": %.0f, \"fits\": %s, "
		       "\"rate_bytes_per_second\": %llu, \"seconds\": %.3f, "
		       "\"errors\": %d, \"interrupted\": %s}\n",
		       (unsigned long long)prog.total_files,
		       (unsigned long long)tot.size,
		       (unsigned long long)prog.copied,
		       (unsigned long long)tot.bytes, cap,
		       fits ? "true" : "false",
		       (unsigned long long)warm_rate, secs, failures,
		       interrupted ? "true" : "false");
	}
	if (interrupted || ret)
		return;
	if (!fits)
		fprintf(stderr, "hotfsctl: only %s of the %s asked is cached: "
			"it does not fit in the cache (%s)\n", a, b, c);
	else if (!json)
		fprintf(stderr, "warm: all %s asked is cached\n", b);
}

/*
 * cmd_files' arguments into p: --rate (warm and pin), --files-from (all
 * but pins) and the paths; 0, 1 (a list not read, or no memory) or 2
 * (bad usage).
 */
static int files_args(enum fcmd c, int argc, char **argv, struct paths *p,
		      bool *rate_given)
{
	int i, r = 0;

	for (i = 0; i < argc; i++) {
		if ((c == F_WARM || c == F_PIN) &&
		    strcmp(argv[i], "--rate") == 0 && i + 1 < argc) {
			if (parse_size(argv[++i], &warm_rate) < 0) {
				fprintf(stderr, "hotfsctl: --rate '%s': bytes "
					"per second (e.g. 50M, 0 = unlimited)\n",
					argv[i]);
				r = 2;
			}
			*rate_given = true;
		} else if (c != F_PINS &&
			   strcmp(argv[i], "--files-from") == 0 &&
			   i + 1 < argc) {
			if (read_list(p, argv[++i]) < 0)
				r = 1;
		} else if (paths_add(p, argv[i]) < 0) {
			r = 1;
		}
	}
	if (!r && (!p->n || (c == F_PINS && p->n != 1)))
		r = 2;
	return r;
}

/*
 * The first path's mount, once every path is found on one (and, for warm
 * and pin, the files and bytes they ask for counted); NULL, said, if one
 * is not.
 */
static char *files_mount(enum fcmd c, const struct paths *p)
{
	char *mount = NULL;

	for (size_t k = 0; k < p->n; k++) {
		char *m = need_mount(p->v[k]);

		if (!m) {
			free(mount);
			return NULL;
		}
		if (!mount)
			mount = m;
		else
			free(m);
		if (c == F_WARM || c == F_PIN)
			nftw(p->v[k], count_cb, 64, FTW_PHYS | FTW_MOUNT);
	}
	return mount;
}

/*
 * Before warm or pin: the rate (the mount's promote_rate unless --rate
 * gave one) and the cache's capacity into *cap; false, said, when what
 * is asked is more than the cache holds.
 */
static bool warm_prepare(const char *mount, bool rate_given, double *cap)
{
	char h1[32], h2[32], *j;

	if (!rate_given)
		warm_rate = mount_rate(mount);
	j = mount_stats(mount);
	*cap = j ? num(j, "capacity_bytes") : 0;
	free(j);
	if (*cap > 0 && (double)prog.total_bytes > *cap) {
		human(h1, sizeof(h1), (double)prog.total_bytes);
		human(h2, sizeof(h2), *cap);
		fprintf(stderr, "hotfsctl: %s asked, but the cache "
			"holds %s: not all of it can stay cached\n",
			h1, h2);
		return false;
	}
	return true;
}

/* info's and pins' JSON, up to their array of files */
static void json_open(enum fcmd c, const char *mount)
{
	printf("{");
	if (c == F_PINS) {
		printf("\"mountpoint\": ");
		jput(stdout, mount);
		printf(", ");
	}
	printf("\"files\": [");
}

/* The files the store refused (store_refused), in one line. */
static void report_refused(enum fcmd c, const char *mount)
{
	fprintf(stderr, "%shotfsctl: %u file%s not %s: the cache store "
		"refused %s (%s); 'hotfsctl status %s' says why\n",
		prog.tty ? "\n" : "", store_refused,
		store_refused == 1 ? "" : "s",
		c == F_PIN ? "pinned" : "cached",
		store_refused == 1 ? "it" : "them",
		strerror(store_err), mount);
}

/*
 * After info or pins: the total, and for pins (of path) the mount's pins
 * that are not files under path.
 */
static void info_summary(enum fcmd c, const char *mount, const char *path)
{
	double inmount = 0;
	char *j;

	if (c == F_PINS) {
		j = mount_stats(mount);
		inmount = j ? num(j, "pinned_files") : 0;
		free(j);
	}
	if (json) {
		printf("%s],\n  ", tot.any ? "\n  " : "");
		json_total();
		if (c == F_PINS)
			printf(",\n  \"pinned_files\": %.0f, "
			       "\"not_found\": %.0f",
			       inmount, inmount > (double)tot.pinned ?
			       inmount - (double)tot.pinned : 0);
		printf(",\n  \"errors\": %d\n}\n", failures);
	} else {
		human_total();
	}
	if (c == F_PINS && inmount > (double)tot.pinned)
		fprintf(stderr, "hotfsctl: %.0f of the mount's %.0f "
			"pins are not files under %s (a pin follows "
			"the file, which may be elsewhere on the "
			"mount, or deleted)\n",
			inmount - (double)tot.pinned, inmount, path);
}

int cmd_files(enum fcmd c, int argc, char **argv)
{
	struct paths p = { 0 };
	char *mount;
	bool rate_given = false, fits = true;
	double cap = 0;
	int r, ret;

	cur_cmd = c;
	r = files_args(c, argc, argv, &p, &rate_given);
	if (r) {
		if (r == 2)
			usage(stderr);
		paths_free(&p);
		return r;
	}
	signal(SIGINT, on_sigint);
	prog.tty = (c == F_WARM || c == F_PIN) && isatty(2);
	mount = files_mount(c, &p);
	if (!mount) {
		paths_free(&p);
		return 1;
	}
	if (c == F_WARM || c == F_PIN)
		fits = warm_prepare(mount, rate_given, &cap);
	if (json && (c == F_INFO || c == F_PINS))
		json_open(c, mount);
	prog.start = now_s();
	r = walk(&p);
	if (c == F_WARM || c == F_PIN)
		show_progress(true);
	ret = interrupted ? 130 : r < 0 ? 1 : failures ? 1 : 0;
	if (store_refused)
		report_refused(c, mount);
	if (c == F_WARM || c == F_PIN)
		warm_summary(&p, mount, fits, cap, now_s() - prog.start, ret);
	if (c == F_INFO || c == F_PINS)
		info_summary(c, mount, p.v[0]);
	if (json && (c == F_EVICT || c == F_UNPIN))
		printf("{\"files\": %llu, \"dropped_bytes\": %llu, "
		       "\"errors\": %d}\n", (unsigned long long)tot.files,
		       (unsigned long long)tot.bytes, failures);
	if (interrupted)
		fprintf(stderr, "hotfsctl: interrupted\n");
	else if (r < 0)
		fprintf(stderr, "hotfsctl: %s\n", strerror(errno));
	free(mount);
	paths_free(&p);
	return ret;
}


/* Is path the root of the mount m? */
static bool is_root(const char *path, const char *m)
{
	char *real = realpath(path, NULL);
	bool r = real && strcmp(real, m) == 0;

	free(real);
	return r;
}

/* The mount's dirty bytes now (a flush of nothing through its root). */
static uint64_t mount_dirty(const char *mount)
{
	struct hotfs_ioc io;
	int fd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	memset(&io, 0, sizeof(io));
	if (fd < 0)
		return 0;
	if (do_ioctl(fd, HOTFS_IOC_FLUSH, &io) < 0)
		io.bytes = 0;
	close(fd);
	return io.bytes;
}

/*
 * flush [PATH...]: the mounts given by their root (or, without a PATH,
 * the mount of the current directory) whole, the files and trees given
 * file by file; a progress bar on a terminal; 0 once all is on the
 * source, 1 with one line for each failure.
 */
int cmd_flush(int argc, char **argv)
{
	struct paths p = { 0 };
	char *mount = NULL, a[32], b[32];
	bool *root;
	double secs;
	int i, ret;

	cur_cmd = F_FLUSH;
	for (i = 0; i < argc; i++)
		if (paths_add(&p, argv[i]) < 0)
			goto nomem;
	if (!p.n && paths_add(&p, ".") < 0)
		goto nomem;
	root = calloc(p.n, sizeof(*root));
	if (!root)
		goto nomem;
	signal(SIGINT, on_sigint);
	prog.tty = !json && isatty(2);
	for (size_t k = 0; k < p.n; k++) {
		char *m = need_mount(p.v[k]);

		if (!m) {
			free(root);
			free(mount);
			paths_free(&p);
			return 1;
		}
		/* no PATH: the current directory's mount, whole */
		root[k] = !argc || is_root(p.v[k], m);
		if (root[k]) {
			free(p.v[k]);
			p.v[k] = strdup(m);
		}
		if (!mount)
			mount = m;
		else
			free(m);
		if (!p.v[k])
			break;
	}
	prog.start = now_s();
	/* the trees' dirty bytes, for the progress bar */
	cur_cmd = F_DIRTY;
	for (size_t k = 0; k < p.n && !interrupted; k++)
		if (p.v[k] && !root[k])
			nftw(p.v[k], count_cb, 64, FTW_PHYS | FTW_MOUNT);
	cur_cmd = F_FLUSH;
	for (size_t k = 0; k < p.n && !interrupted; k++) {
		if (!p.v[k]) {
			failures++;
			continue;
		}
		if (!root[k]) {
			nftw(p.v[k], file_cb, 64, FTW_PHYS | FTW_MOUNT);
			continue;
		}
		if (flush_mount(p.v[k]) < 0) {
			fprintf(stderr, "%shotfsctl: %s: flush failed: %s\n",
				prog.tty ? "\n" : "", p.v[k],
				errno == ENOTTY ? "not on a hotfs mount" :
				errno == EBADMSG ? LOST_MSG :
				errno == ETIMEDOUT ? "no progress for a minute "
				"(the old data was being written by another "
				"flush all along)" : strerror(errno));
			failures++;
		}
	}
	if (prog.tty)
		show_progress(true);
	secs = now_s() - prog.start;
	ret = interrupted ? 130 : failures ? 1 : 0;
	human(a, sizeof(a), (double)tot.bytes);
	human(b, sizeof(b), (double)mount_dirty(mount));
	if (json) {
		printf("{\"mountpoint\": ");
		jput(stdout, mount);
		printf(", \"files\": %llu, \"flushed_bytes\": %llu, "
		       "\"dirty_bytes\": %llu, \"seconds\": %.3f, "
		       "\"errors\": %d, \"interrupted\": %s}\n",
		       (unsigned long long)prog.files,
		       (unsigned long long)tot.bytes,
		       (unsigned long long)mount_dirty(mount), secs, failures,
		       interrupted ? "true" : "false");
	} else if (!ret) {
		fprintf(stderr, "flush: %s written to the source in %.1f s "
			"(%s dirty now)\n", a, secs, b);
	}
	if (interrupted)
		fprintf(stderr, "hotfsctl: interrupted\n");
	free(root);
	free(mount);
	paths_free(&p);
	return ret;
nomem:
	paths_free(&p);
	fprintf(stderr, "hotfsctl: %s\n", strerror(ENOMEM));
	return 1;
}
