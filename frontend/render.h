/*
 * A finished profile written as the options ask (format, threads, limit,
 * idle), for every shell that writes one: pystack-dump sample and report,
 * and the Python API's Sampler (through pystack-dump sample and report).
 */
#ifndef PYD_FRONTEND_RENDER_H
#define PYD_FRONTEND_RENDER_H

#include "../core/buf.h"
#include "../core/report/profiles.h"
#include "options.h"

/* The table leaves idle threads out, unless o->idle. */
bool pyd_profile_hides_idle(const struct pyd_opts *o);

/*
 * prof, finished here, as o->format (o->threads, o->limit; the table
 * leaves idle threads out unless o->idle) appended to b, source lines
 * (the heat map's) read under directory root (NULL or "": as named).
 * PYD_E_NOMEM, or PYD_E_USAGE for a streamed format (written as samples
 * come, never from a finished profile).
 */
enum pyd_err pyd_profile_render(struct pyd_buf *b, struct pyd_profile *prof,
                                const struct pyd_opts *o, const char *root);

#endif
