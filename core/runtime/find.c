/*
 * Finding the runtime, every way we know (runtime.h): the one answer to
 * "where is the interpreter" for the CLI and both debugger plugins.
 */
#include "runtime.h"

enum pyd_err pyd_runtime_find(const struct pyd_memsrc *src,
			      const struct pyd_memsrc *scan_src,
			      struct pyd_runtime *rt)
{
	enum pyd_err err = PYD_E_NOTPYTHON;
	if (src->symbol)
		err = pyd_runtime_find_symbols(src, rt);
	if (err == PYD_E_NOTPYTHON && src->mappings)
		err = pyd_runtime_find_elf(src, rt);
	if (err == PYD_E_NOTPYTHON && scan_src->mappings)
		err = pyd_runtime_find_cookie(scan_src, rt);
	return err;
}
