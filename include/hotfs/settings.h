/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The options that change while mounted (hotfsctl set, "set" on the
 * control channel: src/lib/ctl_parse.c parses it), and the effective options
 * the stats show.  The values live in fs->o, where a store opened later
 * ("store on") finds them, and in the running parts: the policy's
 * threshold, the promoter's rate, the cache's seqcutoff and writemode,
 * the inode table's bound.
 *
 * Lock: one settings lock, taken alone or after ctl.c's "store on" lock,
 * and taken before the inode table's (ino_set_retain).
 */
#ifndef HOTFS_SETTINGS_H
#define HOTFS_SETTINGS_H

#include <stddef.h>

#include "hotfs/ctl.h"

struct hotfs;

/*
 * Apply what ctl_parse_set accepted, to the mount and to its store if it
 * has one (else when it opens).  Returns 0 with the settings now in
 * force in msg, or -EINVAL with one line (nothing changed).
 */
int fs_set(struct hotfs *fs, const struct ctl_set *set, char *msg,
	   size_t len);
/* The effective options, "k=v,..." (malloc'd, NULL without memory). */
char *fs_opts_summary(struct hotfs *fs);
/* For "store on": fs->o stays as it is while held. */
void settings_lock(void);
void settings_unlock(void);

#endif
