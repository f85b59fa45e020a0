/*
 * The call a suspended frame is in (pending.c): what a switched-out
 * greenlet waits on.
 */
#ifndef PYD_DECODE_PENDING_H
#define PYD_DECODE_PENDING_H

#include "session.h"

/*
 * The pending call of f, a frame that switched away inside a call (a
 * greenlet's innermost frame) into *out (malloc'd; pyd_call_free), or
 * NULL where the interpreter keeps no value stack in a running frame
 * (before 3.14) or the callable is none we can name.  Fails only if the
 * target is gone or memory ran out.
 */
enum pyd_err pyd_pending_call(struct pyd_session *s, const struct pyd_frame *f,
			      struct pyd_call **out);
void pyd_call_free(struct pyd_call *c);

#endif
