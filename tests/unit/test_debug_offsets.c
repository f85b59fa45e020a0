/* The _Py_DebugOffsets member lists derived from the one member table:
 * each version's must be the block order of the real builds, member for
 * member (the lists below were kept by hand before the table existed). */
#include <string.h>

#include "../../core/cpython/debug_offsets.h"
#include "check.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const want_313[] = {
	"runtime_state.size", "runtime_state.finalizing",
	"runtime_state.interpreters_head",
	"interpreter_state.size", "interpreter_state.id",
	"interpreter_state.next", "interpreter_state.threads_head",
	"interpreter_state.gc", "interpreter_state.imports_modules",
	"interpreter_state.sysdict", "interpreter_state.builtins",
	"interpreter_state.ceval_gil", "interpreter_state.gil_runtime_state",
	"interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"thread_state.size", "thread_state.prev", "thread_state.next",
	"thread_state.interp", "thread_state.current_frame",
	"thread_state.thread_id", "thread_state.native_thread_id",
	"thread_state.datastack_chunk", "thread_state.status",
	"interpreter_frame.size", "interpreter_frame.previous",
	"interpreter_frame.executable", "interpreter_frame.instr_ptr",
	"interpreter_frame.localsplus", "interpreter_frame.owner",
	"code_object.size", "code_object.filename", "code_object.name",
	"code_object.qualname", "code_object.linetable",
	"code_object.firstlineno", "code_object.argcount",
	"code_object.localsplusnames", "code_object.localspluskinds",
	"code_object.co_code_adaptive",
	"pyobject.size", "pyobject.ob_type",
	"type_object.size", "type_object.tp_name", "type_object.tp_repr",
	"type_object.tp_flags",
	"tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
	"list_object.size", "list_object.ob_item", "list_object.ob_size",
	"dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
	"float_object.size", "float_object.ob_fval",
	"long_object.size", "long_object.lv_tag", "long_object.ob_digit",
	"bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
	"unicode_object.size", "unicode_object.state", "unicode_object.length",
	"unicode_object.asciiobject_size",
	"gc.size", "gc.collecting",
};

static const char *const want_314[] = {
	"runtime_state.size", "runtime_state.finalizing",
	"runtime_state.interpreters_head",
	"interpreter_state.size", "interpreter_state.id",
	"interpreter_state.next", "interpreter_state.threads_head",
	"interpreter_state.threads_main", "interpreter_state.gc",
	"interpreter_state.imports_modules", "interpreter_state.sysdict",
	"interpreter_state.builtins", "interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state",
	"interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"interpreter_state.code_object_generation",
	"interpreter_state.tlbc_generation",
	"thread_state.size", "thread_state.prev", "thread_state.next",
	"thread_state.interp", "thread_state.current_frame",
	"thread_state.thread_id", "thread_state.native_thread_id",
	"thread_state.datastack_chunk", "thread_state.status",
	"interpreter_frame.size", "interpreter_frame.previous",
	"interpreter_frame.executable", "interpreter_frame.instr_ptr",
	"interpreter_frame.localsplus", "interpreter_frame.owner",
	"interpreter_frame.stackpointer", "interpreter_frame.tlbc_index",
	"code_object.size", "code_object.filename", "code_object.name",
	"code_object.qualname", "code_object.linetable",
	"code_object.firstlineno", "code_object.argcount",
	"code_object.localsplusnames", "code_object.localspluskinds",
	"code_object.co_code_adaptive", "code_object.co_tlbc",
	"pyobject.size", "pyobject.ob_type",
	"type_object.size", "type_object.tp_name", "type_object.tp_repr",
	"type_object.tp_flags",
	"tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
	"list_object.size", "list_object.ob_item", "list_object.ob_size",
	"set_object.size", "set_object.used", "set_object.table",
	"set_object.mask",
	"dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
	"float_object.size", "float_object.ob_fval",
	"long_object.size", "long_object.lv_tag", "long_object.ob_digit",
	"bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
	"unicode_object.size", "unicode_object.state", "unicode_object.length",
	"unicode_object.asciiobject_size",
	"gc.size", "gc.collecting",
	"gen_object.size", "gen_object.gi_name", "gen_object.gi_iframe",
	"gen_object.gi_frame_state",
	"llist_node.next", "llist_node.prev",
	"debugger_support.eval_breaker",
	"debugger_support.remote_debugger_support",
	"debugger_support.remote_debugging_enabled",
	"debugger_support.debugger_pending_call",
	"debugger_support.debugger_script_path",
	"debugger_support.debugger_script_path_size",
};

static const char *const want_315[] = {
	"runtime_state.size", "runtime_state.finalizing",
	"runtime_state.interpreters_head",
	"interpreter_state.size", "interpreter_state.id",
	"interpreter_state.next", "interpreter_state.threads_head",
	"interpreter_state.threads_main", "interpreter_state.gc",
	"interpreter_state.imports_modules", "interpreter_state.sysdict",
	"interpreter_state.builtins", "interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state",
	"interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"interpreter_state.code_object_generation",
	"interpreter_state.tlbc_generation",
	"thread_state.size", "thread_state.prev", "thread_state.next",
	"thread_state.interp", "thread_state.current_frame",
	"thread_state.base_frame", "thread_state.last_profiled_frame",
	"thread_state.last_profiled_frame_seq", "thread_state.thread_id",
	"thread_state.native_thread_id", "thread_state.datastack_chunk",
	"thread_state.status", "thread_state.holds_gil",
	"thread_state.gil_requested", "thread_state.current_exception",
	"thread_state.exc_state",
	"err_stackitem.exc_value",
	"interpreter_frame.size", "interpreter_frame.previous",
	"interpreter_frame.executable", "interpreter_frame.instr_ptr",
	"interpreter_frame.localsplus", "interpreter_frame.owner",
	"interpreter_frame.stackpointer", "interpreter_frame.tlbc_index",
	"code_object.size", "code_object.filename", "code_object.name",
	"code_object.qualname", "code_object.linetable",
	"code_object.firstlineno", "code_object.argcount",
	"code_object.localsplusnames", "code_object.localspluskinds",
	"code_object.co_code_adaptive", "code_object.co_tlbc",
	"pyobject.size", "pyobject.ob_type",
	"type_object.size", "type_object.tp_name", "type_object.tp_repr",
	"type_object.tp_flags", "type_object.tp_basicsize",
	"type_object.tp_dictoffset",
	"heap_type_object.size", "heap_type_object.ht_cached_keys",
	"tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
	"list_object.size", "list_object.ob_item", "list_object.ob_size",
	"set_object.size", "set_object.used", "set_object.table",
	"set_object.mask",
	"dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
	"float_object.size", "float_object.ob_fval",
	"long_object.size", "long_object.lv_tag", "long_object.ob_digit",
	"bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
	"unicode_object.size", "unicode_object.state", "unicode_object.length",
	"unicode_object.asciiobject_size",
	"unicode_object.compactunicodeobject_size",
	"gc.size", "gc.collecting", "gc.frame", "gc.generation_stats_size",
	"gc.generation_stats",
	"gen_object.size", "gen_object.gi_name", "gen_object.gi_iframe",
	"gen_object.gi_frame_state",
	"llist_node.next", "llist_node.prev",
	"debugger_support.eval_breaker",
	"debugger_support.remote_debugger_support",
	"debugger_support.remote_debugging_enabled",
	"debugger_support.debugger_pending_call",
	"debugger_support.debugger_script_path",
	"debugger_support.debugger_script_path_size",
};

static void check_minor(int minor, const char *const *want, size_t nwant)
{
	const char *got[256];
	size_t n = py_debug_offsets_members(minor, got, COUNT(got));
	CHECK_EQ(n, nwant);
	for (size_t i = 0; i < n && i < nwant; i++)
		if (strcmp(got[i], want[i]) != 0) {
			fprintf(stderr, "3.%d member %zu: %s, want %s\n", minor,
				i, got[i], want[i]);
			CHECK_EQ(0, 1);
		}
}

/* Which built-in entry a build gets: by kind, and a pre-release with an
 * entry of its own (3.15.0a0) apart from the releases. */
static void check_builtin(void)
{
	const struct py_layout *a0 =
	    py_layout_builtin(&(struct py_build){0x030f00a0, false, false});
	const struct py_layout *rel =
	    py_layout_builtin(&(struct py_build){0x030f02f0, false, false});
	const struct py_layout *a0t =
	    py_layout_builtin(&(struct py_build){0x030f00a0, false, true});
	const struct py_layout *t314 =
	    py_layout_builtin(&(struct py_build){0x030e0af0, false, true});
	CHECK_EQ(a0 && rel && a0t && t314, 1);
	if (!a0 || !rel || !a0t || !t314)
		return;
	CHECK_EQ(a0->first_hex, 0x030f00a0);
	CHECK_EQ(a0->tstate.base_frame, PYD_NO_FIELD); /* 3.14's structs */
	CHECK_EQ(rel->tstate.base_frame > 0, 1);
	CHECK_EQ(a0t->free_threaded && t314->free_threaded, 1);
	CHECK_EQ(a0t->gil_model, PY_GIL_NONE);
	CHECK_EQ(a0t->object.ob_type, 24); /* the larger object header */
	CHECK_EQ(a0t->code.tlbc > 0 && a0t->iframe.tlbc_index > 0, 1);
	CHECK_EQ(a0->code.tlbc, PYD_NO_FIELD);
	/* no free-threaded 3.12, no debug free-threaded build measured */
	CHECK_EQ(py_layout_builtin(&(struct py_build){0x030c01f0, false, true}) == NULL, 1);
	CHECK_EQ(py_layout_builtin(&(struct py_build){0x030e0af0, true, true}) == NULL, 1);
	/* a debug 3.15.0a0 was never measured: not the release's table */
	CHECK_EQ(py_layout_builtin(&(struct py_build){0x030f00a0, true, false}) == NULL, 1);
}

/* The header says the version and whether the build is free-threaded. */
static void check_header(void)
{
	uint8_t raw[24] = "xdebugpy";
	uint64_t hex = 0x030f00a0, ft = 1;
	bool is_ft = false;
	memcpy(raw + 8, &hex, 8);
	memcpy(raw + 16, &ft, 8);
	CHECK_EQ(py_debug_offsets_header(raw, sizeof raw, &hex, &is_ft), 0);
	CHECK_EQ(hex, 0x030f00a0);
	CHECK_EQ(is_ft, true);
	ft = 2; /* neither 0 nor 1: not a block */
	memcpy(raw + 16, &ft, 8);
	CHECK_EQ(py_debug_offsets_header(raw, sizeof raw, &hex, &is_ft), -1);
	CHECK_EQ(py_debug_offsets_header(raw, 16, &hex, &is_ft), -1);
}

int main(void)
{
	check_builtin();
	check_header();
	check_minor(13, want_313, COUNT(want_313));
	check_minor(14, want_314, COUNT(want_314));
	check_minor(15, want_315, COUNT(want_315));
	/* No block before 3.13; after 3.15 the order is not known yet. */
	CHECK_EQ(py_debug_offsets_members(12, NULL, 0), 0);
	CHECK_EQ(py_debug_offsets_members(16, NULL, 0), 0);
	return check_done("test_debug_offsets");
}
