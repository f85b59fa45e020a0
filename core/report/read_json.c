/*
 * Reading back the JSON tree pyd_report_prof_json writes
 * (docs/profile-formats.md): a small parser over the text, decoding
 * strings in place, then the tree rebuilt node by node.  Members it does
 * not know are skipped, so later versions with more members still read.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grow.h"
#include "profiles.h"
#include "read.h"

/* Deeper values are not a profile: it nests three levels. */
#define MAX_DEPTH 32

struct jp {
	char *s;
	const char *start;
	bool failed;
	char *detail;
	size_t detailsz;
};

static bool fail(struct jp *j, const char *fmt, ...)
{
	if (j->failed)
		return false;
	j->failed = true;
	va_list ap;
	va_start(ap, fmt);
	pyd_read_why(j->detail, j->detailsz, "at byte",
	             (size_t)(j->s - j->start), fmt, ap);
	va_end(ap);
	return false;
}

/* Skip blanks; true if the next character is c, then taken. */
static bool eat(struct jp *j, char c)
{
	j->s += strspn(j->s, " \t\r\n");
	if (*j->s != c)
		return false;
	j->s++;
	return true;
}

static bool expect(struct jp *j, char c)
{
	return eat(j, c) || fail(j, "expected '%c'", c);
}

static bool word(struct jp *j, const char *w)
{
	size_t n = strlen(w);
	j->s += strspn(j->s, " \t\r\n");
	if (strncmp(j->s, w, n))
		return false;
	j->s += n;
	return true;
}

static void put_utf8(char **w, unsigned cp)
{
	unsigned char *o = (unsigned char *)*w;
	if (cp < 0x80) {
		*o++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*o++ = (unsigned char)(0xc0 | cp >> 6);
		*o++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (unsigned char)(0xe0 | cp >> 12);
		*o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (unsigned char)(0xf0 | cp >> 18);
		*o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (unsigned char)(0x80 | (cp & 0x3f));
	}
	*w = (char *)o;
}

static bool hex4(struct jp *j, const char *s, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			return fail(j, "bad \\u escape");
		*v = *v << 4 | (unsigned)d;
	}
	return true;
}

/* One escape after the backslash at r, written at *w; r past it. */
static bool unescape(struct jp *j, char **r, char **w)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e = strchr(from, **r);
	if (**r && e) {
		*(*w)++ = to[e - from];
		(*r)++;
		return true;
	}
	unsigned cp, lo;
	if (**r != 'u' || !hex4(j, *r + 1, &cp))
		return j->failed || fail(j, "bad escape");
	*r += 5;
	if (cp >= 0xd800 && cp < 0xdc00 && (*r)[0] == '\\' && (*r)[1] == 'u' &&
	    hex4(j, *r + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		*r += 6;
	}
	put_utf8(w, cp);
	return true;
}

/* A string (decoded in place; the decoding is never longer) or null:
 * *out NULL. */
static bool string(struct jp *j, char **out)
{
	*out = NULL;
	if (word(j, "null"))
		return true;
	if (!expect(j, '"'))
		return false;
	char *r = j->s, *w = j->s;
	*out = w;
	while (*r != '"') {
		if (!*r || (unsigned char)*r < 0x20)
			return fail(j, "unterminated string");
		if (*r != '\\')
			*w++ = *r++;
		else if (r++, !unescape(j, &r, &w))
			return false;
	}
	j->s = r + 1;
	*w = 0;
	return true;
}

/* A JSON number as the integer a field holds, 0 where it cannot be one
 * (negative counts, NaN, out of range: converting those is undefined). */
static uint64_t to_count(double v)
{
	return v >= 0 && v < 0x1p63 ? (uint64_t)v : 0;
}

static int to_int(double v)
{
	return v > INT_MIN && v < INT_MAX ? (int)v : 0;
}

static int64_t to_i64(double v)
{
	return v > -0x1p63 && v < 0x1p63 ? (int64_t)v : 0;
}

static bool number(struct jp *j, double *v)
{
	char *end;
	j->s += strspn(j->s, " \t\r\n");
	*v = strtod(j->s, &end);
	if (end == j->s)
		return fail(j, "expected a number");
	j->s = end;
	return true;
}

static bool boolean(struct jp *j, bool *v)
{
	if (word(j, "true"))
		return (*v = true);
	if (word(j, "false"))
		return !(*v = false);
	return fail(j, "expected true or false");
}

static bool skip(struct jp *j, int depth);

/* The members of an object, each handed to member (which reads its
 * value, or returns false having not): unknown ones are skipped. */
static bool members(struct jp *j, int depth,
                    bool (*member)(struct jp *, const char *, void *),
                    void *ctx)
{
	if (!expect(j, '{'))
		return false;
	if (eat(j, '}'))
		return true;
	do {
		char *key;
		if (!string(j, &key))
			return false;
		if (!key)
			return fail(j, "expected a member name");
		if (!expect(j, ':'))
			return false;
		if (!member(j, key, ctx) && (j->failed || !skip(j, depth + 1)))
			return false;
	} while (eat(j, ','));
	return expect(j, '}');
}

static bool skip_member(struct jp *j, const char *key, void *ctx)
{
	(void)j, (void)key, (void)ctx;
	return false;
}

static bool skip(struct jp *j, int depth)
{
	double d;
	char *s;
	bool b;
	if (depth > MAX_DEPTH)
		return fail(j, "nested too deep");
	j->s += strspn(j->s, " \t\r\n");
	switch (*j->s) {
	case '{':
		return members(j, depth, skip_member, NULL);
	case '[':
		j->s++;
		if (eat(j, ']'))
			return true;
		do
			if (!skip(j, depth + 1))
				return false;
		while (eat(j, ','));
		return expect(j, ']');
	case '"':
	case 'n':
		return string(j, &s);
	case 't':
	case 'f':
		return boolean(j, &b);
	default:
		return number(j, &d);
	}
}

/* Each element of an array, read by one (ctx, its index). */
static bool elements(struct jp *j, bool (*one)(struct jp *, void *, size_t),
                     void *ctx)
{
	if (!expect(j, '['))
		return false;
	if (eat(j, ']'))
		return true;
	size_t i = 0;
	do
		if (!one(j, ctx, i++))
			return false;
	while (eat(j, ','));
	return expect(j, ']');
}

/* ---- the document ---- */

struct jthread {
	double tid, pid, node;
	char *name;
};

struct jprocess {
	double pid, ppid;
	char *cmdline, *version;
	bool exited;
};

struct jnode {
	double parent, frame, self, self_await; /* frame -1: null */
};

struct doc {
	char *format, *version_str, *mode;
	double version, pid, rate, duration, interval, start, ticks, samples,
	    errors, missed, reads, cpu, awaiting;
	bool lines, truncated;
	struct pyd_prof_frame *frames;
	struct jthread *threads;
	struct jprocess *processes;
	struct jnode *nodes;
	size_t nframes, nthreads, nprocesses, nnodes;
	size_t frames_cap, threads_cap, processes_cap, nodes_cap;
	/* the element being read */
	union {
		struct pyd_prof_frame *frame;
		struct jthread *thread;
		struct jprocess *process;
		struct jnode *node;
	} at;
};

/* A member of a struct: its name, where it goes and how to read it. */
struct field {
	const char *key;
	enum { NUM, STR, BOOL } kind;
	size_t at;
};

static bool field(struct jp *j, const char *key, void *base,
                  const struct field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(key, f[i].key))
			continue;
		void *to = (char *)base + f[i].at;
		return f[i].kind == NUM   ? number(j, to)
		       : f[i].kind == STR ? string(j, to)
		                          : boolean(j, to);
	}
	return false;
}

#define FIELDS(base, ...)                                                      \
	static const struct field fields[] = {__VA_ARGS__};                    \
	return field(j, key, (base), fields, sizeof fields / sizeof *fields)

static bool frame_member(struct jp *j, const char *key, void *ctx)
{
	struct pyd_prof_frame *f = ((struct doc *)ctx)->at.frame;
	if (!strcmp(key, "kind")) {
		char *kind;
		if (!string(j, &kind))
			return false;
		f->kind = PYD_PF_PYTHON;
		for (int k = 0; kind && k <= PYD_PF_GC; k++)
			if (!strcmp(kind, pyd_prof_kind_names[k]))
				f->kind = (enum pyd_prof_frame_kind)k;
		return true;
	}
	if (!strcmp(key, "line")) {
		double v;
		if (!number(j, &v))
			return false;
		f->line = to_int(v);
		return true;
	}
	FIELDS(f, {"function", STR, offsetof(struct pyd_prof_frame, function)},
	       {"qualname", STR, offsetof(struct pyd_prof_frame, qualname)},
	       {"file", STR, offsetof(struct pyd_prof_frame, file)});
}

static bool thread_member(struct jp *j, const char *key, void *ctx)
{
	FIELDS(((struct doc *)ctx)->at.thread,
	       {"tid", NUM, offsetof(struct jthread, tid)},
	       {"pid", NUM, offsetof(struct jthread, pid)},
	       {"node", NUM, offsetof(struct jthread, node)},
	       {"name", STR, offsetof(struct jthread, name)});
}

static bool process_member(struct jp *j, const char *key, void *ctx)
{
	FIELDS(((struct doc *)ctx)->at.process,
	       {"pid", NUM, offsetof(struct jprocess, pid)},
	       {"ppid", NUM, offsetof(struct jprocess, ppid)},
	       {"cmdline", STR, offsetof(struct jprocess, cmdline)},
	       {"python_version", STR, offsetof(struct jprocess, version)},
	       {"exited", BOOL, offsetof(struct jprocess, exited)});
}

static bool node_member(struct jp *j, const char *key, void *ctx)
{
	struct jnode *n = ((struct doc *)ctx)->at.node;
	if (!strcmp(key, "frame") && word(j, "null")) {
		n->frame = -1;
		return true;
	}
	FIELDS(n, {"parent", NUM, offsetof(struct jnode, parent)},
	       {"frame", NUM, offsetof(struct jnode, frame)},
	       {"self", NUM, offsetof(struct jnode, self)},
	       {"self_await", NUM, offsetof(struct jnode, self_await)});
}

/* An element of one of the arrays: room for it, zeroed, then its
 * members. */
#define ELEMENT(name, array, count, cap, member)                               \
	static bool name(struct jp *j, void *ctx, size_t i)                    \
	{                                                                      \
		struct doc *d = ctx;                                           \
		(void)i;                                                       \
		if (!pyd_grow((void **)&d->array, &d->cap, d->count + 1,       \
		              sizeof *d->array))                               \
			return fail(j, "out of memory");                       \
		d->at.member = memset(&d->array[d->count++], 0,                \
		                      sizeof *d->array);                       \
		return members(j, 2, member##_member, d);                      \
	}
ELEMENT(frame_element, frames, nframes, frames_cap, frame)
ELEMENT(thread_element, threads, nthreads, threads_cap, thread)
ELEMENT(process_element, processes, nprocesses, processes_cap, process)
ELEMENT(node_element, nodes, nnodes, nodes_cap, node)

static bool doc_member(struct jp *j, const char *key, void *ctx)
{
	struct doc *d = ctx;
	static const struct {
		const char *key;
		bool (*one)(struct jp *, void *, size_t);
	} arrays[] = {{"frames", frame_element},
	              {"threads", thread_element},
	              {"processes", process_element},
	              {"nodes", node_element}};
	for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
		if (!strcmp(key, arrays[i].key))
			return elements(j, arrays[i].one, d);
	FIELDS(d, {"format", STR, offsetof(struct doc, format)},
	       {"version", NUM, offsetof(struct doc, version)},
	       {"pid", NUM, offsetof(struct doc, pid)},
	       {"python_version", STR, offsetof(struct doc, version_str)},
	       {"mode", STR, offsetof(struct doc, mode)},
	       {"lines", BOOL, offsetof(struct doc, lines)},
	       {"rate_hz", NUM, offsetof(struct doc, rate)},
	       {"duration_s", NUM, offsetof(struct doc, duration)},
	       {"interval_s", NUM, offsetof(struct doc, interval)},
	       {"start_unix_us", NUM, offsetof(struct doc, start)},
	       {"ticks", NUM, offsetof(struct doc, ticks)},
	       {"samples", NUM, offsetof(struct doc, samples)},
	       {"errors", NUM, offsetof(struct doc, errors)},
	       {"missed", NUM, offsetof(struct doc, missed)},
	       {"reads", NUM, offsetof(struct doc, reads)},
	       {"cpu_samples", NUM, offsetof(struct doc, cpu)},
	       {"await_samples", NUM, offsetof(struct doc, awaiting)},
	       {"truncated", BOOL, offsetof(struct doc, truncated)});
}

/* ---- the tree ---- */

static bool index_ok(double v, size_t n)
{
	return v >= 0 && v < (double)n && v == (double)(size_t)v;
}

static bool count_ok(double v)
{
	return v >= 0 && v < 0x1p63 && v == (double)(uint64_t)v;
}


static bool add_processes(struct pyd_profile *p, const struct doc *d)
{
	for (size_t i = 0; i < d->nprocesses; i++) {
		const struct jprocess *pr = &d->processes[i];
		if (pyd_profile_process(p, to_int(pr->pid), to_int(pr->ppid),
		                        pr->cmdline, pr->version) ==
		    PYD_PROF_NONE)
			return false;
		p->processes[i].exited = pr->exited;
	}
	return d->nprocesses ||
	       pyd_profile_process(p, to_int(d->pid), 0, NULL, d->version_str) !=
	           PYD_PROF_NONE;
}

static uint32_t process_index(const struct pyd_profile *p, double pid)
{
	for (uint32_t i = 0; i < p->nprocesses; i++)
		if (p->processes[i].pid == to_int(pid))
			return i;
	return 0;
}

/* map: the document's node index -> the profile's; threads first. */
static enum pyd_err add_nodes(struct pyd_profile *p, const struct doc *d,
                              uint32_t *map, char *detail, size_t detailsz)
{
	for (size_t i = 0; i < d->nnodes; i++)
		map[i] = i ? PYD_PROF_NONE : 0;
	for (size_t i = 0; i < d->nthreads; i++) {
		const struct jthread *t = &d->threads[i];
		if (!index_ok(t->node, d->nnodes) || t->node < 1) {
			snprintf(detail, detailsz, "thread %zu has no node", i);
			return PYD_E_PROFILE;
		}
		map[(size_t)t->node] = pyd_profile_thread_node(
		    p, process_index(p, t->pid), to_i64(t->tid), t->name);
		if (map[(size_t)t->node] == PYD_PROF_NONE)
			return PYD_E_NOMEM;
	}
	for (size_t i = 1; i < d->nnodes; i++) {
		const struct jnode *n = &d->nodes[i];
		bool thread = n->frame < 0;
		const char *why =
		    !index_ok(n->parent, i) ? "its parent does not come before it"
		    : thread && map[i] == PYD_PROF_NONE ? "no frame and no thread"
		    : !thread && !index_ok(n->frame, d->nframes) ? "no such frame"
		    : !thread && map[(size_t)n->parent] == PYD_PROF_NONE
		        ? "its parent is not in the tree"
		    : !count_ok(n->self) || !count_ok(n->self_await)
		        ? "bad sample counts"
		        : NULL;
		if (why) {
			snprintf(detail, detailsz, "node %zu: %s", i, why);
			return PYD_E_PROFILE;
		}
		if (!thread)
			map[i] = pyd_profile_child(p, map[(size_t)n->parent],
			                           &d->frames[(size_t)n->frame]);
		if (map[i] == PYD_PROF_NONE)
			return PYD_E_NOMEM;
		p->nodes[map[i]].self += (uint64_t)n->self;
		p->nodes[map[i]].self_await += (uint64_t)n->self_await;
	}
	return PYD_OK;
}

static void set_meta(struct pyd_profile *p, const struct doc *d)
{
	struct pyd_prof_meta *m = &p->meta;
	m->pid = to_int(d->pid);
	m->python_version =
	    p->nprocesses ? p->processes[0].python_version : NULL;
	if (!d->mode || !pyd_sample_mode_named(d->mode, &m->mode))
		m->mode = PYD_SAMPLE_WALL;
	m->rate_hz = d->rate;
	m->duration_s = d->duration;
	m->interval_s = d->interval;
	m->start_unix_us = to_count(d->start);
	m->ticks = to_count(d->ticks);
	m->samples = to_count(d->samples);
	m->errors = to_count(d->errors);
	m->missed = to_count(d->missed);
	m->reads = to_count(d->reads);
	m->cpu_samples = to_count(d->cpu);
	m->await_samples = to_count(d->awaiting);
	p->truncated = d->truncated;
	p->by_process = p->nprocesses > 1;
	/* As sample wrote it without --threads: "all threads", tid 0. */
	p->merged = true;
	for (size_t i = 0; i < p->nthreads; i++)
		p->merged &= !p->threads[i].tid;
	p->threads_merged = p->nthreads;
}

/* Labels need a function, and a file unless a task's or truncation's. */
static bool frames_ok(const struct doc *d, char *detail, size_t detailsz)
{
	for (size_t i = 0; i < d->nframes; i++) {
		const struct pyd_prof_frame *f = &d->frames[i];
		if (!f->function || (f->kind == PYD_PF_PYTHON && !f->file)) {
			snprintf(detail, detailsz, "frame %zu: no %s", i,
			         f->function ? "file" : "function");
			return false;
		}
	}
	return true;
}

static enum pyd_err build(const struct doc *d, struct pyd_profile **out,
                          char *detail, size_t detailsz)
{
	if (!frames_ok(d, detail, detailsz))
		return PYD_E_PROFILE;
	struct pyd_profile *p = pyd_profile_new(d->lines, 0);
	uint32_t *map = malloc((d->nnodes + 1) * sizeof *map);
	enum pyd_err err = PYD_E_NOMEM;
	if (p && map && add_processes(p, d))
		err = add_nodes(p, d, map, detail, detailsz);
	free(map);
	if (err) {
		pyd_profile_free(p);
		return err;
	}
	pyd_profile_finish(p);
	set_meta(p, d);
	*out = p;
	return PYD_OK;
}

enum pyd_err pyd_read_prof_json(char *text, size_t len,
                                struct pyd_profile **out, char *detail,
                                size_t detailsz)
{
	(void)len;
	struct jp j = {.s = text, .start = text, .detail = detail,
	               .detailsz = detailsz};
	struct doc d = {.lines = true};
	enum pyd_err err = PYD_E_PROFILE;
	if (!members(&j, 0, doc_member, &d))
		; /* j says why */
	else if (!d.format || strcmp(d.format, "pystack-dump-profile"))
		snprintf(detail, detailsz,
		         "JSON, but not a pystack-dump profile (\"format\": "
		         "\"pystack-dump-profile\"; sample -f json writes one)");
	else if (d.version != 1)
		snprintf(detail, detailsz, "a profile of version %g, not 1",
		         d.version);
	else if (!d.nnodes || d.nodes[0].parent >= 0)
		snprintf(detail, detailsz, "no root node");
	else
		err = build(&d, out, detail, detailsz);
	free(d.frames);
	free(d.threads);
	free(d.processes);
	free(d.nodes);
	return err;
}
