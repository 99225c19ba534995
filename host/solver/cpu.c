/* The CPU reference backend: plain single-threaded C over the same structs and the same
 * projection math (kernels/pbd_shared.h) as the device. It is also the baseline the
 * benchmark compares against, so it is built with the release flags and does no extra work:
 * each stage is the loop a device kernel runs, visited in index order. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver/solver_impl.h"

typedef struct cpu_impl {
    const pbd_plan *plan;
    pbd_float4 *x;
    pbd_float4 *p;
    pbd_float4 *v;
    pbd_float4 *xp; /* previous x, v (BDF2) */
    pbd_float4 *vp;
    pbd_float4 *dx;                      /* collision displacement this substep */
    pbd_float4 *p_next;                  /* Jacobi: the gather's output, then swapped with p */
    float *gain;                         /* Jacobi: per constraint */
    float *lambda[PBD_CONSTRAINT_COUNT]; /* per constraint type */
    int *particle_body;
    pbd_float4 *body_ref; /* moves to the com at each correction */
    double *body_track;   /* P_r, L_r per body */
    double *segment_sums; /* num_segments x PBD_SUM_COUNT */
    double *out_step;     /* PBD_OUT_* of the last PBD_SOLVE_STEP */
    double *out_other;    /* PBD_OUT_* of the last statistics / init */
    pbd_float4 *apply;    /* momentum_apply's record per body (PBD_APPLY_COUNT) */
    pbd_float4 *goal;     /* body constraints: per constraint PBD_GOAL_COUNT (quaternion first) */
    pbd_float4 *grad;     /* pressure: each particle's volume gradient this iteration */
    float *body_sums;     /* body constraints: their segments x PBD_BSUM_COUNT */
    int pending;          /* a correction is computed but not yet applied to v */
    /* particle contacts: the hash (as the device's kernels leave it) and the corrections */
    int *contact_cell, *cell_count, *cell_start, *cell_sorted, *contact_num;
    pbd_float4 *contact_dp, *contact_cdx, *contact_a, *contact_p0;
    int *contact_cand, *contact_other;
    float *contact_state;
    int32_t *contact_slide;
    pbd_kernel_time times[PBD_STAGE_COUNT];
} cpu_impl;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void charge(cpu_impl *c, int stage, double t0)
{
    c->times[stage].ms += now_ms() - t0;
    c->times[stage].launches++;
}

/* momentum_apply for particle i (Algorithm 2, lines 19-21). */
static pbd_float4 applied(const cpu_impl *c, int i)
{
    const pbd_plan *pl = c->plan;
    return pbd_apply_rigid(c->x[i], c->v[i],
                           c->apply + (size_t)c->particle_body[i] * PBD_APPLY_COUNT,
                           pbd_particle_damping(i, c->particle_body, pl->body_damping,
                                                pl->damping_per_body, 1, pl->rigid_damping));
}

static pbd_status cpu_predict(void *impl, int bdf2, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    const float *g = pl->cfg.gravity;
    /* As the device: the corrected v is stored only where a later stage reads it. */
    int keep_v = pbd_keeps_v(pl);
    for (int i = 0; i < pl->num_particles; ++i) {
        pbd_float4 v = c->pending ? applied(c, i) : c->v[i];
        if (c->pending && keep_v)
            c->v[i] = v;
        c->p[i] = pbd_predict(c->x[i], v, bdf2 ? c->xp[i] : c->x[i], bdf2 ? c->vp[i] : v, bdf2,
                              g[0], g[1], g[2], pl->h);
        if (pl->momentum_active || pl->track)
            c->dx[i] = (pbd_float4){0.0f, 0.0f, 0.0f, pbd_friction_carry(c->dx[i].w)};
    }
    c->pending = 0;
    charge(c, PBD_STAGE_PREDICT, t0);
    return PBD_OK;
}

/* Applies a pending correction before anything reads the velocities. */
static void flush(cpu_impl *c)
{
    if (!c->pending)
        return;
    double t0 = now_ms();
    for (int i = 0; i < c->plan->num_particles; ++i)
        c->v[i] = applied(c, i);
    c->pending = 0;
    charge(c, PBD_STAGE_APPLY, t0);
}

/* Constraint `type`'s colours in order, each constraint by its type's projection. */
static pbd_status cpu_project(void *impl, int type, int reset, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    const pbd_plan_type *pt = &pl->type[type];
    float *lambda = c->lambda[type];
    for (int k = 0; k < pt->num_colors; ++k) {
        double t0 = now_ms();
        int lo = pt->color_offsets[k], hi = pt->color_offsets[k + 1];
        /* The type chosen outside the loop, which is then the plain loop over one type's
         * projection that the reference has always been. */
        switch (type) {
#define PBD_X_PROJECT(id, name, t, arity, world)                                                   \
    case PBD_CONSTRAINT_##id:                                                                      \
        for (int j = lo; j < hi; ++j)                                                              \
            pbd_##name##_project(c->p, c->dx, pt->name, lambda, j, pl->inv_h2, reset, pl->track);  \
        break;
            PBD_CONSTRAINT_LIST(PBD_X_PROJECT)
#undef PBD_X_PROJECT
        }
        charge(c, PBD_STAGE_PROJECT + type, t0);
    }
    return PBD_OK;
}

/* Collides p[i] with the colliders, recording the displacement when momentum is tracked. */
static void collide_one(cpu_impl *c, int i, pbd_float4 p0)
{
    const pbd_plan *pl = c->plan;
    pbd_collide_particle(
        c->p, c->dx, i, p0, c->x, pl->colliders, pl->num_colliders, pl->track,
        pbd_particle_material(i, c->particle_body, pl->body_material, pl->materials));
}

static pbd_status cpu_collide(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    double t0 = now_ms();
    for (int i = 0; i < c->plan->num_particles; ++i)
        collide_one(c, i, c->p[i]);
    charge(c, PBD_STAGE_COLLIDE, t0);
    return PBD_OK;
}

/* The body constraints as the device runs them (common/body_constraint.cl): each segment's
 * members in order, each constraint's segments in order, then every particle. */
static pbd_status cpu_body_constraints(void *impl, int reset, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    static const pbd_float4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int gi = 0; gi < pl->num_body_constraint_segments; ++gi) {
        pbd_segment seg = pl->body_constraint_segments[gi];
        pbd_body_constraint bc = pl->body_constraints[seg.body];
        float *s = c->body_sums + (size_t)gi * PBD_BSUM_COUNT;
        for (int q = 0; q < PBD_BSUM_COUNT; ++q)
            s[q] = 0.0f;
        pbd_float4 r = c->p[bc.first];
        for (int e = seg.first; e < seg.first + seg.count; ++e) {
            int i = pl->member_particle[e];
            pbd_float4 g = zero;
            if (bc.flags & PBD_BODY_PRESSURE) {
                g = pbd_volume_gradient(c->p, r, pl->pressure_pairs, pl->pressure_offsets[i],
                                        pl->pressure_offsets[i + 1]);
                c->grad[i] = g;
            }
            pbd_body_constraint_sums(c->p[i], r, pl->member_rest[e], g, bc.flags, s);
        }
    }
    charge(c, PBD_STAGE_BODY_REDUCE, t0);
    t0 = now_ms();
    for (int b = 0; b < pl->num_body_constraints; ++b) {
        pbd_body_constraint bc = pl->body_constraints[b];
        if (bc.flags == 0)
            continue;
        float s[PBD_BSUM_COUNT];
        for (int q = 0; q < PBD_BSUM_COUNT; ++q)
            s[q] = 0.0f;
        for (int gi = pl->body_constraint_ranges[b]; gi < pl->body_constraint_ranges[b + 1]; ++gi)
            for (int q = 0; q < PBD_BSUM_COUNT; ++q)
                s[q] = s[q] + c->body_sums[(size_t)gi * PBD_BSUM_COUNT + q];
        pbd_body_constraint_solve(s, bc, c->p[bc.first], c->p[bc.base],
                                  c->goal + (size_t)b * PBD_GOAL_COUNT, pl->inv_h2, reset);
    }
    charge(c, PBD_STAGE_BODY_SOLVE, t0);
    t0 = now_ms();
    for (int i = 0; i < pl->num_particles; ++i) {
        int b = c->particle_body[i];
        if (pl->body_constraints[b].flags == 0 && pl->particle_set[i] < 0)
            continue;
        c->p[i] = pbd_body_constraint_apply(c->p[i], i, b, pl->body_constraints, pl->member_rest,
                                            c->grad, pl->particle_set, pl->set_offsets,
                                            pl->set_constraints, c->goal);
    }
    charge(c, PBD_STAGE_BODY_APPLY, t0);
    return PBD_OK;
}

static pbd_status cpu_project_jacobi(void *impl, int reset, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    const pbd_plan_type *dist = &pl->type[PBD_CONSTRAINT_DISTANCE];
    for (int k = 0; k < dist->count; ++k)
        pbd_jacobi_project(c->p, dist->distance, c->lambda[PBD_CONSTRAINT_DISTANCE], c->gain, k,
                           pl->inv_h2, reset);
    charge(c, PBD_STAGE_PROJECT_JACOBI, t0);
    return PBD_OK;
}

static pbd_status cpu_gather_jacobi(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    pbd_float4 *p = c->p;
    c->p = c->p_next; /* collide_one writes c->p */
    for (int i = 0; i < pl->num_particles; ++i)
        collide_one(c, i,
                    pbd_gather(p, i, c->gain, pl->csr_slots, pl->csr_other, pl->csr_offsets[i],
                               pl->csr_offsets[i + 1], pl->cfg.omega));
    c->p_next = p;
    charge(c, PBD_STAGE_GATHER, t0);
    return PBD_OK;
}

/* The hash as the device's kernels leave it, and each particle's candidates. */
static pbd_status cpu_contacts_build(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    int n = pl->num_particles;
    pbd_contact_hash_build(pl, c->p, c->contact_cell, c->cell_count, c->cell_start, c->cell_sorted);
    for (int i = 0; i < n; ++i)
        pbd_contact_start(c->p, c->contact_p0, c->contact_cdx, c->contact_a, i);
    float o[9];
    for (int i = 0; i < n; ++i)
        c->contact_cand[i] = pbd_contact_search(
            c->contact_p0, pl->contact_rest, pl->particle_radius, c->particle_body, pl->body_self,
            c->contact_cell, c->cell_start, c->cell_sorted, pl->grid_bits, pl->grid_inv, pl->grid_r,
            i, 1, c->contact_other, &c->contact_num[i], 0, c->p, c->x, pl->body_material,
            c->contact_num, 1.0f, o);
    for (int i = 0; i < n; ++i)
        pbd_contact_list_start(c->contact_cand, c->contact_other, c->contact_slide,
                               c->contact_state, i);
    charge(c, PBD_STAGE_HASH, t0);
    return PBD_OK;
}

static pbd_status cpu_contacts(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    for (int i = 0; i < pl->num_particles; ++i)
        pbd_contact_solve(c->p, c->x, c->contact_p0, pl->contact_rest, pl->particle_radius,
                          c->particle_body, pl->body_self, pl->body_material, c->contact_cell,
                          c->cell_start, c->cell_sorted, pl->grid_bits, pl->grid_inv, pl->grid_r,
                          c->contact_cand, c->contact_other, c->contact_num, c->contact_state,
                          c->contact_slide, pl->cfg.omega, c->contact_dp, c->dx, c->contact_cdx,
                          c->contact_a, pl->track, i);
    for (int i = 0; i < pl->num_particles; ++i)
        pbd_contact_apply(c->p, c->contact_dp, i);
    charge(c, PBD_STAGE_CONTACT, t0);
    return PBD_OK;
}

static pbd_status cpu_contacts_moment(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    for (int b = 0; b < pl->num_bodies; ++b)
        pbd_contact_moment(b, pl->body_first, pl->body_flags, c->p, c->v, c->x, c->contact_cdx,
                           c->contact_a, pl->inv_h, c->body_track);
    charge(c, PBD_STAGE_CONTACT, t0);
    return PBD_OK;
}

static pbd_status cpu_update(void *impl, int bdf2, int keep_prev, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    pbd_float4 pos;
    const float *g = pl->cfg.gravity;
    for (int i = 0; i < pl->num_particles; ++i) {
        float k = pbd_particle_damping(i, c->particle_body, pl->body_damping, pl->damping_per_body,
                                       0, pl->point_damping);
        if (pl->bounce)
            pbd_update_bounce(
                i, c->x, c->p, c->v, c->xp, c->vp, c->dx, bdf2, keep_prev, pl->inv_h, k,
                pl->colliders, pl->num_colliders, g[0], g[1], g[2], pl->h, pl->track,
                pbd_particle_material(i, c->particle_body, pl->body_material, pl->materials));
        else
            pbd_update_particle(i, c->x, c->p, c->v, c->xp, c->vp, bdf2, keep_prev, pl->inv_h, k,
                                &pos);
    }
    charge(c, PBD_STAGE_UPDATE, t0);
    return PBD_OK;
}

/* The device's tree over `count` lanes (a power of two), each already summed in the device's
 * order: it adds lane l + w into lane l for w = count / 2, ..., 1. With the same (IEEE
 * double) arithmetic the CPU and an fp64 device give the same bits. */
static void reduce_lanes(double (*lanes)[PBD_SUM_COUNT], int count, double *out)
{
    for (int w = count / 2; w > 0; w >>= 1)
        for (int l = 0; l < w; ++l)
            pbd_sums_add(lanes[l], lanes[l + w]);
    memcpy(out, lanes[0], sizeof lanes[0]);
}

static void body_reduce(cpu_impl *c, int with_dx, int stats)
{
    const pbd_plan *pl = c->plan;
    static const pbd_float4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
    double lanes[PBD_REDUCE_WG][PBD_SUM_COUNT], s[PBD_SUM_COUNT];
    for (int gi = 0; gi < pl->num_segments; ++gi) {
        pbd_segment seg = pl->segments[gi];
        double *out = c->segment_sums + (size_t)gi * PBD_SUM_COUNT;
        memset(lanes, 0, sizeof lanes);
        for (int k = 0; k < seg.count; ++k) {
            int i = seg.first + k;
            float e = stats ? pbd_particle_error(c->x, pl->type[PBD_CONSTRAINT_DISTANCE].distance,
                                                 pl->csr_slots, pl->csr_offsets[i],
                                                 pl->csr_offsets[i + 1])
                            : 0.0f;
            pbd_float4 d = with_dx ? c->dx[i] : zero, r = c->body_ref[seg.body];
            /* As the device: body_reduce_serial by PBD_SUM_LANES lanes, each particle
             * accumulated into its lane, then their tree; body_reduce by work-item lanes
             * of the particles' sums, then its tree. */
            if (pl->variant == PBD_VARIANT_CPU) {
                pbd_particle_accumulate(lanes[pbd_sum_lane(k, seg.count)], c->x[i], c->v[i], d, r,
                                        e, stats, pl->inv_h);
                continue;
            }
            pbd_particle_sums(c->x[i], c->v[i], d, r, e, stats, pl->inv_h, s);
            pbd_sums_add(lanes[k % PBD_REDUCE_WG], s);
        }
        reduce_lanes(lanes, pl->variant == PBD_VARIANT_CPU ? PBD_SUM_LANES : PBD_REDUCE_WG, out);
    }
}

static void body_solve(cpu_impl *c, int mode, double *out)
{
    const pbd_plan *pl = c->plan;
    double lanes[PBD_REDUCE_WG][PBD_SUM_COUNT], s[PBD_SUM_COUNT];
    for (int b = 0; b < pl->num_bodies; ++b) {
        int first = pl->body_segments[b];
        /* As the device: the segments in order (body_solve_serial), or over the lanes of a
         * work-group and its tree (body_solve). */
        if (pl->solve_serial) {
            memset(s, 0, sizeof s);
            for (int gi = first; gi < pl->body_segments[b + 1]; ++gi)
                pbd_sums_add(s, c->segment_sums + (size_t)gi * PBD_SUM_COUNT);
        } else {
            memset(lanes, 0, sizeof lanes);
            for (int gi = first; gi < pl->body_segments[b + 1]; ++gi)
                pbd_sums_add(lanes[(gi - first) % PBD_REDUCE_WG],
                             c->segment_sums + (size_t)gi * PBD_SUM_COUNT);
            reduce_lanes(lanes, PBD_REDUCE_WG, s);
        }
        double *o = out + (size_t)b * PBD_OUT_COUNT;
        const float *g = pl->cfg.gravity;
        pbd_body_solve(s, c->body_ref[b], c->body_track + 6 * b, pl->body_flags[b], mode, g[0],
                       g[1], g[2], pl->h, o);
        if (mode != PBD_SOLVE_STATS) {
            pbd_apply_record(o, c->apply + (size_t)b * PBD_APPLY_COUNT);
            c->body_ref[b] = c->apply[(size_t)b * PBD_APPLY_COUNT];
        }
    }
}

static pbd_status cpu_momentum(void *impl, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    double t0 = now_ms();
    body_reduce(c, pl->external, 0);
    charge(c, PBD_STAGE_REDUCE, t0);
    t0 = now_ms();
    body_solve(c, PBD_SOLVE_STEP, c->out_step);
    charge(c, PBD_STAGE_SOLVE, t0);
    c->pending = 1; /* the broadcast rides on the next predict */
    return PBD_OK;
}

static pbd_status cpu_body_solve(void *impl, int mode, double *out, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    size_t bytes = (size_t)c->plan->num_bodies * PBD_OUT_COUNT * sizeof(double);
    if (mode >= 0) {
        flush(c);
        double t0 = now_ms();
        body_reduce(c, 0, mode == PBD_SOLVE_STATS);
        body_solve(c, mode, c->out_other);
        charge(c, PBD_STAGE_REDUCE, t0);
    }
    if (out)
        memcpy(out, mode >= 0 ? c->out_other : c->out_step, bytes);
    return PBD_OK;
}

static pbd_status cpu_finish(void *impl, pbd_error *err)
{
    (void)impl;
    (void)err;
    return PBD_OK;
}

static pbd_status cpu_read(void *impl, pbd_float4 *x, pbd_float4 *v, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    size_t bytes = (size_t)c->plan->num_particles * sizeof *x;
    flush(c);
    if (x)
        memcpy(x, c->x, bytes);
    if (v)
        memcpy(v, c->v, bytes);
    return PBD_OK;
}

static pbd_status cpu_read_begin(void *impl, pbd_float4 *x, pbd_float4 *v, void **token,
                                 pbd_error *err)
{
    *token = NULL;
    return cpu_read(impl, x, v, err);
}

static pbd_status cpu_read_wait(void *token, pbd_error *err)
{
    (void)token;
    (void)err;
    return PBD_OK;
}

static pbd_status cpu_read_state(void *impl, const pbd_state_arrays *a, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    size_t np = (size_t)c->plan->num_particles, nb = (size_t)c->plan->num_bodies;
    flush(c);
    memcpy(a->x, c->x, np * sizeof *a->x);
    memcpy(a->v, c->v, np * sizeof *a->v);
    if (a->xp) {
        memcpy(a->xp, c->xp, np * sizeof *a->xp);
        memcpy(a->vp, c->vp, np * sizeof *a->vp);
    }
    if (a->dx)
        memcpy(a->dx, c->dx, np * sizeof *a->dx);
    if (a->contact_slide)
        memcpy(a->contact_slide, c->contact_slide, np * sizeof *a->contact_slide);
    memcpy(a->body_ref, c->body_ref, nb * sizeof *a->body_ref);
    memcpy(a->body_track, c->body_track, 6 * nb * sizeof *a->body_track);
    for (size_t b = 0; a->body_rotation && b < (size_t)c->plan->num_body_constraints; ++b)
        a->body_rotation[b] = c->goal[b * PBD_GOAL_COUNT];
    return PBD_OK;
}

static pbd_status cpu_write_state(void *impl, const pbd_state_arrays *a, pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    size_t np = (size_t)c->plan->num_particles, nb = (size_t)c->plan->num_bodies;
    c->pending = 0;
    memcpy(c->x, a->x, np * sizeof *a->x);
    memcpy(c->v, a->v, np * sizeof *a->v);
    if (a->xp) {
        memcpy(c->xp, a->xp, np * sizeof *a->xp);
        memcpy(c->vp, a->vp, np * sizeof *a->vp);
    }
    if (a->dx)
        memcpy(c->dx, a->dx, np * sizeof *a->dx);
    if (a->contact_slide)
        memcpy(c->contact_slide, a->contact_slide, np * sizeof *a->contact_slide);
    memcpy(c->body_ref, a->body_ref, nb * sizeof *a->body_ref);
    memcpy(c->body_track, a->body_track, 6 * nb * sizeof *a->body_track);
    for (size_t b = 0; a->body_rotation && b < (size_t)c->plan->num_body_constraints; ++b)
        c->goal[b * PBD_GOAL_COUNT] = a->body_rotation[b];
    return PBD_OK;
}

static pbd_status cpu_kernel_times(void *impl, const pbd_kernel_time **out, int *count,
                                   pbd_error *err)
{
    (void)err;
    cpu_impl *c = impl;
    *out = c->times;
    *count = PBD_STAGE_COUNT;
    return PBD_OK;
}

static void cpu_reset_times(void *impl)
{
    cpu_impl *c = impl;
    for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
        c->times[k].ms = 0.0;
        c->times[k].launches = 0;
    }
}

static const char *cpu_device_name(const void *impl)
{
    (void)impl;
    return "cpu (reference, single thread)";
}

/* What the arrays hold (the sizes alloc4 and calloc were given). */
static size_t cpu_memory_bytes(const void *impl)
{
    const cpu_impl *c = impl;
    const pbd_plan *pl = c->plan;
    size_t np = (size_t)pl->num_particles, nc = (size_t)pl->type[PBD_CONSTRAINT_DISTANCE].count + 1;
    size_t nb = (size_t)pl->num_bodies, f4 = sizeof(pbd_float4);
    int bdf2 = pl->cfg.velocity_update == PBD_VELOCITY_BDF2;
    size_t b =
        3 * np * f4 + (bdf2 ? 2 * np * f4 : 0) + (pl->momentum_active || pl->track ? np * f4 : 0);
    int jacobi = pl->cfg.solver == PBD_SOLVER_JACOBI;
    b += (jacobi ? np * f4 + nc * sizeof(float) + 2 * nc * sizeof(int) : 0);
    b += np * sizeof(int) +
         nb * (f4 + 6 * sizeof(double) + 2 * PBD_OUT_COUNT * sizeof(double) + PBD_APPLY_COUNT * f4);
    b += (size_t)pl->num_segments * PBD_SUM_COUNT * sizeof(double);
    if (pl->contacts) /* the hash, the lists' friction state and the corrections */
        b += np * ((8 + PBD_CONTACT_LIST) * sizeof(int) + PBD_CONTACT_LIST * sizeof(float) +
                   4 * f4) +
             (3 * (size_t)pl->table_size + 1) * sizeof(int);
    /* The plan's arrays the loops read: constraints and multipliers, CSR, colours, segments. */
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
        b += ((size_t)pl->type[t].count + 1) * (pbd_constraint_types[t].size + sizeof(float));
    b += (np + 1 + 2 * nc) * sizeof(int) + (size_t)pl->num_segments * sizeof(pbd_segment);
    /* The body constraints: per constraint its record, goal, range and rest centre, per
     * member its particle and rest offset, per particle its pressure and cluster rows (and
     * gradient) and set, per cluster membership its constraint, per set its clusters and its
     * particles (each with its rest offset), per segment its sums. */
    size_t nbs = (size_t)pl->num_body_constraint_segments, nbc = (size_t)pl->num_body_constraints;
    size_t nmem = (size_t)pl->num_members;
    if (pl->body_active)
        b += nbc * (sizeof(pbd_body_constraint) + PBD_GOAL_COUNT * f4 + sizeof(int)) +
             nmem * (f4 + sizeof(int)) + 2 * (np + 1) * sizeof(int) + (nmem - np) * sizeof(int) +
             (np + 2 * ((size_t)pl->num_sets + 1) + (size_t)pl->set_offsets[pl->num_sets]) *
                 sizeof(int) +
             (size_t)pl->set_particle_offsets[pl->num_sets] * (sizeof(int) + f4) + nbc * f4 +
             nbs * (PBD_BSUM_COUNT * sizeof(float) + sizeof(pbd_segment));
    if (pl->pressure_active)
        b += np * f4 + 2 * (size_t)pl->pressure_offsets[np] * sizeof(int);
    return b;
}

static void cpu_destroy(void *impl)
{
    cpu_impl *c = impl;
    free(c->x);
    free(c->p);
    free(c->v);
    free(c->xp);
    free(c->vp);
    free(c->dx);
    free(c->p_next);
    free(c->gain);
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
        free(c->lambda[t]);
    free(c->particle_body);
    free(c->body_ref);
    free(c->body_track);
    free(c->segment_sums);
    free(c->out_step);
    free(c->out_other);
    free(c->apply);
    free(c->goal);
    free(c->grad);
    free(c->body_sums);
    free(c->contact_cell);
    free(c->cell_count);
    free(c->cell_start);
    free(c->cell_sorted);
    free(c->contact_num);
    free(c->contact_dp);
    free(c->contact_cdx);
    free(c->contact_p0);
    free(c->contact_cand);
    free(c->contact_other);
    free(c->contact_state);
    free(c->contact_slide);
    free(c->contact_a);
    free(c);
}

static void *alloc4(size_t n)
{
    void *q = aligned_alloc(16, (n ? n : 1) * sizeof(pbd_float4));
    if (q)
        memset(q, 0, (n ? n : 1) * sizeof(pbd_float4));
    return q;
}

pbd_status pbd_cpu_create(const pbd_model *m, pbd_plan *plan, const pbd_solver_desc *desc,
                          void **impl, pbd_error *err)
{
    /* The reference adds the sums in the order asked for, a device's (desc->sums), which
     * chose the plan's variant (pbd_solver_create). */
    (void)desc;
    if (plan->variant == PBD_VARIANT_CPU)
        plan->solve_serial = 1;
    cpu_impl *c = calloc(1, sizeof *c);
    size_t np = (size_t)plan->num_particles;
    size_t nc = (size_t)plan->type[PBD_CONSTRAINT_DISTANCE].count + 1;
    size_t nb = (size_t)plan->num_bodies;
    int lambdas = 1;
    int bdf2 = plan->cfg.velocity_update == PBD_VELOCITY_BDF2;
    if (c) {
        c->plan = plan;
        c->x = alloc4(np);
        c->p = alloc4(np);
        c->v = alloc4(np);
        c->xp = alloc4(bdf2 ? np : 1);
        c->vp = alloc4(bdf2 ? np : 1);
        c->dx = alloc4(plan->momentum_active || plan->track ? np : 1);
        int jacobi = plan->cfg.solver == PBD_SOLVER_JACOBI;
        c->p_next = alloc4(jacobi ? np : 1);
        c->gain = calloc(jacobi ? nc : 1, sizeof(float));
        for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
            lambdas &= (c->lambda[t] = calloc((size_t)plan->type[t].count * PBD_MULTIPLIERS(t) + 1,
                                              sizeof(float))) != NULL;
        c->particle_body = malloc(np * sizeof(int));
        c->body_ref = alloc4(nb);
        c->body_track = calloc(6 * nb, sizeof(double));
        c->segment_sums = calloc((size_t)plan->num_segments * PBD_SUM_COUNT, sizeof(double));
        c->out_step = calloc(nb * PBD_OUT_COUNT, sizeof(double));
        c->out_other = calloc(nb * PBD_OUT_COUNT, sizeof(double));
        c->apply = alloc4(nb * PBD_APPLY_COUNT);
        c->goal =
            alloc4(plan->body_active ? (size_t)plan->num_body_constraints * PBD_GOAL_COUNT : 1);
        c->grad = alloc4(plan->pressure_active ? np : 1);
        c->body_sums = calloc(
            plan->body_active ? (size_t)plan->num_body_constraint_segments * PBD_BSUM_COUNT : 1,
            sizeof(float));
        size_t nh = plan->contacts ? np : 0, ts = plan->contacts ? (size_t)plan->table_size : 0;
        c->contact_cell = malloc((4 * nh + 1) * sizeof(int));
        c->cell_count = malloc((ts + 1) * sizeof(int));
        c->cell_start = malloc((ts + 1) * sizeof(int));
        c->cell_sorted = malloc((nh + 1) * sizeof(int));
        c->contact_num = malloc((nh + 1) * sizeof(int));
        c->contact_dp = alloc4(nh);
        c->contact_cdx = alloc4(nh);
        c->contact_p0 = alloc4(nh);
        c->contact_cand = malloc((nh + 1) * sizeof(int));
        c->contact_other = malloc((PBD_CONTACT_LIST * nh + 1) * sizeof(int));
        c->contact_state = malloc((PBD_CONTACT_LIST * nh + 1) * sizeof(float));
        c->contact_slide = calloc(nh + 1, sizeof *c->contact_slide);
        c->contact_a = alloc4(nh);
    }
    if (!c || !c->x || !c->p || !c->v || !c->xp || !c->vp || !c->dx || !c->p_next || !c->gain ||
        !lambdas || !c->particle_body || !c->body_ref || !c->body_track || !c->segment_sums ||
        !c->out_step || !c->out_other || !c->apply || !c->goal || !c->grad || !c->body_sums ||
        !c->contact_cell || !c->cell_count || !c->cell_start || !c->cell_sorted ||
        !c->contact_num || !c->contact_dp || !c->contact_cdx || !c->contact_p0 ||
        !c->contact_cand || !c->contact_other || !c->contact_state || !c->contact_slide ||
        !c->contact_a) {
        if (c)
            cpu_destroy(c);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory for %zu particles", np);
    }
    memcpy(c->x, m->x, np * sizeof(pbd_float4));
    memcpy(c->p, m->x, np * sizeof(pbd_float4));
    memcpy(c->v, m->v, np * sizeof(pbd_float4));
    memcpy(c->particle_body, m->body, np * sizeof(int));
    memcpy(c->body_ref, plan->body_ref, nb * sizeof(pbd_float4));
    for (size_t b = 0; plan->body_active && b < (size_t)plan->num_body_constraints;
         ++b) { /* no rotation yet; the rest centre */
        c->goal[b * PBD_GOAL_COUNT] = (pbd_float4){0.0f, 0.0f, 0.0f, 1.0f};
        c->goal[b * PBD_GOAL_COUNT + PBD_GOAL_CENTRE] = plan->shape_centre[b];
    }
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        c->times[k].name = pbd_stage_names[k];
    *impl = c;
    return PBD_OK;
}

/* The reference steps on the plan's records and lists: nothing to copy. */
static pbd_status cpu_update_constraint(void *impl, int type, int position, int moved,
                                        pbd_error *err)
{
    (void)impl;
    (void)type;
    (void)position;
    (void)moved;
    (void)err;
    return PBD_OK;
}

/* The CPU reference collides with the plan's colliders themselves. */
static pbd_status cpu_update_colliders(void *impl, pbd_error *err)
{
    (void)impl;
    (void)err;
    return PBD_OK;
}

const pbd_backend_ops pbd_cpu_ops = {
    .predict = cpu_predict,
    .project = cpu_project,
    .project_jacobi = cpu_project_jacobi,
    .gather_jacobi = cpu_gather_jacobi,
    .collide = cpu_collide,
    .body_constraints = cpu_body_constraints,
    .contacts_build = cpu_contacts_build,
    .contacts = cpu_contacts,
    .contacts_moment = cpu_contacts_moment,
    .update = cpu_update,
    .momentum = cpu_momentum,
    .body_solve = cpu_body_solve,
    .finish = cpu_finish,
    .read = cpu_read,
    .read_begin = cpu_read_begin,
    .read_wait = cpu_read_wait,
    .kernel_times = cpu_kernel_times,
    .reset_times = cpu_reset_times,
    .device_name = cpu_device_name,
    .memory_bytes = cpu_memory_bytes,
    .read_state = cpu_read_state,
    .write_state = cpu_write_state,
    .update_constraint = cpu_update_constraint,
    .update_colliders = cpu_update_colliders,
    .destroy = cpu_destroy,
};
