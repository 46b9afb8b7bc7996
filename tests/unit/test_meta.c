// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the metadata snapshot's format (src/lib/meta.c): what is
 * encoded decodes to the same attributes, and any damage -- a flipped
 * bit, a truncation, a lying length, a record that contradicts its
 * parent -- rejects the whole file.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "hotfs/fileio.h"
#include "hotfs/meta.h"

static struct stat mkst(ino_t ino, mode_t mode, off_t size)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_dev = 0x10302;
	st.st_ino = ino;
	st.st_mode = mode;
	st.st_nlink = S_ISDIR(mode) ? 2 : 1;
	st.st_uid = 1000;
	st.st_gid = 100;
	st.st_size = size;
	st.st_blksize = 4096;
	st.st_blocks = (size + 511) / 512;
	st.st_atim.tv_sec = 1700000000;
	st.st_atim.tv_nsec = 1;
	st.st_mtim.tv_sec = 1700000001;
	st.st_mtim.tv_nsec = 999999999;
	st.st_ctim.tv_sec = 1700000002;
	st.st_ctim.tv_nsec = 123456789;
	return st;
}

/* root { a (file), sub/ { x (file), l (symlink) }, z (file) } */
static void build(void **buf, size_t *len)
{
	struct stat root = mkst(2, S_IFDIR | 0755, 4096);
	struct stat sub = mkst(12, S_IFDIR | 0700, 4096);
	struct meta_enc *e = meta_enc_new(&root, META_MAX_BYTES);
	struct stat a = mkst(11, S_IFREG | 0644, 5), z = mkst(13, S_IFREG, 0);
	struct stat x = mkst(14, S_IFREG | 0600, 1 << 20);
	struct stat l = mkst(15, S_IFLNK | 0777, 3);
	uint32_t r, s;

	assert_non_null(e);
	r = meta_enc_dir(e, META_NONE, "", &root);
	assert_int_equal(r, 0);
	assert_true(meta_enc_ent(e, "z", &z, NULL));
	assert_true(meta_enc_ent(e, "sub", &sub, NULL));
	assert_true(meta_enc_ent(e, "a", &a, NULL));
	s = meta_enc_dir(e, r, "sub", &sub);
	assert_int_equal(s, 1);
	assert_true(meta_enc_ent(e, "x", &x, NULL));
	assert_true(meta_enc_ent(e, "l", &l, "x/../y"));
	assert_int_equal(meta_enc_finish(e, buf, len), 0);
}

static void assert_same_stat(const struct stat *a, const struct stat *b)
{
	assert_int_equal(a->st_dev, b->st_dev);
	assert_int_equal(a->st_ino, b->st_ino);
	assert_int_equal(a->st_mode, b->st_mode);
	assert_int_equal(a->st_nlink, b->st_nlink);
	assert_int_equal(a->st_uid, b->st_uid);
	assert_int_equal(a->st_gid, b->st_gid);
	assert_int_equal(a->st_size, b->st_size);
	assert_int_equal(a->st_blocks, b->st_blocks);
	assert_int_equal(a->st_blksize, b->st_blksize);
	assert_int_equal(a->st_atim.tv_sec, b->st_atim.tv_sec);
	assert_int_equal(a->st_atim.tv_nsec, b->st_atim.tv_nsec);
	assert_int_equal(a->st_mtim.tv_sec, b->st_mtim.tv_sec);
	assert_int_equal(a->st_mtim.tv_nsec, b->st_mtim.tv_nsec);
	assert_int_equal(a->st_ctim.tv_sec, b->st_ctim.tv_sec);
	assert_int_equal(a->st_ctim.tv_nsec, b->st_ctim.tv_nsec);
}

static void test_roundtrip(void **state)
{
	struct meta_snap *s;
	const struct meta_ent *e;
	struct stat want;
	void *buf;
	size_t len;

	(void)state;
	build(&buf, &len);
	assert_int_equal(meta_decode(buf, len, &s), 0);
	assert_int_equal(s->ndirs, 2);
	assert_int_equal(s->nents, 5);
	assert_int_equal(s->root.st_ino, 2);
	assert_int_equal(s->dirs[0].n, 3);
	assert_string_equal(s->dirs[0].ents[0].name, "a");	/* sorted */
	e = meta_find(&s->dirs[0], "sub");
	assert_non_null(e);
	assert_int_equal(e->sub, 1);
	assert_null(meta_find(&s->dirs[0], "x"));
	assert_null(meta_find(&s->dirs[0], "b"));
	e = meta_find(&s->dirs[1], "x");
	assert_non_null(e);
	assert_int_equal(e->sub, META_NONE);
	want = mkst(14, S_IFREG | 0600, 1 << 20);
	assert_same_stat(&e->st, &want);
	e = meta_find(&s->dirs[1], "l");
	assert_non_null(e);
	assert_string_equal(e->target, "x/../y");
	assert_null(meta_find(&s->dirs[1], "x")->target);
	want = mkst(12, S_IFDIR | 0700, 4096);
	assert_same_stat(&s->dirs[1].st, &want);
	assert_string_equal(s->dirs[1].name, "sub");
	assert_int_equal(s->dirs[1].parent, 0);
	meta_snap_free(s);
	free(buf);
}

/* Every single-bit flip anywhere is caught (the checksum, or a check). */
static void test_bitflips(void **state)
{
	struct meta_snap *s;
	unsigned char *buf;
	size_t len, i;
	unsigned bit;

	(void)state;
	build((void **)&buf, &len);
	for (i = 0; i < len; i++)
		for (bit = 0; bit < 8; bit++) {
			buf[i] ^= (unsigned char)(1u << bit);
			assert_int_equal(meta_decode(buf, len, &s), -EINVAL);
			assert_null(s);
			buf[i] ^= (unsigned char)(1u << bit);
		}
	assert_int_equal(meta_decode(buf, len, &s), 0);
	meta_snap_free(s);
	free(buf);
}

static void test_truncated(void **state)
{
	struct meta_snap *s;
	void *buf;
	size_t len, i;

	(void)state;
	build(&buf, &len);
	for (i = 0; i < len; i++)
		assert_int_equal(meta_decode(buf, i, &s), -EINVAL);
	free(buf);
}

/* Re-seal after an edit: the structural checks alone must reject it. */
static void reseal(unsigned char *buf, size_t len)
{
	uint64_t h = XXH3_64bits(buf, len - 8);
	unsigned i;

	for (i = 0; i < 8; i++)
		buf[len - 8 + i] = (unsigned char)(h >> (8 * i));
}

/* An encoder with the root's record begun. */
static struct meta_enc *enc_root(const struct stat *root)
{
	struct meta_enc *e = meta_enc_new(root, META_MAX_BYTES);

	meta_enc_dir(e, META_NONE, "", root);
	return e;
}

/* Finish e: the encoder takes it, the decoder must refuse it. */
static void assert_refused(struct meta_enc *e)
{
	struct meta_snap *s;
	unsigned char *buf;
	size_t len;

	assert_int_equal(meta_enc_finish(e, (void **)&buf, &len), 0);
	assert_int_equal(meta_decode(buf, len, &s), -EINVAL);
	free(buf);
}

static void test_structure(void **state)
{
	struct stat root = mkst(2, S_IFDIR | 0755, 4096);
	struct stat sub = mkst(12, S_IFDIR | 0755, 4096);
	struct stat f = mkst(11, S_IFREG | 0644, 5);
	struct meta_enc *e;
	struct meta_snap *s;
	unsigned char *buf;
	size_t len;

	(void)state;
	/* a subdirectory record whose parent entry is a file */
	e = enc_root(&root);
	meta_enc_ent(e, "f", &f, NULL);
	meta_enc_dir(e, 0, "f", &sub);
	assert_refused(e);

	/* a subdirectory whose inode differs from its parent's entry */
	e = enc_root(&root);
	meta_enc_ent(e, "d", &sub, NULL);
	sub.st_ino = 99;
	meta_enc_dir(e, 0, "d", &sub);
	assert_refused(e);
	sub.st_ino = 12;

	/* a name with a slash, a duplicate name, a parent after its child */
	e = enc_root(&root);
	meta_enc_ent(e, "a/b", &f, NULL);
	assert_refused(e);
	e = enc_root(&root);
	meta_enc_ent(e, "a", &f, NULL);
	meta_enc_ent(e, "a", &f, NULL);
	assert_refused(e);
	e = enc_root(&root);
	meta_enc_ent(e, "d", &sub, NULL);
	meta_enc_dir(e, 1, "d", &sub);
	assert_refused(e);
	/* a lying entry count, resealed */
	build((void **)&buf, &len);
	buf[16]++;		/* nents */
	reseal(buf, len);
	assert_int_equal(meta_decode(buf, len, &s), -EINVAL);
	buf[16]--;
	buf[8] = 2;		/* another version */
	reseal(buf, len);
	assert_int_equal(meta_decode(buf, len, &s), -EINVAL);
	free(buf);
}

/* Over the byte bound, a directory is left out whole, never cut. */
static void test_bound(void **state)
{
	struct stat root = mkst(2, S_IFDIR | 0755, 4096);
	struct stat f = mkst(11, S_IFREG | 0644, 5);
	struct meta_enc *e = meta_enc_new(&root, 1024);
	struct meta_snap *s;
	char name[32];
	void *buf;
	size_t len;
	int i;
	struct stat sub = mkst(12, S_IFDIR | 0755, 4096);
	bool ok = true;

	(void)state;
	meta_enc_dir(e, META_NONE, "", &root);
	meta_enc_ent(e, "a", &f, NULL);
	meta_enc_ent(e, "d", &sub, NULL);
	assert_int_equal(meta_enc_dir(e, 0, "d", &sub), 1);
	for (i = 0; i < 100 && ok; i++) {
		snprintf(name, sizeof(name), "file%d", i);
		ok = meta_enc_ent(e, name, &f, NULL);
	}
	assert_false(ok);
	assert_int_equal(meta_enc_finish(e, &buf, &len), 0);
	assert_true(len <= 1024);
	assert_int_equal(meta_decode(buf, len, &s), 0);
	assert_int_equal(s->ndirs, 1);
	assert_int_equal(s->nents, 2);
	assert_int_equal(meta_find(&s->dirs[0], "d")->sub, META_NONE);
	meta_snap_free(s);
	free(buf);
}

static void test_file(void **state)
{
	char dir[] = "/tmp/hotfs-meta-XXXXXX";
	void *buf, *back;
	size_t len, blen;
	int dfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(meta_read_file(dfd, META_FILE, META_MAX_BYTES,
					&back, &blen), -ENOENT);
	build(&buf, &len);
	assert_int_equal(file_replace_at(dfd, META_FILE, buf, len), 0);
	assert_int_equal(faccessat(dfd, "meta.tmp", F_OK, 0), -1);
	assert_int_equal(meta_read_file(dfd, META_FILE, META_MAX_BYTES,
					&back, &blen), 0);
	assert_int_equal(blen, len);
	assert_memory_equal(back, buf, len);
	free(back);
	assert_int_equal(meta_read_file(dfd, META_FILE, len - 1, &back,
					&blen), -EFBIG);
	unlinkat(dfd, META_FILE, 0);
	/* not a regular file: refused, and a FIFO without waiting for a
	 * writer (this test would hang) */
	assert_int_equal(mkfifoat(dfd, META_FILE, 0600), 0);
	assert_int_equal(meta_read_file(dfd, META_FILE, META_MAX_BYTES,
					&back, &blen), -EINVAL);
	unlinkat(dfd, META_FILE, 0);
	assert_int_equal(mkdirat(dfd, META_FILE, 0700), 0);
	assert_int_equal(meta_read_file(dfd, META_FILE, META_MAX_BYTES,
					&back, &blen), -EINVAL);
	unlinkat(dfd, META_FILE, AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bitflips),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_structure),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
