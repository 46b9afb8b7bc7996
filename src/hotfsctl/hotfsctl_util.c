// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfsctl's shared helpers (src/hotfsctl/hotfsctl_i.h): finding the mount of a
 * path, reading .hotfs files, the little JSON it reads and writes, sizes
 * and human units.
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
#include "hotfs/ctl_keys.h"
#include "hotfs/ioctl.h"
#include "hotfs/mountinfo.h"

#include "hotfs/textfmt.h"
#include "hotfsctl_i.h"

const char *ctldir = ".hotfs";
volatile sig_atomic_t interrupted;
int failures;
bool json;		/* --json: JSON on stdout */

void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* The usage's second column, and where its lines end. */
#define USAGE_COL	37
#define USAGE_END	72

/* set's line of the usage, its keys from the one list (ctl_keys.h) */
static void usage_set(FILE *f)
{
	int col = fprintf(f, "%-*schange while mounted:", USAGE_COL,
			  "  set MOUNT KEY=VALUE...");

	for (size_t i = 0; i < ctl_nkeys; i++) {
		const char *comma = i + 1 < ctl_nkeys ? "," : "";
		int w = (int)(strlen(ctl_keys[i].name) + strlen(comma));

		if (col + 1 + w > USAGE_END)
			col = fprintf(f, "\n%*s", USAGE_COL - 1, "") - 1;
		col += fprintf(f, " %s%s", ctl_keys[i].name, comma);
	}
	fputc('\n', f);
}

void usage(FILE *f)
{
	fprintf(f,
"usage: hotfsctl [--ctldir NAME] COMMAND ... [--json]\n"
"  stats MOUNT [--prometheus] [-w SECONDS]\n"
"                                     counters (a live view with -w)\n"
"  status MOUNT                       source, cachedir, options, state\n");
	usage_set(f);
	fprintf(f,
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
"  flush [PATH...]                    writeback: write dirty data to the\n"
"                                     source now (a mount's root or none:\n"
"                                     all of it; files or trees)\n"
"  --json                             one JSON object on stdout\n");
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void human(char *buf, size_t len, double v)
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
char *mount_of(const char *path)
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

char *ctl_path(const char *mount, const char *name)
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
char *read_all(const char *path)
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

char *need_mount(const char *arg)
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
double jnum(const char *json, const char *key)
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
char *jstr(const char *json, const char *key)
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
void jput(FILE *f, const char *s)
{
	json_put_str(f, s);
}

/* The raw token of key in the flat JSON object hotfs writes (a number
 * or a quoted string, malloc'd), or NULL. */
char *jraw(const char *json, const char *key)
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
int parse_size(const char *s, uint64_t *v)
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
	shift = size_suffix_shift(*end);
	if (shift)
		end++;
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
void human_of(char *buf, size_t len, double part, double whole)
{
	char a[32], b[32];

	human(a, sizeof(a), part);
	human(b, sizeof(b), whole);
	snprintf(buf, len, "%s of %s, %.1f%%", a, b,
		 whole > 0 ? 100.0 * part / whole : 0.0);
}

double num(const char *j, const char *key)
{
	double v = jnum(j, key);

	return v < 0 ? 0 : v;
}

/* The value of one option in the stats' "k=v,..." options, or NULL. */
char *opt_of(const char *opts, const char *key)
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
char *mount_stats(const char *mount)
{
	char *path = ctl_path(mount, "stats.json"), *j;

	j = path ? read_all(path) : NULL;
	if (!j)
		fprintf(stderr, "hotfsctl: %s: %s\n", path ? path : mount,
			strerror(errno));
	free(path);
	return j;
}

