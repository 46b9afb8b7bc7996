// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for sequential read detection (src/cache/seqread.c): in order, out
 * of order within the kernel's read-ahead window, seeks, small random
 * reads, the prefetch mark, and concurrent readers of one handle.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hotfs/seqread.h"

#define MiB (1ll << 20)
#define MS 1000000ll

/* A clock that moves 1 ms per read: requests of a window come that close
 * together, or closer */
static int64_t clock_ns;
#define NOW (clock_ns += MS)

static void first_read_starts_a_run(void **state)
{
	struct seqread s;
	uint64_t run = 0;

	(void)state;
	seq_init(&s);
	assert_false(seq_note(&s, 0, MiB, NOW, &run));
	assert_int_equal(run, MiB);
	assert_int_equal(seq_run(&s), MiB);
	/* a first read in the middle of the file is no different */
	seq_init(&s);
	assert_false(seq_note(&s, 5 * MiB, MiB, NOW, &run));
}

static void in_order(void **state)
{
	struct seqread s;
	uint64_t run = 0;

	(void)state;
	seq_init(&s);
	seq_note(&s, 0, MiB, NOW, NULL);
	for (int i = 1; i < 100; i++)
		assert_true(seq_note(&s, i * MiB, MiB, NOW, &run));
	assert_int_equal(run, 100 * MiB);
}

/* The kernel sent 1-2, 2-3 and 3-4 MiB at once; the threads took them
 * last first. */
static void reordered_within_window(void **state)
{
	static const int order[] = { 0, 3, 1, 2, 6, 4, 5, 7, 8 };
	struct seqread s;
	uint64_t run = 0;

	(void)state;
	seq_init(&s);
	assert_false(seq_note(&s, 0, MiB, NOW, NULL));
	for (size_t i = 1; i < sizeof(order) / sizeof(order[0]); i++)
		assert_true(seq_note(&s, order[i] * MiB, MiB, NOW, &run));
	assert_int_equal(run, 9 * MiB);
	/* the end stayed at the furthest read: 8-9 MiB goes on from 9 */
	assert_true(seq_note(&s, 9 * MiB, MiB, NOW, &run));
	assert_int_equal(run, 10 * MiB);
}

static void seeks_start_a_new_run(void **state)
{
	struct seqread s;
	uint64_t run = 0;

	(void)state;
	seq_init(&s);
	for (int i = 0; i < 64; i++)
		seq_note(&s, i * MiB, MiB, NOW, NULL);
	/* back to the start, further back than the slack: a second pass,
	 * not the same run */
	assert_false(seq_note(&s, 0, MiB, NOW, &run));
	assert_int_equal(run, MiB);
	assert_true(seq_note(&s, MiB, MiB, NOW, NULL));
	/* a jump forward beyond SEQ_SLACK of its size */
	assert_false(seq_note(&s, (2 + SEQ_SLACK + 1) * MiB, MiB, NOW, &run));
	assert_int_equal(run, MiB);
	/* just within the slack, behind and ahead */
	assert_true(seq_note(&s, (3 + SEQ_SLACK) * MiB + SEQ_SLACK * MiB,
			     MiB, NOW, NULL));
	assert_true(seq_note(&s, (4 + SEQ_SLACK) * MiB, MiB, NOW, NULL));
}

/* Behind the end is a late request of the window only just after the
 * run's last read: later, it is a second pass (a shared handle's re-read
 * of a small file must count as one, see hotfs/cache.h NOFH_WINDOW_NS). */
static void behind_the_end_only_soon(void **state)
{
	struct seqread s;
	uint64_t run = 0;

	(void)state;
	seq_init(&s);
	assert_false(seq_note(&s, 0, MiB, NOW, NULL));
	assert_true(seq_note(&s, 2 * MiB, MiB, NOW, NULL));
	/* the late 1-2 MiB request, well within SEQ_REORDER_NS */
	assert_true(seq_note(&s, MiB, MiB, NOW, &run));
	assert_int_equal(run, 3 * MiB);
	/* the whole 3 MiB file again, after a pause: a new run */
	clock_ns += SEQ_REORDER_NS;
	assert_false(seq_note(&s, 0, MiB, NOW, &run));
	assert_int_equal(run, MiB);
	/* and a request behind the end that comes that late, too */
	assert_true(seq_note(&s, 2 * MiB, MiB, NOW, NULL));
	clock_ns += SEQ_REORDER_NS;
	assert_false(seq_note(&s, MiB, MiB, NOW, NULL));
	/* ahead of the end, a pause changes nothing: a slow reader */
	clock_ns += 10 * SEQ_REORDER_NS;
	assert_true(seq_note(&s, 2 * MiB, MiB, NOW, NULL));
}

/* A small request amid a window of large ones (the kernel sends some,
 * seen on a loaded machine: 32 KiB 6 MiB behind the end of 1 MiB ones)
 * has the run's slack, not its own. */
static void small_request_in_a_large_run(void **state)
{
	struct seqread s;
	uint64_t run = 0;

	(void)state;
	seq_init(&s);
	for (int i = 0; i < 8; i++)
		seq_note(&s, i * MiB, MiB, NOW, NULL);
	assert_true(seq_note(&s, 2 * MiB + 4096, 32768, NOW, &run));
	assert_int_equal(run, 8 * MiB + 32768);
	assert_true(seq_note(&s, 14 * MiB, 32768, NOW, NULL));
	/* past the run's slack, a new run, with its own small slack */
	assert_false(seq_note(&s, 40 * MiB, 32768, NOW, &run));
	assert_int_equal(run, 32768);
	assert_false(seq_note(&s, 41 * MiB, 32768, NOW, NULL));
}

/* A daemon starved of CPU takes every request late: a run whose reads
 * came slowly takes a request behind its end as late as twice its
 * longest pause (up to SEQ_REORDER_MAX_NS); a fast one does not. */
static void slow_runs_wait_longer(void **state)
{
	struct seqread s;

	(void)state;
	seq_init(&s);
	assert_false(seq_note(&s, 0, MiB, NOW, NULL));
	clock_ns += 200 * MS;
	assert_true(seq_note(&s, 2 * MiB, MiB, NOW, NULL));
	clock_ns += 300 * MS;		/* past SEQ_REORDER_NS */
	assert_true(seq_note(&s, MiB, MiB, NOW, NULL));
	clock_ns += 3 * SEQ_REORDER_MAX_NS;
	assert_true(seq_note(&s, 3 * MiB, MiB, NOW, NULL));	/* ahead */
	clock_ns += SEQ_REORDER_MAX_NS;	/* never longer than that */
	assert_false(seq_note(&s, 2 * MiB + 4096, 4096, NOW, NULL));
	/* the new run starts fast again: SEQ_REORDER_NS */
	seq_init(&s);
	assert_false(seq_note(&s, 0, MiB, NOW, NULL));
	assert_true(seq_note(&s, 2 * MiB, MiB, NOW, NULL));
	clock_ns += SEQ_REORDER_NS;
	assert_false(seq_note(&s, MiB, MiB, NOW, NULL));
}

/* 4 KiB reads all over a file stay random: the slack scales with the
 * read's size */
static void small_random_reads(void **state)
{
	static const int64_t off[] = { 7340032, 123456 * 4096LL, 4096,
				       900 * MiB, 3 * MiB, 512 * MiB };
	struct seqread s;
	int seqs = 0;

	(void)state;
	seq_init(&s);
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		seqs += seq_note(&s, off[i], 4096, NOW, NULL);
	assert_int_equal(seqs, 0);
	assert_int_equal(seq_run(&s), 4096);
	/* but 4 KiB after 4 KiB is sequential */
	assert_true(seq_note(&s, 512 * MiB + 4096, 4096, NOW, NULL));
}

/*
 * A random reader with reads in flight reads a hot block twice in a row:
 * the repeat is not sequential (it would go by extents).
 */
static void repeats_are_not_sequential(void **state)
{
	static const int64_t hot = 123457 * 4096LL;
	struct seqread s;
	uint64_t run = 0;

	(void)state;
	seq_init(&s);
	assert_false(seq_note(&s, hot, 4096, NOW, NULL));
	assert_false(seq_note(&s, hot, 4096, NOW, &run));
	assert_false(seq_note(&s, hot, 4096, NOW, &run));
	assert_int_equal(run, 4096);
	/* another block, then the hot one again, twice */
	assert_false(seq_note(&s, 77 * MiB, 4096, NOW, NULL));
	assert_false(seq_note(&s, hot, 4096, NOW, NULL));
	assert_false(seq_note(&s, hot, 4096, NOW, NULL));
	/* part of the last read, too */
	assert_false(seq_note(&s, hot + 512, 1024, NOW, NULL));
	/* but the next block is the run going on */
	assert_true(seq_note(&s, hot + 4096, 4096, NOW, &run));
	assert_int_equal(run, 8192);

	/* in a longer run, its last read again is the run's (two readers
	 * of a shared handle in step), as before */
	seq_init(&s);
	for (int i = 0; i < 8; i++)
		seq_note(&s, i * MiB, MiB, NOW, NULL);
	assert_true(seq_note(&s, 7 * MiB, MiB, NOW, &run));
	assert_int_equal(run, 9 * MiB);
	assert_true(seq_note(&s, 8 * MiB, MiB, NOW, &run));
	assert_int_equal(run, 10 * MiB);
	/* and a run of two reads is a run */
	seq_init(&s);
	assert_false(seq_note(&s, hot, 4096, NOW, NULL));
	assert_true(seq_note(&s, hot + 4096, 4096, NOW, NULL));
	assert_true(seq_note(&s, hot + 4096, 4096, NOW, &run));
	assert_int_equal(run, 3 * 4096);
}

static void prefetch_mark(void **state)
{
	struct seqread s;

	(void)state;
	seq_init(&s);
	seq_note(&s, 0, MiB, NOW, NULL);
	assert_int_equal(seq_prefetch_from(&s, 3), 4);
	seq_prefetched(&s, 36);
	assert_int_equal(seq_prefetch_from(&s, 7), 36);
	assert_int_equal(seq_prefetch_from(&s, 40), 41);
	/* a late caller that got less far does not move it back */
	seq_prefetched(&s, 20);
	assert_int_equal(seq_prefetch_from(&s, 7), 36);
	/* the run goes on: so does the mark */
	assert_true(seq_note(&s, MiB, MiB, NOW, NULL));
	assert_int_equal(seq_prefetch_from(&s, 7), 36);
	/* a new run (a jump beyond the slack) forgets it */
	assert_false(seq_note(&s, 100 * MiB, MiB, NOW, NULL));
	assert_int_equal(seq_prefetch_from(&s, 7), 8);
}

/*
 * Threads take the next 1 MiB request as the kernel hands them out, at
 * most WINDOW ahead of the lowest one not yet noted (the read-ahead
 * window), in whatever order they get there.
 */
#define THREADS 4
#define WINDOW 4
#define REQS 2000

struct conc {
	struct seqread s;
	pthread_mutex_t m;
	pthread_cond_t cv;
	int next;		/* the next request to hand out */
	int low;		/* every request below it has been noted */
	char done[REQS];
	int notseq;
	_Atomic int64_t clock;	/* 1 ms per read, whichever thread reads */
};

#define TICK(c) atomic_fetch_add(&(c)->clock, MS)

static void *reader(void *arg)
{
	struct conc *c = arg;
	int i, notseq = 0;

	for (;;) {
		pthread_mutex_lock(&c->m);
		while (c->next < REQS && c->next >= c->low + WINDOW)
			pthread_cond_wait(&c->cv, &c->m);
		i = c->next < REQS ? c->next++ : -1;
		pthread_mutex_unlock(&c->m);
		if (i < 0)
			break;
		if (!seq_note(&c->s, i * MiB, MiB, TICK(c), NULL))
			notseq++;
		pthread_mutex_lock(&c->m);
		c->done[i] = 1;
		while (c->low < REQS && c->done[c->low])
			c->low++;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->m);
	}
	pthread_mutex_lock(&c->m);
	c->notseq += notseq;
	pthread_mutex_unlock(&c->m);
	return NULL;
}

static void concurrent_readers(void **state)
{
	struct conc *c = calloc(1, sizeof(*c));
	pthread_t th[THREADS];

	(void)state;
	assert_non_null(c);
	seq_init(&c->s);
	pthread_mutex_init(&c->m, NULL);
	pthread_cond_init(&c->cv, NULL);
	/* request 0 starts the run */
	c->next = 1;
	c->low = 1;
	c->done[0] = 1;
	assert_false(seq_note(&c->s, 0, MiB, TICK(c), NULL));
	for (int t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, reader, c), 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	assert_int_equal(c->notseq, 0);
	assert_int_equal(seq_run(&c->s), (uint64_t)REQS * MiB);
	/* the end is the furthest read's: the next one carries on */
	assert_true(seq_note(&c->s, REQS * MiB, MiB, TICK(c), NULL));
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->m);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_read_starts_a_run),
		cmocka_unit_test(in_order),
		cmocka_unit_test(reordered_within_window),
		cmocka_unit_test(seeks_start_a_new_run),
		cmocka_unit_test(behind_the_end_only_soon),
		cmocka_unit_test(small_request_in_a_large_run),
		cmocka_unit_test(slow_runs_wait_longer),
		cmocka_unit_test(small_random_reads),
		cmocka_unit_test(repeats_are_not_sequential),
		cmocka_unit_test(prefetch_mark),
		cmocka_unit_test(concurrent_readers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
