/*
 * Internals shared by the decoders: the session and what it holds (the
 * code objects code.c caches in it, the lines it computes, the names
 * objects.c reads), frames and the walk of a thread's frames.
 */
#ifndef PYD_SESSION_H
#define PYD_SESSION_H

#include "../cpython/layout.h"
#include "../memsrc/budget.h"
#include "../memsrc/pagecache.h"
#include "../memsrc/prefetch.h"
#include "../pyd.h"
#include "unicode.h"

/* What we keep of a code object; immutable in CPython, so cacheable. */
struct pyd_code {
	uint64_t addr;
	char *name, *qualname, *file;
	int firstlineno;
	uint32_t flags; /* co_flags */
	/* 3.11+: bytes of code a frame runs before a traceback shows it
	 * (0 before 3.11) */
	int traceable_from;
	int framesize; /* 3.12+: words a frame of it takes on the data stack */
	/* The interpreter's own shim code (3.12's "<interpreter
	 * trampoline>", file "<shim>"), which runs no Python. */
	bool shim;
	uint64_t code_bytes; /* its bytecode's length (3.11+) */
	/* Free-threaded 3.14+: the addresses of its bytecode's thread-local
	 * copies (co_tlbc's entries, [0] its own), as last read. */
	uint64_t *tlbc;
	size_t ntlbc;
	uint8_t *linetable;
	size_t linetable_len;
	/* Its header's pointers as read, and what its name and file
	 * said: pyd_code_recheck() compares them to tell a reused address. */
	uint64_t name_ptr, qualname_ptr, file_ptr, linetable_ptr;
	struct pyd_str_mark name_mark, file_mark;
	uint32_t window; /* the check window it was last looked up in */
	/* Its variables (locals.c), read the first time they are asked
	 * for: vars_state 0 not yet, 1 read, -1 unreadable. */
	int vars_state;
	struct pyd_code_var *vars;
	size_t nvars;
	size_t nslots; /* the frame's slots that hold them */
};

/* A variable of a code object: its name and the frame slot holding its
 * value (or, PYD_VAR_CELL, the cell holding it). */
struct pyd_code_var {
	char *name;
	uint32_t slot;
	uint8_t flags;
};
#define PYD_VAR_ARG 1
#define PYD_VAR_CELL 2

/* Lines already computed, by (code object, bytecode offset). */
#define PYD_LINE_CACHE 4096 /* 1 << 12: the hash's top 12 bits index it */

struct pyd_line_slot {
	uint64_t code;
	int64_t off;
	int line;
};

/* Where a dict lookup found its key (objects.c's pyd_kv_find). */
#define PYD_KEY_CACHE 64

struct pyd_key_slot {
	uint64_t owner; /* the dict, or the split keys table */
	uint64_t key;   /* the key object found */
	/* Its place among the table's live entries; or, where entry is set
	 * (a split table's own lookup), its entry's number, whose key field
	 * is at entry. */
	size_t index;
	uint64_t entry;
	char name[40];
};

/* Type names already read (objects.c's pyd_type_name). */
#define PYD_TYPE_CACHE 256 /* 1 << 8: the hash's top 8 bits index it */

struct pyd_type_slot {
	uint64_t type, tp_name;
	char name[64];
	/* pyd_interp_static_type of it: 1 or 0, -1 not asked yet (the
	 * callable of every suspended call is asked four names) */
	int8_t builtin;
};

struct pyd_session {
	const struct pyd_memsrc *src; /* budget.layer.src, or a pass's own on it */
	/* In a dry run (pyd_read_ahead): a failed read may be a miss only,
	 * so what is cached must have been read whole. */
	bool dry;
	/* Code objects a dry run tried in its pass dry_pass (code.c): a
	 * hundred threads running one function read it once a pass, not a
	 * hundred times. */
	unsigned dry_pass;
	/* Code objects a dry run left to the run that tried them first: a
	 * walk that decodes its frames could not go on past one. */
	size_t dry_skipped;
	struct pyd_dry_tried {
		uint64_t addr;
		unsigned pass;
	} dry_tried[256];
	struct pyd_budget budget;     /* on the source the session was given */
	char corrupt[192];            /* pyd_session_corruption */
	struct pyd_runtime rt;
	/* The interpreter's architecture (its binary's, else the source's):
	 * its layouts and glibc's, not the registers' (pyd_memsrc_arch). */
	const struct pyd_arch *arch;
	struct py_layout layout;
	const char *layout_source;
	char version[32];
	uint64_t code_type; /* address of PyCode_Type once seen */
	/* Open-addressing table of code objects by address. */
	struct pyd_code **codes;
	size_t ncodes, codes_cap;
	/* The entries looked up in this check window, each once. */
	struct pyd_code **used;
	size_t nused, used_cap;
	uint32_t window; /* from 1: an entry's 0 is no window */
	/* PYD_LINE_CACHE of them, mapped anonymous: their pages are zero and
	 * cost a dump's memory nothing until a slot is used (calloc would
	 * clear all 96 KiB). */
	struct pyd_line_slot *lines;
	struct pyd_key_slot keys[PYD_KEY_CACHE];
	struct pyd_type_slot types[PYD_TYPE_CACHE];
	/* The greenlet module's layout from its debug information, looked
	 * for once (greenlets.c): 0 not yet, 1 found, -1 none. */
	struct glayout *greenlet_dwarf;
	int greenlet_dwarf_state;
};

/* Note the first corruption met in the target's memory (printf-style):
 * what pyd_session_corruption reports. */
void pyd_session_corrupt(struct pyd_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A new budget of reads (a sampler's round). */
static inline void pyd_session_refill(struct pyd_session *s)
{
	pyd_budget_refill(&s->budget);
}

/* Free a code object's record and all it holds. */
/*
 * One pass of reads of many small objects close together (a task graph,
 * the threads' names): between pyd_session_paged and pyd_session_unpaged
 * the session reads through a page cache of npages, each page once.  A
 * pass that must see the target change (a list read again) starts a new
 * one.  Without memory for the cache it reads as before.
 */
struct pyd_paged {
	struct pyd_pagecache pc;
	const struct pyd_memsrc *own;
	bool on;
};
void pyd_session_paged(struct pyd_session *s, struct pyd_paged *p,
		       size_t npages);
void pyd_session_unpaged(struct pyd_session *s, struct pyd_paged *p);

void pyd_code_free(struct pyd_code *c);

/*
 * Where a thread's chain of frames ended, as a thread's stack can start
 * there or not.  A generator's link to its caller is cleared at every
 * yield and set again at every resume, and a thread state or a
 * _PyCFrame points at a frame before the frame is linked: a read that
 * lands in between finds a chain that ends too soon.
 */
enum pyd_walk_end {
	PYD_WALK_WHOLE, /* where a stack starts (or not ended: see end_at) */
	/* where a stack may start, and a torn read ends too: a generator's
	 * frame before 3.12 (C code may run one as a thread's first), a
	 * shim with no Python frame inside it (a thread leaving its last) */
	PYD_WALK_DOUBT,
	/* where no stack starts: a Python frame from 3.12 (every run of
	 * the evaluation loop starts at a shim), a frame other than the
	 * thread's base frame (3.15+), a shim whose outermost Python frame
	 * is not the first of the thread's data stack (3.12-3.14), no
	 * frame in a _PyCFrame of a run of the loop (3.11, 3.12) */
	PYD_WALK_TORN,
};

/* A growable array of frames; the decoders' common output. */
struct pyd_frame_buf {
	struct pyd_frame *v;
	size_t n, cap;
	uint64_t loop_at; /* the frame a walk met twice, else 0 */
	bool more; /* the walk stopped at PYD_MAX_FRAMES: frames are left */
	/* How the chain ended, and at which node (0: it did not end: cut
	 * at PYD_MAX_FRAMES, or the rest was known). */
	enum pyd_walk_end end;
	uint64_t end_at;
	size_t nodes; /* the walk asked the reader for nodes 0 to nodes - 1 */
};

/*
 * Walking a thread's chain of nodes: the frame pointer of its thread
 * state, that of its _PyCFrame (3.11-3.12), then its frames.  The walk
 * asks a node reader for the bytes of each node, so the dump can read
 * them one by one and the sampler can serve them from one batched read.
 */

struct pyd_node_reader {
	/* len bytes at addr, the index-th node of the chain (0: the thread
	 * state), valid until the next call; NULL with *err set if they
	 * cannot be read. */
	const uint8_t *(*get)(void *ctx, size_t index, uint64_t addr,
			      size_t len, enum pyd_err *err);
	void *ctx;
	/* Optional, asked before each frame node: are the frames of the
	 * chain from the index-th node, at addr, known?  If so it appends
	 * them to out, sets out->more, and the walk ends there. */
	bool (*known)(void *ctx, size_t index, uint64_t addr,
		      struct pyd_frame_buf *out);
	/* Only follow the chain, reading its nodes and their code objects
	 * as a walk does but decoding no frame (out gets none): what a walk
	 * will read, for a batch read before it. */
	bool links_only;
};

/*
 * The Python stack of the thread state at tstate into out (innermost
 * first; none if it runs no Python).  PYD_E_TORN, with the frames read in
 * out, where the walk went through but read the thread mid-change (its
 * chain ended at PYD_WALK_TORN, or at PYD_WALK_DOUBT unless last): the
 * caller reads again, up to PYD_WALK_ATTEMPTS times, last true on its
 * last attempt, where a doubtful end is taken as whole (a race is not
 * won that often in a row).
 */
enum pyd_err pyd_walk_thread(struct pyd_session *s, uint64_t tstate,
			     const struct pyd_node_reader *r,
			     struct pyd_frame_buf *out, bool last);

/* Bytes of a frame the walk reads as its node; every other node of a
 * thread's walk (the thread state's, a _PyCFrame's, a data-stack
 * chunk's, a generator's state) has another length. */
size_t pyd_frame_node_len(const struct py_layout *L);

/* Reads of a thread's stack before it is called torn.  A generator's
 * frame is entered and left millions of times a second and a read finds
 * it left at most a quarter of the time (caught running when its thread
 * was read, left when the frame was): 16 reads all torn is a chance of
 * 2^-32 at worst, and a thread read torn costs only its re-reads. */
#define PYD_WALK_ATTEMPTS 16

/* The same from the frame at f, the idx-th node the reader is asked
 * for: frames that no thread state points at (a suspended greenlet's). */
enum pyd_err pyd_walk_chain(struct pyd_session *s, uint64_t f, size_t idx,
			    const struct pyd_node_reader *r,
			    struct pyd_frame_buf *out);

/* pyd_walk_chain from frame, each node read on its own (out->n reset). */
enum pyd_err pyd_walk_from(struct pyd_session *s, uint64_t frame,
			   struct pyd_frame_buf *out);

/* The walk of a thread's stack a dump shows: pyd_walk_thread with each
 * node read on its own, again while it reads the thread mid-change (up to
 * PYD_WALK_ATTEMPTS, counted in *retries); the first attempt reads through
 * the session's source, the others through fresh (the source beneath
 * bytes the session's serves from an earlier batch, or that same one). */
enum pyd_err pyd_walk_stable(struct pyd_session *s, uint64_t tstate,
			     const struct pyd_memsrc *fresh,
			     struct pyd_frame_buf *out, unsigned *retries);

/* The frames of tstate outside those a walk left in out, read back from
 * the thread's data stack (3.12+: a core that lost the C-stack links of
 * a run of the evaluation loop); true if out is then the whole stack. */
bool pyd_recover_outer(struct pyd_session *s, uint64_t tstate,
		       struct pyd_frame_buf *out);

/*
 * Reading ahead what a decoder will read, for one-shot reads of many
 * objects a few links deep (a dump's threads, its greenlets and what
 * they wait in): run it dry -- every read served from a batch, or else
 * failing and wanted in the next -- batch after batch, until it wants
 * nothing new or after max batches; each batch is one batched read of a
 * level of all of them, and keeps what the ones before read.  The
 * decoder reads n objects, dry(ctx, i) the i-th: one whose dry run
 * wanted nothing was read whole and is left out of the next runs.  Then
 * the caller runs it for real on the session as left, whose reads the
 * last batch serves (a miss is read from the target), and calls
 * pyd_read_ahead_end.  A dry run's results are to be thrown away: it
 * read failures that were only misses.
 */
struct pyd_read_ahead {
	struct pyd_prefetch pf;
	const struct pyd_memsrc *own; /* the session's source before */
};

void pyd_read_ahead(struct pyd_session *s, struct pyd_read_ahead *ra,
		    void (*dry)(void *ctx, size_t i), void *ctx, size_t n,
		    unsigned max);
/* The same for objects of one kind, which share much of what they point
 * to (their type, its keys, the names of their attributes): the first is
 * read for real before the dry runs, each read also wanted, so that the
 * first batch holds what all share and the dry runs of the others take
 * only the levels of their own (the names of 100 Thread objects: 0.7M
 * of 6.8M instructions fewer). */
void pyd_read_ahead_alike(struct pyd_session *s, struct pyd_read_ahead *ra,
			  void (*dry)(void *ctx, size_t i), void *ctx,
			  size_t n, unsigned max);
void pyd_read_ahead_end(struct pyd_session *s, struct pyd_read_ahead *ra);

/* Follow the chain of tstate's frames as pyd_walk_thread would, reading
 * its nodes and their code objects through the session's source and
 * decoding no frame: a dry run of a walk. */
void pyd_walk_links(struct pyd_session *s, uint64_t tstate);

/* offsetof(_PyStackChunk, data): a data-stack chunk's header (previous,
 * size in bytes, top in words) and then its frames (3.11+). */
#define PYD_CHUNK_DATA 24

/* OS thread id of a thread state, 0 if unknown. */
int64_t pyd_thread_tid(struct pyd_session *s, uint64_t tstate);

/* Python frames running on the thread (3.12+): its recursion counter,
 * limit - left, counts each frame as the loop enters it -- generators'
 * (which are not on the data stack) and __init__ trampolines included;
 * -1 if unknown. */
int64_t pyd_running_frames(struct pyd_session *s, uint64_t tstate);

/* Where interp's GIL holder can be read in one go (len bytes at addr;
 * stable while the interpreter lives), and its decoding: the thread state
 * holding the GIL, 0 if none.  false if the target does not tell. */
bool pyd_gil_probe(struct pyd_session *s, uint64_t interp, uint64_t *addr,
		   size_t *len);
uint64_t pyd_gil_decode(const struct pyd_session *s, const uint8_t *buf);

/* Where interp's GIL lives (its struct _gil_runtime_state, PYD_GIL_SPAN
 * bytes from there: its mutex and condition variable, on which a thread
 * waiting for the GIL blocks); 0 if unknown (3.6, no GIL). */
#define PYD_GIL_SPAN 256
uint64_t pyd_gil_struct(struct pyd_session *s, uint64_t interp);
/* Is thread tid, which does not hold the GIL at gil (pyd_gil_struct),
 * blocked on it?  The kernel says which futex a sleeping thread waits on
 * (the source's futex_wait: live processes): a GIL waiter's is the GIL's
 * mutex or condition variable (take_gil), a thread in a blocking call's
 * is something else, or none. */
bool pyd_waits_for_gil(const struct pyd_memsrc *src, int64_t tid, uint64_t gil);

/* The last values pyd_in_exception found None and not None, and the
 * last type that was not NoneType: a steady thread costs no read, a new
 * exception of a type seen one (its type's) read. */
struct pyd_exc_seen {
	uint64_t none, not_none, not_none_type;
};
/* Is the thread of tstate raising or handling an exception, given its
 * fields layout.exc.raised, .handled and .info (0 where the version has
 * none)?  As CPython 3.15's profiler: an exception being raised, or one
 * handled in the thread's own item (every plain function's handlers);
 * and, where exc_info points elsewhere (into a running generator or
 * coroutine), the value there, read here.  3.7-3.12 leave None in an
 * item whose handler ended: told by its type's name. */
bool pyd_in_exception(struct pyd_session *s, struct pyd_exc_seen *seen,
                      uint64_t tstate, uint64_t raised, uint64_t handled,
                      uint64_t info);

#endif
