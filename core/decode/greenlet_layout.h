/*
 * Where greenlet's C++ objects keep what we read (greenlets.c): a row
 * per greenlet release we know, or offsets the loaded module's own debug
 * information gives (greenlet_dwarf.c).
 */
#ifndef PYD_DECODE_GREENLET_LAYOUT_H
#define PYD_DECODE_GREENLET_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

/* The most bytes of a greenlet's C++ object we read. */
#define PYD_GREENLET_IMPL_MAX 256

struct glayout {
	const char *release; /* greenlet.__version__ up to its second dot */
	int minor_lo, minor_hi; /* the CPython 3.minors it is built for,
				 * release and debug builds alike */
	int32_t dict, pimpl; /* PyGreenlet.dict, .pimpl */
	/* greenlet::Greenlet */
	int32_t self, stack_start, stack_stop, top_frame, current_frame;
	int32_t run_callable, parent; /* UserGreenlet */
	int32_t thread_state;         /* MainGreenlet */
	int32_t ts_current;           /* ThreadState.current_greenlet */
	int32_t f_frame;              /* PyFrameObject.f_frame */
	uint8_t impl_size;            /* bytes of the C++ object read */
};

/*
 * The layout of the greenlet module in the ELF file fd (path: its name,
 * for finding a separate debug file), from its DWARF (embedded, or a
 * file its build id or debug link names, where elfutils finds one): true
 * if every offset was found and fits.  fd is closed.
 */
bool pyd_greenlet_dwarf(int fd, const char *path, struct glayout *out);

#endif
