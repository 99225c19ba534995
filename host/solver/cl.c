/* The OpenCL backend: the plan's arrays in device buffers, one kernel per stage, every launch
 * queued without waiting (the host waits only when asked for results). */
#include <stdlib.h>
#include <string.h>

#include "cl/runtime.h"
#include "solver/solver_impl.h"

/* Profiling events are harvested in batches of this many, so memory stays bounded. */
#define EVENT_BATCH 2048

/* A mesh of one block (too small for two, or numbered without locality) with up to this
 * many constraints runs in one work-item, one launch an iteration, rather than a launch a
 * colour and one for the collisions: on PoCL a launch costs about as much as 1,000
 * projections on one core, and a 60 x 60 cloth (14,042 constraints, 13 colours) steps in
 * 0.87 instead of 1.55 ms. */
#define PBD_ONE_BLOCK 32768

typedef struct cl_impl {
    pbd_cl cl;
    const pbd_plan *plan;
    cl_kernel kernels[PBD_STAGE_COUNT];
    cl_mem x, p, v, xp, vp, dx, distance, lambda, csr_offsets, csr_slots, planes;
    cl_mem p_next, gain, csr_other; /* Jacobi */
    /* Jacobi on CPU devices (jacobi_fused16): its rows, sixteen particles a group */
    cl_mem ell_start, ell_other, ell_code, ell_rest, ell_compliance, ell_lambda;
    int jacobi_reset; /* CPU devices: the iteration's reset flag, for jacobi_fused16 */
    /* Jacobi: the gather writes the other position buffer, so the iterate alternates between
     * p (0) and p_next (1). The prediction goes into the one (`jacobi_start`) from which the
     * substep's last gather lands in p. */
    int iterate, jacobi_start;
    cl_mem particle_body, segments, body_segments, body_ref, body_track, body_flags;
    cl_mem color_offsets, block_offsets, block_runs, block_first, cut_offsets, cut_runs;
    cl_kernel gs_blocks; /* block Gauss-Seidel on CPU devices (else NULL) */
    cl_kernel gs_cuts;   /* project_gs_blocks over the boundary's groups of cuts (else NULL) */
    cl_mem segment_sums, out_step, out_other, body_apply, body_done;
    size_t wg;       /* work-group size of the per-particle and per-constraint kernels */
    size_t acc_size; /* sizeof(pbd_acc) on the device: 8 with fp64 sums, else 4 */
    cl_event events[EVENT_BATCH];
    int event_kernel[EVENT_BATCH];
    int num_events;
    int pending;  /* a momentum correction is computed but not yet applied to v */
    size_t bytes; /* device memory allocated */
    int fused;    /* the update also sums for the correction (update_reduce_serial) */
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

/* Enqueues `kernel` over `items` work-items (rounded up to the work-group size), timed as
 * stage `id`. */
static pbd_status launch_kernel(cl_impl *c, cl_kernel kernel, int id, size_t items, size_t local,
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
    PBD_CL_CHECK(
        clEnqueueNDRangeKernel(c->cl.queue, kernel, 1, NULL, &global, &local, 0, NULL, ev));
    if (ev)
        c->event_kernel[c->num_events++] = id;
cleanup:
    return status;
}

/* Enqueues stage `id`'s kernel. */
static pbd_status launch(cl_impl *c, int id, size_t items, size_t local, pbd_error *err)
{
    return launch_kernel(c, c->kernels[id], id, items, local, err);
}

#define ARG(kernel, index, value)                                                                  \
    PBD_CL_CHECK(clSetKernelArg(c->kernels[kernel], index, sizeof(value), &(value)))

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
    ARG(PBD_STAGE_PREDICT, 9, apply);
    ARG(PBD_STAGE_PREDICT, 15, b);
    size_t n = (size_t)c->plan->num_particles;
    if (c->plan->reduce_serial) { /* CPU devices: predict_runs, a run of particles a work-item */
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

/* Applies a pending momentum correction before anything reads the velocities. */
static pbd_status flush(cl_impl *c, pbd_error *err)
{
    pbd_status status = PBD_OK;
    if (c->pending &&
        (status = launch(c, PBD_STAGE_APPLY, (size_t)c->plan->num_particles, c->wg, err)) == PBD_OK)
        c->pending = 0;
    return status;
}

static pbd_status cl_project_color(void *impl, int color, int reset, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_int offset = c->plan->color_offsets[color];
    cl_int count = c->plan->color_offsets[color + 1] - offset;
    cl_int r = reset;
    ARG(PBD_STAGE_PROJECT_GS, 3, offset);
    ARG(PBD_STAGE_PROJECT_GS, 4, count);
    ARG(PBD_STAGE_PROJECT_GS, 6, r);
    /* CPU devices launch colours only for a mesh of one block, with no boundary colours:
     * colour k is the block's whole part, sorted into runs (pbd_plan.block_runs). */
    if (c->plan->reduce_serial) {
        ARG(PBD_STAGE_PROJECT_GS, 7, c->plan->block_runs[2 * color]);
        ARG(PBD_STAGE_PROJECT_GS, 8, c->plan->block_runs[2 * color + 1]);
    }
    /* CPU devices (project_distance_gs16): sixteen constraints a work-item. */
    size_t items = c->plan->reduce_serial ? ((size_t)count + 15) / 16 : (size_t)count;
    status = launch(c, PBD_STAGE_PROJECT_GS, items, c->wg, err);
cleanup:
    return status;
}

static pbd_status cl_collide(cl_impl *c, pbd_error *err)
{
    return launch(c, PBD_STAGE_COLLIDE, (size_t)c->plan->num_particles, c->wg, err);
}

/* project_gs_blocks's arguments: `parts` workers through `colors` colours, worker w's part
 * of colour k being distance[offsets[k (parts + 1) + w] ..) and sorted as `runs` says
 * (pbd_plan.block_runs), then colliding its block with `planes` planes. */
static pbd_status blocks_args(cl_impl *c, cl_kernel k, cl_mem offsets, cl_mem runs, cl_int colors,
                              cl_int parts, cl_int planes, cl_int track, pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_mem mem[] = {c->p, c->distance, c->lambda, offsets, runs};
    cl_float inv_h2 = c->plan->inv_h2;
    cl_int zero = 0;
    for (cl_uint a = 0; a < 5; ++a)
        PBD_CL_CHECK(clSetKernelArg(k, a, sizeof(cl_mem), &mem[a]));
    PBD_CL_CHECK(clSetKernelArg(k, 5, sizeof colors, &colors));
    PBD_CL_CHECK(clSetKernelArg(k, 6, sizeof(cl_mem), &c->block_first));
    PBD_CL_CHECK(clSetKernelArg(k, 7, sizeof parts, &parts));
    PBD_CL_CHECK(clSetKernelArg(k, 8, sizeof inv_h2, &inv_h2));
    PBD_CL_CHECK(clSetKernelArg(k, 9, sizeof zero, &zero));
    PBD_CL_CHECK(clSetKernelArg(k, 10, sizeof(cl_mem), &c->planes));
    PBD_CL_CHECK(clSetKernelArg(k, 11, sizeof planes, &planes));
    PBD_CL_CHECK(clSetKernelArg(k, 12, sizeof(cl_mem), &c->dx));
    PBD_CL_CHECK(clSetKernelArg(k, 13, sizeof track, &track));
cleanup:
    return status;
}

/* One Gauss-Seidel iteration in the plan's order. CPU devices with blocks: the boundary
 * colours in one launch, a work-item a group of cuts (pbd_plan.num_cuts), then every
 * block's colours and collisions in one launch, a work-item a block. Otherwise a launch a
 * colour, then collide_planes. */
static pbd_status cl_project_gs(void *impl, int reset, pbd_error *err)
{
    cl_impl *c = impl;
    const pbd_plan *pl = c->plan;
    pbd_status status = PBD_OK;
    cl_int r = reset;
    int blocked = c->gs_blocks != NULL;
    int colors = blocked ? pl->boundary_colors : pl->num_colors;
    if (c->gs_cuts) {
        PBD_CL_CHECK(clSetKernelArg(c->gs_cuts, 9, sizeof r, &r));
        status = launch_kernel(c, c->gs_cuts, PBD_STAGE_PROJECT_GS, (size_t)pl->num_cuts, 1, err);
    } else if (!blocked) {
        for (int k = 0; k < colors && status == PBD_OK; ++k)
            status = cl_project_color(c, k, reset, err);
    }
    if (status != PBD_OK)
        return status;
    if (blocked) {
        PBD_CL_CHECK(clSetKernelArg(c->gs_blocks, 9, sizeof r, &r));
        status =
            launch_kernel(c, c->gs_blocks, PBD_STAGE_PROJECT_GS, (size_t)pl->num_blocks, 1, err);
    } else if (pl->num_planes > 0) {
        status = cl_collide(c, err);
    }
cleanup:
    return status;
}

static pbd_status cl_project_jacobi(void *impl, int reset, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_int r = reset;
    if (c->plan->reduce_serial) { /* CPU devices: jacobi_fused16 projects as it gathers */
        c->jacobi_reset = reset;
        return PBD_OK;
    }
    cl_mem p = position_buffer(c, c->iterate);
    ARG(PBD_STAGE_PROJECT_JACOBI, 0, p);
    ARG(PBD_STAGE_PROJECT_JACOBI, 6, r);
    status = launch(c, PBD_STAGE_PROJECT_JACOBI, (size_t)c->plan->num_distance, c->wg, err);
cleanup:
    return status;
}

static pbd_status cl_gather_jacobi(void *impl, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_mem from = position_buffer(c, c->iterate), to = position_buffer(c, !c->iterate);
    ARG(PBD_STAGE_GATHER, 0, from);
    ARG(PBD_STAGE_GATHER, 1, to);
    if (c->plan->reduce_serial) {
        cl_int r = c->jacobi_reset;
        ARG(PBD_STAGE_GATHER, 10, r);
    }
    size_t np = (size_t)c->plan->num_particles,
           items = c->plan->reduce_serial ? (np + 15) / 16 : np;
    status = launch(c, PBD_STAGE_GATHER, items,
                    c->plan->reduce_serial ? serial_local(c, items) : c->wg, err);
    c->iterate ^= 1;
cleanup:
    return status;
}

static pbd_status cl_update(void *impl, int bdf2, int keep_prev, pbd_error *err)
{
    cl_impl *c = impl;
    pbd_status status = PBD_OK;
    cl_int b = bdf2, k = keep_prev;
    size_t nseg = (size_t)c->plan->num_segments;
    /* The two kernels take bdf2 and keep_prev at different positions. */
    ARG(PBD_STAGE_UPDATE, c->fused ? 10 : 7, b);
    ARG(PBD_STAGE_UPDATE, c->fused ? 11 : 8, k);
    size_t n = (size_t)c->plan->num_particles, runs = (n + PBD_PARTICLE_RUN - 1) / PBD_PARTICLE_RUN;
    if (c->fused)
        status = launch(c, PBD_STAGE_UPDATE, nseg, serial_local(c, nseg), err);
    else if (c->plan->reduce_serial) /* CPU devices: update_runs, a run a work-item */
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
    cl_int with_dx = mode == PBD_SOLVE_STEP && pl->num_planes > 0;
    cl_int stats = mode == PBD_SOLVE_STATS, m = mode;
    size_t wg = PBD_REDUCE_WG;
    ARG(PBD_STAGE_REDUCE, 9, with_dx);
    ARG(PBD_STAGE_REDUCE, 10, stats);
    ARG(PBD_STAGE_SOLVE, 5, m);
    ARG(PBD_STAGE_SOLVE, 7, out);
    size_t nseg = (size_t)pl->num_segments, nb = (size_t)pl->num_bodies;
    if (pl->reduce_serial)
        status = launch(c, PBD_STAGE_REDUCE, nseg, serial_local(c, nseg), err);
    else
        status = launch(c, PBD_STAGE_REDUCE, nseg * wg, wg, err);
    if (status == PBD_OK && pl->solve_serial)
        status = launch(c, PBD_STAGE_SOLVE, nb, pl->reduce_serial ? serial_local(c, nb) : wg, err);
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

static size_t cl_memory_bytes(const void *impl)
{
    return ((const cl_impl *)impl)->bytes;
}

static void cl_destroy(void *impl)
{
    cl_impl *c = impl;
    if (c->cl.queue)
        clFinish(c->cl.queue);
    for (int k = 0; k < c->num_events; ++k)
        clReleaseEvent(c->events[k]);
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        if (c->kernels[k])
            clReleaseKernel(c->kernels[k]);
    if (c->gs_blocks)
        clReleaseKernel(c->gs_blocks);
    if (c->gs_cuts)
        clReleaseKernel(c->gs_cuts);
    cl_mem *mems[] = {&c->x,
                      &c->p,
                      &c->v,
                      &c->xp,
                      &c->vp,
                      &c->dx,
                      &c->distance,
                      &c->lambda,
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
                      &c->planes,
                      &c->particle_body,
                      &c->segments,
                      &c->body_segments,
                      &c->body_ref,
                      &c->body_track,
                      &c->body_flags,
                      &c->segment_sums,
                      &c->out_step,
                      &c->out_other,
                      &c->body_apply,
                      &c->body_done,
                      &c->color_offsets,
                      &c->block_offsets,
                      &c->block_runs,
                      &c->cut_offsets,
                      &c->cut_runs,
                      &c->block_first};
    for (size_t k = 0; k < sizeof mems / sizeof mems[0]; ++k)
        if (*mems[k])
            clReleaseMemObject(*mems[k]);
    pbd_cl_close(&c->cl);
    free(c);
}

/* Creates a buffer of `bytes` (at least 1) initialised from `host` when given; checks the
 * device's single-allocation limit first so the error names the array. */
static pbd_status buffer(cl_impl *c, cl_mem *out, const char *name, size_t bytes, const void *host,
                         pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_int rc = CL_SUCCESS;
    if (bytes == 0)
        bytes = 16;
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
                const pbd_distance *d = in ? &pl->distance[pl->csr_slots[s] >> 1] : NULL;
                r->other[e] = in ? pl->csr_other[s] : i < np ? i : np - 1;
                r->code[e] = in ? pl->csr_slots[s] : -1;
                r->rest[e] = d ? d->rest : 0.0f;
                r->compliance[e] = d ? d->compliance : 0.0f;
            }
    return PBD_OK;
}

pbd_status pbd_cl_solver_create(const pbd_model *m, pbd_plan *plan, const pbd_solver_desc *desc,
                                void **impl, pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_impl *c = calloc(1, sizeof *c);
    if (!c)
        return pbd_error_set(err, PBD_ERR_MEMORY, "out of memory creating the OpenCL solver");
    c->plan = plan;
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        c->times[k].name = pbd_stage_names[k];
    status = pbd_cl_open(&c->cl, desc->device, desc->profile, err);
    if (status != PBD_OK)
        goto cleanup;
    /* Reduction layout: a work-group and a tree per item on GPUs; on a CPU device, where a
     * work-group is a loop and barriers are costly, a work-item per item. */
    plan->reduce_serial = strcmp(c->cl.info.type, "cpu") == 0;
    if (plan->reduce_serial)
        plan->solve_serial = 1;
    const char *names[PBD_STAGE_COUNT];
    for (int k = 0; k < PBD_STAGE_COUNT; ++k)
        names[k] = pbd_stage_names[k];
    if (plan->reduce_serial)
        names[PBD_STAGE_REDUCE] = "body_reduce_serial";
    if (plan->solve_serial)
        names[PBD_STAGE_SOLVE] = "body_solve_serial";
    const pbd_device_info *info = &c->cl.info;
    int float_sums = desc->float_sums || !info->fp64;
    /* CPU devices with fp64 sums: the velocity update also sums for the correction. */
    c->fused = plan->reduce_serial && plan->momentum_active && !float_sums;
    /* The fused update also solves each body (its last segment's work-item), so a substep's
     * correction costs no launch of its own. */
    if (c->fused) {
        names[PBD_STAGE_UPDATE] = "update_reduce_serial";
        plan->momentum_launches = 0;
    } else if (plan->reduce_serial) {
        names[PBD_STAGE_UPDATE] = "update_runs";
    }
    /* CPU devices: kernels that take 16 constraints, 16 particles or a run of particles a
     * work-item in float16 (bit-identical to the float4 ones). GPUs keep the float4 kernels. */
    int lanes = plan->reduce_serial;
    if (lanes) {
        names[PBD_STAGE_PROJECT_GS] = "project_distance_gs16";
        names[PBD_STAGE_GATHER] = "jacobi_fused16"; /* project_distance_jacobi is not launched */
        names[PBD_STAGE_PREDICT] = "predict_runs";
    }
    if (status == PBD_OK)
        status = pbd_cl_build(&c->cl, desc->kernel_dir,
                              float_sums && info->fp64 ? "-DPBD_FLOAT_ACC=1" : NULL, err);
    for (int k = 0; status == PBD_OK && k < PBD_STAGE_COUNT; ++k)
        status = pbd_cl_kernel(&c->cl, names[k], &c->kernels[k], err);
    /* Block Gauss-Seidel on CPU devices: a work-item runs a whole block, so the step needs
     * two launches an iteration instead of one a colour plus collide_planes; a small mesh
     * of one block, one. */
    int blocked = lanes && plan->cfg.solver == PBD_SOLVER_GS &&
                  (plan->num_blocks > 1 || plan->num_distance <= PBD_ONE_BLOCK);
    if (blocked && status == PBD_OK)
        status = pbd_cl_kernel(&c->cl, "project_gs_blocks", &c->gs_blocks, err);
    /* The boundary constraints in groups that share no particle: one launch, a work-item a
     * group, run as the blocks are (without their collisions). */
    if (blocked && plan->boundary_colors > 0 && status == PBD_OK)
        status = pbd_cl_kernel(&c->cl, "project_gs_blocks", &c->gs_cuts, err);
    if (status != PBD_OK)
        goto cleanup;

    c->acc_size = float_sums ? sizeof(float) : sizeof(double);
    /* Work-group size: 64 suits GPUs (two warps / one wavefront); on CPU devices a work-group
     * is a loop a thread runs, and bigger groups amortise its start-up. */
    c->wg = strcmp(info->type, "cpu") == 0 ? 256 : 64;
    if (c->wg > info->max_work_group)
        c->wg = info->max_work_group;
    for (int k = PBD_STAGE_REDUCE; k <= PBD_STAGE_SOLVE; ++k) {
        if ((k == PBD_STAGE_REDUCE && plan->reduce_serial) ||
            (k == PBD_STAGE_SOLVE && plan->solve_serial))
            continue;
        size_t kwg = 0;
        PBD_CL_CHECK(clGetKernelWorkGroupInfo(c->kernels[k], c->cl.device,
                                              CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL));
        if (kwg < PBD_REDUCE_WG) {
            status = pbd_error_set(err, PBD_ERR_LIMIT,
                                   "%s: kernel %s allows work-groups of %zu, needs %d", info->name,
                                   pbd_stage_names[k], kwg, PBD_REDUCE_WG);
            goto cleanup;
        }
    }

    size_t np = (size_t)plan->num_particles, nc = (size_t)plan->num_distance;
    size_t nb = (size_t)plan->num_bodies, f4 = sizeof(pbd_float4);
    int bdf2 = plan->cfg.velocity_update == PBD_VELOCITY_BDF2;
    double *track0 = calloc(6 * nb, sizeof(double));
    if (!track0) {
        status = pbd_error_set(err, PBD_ERR_MEMORY, "out of memory creating the OpenCL solver");
        goto cleanup;
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
    BUF(dx, plan->momentum_active ? np * f4 : 0, NULL);
    BUF(distance, nc * sizeof(pbd_distance), plan->distance);
    BUF(lambda, nc * sizeof(float), NULL);
    int jacobi = plan->cfg.solver == PBD_SOLVER_JACOBI;
    int split = jacobi && !lanes; /* Jacobi's projection and gather as two kernels */
    BUF(p_next, jacobi ? np * f4 : 0, NULL);
    BUF(gain, split ? nc * sizeof(float) : 0, NULL);
    BUF(csr_offsets, (np + 1) * sizeof(int), plan->csr_offsets);
    BUF(csr_slots, 2 * nc * sizeof(int), nc ? plan->csr_slots : NULL);
    BUF(csr_other, split ? 2 * nc * sizeof(int) : 0, split && nc ? plan->csr_other : NULL);
    jacobi_rows rows = {0};
    if (st == PBD_OK && jacobi && lanes)
        st = jacobi_rows_build(plan, &rows, err);
    size_t nell = 16 * rows.entries, ngroups = rows.start ? (np + 15) / 16 + 1 : 0;
    BUF(ell_start, ngroups * sizeof(int), rows.start);
    BUF(ell_other, nell * sizeof(int), nell ? rows.other : NULL);
    BUF(ell_code, nell * sizeof(int), nell ? rows.code : NULL);
    BUF(ell_rest, nell * sizeof(float), nell ? rows.rest : NULL);
    BUF(ell_compliance, nell * sizeof(float), nell ? rows.compliance : NULL);
    BUF(ell_lambda, nell * sizeof(float), NULL);
    jacobi_rows_free(&rows);
    BUF(planes, ((size_t)plan->num_planes + 1) * f4, plan->planes);
    size_t nic = (size_t)(plan->num_colors - plan->boundary_colors);
    BUF(color_offsets, ((size_t)plan->num_colors + 1) * sizeof(int), plan->color_offsets);
    BUF(block_offsets, nic * ((size_t)plan->num_blocks + 1) * sizeof(int), plan->block_offsets);
    BUF(block_runs, nic * 2 * (size_t)plan->num_blocks * sizeof(int), plan->block_runs);
    size_t nbcol = (size_t)plan->boundary_colors, ncut = (size_t)plan->num_cuts;
    BUF(cut_offsets, nbcol * (ncut + 1) * sizeof(int), plan->cut_offsets);
    BUF(cut_runs, nbcol * 2 * ncut * sizeof(int), plan->cut_runs);
    BUF(block_first, ((size_t)plan->num_blocks + 1) * sizeof(int), plan->block_first);
    BUF(particle_body, np * sizeof(int), m->body);
    BUF(segments, (size_t)plan->num_segments * sizeof(pbd_segment), plan->segments);
    BUF(body_segments, (nb + 1) * sizeof(int), plan->body_segments);
    BUF(body_ref, nb * f4, plan->body_ref);
    BUF(body_track, 6 * nb * c->acc_size, track0);
    BUF(body_flags, nb * sizeof(int), plan->body_flags);
    BUF(segment_sums, (size_t)plan->num_segments * PBD_SUM_COUNT * c->acc_size, NULL);
    BUF(out_step, nb * PBD_OUT_COUNT * c->acc_size, NULL);
    BUF(out_other, nb * PBD_OUT_COUNT * c->acc_size, NULL);
    BUF(body_apply, nb * PBD_APPLY_COUNT * f4, NULL);
    BUF(body_done, c->fused ? nb * sizeof(cl_int) : 0, NULL);
#undef BUF
    free(track0);
    if ((status = st) != PBD_OK)
        goto cleanup;
    /* No correction has run yet: zeros (a float 0 and a double 0 are both all-zero bits). */
    {
        size_t bytes = nb * PBD_OUT_COUNT * c->acc_size;
        cl_uchar zero = 0;
        PBD_CL_CHECK(
            clEnqueueFillBuffer(c->cl.queue, c->out_step, &zero, 1, 0, bytes, 0, NULL, NULL));
        /* No body's segments have counted themselves done (update_reduce_serial). */
        if (c->fused)
            PBD_CL_CHECK(clEnqueueFillBuffer(c->cl.queue, c->body_done, &zero, 1, 0,
                                             nb * sizeof(cl_int), 0, NULL, NULL));
    }

    cl_int n = plan->num_particles, ncons = plan->num_distance, npl = plan->num_planes;
    cl_int nbodies = plan->num_bodies;
    cl_int keep_v = plan->cfg.velocity_update == PBD_VELOCITY_BDF2;
    /* Collision displacements are recorded only where there is something to collide with. */
    cl_int zero = 0, track = plan->momentum_active && plan->num_planes > 0;
    const float *g = plan->cfg.gravity;
    float h = plan->h, inv_h = plan->inv_h, inv_h2 = plan->inv_h2, omega = plan->cfg.omega;
    float point = plan->point_damping, rigid = plan->rigid_damping;
    c->jacobi_start = jacobi && plan->cfg.iterations % 2 == 1;
    cl_mem p_start = position_buffer(c, c->jacobi_start);
    ARG(PBD_STAGE_PREDICT, 0, c->x);
    ARG(PBD_STAGE_PREDICT, 1, p_start);
    ARG(PBD_STAGE_PREDICT, 2, c->v);
    ARG(PBD_STAGE_PREDICT, 3, c->xp);
    ARG(PBD_STAGE_PREDICT, 4, c->vp);
    ARG(PBD_STAGE_PREDICT, 5, c->dx);
    ARG(PBD_STAGE_PREDICT, 6, c->particle_body);
    ARG(PBD_STAGE_PREDICT, 7, c->body_apply);
    ARG(PBD_STAGE_PREDICT, 8, rigid);
    ARG(PBD_STAGE_PREDICT, 9, zero);
    ARG(PBD_STAGE_PREDICT, 10, keep_v);
    ARG(PBD_STAGE_PREDICT, 11, g[0]);
    ARG(PBD_STAGE_PREDICT, 12, g[1]);
    ARG(PBD_STAGE_PREDICT, 13, g[2]);
    ARG(PBD_STAGE_PREDICT, 14, h);
    ARG(PBD_STAGE_PREDICT, 15, zero);
    ARG(PBD_STAGE_PREDICT, 16, track);
    ARG(PBD_STAGE_PREDICT, 17, n);
    ARG(PBD_STAGE_PROJECT_GS, 0, c->p);
    ARG(PBD_STAGE_PROJECT_GS, 1, c->distance);
    ARG(PBD_STAGE_PROJECT_GS, 2, c->lambda);
    ARG(PBD_STAGE_PROJECT_GS, 3, zero);
    ARG(PBD_STAGE_PROJECT_GS, 4, zero);
    ARG(PBD_STAGE_PROJECT_GS, 5, inv_h2);
    ARG(PBD_STAGE_PROJECT_GS, 6, zero);
    if (lanes) {
        ARG(PBD_STAGE_PROJECT_GS, 7, zero);
        ARG(PBD_STAGE_PROJECT_GS, 8, zero);
    }
    ARG(PBD_STAGE_COLLIDE, 0, c->p);
    ARG(PBD_STAGE_COLLIDE, 1, c->dx);
    ARG(PBD_STAGE_COLLIDE, 2, c->planes);
    ARG(PBD_STAGE_COLLIDE, 3, npl);
    ARG(PBD_STAGE_COLLIDE, 4, track);
    ARG(PBD_STAGE_COLLIDE, 5, n);
    ARG(PBD_STAGE_PROJECT_JACOBI, 0, c->p);
    ARG(PBD_STAGE_PROJECT_JACOBI, 1, c->distance);
    ARG(PBD_STAGE_PROJECT_JACOBI, 2, c->lambda);
    ARG(PBD_STAGE_PROJECT_JACOBI, 3, c->gain);
    ARG(PBD_STAGE_PROJECT_JACOBI, 4, ncons);
    ARG(PBD_STAGE_PROJECT_JACOBI, 5, inv_h2);
    ARG(PBD_STAGE_PROJECT_JACOBI, 6, zero);
    if (c->gs_blocks) {
        cl_int nbc = plan->boundary_colors, nblocks = plan->num_blocks;
        cl_int ninterior = plan->num_colors - plan->boundary_colors;
        if (status == PBD_OK)
            status = blocks_args(c, c->gs_blocks, c->block_offsets, c->block_runs, ninterior,
                                 nblocks, npl, track, err);
        /* the boundary's groups: no collisions, so no planes and nothing to track */
        if (status == PBD_OK && c->gs_cuts)
            status = blocks_args(c, c->gs_cuts, c->cut_offsets, c->cut_runs, nbc, plan->num_cuts, 0,
                                 0, err);
        if (status != PBD_OK)
            goto cleanup;
        plan->gs_launches = (nbc > 0) + 1;
    }
    ARG(PBD_STAGE_GATHER, 0, c->p);
    ARG(PBD_STAGE_GATHER, 1, c->p_next);
    if (lanes) {
        ARG(PBD_STAGE_GATHER, 2, c->ell_start);
        ARG(PBD_STAGE_GATHER, 3, c->ell_other);
        ARG(PBD_STAGE_GATHER, 4, c->ell_code);
        ARG(PBD_STAGE_GATHER, 5, c->ell_rest);
        ARG(PBD_STAGE_GATHER, 6, c->ell_compliance);
        ARG(PBD_STAGE_GATHER, 7, c->ell_lambda);
        ARG(PBD_STAGE_GATHER, 8, omega);
        ARG(PBD_STAGE_GATHER, 9, inv_h2);
        ARG(PBD_STAGE_GATHER, 10, zero);
        ARG(PBD_STAGE_GATHER, 11, c->dx);
        ARG(PBD_STAGE_GATHER, 12, c->planes);
        ARG(PBD_STAGE_GATHER, 13, npl);
        ARG(PBD_STAGE_GATHER, 14, track);
        ARG(PBD_STAGE_GATHER, 15, n);
        plan->jacobi_launches = 1;
    } else {
        ARG(PBD_STAGE_GATHER, 2, c->gain);
        ARG(PBD_STAGE_GATHER, 3, c->csr_offsets);
        ARG(PBD_STAGE_GATHER, 4, c->csr_slots);
        ARG(PBD_STAGE_GATHER, 5, c->csr_other);
        ARG(PBD_STAGE_GATHER, 6, omega);
        ARG(PBD_STAGE_GATHER, 7, c->dx);
        ARG(PBD_STAGE_GATHER, 8, c->planes);
        ARG(PBD_STAGE_GATHER, 9, npl);
        ARG(PBD_STAGE_GATHER, 10, track);
        ARG(PBD_STAGE_GATHER, 11, n);
    }
    cl_int nseg = plan->num_segments;
    cl_int with_dx = plan->num_planes > 0;
    cl_float4 gh = {{g[0], g[1], g[2], h}};
    if (c->fused) {
        ARG(PBD_STAGE_UPDATE, 0, c->segments);
        ARG(PBD_STAGE_UPDATE, 1, c->x);
        ARG(PBD_STAGE_UPDATE, 2, c->p);
        ARG(PBD_STAGE_UPDATE, 3, c->v);
        ARG(PBD_STAGE_UPDATE, 4, c->xp);
        ARG(PBD_STAGE_UPDATE, 5, c->vp);
        ARG(PBD_STAGE_UPDATE, 6, c->dx);
        ARG(PBD_STAGE_UPDATE, 7, c->body_ref);
        ARG(PBD_STAGE_UPDATE, 8, inv_h);
        ARG(PBD_STAGE_UPDATE, 9, point);
        ARG(PBD_STAGE_UPDATE, 10, zero);
        ARG(PBD_STAGE_UPDATE, 11, zero);
        ARG(PBD_STAGE_UPDATE, 12, with_dx);
        ARG(PBD_STAGE_UPDATE, 13, c->segment_sums);
        ARG(PBD_STAGE_UPDATE, 14, nseg);
        ARG(PBD_STAGE_UPDATE, 15, c->body_track);
        ARG(PBD_STAGE_UPDATE, 16, c->body_flags);
        ARG(PBD_STAGE_UPDATE, 17, gh);
        ARG(PBD_STAGE_UPDATE, 18, c->out_step);
        ARG(PBD_STAGE_UPDATE, 19, c->body_apply);
        ARG(PBD_STAGE_UPDATE, 20, c->body_segments);
        ARG(PBD_STAGE_UPDATE, 21, c->body_done);
    } else {
        ARG(PBD_STAGE_UPDATE, 0, c->x);
        ARG(PBD_STAGE_UPDATE, 1, c->p);
        ARG(PBD_STAGE_UPDATE, 2, c->v);
        ARG(PBD_STAGE_UPDATE, 3, c->xp);
        ARG(PBD_STAGE_UPDATE, 4, c->vp);
        ARG(PBD_STAGE_UPDATE, 5, inv_h);
        ARG(PBD_STAGE_UPDATE, 6, point);
        ARG(PBD_STAGE_UPDATE, 7, zero);
        ARG(PBD_STAGE_UPDATE, 8, zero);
        ARG(PBD_STAGE_UPDATE, 9, n);
    }
    ARG(PBD_STAGE_REDUCE, 0, c->segments);
    ARG(PBD_STAGE_REDUCE, 1, c->x);
    ARG(PBD_STAGE_REDUCE, 2, c->v);
    ARG(PBD_STAGE_REDUCE, 3, c->dx);
    ARG(PBD_STAGE_REDUCE, 4, c->body_ref);
    ARG(PBD_STAGE_REDUCE, 5, c->csr_offsets);
    ARG(PBD_STAGE_REDUCE, 6, c->csr_slots);
    ARG(PBD_STAGE_REDUCE, 7, c->distance);
    ARG(PBD_STAGE_REDUCE, 8, inv_h);
    ARG(PBD_STAGE_REDUCE, 9, zero);
    ARG(PBD_STAGE_REDUCE, 10, zero);
    ARG(PBD_STAGE_REDUCE, 11, c->segment_sums);
    ARG(PBD_STAGE_REDUCE, 12, nseg);
    ARG(PBD_STAGE_SOLVE, 0, c->body_segments);
    ARG(PBD_STAGE_SOLVE, 1, c->segment_sums);
    ARG(PBD_STAGE_SOLVE, 2, c->body_ref);
    ARG(PBD_STAGE_SOLVE, 3, c->body_track);
    ARG(PBD_STAGE_SOLVE, 4, c->body_flags);
    ARG(PBD_STAGE_SOLVE, 5, zero);
    ARG(PBD_STAGE_SOLVE, 6, gh);
    ARG(PBD_STAGE_SOLVE, 7, c->out_other);
    ARG(PBD_STAGE_SOLVE, 8, c->body_apply);
    ARG(PBD_STAGE_SOLVE, 9, nbodies);
    ARG(PBD_STAGE_APPLY, 0, c->x);
    ARG(PBD_STAGE_APPLY, 1, c->v);
    ARG(PBD_STAGE_APPLY, 2, c->particle_body);
    ARG(PBD_STAGE_APPLY, 3, c->body_apply);
    ARG(PBD_STAGE_APPLY, 4, rigid);
    ARG(PBD_STAGE_APPLY, 5, n);
    *impl = c;
    return PBD_OK;
cleanup:
    cl_destroy(c);
    return status;
}

const pbd_backend_ops pbd_cl_ops = {
    cl_predict,     cl_project_gs,  cl_project_jacobi, cl_gather_jacobi, cl_update,
    cl_momentum,    cl_body_solve,  cl_finish,         cl_read,          cl_kernel_times,
    cl_reset_times, cl_device_name, cl_memory_bytes,   cl_destroy,
};
