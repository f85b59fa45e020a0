/*
 * The built-in layout table: one entry per CPython minor version (and per
 * Py_DEBUG build where we had one to measure), x86-64 Linux, GIL builds.
 *
 * Every number was printed by tools/gen-layouts.sh from the DWARF of the
 * binary named above its entry; edit by re-running the script, not by hand.
 * The datastack group (3.12+) is PyThreadState.datastack_chunk,
 * datastack_top, py_recursion_remaining and py_recursion_limit and
 * PyCodeObject.co_framesize, from the same DWARF.
 * The feature switches and owner_first_shim are not offsets, so they are set
 * here from the headers / DWARF enums:
 *  - owner_first_shim: enum _frameowner has FRAME_OWNED_BY_CSTACK = 3 in
 *    3.12 and 3.13; FRAME_OWNED_BY_INTERPRETER = 3 (and CSTACK = 4) in 3.14;
 *    INTERPRETER = 3 and no CSTACK in 3.15.  3.11 has no shim frames
 *    (is_entry only marks where C code entered the eval loop).
 *  - owner_generator: FRAME_OWNED_BY_GENERATOR, 1 in every enum
 *    _frameowner (3.11-3.15).
 *  - code_tag_mask: 3.14+ f_executable is a _PyStackRef whose low bits are
 *    tags (bit 0 is seen set on live 3.14/3.15 frames).  Objects are at
 *    least 8-byte aligned, so clearing the two low bits loses no address.
 *
 * The Py_DEBUG entries happen to equal the release ones for every field we
 * read (since 3.8 Py_DEBUG no longer implies Py_TRACE_REFS, so the object
 * header is the same; only sizeof(_PyRuntimeState/PyInterpreterState)
 * differ).  They are kept as measured entries so a future divergence shows.
 */
#include <stddef.h>

#include "layout.h"

/* Short alias so the table stays readable. */
#define NO PYD_NO_FIELD

/*
 * struct py_objects: the Python-level objects the asyncio module's state
 * and threading's are made of (dicts, types, ints, sequences, functions,
 * generators and their frames, Future and Task), from the DWARF of the
 * same libpython and of its lib-dynload/_asyncio*.so (FutureObj, TaskObj);
 * the Debian 3.11d and sid 3.13d builds measure the same.  The frame
 * states are enum _framestate of each version's headers; resume_ops are
 * RESUME and its specialized / instrumented forms (3.11: RESUME_QUICK 150,
 * 3.12: INSTRUMENTED_RESUME 240), YIELD_FROM is opcode 72 (3.7-3.10).
 * call_kw_ops are dis.opmap's and dis._specialized_opmap's CALL_KW,
 * CALL_KW_BOUND_METHOD, CALL_KW_NON_PY, CALL_KW_PY and
 * INSTRUMENTED_CALL_KW of each version (3.14+: read only where the frame
 * keeps its stack pointer).
 */
#define OBJECTS_GENERIC \
	.valid = true, .managed_dict = 24, .ma_used = 16, .ma_keys = 32, .ma_values = 40, \
	.tp_basicsize = 32, .tp_dictoffset = 288, .tp_base = 256, \
	.wr_object = 16, \
	.seq_size = 16, .list_items = 24, .cell_ref = 16, \
	.meth_func = 16, .meth_self = 24, .cfunc_ml = 16, .cfunc_self = 24, \
	.descr_type = 16, .descr_name = 24, .fut_loop = 16, .fut_callback0 = 24, \
	.fut_callbacks = 40
#define OBJECTS_COMMON OBJECTS_GENERIC, .tuple_items = 24
/* <= 3.10: dk_size dicts, tp_dictoffset, frame objects */
#define OBJECTS_310_DICT \
	.dk_size = 8, .dk_log2_size = NO, .dk_log2_index_bytes = NO, \
	.dk_kind = NO, .dk_nentries = 32, .dk_indices = 40, .dv_values = NO, \
	.obj_dict = PY_DICT_OFFSET, \
	.gi_frame = 16, .yield_from_op = 72, .if_stacktop = NO, \
	.resume_ops = {0, 0}
/* 3.11+: log2 dicts, embedded generator frames */
#define LOG2_DICT_FRAMES \
	.dk_size = NO, .dk_log2_size = 8, .dk_log2_index_bytes = 9, \
	.dk_kind = 10, .dk_nentries = 24, .dk_indices = 32, .gi_frame = NO, \
	.f_stacktop = NO, .f_valuestack = NO, .f_stackdepth = NO, \
	.f_state = NO, .co_code = NO, .yield_from_op = 0
#define OBJECTS_LOG2_DICT LOG2_DICT_FRAMES, \
	.func_closure = 72, .func_name = 32, .func_qualname = 40
#define OBJECTS_311_DICT OBJECTS_LOG2_DICT, .if_stacktop = 64
/* 3.6: the object readers only; its _asyncio is not decoded (task_size
 * 0), so neither are its tasks nor threading's names. */
#define OBJECTS_36 { OBJECTS_COMMON, OBJECTS_310_DICT, .interp_modules = 16, \
	.tstate_dict = 128, .ht_cached_keys = 856, \
	.func_closure = 48, .func_name = 64, .func_qualname = 104, .f_stacktop = 72, \
	.f_valuestack = 64, .f_stackdepth = NO, .f_state = NO, .co_code = 40, \
	.task_size = 0 }
#define OBJECTS_37 { OBJECTS_COMMON, OBJECTS_310_DICT, .interp_modules = 40, \
	.tstate_dict = 152, .ht_cached_keys = 856, \
	.func_closure = 48, .func_name = 64, .func_qualname = 104, .f_stacktop = 72, \
	.f_valuestack = 64, .f_stackdepth = NO, .f_state = NO, .co_code = 40, \
	.fut_state = 72, .task_fut_waiter = 104, \
	.task_coro = 112, .task_name = NO, .task_size = 136 }
#define OBJECTS_38 { OBJECTS_COMMON, OBJECTS_310_DICT, .interp_modules = 56, \
	.tstate_dict = 152, .ht_cached_keys = 872, \
	.func_closure = 48, .func_name = 64, .func_qualname = 104, .f_stacktop = 72, \
	.f_valuestack = 64, .f_stackdepth = NO, .f_state = NO, .co_code = 48, \
	.fut_state = 72, .task_fut_waiter = 104, \
	.task_coro = 112, .task_name = 120, .task_size = 144 }
#define OBJECTS_39 { OBJECTS_COMMON, OBJECTS_310_DICT, .interp_modules = 856, \
	.tstate_dict = 152, .ht_cached_keys = 864, \
	.func_closure = 48, .func_name = 64, .func_qualname = 104, .f_stacktop = 72, \
	.f_valuestack = 64, .f_stackdepth = NO, .f_state = NO, .co_code = 48, \
	.fut_state = 80, .task_fut_waiter = 144, \
	.task_coro = 152, .task_name = 160, .task_size = 184 }
#define OBJECTS_310 { OBJECTS_COMMON, OBJECTS_310_DICT, .interp_modules = 856, \
	.tstate_dict = 152, .ht_cached_keys = 872, \
	.func_closure = 72, .func_name = 32, .func_qualname = 40, .f_stacktop = NO, \
	.f_valuestack = 64, .f_stackdepth = 80, .f_state = 108, .co_code = 48, \
	.fut_state = 88, .task_fut_waiter = 152, \
	.task_coro = 160, .task_name = 168, .task_size = 192 }
#define OBJECTS_311 { OBJECTS_COMMON, OBJECTS_311_DICT, .interp_modules = 888, \
	.tstate_dict = 128, .dv_values = 0, .obj_dict = PY_DICT_MANAGED_311, \
	.ht_cached_keys = 872, \
	.resume_ops = {151, 150}, \
	.fut_state = 88, .task_fut_waiter = 128, .task_coro = 136, \
	.task_name = 144, .task_size = 176 }
#define OBJECTS_312 { OBJECTS_COMMON, OBJECTS_311_DICT, .interp_modules = 944, \
	.tstate_dict = 112, .dv_values = 0, .obj_dict = PY_DICT_MANAGED_312, \
	.ht_cached_keys = 880, \
	.resume_ops = {151, 240}, \
	.fut_state = 88, .task_fut_waiter = 128, .task_coro = 136, \
	.task_name = 144, .task_size = 176 }
#define OBJECTS_313 { OBJECTS_COMMON, OBJECTS_311_DICT, .interp_modules = 7656, \
	.tstate_dict = 128, .dv_values = 8, .obj_dict = PY_DICT_INLINE_313, \
	.ht_cached_keys = 880, \
	.resume_ops = {0, 0}, \
	.fut_state = 96, .task_fut_waiter = 112, .task_coro = 120, \
	.task_name = 128, .task_size = 144 }
/* 3.14, 3.15: C tasks are in per-thread lists (tasks_native.c); the module
 * state holds only pure-Python tasks (py_only), whose frames the 3.14+
 * generator code of coro.c walks, so the <= 3.13 frame members are not
 * needed (no stacktop: 3.14 has stackpointer).  Tuples gained ob_hash
 * (tuple_items 32).  Release (build-id .debug) and Py_DEBUG measure the
 * same. */
#define OBJECTS_314_COMMON \
	OBJECTS_GENERIC, OBJECTS_LOG2_DICT, .py_only = true, .tuple_items = 32, \
	.dv_values = 8, .obj_dict = PY_DICT_INLINE_313, \
	.if_stacktop = NO, \
	.resume_ops = {0, 0}, \
	.fut_state = 104, .task_fut_waiter = 120, .task_coro = 128, \
	.task_name = 136, .task_size = 168
#define OBJECTS_314 { OBJECTS_314_COMMON, .interp_modules = 7688, \
	.tstate_dict = 128, .ht_cached_keys = 880, \
	.call_kw_ops = {55, 151, 152, 153, 251} }
#define OBJECTS_315 { OBJECTS_314_COMMON, .interp_modules = 7592, \
	.tstate_dict = 152, .ht_cached_keys = 888, \
	.call_kw_ops = {53, 154, 155, 156, 250} }

/*
 * The groups struct py_objects shares with every layout: where generators
 * keep their frame (3.11+), ints, sets, tp_flags.  3.13+ also read them
 * from _Py_DebugOffsets where it publishes them.
 */
#define TYPE_OBJECT .object = { .ob_type = 8, .tp_name = 24, .tp_flags = 168 }
#define SET_OBJECT .set = { .used = 24, .mask = 32, .table = 40 }
#define OBJECTS_GROUPS_310 TYPE_OBJECT, SET_OBJECT, \
	.gen = { .gi_iframe = NO, .gi_frame_state = NO }, \
	.pylong = { .size = 16, .digit = 24, .tagged = false }
#define OBJECTS_GROUPS_311 TYPE_OBJECT, SET_OBJECT, \
	.gen = { .gi_iframe = 80, .gi_frame_state = 75 }, \
	.pylong = { .size = 16, .digit = 24, .tagged = false }
#define OBJECTS_GROUPS_312 TYPE_OBJECT, SET_OBJECT, \
	.gen = { .gi_iframe = 72, .gi_frame_state = 67 }, \
	.pylong = { .size = 16, .digit = 24, .tagged = true }

/*
 * struct py_layout.vars: the code object's argument counts and names of
 * its variables, where a frame keeps their values, globals and builtins.
 * 3.6 and 3.7 put co_kwonlyargcount right after co_argcount (3.8 added
 * co_posonlyargcount between them); f_localsplus moves with the frame
 * object's size.  3.11 and later: co_argcount at 56 in 3.11, 52 after.
 */
#define VARS_OBJECT(argc, kwonly, flags, nlocals, names, localsplus) \
	.vars = { .co_argcount = argc, .co_kwonlyargcount = kwonly, \
	.co_flags = flags, .co_nlocals = nlocals, .co_varnames = names, \
	.co_cellvars = names + 16, .co_freevars = names + 8, \
	.co_localsplusnames = NO, .co_localspluskinds = NO, \
	.f_localsplus = localsplus, .f_globals = 48, .f_builtins = 40, \
	.ob_fval = 16 }
#define VARS_IFRAME(argc, kwonly, globals) \
	.vars = { .co_argcount = argc, .co_kwonlyargcount = kwonly, \
	.co_flags = 48, .co_nlocals = 80, .co_varnames = NO, \
	.co_cellvars = NO, .co_freevars = NO, .co_localsplusnames = 96, \
	.co_localspluskinds = 104, .f_localsplus = NO, \
	.f_globals = globals, .f_builtins = globals + 8, .ob_fval = 16 }

/*
 * enum _framestate (struct py_layout's frame_state), which no version
 * publishes: from each version's DWARF (ptype enum _framestate), and for
 * 3.14 and 3.15 checked on live targets.  3.10-3.12 have no
 * SUSPENDED_YIELD_FROM (0: none); 3.6-3.9 keep no frame state.
 */
#define FRAME_STATE_310 { .valid = true, .created = -2, .suspended = -1, \
	.yield_from = 0, .executing = 0 }
#define FRAME_STATE_313 { .valid = true, .created = -3, .suspended = -2, \
	.yield_from = -1, .executing = 0 }
#define FRAME_STATE_314 FRAME_STATE_313
#define FRAME_STATE_315 { .valid = true, .created = 0, .suspended = 1, \
	.yield_from = 2, .executing = 4 }

/*
 * struct py_layout.gc_lists (greenlets are found in the collector's
 * lists), from the same DWARF (ptype/o struct _gc_runtime_state, release
 * and debug builds alike): 3.14's three generations at 24 then the
 * permanent one, `collecting` at 192; 3.15 moved them to 8, collecting
 * to 112.
 */
#define GC_LISTS_314 { .collecting = 192, .first = 24, .stride = 24, \
	.lists = 4 }
#define GC_LISTS_315 { .collecting = 112, .first = 8, .stride = 24, \
	.lists = 4 }

/*
 * struct py_layout.exc (-m exception), from the same DWARF:
 * PyThreadState.curexc_type (<= 3.11) or current_exception, exc_value
 * (3.6) or exc_state.exc_value, exc_info, and _PyErr_StackItem.exc_value.
 */
#define EXC_36 { .raised = 80, .handled = 112, .info = NO, .item_value = NO }
#define EXC_37 { .raised = 88, .handled = 120, .info = 144, .item_value = 8 }
#define EXC_311 { .raised = 96, .handled = 320, .info = 120, .item_value = 0 }
#define EXC_312 { .raised = 96, .handled = 256, .info = 104, .item_value = 0 }
#define EXC_313 { .raised = 112, .handled = 256, .info = 120, .item_value = 0 }
#define EXC_315 { .raised = 136, .handled = 288, .info = 144, .item_value = 0 }

/*
 * Free-threaded builds (Py_GIL_DISABLED).  The 3.14t entry and 3.15.0a0t
 * are measured from the DWARF of python3.15t built from the 3.15.0a0 tree
 * of ../shared/cpython-ft (main of 2025-05-30, three weeks after 3.14
 * branched: its structs are 3.14's, as its default build shows, which
 * measures the same as sid's 3.14 but for the interpreter's module dict,
 * which the block publishes).  Against the default build: every object
 * field 16 bytes further (ob_tid, ob_flags, ob_mutex, ob_gc_bits,
 * ob_ref_local and ob_ref_shared before ob_type), the frame's owner 4
 * further (int32_t tlbc_index before it), the code object's
 * _co_firsttraceable and co_code_adaptive 24 (co_tlbc), the managed dict
 * one word before the object (no collector's head), str's state with a
 * whole byte for interned, a Task 8 bytes larger, and no collector lists
 * (the collector walks the allocator's heaps: greenlets are not found).
 * 3.13t cannot be built here: its entry is 3.13's with the same object
 * header and str state (Include/object.h, cpython/unicodeobject.h of
 * 3.13); it has no thread-local bytecode and no tagged references.  Its
 * frames, code objects, strings and threads come from the block it
 * publishes; the rest is the untested part (README: versions).
 */
#define FT_HEAD 16 /* the larger object header */
#define OBJECTS_FT(tuple_, state_, waiter_, coro_, name_, size_, cached_) \
	.valid = true, .managed_dict = 8, \
	.ma_used = 32, .ma_keys = 48, .ma_values = 56, \
	.tp_basicsize = 48, .tp_dictoffset = 304, .tp_base = 272, \
	.wr_object = 32, .seq_size = 32, .list_items = 40, .cell_ref = 32, \
	.meth_func = 32, .meth_self = 40, .cfunc_ml = 32, .cfunc_self = 40, \
	.descr_type = 32, .descr_name = 40, .fut_loop = 32, \
	.fut_callback0 = 40, .fut_callbacks = 56, LOG2_DICT_FRAMES, \
	.func_closure = 88, .func_name = 48, .func_qualname = 56, \
	.tuple_items = tuple_, .dv_values = 8, \
	.obj_dict = PY_DICT_INLINE_313, .tstate_dict = 128, \
	.ht_cached_keys = cached_, .fut_state = state_, \
	.task_fut_waiter = waiter_, .task_coro = coro_, .task_name = name_, \
	.task_size = size_
#define OBJECTS_314T { OBJECTS_FT(48, 120, 136, 144, 152, 192, 896), \
	.py_only = true, .if_stacktop = NO, .resume_ops = {0, 0}, \
	.interp_modules = 7712, .call_kw_ops = {55, 151, 152, 153, 251} }
#define OBJECTS_313T { OBJECTS_FT(40, 112, 128, 136, 144, 160, 896), \
	.if_stacktop = 64, .resume_ops = {0, 0}, .interp_modules = NO }
#define VARS_FT(argc, kwonly, flags, nlocals, names) \
	.vars = { .co_argcount = argc, .co_kwonlyargcount = kwonly, \
	.co_flags = flags, .co_nlocals = nlocals, .co_varnames = NO, \
	.co_cellvars = NO, .co_freevars = NO, .co_localsplusnames = names, \
	.co_localspluskinds = names + 8, .f_localsplus = NO, \
	.f_globals = 24, .f_builtins = 32, .ob_fval = 32 }
#define OBJECTS_GROUPS_FT \
	.object = { .ob_type = 24, .tp_name = 40, .tp_flags = 184 }, \
	.set = { .used = 40, .mask = 48, .table = 56 }, \
	.gen = { .gi_iframe = 88, .gi_frame_state = 83 }, \
	.pylong = { .size = 32, .digit = 40, .tagged = true }
#define UNICODE_FT .unicode = { .length = 32, .state = 48, .ascii_size = 56, \
	.compact_size = 72, .legacy_data = 72, .kind_bit = 8 }
#define BYTES_FT .bytes = { .ob_size = 32, .ob_sval = 48 }
/* 3.14t and 3.15.0a0t: python3.15t 3.15.0a0 (tests/setup-ft.sh), -g */
#define LAYOUT_314T(minor_, hex) { \
	.major = 3, .minor = minor_, .debug_build = false, \
	.free_threaded = true, .first_hex = hex, \
	.frame_model = PY_FRAMES_DIRECT, .line_model = PY_LINES_LOCATIONS, \
	.gil_model = PY_GIL_NONE, \
	.code_tag_mask = 3, .owner_first_shim = 3, .owner_generator = 1, \
	.runtime = { .interpreters_head = 808, .tstate_current = NO, \
		     .gc_collecting = NO }, \
	.interp = { .next = 7272, .tstate_head = 7344, .id = 7280, \
		    .gil_ptr = 16, .gc_collecting = 7600 }, \
	.gil = { .locked = NO, .last_holder = NO }, \
	.tstate = { .next = 8, .interp = 16, .frame = 72, .thread_id = 152, \
		    .native_thread_id = 160, .base_frame = NO, .state = 44 }, \
	.exc = EXC_313, \
	.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO }, \
	.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO, \
			  .f_running = NO }, \
	.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 78, \
		    .is_entry = NO, .tlbc_index = 72, .localsplus = 80 }, \
	.code = { .filename = 128, .name = 136, .qualname = 144, \
		  .firstlineno = 84, .linetable = 152, .code_adaptive = 232, \
		  .firsttraceable = 208, .tlbc = 224 }, \
	UNICODE_FT, BYTES_FT, \
	.datastack = { .chunk = 232, .top = 240, .framesize = 92, \
		       .depth_left = 48, .depth_limit = 52 }, \
	VARS_FT(68, 76, 64, 96, 112), \
	OBJECTS_GROUPS_FT, \
	.objects = OBJECTS_314T, \
	.frame_state = FRAME_STATE_314, \
	.gc_lists = { .collecting = 192, .first = 0, .stride = 0, .lists = 0 }, \
	}

/* 3.14 (sid python3.14 3.14.10-1, its build-id .debug file; its Py_DEBUG
 * build measures the same) and 3.15.0a0, whose structs are 3.14's (see
 * the free-threaded entries above) but for the interpreter's module dict */
#define LAYOUT_314(minor_, hex_, debug_, objects_) { \
	.major = 3, .minor = minor_, .debug_build = debug_, \
	.first_hex = hex_, \
	.frame_model = PY_FRAMES_DIRECT, \
	.line_model = PY_LINES_LOCATIONS, \
	.gil_model = PY_GIL_INTERP_STATE, \
	.code_tag_mask = 3, .owner_first_shim = 3, \
	.owner_generator = 1, \
	.runtime = { .interpreters_head = 808, .tstate_current = NO, \
	             .gc_collecting = NO }, \
	.interp = { .next = 7272, .tstate_head = 7344, .id = 7280, \
	            .gil_ptr = 16, \
	            .gc_collecting = 7600 }, \
	.gil = { .locked = 16, .last_holder = 8 }, \
	.tstate = { .next = 8, .interp = 16, .frame = 72, \
	            .thread_id = 152, .native_thread_id = 160, \
	            .base_frame = NO, \
	            .state = NO }, \
	.exc = EXC_313, \
	.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO }, \
	.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO, \
	                  .f_running = NO }, \
	.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 74, \
	            .is_entry = NO, .tlbc_index = NO, \
	            .localsplus = 80 }, \
	.code = { .filename = 112, .name = 120, .qualname = 128, \
	          .firstlineno = 68, .linetable = 136, \
	          .code_adaptive = 208, \
	          .firsttraceable = 192, .tlbc = NO }, \
	.unicode = { .length = 16, .state = 32, .ascii_size = 40, \
	             .compact_size = 56, .legacy_data = 56, \
	             .kind_bit = 2 }, \
	.bytes = { .ob_size = 16, .ob_sval = 32 }, \
	.datastack = { .chunk = 232, .top = 240, .framesize = 76, \
	               .depth_left = 48, .depth_limit = 52 }, \
	VARS_IFRAME(52, 60, 24), \
	OBJECTS_GROUPS_312, \
	.objects = objects_, \
	.frame_state = FRAME_STATE_314, \
	.gc_lists = GC_LISTS_314, \
	}
#define OBJECTS_315A0 { OBJECTS_314_COMMON, .interp_modules = 7664, \
	.tstate_dict = 128, .ht_cached_keys = 880, \
	.call_kw_ops = {55, 151, 152, 153, 251} }

static const struct py_layout layouts[] = {
	/* 3.6: pyenv 3.6.15 lib/libpython3.6m.so */
	{
		.major = 3, .minor = 6, .debug_build = false,
		.frame_model = PY_FRAMES_OBJECT,
		.line_model = PY_LINES_LNOTAB,
		.gil_model = PY_GIL_SYMBOL,
		.code_tag_mask = 0, .owner_first_shim = NO,
		.owner_generator = NO,
		.runtime = { .interpreters_head = NO, .tstate_current = NO,
		             .gc_collecting = NO },
		.interp = { .next = 0, .tstate_head = 8, .id = NO,
		            .gil_ptr = NO,
		            .gc_collecting = NO },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 24,
		            .thread_id = 152, .native_thread_id = NO,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_36,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = 24, .f_code = 32, .f_lasti = 120,
		                  .f_running = 132 },
		.iframe = { .code = NO, .previous = NO, .instr = NO,
		            .owner = NO, .is_entry = NO, .tlbc_index = NO,
		            .localsplus = NO },
		.code = { .filename = 96, .name = 104, .qualname = NO,
		          .firstlineno = 36, .linetable = 112,
		          .code_adaptive = NO,
		          .firsttraceable = NO, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 48,
		             .compact_size = 72, .legacy_data = 72,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = NO, .top = NO, .framesize = NO,
		               .depth_left = NO, .depth_limit = NO },
		VARS_OBJECT(16, 20, 32, 24, 64, 376),
		OBJECTS_GROUPS_310,
		.objects = OBJECTS_36,
	},
	/* 3.7: pyenv 3.7.16 lib/libpython3.7m.so */
	{
		.major = 3, .minor = 7, .debug_build = false,
		.frame_model = PY_FRAMES_OBJECT,
		.line_model = PY_LINES_LNOTAB,
		.gil_model = PY_GIL_RUNTIME_TSTATE,
		.code_tag_mask = 0, .owner_first_shim = NO,
		.owner_generator = NO,
		.runtime = { .interpreters_head = 24, .tstate_current = 1480,
		             .gil_struct = 1264,
		             .gc_collecting = 632 },
		.interp = { .next = 0, .tstate_head = 8, .id = 16,
		            .gil_ptr = NO,
		            .gc_collecting = NO },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 24,
		            .thread_id = 176, .native_thread_id = NO,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_37,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = 24, .f_code = 32, .f_lasti = 104,
		                  .f_running = 116 },
		.iframe = { .code = NO, .previous = NO, .instr = NO,
		            .owner = NO, .is_entry = NO, .tlbc_index = NO,
		            .localsplus = NO },
		.code = { .filename = 96, .name = 104, .qualname = NO,
		          .firstlineno = 36, .linetable = 112,
		          .code_adaptive = NO,
		          .firsttraceable = NO, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 48,
		             .compact_size = 72, .legacy_data = 72,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = NO, .top = NO, .framesize = NO,
		               .depth_left = NO, .depth_limit = NO },
		VARS_OBJECT(16, 20, 32, 24, 64, 360),
		OBJECTS_GROUPS_310,
		.objects = OBJECTS_37,
	},
	/* 3.8: pyenv 3.8.18 lib/libpython3.8.so */
	{
		.major = 3, .minor = 8, .debug_build = false,
		.frame_model = PY_FRAMES_OBJECT,
		.line_model = PY_LINES_LNOTAB,
		.gil_model = PY_GIL_RUNTIME_TSTATE,
		.code_tag_mask = 0, .owner_first_shim = NO,
		.owner_generator = NO,
		.runtime = { .interpreters_head = 32, .tstate_current = 1368,
		             .gil_struct = 1152,
		             .gc_collecting = 544 },
		.interp = { .next = 0, .tstate_head = 8, .id = 16,
		            .gil_ptr = NO,
		            .gc_collecting = NO },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 24,
		            .thread_id = 176, .native_thread_id = NO,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_37,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = 24, .f_code = 32, .f_lasti = 104,
		                  .f_running = 116 },
		.iframe = { .code = NO, .previous = NO, .instr = NO,
		            .owner = NO, .is_entry = NO, .tlbc_index = NO,
		            .localsplus = NO },
		.code = { .filename = 104, .name = 112, .qualname = NO,
		          .firstlineno = 40, .linetable = 120,
		          .code_adaptive = NO,
		          .firsttraceable = NO, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 48,
		             .compact_size = 72, .legacy_data = 72,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = NO, .top = NO, .framesize = NO,
		               .depth_left = NO, .depth_limit = NO },
		VARS_OBJECT(16, 24, 36, 28, 72, 360),
		OBJECTS_GROUPS_310,
		.objects = OBJECTS_38,
	},
	/* 3.9: pyenv 3.9.18 lib/libpython3.9.so */
	{
		.major = 3, .minor = 9, .debug_build = false,
		.frame_model = PY_FRAMES_OBJECT,
		.line_model = PY_LINES_LNOTAB,
		.gil_model = PY_GIL_RUNTIME_TSTATE,
		.code_tag_mask = 0, .owner_first_shim = NO,
		.owner_generator = NO,
		.runtime = { .interpreters_head = 32, .tstate_current = 568,
		             .gil_struct = 352,
		             .gc_collecting = NO },
		.interp = { .next = 0, .tstate_head = 8, .id = 24,
		            .gil_ptr = NO,
		            .gc_collecting = 816 },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 24,
		            .thread_id = 176, .native_thread_id = NO,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_37,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = 24, .f_code = 32, .f_lasti = 104,
		                  .f_running = 116 },
		.iframe = { .code = NO, .previous = NO, .instr = NO,
		            .owner = NO, .is_entry = NO, .tlbc_index = NO,
		            .localsplus = NO },
		.code = { .filename = 104, .name = 112, .qualname = NO,
		          .firstlineno = 40, .linetable = 120,
		          .code_adaptive = NO,
		          .firsttraceable = NO, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 48,
		             .compact_size = 72, .legacy_data = 72,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = NO, .top = NO, .framesize = NO,
		               .depth_left = NO, .depth_limit = NO },
		VARS_OBJECT(16, 24, 36, 28, 72, 360),
		OBJECTS_GROUPS_310,
		.objects = OBJECTS_39,
	},
	/* 3.10: pyenv 3.10.13 lib/libpython3.10.so */
	{
		.major = 3, .minor = 10, .debug_build = false,
		.frame_model = PY_FRAMES_OBJECT,
		.line_model = PY_LINES_310,
		.gil_model = PY_GIL_RUNTIME_TSTATE,
		.code_tag_mask = 0, .owner_first_shim = NO,
		.owner_generator = NO,
		.runtime = { .interpreters_head = 32, .tstate_current = 568,
		             .gil_struct = 352,
		             .gc_collecting = NO },
		.interp = { .next = 0, .tstate_head = 8, .id = 24,
		            .gil_ptr = NO,
		            .gc_collecting = 816 },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 24,
		            .thread_id = 176, .native_thread_id = NO,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_37,
		.cframe = { .current_frame = NO, .root = 264,
		            .chain = 48, .previous = 8 },
		.frame_object = { .f_back = 24, .f_code = 32, .f_lasti = 96,
		                  .f_running = 108 },
		.iframe = { .code = NO, .previous = NO, .instr = NO,
		            .owner = NO, .is_entry = NO, .tlbc_index = NO,
		            .localsplus = NO },
		.code = { .filename = 104, .name = 112, .qualname = NO,
		          .firstlineno = 40, .linetable = 120,
		          .code_adaptive = NO,
		          .firsttraceable = NO, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 48,
		             .compact_size = 72, .legacy_data = 72,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = NO, .top = NO, .framesize = NO,
		               .depth_left = NO, .depth_limit = NO },
		VARS_OBJECT(16, 24, 36, 28, 72, 352),
		OBJECTS_GROUPS_310,
		.objects = OBJECTS_310,
		.frame_state = FRAME_STATE_310,
	},
	/* 3.11: pyenv 3.11.7 lib/libpython3.11.so */
	{
		.major = 3, .minor = 11, .debug_build = false,
		.frame_model = PY_FRAMES_CFRAME,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_RUNTIME_TSTATE,
		.code_tag_mask = 0, .owner_first_shim = NO,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 40, .tstate_current = 576,
		             .gil_struct = 360,
		             .gc_collecting = NO },
		.interp = { .next = 0, .tstate_head = 16, .id = 48,
		            .gil_ptr = NO,
		            .gc_collecting = 848 },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 56,
		            .thread_id = 152, .native_thread_id = 160,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_311,
		.cframe = { .current_frame = 8, .root = 336,
		            .chain = 56, .previous = 16 },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 32, .previous = 48, .instr = 56,
		            .owner = 69, .is_entry = 68, .tlbc_index = NO,
		            .localsplus = 72 },
		.code = { .filename = 112, .name = 120, .qualname = 128,
		          .firstlineno = 72, .linetable = 136,
		          .code_adaptive = 184,
		          .firsttraceable = 168, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 48,
		             .compact_size = 72, .legacy_data = 72,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = NO, .top = NO, .framesize = NO,
		               .depth_left = NO, .depth_limit = NO },
		VARS_IFRAME(56, 64, 8),
		OBJECTS_GROUPS_311,
		.objects = OBJECTS_311,
		.frame_state = FRAME_STATE_310,
	},
	/* 3.11d: Debian /usr/bin/python3.11d (3.11.2-6+deb12u9) */
	{
		.major = 3, .minor = 11, .debug_build = true,
		.frame_model = PY_FRAMES_CFRAME,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_RUNTIME_TSTATE,
		.code_tag_mask = 0, .owner_first_shim = NO,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 40, .tstate_current = 576,
		             .gil_struct = 360,
		             .gc_collecting = NO },
		.interp = { .next = 0, .tstate_head = 16, .id = 48,
		            .gil_ptr = NO,
		            .gc_collecting = 848 },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 56,
		            .thread_id = 152, .native_thread_id = 160,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_311,
		.cframe = { .current_frame = 8, .root = 336,
		            .chain = 56, .previous = 16 },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 32, .previous = 48, .instr = 56,
		            .owner = 69, .is_entry = 68, .tlbc_index = NO,
		            .localsplus = 72 },
		.code = { .filename = 112, .name = 120, .qualname = 128,
		          .firstlineno = 72, .linetable = 136,
		          .code_adaptive = 184,
		          .firsttraceable = 168, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 48,
		             .compact_size = 72, .legacy_data = 72,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = NO, .top = NO, .framesize = NO,
		               .depth_left = NO, .depth_limit = NO },
		VARS_IFRAME(56, 64, 8),
		OBJECTS_GROUPS_311,
		.objects = OBJECTS_311,
		.frame_state = FRAME_STATE_310,
	},
	/* 3.12: pyenv 3.12.1 lib/libpython3.12.so */
	{
		.major = 3, .minor = 12, .debug_build = false,
		.frame_model = PY_FRAMES_CFRAME,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_INTERP_STATE,
		.code_tag_mask = 0, .owner_first_shim = 3,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 40, .tstate_current = NO,
		             .gc_collecting = NO },
		.interp = { .next = 0, .tstate_head = 72, .id = 8,
		            .gil_ptr = 384,
		            .gc_collecting = 312 },
		.gil = { .locked = 16, .last_holder = 8 },
		.tstate = { .next = 8, .interp = 16, .frame = 56,
		            .thread_id = 136, .native_thread_id = 144,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_312,
		.cframe = { .current_frame = 0, .root = 272, .chain = NO, .previous = NO },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 70,
		            .is_entry = NO, .tlbc_index = NO,
		            .localsplus = 72 },
		.code = { .filename = 112, .name = 120, .qualname = 128,
		          .firstlineno = 68, .linetable = 136,
		          .code_adaptive = 192,
		          .firsttraceable = 176, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 40,
		             .compact_size = 56, .legacy_data = 56,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = 232, .top = 240, .framesize = 76,
		               .depth_left = 28, .depth_limit = 32 },
		VARS_IFRAME(52, 60, 24),
		OBJECTS_GROUPS_312,
		.objects = OBJECTS_312,
		.frame_state = FRAME_STATE_310,
	},
	/* 3.13: pyenv 3.13.0 libpython3.13.so; = sid 3.13.18-1 .debug */
	{
		.major = 3, .minor = 13, .debug_build = false,
		.frame_model = PY_FRAMES_DIRECT,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_INTERP_STATE,
		.code_tag_mask = 0, .owner_first_shim = 3,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 632, .tstate_current = NO,
		             .gc_collecting = NO },
		.interp = { .next = 7264, .tstate_head = 7344, .id = 7272,
		            .gil_ptr = 16,
		            .gc_collecting = 7600 },
		.gil = { .locked = 16, .last_holder = 8 },
		.tstate = { .next = 8, .interp = 16, .frame = 72,
		            .thread_id = 152, .native_thread_id = 160,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_313,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 70,
		            .is_entry = NO, .tlbc_index = NO,
		            .localsplus = 72 },
		.code = { .filename = 112, .name = 120, .qualname = 128,
		          .firstlineno = 68, .linetable = 136,
		          .code_adaptive = 200,
		          .firsttraceable = 184, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 40,
		             .compact_size = 56, .legacy_data = 56,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = 232, .top = 240, .framesize = 76,
		               .depth_left = 44, .depth_limit = 48 },
		VARS_IFRAME(52, 60, 24),
		OBJECTS_GROUPS_312,
		.objects = OBJECTS_313,
		.frame_state = FRAME_STATE_313,
	},
	/* 3.13d: sid /usr/bin/python3.13d (python3.13-dbg 3.13.18-1) */
	{
		.major = 3, .minor = 13, .debug_build = true,
		.frame_model = PY_FRAMES_DIRECT,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_INTERP_STATE,
		.code_tag_mask = 0, .owner_first_shim = 3,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 632, .tstate_current = NO,
		             .gc_collecting = NO },
		.interp = { .next = 7264, .tstate_head = 7344, .id = 7272,
		            .gil_ptr = 16,
		            .gc_collecting = 7600 },
		.gil = { .locked = 16, .last_holder = 8 },
		.tstate = { .next = 8, .interp = 16, .frame = 72,
		            .thread_id = 152, .native_thread_id = 160,
		            .base_frame = NO,
		            .state = NO },
		.exc = EXC_313,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 70,
		            .is_entry = NO, .tlbc_index = NO,
		            .localsplus = 72 },
		.code = { .filename = 112, .name = 120, .qualname = 128,
		          .firstlineno = 68, .linetable = 136,
		          .code_adaptive = 200,
		          .firsttraceable = 184, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 40,
		             .compact_size = 56, .legacy_data = 56,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = 232, .top = 240, .framesize = 76,
		               .depth_left = 44, .depth_limit = 48 },
		VARS_IFRAME(52, 60, 24),
		OBJECTS_GROUPS_312,
		.objects = OBJECTS_313,
		.frame_state = FRAME_STATE_313,
	},
	/* 3.14: sid python3.14 3.14.10-1, its build-id .debug file */
	LAYOUT_314(14, 0, false, OBJECTS_314),
	/* 3.14d: sid /usr/bin/python3.14d (python3.14-dbg 3.14.10-1) */
	LAYOUT_314(14, 0, true, OBJECTS_314),
	/* 3.15: sid python3.15 3.15.2-1, its build-id .debug file */
	{
		.major = 3, .minor = 15, .debug_build = false,
		.first_hex = 0x030f00a1,
		.frame_model = PY_FRAMES_DIRECT,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_INTERP_STATE,
		.code_tag_mask = 3, .owner_first_shim = 3,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 936, .tstate_current = NO,
		             .gc_collecting = NO },
		.interp = { .next = 7264, .tstate_head = 7336, .id = 7272,
		            .gil_ptr = 16,
		            .gc_collecting = 7512 },
		.gil = { .locked = 16, .last_holder = 8 },
		.tstate = { .next = 8, .interp = 16, .frame = 72,
		            .thread_id = 176, .native_thread_id = 184,
		            .base_frame = 80,
		            .state = NO },
		.exc = EXC_315,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 74,
		            .is_entry = NO, .tlbc_index = NO,
		            .localsplus = 80 },
		.code = { .filename = 112, .name = 120, .qualname = 128,
		          .firstlineno = 68, .linetable = 136,
		          .code_adaptive = 208,
		          .firsttraceable = 192, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 40,
		             .compact_size = 56, .legacy_data = 56,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = 256, .top = 264, .framesize = 76,
		               .depth_left = 52, .depth_limit = 56 },
		VARS_IFRAME(52, 60, 24),
		OBJECTS_GROUPS_312,
		.objects = OBJECTS_315,
		.frame_state = FRAME_STATE_315,
		.gc_lists = GC_LISTS_315,
	},
	/* 3.15d: sid /usr/bin/python3.15d (python3.15-dbg 3.15.2-1) */
	{
		.major = 3, .minor = 15, .debug_build = true,
		.first_hex = 0x030f00a1,
		.frame_model = PY_FRAMES_DIRECT,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_INTERP_STATE,
		.code_tag_mask = 3, .owner_first_shim = 3,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 936, .tstate_current = NO,
		             .gc_collecting = NO },
		.interp = { .next = 7264, .tstate_head = 7336, .id = 7272,
		            .gil_ptr = 16,
		            .gc_collecting = 7512 },
		.gil = { .locked = 16, .last_holder = 8 },
		.tstate = { .next = 8, .interp = 16, .frame = 72,
		            .thread_id = 176, .native_thread_id = 184,
		            .base_frame = 80,
		            .state = NO },
		.exc = EXC_315,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 74,
		            .is_entry = NO, .tlbc_index = NO,
		            .localsplus = 80 },
		.code = { .filename = 112, .name = 120, .qualname = 128,
		          .firstlineno = 68, .linetable = 136,
		          .code_adaptive = 208,
		          .firsttraceable = 192, .tlbc = NO },
		.unicode = { .length = 16, .state = 32, .ascii_size = 40,
		             .compact_size = 56, .legacy_data = 56,
		             .kind_bit = 2 },
		.bytes = { .ob_size = 16, .ob_sval = 32 },
		.datastack = { .chunk = 256, .top = 264, .framesize = 76,
		               .depth_left = 52, .depth_limit = 56 },
		VARS_IFRAME(52, 60, 24),
		OBJECTS_GROUPS_312,
		.objects = OBJECTS_315,
		.frame_state = FRAME_STATE_315,
		.gc_lists = GC_LISTS_315,
	},
	/* 3.15.0a0: python3.15 built from ../shared/cpython-ft without
	 * --disable-gil (tests/setup-ft.sh), -g: 3.14's structs (see the
	 * free-threaded entries above), the interpreter's module dict 24
	 * bytes earlier */
	LAYOUT_314(15, 0x030f00a0, false, OBJECTS_315A0),
	LAYOUT_314T(14, 0),
	LAYOUT_314T(15, 0x030f00a0),
	/* 3.13t: 3.13's entry with the free-threaded object header (see
	 * above); not measured */
	{
		.major = 3, .minor = 13, .debug_build = false,
		.free_threaded = true,
		.frame_model = PY_FRAMES_DIRECT,
		.line_model = PY_LINES_LOCATIONS,
		.gil_model = PY_GIL_NONE,
		.code_tag_mask = 0, .owner_first_shim = 3,
		.owner_generator = 1,
		.runtime = { .interpreters_head = 632, .tstate_current = NO,
		             .gc_collecting = NO },
		.interp = { .next = 7264, .tstate_head = 7344, .id = 7272,
		            .gil_ptr = 16,
		            .gc_collecting = 7600 },
		.gil = { .locked = NO, .last_holder = NO },
		.tstate = { .next = 8, .interp = 16, .frame = 72,
		            .thread_id = 152, .native_thread_id = 160,
		            .base_frame = NO,
		            .state = 40 },
		.exc = EXC_313,
		.cframe = { .current_frame = NO, .root = NO, .chain = NO, .previous = NO },
		.frame_object = { .f_back = NO, .f_code = NO, .f_lasti = NO,
		                  .f_running = NO },
		.iframe = { .code = 0, .previous = 8, .instr = 56, .owner = 70,
		            .is_entry = NO, .tlbc_index = NO,
		            .localsplus = 72 },
		.code = { .filename = 112 + FT_HEAD, .name = 120 + FT_HEAD,
		          .qualname = 128 + FT_HEAD, .firstlineno = 68 + FT_HEAD,
		          .linetable = 136 + FT_HEAD,
		          .code_adaptive = 200 + FT_HEAD,
		          .firsttraceable = 184 + FT_HEAD, .tlbc = NO },
		UNICODE_FT, BYTES_FT,
		.datastack = { .chunk = 232, .top = 240,
		               .framesize = 76 + FT_HEAD,
		               .depth_left = 44, .depth_limit = 48 },
		VARS_FT(68, 76, 64, 96, 112),
		OBJECTS_GROUPS_FT,
		.objects = OBJECTS_313T,
		.frame_state = FRAME_STATE_313,
		.gc_lists = { .collecting = 0, .first = 0, .stride = 0,
			      .lists = 0 },
	},
};

/*
 * Exact match only: a debug build we never measured (e.g. 3.12d, or 3.6/3.7
 * where Py_DEBUG adds Py_TRACE_REFS pointers to every object) must not be
 * decoded with the release layout, nor a free-threaded build with the
 * default one, so it gets NULL like an unknown version.
 */
const struct py_layout *py_layout_builtin(const struct py_build *b)
{
	const struct py_layout *best = NULL;
	int major = (int)(b->hex >> 24), minor = (int)((b->hex >> 16) & 0xff);
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct py_layout *l = &layouts[i];
		if (l->major == major && l->minor == minor &&
		    l->debug_build == b->debug_build &&
		    l->free_threaded == b->free_threaded &&
		    l->first_hex <= b->hex &&
		    (!best || l->first_hex > best->first_hex))
			best = l;
	}
	return best;
}

void py_layout_for_arch(struct py_layout *L, unsigned mutex_extra)
{
	/* 3.7-3.11: _PyRuntime.ceval.gil (struct _gil_runtime_state) holds
	 * two pthread_mutex_t, mutex and switch_mutex, before gilstate.
	 * Measured on Debian's arm64 3.11: tstate_current at 592, not 576. */
	if (L->runtime.tstate_current != PYD_NO_FIELD)
		L->runtime.tstate_current += (int32_t)(2 * mutex_extra);
}
