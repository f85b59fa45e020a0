/*
 * Comparing two profiles (pyd_report_diff): what grew and what shrank,
 * by share of each profile's samples, since two runs rarely take the
 * same number.  Both are compared as one tree of all threads with no
 * processes apart (two runs' pids differ); frames are matched by their
 * labels, so a profile read back from collapsed stacks compares with one
 * read from JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "profiles.h"
#include "report.h"


const char *const pyd_diff_formats[] = {"table", "collapsed", "flamegraph",
                                        NULL};

static uint64_t samples(const struct pyd_profile *p)
{
	return p->nnodes ? p->nodes[0].total : 0;
}

static double share(uint64_t n, uint64_t all)
{
	return all ? (double)n / (double)all : 0;
}

/* One key (a stack, a function) and its counts in both profiles. */
struct keyed {
	char *key;
	uint64_t n[2], cum[2]; /* [0] base, [1] new */
	double change;         /* of the share of n, new - base */
};

struct keys {
	struct keyed *v;
	size_t n, cap;
};

/* A new key of profile s (0 base, 1 new) with n samples (cum: with the
 * function anywhere on the stack); key is copied. */
static bool add_key(struct keys *k, int s, const char *key, size_t len,
                    uint64_t n, uint64_t cum)
{
	if (!pyd_grow((void **)&k->v, &k->cap, k->n + 1, sizeof *k->v))
		return false;
	struct keyed *e = &k->v[k->n];
	*e = (struct keyed){.key = strndup(key, len)};
	e->n[s] = n;
	e->cum[s] = cum;
	k->n += e->key != NULL;
	return e->key != NULL;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct keyed *)a)->key,
	              ((const struct keyed *)b)->key);
}

/* Sorted by key, with equal keys' counts summed into one. */
static void merge_keys(struct keys *k)
{
	if (k->n) /* qsort's array may not be NULL, even empty */
		qsort(k->v, k->n, sizeof *k->v, by_key);
	size_t out = 0;
	for (size_t i = 0; i < k->n; i++) {
		struct keyed *last = out ? &k->v[out - 1] : NULL;
		if (last && !strcmp(last->key, k->v[i].key)) {
			for (int s = 0; s < 2; s++) {
				last->n[s] += k->v[i].n[s];
				last->cum[s] += k->v[i].cum[s];
			}
			free(k->v[i].key);
		} else {
			k->v[out++] = k->v[i];
		}
	}
	k->n = out;
}

static void free_keys(struct keys *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i].key);
	free(k->v);
}

/* ---- collapsed ---- */

/* Profile s's collapsed stacks into k. */
static bool stacks_of(const struct pyd_profile *p, int s, struct keys *k)
{
	struct pyd_buf text = {0};
	pyd_report_prof_collapsed(&text, p, 0);
	pyd_buf_put(&text, "", 1); /* a NUL after the last line */
	bool ok = !text.failed;
	for (char *line = text.data, *nl; ok && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		*nl = 0;
		char *sp = strrchr(line, ' ');
		ok = !sp || add_key(k, s, line, (size_t)(sp - line),
		                    strtoull(sp + 1, NULL, 10), 0);
	}
	pyd_buf_free(&text);
	return ok;
}

static void write_collapsed(struct pyd_buf *b, const struct keys *k,
                            const uint64_t all[2])
{
	for (size_t i = 0; i < k->n; i++) {
		const struct keyed *e = &k->v[i];
		double d = share(e->n[1], all[1]) - share(e->n[0], all[0]);
		pyd_buf_printf(b, "%s %llu %llu %+.2f\n", e->key,
		               (unsigned long long)e->n[0],
		               (unsigned long long)e->n[1], 100 * d);
	}
}

/* ---- table ---- */

static bool functions_of(const struct pyd_profile *p, int s, struct keys *k)
{
	struct pyd_prof_func *rows;
	size_t n = pyd_prof_functions(p, NULL, &rows);
	bool ok = n != SIZE_MAX;
	for (size_t i = 0; ok && i < n; i++) {
		char label[1024];
		struct pyd_prof_frame f = p->frames[rows[i].frame];
		f.line = 0;
		pyd_prof_frame_label(&f, label, sizeof label);
		ok = add_key(k, s, label, strlen(label), rows[i].self,
		             rows[i].cum);
	}
	free(rows);
	return ok;
}

static int by_change(const void *a, const void *b)
{
	double x = ((const struct keyed *)a)->change,
	       y = ((const struct keyed *)b)->change;
	return (x < y) - (x > y);
}

static void table_rows(struct pyd_buf *b, const struct keys *k,
                       const uint64_t all[2], bool grew, size_t limit)
{
	size_t shown = 0;
	pyd_buf_printf(b, "\n%s (own share of samples):\n%8s %8s %8s %9s %9s %8s  %s\n",
	               grew ? "Grew most" : "Shrank most", "base", "new",
	               "change", "base cum", "new cum", "change",
	               "function (file)");
	for (size_t j = 0; j < k->n && (!limit || shown < limit); j++) {
		const struct keyed *e = &k->v[grew ? j : k->n - 1 - j];
		double d = e->change;
		if (grew ? d <= 0 : d >= 0)
			break;
		double c0 = share(e->cum[0], all[0]), c1 = share(e->cum[1], all[1]);
		pyd_buf_printf(b, "%7.2f%% %7.2f%% %+8.2f %8.2f%% %8.2f%% %+8.2f  %s\n",
		               100 * share(e->n[0], all[0]),
		               100 * share(e->n[1], all[1]), 100 * d, 100 * c0,
		               100 * c1, 100 * (c1 - c0), e->key);
		shown++;
	}
	if (!shown)
		PUT(b, "  (none)\n");
}

static void write_table(struct pyd_buf *b, struct keys *k,
                        const uint64_t all[2], size_t limit)
{
	for (size_t i = 0; i < k->n; i++)
		k->v[i].change = share(k->v[i].n[1], all[1]) -
		                 share(k->v[i].n[0], all[0]);
	if (k->n) /* qsort's array may not be NULL, even empty */
		qsort(k->v, k->n, sizeof *k->v, by_change);
	pyd_buf_printf(b,
	               "Differential profile: base %llu samples, new %llu "
	               "samples.\nShares are of each profile's samples; "
	               "changes in percentage points (new - base).\n",
	               (unsigned long long)all[0], (unsigned long long)all[1]);
	table_rows(b, k, all, true, limit);
	table_rows(b, k, all, false, limit);
}

/* ---- flame graph ---- */

/* Each frame's label, for matching nodes across profiles. */
static char **labels_of(const struct pyd_profile *p)
{
	char **l = calloc(p->nframes + 1, sizeof *l);
	for (size_t i = 0; l && i < p->nframes; i++) {
		char buf[1024];
		l[i] = strdup(pyd_prof_frame_label(&p->frames[i], buf, sizeof buf));
		if (!l[i]) {
			while (i--)
				free(l[i]);
			free(l);
			return NULL;
		}
	}
	return l;
}

static void free_labels(char **l, size_t n)
{
	for (size_t i = 0; l && i < n; i++)
		free(l[i]);
	free(l);
}

/* The child of base node parent that matches node n of now: the same
 * label, or for a thread node the thread in the same place. */
static uint32_t match(const struct pyd_profile *base, char **bl,
                      uint32_t parent, const struct pyd_profile *now,
                      char **nl, uint32_t n)
{
	uint32_t frame = now->nodes[n].frame, rank = 0;
	if (frame == PYD_PROF_NONE)
		for (uint32_t s = now->nodes[0].first_child; s != n;
		     s = now->nodes[s].next_sibling)
			rank++;
	for (uint32_t c = base->nodes[parent].first_child; c != PYD_PROF_NONE;
	     c = base->nodes[c].next_sibling) {
		uint32_t f = base->nodes[c].frame;
		if (frame == PYD_PROF_NONE ? f == PYD_PROF_NONE && !rank--
		                           : f != PYD_PROF_NONE &&
		                                 !strcmp(bl[f], nl[frame]))
			return c;
	}
	return PYD_PROF_NONE;
}

static bool write_flamegraph(struct pyd_buf *b, const struct pyd_profile *base,
                             const struct pyd_profile *now)
{
	char **bl = labels_of(base), **nl = labels_of(now);
	uint32_t *map = malloc((now->nnodes + 1) * sizeof *map);
	uint64_t *base_total = calloc(now->nnodes + 1, sizeof *base_total);
	bool ok = bl && nl && map && base_total;
	if (ok && now->nnodes) {
		map[0] = 0;
		base_total[0] = samples(base);
		/* Parents come before their children. */
		for (uint32_t i = 1; i < now->nnodes; i++) {
			uint32_t bp = map[now->nodes[i].parent];
			map[i] = bp == PYD_PROF_NONE
			             ? PYD_PROF_NONE
			             : match(base, bl, bp, now, nl, i);
			if (map[i] != PYD_PROF_NONE)
				base_total[i] = base->nodes[map[i]].total;
		}
		pyd_report_flamegraph_diff(b, now, base_total, samples(base));
	}
	free_labels(bl, base->nframes);
	free_labels(nl, now->nframes);
	free(map);
	free(base_total);
	return ok;
}

/* ---- the entry ---- */

/* One tree of all threads, processes not apart. */
static struct pyd_profile *as_one(const struct pyd_profile *p)
{
	struct pyd_profile *m = pyd_profile_view(p, PYD_PROF_NONE, false, true);
	if (m)
		m->by_process = false;
	return m;
}

static bool write_diff(struct pyd_buf *b, const struct pyd_profile *base,
                       const struct pyd_profile *now, const char *format,
                       size_t limit)
{
	if (!strcmp(format, "flamegraph"))
		return write_flamegraph(b, base, now);
	const uint64_t all[2] = {samples(base), samples(now)};
	struct keys k = {0};
	bool table = !strcmp(format, "table");
	bool ok = table ? functions_of(base, 0, &k) && functions_of(now, 1, &k)
	                : stacks_of(base, 0, &k) && stacks_of(now, 1, &k);
	if (ok) {
		merge_keys(&k);
		if (table)
			write_table(b, &k, all, limit);
		else
			write_collapsed(b, &k, all);
	}
	free_keys(&k);
	return ok;
}

enum pyd_err pyd_report_diff(struct pyd_buf *b, const struct pyd_profile *base,
                             const struct pyd_profile *now,
                             const char *format, size_t limit)
{
	size_t i = 0;
	while (pyd_diff_formats[i] && strcmp(pyd_diff_formats[i], format))
		i++;
	if (!pyd_diff_formats[i])
		return PYD_E_USAGE;
	struct pyd_profile *b1 = as_one(base), *n1 = as_one(now);
	bool ok = b1 && n1 && write_diff(b, b1, n1, format, limit);
	pyd_profile_free(b1);
	pyd_profile_free(n1);
	return ok && !b->failed ? PYD_OK : PYD_E_NOMEM;
}
