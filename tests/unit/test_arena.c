/*
 * The arena (core/arena.c): 8-aligned pieces that never overlap, kept
 * until freed all at once; past its first 256 KiB in huge chunks, and a
 * piece larger than a chunk in one of its own.  And a huge mapping: its
 * small part before a huge page's boundary.
 */
#include <stdint.h>
#include <string.h>

#include "../../core/arena.h"
#include "check.h"

static void check_pieces(void)
{
	struct pyd_arena a = {0};
	unsigned char *last = NULL;
	size_t lastn = 0;
	for (size_t i = 0; i < 20000; i++) {
		size_t n = 1 + i % 300;
		unsigned char *p = pyd_arena_alloc(&a, n);
		CHECK_EQ(p != NULL, 1);
		CHECK_EQ((uintptr_t)p % 8, 0);
		memset(p, (int)(i & 0xff), n);
		/* the piece before is whole: none written over */
		if (last)
			CHECK_EQ(last[lastn - 1], (unsigned char)((i - 1) & 0xff));
		last = p;
		lastn = n;
	}
	CHECK_EQ(a.total > ((size_t)256 << 10), 1);
	char big[5000];
	memset(big, 'b', sizeof big);
	char *q = pyd_arena_dup(&a, big, sizeof big);
	CHECK_EQ(memcmp(q, big, sizeof big), 0);
	size_t huge = (size_t)5 << 20; /* more than any chunk so far */
	unsigned char *h = pyd_arena_alloc(&a, huge);
	CHECK_EQ(h != NULL, 1);
	h[0] = 1;
	h[huge - 1] = 2;
	CHECK_EQ(last[lastn - 1], (unsigned char)((20000 - 1) & 0xff));
	pyd_arena_free(&a);
	CHECK_EQ(a.total, 0);
	CHECK_EQ(a.head == NULL, 1);
}

static void check_huge_map(void)
{
	void *map;
	size_t mapped, small = (size_t)256 << 10, len = (size_t)8 << 20;
	unsigned char *p = pyd_huge_map(len, small, &map, &mapped);
	CHECK_EQ(p != NULL, 1);
	CHECK_EQ((uintptr_t)(p + small) % PYD_HUGE_PAGE, 0);
	CHECK_EQ(p >= (unsigned char *)map, 1);
	CHECK_EQ(p + len <= (unsigned char *)map + mapped, 1);
	p[0] = 1;
	p[len - 1] = 1;
	pyd_huge_unmap(map, mapped);
}

int main(void)
{
	check_pieces();
	check_huge_map();
	return check_done("test_arena");
}
