// SPDX-License-Identifier: GPL-2.0
/*
 * fkv_strerror: what an errno means when it comes from fluxonkv.  The
 * generic strerror() text ("Transport endpoint is not connected") tells a
 * user nothing about a cache; these strings say which part is missing.
 */
#include <errno.h>
#include <string.h>

#include <fluxonkv.h>

static const struct {
	int err;
	const char *msg;
} fkv_errors[] = {
	{ ENOENT,	"key not found (or no such tenant)" },
	{ ENODEV,	"no fluxonkv device (is the fluxonkv module loaded?)" },
	{ ENXIO,	"no fluxonkv device (is the fluxonkv module loaded?)" },
	{ ENOTTY,	"not a fluxonkv device" },
	{ EPROTO,	"the fluxonkv module speaks another ABI version" },
	{ EACCES,	"permission denied on the fluxonkv device" },
	{ EPERM,	"operation not permitted (not privileged, or not one of the tenant's uids / gids)" },
	{ ENOTCONN,	"no fluxond daemon is registered" },
	{ ENOSPC,	"segment full (evictions could not make room)" },
	{ ETIMEDOUT,	"daemon did not answer in time" },
	{ E2BIG,	"key or value too large" },
	{ EINVAL,	"invalid argument (empty key or value, or a field the module rejected)" },
	{ EIO,		"inconsistent answer from the fluxonkv module" },
	{ EBUSY,	"busy (another fluxond daemon is registered, or the handle is already bound to a tenant or holds values)" },
	{ EOPNOTSUPP,	"not supported by this fluxonkv module or fluxond (too old?)" },
	{ EBADMSG,	"malformed answer from fluxond's control socket" },
	{ ENOMEM,	"out of memory" },
	{ EFAULT,	"bad buffer address" },
	{ EINTR,	"interrupted by a signal" },
};

const char *fkv_strerror(int err)
{
	const char *desc;
	size_t i;

	if (err < 0)
		err = -err;
	if (!err)
		return "success";
	for (i = 0; i < sizeof(fkv_errors) / sizeof(fkv_errors[0]); i++)
		if (fkv_errors[i].err == err)
			return fkv_errors[i].msg;
	/* strerrordesc_np returns static text, unlike strerror() */
	desc = strerrordesc_np(err);
	return desc ? desc : "unknown error";
}
