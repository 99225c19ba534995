/* Shared by the test executables: main() with a case filter, and the device check. */
#ifndef PBD_TEST_UTIL_H
#define PBD_TEST_UTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pbd.h"

#define PBD_SKIP 77

/* cmocka's assert_true prints no values: this one prints what was measured. At least one
 * argument after the format. */
#define expect(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_error(__VA_ARGS__);                                                              \
            print_error("\n  check: %s (%s:%d)\n", #cond, __FILE__, __LINE__);                     \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* The kernel variant the device tests run: PBD_TEST_VARIANT=gpu or cpu in the environment
 * (ctest runs each device case once with each), else the device's own choice. */
static inline pbd_variant pbd_test_variant(void)
{
    const char *v = getenv("PBD_TEST_VARIANT");
    return v && strcmp(v, "gpu") == 0   ? PBD_VARIANT_GPU
           : v && strcmp(v, "cpu") == 0 ? PBD_VARIANT_CPU
                                        : PBD_VARIANT_AUTO;
}

/* pbd_solver_create for the tests: an OpenCL solver that leaves the variant to the device
 * gets the test's variant (pbd_test_variant). */
static inline pbd_status test_solver_create(const pbd_model *m, const pbd_config *c,
                                            const pbd_solver_desc *desc, pbd_solver **out,
                                            pbd_error *err)
{
    pbd_solver_desc d = {0};
    if (desc)
        d = *desc;
    if (d.backend == PBD_BACKEND_CL && d.variant == PBD_VARIANT_AUTO)
        d.variant = pbd_test_variant();
    return pbd_solver_create(m, c, &d, out, err);
}

/* Whether the device tests ask `sv`'s device for the CPU reference's bits: on a CPU device
 * (PoCL) both sides compile the same C with contraction off and correctly rounded division
 * and square roots, so every result must be equal. A GPU's compiler may still order or fuse
 * float operations its own way (and need not round sqrt and division correctly), so there
 * the tests ask agreement within a stated tolerance instead. */
static inline int pbd_test_exact(const pbd_solver *sv)
{
    pbd_device_info *list = NULL;
    int n = 0, exact = 0;
    if (pbd_devices_list(&list, &n, NULL) == PBD_OK)
        for (int k = 0; k < n; ++k)
            if (strcmp(list[k].name, pbd_solver_device_name(sv)) == 0)
                exact = strcmp(list[k].type, "cpu") == 0;
    free(list);
    return exact;
}

/* Fails, printing both values, unless |got - want| <= tol. */
static inline void assert_near(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol)) {
        print_error("%s: got %.9g, expected %.9g (tolerance %g)\n", what, got, want, tol);
        fail();
    }
}

/* Returns 1 when an OpenCL device is present. When none is, prints why and returns 0; the
 * caller exits with PBD_SKIP, or with 1 when PBD_REQUIRE_DEVICE=1 (CI) says a skip is a
 * failure. */
static inline int pbd_test_have_device(void)
{
    pbd_device_info *list = NULL;
    int n = 0;
    pbd_error err = {0};
    pbd_status st = pbd_devices_list(&list, &n, &err);
    free(list);
    if (st == PBD_OK && n > 0)
        return 1;
    fprintf(stderr, "no OpenCL device: %s\n", err.message);
    pbd_error_clear(&err);
    return 0;
}

static inline int pbd_test_skip_code(void)
{
    const char *req = getenv("PBD_REQUIRE_DEVICE");
    return req && strcmp(req, "1") == 0 ? 1 : PBD_SKIP;
}

/* Marks a case that needs an OpenCL device: list it as pbd_device_test(f) instead of
 * cmocka_unit_test(f). */
static int pbd_device_marker;
#define pbd_device_test(f) cmocka_unit_test_prestate(f, &pbd_device_marker)

/* main() body: `exe [CASE]` runs the cases matching CASE (ctest runs one case a process).
 * OpenCL is touched only when a device case is to run: asked for by name, it is skipped (77)
 * without a device; with no name, the CPU-only cases still run. So a missing or broken
 * OpenCL driver cannot take down the cases that do not use it. */
static inline int pbd_test_run(const char *group, const struct CMUnitTest *tests, size_t n,
                               int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    int wants_device = 0;
    for (size_t k = 0; k < n; ++k)
        if (tests[k].initial_state == &pbd_device_marker &&
            (!only || strcmp(only, tests[k].name) == 0))
            wants_device = 1;
    if (wants_device && !pbd_test_have_device()) {
        /* One case asked for, or a device required (CI): skip it, or fail. */
        if (only || pbd_test_skip_code() != PBD_SKIP)
            return pbd_test_skip_code();
        struct CMUnitTest *cpu = malloc(n * sizeof *cpu);
        size_t m = 0;
        for (size_t k = 0; cpu && k < n; ++k)
            if (tests[k].initial_state != &pbd_device_marker)
                cpu[m++] = tests[k];
        int rc = cpu ? _cmocka_run_group_tests(group, cpu, m, NULL, NULL) : 1;
        free(cpu);
        return rc;
    }
    if (only)
        cmocka_set_test_filter(only);
    return _cmocka_run_group_tests(group, tests, n, NULL, NULL);
}

#define PBD_TEST_MAIN(group, tests)                                                                \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        return pbd_test_run(group, tests, sizeof(tests) / sizeof((tests)[0]), argc, argv);         \
    }

#endif
