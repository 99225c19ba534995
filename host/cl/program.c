/* The OpenCL program: kernel sources (embedded, or read from a directory) and their build. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/runtime.h"

/* Appends `len` bytes to the growing buffer *buf of *used bytes (capacity *cap), keeping a
 * terminating NUL. Returns 0, or -1 when out of memory. */
static int append(char **buf, size_t *used, size_t *cap, const char *text, size_t len)
{
    if (*used + len + 1 > *cap) {
        size_t want = *cap ? *cap : 4096;
        while (want < *used + len + 1)
            want *= 2;
        char *grown = realloc(*buf, want);
        if (!grown)
            return -1;
        *buf = grown;
        *cap = want;
    }
    memcpy(*buf + *used, text, len);
    *used += len;
    (*buf)[*used] = '\0';
    return 0;
}

/* The most kernel source read from --kernel-dir, all files together: the shipped sources
 * are about 200 KB, so anything near this is not kernel source (a device, a wrong file). */
#define PBD_MAX_SOURCE_BYTES ((size_t)16 << 20)

/* Appends the whole file `path`; returns 0 or an errno value (EFBIG past
 * PBD_MAX_SOURCE_BYTES in all). */
static int append_file(char **buf, size_t *used, size_t *cap, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno;
    char chunk[8192];
    size_t got;
    int rc = 0;
    while (rc == 0 && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = *used + got > PBD_MAX_SOURCE_BYTES   ? EFBIG
             : append(buf, used, cap, chunk, got) ? ENOMEM
                                                  : 0;
    if (rc == 0 && ferror(f))
        rc = errno ? errno : EIO;
    fclose(f);
    return rc;
}

int pbd_kernel_source_in_variant(const char *name, pbd_variant variant)
{
    if (strncmp(name, "gpu/", 4) == 0)
        return variant != PBD_VARIANT_CPU;
    if (strncmp(name, "cpu/", 4) == 0)
        return variant != PBD_VARIANT_GPU;
    return 1;
}

/* Appends `#line 1 "NAME"` and a newline, NAME a C string literal's contents (quotes,
 * backslashes and control characters escaped): the compiler's messages then name the file
 * and its own line, not the program text's. Returns 0, or -1 when out of memory. */
static int append_line_marker(char **buf, size_t *used, size_t *cap, const char *name)
{
    if (append(buf, used, cap, "#line 1 \"", 9))
        return -1;
    for (const unsigned char *c = (const unsigned char *)name; *c; ++c) {
        char esc[8];
        int n = *c == '"' || *c == '\\'   ? snprintf(esc, sizeof esc, "\\%c", *c)
                : *c < 0x20 || *c == 0x7f ? snprintf(esc, sizeof esc, "\\%03o", *c)
                                          : snprintf(esc, sizeof esc, "%c", *c);
        if (append(buf, used, cap, esc, (size_t)n))
            return -1;
    }
    return append(buf, used, cap, "\"\n", 2);
}

/* The program text: the variant's kernel sources in order, each after a line marker naming
 * it (kernels/NAME, or its path under --kernel-dir). A file that does not end its last line
 * gets a newline, so that its last line cannot run into the next file's first. */
static pbd_status gather_source(const char *kernel_dir, pbd_variant variant, char **out,
                                pbd_error *err)
{
    char *buf = NULL;
    size_t used = 0, cap = 0;
    *out = NULL;
    for (int i = 0; i < pbd_kernel_source_count; ++i) {
        const struct pbd_kernel_source *src = &pbd_kernel_sources[i];
        if (!pbd_kernel_source_in_variant(src->name, variant))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", kernel_dir ? kernel_dir : "kernels", src->name);
        if (append_line_marker(&buf, &used, &cap, path))
            goto oom;
        if (kernel_dir) {
            int rc = append_file(&buf, &used, &cap, path);
            if (rc) {
                free(buf);
                return pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: %s", path, strerror(rc));
            }
        } else if (append(&buf, &used, &cap, src->text, src->length)) {
            goto oom;
        }
        if (used > 0 && buf[used - 1] != '\n' && append(&buf, &used, &cap, "\n", 1))
            goto oom;
    }
    if (!buf && append(&buf, &used, &cap, "", 0))
        goto oom;
    *out = buf;
    return PBD_OK;
oom:
    free(buf);
    return pbd_error_set(err, PBD_ERR_MEMORY, "kernel source: out of memory after %zu bytes", used);
}

/* Records a failed build: the log goes to err->log, its size to the message. */
static pbd_status build_failure(pbd_cl *cl, cl_program program, pbd_error *err)
{
    pbd_status status = PBD_OK;
    size_t size = 0;
    char *log = NULL;
    PBD_CL_CHECK(clGetProgramBuildInfo(program, cl->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size));
    log = malloc(size + 1);
    if (!log)
        return pbd_error_set(err, PBD_ERR_MEMORY, "build log of %zu bytes: out of memory", size);
    PBD_CL_CHECK(clGetProgramBuildInfo(program, cl->device, CL_PROGRAM_BUILD_LOG, size, log, NULL));
    log[size] = '\0';
    size_t len = strlen(log);
    int lines = len > 0 && log[len - 1] != '\n';
    for (size_t i = 0; i < len; ++i)
        lines += log[i] == '\n';
    status =
        pbd_error_set(err, PBD_ERR_BUILD, "OpenCL program build failed on %s (%d lines of log)",
                      cl->info.name, lines);
    if (err) {
        free(err->log);
        err->log = log;
        log = NULL;
    }
cleanup:
    free(log);
    return status;
}

/* Returns CL_SUCCESS for `code`, setting *hit: the caller handles that outcome itself. */
static cl_int except(cl_int rc, cl_int code, int *hit)
{
    *hit = rc == code;
    return *hit ? CL_SUCCESS : rc;
}

pbd_status pbd_cl_build(pbd_cl *cl, const char *kernel_dir, pbd_variant variant,
                        const char *extra_options, pbd_error *err)
{
    pbd_status status = PBD_OK;
    char *source = NULL;
    char *options = NULL;
    cl_program program = NULL;
    cl_device_fp_config sfp = 0;
    cl_int rc = CL_SUCCESS;
    int failed = 0;
    if (!extra_options)
        extra_options = "";
    status = gather_source(kernel_dir, variant, &source, err);
    if (status != PBD_OK)
        goto cleanup;
    PBD_CL_CHECK(clGetDeviceInfo(cl->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof sfp, &sfp, NULL));
    size_t size = strlen(extra_options) + 128;
    options = malloc(size);
    if (!options) {
        status = pbd_error_set(err, PBD_ERR_MEMORY, "build options: out of memory");
        goto cleanup;
    }
    /* Correct rounding makes divide and sqrt match the host's IEEE results (pbd_shared.h). */
    snprintf(options, size, "-cl-std=CL1.2%s%s %s",
             sfp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? " -cl-fp32-correctly-rounded-divide-sqrt"
                                                       : "",
             cl->info.fp64 ? " -DPBD_HAS_FP64=1" : "", extra_options);
    const char *text = source;
    PBD_CL_CHECK((program = clCreateProgramWithSource(cl->context, 1, &text, NULL, &rc), rc));
    PBD_CL_CHECK(except(clBuildProgram(program, 1, &cl->device, options, NULL, NULL),
                        CL_BUILD_PROGRAM_FAILURE, &failed));
    if (failed) {
        status = build_failure(cl, program, err);
        goto cleanup;
    }
    /* Only a good build replaces the program: a failed rebuild leaves the old one usable. */
    if (cl->program)
        clReleaseProgram(cl->program);
    cl->program = program;
    program = NULL;
cleanup:
    if (program)
        clReleaseProgram(program);
    free(options);
    free(source);
    return status;
}
