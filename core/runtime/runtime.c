/*
 * Runtime discovery shared by every kind of source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

bool pyd_parse_version(const char *s, int *major, int *minor)
{
	char *end;
	long ma = strtol(s, &end, 10);
	if (end == s || *end != '.')
		return false;
	const char *p = end + 1;
	long mi = strtol(p, &end, 10);
	if (end == p || ma < 2 || ma > 9 || mi < 0 || mi > 99)
		return false;
	*major = (int)ma;
	*minor = (int)mi;
	return true;
}

enum pyd_err pyd_runtime_mappings(const struct pyd_memsrc *src,
				  const struct pyd_mapping **maps, size_t *n)
{
	if (!src->mappings)
		return PYD_E_NOTPYTHON;
	return src->mappings(src->ctx, maps, n);
}

enum pyd_err pyd_runtime_find_symbols(const struct pyd_memsrc *src,
				      struct pyd_runtime *rt)
{
	memset(rt, 0, sizeof *rt);
	if (!src->symbol)
		return PYD_E_NOTPYTHON;
	src->symbol(src->ctx, "_PyRuntime", &rt->runtime_addr);
	src->symbol(src->ctx, "Py_Version", &rt->py_version_addr);
	src->symbol(src->ctx, "_PyThreadState_Current", &rt->tstate_current_addr);
	src->symbol(src->ctx, "interp_head", &rt->interp_head_addr);
	src->symbol(src->ctx, "PyCode_Type", &rt->code_type_addr);
	uint64_t dbg = 0;
	rt->debug_build = src->symbol(src->ctx, "_Py_NegativeRefcount", &dbg) ==
				  PYD_OK && dbg;
	if (!rt->runtime_addr && !rt->tstate_current_addr)
		return PYD_E_NOTPYTHON;
	return PYD_OK;
}
