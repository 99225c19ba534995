/* Fuzz target: the OBJ parser. Any bytes are parsed as an OBJ file; the checks are
 * fuzz_mesh.h's. */
#include <stdint.h>

#include "fuzz_mesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pbd_mesh_text t = {"fuzz.obj", (const char *)data, size};
    pbd_mesh m;
    pbd_error err = {0};
    fuzz_mesh_check("fuzz_mesh_obj", pbd_mesh_parse_obj(&t, &m, &err), &m, &err);
    return 0;
}
