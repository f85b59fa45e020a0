/* sample --push in a build without libcurl (-Dpush=disabled, and the
 * static binary: Debian ships no static archive of libcurl's Kerberos
 * and LDAP dependencies): --push is refused before sampling starts, so
 * the other calls of push.h are never reached. */
#include <stdio.h>

#include "../core/pyd_error.h"
#include "push.h"

int push_open(struct push **out, const char *url, const char *app,
              const char *labels, char *err, size_t errsz)
{
	(void)url, (void)app, (void)labels;
	*out = NULL;
	snprintf(err, errsz, "%s", PYD_PUSH_LEFT_OUT);
	return PYD_E_UNSUPPORTED;
}

int push_start(struct push *p, const char *process_name)
{
	(void)p, (void)process_name;
	return PYD_E_UNSUPPORTED;
}

void push_send(struct push *p, struct pyd_buf *body, uint64_t from_us,
               uint64_t until_us, unsigned rate_hz)
{
	(void)p, (void)from_us, (void)until_us, (void)rate_hz;
	pyd_buf_free(body);
}

struct push_counts push_close(struct push *p)
{
	(void)p;
	return (struct push_counts){0};
}

const char *push_shown_url(const struct push *p)
{
	(void)p;
	return "";
}
