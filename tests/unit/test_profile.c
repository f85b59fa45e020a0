/*
 * The call-tree aggregation, as a specification: what a profile holds
 * after given samples, merged or per thread, with and without lines, at
 * its node limit; and what the table and collapsed reports make of it.
 */
#include <stdlib.h>
#include <string.h>

#include "../../core/report/profiles.h"
#include "../../core/report/report.h"
#include "check.h"

#define F(fn, ln)                                                              \
	{                                                                      \
		.function = fn, .qualname = fn, .file = "app.py", .line = ln   \
	}

/* Samples of a node, -1 if there is none. */
static long long self_of(const struct pyd_prof_node *n, bool await)
{
	return n ? (long long)(await ? n->self_await : n->self) : -1;
}

/* The node reached from a thread's node by the frames' functions. */
static const struct pyd_prof_node *path(const struct pyd_profile *p,
                                        size_t thread, const char *const *fns,
                                        size_t n)
{
	uint32_t node = p->threads[thread].node;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = p->nodes[node].first_child;
		while (c != PYD_PROF_NONE &&
		       strcmp(p->frames[p->nodes[c].frame].function, fns[i]))
			c = p->nodes[c].next_sibling;
		if (c == PYD_PROF_NONE)
			return NULL;
		node = c;
	}
	return &p->nodes[node];
}

/* A profile of one process, index 0. */
static struct pyd_profile *new_profile(bool lines, size_t max_nodes)
{
	struct pyd_profile *p = pyd_profile_new(lines, max_nodes);
	CHECK_EQ(pyd_profile_process(p, 100, 1, "python3 app.py", "3.12.1"), 0);
	return p;
}

static void test_counts_and_totals(void)
{
	struct pyd_profile *p = new_profile(true, 0);
	/* innermost first */
	struct pyd_frame ab[] = {F("b", 20), F("a", 10)};
	struct pyd_frame ac[] = {F("c", 30), F("a", 10)};
	for (int i = 0; i < 3; i++)
		pyd_profile_add(p, 0, 7, "main", ab, 2, false);
	pyd_profile_add(p, 0, 7, "main", ac, 2, false);
	pyd_profile_add(p, 0, 8, "worker", ab, 2, true);
	pyd_profile_finish(p);
	CHECK_EQ(p->nthreads, 2);
	CHECK_EQ(p->nodes[0].total, 5);
	CHECK_EQ(p->nodes[p->threads[0].node].total, 4);
	const char *const a_b[] = {"a", "b"};
	const struct pyd_prof_node *n = path(p, 0, a_b, 2);
	CHECK_EQ(self_of(n, false), 3);
	n = path(p, 1, a_b, 2);
	CHECK_EQ(self_of(n, true), 1);
	CHECK_EQ(p->nframes, 3);

	struct pyd_profile *m = pyd_profile_view(p, PYD_PROF_NONE, false, true);
	CHECK_EQ(m->nthreads, 1);
	CHECK_EQ(m->merged, true);
	n = path(m, 0, a_b, 2);
	CHECK_EQ(self_of(n, false), 4);
	CHECK_EQ(self_of(n, true), 1);
	CHECK_EQ(m->nodes[0].total, 5);
	pyd_profile_free(m);
	pyd_profile_free(p);
}

static void test_no_lines(void)
{
	struct pyd_profile *p = new_profile(false, 0);
	struct pyd_frame x[] = {F("b", 20), F("a", 10)};
	struct pyd_frame y[] = {F("b", 21), F("a", 12)};
	pyd_profile_add(p, 0, 1, "", x, 2, false);
	pyd_profile_add(p, 0, 1, "", y, 2, false);
	pyd_profile_finish(p);
	const char *const a_b[] = {"a", "b"};
	const struct pyd_prof_node *n = path(p, 0, a_b, 2);
	CHECK_EQ(self_of(n, false), 2);
	CHECK_EQ(p->nframes, 2);
	CHECK_EQ(p->frames[0].line, 0);
	pyd_profile_free(p);
	/* With lines, the same samples are four frames on two paths. */
	p = new_profile(true, 0);
	pyd_profile_add(p, 0, 1, "", x, 2, false);
	pyd_profile_add(p, 0, 1, "", y, 2, false);
	pyd_profile_finish(p);
	CHECK_EQ(p->nframes, 4);
	CHECK_EQ(p->nnodes, 6);
	pyd_profile_free(p);
}

/* Strings are interned by content: equal names at other addresses (a
 * reloaded module's code objects) are the same frame. */
static void test_interning(void)
{
	struct pyd_profile *p = new_profile(true, 0);
	char fn1[] = "f", fn2[] = "f", file1[] = "m.py", file2[] = "m.py";
	struct pyd_frame a = {.function = fn1, .file = file1, .line = 3};
	struct pyd_frame b = {.function = fn2, .file = file2, .line = 3};
	pyd_profile_add(p, 0, 1, "", &a, 1, false);
	pyd_profile_add(p, 0, 1, "", &b, 1, false);
	pyd_profile_finish(p);
	CHECK_EQ(p->nframes, 1);
	CHECK_EQ(p->nnodes, 3); /* root, thread, f */
	pyd_profile_free(p);
}

/* Memory is bounded: past the node limit, new paths fold into the
 * deepest node that exists, and the profile says so. */
static void test_node_limit(void)
{
	struct pyd_profile *p = new_profile(true, 5);
	struct pyd_frame deep[8];
	for (int i = 0; i < 8; i++)
		deep[i] = (struct pyd_frame)F("r", 100 + i);
	for (int i = 0; i < 1000; i++)
		pyd_profile_add(p, 0, 1, "", deep, 8, false);
	pyd_profile_finish(p);
	CHECK_EQ(p->nnodes, 5);
	CHECK_EQ(p->truncated, true);
	CHECK_EQ(p->nodes[0].total, 1000);
	pyd_profile_free(p);
}

/* A task boundary is a frame without a file; its name is copied. */
static void test_task_frames(void)
{
	struct pyd_profile *p = new_profile(true, 0);
	char name[16];
	for (int i = 0; i < 2; i++) {
		/* The same buffer holds another task's name each time. */
		strcpy(name, i ? "Task-2" : "Task-1");
		struct pyd_frame st[] = {F("work", 5), {.function = name}};
		pyd_profile_add(p, 0, 1, "", st, 2, i == 1);
	}
	pyd_profile_finish(p);
	const char *const t1[] = {"Task-1", "work"}, *const t2[] = {"Task-2",
	                                                            "work"};
	CHECK_EQ(path(p, 0, t1, 2) != NULL, true);
	CHECK_EQ(self_of(path(p, 0, t2, 2), true), 1);
	CHECK_EQ(
	    p->frames[p->nodes[p->nodes[p->threads[0].node].first_child].frame]
	        .kind,
	    PYD_PF_TASK);
	pyd_profile_free(p);
}

static void test_reports(void)
{
	struct pyd_profile *p = new_profile(true, 0);
	/* Recursion: r calls r; cumulative counts each sample once. */
	struct pyd_frame rr[] = {F("r", 2), F("r", 3), F("main", 1)};
	struct pyd_frame m[] = {F("main", 1)};
	pyd_profile_add(p, 0, 1, "", rr, 3, false);
	pyd_profile_add(p, 0, 1, "", rr, 3, false);
	pyd_profile_add(p, 0, 1, "", m, 1, false);
	pyd_profile_finish(p);
	struct pyd_buf b = {0};
	pyd_report_prof_collapsed(&b, p, 0);
	pyd_buf_put(&b, "", 1);
	CHECK_EQ(strstr(b.data, "Thread 1 ();main (app.py:1);r (app.py:3);"
	                        "r (app.py:2) 2\n") != NULL,
	         true);
	CHECK_EQ(strstr(b.data, "Thread 1 ();main (app.py:1) 1\n") != NULL,
	         true);
	pyd_buf_free(&b);
	pyd_report_prof_table(&b, p, 0);
	pyd_buf_put(&b, "", 1);
	/* r: 2 direct, 2 cumulative (not 4) out of 3 */
	CHECK_EQ(strstr(b.data, "         2   66.7% ") != NULL, true);
	const char *row = strstr(b.data, "  r (app.py)");
	CHECK_EQ(row != NULL, true);
	pyd_buf_free(&b);
	pyd_profile_free(p);
}

/* Processes stay apart: merging folds threads of one process only, and
 * a process's own copy holds its threads alone. */
static void test_processes(void)
{
	struct pyd_profile *p = new_profile(true, 0);
	CHECK_EQ(pyd_profile_process(p, 200, 100, "python3 -c worker", "3.12.1"),
	         1);
	p->by_process = true;
	struct pyd_frame ab[] = {F("b", 20), F("a", 10)};
	pyd_profile_add(p, 0, 7, "MainThread", ab, 2, false);
	pyd_profile_add(p, 0, 8, "pool", ab, 2, false);
	pyd_profile_add(p, 1, 7, "MainThread", ab, 2, false);
	pyd_profile_finish(p);
	CHECK_EQ(p->nthreads, 3); /* tid 7 twice: two processes */
	struct pyd_profile *m = pyd_profile_view(p, PYD_PROF_NONE, false, true);
	CHECK_EQ(m->nthreads, 2);
	CHECK_EQ(m->threads_merged, 3);
	CHECK_EQ(m->threads[0].folded, 2);
	CHECK_EQ(m->nodes[m->threads[0].node].total, 2);
	CHECK_EQ(m->nodes[m->threads[1].node].total, 1);
	struct pyd_buf b = {0};
	pyd_report_prof_collapsed(&b, m, 0);
	pyd_buf_put(&b, "", 1);
	CHECK_EQ(strstr(b.data, "process 200 (python3 -c worker);a (app.py:10);"
	                        "b (app.py:20) 1\n") != NULL,
	         true);
	pyd_buf_free(&b);
	struct pyd_profile *w = pyd_profile_view(m, 1, false, false);
	CHECK_EQ(w->nthreads, 1);
	CHECK_EQ(w->threads_merged, 1);
	CHECK_EQ(w->meta.pid, 200);
	CHECK_EQ(w->nodes[0].total, 1);
	pyd_profile_free(w);
	pyd_profile_free(m);
	pyd_profile_free(p);
}

/* What the hook was told: each sample's frames and what it kept. */
struct told {
	uint32_t frames[8][4];
	size_t n[8], kept[8], count;
};

static void on_sample(void *ctx, const struct pyd_profile *p,
                      const struct pyd_prof_sample *s)
{
	(void)p;
	struct told *t = ctx;
	memcpy(t->frames[t->count], s->frames, s->n * sizeof *s->frames);
	t->n[t->count] = s->n;
	t->kept[t->count++] = s->kept;
}

/* Units (tasks, greenlets) sampled on one thread each round reuse their
 * own previous path: the tree is what plain samples make, and the hook is
 * told what each shares with the thread's previous sample, whichever
 * unit that was. */
static void test_units(void)
{
	struct pyd_profile *p = new_profile(true, 0), *q = new_profile(true, 0);
	struct told told = {0};
	p->on_sample = on_sample;
	p->on_sample_ctx = &told;
	struct pyd_frame x[] = {F("wait", 3), F("x", 2), {.function = "<g1>"}};
	struct pyd_frame y[] = {F("wait", 3), F("y", 4), {.function = "<g2>"}};
	struct pyd_frame y2[] = {F("other", 9), F("y", 5), {.function = "<g2>"}};
	const struct pyd_frame *round[] = {x, y, x, y, x, y2};
	for (size_t i = 0; i < 6; i++) {
		CHECK_EQ(pyd_profile_add_unit(p, 0, 7, "main", round[i], 3, true,
		                              i % 2),
		         PYD_OK);
		CHECK_EQ(pyd_profile_add(q, 0, 7, "main", round[i], 3, true),
		         PYD_OK);
	}
	pyd_profile_finish(p);
	pyd_profile_finish(q);
	struct pyd_buf a = {0}, b = {0};
	pyd_report_prof_collapsed(&a, p, 0);
	pyd_report_prof_collapsed(&b, q, 0);
	CHECK_EQ(a.len == b.len && !memcmp(a.data, b.data, a.len), true);
	pyd_buf_free(&a);
	pyd_buf_free(&b);
	const char *const y2path[] = {"<g2>", "y", "other"};
	CHECK_EQ(self_of(path(p, 0, y2path, 3), true), 1);
	CHECK_EQ(told.count, 6);
	/* x after y shares nothing; the same unit twice in a row would
	 * share all; y2 after x shares nothing either. */
	for (size_t i = 0; i < 6; i++) {
		CHECK_EQ(told.n[i], 3);
		CHECK_EQ(told.kept[i], 0);
	}
	CHECK_EQ(told.frames[0][0] == told.frames[2][0], true);
	CHECK_EQ(told.frames[1][0] == told.frames[5][0], true);
	CHECK_EQ(pyd_profile_add_unit(p, 0, 7, "main", y2, 3, true, 1), PYD_OK);
	CHECK_EQ(told.kept[6], 3);
	pyd_profile_free(q);
	pyd_profile_free(p);
}

int main(void)
{
	test_counts_and_totals();
	test_units();
	test_no_lines();
	test_interning();
	test_node_limit();
	test_task_frames();
	test_reports();
	test_processes();
	return check_done("test_profile");
}
