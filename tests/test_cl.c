/* OpenCL plumbing: device listing and choice, open/close, program build (host/cl). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv */

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "cl/runtime.h"
#include "pbd_shared.h"
#include "solver/kernel_params.h"

#define PROBE_KERNEL "__kernel void probe(__global int *o) { o[get_global_id(0)] = 42; }\n"
/* Its own line whether or not the last file ends with a newline. */
#define BROKEN_LINE "\nthis is not OpenCL C pbd_broken_token;\n"

static void list_all(pbd_device_info **list, int *n)
{
    pbd_error err = {0};
    assert_int_equal(pbd_devices_list(list, n, &err), PBD_OK);
    assert_true(*n > 0);
}

static void list_devices(void **state)
{
    (void)state;
    pbd_device_info *list = NULL;
    int n = 0;
    list_all(&list, &n);
    for (int i = 0; i < n; ++i) {
        const pbd_device_info *d = &list[i];
        assert_true(d->name[0] != '\0');
        assert_true(d->platform_name[0] != '\0');
        assert_non_null(strstr(d->version, "OpenCL"));
        assert_non_null(strstr(d->c_version, "OpenCL C"));
        assert_true(strcmp(d->type, "gpu") == 0 || strcmp(d->type, "cpu") == 0 ||
                    strcmp(d->type, "accelerator") == 0 || strcmp(d->type, "other") == 0);
        assert_true(d->compute_units >= 1);
        assert_true(d->global_mem > 0);
        assert_true(d->max_alloc > 0 && d->max_alloc <= d->global_mem);
        assert_true(d->max_work_group >= 1);
        assert_true(d->fp64 == 0 || d->fp64 == 1);
        assert_true(d->gl_sharing == 0 || d->gl_sharing == 1);
    }
    free(list);
}

static void expect_no_device(const pbd_device_info *list, int n, const char *spec,
                             const char *mention)
{
    pbd_error err = {0};
    int index = -1;
    assert_int_equal(pbd_device_select(list, n, spec, &index, &err), PBD_ERR_NO_DEVICE);
    assert_int_equal(err.status, PBD_ERR_NO_DEVICE);
    assert_non_null(strstr(err.message, mention));
    assert_null(strchr(err.message, '\n'));
}

static void select_real(void **state)
{
    (void)state;
    pbd_device_info *list = NULL;
    int n = 0, index = -1;
    pbd_error err = {0};
    list_all(&list, &n);

    int cpu = -1;
    for (int i = n - 1; i >= 0; --i)
        cpu = strcmp(list[i].type, "cpu") == 0 ? i : cpu;
    if (cpu >= 0) {
        assert_int_equal(pbd_device_select(list, n, "cpu", &index, &err), PBD_OK);
        assert_int_equal(index, cpu);
    }

    assert_int_equal(pbd_device_select(list, n, "0:0", &index, &err), PBD_OK);
    assert_int_equal(list[index].platform_index, 0);
    assert_int_equal(list[index].device_index, 0);

    expect_no_device(list, n, "9:9", "9:9");
    expect_no_device(list, n, "no-such-device-zz", "no-such-device-zz");

    /* A lowercase 4-character piece of the first device's name picks a device with it. */
    char piece[5] = {0};
    const char *name = list[0].name;
    size_t len = strlen(name), at = len > 8 ? len / 2 - 2 : 0;
    for (int k = 0; k < 4 && name[at + k]; ++k)
        piece[k] = (char)tolower((unsigned char)name[at + k]);
    assert_int_equal(pbd_device_select(list, n, piece, &index, &err), PBD_OK);
    assert_int_equal(index, 0);
    for (int k = 0; k < 4 && piece[k]; ++k)
        piece[k] = (char)toupper((unsigned char)piece[k]);
    int upper = -1;
    assert_int_equal(pbd_device_select(list, n, piece, &upper, &err), PBD_OK);
    assert_int_equal(upper, 0);
    free(list);
}

static void select_synthetic(void **state)
{
    (void)state;
    pbd_device_info list[3] = {
        {.platform_index = 0, .device_index = 0, .name = "Xeon Gold", .type = "cpu"},
        {.platform_index = 1, .device_index = 0, .name = "Radeon Pro", .type = "gpu"},
        {.platform_index = 1, .device_index = 1, .name = "Alveo", .type = "accelerator"},
    };
    snprintf(list[0].platform_name, sizeof list[0].platform_name, "Intel OpenCL");
    snprintf(list[1].platform_name, sizeof list[1].platform_name, "AMD APP");
    snprintf(list[2].platform_name, sizeof list[2].platform_name, "AMD APP");
    pbd_error err = {0};
    const struct {
        const char *spec;
        int index;
    } cases[] = {
        {NULL, 1},  {"", 1},      {"gpu", 1}, {"cpu", 0},    {"accelerator", 2},
        {"1:0", 1}, {"1:1", 2},   {"0:0", 0}, {"radeon", 1}, {"XEON", 0},
        {"amd", 1}, {"intel", 0}, {"alv", 2}, {"pro", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int index = -1;
        assert_int_equal(pbd_device_select(list, 3, cases[i].spec, &index, &err), PBD_OK);
        assert_int_equal(index, cases[i].index);
    }
    /* Without a GPU the default is the first device. */
    int index = -1;
    assert_int_equal(pbd_device_select(list, 1, NULL, &index, &err), PBD_OK);
    assert_int_equal(index, 0);
    expect_no_device(list, 3, "1:2", "device 1:2 not found (have 0:0, 1:0, 1:1)");
    expect_no_device(list, 3, "2:0", "2:0");
    expect_no_device(list, 3, "1:", "\"1:\"");
    expect_no_device(list, 1, "gpu", "Xeon Gold");
    expect_no_device(list, 3, "nvidia", "\"nvidia\"");
    expect_no_device(list, 0, NULL, "no OpenCL device");
}

static void open_close(void **state)
{
    (void)state;
    pbd_cl cl;
    pbd_error err = {0};
    assert_int_equal(pbd_cl_open(&cl, "0:0", 1, NULL, &err), PBD_OK);
    assert_non_null(cl.context);
    assert_non_null(cl.queue);
    assert_null(cl.program);
    assert_int_equal(cl.profiling, 1);
    assert_true(cl.info.name[0] != '\0');
    cl_command_queue_properties props = 0;
    assert_int_equal(
        clGetCommandQueueInfo(cl.queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL),
        CL_SUCCESS);
    assert_true(props & CL_QUEUE_PROFILING_ENABLE);
    assert_false(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    pbd_cl_close(&cl);
    pbd_cl zero = {0};
    assert_memory_equal(&cl, &zero, sizeof cl);
    pbd_cl_close(&cl);
    assert_memory_equal(&cl, &zero, sizeof cl);
}

static void open_errors(void **state)
{
    (void)state;
    pbd_cl cl, zero = {0};
    pbd_error err = {0};
    assert_int_equal(pbd_cl_open(&cl, "9:9", 0, NULL, &err), PBD_ERR_NO_DEVICE);
    assert_non_null(strstr(err.message, "9:9"));
    assert_memory_equal(&cl, &zero, sizeof cl);
    /* A NULL spec reads PBD_DEVICE. */
    const char *old = getenv("PBD_DEVICE");
    char *saved = old ? strdup(old) : NULL;
    assert_int_equal(setenv("PBD_DEVICE", "no-such-device-env", 1), 0);
    assert_int_equal(pbd_cl_open(&cl, NULL, 0, NULL, &err), PBD_ERR_NO_DEVICE);
    assert_non_null(strstr(err.message, "no-such-device-env"));
    assert_non_null(strstr(err.message, "PBD_DEVICE (environment): ")); /* says where from */
    assert_memory_equal(&cl, &zero, sizeof cl);
    assert_int_equal(saved ? setenv("PBD_DEVICE", saved, 1) : unsetenv("PBD_DEVICE"), 0);
    free(saved);
}

static void error_names(void **state)
{
    (void)state;
    assert_string_equal(pbd_cl_error_name(CL_SUCCESS), "CL_SUCCESS");
    assert_string_equal(pbd_cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
    assert_string_equal(pbd_cl_error_name(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
                        "CL_KERNEL_ARG_INFO_NOT_AVAILABLE");
    assert_string_equal(pbd_cl_error_name(CL_INVALID_DEVICE_PARTITION_COUNT),
                        "CL_INVALID_DEVICE_PARTITION_COUNT");
    assert_string_equal(pbd_cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
    assert_string_equal(pbd_cl_error_name(-12345), "unknown OpenCL error");
    /* Every code of 1.2 has a name. */
    for (cl_int code = 0; code >= CL_INVALID_DEVICE_PARTITION_COUNT; --code) {
        if (code > -30 && code < -19)
            continue;
        assert_string_not_equal(pbd_cl_error_name(code), "unknown OpenCL error");
    }
}

static void write_file(const char *dir, const char *name, const char *text, size_t len,
                       const char *tail)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_true(fputs(tail, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* A temporary kernel directory with the embedded files' names. `copy`: the embedded texts,
 * else empty files; file `at` then gets `tail`. */
static const char *const kernel_subdirs[] = {"common", "gpu", "cpu"};

static void make_kernel_dir(char *dir, size_t size, int copy, int at, const char *tail)
{
    snprintf(dir, size, "/tmp/pbd_test_cl_XXXXXX");
    assert_non_null(mkdtemp(dir));
    for (int k = 0; k < 3; ++k) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", dir, kernel_subdirs[k]);
        assert_int_equal(mkdir(sub, 0700), 0);
    }
    for (int i = 0; i < pbd_kernel_source_count; ++i) {
        const struct pbd_kernel_source *s = &pbd_kernel_sources[i];
        write_file(dir, s->name, copy ? s->text : "", copy ? s->length : 0, i == at ? tail : "");
    }
}

static void remove_kernel_dir(const char *dir)
{
    char path[512];
    for (int i = 0; i < pbd_kernel_source_count; ++i) {
        snprintf(path, sizeof path, "%s/%s", dir, pbd_kernel_sources[i].name);
        assert_int_equal(remove(path), 0);
    }
    for (int k = 0; k < 3; ++k) {
        snprintf(path, sizeof path, "%s/%s", dir, kernel_subdirs[k]);
        assert_int_equal(rmdir(path), 0);
    }
    assert_int_equal(rmdir(dir), 0);
}

static void build_broken(void **state)
{
    (void)state;
    char dir[64];
    /* The log names the broken file, the last that both variants hold, and the line in it
     * (the program text's line markers): the file's line feeds plus two, as BROKEN_LINE
     * starts with one, whether or not the file ends its last line. */
    int broken = pbd_kernel_source_count - 1;
    while (broken > 0 &&
           !(pbd_kernel_source_in_variant(pbd_kernel_sources[broken].name, PBD_VARIANT_CPU) &&
             pbd_kernel_source_in_variant(pbd_kernel_sources[broken].name, PBD_VARIANT_GPU)))
        --broken;
    const struct pbd_kernel_source *last = &pbd_kernel_sources[broken];
    make_kernel_dir(dir, sizeof dir, 1, broken, BROKEN_LINE);
    int line = 2;
    for (size_t k = 0; k < last->length; ++k)
        line += last->text[k] == '\n';
    char at[600];
    snprintf(at, sizeof at, "%s/%s:%d:", dir, last->name, line);

    pbd_cl cl;
    pbd_error err = {0};
    assert_int_equal(pbd_cl_open(&cl, NULL, 0, NULL, &err), PBD_OK);
    assert_int_equal(pbd_cl_build(&cl, dir, PBD_VARIANT_AUTO, NULL, &err), PBD_ERR_BUILD);
    assert_non_null(strstr(err.message, "OpenCL program build failed on"));
    assert_non_null(strstr(err.message, cl.info.name));
    assert_non_null(strstr(err.message, "lines of log)"));
    assert_non_null(err.log);
    assert_true(err.log[0] != '\0');
    assert_non_null(strstr(err.log, at));
    assert_non_null(strstr(err.log, "error"));
    assert_null(cl.program);
    pbd_error_clear(&err);
    pbd_cl_close(&cl);
    remove_kernel_dir(dir);
}

/* Opens the default device into `cl` and builds a program from a temp dir: the embedded
 * sources (`copy`) or empty files, with `tail` appended to the last. */
static void build_probe(pbd_cl *cl, int copy, const char *tail, const char *options)
{
    char dir[64];
    pbd_error err = {0};
    make_kernel_dir(dir, sizeof dir, copy, pbd_kernel_source_count - 1, tail);
    assert_int_equal(pbd_cl_open(cl, NULL, 0, NULL, &err), PBD_OK);
    pbd_status st = pbd_cl_build(cl, dir, PBD_VARIANT_AUTO, options, &err);
    if (st != PBD_OK)
        print_error("%s\n%s\n", err.message, err.log ? err.log : "");
    assert_int_equal(st, PBD_OK);
    assert_non_null(cl->program);
    remove_kernel_dir(dir);
}

/* Runs kernel `name(__global int *o)` over `global` work-items and reads n ints of o back. */
static void run_int_kernel(pbd_cl *cl, const char *name, size_t global, cl_int *out, size_t n)
{
    pbd_error err = {0};
    cl_kernel k = NULL;
    cl_int rc = CL_SUCCESS;
    assert_int_equal(pbd_cl_kernel(cl, name, &k, &err), PBD_OK);
    cl_mem buf = clCreateBuffer(cl->context, CL_MEM_WRITE_ONLY, n * sizeof(cl_int), NULL, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    assert_int_equal(clSetKernelArg(k, 0, sizeof buf, &buf), CL_SUCCESS);
    assert_int_equal(clEnqueueNDRangeKernel(cl->queue, k, 1, NULL, &global, NULL, 0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(
        clEnqueueReadBuffer(cl->queue, buf, CL_TRUE, 0, n * sizeof(cl_int), out, 0, NULL, NULL),
        CL_SUCCESS);
    clReleaseMemObject(buf);
    clReleaseKernel(k);
}

static void build_and_run(void **state)
{
    (void)state;
    pbd_cl cl;
    build_probe(&cl, 0, PROBE_KERNEL, "-DPBD_PROBE_OPTION=1");

    /* The options the device was given: the standard, fp64 iff the device has it, extras. */
    char options[1024] = {0};
    assert_int_equal(clGetProgramBuildInfo(cl.program, cl.device, CL_PROGRAM_BUILD_OPTIONS,
                                           sizeof options - 1, options, NULL),
                     CL_SUCCESS);
    assert_non_null(strstr(options, "-cl-std=CL1.2"));
    assert_int_equal(strstr(options, "-DPBD_HAS_FP64=1") != NULL, cl.info.fp64);
    assert_non_null(strstr(options, "-DPBD_PROBE_OPTION=1"));

    cl_int out[4] = {0};
    run_int_kernel(&cl, "probe", 4, out, 4);
    for (int i = 0; i < 4; ++i)
        assert_int_equal(out[i], 42);
    pbd_cl_close(&cl);
}

/* Compares the program's kernels with `table` (n entries): every kernel of the program has
 * an entry, and every entry's parameter names are the kernel's, in order
 * (clGetKernelArgInfo; the program is built with -cl-kernel-arg-info). Returns the number of
 * mismatches, printing each. */
static int check_param_table(pbd_cl *cl, const pbd_kernel_params *table, int n)
{
    int bad = 0;
    char names[8192] = {0};
    assert_int_equal(
        clGetProgramInfo(cl->program, CL_PROGRAM_KERNEL_NAMES, sizeof names - 1, names, NULL),
        CL_SUCCESS);
    for (char *tok = strtok(names, ";"); tok; tok = strtok(NULL, ";")) {
        int found = 0;
        for (int k = 0; k < n; ++k)
            found |= strcmp(table[k].kernel, tok) == 0;
        if (!found) {
            print_message("kernel %s: not in the parameter table\n", tok);
            ++bad;
        }
    }
    for (int k = 0; k < n; ++k) {
        pbd_error err = {0};
        cl_kernel kernel = NULL;
        if (pbd_cl_kernel(cl, table[k].kernel, &kernel, &err) != PBD_OK) {
            print_message("%s: %s\n", table[k].kernel, err.message);
            ++bad;
            continue;
        }
        cl_uint count = 0;
        assert_int_equal(clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof count, &count, NULL),
                         CL_SUCCESS);
        if ((int)count != table[k].count) {
            print_message("kernel %s: %u parameters, the table has %d\n", table[k].kernel, count,
                          table[k].count);
            ++bad;
        }
        for (cl_uint a = 0; a < count && (int)a < table[k].count; ++a) {
            char name[128] = {0};
            assert_int_equal(
                clGetKernelArgInfo(kernel, a, CL_KERNEL_ARG_NAME, sizeof name - 1, name, NULL),
                CL_SUCCESS);
            if (strcmp(name, table[k].params[a]) != 0) {
                print_message("kernel %s: parameter %u is %s, the table says %s\n", table[k].kernel,
                              a, name, table[k].params[a]);
                ++bad;
            }
        }
        clReleaseKernel(kernel);
    }
    return bad;
}

/* The host sets kernel arguments by name from one table (host/solver/kernel_params.c):
 * it matches the built program, kernel by kernel and parameter by parameter; a table with two
 * parameters swapped, and a kernel the table lacks, are caught. */
static void kernel_param_table(void **state)
{
    (void)state;
    pbd_cl cl;
    pbd_error err = {0};
    assert_int_equal(pbd_cl_open(&cl, NULL, 0, NULL, &err), PBD_OK);
    pbd_status st = pbd_cl_build(&cl, NULL, PBD_VARIANT_AUTO, "-cl-kernel-arg-info", &err);
    if (st != PBD_OK)
        print_error("%s\n", err.message);
    assert_int_equal(st, PBD_OK);
    assert_int_equal(check_param_table(&cl, pbd_kernel_param_table, pbd_kernel_param_table_count),
                     0);
    /* A copy of the table with the collide kernel's first two parameters swapped. */
    int n = pbd_kernel_param_table_count;
    pbd_kernel_params *copy = malloc((size_t)n * sizeof *copy);
    assert_non_null(copy);
    memcpy(copy, pbd_kernel_param_table, (size_t)n * sizeof *copy);
    const pbd_kernel_params *collide = pbd_kernel_params_find("collide");
    assert_non_null(collide);
    const char *swapped[16];
    assert_true(collide->count <= 16);
    memcpy(swapped, collide->params, (size_t)collide->count * sizeof *swapped);
    const char *t = swapped[0];
    swapped[0] = swapped[1];
    swapped[1] = t;
    copy[collide - pbd_kernel_param_table].params = swapped;
    assert_int_equal(check_param_table(&cl, copy, n), 2);
    free(copy);
    pbd_cl_close(&cl);
    /* A program with one kernel more than the table knows. */
    build_probe(&cl, 1, "\n__kernel void pbd_unlisted(int a) { (void)a; }\n",
                "-cl-kernel-arg-info");
    assert_int_equal(check_param_table(&cl, pbd_kernel_param_table, pbd_kernel_param_table_count),
                     1);
    pbd_cl_close(&cl);
}

/* Each variant's program holds the shared kernels and its own, not the other's. */
static void variant_programs(void **state)
{
    (void)state;
    const pbd_variant variants[2] = {PBD_VARIANT_GPU, PBD_VARIANT_CPU};
    const char *own[2] = {"predict", "predict_runs"};
    for (int v = 0; v < 2; ++v) {
        pbd_cl cl;
        pbd_error err = {0};
        cl_kernel k = NULL;
        assert_int_equal(pbd_cl_open(&cl, NULL, 0, NULL, &err), PBD_OK);
        assert_int_equal(pbd_cl_build(&cl, NULL, variants[v], NULL, &err), PBD_OK);
        assert_int_equal(pbd_cl_kernel(&cl, own[v], &k, &err), PBD_OK);
        clReleaseKernel(k);
        assert_int_equal(pbd_cl_kernel(&cl, "collide", &k, &err), PBD_OK);
        clReleaseKernel(k);
        assert_int_equal(pbd_cl_kernel(&cl, own[1 - v], &k, &err), PBD_ERR_CL);
        pbd_cl_close(&cl);
    }
    assert_true(pbd_kernel_source_in_variant("gpu/predict.cl", PBD_VARIANT_GPU));
    assert_false(pbd_kernel_source_in_variant("gpu/predict.cl", PBD_VARIANT_CPU));
    assert_true(pbd_kernel_source_in_variant("common/collide.cl", PBD_VARIANT_CPU));
}

static void build_missing_dir(void **state)
{
    (void)state;
    pbd_cl cl;
    pbd_error err = {0};
    assert_int_equal(pbd_cl_open(&cl, NULL, 0, NULL, &err), PBD_OK);
    assert_int_equal(pbd_cl_build(&cl, "/nonexistent/pbd-kernels", PBD_VARIANT_AUTO, NULL, &err),
                     PBD_ERR_IO);
    assert_non_null(strstr(err.message, "/nonexistent/pbd-kernels/"));
    assert_non_null(strstr(err.message, pbd_kernel_sources[0].name));
    assert_non_null(strstr(err.message, "cannot read"));
    assert_null(err.log);
    assert_null(cl.program);
    pbd_cl_close(&cl);
}

static void kernel_missing(void **state)
{
    (void)state;
    pbd_cl cl;
    pbd_error err = {0};
    cl_kernel k = NULL;
    build_probe(&cl, 0, PROBE_KERNEL, "-DPBD_PROBE_OPTION=1");
    assert_int_equal(pbd_cl_kernel(&cl, "no_such_kernel", &k, &err), PBD_ERR_CL);
    assert_non_null(strstr(err.message, "no_such_kernel"));
    assert_non_null(strstr(err.message, "clCreateKernel"));
    assert_null(k);
    pbd_cl_close(&cl);
    assert_int_equal(pbd_cl_kernel(&cl, "probe", &k, &err), PBD_ERR_ARGUMENT);
    assert_non_null(strstr(err.message, "probe"));
}

/* The shared structs have the same sizes and field offsets on the device as on the host:
 * a probe kernel, built after the real sources, reports them. */
#define LAYOUT_PROBE                                                                               \
    "\n__kernel void layout_probe(__global int *o)\n"                                              \
    "{\n"                                                                                          \
    "    pbd_distance d;\n"                                                                        \
    "    pbd_segment s;\n"                                                                         \
    "    o[0] = sizeof(pbd_float4);\n"                                                             \
    "    o[1] = sizeof(pbd_distance);\n"                                                           \
    "    o[2] = (int)((char *)&d.a - (char *)&d);\n"                                               \
    "    o[3] = (int)((char *)&d.b - (char *)&d);\n"                                               \
    "    o[4] = (int)((char *)&d.rest - (char *)&d);\n"                                            \
    "    o[5] = (int)((char *)&d.compliance - (char *)&d);\n"                                      \
    "    o[6] = sizeof(pbd_segment);\n"                                                            \
    "    o[7] = (int)((char *)&s.body - (char *)&s);\n"                                            \
    "    o[8] = (int)((char *)&s.first - (char *)&s);\n"                                           \
    "    o[9] = (int)((char *)&s.count - (char *)&s);\n"                                           \
    "    o[10] = sizeof(pbd_acc);\n"                                                               \
    "    o[11] = PBD_SUM_COUNT;\n"                                                                 \
    "    o[12] = PBD_OUT_COUNT;\n"                                                                 \
    "    o[13] = PBD_SEGMENT;\n"                                                                   \
    "    pbd_attachment a;\n"                                                                      \
    "    pbd_collider c;\n"                                                                        \
    "    o[14] = sizeof(pbd_attachment);\n"                                                        \
    "    o[15] = (int)((char *)&a.compliance - (char *)&a);\n"                                     \
    "    o[16] = (int)((char *)&a.target - (char *)&a);\n"                                         \
    "    o[17] = sizeof(pbd_collider);\n"                                                          \
    "    o[18] = (int)((char *)&c.friction - (char *)&c);\n"                                       \
    "    o[19] = (int)((char *)&c.restitution - (char *)&c);\n"                                    \
    "    o[20] = (int)((char *)&c.shape - (char *)&c);\n"                                          \
    "    pbd_body_constraint bc;\n"                                                                \
    "    o[21] = sizeof(pbd_body_constraint);\n"                                                   \
    "    o[22] = (int)((char *)&bc.compliance - (char *)&bc);\n"                                   \
    "}\n"

static void layout_probe(void **state)
{
    (void)state;
    pbd_cl cl;
    build_probe(&cl, 1, LAYOUT_PROBE, NULL);
    cl_int o[23] = {0};
    run_int_kernel(&cl, "layout_probe", 1, o, 23);
    const int host[23] = {(int)sizeof(pbd_float4),
                          (int)sizeof(pbd_distance),
                          (int)offsetof(pbd_distance, a),
                          (int)offsetof(pbd_distance, b),
                          (int)offsetof(pbd_distance, rest),
                          (int)offsetof(pbd_distance, compliance),
                          (int)sizeof(pbd_segment),
                          (int)offsetof(pbd_segment, body),
                          (int)offsetof(pbd_segment, first),
                          (int)offsetof(pbd_segment, count),
                          cl.info.fp64 ? 8 : 4, /* the device's accumulator */
                          PBD_SUM_COUNT,
                          PBD_OUT_COUNT,
                          PBD_SEGMENT,
                          (int)sizeof(pbd_attachment),
                          (int)offsetof(pbd_attachment, compliance),
                          (int)offsetof(pbd_attachment, target),
                          (int)sizeof(pbd_collider),
                          (int)offsetof(pbd_collider, friction),
                          (int)offsetof(pbd_collider, restitution),
                          (int)offsetof(pbd_collider, shape),
                          (int)sizeof(pbd_body_constraint),
                          (int)offsetof(pbd_body_constraint, compliance)};
    for (int i = 0; i < 23; ++i)
        if (o[i] != host[i])
            fail_msg("layout entry %d: device %d, host %d", i, o[i], host[i]);
    print_message("%s: layouts match (pbd_distance %d bytes, pbd_segment %d, accumulator %d)\n",
                  cl.info.name, o[1], o[6], o[10]);
    pbd_cl_close(&cl);
}

/* OpenGL sharing is decided by the device's extension list and the GL context's device, never
 * by making a shared context and seeing it work: PoCL takes the properties and aborts later.
 * On a device without cl_khr_gl_sharing a context handle (fake here: nothing may touch it)
 * gives a plain context and the reason; a context with no display is an argument error. */
static void gl_sharing_decided(void **state)
{
    (void)state;
    pbd_device_info *list = NULL;
    int n = 0, tried = 0;
    list_all(&list, &n);
    for (int k = 0; k < n; ++k) {
        if (list[k].gl_sharing)
            continue; /* a real GL context would be needed to ask it for its device */
        char spec[32];
        snprintf(spec, sizeof spec, "%d:%d", list[k].platform_index, list[k].device_index);
        pbd_cl cl;
        pbd_error err = {0};
        int handle = 0;
        pbd_gl_context gl = {.context = &handle, .glx_display = &handle};
        assert_int_equal(pbd_cl_open(&cl, spec, 0, &gl, &err), PBD_OK);
        assert_int_equal(cl.gl_shared, 0);
        assert_string_equal(cl.gl_why, "the device lists no cl_khr_gl_sharing");
        assert_non_null(cl.context);
        pbd_cl_close(&cl);
        assert_int_equal(pbd_cl_open(&cl, spec, 0, NULL, &err), PBD_OK);
        assert_int_equal(cl.gl_shared, 0);
        assert_string_equal(cl.gl_why, "no OpenGL context was given");
        pbd_cl_close(&cl);
        pbd_gl_context none = {.context = NULL, .glx_display = &handle};
        assert_int_equal(pbd_cl_open(&cl, spec, 0, &none, &err), PBD_ERR_ARGUMENT);
        assert_non_null(strstr(err.message, "expected a context and one of glx_display"));
        pbd_gl_context two = {.context = &handle, .glx_display = &handle, .egl_display = &handle};
        assert_int_equal(pbd_cl_open(&cl, spec, 0, &two, &err), PBD_ERR_ARGUMENT);
        assert_non_null(strstr(err.message, "with 2 displays"));
        ++tried;
    }
    print_message("%d of %d devices list no cl_khr_gl_sharing and were opened with a GL "
                  "context: plain contexts\n",
                  tried, n);
    free(list);
}

static const struct CMUnitTest tests[] = {
    pbd_device_test(layout_probe),     pbd_device_test(list_devices),
    pbd_device_test(select_real),      cmocka_unit_test(select_synthetic),
    pbd_device_test(open_close),       pbd_device_test(open_errors),
    cmocka_unit_test(error_names),     pbd_device_test(build_broken),
    pbd_device_test(build_and_run),    pbd_device_test(build_missing_dir),
    pbd_device_test(kernel_missing),   pbd_device_test(kernel_param_table),
    pbd_device_test(variant_programs), pbd_device_test(gl_sharing_decided),
};

PBD_TEST_MAIN("cl", tests)
