/*
 * serve_run in a build without libmicrohttpd: the static binary (Debian
 * ships no static archive of what libmicrohttpd links, p11-kit).
 */
#include "cli.h"
#include "serve.h"

int serve_run(const struct serve_config *c)
{
	(void)c;
	cli_say_about("pystack-dump serve", PYD_SAY_NO_SERVE,
	              PYD_E_UNSUPPORTED, NULL,
	              "it was built without libmicrohttpd (the static binary "
	              "cannot link it)");
	return PYD_E_UNSUPPORTED;
}
