/* SPDX-License-Identifier: GPL-2.0 */
/*
 * py_const.h - read a number the Python client defines for itself, to
 * check it against the C headers' (unit tests, run from the tree's root).
 */
#ifndef FKV_TEST_PY_CONST_H
#define FKV_TEST_PY_CONST_H

#include <stdio.h>
#include <string.h>

#include "../../selftests/fkv_test.h"

/* The value of "NAME = NUMBER" in the Python file @path; -1 if absent. */
static inline long py_const(const char *path, const char *name)
{
	size_t n = strlen(name);
	char line[256];
	long v = -1;
	FILE *f = fopen(path, "r");

	FKV_ASSERT(f != NULL, "%s (run from the tree's root)", path);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ' ' &&
		    sscanf(line + n, " = %li", &v) == 1)
			break;
	fclose(f);
	return v;
}

#endif /* FKV_TEST_PY_CONST_H */
