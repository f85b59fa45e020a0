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
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../grow.h"
#include "objects.h"
#include "session.h"

/* One OS thread, as libdwfl's thread argument. */
/* Where an unwind goes on from, past code no file holds (resume_from). */
struct resume {
	bool set;
	Dwarf_Word regs[PYD_MAX_REGS];
	bool known[PYD_MAX_REGS];
	Dwarf_Addr pc;
};

struct thread_ref {
	struct unwind *u;
	int64_t tid;
	const struct resume *from; /* NULL: from the thread's registers */
};

/* Where separate debug info is looked for: the host's, then the same
 * place under each root the target's files come from (a chroot, a
 * container's /proc/PID/root, a core's --sysroot). */
#define DEBUG_DIRS 8
#define DEBUG_PATH_MAX 4096

/* Trampolines a stack is unwound past (one a Python call under python
 * -X perf): as many as a native stack shows frames. */
#define MAX_RESUMES PYD_MAX_NATIVE

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
	size_t n, cap;
	struct resume resume; /* set by frame_cb where libdwfl cannot go on */
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

/* An unwind going on past such code: the registers resume_from found. */
static bool set_resumed_registers(Dwfl_Thread *thread, const struct resume *r,
                                  const struct pyd_arch *a)
{
	for (int i = 0; i < a->nregs; i++)
		if (r->known[i] &&
		    !dwfl_thread_state_registers(thread, i, 1, &r->regs[i]))
			return false;
	dwfl_thread_state_register_pc(thread, r->pc);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct thread_ref *t = thread_arg;
	const struct pyd_memsrc *src = t->u->s->src;
	const struct pyd_arch *a = pyd_memsrc_arch(src);
	uint64_t user[PYD_MAX_USER_WORDS];
	Dwarf_Word words[PYD_MAX_REGS];
	if (t->from)
		return set_resumed_registers(thread, t->from, a);
	if (!src->regs || src->regs(src->ctx, t->tid, user))
		return false;
	for (int i = 0; i < a->nregs; i++)
		words[i] = user[a->user_of_dwarf[i]];
	/* The pc apart: arm64's return address column is x30, not it. */
	if (!dwfl_thread_state_registers(thread, 0, a->nregs, words))
		return false;
	dwfl_thread_state_register_pc(thread, user[a->user_pc]);
	return true;
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

/* A copy of f whose strings are the thread's own. */
static struct pyd_native_frame owned(const struct pyd_native_frame *f)
{
	struct pyd_native_frame c = *f;
	c.function = dup_or_null(f->function);
	c.library = dup_or_null(f->library);
	c.file = dup_or_null(f->file);
	return c;
}

/* The frames of the stack frame running at (or returning to) pc: the
 * function and those inlined into it, innermost first, into out; how
 * many. */
static unsigned name_pc(struct unwind *u, Dwarf_Addr pc, bool activation,
                        struct pyd_native_frame *out)
{
	const struct described *d = described(u, pc, activation);
	if (!d)
		return describe(u, pc, activation, out);
	for (unsigned i = 0; i < d->n; i++)
		out[i] = owned(&d->f[i]);
	return d->n;
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
 * The scopes at address `at` of module m, innermost first, out to its
 * compile unit: every function inlined there, the real one they are in
 * (malloc'd into *scopes; the count, 0 if none).  dwarf_getscopes stops
 * short of some inlined callers: the scopes of the innermost one's DIE
 * are all of them (as eu-addr2line -i finds them).
 */
static int scopes_at(Dwfl_Module *m, Dwarf_Addr at, Dwarf_Die **cu,
                     Dwarf_Die **scopes, Dwarf_Addr *bias_out)
{
	Dwarf_Addr bias = 0;
	*cu = dwfl_module_addrdie(m, at, &bias);
	*scopes = NULL;
	if (bias_out)
		*bias_out = bias;
	int ns = *cu ? dwarf_getscopes(*cu, at - bias, scopes) : 0;
	if (ns <= 0)
		return 0;
	Dwarf_Die inner = (*scopes)[0];
	free(*scopes);
	*scopes = NULL;
	ns = dwarf_getscopes_die(&inner, scopes);
	return ns > 0 ? ns : 0;
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
	Dwarf_Die *cu, *scopes;
	int ns = scopes_at(m, at, &cu, &scopes, NULL);
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

/* A symbol as its source spells it, malloc'd: a versioned one without
 * its version ("clock_nanosleep@GLIBC_2.2.5"), a C++ (or Rust) one
 * demangled as c++filt prints it, parameters included: two overloads of
 * a function are two functions. */
static char *symbol_name(const char *sym)
{
	char *plain = strndup(sym, strcspn(sym, "@"));
	char *demangled = plain ? cplus_demangle(plain, DMGL_PARAMS | DMGL_ANSI |
							    DMGL_VERBOSE)
				: NULL;
	if (!demangled)
		return plain;
	free(plain);
	return demangled;
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
	f->function = name ? symbol_name(name) : NULL;
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

/*
 * CPython's perf trampoline (Python/asm_trampoline.S, 3.12+), which
 * python -X perf copies once per code object into anonymous memory: no
 * file, no CFI, and libdwfl stops at it.  Told by its code around the
 * return address; the caller's frame follows from what it does: on
 * x86-64 it only aligns the stack (sub $8, %rsp; call *%rcx), so the
 * return address into its caller is at [sp + 8] and the caller's sp is
 * sp + 16 (built with frame pointers, it pushes a record as arm64 does);
 * on arm64 it pushes a frame record (stp x29, x30, [sp, -16]!;
 * mov x29, sp; blr x3): [x29] the caller's x29, [x29 + 8] its return
 * address, the caller's sp x29 + 16.  Every other register is as the
 * trampoline has it.
 */
struct trampoline {
	uint16_t e_machine;
	uint8_t code[20];
	uint8_t len, ret_off; /* its bytes; the return address's offset */
	bool record;          /* through a frame record at fp */
};

static const struct trampoline trampolines[] = {
    {EM_X86_64,
     {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3},
     11, 6, false},
    /* built with frame pointers and CET (Debian's 3.14+): endbr64; push
     * %rbp; mov %rsp, %rbp; call *%rcx; pop %rbp; ret */
    {EM_X86_64,
     {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3},
     12, 10, true},
    /* with frame pointers, without CET */
    {EM_X86_64, {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3}, 8, 6, true},
    {EM_AARCH64,
     {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0x60, 0x00, 0x3f,
      0xd6, 0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6},
     20, 12, true},
};

/* The trampoline pc returns into, NULL if it is not one. */
static const struct trampoline *trampoline_at(const struct unwind *u,
                                              Dwarf_Addr pc)
{
	const struct pyd_arch *a = pyd_memsrc_arch(u->s->src);
	for (size_t i = 0; i < sizeof trampolines / sizeof *trampolines; i++) {
		const struct trampoline *t = &trampolines[i];
		uint8_t code[sizeof t->code];
		if (t->e_machine == a->e_machine && pc >= t->ret_off &&
		    !pyd_read(u->s->src, pc - t->ret_off, code, t->len) &&
		    !memcmp(code, t->code, t->len))
			return t;
	}
	return NULL;
}

/* Where the unwind goes on from, past trampoline t (its frame state). */
static bool resume_from(struct unwind *u, Dwfl_Frame *state,
                        const struct trampoline *t)
{
	const struct pyd_arch *a = pyd_memsrc_arch(u->s->src);
	struct resume *r = &u->resume;
	Dwarf_Word base, rec[2];
	unsigned reg = t->record ? a->fp_dwarf : a->sp_dwarf;
	if (dwfl_frame_reg(state, reg, &base) ||
	    pyd_read(u->s->src, base + (t->record ? 0 : 8), rec,
	             t->record ? sizeof rec : sizeof rec[1]))
		return false;
	if (!t->record)
		rec[1] = rec[0];
	for (int i = 0; i < a->nregs; i++)
		r->known[i] = !dwfl_frame_reg(state, (unsigned)i, &r->regs[i]);
	if (t->record) {
		r->regs[a->fp_dwarf] = rec[0];
		r->known[a->fp_dwarf] = true;
	}
	r->regs[a->sp_dwarf] = base + 16;
	r->known[a->sp_dwarf] = true;
	r->pc = rec[1];
	return r->set = r->pc != 0;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation) ||
	    u->n >= PYD_MAX_NATIVE)
		return DWARF_CB_ABORT;
	if (!pyd_grow((void **)&u->v, &u->cap, u->n + MAX_INLINE + 1,
		      sizeof *u->v))
		return DWARF_CB_ABORT;
	struct pyd_native_frame *f = &u->v[u->n];
	unsigned k = name_pc(u, pc, activation, f);
	Dwarf_Word sp = 0;
	dwfl_frame_reg(state, pyd_memsrc_arch(u->s->src)->sp_dwarf, &sp);
	for (unsigned i = 0; i < k; i++)
		f[i].sp = sp;
	u->n += k;
	/* The interpreter's own: left out with the evaluation loop's
	 * frames, unwound through. */
	const struct trampoline *t = f->library ? NULL : trampoline_at(u, pc);
	if (t) {
		f->interp = true;
		f->function = strdup("_Py_trampoline_func_start");
		f->library = strdup("[python -X perf trampoline]");
		return resume_from(u, state, t) ? DWARF_CB_ABORT : DWARF_CB_OK;
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
	/* The dump keeps no capacity: take its threads as a full array. */
	size_t cap = d->nthreads;
	if (!pyd_grow_from((void **)&d->threads, &cap, d->nthreads + 1,
			   sizeof *d->threads, 1))
		return NULL;
	struct pyd_thread *t = &d->threads[d->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->run = os->run;
	snprintf(t->name, sizeof t->name, "%s", os->name);
	return t;
}

/*
 * An OS thread that entered other interpreters holds a thread state in
 * each (3.12+ sub-interpreters: interp.call): each gets the thread's
 * native stack, and the merge keeps of it what lies in that state's
 * runs of the evaluation loop (report/merge.c).  Whether t's copies went
 * to the others.
 */
static bool share_native(struct pyd_dump *d, struct pyd_thread *t)
{
	for (size_t i = 0; i < d->nthreads; i++) {
		struct pyd_thread *o = &d->threads[i];
		if (o == t || o->tid != t->tid || o->native)
			continue;
		o->shared = true;
		t->shared = true;
		o->native = calloc(t->nnative ? t->nnative : 1, sizeof *o->native);
		if (!o->native)
			return false;
		for (size_t k = 0; k < t->nnative; k++)
			o->native[o->nnative++] = owned(&t->native[k]);
		o->native_error = t->native_error;
	}
	return true;
}

/*
 * 3.10, 3.11: where each run of a shared thread state (above) lies on
 * the C stack, as 3.12's shims tell it (pyd_frame.entry_at): the run's
 * _PyCFrame, a local of the evaluation loop that runs it, which the
 * thread state chains from its innermost run outwards (tstate->cframe,
 * ->previous, ending at its own root_cframe).  Left 0 where it cannot be
 * read: those runs' native frames are then not shown.
 */
static void cframe_entries(struct pyd_session *s, struct pyd_thread *t)
{
	const struct py_layout *L = &s->layout;
	uint64_t cf;
	if (!t->shared || !t->tstate ||
	    pyd_read_ptr(s, t->tstate + (uint64_t)L->cframe.chain, &cf))
		return;
	uint64_t root = t->tstate + (uint64_t)L->cframe.root;
	for (size_t j = 0; j < t->nframes && cf && cf != root; j++) {
		struct pyd_frame *f = &t->frames[j];
		if (!f->entry && j + 1 < t->nframes)
			continue;
		f->entry_at = cf;
		if (pyd_read_ptr(s, cf + (uint64_t)L->cframe.previous, &cf))
			return;
	}
}

/*
 * Before 3.10 no chain says where a run lies: the thread states of one
 * OS thread are taken as nested in the order of their interpreters (the
 * main one outermost, as interp.run_string enters the newer ones), and
 * their runs, innermost first, as running in the loop frames of the
 * native stack one after another; each run's entry frame gets its loop
 * frame's stack pointer.
 */
static void nested_entries(struct pyd_dump *d, size_t first)
{
	const struct pyd_thread *t0 = &d->threads[first];
	const char *loop = pyd_native_loop_name(t0->native, t0->nnative);
	size_t next = 0; /* the next loop frame, innermost first */
	int64_t above = INT64_MAX; /* the interpreter ids done */
	for (;;) {
		struct pyd_thread *in = NULL;
		for (size_t i = first; i < d->nthreads; i++) {
			struct pyd_thread *t = &d->threads[i];
			if (t->tid == t0->tid && t->shared &&
			    t->interp_id < above &&
			    (!in || t->interp_id > in->interp_id))
				in = t;
		}
		if (!in)
			return;
		above = in->interp_id;
		for (size_t j = 0; j < in->nframes; j++) {
			if (!in->frames[j].entry && j + 1 < in->nframes)
				continue;
			while (next < t0->nnative &&
			       !pyd_native_is_loop(&t0->native[next], loop))
				next++;
			if (next == t0->nnative)
				return;
			in->frames[j].entry_at = t0->native[next++].sp;
		}
	}
}

/* Where the runs of the thread states that share an OS thread lie on its
 * stack, for the versions whose frames do not say (3.12+'s shims do). */
static void shared_entries(struct pyd_session *s, struct pyd_dump *d)
{
	const struct py_layout *L = &s->layout;
	if (L->owner_first_shim != PYD_NO_FIELD)
		return;
	for (size_t i = 0; i < d->nthreads; i++) {
		struct pyd_thread *t = &d->threads[i];
		if (L->cframe.chain > 0) {
			cframe_entries(s, t);
			continue;
		}
		bool first = t->shared;
		for (size_t k = 0; first && k < i; k++)
			first = d->threads[k].tid != t->tid;
		if (first)
			nested_entries(d, i);
	}
}

/* libdwfl over the source's files, with an empty cache of addresses. */
static enum pyd_err unwind_begin(struct unwind *u, struct pyd_session *s,
                                 bool interp_lines, size_t nthreads)
{
	*u = (struct unwind){.s = s,
	                     .interp = base_name(pyd_session_binary(s)),
	                     .interp_lines = interp_lines,
	                     .nthreads = nthreads};
	/* libdwfl reads the path when it looks for debug info, which is
	 * after the modules are reported: roots found then count. */
	snprintf(u->path, sizeof u->path, "-:.debug:/usr/lib/debug");
	u->debuginfo_path = u->path;
	u->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &u->debuginfo_path,
	};
	u->threads = calloc(nthreads ? nthreads : 1, sizeof *u->threads);
	u->described = calloc(DESCRIBED, sizeof *u->described);
	if (!u->threads || !u->described ||
	    !(u->dwfl = dwfl_begin(&u->callbacks))) {
		free(u->threads);
		free(u->described);
		return PYD_E_NOMEM;
	}
	report_modules(u);
	return PYD_OK;
}

static void unwind_end(struct unwind *u)
{
	dwfl_end(u->dwfl);
	free(u->threads);
	for (size_t i = 0; i < DESCRIBED; i++)
		for (unsigned k = 0; k < u->described[i].n; k++) {
			free((char *)u->described[i].f[k].function);
			free((char *)u->described[i].f[k].library);
			free((char *)u->described[i].f[k].file);
		}
	free(u->described);
}

/* No thread's native stack could be unwound: each says so. */
static enum pyd_err none_unwound(struct pyd_dump *d, enum pyd_err err)
{
	for (size_t i = 0; i < d->nthreads; i++)
		d->threads[i].native_error = err;
	return err;
}

enum pyd_err pyd_dump_native(struct pyd_session *s, struct pyd_dump *d,
			     bool interp_lines)
{
	const struct pyd_memsrc *src = s->src;
	const struct pyd_os_thread *os;
	size_t nos;
	d->has_native = true;
	if (!src->threads || src->threads(src->ctx, &os, &nos) || !nos)
		return none_unwound(d, PYD_E_READ);
	struct unwind u;
	enum pyd_err err = unwind_begin(&u, s, interp_lines, nos);
	if (err)
		return none_unwound(d, err);
	for (size_t i = 0; i < nos; i++)
		u.threads[i] = (struct thread_ref){&u, os[i].tid, NULL};
	/* It fails when no mapped file could be opened (libdwfl learns the
	 * machine from them). */
	if (!dwfl_attach_state(u.dwfl, NULL, (pid_t)os[0].tid,
			       &thread_callbacks, &u))
		err = none_unwound(d, PYD_E_READ);
	for (size_t i = 0; !err && i < nos; i++) {
		struct pyd_thread *t = thread_for(d, os[i].tid, &os[i]);
		if (!t) {
			err = PYD_E_NOMEM;
			break;
		}
		u.v = NULL;
		u.n = u.cap = 0;
		u.resume.set = false;
		u.threads[i].from = NULL;
		int rc = dwfl_getthread_frames(u.dwfl, (pid_t)os[i].tid,
					       frame_cb, &u);
		/* past each trampoline libdwfl cannot unwind */
		for (unsigned k = 0; u.resume.set && k < MAX_RESUMES; k++) {
			struct resume from = u.resume;
			u.resume.set = false;
			u.threads[i].from = &from;
			rc = dwfl_getthread_frames(u.dwfl, (pid_t)os[i].tid,
						   frame_cb, &u);
			u.threads[i].from = NULL;
		}
		t->native = u.v;
		t->nnative = u.n;
		t->native_error = rc != 0 && !u.n ? PYD_E_READ : PYD_OK;
		if (!share_native(d, t))
			err = PYD_E_NOMEM;
	}
	unwind_end(&u);
	shared_entries(s, d);
	return err;
}

/* Most DIEs a tail-call lookup walks in one function. */
#define CALL_SITE_WALK 65536

static bool is_tail_call_site(Dwarf_Die *d, Dwarf_Addr ret)
{
	int tag = dwarf_tag(d);
	Dwarf_Attribute a;
	Dwarf_Addr at;
	bool flag = false;
	if (tag == DW_TAG_call_site)
		return dwarf_attr(d, DW_AT_call_return_pc, &a) &&
		       !dwarf_formaddr(&a, &at) && at == ret &&
		       dwarf_attr(d, DW_AT_call_tail_call, &a) &&
		       !dwarf_formflag(&a, &flag) && flag;
	return tag == DW_TAG_GNU_call_site && !dwarf_lowpc(d, &at) &&
	       at == ret && dwarf_attr(d, DW_AT_GNU_tail_call, &a) &&
	       !dwarf_formflag(&a, &flag) && flag;
}

/*
 * Whether pc is where a tail call made in its function would have
 * returned (a call site marked as a tail call): gdb makes up a frame for
 * a function that tail-called the next, with that pc, from DWARF's call
 * sites.  No unwinder finds those frames on the stack, ours included.
 */
static bool tail_call_at(Dwfl_Module *m, Dwarf_Addr pc)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu, *scopes;
	int ns = scopes_at(m, pc - 1, &cu, &scopes, &bias);
	Dwarf_Die fn, stack[64];
	bool found = false;
	int i = 0, top = 0, walked = 0;
	while (i < ns && dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
		i++;
	if (i < ns && dwarf_child(&scopes[i], &fn) == 0)
		stack[top++] = fn;
	free(scopes);
	/* Depth first through the function's DIEs: siblings then children. */
	while (top && !found && walked++ < CALL_SITE_WALK) {
		Dwarf_Die d = stack[--top], c;
		found = is_tail_call_site(&d, pc - bias);
		if (dwarf_siblingof(&d, &stack[top]) == 0 && top < 63)
			top++;
		if (dwarf_haschildren(&d) > 0 && dwarf_child(&d, &c) == 0 &&
		    top < 64)
			stack[top++] = c;
	}
	return found;
}



enum pyd_err pyd_native_name(struct pyd_session *s,
                             const struct pyd_native_frame *f, size_t n,
                             bool interp_lines, struct pyd_thread *t)
{
	struct unwind u;
	struct pyd_native_frame *v = calloc(n ? n : 1, (MAX_INLINE + 1) * sizeof *v);
	enum pyd_err err = v ? unwind_begin(&u, s, interp_lines, 0)
	                     : PYD_E_NOMEM;
	if (err) {
		free(v);
		return err;
	}
	size_t nv = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && f[j].pc == f[i].pc; j++)
			;
		/* The innermost frame, and one a signal interrupted (the
		 * debugger's frame before it has no pc), were running at
		 * their pc; the others return there. */
		bool activation = i == 0 || !f[i - 1].pc;
		Dwfl_Module *m = f[i].pc ? dwfl_addrmodule(u.dwfl, f[i].pc - 1)
		                         : NULL;
		if (!activation && m && tail_call_at(m, f[i].pc))
			continue;
		if (f[i].pc)
			nv += name_pc(&u, f[i].pc, activation, v + nv);
		else
			v[nv++] = owned(&f[i]);
	}
	unwind_end(&u);
	t->native = v;
	t->nnative = nv;
	t->native_error = PYD_OK;
	/* A thread the dump had no thread state for: the source names it. */
	const struct pyd_os_thread *os;
	size_t nos;
	if (!t->name[0] && s->src->threads &&
	    !s->src->threads(s->src->ctx, &os, &nos))
		for (size_t i = 0; i < nos; i++)
			if (os[i].tid == t->tid) {
				snprintf(t->name, sizeof t->name, "%s", os[i].name);
				t->run = os[i].run;
			}
	return PYD_OK;
}
