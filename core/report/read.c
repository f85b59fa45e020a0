/*
 * Reading profiles back (pyd_profile_read): one table of readers, each
 * claiming a file by its first bytes, and the reader of collapsed stacks.
 * A new input format is a reader and a row here (a recording's is
 * recording.c's).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "profiles.h"
#include "read.h"

/* ZSTD_MAGICNUMBER, little-endian: a recording (sample -f raw). */
static bool starts_zstd(const char *text, size_t len)
{
	return len >= 4 && !memcmp(text, "\x28\xb5\x2f\xfd", 4);
}

static bool starts_json(const char *text, size_t len)
{
	(void)len;
	text += strspn(text, " \t\r\n");
	return *text == '{';
}

/* Any text: the last row, after every format with a signature. */
static bool is_text(const char *text, size_t len)
{
	return strlen(text) == len;
}

static const struct reader {
	const char *name;
	bool (*claims)(const char *text, size_t len);
	pyd_prof_reader read;
} readers[] = {
    {"raw", starts_zstd, pyd_read_prof_raw},
    {"json", starts_json, pyd_read_prof_json},
    {"collapsed", is_text, pyd_read_prof_collapsed},
};

enum pyd_err pyd_profile_read(const char *data, size_t len,
                              struct pyd_profile **out, char *detail,
                              size_t detailsz)
{
	*out = NULL;
	if (!len) {
		snprintf(detail, detailsz, "the file is empty");
		return PYD_E_PROFILE;
	}
	char *text = malloc(len + 1);
	if (!text)
		return PYD_E_NOMEM;
	memcpy(text, data, len);
	text[len] = 0;
	enum pyd_err err = PYD_E_PROFILE;
	snprintf(detail, detailsz, "binary data of no format it reads");
	for (size_t i = 0; i < sizeof readers / sizeof *readers; i++)
		if (readers[i].claims(text, len)) {
			err = readers[i].read(text, len, out, detail, detailsz);
			break;
		}
	free(text);
	return err;
}

/* ---- collapsed stacks ---- */

struct collapsed {
	struct pyd_profile *p;
	size_t lineno;
	bool threads;   /* lines start with "Thread TID (NAME)" */
	bool processes; /* ... with "process PID (CMDLINE)" */
	char *detail;
	size_t detailsz;
};

void pyd_read_why(char *detail, size_t detailsz, const char *where,
                  size_t at, const char *fmt, va_list ap)
{
	int n = snprintf(detail, detailsz, "%s %zu: ", where, at);
	if (n > 0 && (size_t)n < detailsz)
		vsnprintf(detail + n, detailsz - (size_t)n, fmt, ap);
}

static enum pyd_err bad(struct collapsed *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pyd_read_why(c->detail, c->detailsz, "line", c->lineno, fmt, ap);
	va_end(ap);
	return PYD_E_PROFILE;
}

/* "WORD NUMBER (REST)" or "WORD NUMBER": the number and REST (or "")
 * when s is one, for the "process" and "Thread" steps. */
static bool tagged(char *s, const char *word, long long *num, char **rest)
{
	size_t n = strlen(word);
	if (strncmp(s, word, n) || s[n] != ' ')
		return false;
	char *end;
	*num = strtoll(s + n + 1, &end, 10);
	if (end == s + n + 1)
		return false;
	size_t left = strlen(end);
	if (!left) {
		*rest = end;
		return true;
	}
	if (strncmp(end, " (", 2) || end[left - 1] != ')')
		return false;
	end[left - 1] = 0;
	*rest = end + 2;
	return true;
}

/* A frame as pyd_prof_frame_label wrote it, cut apart in place. */
static struct pyd_prof_frame parse_frame(char *s)
{
	size_t n = strlen(s);
	struct pyd_prof_frame f = {.function = s, .kind = PYD_PF_PYTHON};
	if (!strncmp(s, "<task ", 6) && n > 7 && s[n - 1] == '>') {
		s[n - 1] = 0;
		f.function = s + 6;
		f.kind = PYD_PF_TASK;
		return f;
	}
	if (!strncmp(s, "<greenlet ", 10) && s[n - 1] == '>') {
		f.kind = PYD_PF_TASK; /* greenlet mode's boundary, whole */
		return f;
	}
	if (!strncmp(s, "<truncated ", 11) && s[n - 1] == '>') {
		f.kind = PYD_PF_ELIDED;
		return f;
	}
	char *open = NULL;
	for (char *o = strstr(s, " ("); o; o = strstr(o + 1, " ("))
		open = o;
	/* A frame of another tool's, not "NAME (FILE...)": its file is
	 * unknown. */
	f.file = "?";
	if (!open || s[n - 1] != ')')
		return f;
	*open = 0;
	s[n - 1] = 0;
	f.file = open + 2;
	char *colon = strrchr(f.file, ':');
	if (colon && colon[1] && strspn(colon + 1, "0123456789") ==
	                             strlen(colon + 1)) {
		*colon = 0;
		f.line = atoi(colon + 1);
	}
	return f;
}

static uint32_t process_of(struct pyd_profile *p, int pid, const char *cmd)
{
	for (uint32_t i = 0; i < p->nprocesses; i++)
		if (p->processes[i].pid == pid)
			return i;
	return pyd_profile_process(p, pid, 0, cmd, NULL);
}

/* The thread node a stack starts from; *used: how many of its leading
 * steps (process, thread) said so. */
static uint32_t thread_of(struct collapsed *c, char **steps, size_t n,
                          size_t *used)
{
	long long num;
	char *rest;
	int pid = 0;
	const char *cmd = NULL;
	*used = 0;
	if (n && tagged(steps[0], "process", &num, &rest)) {
		pid = (int)num;
		cmd = rest;
		*used = 1;
		c->processes = true;
	}
	uint32_t proc = process_of(c->p, pid, cmd);
	if (proc == PYD_PROF_NONE)
		return PYD_PROF_NONE;
	if (*used < n && tagged(steps[*used], "Thread", &num, &rest)) {
		c->threads = true;
		(*used)++;
		return pyd_profile_thread_node(c->p, proc, num, rest);
	}
	return pyd_profile_thread_node(c->p, proc, 0, "all threads");
}

/* "a;b;c COUNT": the frames outermost first, then the samples. */
static enum pyd_err collapsed_line(struct collapsed *c, char *line,
                                   char ***steps, size_t *cap)
{
	char *sp = strrchr(line, ' '), *end;
	unsigned long long count = sp ? strtoull(sp + 1, &end, 10) : 0;
	if (!sp || end == sp + 1 || *end || sp[1] == '-')
		return bad(c, "no sample count at the end of \"%.60s\"", line);
	*sp = 0;
	size_t n = 0, used;
	for (char *s = line, *semi; s; s = semi ? semi + 1 : NULL) {
		if ((semi = strchr(s, ';')))
			*semi = 0;
		if (!pyd_grow((void **)steps, cap, n + 1, sizeof **steps))
			return PYD_E_NOMEM;
		(*steps)[n++] = s;
	}
	uint32_t node = thread_of(c, *steps, n, &used);
	for (size_t i = used; i < n && node != PYD_PROF_NONE; i++) {
		if (!*(*steps)[i])
			return bad(c, "an empty frame in \"%.60s\"", line);
		struct pyd_prof_frame f = parse_frame((*steps)[i]);
		node = pyd_profile_child(c->p, node, &f);
	}
	if (node == PYD_PROF_NONE)
		return PYD_E_NOMEM;
	c->p->nodes[node].self += count;
	return PYD_OK;
}

enum pyd_err pyd_read_prof_collapsed(char *text, size_t len,
                                     struct pyd_profile **out, char *detail,
                                     size_t detailsz)
{
	(void)len;
	struct collapsed c = {.p = pyd_profile_new(true, 0),
	                      .detail = detail,
	                      .detailsz = detailsz};
	char **steps = NULL;
	size_t cap = 0, stacks = 0;
	enum pyd_err err = c.p ? PYD_OK : PYD_E_NOMEM;
	for (char *line = text, *nl; line && !err; line = nl ? nl + 1 : NULL) {
		if ((nl = strchr(line, '\n')))
			*nl = 0;
		c.lineno++;
		line[strcspn(line, "\r")] = 0;
		if (!line[strspn(line, " \t")])
			continue;
		err = collapsed_line(&c, line, &steps, &cap);
		stacks++;
	}
	free(steps);
	if (!err && !stacks) {
		snprintf(detail, detailsz, "no stacks in it");
		err = PYD_E_PROFILE;
	}
	if (err) {
		pyd_profile_free(c.p);
		return err;
	}
	pyd_profile_finish(c.p);
	c.p->merged = !c.threads;
	c.p->by_process = c.processes;
	c.p->threads_merged = c.p->nthreads;
	c.p->meta.samples = c.p->nodes[0].total;
	c.p->meta.pid = c.p->nprocesses ? c.p->processes[0].pid : 0;
	*out = c.p;
	return PYD_OK;
}
