/* Disjoint sets over 0..n-1 with path halving and union by index, so that the root of a set is
 * always its smallest member: the result never depends on the order unions happen in. */
#ifndef PC_UNION_FIND_H
#define PC_UNION_FIND_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t n;
    size_t *parent;
} pc__union_find;

int pc__uf_init(pc__union_find *uf, size_t n); /* 0 ok, -1 out of memory (error recorded) */
void pc__uf_free(pc__union_find *uf);
size_t pc__uf_find(pc__union_find *uf, size_t x);
/* Joins the sets of a and b; returns 1 if they were separate. */
int pc__uf_union(pc__union_find *uf, size_t a, size_t b);

#endif
