// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cache store index, the ordered part: a B+tree of 64-bit keys, each with
 * a 64-bit value and a 32-bit word (the index's (file id, record) ->
 * location, checksum; store_index.c gives them their meaning).
 *
 * Why a B+tree and not a hash table: memory.  A record costs 20 bytes of
 * payload; a hash table that doubles sits at 40-50% load right after
 * growing (262,144 records land exactly there), and a chained one needs
 * links and buckets on top: neither stays under 24 bytes a record at
 * every fill.  Here the leaves are sorted arrays (keys, values and words
 * side by side, SoA, one allocation each) whose capacity follows their
 * count in steps of BT_STEP entries: a leaf costs 8 bytes and its slack
 * (fewer than 2 * BT_STEP entries) on top of its records, and is split in
 * two at BT_LEAF_MAX.  Leaves that deletions leave under a quarter full
 * are merged with a neighbour (if the two fit in three quarters of a
 * leaf); inner nodes (BT_FAN children) likewise.  A file's records are
 * one range of keys (the file id is the key's high half): enumerating,
 * dropping or restamping them walks that range.
 *
 * Cost: a lookup is a walk down 2-4 nodes (the inner ones, about 1 KiB
 * for 10,000 records, stay in the CPU's caches) and a search of one leaf
 * (leaf_lb: an interpolated guess, then a few keys); an insert or a
 * delete moves at most BT_LEAF_MAX entries and sometimes reallocates one
 * leaf (a few KiB) or merges two: no operation touches more than a few
 * leaves, so none holds the index lock for long.  A walk visits a range
 * leaf by leaf, looking each one up again from the root, so it may drop
 * entries as it goes.
 *
 * Invariants (bt_check tests them): keys are strictly increasing across
 * the leaves in order; inner key[i] (i > 0) is <= every key under
 * child[i] and > every key under child[i - 1] (key[0] is not used); every
 * leaf is at the same depth (t->height inner levels above it); no node
 * is empty; t->n counts the keys and t->bytes the memory of every node.
 *
 * Locks: none of its own.  The caller (store_index.c, under idx_lock)
 * serialises changes against everything; lookups and walks that change
 * nothing may run in parallel.  The value word may be changed in place
 * with atomics under a shared lock (bt_find gives its address): entries
 * move only under the exclusive one.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

struct bt_leaf {
	uint16_t n, cap;
	uint32_t pad;
	/* uint64_t key[cap]; uint64_t val[cap]; uint32_t aux[cap]; */
};

struct bt_inner {
	uint32_t n;
	uint32_t pad;
	uint64_t key[BT_FAN];
	void *child[BT_FAN];
};

/* Where a key is, or would go: the inner nodes from the root down, the
 * child taken in each, the leaf and the position in it. */
struct bt_path {
	struct bt_inner *in[BT_DEPTH_MAX];
	uint32_t ix[BT_DEPTH_MAX];
	struct bt_leaf *leaf;
	uint32_t pos;
};

static inline uint64_t *lkey(struct bt_leaf *l)
{
	return (uint64_t *)(l + 1);
}

static inline uint64_t *lval(struct bt_leaf *l)
{
	return lkey(l) + l->cap;
}

static inline uint32_t *laux(struct bt_leaf *l)
{
	return (uint32_t *)(lval(l) + l->cap);
}

static size_t leaf_size(uint32_t cap)
{
	return sizeof(struct bt_leaf) + (size_t)cap * BT_ENTRY;
}

/* What an allocation costs: the allocator's chunk, header included. */
static uint64_t chunk(void *p)
{
	return malloc_usable_size(p) + sizeof(size_t);
}

static uint32_t cap_for(uint32_t n)
{
	uint32_t c = (n + BT_STEP - 1) / BT_STEP * BT_STEP;

	return c ? c : BT_STEP;
}

void bt_init(struct st_bt *t)
{
	memset(t, 0, sizeof(*t));
}

static void free_node(struct st_bt *t, void *node, uint32_t level)
{
	uint32_t i;

	if (level) {
		struct bt_inner *in = node;

		for (i = 0; i < in->n; i++)
			free_node(t, in->child[i], level - 1);
	}
	t->bytes -= chunk(node);
	free(node);
}

void bt_exit(struct st_bt *t)
{
	if (t->root)
		free_node(t, t->root, t->height);
	bt_init(t);
}

static struct bt_leaf *leaf_new(struct st_bt *t, uint32_t cap)
{
	struct bt_leaf *l;

	if (t->limit && t->bytes + leaf_size(cap) > t->limit)
		return NULL;
	l = malloc(leaf_size(cap));
	if (!l)
		return NULL;
	l->n = 0;
	l->cap = cap;
	l->pad = 0;
	t->bytes += chunk(l);
	return l;
}

/*
 * Give leaf l capacity cap (>= l->n), moving its value and word arrays;
 * NULL (and l unchanged) if memory is short.
 */
static struct bt_leaf *leaf_recap(struct st_bt *t, struct bt_leaf *l,
				  uint32_t cap)
{
	uint32_t old = l->cap, n = l->n;
	uint64_t before = chunk(l);
	struct bt_leaf *nl;

	if (cap == old)
		return l;
	if (cap < old) {
		/* pack the arrays down first, then shrink */
		memmove(lkey(l) + cap, lval(l), n * 8);
		memmove((uint8_t *)(lkey(l) + 2 * cap), laux(l), n * 4);
		l->cap = cap;
		nl = realloc(l, leaf_size(cap));
		if (!nl)
			nl = l;	/* keeps working at the old size */
	} else {
		if (t->limit && t->bytes + leaf_size(cap) - leaf_size(old) >
		    t->limit)
			return NULL;
		nl = realloc(l, leaf_size(cap));
		if (!nl)
			return NULL;
		nl->cap = cap;
		memmove((uint8_t *)(lkey(nl) + 2 * cap),
			(uint8_t *)(lkey(nl) + 2 * old), n * 4);
		memmove(lkey(nl) + cap, lkey(nl) + old, n * 8);
	}
	t->bytes += chunk(nl);
	t->bytes -= before;
	return nl;
}

static struct bt_inner *inner_new(struct st_bt *t)
{
	struct bt_inner *in;

	if (t->limit && t->bytes + sizeof(*in) > t->limit)
		return NULL;
	in = malloc(sizeof(*in));
	if (!in)
		return NULL;
	in->n = 0;
	in->pad = 0;
	t->bytes += chunk(in);
	return in;
}

/*
 * First position in l whose key is >= key.  The keys of a leaf are
 * mostly runs of one file's record numbers, close to evenly spread, so
 * the search starts with a guess interpolated between the first and last
 * key and looks at the 9 keys around it (one or two cache lines): a
 * leaf costs about 3 cache misses where a binary search of 256 keys
 * costs 6.  A bad guess only narrows the binary search less.
 */
static uint32_t leaf_lb(struct bt_leaf *l, uint64_t key)
{
	const uint64_t *k = lkey(l);
	uint32_t lo = 0, hi = l->n;

	if (hi > 16) {
		uint64_t a = k[0], b = k[hi - 1];
		uint32_t g, w0, w1;

		if (key <= a)
			return 0;
		if (key > b)
			return hi;
		g = (uint32_t)((unsigned __int128)(key - a) * (hi - 1) /
			       (b - a));
		w0 = g >= 4 ? g - 4 : 0;
		w1 = g + 4 < hi ? g + 4 : hi - 1;
		if (k[w0] >= key) {
			hi = w0 + 1;
		} else if (k[w1] < key) {
			lo = w1 + 1;
		} else {
			lo = w0 + 1;
			hi = w1 + 1;
		}
	}
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (k[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The child of in that key belongs under. */
static uint32_t inner_child(const struct bt_inner *in, uint64_t key)
{
	uint32_t lo = 1, hi = in->n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (in->key[mid] <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

static void descend(const struct st_bt *t, uint64_t key, struct bt_path *p)
{
	void *node = t->root;
	uint32_t lv;

	for (lv = 0; lv < t->height; lv++) {
		struct bt_inner *in = node;
		uint32_t i = inner_child(in, key);

		p->in[lv] = in;
		p->ix[lv] = i;
		node = in->child[i];
	}
	p->leaf = node;
	p->pos = node ? leaf_lb(node, key) : 0;
}

/* Point whoever holds the node at path level lv (the root for 0) at nd. */
static void set_child(struct st_bt *t, struct bt_path *p, uint32_t lv,
		      void *nd)
{
	if (lv == 0)
		t->root = nd;
	else
		p->in[lv - 1]->child[p->ix[lv - 1]] = nd;
}

bool bt_find(const struct st_bt *t, uint64_t key, uint64_t **val,
	     uint32_t **aux)
{
	struct bt_path p;

	if (!t->root)
		return false;
	descend(t, key, &p);
	if (p.pos == p.leaf->n || lkey(p.leaf)[p.pos] != key)
		return false;
	*val = &lval(p.leaf)[p.pos];
	if (aux)
		*aux = &laux(p.leaf)[p.pos];
	return true;
}

/* Put (key, child) at position at of in (which has room). */
static void inner_ins(struct bt_inner *in, uint32_t at, uint64_t key,
		      void *child)
{
	memmove(&in->key[at + 1], &in->key[at], (in->n - at) * 8);
	memmove(&in->child[at + 1], &in->child[at],
		(in->n - at) * sizeof(void *));
	in->key[at] = key;
	in->child[at] = child;
	in->n++;
}

static void inner_rm(struct bt_inner *in, uint32_t at)
{
	memmove(&in->key[at], &in->key[at + 1], (in->n - at - 1) * 8);
	memmove(&in->child[at], &in->child[at + 1],
		(in->n - at - 1) * sizeof(void *));
	in->n--;
}

/*
 * After the node at path level lv + 1 was split, with right (first key
 * sep) new beside it: link right into the parent at level lv, splitting
 * upwards as needed.  The nodes it may need are allocated first (spare),
 * so this cannot fail half way.
 */
static void link_split(struct st_bt *t, struct bt_path *p, int lv,
		       uint64_t sep, void *right, struct bt_inner **spare)
{
	for (; lv >= 0; lv--) {
		struct bt_inner *in = p->in[lv], *r;
		uint32_t at = p->ix[lv] + 1, half = BT_FAN / 2;

		if (in->n < BT_FAN) {
			inner_ins(in, at, sep, right);
			return;
		}
		r = *spare++;
		memcpy(r->key, &in->key[half], half * 8);
		memcpy(r->child, &in->child[half], half * sizeof(void *));
		r->n = half;
		in->n = half;
		if (at <= half)
			inner_ins(in, at, sep, right);
		else
			inner_ins(r, at - half, sep, right);
		sep = r->key[0];
		right = r;
	}
	/* the root split: a new root above both */
	{
		struct bt_inner *root = *spare;

		root->n = 2;
		root->key[0] = 0;
		root->child[0] = t->root;
		root->key[1] = sep;
		root->child[1] = right;
		t->root = root;
		t->height++;
	}
}

static void leaf_ins(struct bt_leaf *l, uint32_t at, uint64_t key,
		     uint64_t val, uint32_t aux)
{
	uint32_t m = l->n - at;

	memmove(&lkey(l)[at + 1], &lkey(l)[at], m * 8);
	memmove(&lval(l)[at + 1], &lval(l)[at], m * 8);
	memmove(&laux(l)[at + 1], &laux(l)[at], m * 4);
	lkey(l)[at] = key;
	lval(l)[at] = val;
	laux(l)[at] = aux;
	l->n++;
}

/* Split full leaf l (at path level height) and insert into its half. */
static int split_ins(struct st_bt *t, struct bt_path *p, uint64_t key,
		     uint64_t val, uint32_t aux)
{
	struct bt_inner *spare[BT_DEPTH_MAX + 1];
	struct bt_leaf *l = p->leaf, *r;
	uint32_t nsp = 0, lv, half = l->n / 2, m = l->n - half;

	/* inner nodes the split needs: one per full level above the leaf,
	 * and a new root if they go all the way up */
	for (lv = t->height; lv > 0 && p->in[lv - 1]->n == BT_FAN; lv--)
		nsp++;
	if (lv == 0)
		nsp++;
	if (nsp > BT_DEPTH_MAX)
		return -ENOMEM;
	r = leaf_new(t, cap_for(m + 1));
	for (lv = 0; r && lv < nsp; lv++) {
		spare[lv] = inner_new(t);
		if (!spare[lv])
			break;
	}
	if (!r || lv < nsp) {
		while (r && lv-- > 0) {
			t->bytes -= chunk(spare[lv]);
			free(spare[lv]);
		}
		if (r) {
			t->bytes -= chunk(r);
			free(r);
		}
		return -ENOMEM;
	}
	memcpy(lkey(r), &lkey(l)[half], m * 8);
	memcpy(lval(r), &lval(l)[half], m * 8);
	memcpy(laux(r), &laux(l)[half], m * 4);
	r->n = m;
	l->n = half;
	if (p->pos <= half)
		leaf_ins(l, p->pos, key, val, aux);
	else
		leaf_ins(r, p->pos - half, key, val, aux);
	/* l gives back the half it lost, while its path is still valid */
	l = leaf_recap(t, l, cap_for(l->n));
	set_child(t, p, t->height, l);
	if (t->height == 0) {
		struct bt_inner *root = spare[0];

		root->n = 2;
		root->key[0] = 0;
		root->child[0] = l;
		root->key[1] = lkey(r)[0];
		root->child[1] = r;
		t->root = root;
		t->height = 1;
		return 0;
	}
	link_split(t, p, t->height - 1, lkey(r)[0], r, spare);
	return 0;
}

int bt_put(struct st_bt *t, uint64_t key, uint64_t val, uint32_t aux)
{
	struct bt_path p;
	struct bt_leaf *l;

	if (!t->root) {
		l = leaf_new(t, BT_STEP);
		if (!l)
			return -ENOMEM;
		t->root = l;
		t->height = 0;
	}
	descend(t, key, &p);
	l = p.leaf;
	if (p.pos < l->n && lkey(l)[p.pos] == key) {
		lval(l)[p.pos] = val;
		laux(l)[p.pos] = aux;
		return 1;
	}
	if (l->n == BT_LEAF_MAX) {
		int err = split_ins(t, &p, key, val, aux);

		if (err)
			return err;
		t->n++;
		return 0;
	}
	if (l->n == l->cap) {
		l = leaf_recap(t, l, l->cap + BT_STEP > BT_LEAF_MAX ?
			       BT_LEAF_MAX : l->cap + BT_STEP);
		if (!l)
			return -ENOMEM;
		set_child(t, &p, t->height, l);
	}
	leaf_ins(l, p.pos, key, val, aux);
	t->n++;
	return 0;
}

static void fix_inner(struct st_bt *t, struct bt_path *p, uint32_t lv);

/* Unlink the child of the node at path level lv that the path took. */
static void remove_child(struct st_bt *t, struct bt_path *p, uint32_t lv)
{
	inner_rm(p->in[lv], p->ix[lv]);
	fix_inner(t, p, lv);
}

/* Merge the node at level lv (an inner one) with a sibling if it has
 * few children and they fit; then see to the parent. */
static void merge_inner(struct st_bt *t, struct bt_path *p, uint32_t lv)
{
	struct bt_inner *in = p->in[lv], *par = p->in[lv - 1], *a, *b;
	uint32_t ix = p->ix[lv - 1], at, j;

	if (ix + 1 < par->n &&
	    in->n + ((struct bt_inner *)par->child[ix + 1])->n <=
	    BT_FAN * 3 / 4)
		at = ix;
	else if (ix > 0 &&
		 in->n + ((struct bt_inner *)par->child[ix - 1])->n <=
		 BT_FAN * 3 / 4)
		at = ix - 1;
	else
		return;
	a = par->child[at];
	b = par->child[at + 1];
	for (j = 0; j < b->n; j++) {
		a->key[a->n + j] = j ? b->key[j] : par->key[at + 1];
		a->child[a->n + j] = b->child[j];
	}
	a->n += b->n;
	t->bytes -= chunk(b);
	free(b);
	p->ix[lv - 1] = at + 1;
	remove_child(t, p, lv - 1);
}

static void fix_inner(struct st_bt *t, struct bt_path *p, uint32_t lv)
{
	struct bt_inner *in = p->in[lv];

	if (lv == 0) {
		/* the root: drop it while it has one child (or none) */
		while (t->height && ((struct bt_inner *)t->root)->n <= 1) {
			struct bt_inner *r = t->root;

			t->root = r->n ? r->child[0] : NULL;
			t->height = r->n ? t->height - 1 : 0;
			t->bytes -= chunk(r);
			free(r);
		}
		return;
	}
	if (in->n == 0) {
		t->bytes -= chunk(in);
		free(in);
		remove_child(t, p, lv - 1);
		return;
	}
	if (in->n < BT_FAN / 4)
		merge_inner(t, p, lv);
}

/* Merge leaf p->leaf into a neighbour (or it into it) if they fit in
 * three quarters of a leaf.  true if it did (the path is then spent). */
static bool merge_leaf(struct st_bt *t, struct bt_path *p)
{
	uint32_t h = t->height, ix = p->ix[h - 1], at, n;
	struct bt_inner *par = p->in[h - 1];
	struct bt_leaf *l = p->leaf, *a, *b;

	if (ix + 1 < par->n &&
	    l->n + ((struct bt_leaf *)par->child[ix + 1])->n <=
	    BT_LEAF_MAX * 3 / 4)
		at = ix;
	else if (ix > 0 &&
		 l->n + ((struct bt_leaf *)par->child[ix - 1])->n <=
		 BT_LEAF_MAX * 3 / 4)
		at = ix - 1;
	else
		return false;
	a = par->child[at];
	b = par->child[at + 1];
	n = a->n;
	a = leaf_recap(t, a, cap_for(a->n + b->n));
	if (!a)
		return false;
	par->child[at] = a;
	memcpy(&lkey(a)[n], lkey(b), b->n * 8);
	memcpy(&lval(a)[n], lval(b), b->n * 8);
	memcpy(&laux(a)[n], laux(b), b->n * 4);
	a->n = n + b->n;
	t->bytes -= chunk(b);
	free(b);
	p->ix[h - 1] = at + 1;
	remove_child(t, p, h - 1);
	return true;
}

/* After entries left p->leaf: free, merge or shrink it as it needs. */
static void fix_up(struct st_bt *t, struct bt_path *p)
{
	struct bt_leaf *l = p->leaf;
	uint32_t h = t->height;

	if (l->n == 0) {
		t->bytes -= chunk(l);
		free(l);
		if (h == 0)
			t->root = NULL;
		else
			remove_child(t, p, h - 1);
		return;
	}
	if (h && l->n < BT_LEAF_MAX / 4 && merge_leaf(t, p))
		return;
	if (l->cap >= l->n + 2 * BT_STEP) {
		l = leaf_recap(t, l, cap_for(l->n));
		set_child(t, p, h, l);
	}
}

bool bt_del(struct st_bt *t, uint64_t key)
{
	struct bt_path p;
	struct bt_leaf *l;
	uint32_t m;

	if (!t->root)
		return false;
	descend(t, key, &p);
	l = p.leaf;
	if (p.pos == l->n || lkey(l)[p.pos] != key)
		return false;
	m = l->n - p.pos - 1;
	memmove(&lkey(l)[p.pos], &lkey(l)[p.pos + 1], m * 8);
	memmove(&lval(l)[p.pos], &lval(l)[p.pos + 1], m * 8);
	memmove(&laux(l)[p.pos], &laux(l)[p.pos + 1], m * 4);
	l->n--;
	t->n--;
	fix_up(t, &p);
	return true;
}

/* The first key of the leaf after the path's: false at the end. */
static bool next_leaf_key(const struct st_bt *t, const struct bt_path *p,
			  uint64_t *key)
{
	uint32_t lv = t->height;

	while (lv-- > 0) {
		if (p->ix[lv] + 1 < p->in[lv]->n) {
			*key = p->in[lv]->key[p->ix[lv] + 1];
			return true;
		}
	}
	return false;
}

/*
 * Call fn for every key in [lo, hi], in order, one leaf at a time; the
 * entries fn says BT_DROP to leave the tree (only with the caller's lock
 * held exclusively), BT_STOP ends the walk.  Returns how many left.
 */
uint64_t bt_walk(struct st_bt *t, uint64_t lo, uint64_t hi, bt_walk_fn fn,
		 void *arg)
{
	uint64_t k = lo, dropped = 0;
	bool stop = false;

	while (t->root && k <= hi && !stop) {
		struct bt_path p;
		struct bt_leaf *l;
		uint32_t i, w, n;
		uint64_t last = 0;

		descend(t, k, &p);
		l = p.leaf;
		if (p.pos == l->n) {
			if (!next_leaf_key(t, &p, &k))
				break;
			continue;
		}
		n = l->n;
		for (i = w = p.pos; i < n && lkey(l)[i] <= hi; i++) {
			int r = stop ? BT_KEEP :
				fn(arg, lkey(l)[i], &lval(l)[i], laux(l)[i]);

			last = lkey(l)[i];
			if (r == BT_STOP)
				stop = true;
			if (r == BT_DROP)
				continue;
			if (w != i) {
				lkey(l)[w] = lkey(l)[i];
				lval(l)[w] = lval(l)[i];
				laux(l)[w] = laux(l)[i];
			}
			w++;
		}
		if (i < n)
			stop = true;	/* past hi */
		if (w != i) {
			memmove(&lkey(l)[w], &lkey(l)[i], (n - i) * 8);
			memmove(&lval(l)[w], &lval(l)[i], (n - i) * 8);
			memmove(&laux(l)[w], &laux(l)[i], (n - i) * 4);
			l->n = w + (n - i);
			t->n -= i - w;
			dropped += i - w;
			fix_up(t, &p);
		}
		if (last == UINT64_MAX)
			break;
		k = last + 1;
	}
	return dropped;
}

/* Check the subtree under node: its keys within [lo, hi], depth. */
static int check_node(const struct st_bt *t, void *node, uint32_t level,
		      uint64_t lo, uint64_t hi, uint64_t *n, uint64_t *bytes)
{
	uint32_t i;

	*bytes += chunk(node);
	if (level == 0) {
		struct bt_leaf *l = node;

		if (!l->n || l->n > l->cap || l->cap > BT_LEAF_MAX)
			return -EUCLEAN;
		for (i = 0; i < l->n; i++)
			if (lkey(l)[i] < lo || lkey(l)[i] > hi ||
			    (i && lkey(l)[i] <= lkey(l)[i - 1]))
				return -EUCLEAN;
		*n += l->n;
		return 0;
	}
	{
		struct bt_inner *in = node;

		if (!in->n || in->n > BT_FAN || (node == t->root && in->n < 2))
			return -EUCLEAN;
		for (i = 0; i < in->n; i++) {
			uint64_t a = i ? in->key[i] : lo;
			uint64_t b = i + 1 < in->n ? in->key[i + 1] - 1 : hi;
			int err;

			if (a < lo || b > hi || (i && in->key[i] <= in->key[i - 1]))
				return -EUCLEAN;
			err = check_node(t, in->child[i], level - 1, a, b, n,
					 bytes);
			if (err)
				return err;
		}
	}
	return 0;
}

int bt_check(const struct st_bt *t)
{
	uint64_t n = 0, bytes = 0;
	int err;

	if (!t->root)
		return t->n || t->bytes || t->height ? -EUCLEAN : 0;
	err = check_node(t, t->root, t->height, 0, UINT64_MAX, &n, &bytes);
	if (err)
		return err;
	return n == t->n && bytes == t->bytes ? 0 : -EUCLEAN;
}
