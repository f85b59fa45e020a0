/* Every dlopen the CLI and the static archives it links make comes here
 * (-Wl,--wrap=dlopen).
 *
 * libdwfl's debuginfod client (libdw.a), when a native frame's module has
 * no debug information on disk, loads libdebuginfod.so to ask a server.
 * elfutils 0.188 (Debian 12's) loads it even where no server is set
 * (DEBUGINFOD_URLS): libcurl, gnutls, Kerberos and LDAP with it, a third of
 * a --native dump's instructions, for nothing.  It is loaded here only
 * where a server is set, as later elfutils do.
 *
 * The static pystack-dump (PYD_STATIC) refuses every dlopen: a static
 * glibc program can load a shared object only when it is of the very
 * glibc it was linked with, which on another machine is a crash, not a
 * download.  Refusing is what libdwfl already handles (no debuginfod
 * installed): the frame is named from the ELF symbols. */
#include <stdlib.h>
#include <string.h>

void *__wrap_dlopen(const char *file, int mode);
#ifndef PYD_STATIC
void *__real_dlopen(const char *file, int mode);
#endif

void *__wrap_dlopen(const char *file, int mode)
{
#ifdef PYD_STATIC
	(void)file;
	(void)mode;
	return NULL;
#else
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (file && strstr(file, "libdebuginfod") && (!urls || !*urls))
		return NULL;
	return __real_dlopen(file, mode);
#endif
}
