/* OpenCL devices: listing, choice by SPEC, context and queue (runtime.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_gl.h>

#include "cl/runtime.h"

/* Defined in cl_ext.h; the ICD loader answers "no platform at all" with it. */
#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

/* Every error code of OpenCL 1.2, plus the ICD loader's "no platform". */
#define PBD_CL_ERROR_LIST(X)                                                                       \
    X(CL_SUCCESS)                                                                                  \
    X(CL_DEVICE_NOT_FOUND)                                                                         \
    X(CL_DEVICE_NOT_AVAILABLE)                                                                     \
    X(CL_COMPILER_NOT_AVAILABLE)                                                                   \
    X(CL_MEM_OBJECT_ALLOCATION_FAILURE)                                                            \
    X(CL_OUT_OF_RESOURCES)                                                                         \
    X(CL_OUT_OF_HOST_MEMORY)                                                                       \
    X(CL_PROFILING_INFO_NOT_AVAILABLE)                                                             \
    X(CL_MEM_COPY_OVERLAP)                                                                         \
    X(CL_IMAGE_FORMAT_MISMATCH)                                                                    \
    X(CL_IMAGE_FORMAT_NOT_SUPPORTED)                                                               \
    X(CL_BUILD_PROGRAM_FAILURE)                                                                    \
    X(CL_MAP_FAILURE)                                                                              \
    X(CL_MISALIGNED_SUB_BUFFER_OFFSET)                                                             \
    X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)                                                \
    X(CL_COMPILE_PROGRAM_FAILURE)                                                                  \
    X(CL_LINKER_NOT_AVAILABLE)                                                                     \
    X(CL_LINK_PROGRAM_FAILURE)                                                                     \
    X(CL_DEVICE_PARTITION_FAILED)                                                                  \
    X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)                                                            \
    X(CL_INVALID_VALUE)                                                                            \
    X(CL_INVALID_DEVICE_TYPE)                                                                      \
    X(CL_INVALID_PLATFORM)                                                                         \
    X(CL_INVALID_DEVICE)                                                                           \
    X(CL_INVALID_CONTEXT)                                                                          \
    X(CL_INVALID_QUEUE_PROPERTIES)                                                                 \
    X(CL_INVALID_COMMAND_QUEUE)                                                                    \
    X(CL_INVALID_HOST_PTR)                                                                         \
    X(CL_INVALID_MEM_OBJECT)                                                                       \
    X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)                                                          \
    X(CL_INVALID_IMAGE_SIZE)                                                                       \
    X(CL_INVALID_SAMPLER)                                                                          \
    X(CL_INVALID_BINARY)                                                                           \
    X(CL_INVALID_BUILD_OPTIONS)                                                                    \
    X(CL_INVALID_PROGRAM)                                                                          \
    X(CL_INVALID_PROGRAM_EXECUTABLE)                                                               \
    X(CL_INVALID_KERNEL_NAME)                                                                      \
    X(CL_INVALID_KERNEL_DEFINITION)                                                                \
    X(CL_INVALID_KERNEL)                                                                           \
    X(CL_INVALID_ARG_INDEX)                                                                        \
    X(CL_INVALID_ARG_VALUE)                                                                        \
    X(CL_INVALID_ARG_SIZE)                                                                         \
    X(CL_INVALID_KERNEL_ARGS)                                                                      \
    X(CL_INVALID_WORK_DIMENSION)                                                                   \
    X(CL_INVALID_WORK_GROUP_SIZE)                                                                  \
    X(CL_INVALID_WORK_ITEM_SIZE)                                                                   \
    X(CL_INVALID_GLOBAL_OFFSET)                                                                    \
    X(CL_INVALID_EVENT_WAIT_LIST)                                                                  \
    X(CL_INVALID_EVENT)                                                                            \
    X(CL_INVALID_OPERATION)                                                                        \
    X(CL_INVALID_GL_OBJECT)                                                                        \
    X(CL_INVALID_BUFFER_SIZE)                                                                      \
    X(CL_INVALID_MIP_LEVEL)                                                                        \
    X(CL_INVALID_GLOBAL_WORK_SIZE)                                                                 \
    X(CL_INVALID_PROPERTY)                                                                         \
    X(CL_INVALID_IMAGE_DESCRIPTOR)                                                                 \
    X(CL_INVALID_COMPILER_OPTIONS)                                                                 \
    X(CL_INVALID_LINKER_OPTIONS)                                                                   \
    X(CL_INVALID_DEVICE_PARTITION_COUNT)                                                           \
    X(CL_PLATFORM_NOT_FOUND_KHR)

const char *pbd_cl_error_name(cl_int code)
{
    switch (code) {
#define PBD_X_CASE(name)                                                                           \
    case name:                                                                                     \
        return #name;
        PBD_CL_ERROR_LIST(PBD_X_CASE)
#undef PBD_X_CASE
    default:
        return "unknown OpenCL error";
    }
}

/* Turns the code `none` into success with *n = 0: "no platform" and "no device of this
 * platform" are answers, not failed calls. */
static cl_int none_is_zero(cl_int rc, cl_int none, cl_uint *n)
{
    if (rc == none) {
        *n = 0;
        return CL_SUCCESS;
    }
    return rc;
}

/* The platforms, malloc'd; PBD_ERR_NO_PLATFORM when there are none. */
static pbd_status get_platforms(cl_platform_id **out, cl_uint *n, pbd_error *err)
{
    pbd_status status = PBD_OK;
    *out = NULL;
    *n = 0;
    PBD_CL_CHECK(none_is_zero(clGetPlatformIDs(0, NULL, n), CL_PLATFORM_NOT_FOUND_KHR, n));
    if (*n == 0)
        return pbd_error_set(err, PBD_ERR_NO_PLATFORM,
                             "no OpenCL platform found: install PoCL for the CPU (apt-get install "
                             "pocl-opencl-icd) or your GPU vendor's OpenCL driver");
    *out = malloc(*n * sizeof **out);
    if (!*out)
        return pbd_error_set(err, PBD_ERR_MEMORY, "malloc of %u platform ids failed", *n);
    PBD_CL_CHECK(clGetPlatformIDs(*n, *out, NULL));
cleanup:
    if (status != PBD_OK) {
        free(*out);
        *out = NULL;
    }
    return status;
}

/* The devices of one platform, malloc'd (NULL and 0 when it has none). */
static pbd_status get_devices(cl_platform_id platform, cl_device_id **out, cl_uint *n,
                              pbd_error *err)
{
    pbd_status status = PBD_OK;
    *out = NULL;
    *n = 0;
    PBD_CL_CHECK(none_is_zero(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, n),
                              CL_DEVICE_NOT_FOUND, n));
    if (*n == 0)
        return PBD_OK;
    *out = malloc(*n * sizeof **out);
    if (!*out)
        return pbd_error_set(err, PBD_ERR_MEMORY, "malloc of %u device ids failed", *n);
    PBD_CL_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, *n, *out, NULL));
cleanup:
    if (status != PBD_OK) {
        free(*out);
        *out = NULL;
    }
    return status;
}

/* A string property of `device`, or of `platform` when device is NULL, malloc'd in *out. The
 * size is asked first: a fixed buffer shorter than the string would fail the query. */
static cl_int get_string(cl_platform_id platform, cl_device_id device, cl_uint what, char **out)
{
    size_t size = 0;
    cl_int rc = device ? clGetDeviceInfo(device, what, 0, NULL, &size)
                       : clGetPlatformInfo(platform, what, 0, NULL, &size);
    if (rc != CL_SUCCESS)
        return rc;
    *out = malloc(size + 1);
    if (!*out)
        return CL_OUT_OF_HOST_MEMORY;
    rc = device ? clGetDeviceInfo(device, what, size, *out, NULL)
                : clGetPlatformInfo(platform, what, size, *out, NULL);
    (*out)[size] = '\0';
    return rc;
}

/* get_string into a fixed field, cut to fit. */
static cl_int copy_string(cl_platform_id platform, cl_device_id device, cl_uint what, char *dst,
                          size_t size)
{
    char *s = NULL;
    cl_int rc = get_string(platform, device, what, &s);
    snprintf(dst, size, "%s", rc == CL_SUCCESS ? s : "");
    free(s);
    return rc;
}

/* Whether the space-separated extension list has `name` as a whole word. */
static int has_extension(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name)) {
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
            return 1;
    }
    return 0;
}

static const char *type_string(cl_device_type type)
{
    if (type & CL_DEVICE_TYPE_GPU)
        return "gpu";
    if (type & CL_DEVICE_TYPE_CPU)
        return "cpu";
    if (type & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

/* Fills the device fields of `d` (the platform fields are the caller's). */
static pbd_status describe_device(cl_device_id dev, pbd_device_info *d, pbd_error *err)
{
    pbd_status status = PBD_OK;
    char *ext = NULL;
    cl_device_type type = 0;
    cl_uint units = 0;
    cl_ulong global_mem = 0, max_alloc = 0, local_mem = 0;
    cl_device_fp_config dfp = 0;
    PBD_CL_CHECK(copy_string(NULL, dev, CL_DEVICE_NAME, d->name, sizeof d->name));
    PBD_CL_CHECK(copy_string(NULL, dev, CL_DEVICE_VERSION, d->version, sizeof d->version));
    PBD_CL_CHECK(
        copy_string(NULL, dev, CL_DEVICE_OPENCL_C_VERSION, d->c_version, sizeof d->c_version));
    PBD_CL_CHECK(get_string(NULL, dev, CL_DEVICE_EXTENSIONS, &ext));
    PBD_CL_CHECK(clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL));
    PBD_CL_CHECK(clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL));
    PBD_CL_CHECK(
        clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global_mem, &global_mem, NULL));
    PBD_CL_CHECK(
        clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL));
    PBD_CL_CHECK(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_work_group,
                                 &d->max_work_group, NULL));
    PBD_CL_CHECK(
        clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, NULL));
    /* Not checked: devices without doubles may reject this query, which means "no fp64". */
    if (clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dfp, &dfp, NULL) != CL_SUCCESS)
        dfp = 0;
    snprintf(d->type, sizeof d->type, "%s", type_string(type));
    d->compute_units = units;
    d->global_mem = global_mem;
    d->max_alloc = max_alloc;
    d->local_mem = local_mem;
    d->fp64 = has_extension(ext, "cl_khr_fp64") || dfp != 0;
    d->gl_sharing = has_extension(ext, "cl_khr_gl_sharing");
cleanup:
    free(ext);
    return status;
}

pbd_status pbd_devices_list(pbd_device_info **out, int *count, pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_platform_id *platforms = NULL;
    cl_device_id *devices = NULL;
    cl_uint num_platforms = 0, num_devices = 0;
    pbd_device_info *list = NULL;
    int n = 0;
    *out = NULL;
    *count = 0;
    status = get_platforms(&platforms, &num_platforms, err);
    if (status != PBD_OK)
        goto cleanup;
    for (cl_uint p = 0; p < num_platforms; ++p) {
        pbd_device_info platform = {0};
        status = get_devices(platforms[p], &devices, &num_devices, err);
        if (status != PBD_OK)
            goto cleanup;
        if (num_devices == 0)
            continue;
        PBD_CL_CHECK(copy_string(platforms[p], NULL, CL_PLATFORM_NAME, platform.platform_name,
                                 sizeof platform.platform_name));
        PBD_CL_CHECK(copy_string(platforms[p], NULL, CL_PLATFORM_VERSION, platform.platform_version,
                                 sizeof platform.platform_version));
        pbd_device_info *grown = realloc(list, (n + num_devices) * sizeof *list);
        if (!grown) {
            status = pbd_error_set(err, PBD_ERR_MEMORY, "realloc of %u device infos failed",
                                   n + num_devices);
            goto cleanup;
        }
        list = grown;
        for (cl_uint d = 0; d < num_devices; ++d) {
            list[n] = platform;
            list[n].platform_index = (int)p;
            list[n].device_index = (int)d;
            status = describe_device(devices[d], &list[n], err);
            if (status != PBD_OK)
                goto cleanup;
            ++n;
        }
        free(devices);
        devices = NULL;
    }
    *out = list;
    *count = n;
    list = NULL;
cleanup:
    free(list);
    free(devices);
    free(platforms);
    return status;
}

/* Whether `needle` occurs in `hay`, ignoring ASCII case. */
static int contains_nocase(const char *hay, const char *needle)
{
    size_t len = strlen(needle);
    for (; *hay; ++hay) {
        size_t i = 0;
        while (i < len && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            ++i;
        if (i == len)
            return 1;
    }
    return len == 0;
}

/* "P:D", digits only; returns 1 and the indices when spec has that form. */
static int parse_index(const char *spec, int *platform, int *device)
{
    const char *digits = "0123456789";
    size_t a = strspn(spec, digits);
    if (a == 0 || a > 9 || spec[a] != ':')
        return 0;
    size_t b = strspn(spec + a + 1, digits);
    if (b == 0 || b > 9 || spec[a + 1 + b] != '\0')
        return 0;
    *platform = atoi(spec);
    *device = atoi(spec + a + 1);
    return 1;
}

/* The devices as "P:D" (with names when `names`), comma-separated, cut to fit `buf`. */
static void describe_list(const pbd_device_info *list, int count, int names, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && used < size; ++i) {
        const pbd_device_info *d = &list[i];
        int w =
            names ? snprintf(buf + used, size - used, "%s%d:%d %s [%s, %s]", i ? ", " : "",
                             d->platform_index, d->device_index, d->name, d->type, d->platform_name)
                  : snprintf(buf + used, size - used, "%s%d:%d", i ? ", " : "", d->platform_index,
                             d->device_index);
        used += w > 0 ? (size_t)w : 0;
    }
    if (count == 0)
        snprintf(buf, size, "none");
}

pbd_status pbd_device_select(const pbd_device_info *list, int count, const char *spec, int *index,
                             pbd_error *err)
{
    char have[768];
    int p, d;
    if (count <= 0 || !list)
        return pbd_error_set(err, PBD_ERR_NO_DEVICE, "no OpenCL device to choose \"%s\" from",
                             spec ? spec : "");
    if (!spec || !*spec) {
        *index = 0;
        for (int i = 0; i < count; ++i) {
            if (strcmp(list[i].type, "gpu") == 0) {
                *index = i;
                break;
            }
        }
        return PBD_OK;
    }
    if (parse_index(spec, &p, &d)) {
        for (int i = 0; i < count; ++i) {
            if (list[i].platform_index == p && list[i].device_index == d) {
                *index = i;
                return PBD_OK;
            }
        }
        describe_list(list, count, 0, have, sizeof have);
        return pbd_error_set(err, PBD_ERR_NO_DEVICE, "device %d:%d not found (have %s)", p, d,
                             have);
    }
    int by_type =
        strcmp(spec, "cpu") == 0 || strcmp(spec, "gpu") == 0 || strcmp(spec, "accelerator") == 0;
    for (int i = 0; i < count; ++i) {
        if (by_type ? strcmp(list[i].type, spec) == 0
                    : contains_nocase(list[i].name, spec) ||
                          contains_nocase(list[i].platform_name, spec)) {
            *index = i;
            return PBD_OK;
        }
    }
    describe_list(list, count, 1, have, sizeof have);
    return pbd_error_set(err, PBD_ERR_NO_DEVICE, "no OpenCL device matches \"%s\" (have %s)", spec,
                         have);
}

/* Whether the context to be made for cl->device shares objects with OpenGL context `gl`: only
 * where the device lists cl_khr_gl_sharing and clGetGLContextInfoKHR names cl->device as the
 * GL context's current device. Trying a shared context and seeing whether it works is no
 * test: PoCL accepts the properties and aborts later, in clCreateFromGLBuffer. On sharing,
 * appends the GL context's properties to `props` (CL_CONTEXT_PLATFORM first; room for 10). */
static pbd_status gl_sharing(pbd_cl *cl, const pbd_gl_context *gl, cl_context_properties *props,
                             pbd_error *err)
{
    cl->gl_shared = 0;
    if (!gl) {
        cl->gl_why = "no OpenGL context was given";
        return PBD_OK;
    }
    int displays = (gl->glx_display != NULL) + (gl->egl_display != NULL) + (gl->wgl_hdc != NULL);
    if (!gl->context || displays != 1)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "OpenGL context: found context %p with %d displays, expected a "
                             "context and one of glx_display, egl_display, wgl_hdc",
                             gl->context, displays);
    if (!cl->info.gl_sharing) {
        cl->gl_why = "the device lists no cl_khr_gl_sharing";
        return PBD_OK;
    }
    void *address = clGetExtensionFunctionAddressForPlatform(cl->platform, "clGetGLContextInfoKHR");
    clGetGLContextInfoKHR_fn context_info = NULL;
    memcpy(&context_info, &address, sizeof context_info); /* ISO C has no such cast */
    if (!address) {
        cl->gl_why = "the platform has no clGetGLContextInfoKHR";
        return PBD_OK;
    }
    props[2] = CL_GL_CONTEXT_KHR;
    props[3] = (cl_context_properties)gl->context;
    props[4] = gl->glx_display   ? CL_GLX_DISPLAY_KHR
               : gl->egl_display ? CL_EGL_DISPLAY_KHR
                                 : CL_WGL_HDC_KHR;
    props[5] = (cl_context_properties)(gl->glx_display   ? gl->glx_display
                                       : gl->egl_display ? gl->egl_display
                                                         : gl->wgl_hdc);
    props[6] = 0;
    cl_device_id current = NULL;
    size_t size = 0;
    cl_int rc =
        context_info(props, CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR, sizeof current, &current, &size);
    if (rc != CL_SUCCESS || size != sizeof current || current != cl->device) {
        props[2] = 0; /* a plain context after all */
        cl->gl_why = rc != CL_SUCCESS || size == 0
                         ? "the OpenGL context has no OpenCL device on this platform"
                         : "the OpenGL context runs on another device";
        return PBD_OK;
    }
    cl->gl_shared = 1;
    cl->gl_why = "cl_khr_gl_sharing";
    return PBD_OK;
}

pbd_status pbd_cl_open(pbd_cl *cl, const char *spec, int profile, const pbd_gl_context *gl,
                       pbd_error *err)
{
    pbd_status status = PBD_OK;
    pbd_device_info *list = NULL;
    cl_platform_id *platforms = NULL;
    cl_device_id *devices = NULL;
    cl_uint num_platforms = 0, num_devices = 0;
    int count = 0, index = 0;
    cl_int rc = CL_SUCCESS;
    memset(cl, 0, sizeof *cl);
    const char *env = spec ? NULL : getenv("PBD_DEVICE");
    spec = spec ? spec : env;
    status = pbd_devices_list(&list, &count, err);
    if (status == PBD_OK) {
        status = pbd_device_select(list, count, spec, &index, err);
        /* A choice the user did not pass here is named by where it came from. */
        if (status != PBD_OK && env && err) {
            char message[sizeof err->message];
            memcpy(message, err->message, sizeof message);
            if (snprintf(err->message, sizeof err->message, "PBD_DEVICE (environment): %s",
                         message) < 0)
                memcpy(err->message, message, sizeof message);
        }
    }
    if (status == PBD_OK)
        status = get_platforms(&platforms, &num_platforms, err);
    if (status != PBD_OK)
        goto cleanup;
    cl->info = list[index];
    if ((cl_uint)cl->info.platform_index < num_platforms)
        status = get_devices(platforms[cl->info.platform_index], &devices, &num_devices, err);
    if (status != PBD_OK)
        goto cleanup;
    if ((cl_uint)cl->info.device_index >= num_devices) {
        /* The list was taken a moment ago; a device can still vanish (hot-unplug). */
        status = pbd_error_set(err, PBD_ERR_NO_DEVICE, "device %d:%d disappeared while opening",
                               cl->info.platform_index, cl->info.device_index);
        goto cleanup;
    }
    cl->platform = platforms[cl->info.platform_index];
    cl->device = devices[cl->info.device_index];
    cl_context_properties props[10] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cl->platform};
    if ((status = gl_sharing(cl, gl, props, err)) != PBD_OK)
        goto cleanup;
    PBD_CL_CHECK((cl->context = clCreateContext(props, 1, &cl->device, NULL, NULL, &rc), rc));
    cl->profiling = profile != 0;
    PBD_CL_CHECK((cl->queue = clCreateCommandQueue(cl->context, cl->device,
                                                   profile ? CL_QUEUE_PROFILING_ENABLE : 0, &rc),
                  rc));
cleanup:
    free(list);
    free(platforms);
    free(devices);
    if (status != PBD_OK)
        pbd_cl_close(cl);
    return status;
}

pbd_status pbd_cl_kernel(pbd_cl *cl, const char *name, cl_kernel *out, pbd_error *err)
{
    pbd_status status = PBD_OK;
    cl_int rc = CL_SUCCESS;
    *out = NULL;
    if (!cl->program)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "kernel \"%s\": no program built (pbd_cl_build comes first)", name);
    PBD_CL_CHECK((*out = clCreateKernel(cl->program, name, &rc), rc));
cleanup:
    if (status != PBD_OK && err) {
        /* The macro's message names the call, not the value of `name`: prefix it. */
        char call[sizeof err->message];
        snprintf(call, sizeof call, "%s", err->message);
        pbd_error_set(err, status, "kernel \"%s\": %s", name, call);
    }
    return status;
}

void pbd_cl_close(pbd_cl *cl)
{
    if (cl->program)
        clReleaseProgram(cl->program);
    if (cl->queue)
        clReleaseCommandQueue(cl->queue);
    if (cl->context)
        clReleaseContext(cl->context);
    memset(cl, 0, sizeof *cl);
}
