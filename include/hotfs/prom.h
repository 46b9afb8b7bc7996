/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The counters of .hotfs/stats as a Prometheus text exposition (format
 * 0.0.4, which node_exporter's textfile collector and a scrape read):
 * .hotfs/metrics and hotfsctl stats --prometheus.  A pure function of the
 * key/value list stats.c collects, so unit tests need no mount.
 */
#ifndef HOTFS_PROM_H
#define HOTFS_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum stats_kind { K_U64, K_F64, K_STR };

/* One line of .hotfs/stats */
struct stats_kv {
	const char *key;
	enum stats_kind kind;
	uint64_t u;
	double f;
	const char *s;
};

/*
 * Write kv[0..n) to f as metric families: hotfs_<name>_total counters,
 * gauges, byte counts in _bytes, reasons (not promoted, invalidated) and
 * request kinds as labels, the store's state as one hotfs_store_state
 * gauge per state (1 for the current one), the version and read engine
 * in hotfs_info.  Every sample carries the mountpoint label, so that the
 * files of several mounts can sit side by side.  A numeric key the table
 * does not know is written as an untyped hotfs_<key>.
 */
void prom_write(FILE *f, const struct stats_kv *kv, size_t n);

#endif
