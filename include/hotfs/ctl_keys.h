/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The options "set" may change while mounted (hotfsctl set), each with
 * the same values as at mount (hotfs.8): the one list of them
 * (src/lib/ctl_keys.c, built into the daemon and hotfsctl, as textfmt.c
 * is).  The parser (ctl_parse_set), the daemon's messages and hotfsctl's
 * usage read it; tests check README.md and man/ against it.  The other
 * options are fixed at mount: they shape the store, the kernel's view or
 * the session.
 */
#ifndef HOTFS_CTL_KEYS_H
#define HOTFS_CTL_KEYS_H

#include <stddef.h>

enum {
	CTL_SET_THRESHOLD = 1u << 0,
	CTL_SET_PROMOTE_RATE = 1u << 1,
	CTL_SET_SEQCUTOFF = 1u << 2,
	CTL_SET_WRITEMODE = 1u << 3,
	CTL_SET_INODE_CACHE = 1u << 4,
	CTL_SET_WRITE_BUDGET = 1u << 5,
	CTL_SET_DIRTY_HIGH = 1u << 6,
	CTL_SET_DIRTY_LOW = 1u << 7,
};

struct ctl_key {
	const char *name;
	unsigned mask;		/* its CTL_SET_* */
};
extern const struct ctl_key ctl_keys[];
extern const size_t ctl_nkeys;

/* The key named by the n bytes at name, or NULL. */
const struct ctl_key *ctl_key_find(const char *name, size_t n);
/* "threshold, promote_rate, ..." into buf (cut short to len). */
void ctl_keys_list(char *buf, size_t len);

#endif
