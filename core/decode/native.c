/*
 * Native stacks (pyd_dump_native), unwound by elfutils' libdwfl.
 *
 * The modules are the files the source's mappings name, opened through
 * the source (open_file: /proc/PID/root for a live process, --sysroot
 * and the mapped files for a core) and placed where their offset-0
 * mapping starts.  libdwfl unwinds with their CFI (.eh_frame,
 * .debug_frame) and names frames from their symbol tables, or from
 * DWARF (file:line) where debug info is installed; it reads memory and
 * each thread's first registers through the callbacks below, so the
 * same code serves a live process and a core.
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../memsrc/regs.h"
#include "session.h"

/* One OS thread, as libdwfl's thread argument. */
struct thread_ref {
	struct unwind *u;
	int64_t tid;
};

/* Where separate debug info is looked for: the host's, then the same
 * place under each root the target's files come from (a chroot, a
 * container's /proc/PID/root, a core's --sysroot). */
#define DEBUG_DIRS 8
#define DEBUG_PATH_MAX 4096

/* Functions inlined at one address we show, besides the one they are
 * inlined into. */
#define MAX_INLINE 7

struct described {
	Dwarf_Addr pc;
	bool activation, used;
	unsigned n; /* frames at this address: inlined ones first */
	struct pyd_native_frame f[MAX_INLINE + 1];
};

struct unwind {
	struct pyd_session *s;
	struct described *described; /* DESCRIBED slots */
	Dwfl_Callbacks callbacks;
	char *debuginfo_path;
	char path[DEBUG_PATH_MAX];
	size_t nroots;
	struct thread_ref *threads;
	size_t nthreads, next;
	const char *interp; /* the interpreter's file name */
	bool interp_lines;  /* file:line of the interpreter's frames too */
	/* The frames of the thread being walked. */
	struct pyd_native_frame *v;
	size_t n;
	Dwfl *dwfl;
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	struct unwind *u = arg;
	(void)dwfl;
	if (u->next >= u->nthreads)
		return 0;
	*thread_arg = &u->threads[u->next];
	return (pid_t)u->threads[u->next++].tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
	struct unwind *u = arg;
	(void)dwfl;
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].tid == tid) {
			*thread_arg = &u->threads[i];
			return true;
		}
	return false;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct unwind *u = arg;
	(void)dwfl;
	return pyd_read(u->s->src, addr, result, sizeof *result) == PYD_OK;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct thread_ref *t = thread_arg;
	const struct pyd_memsrc *src = t->u->s->src;
	uint64_t regs[PYD_NREGS];
	Dwarf_Word words[PYD_NREGS];
	if (!src->regs || src->regs(src->ctx, t->tid, regs))
		return false;
	for (int i = 0; i < PYD_NREGS; i++)
		words[i] = regs[i];
	return dwfl_thread_state_registers(thread, 0, PYD_NREGS, words);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static unsigned describe(struct unwind *u, Dwarf_Addr pc, bool activation,
			struct pyd_native_frame *f);

/* Threads blocked alike share return addresses, and a symbol lookup
 * is a linear search of a module's symbol table: each address is
 * described once per dump. */
#define DESCRIBED 1024

static struct described *described(struct unwind *u, Dwarf_Addr pc,
				   bool activation)
{
	size_t h = (size_t)(((pc << 1 | activation) * 0x9E3779B97F4A7C15ULL) >>
			    52) % DESCRIBED;
	for (size_t i = 0; i < DESCRIBED; i++) {
		struct described *d = &u->described[(h + i) % DESCRIBED];
		if (!d->used) {
			d->used = true;
			d->pc = pc;
			d->activation = activation;
			d->n = describe(u, pc, activation, d->f);
			return d;
		}
		if (d->pc == pc && d->activation == activation)
			return d;
	}
	return NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The source file of index idx of a CU's file table. */
static const char *cu_file(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;
	if (dwarf_getsrcfiles(cu, &files, &n) != 0 || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static Dwarf_Word die_udata(Dwarf_Die *die, int name)
{
	Dwarf_Attribute a;
	Dwarf_Word v = 0;
	if (dwarf_attr(die, name, &a))
		dwarf_formudata(&a, &v);
	return v;
}

/*
 * The functions inlined at `at` (where debug info says so), innermost
 * first, into f[1..]: each one's name, and the place it was called from
 * goes to the frame outside it.  f[0] arrives with the real function's
 * name and the line table's file:line; returns the frames in all.
 */
static unsigned inlined(Dwfl_Module *m, Dwarf_Addr at,
			struct pyd_native_frame *f)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(m, at, &bias), *scopes = NULL;
	int ns = cu ? dwarf_getscopes(cu, at - bias, &scopes) : 0;
	unsigned n = 1;
	for (int i = 0; i < ns && n <= MAX_INLINE; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		/* The frame so far (innermost first) is this inlined
		 * function: the next outer one takes its call site. */
		struct pyd_native_frame *in = &f[n - 1], *out = &f[n];
		*out = *in;
		const char *name = dwarf_diename(&scopes[i]);
		in->function = name ? strdup(name) : NULL;
		const char *file = cu_file(cu, die_udata(&scopes[i],
							 DW_AT_call_file));
		out->file = file ? strdup(file) : NULL;
		out->line = (int)die_udata(&scopes[i], DW_AT_call_line);
		out->library = in->library ? strdup(in->library) : NULL;
		n++;
	}
	free(scopes);
	return n;
}

/* What the frame at pc is: function, its file, source file:line, and
 * the functions inlined there (f[0] innermost); returns how many. */
static unsigned describe(struct unwind *u, Dwarf_Addr pc, bool activation,
			 struct pyd_native_frame *f)
{
	/* A return address points after its call: look up the call. */
	Dwarf_Addr at = activation ? pc : pc - 1;
	Dwfl_Module *m = dwfl_addrmodule(u->dwfl, at);
	*f = (struct pyd_native_frame){.pc = pc};
	if (!m)
		return 1;
	const char *name = dwfl_module_addrname(m, at), *mod;
	mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	/* A versioned dynamic symbol: "clock_nanosleep@GLIBC_2.2.5". */
	f->function = name ? strndup(name, strcspn(name, "@")) : NULL;
	f->library = mod ? strdup(mod) : NULL;
	f->interp = mod && u->interp && !strcmp(mod, u->interp);
	/* Line tables cost most (inflating the interpreter's debug info):
	 * not for its own frames, which only --native-all shows. */
	if (f->interp && !u->interp_lines)
		return 1;
	Dwfl_Line *line = dwfl_module_getsrc(m, at);
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL,
						NULL, NULL)
				: NULL;
	if (file) {
		f->file = strdup(file);
		f->line = lineno;
	}
	return inlined(m, at, f);
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation) ||
	    u->n >= PYD_MAX_NATIVE)
		return DWARF_CB_ABORT;
	struct pyd_native_frame *v =
		realloc(u->v, (u->n + MAX_INLINE + 1) * sizeof *v);
	if (!v)
		return DWARF_CB_ABORT;
	u->v = v;
	const struct described *d = described(u, pc, activation);
	if (!d) {
		u->n += describe(u, pc, activation, &v[u->n]);
		return DWARF_CB_OK;
	}
	for (unsigned i = 0; i < d->n; i++) {
		struct pyd_native_frame *f = &v[u->n++];
		*f = d->f[i];
		f->function = dup_or_null(d->f[i].function);
		f->library = dup_or_null(d->f[i].library);
		f->file = dup_or_null(d->f[i].file);
	}
	return DWARF_CB_OK;
}

/* The root a file was opened under: what precedes "/usr/" in its path
 * ("" for the host's own files). */
static void add_root(struct unwind *u, const char *opened)
{
	const char *usr = strstr(opened, "/usr/");
	size_t len = strlen(u->path), n = usr ? (size_t)(usr - opened) : 0;
	char dir[DEBUG_PATH_MAX / 2];
	if (!usr || !n || u->nroots >= DEBUG_DIRS ||
	    (size_t)snprintf(dir, sizeof dir, ":%.*s/usr/lib/debug", (int)n,
			     opened) >= sizeof dir ||
	    strstr(u->path, dir) || len + strlen(dir) >= sizeof u->path)
		return;
	memcpy(u->path + len, dir, strlen(dir) + 1);
	u->nroots++;
}

/* Every file the target maps, where its first byte is mapped. */
static void report_modules(struct unwind *u)
{
	const struct pyd_memsrc *src = u->s->src;
	const struct pyd_mapping *maps;
	size_t n;
	if (!src->mappings || src->mappings(src->ctx, &maps, &n))
		return;
	dwfl_report_begin(u->dwfl);
	for (size_t i = 0; i < n; i++) {
		const struct pyd_mapping *m = &maps[i];
		char used[4096];
		bool seen = false;
		if (!m->path || m->offset || !src->open_file)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = maps[j].path && !maps[j].offset &&
			       !strcmp(maps[j].path, m->path);
		int fd = seen ? -1 : src->open_file(src->ctx, m, used, sizeof used);
		if (fd < 0)
			continue;
		add_root(u, used);
		if (!dwfl_report_elf(u->dwfl, base_name(m->path), used, fd,
				     m->start, false))
			close(fd);
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
}


/* Thread states of Python threads get their native stack; OS threads
 * the dump has no thread state for are added. */
static struct pyd_thread *thread_for(struct pyd_dump *d, int64_t tid,
				     const struct pyd_os_thread *os)
{
	for (size_t i = 0; i < d->nthreads; i++)
		if (d->threads[i].tid == tid)
			return &d->threads[i];
	struct pyd_thread *t = realloc(d->threads,
				       (d->nthreads + 1) * sizeof *t);
	if (!t)
		return NULL;
	d->threads = t;
	t = &d->threads[d->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->run = os->run;
	snprintf(t->name, sizeof t->name, "%s", os->name);
	return t;
}

enum pyd_err pyd_dump_native(struct pyd_session *s, struct pyd_dump *d,
			     bool interp_lines)
{
	const struct pyd_memsrc *src = s->src;
	const struct pyd_os_thread *os;
	size_t nos;
	d->has_native = true;
	if (!src->threads || src->threads(src->ctx, &os, &nos) || !nos)
		return PYD_E_READ;
	struct unwind u = {.s = s,
			   .interp = base_name(pyd_session_binary(s)),
			   .interp_lines = interp_lines,
			   .nthreads = nos};
	/* libdwfl reads the path when it looks for debug info, which is
	 * after the modules are reported: roots found then count. */
	snprintf(u.path, sizeof u.path, "-:.debug:/usr/lib/debug");
	u.debuginfo_path = u.path;
	u.callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &u.debuginfo_path,
	};
	u.threads = calloc(nos, sizeof *u.threads);
	u.described = calloc(DESCRIBED, sizeof *u.described);
	if (!u.threads || !u.described ||
	    !(u.dwfl = dwfl_begin(&u.callbacks))) {
		free(u.threads);
		free(u.described);
		return PYD_E_NOMEM;
	}
	for (size_t i = 0; i < nos; i++)
		u.threads[i] = (struct thread_ref){&u, os[i].tid};
	report_modules(&u);
	enum pyd_err err = PYD_OK;
	if (!dwfl_attach_state(u.dwfl, NULL, (pid_t)os[0].tid,
			       &thread_callbacks, &u))
		err = PYD_E_UNSUPPORTED;
	for (size_t i = 0; !err && i < nos; i++) {
		struct pyd_thread *t = thread_for(d, os[i].tid, &os[i]);
		if (!t) {
			err = PYD_E_NOMEM;
			break;
		}
		u.v = NULL;
		u.n = 0;
		int rc = dwfl_getthread_frames(u.dwfl, (pid_t)os[i].tid,
					       frame_cb, &u);
		t->native = u.v;
		t->nnative = u.n;
		t->native_error = rc != 0 && !u.n ? PYD_E_READ : PYD_OK;
	}
	dwfl_end(u.dwfl);
	free(u.threads);
	for (size_t i = 0; i < DESCRIBED; i++)
		for (unsigned k = 0; k < u.described[i].n; k++) {
			free((char *)u.described[i].f[k].function);
			free((char *)u.described[i].f[k].library);
			free((char *)u.described[i].f[k].file);
		}
	free(u.described);
	return err;
}
