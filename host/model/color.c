/* Greedy graph colouring of one type's constraints (two constraints conflict when they
 * share a particle that is not shared freely), then a balancing pass, so the constraints of
 * a colour can be projected in parallel without write races, and the colours are of similar
 * size. Under a bound, what finds no colour goes to a last, serial overflow set. */
#include <stdlib.h>
#include <string.h>

#include "model/csr.h"
#include "pbd.h"

void pbd_coloring_free(pbd_coloring *c)
{
    if (!c)
        return;
    free(c->offsets);
    free(c->order);
    memset(c, 0, sizeof *c);
}

/* The constraints other than c that share with it a particle not shared freely, into out
 * (once per shared particle: at most arity * (max degree - 1)); returns how many. */
static int list_neighbours(const int *ends, int arity, int c, const int *off, const int *slots,
                           const unsigned char *shared, int *out)
{
    int n = 0;
    for (int e = 0; e < arity; ++e) {
        int i = ends[(size_t)arity * (size_t)c + (size_t)e];
        if (shared && shared[i])
            continue;
        for (int s = off[i]; s < off[i + 1]; ++s)
            if (slots[s] / arity != c)
                out[n++] = slots[s] / arity;
    }
    return n;
}

/* Marks in `stamp` (stamp[colour] == tag) the colours of c's neighbours (`near`: scratch). */
static void mark_neighbours(const int *ends, int arity, int c, const int *color, const int *off,
                            const int *slots, const unsigned char *shared, int *near, int *stamp,
                            int tag)
{
    int n = list_neighbours(ends, arity, c, off, slots, shared, near);
    for (int k = 0; k < n; ++k)
        if (color[near[k]] >= 0)
            stamp[color[near[k]]] = tag;
}

/* First fit: each constraint of the subset (in `order`'s order of its entries, else in the
 * subset's) takes the smallest colour no neighbour has. Constraints outside the subset keep
 * colour -1, so they constrain nothing. Under a bound, a constraint that finds none of the
 * `bound` colours free is left for the overflow set (colour -2, counted in *overflow).
 * Returns the number of colours; count[k] is colour k's size (count zeroed by the caller,
 * stamp all -1). */
static int first_fit(const int *ends, int arity, int n, const int *subset, int count_in,
                     const int *off, const int *slots, const unsigned char *shared, int bound,
                     const int *order, int *near, int *color, int *stamp, int *count, int *overflow)
{
    int num_colors = 0;
    *overflow = 0;
    for (int c = 0; c < n; ++c)
        color[c] = -1;
    for (int j = 0; j < count_in; ++j) {
        int e = order ? order[j] : j;
        int c = subset ? subset[e] : e;
        mark_neighbours(ends, arity, c, color, off, slots, shared, near, stamp, c);
        int k = 0;
        while (stamp[k] == c)
            ++k;
        if (bound && k >= bound) {
            color[c] = -2;
            (*overflow)++;
            continue;
        }
        color[c] = k;
        count[k]++;
        num_colors = k + 1 > num_colors ? k + 1 : num_colors;
    }
    return num_colors;
}

/* The subset's entries in smallest-last order (Matula and Beck 1983): repeatedly take out the
 * constraint with the fewest remaining neighbours (counted through each particle that is not
 * shared freely; among equals, the one that reached that count last), and colour in the
 * reverse order of taking out.
 * First fit in that order gives no constraint a colour above the count it had when taken
 * out, where model order can need many more colours on unstructured meshes. NULL when out of
 * memory. */
static int *smallest_last(const int *ends, int arity, int n, const int *subset, int count_in,
                          const int *off, const int *slots, const unsigned char *shared, int *near)
{
    int *entry = malloc(((size_t)n + 1) * sizeof *entry); /* constraint -> subset entry, or -1 */
    int *deg = malloc(((size_t)count_in + 1) * sizeof *deg);
    int *order = malloc(((size_t)count_in + 1) * sizeof *order);
    unsigned char *gone = calloc((size_t)count_in + 1, 1);
    int *head = NULL, *next = NULL, *prev = NULL;
    int max_deg = 0;
    if (!entry || !deg || !order || !gone)
        goto fail;
    for (int c = 0; c < n; ++c)
        entry[c] = subset ? -1 : c;
    for (int j = 0; subset && j < count_in; ++j)
        entry[subset[j]] = j;
    for (int j = 0; j < count_in; ++j) {
        int c = subset ? subset[j] : j, d = 0;
        int m = list_neighbours(ends, arity, c, off, slots, shared, near);
        for (int k = 0; k < m; ++k)
            d += entry[near[k]] >= 0;
        deg[j] = d;
        max_deg = d > max_deg ? d : max_deg;
    }
    /* Buckets of entries by remaining degree, doubly linked, first in entry order. */
    head = malloc(((size_t)max_deg + 1) * sizeof *head);
    next = malloc(((size_t)count_in + 1) * sizeof *next);
    prev = malloc(((size_t)count_in + 1) * sizeof *prev);
    if (!head || !next || !prev)
        goto fail;
    for (int d = 0; d <= max_deg; ++d)
        head[d] = -1;
    for (int j = count_in - 1; j >= 0; --j) {
        next[j] = head[deg[j]];
        prev[j] = -1;
        if (head[deg[j]] >= 0)
            prev[head[deg[j]]] = j;
        head[deg[j]] = j;
    }
    int low = 0;
    for (int taken = count_in - 1; taken >= 0; --taken) {
        while (head[low] < 0)
            ++low;
        int j = head[low], c = subset ? subset[j] : j;
        head[low] = next[j];
        if (next[j] >= 0)
            prev[next[j]] = -1;
        gone[j] = 1;
        order[taken] = j;
        /* Each remaining neighbour loses one: moved to the head of its new bucket. */
        int m = list_neighbours(ends, arity, c, off, slots, shared, near);
        for (int k = 0; k < m; ++k) {
            int q = entry[near[k]];
            if (q < 0 || gone[q])
                continue;
            if (prev[q] >= 0)
                next[prev[q]] = next[q];
            else
                head[deg[q]] = next[q];
            if (next[q] >= 0)
                prev[next[q]] = prev[q];
            int d = --deg[q];
            next[q] = head[d];
            prev[q] = -1;
            if (head[d] >= 0)
                prev[head[d]] = q;
            head[d] = q;
            low = d < low ? d : low;
        }
    }
    free(entry);
    free(deg);
    free(gone);
    free(head);
    free(next);
    free(prev);
    return order;
fail:
    free(entry);
    free(deg);
    free(order);
    free(gone);
    free(head);
    free(next);
    free(prev);
    return NULL;
}

pbd_status pbd_color_constraints(int num_particles, const int *ends, int arity, int n,
                                 const int *subset, int count_in, const pbd_color_options *opt,
                                 pbd_coloring *out, pbd_error *err)
{
    memset(out, 0, sizeof *out);
    if (!subset)
        count_in = n;
    const unsigned char *shared = opt ? opt->shared : NULL;
    int bound = opt && opt->max_colors > 0 ? opt->max_colors : 0;
    int *off = NULL, *slots = NULL;
    pbd_status st = pbd_csr_build(num_particles, ends, arity, n, &off, &slots, NULL, err);
    if (st != PBD_OK)
        return st;
    /* A constraint has at most arity * (max degree - 1) neighbours, so that many + 1 colours
     * always suffice; stamp and count arrays are sized for it. */
    int max_deg = 0;
    for (int i = 0; i < num_particles; ++i)
        max_deg = off[i + 1] - off[i] > max_deg ? off[i + 1] - off[i] : max_deg;
    int cap = arity * max_deg + 1;
    int *color = malloc(((size_t)n + 1) * sizeof *color);
    int *stamp = malloc((size_t)cap * sizeof *stamp), *near = malloc((size_t)cap * sizeof *near);
    int *count = calloc((size_t)cap + 1, sizeof *count), *by_degree = NULL, overflow = 0;
    out->order = malloc(((size_t)count_in + 1) * sizeof *out->order);
    if (!color || !stamp || !near || !count || !out->order) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory colouring %d constraints", n);
        goto cleanup;
    }
    for (int k = 0; k < cap; ++k)
        stamp[k] = -1;

    /* First fit in model order; under a bound that overflows, again in smallest-last order,
     * keeping the one with the smaller overflow (then fewer colours). */
    int num_colors = first_fit(ends, arity, n, subset, count_in, off, slots, shared, bound, NULL,
                               near, color, stamp, count, &overflow);
    if (overflow) {
        by_degree = smallest_last(ends, arity, n, subset, count_in, off, slots, shared, near);
        int *color2 = malloc(((size_t)n + 1) * sizeof *color2);
        int *count2 = calloc((size_t)cap + 1, sizeof *count2);
        int overflow2 = 0;
        if (!by_degree || !color2 || !count2) {
            free(color2);
            free(count2);
            st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory colouring %d constraints", n);
            goto cleanup;
        }
        for (int k = 0; k < cap; ++k)
            stamp[k] = -1;
        int colors2 = first_fit(ends, arity, n, subset, count_in, off, slots, shared, bound,
                                by_degree, near, color2, stamp, count2, &overflow2);
        if (overflow2 < overflow || (overflow2 == overflow && colors2 < num_colors)) {
            int *t = color;
            color = color2, color2 = t;
            t = count, count = count2, count2 = t;
            num_colors = colors2, overflow = overflow2;
        }
        free(color2);
        free(count2);
    }

    /* Balance: move a constraint from a colour above the mean size (of the coloured ones,
     * the overflow set aside) to the smallest colour that is free for it, when that makes
     * the two sizes closer. Two passes are plenty on meshes; the colour count never grows. */
    int colored = count_in - overflow;
    int target = num_colors ? (colored + num_colors - 1) / num_colors : 0;
    for (int pass = 0; pass < 2; ++pass)
        for (int j = 0; j < count_in; ++j) {
            int c = subset ? subset[j] : j;
            int k0 = color[c];
            if (k0 < 0 || count[k0] <= target)
                continue;
            int tag = n + pass * n + c;
            mark_neighbours(ends, arity, c, color, off, slots, shared, near, stamp, tag);
            int best = -1;
            for (int k = 0; k < num_colors; ++k)
                if (stamp[k] != tag && k != k0 && (best < 0 || count[k] < count[best]))
                    best = k;
            if (best >= 0 && count[best] + 1 < count[k0]) {
                count[k0]--;
                count[best]++;
                color[c] = best;
            }
        }
    /* The moves may have freed a colour for a constraint of the overflow set: it takes the
     * smallest such colour, and the serial set shrinks. */
    for (int j = 0; j < count_in && overflow > 0; ++j) {
        int c = subset ? subset[j] : j;
        if (color[c] != -2)
            continue;
        int tag = 3 * n + c;
        mark_neighbours(ends, arity, c, color, off, slots, shared, near, stamp, tag);
        int best = -1;
        for (int k = 0; k < num_colors; ++k)
            if (stamp[k] != tag && (best < 0 || count[k] < count[best]))
                best = k;
        if (best >= 0) {
            count[best]++;
            color[c] = best;
            overflow--;
        }
    }

    /* Bucket by colour; within a colour, constraints keep their model order (memory order).
     * The overflow set is the last colour. */
    if (overflow) {
        color[n] = num_colors; /* spare entry: the overflow's colour for the bucketing */
        count[num_colors++] = overflow;
        out->overflow = 1;
    }
    out->num_colors = num_colors;
    out->offsets = calloc((size_t)num_colors + 1, sizeof *out->offsets);
    if (!out->offsets) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory colouring %d constraints", n);
        goto cleanup;
    }
    for (int k = 0; k < num_colors; ++k)
        out->offsets[k + 1] = out->offsets[k] + count[k];
    for (int k = 0; k < num_colors; ++k)
        count[k] = out->offsets[k];
    for (int j = 0; j < count_in; ++j) {
        int c = subset ? subset[j] : j;
        int k = color[c] == -2 ? color[n] : color[c];
        out->order[count[k]++] = c;
    }
    st = PBD_OK;
cleanup:
    if (st != PBD_OK)
        pbd_coloring_free(out);
    free(color);
    free(stamp);
    free(near);
    free(count);
    free(by_degree);
    free(off);
    free(slots);
    return st;
}

pbd_status pbd_coloring_validate(int num_particles, const int *ends, int arity, int n,
                                 const pbd_coloring *c, const unsigned char *shared, pbd_error *err)
{
    if (c->num_colors < 0 || (n > 0 && c->num_colors < 1) || !c->offsets || c->offsets[0] != 0 ||
        c->offsets[c->num_colors] != n)
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "colouring: %d colours do not cover the %d "
                             "constraints",
                             c->num_colors, n);
    int *seen = calloc((size_t)n + 1, sizeof *seen);
    int *owner = malloc(((size_t)num_particles + 1) * sizeof *owner);
    int *owner_color = malloc(((size_t)num_particles + 1) * sizeof *owner_color);
    pbd_status st = PBD_OK;
    if (!seen || !owner || !owner_color) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory validating a colouring");
        goto done;
    }
    for (int i = 0; i < num_particles; ++i)
        owner_color[i] = -1;
    for (int k = 0; k < c->num_colors && st == PBD_OK; ++k) {
        if (c->offsets[k + 1] < c->offsets[k]) {
            st = pbd_error_set(err, PBD_ERR_MODEL, "colouring: colour %d has negative size", k);
            break;
        }
        for (int j = c->offsets[k]; j < c->offsets[k + 1]; ++j) {
            int ci = c->order[j];
            if (ci < 0 || ci >= n || seen[ci]++) {
                st = pbd_error_set(err, PBD_ERR_MODEL,
                                   "colouring: constraint %d appears twice "
                                   "or is out of range",
                                   ci);
                break;
            }
            /* The overflow set's constraints are projected one after another. */
            if (c->overflow && k == c->num_colors - 1)
                continue;
            for (int e = 0; e < arity; ++e) {
                int p = ends[(size_t)arity * (size_t)ci + (size_t)e];
                if (shared && shared[p])
                    continue;
                if (owner_color[p] == k) {
                    st = pbd_error_set(err, PBD_ERR_MODEL,
                                       "colouring: constraints %d and %d "
                                       "of colour %d share particle %d",
                                       owner[p], ci, k, p);
                    break;
                }
                owner_color[p] = k;
                owner[p] = ci;
            }
            if (st != PBD_OK)
                break;
        }
    }
done:
    free(seen);
    free(owner);
    free(owner_color);
    return st;
}
