/* SPDX-License-Identifier: GPL-2.0 */
/*
 * netaddr.h - socket address helpers the control and data planes share.
 */
#ifndef FKV_NETADDR_H
#define FKV_NETADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

/* The same host (ports aside): what pre-auth limits count per address. */
static inline bool fkv_same_host(const struct sockaddr_storage *a,
				 const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return true;
}

#endif
