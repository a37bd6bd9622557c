/* SPDX-License-Identifier: GPL-2.0 */
/*
 * list.h - intrusive circular doubly linked list (the kernel's list_head,
 * trimmed to what fluxond uses).  An empty list is a head pointing at itself.
 */
#ifndef FLUXOND_LIST_H
#define FLUXOND_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct fkv_list {
	struct fkv_list *next, *prev;
};

#define fkv_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline void fkv_list_init(struct fkv_list *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool fkv_list_empty(const struct fkv_list *h)
{
	return h->next == h;
}

static inline void fkv_list_insert_(struct fkv_list *n, struct fkv_list *prev,
				    struct fkv_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

/* Insert @n right after @h: the head end of the list. */
static inline void fkv_list_add(struct fkv_list *n, struct fkv_list *h)
{
	fkv_list_insert_(n, h, h->next);
}

/* Insert @n right before @h: the tail end of the list. */
static inline void fkv_list_add_tail(struct fkv_list *n, struct fkv_list *h)
{
	fkv_list_insert_(n, h->prev, h);
}

static inline void fkv_list_del(struct fkv_list *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
	n->next = n;
	n->prev = n;
}

static inline void fkv_list_move(struct fkv_list *n, struct fkv_list *h)
{
	fkv_list_del(n);
	fkv_list_add(n, h);
}

/* The oldest entry of a list filled with fkv_list_add(); NULL if empty. */
static inline struct fkv_list *fkv_list_last(const struct fkv_list *h)
{
	return fkv_list_empty(h) ? NULL : h->prev;
}

/* The entry after @n in @h, or NULL at the end. */
static inline struct fkv_list *fkv_list_next(const struct fkv_list *h,
					     const struct fkv_list *n)
{
	return n->next == h ? NULL : n->next;
}

static inline struct fkv_list *fkv_list_first(const struct fkv_list *h)
{
	return fkv_list_empty(h) ? NULL : h->next;
}

#endif /* FLUXOND_LIST_H */
