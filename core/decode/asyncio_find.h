#ifndef PYD_ASYNCIO_FIND_H
#define PYD_ASYNCIO_FIND_H

#include "session.h"

/* Address of the _asyncio debug offsets found by content in the target's
 * writable mappings of _asyncio / the interpreter (3.14+, no binaries),
 * or 0. */
uint64_t pyd_asyncio_find_block(struct pyd_session *s);

#endif
