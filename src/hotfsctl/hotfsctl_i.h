/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to hotfsctl (src/hotfsctl/hotfsctl.c, hotfsctl_files.c,
 * hotfsctl_util.c): the options every command shares and the helpers
 * they use.  hotfsctl knows only the control protocol
 * (include/hotfs/ctl.h, ctl_keys.h, ioctl.h) and the text of
 * .hotfs/stats.
 */
#ifndef HOTFS_HOTFSCTL_I_H
#define HOTFS_HOTFSCTL_I_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern const char *ctldir;		/* --ctldir */
extern volatile sig_atomic_t interrupted;	/* Ctrl-C */
extern int failures;			/* files or requests that failed */
extern bool json;			/* --json: JSON on stdout */

void on_sigint(int sig);
void usage(FILE *f);
double now_s(void);
void human(char *buf, size_t len, double v);
char *mount_of(const char *path);
char *ctl_path(const char *mount, const char *name);
char *read_all(const char *path);
char *need_mount(const char *arg);
double jnum(const char *json, const char *key);
char *jstr(const char *json, const char *key);
void jput(FILE *f, const char *s);
char *jraw(const char *json, const char *key);
int parse_size(const char *s, uint64_t *v);
void human_of(char *buf, size_t len, double part, double whole);
double num(const char *j, const char *key);
char *opt_of(const char *opts, const char *key);
char *mount_stats(const char *mount);

/* hotfsctl_files.c: the per-file commands over files and trees. */
enum fcmd { F_WARM, F_PIN, F_UNPIN, F_EVICT, F_INFO, F_PINS, F_CHECK,
	    F_FLUSH, F_DIRTY };

int cmd_files(enum fcmd c, int argc, char **argv);
int cmd_flush(int argc, char **argv);

#endif
