/* Linked into the static pystack-dump only (-Dstatic=true), with
 * -Wl,--wrap=dlopen: every dlopen the static archives make comes here.
 *
 * The one caller is libdwfl's debuginfod client (libdw.a), which, when a
 * native frame's module has no debug information on disk, tries to load
 * libdebuginfod.so.  A static glibc program can load a shared object only
 * when it is of the very glibc it was linked with: on another machine that
 * is a crash, not a download.  Refusing it is what libdwfl already handles
 * (no debuginfod installed): the frame is named from the ELF symbols. */
#include <stddef.h>

void *__wrap_dlopen(const char *file, int mode);

void *__wrap_dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}
