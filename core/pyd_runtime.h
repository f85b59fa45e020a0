/*
 * The runtime record: where a target's interpreter is and which CPython
 * it is.  Runtime discovery (runtime/runtime.h) fills it in; a snapshot
 * (memsrc/snapshot.c) keeps it, so that a snapshot is read without the
 * binaries.  Here, below both, so that neither reaches up for it.
 */
#ifndef PYD_RUNTIME_RECORD_H
#define PYD_RUNTIME_RECORD_H

#include <stdbool.h>
#include <stdint.h>

struct pyd_runtime {
	char binary[4096];            /* file holding the interpreter */
	uint64_t runtime_addr;        /* _PyRuntime (3.7+) */
	uint64_t py_version_addr;     /* Py_Version (3.11+) */
	uint64_t tstate_current_addr; /* _PyThreadState_Current (3.6) */
	uint64_t interp_head_addr;    /* interp_head (3.6; .symtab only) */
	uint64_t code_type_addr;      /* PyCode_Type, 0 if unknown */
	/* The _asyncio module's _Py_AsyncioModuleDebugOffsets (3.14+: the
	 * .AsyncioDebug section of _asyncio*.so, or of the executable or
	 * libpython when the module is built in); 0 if not found. */
	uint64_t asyncio_debug_addr;
	int major, minor;             /* 0 if not known yet */
	char version[32];             /* "3.9.18", or "" */
	bool debug_build;             /* Py_DEBUG */
	/* The binary's ELF machine, 0 if unknown: an arm64 python under
	 * qemu is an x86-64 process whose interpreter is arm64's. */
	unsigned e_machine;
};

#endif
