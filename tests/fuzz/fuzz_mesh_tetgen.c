/* Fuzz target: the TetGen parser. An input is the .node text, a NUL byte, the .ele text and,
 * after a second NUL byte, the .face text (without it: no .face); the checks are
 * fuzz_mesh.h's. */
#include <stdint.h>

#include "fuzz_mesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[3] = {"fuzz.node", "fuzz.ele", "fuzz.face"};
    pbd_mesh_text t[3];
    int parts = 0;
    size_t start = 0;
    for (size_t k = 0; k <= size && parts < 3; ++k)
        if (k == size || (data[k] == 0 && parts < 2)) {
            t[parts] = (pbd_mesh_text){names[parts], (const char *)data + start, k - start};
            ++parts;
            start = k + 1;
        }
    if (parts < 2)
        return 0;
    pbd_mesh m;
    pbd_error err = {0};
    pbd_status st = pbd_mesh_parse_tetgen(&t[0], &t[1], parts == 3 ? &t[2] : NULL, &m, &err);
    fuzz_mesh_check("fuzz_mesh_tetgen", st, &m, &err);
    return 0;
}
