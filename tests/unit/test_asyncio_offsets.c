/* The _asyncio debug-offsets parser on the real 3.14 block and on damage. */
#include <stdint.h>
#include <string.h>

#include "../../core/decode/asyncio_offsets.h"
#include "check.h"

/* .AsyncioDebug of Debian sid's _asyncio.cpython-314-x86_64-linux-gnu.so
 * (3.14.10), as 13 little-endian uint64_t. */
static const uint64_t real314[13] = {168,    136,   96,  108, 109, 128, 152,
				     225864, 10880, 936, 864, 872, 880};

static int parse(const uint64_t *v, size_t len, struct pyd_asyncio_offsets *o)
{
	uint8_t raw[PYD_ASYNCIO_OFFSETS_SIZE];
	memcpy(raw, v, sizeof raw);
	return pyd_asyncio_offsets_parse(raw, len, o);
}

int main(void)
{
	struct pyd_asyncio_offsets o;
	CHECK_EQ(parse(real314, sizeof real314, &o), 0);
	CHECK_EQ(o.task_size, 168);
	CHECK_EQ(o.task_name, 136);
	CHECK_EQ(o.task_coro, 128);
	CHECK_EQ(o.task_node, 152);
	CHECK_EQ(o.interp_tasks_head, 10880);
	CHECK_EQ(o.tstate_running_task, 872);
	CHECK_EQ(o.tstate_tasks_head, 880);

	/* too short */
	CHECK_EQ(parse(real314, sizeof real314 - 1, &o), -1);

	/* each member set to garbage is refused: zero, past the struct, huge */
	const uint64_t bad[] = {0, 1u << 30, UINT64_MAX};
	for (size_t i = 0; i < 13; i++) {
		for (size_t j = 0; j < sizeof bad / sizeof *bad; j++) {
			uint64_t v[13];
			memcpy(v, real314, sizeof v);
			v[i] = bad[j];
			CHECK_EQ(parse(v, sizeof v, &o), -1);
		}
	}

	/* two members at the same place are refused */
	uint64_t same[13];
	memcpy(same, real314, sizeof same);
	same[5] = same[1]; /* coro == name */
	CHECK_EQ(parse(same, sizeof same, &o), -1);
	return check_done("test_asyncio_offsets");
}
