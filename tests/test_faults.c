/* OpenCL calls that fail: every call the library makes that can fail on a device (an
 * allocation, a build, an enqueue, a wait) is made to fail in turn, once, and the library must
 * say so through the API call that made it: a status that is not PBD_OK and a one-line
 * message, and (with ASan) nothing leaked or touched after it is freed. A solver whose step
 * or update failed refuses to step again.
 *
 * The test executable defines the OpenCL entry points it fails; the library, linked in
 * statically, calls them, and they forward to the ICD loader's (dlsym(RTLD_NEXT)). */
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
    int phase;
} site;

static struct {
    long calls;   /* interposed calls since the last reset */
    long fail_at; /* the call to fail (1-based), or 0 */
    int failed;   /* phase of the failed call, or -1 */
    int phase;    /* what the script is doing (enum phase) */
    int record;   /* 1: note each call's site in sites[] */
    site sites[MAX_SITES];
    long num_sites; /* calls noted (up to MAX_SITES) */
} g;

/* Counts a call to fn from ret; 1 where this call is to fail. */
static int fault(const char *fn, const void *ret)
{
    long k = g.calls++;
    if (g.record && k < MAX_SITES) {
        g.sites[k] = (site){fn, ret, g.phase};
        g.num_sites = k + 1;
    }
    if (g.fail_at == k + 1) {
        g.failed = g.phase;
        return 1;
    }
    return 0;
}

#define REAL(name)                                                                                 \
    static __typeof__(&name) real;                                                                 \
    if (!real)                                                                                     \
        *(void **)&real = dlsym(RTLD_NEXT, #name); /* POSIX's way to a function pointer */

#define FAULT(name) fault(#name, __builtin_return_address(0))

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
    return real(properties, num_devices, devices, pfn_notify, user_data, errcode_ret);
}

cl_command_queue clCreateCommandQueue(cl_context context, cl_device_id device,
                                      cl_command_queue_properties properties, cl_int *errcode_ret)
{
    REAL(clCreateCommandQueue);
    if (FAULT(clCreateCommandQueue))
        FAIL_OBJ(CL_OUT_OF_RESOURCES);
    return real(context, device, properties, errcode_ret);
}

cl_program clCreateProgramWithSource(cl_context context, cl_uint count, const char **strings,
                                     const size_t *lengths, cl_int *errcode_ret)
{
    REAL(clCreateProgramWithSource);
    if (FAULT(clCreateProgramWithSource))
        FAIL_OBJ(CL_OUT_OF_HOST_MEMORY);
    return real(context, count, strings, lengths, errcode_ret);
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
    return real(program, kernel_name, errcode_ret);
}

cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                      cl_int *errcode_ret)
{
    REAL(clCreateBuffer);
    if (FAULT(clCreateBuffer))
        FAIL_OBJ(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    return real(context, flags, size, host_ptr, errcode_ret);
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
    if (FAULT(clEnqueueNDRangeKernel))
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

/* ---- the script -------------------------------------------------------------------------- */

enum phase { P_CREATE, P_SAVE, P_STEP, P_UPDATE, P_STEP2, P_READ, P_LOAD, P_DESTROY, P_COUNT };
static const char *phase_names[P_COUNT] = {
    "create", "save", "step", "update", "step after the update", "read", "load", "destroy"};

typedef struct outcome {
    int phase;        /* where an API call first failed, or -1 */
    pbd_error err;    /* its error */
    int step_refused; /* after a failed step or update: 1 where a next step was refused */
    int same_state;   /* after a failed load: 1 where the state's hash did not change */
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

/* One run of the script on scene `path`; its first failure in o. */
static void script(const pbd_scene *s, outcome *o)
{
    pbd_solver_desc desc = {.backend = PBD_BACKEND_CL, .profile = 1};
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
         * checkpoint's load, the state as it was or steps refused. */
        pbd_error again = {0};
        uint64_t now = 0;
        g.phase = P_DESTROY;
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
}

/* Counts and prints a wrong outcome, and goes on to the next call. */
#define check(cond, ...)                                                                           \
    if (!(cond)) {                                                                                 \
        print_error(__VA_ARGS__);                                                                  \
        ++wrong;                                                                                   \
        continue;                                                                                  \
    }

/* The script on `path` once with nothing failing, noting its calls; then once for each call,
 * that call failing. */
static void sweep(const char *path)
{
    pbd_scene s = {0};
    pbd_error err = {0};
    if (pbd_scene_load(path, &s, &err) != PBD_OK) {
        print_error("%s: %s\n", path, err.message);
        fail();
    }
    outcome o;
    g = (__typeof__(g)){0};
    g.record = 1;
    script(&s, &o);
    expect(o.phase < 0, "%s without failures: %s\n", path, o.err.message);
    long total = g.num_sites;
    print_message("%s: %ld calls\n", path, total);
    static site sites[MAX_SITES];
    memcpy(sites, g.sites, sizeof sites);
    g.record = 0;
    int wrong = 0;
    long runs = 0;
    for (long k = 1; k <= total; ++k) {
        /* Past the creation, a site's first call in each phase stands for its others there
         * (launches repeat a few sites many times over), and so does a site's first argument
         * binding in the creation (one loop binds them all). Each buffer, kernel and the like
         * made in the creation fails in turn: each leaves a different part made. */
        const site *c = &sites[k - 1];
        int seen = 0, once = c->phase != P_CREATE || strcmp(c->fn, "clSetKernelArg") == 0;
        for (long j = 0; j < k - 1 && once && !seen; ++j)
            seen = sites[j].phase == c->phase && sites[j].ret == c->ret;
        if (seen)
            continue;
        ++runs;
        g.calls = 0;
        g.fail_at = k;
        g.failed = -1;
        script(&s, &o);
        free(o.err.log); /* a build log, which the checks do not read */
        o.err.log = NULL;
        if (c->phase == P_DESTROY)
            continue;
        check(g.failed == c->phase, "%s: call %ld (%s) ran in %s, expected %s\n", path, k, c->fn,
              g.failed >= 0 ? phase_names[g.failed] : "no phase", phase_names[c->phase]);
        check(o.phase == c->phase, "%s: call %ld (%s, %p) failed in %s; the API reported %s\n",
              path, k, c->fn, c->ret, phase_names[c->phase],
              o.phase >= 0 ? phase_names[o.phase] : "nothing");
        check(o.err.message[0] != '\0' && !strchr(o.err.message, '\n'),
              "%s: call %ld (%s) failed; message \"%s\", expected one line\n", path, k, c->fn,
              o.err.message);
        if (o.phase == P_STEP || o.phase == P_UPDATE || o.phase == P_STEP2)
            check(o.step_refused, "%s: call %ld (%s) failed in %s; the next step ran\n", path, k,
                  c->fn, phase_names[o.phase]);
        if (o.phase == P_READ || o.phase == P_SAVE)
            check(!o.step_refused,
                  "%s: call %ld (%s) failed in a read; the next step was refused\n", path, k,
                  c->fn);
        if (o.phase == P_LOAD)
            check(o.step_refused || o.same_state,
                  "%s: call %ld (%s) failed in a checkpoint's load; the state changed and the "
                  "next step ran\n",
                  path, k, c->fn);
    }
    print_message("%s: %ld of them failed in turn\n", path, runs);
    expect(wrong == 0, "%s: %d of %ld failing calls handled wrongly\n", path, wrong, runs);
    pbd_scene_free(&s);
}

static void faults_cloth(void **state)
{
    (void)state;
    sweep(PBD_TESTS_DIR "/faults_cloth.json");
}

static void faults_bodies(void **state)
{
    (void)state;
    sweep(PBD_TESTS_DIR "/faults_bodies.json");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        pbd_device_test(faults_cloth),
        pbd_device_test(faults_bodies),
    };
    return pbd_test_run("faults", tests, sizeof tests / sizeof tests[0], argc, argv);
}
