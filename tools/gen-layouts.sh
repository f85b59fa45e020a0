#!/usr/bin/env bash
# Print the struct py_layout numbers (core/cpython/layouts.c) of one CPython
# build, read with gdb from its DWARF, so the built-in table is reproducible.
#
#   tools/gen-layouts.sh 3.9 ~/.pyenv/versions/3.9.18/lib/libpython3.9.so
#   tools/gen-layouts.sh 3.11 /usr/bin/python3.11d
#   tools/gen-layouts.sh 3.14 /usr/lib/debug/.build-id/xx/yyyy.debug
#   tools/gen-layouts.sh 3.9 .../libpython3.9.so .../lib-dynload/_asyncio.cpython-39-x86_64-linux-gnu.so
#
# For 3.7 - 3.15 the numbers of struct py_objects (the OBJECTS_3x macros of
# layouts.c) follow as "objects.FIELD VALUE" lines: the generic object
# offsets from FILE, the FutureObj / TaskObj ones from the _asyncio module
# given as a third argument (it carries its own DWARF; 3.15 builds it into
# the interpreter: pass that file again).  3.14+ has no stacktop (gdb says
# so; tasks.c walks those frames).  The frame states,
# opcodes and obj_dict model are set by hand (see layouts.c).
#
# The file must carry DWARF (a debug build, a -g build, or a distribution's
# separate .debug file).  Fields the version lacks print as PYD_NO_FIELD; a
# field gdb cannot resolve prints as ERROR, so a pasted table won't compile.
# The frame-owner enum and the unicode state bits follow as comments, because
# the decoders depend on them too and they are not offsets; the feature
# switches (frame/line/GIL model, tag mask, first shim owner) are set by hand.
set -euo pipefail

[[ $# -eq 2 || $# -eq 3 ]] || {
	echo "usage: $0 3.MINOR FILE-WITH-DWARF [_ASYNCIO-MODULE-WITH-DWARF]" >&2; exit 2; }
minor=${1#3.}
file=$2
asyncio_so=${3:-}

# "group.field expression" for every field this version has.
fields() {
	local F='struct _PyInterpreterFrame' G='struct _gil_runtime_state'
	local ts=tstate_head frame=frame code=f_code instr=prev_instr lt=co_lnotab
	((minor >= 7)) && echo "runtime.interpreters_head _PyRuntimeState interpreters.head"
	((minor >= 7 && minor <= 11)) && echo "runtime.tstate_current _PyRuntimeState gilstate.tstate_current"
	((minor >= 7)) && echo "interp.id PyInterpreterState id"
	((minor == 7 || minor == 8)) && echo "runtime.gc_collecting _PyRuntimeState gc.collecting"
	((minor >= 9)) && echo "interp.gc_collecting PyInterpreterState gc.collecting"
	if ((minor >= 12)); then echo "exc.raised PyThreadState current_exception"
	else echo "exc.raised PyThreadState curexc_type"; fi
	if ((minor >= 7)); then echo "exc.handled PyThreadState exc_state.exc_value"
		echo "exc.info PyThreadState exc_info"
		echo "exc.item_value _PyErr_StackItem exc_value"
	else echo "exc.handled PyThreadState exc_value"; fi
	((minor >= 11)) && echo "tstate.native_thread_id PyThreadState native_thread_id"
	((minor >= 15)) && echo "tstate.base_frame PyThreadState base_frame"
	((minor >= 10)) && lt=co_linetable
	((minor == 11)) && echo "iframe.is_entry $F is_entry"
	((minor == 11 || minor == 12)) && { frame=cframe; echo "cframe.current_frame _PyCFrame current_frame"
		echo "cframe.root PyThreadState root_cframe"; }
	# the runs' chain, read where thread states share an OS thread (3.12+:
	# the shims tell their runs apart instead)
	((minor == 10)) && { echo "cframe.root PyThreadState root_cframe"
		echo "cframe.chain PyThreadState cframe"; echo "cframe.previous CFrame previous"; }
	((minor == 11)) && { echo "cframe.chain PyThreadState cframe"
		echo "cframe.previous _PyCFrame previous"; }
	((minor >= 11)) && ts=threads.head
	((minor >= 12)) && { echo "interp.gil_ptr PyInterpreterState ceval.gil"
		echo "gil.locked $G locked"; echo "gil.last_holder $G last_holder"; }
	((minor >= 12)) && cat <<-EOF
	datastack.chunk PyThreadState datastack_chunk
	datastack.top PyThreadState datastack_top
	datastack.framesize PyCodeObject co_framesize
	datastack.depth_left PyThreadState py_recursion_remaining
	datastack.depth_limit PyThreadState py_recursion_limit
	EOF
	((minor >= 13)) && { frame=current_frame; code=f_executable; instr=instr_ptr; }
	if ((minor <= 10)); then
		for f in f_back f_code f_lasti; do echo "frame_object.$f PyFrameObject $f"; done
		if ((minor <= 9)); then echo "frame_object.f_running PyFrameObject f_executing"
		else echo "frame_object.f_running PyFrameObject f_state"; fi
	else
		echo "iframe.code $F $code"; echo "iframe.previous $F previous"
		echo "iframe.instr $F $instr"; echo "iframe.owner $F owner"
		echo "code.qualname PyCodeObject co_qualname"
		echo "code.code_adaptive PyCodeObject co_code_adaptive"
		echo "code.firsttraceable PyCodeObject _co_firsttraceable"
	fi
	cat <<-EOF
	interp.next PyInterpreterState next
	interp.tstate_head PyInterpreterState $ts
	tstate.next PyThreadState next
	tstate.interp PyThreadState interp
	tstate.frame PyThreadState $frame
	tstate.thread_id PyThreadState thread_id
	code.filename PyCodeObject co_filename
	code.name PyCodeObject co_name
	code.firstlineno PyCodeObject co_firstlineno
	code.linetable PyCodeObject $lt
	unicode.length PyASCIIObject length
	unicode.state PyASCIIObject state
	unicode.ascii_size sizeof PyASCIIObject
	unicode.compact_size sizeof PyCompactUnicodeObject
	unicode.legacy_data PyUnicodeObject data
	bytes.ob_size PyBytesObject ob_base.ob_size
	bytes.ob_sval PyBytesObject ob_sval
	object.ob_type PyObject ob_type
	object.tp_name PyTypeObject tp_name
	EOF
}

# One gdb run for all fields: a failing -ex does not stop the later ones.
args=()
while read -r name type member; do
	# "struct _tag field" arrives split in three words: re-join the tag.
	[[ $type == struct ]] && { type="struct ${member%% *}"; member=${member#* }; }
	if [[ $type == sizeof ]]; then expr="sizeof($member)"
	else expr="(int)&(($type*)0)->$member"; fi
	args+=(-ex "printf \"$name %d\\n\", $expr")
done < <(fields)
args+=(-ex 'echo frame owners:\n' -ex 'ptype enum _frameowner' -ex 'ptype /o PyASCIIObject')
out=$(gdb -nx -batch "${args[@]}" "$file" 2>&1) || true # errors show below
# 3.13+: the _Py_DebugOffsets member order that debug_offsets.c lists.
dbgoff=
if ((minor >= 13)); then
	dbgoff=$(gdb -nx -batch -ex 'ptype /o struct _Py_DebugOffsets' "$file" |
	awk '/struct .*\{/ { n = 0 } /uint64_t/ { sub(/;/, "", $NF); m[n++] = $NF }
	     /\} [a-z_]+;/ { g = $2; sub(/;/, "", g)
		for (i = 0; i < n; i++) printf "\"%s.%s\", ", g, m[i]; n = 0 }') || true
fi

# Lay the numbers out as the table's designated initializers.
groups="runtime:interpreters_head,tstate_current,gc_collecting
interp:next,tstate_head,id,gil_ptr,gc_collecting
gil:locked,last_holder tstate:next,interp,frame,thread_id,native_thread_id,base_frame
exc:raised,handled,info,item_value
cframe:current_frame,root,chain,previous frame_object:f_back,f_code,f_lasti,f_running
iframe:code,previous,instr,owner,is_entry
code:filename,name,qualname,firstlineno,linetable,code_adaptive,firsttraceable
unicode:length,state,ascii_size,compact_size,legacy_data bytes:ob_size,ob_sval
datastack:chunk,top,framesize,depth_left,depth_limit object:ob_type,tp_name"
have=$(fields | awk '{print $1}')
for g in $groups; do
	line="	.${g%%:*} = {"
	IFS=, read -ra fs <<<"${g#*:}"
	for f in "${fs[@]}"; do
		key=${g%%:*}.$f
		if grep -qx "$key" <<<"$have"; then
			v=$(awk -v k="$key" '$1 == k {print $2}' <<<"$out")
			line+=" .$f = ${v:-ERROR},"
		else
			line+=" .$f = PYD_NO_FIELD,"
		fi
	done
	echo "${line%,} },"
done
# Anything gdb complained about, then the enum and the state bits.
grep -vE '^[a-z_]+\.[a-z_]+ -?[0-9]+$' <<<"$out" | sed 's|^|	// |'
[[ -z $dbgoff ]] || { echo "	// _Py_DebugOffsets members after the header:"
	fold -s -w 70 <<<"$dbgoff" | sed 's|^|	// |'; }

# struct py_objects and the groups it shares with every layout (3.7 - 3.15):
# "field type member" lines.
old_fields() {
	local P=PyInterpreterState mods=modules
	((minor >= 12)) && mods=imports.modules
	cat <<-EOF
	interp_modules $P $mods
	tstate_dict PyThreadState dict
	ma_used PyDictObject ma_used
	ma_keys PyDictObject ma_keys
	ma_values PyDictObject ma_values
	dk_nentries PyDictKeysObject dk_nentries
	dk_indices PyDictKeysObject dk_indices
	tp_basicsize PyTypeObject tp_basicsize
	tp_dictoffset PyTypeObject tp_dictoffset
	object.tp_flags PyTypeObject tp_flags
	tp_base PyTypeObject tp_base
	ht_cached_keys PyHeapTypeObject ht_cached_keys
	wr_object PyWeakReference wr_object
	seq_size PyVarObject ob_size
	tuple_items PyTupleObject ob_item
	list_items PyListObject ob_item
	func_closure PyFunctionObject func_closure
	func_name PyFunctionObject func_name
	cell_ref PyCellObject ob_ref
	meth_self PyMethodObject im_self
	EOF
	if ((minor <= 10)); then
		echo "dk_size PyDictKeysObject dk_size"
		echo "gi_frame PyGenObject gi_frame"
		echo "f_valuestack PyFrameObject f_valuestack"
		echo "co_code PyCodeObject co_code"
		echo "pylong.size PyVarObject ob_size"
		echo "pylong.digit PyLongObject ob_digit"
		if ((minor == 10)); then
			echo "f_stackdepth PyFrameObject f_stackdepth"
			echo "f_state PyFrameObject f_state"
		else
			echo "f_stacktop PyFrameObject f_stacktop"
		fi
	else
		echo "dk_log2_size PyDictKeysObject dk_log2_size"
		echo "dk_log2_index_bytes PyDictKeysObject dk_log2_index_bytes"
		echo "dk_kind PyDictKeysObject dk_kind"
		echo "dv_values PyDictValues values"
		echo "gen.gi_iframe PyGenObject gi_iframe"
		echo "gen.gi_frame_state PyGenObject gi_frame_state"
		echo "if_stacktop struct _PyInterpreterFrame stacktop"
		echo "iframe.localsplus struct _PyInterpreterFrame localsplus"
		if ((minor >= 12)); then
			echo "pylong.size PyLongObject long_value.lv_tag"
			echo "pylong.digit PyLongObject long_value.ob_digit"
		else
			echo "pylong.size PyVarObject ob_size"
			echo "pylong.digit PyLongObject ob_digit"
		fi
	fi
}
old_task_fields() {
	echo "fut_loop FutureObj fut_loop"
	echo "fut_callback0 FutureObj fut_callback0"
	echo "fut_callbacks FutureObj fut_callbacks"
	echo "fut_state FutureObj fut_state"
	echo "task_fut_waiter TaskObj task_fut_waiter"
	echo "task_coro TaskObj task_coro"
	((minor >= 8)) && echo "task_name TaskObj task_name"
	echo "task_size sizeof TaskObj"
}
old_print() { # FILE < "field type member" lines
	local a=()
	while read -r name type member; do
		[[ $type == struct ]] && { type="struct ${member%% *}"; member=${member#* }; }
		if [[ $type == sizeof ]]; then expr="sizeof($member)"
		else expr="(int)&(($type*)0)->$member"; fi
		# A bare name is a member of struct py_objects; group.name one
		# of the layout group's (gen, pylong, iframe, object).
		[[ $name == *.* ]] || name=objects.$name
		a+=(-ex "printf \"$name %d\\n\", $expr")
	done
	gdb -nx -batch "${a[@]}" "$1" 2>&1 | sed 's|^|	// |' || true
}
if ((minor >= 7 && minor <= 15)); then
	echo "	// struct py_objects (OBJECTS_3$minor in layouts.c):"
	old_fields | old_print "$file"
	if [[ -n $asyncio_so ]]; then old_task_fields | old_print "$asyncio_so"
	else echo "	// (pass the _asyncio module for FutureObj / TaskObj)"; fi
fi
