/*
 * The flame graph, speedscope, Gecko and pstats writers on a small profile
 * with awkward names: their JSON must parse, and nothing in a name may end the
 * flame graph's script element.
 *
 * test_profile_formats [DIR]: also write the four files into DIR, with
 * the tree as profile.json to compare them with, for
 * tests/check_flamegraph.py and the viewers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/report/profiles.h"
#include "../../core/report/report.h"
#include "check.h"

/* ---- a strict JSON syntax check -------------------------------------- */

static const char *json_value(const char *s, int depth);

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	return s;
}

static const char *json_string(const char *s)
{
	if (*s++ != '"')
		return NULL;
	for (; *s != '"'; s++) {
		if (!*s || (unsigned char)*s < 0x20)
			return NULL;
		if (*s == '\\' && !strchr("\"\\/bfnrtu", *++s))
			return NULL;
	}
	return s + 1;
}

static const char *json_number(const char *s)
{
	char *end;
	if (*s != '-' && (*s < '0' || *s > '9'))
		return NULL;
	strtod(s, &end);
	return end;
}

/* Members of an object (pairs) or an array, up to close. */
static const char *json_list(const char *s, char close, bool pairs, int depth)
{
	s = skip_ws(s + 1);
	if (*s == close)
		return s + 1;
	for (;;) {
		if (pairs) {
			s = json_string(s);
			if (!s || *(s = skip_ws(s)) != ':')
				return NULL;
			s++;
		}
		if (!(s = json_value(s, depth + 1)))
			return NULL;
		s = skip_ws(s);
		if (*s == close)
			return s + 1;
		if (*s++ != ',')
			return NULL;
		s = skip_ws(s);
	}
}

static const char *json_value(const char *s, int depth)
{
	s = skip_ws(s);
	if (depth > 64)
		return NULL;
	switch (*s) {
	case '{':
		return json_list(s, '}', true, depth);
	case '[':
		return json_list(s, ']', false, depth);
	case '"':
		return json_string(s);
	case 't':
		return strncmp(s, "true", 4) ? NULL : s + 4;
	case 'f':
		return strncmp(s, "false", 5) ? NULL : s + 5;
	case 'n':
		return strncmp(s, "null", 4) ? NULL : s + 4;
	}
	return json_number(s);
}

/* s[0, n) is exactly one JSON value. */
static bool json_ok(const char *s, size_t n)
{
	const char *end = s ? json_value(s, 0) : NULL;
	return end && (size_t)(skip_ws(end) - s) == n;
}

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/* ---- the profile ----------------------------------------------------- */

#define EVIL "f</script><!--\"\\\x01"

static struct pyd_profile *make_profile(void)
{
	struct pyd_profile *p = pyd_profile_new(true, 0);
	const struct pyd_frame main_stack[] = {
	    FRAME("leaf", "Outer.leaf", "/app/x.py", 30, 28),
	    FRAME("mid", "mid", "/app/x.py", 20, 18),
	    FRAME("main", "main", "/app/main.py", 10, 1),
	};
	const struct pyd_frame evil_stack[] = {
	    FRAME(EVIL, NULL, "/app/\xc3\xa9t\xc3\xa9.py", 5, 3),
	    FRAME("mid", "mid", "/app/x.py", 21, 18),
	    FRAME("main", "main", "/app/main.py", 10, 1),
	};
	/* A task awaiting, below the task boundary (file NULL). */
	const struct pyd_frame task_stack[] = {
	    FRAME("sleep", "sleep", "/usr/lib/asyncio/tasks.py", 600, 590),
	    FRAME("worker", "worker", "/app/x.py", 40, 38),
	    FRAME("Task-2", NULL, NULL, 0, 0),
	};
	if (!p || pyd_profile_process(p, 4242, 1, "python3 main.py", "3.12.1"))
		return NULL;
	for (int i = 0; i < 5; i++)
		pyd_profile_add(p, 0, 100, "MainThread", main_stack, 3, false);
	pyd_profile_add(p, 0, 100, "MainThread", main_stack + 1, 2, false);
	pyd_profile_add(p, 0, 100, "MainThread", evil_stack, 3, false);
	for (int i = 0; i < 3; i++)
		pyd_profile_add(p, 0, 101, "worker </b>", task_stack, 3, i > 0);
	pyd_profile_finish(p);
	p->meta = (struct pyd_prof_meta){
	    .pid = 4242,
	    .python_version = "3.12.1",
	    .mode = PYD_SAMPLE_ASYNC,
	    .rate_hz = 100,
	    .duration_s = 0.1,
	    .interval_s = 0.01,
	    .start_unix_us = 1700000000000000ULL,
	    .ticks = 10,
	    .samples = 10,
	};
	return p;
}

static void test_flamegraph(const struct pyd_profile *p, const char *dir)
{
	static const char open[] =
	    "<script type=\"application/json\" id=\"pyd-data\">";
	struct pyd_buf b = {0};
	pyd_report_prof_flamegraph(&b, p, 0);
	CHECK_EQ(b.failed, 0);
	const char *data = b.data ? strstr(b.data, open) : NULL;
	CHECK_EQ(data != NULL, 1);
	if (data) {
		data += sizeof open - 1;
		const char *end = strstr(data, "</script>");
		CHECK_EQ(end != NULL, 1);
		if (end) {
			CHECK_EQ(json_ok(data, (size_t)(end - data)), 1);
			CHECK_EQ(
			    memchr(data, '<', (size_t)(end - data)) == NULL, 1);
		}
		/* The evil name, as name and as label. */
		CHECK_EQ(count(data, "\\u003c/script>\\u003c!--"), 2);
	}
	CHECK_EQ(b.data && strstr(b.data, "@PYD_DATA@") == NULL, 1);
	/* The page fetches nothing. */
	CHECK_EQ(b.data && !strstr(b.data, "http://") &&
	             !strstr(b.data, "https://") && !strstr(b.data, " src="),
	         1);
	if (dir)
		check_save(dir, "profile.html", b.data, b.len);
	pyd_buf_free(&b);
}

static void test_speedscope(const struct pyd_profile *p, const char *dir)
{
	struct pyd_buf b = {0};
	pyd_report_prof_speedscope(&b, p, 0);
	CHECK_EQ(b.failed, 0);
	CHECK_EQ(json_ok(b.data, b.len), 1);
	CHECK_EQ(count(b.data, "\"type\": \"sampled\""), 2);
	CHECK_EQ(count(b.data, "\"unit\": \"seconds\""), 2);
	/* Main thread: main>mid>leaf x5, main>mid x1, main>mid>EVIL x1. */
	CHECK_EQ(count(b.data, "\"weights\": [0.01, 0.05, 0.01]") +
	             count(b.data, "\"weights\": [0.01, 0.01, 0.05]") +
	             count(b.data, "\"weights\": [0.05, 0.01, 0.01]"),
	         1);
	CHECK_EQ(count(b.data, "\"name\": \"<task Task-2>\""), 1);
	if (dir)
		check_save(dir, "profile.speedscope.json", b.data, b.len);
	pyd_buf_free(&b);
}

static void test_gecko(const struct pyd_profile *p, const char *dir)
{
	struct pyd_buf b = {0};
	pyd_report_prof_gecko(&b, p, 0);
	CHECK_EQ(b.failed, 0);
	CHECK_EQ(json_ok(b.data, b.len), 1);
	CHECK_EQ(count(b.data, "\"weightType\": \"samples\""), 2);
	CHECK_EQ(count(b.data, "\"isMainThread\": true"), 1);
	/* The awaiting sleep samples went to a twin stack: Awaiting is
	 * category 3. */
	CHECK_EQ(count(b.data, "\"weight\": [1,2]"), 1);
	CHECK_EQ(count(b.data, "\"category\": [2,1,1,3]"), 1);
	if (dir)
		check_save(dir, "profile.gecko.json", b.data, b.len);
	pyd_buf_free(&b);
}

/* The bytes of literal s (NULs included) are somewhere in b. */
#define HAS_BYTES(b, s) has_bytes((b), (s), sizeof(s) - 1)

static bool has_bytes(const struct pyd_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i + n <= b->len; i++)
		if (!memcmp(b->data + i, s, n))
			return true;
	return false;
}

/* marshal's dict of functions: each key a tuple (file, first line,
 * name); the task is named like a built-in. */
static void test_pstats(const struct pyd_profile *p, const char *dir)
{
	struct pyd_buf b = {0};
	pyd_report_prof_pstats(&b, p, 0);
	CHECK_EQ(b.failed, 0);
	CHECK_EQ(b.len > 2 && b.data[0] == '{' && b.data[b.len - 1] == '0', 1);
	/* leaf, by its first line, not the line sampled (30). */
	CHECK_EQ(HAS_BYTES(&b, "u\x09\0\0\0/app/x.pyi\x1c\0\0\0"
	                       "u\x0a\0\0\0Outer.leaf"),
	         1);
	CHECK_EQ(HAS_BYTES(&b, "u\x01\0\0\0~i\0\0\0\0u\x0d\0\0\0<task Task-2>"), 1);
	if (dir)
		check_save(dir, "profile.pstats", b.data, b.len);
	pyd_buf_free(&b);
}

/* With processes kept apart (sample --subprocesses), each viewer shows
 * which process a thread is of. */
static void test_by_process(const char *dir)
{
	struct pyd_profile *p = make_profile();
	const struct pyd_frame job[] = {FRAME("job", "job", "/app/w.py", 3, 1)};
	CHECK_EQ(pyd_profile_process(p, 77, 4242, "python3 worker.py", "3.12.1"), 1);
	pyd_profile_add(p, 1, 100, "MainThread", job, 1, false);
	pyd_profile_finish(p);
	p->by_process = true;
	struct pyd_buf b = {0};
	pyd_report_prof_speedscope(&b, p, 0);
	CHECK_EQ(json_ok(b.data, b.len), 1);
	CHECK_EQ(count(b.data, "\"name\": \"process 77 (python3 worker.py): "
	                       "MainThread (100)\""),
	         1);
	CHECK_EQ(count(b.data, "\"name\": \"process 4242 (python3 main.py): "
	                       "MainThread (100)\""),
	         1);
	pyd_buf_free(&b);
	pyd_report_prof_gecko(&b, p, 0);
	CHECK_EQ(json_ok(b.data, b.len), 1);
	CHECK_EQ(count(b.data, "\"pid\": \"77\""), 1);
	CHECK_EQ(count(b.data, "\"processName\": \"process 77 (python3 worker.py)\""),
	         1);
	CHECK_EQ(count(b.data, "\"isMainThread\": true"), 2);
	pyd_buf_free(&b);
	struct pyd_profile *m = pyd_profile_view(p, PYD_PROF_NONE, false, true);
	pyd_report_prof_flamegraph(&b, m, 0);
	CHECK_EQ(count(b.data, "[0, \"all threads\", "), 2);
	CHECK_EQ(count(b.data, "\"process 77 (python3 worker.py)\"]"), 1);
	pyd_buf_free(&b);
	pyd_report_prof_json(&b, m, 0);
	CHECK_EQ(json_ok(b.data, b.len), 1);
	CHECK_EQ(count(b.data, "{\"pid\": 77, \"ppid\": 4242, \"cmdline\": "
	                       "\"python3 worker.py\""),
	         1);
	pyd_buf_free(&b);
	pyd_report_prof_table(&b, m, 0);
	pyd_buf_put(&b, "", 1);
	CHECK_EQ(count(b.data, "Profile of process "), 2);
	CHECK_EQ(count(b.data, "Command: python3 worker.py\nParent: 4242\n"), 1);
	pyd_buf_free(&b);
	/* Each process a function calling its outermost ones. */
	pyd_report_prof_pstats(&b, m, 0);
	CHECK_EQ(HAS_BYTES(&b, "u\x01\0\0\0~i\0\0\0\0u\x20\0\0\0"
	                       "<process 77 (python3 worker.py)>"),
	         1);
	if (dir)
		check_save(dir, "processes.pstats", b.data, b.len);
	pyd_buf_free(&b);
	pyd_profile_free(m);
	pyd_profile_free(p);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : NULL;
	struct pyd_profile *p = make_profile();
	CHECK_EQ(p != NULL, 1);
	if (p) {
		test_flamegraph(p, dir);
		test_speedscope(p, dir);
		test_gecko(p, dir);
		test_pstats(p, dir);
		test_by_process(dir);
	}
	if (p && dir) {
		struct pyd_buf b = {0};
		pyd_report_prof_json(&b, p, 0);
		check_save(dir, "profile.json", b.data, b.len);
		pyd_buf_free(&b);
	}
	pyd_profile_free(p);
	return check_done("test_profile_formats");
}
