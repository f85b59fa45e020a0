/*
 * pystack-dump-serve: what pystack-dump serve runs (serve_exec.c), the
 * one program linked with libmicrohttpd.
 */
#include "cli.h"

int main(int argc, char **argv)
{
	return serve_main(argc, argv);
}
