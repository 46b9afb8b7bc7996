// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Log sink for hotfs and libfuse.  One function decides where a line goes;
 * callers pass a syslog level and a format ending in "\n".
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <fuse_log.h>

#include "hotfs/log.h"

int hotfs_log_level = LOG_INFO;
static bool use_syslog;
static __thread bool mid_line;	/* libfuse logs one line in pieces */

static void vlog(int level, const char *fmt, va_list ap)
{
	size_t len = strlen(fmt);

	if (level > hotfs_log_level)
		return;
	if (use_syslog) {
		vsyslog(level, fmt, ap);
		return;
	}
	if (!mid_line)
		fputs("hotfs: ", stderr);
	vfprintf(stderr, fmt, ap);
	mid_line = len && fmt[len - 1] != '\n';
}

static void fuse_sink(enum fuse_log_level level, const char *fmt, va_list ap)
{
	/* fuse_log_level values are the syslog levels */
	vlog((int)level, fmt, ap);
}

void log_init(void)
{
	fuse_set_log_func(fuse_sink);
}

void log_to_syslog(void)
{
	openlog("hotfs", LOG_PID, LOG_DAEMON);
	use_syslog = true;
}

void hotfs_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}
