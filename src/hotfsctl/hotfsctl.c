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

#include "hotfsctl_i.h"

/* ------------------------------------------------------------------ */
/* stats, status, reset-stats, set */

/* The rates of one interval of stats -w, as a line or a JSON object. */
static const char *const live_keys[] = {
	"read_requests", "read_hits", "read_partial_hits",
	"read_misses", "read_hit_bytes", "read_miss_bytes",
	"promotions", "promoted_bytes", "evictions", "flushed_bytes",
};
#define NLIVE (sizeof(live_keys) / sizeof(live_keys[0]))

static void live_row(const double *prev, const double *cur, double dt,
		     const char *j, unsigned row)
{
	double reqs = cur[0] - prev[0], hitp = reqs > 0 ? 100.0 / reqs : 0;
	/* writeback's: the dirty bytes now, the flush's rate */
	double r[13] = {
		reqs / dt, (cur[1] - prev[1]) * hitp,
		(cur[2] - prev[2]) * hitp, (cur[3] - prev[3]) * hitp,
		(cur[4] - prev[4]) / dt / 1e6, (cur[5] - prev[5]) / dt / 1e6,
		(cur[6] - prev[6]) / dt, (cur[7] - prev[7]) / dt / 1e6,
		(cur[8] - prev[8]) / dt, num(j, "promotion_queue_depth"),
		100 * num(j, "usage_ratio"), num(j, "dirty_bytes") / 1e6,
		(cur[9] - prev[9]) / dt / 1e6,
	};
	static const char *const jkeys[13] = {
		"reads_per_second", "hit_percent", "partial_hit_percent",
		"miss_percent", "cache_read_bytes_per_second",
		"source_read_bytes_per_second", "promotions_per_second",
		"promoted_bytes_per_second", "evictions_per_second",
		"promotion_queue_depth", "usage_percent", "dirty_bytes",
		"flushed_bytes_per_second",
	};
	/* the byte counts in bytes in JSON, in MB in the table */
	static const bool mb[13] = { [4] = true, [5] = true, [7] = true,
				     [11] = true, [12] = true };

	if (json) {
		char *st = jstr(j, "store_state");
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		printf("{\"time\": %.3f, \"interval_seconds\": %.3f, "
		       "\"store_state\": ", (double)now.tv_sec +
		       (double)now.tv_nsec / 1e9, dt);
		jput(stdout, st ? st : "");
		free(st);
		for (unsigned i = 0; i < 13; i++)
			printf(", \"%s\": %.*f", jkeys[i], mb[i] ? 0 : 2,
			       mb[i] ? r[i] * 1e6 : r[i]);
		printf("}\n");
		return;
	}
	if (row % 20 == 0)
		printf("%8s %6s %6s %6s %10s %10s %8s %9s %8s %6s %6s %9s %9s\n",
		       "reads/s", "hit%", "part%", "miss%", "cacheMB/s",
		       "srcMB/s", "promo/s", "promoMB/s", "evict/s", "queue",
		       "used%", "dirtyMB", "flushMB/s");
	printf("%8.1f %6.1f %6.1f %6.1f %10.2f %10.2f %8.1f %9.2f %8.1f %6.0f %6.1f %9.2f %9.2f\n",
	       r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
	       r[10], r[11], r[12]);
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
	"dirty_bytes", "oldest_dirty_age", "wlog_used_bytes",
	"wlog_capacity_bytes", "writeback_state", "writeback_reason",
	"writeback_state_since", "lost_dirty_bytes", "lost_dirty_files", "wlog_checksum_failures",
	"passthrough", "fuse_uring",
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

/* writeback's state, and what the log lost */
static void status_writeback(const char *j)
{
	char *state = jstr(j, "writeback_state"), *why;
	char line[512], a[32];

	why = jstr(j, "writeback_reason");
	snprintf(line, sizeof(line), "%s%s%s%s", state ? state : "",
		 why && *why ? " (" : "", why ? why : "",
		 why && *why ? ")" : "");
	status_line("writeback_state", line);
	free(state);
	free(why);
	if (num(j, "lost_dirty_bytes") > 0 || num(j, "lost_dirty_files") > 0 ||
	    num(j, "wlog_checksum_failures") > 0) {
		human(a, sizeof(a), num(j, "lost_dirty_bytes"));
		snprintf(line, sizeof(line), "%s found lost since mount, %.0f "
			 "files hold lost bytes, %.0f checksum failures", a,
			 num(j, "lost_dirty_files"),
			 num(j, "wlog_checksum_failures"));
		status_line("lost_dirty", line);
	}
}

/* one string of the stats, as it is */
static void status_str(const char *j, const char *key)
{
	char *s = jstr(j, key);

	status_line(key, s ? s : "");
	free(s);
}

/* when the store came to its state, and how long ago */
static void status_since(const char *j)
{
	double since = num(j, "store_state_since");
	char line[256];

	if (since > 0) {
		time_t t = (time_t)since;
		char when[64];

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z",
			 localtime(&t));
		snprintf(line, sizeof(line), "%s (%.0f s ago)", when,
			 difftime(time(NULL), t));
		status_line("store_state_since", line);
	}
}

/* what the store holds and was given, and the space its regions take */
static void status_store(const char *j)
{
	double cap = num(j, "capacity_bytes"), regions = num(j, "regions");
	double used = num(j, "regions_used"), foot, bytes;
	char line[256], a[32], b[32];

	bytes = num(j, "cached_bytes");
	human_of(line, sizeof(line), bytes, cap);
	snprintf(line + strlen(line), sizeof(line) - strlen(line),
		 " (%.0f records: extents, and blocks of random readers)",
		 num(j, "cached_extents"));
	status_line("cached", line);
	snprintf(line, sizeof(line), "%.0f (%.0f blocks, %.0f extents)",
		 num(j, "promotions"), num(j, "promotions_block"),
		 num(j, "promotions_extent"));
	status_line("promotions", line);
	if (num(j, "write_budget_bytes") > 0) {
		human(a, sizeof(a), num(j, "ssd_bytes_written_today"));
		human(b, sizeof(b), num(j, "write_budget_bytes"));
		snprintf(line, sizeof(line), "%s written today of %s/day "
			 "(%.0f refused)", a, b,
			 num(j, "not_promoted_budget"));
		status_line("write_budget", line);
	}
	/* regions are written whole: live data against their space */
	foot = regions > 0 ? cap / regions * used : 0;
	human(a, sizeof(a), foot);
	snprintf(line, sizeof(line), "%s in %.0f of %.0f regions, %.1f%% "
		 "of it live data", a, used, regions,
		 foot > 0 ? 100.0 * bytes / foot : 0.0);
	status_line("footprint", line);
}

/* writemode=writeback: what waits for the flusher, and the log's state */
static void status_dirty(const char *j)
{
	double age = num(j, "oldest_dirty_age");
	char line[256], a[32], b[32];

	human(a, sizeof(a), num(j, "dirty_bytes"));
	snprintf(line, sizeof(line), "%s in %.0f files", a,
		 num(j, "dirty_files"));
	status_line("dirty", line);
	snprintf(line, sizeof(line), "%.1f s", age > 0 ? age : 0);
	status_line("oldest_dirty_age", line);
	human(a, sizeof(a), num(j, "wlog_used_bytes"));
	human(b, sizeof(b), num(j, "wlog_capacity_bytes"));
	snprintf(line, sizeof(line), "%s of %s (%.1f%%)", a, b,
		 100.0 * num(j, "wlog_used_bytes") /
		 num(j, "wlog_capacity_bytes"));
	status_line("writeback_log", line);
	status_writeback(j);
}

static void status_human(const char *j)
{
	static const char *const strs[] = {
		"mountpoint", "source", "cachedir", "options", "store_state",
		"store_reason",
	};
	static const char *const more[] = {
		"read_engine", "restarts", "restarts_why", "fuse_uring",
		"passthrough",
	};
	double up;
	char line[256], a[32], b[32];
	unsigned i;

	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		status_str(j, strs[i]);
	status_since(j);
	for (i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		status_str(j, more[i]);
	snprintf(line, sizeof(line), "%.0f",
		 num(j, "source_time_granularity_ns"));
	status_line("source_time_granularity_ns", line);
	status_store(j);
	snprintf(line, sizeof(line), "%.0f", num(j, "pinned_files"));
	status_line("pinned_files", line);
	snprintf(line, sizeof(line), "%.0f extents",
		 num(j, "promotion_queue_depth"));
	status_line("promotion_queue", line);
	human(a, sizeof(a), num(j, "index_bytes"));
	human(b, sizeof(b), num(j, "policy_bytes"));
	snprintf(line, sizeof(line), "index %s, policy %s", a, b);
	status_line("memory", line);
	if (num(j, "wlog_capacity_bytes") > 0)
		status_dirty(j);
	up = num(j, "uptime_seconds");
	snprintf(line, sizeof(line), "%dd %02d:%02d:%02d", (int)(up / 86400),
		 (int)up / 3600 % 24, (int)up / 60 % 60, (int)up % 60);
	status_line("uptime", line);
	status_str(j, "version");
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
	if (strcmp(cmd, "flush") == 0)
		return cmd_flush(argc, argv);
	fprintf(stderr, "hotfsctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
