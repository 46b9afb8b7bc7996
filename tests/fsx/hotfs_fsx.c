// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hotfs_fsx: a data-verifying random file operation exerciser.
 *
 * In the spirit of fsx, but written for hotfs: it drives one file with a
 * seeded random mix of operations and checks every byte it reads back
 * against an in-memory model of what the file must contain.
 *
 * Operations: read, write, truncate (grow and shrink), fallocate (default,
 * KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE, ZERO_RANGE|KEEP_SIZE), mmap read,
 * shared writable mmap write followed by msync, O_DIRECT read and write on
 * aligned offsets through a second descriptor, fsync/fdatasync, and
 * close/reopen of both descriptors, and fadvise(DONTNEED) so that later
 * reads miss the page cache and reach the filesystem, and lseek
 * SEEK_DATA/SEEK_HOLE.  With -s SRCFILE (the same file's path
 * in the source tree under a hotfs mount), srcwrite closes the file,
 * writes or truncates it behind the mount's back and reopens it: the mount
 * must then show the new content (close-to-open coherence, stale cache).
 * -w changes the mix, e.g. a read-heavy one that keeps extents cached.
 * -r OFFSET confines the run to [OFFSET, OFFSET + maxlen) of a file that
 * other exercisers use at the same time on other regions: their writes
 * share cache extents and pages with ours, and must never show in our
 * region (promotion racing a write, invalidation of a shared extent).
 *
 * Model invariants: good[0..size) is what the file holds, and good[size..
 * maxlen) is always zero, so growing the file (truncate, fallocate, a write
 * past EOF) never needs to touch the model.  Every byte written is
 * base[off] + (opnum & 0xff), where base[] is a random page derived from the
 * seed: data that lands at the wrong offset does not match, and the op that
 * wrote a stale byte can be named (modulo 256) from the byte itself.
 *
 * Checks: every read (plain, mmap, O_DIRECT) is compared with the model; the
 * file size is checked with fstat after every op (unless -n); the whole file
 * is compared every -f ops, at the end, and once more after a final reopen.
 * For mmap, the bytes past EOF in the last page must read as zero, and a
 * SIGBUS/SIGSEGV inside the file (e.g. a stale size) is reported as a
 * failure with the op log, not a crash.
 *
 * Failure handling: a mismatch or an unexpected syscall error prints what
 * failed, the first differing byte (offset, expected, observed), the last
 * operations (-L, default 50) and the command line that replays the run, then
 * exits 1.  Usage and setup errors exit 2.  A fallocate mode that fails with
 * EOPNOTSUPP is disabled for the rest of the run and reported; so are the
 * O_DIRECT ops when opening with O_DIRECT fails with EINVAL.
 *
 * Replay: the operation stream depends only on the seed and the options
 * (each op draws the same number of random values whether or not it runs),
 * so the same command line replays the same operations on a filesystem that
 * behaves the same.  The RNG is our own (splitmix64), not libc's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>

#define LOG_RING	1024
#define DEF_LOG_SHOW	50

enum op_type {
	OP_READ,
	OP_WRITE,
	OP_MAPREAD,
	OP_MAPWRITE,
	OP_DREAD,
	OP_DWRITE,
	OP_TRUNCATE,
	OP_FALLOC,
	OP_FSYNC,
	OP_REOPEN,
	OP_SRCWRITE,
	OP_DROPCACHE,
	OP_SEEK,
	OP_NR
};

static const struct {
	const char *name;
	unsigned int weight;
} op_desc[OP_NR] = {
	[OP_READ]	= { "read",	20 },
	[OP_WRITE]	= { "write",	20 },
	[OP_MAPREAD]	= { "mapread",	8 },
	[OP_MAPWRITE]	= { "mapwrite",	8 },
	[OP_DREAD]	= { "dread",	6 },
	[OP_DWRITE]	= { "dwrite",	6 },
	[OP_TRUNCATE]	= { "truncate",	6 },
	[OP_FALLOC]	= { "falloc",	10 },
	[OP_FSYNC]	= { "fsync",	2 },
	[OP_REOPEN]	= { "reopen",	2 },
	[OP_SRCWRITE]	= { "srcwrite",	3 },
	[OP_DROPCACHE]	= { "dropcache", 3 },
	[OP_SEEK]	= { "seek",	3 },
};

enum fa_mode {
	FA_ALLOC,
	FA_KEEP,
	FA_PUNCH,
	FA_ZERO,
	FA_ZERO_KEEP,
	FA_NR
};

static const struct {
	const char *name;
	int flags;
} fa_desc[FA_NR] = {
	[FA_ALLOC]	= { "alloc",	0 },
	[FA_KEEP]	= { "keepsize",	FALLOC_FL_KEEP_SIZE },
	[FA_PUNCH]	= { "punch",	FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE },
	[FA_ZERO]	= { "zero",	FALLOC_FL_ZERO_RANGE },
	[FA_ZERO_KEEP]	= { "zerokeep",	FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE },
};

/* One executed (or skipped) operation, for the post-mortem listing. */
struct logent {
	unsigned long opnum;
	int op;
	int mode;		/* fa_mode for OP_FALLOC, 1 = fdatasync */
	off_t off;
	off_t len;
	off_t size_before;
	off_t size_after;
	const char *note;	/* "skipped", "EOPNOTSUPP", ... */
};

static struct {
	/* configuration */
	char *path;
	bool autofile;		/* path was made by mkstemp: unlink on success */
	bool unlink_ok;
	uint64_t seed;
	unsigned long numops;
	off_t maxlen;
	off_t maxop;
	off_t align;
	unsigned long check_every;
	unsigned long progress;
	unsigned long debug_from;	/* 0 = no per-op printing */
	unsigned long inject_at;	/* 0 = no fault injection */
	bool injected;
	unsigned int log_show;
	bool quiet;
	bool nosizecheck;
	bool op_on[OP_NR];
	unsigned int weight[OP_NR];
	char *srcpath;		/* -s: the same file, not through the mount */
	char *verifypath;	/* -V: the same file, read on a mismatch */
	bool shared;		/* -r: one region of a file others also use */
	off_t region;		/* -r: where the region starts in the file */
	bool fa_on[FA_NR];
	bool direct_ok;

	/* state */
	int fd;
	int dfd;
	off_t size;
	uint8_t *good;
	uint8_t *base;
	uint8_t *buf;
	uint8_t *dbuf;		/* aligned, for O_DIRECT */
	long pagesize;
	uint64_t rng;
	unsigned long opnum;
	unsigned long done[OP_NR];
	unsigned long fa_done[FA_NR];
	unsigned long skipped;
	unsigned long full_checks;
	unsigned long long bytes_checked;

	struct logent log[LOG_RING];
	unsigned long nlog;

	char cmdline[4096];

	/* set while touching a mapping: SIGBUS/SIGSEGV jump back here */
	sigjmp_buf map_jmp;
	volatile sig_atomic_t in_map;
	volatile sig_atomic_t map_sig;
} fx = {
	.numops = 20000,
	.maxlen = 256 * 1024,
	.maxop = 64 * 1024,
	.align = 4096,
	.check_every = 500,
	.log_show = DEF_LOG_SHOW,
	.fd = -1,
	.dfd = -1,
};

/* splitmix64: small, fast, and the same on every libc. */
static uint64_t rnd64(void)
{
	uint64_t z = (fx.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void print_log(void)
{
	unsigned long first, i;
	unsigned int show = fx.log_show;

	if (show > LOG_RING)
		show = LOG_RING;
	first = fx.nlog > show ? fx.nlog - show : 0;
	fprintf(stderr, "last %lu operations (size before -> after):\n",
		fx.nlog - first);
	for (i = first; i < fx.nlog; i++) {
		struct logent *e = &fx.log[i % LOG_RING];
		const char *mode = "";

		if (e->op == OP_FALLOC)
			mode = fa_desc[e->mode].name;
		else if (e->op == OP_FSYNC && e->mode)
			mode = "fdatasync";
		else if (e->op == OP_SRCWRITE && e->mode)
			mode = "truncate";
		else if (e->op == OP_SEEK)
			mode = e->mode ? "hole" : "data";
		fprintf(stderr,
			"  #%-7lu %-9s %-9s off %9jd len %7jd end %9jd  size %jd -> %jd%s%s\n",
			e->opnum, op_desc[e->op].name, mode, (intmax_t)e->off,
			(intmax_t)e->len, (intmax_t)(e->off + e->len),
			(intmax_t)e->size_before, (intmax_t)e->size_after,
			e->note ? "  " : "", e->note ? e->note : "");
	}
}

static void print_replay(void)
{
	fprintf(stderr, "seed %" PRIu64 "; replay with: %s\n", fx.seed,
		fx.cmdline);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "hotfs_fsx: FAILED at op #%lu: ", fx.opnum);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_log();
	print_replay();
	if (fx.injected && fx.unlink_ok)
		unlink(fx.path);	/* the failure was expected */
	else
		fprintf(stderr, "file kept for inspection: %s\n", fx.path);
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hotfs_fsx: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void hexdump(const char *label, const uint8_t *p, off_t fileoff,
		    size_t n)
{
	size_t i;

	fprintf(stderr, "  %-8s %9jd:", label, (intmax_t)fileoff);
	for (i = 0; i < n; i++)
		fprintf(stderr, " %02x", p[i]);
	fputc('\n', stderr);
}

/*
 * Name the logged write-type ops whose pattern matches @val at @off: they
 * are the likely source of a stale or misplaced byte.
 */
static void guess_writer(off_t off, uint8_t val)
{
	unsigned int k = (uint8_t)(val - fx.base[off % fx.pagesize]);
	unsigned long first, i;
	int found = 0;

	if (val == 0)
		fprintf(stderr, "  observed byte is zero: a hole, truncate, punch or zero range may be involved\n");
	fprintf(stderr, "  observed byte matches the data pattern of op numbers == %u (mod 256)\n",
		k);
	first = fx.nlog > LOG_RING ? fx.nlog - LOG_RING : 0;
	for (i = fx.nlog; i-- > first;) {
		struct logent *e = &fx.log[i % LOG_RING];

		if (e->op != OP_WRITE && e->op != OP_MAPWRITE &&
		    e->op != OP_DWRITE &&
		    !(e->op == OP_SRCWRITE && !e->mode))
			continue;
		if ((e->opnum & 0xff) != k || off < e->off ||
		    off >= e->off + e->len || e->note)
			continue;
		fprintf(stderr, "  earlier write with this pattern over that offset: #%lu %s off %jd len %jd\n",
			e->opnum, op_desc[e->op].name, (intmax_t)e->off,
			(intmax_t)e->len);
		if (++found == 3)
			break;
	}
}

/*
 * After a mismatch at @off (relative to the region): where are the wrong
 * bytes?  Reads the page holding @off again through the mount with
 * O_DIRECT (what the daemon serves now, past the kernel's page cache),
 * with a buffered read (what the page cache holds), and from the source
 * file itself if -V named it.
 */
static void locate_mismatch(off_t off)
{
	const off_t pg = (fx.region + off) & ~(off_t)(fx.pagesize - 1);
	const off_t rel = pg - fx.region;
	size_t len = (size_t)fx.pagesize;
	const char *how[3] = { "O_DIRECT read through the mount",
			       "buffered read through the mount",
			       "read of the source file" };
	int k;

	if (rel < 0 || rel >= fx.size)
		return;
	if ((off_t)len > fx.size - rel)
		len = (size_t)(fx.size - rel);
	for (k = 0; k < 3; k++) {
		int fd = k == 0 ? fx.dfd : k == 1 ? fx.fd : -1;
		uint8_t *b = fx.dbuf;
		ssize_t n;
		size_t i;

		if (k == 2) {
			if (!fx.verifypath)
				break;
			fd = open(fx.verifypath, O_RDONLY);
			if (fd == -1) {
				fprintf(stderr, "  %s: open: %s\n", how[k],
					strerror(errno));
				break;
			}
		}
		if (fd == -1)
			continue;
		n = pread(fd, b, k == 0 ? (size_t)fx.pagesize : len, pg);
		if (k == 2)
			close(fd);
		if (n < (ssize_t)len) {
			fprintf(stderr, "  %s of page %jd: %s\n", how[k],
				(intmax_t)pg, n < 0 ? strerror(errno) : "short");
			continue;
		}
		for (i = 0; i < len && b[i] == fx.good[rel + i]; i++)
			;
		if (i == len)
			fprintf(stderr, "  %s of page %jd now matches the model\n",
				how[k], (intmax_t)pg);
		else
			fprintf(stderr, "  %s of page %jd differs at %jd: 0x%02x, model 0x%02x\n",
				how[k], (intmax_t)pg, (intmax_t)(pg + (off_t)i),
				b[i], fx.good[rel + i]);
	}
}

/* Compare @got (file bytes at @off) with the model; fail on a difference. */
static void check_data(const char *what, off_t off, const uint8_t *got,
		       size_t len)
{
	const uint8_t *want = fx.good + off;
	size_t i, first, last, ndiff = 0, start, n;

	fx.bytes_checked += len;
	if (memcmp(got, want, len) == 0)
		return;
	for (i = 0; i < len && got[i] == want[i]; i++)
		;
	first = i;
	last = i;
	for (; i < len; i++) {
		if (got[i] != want[i]) {
			ndiff++;
			last = i;
		}
	}
	fflush(stdout);
	fprintf(stderr, "hotfs_fsx: DATA MISMATCH (%s of off %jd len %zu, file size %jd)\n",
		what, (intmax_t)off, len, (intmax_t)fx.size);
	fprintf(stderr, "  first differing byte at file offset %jd (0x%jx): expected 0x%02x, observed 0x%02x\n",
		(intmax_t)(fx.region + off + first),
		(intmax_t)(fx.region + off + first), want[first], got[first]);
	if (fx.shared)
		fprintf(stderr, "  (offsets below are relative to the region at %jd)\n",
			(intmax_t)fx.region);
	fprintf(stderr, "  %zu bytes differ between file offsets %jd and %jd\n",
		ndiff, (intmax_t)(off + first), (intmax_t)(off + last));
	start = first & ~(size_t)15;
	n = len - start < 32 ? len - start : 32;
	hexdump("expected", want + start, off + start, n);
	hexdump("observed", got + start, off + start, n);
	guess_writer(off + first, got[first]);
	locate_mismatch(off + (off_t)first);
	fail("%s returned data that differs from the model", what);
}

static void check_size(const char *what)
{
	struct stat st;

	if (fx.nosizecheck)
		return;
	if (fstat(fx.fd, &st) == -1)
		fail("fstat after %s: %s", what, strerror(errno));
	if (st.st_size != fx.size)
		fail("file size after %s: expected %jd, fstat says %jd", what,
		     (intmax_t)fx.size, (intmax_t)st.st_size);
}

static void fill_pattern(uint8_t *p, off_t off, off_t len)
{
	off_t i;
	uint8_t k = fx.opnum & 0xff;

	for (i = 0; i < len; i++)
		p[i] = fx.base[(off + i) % fx.pagesize] + k;
}

static void model_write(off_t off, const uint8_t *p, off_t len)
{
	memcpy(fx.good + off, p, len);
	if (off + len > fx.size)
		fx.size = off + len;
}

/* Set the size; the model beyond EOF must stay zero. */
static void model_resize(off_t size)
{
	if (size < fx.size)
		memset(fx.good + size, 0, fx.size - size);
	fx.size = size;
}

static void model_zero(off_t off, off_t len)
{
	if (off >= fx.size)
		return;
	if (off + len > fx.size)
		len = fx.size - off;
	memset(fx.good + off, 0, len);
}

static void open_files(bool trunc)
{
	int flags = O_RDWR | O_CREAT | (trunc && !fx.shared ? O_TRUNC : 0);

	fx.fd = open(fx.path, flags, 0644);
	if (fx.fd == -1)
		fail("open %s: %s", fx.path, strerror(errno));
	if (!fx.direct_ok)
		return;
	fx.dfd = open(fx.path, O_RDWR | O_DIRECT);
	if (fx.dfd != -1)
		return;
	if (errno != EINVAL)
		fail("open %s O_DIRECT: %s", fx.path, strerror(errno));
	printf("hotfs_fsx: open(O_DIRECT) failed with EINVAL: O_DIRECT reads and writes disabled\n");
	fx.direct_ok = false;
	fx.op_on[OP_DREAD] = false;
	fx.op_on[OP_DWRITE] = false;
}

static void close_files(void)
{
	if (fx.dfd != -1 && close(fx.dfd) == -1)
		fail("close O_DIRECT fd: %s", strerror(errno));
	fx.dfd = -1;
	if (close(fx.fd) == -1)
		fail("close: %s", strerror(errno));
	fx.fd = -1;
}

static void full_check(const char *why)
{
	off_t off = 0;
	ssize_t n;

	fx.full_checks++;
	check_size(why);
	while (off < fx.size) {
		size_t chunk = fx.size - off;

		if (chunk > (size_t)fx.maxop)
			chunk = fx.maxop;
		n = pread(fx.fd, fx.buf, chunk, fx.region + off);
		if (n == -1)
			fail("full compare (%s): pread off %jd: %s", why,
			     (intmax_t)off, strerror(errno));
		if (n == 0)
			fail("full compare (%s): EOF at %jd, expected size %jd",
			     why, (intmax_t)off, (intmax_t)fx.size);
		check_data("full compare", off, fx.buf, n);
		off += n;
	}
	if (fx.shared)
		return;
	n = pread(fx.fd, fx.buf, 1, fx.size);
	if (n != 0)
		fail("full compare (%s): read at EOF %jd returned %zd, expected 0",
		     why, (intmax_t)fx.size, n);
}

static void do_read(off_t off, off_t len)
{
	off_t want = off >= fx.size ? 0 :
		     (off + len > fx.size ? fx.size - off : len);
	ssize_t n = pread(fx.fd, fx.buf, len, fx.region + off);

	if (n == -1)
		fail("pread off %jd len %jd: %s", (intmax_t)off, (intmax_t)len,
		     strerror(errno));
	if (n != want)
		fail("pread off %jd len %jd: returned %zd, expected %jd (size %jd)",
		     (intmax_t)off, (intmax_t)len, n, (intmax_t)want,
		     (intmax_t)fx.size);
	check_data("read", off, fx.buf, n);
}

static void do_write(off_t off, off_t len)
{
	ssize_t n;

	fill_pattern(fx.buf, off, len);
	n = pwrite(fx.fd, fx.buf, len, fx.region + off);
	if (n == -1)
		fail("pwrite off %jd len %jd: %s", (intmax_t)off, (intmax_t)len,
		     strerror(errno));
	if (n != len)
		fail("pwrite off %jd len %jd: short write %zd", (intmax_t)off,
		     (intmax_t)len, n);
	model_write(off, fx.buf, len);
}

/* Bytes from EOF to the end of its page must read as zero in a mapping. */
static void check_eof_page(const uint8_t *map, off_t mapoff, off_t maplen)
{
	off_t i;

	for (i = fx.size; i < mapoff + maplen; i++) {
		if (map[i - mapoff] != 0)
			fail("mmap: byte at %jd past EOF %jd in the last page is 0x%02x, expected 0",
			     (intmax_t)i, (intmax_t)fx.size, map[i - mapoff]);
	}
}

static void map_fault(int sig)
{
	if (!fx.in_map) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	fx.map_sig = sig;
	siglongjmp(fx.map_jmp, 1);
}

static void setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = map_fault;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

/*
 * A fault while touching a mapping of bytes the model says are inside the
 * file is a failure to report, not a crash.  Used as
 * if (sigsetjmp(fx.map_jmp, 1)) map_failed(...); fx.in_map = 1; ...
 */
static void map_failed(const char *what, off_t off, off_t len)
{
	fx.in_map = 0;
	fail("%s off %jd len %jd: %s while touching the mapping (file size per model %jd)",
	     what, (intmax_t)off, (intmax_t)len,
	     fx.map_sig == SIGBUS ? "SIGBUS" : "SIGSEGV", (intmax_t)fx.size);
}

static void do_mapread(off_t off, off_t len)
{
	const off_t abs = fx.region + off;
	const off_t pg = abs & ~(off_t)(fx.pagesize - 1);
	const volatile bool eofpage = !fx.shared &&
			     (off + len - 1) / fx.pagesize ==
			     (fx.size - 1) / fx.pagesize;
	/* up to the end of EOF's page, to check the bytes past EOF */
	const off_t maplen = eofpage ?
		(((fx.size - pg) + fx.pagesize - 1) & ~(off_t)(fx.pagesize - 1)) :
		abs + len - pg;
	uint8_t *p;

	p = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fx.fd, pg);
	if (p == MAP_FAILED)
		fail("mmap PROT_READ off %jd len %jd: %s", (intmax_t)pg,
		     (intmax_t)maplen, strerror(errno));
	if (sigsetjmp(fx.map_jmp, 1))
		map_failed("mmap read", off, len);
	fx.in_map = 1;
	memcpy(fx.buf, p + (abs - pg), len);
	if (eofpage)
		check_eof_page(p, pg, maplen);
	fx.in_map = 0;
	if (munmap(p, maplen) == -1)
		fail("munmap: %s", strerror(errno));
	check_data("mmap read", off, fx.buf, len);
}

static void do_mapwrite(off_t off, off_t len)
{
	off_t abs = fx.region + off;
	off_t pg = abs & ~(off_t)(fx.pagesize - 1);
	off_t maplen = abs + len - pg;
	uint8_t *p;

	if (off + len > fx.size) {
		/* a mapping cannot extend a file: grow it first, as fsx does */
		if (ftruncate(fx.fd, off + len) == -1)
			fail("ftruncate %jd before mmap write: %s",
			     (intmax_t)(off + len), strerror(errno));
		model_resize(off + len);
	}
	p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fx.fd, pg);
	if (p == MAP_FAILED)
		fail("mmap PROT_WRITE off %jd len %jd: %s", (intmax_t)pg,
		     (intmax_t)maplen, strerror(errno));
	fill_pattern(fx.buf, off, len);
	if (sigsetjmp(fx.map_jmp, 1))
		map_failed("mmap write", off, len);
	fx.in_map = 1;
	memcpy(p + (abs - pg), fx.buf, len);
	fx.in_map = 0;
	if (msync(p, maplen, MS_SYNC) == -1)
		fail("msync off %jd len %jd: %s", (intmax_t)pg,
		     (intmax_t)maplen, strerror(errno));
	if (munmap(p, maplen) == -1)
		fail("munmap: %s", strerror(errno));
	model_write(off, fx.buf, len);
}

static void do_dread(off_t off, off_t len)
{
	off_t want = off >= fx.size ? 0 :
		     (off + len > fx.size ? fx.size - off : len);
	ssize_t n = pread(fx.dfd, fx.dbuf, len, fx.region + off);

	if (n == -1)
		fail("O_DIRECT pread off %jd len %jd: %s", (intmax_t)off,
		     (intmax_t)len, strerror(errno));
	if (n != want)
		fail("O_DIRECT pread off %jd len %jd: returned %zd, expected %jd (size %jd)",
		     (intmax_t)off, (intmax_t)len, n, (intmax_t)want,
		     (intmax_t)fx.size);
	check_data("O_DIRECT read", off, fx.dbuf, n);
}

static void do_dwrite(off_t off, off_t len)
{
	ssize_t n;

	fill_pattern(fx.dbuf, off, len);
	n = pwrite(fx.dfd, fx.dbuf, len, fx.region + off);
	if (n == -1)
		fail("O_DIRECT pwrite off %jd len %jd: %s", (intmax_t)off,
		     (intmax_t)len, strerror(errno));
	if (n != len)
		fail("O_DIRECT pwrite off %jd len %jd: short write %zd",
		     (intmax_t)off, (intmax_t)len, n);
	model_write(off, fx.dbuf, len);
}

static void do_truncate(off_t size)
{
	if (ftruncate(fx.fd, size) == -1)
		fail("ftruncate %jd: %s", (intmax_t)size, strerror(errno));
	model_resize(size);
}

/* Returns a note for the log, or NULL. */
static const char *do_falloc(int mode, off_t off, off_t len)
{
	if (fallocate(fx.fd, fa_desc[mode].flags, fx.region + off, len) == -1) {
		if (errno == EOPNOTSUPP || errno == ENOSYS) {
			printf("hotfs_fsx: fallocate mode %s: %s: mode disabled\n",
			       fa_desc[mode].name, strerror(errno));
			fx.fa_on[mode] = false;
			return "EOPNOTSUPP, mode disabled";
		}
		fail("fallocate %s off %jd len %jd: %s", fa_desc[mode].name,
		     (intmax_t)off, (intmax_t)len, strerror(errno));
	}
	switch (mode) {
	case FA_ALLOC:
		if (off + len > fx.size)
			fx.size = off + len;
		break;
	case FA_KEEP:
		break;
	case FA_PUNCH:
	case FA_ZERO_KEEP:
		model_zero(off, len);
		break;
	case FA_ZERO:
		if (off + len > fx.size)
			fx.size = off + len;
		model_zero(off, len);
		break;
	}
	return NULL;
}

static void do_fsync(int datasync)
{
	if ((datasync ? fdatasync(fx.fd) : fsync(fx.fd)) == -1)
		fail("%s: %s", datasync ? "fdatasync" : "fsync",
		     strerror(errno));
}

static void do_reopen(void)
{
	close_files();
	open_files(false);
}

/*
 * Change the file behind the mount's back, through its path in the source
 * tree: close both descriptors, write (or truncate) the source file, and
 * reopen through the mount.  Close-to-open: what the reopened file shows
 * must be the source's new content, never stale cached data.
 */
static void do_srcwrite(int trunc, off_t off, off_t len)
{
	int sfd;
	ssize_t n;

	close_files();
	sfd = open(fx.srcpath, O_WRONLY);
	if (sfd == -1)
		fail("open source file %s: %s", fx.srcpath, strerror(errno));
	if (trunc) {
		if (ftruncate(sfd, off) == -1)
			fail("source ftruncate %jd: %s", (intmax_t)off,
			     strerror(errno));
		model_resize(off);
	} else {
		fill_pattern(fx.buf, off, len);
		n = pwrite(sfd, fx.buf, len, off);
		if (n != len)
			fail("source pwrite off %jd len %jd: %s", (intmax_t)off,
			     (intmax_t)len, n == -1 ? strerror(errno) :
			     "short write");
		model_write(off, fx.buf, len);
	}
	if (close(sfd) == -1)
		fail("close source file: %s", strerror(errno));
	open_files(false);
	/*
	 * As a program that maps a file learns its size first: close-to-
	 * open gives the reopened file's new attributes to the next stat
	 * (the kernel's idea of the size is not refreshed by a page fault,
	 * so a mapping past the old end without one may fault: man/hotfs.8,
	 * "Writes and changes").
	 */
	{
		struct stat st;

		if (fstat(fx.fd, &st) == -1)
			fail("fstat after srcwrite: %s", strerror(errno));
		if (st.st_size != fx.size)
			fail("size after srcwrite and reopen: %jd, model %jd",
			     (intmax_t)st.st_size, (intmax_t)fx.size);
	}
}

/*
 * Drop the file's clean pages from the kernel's page cache, so that the
 * next buffered or mmap read reaches the filesystem (under hotfs: its cache
 * store) instead of being served from RAM.
 */
static void do_dropcache(void)
{
	int err = posix_fadvise(fx.fd, 0, 0, POSIX_FADV_DONTNEED);

	if (err)
		fail("posix_fadvise DONTNEED: %s", strerror(err));
}

/*
 * lseek SEEK_DATA / SEEK_HOLE from @off.  A filesystem may report fewer
 * holes than it has, so only what holds everywhere is checked: past EOF is
 * ENXIO; SEEK_DATA lands in [off, size) with only zeros skipped (ENXIO:
 * nothing but zeros up to EOF); SEEK_HOLE lands in [off, size] and a hole
 * reads as zero.
 */
static void do_seek(int hole, off_t off)
{
	off_t r = lseek(fx.fd, off, hole ? SEEK_HOLE : SEEK_DATA);
	const char *what = hole ? "SEEK_HOLE" : "SEEK_DATA";
	off_t i;

	if (r == -1 && errno == ENXIO) {
		if (off >= fx.size)
			return;
		if (hole)
			fail("lseek %jd %s: ENXIO inside the file (size %jd)",
			     (intmax_t)off, what, (intmax_t)fx.size);
		for (i = off; i < fx.size; i++)
			if (fx.good[i])
				fail("lseek %jd SEEK_DATA: ENXIO, but byte %jd is 0x%02x (size %jd)",
				     (intmax_t)off, (intmax_t)i, fx.good[i],
				     (intmax_t)fx.size);
		return;
	}
	if (r == -1)
		fail("lseek %jd %s: %s", (intmax_t)off, what, strerror(errno));
	if (off >= fx.size)
		fail("lseek %jd %s: returned %jd, expected ENXIO past EOF %jd",
		     (intmax_t)off, what, (intmax_t)r, (intmax_t)fx.size);
	if (r < off || r > fx.size || (!hole && r == fx.size))
		fail("lseek %jd %s: returned %jd, outside [%jd, %jd%c",
		     (intmax_t)off, what, (intmax_t)r, (intmax_t)off,
		     (intmax_t)fx.size, hole ? ']' : ')');
	if (hole) {
		if (r < fx.size && fx.good[r])
			fail("lseek %jd SEEK_HOLE: returned %jd, but that byte is 0x%02x",
			     (intmax_t)off, (intmax_t)r, fx.good[r]);
		return;
	}
	for (i = off; i < r; i++)
		if (fx.good[i])
			fail("lseek %jd SEEK_DATA: returned %jd, skipping byte %jd = 0x%02x",
			     (intmax_t)off, (intmax_t)r, (intmax_t)i, fx.good[i]);
}

static off_t pick_len(uint64_t r, off_t max)
{
	/* a quarter of the ops are small, the rest up to -o */
	if (max <= 0)
		return 0;
	if ((r & 3) == 0 && max > 512)
		max = 512;
	return 1 + (off_t)((r >> 2) % (uint64_t)max);
}

static int pick_op(uint64_t r)
{
	unsigned int total = 0, i;

	for (i = 0; i < OP_NR; i++)
		if (fx.op_on[i])
			total += fx.weight[i];
	r %= total;
	for (i = 0; i < OP_NR; i++) {
		if (!fx.op_on[i])
			continue;
		if (r < fx.weight[i])
			return i;
		r -= fx.weight[i];
	}
	return OP_READ;
}

static int pick_fa_mode(uint64_t r)
{
	int modes[FA_NR], n = 0, i;

	for (i = 0; i < FA_NR; i++)
		if (fx.fa_on[i])
			modes[n++] = i;
	return n ? modes[r % n] : -1;
}

/* Corrupt one byte behind the model's back: proves the checks catch it. */
static void inject_fault(void)
{
	off_t off = fx.size / 2;
	uint8_t b = fx.good[off] ^ 0x5a;
	int fd = open(fx.path, O_WRONLY);

	if (fd == -1 || pwrite(fd, &b, 1, off) != 1 || fsync(fd) == -1)
		die("fault injection: %s", strerror(errno));
	close(fd);
	printf("hotfs_fsx: injected a fault: byte at %jd changed behind the model\n",
	       (intmax_t)off);
	fx.inject_at = 0;
	fx.injected = true;
}

static void one_op(void)
{
	uint64_t r_op = rnd64(), r_off = rnd64(), r_len = rnd64();
	uint64_t r_x = rnd64();
	int op = pick_op(r_op);
	struct logent *e = &fx.log[fx.nlog % LOG_RING];
	off_t off = 0, len = 0, a = fx.align;
	off_t amax = fx.maxlen & ~(a - 1);
	int mode = 0;
	const char *note = NULL;

	e->size_before = fx.size;
	switch (op) {
	case OP_READ:
		/* mostly inside the file, sometimes across or past EOF */
		if (fx.size && (r_x & 15))
			off = r_off % fx.size;
		else
			off = r_off % fx.maxlen;
		len = pick_len(r_len, fx.maxop);
		break;
	case OP_WRITE:
		if ((r_x & 7) == 0)
			off = fx.size < fx.maxlen ? fx.size : 0;	/* append */
		else
			off = r_off % fx.maxlen;
		len = pick_len(r_len, fx.maxop);
		if (off + len > fx.maxlen)
			len = fx.maxlen - off;
		break;
	case OP_MAPREAD:
		if (!fx.size) {
			note = "skipped (empty file)";
			break;
		}
		off = r_off % fx.size;
		len = pick_len(r_len, fx.maxop);
		if (off + len > fx.size)
			len = fx.size - off;
		break;
	case OP_MAPWRITE:
		off = r_off % fx.maxlen;
		len = pick_len(r_len, fx.maxop);
		if (off + len > fx.maxlen)
			len = fx.maxlen - off;
		break;
	case OP_DREAD:
	case OP_DWRITE:
		if (amax < a) {
			note = "skipped (maxlen < alignment)";
			break;
		}
		off = (off_t)(r_off % (amax / a)) * a;
		len = (off_t)(1 + (r_len % (uint64_t)(fx.maxop / a > 0 ?
						      fx.maxop / a : 1))) * a;
		if (off + len > amax)
			len = amax - off;
		break;
	case OP_TRUNCATE:
		if ((r_x & 15) == 0)
			len = 0;
		else if (r_x & 16)
			len = fx.size ? (off_t)(r_off % (fx.size + 1)) : 0;
		else
			len = fx.size + (off_t)(r_off % (fx.maxlen - fx.size + 1));
		off = 0;
		break;
	case OP_FALLOC:
		mode = pick_fa_mode(r_x);
		if (mode < 0) {
			mode = 0;
			note = "skipped (no fallocate mode left)";
			break;
		}
		off = r_off % fx.maxlen;
		len = pick_len(r_len, fx.maxop);
		if (off + len > fx.maxlen)
			len = fx.maxlen - off;
		break;
	case OP_FSYNC:
		mode = r_x & 1;
		break;
	case OP_REOPEN:
		break;
	case OP_SEEK:
		mode = r_x & 1;		/* 1 = SEEK_HOLE */
		off = r_off % fx.maxlen;
		break;
	case OP_SRCWRITE:
		mode = (r_x & 7) == 0;	/* 1 = truncate */
		if (mode) {
			off = (off_t)(r_off % (fx.maxlen + 1));
			break;
		}
		off = r_off % fx.maxlen;
		len = pick_len(r_len, fx.maxop);
		if (off + len > fx.maxlen)
			len = fx.maxlen - off;
		break;
	}
	/* in a shared file, the bytes past the region are someone else's */
	if (fx.shared && (op == OP_READ || op == OP_DREAD) &&
	    off + len > fx.size)
		len = off < fx.size ? fx.size - off : 0;
	if (op == OP_MAPWRITE || op == OP_READ || op == OP_WRITE ||
	    op == OP_FALLOC || (fx.shared && op == OP_DREAD)) {
		if (len <= 0 && !note)
			note = "skipped (empty range)";
	}

	e->opnum = fx.opnum;
	e->op = op;
	e->mode = mode;
	e->off = off;
	e->len = len;
	e->note = note;
	e->size_after = fx.size;
	fx.nlog++;

	if (fx.debug_from && fx.opnum >= fx.debug_from)
		printf("#%lu %s%s%s off %jd len %jd size %jd%s%s\n", fx.opnum,
		       op_desc[op].name, op == OP_FALLOC ? " " : "",
		       op == OP_FALLOC ? fa_desc[mode].name : "",
		       (intmax_t)off, (intmax_t)len, (intmax_t)fx.size,
		       note ? " " : "", note ? note : "");

	if (note) {
		fx.skipped++;
		return;
	}
	switch (op) {
	case OP_READ:
		do_read(off, len);
		break;
	case OP_WRITE:
		do_write(off, len);
		break;
	case OP_MAPREAD:
		do_mapread(off, len);
		break;
	case OP_MAPWRITE:
		do_mapwrite(off, len);
		break;
	case OP_DREAD:
		do_dread(off, len);
		break;
	case OP_DWRITE:
		do_dwrite(off, len);
		break;
	case OP_TRUNCATE:
		do_truncate(len);
		break;
	case OP_FALLOC:
		e->note = do_falloc(mode, off, len);
		if (e->note)
			fx.skipped++;
		else
			fx.fa_done[mode]++;
		break;
	case OP_FSYNC:
		do_fsync(mode);
		break;
	case OP_REOPEN:
		do_reopen();
		break;
	case OP_SRCWRITE:
		do_srcwrite(mode, off, len);
		break;
	case OP_DROPCACHE:
		do_dropcache();
		break;
	case OP_SEEK:
		do_seek(mode, off);
		break;
	}
	e->size_after = fx.size;
	fx.done[op]++;
	check_size(op_desc[op].name);
}

static bool set_weights(const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL, *eq;
	bool ok = true;
	int i;

	if (!dup)
		die("out of memory");
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq) {
			ok = false;
			continue;
		}
		*eq = 0;
		for (i = 0; i < OP_NR; i++)
			if (strcmp(tok, op_desc[i].name) == 0)
				break;
		if (i == OP_NR) {
			fprintf(stderr, "hotfs_fsx: unknown op name '%s'\n",
				tok);
			ok = false;
			continue;
		}
		fx.weight[i] = strtoul(eq + 1, NULL, 0);
		if (!fx.weight[i])
			fx.op_on[i] = false;
	}
	free(dup);
	return ok;
}

static bool disable_by_name(const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL;
	bool ok = true;
	int i;

	if (!dup)
		die("out of memory");
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		bool hit = false;

		for (i = 0; i < OP_NR; i++) {
			if (strcmp(tok, op_desc[i].name) == 0) {
				fx.op_on[i] = false;
				hit = true;
			}
		}
		for (i = 0; i < FA_NR; i++) {
			if (strcmp(tok, fa_desc[i].name) == 0) {
				fx.fa_on[i] = false;
				hit = true;
			}
		}
		if (strcmp(tok, "direct") == 0) {
			fx.op_on[OP_DREAD] = fx.op_on[OP_DWRITE] = false;
			hit = true;
		}
		if (strcmp(tok, "mmap") == 0) {
			fx.op_on[OP_MAPREAD] = fx.op_on[OP_MAPWRITE] = false;
			hit = true;
		}
		if (!hit) {
			fprintf(stderr, "hotfs_fsx: unknown op name '%s'\n",
				tok);
			ok = false;
		}
	}
	free(dup);
	return ok;
}

static void usage(void)
{
	fprintf(stderr,
"usage: hotfs_fsx [options] [FILE | DIR]\n"
"  Random file operations on FILE, every read checked against a model.\n"
"  With a DIR (default $TMPDIR or /tmp), a new file is made there and\n"
"  removed on success.\n"
"  -S seed     random seed (default: from the clock; 0 = same)\n"
"  -N numops   number of operations (default 20000)\n"
"  -l maxlen   upper bound on the file size (default 262144)\n"
"  -o oplen    upper bound on one op's length (default 65536)\n"
"  -a align    O_DIRECT offset/length/buffer alignment (default 4096)\n"
"  -f N        compare the whole file every N ops (default 500; 0 = end only)\n"
"  -x LIST     disable ops, comma separated: read write mapread mapwrite\n"
"              dread dwrite truncate falloc fsync reopen srcwrite\n"
"              dropcache (fadvise DONTNEED) seek (SEEK_DATA/SEEK_HOLE),\n"
"              fallocate modes alloc keepsize punch zero zerokeep,\n"
"              groups mmap direct\n"
"  -w LIST     op weights, e.g. read=60,write=5 (defaults: read 20,\n"
"              write 20, mapread 8, mapwrite 8, dread 6, dwrite 6,\n"
"              truncate 6, falloc 10, fsync 2, reopen 2, srcwrite 3,\n"
"              dropcache 3, seek 3)\n"
"  -s SRCFILE  FILE's path in the source tree under a mount: enables\n"
"              srcwrite, which closes FILE, writes or truncates SRCFILE\n"
"              directly and reopens FILE (close-to-open coherence)\n"
"  -R -W       no mmap reads / no mmap writes\n"
"  -Z          no O_DIRECT ops\n"
"  -F          no fallocate;  -K no KEEP_SIZE, -H no PUNCH_HOLE,\n"
"              -z no ZERO_RANGE\n"
"  -T          no truncate;   -C no close/reopen;  -y no fsync\n"
"  -n          no file size checks\n"
"  -L N        on failure, list the last N ops (default 50, max 1024)\n"
"  -d          print every op;  -D N  print ops from op N on\n"
"  -p N        print progress every N ops\n"
"  -q          quiet: print only failures\n"
"  -u          unlink FILE on success\n"
"  -r OFFSET   share FILE with other exercisers: use only the -l bytes\n"
"              from OFFSET (no truncate, size-changing fallocate, seek or\n"
"              srcwrite; O_DIRECT only if OFFSET is aligned)\n"
"  -V SRCPATH  on a data mismatch, also read the page from SRCPATH (the\n"
"              same file, not through the mount) to tell where it went wrong\n"
"  -I N        test the exerciser: after op N, change one byte of the file\n"
"              behind the model's back (the run must then fail)\n"
"exit: 0 success, 1 data mismatch or failed operation, 2 usage/setup\n");
	exit(2);
}

static unsigned long parse_num(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("bad %s: %s", what, s);
	switch (*end) {
	case 'k': case 'K':
		v <<= 10;
		end++;
		break;
	case 'm': case 'M':
		v <<= 20;
		end++;
		break;
	}
	if (*end)
		die("bad %s: %s", what, s);
	return v;
}

static void make_cmdline(int argc, char **argv, bool seed_given)
{
	size_t n = 0;
	int i;

	n += snprintf(fx.cmdline + n, sizeof(fx.cmdline) - n, "%s", argv[0]);
	if (!seed_given)
		n += snprintf(fx.cmdline + n, sizeof(fx.cmdline) - n,
			      " -S %" PRIu64, fx.seed);
	for (i = 1; i < argc && n < sizeof(fx.cmdline); i++)
		n += snprintf(fx.cmdline + n, sizeof(fx.cmdline) - n, " %s",
			      argv[i]);
	if (fx.autofile && n < sizeof(fx.cmdline))
		snprintf(fx.cmdline + n, sizeof(fx.cmdline) - n,
			 "   (file was %s)", fx.path);
}

static void setup_path(const char *arg)
{
	struct stat st;
	const char *dir = arg;
	int fd;

	if (!dir) {
		dir = getenv("TMPDIR");
		if (!dir || !*dir)
			dir = "/tmp";
	}
	if (arg && (stat(arg, &st) == -1 || !S_ISDIR(st.st_mode))) {
		fx.path = strdup(arg);
		if (!fx.path)
			die("out of memory");
		return;
	}
	if (asprintf(&fx.path, "%s/hotfs_fsx.XXXXXX", dir) < 0)
		die("out of memory");
	fd = mkstemp(fx.path);
	if (fd == -1)
		die("mkstemp %s: %s", fx.path, strerror(errno));
	close(fd);
	fx.autofile = true;
	fx.unlink_ok = true;
}

static void print_summary(void)
{
	int i;

	printf("hotfs_fsx: all %lu operations completed OK", fx.numops);
	printf(" (%lu skipped, %lu full compares, %llu bytes verified)\n",
	       fx.skipped, fx.full_checks, fx.bytes_checked);
	printf("  ops:");
	for (i = 0; i < OP_NR; i++)
		printf(" %s=%lu%s", op_desc[i].name, fx.done[i],
		       fx.op_on[i] ? "" : "(off)");
	printf("\n  fallocate:");
	for (i = 0; i < FA_NR; i++)
		printf(" %s=%lu%s", fa_desc[i].name, fx.fa_done[i],
		       fx.fa_on[i] && fx.op_on[OP_FALLOC] ? "" : "(off)");
	printf("\n");
}

int main(int argc, char **argv)
{
	bool seed_given = false;
	int c, i;

	for (i = 0; i < OP_NR; i++) {
		fx.op_on[i] = true;
		fx.weight[i] = op_desc[i].weight;
	}
	for (i = 0; i < FA_NR; i++)
		fx.fa_on[i] = true;

	while ((c = getopt(argc, argv, "S:N:l:o:a:f:x:w:s:r:V:RWZFKHzTCynL:dD:p:quI:h")) != -1) {
		switch (c) {
		case 'S':
			fx.seed = parse_num(optarg, "seed");
			seed_given = true;
			break;
		case 'N':
			fx.numops = parse_num(optarg, "numops");
			break;
		case 'l':
			fx.maxlen = parse_num(optarg, "maxlen");
			break;
		case 'o':
			fx.maxop = parse_num(optarg, "oplen");
			break;
		case 'a':
			fx.align = parse_num(optarg, "align");
			break;
		case 'f':
			fx.check_every = parse_num(optarg, "check interval");
			break;
		case 'x':
			if (!disable_by_name(optarg))
				usage();
			break;
		case 'w':
			if (!set_weights(optarg))
				usage();
			break;
		case 's':
			fx.srcpath = optarg;
			break;
		case 'V':
			fx.verifypath = optarg;
			break;
		case 'r':
			fx.region = parse_num(optarg, "region offset");
			fx.shared = true;
			break;
		case 'R':
			fx.op_on[OP_MAPREAD] = false;
			break;
		case 'W':
			fx.op_on[OP_MAPWRITE] = false;
			break;
		case 'Z':
			fx.op_on[OP_DREAD] = fx.op_on[OP_DWRITE] = false;
			break;
		case 'F':
			fx.op_on[OP_FALLOC] = false;
			break;
		case 'K':
			fx.fa_on[FA_KEEP] = fx.fa_on[FA_ZERO_KEEP] = false;
			break;
		case 'H':
			fx.fa_on[FA_PUNCH] = false;
			break;
		case 'z':
			fx.fa_on[FA_ZERO] = fx.fa_on[FA_ZERO_KEEP] = false;
			break;
		case 'T':
			fx.op_on[OP_TRUNCATE] = false;
			break;
		case 'C':
			fx.op_on[OP_REOPEN] = false;
			break;
		case 'y':
			fx.op_on[OP_FSYNC] = false;
			break;
		case 'n':
			fx.nosizecheck = true;
			break;
		case 'L':
			fx.log_show = parse_num(optarg, "log length");
			break;
		case 'd':
			fx.debug_from = 1;
			break;
		case 'D':
			fx.debug_from = parse_num(optarg, "debug start");
			break;
		case 'p':
			fx.progress = parse_num(optarg, "progress interval");
			break;
		case 'q':
			fx.quiet = true;
			break;
		case 'u':
			fx.unlink_ok = true;
			break;
		case 'I':
			fx.inject_at = parse_num(optarg, "inject op");
			break;
		default:
			usage();
		}
	}
	if (optind < argc - 1)
		usage();

	if (!fx.srcpath)
		fx.op_on[OP_SRCWRITE] = false;
	if (fx.shared) {
		/* only what stays inside the region and leaves the size alone */
		fx.op_on[OP_TRUNCATE] = false;
		fx.op_on[OP_SRCWRITE] = false;
		fx.op_on[OP_SEEK] = false;
		fx.fa_on[FA_ALLOC] = false;
		fx.fa_on[FA_ZERO] = false;
		fx.nosizecheck = true;
		if (fx.region % fx.align) {
			fx.op_on[OP_DREAD] = false;
			fx.op_on[OP_DWRITE] = false;
		}
	}
	fx.pagesize = sysconf(_SC_PAGESIZE);
	if (fx.maxlen < 1 || fx.maxop < 1 || fx.align < 1 ||
	    (fx.align & (fx.align - 1)))
		die("maxlen and oplen must be positive, align a power of two");
	if (fx.maxop > fx.maxlen)
		fx.maxop = fx.maxlen;
	for (c = 0, i = 0; i < OP_NR; i++)
		c |= fx.op_on[i];
	if (!c)
		die("every operation is disabled");
	if (!seed_given) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		fx.seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
			  getpid();
		fx.seed %= 1000000000;
	}
	fx.rng = fx.seed;
	fx.direct_ok = fx.op_on[OP_DREAD] || fx.op_on[OP_DWRITE];

	setup_path(optind < argc ? argv[optind] : NULL);
	make_cmdline(argc, argv, seed_given);

	fx.good = calloc(1, fx.maxlen);
	fx.buf = malloc(fx.maxlen + 1);
	fx.base = malloc(fx.pagesize);
	if (!fx.good || !fx.buf || !fx.base ||
	    posix_memalign((void **)&fx.dbuf,
			   fx.align > fx.pagesize ? fx.align : fx.pagesize,
			   fx.maxlen + fx.align))
		die("out of memory");
	for (i = 0; i < fx.pagesize; i++)
		fx.base[i] = rnd64();

	if (!fx.quiet) {
		printf("hotfs_fsx: seed %" PRIu64 ", %lu ops, maxlen %jd, oplen %jd, file %s\n",
		       fx.seed, fx.numops, (intmax_t)fx.maxlen,
		       (intmax_t)fx.maxop, fx.path);
		printf("hotfs_fsx: replay with: %s\n", fx.cmdline);
		fflush(stdout);
	}

	setup_signals();
	open_files(true);
	if (fx.shared) {
		/* our region starts as zeros; a write only ever grows a file */
		memset(fx.buf, 0, fx.maxlen);
		if (pwrite(fx.fd, fx.buf, fx.maxlen, fx.region) != fx.maxlen)
			die("zeroing the region at %jd: %s",
			    (intmax_t)fx.region, strerror(errno));
		fx.size = fx.maxlen;
	}
	for (fx.opnum = 1; fx.opnum <= fx.numops; fx.opnum++) {
		one_op();
		if (fx.inject_at && fx.opnum >= fx.inject_at && fx.size) {
			inject_fault();
			full_check("after fault injection");
		}
		if (fx.check_every && fx.opnum % fx.check_every == 0)
			full_check("periodic");
		if (fx.progress && fx.opnum % fx.progress == 0 && !fx.quiet) {
			printf("hotfs_fsx: %lu ops done, size %jd\n", fx.opnum,
			       (intmax_t)fx.size);
			fflush(stdout);
		}
	}
	fx.opnum = fx.numops;
	full_check("end");
	close_files();
	open_files(false);
	full_check("end, after reopen");
	close_files();

	if (!fx.quiet)
		print_summary();
	if (fx.unlink_ok && unlink(fx.path) == -1)
		fail("unlink %s: %s", fx.path, strerror(errno));
	return 0;
}
