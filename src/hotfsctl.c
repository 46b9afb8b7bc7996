// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfsctl: manage a hotfs mount.
 *
 *   hotfsctl stats MOUNT [--json] [-w SECONDS]
 *   hotfsctl status MOUNT
 *   hotfsctl reset-stats MOUNT
 *   hotfsctl store on MOUNT      open a store that could not open at mount
 *   hotfsctl warm PATH...        promote files or trees now
 *   hotfsctl pin PATH...         never evict them (and warm them)
 *   hotfsctl unpin PATH...
 *   hotfsctl evict PATH...       drop their cached extents
 *   hotfsctl info PATH...        how much of each file is cached, and why
 *
 * Counters come from MOUNT/.hotfs/stats(.json); per-file requests are
 * ioctls on the file opened through the mount (include/hotfs/ioctl.h), so
 * the daemon never resolves a path.  Only root and the user who mounted
 * may send them; others get "permission denied".  Exit status: 0, 1 on
 * any error, 2 on bad usage, 130 when interrupted by Ctrl-C.
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

#define CHUNK (16ull << 20)	/* warm this much per ioctl */

static const char *ctldir = ".hotfs";
static volatile sig_atomic_t interrupted;
static int failures;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: hotfsctl [--ctldir NAME] COMMAND ...\n"
"  stats MOUNT [--json] [-w SECONDS]  counters (a live view with -w)\n"
"  status MOUNT                       source, cachedir, options, state\n"
"  reset-stats MOUNT                  zero the counters\n"
"  store on MOUNT                     open a store that is off, once its\n"
"                                     cause is fixed (no remount)\n"
"  warm PATH...                       promote files or trees now\n"
"  pin PATH... | unpin PATH...        keep files cached for good\n"
"  evict PATH...                      drop files' or trees' extents\n"
"  info PATH...                       how much of each file is cached\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human(char *buf, size_t len, double v)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* ------------------------------------------------------------------ */
/* Finding the mount */

/* The hotfs mount point that contains path (malloc'd), or NULL. */
static char *mount_of(const char *path)
{
	char *real = realpath(path, NULL), *best = NULL, *line = NULL;
	size_t cap = 0, bestlen = 0;
	struct mountinfo_ent e;
	FILE *f;

	if (!real)
		return NULL;	/* errno says why */
	f = fopen("/proc/self/mountinfo", "r");
	if (!f) {
		free(real);
		return NULL;
	}
	while (mountinfo_next(f, &line, &cap, &e)) {
		const char *m = e.mnt;
		size_t n = strlen(m);
		char *copy;

		if (strcmp(e.fstype, "fuse.hotfs") != 0 ||
		    strncmp(real, m, n) != 0 ||
		    !(real[n] == '/' || real[n] == '\0' || n == 1) ||
		    n <= bestlen)
			continue;
		copy = strdup(m);
		if (!copy)
			continue;
		free(best);
		best = copy;
		bestlen = n;
	}
	free(line);
	fclose(f);
	free(real);
	errno = 0;
	return best;
}

static char *ctl_path(const char *mount, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s/%s", mount, ctldir, name) < 0)
		return NULL;
	return p;
}

static char *read_all(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r"), *m;
	char chunk[4096];
	size_t n;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	if (!m) {
		fclose(f);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

static char *need_mount(const char *arg)
{
	char *m;

	errno = 0;
	m = mount_of(arg);
	if (!m && errno)
		fprintf(stderr, "hotfsctl: %s: %s\n", arg, strerror(errno));
	else if (!m)
		fprintf(stderr, "hotfsctl: %s: not on a hotfs mount\n", arg);
	return m;
}

/* A number from the flat JSON object hotfs writes, or -1. */
static double jnum(const char *json, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(json, pat);
	if (!p || p[strlen(pat)] == '"')
		return -1;
	return strtod(p + strlen(pat), NULL);
}

/* A string from it (malloc'd), or NULL. */
static char *jstr(const char *json, const char *key)
{
	char pat[128], *out, *o;
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": \"", key);
	p = strstr(json, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	out = malloc(strlen(p) + 1);
	if (!out)
		return NULL;
	for (o = out; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
		*o++ = *p;
	}
	*o = '\0';
	return out;
}

/* ------------------------------------------------------------------ */
/* stats, status, reset-stats */

static int cmd_stats(int argc, char **argv)
{
	bool json = false;
	double every = 0;
	char *mount = NULL, *path, *text;
	int i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) {
			every = strtod(argv[++i], NULL);
			if (every <= 0) {
				fprintf(stderr, "hotfsctl: -w needs seconds > 0\n");
				return 2;
			}
		} else if (!mount) {
			mount = need_mount(argv[i]);
			if (!mount)
				return 1;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!mount) {
		usage(stderr);
		return 2;
	}
	if (!every) {
		path = ctl_path(mount, json ? "stats.json" : "stats");
		text = path ? read_all(path) : NULL;
		if (!text) {
			fprintf(stderr, "hotfsctl: %s: %s\n", path ? path : mount,
				strerror(errno));
			free(path);
			free(mount);
			return 1;
		}
		fputs(text, stdout);
		free(text);
		free(path);
		free(mount);
		return 0;
	}
	/* a live view, like iostat -x: rates over each interval */
	{
		static const char *keys[] = {
			"read_requests", "read_hits", "read_partial_hits",
			"read_misses", "read_hit_bytes", "read_miss_bytes",
			"promotions", "promoted_bytes", "evictions",
		};
		double prev[9], cur[9], t0, t1;
		unsigned row = 0;
		char *j;

		path = ctl_path(mount, "stats.json");
		j = path ? read_all(path) : NULL;
		if (!j) {
			fprintf(stderr, "hotfsctl: %s: %s\n", mount,
				strerror(errno));
			return 1;
		}
		for (i = 0; i < 9; i++)
			prev[i] = jnum(j, keys[i]);
		free(j);
		t0 = now_s();
		signal(SIGINT, on_sigint);
		while (!interrupted) {
			double dt, reqs, hitp;

			usleep((useconds_t)(every * 1e6));
			if (interrupted)
				break;
			j = read_all(path);
			if (!j) {
				fprintf(stderr, "hotfsctl: %s: %s\n", path,
					strerror(errno));
				return 1;
			}
			t1 = now_s();
			dt = t1 - t0;
			for (i = 0; i < 9; i++)
				cur[i] = jnum(j, keys[i]);
			if (row++ % 20 == 0)
				printf("%8s %6s %6s %6s %10s %10s %8s %9s %8s %6s %6s\n",
				       "reads/s", "hit%", "part%", "miss%",
				       "cacheMB/s", "srcMB/s", "promo/s",
				       "promoMB/s", "evict/s", "queue",
				       "used%");
			reqs = cur[0] - prev[0];
			hitp = reqs > 0 ? 100.0 / reqs : 0;
			printf("%8.1f %6.1f %6.1f %6.1f %10.2f %10.2f %8.1f %9.2f %8.1f %6.0f %6.1f\n",
			       reqs / dt, (cur[1] - prev[1]) * hitp,
			       (cur[2] - prev[2]) * hitp,
			       (cur[3] - prev[3]) * hitp,
			       (cur[4] - prev[4]) / dt / 1e6,
			       (cur[5] - prev[5]) / dt / 1e6,
			       (cur[6] - prev[6]) / dt,
			       (cur[7] - prev[7]) / dt / 1e6,
			       (cur[8] - prev[8]) / dt,
			       jnum(j, "promotion_queue_depth"),
			       100 * jnum(j, "usage_ratio"));
			fflush(stdout);
			memcpy(prev, cur, sizeof(prev));
			t0 = t1;
			free(j);
		}
		free(path);
		free(mount);
	}
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	static const char *keys[] = {
		"mountpoint", "source", "cachedir", "options", "store_state",
		"store_reason", "store_state_since", "read_engine",
		"restarts", "restarts_why", "source_time_granularity_ns",
		"capacity_bytes",
		"cached_bytes", "cached_extents", "usage_ratio", "pinned_files",
		"promotion_queue_depth", "uptime_seconds", "version",
	};
	char *mount, *path, *j;
	unsigned i;

	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	mount = need_mount(argv[0]);
	if (!mount)
		return 1;
	path = ctl_path(mount, "stats.json");
	j = path ? read_all(path) : NULL;
	if (!j) {
		fprintf(stderr, "hotfsctl: %s: %s\n", mount, strerror(errno));
		return 1;
	}
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char *s = jstr(j, keys[i]);
		double v = jnum(j, keys[i]);

		if (s) {
			printf("%-22s %s\n", keys[i], s);
		} else if (v > 0 && strcmp(keys[i], "store_state_since") == 0) {
			time_t t = (time_t)v;
			char when[64];

			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z",
				 localtime(&t));
			printf("%-22s %s (%.0f s ago)\n", keys[i], when,
			       difftime(time(NULL), t));
		} else if (v >= 0)
			printf("%-22s %.15g\n", keys[i], v);
		free(s);
	}
	free(j);
	free(path);
	free(mount);
	return 0;
}

/* Send one command to MOUNT's ctl; print its answer ("ok..." or
 * "error: ..."), to stderr if it is an error.  Exit status. */
static int send_cmd(const char *arg, const char *cmd)
{
	char *mount, *path, ans[1024];
	size_t len = strlen(cmd);
	ssize_t n;
	int fd, ret = 0;

	mount = need_mount(arg);
	if (!mount)
		return 1;
	path = ctl_path(mount, "ctl");
	fd = path ? open(path, O_RDWR) : -1;
	if (fd < 0 || write(fd, cmd, len) != (ssize_t)len) {
		fprintf(stderr, "hotfsctl: %s: %s\n", path ? path : mount,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		free(path);
		free(mount);
		return 1;
	}
	n = pread(fd, ans, sizeof(ans) - 1, 0);
	close(fd);
	if (n > 0) {
		ans[n] = '\0';
		if (strncmp(ans, "error", 5) == 0) {
			fprintf(stderr, "hotfsctl: %s", ans);
			ret = 1;
		} else {
			fputs(ans, stdout);
		}
	}
	free(path);
	free(mount);
	return ret;
}

static int cmd_reset(int argc, char **argv)
{
	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	return send_cmd(argv[0], "reset-stats\n");
}

/* store on MOUNT: open a store that could not open at mount */
static int cmd_store(int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[0], "on") != 0) {
		usage(stderr);
		return 2;
	}
	return send_cmd(argv[1], "store on\n");
}

/* ------------------------------------------------------------------ */
/* Per-file commands over files and trees */

enum fcmd { F_WARM, F_PIN, F_UNPIN, F_EVICT, F_INFO };

struct progress {
	bool tty;
	uint64_t total_bytes, total_files;
	uint64_t bytes, files;
	double start, last;
};

static struct progress prog;
static enum fcmd cur_cmd;

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
		fprintf(stderr, "warm: %d%% %s/%s %llu/%llu files %s/s\n",
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

static void report_info(const char *path, const struct hotfs_ioc *io)
{
	char a[32], b[32];

	human(a, sizeof(a), (double)io->bytes);
	human(b, sizeof(b), (double)io->size);
	printf("%s: %s of %s cached (%llu extents of %u KiB)%s\n", path, a, b,
	       (unsigned long long)io->extents, io->extent / 1024,
	       io->flags & HOTFS_IOC_F_PINNED ? ", pinned" : "");
}

static int one_file(const char *path)
{
	struct hotfs_ioc io;
	uint64_t off;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%shotfsctl: %s: %s\n", prog.tty ? "\n" : "",
			path, strerror(errno));
		failures++;
		return 0;
	}
	memset(&io, 0, sizeof(io));
	switch (cur_cmd) {
	case F_PIN:
	case F_UNPIN:
		if (do_ioctl(fd, cur_cmd == F_PIN ? HOTFS_IOC_PIN :
			     HOTFS_IOC_UNPIN, &io) < 0)
			goto fail;
		if (cur_cmd == F_UNPIN)
			break;
		/* a pinned file is promoted now */
		__attribute__((fallthrough));
	case F_WARM:
		for (off = 0;; off += CHUNK) {
			memset(&io, 0, sizeof(io));
			io.off = off;
			io.len = CHUNK;
			if (do_ioctl(fd, HOTFS_IOC_WARM, &io) < 0)
				goto fail;
			prog.bytes += off + CHUNK < io.size ? CHUNK :
				      io.size > off ? io.size - off : 0;
			show_progress(false);
			if (off + CHUNK >= io.size || interrupted)
				break;
		}
		prog.files++;
		break;
	case F_EVICT:
		if (do_ioctl(fd, HOTFS_IOC_EVICT, &io) < 0)
			goto fail;
		break;
	case F_INFO:
		if (do_ioctl(fd, HOTFS_IOC_INFO, &io) < 0)
			goto fail;
		report_info(path, &io);
		break;
	}
	close(fd);
	return 0;
fail:
	fprintf(stderr, "%shotfsctl: %s: %s\n", prog.tty ? "\n" : "", path,
		errno == ENOTTY ? "not on a hotfs mount" : strerror(errno));
	failures++;
	close(fd);
	/* EACCES: the control channel is refused for every file */
	return errno == EACCES ? 1 : 0;
}

static int count_cb(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)path;
	(void)ftw;
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

static int cmd_files(enum fcmd c, int argc, char **argv)
{
	int i, r = 0;

	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	cur_cmd = c;
	signal(SIGINT, on_sigint);
	prog.tty = (c == F_WARM || c == F_PIN) && isatty(2);
	for (i = 0; i < argc; i++) {
		char *m = need_mount(argv[i]);

		if (!m)
			return 1;
		free(m);
		if (c == F_WARM || c == F_PIN)
			nftw(argv[i], count_cb, 64, FTW_PHYS | FTW_MOUNT);
	}
	prog.start = now_s();
	for (i = 0; i < argc && !interrupted && !r; i++)
		r = nftw(argv[i], file_cb, 64, FTW_PHYS | FTW_MOUNT);
	if (c == F_WARM || c == F_PIN)
		show_progress(true);
	if (interrupted) {
		fprintf(stderr, "hotfsctl: interrupted\n");
		return 130;
	}
	if (r < 0) {
		fprintf(stderr, "hotfsctl: %s\n", strerror(errno));
		return 1;
	}
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	while (argc > 1 && argv[1][0] == '-') {
		if (strcmp(argv[1], "--ctldir") == 0 && argc > 2) {
			ctldir = argv[2];
			argv += 2;
			argc -= 2;
		} else if (strcmp(argv[1], "-h") == 0 ||
			   strcmp(argv[1], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[1], "-V") == 0 ||
			   strcmp(argv[1], "--version") == 0) {
			printf("hotfsctl version %s\n", HOTFS_VERSION);
			return 0;
		} else {
			fprintf(stderr, "hotfsctl: unknown option '%s'\n",
				argv[1]);
			usage(stderr);
			return 2;
		}
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	argc -= 2;
	argv += 2;
	if (strcmp(cmd, "stats") == 0)
		return cmd_stats(argc, argv);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(argc, argv);
	if (strcmp(cmd, "reset-stats") == 0)
		return cmd_reset(argc, argv);
	if (strcmp(cmd, "store") == 0)
		return cmd_store(argc, argv);
	if (strcmp(cmd, "warm") == 0)
		return cmd_files(F_WARM, argc, argv);
	if (strcmp(cmd, "pin") == 0)
		return cmd_files(F_PIN, argc, argv);
	if (strcmp(cmd, "unpin") == 0)
		return cmd_files(F_UNPIN, argc, argv);
	if (strcmp(cmd, "evict") == 0)
		return cmd_files(F_EVICT, argc, argv);
	if (strcmp(cmd, "info") == 0)
		return cmd_files(F_INFO, argc, argv);
	fprintf(stderr, "hotfsctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
