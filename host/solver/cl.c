/* The OpenCL backend: the plan's arrays in device buffers, one kernel per stage, every launch
 * queued without waiting (the host waits only when asked for results). Kernel arguments are
 * set by parameter name (kernel_params.c), never by position. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_gl.h>

#include "cl/runtime.h"
#include "solver/kernel_params.h"
#include "solver/solver_impl.h"

/* Profiling events are harvested in batches of this many, so memory stays bounded. */
#define EVENT_BATCH 2048

/* On GPUs, a mesh with up to this many distance constraints runs its Gauss-Seidel colours
 * and collisions in one work-group, one launch an iteration (project_distance_group), rather
 * than a launch a colour and one for the collisions. A launch costs about 5 us on an H100,
 * while one work-group (one multiprocessor) takes 1.8 us for a colour of 490 constraints and
 * 4.2 us for one of 1,450: a 32 x 32 cloth (3,906 constraints) steps 3x faster, a 64 x 64 one
 * (16,002) 1.2-1.4x, a 90 x 90 one (31,862) 1.6x slower. */
#ifndef PBD_ONE_GROUP
#define PBD_ONE_GROUP 16384
#endif

/* A kernel and its parameter names. */
typedef struct kernel {
    cl_kernel k;
    const pbd_kernel_params *params;
} kernel;

typedef struct cl_impl {
    pbd_cl cl;
    const pbd_plan *plan;
    kernel kernels[PBD_STAGE_COUNT];
    cl_mem x, p, v, xp, vp, dx, csr_offsets, csr_slots, colliders;
    cl_mem records[PBD_CONSTRAINT_COUNT], lambda[PBD_CONSTRAINT_COUNT];
    cl_mem p_next, gain, csr_other; /* Jacobi */
    /* Jacobi on CPU devices (jacobi_fused16): its rows, sixteen particles a group; the
     * groups' first entries and the entries, as on the host, for cl_update_constraint */
    cl_mem ell_start, ell_other, ell_code, ell_rest, ell_compliance, ell_lambda;
    int *ell_first;
    size_t ell_entries;
    int jacobi_reset; /* CPU devices: the iteration's reset flag, for jacobi_fused16 */
    /* Jacobi: the gather writes the other position buffer, so the iterate alternates between
     * p (0) and p_next (1). The prediction goes into the one (`jacobi_start`) from which the
     * substep's last gather lands in p. */
    int iterate, jacobi_start;
    cl_mem particle_body, segments, body_segments, body_ref, body_track, body_flags;
    cl_mem block_offsets, block_runs, block_first, cut_offsets, cut_runs;
    kernel gs_blocks; /* block Gauss-Seidel on CPU devices (else no kernel) */
    kernel gs_cuts;   /* project_gs_blocks over the boundary's groups of cuts (else none) */
    /* The four-particle types in blocks on CPU devices (pbd_plan_type.blocks): a launch for
     * the boundary's groups of cuts, one for the blocks (project_<type>_blocks; else none) */
    kernel type_blocks[PBD_CONSTRAINT_COUNT], type_cuts[PBD_CONSTRAINT_COUNT];
    cl_mem type_block_offsets[PBD_CONSTRAINT_COUNT], type_cut_offsets[PBD_CONSTRAINT_COUNT];
    cl_mem type_block_first[PBD_CONSTRAINT_COUNT];
    /* The type whose blocks also collide (project_<type>_blocks), where it ends the
     * iteration; else -1 */
    int collide_type;
    /* The Neo-Hookean records in blocks are tiles (tile_records): per record, its group's
     * first record and size, for cl_update_constraint (else NULL) */
    int *tile_first, *tile_size;
    kernel gs_group;      /* a small mesh's colours in one work-group on GPUs (else no kernel) */
    size_t group_wg;      /* gs_group's work-group size */
    cl_mem color_offsets; /* the distance colours' offsets, for gs_group */
    cl_mem segment_sums, out_step, out_other, body_apply, body_done, body_material;
    cl_mem body_damping; /* where bodies damp differently: each body's (point, rigid) */
    /* body constraints (shape matching, its clusters, pressure) */
    cl_mem body_constraints, body_goal, body_constraint_sums, member_particle, member_rest;
    cl_mem particle_grad, particle_set, set_offsets, set_constraints, body_constraint_mq;
    cl_mem set_particle_offsets, set_particles, set_rest;
    kernel body_sets; /* CPU devices with clusters: the clustered particles' apply (else none) */
    cl_mem pressure_offsets, pressure_pairs, body_constraint_segments, body_constraint_ranges;
    cl_mem pressure_table; /* CPU devices: pbd_plan_pressure_table's */
    cl_int pressure_steps;
    cl_mem gl_x;     /* an OpenGL buffer the positions are copied into (pbd_solver_gl_attach) */
    size_t wg;       /* work-group size of the per-particle and per-constraint kernels */
    size_t acc_size; /* sizeof(pbd_acc) on the device: 8 with fp64 sums, else 4 */
    cl_event events[EVENT_BATCH];
    int event_kernel[EVENT_BATCH];
    int num_events;
    int pending;  /* a momentum correction is computed but not yet applied to v */
    size_t bytes; /* device memory allocated */
    int fused;    /* the update also sums for the correction (update_reduce_serial) */
    /* particle contacts: the hash's kernels (hash_*), contact_list, contact_solve,
     * contact_apply and contact_moment, in contact_names' order, and their buffers */
    kernel contact_kernels[9]; /* CONTACT_KERNELS */
    cl_mem contact_cell, cell_count, cell_fill, cell_start, cell_sorted, contact_num, contact_dp;
    cl_mem contact_rest, particle_radius, body_self, body_first, contact_cdx, contact_a;
    cl_mem contact_p0, contact_cand, contact_other, contact_state, contact_slide;
    pbd_kernel_time times[PBD_STAGE_COUNT];
} cl_impl;

static pbd_status harvest(cl_impl *c, pbd_error *err)
{
    pbd_status status = PBD_OK;
    if (c->num_events == 0)
        return PBD_OK;
    PBD_CL_CHECK(clWaitForEvents((cl_uint)c->num_events, c->events));
    for (int k = 0; k < c->num_events; ++k) {
        cl_ulong t0 = 0, t1 = 0;
        PBD_CL_CHECK(clGetEventProfilingInfo(c->events[k], CL_PROFILING_COMMAND_START, sizeof t0,
                                             &t0, NULL));
        PBD_CL_CHECK(
            clGetEventProfilingInfo(c->events[k], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
        c->times[c->event_kernel[k]].ms += (double)(t1 - t0) * 1e-6;
        c->times[c->event_kernel[k]].launches++;
    }
cleanup:
    for (int k = 0; k < c->num_events; ++k)
        clReleaseEvent(c->events[k]);
    c->num_events = 0;
    return status;
}

/* Enqueues `kn` over `items` work-items (rounded up to the work-group size), timed as
 * stage `id`. */
static pbd_status launch_kernel(cl_impl *c, const kernel *kn, int id, size_t items, size_t local,
                                pbd_error *err)
{
    pbd_status status = PBD_OK;
    if (items == 0)
        return PBD_OK;
    size_t global = (items + local - 1) / local * local;
    cl_event *ev = NULL;
    if (c->cl.profiling) {
        if (c->num_events == EVENT_BATCH && (status = harvest(c, err)) != PBD_OK)
            return status;
        ev = &c->events[c->num_events];
    }
    PBD_CL_CHECK(clEnqueueNDRangeKernel(c->cl.queue, kn->k, 1, NULL, &global, &local, 0, NULL, ev));
    if (ev)
        c->event_kernel[c->num_events++] = id;
cleanup:
    return status;
}

/* Enqueues stage `id`'s kernel. */
static pbd_status launch(cl_impl *c, int id, size_t items, size_t local, pbd_error *err)
{
    return launch_kernel(c, &c->kernels[id], id, items, local, err);
}

/* Sets parameter `param` of `k` (by name) to the `size` bytes at `value`. */
static pbd_status set_arg(const kernel *k, const char *param, size_t size, const void *value,
                          pbd_error *err)
{
    pbd_status status = PBD_OK;
    int index = pbd_kernel_param_index(k->params, param);
    if (index < 0)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "kernel %s has no parameter %s",
                             k->params->kernel, param);
    PBD_CL_CHECK(clSetKernelArg(k->k, (cl_uint)index, size, value));
cleanup:
    return status;
}

#define ARG(kernel, name, value)                                                                   \
    do {                                                                                           \
        if ((status = set_arg((kernel), (name), sizeof(value), &(value), err)) != PBD_OK)          \
            goto cleanup;                                                                          \
    } while (0)

/* Work-group size for `items` independent work-items on a CPU device: about four groups per
 * compute unit, since each group costs a task (about 1.5 us on PoCL) but all units must get
 * work, and groups of equal size (rounded up), so no unit is left with an extra one (100
 * items on 2 units: 8 groups of 13, not 9 of 12). */
static size_t serial_local(const cl_impl *c, size_t items)
{
    size_t groups = 4 * (size_t)c->cl.info.compute_units;
    if (groups > items)
        groups = items;
    size_t per = (items + groups - 1) / groups;
    return per > 64 ? 64 : per;
}

/* The CPU devices' kernels: float16 lanes, blocks, serial reductions. */
static int cpu_variant(const cl_impl *c)
{
    return c->plan->variant == PBD_VARIANT_CPU;
}

/* Jacobi's position buffer k: p (0) or p_next (1). */
static cl_mem position_buffer(const cl_impl *c, int k)
{
    return k ? c->p_next : c->p;
}

static pbd_status cl_predict(void *impl, int bdf2, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_int b = bdf2, apply = c->pending;
    const kernel *k = &c->kernels[PBD_STAGE_PREDICT];
    ARG(k, "apply", apply);
    ARG(k, "bdf2", b);
    size_t n = (size_t)c->plan->num_particles;
    if (cpu_variant(c)) { /* CPU devices: predict_runs, a run of particles a work-item */
        size_t runs = (n + PBD_PARTICLE_RUN - 1) / PBD_PARTICLE_RUN;
        status = launch(c, PBD_STAGE_PREDICT, runs, serial_local(c, runs), err);
    } else
        status = launch(c, PBD_STAGE_PREDICT, n, c->wg, err);
    if (status == PBD_OK)
        c->pending = 0;
    c->iterate = c->jacobi_start;
cleanup:
    return status;
}

/* The contact kernels, one variant for both kinds of device. */
enum {
    HASH_CLEAR,
    HASH_COUNT,
    HASH_SCAN,
    HASH_SCATTER,
    HASH_SORT,
    CONTACT_LIST,
    CONTACT_SOLVE,
    CONTACT_APPLY,
    CONTACT_MOMENT,
    CONTACT_KERNELS
};
static const char *const contact_names[CONTACT_KERNELS] = {
    "hash_clear",   "hash_count",    "hash_scan",     "hash_scatter",  "hash_sort",
    "contact_list", "contact_solve", "contact_apply", "contact_moment"};

/* The hash of the predictions (a counting sort made deterministic by sorting each entry)
 * and each particle's candidates. */
static pbd_status cl_contacts_build(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    kernel *k = c->contact_kernels;
    cl_mem p = position_buffer(c, c->iterate);
    size_t np = (size_t)c->plan->num_particles, ts = (size_t)c->plan->table_size;
    ARG(&k[HASH_COUNT], "particle_p", p);
    const size_t items[CONTACT_LIST + 1] = {ts, np, PBD_REDUCE_WG, np, ts, np};
    for (int j = HASH_CLEAR; j <= CONTACT_LIST && status == PBD_OK; ++j)
        status = launch_kernel(c, &k[j], PBD_STAGE_HASH, items[j],
                               j == HASH_SCAN ? PBD_REDUCE_WG : c->wg, err);
cleanup:
    return status;
}

/* One Jacobi step of the contacts: every particle's correction, then all of them applied. */
static pbd_status cl_contacts(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    kernel *k = c->contact_kernels;
    cl_mem p = position_buffer(c, c->iterate);
    size_t np = (size_t)c->plan->num_particles;
    ARG(&k[CONTACT_SOLVE], "particle_p", p);
    ARG(&k[CONTACT_APPLY], "particle_p", p);
    status = launch_kernel(c, &k[CONTACT_SOLVE], PBD_STAGE_CONTACT, np, c->wg, err);
    if (status == PBD_OK)
        status = launch_kernel(c, &k[CONTACT_APPLY], PBD_STAGE_CONTACT, np, c->wg, err);
cleanup:
    return status;
}

static pbd_status cl_contacts_moment(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    kernel *k = &c->contact_kernels[CONTACT_MOMENT];
    cl_mem p = position_buffer(c, c->iterate);
    ARG(k, "particle_p", p);
    status = launch_kernel(c, k, PBD_STAGE_CONTACT, (size_t)c->plan->num_bodies,
                           serial_local(c, (size_t)c->plan->num_bodies), err);
cleanup:
    return status;
}

/* Applies a pending momentum correction before anything reads the velocities. */
static pbd_status flush(cl_impl *c, pbd_error *err)
{
    pbd_status status = PBD_OK;
    if (c->pending &&
        (status = launch(c, PBD_STAGE_APPLY, (size_t)c->plan->num_particles, c->wg, err)) == PBD_OK)
        c->pending = 0;
    return status;
}

/* The types CPU devices project sixteen a work-item (kernels/cpu/project4.cl), by kernel. */
static const char *const project16[PBD_CONSTRAINT_COUNT] = {
    [PBD_CONSTRAINT_TETHER] = "project_tether16",
    [PBD_CONSTRAINT_VOLUME] = "project_volume16",
    [PBD_CONSTRAINT_DIHEDRAL] = "project_dihedral16",
    [PBD_CONSTRAINT_ISOMETRIC] = "project_isometric16",
    [PBD_CONSTRAINT_NEO_HOOKEAN] = "project_neo_hookean16",
};

/* The four-particle types' kernels for the block order on CPU devices (project4.cl). */
static const char *const project_blocks[PBD_CONSTRAINT_COUNT] = {
    [PBD_CONSTRAINT_VOLUME] = "project_volume_blocks",
    [PBD_CONSTRAINT_DIHEDRAL] = "project_dihedral_blocks",
    [PBD_CONSTRAINT_ISOMETRIC] = "project_isometric_blocks",
    [PBD_CONSTRAINT_NEO_HOOKEAN] = "project_neo_hookean_blocks",
};

/* Colours [first, last) of constraint `type`: project_<type> on the current iterate (Jacobi
 * alternates it; Gauss-Seidel keeps p), a constraint a work-item, or with `serial` one
 * work-item taking them all in order (an overflow set; the CPU variant's small colours). */
static pbd_status cl_project_colors(cl_impl *c, int type, int first, int last, int serial,
                                    int reset, pbd_error *err)
{
    const pbd_plan_type *pt = &c->plan->type[type];
    const kernel *k = &c->kernels[PBD_STAGE_PROJECT + type];
    pbd_status status = PBD_OK;
    cl_int offset = pt->color_offsets[first];
    cl_int count = pt->color_offsets[last] - offset;
    cl_int r = reset, one = serial;
    cl_mem p = position_buffer(c, c->iterate);
    ARG(k, "particle_p", p);
    ARG(k, "offset", offset);
    ARG(k, "count", count);
    ARG(k, "reset_lambda", r);
    ARG(k, "serial", one);
    size_t items = serial ? 1 : (size_t)count;
    /* CPU devices launch distance colours only for a mesh of one block, with no boundary
     * colours: colour k is the block's whole part, sorted into runs (pbd_blocks.block_runs);
     * project_distance_gs16 takes sixteen constraints a work-item (the overflow set: one
     * work-item, in order). */
    if (cpu_variant(c) && type == PBD_CONSTRAINT_DISTANCE && !serial) {
        const int *runs = pt->blocks.block_runs + 2 * first;
        ARG(k, "pairs", runs[0]);
        ARG(k, "rest", runs[1]);
        items = ((size_t)count + 15) / 16;
    } else if (cpu_variant(c) && project16[type] && !serial) {
        items = ((size_t)count + 15) / 16; /* project_<type>16: sixteen a work-item */
    }
    status = launch(c, PBD_STAGE_PROJECT + type, items,
                    cpu_variant(c) ? serial_local(c, items) : c->wg, err);
cleanup:
    return status;
}

/* One Gauss-Seidel pass over constraint `type` in the plan's order. The distance constraints
 * on CPU devices with blocks: the boundary colours in one launch, a work-item a group of cuts
 * (pbd_blocks.num_cuts), then every block's colours and collisions in one launch, a work-item a
 * block (collide_fused); on GPUs, a small mesh's colours and collisions in one work-group
 * (collide_fused). The four-particle types in blocks on CPU devices likewise
 * (project_<type>_blocks), colliding only where the type ends the iteration (collide_type). A
 * type of small colours on the CPU variant
 * (pbd_plan_type.one_launch): one launch, one work-item taking every colour in order.
 * Otherwise a launch a colour. */
static pbd_status cl_project(void *impl, int type, int reset, pbd_error *err)
{
    cl_impl *c = impl;
    const pbd_plan *pl = c->plan;
    pbd_status status = PBD_OK;
    cl_int r = reset;
    if (type == PBD_CONSTRAINT_DISTANCE && c->gs_group.k) {
        ARG(&c->gs_group, "reset_lambda", r);
        return launch_kernel(c, &c->gs_group, PBD_STAGE_PROJECT + type, c->group_wg, c->group_wg,
                             err);
    }
    if (type == PBD_CONSTRAINT_DISTANCE && c->gs_blocks.k) {
        if (c->gs_cuts.k) {
            ARG(&c->gs_cuts, "reset_lambda", r);
            status = launch_kernel(c, &c->gs_cuts, PBD_STAGE_PROJECT + type,
                                   (size_t)pl->type[type].blocks.num_cuts, 1, err);
            if (status != PBD_OK)
                return status;
        }
        ARG(&c->gs_blocks, "reset_lambda", r);
        return launch_kernel(c, &c->gs_blocks, PBD_STAGE_PROJECT + type,
                             (size_t)pl->type[type].blocks.num_blocks, 1, err);
    }
    if (c->type_blocks[type].k) { /* the boundary's groups of cuts, then the blocks */
        const pbd_blocks *bl = &pl->type[type].blocks;
        kernel *ks[2] = {&c->type_cuts[type], &c->type_blocks[type]};
        size_t items[2] = {(size_t)bl->num_cuts, (size_t)bl->num_blocks};
        for (int j = 0; j < 2 && status == PBD_OK; ++j) {
            if (!ks[j]->k)
                continue;
            ARG(ks[j], "reset_lambda", r);
            status = launch_kernel(c, ks[j], PBD_STAGE_PROJECT + type, items[j], 1, err);
        }
        return status;
    }
    const pbd_plan_type *pt = &pl->type[type];
    if (pt->one_launch) /* every colour in order on one work-item: the same sequence */
        return cl_project_colors(c, type, 0, pt->num_colors, 1, reset, err);
    for (int k = 0; k < pt->num_colors && status == PBD_OK; ++k)
        status = cl_project_colors(c, type, k, k + 1, pt->overflow && k == pt->num_colors - 1,
                                   reset, err);
cleanup:
    return status;
}

static pbd_status cl_collide(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    return launch(c, PBD_STAGE_COLLIDE, (size_t)c->plan->num_particles, c->wg, err);
}

/* The body constraints on the current iterate: a work-item a segment, a body, a particle. */
static pbd_status cl_body_constraints(void *impl, int reset, pbd_error *err)
{
    cl_impl *c = impl;
    const pbd_plan *pl = c->plan;
    pbd_status status = PBD_OK;
    cl_int r = reset;
    cl_mem p = position_buffer(c, c->iterate);
    ARG(&c->kernels[PBD_STAGE_BODY_REDUCE], "particle_p", p);
    ARG(&c->kernels[PBD_STAGE_BODY_SOLVE], "particle_p", p);
    ARG(&c->kernels[PBD_STAGE_BODY_SOLVE], "reset_lambda", r);
    ARG(&c->kernels[PBD_STAGE_BODY_APPLY], "particle_p", p);
    if (c->body_sets.k)
        ARG(&c->body_sets, "particle_p", p);
    size_t nseg = (size_t)pl->num_body_constraint_segments, nb = (size_t)pl->num_body_constraints;
    size_t np = (size_t)pl->num_particles;
    int cpu = cpu_variant(c);
    /* GPUs: a work-group of PBD_BODY_SEGMENT a segment and a constraint */
    const size_t g = PBD_BODY_SEGMENT;
    status = launch(c, PBD_STAGE_BODY_REDUCE, cpu ? nseg : nseg * g,
                    cpu ? serial_local(c, nseg) : g, err);
    size_t nb8 = (nb + 7) / 8; /* CPU devices: eight constraints a work-item */
    if (status == PBD_OK)
        status = launch(c, PBD_STAGE_BODY_SOLVE, cpu ? nb8 : nb * g, cpu ? serial_local(c, nb8) : g,
                        err);
    /* CPU devices: the clustered particles, PBD_SET_RUN sets a work-item, then the others, a
     * run each */
    size_t nsr = ((size_t)pl->num_sets + PBD_SET_RUN - 1) / PBD_SET_RUN;
    size_t runs = (np + PBD_PARTICLE_RUN - 1) / PBD_PARTICLE_RUN;
    if (status == PBD_OK && c->body_sets.k)
        status =
            launch_kernel(c, &c->body_sets, PBD_STAGE_BODY_APPLY, nsr, serial_local(c, nsr), err);
    if (status == PBD_OK && (!cpu || pl->body_unclustered))
        status = launch(c, PBD_STAGE_BODY_APPLY, cpu ? runs : np,
                        cpu ? serial_local(c, runs) : c->wg, err);
cleanup:
    return status;
}

static pbd_status cl_project_jacobi(void *impl, int reset, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_int r = reset;
    if (cpu_variant(c)) { /* CPU devices: jacobi_fused16 projects as it gathers */
        c->jacobi_reset = reset;
        return PBD_OK;
    }
    const kernel *k = &c->kernels[PBD_STAGE_PROJECT_JACOBI];
    cl_mem p = position_buffer(c, c->iterate);
    ARG(k, "particle_p", p);
    ARG(k, "reset_lambda", r);
    status = launch(c, PBD_STAGE_PROJECT_JACOBI,
                    (size_t)c->plan->type[PBD_CONSTRAINT_DISTANCE].count, c->wg, err);
cleanup:
    return status;
}

static pbd_status cl_gather_jacobi(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    const kernel *k = &c->kernels[PBD_STAGE_GATHER];
    cl_mem from = position_buffer(c, c->iterate), to = position_buffer(c, !c->iterate);
    ARG(k, "particle_p", from);
    ARG(k, "particle_out", to);
    if (cpu_variant(c)) {
        cl_int r = c->jacobi_reset;
        ARG(k, "reset_lambda", r);
    }
    size_t np = (size_t)c->plan->num_particles, items = cpu_variant(c) ? (np + 15) / 16 : np;
    status =
        launch(c, PBD_STAGE_GATHER, items, cpu_variant(c) ? serial_local(c, items) : c->wg, err);
    c->iterate ^= 1;
cleanup:
    return status;
}

static pbd_status cl_update(void *impl, int bdf2, int keep_prev, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_int b = bdf2, keep = keep_prev;
    const kernel *k = &c->kernels[PBD_STAGE_UPDATE];
    ARG(k, "bdf2", b);
    ARG(k, "keep_prev", keep);
    size_t nseg = (size_t)c->plan->num_segments;
    size_t n = (size_t)c->plan->num_particles, runs = (n + PBD_PARTICLE_RUN - 1) / PBD_PARTICLE_RUN;
    if (c->fused)
        status = launch(c, PBD_STAGE_UPDATE, nseg, serial_local(c, nseg), err);
    else if (cpu_variant(c) && !c->plan->bounce) /* CPU devices: update_runs, a run a work-item */
        status = launch(c, PBD_STAGE_UPDATE, runs, serial_local(c, runs), err);
    else
        status = launch(c, PBD_STAGE_UPDATE, n, c->wg, err);
cleanup:
    return status;
}

/* Queues body_reduce and body_solve in `mode`, writing the records to `out`. */
static pbd_status reduce_and_solve(cl_impl *c, int mode, cl_mem out, pbd_error *err)
{
    const pbd_plan *pl = c->plan;
    pbd_status status = PBD_OK;
    cl_int with_dx = mode == PBD_SOLVE_STEP && pl->external;
    cl_int stats = mode == PBD_SOLVE_STATS, m = mode;
    size_t wg = PBD_REDUCE_WG;
    ARG(&c->kernels[PBD_STAGE_REDUCE], "with_dx", with_dx);
    ARG(&c->kernels[PBD_STAGE_REDUCE], "stats", stats);
    ARG(&c->kernels[PBD_STAGE_SOLVE], "mode", m);
    ARG(&c->kernels[PBD_STAGE_SOLVE], "body_out", out);
    size_t nseg = (size_t)pl->num_segments, nb = (size_t)pl->num_bodies;
    if (pl->variant == PBD_VARIANT_CPU)
        status = launch(c, PBD_STAGE_REDUCE, nseg, serial_local(c, nseg), err);
    else
        status = launch(c, PBD_STAGE_REDUCE, nseg * wg, wg, err);
    if (status == PBD_OK && pl->solve_serial)
        status = launch(c, PBD_STAGE_SOLVE, nb,
                        pl->variant == PBD_VARIANT_CPU ? serial_local(c, nb) : wg, err);
    else if (status == PBD_OK)
        status = launch(c, PBD_STAGE_SOLVE, (size_t)pl->num_bodies * wg, wg, err);
cleanup:
    return status;
}

/* Reduce and solve (unless the fused update did both); the broadcast waits for the next
 * predict (or a read). */
static pbd_status cl_momentum(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = c->fused ? PBD_OK : reduce_and_solve(c, PBD_SOLVE_STEP, c->out_step, err);
    if (status == PBD_OK)
        c->pending = 1;
    return status;
}

static pbd_status cl_body_solve(void *impl, int mode, double *out, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_mem src = mode >= 0 ? c->out_other : c->out_step;
    void *buf = NULL;
    if (mode >= 0 && ((status = flush(c, err)) != PBD_OK ||
                      (status = reduce_and_solve(c, mode, c->out_other, err)) != PBD_OK))
        return status;
    if (!out)
        return PBD_OK;
    size_t n = (size_t)c->plan->num_bodies * PBD_OUT_COUNT;
    buf = malloc(n * c->acc_size);
    if (!buf)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory reading per-body results");
    PBD_CL_CHECK(
        clEnqueueReadBuffer(c->cl.queue, src, CL_TRUE, 0, n * c->acc_size, buf, 0, NULL, NULL));
    for (size_t k = 0; k < n; ++k)
        out[k] = c->acc_size == sizeof(double) ? ((const double *)buf)[k]
                                               : (double)((const float *)buf)[k];
cleanup:
    free(buf);
    return status;
}

static pbd_status cl_finish(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    PBD_CL_CHECK(clFinish(c->cl.queue));
cleanup:
    return status;
}

static pbd_status cl_read(void *impl, pbd_float4 *x, pbd_float4 *v, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    size_t bytes = (size_t)c->plan->num_particles * sizeof(pbd_float4);
    if ((status = flush(c, err)) != PBD_OK)
        return status;
    if (x)
        PBD_CL_CHECK(clEnqueueReadBuffer(c->cl.queue, c->x, CL_TRUE, 0, bytes, x, 0, NULL, NULL));
    if (v)
        PBD_CL_CHECK(clEnqueueReadBuffer(c->cl.queue, c->v, CL_TRUE, 0, bytes, v, 0, NULL, NULL));
cleanup:
    return status;
}

/* Both copies are queued without waiting; the second one's event stands for both (the
 * queue is in order). */
static pbd_status cl_read_begin(void *impl, pbd_float4 *x, pbd_float4 *v, void **token,
                                pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    size_t bytes = (size_t)c->plan->num_particles * sizeof(pbd_float4);
    cl_event done = NULL;
    *token = NULL;
    if ((status = flush(c, err)) != PBD_OK)
        return status;
    if (x)
        PBD_CL_CHECK(clEnqueueReadBuffer(c->cl.queue, c->x, CL_FALSE, 0, bytes, x, 0, NULL,
                                         v ? NULL : &done));
    if (v)
        PBD_CL_CHECK(clEnqueueReadBuffer(c->cl.queue, c->v, CL_FALSE, 0, bytes, v, 0, NULL, &done));
    PBD_CL_CHECK(clFlush(c->cl.queue));
    *token = done;
    done = NULL;
cleanup:
    if (status != PBD_OK) {
        /* Nothing may still write into x or v once this returns. */
        clFinish(c->cl.queue);
        if (done)
            clReleaseEvent(done);
    }
    return status;
}

static pbd_status cl_read_wait(void *token, pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_event done = token;
    if (!done)
        return PBD_OK;
    PBD_CL_CHECK(clWaitForEvents(1, &done));
cleanup:
    clReleaseEvent(done);
    return status;
}

/* The checkpoint's arrays: body_track is pbd_acc on the device (double, or float without
 * fp64 sums) and double on the host. */
static pbd_status cl_read_state(void *impl, const pbd_state_arrays *a, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    size_t np = (size_t)c->plan->num_particles, nb = (size_t)c->plan->num_bodies;
    size_t f4 = sizeof(pbd_float4);
    float *track = NULL;
    if ((status = flush(c, err)) != PBD_OK)
        return status;
    cl_command_queue q = c->cl.queue;
    PBD_CL_CHECK(clEnqueueReadBuffer(q, c->x, CL_FALSE, 0, np * f4, a->x, 0, NULL, NULL));
    PBD_CL_CHECK(clEnqueueReadBuffer(q, c->v, CL_FALSE, 0, np * f4, a->v, 0, NULL, NULL));
    if (a->xp) {
        PBD_CL_CHECK(clEnqueueReadBuffer(q, c->xp, CL_FALSE, 0, np * f4, a->xp, 0, NULL, NULL));
        PBD_CL_CHECK(clEnqueueReadBuffer(q, c->vp, CL_FALSE, 0, np * f4, a->vp, 0, NULL, NULL));
    }
    if (a->dx)
        PBD_CL_CHECK(clEnqueueReadBuffer(q, c->dx, CL_FALSE, 0, np * f4, a->dx, 0, NULL, NULL));
    if (a->contact_slide)
        PBD_CL_CHECK(clEnqueueReadBuffer(q, c->contact_slide, CL_FALSE, 0, np * sizeof(cl_int),
                                         a->contact_slide, 0, NULL, NULL));
    PBD_CL_CHECK(
        clEnqueueReadBuffer(q, c->body_ref, CL_FALSE, 0, nb * f4, a->body_ref, 0, NULL, NULL));
    if (c->acc_size == sizeof(double)) {
        PBD_CL_CHECK(clEnqueueReadBuffer(q, c->body_track, CL_TRUE, 0, 6 * nb * sizeof(double),
                                         a->body_track, 0, NULL, NULL));
    } else {
        track = malloc(6 * nb * sizeof *track);
        if (!track) {
            clFinish(q);
            return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory reading the state");
        }
        PBD_CL_CHECK(clEnqueueReadBuffer(q, c->body_track, CL_TRUE, 0, 6 * nb * sizeof *track,
                                         track, 0, NULL, NULL));
        for (size_t k = 0; k < 6 * nb; ++k)
            a->body_track[k] = track[k];
    }
    if (a->body_rotation) { /* each body's first float4 of PBD_GOAL_COUNT */
        size_t origin[3] = {0, 0, 0}, region[3] = {f4, (size_t)c->plan->num_body_constraints, 1};
        PBD_CL_CHECK(clEnqueueReadBufferRect(q, c->body_goal, CL_TRUE, origin, origin, region,
                                             PBD_GOAL_COUNT * f4, 0, f4, 0, a->body_rotation, 0,
                                             NULL, NULL));
    }
cleanup:
    if (status != PBD_OK)
        clFinish(q);
    free(track);
    return status;
}

static pbd_status cl_write_state(void *impl, const pbd_state_arrays *a, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    size_t np = (size_t)c->plan->num_particles, nb = (size_t)c->plan->num_bodies;
    size_t f4 = sizeof(pbd_float4);
    cl_command_queue q = c->cl.queue;
    float *track = NULL;
    const void *track_src = a->body_track;
    if (c->acc_size != sizeof(double)) {
        track = malloc(6 * nb * sizeof *track);
        if (!track)
            return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory writing the state");
        for (size_t k = 0; k < 6 * nb; ++k)
            track[k] = (float)a->body_track[k];
        track_src = track;
    }
    c->pending = 0;
    PBD_CL_CHECK(clEnqueueWriteBuffer(q, c->x, CL_FALSE, 0, np * f4, a->x, 0, NULL, NULL));
    PBD_CL_CHECK(clEnqueueWriteBuffer(q, c->v, CL_FALSE, 0, np * f4, a->v, 0, NULL, NULL));
    if (a->xp) {
        PBD_CL_CHECK(clEnqueueWriteBuffer(q, c->xp, CL_FALSE, 0, np * f4, a->xp, 0, NULL, NULL));
        PBD_CL_CHECK(clEnqueueWriteBuffer(q, c->vp, CL_FALSE, 0, np * f4, a->vp, 0, NULL, NULL));
    }
    if (a->dx)
        PBD_CL_CHECK(clEnqueueWriteBuffer(q, c->dx, CL_FALSE, 0, np * f4, a->dx, 0, NULL, NULL));
    if (a->contact_slide)
        PBD_CL_CHECK(clEnqueueWriteBuffer(q, c->contact_slide, CL_FALSE, 0, np * sizeof(cl_int),
                                          a->contact_slide, 0, NULL, NULL));
    PBD_CL_CHECK(
        clEnqueueWriteBuffer(q, c->body_ref, CL_FALSE, 0, nb * f4, a->body_ref, 0, NULL, NULL));
    PBD_CL_CHECK(clEnqueueWriteBuffer(q, c->body_track, CL_TRUE, 0, 6 * nb * c->acc_size, track_src,
                                      0, NULL, NULL));
    if (a->body_rotation) { /* each body's first float4 of PBD_GOAL_COUNT */
        size_t origin[3] = {0, 0, 0}, region[3] = {f4, (size_t)c->plan->num_body_constraints, 1};
        PBD_CL_CHECK(clEnqueueWriteBufferRect(q, c->body_goal, CL_TRUE, origin, origin, region,
                                              PBD_GOAL_COUNT * f4, 0, f4, 0, a->body_rotation, 0,
                                              NULL, NULL));
    }
cleanup:
    if (status != PBD_OK)
        clFinish(q);
    free(track);
    return status;
}

static pbd_status cl_kernel_times(void *impl, const pbd_kernel_time **out, int *count,
                                  pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = harvest(c, err);
    *out = c->times;
    *count = PBD_STAGE_COUNT;
    return status;
}

static void cl_reset_times(void *impl)
{
    cl_impl *c = impl;
    harvest(c, NULL);
    for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
        c->times[k].ms = 0.0;
        c->times[k].launches = 0;
    }
}

static const char *cl_device_name(const void *impl)
{
    const cl_impl *c = impl;
    return c->cl.info.name;
}

static int cl_gl_shared(const void *impl, const char **why)
{
    const cl_impl *c = impl;
    if (why)
        *why = c->cl.gl_why;
    return c->cl.gl_shared;
}

static pbd_status cl_gl_attach(void *impl, unsigned buffer, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_int rc = CL_SUCCESS;
    size_t bytes = (size_t)c->plan->num_particles * sizeof(pbd_float4), size = 0;
    if (!c->cl.gl_shared)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "OpenGL buffer %u: the solver shares nothing with OpenGL (%s)", buffer,
                             c->cl.gl_why);
    cl_mem m = clCreateFromGLBuffer(c->cl.context, CL_MEM_WRITE_ONLY, buffer, &rc);
    PBD_CL_CHECK(rc);
    rc = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (rc == CL_SUCCESS && size < bytes) {
        clReleaseMemObject(m);
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "OpenGL buffer %u: found %zu bytes, expected at least %zu (%d "
                             "particles)",
                             buffer, size, bytes, c->plan->num_particles);
    }
    if (rc != CL_SUCCESS)
        clReleaseMemObject(m);
    PBD_CL_CHECK(rc);
    if (c->gl_x)
        clReleaseMemObject(c->gl_x);
    c->gl_x = m;
cleanup:
    return status;
}

static pbd_status cl_gl_positions(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    size_t bytes = (size_t)c->plan->num_particles * sizeof(pbd_float4);
    if (!c->gl_x)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "no OpenGL buffer is attached to the solver");
    if ((status = flush(c, err)) != PBD_OK)
        return status;
    PBD_CL_CHECK(clEnqueueAcquireGLObjects(c->cl.queue, 1, &c->gl_x, 0, NULL, NULL));
    PBD_CL_CHECK(clEnqueueCopyBuffer(c->cl.queue, c->x, c->gl_x, 0, 0, bytes, 0, NULL, NULL));
    PBD_CL_CHECK(clEnqueueReleaseGLObjects(c->cl.queue, 1, &c->gl_x, 0, NULL, NULL));
    PBD_CL_CHECK(clFinish(c->cl.queue));
cleanup:
    return status;
}

static size_t cl_memory_bytes(const void *impl)
{
    return ((const cl_impl *)impl)->bytes;
}

/* A group of n records of 16 words from `in` to `out`: sixteen as a tile, field j of record i
 * at word 16 j + i (project4.cl's pbd_neo_hookean_project16, `tiled`); fewer as they are. */
_Static_assert(sizeof(pbd_neo_hookean) == 16 * sizeof(uint32_t),
               "a Neo-Hookean record is sixteen words (tile_group, pbd_neo_hookean_project16)");

static void tile_group(const uint32_t *in, int n, uint32_t *out)
{
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < 16; ++j)
            out[n == 16 ? 16 * j + i : 16 * i + j] = in[16 * i + j];
}

/* The blocks' Neo-Hookean records (malloc'd) as project_neo_hookean_blocks reads them: each
 * part of a colour (cut_offsets, then block_offsets) in groups of sixteen from its start and
 * a last group of the rest, each whole group a tile (tile_group); each record's group's first
 * record and size to c->tile_first and c->tile_size; fails if out of memory or if the
 * parts do not cover every record once (the plan's blocks would be wrong). */
static pbd_status tile_records(cl_impl *c, const pbd_plan_type *pt, uint32_t **tiles,
                               pbd_error *err)
{
    const pbd_blocks *bl = &pt->blocks;
    size_t n = (size_t)pt->count;
    uint32_t *out = malloc(n * sizeof(pbd_neo_hookean) + 1);
    *tiles = NULL;
    c->tile_first = malloc((n + 1) * sizeof *c->tile_first);
    c->tile_size = malloc((n + 1) * sizeof *c->tile_size);
    if (!out || !c->tile_first || !c->tile_size) {
        free(out);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory tiling %zu Neo-Hookean records",
                             n);
    }
    for (size_t i = 0; i < n; ++i)
        c->tile_first[i] = -1;
    const uint32_t *in = (const uint32_t *)pt->records;
    const int *offsets[2] = {bl->cut_offsets, bl->block_offsets};
    int colors[2] = {bl->boundary_colors, bl->block_colors};
    int parts[2] = {bl->num_cuts, bl->num_blocks};
    int covered = 0;
    for (int s = 0; s < 2; ++s)
        for (int k = 0; k < colors[s]; ++k)
            for (int b = 0; b < parts[s]; ++b) {
                const int *o = offsets[s] + (size_t)k * ((size_t)parts[s] + 1);
                for (int r = o[b]; r < o[b + 1]; r += 16) {
                    int g = o[b + 1] - r < 16 ? o[b + 1] - r : 16;
                    tile_group(in + 16 * (size_t)r, g, out + 16 * (size_t)r);
                    for (int i = r; i < r + g; ++i) {
                        covered += c->tile_first[i] < 0;
                        c->tile_first[i] = r;
                        c->tile_size[i] = g;
                    }
                }
            }
    if ((size_t)covered != n) {
        free(out);
        return pbd_error_set(err, PBD_ERR_MODEL,
                             "the plan's blocks cover %d of %zu Neo-Hookean records, expected "
                             "all",
                             covered, n);
    }
    *tiles = out;
    return PBD_OK;
}

/* Writes the plan's record `position` of `type` to the device (a blocking write: the plan's
 * copy may change again before a queued one would have run); a tiled record, its group's
 * tile. */
static pbd_status cl_update_colliders(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    size_t bytes = (size_t)c->plan->num_colliders * sizeof(pbd_collider);
    if (bytes > 0) /* blocking: the next frame's pose overwrites the host copy */
        PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->colliders, CL_TRUE, 0, bytes,
                                          c->plan->colliders, 0, NULL, NULL));
cleanup:
    return status;
}

static void cl_destroy(void *impl)
{
    cl_impl *c = impl;
    if (c->cl.queue)
        clFinish(c->cl.queue);
    for (int k = 0; k < c->num_events; ++k)
        clReleaseEvent(c->events[k]);
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        if (c->kernels[k].k)
            clReleaseKernel(c->kernels[k].k);
    if (c->gs_blocks.k)
        clReleaseKernel(c->gs_blocks.k);
    if (c->gs_cuts.k)
        clReleaseKernel(c->gs_cuts.k);
    if (c->gs_group.k)
        clReleaseKernel(c->gs_group.k);
    for (int k = 0; k < CONTACT_KERNELS; ++k)
        if (c->contact_kernels[k].k)
            clReleaseKernel(c->contact_kernels[k].k);
    cl_mem *mems[] = {&c->contact_cell,
                      &c->cell_count,
                      &c->cell_fill,
                      &c->cell_start,
                      &c->cell_sorted,
                      &c->contact_num,
                      &c->contact_dp,
                      &c->contact_rest,
                      &c->particle_radius,
                      &c->body_self,
                      &c->body_first,
                      &c->contact_cdx,
                      &c->contact_p0,
                      &c->contact_cand,
                      &c->contact_other,
                      &c->contact_state,
                      &c->contact_slide,
                      &c->contact_a,
                      &c->x,
                      &c->p,
                      &c->v,
                      &c->xp,
                      &c->vp,
                      &c->dx,
                      &c->p_next,
                      &c->gain,
                      &c->csr_offsets,
                      &c->csr_slots,
                      &c->csr_other,
                      &c->ell_start,
                      &c->ell_other,
                      &c->ell_code,
                      &c->ell_rest,
                      &c->ell_compliance,
                      &c->ell_lambda,
                      &c->colliders,
                      &c->particle_body,
                      &c->segments,
                      &c->body_segments,
                      &c->body_ref,
                      &c->body_track,
                      &c->body_flags,
                      &c->body_material,
                      &c->body_damping,
                      &c->segment_sums,
                      &c->out_step,
                      &c->out_other,
                      &c->body_apply,
                      &c->body_done,
                      &c->body_constraints,
                      &c->body_goal,
                      &c->body_constraint_sums,
                      &c->member_particle,
                      &c->member_rest,
                      &c->particle_grad,
                      &c->particle_set,
                      &c->set_offsets,
                      &c->set_constraints,
                      &c->pressure_offsets,
                      &c->pressure_pairs,
                      &c->pressure_table,
                      &c->set_particle_offsets,
                      &c->set_particles,
                      &c->set_rest,
                      &c->body_constraint_mq,
                      &c->body_constraint_segments,
                      &c->body_constraint_ranges,
                      &c->block_offsets,
                      &c->block_runs,
                      &c->cut_offsets,
                      &c->cut_runs,
                      &c->block_first,
                      &c->color_offsets,
                      &c->gl_x};
    for (size_t k = 0; k < sizeof mems / sizeof mems[0]; ++k)
        if (*mems[k])
            clReleaseMemObject(*mems[k]);
    if (c->body_sets.k)
        clReleaseKernel(c->body_sets.k);
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        cl_mem bufs[] = {c->records[t], c->lambda[t], c->type_block_offsets[t],
                         c->type_cut_offsets[t], c->type_block_first[t]};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; ++k)
            if (bufs[k])
                clReleaseMemObject(bufs[k]);
        if (c->type_blocks[t].k)
            clReleaseKernel(c->type_blocks[t].k);
        if (c->type_cuts[t].k)
            clReleaseKernel(c->type_cuts[t].k);
    }
    pbd_cl_close(&c->cl);
    free(c->tile_first);
    free(c->ell_first);
    free(c->tile_size);
    free(c);
}

/* Creates a buffer of `bytes` (at least 16) initialised from `host` (`bytes` of it) when
 * given; checks the device's single-allocation limit first so the error names the array. An
 * empty array gets a 16-byte buffer that nothing reads, filled from no host memory. */
static pbd_status buffer(cl_impl *c, cl_mem *out, const char *name, size_t bytes, const void *host,
                         pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_int rc = CL_SUCCESS;
    if (bytes == 0) {
        bytes = 16;
        host = NULL;
    }
    if (bytes > c->cl.info.max_alloc)
        return pbd_error_set(err, PBD_ERR_LIMIT,
                             "%s needs %.1f MiB in one buffer; %s allows %.1f MiB "
                             "(CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
                             name, (double)bytes / 1048576.0, c->cl.info.name,
                             (double)c->cl.info.max_alloc / 1048576.0);
    c->bytes += bytes;
    *out = clCreateBuffer(c->cl.context, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0),
                          bytes, (void *)host, &rc);
    if (rc != CL_SUCCESS)
        status =
            pbd_error_set(err, PBD_ERR_CL, "clCreateBuffer for %s (%.1f MiB) failed on %s: %s",
                          name, (double)bytes / 1048576.0, c->cl.info.name, pbd_cl_error_name(rc));
    return status;
}

/* Jacobi's rows for CPU devices (jacobi_fused16), sixteen particles a group, the last group
 * padded with lanes past the last particle: group j's entries start[j] .. start[j + 1] - 1
 * hold, 16 of each per entry, for each particle of the group its row's k-th slot: the far end
 * (`other`), the slot code (constraint << 1 | end, as csr_slots) and the constraint's rest
 * length and compliance. Rows shorter than the group's longest are padded with the particle
 * itself (or the last particle) and code -1, which the kernel masks out. */
typedef struct jacobi_rows {
    int *start, *other, *code;
    float *rest, *compliance;
    size_t entries; /* 16 a group's row */
} jacobi_rows;

static void jacobi_rows_free(jacobi_rows *r)
{
    free(r->start);
    free(r->other);
    free(r->code);
    free(r->rest);
    free(r->compliance);
}

static pbd_status jacobi_rows_build(const pbd_plan *pl, jacobi_rows *r, pbd_error *err)
{
    int np = pl->num_particles, groups = (np + 15) / 16;
    const int *off = pl->csr_offsets;
    memset(r, 0, sizeof *r);
    r->start = malloc(((size_t)groups + 1) * sizeof *r->start);
    if (!r->start)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory for the Jacobi rows");
    for (int j = 0; j < groups; ++j) {
        int w = 0;
        for (int i = 16 * j; i < 16 * j + 16 && i < np; ++i)
            w = off[i + 1] - off[i] > w ? off[i + 1] - off[i] : w;
        r->start[j] = (int)r->entries;
        r->entries += (size_t)w;
    }
    r->start[groups] = (int)r->entries;
    size_t n = 16 * r->entries + 1;
    r->other = malloc(n * sizeof *r->other);
    r->code = malloc(n * sizeof *r->code);
    r->rest = malloc(n * sizeof *r->rest);
    r->compliance = malloc(n * sizeof *r->compliance);
    if (!r->other || !r->code || !r->rest || !r->compliance)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory for the Jacobi rows");
    for (int j = 0; j < groups; ++j)
        for (int k = r->start[j]; k < r->start[j + 1]; ++k)
            for (int l = 0; l < 16; ++l) {
                int i = 16 * j + l, s = i < np ? off[i] + k - r->start[j] : 0;
                int in = i < np && s < off[i + 1];
                size_t e = 16 * (size_t)k + (size_t)l;
                const pbd_distance *d =
                    in ? &pl->type[PBD_CONSTRAINT_DISTANCE].distance[pl->csr_slots[s] >> 1] : NULL;
                r->other[e] = in ? pl->csr_other[s] : i < np ? i : np - 1;
                r->code[e] = in ? pl->csr_slots[s] : -1;
                r->rest[e] = d ? d->rest : 0.0f;
                r->compliance[e] = d ? d->compliance : 0.0f;
            }
    return PBD_OK;
}

/* Writes `bytes` of `host` into buffer *mem of `name`, or where the size differs
 * (`old_bytes`), makes it anew and binds it to the gather (jacobi_fused16, its one user). */
static pbd_status rewrite_buffer(cl_impl *c, cl_mem *mem, const char *name, size_t old_bytes,
                                 size_t bytes, const void *host, pbd_error *err)
{
    pbd_status status = PBD_OK;
    if (bytes == old_bytes) {
        if (bytes > 0)
            PBD_CL_CHECK(
                clEnqueueWriteBuffer(c->cl.queue, *mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
        return PBD_OK;
    }
    clReleaseMemObject(*mem);
    *mem = NULL;
    c->bytes -= old_bytes;
    status = buffer(c, mem, name, bytes, host, err);
    if (status == PBD_OK)
        ARG(&c->kernels[PBD_STAGE_GATHER], name, *mem);
cleanup:
    return status;
}

/* Jacobi on CPU devices: a distance constraint's new rest length or compliance in its two
 * row entries (found through the plan's lists), or with new particles (`moved`) every row
 * again, whose length may change; their multipliers start again at the next substep. */
static pbd_status update_jacobi_rows(cl_impl *c, int position, int moved, pbd_error *err)
{
    pbd_status status = PBD_OK;
    const pbd_plan *pl = c->plan;
    const pbd_distance *d = &pl->type[PBD_CONSTRAINT_DISTANCE].distance[position];
    if (!moved) {
        for (int end = 0; end < 2; ++end) {
            int i = end ? d->b : d->a, j = i / 16;
            for (int s = pl->csr_offsets[i]; s < pl->csr_offsets[i + 1]; ++s) {
                if (pl->csr_slots[s] != (position << 1 | end))
                    continue;
                size_t e = 16 * ((size_t)c->ell_first[j] + (size_t)(s - pl->csr_offsets[i])) +
                           (size_t)(i % 16);
                PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->ell_rest, CL_TRUE,
                                                  e * sizeof(float), sizeof(float), &d->rest, 0,
                                                  NULL, NULL));
                PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->ell_compliance, CL_TRUE,
                                                  e * sizeof(float), sizeof(float), &d->compliance,
                                                  0, NULL, NULL));
            }
        }
        return PBD_OK;
    }
    jacobi_rows rows = {0};
    status = jacobi_rows_build(pl, &rows, err);
    size_t groups = ((size_t)pl->num_particles + 15) / 16 + 1;
    size_t was = 16 * c->ell_entries, now = 16 * rows.entries;
    float *zero = status == PBD_OK ? calloc(now + 1, sizeof *zero) : NULL;
    if (status == PBD_OK && !zero)
        status = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory for the Jacobi rows");
    if (status == PBD_OK)
        status = rewrite_buffer(c, &c->ell_start, "ell_start", groups * sizeof(int),
                                groups * sizeof(int), rows.start, err);
    if (status == PBD_OK)
        status = rewrite_buffer(c, &c->ell_other, "ell_other", was * sizeof(int), now * sizeof(int),
                                rows.other, err);
    if (status == PBD_OK)
        status = rewrite_buffer(c, &c->ell_code, "ell_code", was * sizeof(int), now * sizeof(int),
                                rows.code, err);
    if (status == PBD_OK)
        status = rewrite_buffer(c, &c->ell_rest, "ell_rest", was * sizeof(float),
                                now * sizeof(float), rows.rest, err);
    if (status == PBD_OK)
        status = rewrite_buffer(c, &c->ell_compliance, "ell_compliance", was * sizeof(float),
                                now * sizeof(float), rows.compliance, err);
    if (status == PBD_OK)
        status = rewrite_buffer(c, &c->ell_lambda, "ell_lambda", was * sizeof(float),
                                now * sizeof(float), zero, err);
    if (status == PBD_OK) {
        memcpy(c->ell_first, rows.start, groups * sizeof(int));
        c->ell_entries = rows.entries;
    }
    free(zero);
    jacobi_rows_free(&rows);
    return status;
cleanup:
    return status;
}

static pbd_status cl_update_constraint(void *impl, int type, int position, int moved,
                                       pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    size_t size = pbd_constraint_types[type].size;
    const char *rec = c->plan->type[type].records;
    if (type == PBD_CONSTRAINT_NEO_HOOKEAN && c->tile_first) {
        uint32_t tile[16 * 16];
        int first = c->tile_first[position], g = c->tile_size[position];
        tile_group((const uint32_t *)(rec + (size_t)first * size), g, tile);
        PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->records[type], CL_TRUE,
                                          (size_t)first * size, (size_t)g * size, tile, 0, NULL,
                                          NULL));
        return PBD_OK;
    }
    PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->records[type], CL_TRUE,
                                      (size_t)position * size, size, rec + (size_t)position * size,
                                      0, NULL, NULL));
    /* a distance constraint's new particles may have ended its block's runs (the plan's
     * end_runs_before) */
    const pbd_blocks *bl = &c->plan->type[type].blocks;
    size_t runs = 2 * (size_t)bl->block_colors * (size_t)bl->num_blocks * sizeof(int);
    if (type == PBD_CONSTRAINT_DISTANCE && moved && cpu_variant(c) && runs > 0)
        PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->block_runs, CL_TRUE, 0, runs,
                                          bl->block_runs, 0, NULL, NULL));
    /* new particles: the particles' lists of constraints (the statistics, Jacobi's gather) */
    const pbd_plan *pl = c->plan;
    size_t np = (size_t)pl->num_particles, nc = (size_t)pl->type[type].count;
    if (type == PBD_CONSTRAINT_DISTANCE && moved) {
        PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->csr_offsets, CL_TRUE, 0,
                                          (np + 1) * sizeof(int), pl->csr_offsets, 0, NULL, NULL));
        PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->csr_slots, CL_TRUE, 0,
                                          2 * nc * sizeof(int), pl->csr_slots, 0, NULL, NULL));
        if (pl->csr_other && c->kernels[PBD_STAGE_PROJECT_JACOBI].k) /* GPUs' gather */
            PBD_CL_CHECK(clEnqueueWriteBuffer(c->cl.queue, c->csr_other, CL_TRUE, 0,
                                              2 * nc * sizeof(int), pl->csr_other, 0, NULL, NULL));
    }
    if (type == PBD_CONSTRAINT_DISTANCE && c->ell_first)
        status = update_jacobi_rows(c, position, moved, err);
cleanup:
    return status;
}

/* Creates kernel `name` with its parameter table. */
static pbd_status make_kernel(cl_impl *c, const char *name, kernel *out, pbd_error *err)
{
    out->params = pbd_kernel_params_find(name);
    if (!out->params)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "kernel %s has no parameter table", name);
    return pbd_cl_kernel(&c->cl, name, &out->k, err);
}

/* Opens the device, chooses the kernels for it (GPUs: a launch a colour, work-group trees;
 * CPU devices: float16 lanes, blocks, serial reductions, the fused update), builds the
 * program and creates them. */
static pbd_status choose_kernels(cl_impl *c, pbd_plan *plan, const pbd_solver_desc *desc,
                                 pbd_error *err)
{
    pbd_status status = PBD_OK;
    const pbd_device_info *info = &c->cl.info;
    /* The variant (pbd_cl_solver_open's): every choice below follows from it. */
    int cpu = plan->variant == PBD_VARIANT_CPU;
    if (cpu)
        plan->solve_serial = 1;
    int float_sums = desc->float_sums || !info->fp64;
    c->acc_size = float_sums ? sizeof(float) : sizeof(double);
    /* CPU variant with fp64 sums: the velocity update also sums for the correction, and
     * solves each body (its last segment's work-item), so a substep's correction costs no
     * launch of its own. A body of several segments hands its sums to the last one's
     * work-item through an atomic counter and fences: enough where the caches are coherent
     * (a CPU device), but OpenCL 1.2 promises no visibility between work-groups, and a GPU
     * given the CPU variant could read stale sums. There a scene with such a body takes the
     * separate launches, which sum in the same order (the same bits), as does a scene whose
     * bodies damp differently (the fused update takes one fraction for all). */
    int handover = 0;
    for (int b = 0; b < plan->num_bodies; ++b)
        handover |= plan->body_segments[b + 1] - plan->body_segments[b] > 1;
    c->fused = cpu && plan->momentum_active && !float_sums && !plan->bounce &&
               !plan->damping_per_body && (!handover || strcmp(info->type, "cpu") == 0);
    const char *names[PBD_STAGE_COUNT];
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        names[k] = pbd_stage_names[k];
    if (cpu)
        names[PBD_STAGE_REDUCE] = "body_reduce_serial";
    if (plan->solve_serial)
        names[PBD_STAGE_SOLVE] = "body_solve_serial";
    if (plan->bounce) {
        names[PBD_STAGE_UPDATE] = "update_bounce"; /* both variants, a particle a work-item */
    } else if (c->fused) {
        names[PBD_STAGE_UPDATE] = "update_reduce_serial";
        plan->momentum_launches = 0;
    } else if (cpu) {
        names[PBD_STAGE_UPDATE] = "update_runs";
    }
    if (cpu) {
        names[PBD_STAGE_PROJECT + PBD_CONSTRAINT_DISTANCE] = "project_distance_gs16";
        for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
            if (project16[t])
                names[PBD_STAGE_PROJECT + t] = project16[t];
        names[PBD_STAGE_GATHER] = "jacobi_fused16"; /* which projects too: */
        names[PBD_STAGE_PROJECT_JACOBI] = NULL;     /* project_distance_jacobi is not launched */
        names[PBD_STAGE_PREDICT] = "predict_runs";
        names[PBD_STAGE_BODY_REDUCE] = "body_constraint_reduce16";
        names[PBD_STAGE_BODY_SOLVE] = "body_constraint_solve8";
        names[PBD_STAGE_BODY_APPLY] = "body_constraint_apply_runs";
    } else {
        names[PBD_STAGE_BODY_REDUCE] = "body_constraint_reduce64";
        names[PBD_STAGE_BODY_SOLVE] = "body_constraint_solve64";
    }
    /* The program holds the variant's kernels only: kernels/common/, then kernels/gpu/ or
     * kernels/cpu/. */
    status = pbd_cl_build(&c->cl, desc->kernel_dir, plan->variant,
                          float_sums && info->fp64 ? "-DPBD_FLOAT_ACC=1" : NULL, err);
    names[PBD_STAGE_HASH] = names[PBD_STAGE_CONTACT] = NULL; /* contact_kernels: */
    for (int k = 0; status == PBD_OK && plan->contacts && k < CONTACT_KERNELS; ++k)
        status = make_kernel(c, contact_names[k], &c->contact_kernels[k], err);
    for (int k = 0; status == PBD_OK && k < PBD_STAGE_COUNT; ++k)
        if (names[k])
            status = make_kernel(c, names[k], &c->kernels[k], err);
    /* Block Gauss-Seidel on CPU devices: a work-item runs a whole block, so the distance
     * constraints need two launches an iteration instead of one a colour plus the
     * collisions; a small mesh of one block, one. (Without distance constraints there is no
     * block to run, and the collide kernel collides.) */
    int ndist = plan->type[PBD_CONSTRAINT_DISTANCE].count;
    const pbd_blocks *db = &plan->type[PBD_CONSTRAINT_DISTANCE].blocks;
    int blocked = cpu && plan->cfg.solver == PBD_SOLVER_GS && ndist > 0 &&
                  (db->num_blocks > 1 || ndist <= PBD_ONE_BLOCK);
    if (blocked && status == PBD_OK)
        status = make_kernel(c, "project_gs_blocks", &c->gs_blocks, err);
    /* The boundary constraints in groups that share no particle: one launch, a work-item a
     * group, run as the blocks are (without their collisions). */
    if (blocked && db->boundary_colors > 0 && status == PBD_OK)
        status = make_kernel(c, "project_gs_blocks", &c->gs_cuts, err);
    /* GPUs: a small mesh's distance colours and collisions in one work-group */
    int grouped = !cpu && plan->cfg.solver == PBD_SOLVER_GS && ndist > 0 && ndist <= PBD_ONE_GROUP;
    if (grouped && status == PBD_OK)
        status = make_kernel(c, "project_distance_group", &c->gs_group, err);
    /* Clusters on CPU devices: their particles' apply, set by set, in a launch of its own;
     * the other particles' launch only where there are any */
    if (cpu && plan->body_active && plan->num_sets > 0 && status == PBD_OK) {
        status = make_kernel(c, "body_constraint_apply_sets", &c->body_sets, err);
        plan->body_launches += plan->body_unclustered ? 1 : 0;
    }
    if (status != PBD_OK)
        return status;
    plan->collide_fused = blocked || grouped;
    if (blocked || grouped) {
        int other = 0;
        for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
            other += t == PBD_CONSTRAINT_DISTANCE ? 0 : plan->type[t].num_colors;
        plan->gs_launches = other + (blocked && db->boundary_colors > 0) + 1;
    }
    if (cpu && plan->cfg.solver == PBD_SOLVER_JACOBI)
        plan->jacobi_launches -= ndist > 0; /* the gather projects too */
    /* The four-particle types in the block order (pbd_plan_type.blocks): the boundary's
     * groups of cuts in one launch and the blocks in another, instead of a launch a colour. */
    for (int t = 0; cpu && t < PBD_CONSTRAINT_COUNT && status == PBD_OK; ++t) {
        const pbd_plan_type *pt = &plan->type[t];
        if (t == PBD_CONSTRAINT_DISTANCE || !project_blocks[t] || pt->blocks.num_blocks < 1)
            continue;
        status = make_kernel(c, project_blocks[t], &c->type_blocks[t], err);
        if (status == PBD_OK && pt->blocks.boundary_colors > 0)
            status = make_kernel(c, project_blocks[t], &c->type_cuts[t], err);
        plan->gs_launches -= pt->num_colors - 1 - (pt->blocks.boundary_colors > 0);
    }
    if (status != PBD_OK)
        return status;
    /* A mesh without distance constraints or body constraints: the last type's blocks collide
     * each block's particles after its colours (as project_gs_blocks does), which saves the
     * collide launch of every iteration. Nothing projects after that type in an iteration, so
     * each particle collides in the state the collide kernel would see. */
    int last = -1;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t)
        last = plan->type[t].count > 0 ? t : last;
    c->collide_type = -1;
    if (cpu && plan->cfg.solver == PBD_SOLVER_GS && last >= 0 && c->type_blocks[last].k &&
        !plan->body_active && plan->num_colliders > 0 && !plan->collide_fused) {
        c->collide_type = last;
        plan->collide_fused = 1;
        plan->gs_launches -= 1;
    }
    /* Small colours on the CPU variant: a type's colours in one launch, one work-item taking
     * them in order, where they average serial_color_size constraints or fewer. A launch
     * costs a few microseconds of the host's and the device's time (PoCL); a volume element
     * on one core about 12 ns, a Neo-Hookean one 43. */
    for (int t = 0; cpu && t < PBD_CONSTRAINT_COUNT; ++t) {
        pbd_plan_type *pt = &plan->type[t];
        long size = plan->cfg.serial_color_size;
        pt->one_launch = t != PBD_CONSTRAINT_DISTANCE && !c->type_blocks[t].k &&
                         pt->num_colors > 1 && (long)pt->count <= size * pt->num_colors;
        if (pt->one_launch) {
            plan->gs_launches -= pt->num_colors - 1;
            plan->jacobi_launches -= pt->num_colors - 1;
        }
    }
    return PBD_OK;
}

/* Whether stage k's kernel runs in work-groups of exactly PBD_REDUCE_WG: the momentum trees
 * and, on GPUs, the body constraints' sums (PBD_BODY_SEGMENT, the same). */
_Static_assert(PBD_BODY_SEGMENT == PBD_REDUCE_WG, "body constraints' groups are reduce groups");
static int group_sized(const cl_impl *c, const pbd_plan *plan, int k)
{
    if (k == PBD_STAGE_REDUCE)
        return !cpu_variant(c);
    if (k == PBD_STAGE_SOLVE)
        return !plan->solve_serial;
    return (k == PBD_STAGE_BODY_REDUCE || k == PBD_STAGE_BODY_SOLVE) && !cpu_variant(c);
}

/* The work-group sizes, within the device's limits. The per-particle and per-constraint
 * kernels: 64 on GPUs (two warps, one wavefront), rounded up to a multiple of the kernels'
 * preferred work-group multiple (CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE: the warp or
 * SIMD width) and down to what every kernel allows; on CPU devices 256, where a work-group is
 * a loop a thread runs and bigger groups amortise its start-up. The tree reductions need
 * exactly PBD_REDUCE_WG work-items (their order of addition is the CPU reference's) and
 * their rows in local memory, as do the GPUs' body-constraint sums: a device that cannot give
 * them is refused, naming the limit. */
static pbd_status choose_work_groups(cl_impl *c, const pbd_plan *plan, pbd_error *err)
{
    pbd_status status = PBD_OK;
    const pbd_device_info *info = &c->cl.info;
    size_t wg = strcmp(info->type, "cpu") == 0 ? 256 : 64, multiple = 0, allowed = SIZE_MAX;
    for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
        if (!c->kernels[k].k || k == PBD_STAGE_REDUCE || k == PBD_STAGE_SOLVE ||
            group_sized(c, plan, k))
            continue;
        size_t kwg = 0, mult = 0;
        PBD_CL_CHECK(clGetKernelWorkGroupInfo(c->kernels[k].k, c->cl.device,
                                              CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL));
        PBD_CL_CHECK(clGetKernelWorkGroupInfo(c->kernels[k].k, c->cl.device,
                                              CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                              sizeof mult, &mult, NULL));
        allowed = kwg < allowed ? kwg : allowed;
        multiple = mult > multiple ? mult : multiple;
    }
    if (!cpu_variant(c) && multiple > 1 && wg % multiple != 0)
        wg = (wg + multiple - 1) / multiple * multiple;
    if (wg > info->max_work_group)
        wg = info->max_work_group;
    if (wg > allowed)
        wg = multiple > 1 && allowed >= multiple ? allowed / multiple * multiple : allowed;
    c->wg = wg < 1 ? 1 : wg;
    /* project_distance_group: one work-group, as large as the kernel allows, up to 1,024 */
    if (c->gs_group.k) {
        size_t kwg = 0;
        PBD_CL_CHECK(clGetKernelWorkGroupInfo(c->gs_group.k, c->cl.device,
                                              CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL));
        size_t gwg = kwg < 1024 ? kwg : 1024;
        gwg = gwg < info->max_work_group ? gwg : info->max_work_group;
        if (multiple > 1 && gwg >= multiple)
            gwg = gwg / multiple * multiple;
        c->group_wg = gwg < 1 ? 1 : gwg;
    }
    for (int k = 0; k < PBD_STAGE_COUNT; ++k) {
        if (!c->kernels[k].k || !group_sized(c, plan, k))
            continue;
        const char *name = c->kernels[k].params->kernel;
        if (info->max_work_group < PBD_REDUCE_WG)
            return pbd_error_set(err, PBD_ERR_LIMIT,
                                 "%s: CL_DEVICE_MAX_WORK_GROUP_SIZE is %zu; kernel %s needs "
                                 "work-groups of %d",
                                 info->name, info->max_work_group, name, PBD_REDUCE_WG);
        size_t kwg = 0;
        cl_ulong local = 0;
        PBD_CL_CHECK(clGetKernelWorkGroupInfo(c->kernels[k].k, c->cl.device,
                                              CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL));
        PBD_CL_CHECK(clGetKernelWorkGroupInfo(
            c->kernels[k].k, c->cl.device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, NULL));
        if (kwg < PBD_REDUCE_WG)
            return pbd_error_set(err, PBD_ERR_LIMIT,
                                 "%s: kernel %s allows work-groups of %zu "
                                 "(CL_KERNEL_WORK_GROUP_SIZE), needs %d",
                                 info->name, name, kwg, PBD_REDUCE_WG);
        if (local > info->local_mem)
            return pbd_error_set(err, PBD_ERR_LIMIT,
                                 "%s: kernel %s needs %llu bytes of local memory, the device has "
                                 "%llu (CL_DEVICE_LOCAL_MEM_SIZE)",
                                 info->name, name, (unsigned long long)local,
                                 (unsigned long long)info->local_mem);
    }
cleanup:
    return status;
}

/* The device buffers, from the model and the plan. */
static pbd_status create_buffers(cl_impl *c, const pbd_model *m, const pbd_plan *plan,
                                 pbd_error *err)
{
    size_t np = (size_t)plan->num_particles, nc = (size_t)plan->type[PBD_CONSTRAINT_DISTANCE].count;
    size_t nb = (size_t)plan->num_bodies, f4 = sizeof(pbd_float4);
    int bdf2 = plan->cfg.velocity_update == PBD_VELOCITY_BDF2;
    int jacobi = plan->cfg.solver == PBD_SOLVER_JACOBI;
    int split = jacobi && !cpu_variant(c); /* Jacobi's projection and gather as two kernels */
    double *track0 = calloc(6 * nb + 1, sizeof(double));
    /* The collision records start at zero: no friction slides yet (the prediction reads their
     * w, pbd_friction_carry). Copied from the host, which Oclgrind sees as initialised. */
    int records = plan->momentum_active || plan->track;
    pbd_float4 *dx0 = records ? calloc(np + 1, f4) : NULL;
    /* likewise whether each particle's contacts slid: none yet (read as the lists are made) */
    cl_int *slide0 = plan->contacts ? calloc(np + 1, sizeof(cl_int)) : NULL;
    if (!track0 || (records && !dx0) || (plan->contacts && !slide0)) {
        free(track0);
        free(dx0);
        free(slide0);
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory creating the OpenCL solver");
    }
    pbd_status st = PBD_OK;
#define BUF(field, bytes, host)                                                                    \
    if (st == PBD_OK)                                                                              \
    st = buffer(c, &c->field, #field, (bytes), (host), err)
    BUF(x, np * f4, m->x);
    BUF(p, np * f4, m->x);
    BUF(v, np * f4, m->v);
    BUF(xp, bdf2 ? np * f4 : 0, NULL);
    BUF(vp, bdf2 ? np * f4 : 0, NULL);
    BUF(dx, records ? np * f4 : 0, dx0);
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        size_t n = (size_t)plan->type[t].count;
        if (t == PBD_CONSTRAINT_NEO_HOOKEAN && c->type_blocks[t].k && st == PBD_OK) {
            uint32_t *tiles = NULL;
            st = tile_records(c, &plan->type[t], &tiles, err);
            BUF(records[t], n * pbd_constraint_types[t].size, tiles);
            free(tiles);
        } else
            BUF(records[t], n * pbd_constraint_types[t].size, plan->type[t].records);
        BUF(lambda[t], n * PBD_MULTIPLIERS(t) * sizeof(float), NULL);
    }
    BUF(p_next, jacobi ? np * f4 : 0, NULL);
    BUF(gain, split ? nc * sizeof(float) : 0, NULL);
    BUF(csr_offsets, (np + 1) * sizeof(int), plan->csr_offsets);
    BUF(csr_slots, 2 * nc * sizeof(int), plan->csr_slots);
    BUF(csr_other, split ? 2 * nc * sizeof(int) : 0, plan->csr_other);
    jacobi_rows rows = {0};
    if (st == PBD_OK && jacobi && cpu_variant(c))
        st = jacobi_rows_build(plan, &rows, err);
    c->ell_entries = rows.entries;
    size_t nell = 16 * rows.entries, ngroups = rows.start ? (np + 15) / 16 + 1 : 0;
    BUF(ell_start, ngroups * sizeof(int), rows.start);
    BUF(ell_other, nell * sizeof(int), rows.other);
    BUF(ell_code, nell * sizeof(int), rows.code);
    BUF(ell_rest, nell * sizeof(float), rows.rest);
    BUF(ell_compliance, nell * sizeof(float), rows.compliance);
    BUF(ell_lambda, nell * sizeof(float), NULL);
    c->ell_first = rows.start; /* kept */
    rows.start = NULL;
    jacobi_rows_free(&rows);
    BUF(colliders, ((size_t)plan->num_colliders + 1) * sizeof(pbd_collider), plan->colliders);
    const pbd_blocks *db = &plan->type[PBD_CONSTRAINT_DISTANCE].blocks;
    size_t nic = (size_t)db->block_colors; /* the interior colours */
    BUF(block_offsets, nic * ((size_t)db->num_blocks + 1) * sizeof(int), db->block_offsets);
    BUF(block_runs, nic * 2 * (size_t)db->num_blocks * sizeof(int), db->block_runs);
    size_t nbcol = (size_t)db->boundary_colors, ncut = (size_t)db->num_cuts;
    BUF(cut_offsets, nbcol * (ncut + 1) * sizeof(int), db->cut_offsets);
    BUF(cut_runs, nbcol * 2 * ncut * sizeof(int), db->cut_runs);
    BUF(block_first, ((size_t)db->num_blocks + 1) * sizeof(int), db->block_first);
    /* The other blocked types' parts of their colours (type_blocks) */
    for (int t = 0; t < PBD_CONSTRAINT_COUNT && st == PBD_OK; ++t) {
        const pbd_blocks *bl = &plan->type[t].blocks;
        if (!c->type_blocks[t].k)
            continue;
        size_t ni = (size_t)bl->block_colors, nbt = (size_t)bl->boundary_colors;
        st = buffer(c, &c->type_block_offsets[t], "block_offsets",
                    ni * ((size_t)bl->num_blocks + 1) * sizeof(int), bl->block_offsets, err);
        if (st == PBD_OK)
            st = buffer(c, &c->type_cut_offsets[t], "cut_offsets",
                        nbt * ((size_t)bl->num_cuts + 1) * sizeof(int), bl->cut_offsets, err);
        if (st == PBD_OK)
            st = buffer(c, &c->type_block_first[t], "block_first",
                        ((size_t)bl->num_blocks + 1) * sizeof(int), bl->block_first, err);
    }
    const pbd_plan_type *dist = &plan->type[PBD_CONSTRAINT_DISTANCE];
    BUF(color_offsets, c->gs_group.k ? ((size_t)dist->num_colors + 1) * sizeof(int) : 0,
        dist->color_offsets);
    BUF(particle_body, np * sizeof(int), m->body);
    BUF(segments, (size_t)plan->num_segments * sizeof(pbd_segment), plan->segments);
    BUF(body_segments, (nb + 1) * sizeof(int), plan->body_segments);
    BUF(body_ref, nb * f4, plan->body_ref);
    BUF(body_track, 6 * nb * c->acc_size, track0);
    BUF(body_flags, nb * sizeof(int), plan->body_flags);
    BUF(body_material, nb * f4, plan->body_material);
    BUF(body_damping, plan->damping_per_body ? 2 * nb * sizeof(float) : 0, plan->body_damping);
    BUF(segment_sums, (size_t)plan->num_segments * PBD_SUM_COUNT * c->acc_size, NULL);
    BUF(out_step, nb * PBD_OUT_COUNT * c->acc_size, NULL);
    BUF(out_other, nb * PBD_OUT_COUNT * c->acc_size, NULL);
    BUF(body_apply, nb * PBD_APPLY_COUNT * f4, NULL);
    BUF(body_done, c->fused ? nb * sizeof(cl_int) : 0, NULL);
    int active = plan->body_active, pressure = plan->pressure_active;
    size_t nbc = (size_t)plan->num_body_constraints, nmem = (size_t)plan->num_members;
    pbd_float4 *goal0 = active ? calloc(nbc * PBD_GOAL_COUNT, f4) : NULL;
    if (active && !goal0 && st == PBD_OK)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory creating the OpenCL solver");
    for (size_t b = 0; goal0 && b < nbc; ++b) { /* no rotation yet; the rest centre */
        goal0[b * PBD_GOAL_COUNT] = (pbd_float4){0.0f, 0.0f, 0.0f, 1.0f};
        goal0[b * PBD_GOAL_COUNT + PBD_GOAL_CENTRE] = plan->shape_centre[b];
    }
    BUF(body_constraints, active ? nbc * sizeof(pbd_body_constraint) : 0, plan->body_constraints);
    BUF(body_goal, active ? nbc * PBD_GOAL_COUNT * f4 : 0, goal0);
    size_t nbseg = (size_t)plan->num_body_constraint_segments;
    BUF(body_constraint_sums, active ? nbseg * PBD_BSUM_COUNT * sizeof(float) : 0, NULL);
    BUF(body_constraint_segments, active ? nbseg * sizeof(pbd_segment) : 0,
        plan->body_constraint_segments);
    BUF(body_constraint_ranges, active ? (nbc + 1) * sizeof(int) : 0, plan->body_constraint_ranges);
    BUF(body_constraint_mq, active && cpu_variant(c) ? nbseg * f4 : 0, plan->body_constraint_mq);
    BUF(member_particle, active ? nmem * sizeof(int) : 0, plan->member_particle);
    BUF(member_rest, active ? nmem * f4 : 0, plan->member_rest);
    size_t nsets = active ? (size_t)plan->num_sets : 0;
    BUF(particle_set, active ? np * sizeof(int) : 0, plan->particle_set);
    BUF(set_offsets, active ? (nsets + 1) * sizeof(int) : 0, plan->set_offsets);
    BUF(set_constraints, nsets ? (size_t)plan->set_offsets[nsets] * sizeof(int) : 0,
        plan->set_constraints);
    BUF(particle_grad, pressure ? np * f4 : 0, NULL);
    BUF(set_particle_offsets, active && cpu_variant(c) ? (nsets + 1) * sizeof(int) : 0,
        plan->set_particle_offsets);
    BUF(set_particles,
        nsets && cpu_variant(c) ? (size_t)plan->set_particle_offsets[nsets] * sizeof(int) : 0,
        plan->set_particles);
    BUF(set_rest, nsets && cpu_variant(c) ? (size_t)plan->set_particle_offsets[nsets] * f4 : 0,
        plan->set_rest);
    BUF(pressure_offsets, active ? (np + 1) * sizeof(int) : 0, plan->pressure_offsets);
    BUF(pressure_pairs, pressure ? 2 * (size_t)plan->pressure_offsets[np] * sizeof(int) : 0,
        plan->pressure_pairs);
    /* CPU devices: pressure's rings as a table, where it is allowed and fits one buffer
     * (else the shared reduction) */
    int *table = NULL;
    if (st == PBD_OK && pressure && cpu_variant(c) &&
        !(table = pbd_plan_pressure_table(plan, &c->pressure_steps)) && c->pressure_steps > 0)
        st = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory creating the OpenCL solver");
    size_t table_bytes = (size_t)c->pressure_steps * np * sizeof(int);
    if (table && table_bytes > c->cl.info.max_alloc) {
        free(table);
        table = NULL;
        c->pressure_steps = 0;
    }
    BUF(pressure_table, table ? table_bytes : 0, table);
    free(table);
    free(goal0);
    size_t nh = plan->contacts ? np : 0, ts = plan->contacts ? (size_t)plan->table_size : 0;
    BUF(contact_cell, 4 * nh * sizeof(cl_int), NULL);
    BUF(cell_count, ts * sizeof(cl_int), NULL);
    BUF(cell_fill, ts * sizeof(cl_int), NULL);
    BUF(cell_start, (ts + (ts > 0)) * sizeof(cl_int), NULL);
    BUF(cell_sorted, nh * sizeof(cl_int), NULL);
    BUF(contact_num, nh * sizeof(cl_int), NULL);
    BUF(contact_dp, nh * f4, NULL);
    BUF(contact_rest, nh * f4, plan->contact_rest);
    BUF(particle_radius, nh * sizeof(float), plan->particle_radius);
    BUF(body_self, plan->contacts ? nb * sizeof(cl_int) : 0, plan->body_self);
    BUF(body_first, plan->contacts ? (nb + 1) * sizeof(cl_int) : 0, plan->body_first);
    BUF(contact_cdx, nh * f4, NULL);
    BUF(contact_p0, nh * f4, NULL);
    BUF(contact_cand, nh * sizeof(cl_int), NULL);
    BUF(contact_other, nh * PBD_CONTACT_LIST * sizeof(cl_int), NULL);
    BUF(contact_state, nh * PBD_CONTACT_LIST * sizeof(float), NULL);
    BUF(contact_slide, nh * sizeof(cl_int), slide0);
    BUF(contact_a, nh * f4, NULL);
#undef BUF
    free(track0);
    free(dx0);
    free(slide0);
    if (st != PBD_OK)
        return st;
    /* No correction has run yet: zeros (a float 0 and a double 0 are both all-zero bits). */
    pbd_status status = PBD_OK;
    cl_uchar zero = 0;
    PBD_CL_CHECK(clEnqueueFillBuffer(c->cl.queue, c->out_step, &zero, 1, 0,
                                     nb * PBD_OUT_COUNT * c->acc_size, 0, NULL, NULL));
    /* No body's segments have counted themselves done (update_reduce_serial). */
    if (c->fused)
        PBD_CL_CHECK(clEnqueueFillBuffer(c->cl.queue, c->body_done, &zero, 1, 0,
                                         nb * sizeof(cl_int), 0, NULL, NULL));
cleanup:
    return status;
}

/* A kernel argument's value by parameter name: every kernel's parameters are set from one
 * list of these, so a name means one thing everywhere. */
typedef struct binding {
    const char *name;
    size_t size;
    const void *value;
} binding;

#define BIND(name, value)                                                                          \
    {                                                                                              \
        name, sizeof(value), &(value)                                                              \
    }

/* Sets every parameter of `k` from `b` (n entries); a parameter with no value is an error. */
static pbd_status bind(const kernel *k, const binding *b, int n, pbd_error *err)
{
    if (!k->k)
        return PBD_OK;
    for (int j = 0; j < k->params->count; ++j) {
        int i = 0;
        while (i < n && strcmp(b[i].name, k->params->params[j]) != 0)
            ++i;
        if (i == n)
            return pbd_error_set(err, PBD_ERR_ARGUMENT, "kernel %s: no value for parameter %s",
                                 k->params->kernel, k->params->params[j]);
        pbd_status status = set_arg(k, b[i].name, b[i].size, b[i].value, err);
        if (status != PBD_OK)
            return status;
    }
    return PBD_OK;
}

/* project_<type>_blocks `k` (if made) over type t's parts: `offsets` of `colors` colours in
 * `parts` blocks or groups of cuts, colliding each block with `colliders` colliders after its
 * colours (none: the groups of cuts, and every type but the one that ends the iteration). */
static pbd_status bind_blocks(cl_impl *c, const kernel *k, int t, cl_mem offsets, cl_int colors,
                              cl_int parts, cl_int colliders, pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_int zero = 0;
    if (!k->k)
        return PBD_OK;
    ARG(k, "records", c->records[t]);
    ARG(k, "lambda", c->lambda[t]);
    ARG(k, "block_offsets", offsets);
    ARG(k, "num_colors", colors);
    ARG(k, "num_blocks", parts);
    ARG(k, "block_first", c->type_block_first[t]);
    ARG(k, "num_colliders", colliders);
    if (!colliders)
        ARG(k, "track", zero);
cleanup:
    return status;
}

/* The arguments that differ from the shared bindings: the prediction's target buffer (Jacobi
 * alternates two), each constraint type's records and multipliers, and the boundary's groups
 * of cuts, which project_gs_blocks runs without collisions. */
static pbd_status bind_exceptions(cl_impl *c, const pbd_plan *plan, pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_int zero = 0, ndist = plan->type[PBD_CONSTRAINT_DISTANCE].count;
    const pbd_blocks *db = &plan->type[PBD_CONSTRAINT_DISTANCE].blocks;
    cl_int nbc = db->boundary_colors, ncuts = db->num_cuts;
    cl_int ndc = plan->type[PBD_CONSTRAINT_DISTANCE].num_colors;
    cl_mem p_start = position_buffer(c, c->jacobi_start);
    ARG(&c->kernels[PBD_STAGE_PREDICT], "particle_p", p_start);
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        if (t == PBD_CONSTRAINT_DISTANCE && cpu_variant(c))
            continue; /* project_distance_gs16 takes them as "distance_records" */
        ARG(&c->kernels[PBD_STAGE_PROJECT + t], "records", c->records[t]);
        ARG(&c->kernels[PBD_STAGE_PROJECT + t], "lambda", c->lambda[t]);
    }
    if (c->kernels[PBD_STAGE_PROJECT_JACOBI].k)
        ARG(&c->kernels[PBD_STAGE_PROJECT_JACOBI], "count", ndist);
    if (c->fused)
        ARG(&c->kernels[PBD_STAGE_UPDATE], "body_out", c->out_step);
    cl_int dover = plan->type[PBD_CONSTRAINT_DISTANCE].overflow;
    if (c->gs_group.k) { /* every distance colour (num_colors is the blocks' elsewhere) */
        ARG(&c->gs_group, "num_colors", ndc);
        ARG(&c->gs_group, "serial", dover);
    }
    for (int t = 0; t < PBD_CONSTRAINT_COUNT && status == PBD_OK; ++t) {
        const pbd_blocks *bl = &plan->type[t].blocks;
        cl_int ncol = t == c->collide_type ? plan->num_colliders : 0;
        status = bind_blocks(c, &c->type_blocks[t], t, c->type_block_offsets[t], bl->block_colors,
                             bl->num_blocks, ncol, err);
        if (status == PBD_OK)
            status = bind_blocks(c, &c->type_cuts[t], t, c->type_cut_offsets[t],
                                 bl->boundary_colors, bl->num_cuts, 0, err);
    }
    if (status != PBD_OK)
        return status;
    /* the boundary's groups of cuts: no collisions, so no colliders and nothing to track */
    if (c->gs_cuts.k) {
        ARG(&c->gs_cuts, "block_offsets", c->cut_offsets);
        ARG(&c->gs_cuts, "block_runs", c->cut_runs);
        ARG(&c->gs_cuts, "num_colors", nbc);
        ARG(&c->gs_cuts, "num_blocks", ncuts);
        ARG(&c->gs_cuts, "num_colliders", zero);
        ARG(&c->gs_cuts, "track", zero);
    }
cleanup:
    return status;
}

/* Every kernel's arguments: the per-launch ones (offsets, flags) start at 0 and are set
 * again at each launch; a few kernels take another buffer under a shared name. */
static pbd_status bind_arguments(cl_impl *c, const pbd_plan *plan, pbd_error *err)
{
    pbd_status status = PBD_OK;
    const pbd_plan_type *dist = &plan->type[PBD_CONSTRAINT_DISTANCE];
    cl_int n = plan->num_particles, ncol = plan->num_colliders;
    cl_int nbodies = plan->num_bodies, nseg = plan->num_segments, zero = 0;
    cl_int nbcseg = plan->num_body_constraint_segments, nbcons = plan->num_body_constraints;
    cl_int nsets = plan->num_sets;
    /* predict stores the corrected v where a later stage reads it (pbd_keeps_v) */
    cl_int keep_v = pbd_keeps_v(plan);
    cl_int track = plan->track, external = plan->external, materials = plan->materials;
    cl_int ninterior = dist->blocks.block_colors; /* the interior colours */
    cl_int nblocks = dist->blocks.num_blocks;
    const float *g = plan->cfg.gravity;
    cl_float gx = g[0], gy = g[1], gz = g[2], h = plan->h, inv_h = plan->inv_h;
    cl_float inv_h2 = plan->inv_h2, omega = plan->cfg.omega;
    cl_float point = plan->point_damping, rigid = plan->rigid_damping;
    cl_int per_body = plan->damping_per_body;
    cl_float4 gh = {{g[0], g[1], g[2], plan->h}};
    cl_int table_size = plan->table_size, grid_bits = plan->grid_bits;
    cl_float4 grid_inv = {{plan->grid_inv.x, plan->grid_inv.y, plan->grid_inv.z, plan->grid_inv.w}};
    cl_float4 grid_r = {{plan->grid_r.x, plan->grid_r.y, plan->grid_r.z, plan->grid_r.w}};
    c->jacobi_start = plan->cfg.solver == PBD_SOLVER_JACOBI && plan->cfg.iterations % 2 == 1;
    /* clang-format off */
    const binding common[] = {
        BIND("particle_x", c->x), BIND("particle_p", c->p), BIND("particle_v", c->v),
        BIND("particle_xp", c->xp), BIND("particle_vp", c->vp), BIND("particle_dx", c->dx),
        BIND("particle_body", c->particle_body), BIND("particle_out", c->p_next),
        BIND("num_particles", n), BIND("body_apply", c->body_apply), BIND("rigid_k", rigid),
        BIND("apply", zero), BIND("keep_v", keep_v), BIND("gx", gx), BIND("gy", gy),
        BIND("gz", gz), BIND("h", h), BIND("bdf2", zero), BIND("keep_prev", zero),
        BIND("track", track), BIND("records", c->records[0]), BIND("lambda", c->lambda[0]),
        BIND("offset", zero), BIND("count", zero), BIND("inv_h2", inv_h2),
        BIND("reset_lambda", zero), BIND("distance_records", c->records[PBD_CONSTRAINT_DISTANCE]),
        BIND("distance_lambda", c->lambda[PBD_CONSTRAINT_DISTANCE]),
        BIND("distance_gain", c->gain), BIND("pairs", zero), BIND("rest", zero),
        BIND("block_offsets", c->block_offsets), BIND("block_runs", c->block_runs),
        BIND("num_colors", ninterior), BIND("block_first", c->block_first),
        BIND("color_offsets", c->color_offsets),
        BIND("num_blocks", nblocks), BIND("colliders", c->colliders), BIND("num_colliders", ncol),
        BIND("csr_offsets", c->csr_offsets), BIND("csr_slots", c->csr_slots),
        BIND("csr_other", c->csr_other), BIND("omega", omega), BIND("ell_start", c->ell_start),
        BIND("ell_other", c->ell_other), BIND("ell_code", c->ell_code),
        BIND("ell_rest", c->ell_rest), BIND("ell_compliance", c->ell_compliance),
        BIND("ell_lambda", c->ell_lambda), BIND("inv_h", inv_h), BIND("damping", point),
        BIND("segments", c->segments), BIND("body_ref", c->body_ref), BIND("with_dx", external),
        BIND("segment_sums", c->segment_sums), BIND("num_segments", nseg),
        BIND("body_track", c->body_track), BIND("body_flags", c->body_flags), BIND("gh", gh),
        BIND("body_out", c->out_other), BIND("body_segments", c->body_segments),
        BIND("body_done", c->body_done), BIND("stats", zero), BIND("mode", zero),
        BIND("num_bodies", nbodies), BIND("body_material", c->body_material),
        BIND("body_damping", c->body_damping), BIND("damping_per_body", per_body),
        BIND("materials", materials), BIND("serial", zero),
        BIND("member_particle", c->member_particle), BIND("member_rest", c->member_rest),
        BIND("particle_set", c->particle_set), BIND("set_offsets", c->set_offsets),
        BIND("set_constraints", c->set_constraints),
        BIND("set_particle_offsets", c->set_particle_offsets),
        BIND("set_particles", c->set_particles), BIND("set_rest", c->set_rest),
        BIND("num_sets", nsets),
        BIND("num_body_constraints", nbcons),
        BIND("particle_grad", c->particle_grad), BIND("pressure_offsets", c->pressure_offsets),
        BIND("pressure_pairs", c->pressure_pairs), BIND("body_constraints", c->body_constraints),
        BIND("pressure_table", c->pressure_table), BIND("pressure_steps", c->pressure_steps),
        BIND("body_constraint_sums", c->body_constraint_sums), BIND("body_goal", c->body_goal),
        BIND("body_constraint_segments", c->body_constraint_segments),
        BIND("body_constraint_ranges", c->body_constraint_ranges),
        BIND("num_body_constraint_segments", nbcseg),
        BIND("body_constraint_mq", c->body_constraint_mq),
        BIND("contact_cell", c->contact_cell),
        BIND("cell_count", c->cell_count), BIND("cell_fill", c->cell_fill),
        BIND("cell_start", c->cell_start), BIND("cell_sorted", c->cell_sorted),
        BIND("contact_num", c->contact_num), BIND("contact_dp", c->contact_dp),
        BIND("contact_rest", c->contact_rest), BIND("particle_radius", c->particle_radius),
        BIND("body_self", c->body_self), BIND("table_size", table_size),
        BIND("grid_bits", grid_bits), BIND("grid_inv", grid_inv),
        BIND("grid_r", grid_r),
        BIND("body_first", c->body_first), BIND("contact_cdx", c->contact_cdx),
        BIND("contact_p0", c->contact_p0), BIND("contact_cand", c->contact_cand),
        BIND("contact_other", c->contact_other), BIND("contact_state", c->contact_state),
        BIND("contact_slide", c->contact_slide),
        BIND("contact_a", c->contact_a),
    };
    /* clang-format on */
    int ncommon = (int)(sizeof common / sizeof common[0]);
    for (int k = 0; k < PBD_STAGE_COUNT && status == PBD_OK; ++k)
        status = bind(&c->kernels[k], common, ncommon, err);
    if (status == PBD_OK)
        status = bind(&c->gs_blocks, common, ncommon, err);
    if (status == PBD_OK)
        status = bind(&c->gs_cuts, common, ncommon, err);
    if (status == PBD_OK)
        status = bind(&c->gs_group, common, ncommon, err);
    if (status == PBD_OK)
        status = bind(&c->body_sets, common, ncommon, err);
    for (int t = 0; t < PBD_CONSTRAINT_COUNT && status == PBD_OK; ++t) {
        status = bind(&c->type_blocks[t], common, ncommon, err);
        if (status == PBD_OK)
            status = bind(&c->type_cuts[t], common, ncommon, err);
    }
    for (int k = 0; k < CONTACT_KERNELS && status == PBD_OK; ++k)
        status = bind(&c->contact_kernels[k], common, ncommon, err);
    if (status != PBD_OK)
        return status;
    return bind_exceptions(c, plan, err);
}

/* Device memory, lower bound: the particles' positions, predictions and velocities (and
 * what BDF2, the correction and Jacobi add), each constraint type's records and multipliers,
 * the distance constraints' adjacency, and the per-body sums. */
double pbd_device_memory_estimate(const pbd_model *m, const pbd_config *cfg, double *largest_out,
                                  const char **largest_name_out)
{
    double np = m->num_particles, nb = m->num_bodies, f4 = sizeof(pbd_float4);
    double per_particle = 3 * f4 + 2 * sizeof(int);
    if (cfg->velocity_update == PBD_VELOCITY_BDF2)
        per_particle += 2 * f4;
    /* The correction's displacements: bodies it applies to (as pbd_plan_build decides). */
    int momentum = 0;
    for (int b = 0; b < m->num_bodies; ++b) {
        const pbd_body *bd = &m->bodies[b];
        float k;
        pbd_damping_kind kind = pbd_body_damping(bd, cfg, &k);
        momentum |= pbd_body_preserved(bd, cfg) || (kind == PBD_DAMPING_RIGID && k > 0.0f);
    }
    if (momentum)
        per_particle += f4;
    if (cfg->solver == PBD_SOLVER_JACOBI)
        per_particle += f4;
    /* Particle contacts: the cells, the table (an entry or two a particle), the candidate
     * lists with their friction state, the sliding flags and the contact displacements (as
     * create_buffers makes them). */
    int contacts = 0;
    for (int b = 0; b < m->num_bodies; ++b)
        contacts |= m->bodies[b].radius > 0.0f;
    if (contacts)
        per_particle += (4 + 1 + 1 + 1 + PBD_CONTACT_LIST) * sizeof(int) + 5 * f4 + sizeof(float) +
                        3 * sizeof(int) + PBD_CONTACT_LIST * sizeof(float) + sizeof(int);
    double total = np * per_particle + nb * (6 * sizeof(double) + 2 * f4);
    double largest = np * f4;
    const char *largest_name = "positions";
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        int n = 0;
        pbd_model_constraints(m, t, &n);
        double records = (double)n * (double)pbd_constraint_types[t].size;
        total += records + (double)n * sizeof(float);
        if (t == PBD_CONSTRAINT_DISTANCE)
            total += (double)n * 2 * sizeof(int);
        if (records > largest) {
            largest = records;
            largest_name = pbd_constraint_types[t].name;
        }
    }
    *largest_out = largest;
    *largest_name_out = largest_name;
    return total;
}

pbd_status pbd_check_device_memory(const pbd_model *m, const pbd_config *cfg,
                                   const pbd_device_info *info, pbd_error *err)
{
    double largest;
    const char *largest_name;
    double total = pbd_device_memory_estimate(m, cfg, &largest, &largest_name);
    const double mib = 1048576.0;
    if (total > (double)info->global_mem)
        return pbd_error_set(err, PBD_ERR_LIMIT,
                             "the scene's %d particles and their constraints need at least %.1f "
                             "MiB of device memory; %s has %.1f MiB (CL_DEVICE_GLOBAL_MEM_SIZE)",
                             m->num_particles, total / mib, info->name,
                             (double)info->global_mem / mib);
    if (largest > (double)info->max_alloc)
        return pbd_error_set(err, PBD_ERR_LIMIT,
                             "the scene's %s array needs %.1f MiB in one buffer; %s allows %.1f "
                             "MiB (CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
                             largest_name, largest / mib, info->name,
                             (double)info->max_alloc / mib);
    return PBD_OK;
}

pbd_status pbd_cl_solver_open(const pbd_model *m, const pbd_config *cfg,
                              const pbd_solver_desc *desc, void **impl, pbd_variant *variant,
                              pbd_error *err)
{
    *impl = NULL;
    if (desc->variant != PBD_VARIANT_AUTO && desc->variant != PBD_VARIANT_GPU &&
        desc->variant != PBD_VARIANT_CPU)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "variant: found %d, expected auto, gpu or cpu",
                             (int)desc->variant);
    cl_impl *c = calloc(1, sizeof *c);
    if (!c)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory creating the OpenCL solver");
    pbd_status status = pbd_cl_open(&c->cl, desc->device, desc->profile, desc->gl, err);
    if (status == PBD_OK)
        status = pbd_check_device_memory(m, cfg, &c->cl.info, err);
    if (status != PBD_OK) {
        cl_destroy(c);
        return status;
    }
    /* The variant, once: asked for, or by device type (on a CPU device a work-group is a loop
     * and barriers are costly, so a work-item per segment and float16 lanes; GPUs get a
     * launch a colour and work-group trees). The plan and every choice of kernels follow
     * from it. */
    *variant = desc->variant != PBD_VARIANT_AUTO     ? desc->variant
               : strcmp(c->cl.info.type, "cpu") == 0 ? PBD_VARIANT_CPU
                                                     : PBD_VARIANT_GPU;
    *impl = c;
    return PBD_OK;
}

void pbd_cl_solver_close(void *impl)
{
    if (impl)
        cl_destroy(impl);
}

pbd_status pbd_cl_solver_create(void *impl, const pbd_model *m, pbd_plan *plan,
                                const pbd_solver_desc *desc, pbd_error *err)
{
    cl_impl *c = impl;
    c->plan = plan;
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        c->times[k].name = pbd_stage_names[k];
    pbd_status status = choose_kernels(c, plan, desc, err);
    if (status == PBD_OK)
        status = choose_work_groups(c, plan, err);
    if (status == PBD_OK)
        status = create_buffers(c, m, plan, err);
    if (status == PBD_OK)
        status = bind_arguments(c, plan, err);
    if (status != PBD_OK)
        cl_destroy(c);
    return status;
}

const pbd_backend_ops pbd_cl_ops = {
    .predict = cl_predict,
    .project = cl_project,
    .project_jacobi = cl_project_jacobi,
    .gather_jacobi = cl_gather_jacobi,
    .collide = cl_collide,
    .body_constraints = cl_body_constraints,
    .contacts_build = cl_contacts_build,
    .contacts = cl_contacts,
    .contacts_moment = cl_contacts_moment,
    .update = cl_update,
    .momentum = cl_momentum,
    .body_solve = cl_body_solve,
    .finish = cl_finish,
    .read = cl_read,
    .read_begin = cl_read_begin,
    .read_wait = cl_read_wait,
    .kernel_times = cl_kernel_times,
    .reset_times = cl_reset_times,
    .device_name = cl_device_name,
    .memory_bytes = cl_memory_bytes,
    .gl_shared = cl_gl_shared,
    .gl_attach = cl_gl_attach,
    .gl_positions = cl_gl_positions,
    .update_constraint = cl_update_constraint,
    .update_colliders = cl_update_colliders,
    .read_state = cl_read_state,
    .write_state = cl_write_state,
    .destroy = cl_destroy,
};
