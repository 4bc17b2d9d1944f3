/* Disjoint sets; see union_find.h. */
#include "union_find.h"

#include "internal.h"

#include <stdlib.h>

int pc__uf_init(pc__union_find *uf, size_t n)
{
    uf->n = n;
    uf->parent = pc__alloc(n, sizeof *uf->parent, "union-find");
    if (!uf->parent)
        return -1;
    for (size_t i = 0; i < n; i++)
        uf->parent[i] = i;
    return 0;
}

void pc__uf_free(pc__union_find *uf)
{
    free(uf->parent);
    uf->parent = NULL;
}

size_t pc__uf_find(pc__union_find *uf, size_t x)
{
    while (uf->parent[x] != x) {
        uf->parent[x] = uf->parent[uf->parent[x]];
        x = uf->parent[x];
    }
    return x;
}

int pc__uf_union(pc__union_find *uf, size_t a, size_t b)
{
    a = pc__uf_find(uf, a);
    b = pc__uf_find(uf, b);
    if (a == b)
        return 0;
    if (a < b)
        uf->parent[b] = a;
    else
        uf->parent[a] = b;
    return 1;
}
