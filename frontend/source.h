/*
 * Source lines for the text report, read from the target's own root so a
 * process in a chroot or container shows its own files.
 */
#ifndef PYD_FRONTEND_SOURCE_H
#define PYD_FRONTEND_SOURCE_H

struct source_cache;

struct source_cache *source_cache_new(const char *root);
/* Matches pyd_report_opts.source_line. */
const char *source_cache_line(void *cache, const char *file, int line);
void source_cache_free(struct source_cache *c);

#endif
