/*
 * A finished profile written as the options ask (profile.h).
 */
#include <string.h>

#include "render.h"
#include "source.h"

bool pyd_profile_hides_idle(const struct pyd_opts *o)
{
	return !o->idle && !strcmp(o->format->name, "table");
}

enum pyd_err pyd_profile_render(struct pyd_buf *b, struct pyd_profile *prof,
                                const struct pyd_opts *o, const char *root)
{
	pyd_profile_finish(prof);
	struct source_cache *sc = source_cache_new(root);
	struct pyd_prof_opts po = {.per_thread = o->threads,
	                           .active = pyd_profile_hides_idle(o),
	                           .limit = o->limit,
	                           .source_line = source_cache_line,
	                           .source_ctx = sc};
	enum pyd_err err = pyd_report_prof(b, prof, o->format, &po);
	source_cache_free(sc);
	return err ? err : b->failed ? PYD_E_NOMEM : PYD_OK;
}
