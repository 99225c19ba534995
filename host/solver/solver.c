/* The public solver: builds the plan, picks the backend, turns per-body sums into
 * statistics. */
#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/csr.h"
#include "solver/solver_impl.h"

struct pbd_solver {
    pbd_plan plan;
    const pbd_backend_ops *ops;
    void *impl;
    long substeps_done;
    uint64_t fingerprint; /* of the model the solver was made from */
    /* a constraint change that the backend failed to take (its record and the plan's lists
     * already new): -1 while none, else the constraint type; steps are refused */
    int stale_type, stale_index;
    /* what left the state partly written (a step, a wait for queued steps or a checkpoint's
     * load that failed on the device), with its message: steps are refused (empty while
     * none) */
    char unusable[1024];
};

static void pbd_blocks_free(pbd_blocks *bl)
{
    free(bl->block_first);
    free(bl->block_offsets);
    free(bl->block_runs);
    free(bl->cut_offsets);
    free(bl->cut_runs);
    memset(bl, 0, sizeof *bl);
}

void pbd_plan_free(pbd_plan *plan)
{
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        free(plan->type[t].color_offsets);
        free(plan->type[t].position);
        free(plan->type[t].records);
        pbd_blocks_free(&plan->type[t].blocks);
    }
    free(plan->csr_offsets);
    free(plan->csr_slots);
    free(plan->csr_other);
    free(plan->segments);
    free(plan->body_segments);
    free(plan->body_ref);
    free(plan->body_flags);
    free(plan->body_damping);
    free(plan->body_material);
    free(plan->inv_mass);
    free(plan->particle_radius);
    free(plan->body_self);
    free(plan->contact_rest);
    free(plan->body_first);
    free(plan->colliders0);
    free(plan->collider_t0);
    free(plan->colliders);
    free(plan->body_constraints);
    free(plan->body_constraint_segments);
    free(plan->body_constraint_ranges);
    free(plan->body_constraint_mq);
    free(plan->member_particle);
    free(plan->member_rest);
    free(plan->cluster_offsets);
    free(plan->cluster_constraints);
    free(plan->shape_centre);
    free(plan->particle_set);
    free(plan->set_offsets);
    free(plan->set_constraints);
    free(plan->set_particle_offsets);
    free(plan->set_particles);
    free(plan->set_rest);
    free(plan->pressure_offsets);
    free(plan->pressure_pairs);
    memset(plan, 0, sizeof *plan);
}

static pbd_status check_config(const pbd_config *c, pbd_error *err)
{
    /* The bounds of a scene's keys: beyond them a step leaves the coordinates' range. */
    if (!(c->dt > 0.0f && c->dt <= 10.0f))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "dt: found %g, expected a time step in (0, 10] s", (double)c->dt);
    if (c->substeps < 1 || c->substeps > PBD_MAX_SUBSTEPS)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "substeps: found %d, expected an integer in [1, %d]", c->substeps,
                             PBD_MAX_SUBSTEPS);
    if (!(c->dt / (float)c->substeps >= PBD_MIN_SUBSTEP))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "dt: found %g s in %d substeps, expected substeps of at least %g s",
                             (double)c->dt, c->substeps, (double)PBD_MIN_SUBSTEP);
    if (c->iterations < 1 || c->iterations > 10000)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "iterations: found %d, expected an integer in [1, 10000]",
                             c->iterations);
    if (!(c->omega > 0.0f && c->omega < 2.0f))
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "omega: found %g, expected a value in (0, 2)",
                             (double)c->omega);
    if (c->solver != PBD_SOLVER_GS && c->solver != PBD_SOLVER_JACOBI)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "solver: found %d, expected gs or jacobi",
                             (int)c->solver);
    for (int k = 0; k < 3; ++k)
        if (!(fabsf(c->gravity[k]) <= 1e6f))
            return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                 "gravity[%d]: found %g, expected a number in [-1e6, 1e6] m/s^2", k,
                                 (double)c->gravity[k]);
    if (c->momentum != 0 && c->momentum != 1)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "momentum: found %d, expected 0 or 1",
                             c->momentum);
    if (c->damping != PBD_DAMPING_NONE && c->damping != PBD_DAMPING_POINT &&
        c->damping != PBD_DAMPING_RIGID)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "damping: found %d, expected none, point or rigid", (int)c->damping);
    if (!(c->damping_k >= 0.0f && c->damping_k <= 1.0f))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "damping_k: found %g, expected a fraction in [0, 1]",
                             (double)c->damping_k);
    if (c->max_colors < 0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "max_colors: found %d, expected >= 1, or 0 for no bound",
                             c->max_colors);
    if (c->serial_color_size < 0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "serial_color_size: found %d, expected >= 1, or 0 for a launch a "
                             "colour",
                             c->serial_color_size);
    if (c->velocity_update != PBD_VELOCITY_FIRST_ORDER && c->velocity_update != PBD_VELOCITY_BDF2)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "velocity_update: found %d, expected first_order or bdf2",
                             (int)c->velocity_update);
    return PBD_OK;
}

/* Particles per block, at least: smaller blocks give more boundary and no more parallelism
 * on CPU devices. At most PBD_MAX_BLOCKS blocks (a few per core keeps the cores evenly
 * loaded; more only moves constraints to the boundary). */
#define PBD_BLOCK_PARTICLES 2048
#define PBD_MAX_BLOCKS      8

/* Whether constraint `cur` continues a run of `kind` after `prev` (model indices into d):
 * consecutive ends (a + 1, b + 1), or the next of interleaved pairs (a + 2, b = a + 1). */
static int run_continues(const int *ends, int prev, int cur, int kind)
{
    int pa = ends[2 * prev], pb = ends[2 * prev + 1], ca = ends[2 * cur], cb = ends[2 * cur + 1];
    if (kind == PBD_RUN_CONSECUTIVE)
        return ca == pa + 1 && cb == pb + 1;
    return ca == pa + 2 && cb == ca + 1 && pb == pa + 1;
}

/* Moves the runs of `kind` in in[0, n), sixteen constraints at a time, to out and the others
 * to left, each in their order; returns how many went to out. ends: two a constraint. */
static int take_runs(const int *d, const int *in, int n, int kind, int *out, int *left,
                     int *num_left)
{
    int num_out = 0;
    *num_left = 0;
    for (int j = 0; j < n;) {
        int e = j + 1;
        while (e < n && run_continues(d, in[e - 1], in[e], kind))
            ++e;
        int take = (e - j) / 16 * 16;
        for (int k = j; k < e; ++k) {
            if (k < j + take)
                out[num_out++] = in[k];
            else
                left[(*num_left)++] = in[k];
        }
        j = e;
    }
    return num_out;
}

/* Sorts order[lo, hi), one block's part of one colour, for pbd_gs16 (project_distance.cl):
 * first the groups of sixteen whose ends are two runs of consecutive particles, then those of
 * interleaved pairs, then the rest, and writes where the pairs and the rest begin to runs[0],
 * runs[1]. The order inside a colour does not change the result, as its constraints share no
 * particle. tmp holds 2 (hi - lo) ints. */
static void sort_runs(const int *d, int *order, int lo, int hi, int *tmp, int *runs)
{
    int n = hi - lo, nleft = 0, nrest = 0;
    int *left = tmp, *rest = tmp + n;
    int ncons = take_runs(d, order + lo, n, PBD_RUN_CONSECUTIVE, order + lo, left, &nleft);
    /* take_runs writes out[] no faster than it reads in[], so order + lo serves as both. */
    int npairs = take_runs(d, left, nleft, PBD_RUN_PAIRS, order + lo + ncons, rest, &nrest);
    memcpy(order + lo + ncons + npairs, rest, (size_t)nrest * sizeof *order);
    runs[0] = lo + ncons;
    runs[1] = lo + ncons + npairs;
}

/* The lowest and highest block of constraint c's particles (arity of them), pinned ones
 * included: the CPU kernels store a whole group's every particle, a pinned one as it was, so
 * blocks that run side by side share none. */
static void block_span(const int *ends, int arity, const int *block, int c, int *lo, int *hi)
{
    const int *e = ends + (size_t)arity * (size_t)c;
    *lo = INT_MAX;
    *hi = -1;
    for (int k = 0; k < arity; ++k) {
        int b = block[e[k]];
        *lo = b < *lo ? b : *lo;
        *hi = b > *hi ? b : *hi;
    }
}

/* The root of cut k in a union-find forest. */
static int cut_root(int *parent, int k)
{
    while (parent[k] != k)
        k = parent[k] = parent[parent[k]];
    return k;
}

/* Cuts np particles into blocks of consecutive indices, writing each one's block to block[]
 * (np ints), and returns how many: np / PBD_BLOCK_PARTICLES within [1, PBD_MAX_BLOCKS], but
 * one with `one` or where over a quarter of the n constraints would cross blocks (a mesh
 * numbered without locality). */
static int cut_blocks(int np, const int *ends, int arity, int n, int one, int *block)
{
    int nb = one ? 1 : np / PBD_BLOCK_PARTICLES, lo, hi;
    nb = nb < 1 ? 1 : nb > PBD_MAX_BLOCKS ? PBD_MAX_BLOCKS : nb;
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < np; ++i)
            block[i] = (int)((long long)i * nb / np);
        int nbound = 0;
        for (int c = 0; c < n; ++c) {
            block_span(ends, arity, block, c, &lo, &hi);
            nbound += lo != hi;
        }
        if (nbound <= n / 4 || nb == 1)
            break;
        nb = 1; /* no locality to use */
    }
    return nb;
}

/* Groups the boundary constraints (list[0, nbound)) by the cut they cross, named by the
 * lowest of their blocks, merging cuts that share a particle, so that different groups share
 * none and can be projected side by side. Writes each constraint's group (by
 * model index) to group[] and returns the number of groups, numbered in the order of their
 * lowest cut. touch: num_particles ints; nb <= PBD_MAX_BLOCKS. */
static int group_cuts(int np, const int *ends, int arity, const int *block, const int *list,
                      int nbound, int nb, int *touch, int *group)
{
    int parent[PBD_MAX_BLOCKS], lo, hi;
    for (int i = 0; i < np; ++i)
        touch[i] = -1;
    for (int k = 0; k < nb; ++k)
        parent[k] = k;
    for (int j = 0; j < nbound; ++j) {
        const int *e = ends + (size_t)arity * (size_t)list[j];
        block_span(ends, arity, block, list[j], &lo, &hi);
        for (int k = 0; k < arity; ++k) {
            if (touch[e[k]] < 0)
                touch[e[k]] = lo;
            else
                parent[cut_root(parent, touch[e[k]])] = cut_root(parent, lo);
        }
    }
    /* Number the groups that hold constraints by their lowest cut. */
    int used[PBD_MAX_BLOCKS] = {0}, id[PBD_MAX_BLOCKS], ng = 0;
    for (int j = 0; j < nbound; ++j) {
        block_span(ends, arity, block, list[j], &lo, &hi);
        used[cut_root(parent, lo)] = 1;
    }
    for (int k = 0; k < nb; ++k)
        id[k] = used[k] ? ng++ : -1;
    for (int j = 0; j < nbound; ++j) {
        block_span(ends, arity, block, list[j], &lo, &hi);
        group[list[j]] = id[cut_root(parent, lo)];
    }
    return ng;
}

/* One block's overflow set, records [first, end) of `order` (model indices), as its
 * work-item takes it: runs of consecutive constraints that share no (unshared) particle,
 * sixteen at most, which the kernel projects side by side with the serial result. Writes run
 * g's start and end to bo[2 (k0 + g)] and bo[2 (k0 + g) + 1] and returns k0 plus the runs.
 * touch: num_particles ints. */
static int overflow_runs(int np, const int *ends, int arity, const unsigned char *shared,
                         const int *order, int first, int end, int k0, int *touch, int *bo)
{
    for (int i = 0; i < np; ++i)
        touch[i] = -1;
    int k = k0, start = first;
    for (int j = first; j < end; ++j) {
        const int *e = ends + (size_t)arity * (size_t)order[j];
        int clash = j - start == 16;
        for (int a = 0; a < arity && !clash; ++a)
            clash = !(shared && shared[e[a]]) && touch[e[a]] == k;
        if (clash) {
            bo[2 * k] = start;
            bo[2 * k + 1] = j;
            ++k;
            start = j;
        }
        for (int a = 0; a < arity; ++a)
            touch[e[a]] = k;
    }
    bo[2 * k] = start;
    bo[2 * k + 1] = end;
    return k + 1;
}

/* Buckets each colour of `src` by part (part[c] of constraint c, model index, in
 * [0, parts)), keeping the colouring's order within a part, into order[j ..], and with
 * `runs` (distance) sorts each part into runs (sort_runs), but an overflow set's (marked
 * PBD_RUN_SERIAL). Writes colour k's start to color_offsets[k], its parts' starts to
 * offsets[k (parts + 1) ..] and their runs to runs[2 (k parts + p) ..]; returns the end.
 * tmp holds 2 n ints. */
static int bucket_colors(const int *d, const pbd_coloring *src, const int *part, int parts,
                         int *order, int j, int *color_offsets, int *offsets, int *runs, int *tmp)
{
    for (int k = 0; k < src->num_colors; ++k) {
        int *o = offsets + (size_t)k * ((size_t)parts + 1);
        /* an overflow set keeps its order, its parts marked to go one by one (PBD_RUN_SERIAL):
         * its constraints share particles */
        int over = src->overflow && k == src->num_colors - 1, sort = runs && !over;
        color_offsets[k] = j;
        for (int p = 0; p < parts; ++p) {
            o[p] = j;
            for (int s = src->offsets[k]; s < src->offsets[k + 1]; ++s)
                if (part[src->order[s]] == p)
                    order[j++] = src->order[s];
            int *r = runs ? runs + 2 * ((size_t)k * (size_t)parts + (size_t)p) : NULL;
            if (sort)
                sort_runs(d, order, o[p], j, tmp, r);
            else if (runs)
                r[0] = r[1] = PBD_RUN_SERIAL;
        }
        o[parts] = j;
    }
    return j;
}

/* Cuts the particles into blocks of consecutive indices and colours the constraints whose
 * particles lie in different blocks (first) and those inside one block (then, each colour
 * sorted by block) into `col`, with `opt`'s shared particles and bound on colours. Distance
 * constraints (arity 2, `runs`) also get their runs. Meshes numbered without locality would
 * put most constraints on the boundary; they get one block, which is the plain colouring, as
 * they do with `one`. A colouring of two blocks or more that overflows `opt`'s bound in
 * either part (distance constraints: between blocks) is not blocked: neither blocks
 * (bl->num_blocks 0) nor a colouring are returned. The overflow set is the last colour
 * (col->overflow): distance constraints keep each block's part of it in its order; one block
 * of another type takes it in runs (overflow_runs), each a part of its own. */
static pbd_status block_coloring(int np, const int *ends, int arity, int n,
                                 const pbd_color_options *opt, int runs, int one, pbd_blocks *bl,
                                 pbd_coloring *col, pbd_error *err)
{
    /* the colours may share pinned particles; the blocks and cut groups share none */
    const unsigned char *shared = opt ? opt->shared : NULL;
    int *block = malloc(((size_t)np + 1) * sizeof *block);
    int *list = malloc(((size_t)n + 1) * sizeof *list);
    int *tmp = malloc((2 * (size_t)n + 1) * sizeof *tmp);
    int *part = malloc(((size_t)n + 1) * sizeof *part); /* a constraint's group or block */
    int *touch = malloc(((size_t)np + 1) * sizeof *touch);
    pbd_coloring cb = {0}, ci = {0};
    pbd_status st = PBD_OK;
    int lo, hi;
    memset(bl, 0, sizeof *bl);
    if (!block || !list || !tmp || !part || !touch) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
        goto done;
    }
    int nbound = 0, nb = cut_blocks(np, ends, arity, n, one, block);
    for (int c = 0; c < n; ++c) {
        block_span(ends, arity, block, c, &lo, &hi);
        nbound += lo != hi;
    }
    /* Boundary constraints first in `list`, then the interior ones, each in model order;
     * part[]: an interior constraint's block. */
    int nin = 0;
    for (int c = 0; c < n; ++c) {
        block_span(ends, arity, block, c, &lo, &hi);
        if (lo != hi)
            list[nin++] = c;
    }
    for (int c = 0; c < n; ++c) {
        block_span(ends, arity, block, c, &lo, &hi);
        if (lo == hi)
            list[nin++] = c;
    }
    if ((st = pbd_color_constraints(np, ends, arity, n, list, nbound, opt, &cb, err)) != PBD_OK ||
        (st = pbd_color_constraints(np, ends, arity, n, list + nbound, n - nbound, opt, &ci,
                                    err)) != PBD_OK)
        goto done;
    /* no blocks, no colouring: the caller colours plainly (distance constraints: as one
     * block) */
    if (cb.overflow || (ci.overflow && nb > 1 && !runs))
        goto done;
    int nc = cb.num_colors + ci.num_colors, nbc = cb.num_colors;
    int ng = group_cuts(np, ends, arity, block, list, nbound, nb, touch, part);
    bl->num_blocks = nb;
    bl->boundary_colors = nbc;
    bl->num_cuts = ng;
    bl->cut_offsets = malloc(((size_t)nbc * ((size_t)ng + 1) + 1) * sizeof *bl->cut_offsets);
    bl->block_first = malloc(((size_t)nb + 1) * sizeof *bl->block_first);
    /* one block ending in an overflow set: room for the set's runs, up to one a constraint */
    int over = ci.overflow && !runs ? ci.offsets[ci.num_colors] - ci.offsets[ci.num_colors - 1] : 0;
    bl->block_offsets =
        malloc(((size_t)(ci.num_colors + over) * ((size_t)nb + 1) + 1) * sizeof *bl->block_offsets);
    if (runs) {
        bl->cut_runs = malloc((2 * (size_t)nbc * (size_t)ng + 1) * sizeof *bl->cut_runs);
        bl->block_runs =
            malloc((2 * (size_t)ci.num_colors * (size_t)nb + 1) * sizeof *bl->block_runs);
    }
    col->num_colors = nc;
    col->overflow = ci.overflow;
    col->offsets = malloc(((size_t)nc + 1) * sizeof *col->offsets);
    col->order = malloc(((size_t)n + 1) * sizeof *col->order);
    if (!bl->block_first || !bl->block_offsets || !bl->cut_offsets ||
        (runs && (!bl->block_runs || !bl->cut_runs)) || !col->offsets || !col->order) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
        goto done;
    }
    /* Block b is the particles i with block[i] == b: the first index of each block. (Not
     * b np / nb rounded down, which differs when nb does not divide np, and would have a
     * block's worker collide another block's first particle while that one projects it.) */
    for (int b = 0, i = 0; b <= nb; ++b) {
        while (i < np && block[i] < b)
            ++i;
        bl->block_first[b] = i;
    }
    /* Each boundary colour, bucketed by group of cuts, so the groups can run side by side;
     * then each interior colour, bucketed by block. */
    for (int c = 0; c < n; ++c) {
        block_span(ends, arity, block, c, &lo, &hi);
        if (lo == hi)
            part[c] = lo;
    }
    int j = bucket_colors(ends, &cb, part, ng, col->order, 0, col->offsets, bl->cut_offsets,
                          bl->cut_runs, tmp);
    j = bucket_colors(ends, &ci, part, nb, col->order, j, col->offsets + nbc, bl->block_offsets,
                      bl->block_runs, tmp);
    col->offsets[nc] = j;
    bl->block_colors = ci.num_colors;
    if (ci.overflow && !runs) /* nb is 1 here */
        bl->block_colors = overflow_runs(np, ends, arity, shared, col->order, col->offsets[nc - 1],
                                         j, ci.num_colors - 1, touch, bl->block_offsets);
done:
    if (st != PBD_OK) {
        pbd_coloring_free(col);
        pbd_blocks_free(bl);
    }
    pbd_coloring_free(&cb);
    pbd_coloring_free(&ci);
    free(block);
    free(list);
    free(tmp);
    free(part);
    free(touch);
    return st;
}

/* Whether body bd has shape matching, in either form. */
static int shaped(const pbd_body *bd)
{
    return bd->shape_stiffness > 0.0f || bd->shape_compliance > 0.0f;
}

/* Whether body bd has a body constraint of its own: shape matching of the whole body, or
 * pressure. */
static int body_wide(const pbd_body *bd)
{
    return (shaped(bd) && !(bd->shape_cluster_spacing > 0.0f)) || bd->pressure > 0.0f;
}

/* The compliance the solver uses: XPBD's as it is; PBD stiffness is per iteration,
 * k' = 1 - (1 - k)^(1/n), which gives the same total correction after n iterations as k once
 * (Müller et al. 2007, section 3.3), stored as -k'. */
static float plan_compliance(float compliance, int iterations)
{
    if (compliance >= 0.0f)
        return compliance;
    double k = -(double)compliance;
    double kn = 1.0 - pow(1.0 - k, 1.0 / iterations);
    return -(float)(kn > FLT_MIN ? kn : FLT_MIN);
}

/* The compliance of record r of `type`. */
static float *compliance_of(int type, void *r)
{
    switch (type) {
#define PBD_X_COMPLIANCE(id, name, t, arity, world)                                                \
    case PBD_CONSTRAINT_##id:                                                                      \
        return &((t *)r)->compliance;
        PBD_CONSTRAINT_LIST(PBD_X_COMPLIANCE)
#undef PBD_X_COMPLIANCE
    }
    return NULL;
}

/* Each body's damping (its own, else the run's) as the pair (point, rigid) of fractions in
 * body_damping; where all bodies damp alike, those fractions also in point_damping and
 * rigid_damping, which the kernels then take as they are (damping_per_body 0). */
static void plan_damping(const pbd_model *m, const pbd_config *cfg, pbd_plan *plan)
{
    plan->damping_per_body = 0;
    for (int b = 0; b < m->num_bodies; ++b) {
        const pbd_body *bd = &m->bodies[b];
        float k;
        pbd_damping_kind kind = pbd_body_damping(bd, cfg, &k);
        float *d = plan->body_damping + 2 * b;
        d[0] = kind == PBD_DAMPING_POINT ? k : 0.0f;
        d[1] = kind == PBD_DAMPING_RIGID ? k : 0.0f;
        plan->damping_per_body |= d[0] != plan->body_damping[0] || d[1] != plan->body_damping[1];
    }
    int per = plan->damping_per_body;
    plan->point_damping = per ? 0.0f : plan->body_damping[0];
    plan->rigid_damping = per ? 0.0f : plan->body_damping[1];
}

/* Whether a mesh of `num_particles` is one block: too small for two. */
static int one_block(int num_particles)
{
    return num_particles / PBD_BLOCK_PARTICLES < 2;
}

/* Whether constraint `type` is coloured in the block order besides distance: the
 * four-particle types on the CPU variant under Gauss-Seidel, where a work-item then takes a
 * block's colours in one launch (project_<type>_blocks), sixteen at a time. On meshes of two
 * blocks or more; a smaller mesh is one block, whose work-item takes every colour in one
 * launch (the distance constraints' rule), but where serial_color_size is 0, which asks for
 * a launch a colour. */
static int blocked_type(const pbd_plan *plan, int type, int count, int num_particles)
{
    return count > 0 && plan->variant == PBD_VARIANT_CPU && plan->cfg.solver == PBD_SOLVER_GS &&
           pbd_constraint_types[type].arity == 4 && !pbd_constraint_types[type].world &&
           (!one_block(num_particles) || plan->cfg.serial_color_size > 0);
}

/* Colours constraint `type` (distance in the block order, the others plainly) and stores its
 * records sorted by colour, with PBD stiffness per iteration. *sorted_ends (malloc'd) gets
 * the particles of the sorted records. */
static pbd_status plan_type(const pbd_model *m, const pbd_config *cfg, int type, pbd_plan *plan,
                            int **sorted_ends, pbd_error *err)
{
    pbd_plan_type *pt = &plan->type[type];
    const pbd_constraint_info *info = &pbd_constraint_types[type];
    int n = 0, arity = info->arity;
    const char *rec = pbd_model_constraints(m, type, &n);
    pbd_coloring col = {0};
    int *ends = pbd_model_constraint_ends(m, type);
    unsigned char *shared = NULL;
    pbd_status st = PBD_OK;
    *sorted_ends = malloc(((size_t)n * (size_t)arity + 1) * sizeof **sorted_ends);
    pt->count = n;
    pt->records = malloc(((size_t)n + 1) * info->size);
    pt->position = malloc(((size_t)n + 1) * sizeof *pt->position);
    if (!ends || !*sorted_ends || !pt->records || !pt->position) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing %d %s constraints", n,
                           info->name);
        goto done;
    }
    /* What finds no colour under the bound is projected serially. The types but distance
     * may share pinned particles, which their projections never write (the distance
     * kernels write both ends). */
    if (type != PBD_CONSTRAINT_DISTANCE && !(shared = malloc((size_t)m->num_particles + 1))) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory colouring %d %s constraints", n,
                           info->name);
        goto done;
    }
    for (int i = 0; shared && i < m->num_particles; ++i)
        shared[i] = m->x[i].w == 0.0f;
    pbd_color_options opt = {.shared = shared, .max_colors = cfg->max_colors};
    pbd_blocks *bl = &pt->blocks;
    if (type == PBD_CONSTRAINT_DISTANCE) {
        /* The CPU variant's blocks take all their colours in one launch, where the bound
         * would only make a chain of the overflow set; it bounds the colours that are
         * launched one by one: the GPU variant's, and those of one block of more than
         * PBD_ONE_BLOCK constraints. */
        int cpu = plan->variant == PBD_VARIANT_CPU, launched = 0;
        int *block = cpu && n > PBD_ONE_BLOCK
                         ? malloc(((size_t)m->num_particles + 1) * sizeof *block)
                         : NULL;
        if (cpu && n > PBD_ONE_BLOCK && !block) {
            st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory colouring %d %s constraints", n,
                               info->name);
            goto done;
        }
        if (block)
            launched = cut_blocks(m->num_particles, ends, 2, n, 0, block) < 2;
        free(block);
        pbd_color_options unbounded = {.shared = NULL, .max_colors = 0};
        st = block_coloring(m->num_particles, ends, 2, n, cpu && !launched ? &unbounded : &opt, 1,
                            launched, bl, &col, err);
        /* an overflow among the constraints between blocks: one block */
        if (st == PBD_OK && bl->num_blocks < 1)
            st = block_coloring(m->num_particles, ends, 2, n, &opt, 1, 1, bl, &col, err);
    } else if (blocked_type(plan, type, n, m->num_particles)) {
        st = block_coloring(m->num_particles, ends, arity, n, &opt, 0, 0, bl, &col, err);
    }
    /* no blocks, or one block of a large mesh (numbered without locality): the plain
     * colouring, a launch a colour on every core */
    if (st == PBD_OK && type != PBD_CONSTRAINT_DISTANCE &&
        bl->num_blocks < (one_block(m->num_particles) ? 1 : 2)) {
        pbd_blocks_free(bl);
        pbd_coloring_free(&col);
        st = pbd_color_constraints(m->num_particles, ends, arity, n, NULL, 0, &opt, &col, err);
    }
    if (st == PBD_OK)
        st = pbd_coloring_validate(m->num_particles, ends, arity, n, &col, shared, err);
    if (st != PBD_OK)
        goto done;
    pt->num_colors = col.num_colors;
    pt->overflow = col.overflow;
    pt->color_offsets = col.offsets;
    col.offsets = NULL;
    for (int j = 0; j < n; ++j) {
        int c = col.order[j];
        char *r = (char *)pt->records + (size_t)j * info->size;
        memcpy(r, rec + (size_t)c * info->size, info->size);
        memcpy(*sorted_ends + (size_t)j * (size_t)arity, ends + (size_t)c * (size_t)arity,
               (size_t)arity * sizeof *ends);
        pt->position[c] = j;
        float *compliance = compliance_of(type, r);
        *compliance = plan_compliance(*compliance, cfg->iterations);
    }
done:
    pbd_coloring_free(&col);
    free(ends);
    free(shared);
    return st;
}

/* Returns PBD_ERR_ARGUMENT from the calling API function where its pointer p is NULL. */
#define PBD_NEEDS(p, name, what)                                                                   \
    do {                                                                                           \
        if (!(p))                                                                                  \
            return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: found NULL, expected %s", name,       \
                                 what);                                                            \
    } while (0)

/* The Neo-Hookean element is stable in XPBD only while its deviatoric part is soft against
 * the particles' inertia over a substep: h^2 mu V sum_i w_i |grad_i C_D|^2 small at rest
 * (grad C_D = I / sqrt 3 there). Past that, the first iteration of a substep asks |F| = 0 of
 * a pre-stressed element and the solve diverges. A 4^3-cell box at rest or spinning, at
 * Poisson ratios 0 to 0.49 and 1 to 30 iterations, holds its energy to 0.6 and blows up from
 * 0.7 (at 1 iteration; 0.8 at more); a spinning sliver tetrahedron gains 7 % at 0.5 and
 * nothing at 0.43. Refused past PBD_NEO_HOOKEAN_MAX_RATIO, with the substeps that would do. */
#define PBD_NEO_HOOKEAN_MAX_RATIO 0.4
static double neo_hookean_ratio(const pbd_neo_hookean *r, const float *inv_mass,
                                const pbd_float4 *x, double h)
{
    const int ids[4] = {r->a, r->b, r->c, r->d};
    double g[4][3] = {{0}}, sum = 0.0;
    for (int i = 0; i < 3; ++i) /* grad at particle i + 1: row i of Dm^-1 / sqrt 3 */
        for (int k = 0; k < 3; ++k) {
            g[i + 1][k] = r->dm_inv[3 * i + k] / sqrt(3.0);
            g[0][k] -= g[i + 1][k];
        }
    for (int i = 0; i < 4; ++i)
        sum += (inv_mass ? inv_mass[ids[i]] : x[ids[i]].w) *
               (g[i][0] * g[i][0] + g[i][1] * g[i][1] + g[i][2] * g[i][2]);
    return r->compliance > 0.0f ? h * h * sum / r->compliance : INFINITY;
}

/* The refusal of Neo-Hookean element `at` at `ratio`; `who` names its body or the update. */
static pbd_status neo_hookean_refused(const char *who, int at, double ratio, const pbd_config *cfg,
                                      pbd_error *err)
{
    double h = (double)cfg->dt / cfg->substeps; /* compliance > 0: pbd_constraint_validate */
    double need = ceil(cfg->substeps * sqrt(ratio / PBD_NEO_HOOKEAN_MAX_RATIO));
    char fix[128];
    if (need <= PBD_MAX_SUBSTEPS)
        snprintf(fix, sizeof fix,
                 "use substeps >= %.0f, a lower young_modulus or heavier particles", need);
    else
        snprintf(fix, sizeof fix,
                 "use a lower young_modulus or heavier particles (substeps would need %.3g, "
                 "over the most, %d)",
                 need, PBD_MAX_SUBSTEPS);
    return pbd_error_set(err, PBD_ERR_MODEL,
                         "%s: Neo-Hookean element %d is too stiff for substeps of %.3g s (h^2 mu "
                         "V sum w |grad C|^2 = %.3g, expected <= %g): %s",
                         who, at, h, ratio, PBD_NEO_HOOKEAN_MAX_RATIO, fix);
}

/* Float positions hold a substep's fall under gravity, h^2 |g|, only where it spans several
 * float steps: at 10 m from the origin a float step is 9.5e-7 m, and at 160 substeps of a
 * 60 Hz frame a particle at rest there would not fall at all (p = x + h^2 g rounds to x), at
 * 40 it falls 12 % too fast. A scene whose free particles start where gravity's substep is
 * under PBD_MIN_GRAVITY_STEPS float steps is refused, naming the substeps that would do. */
#define PBD_MIN_GRAVITY_STEPS 8.0
static pbd_status check_precision(const pbd_model *m, const pbd_config *c, pbd_error *err)
{
    static const char axis[3] = {'x', 'y', 'z'};
    double h = (double)c->dt / c->substeps;
    for (int a = 0; a < 3; ++a) {
        double g = fabs((double)c->gravity[a]);
        if (!(g > 0.0))
            continue;
        /* gravity moves each coordinate on its own: the one along it, at its largest */
        float far = 0.0f;
        int at = -1;
        for (int i = 0; i < m->num_particles; ++i) {
            if (!(m->x[i].w > 0.0f))
                continue; /* pinned: never falls */
            float v = fabsf(a == 0 ? m->x[i].x : a == 1 ? m->x[i].y : m->x[i].z);
            if (at < 0 || v > far)
                far = v, at = i;
        }
        if (at < 0 || far < FLT_MIN)
            continue;
        double step = (double)nextafterf(far, INFINITY) - (double)far; /* a float step there */
        double fall = h * h * g;
        if (fall >= PBD_MIN_GRAVITY_STEPS * step)
            continue;
        double h_min = sqrt(PBD_MIN_GRAVITY_STEPS * step / g);
        int most = (int)floor((double)c->dt / h_min);
        char expected[128];
        if (most >= 1)
            snprintf(expected, sizeof expected, "at most %d substeps of this dt", most);
        else
            snprintf(expected, sizeof expected, "a dt of at least %.3g s at 1 substep", h_min);
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "substeps: found %d, where gravity moves a particle %.3g m a "
                             "substep along %c, under %g float steps (%.3g m each) at particle "
                             "%d, %g m from the origin along %c: rounding would distort its "
                             "fall (under one step, stop it); expected %s, or the scene nearer "
                             "the origin",
                             c->substeps, fall, axis[a], PBD_MIN_GRAVITY_STEPS, step, at,
                             (double)far, axis[a], expected);
    }
    return PBD_OK;
}

static pbd_status check_neo_hookean(const pbd_model *m, const pbd_config *cfg, pbd_error *err)
{
    double h = (double)cfg->dt / cfg->substeps, worst = 0.0;
    int at = -1;
    for (int e = 0; e < m->num_neo_hookean; ++e) {
        double ratio = neo_hookean_ratio(&m->neo_hookean[e], NULL, m->x, h);
        if (ratio > worst) {
            worst = ratio;
            at = e;
        }
    }
    if (worst <= PBD_NEO_HOOKEAN_MAX_RATIO)
        return PBD_OK;
    int b = m->body[m->neo_hookean[at].a];
    char who[96];
    snprintf(who, sizeof who, "body %d (%s)", b, m->bodies[b].name);
    return neo_hookean_refused(who, at, worst, cfg, err);
}

/* Shape matching's rest offsets q = x0 - c0 of members [first, end) (member e is particle
 * member_particle[e]), c0 their initial centre of mass weighted by rest[e].w, set before. */
static void shape_rest(const pbd_model *m, const int *member_particle, int first, int end,
                       pbd_float4 *rest)
{
    double mass = 0.0, c0[3] = {0.0, 0.0, 0.0};
    for (int e = first; e < end; ++e) {
        int i = member_particle[e];
        mass += rest[e].w;
        c0[0] += rest[e].w * (double)m->x[i].x;
        c0[1] += rest[e].w * (double)m->x[i].y;
        c0[2] += rest[e].w * (double)m->x[i].z;
    }
    for (int e = first; e < end; ++e) {
        int i = member_particle[e];
        rest[e].x = (float)(m->x[i].x - c0[0] / mass);
        rest[e].y = (float)(m->x[i].y - c0[1] / mass);
        rest[e].z = (float)(m->x[i].z - c0[2] / mass);
    }
}

/* The member of [first, end) nearest its members' initial centroid: the reference point of a
 * body constraint's sums (pbd_body_constraint.first). The sums are of offsets p - r in
 * float; from a corner, every offset has the sign of the body's extent and the sums'
 * rounding moved the centre the same way every iteration (a shape-matched box at rest,
 * momentum off, drifted to 7 J in a second). From near the centre the offsets cancel and
 * the rounding is some fifty times smaller. */
static int central_member(const pbd_model *m, const int *member_particle, int first, int end)
{
    double c[3] = {0.0, 0.0, 0.0};
    for (int e = first; e < end; ++e) {
        int i = member_particle[e];
        c[0] += m->x[i].x;
        c[1] += m->x[i].y;
        c[2] += m->x[i].z;
    }
    int best = member_particle[first];
    double near = INFINITY;
    for (int e = first; e < end; ++e) {
        int i = member_particle[e];
        double dx = m->x[i].x - c[0] / (end - first), dy = m->x[i].y - c[1] / (end - first);
        double dz = m->x[i].z - c[2] / (end - first), d = dx * dx + dy * dy + dz * dz;
        if (d < near) {
            near = d;
            best = i;
        }
    }
    return best;
}

/* Constraint k's shape_centre: the centre of mass of its members' (first, end) particles'
 * rest offsets from their body's centre (member_rest[i], i < num_particles), weighed as in the
 * constraint's sums (member_rest[e].w), summed in double. */
static void shape_centre(pbd_plan *plan, int first, int end, int k)
{
    double mass = 0.0, c[3] = {0.0, 0.0, 0.0};
    for (int e = first; e < end; ++e) {
        pbd_float4 q = plan->member_rest[plan->member_particle[e]];
        double w = plan->member_rest[e].w;
        mass += w;
        c[0] += w * (double)q.x;
        c[1] += w * (double)q.y;
        c[2] += w * (double)q.z;
    }
    for (int j = 0; j < 3 && mass > 0.0; ++j)
        c[j] /= mass;
    plan->shape_centre[k] = (pbd_float4){(float)c[0], (float)c[1], (float)c[2], 0.0f};
}

/* Body bd's shape matching in constraint bc of members [first, end), whose rest records are
 * set: its stiffness per iteration, or its XPBD form, with the members' sum m |q|^2. */
static void shape_form(const pbd_body *bd, const pbd_config *cfg, const pbd_float4 *rest, int first,
                       int end, pbd_body_constraint *bc)
{
    bc->flags |= PBD_BODY_SHAPE;
    if (bd->shape_stiffness > 0.0f)
        bc->shape_k = -plan_compliance(-bd->shape_stiffness, cfg->iterations);
    else {
        bc->flags |= PBD_BODY_SHAPE_XPBD;
        bc->shape_compliance = bd->shape_compliance;
        bc->shape_mqq = pbd_shape_mqq(rest, first, end);
    }
}

/* Constraint k's members [first, end) as segments of at most PBD_BODY_SEGMENT, from *nseg on. */
static void add_segments(pbd_plan *plan, int k, int first, int end, int *nseg)
{
    for (int f = first; f < end; f += PBD_BODY_SEGMENT) {
        int cnt = end - f < PBD_BODY_SEGMENT ? end - f : PBD_BODY_SEGMENT;
        plan->body_constraint_segments[(*nseg)++] = (pbd_segment){k, f, cnt, 0};
    }
}

/* Shape-matching clusters (pbd_body.shape_cluster_spacing) need this many particles. */
#define PBD_CLUSTER_MIN 4
/* At most this many clusters a particle, on average over a body. */
#define PBD_CLUSTER_SHARE 32
/* At most this many cluster cells a body (before the small clusters are dropped). */
#define PBD_CLUSTER_CELLS 1000000

/* A body's cluster grid: cells of at most the spacing over its initial bounding box (n a
 * side, size cs; one cell of size 0 where the box is flat), a cluster centred in each. */
typedef struct cluster_grid {
    double lo[3], cs[3], r;
    int n[3];
} cluster_grid;

static pbd_status cluster_grid_of(const pbd_model *m, int b, cluster_grid *g, pbd_error *err)
{
    const pbd_body *bd = &m->bodies[b];
    double hi[3], cells = 1.0;
    for (int k = 0; k < 3; ++k)
        g->lo[k] = hi[k] = (&m->x[bd->first].x)[k];
    for (int i = bd->first; i < bd->first + bd->count; ++i)
        for (int k = 0; k < 3; ++k) {
            g->lo[k] = fmin(g->lo[k], (&m->x[i].x)[k]);
            hi[k] = fmax(hi[k], (&m->x[i].x)[k]);
        }
    double spacing = bd->shape_cluster_spacing;
    g->r = bd->shape_cluster_radius > 0.0f ? bd->shape_cluster_radius : spacing;
    for (int k = 0; k < 3; ++k) {
        /* (a box a rounding wider than a whole number of spacings gets no extra cell) */
        double ext = hi[k] - g->lo[k], n = ext > 0.0 ? fmax(1.0, ceil(ext / spacing - 1e-4)) : 1.0;
        cells *= n;
        g->n[k] = cells <= PBD_CLUSTER_CELLS ? (int)n : 1;
        g->cs[k] = ext / g->n[k];
    }
    if (cells > PBD_CLUSTER_CELLS)
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "body %d (%s): a shape-matching cluster spacing "
                             "(shape_cluster_spacing; a scene's clusters.spacing) of %g m makes "
                             "%.3g cluster cells over its %g x %g x %g m box, expected at most %d",
                             b, bd->name, (double)spacing, cells, hi[0] - g->lo[0],
                             hi[1] - g->lo[1], hi[2] - g->lo[2], PBD_CLUSTER_CELLS);
    return PBD_OK;
}

/* Visits the clusters of grid g within its radius of x (cells ascending): counts them in
 * count[cell], or, with map (cell -> kept cluster, -1 dropped), appends particle i to each
 * kept one's members (pos[k]: its next slot) and counts it in *n. */
static void cluster_visit(const cluster_grid *g, pbd_float4 x, int i, int *count, const int *map,
                          int *pos, int *members, int *n)
{
    int lo[3], hi[3];
    double p[3] = {x.x, x.y, x.z};
    for (int k = 0; k < 3; ++k) {
        lo[k] = 0;
        hi[k] = 0;
        if (g->cs[k] > 0.0) {
            lo[k] = (int)fmax(0.0, ceil((p[k] - g->lo[k] - g->r) / g->cs[k] - 0.5));
            hi[k] = (int)fmin(g->n[k] - 1, floor((p[k] - g->lo[k] + g->r) / g->cs[k] - 0.5));
        }
    }
    for (int a = lo[0]; a <= hi[0]; ++a)
        for (int b = lo[1]; b <= hi[1]; ++b)
            for (int c = lo[2]; c <= hi[2]; ++c) {
                int j[3] = {a, b, c}, cell = (a * g->n[1] + b) * g->n[2] + c;
                double d2 = 0.0;
                for (int k = 0; k < 3; ++k) {
                    double d = p[k] - (g->lo[k] + (j[k] + 0.5) * g->cs[k]);
                    d2 += d * d;
                }
                if (!(d2 <= g->r * g->r))
                    continue;
                if (!map)
                    count[cell]++;
                else if (map[cell] >= 0) {
                    members[pos[map[cell]]++] = i;
                    ++*n;
                }
            }
}

/* The shape-matching clusters of every body that has them, in body order: with fill 0 their
 * number and members' (*nc, *nm); with fill 1 also their constraints (from num_bodies on;
 * their rest centres shape_centre), members (after the particles: particle, rest offset q
 * from the cluster's initial centre of mass weighted by m / n, and that weight), segments
 * (from *nseg on) and ranges, the particles' CSR of (constraint, member), and each
 * particle's rest offset from its body's centre (member_rest[i], w 0). Every particle of such
 * a body must be in a cluster. */
static pbd_status plan_clusters(const pbd_model *m, const pbd_config *cfg, pbd_plan *plan, int fill,
                                int *nc, int *nm, int *nseg, pbd_error *err)
{
    int nb = m->num_bodies, np = m->num_particles, k0 = 0, m0 = np;
    pbd_status st = PBD_OK;
    int *ncl = fill ? calloc((size_t)np, sizeof *ncl) : NULL; /* clusters of each particle */
    if (fill && !ncl)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    *nc = *nm = 0;
    for (int b = 0; b < nb && st == PBD_OK; ++b) {
        const pbd_body *bd = &m->bodies[b];
        cluster_grid g;
        if (!shaped(bd) || !(bd->shape_cluster_spacing > 0.0f))
            continue;
        if (bd->count < PBD_CLUSTER_MIN) {
            st = pbd_error_set(err, PBD_ERR_MODEL,
                               "body %d (%s): shape-matching clusters need at least %d particles, "
                               "found %d (expected whole-body shape matching)",
                               b, bd->name, PBD_CLUSTER_MIN, bd->count);
            break;
        }
        if ((st = cluster_grid_of(m, b, &g, err)) != PBD_OK)
            break;
        size_t cells = (size_t)g.n[0] * g.n[1] * g.n[2];
        int *count = calloc(cells, sizeof *count), *map = malloc(cells * sizeof *map);
        int *pos = malloc((cells + 1) * sizeof *pos);
        if (!count || !map || !pos) {
            free(count), free(map), free(pos);
            st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
            break;
        }
        for (int i = bd->first; i < bd->first + bd->count; ++i)
            cluster_visit(&g, m->x[i], i, count, NULL, NULL, NULL, NULL);
        double all = 0.0; /* the memberships, counted before any int holds them */
        for (size_t c = 0; c < cells; ++c)
            all += count[c] >= PBD_CLUSTER_MIN ? count[c] : 0;
        if (all > (double)PBD_CLUSTER_SHARE * bd->count || m0 + all > INT_MAX / 2) {
            free(count), free(map), free(pos);
            st = all > (double)PBD_CLUSTER_SHARE * bd->count
                     ? pbd_error_set(err, PBD_ERR_MODEL,
                                     "body %d (%s): its shape-matching clusters (spacing %g m, "
                                     "radius %g m) hold %.0f memberships, %.1f a particle "
                                     "(expected at most %d: a smaller shape_cluster_radius or a "
                                     "larger spacing)",
                                     b, bd->name, (double)bd->shape_cluster_spacing, g.r, all,
                                     all / bd->count, PBD_CLUSTER_SHARE)
                     : pbd_error_set(err, PBD_ERR_MODEL,
                                     "body %d (%s): its shape-matching clusters bring the "
                                     "particles and memberships to %.0f (expected at most %d)",
                                     b, bd->name, m0 + all, INT_MAX / 2);
            break;
        }
        int kept = 0, members = 0;
        for (size_t c = 0; c < cells; ++c) {
            map[c] = count[c] >= PBD_CLUSTER_MIN ? kept++ : -1;
            if (map[c] >= 0)
                pos[map[c]] = m0 + members, members += count[c];
        }
        pos[kept] = m0 + members;
        if (fill) {
            int *start = malloc(((size_t)kept + 1) * sizeof *start);
            if (!start) {
                free(count), free(map), free(pos);
                st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
                break;
            }
            memcpy(start, pos, ((size_t)kept + 1) * sizeof *start);
            /* the particles' rest offsets from the body's centre, for the apply (w stays 0) */
            for (int i = bd->first; i < bd->first + bd->count; ++i)
                plan->member_rest[i].w = m->v[i].w;
            shape_rest(m, plan->member_particle, bd->first, bd->first + bd->count,
                       plan->member_rest);
            for (int i = bd->first; i < bd->first + bd->count; ++i)
                plan->member_rest[i].w = 0.0f;
            for (int i = bd->first; i < bd->first + bd->count; ++i)
                cluster_visit(&g, m->x[i], i, count, map, pos, plan->member_particle, &ncl[i]);
            for (int i = bd->first; i < bd->first + bd->count && st == PBD_OK; ++i)
                if (ncl[i] == 0)
                    st = pbd_error_set(err, PBD_ERR_MODEL,
                                       "body %d (%s): particle %d is in no shape-matching cluster "
                                       "(spacing %g m, radius %g m; a cluster needs %d "
                                       "particles): expected a larger cluster radius "
                                       "(shape_cluster_radius; a scene's clusters.radius)",
                                       b, bd->name, i, (double)bd->shape_cluster_spacing, g.r,
                                       PBD_CLUSTER_MIN);
            for (int k = 0; k < kept && st == PBD_OK; ++k) {
                pbd_body_constraint *bc = &plan->body_constraints[nb + k0 + k];
                for (int e = start[k]; e < start[k + 1]; ++e) {
                    int i = plan->member_particle[e];
                    plan->member_rest[e].w = m->v[i].w / (float)ncl[i];
                    plan->cluster_offsets[i + 1]++;
                }
                shape_rest(m, plan->member_particle, start[k], start[k + 1], plan->member_rest);
                shape_centre(plan, start[k], start[k + 1], nb + k0 + k);
                shape_form(bd, cfg, plan->member_rest, start[k], start[k + 1], bc);
                bc->first = central_member(m, plan->member_particle, start[k], start[k + 1]);
                bc->base = bd->first;
                plan->body_constraint_ranges[nb + k0 + k] = *nseg;
                add_segments(plan, nb + k0 + k, start[k], start[k + 1], nseg);
            }
            free(start);
        } else
            for (size_t c = 0; c < cells; ++c)
                if (map[c] >= 0)
                    *nseg += (count[c] + PBD_BODY_SEGMENT - 1) / PBD_BODY_SEGMENT;
        free(count), free(map), free(pos);
        k0 += kept;
        m0 += members;
    }
    *nc = k0;
    *nm = m0 - np;
    if (fill && st == PBD_OK) { /* the particles' CSR, constraints ascending */
        plan->body_constraint_ranges[nb + k0] = *nseg;
        for (int i = 0; i < np; ++i)
            plan->cluster_offsets[i + 1] += plan->cluster_offsets[i];
        memcpy(ncl, plan->cluster_offsets, (size_t)np * sizeof *ncl);
        for (int k = 0; k < k0; ++k) {
            int kk = nb + k;
            for (int g = plan->body_constraint_ranges[kk]; g < plan->body_constraint_ranges[kk + 1];
                 ++g) {
                pbd_segment seg = plan->body_constraint_segments[g];
                for (int e = seg.first; e < seg.first + seg.count; ++e)
                    plan->cluster_constraints[ncl[plan->member_particle[e]]++] = kk;
            }
        }
    }
    free(ncl);
    return st;
}

/* Whether particles i and j are in the same clusters. */
static int same_clusters(const pbd_plan *plan, int i, int j)
{
    const int *off = plan->cluster_offsets, *k = plan->cluster_constraints;
    int n = off[i + 1] - off[i];
    return n == off[j + 1] - off[j] && memcmp(k + off[i], k + off[j], (size_t)n * sizeof *k) == 0;
}

/* The particles' distinct lists of clusters (sets, numbered in the order of their first
 * particle): particle_set, each set's constraints and its particles. A particle's goal is its
 * set's: the apply forms it once a set, where the clusters' pulls would be formed once a
 * membership. */
static pbd_status plan_cluster_sets(pbd_plan *plan, int np, pbd_error *err)
{
    int ns = 0, entries = 0;
    const int *off = plan->cluster_offsets, *cl = plan->cluster_constraints;
    size_t size = 16;
    while (size < 2 * (size_t)np)
        size *= 2;
    int *table = malloc(size * sizeof *table), *first = malloc(((size_t)np + 1) * sizeof *first);
    plan->particle_set = malloc(((size_t)np + 1) * sizeof *plan->particle_set);
    if (!table || !first || !plan->particle_set) {
        free(table), free(first);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    }
    for (size_t h = 0; h < size; ++h)
        table[h] = -1;
    for (int i = 0; i < np; ++i) {
        plan->particle_set[i] = -1;
        if (off[i] == off[i + 1])
            continue;
        uint64_t hash = 14695981039346656037u; /* FNV-1a over the constraints */
        for (int e = off[i]; e < off[i + 1]; ++e)
            hash = (hash ^ (uint64_t)(uint32_t)cl[e]) * 1099511628211u;
        size_t h = (size_t)(hash ^ (hash >> 32)) & (size - 1);
        while (table[h] >= 0 && !same_clusters(plan, first[table[h]], i))
            h = (h + 1) & (size - 1);
        if (table[h] < 0) {
            table[h] = ns;
            first[ns++] = i;
            entries += off[i + 1] - off[i];
        }
        plan->particle_set[i] = table[h];
    }
    free(table);
    plan->num_sets = ns;
    plan->set_offsets = malloc(((size_t)ns + 1) * sizeof *plan->set_offsets);
    plan->set_constraints = malloc(((size_t)entries + 1) * sizeof *plan->set_constraints);
    plan->set_particle_offsets = calloc((size_t)ns + 1, sizeof *plan->set_particle_offsets);
    plan->set_particles = malloc(((size_t)np + 1) * sizeof *plan->set_particles);
    if (!plan->set_offsets || !plan->set_constraints || !plan->set_particle_offsets ||
        !plan->set_particles) {
        free(first);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    }
    plan->set_offsets[0] = 0;
    for (int k = 0; k < ns; ++k) { /* each set's constraints: its first particle's */
        int i = first[k], n = off[i + 1] - off[i];
        memcpy(plan->set_constraints + plan->set_offsets[k], cl + off[i], (size_t)n * sizeof *cl);
        plan->set_offsets[k + 1] = plan->set_offsets[k] + n;
    }
    for (int i = 0; i < np; ++i) /* the sets' particles, a counting sort (first: its cursor) */
        if (plan->particle_set[i] >= 0)
            plan->set_particle_offsets[plan->particle_set[i] + 1]++;
    for (int k = 0; k < ns; ++k) {
        plan->set_particle_offsets[k + 1] += plan->set_particle_offsets[k];
        first[k] = plan->set_particle_offsets[k];
    }
    for (int i = 0; i < np; ++i)
        if (plan->particle_set[i] >= 0)
            plan->set_particles[first[plan->particle_set[i]]++] = i;
    int in_sets = plan->set_particle_offsets[ns];
    plan->set_rest = malloc(((size_t)in_sets + 1) * sizeof *plan->set_rest);
    if (!plan->set_rest) {
        free(first);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    }
    for (int e = 0; e < in_sets; ++e)
        plan->set_rest[e] = plan->member_rest[plan->set_particles[e]];
    free(first);
    return PBD_OK;
}

/* A particle's triangle pairs [begin, end) (j, k) put in ring order: from the first, each
 * pair is the one whose j is the last one's k, so that around a closed surface's particle
 * they walk its neighbours once, (n0, n1), (n1, n2), ..., (n_last, n0); where that closes
 * early (surfaces that meet at the particle), the next ring starts at the next pair left. */
static void ring_order(int *pairs, int begin, int end)
{
    for (int e = begin; e + 1 < end; ++e) {
        int want = pairs[2 * e + 1], at = e + 1;
        while (at < end && pairs[2 * at] != want)
            ++at;
        if (at == end) /* a ring closed: the next starts with the first pair left */
            continue;
        int j = pairs[2 * at], k = pairs[2 * at + 1];
        pairs[2 * at] = pairs[2 * (e + 1)];
        pairs[2 * at + 1] = pairs[2 * (e + 1) + 1];
        pairs[2 * (e + 1)] = j;
        pairs[2 * (e + 1) + 1] = k;
    }
}

/* Whether particle i's pairs fit pressure's table: at most PBD_PRESSURE_STEPS of them, one
 * ring (each pair starts at the last one's end). */
static int pressure_tabled(const int *off, const int *pairs, size_t i)
{
    int ring = off[i + 1] - off[i] <= PBD_PRESSURE_STEPS;
    for (int e = off[i]; ring && e < off[i + 1]; ++e)
        ring = pairs[2 * e + 1] == pairs[2 * (e + 1 < off[i + 1] ? e + 1 : off[i])];
    return ring;
}

int *pbd_plan_pressure_table(const pbd_plan *plan, int *steps)
{
    const int *off = plan->pressure_offsets, *pairs = plan->pressure_pairs;
    size_t np = (size_t)plan->num_particles;
    int k = 0;
    for (size_t i = 0; off && i < np; ++i) {
        int n = off[i + 1] - off[i];
        k = n > k && pressure_tabled(off, pairs, i) ? n : k;
    }
    /* no particle with triangles in the table: no table; the kernel indexes rows in int */
    *steps = k > 0 && (double)k * (double)np <= (double)INT_MAX ? k : 0;
    int *t = *steps ? malloc((size_t)k * np * sizeof *t) : NULL;
    for (size_t i = 0; t && i < np; ++i) {
        int in = pressure_tabled(off, pairs, i);
        for (int s = 0; s < k; ++s) {
            int e = off[i] + s;
            t[(size_t)s * np + i] = !in && s == 0         ? -1
                                    : !in                 ? (int)i
                                    : e < off[i + 1]      ? pairs[2 * e]
                                    : off[i] < off[i + 1] ? pairs[2 * off[i]]
                                                          : (int)i;
        }
    }
    return t;
}

/* The body constraints' plan: per body its record, per particle of a shape-matched body its
 * rest offset from the body's initial centre of mass (Müller et al. 2005, q_i = x0_i - c0)
 * and mass, and per particle of a pressure body the triangles around it (a CSR list in ring
 * order, ring_order's, each triangle's other two particles counter-clockwise, so that
 * x_i . (x_j x x_k) / 6 is the triangle's share of the volume, and a CPU device gathers each
 * neighbour once). A pressure body's surface must be closed (each edge in exactly two
 * triangles, once each way) around a positive volume. */
static pbd_status plan_body_constraints(const pbd_model *m, const pbd_config *cfg, pbd_plan *plan,
                                        pbd_error *err)
{
    int nb = m->num_bodies, np = m->num_particles;
    for (int b = 0; b < nb; ++b) {
        plan->body_active |= shaped(&m->bodies[b]) || m->bodies[b].pressure > 0.0f;
        plan->pressure_active |= m->bodies[b].pressure > 0.0f;
    }
    if (!plan->body_active)
        return PBD_OK;
    plan->body_launches = 3;
    int nc = 0, nm = 0, nseg = 0;
    pbd_status st = plan_clusters(m, cfg, plan, 0, &nc, &nm, &nseg, err);
    if (st != PBD_OK)
        return st;
    int ng = nb + nc;
    plan->num_body_constraints = ng;
    plan->num_clusters = nc;
    plan->num_members = np + nm;
    plan->body_constraints = calloc((size_t)ng, sizeof *plan->body_constraints);
    plan->member_particle = malloc(((size_t)np + nm) * sizeof *plan->member_particle);
    plan->member_rest = calloc((size_t)np + nm, sizeof *plan->member_rest);
    plan->cluster_offsets = calloc((size_t)np + 1, sizeof *plan->cluster_offsets);
    plan->cluster_constraints = malloc(((size_t)nm + 1) * sizeof *plan->cluster_constraints);
    plan->shape_centre = calloc((size_t)ng, sizeof *plan->shape_centre);
    plan->pressure_offsets = calloc((size_t)np + 1, sizeof *plan->pressure_offsets);
    plan->pressure_pairs = malloc(((size_t)6 * m->num_triangles + 1) * sizeof(int));
    if (!plan->body_constraints || !plan->member_particle || !plan->member_rest ||
        !plan->cluster_offsets || !plan->cluster_constraints || !plan->shape_centre ||
        !plan->pressure_offsets || !plan->pressure_pairs)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    for (int i = 0; i < np; ++i)
        plan->member_particle[i] = i;
    const int *tri = m->triangles;
    for (int t = 0; t < m->num_triangles; ++t)
        if (m->bodies[m->body[tri[3 * t]]].pressure > 0.0f)
            for (int k = 0; k < 3; ++k)
                plan->pressure_offsets[tri[3 * t + k] + 1]++;
    for (int i = 0; i < np; ++i)
        plan->pressure_offsets[i + 1] += plan->pressure_offsets[i];
    int *fill = malloc(((size_t)np + 1) * sizeof *fill);
    if (!fill)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    memcpy(fill, plan->pressure_offsets, ((size_t)np + 1) * sizeof *fill);
    for (int t = 0; t < m->num_triangles; ++t)
        if (m->bodies[m->body[tri[3 * t]]].pressure > 0.0f)
            for (int k = 0; k < 3; ++k) {
                int e = fill[tri[3 * t + k]]++;
                plan->pressure_pairs[2 * e] = tri[3 * t + (k + 1) % 3];
                plan->pressure_pairs[2 * e + 1] = tri[3 * t + (k + 2) % 3];
            }
    free(fill);
    for (int i = 0; i < np; ++i)
        ring_order(plan->pressure_pairs, plan->pressure_offsets[i], plan->pressure_offsets[i + 1]);
    for (int b = 0; b < nb; ++b)
        if (body_wide(&m->bodies[b]))
            nseg += (m->bodies[b].count + PBD_BODY_SEGMENT - 1) / PBD_BODY_SEGMENT;
    plan->body_constraint_segments = malloc(((size_t)nseg + 1) * sizeof(pbd_segment));
    plan->body_constraint_ranges = malloc(((size_t)ng + 1) * sizeof(int));
    if (!plan->body_constraint_segments || !plan->body_constraint_ranges)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    plan->num_body_constraint_segments = nseg;
    nseg = 0;
    for (int b = 0; b < nb; ++b) {
        const pbd_body *bd = &m->bodies[b];
        plan->body_constraint_ranges[b] = nseg;
        if (body_wide(bd))
            add_segments(plan, b, bd->first, bd->first + bd->count, &nseg);
    }
    st = plan_clusters(m, cfg, plan, 1, &nc, &nm, &nseg, err);
    if (st == PBD_OK)
        st = plan_cluster_sets(plan, np, err);
    for (int i = 0; i < np && st == PBD_OK; ++i)
        plan->body_unclustered |=
            plan->particle_set[i] < 0 &&
            (shaped(&m->bodies[m->body[i]]) || m->bodies[m->body[i]].pressure > 0.0f);
    for (int b = 0; b < nb && st == PBD_OK; ++b) {
        const pbd_body *bd = &m->bodies[b];
        pbd_body_constraint *bc = &plan->body_constraints[b];
        bc->base = bd->first;
        bc->first = central_member(m, plan->member_particle, bd->first, bd->first + bd->count);
        if (shaped(bd) && !(bd->shape_cluster_spacing > 0.0f)) {
            for (int i = bd->first; i < bd->first + bd->count; ++i)
                plan->member_rest[i].w = m->v[i].w;
            shape_rest(m, plan->member_particle, bd->first, bd->first + bd->count,
                       plan->member_rest);
            shape_centre(plan, bd->first, bd->first + bd->count, b);
            shape_form(bd, cfg, plan->member_rest, bd->first, bd->first + bd->count, bc);
        }
        if (bd->pressure > 0.0f) {
            /* closed: for every edge i -> j of a triangle, j -> i in exactly one other, and
             * no edge twice the same way */
            double vol = 0.0;
            for (int i = bd->first; i < bd->first + bd->count && st == PBD_OK; ++i)
                for (int e = plan->pressure_offsets[i];
                     e < plan->pressure_offsets[i + 1] && st == PBD_OK; ++e) {
                    int j = plan->pressure_pairs[2 * e], back = 0, same = 0;
                    for (int f = plan->pressure_offsets[j]; f < plan->pressure_offsets[j + 1]; ++f)
                        back += plan->pressure_pairs[2 * f] == i;
                    for (int f = plan->pressure_offsets[i]; f < plan->pressure_offsets[i + 1]; ++f)
                        same += plan->pressure_pairs[2 * f] == j;
                    if (back != 1 || same != 1)
                        st = pbd_error_set(err, PBD_ERR_MODEL,
                                           "body %d (%s): pressure needs a closed surface, but "
                                           "its edge %d-%d is in %d triangle%s one way and %d the "
                                           "other (expected 1 and 1)",
                                           b, bd->name, i, j, same, same == 1 ? "" : "s", back);
                    const pbd_float4 a = m->x[i], p = m->x[j],
                                     q = m->x[plan->pressure_pairs[2 * e + 1]];
                    vol += (a.x * ((double)p.y * q.z - (double)p.z * q.y) +
                            a.y * ((double)p.z * q.x - (double)p.x * q.z) +
                            a.z * ((double)p.x * q.y - (double)p.y * q.x)) /
                           18.0; /* each triangle thrice */
                }
            if (st == PBD_OK &&
                plan->pressure_offsets[bd->first + bd->count] == plan->pressure_offsets[bd->first])
                st = pbd_error_set(err, PBD_ERR_MODEL,
                                   "body %d (%s): pressure needs a closed surface, and the body "
                                   "has no triangles",
                                   b, bd->name);
            if (st == PBD_OK && !(vol > 0.0))
                st = pbd_error_set(err, PBD_ERR_MODEL,
                                   "body %d (%s): pressure needs a surface around a positive "
                                   "volume, found %g m^3 (triangles counter-clockwise seen from "
                                   "outside)",
                                   b, bd->name, vol);
            bc->flags |= PBD_BODY_PRESSURE;
            bc->volume = (float)(vol * bd->pressure);
            bc->compliance = plan_compliance(bd->pressure_compliance, cfg->iterations);
        }
    }
    /* Shape matching's pieces: their constant sums m q, which the CPU devices' reduction
     * takes from here (its lanes sum m p'_k^2 instead) */
    plan->body_constraint_mq =
        calloc((size_t)plan->num_body_constraint_segments + 1, sizeof *plan->body_constraint_mq);
    if (st == PBD_OK && !plan->body_constraint_mq)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
    for (int g = 0; st == PBD_OK && g < plan->num_body_constraint_segments; ++g) {
        pbd_segment seg = plan->body_constraint_segments[g];
        if (plan->body_constraints[seg.body].flags & PBD_BODY_SHAPE)
            plan->body_constraint_mq[g] =
                pbd_shape_mq(plan->member_rest, seg.first, seg.first + seg.count);
    }
    return st;
}

int pbd_collider_moves(const pbd_collider *c)
{
    return c->velocity.x != 0.0f || c->velocity.y != 0.0f || c->velocity.z != 0.0f ||
           c->angular_velocity.x != 0.0f || c->angular_velocity.y != 0.0f ||
           c->angular_velocity.z != 0.0f;
}

/* The contacts' radius classes (pbd_contact_class): the bodies' radii ascending, a class
 * from its smallest radius up to twice it, the next from the next radius; more classes than
 * PBD_CONTACT_CLASSES join the last. Each class's cells are PBD_CONTACT_REACH times its
 * largest radius's double, so with one class, as with any radii within twice each other, a
 * particle's candidates lie in its own and the 26 neighbouring cells. */
static void plan_contact_classes(const pbd_model *m, pbd_plan *plan)
{
    float top[PBD_CONTACT_CLASSES] = {0.0f}, start = 0.0f;
    int n = 0;
    for (;;) {
        /* the smallest radius above the classes so far */
        float next = 0.0f;
        for (int b = 0; b < m->num_bodies; ++b) {
            float r = m->bodies[b].radius;
            if (r > (n ? top[n - 1] : 0.0f) && (next == 0.0f || r < next))
                next = r;
        }
        if (next == 0.0f)
            break;
        if (n == 0 || (next > 2.0f * start && n < PBD_CONTACT_CLASSES)) {
            start = next;
            ++n;
        }
        /* the class takes every radius up to twice its first (the last class: all) */
        float limit = n == PBD_CONTACT_CLASSES ? INFINITY : 2.0f * start;
        for (int b = 0; b < m->num_bodies; ++b) {
            float r = m->bodies[b].radius;
            if (r > top[n - 1] && r <= limit)
                top[n - 1] = r;
        }
    }
    /* with several classes, cells a little wider than the reach (PBD_CONTACT_CELL_WIDER);
     * with one, as they were */
    float inv[PBD_CONTACT_CLASSES] = {0.0f}, wider = n > 1 ? PBD_CONTACT_CELL_WIDER : 1.0f;
    for (int k = 0; k < n; ++k)
        inv[k] = 1.0f / (PBD_CONTACT_REACH * 2.0f * top[k] * wider);
    plan->grid_r = (pbd_float4){top[0], top[1], top[2], top[3]};
    plan->grid_inv = (pbd_float4){inv[0], inv[1], inv[2], inv[3]};
    /* each class's part of the table: a power of two of at least 16 entries and its particles
     * (those without a radius are hashed with the first class) */
    size_t count[PBD_CONTACT_CLASSES] = {0};
    for (int b = 0; b < m->num_bodies; ++b) {
        int k = 0; /* pbd_contact_class */
        while (k + 1 < n && m->bodies[b].radius > top[k])
            ++k;
        count[k] += (size_t)m->bodies[b].count;
    }
    plan->table_size = 0;
    plan->grid_bits = 0;
    for (int k = 0; k < n; ++k) {
        int bits = 4;
        while (((size_t)1 << bits) < count[k])
            ++bits;
        plan->grid_bits |= bits << (8 * k);
        plan->table_size += 1 << bits;
    }
}

/* Particle contacts, where a body has a particle radius: each particle's radius, the bodies'
 * self-collision, the rest shape, and the hash's size (plan_contact_classes; a table of at
 * least as many entries as particles). Contacts between bodies are external impulses to
 * each. */
static pbd_status plan_contacts(const pbd_model *m, pbd_plan *plan, pbd_error *err)
{
    int with = 0;
    for (int b = 0; b < m->num_bodies; ++b)
        with += m->bodies[b].radius > 0.0f;
    if (with == 0)
        return PBD_OK;
    size_t np = (size_t)m->num_particles, nb = (size_t)m->num_bodies;
    plan->particle_radius = malloc(np * sizeof *plan->particle_radius);
    plan->body_self = malloc(nb * sizeof *plan->body_self);
    plan->contact_rest = malloc(np * sizeof *plan->contact_rest);
    plan->body_first = malloc((nb + 1) * sizeof *plan->body_first);
    if (!plan->particle_radius || !plan->body_self || !plan->contact_rest || !plan->body_first)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the contacts");
    for (size_t i = 0; i < np; ++i)
        plan->particle_radius[i] = m->bodies[m->body[i]].radius;
    for (size_t b = 0; b < nb; ++b) {
        plan->body_self[b] = m->bodies[b].self_collision;
        plan->body_first[b] = m->bodies[b].first;
    }
    plan->body_first[nb] = (int)np;
    memcpy(plan->contact_rest, m->x, np * sizeof *plan->contact_rest);
    plan->contacts = 1;
    for (size_t b = 0; b < nb; ++b)
        plan->contact_friction |= m->bodies[b].radius > 0.0f && m->bodies[b].friction > 0.0f;
    plan_contact_classes(m, plan);
    plan->external |= with > 1;
    return PBD_OK;
}

void pbd_contact_hash_build(const pbd_plan *plan, const pbd_float4 *p, int *cell, int *fill,
                            int *start, int *sorted)
{
    int n = plan->num_particles, ts = plan->table_size;
    memset(fill, 0, (size_t)ts * sizeof *fill);
    for (int i = 0; i < n; ++i)
        fill[pbd_contact_cell(p, plan->particle_radius, cell, i, plan->grid_inv, plan->grid_r,
                              plan->grid_bits)]++;
    int total = 0;
    for (int h = 0; h < ts; ++h) {
        start[h] = total;
        total += fill[h];
        fill[h] = 0;
    }
    start[ts] = total;
    for (int i = 0; i < n; ++i) {
        int h = cell[4 * i + 3];
        sorted[start[h] + fill[h]++] = i;
    }
}

pbd_status pbd_plan_build(const pbd_model *m, const pbd_config *cfg, pbd_variant variant,
                          pbd_plan *plan, pbd_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->variant = variant;
    pbd_status st = check_config(cfg, err);
    if (st == PBD_OK)
        st = pbd_model_validate(m, err);
    if (st == PBD_OK)
        st = check_neo_hookean(m, cfg, err);
    if (st == PBD_OK)
        st = check_precision(m, cfg, err);
    if (st != PBD_OK)
        return st;
    plan->cfg = *cfg;
    plan->num_particles = m->num_particles;
    if (m->num_neo_hookean > 0) {
        plan->inv_mass = malloc((size_t)m->num_particles * sizeof *plan->inv_mass);
        if (!plan->inv_mass)
            return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
        for (int i = 0; i < m->num_particles; ++i)
            plan->inv_mass[i] = m->x[i].w;
    }
    plan->num_bodies = m->num_bodies;
    plan->num_colliders = m->num_colliders;
    plan->h = cfg->dt / (float)cfg->substeps;
    plan->inv_h = 1.0f / plan->h;
    plan->inv_h2 = plan->inv_h * plan->inv_h;

    int *dist_ends = NULL;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT && st == PBD_OK; ++t) {
        int *sorted = NULL;
        st = plan_type(m, cfg, t, plan, &sorted, err);
        if (t == PBD_CONSTRAINT_DISTANCE) {
            dist_ends = sorted;
            sorted = NULL;
        }
        free(sorted);
    }
    if (st != PBD_OK)
        goto fail;

    int n = plan->type[PBD_CONSTRAINT_DISTANCE].count;
    plan->colliders = malloc(((size_t)m->num_colliders + 1) * sizeof *plan->colliders);
    plan->body_ref = malloc(((size_t)m->num_bodies + 1) * sizeof *plan->body_ref);
    plan->body_segments = malloc(((size_t)m->num_bodies + 1) * sizeof *plan->body_segments);
    plan->body_flags = calloc((size_t)m->num_bodies + 1, sizeof *plan->body_flags);
    plan->body_damping = calloc(2 * (size_t)m->num_bodies + 2, sizeof *plan->body_damping);
    plan->body_material = malloc(((size_t)m->num_bodies + 1) * sizeof *plan->body_material);
    plan->colliders0 = malloc(((size_t)m->num_colliders + 1) * sizeof *plan->colliders0);
    plan->collider_t0 = calloc((size_t)m->num_colliders + 1, sizeof *plan->collider_t0);
    if (!plan->colliders || !plan->body_ref || !plan->body_segments || !plan->body_flags ||
        !plan->body_damping || !plan->body_material || !plan->colliders0 || !plan->collider_t0) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
        goto fail;
    }
    if (m->num_colliders) {
        memcpy(plan->colliders, m->colliders, (size_t)m->num_colliders * sizeof *plan->colliders);
        memcpy(plan->colliders0, m->colliders, (size_t)m->num_colliders * sizeof *plan->colliders);
    }
    for (int k = 0; k < m->num_colliders; ++k)
        plan->moving |= pbd_collider_moves(&m->colliders[k]);
    for (int b = 0; b < m->num_bodies; ++b) {
        const pbd_body *bd = &m->bodies[b];
        plan->body_material[b] =
            (pbd_float4){bd->friction, bd->friction_kinetic, bd->restitution, 0.0f};
        plan->materials |= bd->friction >= 0.0f || bd->restitution >= 0.0f;
        plan->bounce |= bd->restitution > 0.0f && m->num_colliders > 0;
    }
    plan->colliders[m->num_colliders] =
        (pbd_collider){.kind = PBD_COLLIDER_PLANE, .shape = {0.0f, 1.0f, 0.0f, 0.0f}};

    st = pbd_csr_build(m->num_particles, dist_ends, 2, n, &plan->csr_offsets, &plan->csr_slots,
                       cfg->solver == PBD_SOLVER_JACOBI ? &plan->csr_other : NULL, err);
    if (st != PBD_OK)
        goto fail;
    /* A launch a colour of every type and one for the collisions; Jacobi's projection and
     * gather, and the other types' colours. A backend that groups its work differently says
     * so when it is created. */
    int other_colors = 0;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
        if (t != PBD_CONSTRAINT_DISTANCE)
            other_colors += plan->type[t].num_colors;
    plan->gs_launches = pbd_plan_num_colors(plan) + (plan->num_colliders > 0);
    plan->jacobi_launches = other_colors + (n > 0) + 1;
    /* Something external moves particles: a collider, or a constraint the world takes part
     * in. */
    plan->external = plan->num_colliders > 0;
    for (int k = 0; k < m->num_colliders; ++k)
        plan->bounce |= m->colliders[k].restitution > 0.0f;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
        plan->external |= pbd_constraint_types[t].world && plan->type[t].count > 0;
    st = plan_contacts(m, plan, err);
    if (st != PBD_OK)
        goto fail;

    int nseg = 0;
    for (int b = 0; b < m->num_bodies; ++b)
        nseg += (m->bodies[b].count + PBD_SEGMENT - 1) / PBD_SEGMENT;
    plan->segments = malloc((size_t)nseg * sizeof *plan->segments);
    if (!plan->segments) {
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory preparing the solver");
        goto fail;
    }
    plan->num_segments = nseg;
    nseg = 0;
    for (int b = 0; b < m->num_bodies; ++b) {
        const pbd_body *bd = &m->bodies[b];
        plan->body_segments[b] = nseg;
        for (int f = 0; f < bd->count; f += PBD_SEGMENT) {
            int cnt = bd->count - f < PBD_SEGMENT ? bd->count - f : PBD_SEGMENT;
            plan->segments[nseg++] = (pbd_segment){b, bd->first + f, cnt, 0};
        }
        pbd_float4 r = m->x[bd->first];
        plan->body_ref[b] = (pbd_float4){r.x, r.y, r.z, 0.0f};
        /* A pinned particle is held by the world, which exchanges momentum with the body
         * through it: the body's momentum is not conserved, so it is not corrected. */
        if (pbd_body_preserved(bd, cfg)) {
            plan->body_flags[b] = PBD_BODY_MOMENTUM;
            plan->momentum_active = 1;
        }
    }
    plan_damping(m, cfg, plan);
    for (int b = 0; b < m->num_bodies; ++b)
        if (plan->body_damping[2 * b + 1] > 0.0f)
            plan->momentum_active = 1; /* rigid damping needs the body's rigid motion */
    /* Collision and attachment displacements are recorded only where there is something
     * external to record. */
    int tracked = plan->momentum_active && plan->external;
    /* ... and where friction keeps its state (its budget over a substep's pushes, and
     * whether it slides: pbd_friction), in the same records' w. */
    int friction = 0;
    for (int k = 0; k < m->num_colliders; ++k)
        friction |= m->colliders[k].friction > 0.0f;
    plan->track = tracked || friction;
    plan->friction = friction;
    /* contacts between bodies: their impulses' moments where they acted */
    int with = 0;
    for (int b = 0; b < m->num_bodies; ++b)
        with += m->bodies[b].radius > 0.0f;
    plan->contact_moments = tracked && plan->contacts && with > 1;
    /* The correction: the reduction and the solve (its broadcast rides on the next predict). */
    plan->momentum_launches = plan->momentum_active ? 2 : 0;
    plan->body_segments[m->num_bodies] = nseg;
    st = plan_body_constraints(m, cfg, plan, err);
    if (st != PBD_OK)
        goto fail;
    plan->solve_serial = 1;
    for (int b = 0; b < m->num_bodies; ++b)
        if (plan->body_segments[b + 1] - plan->body_segments[b] > PBD_SERIAL_SEGMENTS)
            plan->solve_serial = 0;
    free(dist_ends);
    return PBD_OK;
fail:
    free(dist_ends);
    pbd_plan_free(plan);
    return st;
}

int pbd_keeps_v(const pbd_plan *plan)
{
    return plan->cfg.velocity_update == PBD_VELOCITY_BDF2 || plan->bounce;
}

int pbd_plan_num_colors(const pbd_plan *plan)
{
    int n = 0;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
        n += plan->type[t].num_colors;
    return n;
}

pbd_status pbd_solver_create(const pbd_model *m, const pbd_config *cfg, const pbd_solver_desc *desc,
                             pbd_solver **out, pbd_error *err)
{
    PBD_NEEDS(out, "out", "a place for the solver");
    *out = NULL;
    pbd_solver_desc d = {0};
    if (desc)
        d = *desc;
    pbd_solver *s = calloc(1, sizeof *s);
    if (!s)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory creating the solver");
    pbd_status st = PBD_OK;
    if (d.backend != PBD_BACKEND_CPU && d.backend != PBD_BACKEND_CL)
        st = pbd_error_set(err, PBD_ERR_ARGUMENT, "backend: found %d, expected cl or cpu",
                           (int)d.backend);
    else if (d.sums != PBD_SUMS_TREE && d.sums != PBD_SUMS_LANES)
        st = pbd_error_set(err, PBD_ERR_ARGUMENT, "sums: found %d, expected tree or lanes",
                           (int)d.sums);
    /* The model and configuration are checked before anything trusts them (the device's
     * memory estimate reads the bodies); the device is opened, and the model checked
     * against its memory, before the plan. */
    if (st == PBD_OK && !cfg)
        st = pbd_error_set(err, PBD_ERR_ARGUMENT, "no configuration");
    if (st == PBD_OK)
        st = check_config(cfg, err);
    if (st == PBD_OK)
        st = pbd_model_validate(m, err);
    void *cl = NULL;
    /* The CPU reference follows the order of the variant whose sums it was asked for. */
    pbd_variant variant = d.sums == PBD_SUMS_LANES ? PBD_VARIANT_CPU : PBD_VARIANT_GPU;
    if (st == PBD_OK && d.backend == PBD_BACKEND_CL)
        st = pbd_cl_solver_open(m, cfg, &d, &cl, &variant, err);
    if (st == PBD_OK)
        st = pbd_plan_build(m, cfg, variant, &s->plan, err);
    if (st == PBD_ERR_MEMORY)
        st = pbd_error_set(err, PBD_ERR_MEMORY,
                           "out of host memory planning the solve of %d particles and %lld "
                           "constraints",
                           m->num_particles, pbd_model_num_constraints(m));
    if (st == PBD_OK && d.backend == PBD_BACKEND_CPU) {
        s->ops = &pbd_cpu_ops;
        st = pbd_cpu_create(m, &s->plan, &d, &s->impl, err);
    } else if (st == PBD_OK) {
        s->ops = &pbd_cl_ops;
        st = pbd_cl_solver_create(cl, m, &s->plan, &d, err);
        if (st == PBD_OK)
            s->impl = cl;
        cl = NULL; /* closed by pbd_cl_solver_create on failure */
    }
    if (cl)
        pbd_cl_solver_close(cl);
    /* P_r and L_r start as the initial state's (and the reference points move to the
     * centres of mass). */
    if (st == PBD_OK)
        st = s->ops->body_solve(s->impl, PBD_SOLVE_INIT, NULL, err);
    if (st != PBD_OK) {
        pbd_solver_destroy(s);
        return st;
    }
    s->fingerprint = pbd_model_fingerprint(m);
    s->stale_type = -1;
    *out = s;
    return PBD_OK;
}

void pbd_solver_destroy(pbd_solver *s)
{
    if (!s)
        return;
    if (s->impl)
        s->ops->destroy(s->impl);
    pbd_plan_free(&s->plan);
    free(s);
}

/* Notes that `what` failed with st, leaving the state partly written, so that steps are
 * refused from then on (the first such failure is the one named); returns st. */
static pbd_status unusable(pbd_solver *s, const char *what, pbd_status st, const pbd_error *err)
{
    if (!s->unusable[0])
        snprintf(s->unusable, sizeof s->unusable, "%.63s failed (%.900s)", what,
                 err && err->message[0] ? err->message : pbd_status_string(st));
    return st;
}

pbd_status pbd_solver_step(pbd_solver *s, int frames, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    pbd_plan *pl = &s->plan;
    if (s->stale_type >= 0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s constraint %d: the device did not take its change; expected a "
                             "solver made again",
                             pbd_constraint_types[s->stale_type].name, s->stale_index);
    if (s->unusable[0])
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%.960s; expected a solver made again",
                             s->unusable);
    if (frames < 0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "frames: found %d, expected >= 0", frames);
    for (int f = 0; f < frames; ++f) {
        pbd_status st = pbd_step_frame(s->ops, s->impl, pl, &s->substeps_done, err);
        if (st != PBD_OK)
            return unusable(s, "an earlier step", st, err);
    }
    return PBD_OK;
}

const pbd_collider *pbd_solver_colliders(const pbd_solver *s, int *count)
{
    *count = s->plan.num_colliders;
    return s->plan.colliders;
}

pbd_status pbd_solver_update_collider(pbd_solver *s, int index, const pbd_collider *c,
                                      pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    pbd_plan *pl = &s->plan;
    if (index < 0 || index >= pl->num_colliders)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "collider %d: out of range [0, %d)", index,
                             pl->num_colliders);
    if (!c)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "collider %d: no record", index);
    if (c->kind != pl->colliders[index].kind)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "collider %d: kind %d, expected its own %d",
                             index, c->kind, pl->colliders[index].kind);
    pbd_status st = pbd_collider_validate(c, index, err);
    if (st != PBD_OK)
        return st;
    if (c->restitution > 0.0f && !pl->bounce) /* the update kernel was chosen without it */
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "collider %d: found restitution %g, expected 0 on a solver made "
                             "without restitution (give it to the collider before creating "
                             "the solver)",
                             index, (double)c->restitution);
    if (c->friction > 0.0f && !pl->track) /* no records for friction's state (pbd_friction) */
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "collider %d: found friction %g, expected 0 on a solver made "
                             "without friction (give a collider friction before creating the "
                             "solver)",
                             index, (double)c->friction);
    pl->colliders[index] = pl->colliders0[index] = *c;
    pl->collider_t0[index] = (double)s->substeps_done * pl->h;
    pl->moving |= pbd_collider_moves(c);
    /* The device keeps the collider it had where it fails to take this one, while the plan
     * holds the new one: steps are refused. */
    if ((st = s->ops->update_colliders(s->impl, err)) != PBD_OK) {
        char what[64];
        snprintf(what, sizeof what, "collider %d's update on the device", index);
        unusable(s, what, st, err);
    }
    return st;
}

/* Whether new particles `want` for the constraint at record `pos`, in colour k of a type run
 * in blocks (bl), keep the blocks apart: they must lie in the constraint's own block, as a
 * block's work-item takes the block's part of every colour while the others run; and a
 * constraint between blocks (run by its group of cuts, likewise) keeps its particles. */
static pbd_status check_block(const pbd_blocks *bl, int k, int pos, const int *want,
                              const pbd_constraint_info *info, int index, pbd_error *err)
{
    if (bl->num_blocks < 2)
        return PBD_OK;
    if (k < bl->boundary_colors)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s constraint %d: its particles lie in different blocks, which "
                             "are projected side by side; expected its particles unchanged",
                             info->name, index);
    const int nb = bl->num_blocks;
    const int *bo = bl->block_offsets + (size_t)(k - bl->boundary_colors) * ((size_t)nb + 1);
    int b = 0;
    while (b + 1 < nb && bo[b + 1] <= pos)
        ++b;
    int lo = bl->block_first[b], hi = bl->block_first[b + 1];
    for (int a = 0; a < info->arity; ++a)
        if (want[a] < lo || want[a] >= hi)
            return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                 "%s constraint %d: particle %d lies outside its block %d, "
                                 "which is projected beside the others; expected a particle in "
                                 "[%d, %d)",
                                 info->name, index, want[a], b, lo, hi);
    return PBD_OK;
}

/* A distance constraint given new particles in interior colour k (at record pos) may no
 * longer continue the run of consecutive particles or of pairs that its group of sixteen was
 * sorted into (sort_runs), which the CPU variant's kernel reads from the group's first
 * constraint. Its block's runs then end before that group: the group and those after it are
 * gathered by their own indices, as any constraints are. (A constraint between blocks keeps
 * its particles: check_block.) */
static void end_runs_before(pbd_blocks *bl, int k, int pos)
{
    const int nb = bl->num_blocks, row = k - bl->boundary_colors;
    if (row < 0 || row >= bl->block_colors)
        return;
    const int *off = bl->block_offsets + (size_t)row * ((size_t)nb + 1);
    for (int b = 0; b < nb; ++b) {
        int *r = bl->block_runs + 2 * ((size_t)row * (size_t)nb + (size_t)b);
        if (pos < off[b] || pos >= off[b + 1] || pos >= r[1])
            continue;
        int group = off[b] + (pos - off[b]) / 16 * 16; /* runs, then pairs, in sixteens */
        r[0] = r[0] < group ? r[0] : group;
        r[1] = group;
    }
}

/* The distance constraints' lists of each particle's constraints (csr_*: the statistics'
 * errors, Jacobi's gather) again, with record `pos` now `record`'s particles; the plan
 * unchanged where it fails. */
static pbd_status plan_distance_lists(pbd_plan *plan, int pos, const pbd_distance *record,
                                      pbd_error *err)
{
    const pbd_plan_type *pt = &plan->type[PBD_CONSTRAINT_DISTANCE];
    int n = pt->count, *off = NULL, *slots = NULL, *other = NULL;
    int *ends = malloc((2 * (size_t)n + 1) * sizeof *ends);
    if (!ends)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory updating a distance constraint");
    for (int j = 0; j < n; ++j) {
        const pbd_distance *d = j == pos ? record : &pt->distance[j];
        ends[2 * j] = d->a;
        ends[2 * j + 1] = d->b;
    }
    pbd_status st = pbd_csr_build(plan->num_particles, ends, 2, n, &off, &slots,
                                  plan->csr_other ? &other : NULL, err);
    free(ends);
    if (st != PBD_OK)
        return st;
    free(plan->csr_offsets);
    free(plan->csr_slots);
    free(plan->csr_other);
    plan->csr_offsets = off;
    plan->csr_slots = slots;
    plan->csr_other = other;
    return PBD_OK;
}

pbd_status pbd_solver_update_constraint(pbd_solver *s, int type, int index, const void *record,
                                        pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    if (type < 0 || type >= PBD_CONSTRAINT_COUNT)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "constraint type %d (expected 0 .. %d)", type,
                             PBD_CONSTRAINT_COUNT - 1);
    pbd_plan_type *pt = &s->plan.type[type];
    const pbd_constraint_info *info = &pbd_constraint_types[type];
    if (index < 0 || index >= pt->count)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s constraint %d: out of range [0, %d)",
                             info->name, index, pt->count);
    if (!record)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s constraint %d: no record", info->name,
                             index);
    int pos = pt->position[index];
    char *dst = (char *)pt->records + (size_t)pos * info->size;
    pbd_status st = pbd_constraint_validate(type, record, index, s->plan.num_particles, err);
    if (st != PBD_OK)
        return st;
    /* An element as the solver's creation checks them: stable at these substeps. */
    if (type == PBD_CONSTRAINT_NEO_HOOKEAN) {
        const pbd_config *cfg = &s->plan.cfg;
        double ratio =
            neo_hookean_ratio(record, s->plan.inv_mass, NULL, (double)cfg->dt / cfg->substeps);
        if (!(ratio <= PBD_NEO_HOOKEAN_MAX_RATIO))
            return neo_hookean_refused("the update", index, ratio, cfg, err);
    }
    /* New particles keep the colouring valid only where no other constraint of the colour
     * touches them. */
    int moved = memcmp(dst, record, (size_t)info->arity * sizeof(int)) != 0;
    if (moved) {
        int k = 0;
        while (k + 1 < pt->num_colors && pt->color_offsets[k + 1] <= pos)
            ++k;
        const int *want = record;
        for (int j = pt->color_offsets[k]; j < pt->color_offsets[k + 1]; ++j) {
            const int *other = (const int *)((const char *)pt->records + (size_t)j * info->size);
            for (int a = 0; j != pos && a < info->arity; ++a)
                for (int b = 0; b < info->arity; ++b)
                    if (other[b] == want[a])
                        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                             "%s constraint %d: particle %d is another %s "
                                             "constraint's in its colour; expected a particle "
                                             "no other constraint of colour %d touches",
                                             info->name, index, want[a], info->name, k);
        }
        st = check_block(&pt->blocks, k, pos, want, info, index, err);
        if (st != PBD_OK)
            return st;
        /* distance: the particles' lists (the one step that may fail first), and the runs */
        if (type == PBD_CONSTRAINT_DISTANCE &&
            (st = plan_distance_lists(&s->plan, pos, record, err)) != PBD_OK)
            return st;
        if (type == PBD_CONSTRAINT_DISTANCE)
            end_runs_before(&pt->blocks, k, pos);
    }
    memcpy(dst, record, info->size);
    float *compliance = compliance_of(type, dst);
    *compliance = plan_compliance(*compliance, s->plan.cfg.iterations);
    st = s->ops->update_constraint(s->impl, type, pt->position[index], moved, err);
    if (st != PBD_OK) {
        s->stale_type = type;
        s->stale_index = index;
    }
    return st;
}

pbd_status pbd_solver_state_hash(pbd_solver *s, uint64_t *hash, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    PBD_NEEDS(hash, "hash", "a place for the hash");
    size_t n = (size_t)s->plan.num_particles;
    pbd_float4 *xv = malloc(2 * n * sizeof *xv);
    if (!xv)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory reading the state to hash");
    pbd_status st = s->ops->read(s->impl, xv, xv + n, err);
    uint64_t h = 14695981039346656037u; /* FNV-1a, 64 bits */
    const unsigned char *b = (const unsigned char *)xv;
    for (size_t k = 0; st == PBD_OK && k < 2 * n * sizeof *xv; ++k)
        h = (h ^ b[k]) * 1099511628211u;
    free(xv);
    *hash = h;
    return st;
}

pbd_status pbd_solver_finish(pbd_solver *s, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    pbd_status st = s->ops->finish(s->impl, err);
    return st == PBD_OK ? st : unusable(s, "waiting for the steps", st, err);
}

pbd_status pbd_solver_read(pbd_solver *s, pbd_float4 *x, pbd_float4 *v, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    return s->ops->read(s->impl, x, v, err);
}

struct pbd_pending_read {
    const pbd_backend_ops *ops;
    void *token;
};

pbd_status pbd_solver_read_begin(pbd_solver *s, pbd_float4 *x, pbd_float4 *v,
                                 pbd_pending_read **out, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    PBD_NEEDS(out, "out", "a place for the pending read");
    pbd_pending_read *r = malloc(sizeof *r);
    *out = NULL;
    if (!r)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory queueing a read");
    r->ops = s->ops;
    pbd_status st = s->ops->read_begin(s->impl, x, v, &r->token, err);
    if (st != PBD_OK) {
        free(r);
        return st;
    }
    *out = r;
    return PBD_OK;
}

pbd_status pbd_pending_read_wait(pbd_pending_read *r, pbd_error *err)
{
    if (!r)
        return PBD_OK;
    pbd_status st = r->ops->read_wait(r->token, err);
    free(r);
    return st;
}

/* Runs body_solve in `mode` and returns the PBD_OUT_* records (malloc'd). */
static double *solve_records(pbd_solver *s, int mode, pbd_error *err)
{
    double *o = malloc((size_t)s->plan.num_bodies * PBD_OUT_COUNT * sizeof *o);
    if (!o) {
        pbd_error_set(err, PBD_ERR_MEMORY, "out of memory reading per-body results");
        return NULL;
    }
    if (s->ops->body_solve(s->impl, mode, o, err) != PBD_OK) {
        free(o);
        return NULL;
    }
    return o;
}

pbd_status pbd_solver_stats(pbd_solver *s, pbd_body_stats *out, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    PBD_NEEDS(out, "out", "an array of one row a body");
    double *o = solve_records(s, PBD_SOLVE_STATS, err);
    if (!o)
        return err ? err->status : PBD_ERR_MEMORY;
    for (int b = 0; b < s->plan.num_bodies; ++b) {
        const double *q = o + (size_t)b * PBD_OUT_COUNT;
        pbd_body_stats *st = &out[b];
        st->mass = q[PBD_OUT_MASS];
        for (int k = 0; k < 3; ++k) {
            st->com[k] = q[PBD_OUT_COM + k];
            st->p[k] = q[PBD_OUT_P + k];
            st->l[k] = q[PBD_OUT_L + k];
        }
        st->kinetic_energy = q[PBD_OUT_KE];
        st->max_constraint_error = q[PBD_OUT_ERR];
    }
    free(o);
    return PBD_OK;
}

pbd_status pbd_solver_momentum(pbd_solver *s, pbd_body_momentum *out, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    PBD_NEEDS(out, "out", "an array of one row a body");
    double *o = solve_records(s, -1, err);
    if (!o)
        return err ? err->status : PBD_ERR_MEMORY;
    for (int b = 0; b < s->plan.num_bodies; ++b) {
        const double *q = o + (size_t)b * PBD_OUT_COUNT;
        pbd_body_momentum *bm = &out[b];
        bm->enabled = (s->plan.body_flags[b] & PBD_BODY_MOMENTUM) != 0;
        for (int k = 0; k < 3; ++k) {
            bm->p_r[k] = q[PBD_OUT_PR + k];
            bm->l_r[k] = q[PBD_OUT_LR + k];
            bm->v_cor[k] = q[PBD_OUT_VCOR + k];
            bm->w_cor[k] = q[PBD_OUT_WCOR + k];
            bm->com[k] = q[PBD_OUT_COM + k];
        }
    }
    free(o);
    return PBD_OK;
}

long pbd_solver_momentum_launches_per_frame(const pbd_solver *s)
{
    return (long)s->plan.momentum_launches * s->plan.cfg.substeps;
}

pbd_sum_layout pbd_solver_sum_layout(const pbd_solver *s)
{
    return s->plan.variant == PBD_VARIANT_CPU ? PBD_SUMS_LANES : PBD_SUMS_TREE;
}

pbd_variant pbd_solver_variant(const pbd_solver *s)
{
    return s->plan.variant;
}

size_t pbd_solver_memory_bytes(const pbd_solver *s)
{
    return s->ops->memory_bytes(s->impl);
}

double pbd_solver_projections_per_frame(const pbd_solver *s)
{
    const pbd_config *c = &s->plan.cfg;
    double n = 0.0;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
        n += s->plan.type[t].count;
    return n * c->iterations * c->substeps;
}

pbd_status pbd_solver_constraint_error(pbd_solver *s, double *mean_relative, double *max_abs,
                                       pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    const pbd_plan *pl = &s->plan;
    pbd_float4 *x = malloc(((size_t)pl->num_particles + 1) * sizeof *x);
    if (!x)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory reading positions");
    pbd_status st = s->ops->read(s->impl, x, NULL, err);
    double sum = 0.0, worst = 0.0;
    long n = 0;
    const pbd_plan_type *dist = &pl->type[PBD_CONSTRAINT_DISTANCE];
    for (int k = 0; st == PBD_OK && k < dist->count; ++k) {
        const pbd_distance *d = &dist->distance[k];
        double e = pbd_distance_error(x[d->a], x[d->b], d->rest);
        worst = e > worst ? e : worst;
        if (d->rest > 0.0f) {
            sum += e / d->rest;
            ++n;
        }
    }
    free(x);
    *mean_relative = n ? sum / (double)n : 0.0;
    *max_abs = worst;
    return st;
}

const char *pbd_solver_device_name(const pbd_solver *s)
{
    return s->ops->device_name(s->impl);
}

int pbd_solver_gl_shared(const pbd_solver *s, const char **why)
{
    if (!s->ops->gl_shared) {
        if (why)
            *why = "the CPU reference shares nothing with OpenGL";
        return 0;
    }
    return s->ops->gl_shared(s->impl, why);
}

pbd_status pbd_solver_gl_attach(pbd_solver *s, unsigned buffer, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    const char *why = NULL;
    if (!pbd_solver_gl_shared(s, &why))
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "OpenGL buffer %u: the solver shares nothing with OpenGL (%s)", buffer,
                             why);
    return s->ops->gl_attach(s->impl, buffer, err);
}

pbd_status pbd_solver_gl_positions(pbd_solver *s, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    if (!s->ops->gl_positions)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "no OpenGL buffer is attached to the solver");
    return s->ops->gl_positions(s->impl, err);
}

int pbd_solver_num_colors(const pbd_solver *s)
{
    return pbd_plan_num_colors(&s->plan);
}

int pbd_solver_type_colors(const pbd_solver *s, int type)
{
    return type >= 0 && type < PBD_CONSTRAINT_COUNT ? s->plan.type[type].num_colors : 0;
}

int pbd_solver_shape_clusters(const pbd_solver *s)
{
    return s->plan.num_clusters;
}

int pbd_solver_type_serial(const pbd_solver *s, int type)
{
    if (type < 0 || type >= PBD_CONSTRAINT_COUNT || !s->plan.type[type].overflow)
        return 0;
    const pbd_plan_type *pt = &s->plan.type[type];
    return pt->color_offsets[pt->num_colors] - pt->color_offsets[pt->num_colors - 1];
}

int pbd_solver_type_one_launch(const pbd_solver *s, int type)
{
    return type >= 0 && type < PBD_CONSTRAINT_COUNT && s->plan.type[type].one_launch;
}

int pbd_solver_type_blocks(const pbd_solver *s, int type)
{
    if (type < 0 || type >= PBD_CONSTRAINT_COUNT || type == PBD_CONSTRAINT_DISTANCE)
        return 0;
    return s->plan.type[type].blocks.num_blocks;
}

long pbd_solver_launches_per_frame(const pbd_solver *s)
{
    return pbd_step_launches(&s->plan);
}

pbd_status pbd_solver_kernel_times(pbd_solver *s, const pbd_kernel_time **out, int *count,
                                   pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    PBD_NEEDS(out, "out", "a place for the table");
    PBD_NEEDS(count, "count", "a place for its length");
    return s->ops->kernel_times(s->impl, out, count, err);
}

void pbd_solver_reset_kernel_times(pbd_solver *s)
{
    s->ops->reset_times(s->impl);
}

/* ---- checkpoints ------------------------------------------------------------------------ */

/* FNV-1a, 64 bits, continued from h. */
static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t k = 0; k < n; ++k)
        h = (h ^ b[k]) * 1099511628211u;
    return h;
}

#define FNV_START 14695981039346656037u

uint64_t pbd_model_fingerprint(const pbd_model *m)
{
    uint64_t h = FNV_START;
    size_t np = (size_t)m->num_particles;
    h = fnv(h, &m->num_particles, sizeof m->num_particles);
    h = fnv(h, m->x, np * sizeof *m->x);
    h = fnv(h, m->v, np * sizeof *m->v);
    h = fnv(h, &m->num_bodies, sizeof m->num_bodies);
    for (int b = 0; b < m->num_bodies; ++b) {
        const pbd_body *bd = &m->bodies[b];
        int head[4] = {bd->first, bd->count, bd->pinned, bd->momentum};
        h = fnv(h, head, sizeof head);
        h = fnv(h, bd->name, strnlen(bd->name, sizeof bd->name));
        if (bd->damping >= 0 || bd->damping_k >= 0.0f) { /* its own damping, as the run's */
            float d[2] = {(float)bd->damping, bd->damping_k};
            h = fnv(h, d, sizeof d);
        }
        if (bd->shape_cluster_spacing > 0.0f) { /* which clusters the rotations belong to */
            float cl[2] = {bd->shape_cluster_spacing, bd->shape_cluster_radius};
            h = fnv(h, cl, sizeof cl);
        }
        /* its materials, where it has any (a body without keeps the fingerprint it had) */
        float mat[8] = {bd->friction,
                        bd->friction_kinetic,
                        bd->restitution,
                        bd->shape_stiffness,
                        bd->shape_compliance,
                        bd->pressure,
                        bd->pressure > 0.0f ? bd->pressure_compliance : 0.0f,
                        bd->radius};
        if (mat[0] >= 0.0f || mat[1] >= 0.0f || mat[2] >= 0.0f || mat[3] != 0.0f ||
            mat[4] != 0.0f || mat[5] != 0.0f || mat[7] != 0.0f || bd->self_collision) {
            h = fnv(h, mat, sizeof mat);
            h = fnv(h, &bd->self_collision, sizeof bd->self_collision);
        }
    }
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        int n = 0;
        const void *r = pbd_model_constraints(m, t, &n);
        h = fnv(h, &n, sizeof n);
        h = fnv(h, r, (size_t)n * pbd_constraint_types[t].size);
    }
    h = fnv(h, &m->num_colliders, sizeof m->num_colliders);
    h = fnv(h, m->colliders, (size_t)m->num_colliders * sizeof *m->colliders);
    return h;
}

/* The checkpoint's layout, version 5 (little-endian hosts write and read it as they are; the
 * byte-order mark refuses the others): a fixed header, then the arrays. */
#define STATE_MAGIC "PBDSTATE"
/* 2: max_colors in the header; 3: materials in the fingerprint; 4: friction's state; 5:
 * particle contacts' friction state */
#define STATE_VERSION 5u
#define STATE_ORDER   0x01020304u

typedef struct state_header {
    char magic[8];
    uint32_t version, order;
    uint64_t size;        /* bytes in the file */
    uint64_t checksum;    /* FNV-1a of every byte after this field */
    uint64_t fingerprint; /* pbd_model_fingerprint */
    float dt;
    int32_t substeps, iterations, solver;
    float omega, gravity[3];
    int32_t momentum, damping;
    float damping_k;
    int32_t velocity_update;
    int32_t num_particles, num_bodies, previous; /* previous: BDF2's x and v follow */
    int32_t backend, variant;                    /* where it was made (not checked) */
    int64_t substeps_done;
    char device[128];   /* where it was made (not checked) */
    int32_t max_colors; /* the colouring's bound: another bound, another order of projections */
    int32_t reserved;   /* 0: the arrays start 16-byte aligned */
} state_header;

_Static_assert(sizeof(state_header) == 256, "the checkpoint header is 256 bytes");
_Static_assert(offsetof(state_header, checksum) == 24, "the checksum is at byte 24");
/* The offsets docs/checkpoints.md gives. */
_Static_assert(offsetof(state_header, dt) == 40 && offsetof(state_header, num_particles) == 88 &&
                   offsetof(state_header, substeps_done) == 112 &&
                   offsetof(state_header, device) == 120 &&
                   offsetof(state_header, max_colors) == 248,
               "the checkpoint header's fields are where docs/checkpoints.md says");

/* Bytes of the contacts' sliding flags: np int32, padded to 16-byte records. */
static size_t contact_slide_bytes(size_t np)
{
    return (np + 3) / 4 * sizeof(pbd_float4);
}

size_t pbd_solver_state_size(const pbd_solver *s)
{
    size_t np = (size_t)s->plan.num_particles, nb = (size_t)s->plan.num_bodies;
    int previous = s->plan.cfg.velocity_update == PBD_VELOCITY_BDF2;
    return sizeof(state_header) + (previous ? 4 : 2) * np * sizeof(pbd_float4) +
           (s->plan.friction ? np * sizeof(pbd_float4) : 0) +
           (s->plan.contact_friction ? contact_slide_bytes(np) : 0) +
           nb * (sizeof(pbd_float4) + 6 * sizeof(double)) +
           (s->plan.body_active ? (size_t)s->plan.num_body_constraints * sizeof(pbd_float4) : 0);
}

long pbd_solver_substeps(const pbd_solver *s)
{
    return s->substeps_done;
}

/* The arrays' places in a checkpoint of s at `base`. */
static pbd_state_arrays state_arrays(const pbd_solver *s, unsigned char *base)
{
    size_t np = (size_t)s->plan.num_particles, nb = (size_t)s->plan.num_bodies;
    pbd_float4 *f = (pbd_float4 *)(base + sizeof(state_header));
    pbd_state_arrays a = {f, f + np, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    f += 2 * np;
    if (s->plan.cfg.velocity_update == PBD_VELOCITY_BDF2) {
        a.xp = f;
        a.vp = f + np;
        f += 2 * np;
    }
    if (s->plan.friction) { /* whether each particle's friction slides (pbd_friction) */
        a.dx = f;
        f += np;
    }
    if (s->plan.contact_friction) { /* whether each particle's contacts slid (pbd_contacts) */
        a.contact_slide = (int32_t *)f;
        f += contact_slide_bytes(np) / sizeof *f;
    }
    a.body_ref = f;
    a.body_track = (double *)(f + nb);
    if (s->plan.body_active) /* after 6 doubles a body: still 16-byte aligned */
        a.body_rotation = (pbd_float4 *)(a.body_track + 6 * nb);
    return a;
}

static void header_config(state_header *h, const pbd_config *c)
{
    h->dt = c->dt;
    h->substeps = c->substeps;
    h->iterations = c->iterations;
    h->solver = (int32_t)c->solver;
    h->omega = c->omega;
    memcpy(h->gravity, c->gravity, sizeof h->gravity);
    h->momentum = c->momentum;
    h->damping = (int32_t)c->damping;
    h->damping_k = c->damping_k;
    h->velocity_update = (int32_t)c->velocity_update;
    h->max_colors = c->max_colors;
}

/* The first particle of a checkpoint's arrays a (np particles) whose position, velocity or
 * previous ones are not finite or beyond PBD_MAX_COORD, refused with status `bad` as `what`'s
 * (the file, or the state saved), the message ending in `expected`'s bounds. */
static pbd_status state_out_of_bounds(const pbd_state_arrays *a, size_t np, const char *what,
                                      const char *expected, pbd_status bad, pbd_error *err)
{
    const pbd_float4 *arrays[4] = {a->x, a->v, a->xp, a->vp};
    static const char *const names[4] = {"position", "velocity", "previous position",
                                         "previous velocity"};
    for (int k = 0; k < 4; ++k)
        for (size_t i = 0; arrays[k] && i < np; ++i) {
            pbd_float4 q = arrays[k][i];
            if (!(fabsf(q.x) <= PBD_MAX_COORD && fabsf(q.y) <= PBD_MAX_COORD &&
                  fabsf(q.z) <= PBD_MAX_COORD && isfinite(q.w)))
                return pbd_error_set(err, bad,
                                     "%s: particle %zu: %s (%g, %g, %g), %s finite values "
                                     "within %g",
                                     what, i, names[k], (double)q.x, (double)q.y, (double)q.z,
                                     expected, (double)PBD_MAX_COORD);
        }
    /* the flags, and the zeros after them to the next 16 bytes; a pinned particle's contacts
     * never slide */
    for (size_t i = 0; a->contact_slide && i < (np + 3) / 4 * 4; ++i) {
        int32_t f = a->contact_slide[i];
        int zero = i >= np || !(a->x[i].w > 0.0f);
        if (f != 0 && (zero || f != 1))
            return pbd_error_set(err, bad, "%s: %s %zu: contacts' sliding flag %d, %s %s", what,
                                 i < np ? "particle" : "the padding after particle",
                                 i < np ? i : np - 1, (int)f, expected, zero ? "0" : "0 or 1");
    }
    for (size_t i = 0; a->dx && i < np; ++i) {
        pbd_float4 q = a->dx[i];
        if (!(isfinite(q.x) && isfinite(q.y) && isfinite(q.z) && isfinite(q.w)))
            return pbd_error_set(err, bad,
                                 "%s: particle %zu: collision record (%g, %g, %g, %g), %s finite "
                                 "values",
                                 what, i, (double)q.x, (double)q.y, (double)q.z, (double)q.w,
                                 expected);
    }
    return PBD_OK;
}

pbd_status pbd_solver_save_state(pbd_solver *s, void **data, size_t *size, pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    PBD_NEEDS(data, "data", "a place for the checkpoint");
    PBD_NEEDS(size, "size", "a place for its size");
    *data = NULL;
    *size = 0;
    if (s->unusable[0]) /* a checkpoint of a partly written state would be trusted */
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%.960s; expected no checkpoint of its state",
                             s->unusable);
    size_t n = pbd_solver_state_size(s);
    /* The header's alignment (8) is the arrays' too (float4 and double need no more in a
     * malloc'd block, which is aligned for any type). */
    unsigned char *buf = calloc(1, n);
    if (!buf)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory saving the state (%zu bytes)", n);
    state_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, STATE_MAGIC, sizeof h.magic);
    h.version = STATE_VERSION;
    h.order = STATE_ORDER;
    h.size = n;
    h.fingerprint = s->fingerprint;
    header_config(&h, &s->plan.cfg);
    h.num_particles = s->plan.num_particles;
    h.num_bodies = s->plan.num_bodies;
    h.previous = s->plan.cfg.velocity_update == PBD_VELOCITY_BDF2;
    h.backend = s->ops == &pbd_cl_ops ? PBD_BACKEND_CL : PBD_BACKEND_CPU;
    h.variant = (int32_t)s->plan.variant;
    h.substeps_done = s->substeps_done;
    snprintf(h.device, sizeof h.device, "%s", pbd_solver_device_name(s));
    memcpy(buf, &h, sizeof h);
    pbd_state_arrays a = state_arrays(s, buf);
    pbd_status st = s->ops->read_state(s->impl, &a, err);
    /* what a load would refuse is not saved */
    if (st == PBD_OK)
        st = state_out_of_bounds(&a, (size_t)s->plan.num_particles, "the state",
                                 "expected for a checkpoint", PBD_ERR_ARGUMENT, err);
    if (st != PBD_OK) {
        free(buf);
        return st;
    }
    uint64_t sum = fnv(FNV_START, buf + 32, n - 32);
    memcpy(buf + offsetof(state_header, checksum), &sum, sizeof sum);
    *data = buf;
    *size = n;
    return PBD_OK;
}

/* The first configuration field that differs, or NULL. */
static const char *config_mismatch(const state_header *got, const state_header *want, char *found,
                                   char *expected, size_t n)
{
    static const char *const solvers[] = {"gs", "jacobi"};
    static const char *const dampings[] = {"none", "point", "rigid"};
    static const char *const updates[] = {"first_order", "bdf2"};
#define NUM(field, fmt, cast)                                                                      \
    if (memcmp(&got->field, &want->field, sizeof got->field) != 0) {                               \
        snprintf(found, n, fmt, (cast)got->field);                                                 \
        snprintf(expected, n, fmt, (cast)want->field);                                             \
        return #field;                                                                             \
    }
#define NAMED(field, names)                                                                        \
    if (got->field != want->field) {                                                               \
        int k = got->field, count = (int)(sizeof names / sizeof names[0]);                         \
        snprintf(found, n, "%s", k >= 0 && k < count ? names[k] : "?");                            \
        snprintf(expected, n, "%s", names[want->field]);                                           \
        return #field;                                                                             \
    }
    NUM(dt, "%.9g", double)
    NUM(substeps, "%d", int)
    NUM(iterations, "%d", int)
    NAMED(solver, solvers)
    NUM(omega, "%.9g", double)
    for (int k = 0; k < 3; ++k)
        if (memcmp(&got->gravity[k], &want->gravity[k], sizeof(float)) != 0) {
            snprintf(found, n, "[%.9g, %.9g, %.9g]", (double)got->gravity[0],
                     (double)got->gravity[1], (double)got->gravity[2]);
            snprintf(expected, n, "[%.9g, %.9g, %.9g]", (double)want->gravity[0],
                     (double)want->gravity[1], (double)want->gravity[2]);
            return "gravity";
        }
    NUM(momentum, "%d", int)
    NAMED(damping, dampings)
    NUM(damping_k, "%.9g", double)
    NAMED(velocity_update, updates)
    NUM(max_colors, "%d", int)
#undef NUM
#undef NAMED
    return NULL;
}

pbd_status pbd_solver_load_state(pbd_solver *s, const void *data, size_t size, const char *name,
                                 pbd_error *err)
{
    PBD_NEEDS(s, "solver", "a solver");
    const char *f = name ? name : "checkpoint";
    const pbd_status bad = PBD_ERR_CHECKPOINT;
    state_header h, want;
    if (!data || size < sizeof(STATE_MAGIC) - 1 || memcmp(data, STATE_MAGIC, 8) != 0)
        return pbd_error_set(err, bad, "%s: not a pbd checkpoint (expected \"%s\" at the start)", f,
                             STATE_MAGIC);
    if (size < sizeof h)
        return pbd_error_set(err, bad, "%s: truncated: found %zu bytes, expected a header of %zu",
                             f, size, sizeof h);
    memcpy(&h, data, sizeof h);
    if (h.order != STATE_ORDER)
        return pbd_error_set(err, bad,
                             "%s: found byte order mark %08x, expected %08x (written on a host of "
                             "the other byte order)",
                             f, (unsigned)h.order, (unsigned)STATE_ORDER);
    if (h.version != STATE_VERSION)
        return pbd_error_set(err, bad, "%s: found version %u, expected %u", f, (unsigned)h.version,
                             (unsigned)STATE_VERSION);
    if (h.size != size)
        return pbd_error_set(err, bad, "%s: %s: found %zu bytes, the header says %llu", f,
                             size < h.size ? "truncated" : "trailing bytes", size,
                             (unsigned long long)h.size);
    uint64_t sum = fnv(FNV_START, (const unsigned char *)data + 32, size - 32);
    if (sum != h.checksum)
        return pbd_error_set(err, bad,
                             "%s: checksum %016llx, expected %016llx: the file is corrupt", f,
                             (unsigned long long)sum, (unsigned long long)h.checksum);
    if (h.fingerprint != s->fingerprint || h.num_particles != s->plan.num_particles ||
        h.num_bodies != s->plan.num_bodies)
        return pbd_error_set(err, bad,
                             "%s: made from another scene (model fingerprint %016llx, %d "
                             "particles), expected this scene's (%016llx, %d particles)",
                             f, (unsigned long long)h.fingerprint, (int)h.num_particles,
                             (unsigned long long)s->fingerprint, s->plan.num_particles);
    memset(&want, 0, sizeof want);
    header_config(&want, &s->plan.cfg);
    char found[96], expected[96];
    const char *field = config_mismatch(&h, &want, found, expected, sizeof found);
    if (field)
        return pbd_error_set(err, bad, "%s: %s: found %s in the checkpoint, this run has %s", f,
                             field, found, expected);
    if (h.substeps_done < 0 || h.substeps_done > LONG_MAX / 2 ||
        h.previous != (s->plan.cfg.velocity_update == PBD_VELOCITY_BDF2))
        return pbd_error_set(err, bad, "%s: found %lld substeps run, expected a count >= 0", f,
                             (long long)h.substeps_done);
    /* The header's own size is sealed by the checksum, but only this scene knows the arrays'. */
    size_t n = pbd_solver_state_size(s);
    if (size != n)
        return pbd_error_set(err, bad, "%s: found %zu bytes, expected %zu for this scene's arrays",
                             f, size, n);
    /* The arrays: copied to an aligned block, then checked as a scene's values are. */
    unsigned char *buf = malloc(n);
    if (!buf)
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory (%zu bytes)", f, n);
    memcpy(buf, data, n);
    pbd_state_arrays a = state_arrays(s, buf);
    size_t np = (size_t)s->plan.num_particles, nb = (size_t)s->plan.num_bodies;
    pbd_status st = state_out_of_bounds(&a, np, f, "expected", bad, err);
    /* Masses never change in a run: they must be the solver's own (its current state's). */
    unsigned char *cur = st == PBD_OK ? malloc(n) : NULL;
    if (st == PBD_OK && !cur)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory (%zu bytes)", f, n);
    pbd_state_arrays now = {0};
    if (st == PBD_OK) {
        now = state_arrays(s, cur);
        st = s->ops->read_state(s->impl, &now, err);
    }
    for (size_t i = 0; i < np && st == PBD_OK; ++i)
        if (memcmp(&a.x[i].w, &now.x[i].w, sizeof(float)) != 0 ||
            memcmp(&a.v[i].w, &now.v[i].w, sizeof(float)) != 0)
            st = pbd_error_set(err, bad, "%s: particle %zu: mass %g kg, expected the scene's %g kg",
                               f, i, (double)a.v[i].w, (double)now.v[i].w);
    /* Each body's tracked momenta within what particles inside the coordinate bound can
     * carry (|P| <= M vmax, |L| <= M 2 xmax vmax), its reference point inside the bound. */
    double *mass = st == PBD_OK ? calloc(nb + 1, sizeof *mass) : NULL;
    if (st == PBD_OK && !mass)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", f);
    for (int g = 0; st == PBD_OK && g < s->plan.num_segments; ++g) {
        const pbd_segment *seg = &s->plan.segments[g];
        for (int i = seg->first; i < seg->first + seg->count; ++i)
            mass[seg->body] += now.v[i].w;
    }
    /* A body the step corrects or damps rigidly sums about its reference point, which each
     * correction moves to the body's centre of mass: it must lie near the body (a point far
     * away turns the sums' rounding into the whole result). Within the body's bounding box
     * grown by its diagonal (by 1e-3 of its distance from the origin, at least). */
    double *box = st == PBD_OK ? malloc((nb + 1) * 6 * sizeof *box) : NULL;
    if (st == PBD_OK && !box)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", f);
    for (size_t b = 0; box && b < nb; ++b)
        for (int k = 0; k < 3; ++k) {
            box[6 * b + k] = INFINITY;
            box[6 * b + 3 + k] = -INFINITY;
        }
    for (int g = 0; st == PBD_OK && g < s->plan.num_segments; ++g) {
        const pbd_segment *seg = &s->plan.segments[g];
        double *bx = box + 6 * (size_t)seg->body;
        for (int i = seg->first; i < seg->first + seg->count; ++i)
            for (int k = 0; k < 3; ++k) {
                double c = (&a.x[i].x)[k];
                bx[k] = c < bx[k] ? c : bx[k];
                bx[3 + k] = c > bx[3 + k] ? c : bx[3 + k];
            }
    }
    for (size_t b = 0; b < nb && st == PBD_OK; ++b) {
        int used =
            (s->plan.body_flags[b] & PBD_BODY_MOMENTUM) || s->plan.body_damping[2 * b + 1] > 0.0f;
        const double *bx = box + 6 * b;
        double diag = 0.0, far = 0.0;
        for (int k = 0; k < 3; ++k) {
            diag += (bx[3 + k] - bx[k]) * (bx[3 + k] - bx[k]);
            far = fmax(far, fmax(fabs(bx[k]), fabs(bx[3 + k])));
        }
        double margin = fmax(sqrt(diag), 1e-3 * (1.0 + far));
        const float *r = &a.body_ref[b].x;
        for (int k = 0; used && k < 3 && st == PBD_OK; ++k)
            if (!(r[k] >= bx[k] - margin && r[k] <= bx[3 + k] + margin))
                st = pbd_error_set(err, bad,
                                   "%s: body %zu: reference point (%g, %g, %g) m, expected "
                                   "within %g m of the body's particles",
                                   f, b, (double)r[0], (double)r[1], (double)r[2], margin);
    }
    free(box);
    for (size_t b = 0; b < nb && st == PBD_OK; ++b) {
        const double *t = &a.body_track[6 * b];
        const pbd_float4 r = a.body_ref[b];
        double vmax = PBD_MAX_COORD, p = sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
        double l = sqrt(t[3] * t[3] + t[4] * t[4] + t[5] * t[5]);
        if (!(fabsf(r.x) <= PBD_MAX_COORD && fabsf(r.y) <= PBD_MAX_COORD &&
              fabsf(r.z) <= PBD_MAX_COORD) ||
            !(p <= mass[b] * vmax) || !(l <= mass[b] * 2.0 * vmax * vmax))
            st = pbd_error_set(err, bad,
                               "%s: body %zu: tracked momentum |P| %g, |L| %g or reference point "
                               "beyond what a body of %g kg within %g m and m/s can have",
                               f, b, p, l, mass[b], vmax);
    }
    size_t nbc = (size_t)s->plan.num_body_constraints;
    for (size_t b = 0; a.body_rotation && b < nbc && st == PBD_OK; ++b) {
        pbd_float4 q = a.body_rotation[b];
        double len =
            sqrt((double)q.x * q.x + (double)q.y * q.y + (double)q.z * q.z + (double)q.w * q.w);
        if (!(fabs(len - 1.0) <= 1e-5))
            st = pbd_error_set(err, bad,
                               "%s: %s %zu: rotation (%g, %g, %g, %g), expected a unit "
                               "quaternion",
                               f, b < nb ? "body" : "shape-matching cluster", b < nb ? b : b - nb,
                               (double)q.x, (double)q.y, (double)q.z, (double)q.w);
    }
    free(mass);
    free(cur);
    /* No free particle deeper inside a collider than a substep at the speed bound moves: the
     * next substep would throw it out faster, and its impulse would pass what the tracked
     * momenta may hold (the scene refuses any start inside; a run ends a substep with its
     * particles at most a little inside). A sphere's centre or a capsule's axis, which no
     * collision can push, is let be. */
    double deepest = PBD_MAX_COORD * (double)s->plan.h;
    for (int k = 0; st == PBD_OK && k < s->plan.num_colliders; ++k) {
        pbd_collider col;
        pbd_plan_collider_at(&s->plan, k, (long)h.substeps_done, &col);
        for (size_t i = 0; st == PBD_OK && i < np; ++i) {
            float nrm[3] = {2.0f, 0.0f, 0.0f};
            if (!(a.x[i].w > 0.0f))
                continue;
            double depth = -(double)pbd_collider_distance(a.x[i], &col, nrm);
            if (nrm[0] != 2.0f && depth > deepest)
                st = pbd_error_set(err, bad,
                                   "%s: particle %zu at (%g, %g, %g) m lies %g m inside collider "
                                   "%d, expected at most %g m (a substep at %g m/s)",
                                   f, i, (double)a.x[i].x, (double)a.x[i].y, (double)a.x[i].z,
                                   depth, k, deepest, (double)PBD_MAX_COORD);
        }
    }
    /* Of the collision records only whether friction slides outlives a substep: kept as the
     * prediction keeps it (a negative denormal would read as 0 where floats flush to zero). */
    for (size_t i = 0; st == PBD_OK && a.dx && i < np; ++i)
        a.dx[i] = (pbd_float4){0.0f, 0.0f, 0.0f, pbd_friction_carry(a.dx[i].w)};
    /* write_state fails for want of host memory only before it writes anything */
    if (st == PBD_OK && (st = s->ops->write_state(s->impl, &a, err)) != PBD_OK &&
        st != PBD_ERR_MEMORY)
        unusable(s, "loading a checkpoint onto the device", st, err);
    if (st == PBD_OK)
        s->substeps_done = (long)h.substeps_done;
    free(buf);
    return st;
}
