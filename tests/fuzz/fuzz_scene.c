/* Fuzz target: the scene parser. Any bytes are parsed as a scene and freed; a refusal must
 * come with a message of one non-empty line. Sanitizers report the rest (memory errors,
 * leaks, undefined behaviour). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    pbd_scene scene;
    pbd_error err = {0};
    pbd_status st = pbd_scene_parse(text, "fuzz.json", &scene, &err);
    free(text);
    if (st == PBD_OK) {
        pbd_scene_free(&scene);
        return 0;
    }
    if (err.message[0] == '\0' || strchr(err.message, '\n') || st == PBD_ERR_ARGUMENT) {
        /* A finding: a refusal without a one-line message, or a misreported one. */
        fprintf(stderr, "fuzz_scene: status %d, message \"%s\"\n", (int)st, err.message);
        abort();
    }
    pbd_error_clear(&err);
    return 0;
}
