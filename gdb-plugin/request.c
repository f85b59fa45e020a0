/*
 * Parsing what gdb printed into the request (request.h).  gdb's output is
 * meant for people, so every parser here skips what it does not
 * recognise: a line it cannot read costs that line, never the request.
 */
#include "request.h"

#include "grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* "process 1234" in the selected inferior's line. */
static void parse_inferior(struct gdb_request *r, const char *line)
{
	const char *p = strstr(line, "process ");
	if (line[0] == '*' && p)
		r->pid = atoi(p + 8);
}

/*
 * The thread's id in an `info threads` target id, and where it ends:
 * "Thread 0x7f.. (LWP 12)", "LWP 12", "Thread 34.12" (remote),
 * "process 12" (a program without threads).
 */
static int64_t thread_id(const char *p, const char **end)
{
	const char *lwp = strstr(p, "LWP ");
	char *e;
	long long v;
	if (lwp) {
		v = strtoll(lwp + 4, &e, 10);
		*end = *e == ')' ? e + 1 : e;
		return v;
	}
	if (!strncmp(p, "Thread ", 7) && strncmp(p + 7, "0x", 2)) {
		v = strtoll(p + 7, &e, 10);
		if (*e == '.')
			v = strtoll(e + 1, &e, 10);
		*end = e;
		return v;
	}
	if (!strncmp(p, "process ", 8)) {
		v = strtoll(p + 8, &e, 10);
		*end = e;
		return v;
	}
	return 0;
}

/* "* 1    Thread 0x7f.. (LWP 12) "name" frame...": the name is quoted
 * right after the target id (cores have none). */
static void parse_thread(struct gdb_request *r, const char *line)
{
	const char *p = skip_blanks(line + 1), *end;
	if (*p < '0' || *p > '9')
		return;
	while (*p >= '0' && *p <= '9')
		p++;
	int64_t tid = thread_id(skip_blanks(p), &end);
	if (tid <= 0)
		return;
	if (!pyd_grow_one((void **)&r->threads, r->nthreads, sizeof *r->threads))
		return;
	struct pyd_os_thread *t = &r->threads[r->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	/* Stopped by gdb, or a core: nothing runs. */
	t->run = r->kind == GDB_TARGET_CORE ? PYD_RUN_UNKNOWN : PYD_RUN_IDLE;
	const char *q;
	if (end[0] == ' ' && end[1] == '"' && (q = strchr(end + 2, '"'))) {
		size_t n = (size_t)(q - end - 2);
		if (n >= sizeof t->name)
			n = sizeof t->name - 1;
		memcpy(t->name, end + 2, n);
	}
	if (line[0] == '*')
		r->selected = tid;
}

/*
 * `maint print target-stack`, one line a target, "  - native (Native
 * process)", "  - remote (...)", "  - extended-remote (...)"; and
 * `maint info sections` of no section, which names the files alone:
 * "Core file: `/path/core', file type elf64-x86-64." (`info target` says
 * the same in hundreds of lines, one a section of every library).
 */
static void parse_target(struct gdb_request *r, char *line)
{
	static const char core[] = "Core file: `";
	const char *p = skip_blanks(line);
	char *q;
	if (!strncmp(p, "- native ", 9))
		r->kind = GDB_TARGET_PROCESS;
	else if (!strncmp(p, "- remote ", 9) ||
	         !strncmp(p, "- extended-remote ", 18))
		r->kind = GDB_TARGET_REMOTE;
	else if (!strncmp(line, core, sizeof core - 1) &&
	         (q = strstr(line, "', file type"))) {
		*q = 0;
		r->core = line + sizeof core - 1;
		r->kind = GDB_TARGET_CORE;
	}
}

/* "The current system root is "/path"." -- unless it is the target's own
 * ("target:", gdb's default, or empty): a core's files are then opened
 * under it, as gdb opens them. */
static void parse_sysroot(struct gdb_request *r, char *line)
{
	char *p = strchr(line, '"'), *q = p ? strrchr(p + 1, '"') : NULL;
	if (!q)
		return;
	*q = 0;
	if (p[1] && strncmp(p + 1, "target:", 7))
		r->sysroot = p + 1;
}

static bool is_perms(const char *w)
{
	return strlen(w) == 4 && strspn(w, "rwxsp-") == 4;
}

/* "0x1000 0x2000 0x1000 0x0 [r-xp] [path]" (cores show no permissions). */
static void parse_mapping(struct gdb_request *r, char *line)
{
	unsigned long long v[4];
	char *p = line, *e;
	for (int i = 0; i < 4; i++) {
		p = (char *)skip_blanks(p);
		if (strncmp(p, "0x", 2))
			return;
		v[i] = strtoull(p, &e, 16);
		p = e;
	}
	if (!pyd_grow_one((void **)&r->maps, r->nmaps, sizeof *r->maps))
		return;
	struct pyd_mapping *m = &r->maps[r->nmaps++];
	memset(m, 0, sizeof *m);
	m->start = v[0];
	m->end = v[1];
	m->offset = v[3];
	p = (char *)skip_blanks(p);
	e = p + strcspn(p, " \t");
	if (e - p == 4 && (memcpy(m->perms, p, 4), is_perms(m->perms)))
		p = (char *)skip_blanks(e);
	else
		memset(m->perms, 0, sizeof m->perms);
	size_t n = strlen(p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		p[--n] = 0;
	m->path = *p && *p != '[' ? p : NULL;
}

/* "#3  0x00007f.. in name (args...) at file:line", "#0  name (...)". */
static void parse_frame(struct gdb_request *r, char *line)
{
	if (line[0] != '#')
		return;
	char *p =
	    (char *)skip_blanks(line + 1 + strspn(line + 1, "0123456789"));
	unsigned long long pc = 0;
	if (!strncmp(p, "0x", 2)) {
		pc = strtoull(p, &p, 16);
		if (strncmp(p, " in ", 4))
			return;
		p += 4;
	}
	if (!pyd_grow_one((void **)&r->native, r->nnative, sizeof *r->native))
		return;
	struct pyd_native_frame *f = &r->native[r->nnative++];
	p[strcspn(p, " (")] = 0;
	*f = (struct pyd_native_frame){
	    .pc = pc, .function = *p && strcmp(p, "??") ? p : NULL};
}

static void add_arg(struct gdb_request *r, const char *w)
{
	size_t n = strlen(r->args);
	snprintf(r->args + n, sizeof r->args - n, "%s%s", n ? " " : "", w);
}

bool gdb_request_parse(char *text, struct gdb_request *r)
{
	memset(r, 0, sizeof *r);
	r->text = text;
	char section[16] = "", *save;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '@') {
			snprintf(section, sizeof section, "%s", line + 1);
			section[strcspn(section, " ")] = 0;
			if (!strcmp(section, "cmd"))
				r->name = skip_blanks(line + 4);
			else if (!strcmp(section, "cli"))
				r->cli = skip_blanks(line + 4);
			continue;
		}
		if (!strcmp(section, "args"))
			add_arg(r, skip_blanks(line));
		else if (!strcmp(section, "inferiors"))
			parse_inferior(r, line);
		else if (!strcmp(section, "target"))
			parse_target(r, line);
		else if (!strcmp(section, "threads"))
			parse_thread(r, line);
		else if (!strcmp(section, "maps"))
			parse_mapping(r, line);
		else if (!strcmp(section, "sysroot"))
			parse_sysroot(r, line);
		else if (!strcmp(section, "bt"))
			parse_frame(r, line);
	}
	return r->name != NULL;
}

void gdb_request_free(struct gdb_request *r)
{
	free(r->maps);
	free(r->threads);
	free(r->native);
	free(r->text);
	memset(r, 0, sizeof *r);
}

bool gdb_request_whole(const char *text)
{
	return strstr(text, "\n" GDB_REQUEST_END "\n") != NULL;
}
