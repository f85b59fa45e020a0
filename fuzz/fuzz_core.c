/*
 * libFuzzer: an ELF core (its notes: NT_FILE, NT_PRSTATUS, NT_PRPSINFO;
 * its segments), opened with its files hidden, the runtime looked for,
 * then decoded as `pystack-dump --core CORE` does.
 */
#include "../core/memsrc/coredump.h"
#include "../core/runtime/runtime.h"
#include "pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* No file a core names is opened: the fuzzer's cores name the
	 * host's. */
	struct pyd_core_opts opts = {.exe = "/nonexistent",
	                             .sysroot = "/nonexistent"};
	struct pyd_core *core;
	char detail[256];
	if (pyd_core_open(fuzz_file(data, size), &opts, &core, detail,
	                  sizeof detail))
		return 0;
	const struct pyd_memsrc *src = pyd_core_memsrc(core);
	const struct pyd_os_thread *t;
	size_t n;
	if (src->threads)
		src->threads(src->ctx, &t, &n);
	struct pyd_runtime rt;
	if (!pyd_runtime_find(src, src, &rt))
		fuzz_pipeline(src, &rt);
	pyd_core_close(core);
	return 0;
}
