/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging: syslog levels, routed through fuse_set_log_func() so libfuse's
 * own messages go the same way.  Before daemonizing (and with -f) lines go
 * to stderr as "hotfs: ..."; after, to syslog (libfuse 3.14 has no syslog
 * sink of its own).
 */
#ifndef HOTFS_LOG_H
#define HOTFS_LOG_H

#include <stdbool.h>
#include <syslog.h>

extern int hotfs_log_level;	/* messages above this are dropped */

void log_init(void);
void log_to_syslog(void);
void hotfs_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define hotfs_debug(...)						\
	do {								\
		if (hotfs_log_level >= LOG_DEBUG)			\
			hotfs_log(LOG_DEBUG, __VA_ARGS__);		\
	} while (0)

#endif
