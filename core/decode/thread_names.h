#ifndef PYD_THREAD_NAMES_H
#define PYD_THREAD_NAMES_H

#include "session.h"

/*
 * Give the n threads of interpreter interp their threading.Thread names,
 * matched by ident.  Best effort: where the target does not tell (or the
 * version has no readers for it), the OS names stay.
 */
void pyd_thread_names(struct pyd_session *s, uint64_t interp,
		      struct pyd_thread *t, size_t n);

#endif
