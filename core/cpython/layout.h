/*
 * Per-version CPython struct layouts (x86-64).
 *
 * Every difference between CPython versions that the decoders care about is
 * data in a struct py_layout: byte offsets of the fields we read, plus a few
 * feature switches (which frame model, which line-table format, where the GIL
 * holder lives).  Decoders branch on the features, never on version numbers.
 *
 * Tables for 3.6-3.12 (and Debian's 3.11 debug build) come from the DWARF of
 * real interpreters (tools/gen-layouts.sh).  For 3.13+ the interpreter
 * publishes its own offsets in _Py_DebugOffsets at the start of _PyRuntime;
 * debug_offsets.c reads those from the target and they win over the built-in
 * table, which stays as the fallback and the sanity reference.
 */
#ifndef PYD_CPYTHON_LAYOUT_H
#define PYD_CPYTHON_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

/* A field that this version does not have. */
#define PYD_NO_FIELD (-1)

enum py_frame_model {
	/* <= 3.10: tstate->frame is a PyFrameObject chained by f_back. */
	PY_FRAMES_OBJECT,
	/* 3.11, 3.12: tstate->cframe->current_frame, a _PyInterpreterFrame
	 * chained by previous. */
	PY_FRAMES_CFRAME,
	/* 3.13+: tstate->current_frame directly. */
	PY_FRAMES_DIRECT,
};

enum py_line_model {
	PY_LINES_LNOTAB,    /* <= 3.9: co_lnotab, f_lasti in bytes */
	PY_LINES_310,       /* 3.10: co_linetable pairs, f_lasti in code units */
	PY_LINES_LOCATIONS, /* 3.11+: PEP 657 location table, instr pointer */
};

enum py_gil_model {
	/* 3.6: the exported global _PyThreadState_Current is the holder. */
	PY_GIL_SYMBOL,
	/* 3.7-3.11: _PyRuntime.gilstate.tstate_current is the holder. */
	PY_GIL_RUNTIME_TSTATE,
	/* 3.12+: interp->ceval.gil points at a _gil_runtime_state whose
	 * locked/last_holder tell who holds it. */
	PY_GIL_INTERP_STATE,
	/* Free-threaded builds (3.13t+): threads run Python side by side;
	 * no thread holds a lock that says which one runs. */
	PY_GIL_NONE,
};

struct py_layout {
	int major, minor;
	bool debug_build; /* Py_DEBUG: layouts differ from the release build */
	/* Py_GIL_DISABLED (3.13t+): a larger object header (ob_tid,
	 * ob_ref_local, ob_ref_shared before ob_type), so every object
	 * field moves; no GIL; thread-local bytecode (3.14t+) */
	bool free_threaded;
	/* The first PY_VERSION_HEX the entry describes, 0 for every release
	 * of its minor version: a pre-release whose structs are not yet the
	 * final ones (3.15.0a0) has an entry of its own. */
	uint32_t first_hex;

	enum py_frame_model frame_model;
	enum py_line_model line_model;
	enum py_gil_model gil_model;

	/* 3.14+ stores f_executable as a tagged _PyStackRef: clear these bits. */
	uint64_t code_tag_mask;
	/* _PyInterpreterFrame.owner values >= this are not Python frames
	 * (C-stack shims, interpreter base frames); PYD_NO_FIELD if the version
	 * has none (3.11). */
	int owner_first_shim;
	/* FRAME_OWNED_BY_GENERATOR (3.11+; PYD_NO_FIELD before) */
	int owner_generator;

	struct {
		int32_t interpreters_head; /* _PyRuntime.interpreters.head */
		int32_t tstate_current;    /* gilstate.tstate_current (3.7-3.11) */
		/* ceval.gil (3.7-3.11): the _gil_runtime_state, whose mutex
		 * and condition variable a GIL waiter blocks on */
		int32_t gil_struct;
		int32_t gc_collecting;     /* gc.collecting (3.7, 3.8) */
	} runtime;

	struct {
		int32_t next;
		int32_t tstate_head; /* tstate_head / threads.head */
		int32_t id;          /* 3.7+ */
		int32_t gil_ptr;     /* 3.12+: ceval.gil (a pointer) */
		/* int gc.collecting: set while the collector runs (3.9+; 3.7
		 * and 3.8 keep it in _PyRuntime, runtime.gc_collecting) */
		int32_t gc_collecting;
	} interp;

	/* The collector's lists of tracked objects (greenlets are found
	 * there): `lists` struct gc_generation, each a PyGC_Head list head
	 * first, `stride` bytes apart from `first` in _gc_runtime_state,
	 * whose int collecting is at `collecting` (so the state starts at
	 * interp.gc_collecting - collecting).  lists = 0 where not known. */
	struct {
		int32_t collecting, first, stride, lists;
	} gc_lists;

	struct { /* offsets inside struct _gil_runtime_state (3.12+) */
		int32_t locked;
		int32_t last_holder;
	} gil;

	struct {
		int32_t next;
		int32_t interp;
		/* frame (<=3.10), cframe (3.11-3.12) or current_frame (3.13+) */
		int32_t frame;
		int32_t thread_id;        /* pthread_t */
		int32_t native_thread_id; /* 3.8+ */
		/* 3.15+: a pointer to the frame every chain of the thread
		 * ends at (owned by the interpreter) */
		int32_t base_frame;
		/* int state: _Py_THREAD_ATTACHED (1) while the thread may run
		 * Python; read in free-threaded builds only, where no GIL
		 * says which thread runs the collector (PYD_NO_FIELD
		 * elsewhere) */
		int32_t state;
	} tstate;

	/* The exceptions of a thread (-m exception), as CPython 3.15's own
	 * profiler reads them: the one being raised (curexc_type, <= 3.11;
	 * current_exception, 3.12+), the one handled by an except or finally
	 * of a plain function (exc_state.exc_value, 3.7+; exc_value, 3.6),
	 * and exc_info, the _PyErr_StackItem in use (3.7+), which points
	 * into a running generator when the handler is the generator's, and
	 * the value's offset in such an item (item_value). */
	struct {
		int32_t raised;
		int32_t handled;
		int32_t info;
		int32_t item_value;
	} exc;

	struct { /* _PyCFrame (3.11-3.12; CFrame in 3.10) */
		int32_t current_frame;
		/* PyThreadState.root_cframe: where tstate->cframe points
		 * while the thread runs no Python */
		int32_t root;
		/* PyThreadState.cframe and _PyCFrame.previous (3.10, 3.11):
		 * the chain of the runs of the evaluation loop, innermost
		 * first, each _PyCFrame on its run's C stack; read only to
		 * tell apart the runs of thread states that share an OS
		 * thread (PYD_NO_FIELD where shims tell them, 3.12+) */
		int32_t chain, previous;
	} cframe;

	struct { /* PyFrameObject (<= 3.10) */
		int32_t f_back;
		int32_t f_code;
		int32_t f_lasti; /* int */
		/* char: whether it runs: f_executing (<= 3.9: not 0) or
		 * f_state (3.10: frame_state.executing) */
		int32_t f_running;
	} frame_object;

	struct { /* _PyInterpreterFrame (3.11+) */
		int32_t code;     /* f_code / f_executable */
		int32_t previous;
		int32_t instr;    /* prev_instr (3.11-3.12) / instr_ptr (3.13+) */
		int32_t owner;    /* char */
		int32_t is_entry; /* bool, 3.11 only */
		/* int32_t: which copy of the code's bytecode the frame runs
		 * (free-threaded 3.14+: each thread specializes its own copy,
		 * code.tlbc); PYD_NO_FIELD where there is one copy */
		int32_t tlbc_index;
		/* 3.14+ (see "Asyncio tasks" below): _PyStackRef *, the top
		 * of a suspended frame's value stack; and where localsplus
		 * starts (sizeof the frame header). */
		int32_t stackpointer;
		int32_t localsplus;
	} iframe;

	struct { /* PyCodeObject */
		int32_t filename;
		int32_t name;
		int32_t qualname; /* 3.11+ */
		int32_t firstlineno; /* int */
		int32_t linetable;   /* co_lnotab (<=3.9) / co_linetable */
		int32_t code_adaptive; /* 3.11+: inline bytecode */
		/* 3.11+: int _co_firsttraceable, the first instruction a
		 * traceback shows: a frame not past it is incomplete (its
		 * set-up, or the interpreter's own __init__ trampoline) */
		int32_t firsttraceable;
		/* free-threaded 3.14+: _PyCodeArray *co_tlbc, {Py_ssize_t
		 * size; char *entries[]}: entries[i] is the bytecode of the
		 * frames whose tlbc_index is i (entries[0] is co_code_adaptive);
		 * PYD_NO_FIELD where there is one copy */
		int32_t tlbc;
	} code;

	struct { /* PyASCIIObject / PyCompactUnicodeObject / PyUnicodeObject */
		int32_t length;
		int32_t state;
		int32_t ascii_size;   /* data of compact ASCII strings starts here */
		int32_t compact_size; /* data of other compact strings */
		int32_t legacy_data;  /* PyUnicodeObject.data.any (non-compact) */
		/* The first bit of state.kind (3 bits), followed by compact
		 * and ascii: 2 after interned:2; 8 in free-threaded builds,
		 * whose interned is a byte of its own. */
		uint8_t kind_bit;
	} unicode;

	struct {
		int32_t ob_size;
		int32_t ob_sval;
	} bytes;

	/* 3.12+: the thread's data stack, where its frames are pushed one
	 * after the other (_PyStackChunk {previous, size, top, data[]}),
	 * and each frame's size (PyCodeObject.co_framesize, in words): how
	 * a stack whose C-stack links a core lost is read back (stacks.c).
	 * The recursion counter (limit - left: the Python frames running,
	 * generators' included, each counted as the loop enters it) says
	 * whether that is all of them.  PYD_NO_FIELD where unused. */
	struct {
		int32_t chunk;       /* tstate->datastack_chunk */
		int32_t top;         /* tstate->datastack_top */
		int32_t framesize;   /* int */
		int32_t depth_left;  /* int tstate->py_recursion_remaining */
		int32_t depth_limit; /* int tstate->py_recursion_limit */
	} datastack;

	/* A frame's variables (locals.c).  <= 3.10: co_varnames, co_cellvars
	 * and co_freevars name the f_localsplus slots (co_nlocals fast
	 * locals, then one cell per cell and free variable).  3.11+: one
	 * tuple co_localsplusnames and a bytes of CO_FAST_* kinds name the
	 * slots at iframe.localsplus.  Arguments come first in both. */
	struct {
		int32_t co_argcount, co_kwonlyargcount, co_flags; /* int */
		int32_t co_nlocals;                               /* int */
		int32_t co_varnames, co_cellvars, co_freevars;    /* <= 3.10 */
		int32_t co_localsplusnames, co_localspluskinds;   /* 3.11+ */
		int32_t f_localsplus;          /* PyFrameObject (<= 3.10) */
		/* the frame object's (<= 3.10) or the interpreter frame's */
		int32_t f_globals, f_builtins;
		int32_t ob_fval; /* PyFloatObject */
	} vars;

	struct {
		int32_t ob_type;
		int32_t tp_name;
		int32_t tp_flags; /* unsigned long */
	} object;

	struct { /* PyGenObject (generators, coroutines, async generators) */
		/* 3.11+: the embedded _PyInterpreterFrame, and its frame
		 * state (int8_t); PYD_NO_FIELD before (gi_frame then) */
		int32_t gi_iframe;
		int32_t gi_frame_state;
	} gen;

	struct { /* PyLongObject */
		int32_t size;  /* ob_size (<= 3.11) or lv_tag (3.12+) */
		int32_t digit; /* ob_digit: 30-bit digits */
		bool tagged;   /* lv_tag: ndigits << 3 | sign */
	} pylong;

	struct { /* PySetObject */
		int32_t used;
		int32_t mask;
		int32_t table;
	} set;

	/*
	 * Asyncio tasks (3.14+).  These come only from the target's
	 * _Py_DebugOffsets: the built-in table has none of them (they are 0
	 * there), and debug_offsets.c sets PYD_NO_FIELD for each member the
	 * block does not publish.  The task decoder checks
	 * py_layout_has_tasks() before it trusts them (and the members above
	 * that the block publishes too).
	 */

	/* enum _framestate values (3.10+; 3.10 in f_state), which are not
	 * published (layouts.c has them): 3.10-3.12 count from CREATED =
	 * -2, 3.13 and 3.14 from CREATED = -3 (SUSPENDED_YIELD_FROM = -1,
	 * EXECUTING = 0), 3.15 from CREATED = 0 (YIELD_FROM = 2,
	 * YIELD_FROM_LOCKED = 3, EXECUTING = 4).  From 3.13: created <=
	 * state < yield_from is a suspended (or not yet started) frame,
	 * yield_from <= state < executing one suspended in `await`/`yield
	 * from`, state > executing a finished one.  yield_from is 0 where
	 * there is no such state (3.10-3.12: the instruction after
	 * prev_instr tells, resume_ops).  valid is false where we do not
	 * know them (3.6-3.9). */
	struct {
		bool valid;
		int8_t created, suspended, yield_from, executing;
	} frame_state;

	/* A frame suspended in `await`/`yield from` keeps the object it
	 * awaits at stackpointer[-awaited_slot]: 1 on 3.14; 3.15 keeps the
	 * slot of the value sent in on top of it, so 2.  0 if unknown. */
	int awaited_slot;

	struct { /* struct llist_node */
		int32_t next;
	} llist;

	/*
	 * The Python-level objects that module state is made of: dicts,
	 * types, ints, sequences, functions and cells, generators and their
	 * frames, and the _asyncio module's FutureObj / TaskObj.  Read for
	 * thread names (threading._active), for every asyncio task before
	 * 3.14 (py_layout_has_module_tasks) and for 3.14+'s pure-Python
	 * tasks (py_layout_has_py_tasks).  Only the built-in table fills these (from DWARF,
	 * tools/gen-layouts.sh); debug_offsets.c leaves them as the table
	 * has them.  valid is false where a version has none.
	 */
	struct py_objects {
		bool valid;
		/* 3.14+: C tasks are in the per-thread lists (tasks_native.c);
		 * the module state is read for pure-Python tasks only. */
		bool py_only;
		int32_t interp_modules; /* modules / imports.modules */
		int32_t tstate_dict;    /* unused for now */
		/* PyDictObject */
		int32_t ma_used, ma_keys, ma_values;
		/* PyDictKeysObject: dk_size (<= 3.10) or dk_log2_size,
		 * dk_log2_index_bytes and dk_kind (3.11+; dk_size NO) */
		int32_t dk_size, dk_log2_size, dk_log2_index_bytes, dk_kind;
		int32_t dk_nentries, dk_indices;
		int32_t dv_values; /* PyDictValues.values (3.11+) */
		/* Where an instance keeps its attributes. */
		enum py_obj_dict {
			PY_DICT_OFFSET,   /* type->tp_dictoffset (<= 3.10) */
			PY_DICT_MANAGED_311, /* dict at -3, values at -4 words */
			PY_DICT_MANAGED_312, /* -3: dict, or values | 1 */
			PY_DICT_INLINE_313,  /* -3: dict; values at basicsize */
		} obj_dict;
		/* How far before a managed-dict object its dict (or values)
		 * pointer is: 3 words (behind the collector's 2-word head);
		 * 1 in free-threaded builds, which have no such head.  The
		 * "-3" above is this many bytes. */
		int32_t managed_dict;
		/* PyTypeObject / PyHeapTypeObject */
		int32_t tp_basicsize, tp_dictoffset, tp_base;
		int32_t ht_cached_keys;
		int32_t wr_object;   /* PyWeakReference */
		int32_t seq_size, tuple_items, list_items;
		int32_t func_closure, func_name, func_qualname, cell_ref;
		int32_t meth_func, meth_self; /* PyMethodObject */
		int32_t cfunc_ml, cfunc_self; /* PyCFunctionObject */
		int32_t descr_type, descr_name; /* PyMethodDescrObject */
		/* Generators: <= 3.10 a PyFrameObject (gi_frame); 3.11+ the
		 * frame is embedded (gen.gi_iframe above). */
		int32_t gi_frame;
		/* PyFrameObject: top of a suspended frame's value stack is
		 * f_stacktop[-1] (<= 3.9) or f_valuestack[f_stackdepth-1]
		 * (3.10, f_state SUSPENDED); co_code holds the opcodes. */
		int32_t f_stacktop, f_valuestack, f_stackdepth, f_state;
		int32_t co_code;
		uint8_t yield_from_op; /* YIELD_FROM (<= 3.10) */
		/* _PyInterpreterFrame (3.11-3.13): localsplus[stacktop-1] */
		int32_t if_stacktop;
		/* 3.11/3.12 (no frame state for it): the instruction after
		 * prev_instr is a RESUME (one of resume_ops, 0 = none) with
		 * oparg >= 2 while in `await`. */
		uint8_t resume_ops[2];
		/* 3.14+: CALL_KW, its specialised forms and its instrumented
		 * one (0 = none): a frame in a call with keyword arguments
		 * keeps their names' tuple on top of the arguments. */
		uint8_t call_kw_ops[5];
		/* _asyncio FutureObj / TaskObj */
		int32_t fut_loop, fut_callback0, fut_callbacks, fut_state;
		int32_t task_fut_waiter, task_coro, task_name; /* name 3.8+ */
		int32_t task_size; /* 0: no TaskObj measured (3.6) */
	} objects;
};

/* Does l carry what the <= 3.13 asyncio task decoder needs (all tasks
 * from the module state)? */
static inline bool py_layout_has_module_tasks(const struct py_layout *l)
{
	return l->objects.valid && !l->objects.py_only &&
	       l->objects.task_size > 0;
}

/* Does l carry what reading pure-Python tasks from the module state next
 * to the 3.14+ per-thread lists needs? */
static inline bool py_layout_has_py_tasks(const struct py_layout *l)
{
	return l->objects.valid && l->objects.py_only;
}

/* Does l carry every member the asyncio task decoder needs? */
bool py_layout_has_tasks(const struct py_layout *l);

/* What selects a built-in entry: the version (PY_VERSION_HEX; a version
 * known only as "3.9.18" is (3 << 24 | 9 << 16 | 18 << 8 | 0xf0)) and the
 * build's kind. */
struct py_build {
	uint32_t hex;
	bool debug_build;
	bool free_threaded;
};

/* The built-in entry for build b: the one of its minor version and kind
 * with the highest first_hex not past b->hex; NULL if we have none. */
const struct py_layout *py_layout_builtin(const struct py_build *b);

/* The built-in entries are x86-64's; on an architecture whose
 * pthread_mutex_t is mutex_extra bytes larger (arm64: 8), move the
 * offsets that lie behind mutexes CPython embeds. */
void py_layout_for_arch(struct py_layout *L, unsigned mutex_extra);

#endif
