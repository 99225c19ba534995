/* Calls that fail: every call the library makes that can fail (an OpenCL allocation, build,
 * enqueue or wait; a host allocation) is made to fail in turn, once, and the library must say
 * so through the API call that made it: a status that is not PBD_OK and a one-line message,
 * nothing leaked, and (with ASan) nothing touched after it is freed. A solver whose step or
 * update failed refuses to step again.
 *
 * The test executable defines the entry points it fails; the library, linked in statically,
 * calls them. The OpenCL ones forward to the ICD loader's (dlsym(RTLD_NEXT)), the allocator's
 * to glibc's (__libc_malloc and the like, which dlsym itself may call for). Only the
 * library's own allocations fail (those called from the executable's code, not from the
 * OpenCL implementation's threads), and it must free each of them: the test keeps a table of
 * those live. The allocator's cases are built only without ASan, whose allocator they would
 * bypass. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <CL/cl.h>

#include "test_util.h"

/* ---- the interposed entry points --------------------------------------------------------- */

enum { MAX_SITES = 1 << 16 };

/* A call site: the entry point and the library's return address. */
typedef struct site {
    const char *fn;
    const void *ret;
    const void *obj; /* a launch's kernel (launches of different kernels are different sites) */
    int phase;
} site;

/* Which entry points fail: the OpenCL ones or the allocator's. */
enum kind { FAIL_CL, FAIL_MALLOC };

static struct {
    int kind;               /* enum kind */
    int armed;              /* the allocator's: 1 while the script runs the library */
    long calls;             /* interposed calls since the last reset */
    long fail_at;           /* the call to fail (1-based), or 0 */
    int failed;             /* phase of the failed call, or -1 */
    const void *failed_ret; /* and its return address */
    long cl_live;           /* OpenCL objects made and not released */
    int phase;              /* what the script is doing (enum phase) */
    int record;             /* 1: note each call's site in sites[] */
    site sites[MAX_SITES];
    long num_sites; /* calls noted (up to MAX_SITES) */
} g;

/* Counts a call to fn from ret (on obj); 1 where this call is to fail. */
static int fault(const char *fn, const void *ret, const void *obj)
{
    long k = g.calls++;
    if (g.record && k < MAX_SITES) {
        g.sites[k] = (site){fn, ret, obj, g.phase};
        g.num_sites = k + 1;
    }
    if (g.fail_at == k + 1) {
        g.failed = g.phase;
        g.failed_ret = ret;
        return 1;
    }
    return 0;
}

#define REAL(name)                                                                                 \
    static __typeof__(&name) real;                                                                 \
    if (!real)                                                                                     \
        *(void **)&real = dlsym(RTLD_NEXT, #name); /* POSIX's way to a function pointer */

#define FAULT(name)         (g.kind == FAIL_CL && fault(#name, __builtin_return_address(0), NULL))
#define FAULT_ON(name, obj) (g.kind == FAIL_CL && fault(#name, __builtin_return_address(0), obj))

/* An OpenCL object made (counted while it lives); returns it. */
static void *made(void *obj)
{
    g.cl_live += obj != NULL;
    return obj;
}

/* Fails with `code` through errcode_ret (entry points that return an object). */
#define FAIL_OBJ(code)                                                                             \
    do {                                                                                           \
        if (errcode_ret)                                                                           \
            *errcode_ret = (code);                                                                 \
        return NULL;                                                                               \
    } while (0)

cl_context clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
                           const cl_device_id *devices,
                           void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t,
                                                         void *),
                           void *user_data, cl_int *errcode_ret)
{
    REAL(clCreateContext);
    if (FAULT(clCreateContext))
        FAIL_OBJ(CL_OUT_OF_HOST_MEMORY);
    return made(real(properties, num_devices, devices, pfn_notify, user_data, errcode_ret));
}

cl_command_queue clCreateCommandQueue(cl_context context, cl_device_id device,
                                      cl_command_queue_properties properties, cl_int *errcode_ret)
{
    REAL(clCreateCommandQueue);
    if (FAULT(clCreateCommandQueue))
        FAIL_OBJ(CL_OUT_OF_RESOURCES);
    return made(real(context, device, properties, errcode_ret));
}

cl_program clCreateProgramWithSource(cl_context context, cl_uint count, const char **strings,
                                     const size_t *lengths, cl_int *errcode_ret)
{
    REAL(clCreateProgramWithSource);
    if (FAULT(clCreateProgramWithSource))
        FAIL_OBJ(CL_OUT_OF_HOST_MEMORY);
    return made(real(context, count, strings, lengths, errcode_ret));
}

cl_int clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                      const char *options, void(CL_CALLBACK *pfn_notify)(cl_program, void *),
                      void *user_data)
{
    REAL(clBuildProgram);
    if (FAULT(clBuildProgram))
        return CL_OUT_OF_RESOURCES;
    return real(program, num_devices, device_list, options, pfn_notify, user_data);
}

cl_kernel clCreateKernel(cl_program program, const char *kernel_name, cl_int *errcode_ret)
{
    REAL(clCreateKernel);
    if (FAULT(clCreateKernel))
        FAIL_OBJ(CL_OUT_OF_HOST_MEMORY);
    return made(real(program, kernel_name, errcode_ret));
}

cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                      cl_int *errcode_ret)
{
    REAL(clCreateBuffer);
    if (FAULT(clCreateBuffer))
        FAIL_OBJ(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    return made(real(context, flags, size, host_ptr, errcode_ret));
}

cl_int clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void *arg_value)
{
    REAL(clSetKernelArg);
    if (FAULT(clSetKernelArg))
        return CL_OUT_OF_HOST_MEMORY;
    return real(kernel, arg_index, arg_size, arg_value);
}

cl_int clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim,
                              const size_t *global_work_offset, const size_t *global_work_size,
                              const size_t *local_work_size, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event)
{
    REAL(clEnqueueNDRangeKernel);
    if (FAULT_ON(clEnqueueNDRangeKernel, kernel))
        return CL_OUT_OF_RESOURCES;
    return real(queue, kernel, work_dim, global_work_offset, global_work_size, local_work_size,
                num_events, wait_list, event);
}

cl_int clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset,
                            size_t size, const void *ptr, cl_uint num_events,
                            const cl_event *wait_list, cl_event *event)
{
    REAL(clEnqueueWriteBuffer);
    if (FAULT(clEnqueueWriteBuffer))
        return CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return real(queue, buffer, blocking, offset, size, ptr, num_events, wait_list, event);
}

cl_int clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset,
                           size_t size, void *ptr, cl_uint num_events, const cl_event *wait_list,
                           cl_event *event)
{
    REAL(clEnqueueReadBuffer);
    if (FAULT(clEnqueueReadBuffer))
        return CL_OUT_OF_RESOURCES;
    return real(queue, buffer, blocking, offset, size, ptr, num_events, wait_list, event);
}

cl_int clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer, const void *pattern,
                           size_t pattern_size, size_t offset, size_t size, cl_uint num_events,
                           const cl_event *wait_list, cl_event *event)
{
    REAL(clEnqueueFillBuffer);
    if (FAULT(clEnqueueFillBuffer))
        return CL_OUT_OF_RESOURCES;
    return real(queue, buffer, pattern, pattern_size, offset, size, num_events, wait_list, event);
}

cl_int clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                           size_t dst_offset, size_t size, cl_uint num_events,
                           const cl_event *wait_list, cl_event *event)
{
    REAL(clEnqueueCopyBuffer);
    if (FAULT(clEnqueueCopyBuffer))
        return CL_OUT_OF_RESOURCES;
    return real(queue, src, dst, src_offset, dst_offset, size, num_events, wait_list, event);
}

cl_int clEnqueueWriteBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                const size_t *buffer_origin, const size_t *host_origin,
                                const size_t *region, size_t buffer_row_pitch,
                                size_t buffer_slice_pitch, size_t host_row_pitch,
                                size_t host_slice_pitch, const void *ptr, cl_uint num_events,
                                const cl_event *wait_list, cl_event *event)
{
    REAL(clEnqueueWriteBufferRect);
    if (FAULT(clEnqueueWriteBufferRect))
        return CL_OUT_OF_RESOURCES;
    return real(queue, buffer, blocking, buffer_origin, host_origin, region, buffer_row_pitch,
                buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr, num_events, wait_list,
                event);
}

cl_int clEnqueueReadBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                               const size_t *buffer_origin, const size_t *host_origin,
                               const size_t *region, size_t buffer_row_pitch,
                               size_t buffer_slice_pitch, size_t host_row_pitch,
                               size_t host_slice_pitch, void *ptr, cl_uint num_events,
                               const cl_event *wait_list, cl_event *event)
{
    REAL(clEnqueueReadBufferRect);
    if (FAULT(clEnqueueReadBufferRect))
        return CL_OUT_OF_RESOURCES;
    return real(queue, buffer, blocking, buffer_origin, host_origin, region, buffer_row_pitch,
                buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr, num_events, wait_list,
                event);
}

cl_int clFinish(cl_command_queue queue)
{
    REAL(clFinish);
    if (FAULT(clFinish)) {
        real(queue); /* the queued work is done either way; only the report fails */
        return CL_OUT_OF_RESOURCES;
    }
    return real(queue);
}

cl_int clFlush(cl_command_queue queue)
{
    REAL(clFlush);
    if (FAULT(clFlush))
        return CL_OUT_OF_RESOURCES;
    return real(queue);
}

cl_int clWaitForEvents(cl_uint num_events, const cl_event *events)
{
    REAL(clWaitForEvents);
    if (FAULT(clWaitForEvents)) {
        real(num_events, events);
        return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    }
    return real(num_events, events);
}

/* Releases: each object made is released once (the library retains none). */
#define RELEASE(name, type)                                                                        \
    cl_int name(type obj)                                                                          \
    {                                                                                              \
        REAL(name);                                                                                \
        cl_int e = real(obj);                                                                      \
        g.cl_live -= e == CL_SUCCESS;                                                              \
        return e;                                                                                  \
    }
RELEASE(clReleaseContext, cl_context)
RELEASE(clReleaseCommandQueue, cl_command_queue)
RELEASE(clReleaseProgram, cl_program)
RELEASE(clReleaseKernel, cl_kernel)
RELEASE(clReleaseMemObject, cl_mem)

/* ---- the allocator ----------------------------------------------------------------------- */

#ifdef PBD_MALLOC_FAULTS
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);
extern const char __executable_start[], etext[]; /* the executable's code (GNU ld) */

/* The library's live allocations: an open-addressed set of pointers (NULL: empty, `gone`: a
 * removed entry), touched only from the executable's code, which runs on one thread. */
enum { LIVE_SLOTS = 1 << 20 };
static const void *live[LIVE_SLOTS];
static long num_live;
static const char gone_mark;
#define GONE ((const void *)&gone_mark)

static int from_library(const void *ret)
{
    return (const char *)ret >= __executable_start && (const char *)ret < etext;
}

static size_t live_slot(const void *p)
{
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15u) & (LIVE_SLOTS - 1);
}

static void live_add(const void *p)
{
    size_t k = live_slot(p);
    while (live[k] && live[k] != GONE)
        k = (k + 1) & (LIVE_SLOTS - 1);
    live[k] = p;
    ++num_live;
}

static void live_remove(const void *p)
{
    for (size_t k = live_slot(p); live[k]; k = (k + 1) & (LIVE_SLOTS - 1))
        if (live[k] == p) {
            live[k] = GONE;
            --num_live;
            return;
        }
}

static void live_clear(void)
{
    memset(live, 0, sizeof live);
    num_live = 0;
}

/* 1 where this allocation, the library's, is to fail. */
static int alloc_fails(const char *fn, const void *ret)
{
    return from_library(ret) && g.kind == FAIL_MALLOC && g.armed && fault(fn, ret, NULL);
}

/* Notes p, allocated from ret, as live where it is the library's. */
static void *alloc_done(void *p, const void *ret)
{
    if (p && from_library(ret) && g.armed)
        live_add(p);
    return p;
}

void *malloc(size_t n)
{
    const void *ret = __builtin_return_address(0);
    return alloc_fails("malloc", ret) ? NULL : alloc_done(__libc_malloc(n), ret);
}

void *calloc(size_t n, size_t size)
{
    const void *ret = __builtin_return_address(0);
    return alloc_fails("calloc", ret) ? NULL : alloc_done(__libc_calloc(n, size), ret);
}

void *aligned_alloc(size_t align, size_t n)
{
    const void *ret = __builtin_return_address(0);
    return alloc_fails("aligned_alloc", ret) ? NULL : alloc_done(__libc_memalign(align, n), ret);
}

void *realloc(void *p, size_t n)
{
    const void *ret = __builtin_return_address(0);
    if (alloc_fails("realloc", ret))
        return NULL;
    void *q = __libc_realloc(p, n);
    if (q && p && from_library(ret))
        live_remove(p);
    return alloc_done(q, ret);
}

void free(void *p)
{
    if (p && from_library(__builtin_return_address(0)))
        live_remove(p);
    __libc_free(p);
}
#endif

/* ---- the script -------------------------------------------------------------------------- */

enum phase { P_CREATE, P_SAVE, P_STEP, P_UPDATE, P_STEP2, P_READ, P_LOAD, P_DESTROY, P_COUNT };
static const char *phase_names[P_COUNT] = {
    "create", "save", "step", "update", "step after the update", "read", "load", "destroy"};

typedef struct outcome {
    int phase;        /* where an API call first failed, or -1 */
    pbd_error err;    /* its error */
    int step_refused; /* after a failed step or update: 1 where a next step was refused */
    int same_state;   /* after a failed load: 1 where the state's hash did not change */
    long leaked;      /* the library's allocations left when it was done (the allocator's) */
    long cl_left;     /* OpenCL objects it made and did not release */
    int read_after;   /* after a failure past the creation: 1 where a read still worked */
    int save_refused; /* and 1 where a checkpoint's save was refused */
} outcome;

/* Type t's records in m, *count of them. */
static const void *model_records(const pbd_model *m, int t, int *count)
{
#define RECORDS(id, name, type, arity, world)                                                      \
    if (t == PBD_CONSTRAINT_##id) {                                                                \
        *count = m->num_##name;                                                                    \
        return m->name;                                                                            \
    }
    PBD_CONSTRAINT_LIST(RECORDS)
#undef RECORDS
    *count = 0;
    return NULL;
}

/* One run of the script on scene s with `backend`; its first failure in o. */
static void script(const pbd_scene *s, pbd_backend_kind backend, outcome *o)
{
    pbd_solver_desc desc = {.backend = backend, .profile = 1};
    pbd_solver *sv = NULL;
    int n = s->model.num_particles, nb = s->model.num_bodies;
    pbd_float4 *x = calloc((size_t)n, sizeof *x), *v = calloc((size_t)n, sizeof *v);
    pbd_body_stats *stats = calloc((size_t)nb + 1, sizeof *stats);
    pbd_body_momentum *mom = calloc((size_t)nb + 1, sizeof *mom);
    assert_non_null(x);
    assert_non_null(v);
    memset(o, 0, sizeof *o);
    o->phase = -1;
    pbd_error *err = &o->err;
    pbd_status st;
    uint64_t hash = 0;
#ifdef PBD_MALLOC_FAULTS
    live_clear();
#endif
    g.cl_live = 0;
    g.armed = 1;
    g.phase = P_CREATE;
    void *data = NULL; /* a checkpoint of the first state */
    size_t size;
    if ((st = test_solver_create(&s->model, &s->config, &desc, &sv, err)) != PBD_OK)
        goto failed;
    g.phase = P_SAVE;
    if ((st = pbd_solver_save_state(sv, &data, &size, err)) != PBD_OK)
        goto failed;
    g.phase = P_STEP;
    if ((st = pbd_solver_step(sv, 2, err)) != PBD_OK || (st = pbd_solver_finish(sv, err)))
        goto failed;
    g.phase = P_UPDATE;
    for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
        int count;
        const unsigned char *records = model_records(&s->model, t, &count);
        /* Each type's first constraint again as it is (the device takes it anew); a distance
         * constraint's ends swapped, which moves it (its lists made again, and under Jacobi
         * the rows of CPU devices). */
        unsigned char rec[256];
        if (count == 0)
            continue;
        memcpy(rec, records, pbd_constraint_types[t].size);
        if (t == PBD_CONSTRAINT_DISTANCE) {
            pbd_distance *d = (pbd_distance *)rec;
            int a = d->a;
            d->a = d->b;
            d->b = a;
        }
        if ((st = pbd_solver_update_constraint(sv, t, 0, rec, err)) != PBD_OK)
            goto failed;
    }
    /* The first collider again as it is. */
    if (s->model.num_colliders > 0 &&
        (st = pbd_solver_update_collider(sv, 0, &s->model.colliders[0], err)) != PBD_OK)
        goto failed;
    g.phase = P_STEP2;
    if ((st = pbd_solver_step(sv, 1, err)) != PBD_OK || (st = pbd_solver_finish(sv, err)))
        goto failed;
    g.phase = P_READ;
    pbd_pending_read *r = NULL;
    double mean, max;
    const pbd_kernel_time *kt;
    int nk;
    if ((st = pbd_solver_read_begin(sv, x, v, &r, err)) != PBD_OK ||
        (st = pbd_pending_read_wait(r, err)) != PBD_OK ||
        (st = pbd_solver_read(sv, x, v, err)) != PBD_OK ||
        (st = pbd_solver_stats(sv, stats, err)) != PBD_OK ||
        (st = pbd_solver_momentum(sv, mom, err)) != PBD_OK ||
        (st = pbd_solver_constraint_error(sv, &mean, &max, err)) != PBD_OK ||
        (st = pbd_solver_state_hash(sv, &hash, err)) != PBD_OK ||
        (st = pbd_solver_kernel_times(sv, &kt, &nk, err)) != PBD_OK)
        goto failed;
    g.phase = P_LOAD; /* back to the first state */
    if ((st = pbd_solver_load_state(sv, data, size, "checkpoint", err)) != PBD_OK)
        goto failed;
    goto done;
failed:
    o->phase = g.phase;
    if (g.phase != P_CREATE) {
        /* Nothing more is failed. A step or update that failed leaves steps refused; a
         * checkpoint's load, the state as it was or steps refused; reads work on. */
        pbd_error again = {0};
        uint64_t now = 0;
        g.phase = P_DESTROY;
        o->read_after = pbd_solver_read(sv, x, v, &again) == PBD_OK;
        void *saved = NULL;
        size_t saved_size;
        o->save_refused = pbd_solver_save_state(sv, &saved, &saved_size, &again) != PBD_OK;
        free(saved);
        o->same_state =
            o->phase == P_LOAD && pbd_solver_state_hash(sv, &now, &again) == PBD_OK && now == hash;
        o->step_refused = pbd_solver_step(sv, 1, &again) != PBD_OK;
        pbd_error_clear(&again);
    }
done:
    g.phase = P_DESTROY;
    pbd_solver_destroy(sv);
    free(data);
    free(x);
    free(v);
    free(stats);
    free(mom);
    g.armed = 0;
    o->cl_left = g.cl_live;
#ifdef PBD_MALLOC_FAULTS
    live_remove(o->err.log); /* the caller's to free */
    o->leaked = num_live;
#endif
}

/* Counts and prints a wrong outcome, and goes on to the next call. */
#define check(cond, ...)                                                                           \
    if (!(cond)) {                                                                                 \
        print_error(__VA_ARGS__);                                                                  \
        ++wrong;                                                                                   \
        continue;                                                                                  \
    }

/* The script on `path` with `backend` once with nothing failing, noting its calls to the
 * entry points of `kind`; then once for each call, that call failing (see below; with
 * `every_object`, each OpenCL object made in the creation). */
static void sweep(const char *path, int kind, pbd_backend_kind backend, int every_object)
{
    pbd_scene s = {0};
    pbd_error err = {0};
    if (pbd_scene_load(path, &s, &err) != PBD_OK) {
        print_error("%s: %s\n", path, err.message);
        fail();
    }
    const char *what = kind == FAIL_CL ? "OpenCL calls" : "allocations";
    outcome o;
    memset(&g, 0, sizeof g);
    g.kind = kind;
    g.record = 1;
    script(&s, backend, &o);
    expect(o.phase < 0, "%s without failures: %s\n", path, o.err.message);
    expect(o.leaked == 0 && o.cl_left == 0,
           "%s without failures: %ld allocations and %ld OpenCL objects left\n", path, o.leaked,
           o.cl_left);
    expect(g.calls <= MAX_SITES, "%s: %ld calls, more than the %d the test notes\n", path, g.calls,
           (int)MAX_SITES);
    long total = g.num_sites;
    static site sites[MAX_SITES];
    memcpy(sites, g.sites, sizeof sites);
    g.record = 0;
    int wrong = 0;
    long runs = 0;
    for (long k = 1; k <= total; ++k) {
        /* A site's first call in each phase stands for its others there (launches and
         * allocations in loops repeat a few sites many times over), but with `every_object`
         * for the OpenCL objects made in the creation: each buffer, kernel and the like
         * fails in turn, each leaving a different part made (the same code frees them all,
         * so one scene does this). */
        const site *c = &sites[k - 1];
        int seen = 0, once = kind != FAIL_CL || c->phase != P_CREATE || !every_object ||
                             strcmp(c->fn, "clSetKernelArg") == 0;
        for (long j = 0; j < k - 1 && once && !seen; ++j)
            seen = sites[j].phase == c->phase && sites[j].ret == c->ret && sites[j].obj == c->obj;
        if (seen)
            continue;
        ++runs;
        g.calls = 0;
        g.fail_at = k;
        g.failed = -1;
        script(&s, backend, &o);
        free(o.err.log); /* a build log, which the checks do not read */
        o.err.log = NULL;
        check(o.leaked == 0 && o.cl_left == 0,
              "%s: call %ld (%s, %p) failed in %s; %ld allocations and %ld OpenCL objects "
              "left\n",
              path, k, c->fn, c->ret, phase_names[c->phase], o.leaked, o.cl_left);
        check(g.failed == c->phase && g.failed_ret == c->ret,
              "%s: call %ld (%s, %p) was from %p in %s, expected %s\n", path, k, c->fn, c->ret,
              g.failed_ret, g.failed >= 0 ? phase_names[g.failed] : "no phase",
              phase_names[c->phase]);
        if (c->phase == P_DESTROY)
            continue;
        check(o.phase == c->phase, "%s: call %ld (%s, %p) failed in %s; the API reported %s\n",
              path, k, c->fn, c->ret, phase_names[c->phase],
              o.phase >= 0 ? phase_names[o.phase] : "nothing");
        check(o.err.message[0] != '\0' && !strchr(o.err.message, '\n'),
              "%s: call %ld (%s) failed; message \"%s\", expected one line\n", path, k, c->fn,
              o.err.message);
        /* An update refused for want of host memory changes nothing; one the device failed
         * to take leaves the solver refusing to step. */
        if (o.phase == P_STEP || o.phase == P_STEP2 || (o.phase == P_UPDATE && kind == FAIL_CL))
            check(o.step_refused, "%s: call %ld (%s) failed in %s; the next step ran\n", path, k,
                  c->fn, phase_names[o.phase]);
        if (o.phase == P_READ || o.phase == P_SAVE)
            check(!o.step_refused,
                  "%s: call %ld (%s) failed in a read; the next step was refused\n", path, k,
                  c->fn);
        /* A load refused for want of host memory has written nothing: steps go on. */
        if (o.phase == P_LOAD)
            check(kind == FAIL_CL ? o.step_refused || o.same_state
                                  : o.same_state && !o.step_refused,
                  "%s: call %ld (%s) failed in a checkpoint's load; state kept %d, next step "
                  "refused %d\n",
                  path, k, c->fn, o.same_state, o.step_refused);
        /* A step or load that failed has left the state partly written: no checkpoint of it. */
        if (o.phase == P_STEP || o.phase == P_STEP2 || (o.phase == P_LOAD && o.step_refused))
            check(o.save_refused, "%s: call %ld (%s) failed in %s; a checkpoint was saved\n", path,
                  k, c->fn, phase_names[o.phase]);
        if (o.phase == P_READ || o.phase == P_SAVE)
            check(!o.save_refused, "%s: call %ld (%s) failed in a read; a save then failed\n", path,
                  k, c->fn);
        if (o.phase != P_CREATE)
            check(o.read_after, "%s: call %ld (%s) failed in %s; a read then failed\n", path, k,
                  c->fn, phase_names[o.phase]);
    }
    print_message("%s: %ld %s, %ld of them failed in turn\n", path, total, what, runs);
    expect(wrong == 0, "%s: %d of %ld failing calls handled wrongly\n", path, wrong, runs);
    pbd_scene_free(&s);
}

#define SCENE_CLOTH  PBD_TESTS_DIR "/faults_cloth.json"
#define SCENE_BODIES PBD_TESTS_DIR "/faults_bodies.json"

static void faults_cl(void **state)
{
    (void)state;
    sweep(SCENE_CLOTH, FAIL_CL, PBD_BACKEND_CL, 1);
    sweep(SCENE_BODIES, FAIL_CL, PBD_BACKEND_CL, 0);
}

#ifdef PBD_MALLOC_FAULTS
static void faults_alloc_reference(void **state)
{
    (void)state;
    sweep(SCENE_CLOTH, FAIL_MALLOC, PBD_BACKEND_CPU, 0);
    sweep(SCENE_BODIES, FAIL_MALLOC, PBD_BACKEND_CPU, 0);
}

/* Loads scene `path` (its meshes too) with the library's allocations noted as live; the
 * status, and the allocations left after pbd_scene_free. */
static pbd_status load_scene(const char *path, pbd_error *err, long *leaked)
{
    pbd_scene s = {0};
    live_clear();
    g.armed = 1;
    g.phase = P_CREATE;
    pbd_status st = pbd_scene_load(path, &s, err);
    pbd_scene_free(&s);
    g.armed = 0;
    *leaked = num_live;
    return st;
}

/* Each of the library's allocation sites in loading a scene fails once in turn: the load
 * fails with one line naming the scene or its mesh file, and leaves nothing allocated. */
static void faults_alloc_scenes(void **state)
{
    (void)state;
    const char *paths[] = {PBD_SCENES_DIR "/balloon.json", PBD_SCENES_DIR "/soft_torus.json",
                           PBD_SCENES_DIR "/soft_bunny.json", PBD_SCENES_DIR "/tablecloth.json",
                           PBD_TESTS_DIR "/faults_msh22.json"};
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; ++p) {
        const char *path = paths[p];
        pbd_error err = {0};
        long leaked;
        memset(&g, 0, sizeof g);
        g.kind = FAIL_MALLOC;
        g.record = 1;
        expect(load_scene(path, &err, &leaked) == PBD_OK, "%s: %s\n", path, err.message);
        expect(leaked == 0, "%s: %ld allocations left\n", path, leaked);
        long total = g.num_sites, runs = 0;
        static site sites[MAX_SITES];
        memcpy(sites, g.sites, sizeof sites);
        g.record = 0;
        int wrong = 0;
        for (long k = 1; k <= total; ++k) {
            int seen = 0;
            for (long j = 0; j < k - 1 && !seen; ++j)
                seen = sites[j].ret == sites[k - 1].ret;
            if (seen)
                continue;
            ++runs;
            g.calls = 0;
            g.fail_at = k;
            pbd_error_clear(&err);
            pbd_status st = load_scene(path, &err, &leaked);
            check(leaked == 0, "%s: allocation %ld failed; %ld allocations left\n", path, k,
                  leaked);
            check(st != PBD_OK, "%s: allocation %ld failed; the load reported nothing\n", path, k);
            check(err.message[0] && !strchr(err.message, '\n') &&
                      (strstr(err.message, ".json") || strstr(err.message, "meshes/")),
                  "%s: allocation %ld failed; message \"%s\", expected one line naming the "
                  "file\n",
                  path, k, err.message);
        }
        print_message("%s: %ld allocations, %ld of them failed in turn\n", path, total, runs);
        expect(wrong == 0, "%s: %d of %ld failing allocations handled wrongly\n", path, wrong,
               runs);
    }
}

static void faults_alloc_device(void **state)
{
    (void)state;
    sweep(SCENE_CLOTH, FAIL_MALLOC, PBD_BACKEND_CL, 0);
    sweep(SCENE_BODIES, FAIL_MALLOC, PBD_BACKEND_CL, 0);
}
#endif

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        pbd_device_test(faults_cl),
#ifdef PBD_MALLOC_FAULTS
        cmocka_unit_test(faults_alloc_reference),
        cmocka_unit_test(faults_alloc_scenes),
        pbd_device_test(faults_alloc_device),
#endif
    };
    return pbd_test_run("faults", tests, sizeof tests / sizeof tests[0], argc, argv);
}
