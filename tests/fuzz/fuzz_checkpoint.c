/* Fuzz target: the checkpoint loader. The solver is the CPU reference on a small scene with
 * BDF2 and particle contacts with friction (so most arrays of a checkpoint are present).
 * An input is either a whole file, or a list of edits to a valid checkpoint of that solver (so
 * that the fuzzer reaches the checks behind the checksum):
 *   byte 0: bit 0 set: edits, else the rest is the file; bit 1: reseal the checksum after the
 *   edits; bit 2: cut the file to the length in bytes 1-2 (little-endian)
 *   then (offset: 2 bytes little-endian, value: 1 byte) edits, the offset modulo the size.
 * A refusal must come with one line naming the file and leave the state as it was; a load
 * that passes must step without a non-finite result. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pbd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A finding: says what, and aborts (libFuzzer saves the input). */
static void finding(const char *what, const pbd_error *err)
{
    fprintf(stderr, "fuzz_checkpoint: %s (%s)\n", what, err ? err->message : "");
    abort();
}

static pbd_scene scene;
static pbd_solver *solver;
static unsigned char *good;
static size_t good_size;
static uint64_t good_hash;

/* The state a checkpoint of `good` holds: 3 frames of two particles. */
static const char scene_text[] =
    "{\"dt\": 0.01, \"substeps\": 2, \"velocity_update\": \"bdf2\", \"damping\": \"rigid\","
    " \"damping_k\": 0.1, \"planes\": [{\"normal\": [0, 1, 0], \"offset\": -1}],"
    " \"bodies\": [{\"type\": \"particles\", \"positions\": [[0, 0, 0], [1, 0, 0], [0, 1, 0]],"
    " \"velocities\": [[0, 0, 1], [0, 1, 0], [1, 0, 0]], \"constraints\": [[0, 1], [1, 2]],"
    " \"particle_radius\": 0.1, \"friction\": 0.5},"
    " {\"type\": \"rope\", \"segments\": 3, \"start\": [2, 0, 0], \"end\": [3, 0, 0],"
    " \"particle_radius\": 0.1, \"friction\": 0.5}]}";

static void setup(void)
{
    pbd_error err = {0};
    pbd_solver_desc desc = {.backend = PBD_BACKEND_CPU};
    void *blob = NULL;
    if (pbd_scene_parse(scene_text, "fuzz", &scene, &err) != PBD_OK ||
        pbd_solver_create(&scene.model, &scene.config, &desc, &solver, &err) != PBD_OK ||
        pbd_solver_step(solver, 3, &err) != PBD_OK ||
        pbd_solver_save_state(solver, &blob, &good_size, &err) != PBD_OK ||
        pbd_solver_state_hash(solver, &good_hash, &err) != PBD_OK)
        finding("setup failed", &err);
    good = blob;
}

static void reseal(unsigned char *d, size_t n)
{
    uint64_t h = 14695981039346656037u;
    for (size_t k = 32; k < n; ++k)
        h = (h ^ d[k]) * 1099511628211u;
    if (n >= 32)
        memcpy(d + 24, &h, sizeof h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!solver)
        setup();
    if (size < 1)
        return 0;
    unsigned char *file;
    size_t n;
    if (data[0] & 1) {
        size_t at = 1;
        n = good_size;
        if ((data[0] & 4) && size >= 3) {
            n = (size_t)data[1] | (size_t)data[2] << 8;
            n = n < good_size ? n : good_size;
            at = 3;
        }
        file = malloc(good_size);
        if (!file)
            return 0;
        memcpy(file, good, good_size);
        for (; at + 3 <= size; at += 3) {
            size_t off = ((size_t)data[at] | (size_t)data[at + 1] << 8) % good_size;
            file[off] = data[at + 2];
        }
        if (data[0] & 2)
            reseal(file, n);
    } else {
        n = size - 1;
        file = malloc(n + 1);
        if (!file)
            return 0;
        memcpy(file, data + 1, n);
    }
    pbd_error err = {0};
    uint64_t before = 0, after = 0;
    if (pbd_solver_state_hash(solver, &before, &err) != PBD_OK)
        finding("hash failed", &err);
    pbd_status st = pbd_solver_load_state(solver, file, n, "fuzz.ck", &err);
    free(file);
    if (st != PBD_OK) {
        if (st != PBD_ERR_CHECKPOINT || strncmp(err.message, "fuzz.ck: ", 9) != 0 ||
            strchr(err.message, '\n'))
            finding("a refusal must name the file, in one line", &err);
        if (pbd_solver_state_hash(solver, &after, &err) != PBD_OK || after != before)
            finding("a refusal changed the state", &err);
        return 0;
    }
    /* Accepted: it steps to a finite state, then the good state is put back. */
    pbd_body_stats stats[2];
    if (pbd_solver_step(solver, 1, &err) != PBD_OK || pbd_solver_stats(solver, stats, &err))
        finding("an accepted checkpoint does not step", &err);
    for (int b = 0; b < 2; ++b)
        if (!isfinite(stats[b].kinetic_energy + stats[b].com[0] + stats[b].com[1] +
                      stats[b].com[2] + stats[b].l[0] + stats[b].l[1] + stats[b].l[2]))
            finding("an accepted checkpoint stepped to a non-finite state", NULL);
    if (pbd_solver_load_state(solver, good, good_size, "good", &err) != PBD_OK)
        finding("the good checkpoint no longer loads", &err);
    return 0;
}
