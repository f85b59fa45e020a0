/*
 * The gdb plugin's request parser: what it makes of a request gdb really
 * wrote (tests/fixtures/gdb-request.txt: py-bt -n on a 3.12 process with
 * three threads, gathered by the command file's commands), and that
 * thousands of damaged copies of it parse without a crash or a leak (run
 * under ASan in CI: the parser reads text gdb prints for people).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../gdb-plugin/request.h"
#include "check.h"

#define MUTATIONS 20000

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long n = -1;
	if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) &&
	    fread(text, 1, (size_t)n, f) == (size_t)n) {
		text[n] = 0;
		*len = (size_t)n;
	} else {
		free(text);
		text = NULL;
	}
	if (f)
		fclose(f);
	return text;
}

static bool has_eval_frame(const struct gdb_request *r)
{
	for (size_t i = 0; i < r->nnative; i++)
		if (r->native[i].function &&
		    !strcmp(r->native[i].function, "_PyEval_EvalFrameDefault"))
			return true;
	return false;
}

static bool maps_libpython(const struct gdb_request *r)
{
	for (size_t i = 0; i < r->nmaps; i++)
		if (r->maps[i].path && strstr(r->maps[i].path, "libpython3.12"))
			return true;
	return false;
}

static void test_real_request(const char *text, size_t len)
{
	struct gdb_request r;
	char *copy = malloc(len + 1);
	memcpy(copy, text, len + 1);
	CHECK_EQ(gdb_request_parse(copy, &r), true);
	CHECK_EQ(r.name && !strcmp(r.name, "py-bt"), true);
	CHECK_EQ(strstr(r.args, "-n") != NULL, true);
	CHECK_EQ(r.cli && !strcmp(r.cli, "/usr/bin/pystack-dump"), true);
	CHECK_EQ(r.kind, GDB_TARGET_PROCESS);
	CHECK_EQ(r.pid, 2173);
	CHECK_EQ(r.selected, 2173);
	CHECK_EQ(r.nthreads, 3);
	CHECK_EQ(r.nthreads == 3 && r.threads[2].tid == 2176, true);
	CHECK_EQ(r.nmaps > 20, true);
	CHECK_EQ(maps_libpython(&r), true);
	CHECK_EQ(r.nnative >= 7, true);
	CHECK_EQ(r.nnative && r.native[0].pc == 0x00007feebc942193ULL, true);
	CHECK_EQ(has_eval_frame(&r), true);
	gdb_request_free(&r);
}

/* A small, seeded generator: the same damage on every run. */
static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Flip, blank, cut or sprinkle gdb's section markers and separators. */
static size_t damage(char *s, size_t len)
{
	static const char noise[] = "@\n 0x()*#:.-\t";
	size_t edits = 1 + next() % 16;
	for (size_t i = 0; i < edits && len; i++) {
		size_t at = next() % len;
		switch (next() % 4) {
		case 0:
			s[at] = (char)(next() & 0xff);
			break;
		case 1:
			s[at] = noise[next() % (sizeof noise - 1)];
			break;
		case 2:
			len = at;
			break;
		case 3:
			memset(s + at, '9', len - at < 24 ? len - at : 24);
			break;
		}
	}
	s[len] = 0;
	/* A NUL inside ends the text early, as a short read would. */
	return len;
}

static void test_damaged_requests(const char *text, size_t len)
{
	size_t parsed = 0;
	for (int i = 0; i < MUTATIONS; i++) {
		char *copy = malloc(len + 1);
		memcpy(copy, text, len + 1);
		damage(copy, len);
		struct gdb_request r;
		parsed += gdb_request_parse(copy, &r);
		gdb_request_free(&r);
	}
	/* Most keep their @cmd line: the parser got to work on them. */
	CHECK_EQ(parsed > MUTATIONS / 2, true);
}

/* A core's target: its file from `maint info sections`. */
static void test_core_target(void)
{
	char text[] = "@cli /usr/bin/pystack-dump\n@args\n@cmd py-bt\n"
		      "@target\nThe current target stack is:\n"
		      "  - core (Local core dump file)\n"
		      "Exec file: `/usr/bin/python3', file type elf64-x86-64.\n"
		      "Core file: `/tmp/core.12', file type elf64-x86-64.\n"
		      "@end\n";
	struct gdb_request r;
	CHECK_EQ(gdb_request_parse(text, &r), true);
	CHECK_EQ(r.kind, GDB_TARGET_CORE);
	CHECK_EQ(r.core && !strcmp(r.core, "/tmp/core.12"), true);
	r.text = NULL; /* on the stack */
	gdb_request_free(&r);
}

/* A request is whole once its @end line is in: cut before it, it is not. */
static void test_whole(const char *text)
{
	CHECK_EQ(gdb_request_whole(text), true);
	const char *end = strstr(text, "\n" GDB_REQUEST_END "\n");
	CHECK_EQ(end != NULL, true);
	if (!end)
		return;
	char *cut = strndup(text, (size_t)(end - text) + 1);
	CHECK_EQ(gdb_request_whole(cut), false);
	free(cut);
}

int main(int argc, char **argv)
{
	size_t len = 0;
	/* meson gives the fixture's path; from the repository, it is here. */
	const char *path =
	    argc > 1 ? argv[1] : "tests/fixtures/gdb-request.txt";
	char *text = slurp(path, &len);
	CHECK_EQ(text != NULL, true);
	if (text) {
		test_real_request(text, len);
		test_whole(text);
		test_core_target();
		test_damaged_requests(text, len);
	}
	free(text);
	return check_done("test_gdb_request");
}
