/* Greedy graph colouring of one type's constraints (two constraints conflict when they
 * share a particle that is not shared freely), then a balancing pass, so the constraints of
 * a colour can be projected in parallel without write races, and the colours are of similar
 * size. Under a bound, what finds no colour goes to a last, serial overflow set. */
#include <limits.h>
#include <stdint.h>
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

/* The arguments both public functions index by: counts, and every end a particle. */
static pbd_status check_ends(int num_particles, const int *ends, int arity, int n, pbd_error *err)
{
    if (num_particles < 0 || n < 0 || arity < 1 || (long long)n * arity > INT_MAX ||
        (n > 0 && !ends))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "colouring: %d constraints of %d particles each among %d particles%s "
                             "(expected counts >= 0, at least 1 particle a constraint, at most "
                             "INT_MAX ends)",
                             n, arity, num_particles, n > 0 && !ends ? ", no ends" : "");
    for (size_t s = 0; s < (size_t)n * (size_t)arity; ++s)
        if (ends[s] < 0 || ends[s] >= num_particles)
            return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                 "colouring: constraint %zu's particle %d is out of range "
                                 "(expected 0 to %d)",
                                 s / (size_t)arity, ends[s], num_particles - 1);
    /* a constraint names each of its particles once: the colouring's "no two constraints of
     * a colour share a particle" is then the test of a constraint against the others */
    for (size_t c = 0; c < (size_t)n; ++c)
        for (int a = 0; a < arity; ++a)
            for (int b = a + 1; b < arity; ++b)
                if (ends[c * (size_t)arity + (size_t)a] == ends[c * (size_t)arity + (size_t)b])
                    return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                         "colouring: constraint %zu names particle %d twice "
                                         "(expected %d different particles)",
                                         c, ends[c * (size_t)arity + (size_t)a], arity);
    return PBD_OK;
}

/* A subset of the n constraints: each index in range and there once. */
static pbd_status check_subset(const int *subset, int count, int n, pbd_error *err)
{
    if (count < 0 || count > n)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "colouring: a subset of %d of %d constraints (expected 0 to %d)",
                             count, n, n);
    unsigned char *seen = calloc((size_t)n + 1, 1);
    if (!seen)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory colouring %d constraints", n);
    pbd_status st = PBD_OK;
    for (int k = 0; k < count && st == PBD_OK; ++k)
        if (subset[k] < 0 || subset[k] >= n || seen[subset[k]]++)
            st = pbd_error_set(err, PBD_ERR_ARGUMENT,
                               "colouring: subset entry %d is constraint %d (expected each of 0 "
                               "to %d at most once)",
                               k, subset[k], n - 1);
    free(seen);
    return st;
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

/* Particles of more than pbd_color_options.hub_degree constraints (a wheel's hub, a fan's
 * centre), not shared freely, are hubs: the colours taken at a hub are kept as a bitset (at
 * most one constraint of a colour touches a particle), where walking its constraints for each
 * of them would cost the square of its degree. Meshes have none. */
#define HUB_DEGREE 64

typedef struct hubs {
    int count;
    int *id;             /* particle -> hub, or -1 (NULL without hubs) */
    uint64_t *bits;      /* hub h's taken colours: words [h * words, (h + 1) * words) */
    int words;           /* a hub's words: one bit a colour below the colour count's cap */
    unsigned char *skip; /* shared or a hub: what the walks over neighbours leave out */
    const unsigned char *shared;
} hubs;

static void hubs_free(hubs *h)
{
    free(h->id);
    free(h->bits);
    free(h->skip);
}

/* The hubs among the particles (CSR off): more than `degree` constraints; `colors` colours
 * at most. 1 when out of memory. */
static int hubs_init(hubs *h, int num_particles, const int *off, const unsigned char *shared,
                     int degree, int colors)
{
    memset(h, 0, sizeof *h);
    h->shared = shared;
    for (int i = 0; i < num_particles; ++i)
        h->count += off[i + 1] - off[i] > degree && !(shared && shared[i]);
    if (h->count == 0)
        return 0;
    h->words = (int)(((size_t)colors + 63) / 64);
    if ((size_t)h->count > SIZE_MAX / sizeof *h->bits / (size_t)h->words)
        return 1;
    h->id = malloc(((size_t)num_particles + 1) * sizeof *h->id);
    h->skip = malloc((size_t)num_particles + 1);
    h->bits = calloc((size_t)h->count * (size_t)h->words + 1, sizeof *h->bits);
    if (!h->id || !h->skip || !h->bits)
        return 1;
    for (int i = 0, k = 0; i < num_particles; ++i) {
        int hub = off[i + 1] - off[i] > degree && !(shared && shared[i]);
        h->id[i] = hub ? k++ : -1;
        h->skip[i] = hub || (shared && shared[i]);
    }
    return 0;
}

/* What the walks over neighbours leave out: shared particles and hubs. */
static const unsigned char *hubs_skip(const hubs *h)
{
    return h->count ? h->skip : h->shared;
}

/* Sets (on) or clears colour k at c's hubs. */
static void hubs_mark(hubs *h, const int *ends, int arity, int c, int k, int on)
{
    for (int e = 0; h->count && e < arity; ++e) {
        int id = h->id[ends[(size_t)arity * (size_t)c + (size_t)e]];
        if (id < 0)
            continue;
        uint64_t *w = h->bits + (size_t)id * (size_t)h->words + (size_t)(k >> 6);
        *w = on ? *w | (1ull << (k & 63)) : *w & ~(1ull << (k & 63));
    }
}

/* Gives constraint c colour k (from its colour now, if any: -1 none, -2 the overflow set),
 * counting it and marking it at c's hubs. */
static void assign(hubs *h, const int *ends, int arity, int *color, int *count, int c, int k)
{
    if (color[c] >= 0) {
        count[color[c]]--;
        hubs_mark(h, ends, arity, c, color[c], 0);
    }
    color[c] = k;
    count[k]++;
    hubs_mark(h, ends, arity, c, k, 1);
}

/* The smallest colour from k on that no hub of c has taken (words past the bitset: none). */
static int hubs_next_free(const hubs *h, const int *ends, int arity, int c, int k)
{
    for (;;) {
        uint64_t taken = 0;
        int w = k >> 6;
        for (int e = 0; h->count && e < arity && w < h->words; ++e) {
            int id = h->id[ends[(size_t)arity * (size_t)c + (size_t)e]];
            if (id >= 0)
                taken |= h->bits[(size_t)id * (size_t)h->words + (size_t)w];
        }
        uint64_t free_bits = ~taken & (~0ull << (k & 63));
        if (free_bits) {
            int b = 0;
            while (!(free_bits >> b & 1))
                ++b;
            return 64 * w + b;
        }
        k = 64 * (w + 1);
    }
}

/* 1 where a hub of c has taken colour k. */
static int hubs_taken(const hubs *h, const int *ends, int arity, int c, int k)
{
    return h->count && hubs_next_free(h, ends, arity, c, k) != k;
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
                     const int *off, const int *slots, hubs *h, int bound, const int *order,
                     int *near, int *color, int *stamp, int *count, int *overflow)
{
    int num_colors = 0;
    *overflow = 0;
    for (int c = 0; c < n; ++c)
        color[c] = -1;
    if (h->count)
        memset(h->bits, 0, (size_t)h->count * (size_t)h->words * sizeof *h->bits);
    for (int j = 0; j < count_in; ++j) {
        int e = order ? order[j] : j;
        int c = subset ? subset[e] : e;
        mark_neighbours(ends, arity, c, color, off, slots, hubs_skip(h), near, stamp, c);
        int k = hubs_next_free(h, ends, arity, c, 0);
        while (stamp[k] == c)
            k = hubs_next_free(h, ends, arity, c, k + 1);
        if (bound && k >= bound) {
            color[c] = -2;
            (*overflow)++;
            continue;
        }
        assign(h, ends, arity, color, count, c, k);
        num_colors = k + 1 > num_colors ? k + 1 : num_colors;
    }
    return num_colors;
}

/* The subset's entries in smallest-last order (Matula and Beck 1983): repeatedly take out the
 * constraint with the fewest remaining neighbours (counted through each particle that is
 * neither shared freely nor a hub, a hub's constraints ordered as if it were not there; among
 * equals, the one that reached that count last), and colour in the reverse order of taking
 * out.
 * First fit in that order gives no constraint a colour above the count it had when taken
 * out (but for its neighbours at hubs), where model order can need many more colours on
 * unstructured meshes. NULL when out of memory. */
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
    pbd_status st = check_ends(num_particles, ends, arity, n, err);
    if (st != PBD_OK)
        return st;
    if (!subset)
        count_in = n;
    else if ((st = check_subset(subset, count_in, n, err)) != PBD_OK)
        return st;
    if (opt && opt->max_colors < 0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "colouring: max_colors %d (expected 0, no bound, or more)",
                             opt->max_colors);
    const unsigned char *shared = opt ? opt->shared : NULL;
    int bound = opt && opt->max_colors > 0 ? opt->max_colors : 0;
    int *off = NULL, *slots = NULL;
    st = pbd_csr_build(num_particles, ends, arity, n, &off, &slots, NULL, err);
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
    hubs h;
    int degree = opt && opt->hub_degree > 0 ? opt->hub_degree : HUB_DEGREE;
    /* no colour at or past the bound or the cap is ever taken */
    int hubs_failed =
        hubs_init(&h, num_particles, off, shared, degree, bound && bound < cap ? bound : cap);
    if (!color || !stamp || !near || !count || !out->order || hubs_failed) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory colouring %d constraints", n);
        goto cleanup;
    }
    for (int k = 0; k < cap; ++k)
        stamp[k] = -1;

    /* First fit in model order; under a bound that overflows, again in smallest-last order,
     * keeping the one with the smaller overflow (then fewer colours). */
    int num_colors = first_fit(ends, arity, n, subset, count_in, off, slots, &h, bound, NULL, near,
                               color, stamp, count, &overflow);
    if (overflow) {
        /* A hub's constraints are ordered as if it were not there: walking them for each one
         * taken out would cost the square of its degree. */
        by_degree =
            smallest_last(ends, arity, n, subset, count_in, off, slots, hubs_skip(&h), near);
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
        int colors2 = first_fit(ends, arity, n, subset, count_in, off, slots, &h, bound, by_degree,
                                near, color2, stamp, count2, &overflow2);
        if (overflow2 < overflow || (overflow2 == overflow && colors2 < num_colors)) {
            int *t = color;
            color = color2, color2 = t;
            t = count, count = count2, count2 = t;
            num_colors = colors2, overflow = overflow2;
        } else if (h.count) { /* the hubs' colours of the first */
            memset(h.bits, 0, (size_t)h.count * (size_t)h.words * sizeof *h.bits);
            for (int j = 0; j < count_in; ++j) {
                int c = subset ? subset[j] : j;
                if (color[c] >= 0)
                    hubs_mark(&h, ends, arity, c, color[c], 1);
            }
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
            mark_neighbours(ends, arity, c, color, off, slots, hubs_skip(&h), near, stamp, tag);
            int best = -1;
            for (int k = 0; k < num_colors; ++k)
                if (stamp[k] != tag && k != k0 && (best < 0 || count[k] < count[best]) &&
                    !hubs_taken(&h, ends, arity, c, k))
                    best = k;
            if (best >= 0 && count[best] + 1 < count[k0])
                assign(&h, ends, arity, color, count, c, best);
        }
    /* The moves may have freed a colour for a constraint of the overflow set: it takes the
     * smallest such colour, and the serial set shrinks. */
    for (int j = 0; j < count_in && overflow > 0; ++j) {
        int c = subset ? subset[j] : j;
        if (color[c] != -2)
            continue;
        int tag = 3 * n + c;
        mark_neighbours(ends, arity, c, color, off, slots, hubs_skip(&h), near, stamp, tag);
        int best = -1;
        for (int k = 0; k < num_colors; ++k)
            if (stamp[k] != tag && (best < 0 || count[k] < count[best]) &&
                !hubs_taken(&h, ends, arity, c, k))
                best = k;
        if (best >= 0) {
            assign(&h, ends, arity, color, count, c, best);
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
    hubs_free(&h);
    return st;
}

pbd_status pbd_coloring_validate(int num_particles, const int *ends, int arity, int n,
                                 const pbd_coloring *c, const unsigned char *shared, pbd_error *err)
{
    if (!c)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "colouring: found NULL, expected one");
    pbd_status st = check_ends(num_particles, ends, arity, n, err);
    if (st != PBD_OK)
        return st;
    if (c->num_colors < 0 || (n > 0 && c->num_colors < 1) || !c->offsets || c->offsets[0] != 0 ||
        c->offsets[c->num_colors] != n || (n > 0 && !c->order))
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "colouring: %d colours do not cover the %d "
                             "constraints",
                             c->num_colors, n);
    int *seen = calloc((size_t)n + 1, sizeof *seen);
    int *owner = malloc(((size_t)num_particles + 1) * sizeof *owner);
    int *owner_color = malloc(((size_t)num_particles + 1) * sizeof *owner_color);
    if (!seen || !owner || !owner_color) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory validating a colouring");
        goto done;
    }
    for (int i = 0; i < num_particles; ++i)
        owner_color[i] = -1;
    for (int k = 0; k < c->num_colors && st == PBD_OK; ++k) {
        if (c->offsets[k + 1] < c->offsets[k] || c->offsets[k + 1] > n) {
            st = pbd_error_set(err, PBD_ERR_MODEL,
                               "colouring: colour %d ends at %d, expected an end in [%d, %d]", k,
                               c->offsets[k + 1], c->offsets[k], n);
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
