// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfsctl: manage a hotfs mount.
 *
 *   hotfsctl stats MOUNT [--json | --prometheus] [-w SECONDS]
 *   hotfsctl status MOUNT
 *   hotfsctl set MOUNT KEY=VALUE...   change options while mounted
 *   hotfsctl reset-stats MOUNT
 *   hotfsctl store on MOUNT      open a store that could not open at mount
 *   hotfsctl warm PATH...        promote files or trees now (at
 *                                promote_rate unless --rate)
 *   hotfsctl pin PATH...         never evict them (and warm them)
 *   hotfsctl unpin PATH...
 *   hotfsctl evict PATH...       drop their cached extents
 *   hotfsctl info PATH...        how much of each file is cached, and why
 *   hotfsctl pins MOUNT          the pinned files under MOUNT
 * Every command takes --json: one JSON object on stdout (JSON lines for
 * stats -w), with the same keys whatever the store's state.
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
static bool json;		/* --json: JSON on stdout */

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: hotfsctl [--ctldir NAME] COMMAND ... [--json]\n"
"  stats MOUNT [--prometheus] [-w SECONDS]\n"
"                                     counters (a live view with -w)\n"
"  status MOUNT                       source, cachedir, options, state\n"
"  set MOUNT KEY=VALUE...             change threshold, promote_rate,\n"
"                                     seqcutoff, writemode, inode_cache\n"
"                                     while mounted\n"
"  reset-stats MOUNT                  zero the counters\n"
"  store on MOUNT                     open a store that is off, once its\n"
"                                     cause is fixed (no remount)\n"
"  warm [--rate RATE] [--files-from FILE|-] PATH...\n"
"                                     promote files or trees now, at\n"
"                                     the mount's promote_rate (--rate 0:\n"
"                                     unlimited)\n"
"  pin PATH... | unpin PATH...        keep files cached for good\n"
"  evict PATH...                      drop files' or trees' extents\n"
"  info PATH...                       how much of each file is cached\n"
"  pins MOUNT                         the pinned files under MOUNT\n"
"  --json                             one JSON object on stdout\n");
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

/*
 * A virtual file of .hotfs, NUL-terminated (malloc'd), or NULL with
 * errno.  In as few read(2)s as it takes, each as large as the buffer, and
 * a short read is the end: on a mount without open round trips
 * (revalidate=never) every read that reaches past the size the kernel
 * knows has the daemon render a new snapshot, so a second read at the end
 * of the first could append the tail of a newer, longer one.
 */
static char *read_all(const char *path)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 1), *nb;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		free(buf);
		errno = e;
		return NULL;
	}
	for (;;) {
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			free(buf);
			errno = e;
			return NULL;
		}
		len += (size_t)n;
		if (len < cap)
			break;
		nb = realloc(buf, 2 * cap + 1);
		if (!nb) {
			close(fd);
			free(buf);
			errno = ENOMEM;
			return NULL;
		}
		buf = nb;
		cap *= 2;
	}
	close(fd);
	buf[len] = '\0';
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
/* JSON and units */

/* A JSON string. */
static void jput(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* The raw token of key in the flat JSON object hotfs writes (a number
 * or a quoted string, malloc'd), or NULL. */
static char *jraw(const char *json, const char *key)
{
	char pat[128];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(json, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	if (*p == '"') {
		for (e = p + 1; *e && *e != '"'; e++)
			if (*e == '\\' && e[1])
				e++;
		if (*e)
			e++;
	} else {
		e = p + strcspn(p, ",\n}");
	}
	return strndup(p, (size_t)(e - p));
}

/* A size: digits and an optional K, M, G, T (powers of 1024), as the
 * mount options take them.  0 or -1. */
static int parse_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long n;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (*end == 'i' || *end == 'I') &&
	    (end[1] == 'b' || end[1] == 'B'))
		end += 2;
	else if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (shift && n > (UINT64_MAX >> shift)))
		return -1;
	*v = (uint64_t)n << shift;
	return 0;
}

/* "12.3 GiB of 50.0 GiB, 24.6%" */
static void human_of(char *buf, size_t len, double part, double whole)
{
	char a[32], b[32];

	human(a, sizeof(a), part);
	human(b, sizeof(b), whole);
	snprintf(buf, len, "%s of %s, %.1f%%", a, b,
		 whole > 0 ? 100.0 * part / whole : 0.0);
}

static double num(const char *j, const char *key)
{
	double v = jnum(j, key);

	return v < 0 ? 0 : v;
}

/* The value of one option in the stats' "k=v,..." options, or NULL. */
static char *opt_of(const char *opts, const char *key)
{
	size_t n = strlen(key);
	const char *p = opts;

	while (p && *p) {
		size_t w = strcspn(p, ",");

		if (w > n && strncmp(p, key, n) == 0 && p[n] == '=')
			return strndup(p + n + 1, w - n - 1);
		if (w == n && strncmp(p, key, n) == 0)
			return strdup("");
		p += w + (p[w] == ',');
	}
	return NULL;
}

/* MOUNT's stats.json (malloc'd), or NULL with the error printed. */
static char *mount_stats(const char *mount)
{
	char *path = ctl_path(mount, "stats.json"), *j;

	j = path ? read_all(path) : NULL;
	if (!j)
		fprintf(stderr, "hotfsctl: %s: %s\n", path ? path : mount,
			strerror(errno));
	free(path);
	return j;
}

/* ------------------------------------------------------------------ */
/* stats, status, reset-stats, set */

/* The rates of one interval of stats -w, as a line or a JSON object. */
static const char *const live_keys[] = {
	"read_requests", "read_hits", "read_partial_hits",
	"read_misses", "read_hit_bytes", "read_miss_bytes",
	"promotions", "promoted_bytes", "evictions",
};
#define NLIVE (sizeof(live_keys) / sizeof(live_keys[0]))

static void live_row(const double *prev, const double *cur, double dt,
		     const char *j, unsigned row)
{
	double reqs = cur[0] - prev[0], hitp = reqs > 0 ? 100.0 / reqs : 0;
	double r[11] = {
		reqs / dt, (cur[1] - prev[1]) * hitp,
		(cur[2] - prev[2]) * hitp, (cur[3] - prev[3]) * hitp,
		(cur[4] - prev[4]) / dt / 1e6, (cur[5] - prev[5]) / dt / 1e6,
		(cur[6] - prev[6]) / dt, (cur[7] - prev[7]) / dt / 1e6,
		(cur[8] - prev[8]) / dt, num(j, "promotion_queue_depth"),
		100 * num(j, "usage_ratio"),
	};
	static const char *const jkeys[11] = {
		"reads_per_second", "hit_percent", "partial_hit_percent",
		"miss_percent", "cache_read_bytes_per_second",
		"source_read_bytes_per_second", "promotions_per_second",
		"promoted_bytes_per_second", "evictions_per_second",
		"promotion_queue_depth", "usage_percent",
	};

	if (json) {
		char *st = jstr(j, "store_state");
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		printf("{\"time\": %.3f, \"interval_seconds\": %.3f, "
		       "\"store_state\": ", (double)now.tv_sec +
		       (double)now.tv_nsec / 1e9, dt);
		jput(stdout, st ? st : "");
		free(st);
		for (unsigned i = 0; i < 11; i++)
			printf(", \"%s\": %.*f", jkeys[i],
			       (i == 4 || i == 5 || i == 7) ? 0 : 2,
			       (i == 4 || i == 5 || i == 7) ? r[i] * 1e6 :
			       r[i]);
		printf("}\n");
		return;
	}
	if (row % 20 == 0)
		printf("%8s %6s %6s %6s %10s %10s %8s %9s %8s %6s %6s\n",
		       "reads/s", "hit%", "part%", "miss%", "cacheMB/s",
		       "srcMB/s", "promo/s", "promoMB/s", "evict/s", "queue",
		       "used%");
	printf("%8.1f %6.1f %6.1f %6.1f %10.2f %10.2f %8.1f %9.2f %8.1f %6.0f %6.1f\n",
	       r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
	       r[10]);
}

static int cmd_stats(int argc, char **argv)
{
	bool prom = false;
	double every = 0;
	char *mount = NULL, *path, *text;
	int i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--prometheus") == 0) {
			prom = true;
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
	if (!mount || (prom && (json || every))) {
		if (prom && (json || every))
			fprintf(stderr, "hotfsctl: --prometheus goes with "
				"neither --json nor -w\n");
		usage(stderr);
		free(mount);
		return 2;
	}
	if (!every) {
		path = ctl_path(mount, prom ? "metrics" : json ? "stats.json" :
				"stats");
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
		double prev[NLIVE], cur[NLIVE], t0, t1;
		unsigned row = 0;
		char *j;

		path = ctl_path(mount, "stats.json");
		j = path ? read_all(path) : NULL;
		if (!j) {
			fprintf(stderr, "hotfsctl: %s: %s\n", mount,
				strerror(errno));
			return 1;
		}
		for (i = 0; i < (int)NLIVE; i++)
			prev[i] = num(j, live_keys[i]);
		free(j);
		t0 = now_s();
		signal(SIGINT, on_sigint);
		while (!interrupted) {
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
			for (i = 0; i < (int)NLIVE; i++)
				cur[i] = num(j, live_keys[i]);
			live_row(prev, cur, t1 - t0, j, row++);
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

/* status: what stats.json says, for a person or (--json) a program */
static const char *const status_keys[] = {
	"mountpoint", "source", "cachedir", "options", "store_state",
	"store_reason", "store_state_since", "read_engine", "restarts",
	"restarts_why", "source_time_granularity_ns", "capacity_bytes",
	"cached_bytes", "cached_extents", "usage_ratio", "regions",
	"regions_used", "pinned_files", "promotion_queue_depth",
	"index_bytes", "policy_bytes", "uptime_seconds", "version",
};

static void status_json(const char *j)
{
	double regions = num(j, "regions"), cap = num(j, "capacity_bytes");
	char *opts = jstr(j, "options"), *v;
	unsigned i;

	printf("{");
	for (i = 0; i < sizeof(status_keys) / sizeof(status_keys[0]); i++) {
		char *raw = jraw(j, status_keys[i]);

		printf("%s\n  \"%s\": %s", i ? "," : "", status_keys[i],
		       raw ? raw : "null");
		free(raw);
	}
	/* the space the store's regions take, live data or not */
	printf(",\n  \"footprint_bytes\": %.0f",
	       regions > 0 ? cap / regions * num(j, "regions_used") : 0);
	v = opt_of(opts, "allow_other");
	printf(",\n  \"allow_other\": %s", v ? "true" : "false");
	free(v);
	v = opt_of(opts, "default_permissions");
	printf(",\n  \"default_permissions\": %s", v ? "true" : "false");
	free(v);
	printf("\n}\n");
	free(opts);
}

static void status_line(const char *key, const char *val)
{
	printf("%-22s %s\n", key, val);
}

static void status_human(const char *j)
{
	static const char *const strs[] = {
		"mountpoint", "source", "cachedir", "options", "store_state",
		"store_reason",
	};
	double since = num(j, "store_state_since"), up;
	double cap = num(j, "capacity_bytes"), regions = num(j, "regions");
	double used = num(j, "regions_used"), foot, bytes;
	char line[256], a[32], b[32];
	unsigned i;

	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		char *s = jstr(j, strs[i]);

		status_line(strs[i], s ? s : "");
		free(s);
	}
	if (since > 0) {
		time_t t = (time_t)since;
		char when[64];

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z",
			 localtime(&t));
		snprintf(line, sizeof(line), "%s (%.0f s ago)", when,
			 difftime(time(NULL), t));
		status_line("store_state_since", line);
	}
	{
		static const char *const more[] = {
			"read_engine", "restarts", "restarts_why",
		};

		for (i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
			char *s = jstr(j, more[i]);

			status_line(more[i], s ? s : "");
			free(s);
		}
	}
	snprintf(line, sizeof(line), "%.0f",
		 num(j, "source_time_granularity_ns"));
	status_line("source_time_granularity_ns", line);
	bytes = num(j, "cached_bytes");
	human_of(line, sizeof(line), bytes, cap);
	snprintf(line + strlen(line), sizeof(line) - strlen(line),
		 " (%.0f extents)", num(j, "cached_extents"));
	status_line("cached", line);
	/* regions are written whole: live data against their space */
	foot = regions > 0 ? cap / regions * used : 0;
	human(a, sizeof(a), foot);
	snprintf(line, sizeof(line), "%s in %.0f of %.0f regions, %.1f%% "
		 "of it live data", a, used, regions,
		 foot > 0 ? 100.0 * bytes / foot : 0.0);
	status_line("footprint", line);
	snprintf(line, sizeof(line), "%.0f", num(j, "pinned_files"));
	status_line("pinned_files", line);
	snprintf(line, sizeof(line), "%.0f extents",
		 num(j, "promotion_queue_depth"));
	status_line("promotion_queue", line);
	human(a, sizeof(a), num(j, "index_bytes"));
	human(b, sizeof(b), num(j, "policy_bytes"));
	snprintf(line, sizeof(line), "index %s, policy %s", a, b);
	status_line("memory", line);
	up = num(j, "uptime_seconds");
	snprintf(line, sizeof(line), "%dd %02d:%02d:%02d", (int)(up / 86400),
		 (int)up / 3600 % 24, (int)up / 60 % 60, (int)up % 60);
	status_line("uptime", line);
	{
		char *s = jstr(j, "version");

		status_line("version", s ? s : "");
		free(s);
	}
}

static int cmd_status(int argc, char **argv)
{
	char *mount, *j;

	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	mount = need_mount(argv[0]);
	if (!mount)
		return 1;
	j = mount_stats(mount);
	free(mount);
	if (!j)
		return 1;
	if (json)
		status_json(j);
	else
		status_human(j);
	free(j);
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
	if (n < 0)
		n = 0;
	ans[n] = '\0';
	ret = strncmp(ans, "error", 5) == 0;
	if (json) {
		char *msg = ans + strcspn(ans, ":");

		msg += *msg == ':' ? 1 + (msg[1] == ' ') : 0;
		msg[strcspn(msg, "\n")] = '\0';
		printf("{\"ok\": %s, \"message\": ", ret ? "false" : "true");
		jput(stdout, msg);
		printf("}\n");
	} else if (ret) {
		fprintf(stderr, "hotfsctl: %s", ans);
	} else {
		fputs(ans, stdout);
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

/* set MOUNT KEY=VALUE...: the daemon checks them (all or none) */
static int cmd_set(int argc, char **argv)
{
	char *cmd = NULL;
	size_t len = 0;
	FILE *f;
	int i, r;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	f = open_memstream(&cmd, &len);
	if (!f)
		return 1;
	fputs("set", f);
	for (i = 1; i < argc; i++)
		fprintf(f, " %s", argv[i]);
	fputc('\n', f);
	fclose(f);
	r = send_cmd(argv[0], cmd);
	free(cmd);
	return r;
}

/* ------------------------------------------------------------------ */
/* Per-file commands over files and trees */

enum fcmd { F_WARM, F_PIN, F_UNPIN, F_EVICT, F_INFO, F_PINS, F_CHECK };

struct progress {
	bool tty;
	uint64_t total_bytes, total_files;
	uint64_t bytes, files;
	uint64_t copied;		/* bytes read from the source */
	double start, last;
};

static struct progress prog;
static enum fcmd cur_cmd;
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
		       "\"pinned\": %s}", (unsigned long long)io->size,
		       (unsigned long long)io->bytes,
		       (unsigned long long)io->extents, io->extent,
		       io->flags & HOTFS_IOC_F_PINNED ? "true" : "false");
		tot.any = true;
		return;
	}
	human(a, sizeof(a), (double)io->bytes);
	human(b, sizeof(b), (double)io->size);
	printf("%s: %s of %s cached (%llu extents of %u KiB)%s\n", path, a, b,
	       (unsigned long long)io->extents, io->extent / 1024,
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

static int one_file(const char *path)
{
	struct hotfs_ioc io;
	uint64_t off, step = chunk();
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
		if (cur_cmd == F_UNPIN) {
			tot.files++;
			break;
		}
		/* a pinned file is promoted now */
		__attribute__((fallthrough));
	case F_WARM:
		for (off = 0;; off += step) {
			memset(&io, 0, sizeof(io));
			io.off = off;
			io.len = step;
			if (do_ioctl(fd, HOTFS_IOC_WARM, &io) < 0)
				goto fail;
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
		break;
	case F_EVICT:
		if (do_ioctl(fd, HOTFS_IOC_EVICT, &io) < 0)
			goto fail;
		tot.files++;
		tot.bytes += io.done;
		break;
	case F_INFO:
		if (info(fd, &io) < 0)
			goto fail;
		report_file(path, &io);
		break;
	case F_PINS:
		if (info(fd, &io) < 0)
			goto fail;
		if (io.flags & HOTFS_IOC_F_PINNED)
			report_file(path, &io);
		break;
	case F_CHECK:	/* after warm: how much of it is cached now */
		if (info(fd, &io) < 0)
			goto fail;
		tot.files++;
		tot.size += io.size;
		tot.bytes += io.bytes;
		break;
	}
	close(fd);
	return 0;
fail:
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

static int cmd_files(enum fcmd c, int argc, char **argv)
{
	struct paths p = { 0 };
	char *mount = NULL, *j;
	bool rate_given = false, fits = true;
	double cap = 0;
	int i, r = 0, ret;

	cur_cmd = c;
	for (i = 0; i < argc; i++) {
		if ((c == F_WARM || c == F_PIN) &&
		    strcmp(argv[i], "--rate") == 0 && i + 1 < argc) {
			if (parse_size(argv[++i], &warm_rate) < 0) {
				fprintf(stderr, "hotfsctl: --rate '%s': bytes "
					"per second (e.g. 50M, 0 = unlimited)\n",
					argv[i]);
				r = 2;
			}
			rate_given = true;
		} else if (c != F_PINS &&
			   strcmp(argv[i], "--files-from") == 0 &&
			   i + 1 < argc) {
			if (read_list(&p, argv[++i]) < 0)
				r = 1;
		} else if (paths_add(&p, argv[i]) < 0) {
			r = 1;
		}
	}
	if (!r && (!p.n || (c == F_PINS && p.n != 1)))
		r = 2;
	if (r) {
		if (r == 2)
			usage(stderr);
		paths_free(&p);
		return r;
	}
	signal(SIGINT, on_sigint);
	prog.tty = (c == F_WARM || c == F_PIN) && isatty(2);
	for (size_t k = 0; k < p.n; k++) {
		char *m = need_mount(p.v[k]);

		if (!m) {
			free(mount);
			paths_free(&p);
			return 1;
		}
		if (!mount)
			mount = m;
		else
			free(m);
		if (c == F_WARM || c == F_PIN)
			nftw(p.v[k], count_cb, 64, FTW_PHYS | FTW_MOUNT);
	}
	if (c == F_WARM || c == F_PIN) {
		char h1[32], h2[32];

		if (!rate_given)
			warm_rate = mount_rate(mount);
		j = mount_stats(mount);
		cap = j ? num(j, "capacity_bytes") : 0;
		free(j);
		if (cap > 0 && (double)prog.total_bytes > cap) {
			fits = false;
			human(h1, sizeof(h1), (double)prog.total_bytes);
			human(h2, sizeof(h2), cap);
			fprintf(stderr, "hotfsctl: %s asked, but the cache "
				"holds %s: not all of it can stay cached\n",
				h1, h2);
		}
	}
	if (json && (c == F_INFO || c == F_PINS)) {
		printf("{");
		if (c == F_PINS) {
			printf("\"mountpoint\": ");
			jput(stdout, mount);
			printf(", ");
		}
		printf("\"files\": [");
	}
	prog.start = now_s();
	r = walk(&p);
	if (c == F_WARM || c == F_PIN)
		show_progress(true);
	ret = interrupted ? 130 : r < 0 ? 1 : failures ? 1 : 0;
	if (c == F_WARM || c == F_PIN)
		warm_summary(&p, mount, fits, cap, now_s() - prog.start, ret);
	if (c == F_INFO || c == F_PINS) {
		double inmount = 0;

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
				inmount - (double)tot.pinned, inmount,
				p.v[0]);
	}
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

int main(int argc, char **argv)
{
	const char *cmd;
	int i, n;

	while (argc > 1 && argv[1][0] == '-') {
		if (strcmp(argv[1], "--ctldir") == 0 && argc > 2) {
			ctldir = argv[2];
			argv += 2;
			argc -= 2;
		} else if (strcmp(argv[1], "--json") == 0) {
			json = true;
			argv++;
			argc--;
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
	/* --json anywhere after the command */
	for (i = n = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else
			argv[n++] = argv[i];
	}
	argc = n;
	if (strcmp(cmd, "stats") == 0)
		return cmd_stats(argc, argv);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(argc, argv);
	if (strcmp(cmd, "set") == 0)
		return cmd_set(argc, argv);
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
	if (strcmp(cmd, "pins") == 0)
		return cmd_files(F_PINS, argc, argv);
	fprintf(stderr, "hotfsctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
